#!/bin/sh
# pulse-analyzer --metrics-listen (libmicrohttpd, om/ shared with the
# agent): a live analyzer takes an agent's records (binary, protocol 2) over
# --listen; its /metrics is scraped with curl (OpenMetrics, the records,
# the job, the diagnoses by class), then by a real Prometheus on loopback
# (tests/prometheus.sh), through its query API. Exits 77 (skip) only when
# curl or prometheus is not installed.
set -u
BUILD=${BUILD:-build}
an=$BUILD/tests/pulse-analyzer-asan
cl=$BUILD/tests/aw_client
. tests/prometheus.sh
om_test_begin analyzer_prometheus.sh "$an" "$cl"

"$an" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --quiet >/dev/null 2>"$work/an.log" &
pids="$pids $!"
port="" mport=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$work/an.log")
	mport=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an.log")
	[ -n "$port" ] && [ -n "$mport" ] && break
	sleep 0.1
done
[ -n "$port" ] && [ -n "$mport" ] || { echo "analyzer_prometheus.sh: the analyzer did not start"; cat "$work/an.log"; exit 1; }
N=300
"$cl" good "127.0.0.1:$port" hostP $N >"$work/cl.out" 2>&1 || bad "aw_client good: $(tail -n 1 "$work/cl.out")"
val() { sed -n "s/^$1 \([0-9.NaN]*\)$/\1/p" "$work/m1"; }
# the records wait for the data-time watermark (and, after the first HELLO,
# start_grace_ms: 2 s), then a tick renders a fresh snapshot
for _ in $(seq 100); do
	curl -s "http://127.0.0.1:$mport/metrics" >"$work/m1"
	[ "$(val pulse_analyzer_records_total)" = $N ] && break
	sleep 0.1
done
sleep 0.3 # one more tick: lag and counters of the same snapshot
om_scrape "$mport"
[ "$(val pulse_analyzer_records_total)" = $N ] && ok "curl: pulse_analyzer_records_total $N" ||
	bad "curl: records_total $(val pulse_analyzer_records_total), want $N"
[ "$(val pulse_analyzer_jobs_owned)" = 1 ] && ok "curl: one job owned" || bad "curl: jobs_owned $(val pulse_analyzer_jobs_owned)"
grep -q '^pulse_analyzer_info{job="live",' "$work/m1" && ok "curl: the job's name" || bad "curl: no job label"
lag=$(val pulse_analyzer_consumer_lag_seconds)
awk -v l="$lag" 'BEGIN { exit !(l >= 0 && l < 60) }' && ok "curl: consumer lag ${lag}s" || bad "curl: consumer lag '$lag'"
for c in comp_slow comp_stop comm_slow comm_stop; do
	grep -q "^pulse_analyzer_diagnoses_total{class=\"$c\",localizer=\"pulse\"} 0$" "$work/m1" ||
		bad "curl: diagnoses of class $c missing"
done
ok "curl: diagnoses by class (4 classes x 2 localizers)"

prom_need analyzer_prometheus.sh
prom_up "$mport"
prom_wait 'pulse_analyzer_records_total' "\"value\":\\[[0-9.]*,\"$N\"\\]" &&
	ok "prometheus: pulse_analyzer_records_total == $N" || { bad "prometheus: records"; cat "$work/prom.json"; }
prom_wait 'sum(pulse_analyzer_diagnoses_total)' '"value":\[[0-9.]*,"0"\]' &&
	ok "prometheus: sum(pulse_analyzer_diagnoses_total) == 0" || { bad "prometheus: diagnoses"; cat "$work/prom.json"; }

[ "$fails" -eq 0 ] || { echo "analyzer_prometheus.sh: $fails failure(s)"; cat "$work/an.log"; exit 1; }
echo "analyzer_prometheus.sh: all passed"
