#!/bin/sh
# Fuzzes the scenario parser of sim/run_cluster for a bounded time, seeded
# with the shipped scenarios. FUZZ_SECONDS (default 10). Exit 0: nothing
# found; 77: no fuzzer (needs clang with libFuzzer).
set -u
BUILD=${BUILD:-build}
bin=$BUILD/fuzz/fuzz_scenario
if [ ! -x "$bin" ]; then
	echo "fuzz_scenario.sh: $bin not built (needs clang with libFuzzer: make $bin)"
	exit 77
fi
secs=${FUZZ_SECONDS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
cp tests/scenarios/*.json tests/sim-cluster/*.json "$work/corpus/" 2>/dev/null || true
"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 12 "$work/log"
if [ $rc -ne 0 ]; then
	echo "fuzz_scenario.sh: the fuzzer found a failure (exit $rc); reproducer:"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
		[ -f "$f" ] && { echo "$f:"; head -c 2000 "$f"; echo; }
	done
	exit 1
fi
grep -q 'Done [0-9]* runs' "$work/log" || { echo "fuzz_scenario.sh: no run summary"; exit 1; }
exit 0
