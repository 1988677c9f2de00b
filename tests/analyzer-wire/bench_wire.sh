#!/bin/bash
# Benchmarks of the agent <-> analyzer wire (make bench-analyzer-wire):
# the decoders alone, and op records end to end through the agent's link
# into a live pulse-analyzer (its real state) over loopback, binary
# (protocol 2, OPS frames) and JSON (protocol 1, OP frames) in one run.
set -u
BUILD=${BUILD:-build}
cl=$BUILD/bench/aw_client
an=$BUILD/bin/pulse-analyzer
# JSON is ~30x slower: fewer records, so that its run stays ~10 s and the
# link's queue (256 MiB in aw_client) holds what the analyzer has not read
N_BIN=${AW_BENCH_N_BIN:-${AW_BENCH_N:-3000000}}
N_JSON=${AW_BENCH_N_JSON:-${AW_BENCH_N:-300000}}
echo "== analyzer wire ($(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'))"
"$cl" bench 2>/dev/null || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# e2e MODE N: the analyzer exits once the agent said BYE and it has read
# everything; the time from the first record to that exit is the end-to-end
# rate, the analyzer's CPU time (user + system, from /usr/bin/time) the
# rate per analyzer core.
e2e() {
	local mode=$1 n=$2 port apid
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 40000))
		PULSE_ANALYZER_SERVER="exit_after_byes=1,max_fps=0" \
			/usr/bin/time -f "%U %S" -o "$work/cpu" \
			"$an" --listen "127.0.0.1:$port" --quiet >/dev/null 2>"$work/an.log" &
		apid=$!
		for i in $(seq 50); do
			grep -q "listening on" "$work/an.log" && break
			kill -0 $apid 2>/dev/null || break
			sleep 0.1
		done
		grep -q "listening on" "$work/an.log" && break
		wait $apid 2>/dev/null
	done
	local t0 t1 rc lines
	t0=$(date +%s.%N)
	"$cl" bench-e2e "127.0.0.1:$port" "$n" "$mode" >"$work/cl.out" 2>&1
	rc=$?
	wait $apid
	t1=$(date +%s.%N)
	lines=$(grep "server: accepted" "$work/an.log" | tr ' ' '\n' | sed -n 's/^lines=//p')
	bytes=$(grep "server: accepted" "$work/an.log" | tr ' ' '\n' | sed -n 's/^bytes_in=//p')
	read -r u s <"$work/cpu"
	awk -v m="$mode" -v n="$n" -v l="$lines" -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v by="$bytes" 'BEGIN {
		printf "| %-6s | %9d | %6.2f | %9.0f | %5.2f | %9.0f | %6.0f |\n", m, l, b - a,
			n / (b - a) / 1000, u + s, (u + s > 0 ? n / (u + s) / 1000 : 0), by / n }'
	[ "$lines" = "$n" ] || { echo "bench_wire.sh: the analyzer got $lines of $n $mode records"; fail=1; }
	[ $rc = 0 ] || fail=1
}
echo
echo "end to end: op records through one agent link (host-agent/analyzer_link.c) -> pulse-analyzer --listen (its real state), loopback"
echo "| form   |   records | wall s | k rec/s wall | analyzer cpu s | k rec/s per analyzer core | bytes/rec |"
echo "|--------|-----------|--------|-----------|-------|-----------|--------|"
e2e bin "$N_BIN"
e2e json "$N_JSON"
exit $fail
