#!/bin/sh
# The bus library (bus/) against a real nats-server -js on loopback, on a
# random port, stopped at the end: records of two hosts arrive whole and in
# order with the latest MAP of each; a resent poll is a duplicate (its ids),
# malformed messages are counted and skipped; a MAP the consumer missed is
# read again; a server outage makes the
# publisher queue and nothing is lost; a diagnosis said twice is kept once;
# a flood is bounded by the stream's size limit. Exits 77 (skip) when
# nats-server is not installed.
set -u
BUILD=${BUILD:-build}
cl=$BUILD/tests/bus_client
. tests/bus/nats_lib.sh
bus_test_begin bus_nats.sh "$cl"
spid=""
cleanup() { [ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
val() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | tail -n 1; }

nats_start || { echo "bus_nats.sh: nats-server did not start"; cat "$work/server.log"; exit 1; }
url=$NATS_URL
J=job.1

"$cl" pub "$url" $J host1 20 64 >"$work/p1" 2>"$work/p1.err" || bad "pub host1"
"$cl" pub "$url" $J host2 10 64 >"$work/p2" 2>"$work/p2.err" || bad "pub host2"
[ "$(val "$work/p1" records_published)" = 1280 ] && ok "host1: 1280 records in 20 messages" || bad "host1: $(cat "$work/p1")"
"$cl" resend "$url" $J host1 3 >"$work/rs" 2>&1
[ "$(val "$work/rs" duplicate)" = 1 ] && ok "a resent poll is a duplicate (id host1/3/0)" || bad "resend: $(cat "$work/rs")"
"$cl" garbage "$url" $J host1 >/dev/null 2>&1
"$cl" consume "$url" $J 1920 20 >"$work/c1" 2>"$work/c1.err" || bad "consume: $(cat "$work/c1")"
[ "$(val "$work/c1" records)" = 1920 ] && [ "$(val "$work/c1" records_in)" = 1920 ] &&
	ok "consumer: 1920 records, no duplicate" || bad "consumer: $(cat "$work/c1")"
[ "$(val "$work/c1" maps)" -ge 2 ] && [ "$(val "$work/c1" without_map)" = 0 ] &&
	ok "consumer: the latest MAP of both hosts" || bad "maps: $(cat "$work/c1")"
[ "$(val "$work/c1" out_of_order)" = 0 ] && ok "consumer: in order per host" || bad "order: $(cat "$work/c1")"
[ "$(val "$work/c1" msgs_bad)" = 2 ] && grep -q "dropped" "$work/c1.err" &&
	ok "consumer: 2 malformed messages counted and skipped" || bad "malformed: $(cat "$work/c1")"

# outage: the server stops while host3 publishes polls 5..9 (one every
# 0.3 s); its messages wait in the publisher's queue
"$cl" pub "$url" $J host3 10 64 4 1 >"$work/p3" 2>"$work/p3.err" &
ppid=$!
for _ in $(seq 100); do grep -q paused "$work/p3" && break; sleep 0.1; done
nats_stop
sleep 3
nats_restart || bad "nats-server did not restart"
wait "$ppid" || bad "pub host3 during the outage"
[ "$(val "$work/p3" records_published)" = 640 ] && [ "$(val "$work/p3" queue_dropped)" = 0 ] &&
	[ "$(val "$work/p3" failures)" -gt 0 ] &&
	ok "outage: 640 records published, none dropped ($(val "$work/p3" failures) attempts failed while down)" ||
	bad "outage: $(cat "$work/p3")"
"$cl" consume "$url" $J 640 20 >"$work/c2" 2>"$work/c2.err"
[ "$(val "$work/c2" records)" = 640 ] && ok "after the outage: the consumer goes on where it was, 640 more" ||
	bad "after the outage: $(cat "$work/c2")"

"$cl" diag "$url" $J "pulse/comm_slow/host2/1700000000000000000" >"$work/d" 2>&1
[ "$(val "$work/d" diags)" = 1 ] && ok "a diagnosis said twice is kept once (its key)" || bad "diag: $(cat "$work/d")"

# a diagnosis made while the bus is away (a stream electing its leader, a
# server down) waits in the queue and is published once it is back
"$cl" diagwait "$url" $J "pulse/comm_slow/host4/1700000000000000001" >"$work/dw" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "^open" "$work/dw" && break; sleep 0.1; done
nats_stop
for _ in $(seq 100); do grep -q "first try" "$work/dw" && break; sleep 0.1; done
nats_restart || bad "nats-server did not restart"
wait "$dpid" && grep -q "first try: queued" "$work/dw" && [ "$(val "$work/dw" diags)" = 1 ] &&
	[ "$(val "$work/dw" queued)" = 0 ] && [ "$(val "$work/dw" failures)" -gt 0 ] &&
	ok "a diagnosis refused while the server was down waited and was published ($(val "$work/dw" failures) attempts failed)" ||
	bad "diagwait: $(cat "$work/dw")"

# a MAP the consumer missed (its MAP consumer deleted, as a server that dies
# takes it): host8's records arrive without their MAP, and the MAPs are read
# again until it comes
"$cl" pub "$url" jobM host1 2 64 >/dev/null 2>&1
"$cl" consume "$url" jobM 256 20 >"$work/c3" 2>"$work/c3.err" &
cpid=$!
for _ in $(seq 100); do grep -q "reading" "$work/c3.err" && break; sleep 0.1; done
"$cl" dropconsumers "$url" jobM state >"$work/drop3" 2>&1 || bad "dropconsumers: $(cat "$work/drop3")"
"$cl" pub "$url" jobM host8 2 64 >/dev/null 2>&1
wait "$cpid"
[ "$(val "$work/c3" records)" = 256 ] && [ "$(val "$work/c3" without_map)" = 0 ] &&
	[ "$(val "$work/c3" maps_reread)" -ge 1 ] && grep -q "MAPs of job jobM read again" "$work/c3.err" &&
	ok "a missed MAP: read again ($(val "$work/c3" maps_reread) time(s)), every host's MAP in" ||
	bad "missed MAP: $(cat "$work/c3") / $(cat "$work/c3.err")"

# a flood into a 16 KiB stream (the records compress to ~40 KB): the oldest go,
# the stream stays bounded
PULSE_BUS=max_bytes=16384 "$cl" pub "$url" flood host9 100 64 >"$work/pf" 2>&1
PULSE_BUS=max_bytes=16384 "$cl" consume "$url" flood 6400 3 >"$work/cf" 2>&1
n=$(val "$work/cf" records)
[ "$(val "$work/pf" records_published)" = 6400 ] && [ "${n:-0}" -gt 0 ] && [ "$n" -lt 6400 ] &&
	ok "flood: 6400 published, $n kept by the 16 KiB limit" || bad "flood: $(cat "$work/pf") / $(cat "$work/cf")"

[ "$fails" -eq 0 ] || { echo "bus_nats.sh: $fails failure(s)"; tail -n 20 "$work/server.log"; exit 1; }
echo "bus_nats.sh: all passed"
