#!/usr/bin/env bash
# make test: the quick scenarios (tests/scenarios/quick.list, at least one per
# failure type, and any other scenario tools/eval/quick-expect.txt lists) end to end through run_cluster, pulse-host-agent --replay and
# the ASan build of pulse-analyzer. Fails when a scenario's Pulse verdict is
# worse than tools/eval/quick-expect.txt says it is (that file lists what
# truly works; the known failures are printed, not hidden). Skips (77) while
# the simulator or the agent's replay is not there.
set -u
cd "$(dirname "$0")/../.."
list=tests/scenarios/quick.list
expect=tools/eval/quick-expect.txt
an=build/tests/pulse-analyzer-asan
[ -x "$an" ] || an=build/bin/pulse-analyzer
for need in sim/run_cluster build/bin/pulse-host-agent build/bin/pulse-eval-score "$an"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
if [ ! -f "$list" ]; then echo "skip: $list not there yet"; exit 77; fi
if ! build/bin/pulse-host-agent --help 2>&1 | grep -q -- --replay; then
	echo "skip: pulse-host-agent has no --replay yet"; exit 77
fi
out=build/test-quick-eval
rm -rf "$out"
mkdir -p "$out"
t0=$(date +%s)
scen=()
while read -r s _; do
	case "$s" in ''|\#*) continue ;; esac
	[ -f "$s" ] || s="tests/scenarios/$s"
	[ -f "$s" ] || s="$s.json"
	scen+=("$s")
done <"$list"
# scenarios that tools/eval/quick-expect.txt pins beyond quick.list (a case
# that was fixed stays fixed)
if [ -f "$expect" ]; then
	while read -r s _; do
		case "$s" in ''|\#*) continue ;; esac
		f=tests/scenarios/$s.json
		# randomized-matrix runs that broke a rule (not part of make eval's
		# fixed matrix)
		[ -f "$f" ] || f=tests/analyzer/cases/$s.json
		[ -f "$f" ] || continue
		dup=0
		for x in "${scen[@]}"; do [ "$(basename "$x" .json)" = "$s" ] && dup=1; done
		[ $dup = 1 ] || scen+=("$f")
	done <"$expect"
fi
n=${#scen[@]}
i=0
for s in "${scen[@]}"; do
	i=$((i + 1))
	printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$s" "$out" "$i" "$n" "$t0" "$an"
done | xargs -0 -n 6 -P 2 tools/eval/run-one.sh
runs=()
for s in "${scen[@]}"; do runs+=("$out/$(basename "$s" .json)"); done
if [ -f "$expect" ]; then
	build/bin/pulse-eval-score --out "$out/report.json" --expect "$expect" "${runs[@]}"
	rc=$?
	echo
	echo "Known failures (not localized today; see $expect):"
	grep '^# known failure' "$expect" | sed 's/^# /  /'
	echo "quick eval: $n scenarios in $(($(date +%s) - t0)) s"
	exit $rc
else
	echo "no $expect: scoring only"
	build/bin/pulse-eval-score --out "$out/report.json" "${runs[@]}"
fi
