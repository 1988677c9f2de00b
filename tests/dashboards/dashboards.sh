#!/bin/sh
# The Grafana dashboards (dashboards/*.json) cannot silently break: every
# panel's SQL runs against a test PostgreSQL with pulse-sink's schema and a
# few diagnoses in it, every PromQL against a test Prometheus scraping a
# live pulse-analyzer, and every metric a PromQL names is one the agent or
# the analyzer serves (tests/dashboards/check_dashboards.py). Exits 77 when
# PostgreSQL, Prometheus or python3 is missing.
set -u
BUILD=${BUILD:-build}
an=$BUILD/tests/pulse-analyzer-asan
. tests/sink/pg_lib.sh
pg_need dashboards.sh
command -v python3 >/dev/null || { echo "dashboards.sh: python3 is not installed"; exit 77; }
. tests/prometheus.sh
om_test_begin dashboards.sh "$an"
command -v prometheus >/dev/null || { echo "dashboards.sh: prometheus is not installed (make deps)"; exit 77; }
pg=""
trap 'for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pg_stop_all; rm -rf "$work"' EXIT
pg_create dashboards.sh
q "$(cat sink/schema.sql)" >/dev/null || { echo "dashboards.sh: schema: $(q "$(cat sink/schema.sql)")"; exit 1; }
# a day's partition and two diagnoses, as pulse-sink stores them
q "CREATE TABLE pulse_diagnoses_today PARTITION OF pulse_diagnoses FOR VALUES FROM (current_date) TO (current_date + 1)" >/dev/null
for k in 1 2; do
	q "INSERT INTO pulse_diagnoses (key, day, job, class, level, localizer, suspects, evidence, score, report_time)
	   VALUES ('k$k', current_date, 'job$k', 'comm_slow', 'machine', 'pulse',
	   '[{\"host\":\"host$k\",\"gpu\":1,\"rank\":2}]', '{\"why\":\"test\"}', 0.8, now())" >/dev/null
done
"$an" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --quiet >/dev/null 2>"$work/an.log" &
pids="$pids $!"
mport=""
for _ in $(seq 100); do
	mport=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an.log")
	[ -n "$mport" ] && break
	sleep 0.1
done
[ -n "$mport" ] || { echo "dashboards.sh: the analyzer did not start"; cat "$work/an.log"; exit 1; }
prom_up "$mport"
# the metric names the daemons serve, from their sources (families and samples)
grep -ohE 'pulse_(agent|analyzer)_[a-z0-9_]+' analyzer/server_metrics.c host-agent/metrics.c host-agent/probe.c |
	sort -u >"$work/names"
python3 tests/dashboards/check_dashboards.py "$db" "http://127.0.0.1:$PROM_PORT" "$work/names" dashboards/*.json ||
	fails=$((fails + 1))
# the checker catches what it is for (a wrong column, an unknown metric, bad PromQL)
python3 tests/dashboards/check_dashboards.py "$db" "http://127.0.0.1:$PROM_PORT" "$work/names" \
	tests/dashboards/broken.json >"$work/broken.out" 2>&1
n=$(grep -c '^FAIL' "$work/broken.out")
[ "$n" = 3 ] && ok "the checker finds all 3 faults of tests/dashboards/broken.json" ||
	{ bad "the checker found $n of 3 faults"; cat "$work/broken.out"; }
[ "$fails" -eq 0 ] || { echo "dashboards.sh: $fails failure(s)"; exit 1; }
echo "dashboards.sh: all passed"
