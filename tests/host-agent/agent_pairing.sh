#!/bin/sh
# The GPU <-> NIC pairing end to end (issue 14): the unmodified training
# program runs under libpulse-hook.so with the stand-in CUDA runtime (its
# GPU is 0000:3b:00.0) and the stand-in verbs (FAKE_VERBS_DEV names the RDMA
# device its QPs are made on); the agent reads the sysfs fixture
# (tests/host-agent/sysfs, where 0000:3b:00.0 is on NUMA node 0, mlx5_0 on
# node 0 and mlx5_1 on node 1) and drains the rings. The process on mlx5_1
# must give a cross_numa finding (log line, "config_finding" line), the one
# on mlx5_0 only a "GPU pairing" log line with the PCIe distance.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
hdir=$BUILD/tests/hook
hook=$BUILD/lib/libpulse-hook.so
for b in "$agent" "$hook" "$hdir/train" "$hdir/libibverbs.so.1" "$hdir/libcudart.so.12"; do
	[ -x "$b" ] || [ -f "$b" ] || { echo "agent_pairing.sh: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "agent_pairing.sh: skipped: python3 is not installed"; exit 77; }
work=$(mktemp -d)
shm=""
cleanup() { for p in $shm; do rm -f "/dev/shm/pulse-hook.$p"; done; rm -rf "$work"; }
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
mkdir "$work/rings"
train() { # DEV UID
	LD_PRELOAD="$hook $hdir/libcudart.so.12" LD_LIBRARY_PATH=$hdir PULSE_HOOK_KEEP_RING=1 \
		FAKE_NCCL_UID=$2 FAKE_CUDA_DEVICE=0 FAKE_VERBS_DEV=$1 "$hdir/train" 0 2 1 >"$work/train-$1.out" 2>&1 &
	tp=$!
	shm="$shm $tp"
	wait "$tp" || bad "train on $1: exit $?"
	[ -e "/dev/shm/pulse-hook.$tp" ] || bad "train on $1 left no ring"
	ln -s "/dev/shm/pulse-hook.$tp" "$work/rings/pulse-hook.$tp"
}
train mlx5_1 job-pair-1
train mlx5_0 job-pair-0

# no NIC to poll: --netdev lo keeps the agent running to watch
"$agent" --netdev lo --sysfs-root tests/host-agent/sysfs --hook-dir "$work/rings" --lock-dir "$work" \
	--poll 100ms --exit-after 1s --out "$work/out.jsonl" --log "$work/agent.log" 2>"$work/stderr"
rc=$?
[ "$rc" -eq 0 ] && ok "agent exit 0" || bad "agent exit $rc"

grep -q "configuration finding cross_numa: NIC on another NUMA node than its GPU: GPU 0000:3b:00.0 (NUMA 0) uses mlx5_1 (0000:81:00.0, NUMA 1): under different PCIe root complexes" "$work/agent.log" &&
	ok "log: cross_numa finding for mlx5_1" || bad "log: no cross_numa finding"
grep -q "GPU pairing: GPU 0000:3b:00.0 (NUMA 0) uses mlx5_0 (0000:03:00.0, NUMA 0): 6 PCIe hops apart" "$work/agent.log" &&
	ok "log: mlx5_0 paired, same NUMA node, 6 PCIe hops" || bad "log: mlx5_0 pairing line"
n=$(grep -c "configuration finding cross_numa" "$work/agent.log")
[ "$n" -eq 1 ] && ok "one cross_numa finding (each pair once)" || bad "$n cross_numa findings"
python3 - "$work/out.jsonl" <<'PY' || fails=$((fails + 1))
import json, sys
f = [json.loads(l) for l in open(sys.argv[1])]
f = [l for l in f if l["type"] == "config_finding"]
kinds = [(l["kind"], l["nic"], l["gpu"], l["nic_numa"], l["gpu_numa"]) for l in f]
want = [("pcie_width", "mlx5_1", None, 1, -1), ("pcie_speed", "mlx5_1", None, 1, -1),
        ("cross_numa", "mlx5_1", "0000:3b:00.0", 1, 0)]
ok = kinds == want
print(("ok   " if ok else "FAIL ") + "config_finding lines: %s" % kinds)
sys.exit(0 if ok else 1)
PY
# a device that disappears while the agent runs, and comes back
cp -a tests/host-agent/sysfs "$work/sys"
nic1=devices/pci0000:80/0000:80:01.0/0000:81:00.0
"$agent" --netdev lo --sysfs-root "$work/sys" --no-hooks --lock-dir "$work" --poll 100ms \
	--out "$work/gone.jsonl" --log "$work/gone.log" 2>"$work/gone.err" &
gp=$!
sleep 0.5
mv "$work/sys/$nic1" "$work/nic1.away"
i=0; while ! grep -q "RDMA device mlx5_1 .*is gone" "$work/gone.log" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
mv "$work/nic1.away" "$work/sys/$nic1"
i=0; while ! grep -q "RDMA device mlx5_1 appeared" "$work/gone.log" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM "$gp"; wait "$gp"; rc=$?
grep -q "warn: RDMA device mlx5_1 (PCI 0000:81:00.0, netdev ens2f0np0) is gone" "$work/gone.log" &&
	grep -q "info: RDMA device mlx5_1 appeared: PCI 0000:81:00.0, NUMA 1" "$work/gone.log" && [ "$rc" -eq 0 ] &&
	ok "a device that goes away while the agent runs: logged, back again logged, exit 0" ||
	{ bad "device gone (exit $rc)"; sed 's/^/    | /' "$work/gone.log"; }
if grep -q "ERROR: \(Address\|Undefined\|Leak\)Sanitizer\|runtime error" "$work/gone.err"; then
	bad "sanitizer report (device gone)"; sed 's/^/    | /' "$work/gone.err"
fi

# --list-devices on the fixture, and --device auto in a build without the DOCA SDK
"$agent" --list-devices --sysfs-root tests/host-agent/sysfs >"$work/list.out" 2>"$work/list.err"
rc=$?
[ "$rc" -eq 0 ] && grep -q "^mlx5_1: netdev ens2f0np0, PCI 0000:81:00.0, NUMA 1, PCIe x8/x16 8.0/16.0 GT/s$" "$work/list.out" &&
	grep -q "^    gid 1: fe80:0000:0000:0000:0ac0:ebff:fe12:3456 RoCE v2 ens1f0np0$" "$work/list.out" &&
	grep -q "^finding pcie_speed: mlx5_1" "$work/list.out" && grep -q "mlx5_3: listed in" "$work/list.err" &&
	ok "--list-devices: devices, GIDs, findings; the vanished mlx5_3 on stderr" ||
	{ bad "--list-devices (exit $rc)"; sed 's/^/    | /' "$work/list.out" "$work/list.err"; }
"$agent" --device auto --lock-dir "$work" --exit-after 1s >"$work/auto.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "device auto needs a build with the DOCA SDK" "$work/auto.out" &&
	ok "--device auto without the DOCA SDK: exit 1, said why" || bad "--device auto: exit $rc"
if grep -q "ERROR: \(Address\|Undefined\|Leak\)Sanitizer\|runtime error" "$work/stderr" "$work/agent.log"; then
	bad "sanitizer report"; sed 's/^/    | /' "$work/stderr"
fi
if [ "$fails" -ne 0 ]; then
	echo "--- agent log"; sed 's/^/    | /' "$work/agent.log"
	echo "agent_pairing.sh: $fails failed"
	exit 1
fi
echo "agent_pairing.sh: all passed"
