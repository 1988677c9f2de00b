# Shared by the tests that scrape a Pulse daemon with the real Prometheus
# (Debian's prometheus package): sourced, not run, after
#
#   om_test_begin NAME BINARY...   exits 77 when a binary is not built or
#                          curl is missing; sets $work (a temporary folder),
#                          $pids (killed and waited for at exit), $fails and
#                          the ok/bad reporters
#
#   prom_start TARGET...   a Prometheus on a free loopback port scraping
#                          the targets (HOST:PORT) every second, its data
#                          in $work/tsdb; sets PROM_PORT; 1 if it did not
#                          start (its log: $work/prom.log)
#   prom_query EXPR        the query API's JSON answer for EXPR, now
#   prom_wait EXPR REGEX   polls EXPR until its answer matches REGEX (10 s);
#                          0 when it did, else 1 (the last answer: $work/prom.json)

om_test_begin() {
	name=$1
	shift
	for b in "$@"; do
		[ -x "$b" ] || { echo "$name: $b not built"; exit 77; }
	done
	command -v curl >/dev/null || { echo "$name: curl is not installed (make deps)"; exit 77; }
	work=$(mktemp -d)
	pids=""
	trap 'for p in $pids; do kill "$p" 2>/dev/null; done; for p in $pids; do wait "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
	fails=0
}
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

prom_start() {
	{
		printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
		printf 'scrape_configs:\n  - job_name: pulse\n    static_configs:\n      - targets: ['
		sep=""
		for t in "$@"; do printf "%s'%s'" "$sep" "$t"; sep=", "; done
		printf ']\n'
	} >"$work/prom.yml"
	PROM_PORT=""
	for try in 1 2 3 4 5; do
		p=$((20000 + ($$ * 13 + try * 257 + 7) % 40000))
		case " $* " in *":$p "*) continue ;; esac
		prometheus --config.file="$work/prom.yml" --storage.tsdb.path="$work/tsdb" \
			--web.listen-address="127.0.0.1:$p" >"$work/prom.log" 2>&1 &
		ppid=$!
		i=0
		while [ $i -lt 50 ] && kill -0 "$ppid" 2>/dev/null; do
			curl -s "http://127.0.0.1:$p/-/ready" 2>/dev/null | grep -qi ready && break
			sleep 0.2; i=$((i + 1))
		done
		if kill -0 "$ppid" 2>/dev/null; then PROM_PORT=$p; pids="$pids $ppid"; return 0; fi
		wait "$ppid"
	done
	return 1
}

prom_query() {
	curl -s "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1"
}

prom_wait() {
	i=0
	while [ $i -lt 40 ]; do
		prom_query "$1" >"$work/prom.json"
		grep -q "$2" "$work/prom.json" && return 0
		sleep 0.25; i=$((i + 1))
	done
	return 1
}

# The checks every /metrics endpoint passes, with the caller's ok/bad:
#   om_scrape PORT        GET /metrics into $work/m1: OpenMetrics content
#                         type, "# EOF" last, 404 for another path
#   prom_need NAME        exits when prometheus is not installed (77, or 1
#                         when $fails says an earlier check failed)
#   prom_up PORT          a Prometheus scraping 127.0.0.1:PORT, and its up == 1
om_scrape() {
	curl -s -D "$work/headers" "http://127.0.0.1:$1/metrics" >"$work/m1" || bad "curl failed"
	grep -qi "^content-type: application/openmetrics-text" "$work/headers" &&
		ok "curl: OpenMetrics content type" || bad "curl: content type"
	tail -n 1 "$work/m1" | grep -qx "# EOF" && ok "curl: ends with # EOF" || bad "curl: no # EOF"
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/nope")
	[ "$code" = 404 ] && ok "curl: other paths 404" || bad "curl: /nope gave $code"
}

prom_need() {
	command -v prometheus >/dev/null && return 0
	echo "$1: prometheus is not installed (Debian package prometheus; make deps); the real-Prometheus check was skipped"
	[ "$fails" -eq 0 ] || exit 1
	exit 77
}

prom_up() {
	prom_start "127.0.0.1:$1" || { bad "prometheus did not start"; tail -n 20 "$work/prom.log"; exit 1; }
	prom_wait 'up{job="pulse"}' '"value":\[[0-9.]*,"1"\]' && ok "prometheus: up{job=\"pulse\"} == 1" ||
		{ bad "prometheus: up"; cat "$work/prom.json"; tail -n 5 "$work/prom.log"; }
}
