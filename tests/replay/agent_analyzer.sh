#!/usr/bin/env bash
# pulse-host-agent --analyzer: the live agent sends its lines to
# pulse-analyzer --listen while writing them to --out (the tee), under the
# name --host-name and job --job, and says BYE when it stops; a bad
# --analyzer address and --analyzer with --replay are refused.
# Skips (77) while pulse-analyzer is not built.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
agent=${PULSE_AGENT:-$build/tests/pulse-host-agent-asan}
analyzer=$build/bin/pulse-analyzer
rt=$build/bin/pulse-run-trace
ring=$root/tests/traces/ring.pcap
[ -x "$analyzer" ] || { echo "agent_analyzer.sh: $analyzer is not built; skipped"; exit 77; }
[ -x "$agent" ] && [ -x "$rt" ] || { echo "agent_analyzer.sh: agent or run_trace not built"; exit 1; }
work=$(mktemp -d /tmp/pulse-agent-analyzer.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "agent_analyzer.sh: FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -n 15 "$f"; done; exit 1; }

"$analyzer" --listen 127.0.0.1:0 >"$work/an.out" 2>"$work/an.log" &
pids+=($!)
for _ in $(seq 50); do
	port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$work/an.log")
	[ -n "$port" ] && break
	kill -0 "${pids[0]}" 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || fail "pulse-analyzer did not listen"
"$rt" --serve "$work/nic.sock" --epoch 32us --poll 200ms --speed 0.006 --loop "$ring" 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 50); do [ -S "$work/nic.sock" ] && break; sleep 0.1; done
[ -S "$work/nic.sock" ] || fail "run_trace --serve did not start"

"$agent" --sim "mlx5_0=$work/nic.sock" --poll 200ms --exit-after 2s --lock-dir "$work" --no-hooks \
	--analyzer "127.0.0.1:$port" --job jobX --host-name hostQ --out "$work/out.jsonl" \
	--log "$work/agent.log" || fail "agent exit $?"
sleep 0.3
wins=$(grep -c '"type":"window"' "$work/out.jsonl")
[ "$wins" -ge 3 ] || fail "only $wins window lines in --out"
grep -q "analyzer: .*connected" "$work/agent.log" || fail "the agent never connected"
grep -q "agent hostQ connected from 127.0.0.1:[0-9]* (job jobX" "$work/an.log" || fail "the analyzer did not see hostQ/jobX"
sent=$(sed -n 's/.*analyzer: \([0-9]*\) lines, .*/\1/p' "$work/agent.log")
got=$(sed -n 's/.*agent hostQ says BYE .* after [0-9]* frames, \([0-9]*\) lines.*/\1/p' "$work/an.log")
all=$(wc -l <"$work/out.jsonl")
[ -n "$got" ] || fail "no BYE from hostQ at the analyzer"
[ "$sent" = "$all" ] || fail "the link took $sent lines, --out has $all"
[ "$got" -ge "$wins" ] || fail "the analyzer got $got lines, fewer than the $wins windows"
echo "agent_analyzer.sh: $all lines in --out, $sent through the link, $got received by the analyzer"

# refused: a bad address, --analyzer with --replay
"$agent" --sim "$work/nic.sock" --analyzer nowhere --lock-dir "$work" >/dev/null 2>"$work/bad1.log"
[ $? -eq 2 ] && grep -q "must be HOST:PORT" "$work/bad1.log" || fail "--analyzer nowhere accepted"
"$agent" --replay "$work" --analyzer "127.0.0.1:$port" >/dev/null 2>"$work/bad2.log"
[ $? -eq 2 ] && grep -q "is for live operation" "$work/bad2.log" || fail "--analyzer with --replay accepted"
echo "agent_analyzer.sh: PASS"
