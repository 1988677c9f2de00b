#!/bin/sh
# A capture with two million distinct destination QPNs (generated here, not
# committed): the firmware's flow slots run out and the drops are counted,
# the simulator's own flow limit is honoured, nothing crashes.
set -u
BUILD=${BUILD:-build}
gen=$BUILD/bin/pulse-tracegen
rt=$BUILD/bin/pulse-run-trace
if [ ! -x "$gen" ] || [ ! -x "$rt" ]; then
	echo "run_trace_qps.sh: $gen or $rt not built"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() { # DESCRIPTION PATTERN
	if grep -q -- "$2" "$work/out"; then echo "ok   $1"; else
		echo "FAIL $1: no '$2' in:"; sed 's/^/    | /' "$work/out" | head -n 30; fails=$((fails + 1)); fi
}
n=2000000
"$gen" --pattern qps --qps $n --snaplen 96 -o "$work/qps.pcap" || exit 1

"$rt" --top 3 "$work/qps.pcap" >"$work/out" 2>&1
rc=$?
[ $rc -eq 0 ] && echo "ok   replay of $n QPNs exits 0" || { echo "FAIL exit $rc"; fails=$((fails + 1)); }
check "every packet read and decoded" "$n read: $n RoCEv2"
check "one-way: every local QPN synthetic, and said so" "$n SYNTHETIC"
check "the firmware filled its 4096 slots" "flows created 4096"
check "the rest are counted as slot drops" "drop_no_slot=$((n - 4096))"
check "the summary is cut, not millions of lines" "1999997 more QPs"

# the simulator's own flow table limit
"$rt" --top 3 --max-flows 500000 --fw-flows 65535 "$work/qps.pcap" >"$work/out" 2>&1
rc=$?
[ $rc -eq 0 ] && echo "ok   --max-flows 500000 exits 0" || { echo "FAIL exit $rc"; fails=$((fails + 1)); }
check "packets of flows beyond --max-flows are counted" "1500000 of flows beyond --max-flows 500000"
check "65535 firmware slots (the most the QPN table can address)" "flows created 65535"
check "slot drops with the largest table" "drop_no_slot=$((500000 - 65535))"
echo "run_trace_qps.sh: $fails failures"
[ $fails -eq 0 ]
