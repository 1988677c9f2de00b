#!/usr/bin/env bash
# pulse-host-agent --replay on real sim/run_cluster runs, through the ASan
# build of the agent: a small GPT (2 hosts x 2 GPUs: TP inside a host, DP
# across hosts) and a small MoE (4 hosts x 2 GPUs, expert parallelism: groups
# of send/recv), scenarios written here so the test does not depend on the
# generated ones in tests/scenarios/. For each:
#   - every NIC: one complete window per POLL record, no gap;
#   - the bytes in the windows of each host equal the bytes the simulator's
#     truth says that host's ranks sent (within the 32-byte units of TX events);
#   - the QP join pairs every QP (GIDs from cluster.json);
#   - one "op" record per intercepted operator call outside groups and one
#     per group; every operator (group) the truth says went over the network
#     is complete, with start and end within one epoch plus delta (2 ms) of
#     the truth; the intra-host ones are no_traffic;
#   - --host selects one host; it runs faster than real time.
# Skips (77) when the simulator is not built.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
sim=$build/bin/pulse-run-cluster
agent=${PULSE_AGENT:-$build/tests/pulse-host-agent-asan}
[ -x "$sim" ] || { echo "replay_sim.sh: $sim is not built (sim/cluster.mk); skipped"; exit 77; }
[ -x "$agent" ] || { echo "replay_sim.sh: $agent is not built"; exit 1; }
command -v python3 >/dev/null || { echo "replay_sim.sh: python3 needed to check the JSON lines; skipped"; exit 77; }
work=$(mktemp -d /tmp/pulse-replay-sim.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "replay_sim.sh: FAIL: $*"; exit 1; }

cat >"$work/gpt.json" <<'J'
{"name":"replay-gpt","seed":7,"workload":"gpt","iterations":3,"quick":true,
 "cluster":{"hosts":2,"gpus_per_host":2}}
J
cat >"$work/moe.json" <<'J'
{"name":"replay-moe","seed":202,"workload":"moe","quick":true,"iterations":3,
 "cluster":{"hosts":4,"gpus_per_host":2},"moe":{"ep":4,"layers":2}}
J
for sc in gpt moe; do
run=$work/$sc
"$sim" "$work/$sc.json" --out "$run" --quiet || fail "run_cluster $sc.json failed"
"$agent" --replay "$run" --out "$run.all.jsonl" --log "$run.all.log" || fail "$sc: replay of all hosts: exit $? ($(tail -n 3 "$run.all.log"))"
"$agent" --replay "$run" --host host1 --out "$run.h1.jsonl" --log "$run.h1.log" || fail "$sc: replay of host1: exit $?"
grep -q "0 without a partner, 0 ambiguous, 0 never connected" "$run.all.log" || fail "$sc: QP join: $(grep 'QP join' "$run.all.log")"

python3 - "$run" "$run.all.jsonl" "$run.h1.jsonl" "$run.all.log" <<'PY' || exit 1
import glob, json, os, re, struct, sys
run, allf, h1f, logf = sys.argv[1:5]
cluster = json.load(open(os.path.join(run, "cluster.json")))
epoch = cluster["epoch_ns"]
hosts = [h["name"] for h in cluster["hosts"]]
def lines(p, t):
    out = []
    for l in open(p):
        o = json.loads(l)
        if o["type"] == t:
            out.append(o)
    return out
errs = []
def check(c, msg):
    if not c:
        errs.append(msg)

# windows: one per POLL record, complete, no gap
wins = lines(allf, "window")
for h in hosts:
    for evs in sorted(glob.glob(os.path.join(run, "hosts", h, "*.evs"))):
        dev = os.path.basename(evs)[:-4]
        data = open(evs, "rb").read()
        hs = struct.unpack_from("<H", data, 10)[0]
        rs = struct.unpack_from("<H", data, 12)[0]
        polls = sum(1 for o in range(hs, len(data) - rs + 1, rs) if data[o] == 2)
        w = [x for x in wins if x["nic"] == "replay:%s/%s" % (h, dev)]
        check(len(w) == polls, "%s/%s: %d windows for %d POLL records" % (h, dev, len(w), polls))
        check(all(x["complete"] and not x["gap"] for x in w), "%s/%s: incomplete window or gap" % (h, dev))
        seqs = [x["window_seq"] for x in w]
        check(seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else True, "%s/%s: window_seq not consecutive" % (h, dev))

# bytes per host against the truth
truth = [json.loads(l) for l in open(os.path.join(run, "truth-ops.jsonl"))]
for h in hosts:
    wb = sum(q["bytes"] for x in wins if x["nic"].startswith("replay:%s/" % h) for q in x["qps"])
    tb = sum(t["bytes"] for t in truth if t["host"] == h)
    tol = 32 * sum(max(1, len(t["peers"])) for t in truth if t["host"] == h and t["bytes"])
    check(abs(wb - tb) <= tol, "%s: %d bytes in the windows, truth %d (tolerance %d)" % (h, wb, tb, tol))

# op records: one per call outside groups, one per group; network
# operators complete and on time
ops = lines(allf, "op")
calls = lines(allf, "hook_op")
check(len(calls) > 0, "no hook_op lines")
key = lambda o: (o["host"], o["pid"], o["comm_id"], o["seq"])
gkey = lambda o: (o["host"], o["pid"], o["group_id"])
byop, bygroup = {}, {}
for o in ops:
    if o["op"] == "group":
        check(gkey(o) not in bygroup, "group record twice: %s" % (gkey(o),))
        bygroup[gkey(o)] = o
    else:
        check(key(o) not in byop, "op record twice: %s" % (key(o),))
        byop[key(o)] = o
# the truth, per call or per group (a group: first byte of any member to the last)
units = {}
for t in truth:
    if t["group_id"]:
        u = units.setdefault(("g",) + gkey(t), {"bytes": 0, "start": None, "end": None})
    else:
        u = units.setdefault(("c",) + key(t), {"bytes": 0, "start": None, "end": None})
    u["bytes"] += t["bytes"]
    if t["bytes"] > 0:
        s, e = int(t["start_ns"]), int(t["end_ns"])
        u["start"] = s if u["start"] is None else min(u["start"], s)
        u["end"] = e if u["end"] is None else max(u["end"], e)
ngroups = sum(1 for k in units if k[0] == "g")
check(len(byop) == len(units) - ngroups, "%d op records outside groups for %d such calls" % (len(byop), len(units) - ngroups))
check(len(bygroup) == ngroups, "%d group records for %d groups" % (len(bygroup), ngroups))
worst = 0
net = 0
for k, u in units.items():
    o = (bygroup if k[0] == "g" else byop).get(k[1:])
    check(o is not None, "no op record for %s" % (k,))
    if o is None:
        continue
    if u["bytes"] > 0:
        net += 1
        check(o["status"] == "complete", "%s: status %s, truth completed with %d bytes" % (k, o["status"], u["bytes"]))
        d = max(abs(int(o["start_ns"]) - u["start"]), abs(int(o["end_ns"]) - u["end"]))
        worst = max(worst, d)
        check(d <= epoch + 2000000, "%s: start/end off by %d ns" % (k, d))
    else:
        check(o["status"] == "no_traffic", "%s: status %s, truth: no network bytes" % (k, o["status"]))
check(net > 0, "no operator went over the network")

# --host host1: only host1
w1 = lines(h1f, "window")
o1 = lines(h1f, "op")
check(w1 and all(x["nic"].startswith("replay:host1/") for x in w1), "--host host1: other hosts' windows")
check(o1 and all(x["host"] == "host1" for x in o1), "--host host1: other hosts' op records")
check(len(o1) == sum(1 for o in ops if o["host"] == "host1"), "--host host1: op records differ from the all-hosts run")

# faster than real time
m = re.search(r"replay done: ([0-9.]+) s of host time .* in ([0-9.]+) s: ([0-9.]+)x real time", open(logf).read())
check(m and float(m.group(3)) > 1.0, "not faster than real time: %s" % (m.group(0) if m else "no summary"))
if errs:
    print("\n".join(errs[:20]))
    sys.exit(1)
print("replay_sim.sh: %s: %d windows, %d op records (%d groups; %d over the network, start/end within %.1f us of the truth), %s" %
      (os.path.basename(run), len(wins), len(ops), ngroups, net, worst / 1e3, m.group(0)))
PY
done
echo "replay_sim.sh: PASS"
