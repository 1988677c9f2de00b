#!/usr/bin/env bash
# The interception against the real NCCL on a GPU machine, in one go: what the
# machine is, then tests/hook/gpu/torch_nccl_smoke.py with the hook and the
# profiler plugin, with every collective PyTorch maps onto NCCL, and with each
# of the two alone; then --agent: pulse-host-agent (no NIC, no netlink) drains
# the live process's ring from /dev/shm and its lines are checked against
# NCCL's log. Logs go to $OUT (or ./build/device-smoke) as well as stdout.
#
# The hook, the plugin and ring_dump are plain C against libc only, so they are
# built where the compiler and headers are (make ... below) and carried: a GPU
# machine need not have Pulse's build dependencies. pulse-host-agent links
# many (libcjson, libmicrohttpd, libnats, gnutls, ...): carry_libs.sh copies
# them into $BUILD/device-libs, which goes on the agent's LD_LIBRARY_PATH only
# (not the Python workload's) when it is there. The target's glibc must be at
# least the build machine's symbol versions (2.34 from Debian 12).
#   make build/lib/libpulse-hook.so build/lib/libpulse-nccl-profiler.so build/tests/hook/ring_dump \
#       build/bin/pulse-host-agent
#   tests/hook/gpu/carry_libs.sh build/device-libs
#   bash tests/hook/gpu/device_smoke.sh
set -u
BUILD=${BUILD:-build}
out=${OUT:-$BUILD/device-smoke}
mkdir -p "$out"
agent_libs=""
[ -d "$BUILD/device-libs" ] && agent_libs=$(cd "$BUILD/device-libs" && pwd)
for b in "$BUILD/lib/libpulse-hook.so" "$BUILD/lib/libpulse-nccl-profiler.so" "$BUILD/tests/hook/ring_dump"; do
	[ -e "$b" ] || { echo "device_smoke.sh: $b not built (see the header of this script)"; exit 2; }
done
{
	echo "== machine: $(uname -srm)"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: none"
	python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' 2>&1
	python3 -c 'import nvidia.nccl, os; d=os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print("libnccl:", os.listdir(d))' 2>&1
	ldd --version 2>&1 | head -n 1
	if [ -x "$BUILD/bin/pulse-host-agent" ]; then
		missing=$(LD_LIBRARY_PATH=${agent_libs:+$agent_libs:}${LD_LIBRARY_PATH:-} ldd "$BUILD/bin/pulse-host-agent" 2>&1 |
			grep 'not found' | tr -s '\t\n' '  ')
		echo "pulse-host-agent: libraries from ${agent_libs:-the system}; missing: ${missing:-none}"
	else
		echo "pulse-host-agent: $BUILD/bin/pulse-host-agent not built (the --agent run will fail)"
	fi
} | tee "$out/machine.txt"
rc=0
mkdir -p "$out/logs"
: >"$out/reports.txt"
run() { # ARGS...: one smoke run; its report, and each process's whole output under logs/
	echo "== torch_nccl_smoke.py $*" | tee -a "$out/reports.txt"
	PYTHONUNBUFFERED=1 timeout 240 python3 tests/hook/gpu/torch_nccl_smoke.py --build "$BUILD" \
		--child-log "$out/logs" "$@" 2>&1 | tee -a "$out/reports.txt"
	r=$?
	echo "== exit $r" | tee -a "$out/reports.txt"
	if [ "$r" -eq 77 ]; then skipped=1; elif [ "$r" -ne 0 ]; then rc=1; fi
}
skipped=0
set -o pipefail
run
run --collectives
run --groups
run --no-plugin --collectives
run --no-hook
run --agent --collectives ${agent_libs:+--agent-lib-path "$agent_libs"}
run --agent --groups ${agent_libs:+--agent-lib-path "$agent_libs"}
if [ $rc -ne 0 ]; then echo "== device_smoke.sh: a run FAILED"; exit 1; fi
if [ $skipped -ne 0 ]; then echo "== device_smoke.sh: nothing run here (no PyTorch or no GPU)"; exit 77; fi
echo "== device_smoke.sh: all runs passed"
