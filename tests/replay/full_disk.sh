#!/usr/bin/env bash
# A full disk is an error, never a quiet, shorter output: the agent's replay
# whose --out cannot be written exits non-zero and says so; pulse-analyzer
# --replay whose agents could not write their output fails naming the host
# and its log instead of judging the lines that did get written; and a
# report that cannot be written makes pulse-analyzer exit non-zero. The
# disk is filled two ways: /dev/full (every write fails with ENOSPC) and a
# file size limit (ulimit -f, with SIGXFSZ ignored so that writes fail with
# EFBIG), which cuts the agents' files after their first lines.
set -u
cd "$(dirname "$0")/../.."
agent=build/tests/pulse-host-agent-asan
[ -x "$agent" ] || agent=build/bin/pulse-host-agent
analyzer=build/tests/pulse-analyzer-asan
[ -x "$analyzer" ] || analyzer=build/bin/pulse-analyzer
for b in build/bin/pulse-run-cluster "$agent" "$analyzer"; do
	[ -x "$b" ] || { echo "full_disk.sh: $b not built; skipped"; exit 77; }
done
[ -w /dev/full ] || { echo "full_disk.sh: no /dev/full; skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "full_disk.sh: FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -n 8 "$f"; done; exit 1; }
./sim/run_cluster tests/scenarios/gpt-baseline.json --out "$work/run" --quiet || fail "run_cluster"

# the agent alone: every write fails
"$agent" --replay "$work/run" --host host0 --out /dev/full >"$work/agent-full.log" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "agent --out /dev/full exited 0"
grep -q -- "--out /dev/full: write failed: No space left on device" "$work/agent-full.log" ||
	fail "the agent did not say that --out failed"
# per-host files ({host}): the first host's file is cut by the size limit
(trap '' XFSZ; ulimit -f 64; exec "$agent" --replay "$work/run" --out "$work/cut-{host}.jsonl") \
	>"$work/agent-cut.log" 2>&1
[ $? -ne 0 ] || fail "agent --out {host} past the file size limit exited 0"
grep -q "cut-host0.jsonl: write failed: File too large" "$work/agent-cut.log" ||
	fail "the agent did not name host0's cut file"
[ ! -e "$work/cut-host1.jsonl" ] || fail "the agent went on to host1 after host0's file was cut"
# the same agent with room writes it all and exits 0 (the limit is what failed)
"$agent" --replay "$work/run" --host host0 --out "$work/whole.jsonl" >"$work/agent-whole.log" 2>&1 ||
	fail "agent --replay with room exited $?"
[ "$(stat -c %s "$work/whole.jsonl")" -gt 65536 ] || fail "host0's output is too small to be cut at 64 KiB"

# the analyzer runs the agents: their cut output fails the replay
mkdir "$work/agent-out"
(trap '' XFSZ; ulimit -f 64; exec "$analyzer" --replay "$work/run" --agent-out "$work/agent-out" --json --quiet) \
	>"$work/report-cut.json" 2>"$work/analyzer-cut.log"
[ $? -ne 0 ] || fail "pulse-analyzer judged agent output that was cut short"
grep -q "pulse-host-agent --replay .* --host host[0-9]* failed (status 1); its log is" "$work/analyzer-cut.log" ||
	fail "pulse-analyzer did not name the agent that failed"
ls "$work"/agent-out/*.jsonl >/dev/null 2>&1 && fail "a cut agent output was kept as if complete"

# the report itself cannot be written
rm -rf "$work/agent-out"
mkdir "$work/agent-out"
"$analyzer" --replay "$work/run" --agent-out "$work/agent-out" --json --quiet >/dev/full 2>"$work/analyzer-full.log"
[ $? -ne 0 ] || fail "pulse-analyzer exited 0 with its report on /dev/full"
grep -q "writing the report: No space left on device" "$work/analyzer-full.log" ||
	fail "pulse-analyzer did not say the report failed"
# with room: the same replay succeeds from the agent output it kept
"$analyzer" --replay "$work/run" --agent-out "$work/agent-out" --json --quiet >"$work/report.json" \
	2>"$work/analyzer.log" || fail "pulse-analyzer with room exited $?"
grep -q '"format":[[:space:]]*"pulse-analyzer-report"' "$work/report.json" || fail "no report with room"
echo "full_disk.sh: PASS (agent: /dev/full and a 64 KiB file limit fail the replay; analyzer: a cut agent output and an unwritable report fail it)"
