#!/bin/sh
# pulse-sink: diagnoses from the bus (a real nats-server -js) into a real
# PostgreSQL (initdb in a temporary folder, run as the postgres user when
# this runs as root, as CI does; unix socket only): each diagnosis stored
# exactly once (said twice on the bus, once more under another message id,
# a sink restart), a malformed one skipped, a database outage retried with
# nothing lost, one partition per day, retention dropping old days, and
# the README's example queries. Exits 77 (skip) without PostgreSQL or
# nats-server.
set -u
BUILD=${BUILD:-build}
sink=$BUILD/tests/pulse-sink-asan
cl=$BUILD/tests/bus_client
. tests/sink/pg_lib.sh
pg_need sink_pg.sh
. tests/bus/nats_lib.sh
bus_test_begin sink_pg.sh "$sink" "$cl"
spid="" kpid="" pg=""
cleanup() {
	[ -n "$kpid" ] && kill "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
	pg_stop_all
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
pg_create sink_pg.sh
nats_start || { echo "sink_pg.sh: nats-server did not start"; exit 1; }

start_sink() {
	"$sink" --bus "$NATS_URL" --job jobS --db "$db" "$@" 2>>"$work/sink.log" &
	kpid=$!
}
stop_sink() { kill -TERM "$kpid"; wait "$kpid"; rc=$?; kpid=""; return $rc; }
rows() { q "SELECT count(*) FROM pulse_diagnoses WHERE job = 'jobS'"; }
wait_rows() { for _ in $(seq 100); do [ "$(rows)" = "$1" ] && return 0; sleep 0.1; done; return 1; }

"$cl" diag "$NATS_URL" jobS "pulse/3/0xaa/17/host2/1" 0 "again-1" >/dev/null 2>&1
"$cl" diag "$NATS_URL" jobS "pulse/3/0xaa/18/host2/1" >/dev/null 2>&1
"$cl" diagbad "$NATS_URL" jobS "bad-1" >/dev/null 2>&1
start_sink
wait_rows 2 && ok "2 diagnoses stored (one said 3 times, under 2 message ids)" || bad "rows: $(rows)"
sleep 0.3
grep -q "diagnosis skipped: diagnosis without key" "$work/sink.log" && ok "a malformed diagnosis skipped, logged" ||
	bad "no skip line"
stop_sink && ok "SIGTERM: exit 0" || bad "sink exit $?"
grep -q "2 diagnoses stored, 1 already there, 1 malformed" "$work/sink.log" && ok "its counters: 2 stored, 1 already there, 1 malformed" ||
	bad "counters: $(tail -n 1 "$work/sink.log")"
start_sink
sleep 1
[ "$(rows)" = 2 ] && ok "restarted: still 2 rows (the durable consumer goes on)" || bad "after restart: $(rows)"
# outage: the database stops, a diagnosis comes, the sink retries, nothing is lost
asdb "$pgbin/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null 2>&1
"$cl" diag "$NATS_URL" jobS "pulse/4/0xbb/3/host5/0" >/dev/null 2>&1
sleep 1.5
pg_up || bad "PostgreSQL did not restart"
wait_rows 3 && ok "database outage: the diagnosis stored once it came back" || bad "after the outage: $(rows)"
grep -q "retrying (the bus keeps the diagnoses)" "$work/sink.log" && grep -q "database back after" "$work/sink.log" &&
	ok "outage logged, and the recovery" || bad "no retry lines"
stop_sink
# partitions by day and retention
"$cl" diag "$NATS_URL" jobS "pulse/1/0xcc/9/host7/3" 40 >/dev/null 2>&1
start_sink
wait_rows 4 || bad "the 40-day-old diagnosis: $(rows)"
parts=$(q "SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'pulse_diagnoses'")
[ "$parts" = 2 ] && ok "two day partitions (today, 40 days ago)" || bad "partitions: $parts"
stop_sink
start_sink --retention-days 30
for _ in $(seq 50); do [ "$(rows)" = 3 ] && break; sleep 0.1; done
[ "$(rows)" = 3 ] && grep -q "retention: 1 day partition(s) older than 30 days dropped" "$work/sink.log" &&
	ok "retention 30 days: the 40-day-old partition dropped" || bad "retention: $(rows) rows"
stop_sink
[ "$(q "SELECT max(version) FROM pulse_schema")" = 1 ] && ok "schema version 1 recorded" || bad "schema version"
# the README's example queries (sink/README.md)
x=$(q "SELECT key, class, report_time FROM pulse_diagnoses WHERE job = 'jobS' ORDER BY report_time")
[ "$(echo "$x" | wc -l)" = 3 ] && ok "README: diagnoses of job jobS" || bad "query 1: $x"
y=$(q "SELECT s->>'host' AS host, count(*) AS diagnoses FROM pulse_diagnoses, jsonb_array_elements(suspects) s WHERE report_time > now() - interval '7 days' GROUP BY 1 ORDER BY 2 DESC, 1")
[ "$(echo "$y" | head -n 1)" = "host2|3" ] && ok "README: hosts implicated most this week (host2, in all 3)" || bad "query 2: $y"

[ "$fails" -eq 0 ] || { echo "sink_pg.sh: $fails failure(s)"; tail -n 20 "$work/sink.log"; exit 1; }
echo "sink_pg.sh: all passed"
