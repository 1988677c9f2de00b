#!/usr/bin/env bash
# make test: a fixed-seed randomized matrix (pulse-gen-scenarios --random
# 2026 --count 48, at most 32 GPUs and 12 iterations: 34 failure runs, 14
# without) end to end through run_cluster, pulse-host-agent --replay and
# pulse-analyzer, scored strictly (tools/eval/score.c). Fails when a run
# without a failure gets any Pulse diagnosis, or when fewer failure runs
# than RANDOM_MATRIX_FLOOR are named strictly (the faulty host alone, right
# class, nothing else wrong in the run). The floor is what the analyzer
# achieves today (19 of 34 on 2026-11-25), so a change that loses runs on
# scenarios nobody tuned on fails here; seed 2026 is a development seed,
# the README reports another. Pinned to --draws 1, the matrix the floor was
# measured on (no benign events, steady single faults): the default draws
# (2) add checkpoints, evaluation steps, hiccups, heavy-tailed jitter,
# sequence-length changes, restarts and transient/intermittent/concurrent/
# mixed faults, which the analyzer is not yet hardened against (issue 19).
set -u
cd "$(dirname "$0")/../.."
floor=${RANDOM_MATRIX_FLOOR:-20}
gen=build/bin/pulse-gen-scenarios
for need in sim/run_cluster build/bin/pulse-host-agent build/bin/pulse-analyzer build/bin/pulse-eval-score "$gen"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
out=build/test-random-matrix
rm -rf "$out"
mkdir -p "$out"
# --simai-share 0 --draws 1: the matrix the floor was measured on (no SimAI
# draws, no benign events or fault shapes)
"$gen" --random 2026 --count 48 --max-gpus 32 --max-iterations 12 --simai-share 0 --draws 1 --out "$out/scenarios" >/dev/null || {
	echo "FAIL: pulse-gen-scenarios"; exit 1; }
t0=$(date +%s)
scen=$(ls "$out"/scenarios/*.json | tr '\n' ' ')
EVAL_OUT="$out/eval" EVAL_NO_ABLATION=1 EVAL_NO_RANDOM=1 EVAL_SCENARIOS="$scen" \
	tools/eval/run-eval.sh >"$out/eval.log" 2>&1
if [ ! -f "$out/eval/report.json" ]; then
	tail -30 "$out/eval.log"; echo "FAIL: no report"; exit 1
fi
grep -E "^strict" "$out/eval.log"
python3 - "$out/eval/report.json" "$floor" "$(($(date +%s) - t0))" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["strict"]
floor, secs = int(sys.argv[2]), sys.argv[3]
p = d["pulse"]
ok = p["runs"]["strict"]["count"]
runs = p["runs"]["strict"]["runs"]
fa = p["no_failure_with_false_alarm"]["count"]
nf = p["no_failure_with_false_alarm"]["runs"]
pf = len(d.get("pipeline_failures", []))
print("random_matrix: seed 2026, %d failure runs, %d strict (floor %d); %d of %d no-failure runs with an alarm; "
      "%d pipeline failures; %s s" % (runs, ok, floor, fa, nf, pf, secs))
bad = []
if fa:
    bad.append("false alarm in a run without a failure")
if ok < floor:
    bad.append("strict machine level %d below the floor %d" % (ok, floor))
if pf:
    bad.append("pipeline failures: %s" % d["pipeline_failures"])
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
PY
