# Sourced by the bus tests: a nats-server -js of their own on loopback.
#   bus_test_begin NAME FILE...   exits 77 when a FILE is missing or
#                          nats-server is not installed; sets $work (a
#                          temporary folder; the caller's cleanup removes it
#                          and kills $spid), $fails and the ok/bad reporters
#   nats_start             on a random free port, its store in $work/store;
#                          sets NATS_PORT, NATS_URL and spid; 1 if it did not start
#   nats_restart           the same port and store again (an outage's end)
#   nats_stop              SIGTERM, and wait
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
