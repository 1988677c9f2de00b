#!/usr/bin/env bash
# The per-QP series fetch over real sockets (protocol 3: SERIES_REQ and
# SERIES, analyzer/PROTOCOL.md): tests/live/comm_slow.json (network
# congestion out of host1 GPU 1) served by pulse-cluster-serve at 4x real
# time to one pulse-host-agent per host and pulse-analyzer --listen (ASan
# builds), through tools/live-cluster.sh. Checks that the analyzer asked
# the diagnosis' hosts for their series, every one answered (counters
# series_reqs = series_answers, nothing bad), the report holds the
# direction with the series of every host it asked (source "live"), and the
# direction equals the one pulse-analyzer --replay decides on the same run
# from `pulse-host-agent --series-query` (the same answer, offline). A run
# degraded by the machine's load (agent poll overruns, lines late for the
# watermark) is made again, twice at most, then skipped (77).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
agent=$build/tests/pulse-host-agent-asan
analyzer=$build/tests/pulse-analyzer-asan
for b in "$agent" "$analyzer" "$build/bin/pulse-cluster-serve" "$build/bin/pulse-run-cluster" \
	"$build/bin/pulse-analyzer" "$build/bin/pulse-host-agent"; do
	[ -x "$b" ] || { echo "skip: $b is not built"; exit 77; }
done
work=$(mktemp -d /tmp/pulse-series.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "analyzer_series.sh: kept $work" || rm -rf "$work"' EXIT
"$build/bin/pulse-run-cluster" "$root/tests/live/comm_slow.json" --out "$work/run" --quiet ||
	{ echo "FAIL: run_cluster"; exit 1; }
"$build/bin/pulse-analyzer" --replay "$work/run" --agent-out "$work/replay" --json --quiet \
	>"$work/replay.json" || { echo "FAIL: replay"; exit 1; }
want=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["pulse"]
print(p["direction"]["label"] if p and "direction" in p else "none")' "$work/replay.json")
echo "replay: direction $want"
[ "$want" = egress ] || [ "$want" = path ] || { echo "FAIL: replay direction $want (congestion: egress or path)"; exit 1; }
for try in 1 2 3; do
	rm -rf "$work/live"
	"$root/tools/live-cluster.sh" "$work/run" "$work/live" --speed 4 --agent "$agent" \
		--analyzer "$analyzer" --quiet >"$work/live.out" 2>&1
	if grep -q "poll cycle overran" "$work/live"/agent-*.log || grep -q "wm_late=[1-9]" "$work/live/an.log"; then
		echo "analyzer_series.sh: run $try degraded by the machine's load; again"
		continue
	fi
	break
done
[ $try = 3 ] && grep -q "wm_late=[1-9]\|poll cycle overran" "$work/live"/an.log "$work/live"/agent-*.log &&
	{ echo "SKIP: three runs degraded by the machine's load"; exit 77; }
fail=0
if grep -l "ERROR: AddressSanitizer\|runtime error:" "$work/live"/*.log "$work/live/an.out" 2>/dev/null; then
	echo "FAIL: a sanitizer report"; fail=1
fi
stats=$(grep -o 'series_reqs=[0-9]* series_answers=[0-9]* series_bad=[0-9]* series_unanswered=[0-9]*' "$work/live/an.log" | tail -1)
echo "live: $stats"
eval "$(echo "$stats" | tr ' ' '\n' | sed 's/^/s_/')"
[ "${s_series_reqs:-0}" -gt 0 ] || { echo "FAIL: no SERIES_REQ sent"; fail=1; }
[ "${s_series_answers:-0}" = "${s_series_reqs:-x}" ] || { echo "FAIL: not every request answered"; fail=1; }
[ "${s_series_bad:-1}" = 0 ] && [ "${s_series_unanswered:-1}" = 0 ] || { echo "FAIL: bad or unanswered series"; fail=1; }
got=$(sed -n 's/^ *direction: \([a-z-]*\):.*/\1/p' "$work/live/an.out" | head -1)
src=$(sed -n 's/.*from the µs per-QP series of \([0-9]*\) of \([0-9]*\) hosts (\([a-z]*\)).*/\1 \2 \3/p' "$work/live/an.out" | head -1)
echo "live: direction $got (series of answered/asked hosts, source: $src)"
set -- $src
[ "${3:-}" = live ] && [ "${1:-0}" = "${2:-x}" ] && [ "${1:-0}" -gt 0 ] || { echo "FAIL: the live report's series"; fail=1; }
[ "$got" = "$want" ] || { echo "FAIL: live direction '$got', replay '$want'"; fail=1; }
[ $fail = 0 ] && echo "analyzer_series.sh: ok"
exit $fail
