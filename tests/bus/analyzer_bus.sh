#!/bin/sh
# pulse-analyzer --bus: a job's records published on NATS JetStream (a real
# nats-server -js on a random loopback port, bus_client as the agents) reach
# the analyzer's state through the entry point TCP uses (an_ingest_op), with
# each host's MAP; /metrics shows them and the bus's consumer lag; a
# malformed message is counted and skipped; consumers deleted under it are
# made again, on from the last message read; the analyzer stops cleanly.
# Exits 77 (skip) when nats-server is not installed.
set -u
BUILD=${BUILD:-build}
an=$BUILD/tests/pulse-analyzer-asan
cl=$BUILD/tests/bus_client
. tests/bus/nats_lib.sh
command -v curl >/dev/null || { echo "analyzer_bus.sh: curl is not installed (make deps)"; exit 77; }
bus_test_begin analyzer_bus.sh "$an" "$cl"
spid="" apid=""
cleanup() { for p in $apid $spid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
nats_start || { echo "analyzer_bus.sh: nats-server did not start"; cat "$work/server.log"; exit 1; }
url=$NATS_URL

"$cl" pub "$url" jobB host1 20 64 >"$work/p1" 2>&1 || bad "pub host1"
"$cl" pub "$url" jobB host2 10 64 >"$work/p2" 2>&1 || bad "pub host2"
"$cl" garbage "$url" jobB host1 >/dev/null 2>&1
"$an" --bus "$url" --job jobB --metrics-listen 127.0.0.1:0 --quiet >"$work/an.out" 2>"$work/an.log" &
apid=$!
mport=""
for _ in $(seq 100); do
	mport=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an.log")
	[ -n "$mport" ] && break
	sleep 0.1
done
[ -n "$mport" ] || { bad "no metrics port"; cat "$work/an.log"; exit 1; }
val() { sed -n "s/^$1 \([0-9.NaN]*\)$/\1/p" "$work/m"; }
for _ in $(seq 100); do
	curl -s "http://127.0.0.1:$mport/metrics" >"$work/m"
	[ "$(val pulse_analyzer_records_total)" = 1920 ] && break
	sleep 0.2
done
[ "$(val pulse_analyzer_records_total)" = 1920 ] && ok "the analyzer ingested all 1920 records from the bus" ||
	bad "records_total $(val pulse_analyzer_records_total), want 1920"
grep -q '^pulse_analyzer_lines_total{result="rejected"} 0$' "$work/m" && ok "none rejected" || bad "rejected: $(grep rejected "$work/m")"
[ "$(val pulse_analyzer_bus_pending_messages)" = 0 ] && ok "bus consumer lag 0 messages" ||
	bad "pending $(val pulse_analyzer_bus_pending_messages)"
grep -q '^pulse_analyzer_bus_messages_total{result="malformed"} 2$' "$work/m" && ok "2 malformed messages counted" ||
	bad "malformed: $(grep bus_messages "$work/m")"
[ "$(val pulse_analyzer_hosts)" = 2 ] && [ "$(val pulse_analyzer_communicators)" = 2 ] &&
	ok "2 hosts, 2 communicators known" || bad "hosts $(val pulse_analyzer_hosts) comms $(val pulse_analyzer_communicators)"
grep -q '^pulse_analyzer_info{job="jobB"' "$work/m" && [ "$(val pulse_analyzer_jobs_owned)" = 1 ] &&
	ok "job jobB owned" || bad "job: $(grep -E 'info|jobs_owned' "$work/m")"
# its consumers gone (a server that dies takes the ephemeral consumers it
# hosted): made again from after the last message read, nothing read twice
"$cl" dropconsumers "$url" jobB >"$work/drop" 2>&1 && ok "consumers deleted: $(cat "$work/drop")" || bad "dropconsumers: $(cat "$work/drop")"
"$cl" pub "$url" jobB host3 5 64 >"$work/p3" 2>&1 || bad "pub host3"
for _ in $(seq 100); do
	curl -s "http://127.0.0.1:$mport/metrics" >"$work/m"
	[ "$(val pulse_analyzer_records_total)" = 2240 ] && break
	sleep 0.1
done
[ "$(val pulse_analyzer_records_total)" = 2240 ] && [ "$(val pulse_analyzer_bus_consumers_remade_total)" -ge 1 ] &&
	ok "after its consumers were deleted the analyzer made them again and read the next 320 records, none twice" ||
	bad "records_total $(val pulse_analyzer_records_total) (want 2240), consumers remade $(val pulse_analyzer_bus_consumers_remade_total)"
kill -TERM "$apid"
wait "$apid"
rc=$?
apid=""
[ $rc = 0 ] && ok "stopped on SIGTERM, exit 0" || bad "exit $rc"
# 2240 records and each host's MAP used, the 2 malformed messages not
# (a MAP consumer made again, or the MAPs read again for host3's records
# if they came before its MAP, delivers hosts 1 and 2's last MAP a second
# time: read, nothing new in them)
lines=$(sed -n 's/.*server: .* lines=\([0-9]*\) lines_used=\([0-9]*\) .*/\1 \2/p' "$work/an.log")
set -- $lines 0 0
[ "$(($1 - $2))" = 2 ] && [ "$(($2 - 2240))" -ge 3 ] && ok "its counters: 2240 records and $(($2 - 2240)) MAPs used" ||
	bad "counters: $(grep 'server:' "$work/an.log")"
# refused: --bus without --job, a bad URL
"$an" --bus "$url" >/dev/null 2>"$work/e1"; [ $? = 2 ] && grep -q -- "--job" "$work/e1" && ok "--bus without --job refused" || bad "--bus without --job"
"$an" --bus "http://x" --job j >/dev/null 2>"$work/e2"; [ $? = 1 ] && grep -q "nats://" "$work/e2" && ok "a non-nats URL refused" || bad "bad url: $(cat "$work/e2")"
PULSE_BUS=replica=3 "$an" --bus "$url" --job j >/dev/null 2>"$work/e3"
[ $? = 1 ] && grep -q "PULSE_BUS: unknown key" "$work/e3" && ok "PULSE_BUS with an unknown key refused" || bad "PULSE_BUS: $(cat "$work/e3")"
grep -q "ready (replicas 1, kept 86400 s / 67108864 bytes)" "$work/an.log" && ok "PULSE_BUS max_bytes applied to the job's streams" ||
	bad "limits: $(grep ready "$work/an.log")"

[ "$fails" -eq 0 ] || { echo "analyzer_bus.sh: $fails failure(s)"; tail -n 20 "$work/an.log"; exit 1; }
echo "analyzer_bus.sh: all passed"
