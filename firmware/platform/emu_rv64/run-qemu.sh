#!/bin/sh
# Boots the rv64imac NIC agent image on qemu-system-riscv64 (virt machine, no
# firmware, semihosting for the console, argv and host files).
#
#   run-qemu.sh [--icount] [--timeout SECS] ELF [MODE [ARGS...]]
#
# MODE and ARGS reach the image's main() as argv[1..] through
# -semihosting-config arg=...; file names are host paths, relative to the
# current directory. Arguments may not contain spaces (semihosting passes one
# command line that picolibc splits at spaces). --icount adds -icount shift=0,
# which makes minstret count retired instructions exactly. The exit status is
# the image's (virt test device), or 124 if it ran past the timeout. The
# image's console (stdout and stderr alike) comes out on qemu's stdout; qemu's
# own complaints on its stderr.
set -eu
QEMU=${QEMU:-qemu-system-riscv64}
icount=""
timeout_s=120
while [ $# -gt 0 ]; do
	case $1 in
	--icount) icount="-icount shift=0"; shift ;;
	--timeout) timeout_s=$2; shift 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ]; then
	echo "usage: $0 [--icount] [--timeout SECS] ELF [MODE [ARGS...]]" >&2
	exit 2
fi
elf=$1; shift
if ! command -v "$QEMU" >/dev/null 2>&1; then
	echo "run-qemu: $QEMU not found: install qemu-system-misc (make deps)" >&2
	exit 127
fi
if [ ! -f "$elf" ]; then
	echo "run-qemu: no image at $elf (build it with: make $elf)" >&2
	exit 2
fi
semi="enable=on,target=native,chardev=semicon"
for a in "$@"; do
	case $a in
	*" "*|"") echo "run-qemu: argument '$a' is empty or has a space; semihosting cannot pass it" >&2; exit 2 ;;
	esac
	# qemu option syntax: a literal comma is written twice
	semi="$semi,arg=$(printf '%s' "$a" | sed 's/,/,,/g')"
done
# shellcheck disable=SC2086
exec timeout "$timeout_s" "$QEMU" -machine virt -cpu rv64 -m 256M -smp 1 -nographic \
	-bios none -kernel "$elf" -monitor none -serial none \
	-chardev stdio,id=semicon,signal=off -semihosting-config "$semi" $icount
