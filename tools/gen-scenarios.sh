#!/bin/sh
# Generates tests/scenarios/*.json: the paper's Table 4 matrix (every failure
# type at every severity, on the workloads Table 4 lists), memory
# misalignment and MoE expert imbalance (Table 3), a no-failure baseline per
# workload, and the peer systems' failure types (CCL-D, VenusTrace, Holmes,
# Vedrfolnir). Also writes tests/scenarios/quick.list: at least one scenario
# per failure type, for `make test`. Deterministic: run it again and nothing
# changes. The schema is in sim/README.md ("run_cluster").
#
# Usage: tools/gen-scenarios.sh [OUTDIR]   (default tests/scenarios)
#        tools/gen-scenarios.sh --random SEED --count N [OUTDIR] [OPTION...]
# The second form writes a randomized matrix instead (pulse-gen-scenarios,
# tools/gen_random.c; OUTDIR default build/scenarios-random-SEED; OPTIONs:
# --max-gpus G, --max-iterations I, --no-failure-share F).
set -eu
if [ "${1:-}" = --random ]; then
	root=$(cd "$(dirname "$0")/.." && pwd)
	seed=${2:-}
	shift
	[ $# -gt 0 ] && shift
	args='' rout=''
	while [ $# -gt 0 ]; do
		case $1 in
		--count|--max-gpus|--max-iterations|--no-failure-share|--draws)
			[ $# -ge 2 ] || { echo "gen-scenarios: $1 needs a value" >&2; exit 2; }
			args="$args $1 $2"; shift 2 ;;
		-*) echo "gen-scenarios: unknown option $1 (usage: tools/gen-scenarios.sh --random SEED --count N [OUTDIR])" >&2; exit 2 ;;
		*) [ -z "$rout" ] || { echo "gen-scenarios: one OUTDIR only" >&2; exit 2; }
			rout=$1; shift ;;
		esac
	done
	# built when missing or out of date, as sim/run_cluster does
	# (PULSE_NO_BUILD=1: use the binary as it is)
	bin=$root/${BUILD:-build}/bin/pulse-gen-scenarios
	if [ "${PULSE_NO_BUILD:-0}" != 1 ]; then
		make -C "$root" -s --no-print-directory BUILD="${BUILD:-build}" \
			"${BUILD:-build}/bin/pulse-gen-scenarios" >&2 ||
			{ echo "gen-scenarios: building $bin failed" >&2; exit 1; }
	fi
	# word splitting of $args is intended: option names and plain values
	# shellcheck disable=SC2086
	exec "$bin" --random "$seed" $args --out "${rout:-build/scenarios-random-$seed}"
fi
out=${1:-tests/scenarios}
mkdir -p "$out"
rm -f "$out"/*.json "$out/quick.list"
n=0
seen=" "

# cluster shapes (sim/README.md explains the scaling)
GPT='"cluster":{"hosts":8,"gpus_per_host":2},"gpt":{"pp":2,"dp":4,"microbatches":4}'
MOE='"cluster":{"hosts":4,"gpus_per_host":2},"moe":{"ep":4,"layers":2}'
ITERS=6
START=3

# emit NAME WORKLOAD BODY TYPE SEVERITY HOST GPU [quick]
# One seed per workload: a failure scenario is its baseline until the
# failure starts (tests/sim-cluster checks that nothing else differs).
emit() {
	name=$1 wl=$2 body=$3 type=$4 sev=$5 host=$6 gpu=$7
	n=$((n + 1))
	case $wl in gpt) seed=101 ;; moe) seed=202 ;; *) seed=303 ;; esac
	quick=false
	case "$seen" in *" $type "*) ;; *) quick=true; seen="$seen$type " ;; esac
	if [ "$type" = none ] || [ "${8:-}" = quick ]; then
		quick=true
	fi
	if [ "$type" = none ]; then
		fail=null
	else
		extra=
		[ "${9:-}" = ingress ] && extra=',"direction":"ingress"'
		fail="{\"type\":\"$type\",\"host\":$host,\"gpu\":$gpu,\"severity\":$sev,\"start_iteration\":$START$extra}"
	fi
	printf '{"name":"%s","seed":%d,"workload":"%s","quick":%s,"iterations":%d,\n %s,\n "failure":%s}\n' \
		"$name" "$seed" "$wl" "$quick" "$ITERS" "$body" "$fail" >"$out/$name.json"
	if [ "$quick" = true ]; then
		echo "$name.json" >>"$out/quick.list"
	fi
}

# the faulty machine varies with the scenario so that no host is special
ghost() { echo $(( ($1 % 7) + 1 )); }
mhost() { echo $(( ($1 % 3) + 1 )); }
shost() { echo $(( ($1 % 3) + 1 )); }

SA_NE='"standalone":{"pattern":"neighbor_exchange","msg_bytes":67108864}'
SA_A1='"standalone":{"pattern":"all_to_one","msg_bytes":67108864}'
SA_1A='"standalone":{"pattern":"one_to_all","msg_bytes":67108864}'

# baselines
emit gpt-baseline gpt "$GPT" none 0 0 0
emit moe-baseline moe "$MOE" none 0 0 0
emit standalone-neighbor-baseline standalone "$SA_NE" none 0 0 0
emit standalone-all-to-one-baseline standalone "$SA_A1" none 0 0 0
emit standalone-one-to-all-baseline standalone "$SA_1A" none 0 0 0

# Table 4: computation fail-stop
i=0
for t in gpu_execution_error cuda_execution_error; do
	i=$((i + 1))
	emit "gpt-$t" gpt "$GPT" "$t" 0 "$(ghost $i)" 1
	emit "moe-$t" moe "$MOE" "$t" 0 "$(mhost $i)" 1 quick
done
# computation fail-slow: GPU power limit in W (of 700 W)
for w in 350 300 250 200; do
	i=$((i + 1))
	emit "gpt-gpu_throttling-${w}w" gpt "$GPT" gpu_throttling "$w" "$(ghost $i)" 1
	emit "moe-gpu_throttling-${w}w" moe "$MOE" gpu_throttling "$w" "$(mhost $i)" 1
done
i=$((i + 1))
emit gpt-cpu_throttling gpt "$GPT" cpu_throttling 1 "$(ghost $i)" 1
emit moe-cpu_throttling moe "$MOE" cpu_throttling 1 "$(mhost $i)" 1
for p in 90 100; do
	i=$((i + 1))
	sev=$(echo "$p" | sed 's/^100$/1.0/; s/^\([0-9]\)\([0-9]\)$/0.\1\2/')
	emit "gpt-cpu_contention-$p" gpt "$GPT" cpu_contention "$sev" "$(ghost $i)" 1
	emit "moe-cpu_contention-$p" moe "$MOE" cpu_contention "$sev" "$(mhost $i)" 1
done
# communication fail-stop
i=$((i + 1))
emit gpt-nic_down gpt "$GPT" nic_down 0 "$(ghost $i)" 1
emit moe-nic_down moe "$MOE" nic_down 0 "$(mhost $i)" 1
emit standalone-nic_down standalone "$SA_NE" nic_down 0 "$(shost $i)" 0 quick
# communication fail-slow, 4 severities each, GPT, MoE and a standalone
# pattern (D.10: PCIe contention / neighbor exchange, D.11: PCIe downgrade /
# all-to-one, D.12: congestion / one-to-all)
for p in 50 40 30 20; do
	i=$((i + 1))
	sev=0.$p
	emit "gpt-pcie_downgrade-$p" gpt "$GPT" pcie_downgrade "$sev" "$(ghost $i)" 1
	emit "moe-pcie_downgrade-$p" moe "$MOE" pcie_downgrade "$sev" "$(mhost $i)" 1
	q=; [ "$p" = 30 ] && q=quick
	emit "standalone-pcie_downgrade-$p" standalone "$SA_A1" pcie_downgrade "$sev" "$(shost $i)" 0 $q
done
for p in 50 60 70 80; do
	i=$((i + 1))
	sev=0.$p
	emit "gpt-pcie_contention-$p" gpt "$GPT" pcie_contention "$sev" "$(ghost $i)" 1
	q=; [ "$p" = 70 ] && q=quick
	emit "moe-pcie_contention-$p" moe "$MOE" pcie_contention "$sev" "$(mhost $i)" 1 $q
	emit "standalone-pcie_contention-$p" standalone "$SA_NE" pcie_contention "$sev" "$(shost $i)" 0
done
for p in 50 60 70 80; do
	i=$((i + 1))
	sev=0.$p
	emit "gpt-network_congestion-$p" gpt "$GPT" network_congestion "$sev" "$(ghost $i)" 1
	emit "moe-network_congestion-$p" moe "$MOE" network_congestion "$sev" "$(mhost $i)" 1
	# one-to-all (D.12): the path from the root into the faulty host
	emit "standalone-network_congestion-$p" standalone "$SA_1A" network_congestion "$sev" "$(shost $i)" 0 "" ingress
done
i=$((i + 1))
emit gpt-nic_gpu_cross_numa gpt "$GPT" nic_gpu_cross_numa 0.3 "$(ghost $i)" 1

# Table 3 cases outside Table 4
i=$((i + 1))
emit moe-moe_expert_imbalance moe "$MOE" moe_expert_imbalance 1.0 "$(mhost $i)" 1
emit gpt-memory_misalignment gpt "$GPT" memory_misalignment 0.6 "$(ghost $i)" 1
emit moe-memory_misalignment moe "$MOE" memory_misalignment 0.6 "$(mhost $i)" 1
emit standalone-memory_misalignment standalone "$SA_NE" memory_misalignment 0.6 "$(shost $i)" 0

# peer systems' failure types
i=$((i + 1))
emit gpt-ccld_not_entered gpt "$GPT" ccld_not_entered 0 "$(ghost $i)" 1
emit gpt-ccld_inconsistent gpt "$GPT" ccld_inconsistent 0 "$(ghost $((i + 1)))" 1
emit gpt-venus_slow_forward gpt "$GPT" venus_slow_forward 1.5 "$(ghost $((i + 2)))" 1
emit gpt-venus_slow_backward gpt "$GPT" venus_slow_backward 1.5 "$(ghost $((i + 3)))" 1
emit gpt-venus_slow_transmission gpt "$GPT" venus_slow_transmission 0.5 "$(ghost $((i + 4)))" 1
emit gpt-holmes_spike gpt "$GPT" holmes_spike 0.1 "$(ghost $((i + 5)))" 1
emit gpt-holmes_fluctuation gpt "$GPT" holmes_fluctuation 0.4 "$(ghost $((i + 6)))" 1
emit gpt-holmes_persistent gpt "$GPT" holmes_persistent 0.7 "$(ghost $((i + 7)))" 1
emit gpt-vedrfolnir_background gpt "$GPT" vedrfolnir_background 0.6 "$(ghost $((i + 8)))" 1
emit standalone-vedrfolnir_incast standalone "$SA_A1" vedrfolnir_incast 0.5 0 0

echo "gen-scenarios: $n scenarios in $out ($(wc -l <"$out/quick.list") quick)"
