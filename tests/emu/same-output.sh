#!/bin/sh
# Same-code check: the rv64imac image on qemu and the x86 build replay the
# same event streams and must write byte-identical mailbox output.
#
# Streams: normal bursty traffic across the 32-bit clock wrap; bad input
# (reserved and oversized QPNs, timestamps backwards and jumping by seconds,
# zero-byte and clipped events, flow churn); slot and pool exhaustion with
# small limits; a window that opens just before the wrap with 1 ms epochs.
# Missing qemu or RISC-V toolchain is a failure, not a skip: the check is part
# of `make test` on purpose (make deps installs them).
set -u
BUILD=${BUILD:-build}
EVGEN=$BUILD/bin/pulse-evgen
REPLAY=$BUILD/bin/pulse-fw-replay
ELF=$BUILD/rv64/pulse-fw.elf
RUNQ=firmware/platform/emu_rv64/run-qemu.sh

fail() {
	echo "same-output: FAIL: $*"
	exit 1
}

command -v qemu-system-riscv64 >/dev/null 2>&1 ||
	fail "qemu-system-riscv64 is not installed (Debian package qemu-system-misc; run 'make deps')"
if [ ! -f "$ELF" ]; then
	command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 ||
		fail "riscv64-unknown-elf-gcc is not installed, so $ELF cannot be built (packages gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf; run 'make deps')"
	fail "$ELF is missing; build it with 'make $ELF'"
fi
for b in "$EVGEN" "$REPLAY"; do
	[ -x "$b" ] || fail "$b is missing; run 'make'"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pulse-same.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# case NAME "EVGEN OPTIONS" "REPLAY OPTIONS"
run_case() {
	name=$1 gen=$2 opts="$3 --stats"
	# shellcheck disable=SC2086
	"$EVGEN" -q -o "$tmp/$name.evs" $gen || fail "$name: pulse-evgen $gen"
	# shellcheck disable=SC2086
	"$REPLAY" "$tmp/$name.evs" "$tmp/$name.x86" $opts >"$tmp/$name.x86.log" 2>&1 ||
		{ cat "$tmp/$name.x86.log"; fail "$name: x86 replay exited $?"; }
	# shellcheck disable=SC2086
	"$RUNQ" --timeout 60 "$ELF" replay "$tmp/$name.evs" "$tmp/$name.rv64" $opts \
		>"$tmp/$name.rv64.log" 2>&1 ||
		{ cat "$tmp/$name.rv64.log"; fail "$name: rv64 replay on qemu exited $?"; }
	[ -s "$tmp/$name.x86" ] || fail "$name: x86 replay wrote nothing"
	if ! cmp "$tmp/$name.x86" "$tmp/$name.rv64"; then
		echo "x86:  $(tail -n 1 "$tmp/$name.x86.log")"
		echo "rv64: $(tail -n 1 "$tmp/$name.rv64.log")"
		fail "$name: the rv64 image and the x86 build wrote different mailbox output"
	fi
	# the summaries (events, polls, pages, responses, final counters) too
	x=$(grep '^replay:' "$tmp/$name.x86.log")
	r=$(grep '^replay:' "$tmp/$name.rv64.log" | tr -d '\r')
	[ "$x" = "$r" ] || fail "$name: summaries differ: x86 '$x' rv64 '$r'"
	echo "ok  $name: $(wc -c <"$tmp/$name.x86") bytes identical; $(tail -n 1 "$tmp/$name.x86.log")"
}

# stat CASE NAME: a counter from the final STATS response of a case
stat() {
	sed -n "s/^replay: stat $2 \([0-9]*\)$/\1/p" "$tmp/$1.x86.log"
}
# nonzero CASE NAME...: the stream really exercised these paths
nonzero() {
	c=$1; shift
	for n in "$@"; do
		v=$(stat "$c" "$n")
		[ -n "$v" ] && [ "$v" -gt 0 ] || fail "$c: counter $n is '${v:-missing}', expected > 0"
	done
}

run_case normal "--seed 1 --flows 32 --duration-ms 5200 --duty-pct 5" ""
run_case bad "--seed 2 --flows 24 --duration-ms 5000 --duty-pct 5 --bad --bad-permille 50 --churn 10" \
	"--epoch-ns 8000 --page-bytes 512 --threads 8"
run_case exhaust "--seed 3 --flows 48 --duration-ms 1200 --duty-pct 10 --churn 30 --bad" \
	"--max-flows 24 --pool-blocks 48 --flow-limit 20 --pool-limit 40 --page-bytes 256 --threads 4"
run_case wrap "--seed 4 --flows 16 --start-ns 4294000000 --duration-ms 1500 --poll-ms 250 --duty-pct 20" \
	"--epoch-ns 1024000 --window-ns 2000000000 --page-bytes 4096"

# The comparison must be able to fail: different streams, different output.
cmp -s "$tmp/normal.x86" "$tmp/bad.x86" && fail "different streams gave identical output"
# Each stream reached the paths it is meant to (counters since the last
# CONFIGURE, so over the whole replay).
nonzero normal events flows_created
[ "$(stat normal drop_bad_qpn)" = 0 ] || fail "normal stream produced bad-QPN drops"
nonzero bad drop_bad_qpn zero_events clipped_events drop_ts_range reordered_events flows_aged
nonzero exhaust drop_no_slot drop_no_pool drop_no_pool_units
echo "same-output: PASS"
