#!/bin/sh
# Job ownership on the bus: three pulse-analyzer --bus for one job (a real
# nats-server -js on loopback); exactly one holds the job's lease and reads
# the stream, the others stand by. kill -9 of the owner: another takes the
# lease within its expiry, replays the stream from its start (all records
# again) with a higher lease revision (the fencing token); a clean stop
# hands the lease over at once. Exits 77 (skip) when nats-server is missing.
set -u
BUILD=${BUILD:-build}
an=$BUILD/tests/pulse-analyzer-asan
cl=$BUILD/tests/bus_client
. tests/bus/nats_lib.sh
command -v curl >/dev/null || { echo "analyzer_lease.sh: curl is not installed (make deps)"; exit 77; }
bus_test_begin analyzer_lease.sh "$an" "$cl"
spid="" apids=""
cleanup() { for p in $apids $spid; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
nats_start || { echo "analyzer_lease.sh: nats-server did not start"; cat "$work/server.log"; exit 1; }
LEASE_MS=1500

"$cl" pub "$NATS_URL" jobL host1 20 64 >/dev/null 2>&1 || bad "pub host1"
"$cl" pub "$NATS_URL" jobL host2 10 64 >/dev/null 2>&1 || bad "pub host2"
for i in 1 2 3; do
	PULSE_ANALYZER_SERVER="lease_ms=$LEASE_MS,silent_ms=200" "$an" --bus "$NATS_URL" --job jobL \
		--metrics-listen 127.0.0.1:0 --quiet >"$work/an$i.out" 2>"$work/an$i.log" &
	eval "pid$i=$!"
	apids="$apids $!"
done
for i in 1 2 3; do
	for _ in $(seq 100); do
		p=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an$i.log")
		[ -n "$p" ] && break
		sleep 0.1
	done
	eval "mport$i=$p"
done
metric() { # I NAME: analyzer I's sample
	eval "p=\$mport$1"
	curl -s "http://127.0.0.1:$p/metrics" 2>/dev/null | sed -n "s/^$2 \([0-9.]*\)$/\1/p"
}
# (silent_ms: the job's agents have stopped publishing, so nothing newer will
# come from any host; the records wait for the data-time watermark until the
# hosts count as silent, 5 s by default)
owner() { # the analyzer (1..3) that owns the job and has read RECORDS, or nothing
	for i in 1 2 3; do
		eval "alive=\$pid$i"
		kill -0 "$alive" 2>/dev/null || continue
		[ "$(metric $i pulse_analyzer_jobs_owned)" = 1 ] && [ "$(metric $i pulse_analyzer_records_total)" = "$1" ] &&
			{ echo $i; return; }
	done
}
o=""
for _ in $(seq 100); do o=$(owner 1920); [ -n "$o" ] && break; sleep 0.1; done
[ -n "$o" ] && ok "analyzer $o owns job jobL and read its 1920 records" || { bad "no owner"; tail -n 5 "$work"/an*.log; exit 1; }
n=0
for i in 1 2 3; do [ "$(metric $i pulse_analyzer_jobs_owned)" = 1 ] && n=$((n + 1)); done
[ $n = 1 ] && ok "exactly one owner; the others stand by" || bad "$n owners"
for i in 1 2 3; do
	[ $i = "$o" ] && continue
	[ "$(metric $i pulse_analyzer_records_total)" = 0 ] || bad "standby $i read records"
done
rev1=$(metric "$o" pulse_analyzer_lease_revision)

# kill -9 the owner: the lease expires, another takes the job and replays
eval "kill -9 \$pid$o"
t0=$(date +%s%N)
o2=""
for _ in $(seq 200); do o2=$(owner 1920); [ -n "$o2" ] && break; sleep 0.05; done
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
[ -n "$o2" ] && ok "analyzer $o2 took the job ${ms} ms after kill -9 and replayed all 1920 records" ||
	bad "no new owner after kill -9"
[ -n "$o2" ] && [ "$ms" -le $((LEASE_MS + LEASE_MS / 3 + 1500)) ] &&
	ok "the lease moved within its expiry ($LEASE_MS ms, renewed every $((LEASE_MS / 3)) ms)" ||
	bad "the lease took $ms ms to move"
rev2=$(metric "$o2" pulse_analyzer_lease_revision)
[ -n "$rev1" ] && [ -n "$rev2" ] && [ "$rev2" -gt "$rev1" ] &&
	ok "fencing token grew: revision $rev1 -> $rev2" || bad "revisions '$rev1' -> '$rev2'"

# a clean stop gives the lease back at once
eval "kill -TERM \$pid$o2; wait \$pid$o2"
t0=$(date +%s%N)
o3=""
for _ in $(seq 200); do o3=$(owner 1920); [ -n "$o3" ] && break; sleep 0.05; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ -n "$o3" ] && [ "$o3" != "$o" ] && [ "$o3" != "$o2" ] && ok "SIGTERM: analyzer $o3 has the job ${ms} ms later" ||
	bad "after SIGTERM: owner '$o3'"
grep -q "lease of job jobL taken by" "$work/an$o3.log" || bad "no lease line in analyzer $o3's log"

# an analyzer restarted under its stable name (owner=) finds the lease its
# own and goes on at once, without waiting for the expiry
eval "kill -TERM \$pid$o3; wait \$pid$o3"
PULSE_ANALYZER_SERVER="lease_ms=$LEASE_MS,silent_ms=200,owner=stable-a" "$an" --bus "$NATS_URL" --job jobL \
	--metrics-listen 127.0.0.1:0 --quiet >"$work/an4.out" 2>"$work/an4.log" &
pid4=$!
apids="$apids $!"
for _ in $(seq 100); do grep -q "taken by stable-a" "$work/an4.log" && break; sleep 0.05; done
grep -q "taken by stable-a" "$work/an4.log" || bad "analyzer 4 never took the job"
kill -9 $pid4
wait $pid4 2>/dev/null
t0=$(date +%s%N)
PULSE_ANALYZER_SERVER="lease_ms=$LEASE_MS,silent_ms=200,owner=stable-a" "$an" --bus "$NATS_URL" --job jobL \
	--metrics-listen 127.0.0.1:0 --quiet >"$work/an5.out" 2>"$work/an5.log" &
pid5=$!
apids="$apids $!"
for _ in $(seq 100); do grep -q "job jobL is ours" "$work/an5.log" && break; sleep 0.02; done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
grep -q "lease of job jobL still held by stable-a" "$work/an5.log" &&
	ok "restarted under its name, the owner found the lease its own and went on (${ms} ms)" ||
	bad "the restarted owner did not find its lease: $(grep lease "$work/an5.log" | head -3)"

# the owner cut off from the bus past its lease's expiry (the server
# stopped, as a stream electing its leader answers nothing): it reads on,
# publishes nothing, and goes on as the owner once it can take the lease
# again (it used to stop with exit 3, leaving the job to no one)
for _ in $(seq 100); do
	mport5=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an5.log")
	[ -n "$mport5" ] && break
	sleep 0.05
done
for _ in $(seq 100); do [ "$(metric 5 pulse_analyzer_records_total)" = 1920 ] && break; sleep 0.05; done
kill -STOP "$spid"
sleep 5
kill -CONT "$spid"
for _ in $(seq 200); do grep -q "job jobL is ours again" "$work/an5.log" && break; sleep 0.05; done
kill -0 $pid5 2>/dev/null && grep -q "job jobL: lease lapsed" "$work/an5.log" &&
	grep -q "job jobL is ours again" "$work/an5.log" &&
	ok "cut off from the bus for 5 s (lease 1.5 s): the owner's lease lapsed, and it is the owner again" ||
	bad "after the bus came back: $(grep -E 'lapsed|again|lease lost|stopping' "$work/an5.log" | tail -3)"
"$cl" pub "$NATS_URL" jobL host3 1 64 >/dev/null 2>&1 || bad "pub host3 after the lapse"
for _ in $(seq 100); do [ "$(metric 5 pulse_analyzer_records_total)" = 1984 ] && break; sleep 0.05; done
[ "$(metric 5 pulse_analyzer_records_total)" = 1984 ] && [ "$(metric 5 pulse_analyzer_jobs_owned)" = 1 ] &&
	ok "after the lapse it owns the job and reads on (1984 records, none twice)" ||
	bad "after the lapse: owned '$(metric 5 pulse_analyzer_jobs_owned)', records '$(metric 5 pulse_analyzer_records_total)'"

[ "$fails" -eq 0 ] || { echo "analyzer_lease.sh: $fails failure(s)"; tail -n 8 "$work"/an*.log; exit 1; }
echo "analyzer_lease.sh: all passed"
