#!/usr/bin/env bash
# make demo-live: the daemons at work, on a simulated cluster.
#
# A GPT job (8 hosts x 2 GPUs, PP 2 x DP 4) with one hidden failure is
# simulated (sim/run_cluster), then served live by pulse-cluster-serve in
# real time: every NIC behind the mailbox protocol on its own socket, every
# training process a live process writing its calls into a real interception
# ring. One pulse-host-agent per simulated host polls its NICs and drains its
# rings, and sends everything to pulse-analyzer --listen, which prints its
# verdict as it makes it, with the wall-clock time since the failure began.
# Then the truth. All of it runs in the simulator on this machine: no NIC,
# no GPU and no training process here is real.
#
# Usage: tools/demo-live.sh [SCENARIO.json]; SPEED=X runs X times faster
# than real time (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-tools/demo-live-scenario.json}
speed=${SPEED:-1}
out=build/demo-live
rm -rf "$out"
mkdir -p "$out"
echo
echo "== 1/3  simulating the training job (sim/run_cluster $scenario)"
build/bin/pulse-run-cluster "$scenario" --out "$out/run" --quiet
echo "  written: $out/run (what each host would see; the answer is in truth.json, which no daemon reads)"
echo
echo "== 2/3  the daemons, live at ${speed}x real time (simulator: pulse-cluster-serve stands for the"
echo "        hosts' NICs and training processes; pulse-host-agent and pulse-analyzer are the real ones)"
rc=0
tools/live-cluster.sh "$out/run" "$out/live" --speed "$speed" || rc=$?
echo
if [ $rc -eq 0 ]; then
	echo "  the analyzer's first verdict, as it printed it:"
	grep -m1 -A7 '^LIVE VERDICT' "$out/live/an.out" | tail -n +2 | sed 's/^/  /'
fi
echo
echo "== 3/3  what was actually injected ($out/run/truth.json)"
python3 - "$out/run/truth.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
f = t.get("failure")
if not f:
    print("  no failure")
else:
    print("  %s %s (%s) on %s GPU %s, from iteration %s (t = %.3f s of the job)" % (
        f["class"], f["mode"], f["type"], f["host"], f["gpu"], f["start_iteration"], f["start_ns"] / 1e9))
PY
echo
echo "Logs: $out/live (an.out: the analyzer's verdicts and final report; agent-<host>.log/.jsonl;"
echo "serve.log). make demo does the same job from files (--replay), without the daemons."
exit $rc
