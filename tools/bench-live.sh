#!/usr/bin/env bash
# make bench-live: the paper's 64-GPU GPT (8 hosts x 8 GPUs, 8-way TP, 4-way
# DP, 2-way PP; tests/live/bench-gpt64.json: 60 iterations, a GPU throttled
# from iteration 30) served live at 1x real time by pulse-cluster-serve to
# eight pulse-host-agent (one per simulated host, 8 NICs each) and
# pulse-analyzer --listen (tools/live-cluster.sh). Prints each daemon's CPU
# time over the run, the wall-clock latency of the first verdict from the
# failure's onset, the verdict, the truth, and whether the run kept up (agent
# poll overruns, windows with gaps), next to the paper's figure. Everything
# runs in the simulator on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/live
rm -rf "$out"
mkdir -p "$out"
echo "== bench-live: 64-GPU GPT served live at 1x real time ($(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg))"
build/bin/pulse-run-cluster tests/live/bench-gpt64.json --out "$out/run" --quiet
rc=0
tools/live-cluster.sh "$out/run" "$out/live" --speed 1 --quiet || rc=$?
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
cpu = {}
for l in open(out + "/live/cpu.txt"):
    k, h, v = l.split()
    cpu[(k, h)] = float(v)
el = cpu[("elapsed", "-")]
agents = sorted(v for (k, h), v in cpu.items() if k == "agent")
gaps = overruns = wins = 0
for f in glob.glob(out + "/live/agent-*.jsonl"):
    for l in open(f):
        if '"type":"window"' in l:
            wins += 1
            gaps += bool(json.loads(l).get("gap"))
for f in glob.glob(out + "/live/agent-*.log"):
    overruns += open(f).read().count("poll cycle overran")
v = open(out + "/live/verdict.txt").read().strip()
t = json.load(open(out + "/run/truth.json"))["failure"]
print("| measurement | value |")
print("|---|---|")
print("| wall time of the live run (lead 2 s, job, tail 3 s) | %.1f s |" % el)
print("| pulse-host-agent CPU per host (8 NICs), min / median / max | %.2f / %.2f / %.2f s = %.1f%% / %.1f%% / %.1f%% of a core |" % (
    agents[0], agents[len(agents)//2], agents[-1], 100*agents[0]/el, 100*agents[len(agents)//2]/el, 100*agents[-1]/el))
print("| pulse-analyzer CPU | %.2f s = %.1f%% of a core |" % (cpu[("analyzer", "-")], 100*cpu[("analyzer", "-")]/el))
lat = v.split("latency_s=")[-1] if "latency_s=" in v else "none"
if ("serve", "-") in cpu:
    print("| pulse-cluster-serve CPU (the simulated NICs and training processes, not Pulse) | %.2f s = %.1f%% of a core |" % (cpu[("serve", "-")], 100*cpu[("serve", "-")]/el))
print("| first verdict, wall-clock latency from the onset | %s s |" % lat)
print("| the paper's diagnosis latency (for comparison) | about 6 s |")
print("| first verdict | %s |" % v.replace("LIVE ", "").split(" latency_s=")[0])
print("| truth | %s %s on %s GPU %s |" % (t["class"], t["mode"], t["host"], t["gpu"]))
print("| did the simulated cluster keep up | %d windows, %d with a gap, %d agent poll overruns |" % (wins, gaps, overruns))
PY
exit $rc
