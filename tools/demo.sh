#!/usr/bin/env bash
# make demo: the main job end to end, with no hardware.
#
# A simulated training cluster with one hidden failure -> per-NIC TX events
# -> the NIC agent firmware core (the same C that runs on the BlueField-3
# DPA; here on x86, and its image self-tested on an emulated RISC-V core)
# -> pulse-host-agent per host (mailbox polls, interception records,
# operator segmentation) -> pulse-analyzer (which machine, and why).
# The failure is revealed only at the end, from the simulator's truth.json,
# which no Pulse component reads.
#
# Usage: tools/demo.sh [SCENARIO.json]
# The default, tools/demo-scenario.json, is a GPT job (8 hosts x 2 GPUs,
# PP 2 x DP 4) with background traffic on one GPU's network path; its name
# says nothing, so the reveal stays a reveal.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-tools/demo-scenario.json}
out=build/demo
bin=build/bin
[ -f "$scenario" ] || { echo "demo: no scenario file $scenario" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"

step() { printf '\n== %s\n\n' "$*"; }

step "1/4  NIC agent firmware image on an emulated RISC-V core (qemu: there is no BlueField here)"
if ! tools/flash-firmware.sh >"$out/firmware.log" 2>&1; then
	cat "$out/firmware.log"
	echo "demo: the firmware self-test failed" >&2
	exit 1
fi
grep -E "PASS|FAIL|no BlueField|qemu" "$out/firmware.log" | tail -n 3 | sed 's/^/  /'

step "2/4  Simulated cluster: ./sim/run_cluster $scenario --out $out/run"
# run_cluster's summary names the failure type: keep that for the end.
./sim/run_cluster "$scenario" --out "$out/run" | sed -e 's/, failure [^)]*)/)/' -e 's/^/  /'
echo
echo "  One failure is injected somewhere. Pulse sees only what real hosts would see:"
echo "  per-NIC TX events ($out/run/hosts/*/*.evs) and the intercepted NCCL/verbs calls"
echo "  (hook-*.rec). The answer is in $out/run/truth.json, which no Pulse component reads."

step "3/4  pulse-host-agent --replay, one per host: NIC events through the firmware core (x86), mailbox polls, operator segmentation"
"$bin/pulse-analyzer" --replay "$out/run" --json --quiet >"$out/analyzer.json" 2>"$out/agents.log" || {
	cat "$out/agents.log" >&2
	echo "demo: pulse-analyzer failed" >&2
	exit 1
}
for f in "$out"/run/agent/*.jsonl; do
	printf '  %-10s %6d operator records\n' "$(basename "$f" .jsonl)" "$(grep -c '"type":"op"' "$f")"
done

step "4/4  pulse-analyzer: Pulse's diagnosis, and what an operator-level tool (OP-level baseline) concludes from the same run"
"$bin/pulse-analyzer" --replay "$out/run" --quiet --timeline "$out/timeline.json" | sed 's/^/  /'

# The reveal: one-line JSON written by run_cluster (sim/README.md, truth.json).
failure=$(grep -o '"failure":{[^}]*}' "$out/run/truth.json" || true)
field() { printf '%s' "$failure" | grep -o "\"$1\":[^,}]*" | head -n 1 | cut -d: -f2 | tr -d '"'; }
echo
echo "== What was actually injected ($out/run/truth.json)"
echo
if [ -z "$failure" ] || [ "$failure" = '"failure":null' ]; then
	echo "  nothing: this run has no failure, so a right answer is \"no anomaly localized\""
	echo
	echo "  Agents' output: $out/run/agent/<host>.jsonl; the analyzer's report as JSON: $out/analyzer.json"
	exit 0
fi
echo "  $(field type) on $(field host) GPU $(field gpu): $(field class) $(field mode), severity $(field severity), from iteration $(field start_iteration)"

cp "$out/analyzer.json" "$out/run/analyzer.json"
# pulse-eval-score (make eval's scorer) rates each localizer's first verdict
# against the truth: its Table 3 row has one symbol per localizer.
# (awk reads to the end: an early exit would kill the scorer with SIGPIPE,
# which pipefail turns into the demo's failure)
row=$("$bin/pulse-eval-score" "$out/run" 2>/dev/null |
	awk '/^Case/ { on = 1; next } on && !done && / 1 +[^(]/ { print; getline; print; done = 1 }')
say() {
	case "$1" in
	●) echo "named the faulty machine, with the right kind of problem" ;;
	○) echo "named only a group of machines that contains the faulty one" ;;
	◐) echo "took a computation problem for a communication one" ;;
	*) echo "wrong machine or wrong kind of problem (or nothing)" ;;
	esac
}
pulse_sym=$(printf '%s\n' "$row" | sed -n 1p | grep -o '[●○◐✗]' | head -n 1)
oplevel_sym=$(printf '%s\n' "$row" | sed -n 2p | grep -o '[●○◐✗]' | head -n 1)
echo
printf '  Pulse              %s %s\n' "${pulse_sym:-?}" "$(say "$pulse_sym")"
printf '  OP-level baseline  %s %s\n' "${oplevel_sym:-?}" "$(say "$oplevel_sym")"
echo
echo "  Agents' output: $out/run/agent/<host>.jsonl; the analyzer's report as JSON: $out/analyzer.json"
echo "  The whole evaluation (77 scenarios, the paper's Table 3): make eval"
