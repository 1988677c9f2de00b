#!/bin/sh
# pulse-host-agent's metrics endpoint (--metrics-listen, libmicrohttpd):
# scraped with curl (OpenMetrics text, every family labelled by NIC), then by
# a real Prometheus (Debian's prometheus package) on loopback with a 1 s
# scrape interval, checking `up` and an agent series through its HTTP query
# API. Exits 77 (skip) only when curl or prometheus is not installed.
set -u
BUILD=${BUILD:-build}
export BUILD PULSE_NO_BUILD=1
agent=$BUILD/tests/pulse-host-agent-asan
rt=$BUILD/bin/pulse-run-trace
ring=tests/traces/ring.pcap
. tests/prometheus.sh
om_test_begin agent_prometheus.sh "$agent" "$rt"
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done; }

"$rt" --serve "$work/nic.sock" --loop --speed 0.01 "$ring" 2>"$work/serve.log" &
pids="$pids $!"
wait_for "$work/nic.sock"
# a free port: let the agent try a few
port=""
for try in 1 2 3 4 5 6 7 8; do
	p=$((20000 + ($$ * 7 + try * 131) % 40000))
	"$agent" --no-hooks --sim "$work/nic.sock" --poll 200ms --lock-dir "$work" --out /dev/null \
		--metrics-listen "127.0.0.1:$p" 2>"$work/agent.log" &
	apid=$!
	sleep 0.5
	if kill -0 "$apid" 2>/dev/null; then port=$p; pids="$pids $apid"; break; fi
	wait "$apid"
done
[ -n "$port" ] || { echo "agent_prometheus.sh: no free port for the agent"; cat "$work/agent.log"; exit 1; }
sleep 0.6
om_scrape "$port"
nic="sim:$(cd "$work" && pwd -P)/nic.sock"
for fam in pulse_agent_polls_total pulse_agent_poll_duration_seconds pulse_agent_upload_bytes_total \
	pulse_agent_flows_tracked pulse_agent_nic_events_total pulse_agent_nic_drops_total \
	pulse_agent_nic_pool_used_blocks pulse_agent_gaps_total pulse_agent_clock_sync_error_seconds; do
	grep -q "^$fam{nic=\"$nic\"" "$work/m1" && ok "curl: $fam labelled by NIC" || bad "curl: $fam missing"
done
v=$(sed -n "s/^pulse_agent_polls_total{nic=\"[^\"]*\"} \([0-9]*\)/\1/p" "$work/m1")
[ "${v:-0}" -ge 1 ] && ok "curl: $v polls counted" || bad "curl: polls $v"

prom_need agent_prometheus.sh
prom_up "$port"
prom_wait 'pulse_agent_polls_total' "\"nic\":\"$nic\"" &&
	ok "prometheus: pulse_agent_polls_total{nic=\"$nic\"} scraped" || { bad "prometheus: series"; cat "$work/prom.json"; }

[ "$fails" -eq 0 ] || { echo "agent_prometheus.sh: $fails failure(s)"; exit 1; }
echo "agent_prometheus.sh: all passed"
