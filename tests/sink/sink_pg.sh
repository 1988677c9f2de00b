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
[ "$(q "SELECT string_agg(version::text, ',' ORDER BY version) FROM pulse_schema")" = 1,2 ] &&
	ok "schema versions 1 and 2 recorded" || bad "schema versions: $(q "SELECT version FROM pulse_schema")"
# the README's example queries (sink/README.md)
x=$(q "SELECT key, class, report_time FROM pulse_diagnoses WHERE job = 'jobS' ORDER BY report_time")
[ "$(echo "$x" | wc -l)" = 3 ] && ok "README: diagnoses of job jobS" || bad "query 1: $x"
y=$(q "SELECT s->>'host' AS host, count(*) AS diagnoses FROM pulse_diagnoses, jsonb_array_elements(suspects) s WHERE report_time > now() - interval '7 days' GROUP BY 1 ORDER BY 2 DESC, 1")
[ "$(echo "$y" | head -n 1)" = "host2|3" ] && ok "README: hosts implicated most this week (host2, in all 3)" || bad "query 2: $y"

# ---- evidence windows and per-iteration aggregates (job jobE) ----
# A small known job (bus_client job): communicator 0xc0 of 4 ranks on two
# hosts, 0xd0 of 2, one iteration a second from T0; in iteration 5 rank 2
# (hostB) takes 400 ms against 100-130 ms.
C=0x00000000000000c0
t0s=$(($(date +%s) - 60))
T0=${t0s}000000000
ns() { echo "$((t0s + $1))000000000"; }
K1="pulse/3/$C/20/hostB/0" K2="pulse/3/$C/31/hostB/0"
start_ev() {
	"$sink" --bus "$NATS_URL" --job jobE --db "$db" --window-s 5 --window-wait-s 600 "$@" 2>>"$work/sinkE.log" &
	kpid=$!
}
wrows() { q "SELECT count(*) FROM pulse_window_records WHERE key = '$1'"; }
wdone() { q "SELECT complete FROM pulse_windows WHERE key = '$1'"; }
wait_q() { # SQL VALUE [tenths]: until SQL gives VALUE
	for _ in $(seq "${3:-150}"); do [ "$(q "$1")" = "$2" ] && return 0; sleep 0.1; done
	return 1
}
"$cl" job "$NATS_URL" jobE hostA "$T0" 0 40 >/dev/null 2>&1
"$cl" job "$NATS_URL" jobE hostB "$T0" 0 40 >/dev/null 2>&1
# K1: onset T0+20 s, report T0+22 s: its window [T0+15 s, T0+27 s] holds
# iterations 15..27 of 0xc0, all 4 ranks; K2 ends at T0+41 s, past the records
"$cl" diagat "$NATS_URL" jobE "$K1" "$C" "$(ns 20)" "$(ns 22)" >/dev/null 2>&1
"$cl" diagat "$NATS_URL" jobE "$K2" "$C" "$(ns 31)" "$(ns 36)" >/dev/null 2>&1
"$cl" diagat "$NATS_URL" jobE "pulse/3/zz/1/hostB/0" "zz" "$(ns 31)" "$(ns 36)" >/dev/null 2>&1
start_ev
wait_q "SELECT complete FROM pulse_windows WHERE key = '$K1'" t || bad "window of K1 not complete: $(wdone "$K1")"
[ "$(wrows "$K1")" = 52 ] && ok "window of K1: 52 records (iterations 15..27 x 4 ranks)" || bad "K1 rows: $(wrows "$K1")"
x=$(q "SELECT string_agg(DISTINCT comm_id, ','), count(DISTINCT rank), min(seq), max(seq) FROM pulse_window_records WHERE key = '$K1'")
[ "$x" = "$C|4|15|27" ] && ok "only communicator 0xc0, its 4 ranks, iterations 15..27" || bad "K1 rows: $x"
x=$(q "SELECT count(*) FROM pulse_window_records r JOIN pulse_windows w USING (key, day) WHERE r.key = '$K1' AND (r.call_ns > w.to_ns OR r.call_ns + 1000000 + r.duration_ns < w.from_ns OR w.from_time <> to_timestamp($t0s + 15) OR w.to_time <> to_timestamp($t0s + 27))")
[ "$x" = 0 ] && ok "window [onset - 5 s, report + 5 s], every record overlapping it" || bad "records outside: $x"
[ "$(q "SELECT records FROM pulse_windows WHERE key = '$K1'")" = 52 ] && ok "the window's row counts its 52 records" || bad "window row"
wait_q "SELECT count(*) FROM pulse_iterations WHERE job = 'jobE'" 80 || bad "iterations: $(q "SELECT count(*) FROM pulse_iterations WHERE job = 'jobE'")"
x=$(q "SELECT records, not_complete, min_ns, median_ns, max_ns, expected_bytes, slowest_rank, slowest_host, slowest_gpu FROM pulse_iterations WHERE job = 'jobE' AND comm_id = '$C' AND seq = 5")
[ "$x" = "4|0|100000000|120000000|400000000|4194304|2|hostB|0" ] &&
	ok "iteration 5 of 0xc0: 4 records, min 100 ms, median 120 ms, max 400 ms, 4 MiB, slowest rank 2 on hostB" ||
	bad "iteration 5: $x"
x=$(q "SELECT records, min_ns, median_ns, max_ns, slowest_rank FROM pulse_iterations WHERE job = 'jobE' AND comm_id = '0x00000000000000d0' AND seq = 7")
[ "$x" = "2|50000000|50000000|50000000|0" ] && ok "iteration 7 of 0xd0: 2 records of 50 ms (a tie: the lowest rank)" || bad "0xd0: $x"
sleep 0.5
[ "$(wdone "$K2")" = f ] && [ "$(wrows "$K2")" = 56 ] && ok "window of K2 open: its end is past the records (56 so far)" ||
	bad "K2: $(wdone "$K2") $(wrows "$K2")"
grep -q "diagnosis without a usable window: evidence.comm_id" "$work/sinkE.log" && [ "$(q "SELECT count(*) FROM pulse_windows WHERE key LIKE '%/zz/%'")" = 0 ] &&
	ok "a diagnosis with a bad comm_id: stored, no window, logged" || bad "bad comm_id"
stop_sink && ok "SIGTERM with a window open: exit 0" || bad "sink exit"
grep -q "windows 2 opened, 1 closed, 1 left open" "$work/sinkE.log" && ok "its log: 2 windows opened, 1 closed, 1 left open" ||
	bad "evidence log: $(grep evidence: "$work/sinkE.log")"
# the rest of the job comes while no sink runs; K1 said again under another id
"$cl" job "$NATS_URL" jobE hostA "$T0" 40 50 >/dev/null 2>&1
"$cl" job "$NATS_URL" jobE hostB "$T0" 40 50 >/dev/null 2>&1
"$cl" diagat "$NATS_URL" jobE "$K1" "$C" "$(ns 20)" "$(ns 22)" >/dev/null 2>&1
"$cl" diag "$NATS_URL" jobE "$K1" 0 "k1-again" >/dev/null 2>&1
start_ev
wait_q "SELECT complete FROM pulse_windows WHERE key = '$K2'" t || bad "K2 not complete after the restart"
[ "$(wrows "$K2")" = 64 ] && ok "restarted: K2 went on and closed with 64 records (iterations 26..41)" || bad "K2 rows: $(wrows "$K2")"
wait_q "SELECT count(*) FROM pulse_iterations WHERE job = 'jobE'" 100 || bad "iterations after restart: $(q "SELECT count(*) FROM pulse_iterations WHERE job = 'jobE'")"
sleep 0.5
stop_sink
[ "$(wrows "$K1")" = 52 ] && [ "$(q "SELECT count(*) FROM pulse_windows WHERE job = 'jobE'")" = 2 ] &&
	ok "restart, whole stream read again, K1 said again: K1 still 52 records, 2 windows" || bad "K1 after restart: $(wrows "$K1")"
[ "$(q "SELECT count(*) FROM pulse_iterations WHERE job = 'jobE'")" = 100 ] &&
	[ "$(q "SELECT records FROM pulse_iterations WHERE job = 'jobE' AND comm_id = '$C' AND seq = 5")" = 4 ] &&
	ok "iterations: 100 rows, each once (50 x 2 communicators), iteration 5 still 4 records" || bad "iterations after restart"
grep -q "1 evidence window(s) left open by an earlier sink" "$work/sinkE.log" && ok "the restart took up the open window" || bad "no take-up line"
grep -q "ring: [0-9]* records held, 0 dropped" "$work/sinkE.log" && ok "ring: nothing dropped (within its cap)" ||
	bad "ring: $(grep -o 'ring: .*' "$work/sinkE.log" | tail -n 1)"
# the README's queries over them
x=$(q "SELECT host, rank, seq, status, duration_ns FROM pulse_window_records WHERE key = '$K1' ORDER BY call_ns, rank" | head -n 1)
[ "$x" = "hostA|0|15|complete|100000000" ] && ok "README: the evidence window of a diagnosis" || bad "window query: $x"
x=$(q "SELECT seq, slowest_rank, slowest_host, max_ns / 1000000 AS max_ms, round(max_ns::numeric / NULLIF(median_ns, 0), 2) AS x_median FROM pulse_iterations WHERE job = 'jobE' AND comm_id = '$C' ORDER BY x_median DESC, seq LIMIT 1")
[ "$x" = "5|2|hostB|400|3.33" ] && ok "README: the slowest rank per iteration of a communicator (iteration 5: rank 2, 3.33x the median)" ||
	bad "iteration query: $x"
# a tiny ring keeps the newest records only, and says how many it dropped
"$sink" --bus "$NATS_URL" --job jobE --db "$db" --durable other --ring-mb 1 --window-s 5 2>"$work/sinkR.log" &
kpid=$!
sleep 3
stop_sink
grep -q "records read" "$work/sinkR.log" && ok "--ring-mb 1: ran, its counters logged" || bad "ring run: $(tail -n 3 "$work/sinkR.log")"
"$sink" --bus "$NATS_URL" --job jobE --db "$db" --window-s -1 2>/dev/null
[ $? = 2 ] && ok "--window-s -1 refused" || bad "--window-s -1 taken"

[ "$fails" -eq 0 ] || { echo "sink_pg.sh: $fails failure(s)"; tail -n 20 "$work/sink.log"; tail -n 20 "$work/sinkE.log"; exit 1; }
echo "sink_pg.sh: all passed"
