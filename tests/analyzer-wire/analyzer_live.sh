#!/bin/bash
# pulse-analyzer --listen with agents at once: a good one (through the
# agent's own link library) and misbehaving ones (garbage, an oversized
# length, a disconnect in the middle of a frame, an unknown protocol
# version, a flood, a skewed clock). The good agent's lines all get in; the
# analyzer's counters (SIGUSR1 stats line and the one at exit) say what was
# dropped and why. Skips (77) while pulse-analyzer or the client is not built.
set -u
BUILD=${BUILD:-build}
an=$BUILD/tests/pulse-analyzer-asan
[ -x "$an" ] || an=$BUILD/bin/pulse-analyzer
cl=$BUILD/tests/aw_client
for b in "$an" "$cl"; do
	if [ ! -x "$b" ]; then
		echo "analyzer_live.sh: $b not built"
		exit 77
	fi
done
work=$(mktemp -d)
apid=
cleanup() {
	[ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- analyzer log (connections):"
	grep -E "connected|BYE|middle|closing|closed|send failed" "$work/an.log" | tail -n 40
	echo "--- analyzer log (end):"
	tail -n 20 "$work/an.log"
	echo "--- good agent:"
	cat "$work/good.out" 2>/dev/null
	exit 1
}

# a random free port (retry if taken)
export PULSE_ANALYZER_SERVER="max_fps=3000,flood_close_s=2,hello_timeout_ms=1000,max_payload=262144,max_skew_ms=50"
for try in 1 2 3 4 5 6 7 8 9 10; do
	port=$((20000 + RANDOM % 40000))
	"$an" --listen ":$port" --quiet >"$work/an.out" 2>"$work/an.log" &
	apid=$!
	for i in $(seq 50); do
		grep -q "listening on" "$work/an.log" && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "listening on" "$work/an.log" && break
	wait "$apid" 2>/dev/null
	apid=
done
[ -n "$apid" ] || fail "pulse-analyzer did not start listening"
echo "pulse-analyzer listening on :$port"

N=3000
"$cl" good "127.0.0.1:$port" hostA $N >"$work/good.out" 2>&1 &
gpid=$!
"$cl" garbage "127.0.0.1:$port" || fail "garbage: no ERROR malformed"
"$cl" oversize "127.0.0.1:$port" badsize || fail "oversize: no ERROR oversize"
"$cl" midframe "127.0.0.1:$port" badmid || fail "midframe client"
"$cl" badversion "127.0.0.1:$port" badver || fail "badversion: no ERROR version"
"$cl" flood "127.0.0.1:$port" flooder 2.5 || fail "flood: not stopped by the analyzer"
"$cl" skew "127.0.0.1:$port" skewed 800 || fail "skew client"
ipv6=0
if "$cl" good "[::1]:$port" hostB 100 >"$work/good6.out" 2>&1; then
	ipv6=1
else
	echo "note: no IPv6 loopback here ($(tail -n 1 "$work/good6.out")); IPv6 part skipped"
fi
wait "$gpid" || { cat "$work/good.out"; fail "good agent did not send everything"; }
cat "$work/good.out"

sleep 0.3
kill -USR1 "$apid"
for i in $(seq 30); do
	grep -q "server: accepted" "$work/an.log" && break
	sleep 0.1
done
grep -q "server: accepted" "$work/an.log" || fail "no stats line on SIGUSR1"
kill -TERM "$apid"
wait "$apid"
rc=$?
apid=
[ $rc -eq 0 ] || fail "pulse-analyzer exited with $rc"
stats=$(grep "server: accepted" "$work/an.log" | tail -n 1)
echo "$stats" | tr ' ' '\n' | grep -E '^(accepted|hellos|byes|bad_magic|oversize|mid_frame_disconnects|hello_version|flood_throttled|flood_closes|skew_events|lines|lines_used|lines_ignored|lines_rejected)=' | tr '\n' ' '
echo
val() { echo "$stats" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
[ "$(val bad_magic)" = 1 ] || fail "bad_magic=$(val bad_magic), want 1"
[ "$(val oversize)" = 1 ] || fail "oversize=$(val oversize), want 1"
[ "$(val mid_frame_disconnects)" = 1 ] || fail "mid_frame_disconnects=$(val mid_frame_disconnects), want 1"
[ "$(val hello_version)" = 1 ] || fail "hello_version=$(val hello_version), want 1"
[ "$(val flood_closes)" = 1 ] || fail "flood_closes=$(val flood_closes), want 1"
[ "$(val flood_throttled)" -ge 1 ] || fail "flood_throttled=0"
[ "$(val skew_events)" -ge 1 ] || fail "skew_events=$(val skew_events), want >= 1"
# every line of the good agent reached the analyzer state (used, ignored or
# rejected by it: the state's own verdict, not a transport loss)
want=$((2 * N + 1))
grep -q "agent hostA says BYE (none: agent stopping) after [0-9]* frames, $want lines" "$work/an.log" ||
	fail "hostA's $want lines did not all get in: $(grep 'agent hostA says BYE' "$work/an.log")"
if [ $ipv6 = 1 ]; then
	grep -q "agent hostB connected from \[::1\]" "$work/an.log" || fail "hostB (IPv6) not seen"
	grep -q "agent hostB says BYE .* 201 lines" "$work/an.log" || fail "hostB's lines did not all get in"
fi
for what in "bad magic" "over the bound" "in the middle of a frame" "speaks protocol versions 5..6" \
	"not reading from it until it is back under" "clock skew"; do
	grep -q "$what" "$work/an.log" || fail "no log line for: $what"
done
echo "analyzer_live.sh: ok"
exit 0
