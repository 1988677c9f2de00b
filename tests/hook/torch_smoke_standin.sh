#!/bin/sh
# The GPU smoke test's capture and report (tests/hook/gpu/torch_nccl_smoke.py),
# run on the stand-in NCCL so that its checks are themselves checked without
# a GPU: hook + profiler plugin (net profiling on), then the plugin alone,
# then --agent: pulse-host-agent (no NIC, no netlink) drains the live
# process's ring and its hook_op/hook_map lines are checked against the
# stand-in's NCCL-format log (Init COMPLETE, COLL lines). Here the agent looks
# at a directory of links to this run's rings, not at all of /dev/shm, so
# that it leaves other tests' rings alone.
set -u
BUILD=${BUILD:-build}
command -v python3 >/dev/null || { echo "torch_smoke_standin.sh: python3 needed"; exit 77; }
for b in "$BUILD/tests/hook/ring_dump" "$BUILD/tests/hook/train" "$BUILD/lib/libpulse-hook.so" \
	"$BUILD/lib/libpulse-nccl-profiler.so" "$BUILD/tests/hook/libtrain_module.so" "$BUILD/bin/pulse-host-agent"; do
	[ -e "$b" ] || { echo "torch_smoke_standin.sh: $b not built"; exit 77; }
done
rc=0
python3 tests/hook/gpu/torch_nccl_smoke.py --build "$BUILD" --stand-in || rc=1
python3 tests/hook/gpu/torch_nccl_smoke.py --build "$BUILD" --stand-in --no-hook || rc=1
python3 tests/hook/gpu/torch_nccl_smoke.py --build "$BUILD" --stand-in --agent || rc=1
exit $rc
