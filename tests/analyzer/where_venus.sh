#!/usr/bin/env bash
# make test: where in the iteration (issue 16 part 2, analyzer/critical_path.c).
# The VenusTrace types at four seeds on the GPT 8x2 pipeline (PP 2, DP 4) and
# three on PP 4 (DP 2, TP 2), and one backward slowdown on the critical path
# against the same slowdown absorbed by a heavier last stage
# (tests/analyzer/where/), through run_cluster and the ASan analyzer with
# --where: fails when a run's stage kind, host, micro-batch (where the
# scenario slows one) or critical/absorbed answer is wrong
# (tools/eval/where.sh, tools/eval/where_table.py). Skips (77) while the
# simulator or the analyzer is not built.
set -u
cd "$(dirname "$0")/../.."
an=build/tests/pulse-analyzer-asan
[ -x "$an" ] || an=build/bin/pulse-analyzer
for need in sim/run_cluster build/bin/pulse-host-agent "$an"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
t0=$(date +%s)
tools/eval/where.sh --check build/test-where "$an"
rc=$?
echo "where_venus: $(($(date +%s) - t0)) s"
exit $rc
