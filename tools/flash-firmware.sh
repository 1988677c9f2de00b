#!/bin/sh
# make flash-firmware: build the Pulse NIC agent and bring it up where it runs.
#
# With the NVIDIA DOCA SDK and a DPA-capable NIC (BlueField-3, ConnectX-7/8)
# present: there is nothing to write into NIC flash. The NIC agent is a DOCA
# PCC application; dpacc links the DPA program into a host library
# (build/doca/libpulse_dpa_app.a) that is linked into the host agent, and the
# host agent loads it onto the DPA when it starts, through doca_pcc_create,
# doca_pcc_set_app, doca_pcc_set_mailbox and doca_pcc_start
# (mailbox/transport_doca.c); it runs until the host agent stops it. The NIC
# must have USER_PROGRAMMABLE_CC=1 in its non-volatile configuration (mlxconfig)
# and must have been reset or power-cycled since it was set. This script builds
# the DOCA variant, checks that setting and says what is missing.
#
# Without them: it builds the bare-metal rv64imac image of the same core,
# boots it on qemu-system-riscv64, runs its built-in self-test, and says
# plainly that no NIC was found and what ran instead. The exit status is the
# self-test's.
#
# Options:
#   --no-build      use what is built (tests); default: run make first
#   --set-nv-config with a NIC that lacks USER_PROGRAMMABLE_CC=1, set it with
#                   mlxconfig (needs root; takes effect after a NIC reset)
#   -h, --help
# Environment (mainly for tests): BUILD, MAKE, PKG_CONFIG,
# PULSE_DOCA_ROOT (/opt/mellanox/doca), PULSE_IB_SYSFS (/sys/class/infiniband),
# PULSE_DOCA_FOUND and DOCA_DPA_APP (passed by make from firmware/doca.mk).
set -u
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
DOCA_ROOT=${PULSE_DOCA_ROOT:-/opt/mellanox/doca}
IB_SYSFS=${PULSE_IB_SYSFS:-/sys/class/infiniband}
ELF=$BUILD/rv64/pulse-fw.elf
build=1
set_nv=0

for a in "$@"; do
	case $a in
	--no-build) build=0 ;;
	--set-nv-config) set_nv=1 ;;
	-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "flash-firmware: unknown option '$a' (see --help)" >&2; exit 2 ;;
	esac
done

say() { echo "flash-firmware: $*"; }

# --- what is here ----------------------------------------------------------
sdk=""
if "$PKG_CONFIG" --exists doca-pcc 2>/dev/null; then
	sdk="pkg-config doca-pcc $("$PKG_CONFIG" --modversion doca-pcc 2>/dev/null)"
elif [ -d "$DOCA_ROOT" ]; then
	sdk="$DOCA_ROOT (pkg-config does not find doca-pcc: set PKG_CONFIG_PATH to its lib/*/pkgconfig)"
fi

# DPA-capable devices: NVIDIA (0x15b3) BlueField-3 (0xa2dc), ConnectX-7 (0x1021,
# also the NIC inside a BlueField-3) and ConnectX-8 (0x1023).
devices="" other=""
if [ -d "$IB_SYSFS" ]; then
	for d in "$IB_SYSFS"/*; do
		[ -e "$d" ] || continue
		name=${d##*/}
		vendor=$(cat "$d/device/vendor" 2>/dev/null)
		devid=$(cat "$d/device/device" 2>/dev/null)
		case "$vendor:$devid" in
		0x15b3:0xa2dc) devices="$devices $name(BlueField-3)" ;;
		0x15b3:0x1021) devices="$devices $name(ConnectX-7)" ;;
		0x15b3:0x1023) devices="$devices $name(ConnectX-8)" ;;
		*) other="$other $name(${vendor:-?}:${devid:-?})" ;;
		esac
	done
fi

# --- DOCA path ---------------------------------------------------------------
if [ -n "$sdk" ] && [ -n "$devices" ]; then
	say "DOCA SDK: $sdk"
	say "DPA-capable device(s):$devices"
	say "What happens: the NIC agent is built as a DOCA PCC application for the DPA"
	say "  (dpacc links firmware/platform/doca_dpa + firmware/core into ${DOCA_DPA_APP:-$BUILD/doca/libpulse_dpa_app.a})."
	say "  Nothing is written to NIC flash: the host agent, linked with that library,"
	say "  loads it onto the DPA at start with doca_pcc_set_app() + doca_pcc_start()"
	say "  and unloads it with doca_pcc_stop() when it exits."
	rc=0
	if [ "${PULSE_DOCA_FOUND:-}" != yes ]; then
		say "The DOCA build is not enabled in make (it needs pkg-config doca-pcc AND dpacc):"
		$MAKE --no-print-directory doca-check
		rc=1
	elif [ $build -eq 1 ]; then
		$MAKE --no-print-directory doca-check &&
			$MAKE --no-print-directory "${DOCA_DPA_APP:-$BUILD/doca/libpulse_dpa_app.a}" || rc=1
	fi
	# USER_PROGRAMMABLE_CC must be 1 on every device the agent will use.
	for entry in $devices; do
		name=${entry%%(*}
		pci=$(basename "$(readlink -f "$IB_SYSFS/$name/device")")
		if ! command -v mlxconfig >/dev/null 2>&1; then
			say "$name ($pci): mlxconfig not found (NVIDIA MFT); cannot check USER_PROGRAMMABLE_CC."
			say "  Install MFT, then: mlxconfig -d $pci query USER_PROGRAMMABLE_CC"
			rc=1
			continue
		fi
		val=$(mlxconfig -d "$pci" query USER_PROGRAMMABLE_CC 2>/dev/null |
			sed -n 's/.*USER_PROGRAMMABLE_CC[[:space:]]*\([^[:space:]]*\).*/\1/p' | head -n 1)
		case $val in
		1|True*|true*)
			say "$name ($pci): USER_PROGRAMMABLE_CC=1: ready. Start the host agent on $name to load the NIC agent."
			;;
		*)
			say "$name ($pci): USER_PROGRAMMABLE_CC is '${val:-unknown}', must be 1."
			if [ $set_nv -eq 1 ]; then
				say "  running: mlxconfig -y -d $pci set USER_PROGRAMMABLE_CC=1"
				mlxconfig -y -d "$pci" set USER_PROGRAMMABLE_CC=1 || rc=1
			else
				say "  run: mlxconfig -d $pci set USER_PROGRAMMABLE_CC=1   (or re-run with --set-nv-config)"
			fi
			say "  then reset the NIC (mlxfwreset -d $pci reset, or power-cycle the host) before starting the host agent."
			rc=1
			;;
		esac
	done
	exit $rc
fi

# --- no NIC: the emulated image ---------------------------------------------
why=""
if [ -z "$sdk" ]; then
	why="no DOCA SDK (pkg-config doca-pcc fails, no $DOCA_ROOT)"
else
	why="DOCA SDK present ($sdk)"
fi
if [ -n "$devices" ]; then
	why="$why; DPA-capable device(s):$devices, but no SDK to build for them"
elif [ -n "$other" ]; then
	why="$why; RDMA devices without a DPA:$other"
else
	why="$why; no RDMA devices in $IB_SYSFS"
fi

if [ $build -eq 1 ]; then
	$MAKE --no-print-directory "$ELF" >/dev/null || {
		say "building $ELF failed (needs gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf: make deps)"
		exit 1
	}
fi
[ -f "$ELF" ] || { say "$ELF is not built (make $ELF)"; exit 1; }
command -v qemu-system-riscv64 >/dev/null 2>&1 || {
	say "qemu-system-riscv64 not found (qemu-system-misc: make deps); cannot run the self-test"
	exit 1
}

say "No BlueField/DPA device found: $why."
say "Nothing was installed on a NIC. Running instead: the NIC agent image $ELF"
say "  (the same firmware core, built for rv64imac with picolibc) on an emulated RISC-V"
say "  core: qemu-system-riscv64 -machine virt, console and files through semihosting."
log=$(mktemp "${TMPDIR:-/tmp}/pulse-flash.XXXXXX") || exit 1
firmware/platform/emu_rv64/run-qemu.sh --timeout 60 "$ELF" selftest >"$log" 2>&1
rc=$?
tr -d '\r' <"$log" | grep -v '^PASS ' | sed 's/^/  | /'
result=$(tr -d '\r' <"$log" | grep '^selftest: ' | tail -n 1)
rm -f "$log"
if [ $rc -eq 0 ] && [ -n "$result" ] && echo "$result" | grep -q '^selftest: PASS'; then
	say "Self-test on emulated rv64imac: ${result#selftest: }"
	exit 0
fi
say "Self-test on emulated rv64imac FAILED (exit $rc): ${result:-no result line}"
exit 1
