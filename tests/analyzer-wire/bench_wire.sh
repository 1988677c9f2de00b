#!/bin/bash
# Benchmarks of the agent <-> analyzer wire (make bench-analyzer-wire):
# the decoder alone, and op records end to end through the agent's link
# into a live pulse-analyzer (its real state) over loopback.
set -u
BUILD=${BUILD:-build}
cl=$BUILD/bench/aw_client
an=$BUILD/bin/pulse-analyzer
N=${AW_BENCH_N:-100000}
echo "== analyzer wire ($(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'))"
"$cl" bench || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the analyzer exits once the agent said BYE and it has read everything:
# the time from the first record to that exit is the end-to-end rate
for try in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 40000))
	PULSE_ANALYZER_SERVER="exit_after_byes=1,max_fps=0" \
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
t0=$(date +%s.%N)
"$cl" bench-e2e "127.0.0.1:$port" "$N" >"$work/cl.out" 2>&1
rc=$?
wait $apid
t1=$(date +%s.%N)
grep '^end to end' "$work/cl.out" | sed 's/^end to end:/link side (queued and written):/'
lines=$(grep "server: accepted" "$work/an.log" | tr ' ' '\n' | sed -n 's/^lines=//p')
awk -v n="$N" -v l="$lines" -v a="$t0" -v b="$t1" 'BEGIN {
	printf "end to end (until pulse-analyzer ingested all %d records and exited): %.2f s, %.0f k records/s\n", l, b - a, n / (b - a) / 1000 }'
grep "server: accepted" "$work/an.log" | tr ' ' '\n' |
	grep -E '^(frames_in|bytes_in|lines|lines_used|lines_rejected|flood_throttled)=' | tr '\n' ' '
echo
[ "$lines" = "$N" ] || { echo "bench_wire.sh: the analyzer got $lines of $N records"; exit 1; }
exit $rc
