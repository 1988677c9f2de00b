#!/usr/bin/env bash
# Issue #7: a hang is reported as such, never as zeros or as a completed
# operator. A NIC goes down mid-operator in a simulated GPT job
# (tests/scenarios/gpt-nic_down.json); the simulator keeps polling after the
# hang as a live cluster would. Every operator the truth says never
# completed must come out of the agent's replay as hung / not_started /
# gap, or not at all while its hang bound has not passed -- never complete.
set -u
cd "$(dirname "$0")/../.."
for b in build/bin/pulse-run-cluster build/bin/pulse-host-agent; do
	[ -x "$b" ] || { echo "replay_hang.sh: $b not built; skipped"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
./sim/run_cluster tests/scenarios/gpt-nic_down.json --out "$work/run" --quiet || exit 1
build/bin/pulse-host-agent --replay "$work/run" --out "$work/{host}.jsonl" 2>"$work/agent.log" || {
	tail -n 20 "$work/agent.log"; exit 1; }
python3 - "$work" <<'PY'
import json, sys, glob
work = sys.argv[1]
truth = {}
for line in open(f"{work}/run/truth-ops.jsonl"):
    t = json.loads(line)
    truth[(t["host"], t["pid"], t["comm_id"], t["seq"])] = t
recs = {}
for f in glob.glob(f"{work}/*.jsonl"):
    for line in open(f):
        r = json.loads(line)
        if r.get("type") != "op":
            continue
        recs[(r["host"], r["pid"], r["comm_id"], r["seq"])] = r
hung_truth = [k for k, t in truth.items() if not t["completed"] and t["bytes"] > 0 or
              (not t["completed"] and t["peers"])]
bad, reported = [], 0
for k in hung_truth:
    r = recs.get(k)
    if r is None:
        continue
    if r["status"] in ("complete", "no_traffic"):
        bad.append((k, r["status"], r["actual_bytes"], r["expected_bytes"]))
    elif r["status"] in ("hung", "not_started", "gap"):
        reported += 1
print(f"replay_hang.sh: {len(hung_truth)} operators never completed in the truth, "
      f"{reported} reported hung/not_started/gap, {len(bad)} reported complete")
for b in bad[:10]:
    print("  reported complete although hung:", b)
if bad or reported == 0:
    sys.exit(1)
PY
