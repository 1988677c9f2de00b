#!/usr/bin/env bash
# make test: issue 16's answers on simulator runs, several seeds per failure
# type (sim/run_cluster -> pulse-host-agent --replay -> pulse-analyzer):
#   - the slow ratio's label (computation / communication / mixed) of the
#     Pulse diagnosis that names the faulty host;
#   - the episode pattern of the three holmes_* types on 60-iteration runs;
#   - a transient fault's episode start and end within one poll period of
#     the truth's.
# tools/eval/answers.py --check judges them (a run whose fault no
# machine-level verdict names is listed, not judged). Skips (77) without the
# simulator or the agent's replay. ANSWERS_SEEDS="a b c" picks the seeds.
set -u
cd "$(dirname "$0")/../.."
an=build/tests/pulse-analyzer-asan
[ -x "$an" ] || an=build/bin/pulse-analyzer
[ -n "${ANSWERS_ANALYZER:-}" ] && an=$ANSWERS_ANALYZER
for need in sim/run_cluster build/bin/pulse-host-agent "$an"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
out=build/test-answers
rm -rf "$out"
mkdir -p "$out/scen" "$out/runs"
seeds=${ANSWERS_SEEDS:-"11 12 13"}
gpt='"cluster":{"hosts":8,"gpus_per_host":2},"gpt":{"pp":2,"dp":4,"microbatches":4}'
# name iterations failure-or-failures (JSON)
cases=(
	"gpu_throttling 12 \"failure\":{\"type\":\"gpu_throttling\",\"host\":6,\"gpu\":1,\"severity\":250,\"start_iteration\":4}"
	"venus_slow_forward 12 \"failure\":{\"type\":\"venus_slow_forward\",\"host\":5,\"gpu\":1,\"severity\":1.5,\"start_iteration\":4}"
	"venus_slow_backward 12 \"failure\":{\"type\":\"venus_slow_backward\",\"host\":1,\"gpu\":0,\"severity\":1.5,\"start_iteration\":4}"

	"pcie_downgrade 12 \"failure\":{\"type\":\"pcie_downgrade\",\"host\":4,\"gpu\":1,\"severity\":0.3,\"start_iteration\":4}"
	"pcie_contention 12 \"failure\":{\"type\":\"pcie_contention\",\"host\":2,\"gpu\":1,\"severity\":0.6,\"start_iteration\":4}"
	"network_congestion 12 \"failure\":{\"type\":\"network_congestion\",\"host\":7,\"gpu\":0,\"severity\":0.6,\"start_iteration\":4}"
	"vedrfolnir_background 12 \"failure\":{\"type\":\"vedrfolnir_background\",\"host\":1,\"gpu\":1,\"severity\":0.6,\"start_iteration\":4}"
	"holmes_spike 60 \"failure\":{\"type\":\"holmes_spike\",\"host\":3,\"gpu\":1,\"severity\":0.1,\"start_iteration\":3}"
	"holmes_fluctuation 60 \"failure\":{\"type\":\"holmes_fluctuation\",\"host\":4,\"gpu\":1,\"severity\":0.4,\"start_iteration\":3}"
	"holmes_persistent 60 \"failure\":{\"type\":\"holmes_persistent\",\"host\":5,\"gpu\":1,\"severity\":0.7,\"start_iteration\":3}"
	"mixed 12 \"failures\":[{\"type\":\"gpu_throttling\",\"host\":6,\"gpu\":0,\"severity\":250,\"start_iteration\":4},{\"type\":\"pcie_downgrade\",\"host\":6,\"gpu\":0,\"severity\":0.5,\"start_iteration\":4}]"
	"vedrfolnir_incast 12 \"failure\":{\"type\":\"vedrfolnir_incast\",\"host\":2,\"gpu\":1,\"severity\":0.5,\"start_iteration\":4}"
	"transient 40 \"failure\":{\"type\":\"pcie_downgrade\",\"host\":2,\"gpu\":1,\"severity\":0.3,\"start_iteration\":10,\"end_iteration\":25}"
)
list=()
for c in "${cases[@]}"; do
	read -r name iters fail <<<"$c"
	for seed in $seeds; do
		f=$out/scen/answers-$name-$seed.json
		printf '{"name":"answers-%s","seed":%s,"workload":"gpt","iterations":%s,%s,%s}\n' \
			"$name" "$seed" "$iters" "$gpt" "$fail" >"$f"
		list+=("$f")
	done
done
# CPU faults at seeds where today's localization names the faulty host
# (most CPU runs it does not, tools/eval/quick-expect.txt; the answer, not
# the localization, is under test here)
fixed=(
	"cpu_throttling-a 3 12 \"failure\":{\"type\":\"cpu_throttling\",\"host\":2,\"gpu\":0,\"start_iteration\":4}"
	"cpu_throttling-b 3 12 \"failure\":{\"type\":\"cpu_throttling\",\"host\":6,\"gpu\":1,\"start_iteration\":4}"
	"cpu_contention-a 4 12 \"failure\":{\"type\":\"cpu_contention\",\"host\":3,\"gpu\":0,\"severity\":1.0,\"start_iteration\":4}"
	"cpu_contention-b 5 12 \"failure\":{\"type\":\"cpu_contention\",\"host\":3,\"gpu\":0,\"severity\":1.0,\"start_iteration\":4}"
)
for c in "${fixed[@]}"; do
	read -r name seed iters fail <<<"$c"
	f=$out/scen/answers-$name-$seed.json
	printf '{"name":"answers-%s","seed":%s,"workload":"gpt","iterations":%s,%s,%s}\n' \
		"$name" "$seed" "$iters" "$gpt" "$fail" >"$f"
	list+=("$f")
done
t0=$(date +%s)
n=${#list[@]}
i=0
for s in "${list[@]}"; do
	i=$((i + 1))
	printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$s" "$out/runs" "$i" "$n" "$t0" "$an"
done | xargs -0 -n 6 -P 2 tools/eval/run-one.sh >"$out/runs.log" 2>&1
runs=()
for s in "${list[@]}"; do runs+=("$out/runs/$(basename "$s" .json)"); done
echo "answers: $n runs in $(($(date +%s) - t0)) s (simulator, agent replay, $(basename "$an"))"
python3 tools/eval/answers.py --check "${runs[@]}"
