#!/usr/bin/env bash
# make bench-replay: pulse-host-agent --replay of a 64-GPU GPT run of 10
# iterations (8 hosts x 8 GPUs, one NIC per GPU), end to end, against the
# time sim/run_cluster took to write it (issue #7, "Performance"). Prints a
# Markdown table; numbers are wall-clock seconds on this machine.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
sim=$build/bin/pulse-run-cluster
agent=$build/bin/pulse-host-agent
work=$(mktemp -d /tmp/pulse-bench-replay.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/gpt64.json" <<'J'
{"name":"bench-gpt64","seed":1,"workload":"gpt","iterations":10,
 "cluster":{"hosts":8,"gpus_per_host":8}}
J
now() { date +%s.%N; }
echo "| run | sim/run_cluster (s) | replay, all 8 hosts (s) | host time replayed (s) | x real time | windows | op records | RSS (MiB) |"
echo "|---|---|---|---|---|---|---|---|"
for i in 1 2 3; do
	rm -rf "$work/run" "$work/log"
	t0=$(now)
	"$sim" "$work/gpt64.json" --out "$work/run" --quiet
	t1=$(now)
	/usr/bin/time -f "%M" -o "$work/rss" "$agent" --replay "$work/run" --out "$work/out.jsonl" \
		--log "$work/log"
	t2=$(now)
	sum=$(sed -n 's/.*replay done: \([0-9.]*\) s of host time (summed over hosts) in [0-9.]* s: \([0-9.]*\)x real time; \([0-9]*\) windows, \([0-9]*\) op records.*/\1 \2 \3 \4/p' "$work/log")
	set -- $sum
	echo "| $i | $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') |" \
		"$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }') | $1 | $2 | $3 | $4 |" \
		"$(( $(cat "$work/rss") / 1024 )) |"
done
grep "QP join" "$work/log" | sed 's/.*info: replay [^:]*: //'
