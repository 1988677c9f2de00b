#!/bin/sh
# Runs the libFuzzer target for the host agent's netlink and sysfs parsers for a bounded time.
# FUZZ_SECONDS (default 20) sets the budget. Exit 0: no crash found.
set -u
BUILD=${BUILD:-build}
bin=$BUILD/fuzz/fuzz_host_netlink
if [ ! -x "$bin" ]; then
	echo "fuzz_host_netlink.sh: $bin not built (needs clang with libFuzzer: make $bin)"
	exit 77
fi
secs=${FUZZ_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
# Seeds: the committed ones (netlink messages built with libnl from the uapi headers, sysfs values) are copied so that new inputs
# the fuzzer finds do not land in the source tree.
cp tests/fuzz/corpus/host_netlink/* "$work/corpus/" 2>/dev/null || true
"$bin" -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
rc=$?
tail -n 25 "$work/log"
if [ $rc -ne 0 ]; then
	echo "fuzz_host_netlink.sh: the fuzzer found a failure (exit $rc); reproducer:"
	ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null
	for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
		[ -f "$f" ] && od -A d -t x1 "$f" | head -n 20
	done
	exit 1
fi
grep -q 'Done [0-9]* runs' "$work/log" || { echo "fuzz_host_netlink.sh: no run summary"; exit 1; }
exit 0
