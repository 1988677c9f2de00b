#!/bin/sh
# The replay driver on bad files and options, on both builds: a clear message
# and a non-zero status, never a crash or a hang; a truncated stream is still
# replayed up to the cut, identically on x86 and rv64.
set -u
BUILD=${BUILD:-build}
EVGEN=$BUILD/bin/pulse-evgen
REPLAY=$BUILD/bin/pulse-fw-replay
ELF=$BUILD/rv64/pulse-fw.elf
RUNQ=firmware/platform/emu_rv64/run-qemu.sh
fail() {
	echo "replay-errors: FAIL: $*"
	exit 1
}
command -v qemu-system-riscv64 >/dev/null 2>&1 || fail "qemu-system-riscv64 is not installed (make deps)"
[ -f "$ELF" ] || fail "$ELF is missing (needs the RISC-V toolchain: make deps, then make)"
for b in "$EVGEN" "$REPLAY"; do [ -x "$b" ] || fail "$b is missing; run 'make'"; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pulse-replay-err.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT

# expect WANT_RC PATTERN CMD...: status and a message matching PATTERN
expect() {
	want=$1 pat=$2; shift 2
	"$@" >"$tmp/out" 2>&1
	rc=$?
	[ $rc -eq "$want" ] || { cat "$tmp/out"; fail "'$*' exited $rc, expected $want"; }
	grep -q -e "$pat" "$tmp/out" || { cat "$tmp/out"; fail "'$*' did not say '$pat'"; }
}
both() { # both WANT_RC PATTERN REPLAY-ARGS...
	want=$1 pat=$2; shift 2
	expect "$want" "$pat" "$REPLAY" "$@"
	expect "$want" "$pat" "$RUNQ" --timeout 60 "$ELF" replay "$@"
}

"$EVGEN" -q -o "$tmp/s.evs" --flows 8 --duration-ms 300 --duty-pct 20 || fail evgen
size=$(wc -c <"$tmp/s.evs")
head -c $((size - 7)) "$tmp/s.evs" >"$tmp/cut.evs"
head -c 32 "$tmp/s.evs" >"$tmp/empty.evs"
head -c 20 "$tmp/s.evs" >"$tmp/short.evs"
{ printf 'NOTPULSE'; tail -c +9 "$tmp/s.evs"; } >"$tmp/magic.evs"

both 1 "is truncated: 9 stray bytes" "$tmp/cut.evs" "$tmp/cut.x86"
mv "$tmp/cut.x86" "$tmp/cut.x86.keep"
"$RUNQ" --timeout 60 "$ELF" replay "$tmp/cut.evs" "$tmp/cut.rv64" >/dev/null 2>&1
cmp "$tmp/cut.x86.keep" "$tmp/cut.rv64" || fail "truncated stream: x86 and rv64 output differ"
[ -s "$tmp/cut.rv64" ] || fail "truncated stream: nothing replayed"
both 1 "is not a Pulse event stream" "$tmp/magic.evs" "$tmp/o"
both 1 "is not a Pulse event stream" "$tmp/short.evs" "$tmp/o"
both 1 "cannot open" "$tmp/does-not-exist.evs" "$tmp/o"
both 0 "0 TX events, 1 polls" "$tmp/empty.evs" "$tmp/o"
both 2 "unknown option '--bogus'" "$tmp/s.evs" "$tmp/o" --bogus
both 2 "--epoch-ns: '5' is not a number in" "$tmp/s.evs" "$tmp/o" --epoch-ns 5
both 2 "need an input and an output file" "$tmp/s.evs"
both 2 "Lower --pool-blocks or --max-flows" "$tmp/s.evs" "$tmp/o" --pool-blocks 8000000
both 2 "CONFIGURE refused: parameter out of range" "$tmp/s.evs" "$tmp/o" --flow-limit 9000
expect 2 "cannot create" "$REPLAY" "$tmp/s.evs" "$tmp/no-such-dir/o"
echo "replay-errors: PASS"
