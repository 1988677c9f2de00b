#!/bin/sh
# pulse-host-agent against a misbehaving simulated NIC (tests/host-agent/bad_nic.c):
# wrong protocol version, a short page, a repeated page, a page count that
# changes mid-upload, a window that lasted too long. Each must give a clear log line and a counted error,
# with no crash (the agent is the ASan+UBSan build) and no spinning.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
bad=$BUILD/tests/bad_nic
for b in "$agent" "$bad"; do
	[ -x "$b" ] || { echo "agent_bad_nic.sh: $b not built"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# run MODE: bad_nic for 2 s, the agent polling it every 200 ms for 1.5 s
run() {
	mode=$1
	rm -f "$work/nic.sock"
	"$bad" "$work/nic.sock" "$mode" 2.5 >"$work/bad.out" 2>&1 &
	bpid=$!
	"$agent" --no-hooks --sim "$work/nic.sock" --poll 200ms --exit-after 1.5s --lock-dir "$work" \
		--out "$work/$mode.jsonl" 2>"$work/$mode.log"
	arc=$?
	kill "$bpid" 2>/dev/null; wait "$bpid"
	[ "$arc" -eq 0 ] && ok "$mode: agent ran to the end (exit 0)" || {
		bad "$mode: agent exit $arc"; tail -n 20 "$work/$mode.log" | sed 's/^/    | /'; }
}
# check MODE LOGPATTERN COUNTER: the log line and "COUNTER N" with N > 0 in the final line
check() {
	mode=$1 pat=$2 counter=$3
	if grep -q -- "$pat" "$work/$mode.log"; then ok "$mode: log says '$pat'"; else
		bad "$mode: log lacks '$pat'"; sed 's/^/    | /' "$work/$mode.log" | tail -n 12; fi
	n=$(sed -n "s/.*errors:.* $counter \([0-9]*\).*/\1/p" "$work/$mode.log" | tail -n 1)
	if [ "${n:-0}" -gt 0 ]; then ok "$mode: $counter errors counted ($n)"; else
		bad "$mode: no $counter errors counted"; grep errors: "$work/$mode.log" | sed 's/^/    | /'; fi
	if grep -q "ERROR: AddressSanitizer\|runtime error" "$work/$mode.log"; then
		bad "$mode: sanitizer report"; fi
}

run good
n=$(grep -c '"type":"window"' "$work/good.jsonl")
[ "$n" -ge 5 ] && ok "good: $n windows" || bad "good: only $n windows"
grep -q '"qps":\[{"qpn":100,"bytes":320' "$work/good.jsonl" && ok "good: page data decoded" || bad "good: decoded data"
grep -q '"gap":\["pages"\]' "$work/good.jsonl" && bad "good: a gap reported" || ok "good: no gaps"

run version
check version "protocol version mismatch" version
# no spinning: one HELLO per poll period (1.5 s / 200 ms = 8 cycles, some slack)
h=$(sed -n 's/.* hello \([0-9]*\) .*/\1/p' "$work/bad.out")
[ "${h:-99}" -le 10 ] && ok "version: $h HELLO attempts in 1.5 s (no spinning)" || bad "version: $h HELLO attempts"
grep -q '"type":"window"' "$work/version.jsonl" && bad "version: windows accepted from a wrong-version NIC" || ok "version: no window accepted"

run short
check short "chunks run past the page" short
run repeat
check repeat "repeated or lost page" repeat
run count
check count "page count changed mid-upload" count_changed
for m in short repeat count; do
	grep -q '"gap":\["pages"\]' "$work/$m.jsonl" && ok "$m: the broken window is marked as a gap" || bad "$m: no gap in JSON"
	grep -q '"window_seq":3,.*"complete":true' "$work/$m.jsonl" && ok "$m: the next window is complete again" || bad "$m: did not recover"
done
run long
grep -q "over twice the configured" "$work/long.log" && ok "long: an unpolled window's length is logged" || bad "long: no log line"
grep -q '"gap":\["long"\]' "$work/long.jsonl" && ok "long: marked as a gap" || bad "long: no gap"

[ "$fails" -eq 0 ] || { echo "agent_bad_nic.sh: $fails failure(s)"; exit 1; }
echo "agent_bad_nic.sh: all passed"
