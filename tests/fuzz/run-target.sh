#!/bin/sh
# Runs one libFuzzer target for a bounded time from seed files, which are
# copied first so that what the fuzzer finds never lands in the source
# tree: the body every tests/*/fuzz_*.sh shares.
#
# Usage: tests/fuzz/run-target.sh NAME SECONDS [LIBFUZZER-OPTION...] -- SEED...
#   NAME     the target, $BUILD/fuzz/NAME (BUILD defaults to build)
#   SECONDS  the default budget; FUZZ_SECONDS overrides it
#   options  after the defaults (-timeout=5 -rss_limit_mb=1024), so they win
# Exit: 0 no failure found; 77 not built (needs clang with libFuzzer); 1 a
# failure, its reproducer copied to $BUILD/fuzz/artifacts/ and dumped.
set -u
BUILD=${BUILD:-build}
name=$1
secs=${FUZZ_SECONDS:-$2}
shift 2
opts=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	opts="$opts $1"
	shift
done
[ $# -gt 0 ] && shift
bin=$BUILD/fuzz/$name
if [ ! -x "$bin" ]; then
	echo "$name: $bin not built (needs clang with libFuzzer: make $bin)"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
for s in "$@"; do
	[ -f "$s" ] && cp "$s" "$work/corpus/"
done
# shellcheck disable=SC2086
"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 $opts -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 20 "$work/log"
if [ $rc -ne 0 ]; then
	echo "$name: the fuzzer found a failure (exit $rc); reproducer:"
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[ -f "$f" ] || continue
		mkdir -p "$BUILD/fuzz/artifacts"
		cp "$f" "$BUILD/fuzz/artifacts/"
		echo "  $BUILD/fuzz/artifacts/$(basename "$f")"
		od -A d -t x1 "$f" | head -n 20
	done
	exit 1
fi
grep -q 'Done [0-9]* runs' "$work/log" || { echo "$name: no run summary"; exit 1; }
exit 0
