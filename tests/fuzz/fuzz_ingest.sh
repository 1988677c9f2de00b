#!/bin/sh
# Runs the libFuzzer target for the analyzer's input parser
# (tests/fuzz/fuzz_analyzer_ingest.c) for a bounded time, from the committed
# seeds in tests/fuzz/corpus/analyzer_ingest (lines of a real agent replay).
# FUZZ_SECONDS (default 15) sets the budget. Exit 0: no failure found;
# 77: not built (no clang/libFuzzer); 1: a failure, reproducer kept.
set -u
BUILD=${BUILD:-build}
bin=$BUILD/fuzz/fuzz_analyzer_ingest
if [ ! -x "$bin" ]; then
	echo "fuzz_ingest.sh: $bin not built (needs clang with libFuzzer: make $bin)"
	exit 77
fi
secs=${FUZZ_SECONDS:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
cp tests/fuzz/corpus/analyzer_ingest/* "$work/corpus/"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 12 "$work/log"
if [ $rc -ne 0 ]; then
	mkdir -p "$BUILD/fuzz/artifacts"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[ -f "$f" ] && cp "$f" "$BUILD/fuzz/artifacts/" && echo "reproducer: $BUILD/fuzz/artifacts/$(basename "$f")"
	done
	echo "fuzz_ingest.sh: the fuzzer found a failure (exit $rc)"
	exit 1
fi
grep -q 'Done [0-9]* runs' "$work/log" || { echo "fuzz_ingest.sh: no run summary"; exit 1; }
exit 0
