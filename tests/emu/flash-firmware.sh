#!/bin/sh
# tools/flash-firmware.sh: the no-NIC path for real (boots the image on qemu,
# runs the self-test), and the DOCA path against a fake sysfs, pkg-config and
# mlxconfig (nothing here has a NIC), checking what it says and its status.
set -u
BUILD=${BUILD:-build}
export BUILD
fail() {
	echo "flash-firmware test: FAIL: $*"
	exit 1
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pulse-flash-test.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT

# 1. this machine (CI: no SDK, no NIC): emulated self-test
if [ -e /opt/mellanox/doca ] || ls /sys/class/infiniband/* >/dev/null 2>&1; then
	echo "note: this machine has DOCA or RDMA devices; case 1 uses an empty fake sysfs"
fi
mkdir -p "$tmp/empty"
PULSE_IB_SYSFS=$tmp/empty PULSE_DOCA_ROOT=$tmp/none PKG_CONFIG=false \
	tools/flash-firmware.sh --no-build >"$tmp/out1" 2>&1
rc=$?
cat "$tmp/out1"
[ $rc -eq 0 ] || fail "no-NIC run exited $rc"
grep -q 'No BlueField/DPA device found: no DOCA SDK' "$tmp/out1" || fail "no plain no-NIC message"
grep -q 'qemu-system-riscv64' "$tmp/out1" || fail "does not say what ran instead"
grep -q 'Self-test on emulated rv64imac: PASS' "$tmp/out1" || fail "no self-test result"

# fake tools and a fake BlueField-3
mkdir -p "$tmp/bin" "$tmp/pci/0000:3b:00.0" "$tmp/ib/mlx5_0"
echo 0x15b3 >"$tmp/pci/0000:3b:00.0/vendor"
echo 0xa2dc >"$tmp/pci/0000:3b:00.0/device"
ln -s "$tmp/pci/0000:3b:00.0" "$tmp/ib/mlx5_0/device"
printf '#!/bin/sh\ncase "$*" in *--modversion*) echo 2.9.0 ;; esac\nexit 0\n' >"$tmp/bin/pkg-config"
cat >"$tmp/bin/mlxconfig" <<EOS
#!/bin/sh
echo "\$*" >>"$tmp/mlxconfig.log"
case "\$*" in
*query*) printf 'Device #1:\n\nConfigurations:        Next Boot\n         USER_PROGRAMMABLE_CC     %s\n' "\$(cat "$tmp/upcc")" ;;
esac
EOS
chmod +x "$tmp/bin/"*

# 2. SDK and device, USER_PROGRAMMABLE_CC not set: says how, fails
echo 'False(0)' >"$tmp/upcc"
PATH=$tmp/bin:$PATH PKG_CONFIG=$tmp/bin/pkg-config PULSE_IB_SYSFS=$tmp/ib PULSE_DOCA_FOUND=yes \
	tools/flash-firmware.sh --no-build >"$tmp/out2" 2>&1
rc=$?
cat "$tmp/out2"
[ $rc -ne 0 ] || fail "USER_PROGRAMMABLE_CC=0 should fail"
grep -q 'mlx5_0(BlueField-3)' "$tmp/out2" || fail "device not reported"
grep -q 'doca_pcc_set_app() + doca_pcc_start()' "$tmp/out2" || fail "does not say how the app is loaded"
grep -q 'mlxconfig -d 0000:3b:00.0 set USER_PROGRAMMABLE_CC=1' "$tmp/out2" || fail "no mlxconfig command"
grep -q 'reset the NIC' "$tmp/out2" || fail "no NIC reset advice"
grep -q ' set ' "$tmp/mlxconfig.log" && fail "changed the NIC configuration without --set-nv-config"

# 3. ... and set: ready
echo 'True(1)' >"$tmp/upcc"
PATH=$tmp/bin:$PATH PKG_CONFIG=$tmp/bin/pkg-config PULSE_IB_SYSFS=$tmp/ib PULSE_DOCA_FOUND=yes \
	tools/flash-firmware.sh --no-build >"$tmp/out3" 2>&1
rc=$?
cat "$tmp/out3"
[ $rc -eq 0 ] || fail "USER_PROGRAMMABLE_CC=1 with the SDK should succeed, exited $rc"
grep -q 'USER_PROGRAMMABLE_CC=1: ready' "$tmp/out3" || fail "not reported ready"

# 4. a device but no SDK: emulation, and says why
PULSE_IB_SYSFS=$tmp/ib PULSE_DOCA_ROOT=$tmp/none PKG_CONFIG=false \
	tools/flash-firmware.sh --no-build >"$tmp/out4" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "device without SDK: exited $rc"
grep -q 'mlx5_0(BlueField-3), but no SDK' "$tmp/out4" || { cat "$tmp/out4"; fail "no reason given"; }

# 5. no image: a clear failure, not a pass
BUILD=$tmp/nobuild PULSE_IB_SYSFS=$tmp/empty PULSE_DOCA_ROOT=$tmp/none PKG_CONFIG=false \
	tools/flash-firmware.sh --no-build >"$tmp/out5" 2>&1 && fail "passed without an image"
grep -q 'is not built' "$tmp/out5" || { cat "$tmp/out5"; fail "no clear message without an image"; }
echo "flash-firmware test: PASS"
