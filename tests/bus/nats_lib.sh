# Sourced by the bus tests: a nats-server -js of their own on loopback.
#   bus_test_begin NAME FILE...   exits 77 when a FILE is missing or
#                          nats-server is not installed; sets $work (a
#                          temporary folder; the caller's cleanup removes it
#                          and kills $spid), $fails and the ok/bad reporters
#   nats_start             on a random free port, its store in $work/store;
#                          sets NATS_PORT, NATS_URL and spid; 1 if it did not start
#   nats_restart           the same port and store again (an outage's end)
#   nats_stop              SIGTERM, and wait
#   nats_cluster_start N   N servers in one JetStream cluster (see below)
bus_test_begin() {
	name=$1
	shift
	for b in "$@"; do [ -e "$b" ] || { echo "$name: $b not built"; exit 77; }; done
	command -v nats-server >/dev/null || { echo "$name: nats-server is not installed (make deps)"; exit 77; }
	work=$(mktemp -d)
	fails=0
	# small streams: a job stream reserves its max_bytes in the server's
	# storage, which a full build machine may not have for 1 GiB each
	PULSE_BUS=${PULSE_BUS:-max_bytes=67108864}
	export PULSE_BUS
}
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
nats_ready() { # N: the log says ready N times (a restart appends)
	for _ in $(seq 100); do
		[ "$(grep -c 'Server is ready' "$work/server.log" 2>/dev/null)" -ge "$1" ] && return 0
		kill -0 "$spid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
nats_run() {
	nats-server -js -a 127.0.0.1 -p "$1" -sd "$work/store" >>"$work/server.log" 2>&1 &
	spid=$!
}
nats_start() {
	for try in 1 2 3 4 5; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		: >"$work/server.log"
		nats_run "$p"
		if nats_ready 1; then
			NATS_PORT=$p
			NATS_URL="nats://127.0.0.1:$p"
			return 0
		fi
		wait "$spid" 2>/dev/null
		spid=""
	done
	return 1
}
nats_stop() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; spid=""; }
nats_restart() {
	n=$(grep -c 'Server is ready' "$work/server.log")
	nats_run "$NATS_PORT"
	nats_ready $((n + 1))
}
# nats_cluster_start N: N nats-server -js in one cluster on random loopback
# ports (client and route), stores in $work/sN; sets NATS_URLS (all of
# them, comma-separated), nsp_1..nsp_N (their pids, also in $nspids) and
# nurl_1..nurl_N; 1 if they did not all start and elect a meta leader
nats_cluster_start() {
	n=$1
	for try in 1 2 3; do
		base=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000))
		routes="" NATS_URLS="" nspids=""
		for i in $(seq "$n"); do
			routes="$routes${routes:+,}nats://127.0.0.1:$((base + 100 + i))"
			NATS_URLS="$NATS_URLS${NATS_URLS:+,}nats://127.0.0.1:$((base + i))"
		done
		for i in $(seq "$n"); do
			nats-server -js -a 127.0.0.1 -p $((base + i)) -n "s$i" -sd "$work/s$i" --cluster_name pulse \
				--cluster "nats://127.0.0.1:$((base + 100 + i))" --routes "$routes" \
				>"$work/s$i.log" 2>&1 &
			eval "nsp_$i=$!; nurl_$i=nats://127.0.0.1:$((base + i))"
			nspids="$nspids $!"
		done
		for _ in $(seq 150); do
			up=0
			for i in $(seq "$n"); do
				grep -q "metadata leader" "$work/s$i.log" 2>/dev/null && up=$((up + 1))
			done
			[ $up = "$n" ] && return 0
			sleep 0.1
		done
		for p in $nspids; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
		nspids=""
	done
	return 1
}
