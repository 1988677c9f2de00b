#!/usr/bin/env bash
# make eval: every scenario of tests/scenarios/ end to end (run_cluster ->
# pulse-host-agent --replay -> pulse-analyzer --replay --json), scored
# against truth.json: the paper's Table 3 for Pulse and the OP-level
# baseline, precision / recall / FPR per anomaly class, latency, and the
# epoch-length ablation on the congestion scenario. Then the same on a
# randomized matrix that nobody tuned on (pulse-gen-scenarios, sim/README.md
# "Randomized scenarios"), scored apart.
#   EVAL_JOBS=N        scenarios at a time (default 2)
#   EVAL_SCENARIOS="a.json b.json"   a subset (default: tests/scenarios/*.json)
#   EVAL_OUT=DIR       default build/eval
#   EVAL_KEEP=1        keep the simulator's per-host output, the agents' output
#                      and truth-ops.jsonl (by default only the reports, truth
#                      and logs stay)
#   EVAL_KEEP=agent    keep only what pulse-analyzer --replay RUN/run needs
#                      again: the agents' output and the hosts' link lines
#   EVAL_NO_ABLATION=1 skip the ablation
#   EVAL_SEED=S        the randomized matrix's seed (default: today, date +%Y%m%d)
#   EVAL_COUNT=N       its runs (default 200)
#   EVAL_GEN_OPTS="..." more pulse-gen-scenarios options for it, e.g.
#                      "--simai-share 0.5" (real SimAI/AICB workloads)
#   EVAL_DRAWS=1|2     its draws (pulse-gen-scenarios --draws; default 2: with
#                      benign events and transient/intermittent/concurrent/
#                      mixed faults; 1: the matrix without them)
#   EVAL_NO_RANDOM=1   skip the randomized matrix
#   EVAL_NO_FIXED=1    skip tests/scenarios/ (and the ablation)
#   EVAL_NO_WHERE=1    skip "where in the iteration" (tools/eval/where.sh)
set -u
cd "$(dirname "$0")/../.."
out=${EVAL_OUT:-build/eval}
jobs=${EVAL_JOBS:-2}
score=build/bin/pulse-eval-score
off() { [ -n "${1:-}" ] && [ "$1" != 0 ]; }
fixed=1 random=1
off "${EVAL_NO_FIXED:-}" && fixed=0
off "${EVAL_NO_RANDOM:-}" && random=0
need=(build/bin/pulse-analyzer build/bin/pulse-host-agent "$score")
[ $random = 1 ] && need+=(build/bin/pulse-gen-scenarios)
for b in "${need[@]}"; do
	if [ ! -x "$b" ]; then echo "eval: $b is not built (make)"; exit 1; fi
done
if [ ! -x sim/run_cluster ]; then echo "eval: sim/run_cluster is missing"; exit 1; fi
if [ -n "${EVAL_SCENARIOS:-}" ]; then
	scen=($EVAL_SCENARIOS)
else
	scen=()
	for f in tests/scenarios/*.json; do
		[ -f "$f" ] && scen+=("$f")
	done
fi
n=${#scen[@]}
if [ $fixed = 1 ] && [ "$n" -eq 0 ]; then echo "eval: no scenarios in tests/scenarios/"; exit 1; fi
mkdir -p "$out/runs" "$out/bin"
# private copies: other builds in the tree must not swap binaries under a running eval
for b in pulse-analyzer pulse-host-agent pulse-eval-score pulse-run-cluster pulse-gen-scenarios; do
	if [ -x "build/bin/$b" ]; then cp -f "build/bin/$b" "$out/bin/$b"; fi
done
export EVAL_BIN="$out/bin"
score=$out/bin/pulse-eval-score
t0=$(date +%s)
rc=0
# issue 16's answers (slow ratio, episode pattern, episode bounds) against
# the truth, one table each (tools/eval/answers.py)
answers() {
	echo
	if command -v python3 >/dev/null; then python3 tools/eval/answers.py "$@"; else echo "(answers: no python3)"; fi
}
if [ $fixed = 1 ]; then
	echo "== make eval: $n scenarios, $jobs at a time ($(nproc) cores); output in $out/"
	i=0
	for s in "${scen[@]}"; do
		i=$((i + 1))
		printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$s" "$out/runs" "$i" "$n" "$t0" "$out/bin/pulse-analyzer"
	done | xargs -0 -n 6 -P "$jobs" tools/eval/run-one.sh
	runs=()
	for s in "${scen[@]}"; do
		runs+=("$out/runs/$(basename "$s" .json)")
	done
	echo
	echo "== Results ($(($(date +%s) - t0)) s)"
	"$score" --out "$out/report.json" "${runs[@]}"
	rc=$?
	answers "${runs[@]}"
	echo
	python3 tools/eval/direction-table.py "${runs[@]}"

	# ---- epoch-length ablation (§7.2.1): the congestion scenario at 32 µs, 64 µs, 1 ms
	if [ -z "${EVAL_NO_ABLATION:-}" ]; then
		cong=""
		for s in tests/scenarios/*.json; do
			case "$(basename "$s")" in
			*congestion*gpt*|*gpt*congestion*) cong=$s; break ;;
			esac
		done
		[ -z "$cong" ] && for s in tests/scenarios/*congestion*.json; do cong=$s; break; done
		if [ -z "$cong" ] || [ ! -f "$cong" ]; then
			echo "ablation: no congestion scenario found in tests/scenarios/"
		else
			echo
			echo "== Epoch-length ablation on $(basename "$cong") (§7.2.1: coarse epochs fold the gaps of the"
			echo "   normal ranks into their actual communication time)"
			mkdir -p "$out/ablation"
			k=0
			for ep in 32000 64000 1000000; do
				k=$((k + 1))
				sc="$out/ablation/$(basename "$cong" .json)-epoch$((ep / 1000))us.json"
				"$score" --set-epoch "$cong" "$sc" "$ep" || continue
				tools/eval/run-one.sh "$sc" "$out/ablation" "$k" 3 "$t0" "$out/bin/pulse-analyzer"
			done
			SCORE="$score" tools/eval/ablation.sh "$out/ablation" "$(basename "$cong" .json)"
		fi
	fi

	# ---- where in the iteration (issue 16 part 2): the VenusTrace types at
	# several seeds and an absorbed slowdown, with the matrix's own runs
	if [ -z "${EVAL_NO_WHERE:-}" ]; then
		echo
		vruns=()
		for r in "${runs[@]}"; do
			case "$(basename "$r")" in *venus*) vruns+=("$r") ;; esac
		done
		tools/eval/where.sh "$out/where" "$out/bin/pulse-analyzer" -- "${vruns[@]}" || true
	fi
fi

# ---- the randomized matrix: scenarios nobody tuned on
if [ $random = 1 ]; then
	seed=${EVAL_SEED:-$(date +%Y%m%d)}
	count=${EVAL_COUNT:-200}
	draws=${EVAL_DRAWS:-2}
	rdir=$out/random
	rm -rf "$rdir/scenarios" "$rdir/runs" "$rdir/report.json"
	mkdir -p "$rdir/runs"
	echo
	echo "== randomized matrix: seed $seed, $count runs, draws $draws, $jobs at a time; output in $rdir/"
	gopts=${EVAL_GEN_OPTS:-}
	echo "   (the same matrix again: EVAL_SEED=$seed EVAL_COUNT=$count EVAL_DRAWS=$draws${gopts:+ EVAL_GEN_OPTS=\"$gopts\"} make eval;"
	echo "   the files alone: tools/gen-scenarios.sh --random $seed --count $count --draws $draws${gopts:+ $gopts} DIR)"
	# shellcheck disable=SC2086
	if ! "$out/bin/pulse-gen-scenarios" --random "$seed" --count "$count" --draws "$draws" $gopts --out "$rdir/scenarios"; then
		echo "eval: pulse-gen-scenarios failed (EVAL_SEED must be 0..2^64-1, EVAL_COUNT 1..100000, EVAL_DRAWS 1 or 2)"
		rc=1
	else
		rscen=()
		while read -r f; do
			[ -n "$f" ] && rscen+=("$rdir/scenarios/$f")
		done <"$rdir/scenarios/list.txt"
		rn=${#rscen[@]}
		t1=$(date +%s)
		i=0
		for s in "${rscen[@]}"; do
			i=$((i + 1))
			printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$s" "$rdir/runs" "$i" "$rn" "$t1" "$out/bin/pulse-analyzer"
		done | xargs -0 -n 6 -P "$jobs" tools/eval/run-one.sh
		rruns=()
		for s in "${rscen[@]}"; do
			rruns+=("$rdir/runs/$(basename "$s" .json)")
		done
		echo
		echo "== Results of the randomized matrix (seed $seed, $rn runs, $(($(date +%s) - t1)) s)"
		"$score" --out "$rdir/report.json" "${rruns[@]}"
		r2=$?
		answers "${rruns[@]}"
		echo
		python3 tools/eval/direction-table.py --scenarios "$rdir/scenarios" "${rruns[@]}"
		[ $r2 -ne 0 ] && rc=$r2
		# run-one.sh removed each run's agent output and truth-ops.jsonl (one
		# run again: tools/eval/run-one.sh SCENARIO DIR 1 1 0)
		if [ -z "${EVAL_KEEP:-}" ]; then
			echo "(per-run agent output and truth-ops.jsonl removed; EVAL_KEEP=1 keeps them)"
		fi
	fi
fi
echo
reports=
[ $fixed = 1 ] && [ -f "$out/report.json" ] && reports="$out/report.json"
[ $random = 1 ] && [ -f "$out/random/report.json" ] &&
	reports="${reports:+$reports; }randomized matrix (seed $seed): $out/random/report.json"
echo "make eval: done in $(($(date +%s) - t0)) s; report: ${reports:-none}"
exit $rc
