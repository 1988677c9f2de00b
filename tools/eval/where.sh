#!/usr/bin/env bash
# Where in the iteration (issue 16 part 2; analyzer/critical_path.c): the
# VenusTrace types at several seeds and two pipeline shapes, and the pair of
# tests/analyzer/where/ (one slowdown on the critical path, the same one
# absorbed by slack), each through sim/run_cluster and pulse-analyzer
# --replay --json --where HOST:GPU (the faulty GPU from truth.json: an
# absorbed slowdown raises no verdict), then tools/eval/where_table.py:
# expected against reported per failure type.
#   where.sh [--check] OUTDIR [ANALYZER] [-- MORE_RUN_DIRS...]
#   --check: exit 1 when a run is placed wrongly (make test)
#   WHERE_SEEDS="11 22 33 44"  the PP 2 seeds (default); WHERE_PP4_SEEDS="11 22 33"
set -u
cd "$(dirname "$0")/../.."
check=
if [ "${1:-}" = --check ]; then check=--check; shift; fi
out=${1:?usage: where.sh [--check] OUTDIR [ANALYZER] [-- RUN_DIRS...]}
shift
an=build/bin/pulse-analyzer
if [ $# -gt 0 ] && [ "$1" != -- ]; then an=$1; shift; fi
[ "${1:-}" = -- ] && shift
more=("$@")
sim=sim/run_cluster
[ -n "${EVAL_BIN:-}" ] && [ -x "$EVAL_BIN/pulse-run-cluster" ] && sim=$EVAL_BIN/pulse-run-cluster
rm -rf "$out"
mkdir -p "$out/scenarios"
# the faulty host moves with the seed; severities at the low end of the
# generator's ranges (sim/README.md) for forward/backward, mid for TX
for seed in ${WHERE_SEEDS:-11 22 33 44}; do
	for t in forward backward transmission; do
		sev=1.4
		[ $t = transmission ] && sev=0.5
		h=$(((seed * 3 + ${#t}) % 8)) g=$((seed % 2))
		printf '{"name":"pp2-venus_slow_%s-s%d","seed":%d,"workload":"gpt","iterations":6,"cluster":{"hosts":8,"gpus_per_host":2},"gpt":{"pp":2,"dp":4,"microbatches":4},"failure":{"type":"venus_slow_%s","host":%d,"gpu":%d,"severity":%s,"start_iteration":3}}\n' \
			"$t" "$seed" "$seed" "$t" "$h" "$g" "$sev" >"$out/scenarios/pp2-venus_slow_$t-s$seed.json"
	done
done
for seed in ${WHERE_PP4_SEEDS:-11 22 33}; do
	for t in forward backward transmission; do
		sev=1.4
		[ $t = transmission ] && sev=0.5
		h=$(((seed * 5 + ${#t}) % 8)) g=$(((seed / 11) % 2))
		printf '{"name":"pp4-venus_slow_%s-s%d","seed":%d,"workload":"gpt","iterations":6,"cluster":{"hosts":8,"gpus_per_host":2},"gpt":{"pp":4,"dp":2,"microbatches":6},"failure":{"type":"venus_slow_%s","host":%d,"gpu":%d,"severity":%s,"start_iteration":3}}\n' \
			"$t" "$seed" "$seed" "$t" "$h" "$g" "$sev" >"$out/scenarios/pp4-venus_slow_$t-s$seed.json"
	done
done
cp tests/analyzer/where/*.json "$out/scenarios/"
one() {
	local s=$1 out=$2 an=$3 sim=$4
	local name run
	name=$(basename "$s" .json)
	run=$out/$name
	mkdir -p "$run"
	if ! "$sim" "$s" --out "$run/run" --quiet >"$run/sim.log" 2>&1; then
		echo "where: run_cluster failed on $s (see $run/sim.log)"
		return 1
	fi
	cp "$run/run/truth.json" "$run/truth.json"
	local at
	at=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["failure"]; print("%s:%d" % (f["host"], f["gpu"]))' "$run/truth.json")
	if ! "$an" --replay "$run/run" --json --quiet --where "$at" >"$run/analyzer.json" 2>"$run/analyzer.log"; then
		echo "where: pulse-analyzer failed on $name (see $run/analyzer.log)"
		return 1
	fi
	rm -rf "$run/run/hosts"
}
export -f one
rc=0
ls "$out"/scenarios/*.json | xargs -P "${EVAL_JOBS:-2}" -I{} bash -c 'one "$@"' _ {} "$out" "$an" "$sim" || rc=1
runs=()
for s in "$out"/scenarios/*.json; do runs+=("$out/$(basename "$s" .json)"); done
python3 tools/eval/where_table.py $check "${runs[@]}" "${more[@]}" || rc=1
exit $rc
