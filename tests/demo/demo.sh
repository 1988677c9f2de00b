#!/usr/bin/env bash
# The README's first command, `make demo`, end to end (tools/demo.sh):
# every step must run, and Pulse must name the faulty machine of the bundled
# scenario with the right kind of problem; the run without a failure must
# report nothing.
set -u
cd "$(dirname "$0")/../.."
for b in build/bin/pulse-run-cluster build/bin/pulse-host-agent build/bin/pulse-analyzer \
	build/bin/pulse-eval-score; do
	[ -x "$b" ] || { echo "demo.sh: $b not built; skipped"; exit 77; }
done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
tools/demo.sh >"$log" 2>&1 || { cat "$log"; echo "demo.sh: tools/demo.sh failed"; exit 1; }
for want in "== 1/4" "== 2/4" "== 3/4" "== 4/4" "What was actually injected" \
	"Pulse              ● named the faulty machine"; do
	grep -qF "$want" "$log" || { cat "$log"; echo "demo.sh: missing: $want"; exit 1; }
done
[ -s build/demo/timeline.json ] || { echo "demo.sh: no timeline"; exit 1; }
tools/demo.sh tests/scenarios/gpt-baseline.json >"$log" 2>&1 || { cat "$log"; exit 1; }
[ "$(grep -c "^ *no anomaly localized$" "$log")" -eq 2 ] || { cat "$log"; echo "demo.sh: a run without a failure must report nothing"; exit 1; }
echo "demo.sh: ok"
