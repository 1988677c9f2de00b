#!/bin/sh
# pulse-gen-scenarios (tools/gen_random.c), the randomized scenario matrix of
# make eval: the same seed gives byte-identical files, another seed other
# files, a shorter --count a prefix of a longer one; every scenario of seed 1
# (60 of them) passes `run_cluster --check`; at least a quarter have no
# failure; onsets include iteration 0 and late ones; names are valid; the
# CLI's errors exit 2; tools/gen-scenarios.sh --random gives the same files;
# --draws 1 leaves out the benign events, fault shapes, NCCL protocols by
# size and shared NICs that the default (--draws 2) adds to the same draws,
# in failure and no-failure runs alike.
# Skips (77) while the generator or the simulator is not built.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
gen=${BUILD:-build}/bin/pulse-gen-scenarios
sim=${BUILD:-build}/bin/pulse-run-cluster
for b in "$gen" "$sim"; do
	[ -x "$b" ] || { echo "skip: $b not built"; exit 77; }
done
tmp=$(mktemp -d /tmp/pulse-genrand-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }

# 1. determinism, seeds, prefixes
"$gen" --random 1 --count 60 --out "$tmp/a" >/dev/null || err "seed 1 failed"
"$gen" --random 1 --count 60 --out "$tmp/b" >/dev/null || err "seed 1 (again) failed"
"$gen" --random 2 --count 60 --out "$tmp/c" >/dev/null || err "seed 2 failed"
"$gen" --random 1 --count 20 --out "$tmp/p" >/dev/null || err "seed 1 count 20 failed"
diff -r "$tmp/a" "$tmp/b" >/dev/null || err "the same seed gave different files"
[ "$(ls "$tmp"/a/*.json | wc -l)" -eq 60 ] || err "seed 1: not 60 files"
[ "$(wc -l <"$tmp/a/list.txt")" -eq 60 ] || err "seed 1: list.txt is not 60 lines"
same=0
for f in "$tmp"/a/*.json; do
	g="$tmp/c/$(basename "$f" | sed 's/^rand-1-/rand-2-/')"
	cmp -s "$f" "$g" && same=$((same + 1))
done
[ "$same" -eq 0 ] || err "seeds 1 and 2 gave $same identical scenarios"
for f in "$tmp"/p/*.json; do
	cmp -s "$f" "$tmp/a/$(basename "$f")" || err "$(basename "$f"): --count 20 is not a prefix of --count 60"
done
tools/gen-scenarios.sh --random 1 --count 60 "$tmp/sh" >/dev/null || err "gen-scenarios.sh --random failed"
diff -r "$tmp/a" "$tmp/sh" >/dev/null || err "gen-scenarios.sh --random differs from pulse-gen-scenarios"

# 2. every scenario parses; the draw
n=0 nnull=0 zero=0 late=0 wls=" "
while read -r f; do
	s="$tmp/a/$f"
	[ -f "$s" ] || { err "list.txt names $f, which is not there"; continue; }
	out=$("$sim" --check "$s" 2>&1) || { err "$f: $out"; continue; }
	n=$((n + 1))
	name=$(sed -n 's/^{"name":"\([^"]*\)".*/\1/p' "$s")
	[ "$name.json" = "$f" ] || err "$f: name \"$name\" is not the file's"
	case $name in *[!A-Za-z0-9._-]*|"") err "$f: bad name \"$name\"" ;; esac
	[ "${#name}" -le 63 ] || err "$f: name longer than 63"
	grep -q '"quick"' "$s" && err "$f: has \"quick\""
	grep -q '"description":"' "$s" || err "$f: no description"
	wl=$(sed -n 's/.*"workload":"\([a-z]*\)".*/\1/p' "$s")
	case "$wls" in *" $wl "*) ;; *) wls="$wls$wl " ;; esac
	if grep -q '"failure":null' "$s"; then
		nnull=$((nnull + 1))
		continue
	fi
	it=$(sed -n 's/.*"iterations":\([0-9]*\).*/\1/p' "$s")
	st=$(sed -n 's/.*"start_iteration":\([0-9]*\).*/\1/p' "$s" | head -1)
	[ "$st" -eq 0 ] && zero=$((zero + 1))
	[ "$st" -ge $((it / 2)) ] && [ "$st" -ge 5 ] && late=$((late + 1))
done <"$tmp/a/list.txt"
[ "$n" -eq 60 ] || err "only $n of 60 scenarios pass run_cluster --check"
[ $((nnull * 4)) -ge 60 ] || err "only $nnull of 60 have no failure (want a quarter)"
[ "$nnull" -lt 60 ] || err "no scenario has a failure"
[ "$zero" -ge 1 ] || err "no onset at iteration 0"
[ "$late" -ge 1 ] || err "no late onset"
for w in gpt moe standalone; do
	case "$wls" in *" $w "*) ;; *) err "no $w scenario" ;; esac
done

# 3. the CLI
"$gen" --help | grep -q -- '--random SEED' || err "--help does not show the usage"
for bad in "" "--random 1" "--random 1 --count 0 --out $tmp/x" "--random -1 --count 2 --out $tmp/x" \
	"--random 1 --count 2 --out $tmp/x --max-gpus 1" "--random 1 --count 2 --out $tmp/x --no-failure-share 2" \
	"--random 1 --count 2 --out $tmp/x --simai-share 1.5" "--random 1 --count 2 --out $tmp/x --simai-dir" \
	"--random 1 --count 2 --out $tmp/x --bogus"; do
	# shellcheck disable=SC2086
	"$gen" $bad >/dev/null 2>&1
	rc=$?
	[ "$rc" -eq 2 ] || err "pulse-gen-scenarios $bad: exit $rc, expected 2"
done
"$gen" --random 1 --count 40 --out "$tmp/z" --no-failure-share 0 >/dev/null
! grep -q '"failure":null' "$tmp"/z/*.json || err "--no-failure-share 0 still wrote failure-free runs"
"$gen" --random 7 --count 30 --out "$tmp/small" --max-gpus 8 --max-iterations 6 >/dev/null
for f in "$tmp"/small/*.json; do
	h=$(sed -n 's/.*"hosts":\([0-9]*\).*/\1/p' "$f")
	g=$(sed -n 's/.*"gpus_per_host":\([0-9]*\).*/\1/p' "$f")
	it=$(sed -n 's/.*"iterations":\([0-9]*\).*/\1/p' "$f")
	[ $((h * g)) -le 8 ] || err "$(basename "$f"): $h x $g GPUs over --max-gpus 8"
	[ "$it" -le 6 ] || err "$(basename "$f"): $it iterations over --max-iterations 6"
	"$sim" --check "$f" >/dev/null 2>&1 || err "$(basename "$f") (--max-gpus 8) fails run_cluster --check"
done

# 4. SimAI draws (--simai-share): only behind the option; with it, the real
# AICB files of ../shared/workloads/simai at their GPU counts, all --check-ed
"$gen" --random 5 --count 20 --out "$tmp/s0" >/dev/null
! grep -q '"simai"' "$tmp"/s0/*.json || err "SimAI draws without --simai-share"
"$gen" --random 5 --count 20 --out "$tmp/s1" --simai-share 1 --max-gpus 64 >/dev/null
[ "$(grep -l '"workload":"simai"' "$tmp"/s1/*.json | wc -l)" -eq 20 ] || err "--simai-share 1: not every run is SimAI"
! grep -q 'gpt13b' "$tmp"/s1/*.json || err "--max-gpus 64 drew the 128-GPU file"
if [ -d ../shared/workloads/simai ]; then
	for f in "$tmp"/s1/*.json; do
		"$sim" --check "$f" >/dev/null 2>&1 || err "$(basename "$f") (SimAI) fails run_cluster --check"
	done
else
	echo "note: ../shared/workloads/simai absent: SimAI scenarios not --check-ed"
fi
# 5. --draws: 1 is the matrix without benign events and fault shapes; 2 (the
# default, checked above) adds them on top of the same draws
"$gen" --random 1 --count 60 --out "$tmp/d1" --draws 1 >/dev/null || err "--draws 1 failed"
grep -q '"events"\|"failures"\|end_iteration\|on_iterations\|jitter_dist\|"protocol"\|gpus_per_nic' "$tmp"/d1/*.json &&
	err "--draws 1 wrote benign events, fault shapes or NCCL-as-deployed keys"
grep -q '"protocol":"auto"' "$tmp"/a/*.json || err "--draws 2 drew no NCCL protocols by size"
grep -q '"gpus_per_nic":2' "$tmp"/a/*.json || err "--draws 2 drew no shared NIC"
same_base=0
for f in "$tmp"/d1/*.json; do
	g="$tmp/a/$(basename "$f")"
	# a shared NIC is the only draws-2 addition to the shape line
	[ "$(grep '"cluster"' "$f")" = "$(grep '"cluster"' "$g" | sed 's/,"gpus_per_nic":2//')" ] &&
		same_base=$((same_base + 1))
done
[ "$same_base" -eq 60 ] || err "--draws 1 and 2 differ in their shapes ($same_base of 60 alike)"
grep -q '"events"' "$tmp"/a/*.json || err "--draws 2 (default): no benign events in 60 scenarios"
ev_null=$(grep -l '"failure":null' "$tmp"/a/*.json | xargs grep -l '"events"' | wc -l)
[ "$ev_null" -ge 1 ] || err "--draws 2: no run without a failure has benign events"
"$gen" --random 1 --count 200 --out "$tmp/d2" >/dev/null || err "--random 1 --count 200 failed"
for want in '"failures":\[' '"end_iteration"' '"on_iterations"' '"checkpoint_every"' '"eval_every"' \
	'"hiccup_prob"' '"jitter_dist"' '"seqlen_' '"restart_after"' '"tp"' '"sequence_parallel"'; do
	grep -q "$want" "$tmp"/d2/*.json || err "--draws 2, 200 scenarios: none has $want"
done
for f in $(grep -l '"failures":\[\|"end_iteration"\|"on_iterations"\|"restart_after"' "$tmp"/d2/*.json); do
	"$sim" --check "$f" >/dev/null 2>&1 || err "$(basename "$f") (--draws 2) fails run_cluster --check"
done
"$gen" --random 1 --count 2 --out "$tmp/x" --draws 3 >/dev/null 2>&1
[ $? -eq 2 ] || err "--draws 3 is not a usage error"

if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "gen_random: ok (seed 1: 60 scenarios, $nnull without a failure, $zero onsets at iteration 0, $late late)"
