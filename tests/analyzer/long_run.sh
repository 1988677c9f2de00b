#!/usr/bin/env bash
# make test: a 40-iteration job without a failure (GPT, PP 4 with 8
# micro-batches: thousands of P2P operators per communicator) end to end;
# the ASan pulse-analyzer must keep every operator record (none dropped as
# older than the history it keeps: the hosts' records arrive up to a poll
# apart) and report nothing. With 256 instances kept per communicator it
# dropped 1428 of 5520 records.
set -u
cd "$(dirname "$0")/../.."
an=build/tests/pulse-analyzer-asan
[ -x "$an" ] || an=build/bin/pulse-analyzer
for need in sim/run_cluster build/bin/pulse-host-agent "$an"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
out=build/test-long-run
rm -rf "$out"
mkdir -p "$out"
s=tests/analyzer/long/long-gpt-pp4-40it.json
if ! sim/run_cluster "$s" --out "$out/run" --quiet >"$out/sim.log" 2>&1; then
	echo "FAIL: run_cluster"; cat "$out/sim.log"; exit 1
fi
if ! "$an" --replay "$out/run" --json --quiet >"$out/analyzer.json" 2>"$out/analyzer.log"; then
	echo "FAIL: pulse-analyzer"; tail -20 "$out/analyzer.log"; exit 1
fi
python3 - "$out/analyzer.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
i = d["input"]
print("records %d, malformed %d, duplicates dropped %d, diagnoses %d" %
      (i["op_records"], i["malformed"], i["dropped_duplicate"], len(d["diagnoses"])))
bad = []
if i["op_records"] < 5000:
    bad.append("too few records: %d" % i["op_records"])
if i["malformed"] or i["dropped_duplicate"]:
    bad.append("records dropped")
if d["diagnoses"]:
    bad.append("a diagnosis in a run without a failure: %s" % d["diagnoses"][0].get("why", ""))
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("long_run: 40 iterations, no record dropped, nothing reported")
PY
