#!/bin/sh
# The built-in self-test (firmware/replay/selftest.c) on both builds: the x86
# replay binary and the rv64imac image on qemu. Both must report PASS with
# the same number of checks, and the rv64 run must say it ran on rv64.
set -u
BUILD=${BUILD:-build}
REPLAY=$BUILD/bin/pulse-fw-replay
ELF=$BUILD/rv64/pulse-fw.elf

fail() {
	echo "selftest: FAIL: $*"
	exit 1
}
command -v qemu-system-riscv64 >/dev/null 2>&1 ||
	fail "qemu-system-riscv64 is not installed (qemu-system-misc; run 'make deps')"
[ -f "$ELF" ] || fail "$ELF is missing (needs gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf; run 'make deps' then 'make')"
[ -x "$REPLAY" ] || fail "$REPLAY is missing; run 'make'"

x86=$("$REPLAY" --selftest 2>&1)
xrc=$?
rv=$(firmware/platform/emu_rv64/run-qemu.sh --timeout 60 "$ELF" selftest 2>&1 | tr -d '\r')
rrc=$?
echo "$x86" | grep -v '^PASS'
echo "$rv" | grep -v '^PASS'
[ $xrc -eq 0 ] || { echo "$x86" | grep '^FAIL'; fail "x86 self-test exited $xrc"; }
[ $rrc -eq 0 ] || { echo "$rv" | grep '^FAIL'; fail "rv64 self-test exited $rrc"; }
xs=$(echo "$x86" | grep '^selftest: PASS')
rs=$(echo "$rv" | grep '^selftest: PASS')
[ -n "$xs" ] || fail "x86 self-test did not report PASS"
[ -n "$rs" ] || fail "rv64 self-test did not report PASS"
[ "$xs" = "$rs" ] || fail "check counts differ: x86 '$xs', rv64 '$rs'"
echo "$rv" | grep -q 'rv64imac on qemu' || fail "rv64 run did not identify its platform"
echo "$rv" | grep -q '^PASS  HELLO platform (2)$' || fail "rv64 HELLO platform is not RV64_EMU"

# A wrong mode must fail, not pass: the exit status really comes from the image.
firmware/platform/emu_rv64/run-qemu.sh --timeout 30 "$ELF" no-such-mode >/dev/null 2>&1 &&
	fail "the image exited 0 for an unknown mode"
echo "selftest: both builds PASS"
