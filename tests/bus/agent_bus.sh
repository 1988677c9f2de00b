#!/bin/sh
# pulse-host-agent --bus: a live agent (a simulated NIC from run_trace
# --serve, a hooked training process: tests/hook/train under the
# interception library) publishes each poll's operator records and its QP
# map to the job's streams on a real nats-server -js (loopback, random
# port); a consumer (bus_client, the library pulse-analyzer --bus uses)
# gets exactly the "op" lines the agent wrote to --out and the latest map,
# and every other line, those that close a poll (poll_end) after the poll's
# records as in --out.
# Exits 77 (skip) when nats-server or a build product is missing.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
rt=$BUILD/bin/pulse-run-trace
cl=$BUILD/tests/bus_client
hook=$PWD/$BUILD/lib/libpulse-hook.so
hdir=$PWD/$BUILD/tests/hook
. tests/bus/nats_lib.sh
bus_test_begin agent_bus.sh "$agent" "$rt" "$cl" "$hook" "$hdir/train" "$hdir/libnccl.so.2" \
	"$hdir/libibverbs.so.1" "$hdir/libmlx5.so.1"
spid="" pids="" shm=""
cleanup() {
	for p in $pids $spid; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	for f in $shm; do rm -f "/dev/shm/pulse-hook.$f"; done
	rm -rf "$work"
}
trap cleanup EXIT
nats_start || { echo "agent_bus.sh: nats-server did not start"; cat "$work/server.log"; exit 1; }
val() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | tail -n 1; }

mkdir "$work/rings"
"$rt" --serve "$work/nic.sock" --epoch 32us --poll 200ms --speed 0.006 tests/traces/ring.pcap 2>"$work/serve.log" &
pids="$pids $!"
for _ in $(seq 100); do [ -S "$work/nic.sock" ] && break; sleep 0.05; done
LD_PRELOAD=$hook LD_LIBRARY_PATH=$hdir PULSE_HOOK_KEEP_RING=1 FAKE_NCCL_UID=job-agent-bus \
	"$hdir/train" 0 2 3 >"$work/train.out" 2>&1 &
tp=$!
shm="$shm $tp"
wait "$tp" || bad "train exit $?"
ln -s "/dev/shm/pulse-hook.$tp" "$work/rings/pulse-hook.$tp"
"$agent" --sim "$work/nic.sock" --poll 200ms --epoch 32us --exit-after 2s --lock-dir "$work" \
	--hook-dir "$work/rings" --out "$work/a.jsonl" --bus "$NATS_URL" --job jobA --host-name hostQ \
	2>"$work/a.log" || bad "agent exit $?"
ops=$(grep -c '"type":"op"' "$work/a.jsonl")
maps=$(grep -c '"type":"hook_map"' "$work/a.jsonl")
[ "$maps" -ge 1 ] && ok "--out: $ops op records, $maps map lines" || bad "--out: no map line"
grep -q "bus: publishing to $NATS_URL (job jobA, host hostQ)" "$work/a.log" && ok "agent: publishing" || bad "no bus line in the log"
pub=$(sed -n 's/.*bus: [0-9]* messages (\([0-9]*\) records, [0-9]* other lines) published.*/\1/p' "$work/a.log")
[ "$pub" = "$ops" ] && ok "agent: $pub records published, as many as --out has" || bad "published '$pub', --out $ops"
grep -q "0 dropped at the queue cap" "$work/a.log" || bad "drops: $(grep 'bus:' "$work/a.log" | tail -n 1)"
"$cl" consume "$NATS_URL" jobA "$ops" 10 >"$work/c" 2>"$work/c.err" || bad "consume: $(cat "$work/c")"
[ "$(val "$work/c" records)" = "$ops" ] && [ "$(val "$work/c" msgs_bad)" = 0 ] &&
	ok "consumer: the $ops records, none malformed" || bad "consumer: $(cat "$work/c")"
pe=$(grep -c '"type":"poll_end"' "$work/a.jsonl")
[ "$pe" -ge 1 ] && ok "--out: $pe poll_end lines" || bad "--out: no poll_end line"
lines=$(grep -vc '"type":"op"' "$work/a.jsonl")
[ "$(val "$work/c" lines)" = "$lines" ] && ok "consumer: the $lines other lines --out has" ||
	bad "lines: $(cat "$work/c"), --out $lines"
# a poll_end says "all in": on the bus after the records --out has before
# it, never ahead of them (the analyzer settles a trigger on it)
want=$(awk '/"type":"op"/ { n++ } /"type":"poll_end"/ { printf "%s%d", (k++ ? "," : ""), n + 0 }' "$work/a.jsonl")
got=$(sed -n 's/^poll_end_after=//p' "$work/c")
[ "$got" = "$want" ] && ok "consumer: each poll_end after the records before it in --out ($got)" ||
	bad "poll_end after records: bus $got, --out $want"
[ "$(val "$work/c" maps)" = 1 ] && ok "consumer: the host's latest map (one per host)" || bad "maps: $(cat "$work/c")"
# refused: --replay --bus of every host into one --out file, a URL that is not nats://
"$agent" --replay "$work" --bus "$NATS_URL" --out "$work/one.jsonl" >/dev/null 2>"$work/e1"
[ $? -eq 2 ] && grep -q "{host}" "$work/e1" && ok "--replay --bus into one --out file refused" || bad "--bus --replay: $(cat "$work/e1")"
"$agent" --sim "$work/nic.sock" --bus "tcp://x:1" >/dev/null 2>"$work/e2"
[ $? -eq 2 ] && grep -q "nats://" "$work/e2" && ok "a non-nats URL refused" || bad "bad url: $(cat "$work/e2")"

[ "$fails" -eq 0 ] || { echo "agent_bus.sh: $fails failure(s)"; tail -n 20 "$work/a.log"; exit 1; }
echo "agent_bus.sh: all passed"
