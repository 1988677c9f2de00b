#!/bin/sh
# Runs the libFuzzer target for the interception mapping decoder
# (tests/fuzz/fuzz_hook_map.c) for a bounded time, from the committed
# seeds in tests/fuzz/corpus/hook_map. FUZZ_SECONDS (default 10) sets
# the budget. Exit 0: no failure found; 77: not built (no clang/libFuzzer).
set -u
BUILD=${BUILD:-build}
bin=$BUILD/fuzz/fuzz_hook_map
if [ ! -x "$bin" ]; then
	echo "fuzz_hook_map.sh: $bin not built (needs clang with libFuzzer: make $bin)"
	exit 77
fi
secs=${FUZZ_SECONDS:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
# copied, so that what the fuzzer finds does not land in the source tree
cp tests/fuzz/corpus/hook_map/* "$work/corpus/" 2>/dev/null || true
"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 20 "$work/log"
if [ $rc -ne 0 ]; then
	echo "fuzz_hook_map.sh: the fuzzer found a failure (exit $rc); reproducer:"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[ -f "$f" ] || continue
		mkdir -p "$BUILD/fuzz/artifacts"
		cp "$f" "$BUILD/fuzz/artifacts/"
		echo "  $BUILD/fuzz/artifacts/$(basename "$f")"
		od -A d -t x1 "$f" | head -n 20
	done
	exit 1
fi
grep -q 'Done [0-9]* runs' "$work/log" || { echo "fuzz_hook_map.sh: no run summary"; exit 1; }
exit 0
