#!/usr/bin/env bash
# run_trace --serve --loop must stop on SIGTERM even when the emulation
# cannot keep up with the capture (packets always due): it once fed forever
# and never looked at the signal.
set -u
cd "$(dirname "$0")/../.."
bin=build/bin/pulse-run-trace
[ -x "$bin" ] || { echo "skip: $bin not built"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A capture replayed 10^6 times faster than real time, looping: the feed
# never catches up with the capture clock.
"$bin" --serve "$dir/nic.sock" --speed 1000000 --loop tests/traces/ring.pcap 2>"$dir/err" &
pid=$!
for _ in $(seq 50); do [ -S "$dir/nic.sock" ] && break; sleep 0.1; done
# The capture clock starts with the first request: a real agent sends it.
timeout 10 build/bin/pulse-host-agent --sim "$dir/nic.sock" --poll 100ms --no-hooks \
	--exit-after 500ms --out /dev/null 2>"$dir/agent.err" || true
sleep 1
kill -TERM "$pid"
for _ in $(seq 50); do
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"; rc=$?
		grep -q "stopping" "$dir/err" || { echo "FAIL: no stop message"; cat "$dir/err"; exit 1; }
		echo "ok: stopped on SIGTERM (exit $rc) while looping behind the capture"
		exit 0
	fi
	sleep 0.1
done
echo "FAIL: still running 5 s after SIGTERM"; cat "$dir/err"
kill -KILL "$pid"
exit 1
