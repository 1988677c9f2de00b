#!/usr/bin/env bash
# One scenario end to end (make eval / tests/analyzer/quick_eval.sh):
#   sim/run_cluster SCENARIO --out RUN/run
#   pulse-analyzer --replay RUN/run --json   (runs pulse-host-agent --replay per host itself)
# RUN/truth.json and RUN/analyzer.json are what pulse-eval-score reads.
# EVAL_KEEP: unset drops the bulky output once the run is judged (see below).
# Usage: run-one.sh SCENARIO.json OUTROOT INDEX TOTAL T0 [ANALYZER]
set -u
scen=$1 root=$2 idx=$3 total=$4 t0=$5
analyzer=${6:-build/bin/pulse-analyzer}
name=$(basename "$scen" .json)
run="$root/$name"
rm -rf "$run"
mkdir -p "$run"
start=$(date +%s)
status=ok
sim=sim/run_cluster
if [ -n "${EVAL_BIN:-}" ] && [ -x "$EVAL_BIN/pulse-run-cluster" ]; then sim=$EVAL_BIN/pulse-run-cluster; fi
if ! "$sim" "$scen" --out "$run/run" --quiet >"$run/sim.log" 2>&1; then
	status="run_cluster failed (see $run/sim.log)"
else
	cp "$run/run/truth.json" "$run/truth.json"
	if ! "$analyzer" --replay "$run/run" --json --quiet --timeline "$run/timeline.json" \
		>"$run/analyzer.json.part" 2>"$run/analyzer.log"; then
		status="pulse-analyzer failed (see $run/analyzer.log and $run/run/agent/*.log)"
		rm -f "$run/analyzer.json.part"
	else
		mv "$run/analyzer.json.part" "$run/analyzer.json"
	fi
fi
# keep the reports, the truth and the agents' logs; the simulator's, the
# agents' and the truth's per-operator output are GBs over a matrix (and
# filled a CI disk): EVAL_KEEP=agent keeps what pulse-analyzer --replay
# RUN/run needs again, EVAL_KEEP=1 everything
if [ -z "${EVAL_KEEP:-}" ]; then
	rm -rf "$run/run/hosts" "$run/run/truth-ops.jsonl"
	rm -f "$run/run/agent"/*.jsonl
elif [ "$EVAL_KEEP" = agent ]; then
	# what pulse-analyzer --replay needs again (agent/, the hosts' link lines)
	find "$run/run/hosts" -type f ! -name links.jsonl -delete 2>/dev/null
	rm -f "$run/run/truth-ops.jsonl"
fi
now=$(date +%s)
verdict=""
if [ -f "$run/analyzer.json" ] && command -v grep >/dev/null; then
	verdict=$(grep -m1 -o '"class_name":[[:space:]]*"[^"]*"' "$run/analyzer.json" | sed 's/.*:[[:space:]]*"//; s/"$//')
fi
printf 'scenario %d of %d  %-44s %4ds  (elapsed %ds)  %s%s\n' "$idx" "$total" "$name" $((now - start)) \
	$((now - t0)) "$status" "${verdict:+, first verdict: $verdict}"
[ "$status" = ok ]
