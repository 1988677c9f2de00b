#!/bin/sh
# Upload bytes per second for ring all-reduce traffic (BENCHMARKS.md,
# "pulse-host-agent"): the simulated NIC replays tests/traces/ring.pcap in a
# loop, back to back (the NIC never idles between all-reduces: the worst case
# for a ring, a training step that only communicates). The simulator cannot
# feed this 284 Gb/s capture in real time on a small machine, so it runs at a
# fraction of real time (--speed) and rates are per second of NIC time. The
# agent polls every second of wall time for 6 s; the JSON lines give the
# upload bytes and NIC-time span of each full window.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/bin/pulse-host-agent
rt=$BUILD/bin/pulse-run-trace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo
echo "ring.pcap looped through run_trace --serve, pulse-host-agent --poll 1s --epoch 32us, 6 s"
echo
echo "| replay speed | windows | NIC time covered | upload bytes/s (mean) | QPs per window | epochs per QP per window (max) | vs paper 0.3 MB/s |"
echo "|---|---|---|---|---|---|---|"
for speed in 0.1 0.25; do
	rm -f "$work/nic.sock" "$work/o.jsonl"
	"$rt" --serve "$work/nic.sock" --loop --speed "$speed" --epoch 32us tests/traces/ring.pcap 2>/dev/null &
	spid=$!
	i=0; while [ ! -e "$work/nic.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	"$agent" --no-hooks --sim "$work/nic.sock" --poll 1s --epoch 32us --exit-after 6.5s --timeout 900ms --lock-dir "$work" \
		--out "$work/o.jsonl" 2>"$work/a.log"
	kill "$spid"; wait "$spid" 2>/dev/null
	# skip the first window (it starts at CONFIGURE)
	grep '"type":"window"' "$work/o.jsonl" | tail -n +2 >"$work/w"
	n=$(wc -l <"$work/w")
	bytes=$(sed 's/.*"upload_bytes":\([0-9]*\).*/\1/' "$work/w" | awk '{ s += $1 } END { print s + 0 }')
	span=$(sed 's/.*"nic_start_ns":\([0-9]*\),"nic_end_ns":\([0-9]*\).*/\1 \2/' "$work/w" |
		awk '{ s += $2 - $1 } END { print s / 1e9 }')
	qps=$(sed 's/.*"flows":\([0-9]*\).*/\1/' "$work/w" | sort -n | tail -n 1)
	ep=$(grep -o '"active_epochs":[0-9]*' "$work/w" | sed 's/.*://' | sort -n | tail -n 1)
	awk -v sp="$speed" -v n="$n" -v by="$bytes" -v t="$span" -v q="$qps" -v e="$ep" 'BEGIN {
		r = (t > 0) ? by / t : 0
		printf "| %s | %d | %.2f s | %.0f (%.3f MB/s) | %s | %s | %.2fx |\n", sp, n, t, r, r / 1e6, q, e, r / 3e5 }'
	# NIC time runs at the replay speed: the rate is per second of NIC time
done
echo
echo "(upload bytes/s are per second of NIC time: at speed 0.1 a second of the simulated NIC lasts 10 s of wall time)"
