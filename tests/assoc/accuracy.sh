#!/usr/bin/env bash
# End-to-end accuracy of the flow-operator association (issue #7):
# sim/run_cluster no-failure GPT (ring, tree, ZeRO) and MoE runs at 32 us
# epochs, and standalone collectives on rings/trees that mix local and remote
# ranks -> pulse-host-agent --replay DIR (every host) -> every "op" record
# compared with DIR/truth-ops.jsonl by build/tests/assoc_accuracy:
#   every operator of every rank segmented (groups: one record per group),
#   start and end within one epoch + delta (2 ms) of the simulator's first
#   and last byte, the inferred algorithm right for ring and for tree, the
#   parallelism labels right (dp/tp/pp/ep, none for small collectives).
# Scenarios: tests/assoc/acc-*.json (acc-simai-*: real AICB workload files
# from ../shared/workloads/simai, GPT-13B at 128 and 512 GPUs and GPT-7B at
# 64: the parallelism labels of every communicator, sim/README.md) and the no-failure scenarios of
# tests/scenarios/ named *-small.json or *baseline*.json (if any).
# Exit 77 (skip) only when the programs are not built.
set -u
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
sim=$build/bin/pulse-run-cluster
agent=$build/bin/pulse-host-agent
cmp=$build/tests/assoc_accuracy
for p in "$sim" "$agent" "$cmp"; do
	if [ ! -x "$p" ]; then
		echo "accuracy.sh: $p is not built (make $p); skipping"
		exit 77
	fi
done
if ! "$agent" --help 2>&1 | grep -q -- '--replay'; then
	echo "accuracy.sh: $agent has no --replay mode; skipping"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen=(tests/assoc/acc-*.json)
for f in tests/scenarios/*-small.json tests/scenarios/*baseline*.json; do
	[ -f "$f" ] || continue
	grep -Eq '"failure" *: *\{' "$f" && continue
	grep -Eq '"workload" *: *"(gpt|moe|standalone)"' "$f" || continue
	scen+=("$f")
done
rc=0
for s in "${scen[@]}"; do
	name=$(basename "$s" .json)
	# SimAI workloads are read in place from ../shared (never copied here)
	if grep -q '"workload" *: *"simai"' "$s" && [ ! -d ../shared/workloads/simai ]; then
		echo "skip $name: ../shared/workloads/simai is not there"; continue
	fi
	dir=$tmp/$name
	if ! "$sim" "$s" --out "$dir" >"$tmp/$name.sim.log" 2>&1; then
		echo "FAIL $name: run_cluster failed:"; tail -5 "$tmp/$name.sim.log"; rc=1; continue
	fi
	epoch=$(sed -n 's/.*"epoch_ns":\([0-9]*\).*/\1/p' "$dir/cluster.json" | head -1)
	if [ "$epoch" != 32000 ]; then
		echo "FAIL $name: epoch is ${epoch:-?} ns, not 32 us"; rc=1; continue
	fi
	if ! "$agent" --replay "$dir" --out "$dir/agent.jsonl" >"$tmp/$name.agent.log" 2>&1; then
		echo "FAIL $name: pulse-host-agent --replay failed:"; tail -5 "$tmp/$name.agent.log"; rc=1; continue
	fi
	if out=$("$cmp" "$dir/truth-ops.jsonl" "$dir/agent.jsonl" --epoch-ns "$epoch" --delta-ns 2000000); then
		echo "ok   $name: ${out##*assoc_accuracy: }"
	else
		echo "FAIL $name:"; echo "$out" | tail -30; rc=1
	fi
done
exit $rc
