#!/bin/sh
# The shipped scenarios (tests/scenarios/): they are what tools/gen-scenarios.sh
# generates, all parse, the matrix is complete (>= 57 failure runs, every
# failure type, a baseline per workload), and every scenario in quick.list
# runs through sim/run_cluster with the run directory the contract asks for
# and a truth.json that names its failure. Also the CLI's errors.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${BUILD:-build}/bin/pulse-run-cluster
[ -x "$bin" ] || { echo "skip: $bin not built"; exit 77; }
tmp=$(mktemp -d /tmp/pulse-scen-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }

# 1. committed files == generator output
tools/gen-scenarios.sh "$tmp/gen" >/dev/null || err "gen-scenarios.sh failed"
for f in "$tmp"/gen/*; do
	cmp -s "$f" "tests/scenarios/$(basename "$f")" || err "tests/scenarios/$(basename "$f") differs from tools/gen-scenarios.sh output"
done
[ "$(ls "$tmp"/gen/*.json | wc -l)" -eq "$(ls tests/scenarios/*.json | wc -l)" ] || err "scenario count differs from the generator"

# 2. every scenario parses; the matrix
n=0 nfail=0
for f in tests/scenarios/*.json; do
	out=$("$bin" --check "$f") || { err "$f: $out"; continue; }
	n=$((n + 1))
	case $out in *"failure none)"*) ;; *) nfail=$((nfail + 1)) ;; esac
done
[ "$nfail" -ge 57 ] || err "only $nfail failure scenarios (Table 4 needs 57)"
for t in network_congestion cpu_contention nic_down moe_expert_imbalance pcie_contention \
	gpu_throttling gpu_execution_error cuda_execution_error cpu_throttling pcie_downgrade \
	nic_gpu_cross_numa memory_misalignment ccld_not_entered ccld_inconsistent \
	venus_slow_forward venus_slow_backward venus_slow_transmission holmes_spike \
	holmes_fluctuation holmes_persistent vedrfolnir_background vedrfolnir_incast; do
	grep -l "\"type\":\"$t\"" tests/scenarios/*.json >/dev/null || err "no scenario of type $t"
	q=0
	for f in $(cat tests/scenarios/quick.list); do
		grep -q "\"type\":\"$t\"" "tests/scenarios/$f" && q=1
	done
	[ $q = 1 ] || err "quick.list has no scenario of type $t"
done
for w in gpt moe standalone; do
	ls tests/scenarios/$w-*baseline*.json >/dev/null 2>&1 || err "no $w baseline"
done

# 3. the quick ones run, and write the contract
for f in $(cat tests/scenarios/quick.list); do
	s=tests/scenarios/$f
	grep -q '"quick":true' "$s" || err "$f is in quick.list but not marked quick"
	d="$tmp/run/${f%.json}"
	"$bin" "$s" --out "$d" --quiet || { err "$f: run failed"; continue; }
	for x in cluster.json truth.json truth-ops.jsonl; do
		[ -s "$d/$x" ] || err "$f: no $x"
	done
	ls "$d"/hosts/*/*.evs >/dev/null 2>&1 || err "$f: no .evs"
	ls "$d"/hosts/*/hook-*.rec >/dev/null 2>&1 || err "$f: no .rec"
	type=$(sed -n 's/.*"failure":{"type":"\([a-z_]*\)".*/\1/p' "$s")
	if [ -n "$type" ]; then
		grep -q "\"type\":\"$type\"" "$d/truth.json" || err "$f: truth.json lacks type $type"
		grep -q '"activated":true' "$d/truth.json" || err "$f: the failure never started"
	else
		grep -q '"failure":null' "$d/truth.json" || err "$f: baseline with a failure in truth.json"
		grep -q '"hung":false' "$d/truth.json" || err "$f: baseline hung"
	fi
	# nothing but truth*.* names the failure
	if [ -n "$type" ] && grep -rl "$type" "$d" | grep -v '/truth' >/dev/null; then
		err "$f: a file other than truth.json mentions $type"
	fi
done

# 4. CLI errors
printf '{"iterations":"x"}' >"$tmp/bad.json"
"$bin" "$tmp/bad.json" --out "$tmp/x" 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || err "bad scenario: exit $rc, expected 3"
grep -q "bad.json: scenario.iterations: expected a number" "$tmp/err" || err "bad scenario message: $(cat "$tmp/err")"
"$bin" 2>/dev/null; [ $? -eq 2 ] || err "no arguments: expected exit 2"
"$bin" /nonexistent.json --out "$tmp/y" 2>"$tmp/err"; [ $? -eq 3 ] || err "missing file: expected exit 3"
"$bin" tests/scenarios/gpt-baseline.json --out /proc/nope 2>"$tmp/err"; [ $? -eq 1 ] || err "unwritable --out: expected exit 1"

[ $fail = 0 ] && echo "ok: $n scenarios ($nfail with a failure), $(wc -l <tests/scenarios/quick.list) quick ones run"
exit $fail
