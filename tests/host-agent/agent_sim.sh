#!/bin/sh
# pulse-host-agent against the simulated NIC (sim/run_trace --serve):
#  1. the epochs it retains and dumps equal what `run_trace --out` computes
#     for the same capture and NIC (same columns, same values);
#  2. killing and restarting the simulated NIC mid-run: the agent logs it,
#     records a gap, reconnects and carries on;
#  3. the command line: --help, no NIC, --device without the DOCA SDK, bad values.
set -u
BUILD=${BUILD:-build}
export BUILD PULSE_NO_BUILD=1
agent=$BUILD/tests/pulse-host-agent-asan
rt=$BUILD/bin/pulse-run-trace
ring=tests/traces/ring.pcap
for b in "$agent" "$rt"; do
	[ -x "$b" ] || { echo "agent_sim.sh: $b not built"; exit 77; }
done
work=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
wait_for() { # FILE: up to 5 s for it to exist
	i=0; while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}

# ---- 1. same epochs as run_trace --out ----
# The served capture runs at 0.006x real time, so its 718 us take 120 ms of
# wall time and fall entirely into the agent's first 200 ms window. The
# simulated NIC starts with the agent's settings (--epoch 32us --poll 200ms),
# so the agent does not reconfigure it and the first window starts at the
# NIC's first packet, exactly like run_trace's batch replay.
"$rt" --serve "$work/nic.sock" --epoch 32us --poll 200ms --speed 0.006 "$ring" 2>"$work/serve.log" &
spid=$!; pids="$pids $spid"
wait_for "$work/nic.sock"
"$agent" --no-hooks --sim "$work/nic.sock" --poll 200ms --epoch 32us --exit-after 1.1s --lock-dir "$work" \
	--out "$work/a.jsonl" --dump-path "$work/dump" --control "$work/ctl" 2>"$work/a.log" &
apid=$!
sleep 0.8
kill -USR1 "$apid"
wait "$apid"; arc=$?
kill "$spid"; wait "$spid" 2>/dev/null
[ "$arc" -eq 0 ] && ok "agent exit 0" || { bad "agent exit $arc"; sed 's/^/    | /' "$work/a.log"; }
nic=$(sed -n 's/^run_trace: serving NIC \([^ ]*\) .*/\1/p' "$work/serve.log")
"$rt" --nic "$nic" --epoch 32us --poll 200ms --out "$work/rt" "$ring" >/dev/null 2>&1 ||
	bad "run_trace --out failed"
if [ -f "$work/dump/epochs.csv" ]; then
	ok "SIGUSR1 dumped to --dump-path"
	head -n 1 "$work/dump/epochs.csv" >"$work/h1"; head -n 1 "$work/rt/epochs.csv" >"$work/h2"
	cmp -s "$work/h1" "$work/h2" && ok "dump: epochs.csv has run_trace's columns" || bad "dump: header differs"
	# qpn,window_seq,epoch,epoch_ns,nic_ns,bytes (nic names and host times differ by design)
	cut -d, -f2,4,5,6,8,9 "$work/dump/epochs.csv" | tail -n +2 | sort >"$work/agent.rows"
	cut -d, -f2,4,5,6,8,9 "$work/rt/epochs.csv" | tail -n +2 | sort >"$work/rt.rows"
	n=$(wc -l <"$work/rt.rows")
	if [ "$n" -gt 0 ] && cmp -s "$work/agent.rows" "$work/rt.rows"; then
		ok "agent epochs == run_trace --out epochs ($n rows: qpn, window, epoch, nic_ns, bytes)"
	else
		bad "agent epochs differ from run_trace's ($n rows expected)"
		diff "$work/agent.rows" "$work/rt.rows" | head -n 10 | sed 's/^/    | /'
	fi
	grep -q '"schema": "pulse.epochs.v1"' "$work/dump/epochs.json" && ok "dump: epochs.json schema" ||
		bad "dump: epochs.json schema"
	grep -q '"source": "pulse-host-agent"' "$work/dump/epochs.json" && ok "dump: epochs.json source" ||
		bad "dump: epochs.json source"
else
	bad "no dump written on SIGUSR1"; sed 's/^/    | /' "$work/a.log"
fi
# the JSON lines: per-QP totals equal run_trace's measured bytes
for q in $(cut -d, -f1 "$work/rt.rows" | sort -u); do
	want=$(awk -F, -v q="$q" '$1 == q { s += $6 } END { print s + 0 }' "$work/rt.rows")
	got=$(grep -o "\"qpn\":$q,\"bytes\":[0-9]*" "$work/a.jsonl" | sed 's/.*://' |
		awk '{ s += $1 } END { print s + 0 }')
	[ "$want" = "$got" ] && ok "JSON lines: QP $q sent $got bytes" || bad "JSON lines: QP $q $got bytes, run_trace $want"
done
grep -q '"clock_err_ns":[0-9]' "$work/a.jsonl" && ok "JSON lines carry the clock-sync error bound" ||
	bad "no clock_err_ns"

# ---- 2. the simulated NIC dies and comes back ----
rm -f "$work/nic.sock"
"$rt" --serve "$work/nic.sock" --loop --speed 0.01 "$ring" 2>"$work/serve1.log" &
spid=$!; pids="$pids $spid"
wait_for "$work/nic.sock"
"$agent" --no-hooks --sim "$work/nic.sock" --poll 200ms --lock-dir "$work" --out "$work/r.jsonl" 2>"$work/r.log" &
apid=$!; pids="$pids $apid"
sleep 1.0
kill "$spid"; wait "$spid" 2>/dev/null
sleep 0.7
kill -0 "$apid" 2>/dev/null && ok "agent alive while the NIC is gone" || bad "agent died with the NIC"
"$rt" --serve "$work/nic.sock" --loop --speed 0.01 "$ring" 2>"$work/serve2.log" &
spid=$!; pids="$pids $spid"
sleep 1.2
kill "$apid"; wait "$apid"; arc=$?
kill "$spid"; wait "$spid" 2>/dev/null
[ "$arc" -eq 0 ] && ok "restart: agent exit 0 on SIGTERM" || bad "restart: agent exit $arc"
grep -q "POLL failed\|HELLO failed\|STATS failed" "$work/r.log" && ok "restart: the loss is logged" ||
	bad "restart: no log line for the lost NIC"
c=$(grep -c "connected:" "$work/r.log")
[ "$c" -ge 2 ] && ok "restart: re-handshaked ($c handshakes)" || bad "restart: $c handshakes"
grep -q '"event":"gap","detail":"[a-z,]*down' "$work/r.jsonl" && ok "restart: a gap is recorded" ||
	bad "restart: no gap recorded"
last_gap=$(grep -n '"event":"gap"' "$work/r.jsonl" | tail -n 1 | cut -d: -f1)
after=$(tail -n +"${last_gap:-1}" "$work/r.jsonl" | grep -c '"type":"window".*"qps":\[{')
[ "$after" -ge 1 ] && ok "restart: $after windows with data after the gap" || bad "restart: no data after the gap"
f=$(grep -c "failed" "$work/r.log")
[ "$f" -le 12 ] && ok "restart: $f failure lines while the NIC was gone (no spinning)" || bad "restart: $f failure lines"
grep -q "AddressSanitizer\|runtime error" "$work/r.log" "$work/a.log" && bad "sanitizer report"

# ---- 3. command line ----
expect() { # RC PATTERN WHAT -- ARGS
	want=$1 pat=$2 what=$3; shift 4
	"$agent" "$@" >"$work/cl" 2>&1; rc=$?
	if [ "$rc" -ne "$want" ]; then bad "$what: exit $rc, expected $want"; sed 's/^/    | /' "$work/cl" | tail -n 5
	elif ! grep -q -- "$pat" "$work/cl"; then bad "$what: lacks '$pat'"; sed 's/^/    | /' "$work/cl" | tail -n 5
	else ok "$what (exit $rc)"; fi
}
expect 0 "--retain-mem SIZE" "--help" -- --help
expect 2 "sim/run_trace --serve" "no NIC: says how to run against the simulator" --
expect 1 "built without the DOCA SDK" "--device without the SDK" -- --device mlx5_0 --lock-dir "$work"
expect 1 "sim/run_trace --serve" "--device without the SDK points to --sim" -- --device mlx5_0 --lock-dir "$work"
expect 2 "1ms to 2s" "--poll 3s" -- --sim "$work/x" --poll 3s
expect 2 "8us to 1024us" "--epoch 1us" -- --sim "$work/x" --epoch 1us
expect 2 "at least 4K" "--retain-mem 1" -- --sim "$work/x" --retain-mem 1
expect 2 "unknown option" "unknown option" -- --frobnicate
expect 2 "given twice" "one NIC twice" -- --sim "$work/x" --sim "$work/x" --lock-dir "$work"
expect 1 "ADDR:PORT" "bad --metrics-listen" -- --sim "$work/x" --lock-dir "$work" --metrics-listen nonsense

[ "$fails" -eq 0 ] || { echo "agent_sim.sh: $fails failure(s)"; exit 1; }
echo "agent_sim.sh: all passed"
