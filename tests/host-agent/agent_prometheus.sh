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
for b in "$agent" "$rt"; do
	[ -x "$b" ] || { echo "agent_prometheus.sh: $b not built"; exit 77; }
done
command -v curl >/dev/null || { echo "agent_prometheus.sh: curl is not installed (make deps)"; exit 77; }
work=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; for p in $pids; do wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
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
curl -s -D "$work/headers" "http://127.0.0.1:$port/metrics" >"$work/m1" || bad "curl failed"
grep -qi "^content-type: application/openmetrics-text" "$work/headers" && ok "curl: OpenMetrics content type" ||
	bad "curl: content type"; 
tail -n 1 "$work/m1" | grep -qx "# EOF" && ok "curl: ends with # EOF" || bad "curl: no # EOF"
nic="sim:$(cd "$work" && pwd -P)/nic.sock"
for fam in pulse_agent_polls_total pulse_agent_poll_duration_seconds pulse_agent_upload_bytes_total \
	pulse_agent_flows_tracked pulse_agent_nic_events_total pulse_agent_nic_drops_total \
	pulse_agent_nic_pool_used_blocks pulse_agent_gaps_total pulse_agent_clock_sync_error_seconds; do
	grep -q "^$fam{nic=\"$nic\"" "$work/m1" && ok "curl: $fam labelled by NIC" || bad "curl: $fam missing"
done
v=$(sed -n "s/^pulse_agent_polls_total{nic=\"[^\"]*\"} \([0-9]*\)/\1/p" "$work/m1")
[ "${v:-0}" -ge 1 ] && ok "curl: $v polls counted" || bad "curl: polls $v"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")
[ "$code" = 404 ] && ok "curl: other paths 404" || bad "curl: /nope gave $code"

if ! command -v prometheus >/dev/null; then
	echo "agent_prometheus.sh: prometheus is not installed (Debian package prometheus; make deps); the real-Prometheus check was skipped"
	[ "$fails" -eq 0 ] || exit 1
	exit 77
fi
cat >"$work/prom.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pulse
    static_configs:
      - targets: ['127.0.0.1:$port']
YML
pport=""
for try in 1 2 3 4 5; do
	p=$((20000 + ($$ * 13 + try * 257 + 7) % 40000))
	[ "$p" = "$port" ] && continue
	prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/tsdb" \
		--web.listen-address="127.0.0.1:$p" >"$work/prom.log" 2>&1 &
	ppid=$!
	i=0
	while [ $i -lt 50 ] && kill -0 "$ppid" 2>/dev/null; do
		curl -s "http://127.0.0.1:$p/-/ready" 2>/dev/null | grep -qi ready && break
		sleep 0.2; i=$((i + 1))
	done
	if kill -0 "$ppid" 2>/dev/null; then pport=$p; pids="$pids $ppid"; break; fi
	wait "$ppid"
done
[ -n "$pport" ] || { bad "prometheus did not start"; tail -n 20 "$work/prom.log"; exit 1; }
q() { curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"; }
got_up="" got_series=""
i=0
while [ $i -lt 40 ]; do
	q 'up{job="pulse"}' >"$work/up.json"
	q 'pulse_agent_polls_total' >"$work/polls.json"
	grep -q '"value":\[[0-9.]*,"1"\]' "$work/up.json" && got_up=1
	grep -q '"__name__":"pulse_agent_polls_total"' "$work/polls.json" && grep -q "\"nic\":\"$nic\"" "$work/polls.json" && got_series=1
	[ -n "$got_up" ] && [ -n "$got_series" ] && break
	sleep 0.25; i=$((i + 1))
done
[ -n "$got_up" ] && ok "prometheus: up{job=\"pulse\"} == 1" || { bad "prometheus: up"; cat "$work/up.json"; tail -n 5 "$work/prom.log"; }
[ -n "$got_series" ] && ok "prometheus: pulse_agent_polls_total{nic=\"$nic\"} scraped" || { bad "prometheus: series"; cat "$work/polls.json"; }

[ "$fails" -eq 0 ] || { echo "agent_prometheus.sh: $fails failure(s)"; exit 1; }
echo "agent_prometheus.sh: all passed"
