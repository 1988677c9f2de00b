#!/usr/bin/env bash
# make test: no diagnosis in runs without a failure that once raised false
# alarms (tests/analyzer/noalarm/), end to end through run_cluster,
# pulse-host-agent --replay and the ASan pulse-analyzer:
#   - 20-iteration GPT with PP 4 and 6% compute jitter, MoE with routing
#     skew 0.5: blamed on a machine before fail-slow verdicts needed
#     confirmation;
#   - two PP-4 GPT runs of the randomized matrix (seed 80211 #9 and #58):
#     pipeline drift confirmed as a slow machine while a confirmation could
#     see the evidence's own instance again;
#   - two MoE runs with routing skew 0.43-0.45 and a PP-2 GPT run of the
#     randomized matrix (seed 1234567 #13, #114, #23): a rank's usual
#     lateness in its EP group taken without its spread, and a CPU verdict
#     on wire durations a few hundred µs past their recent maximum;
#   - benign events (issue 19): a MoE job killed and restarted 28 s later
#     (seed 1919 #55: its old groups, unfinished, read as a rank that "has
#     not started" for 29.7 s) and a ring broadcast paused by checkpoints
#     (seed 5150 #69: its receive-only last rank read as a stopped GPU);
#   - a 3-host MoE with routing skew 0.49 (seed 31337 #31) and a neighbor
#     exchange with data-loader hiccups (seed 777001 #93, draws 2): one
#     delayed start from noise, "confirmed" by another on the same rank
#     iterations later, before confirmations judged only the two iterations
#     after the evidence;
#   - a PP-2 x DP-3 GPT (seed 112727 #27): a DP rank's call 0.5 ms later
#     than usual, past the robust spread of its lateness but not past its
#     earlier spikes (the pipeline's flush), named a slow machine;
#   - a DP-7 GPT on 7 hosts x 7 GPUs (seed 5318008 #33): a rank's lateness
#     moved by 0.23 ms for good, significant against its tight spread but
#     below the trigger's floor, named a slow machine;
#   - the paper's 32-GPU Mixtral with routing skew 0.44 (seed 271901 #197):
#     an EP rank's rate averaged over its last ten operators 17% below the
#     members' median, within what routing moves it, named a slow NIC;
#   - a 3-host MoE with routing skew 0.41 (seed 112727 #15): a routed
#     straggler 1.13 ms late, the same rank past the floor again in one of
#     the next two periods' all-to-alls, confirmed and named a slow machine;
#   - a 9-host all-to-one (seed 1128 #110): the transfer-share rule judged
#     transfers against a usual share from three to five instances before
#     the look-back, and named a host whose transfers ran 6% below it;
#   - a 3-host MoE with routing skew 0.36 (seed 1133 #42): an EP rank's
#     rate over its last ten 15-19% below the median, past four standard
#     errors of the per-instance spread, named a slow NIC: ten operators of
#     a few iterations share their routing (averages of ten spread by 7-9%);
#   - the paper's 32-GPU Mixtral with skew 0.32 (seed 1130 #92): the rank
#     of a popular expert, the latest in nearly every instance, 1.08 ms
#     late once and "confirmed" for being the latest again, as it always
#     had been;
#   - a PP-4 x DP-3 GPT on 12 hosts x 3 GPUs (seed 1134 #145): each PP rank
#     numbers its own P2P calls, and a confirmation that placed a record
#     by its instance's first call took a PP rank 724 ms after the others
#     of its number for a straggler (a development version, never landed);
#   - a 4-host all-to-one (seed 1135 #066) where capped transfers are
#     common: a sender's capped share from a trigger's onset on, 11 of 21,
#     against its share before taken as known, 1 of 4, named a slow NIC (a
#     development version, never landed);
#   - the paper's 64-GPU GPT, PP 2 x DP 4 (seed 1136 #087): a DP rank's
#     lateness takes two values, and the eight instances before a split,
#     five of them within 0.05 ms, gave a spread of 0.05 ms; a 0.53 ms rise
#     after it (z 36) named a slow machine until the change had to hold by
#     ranks too (Mann-Whitney).
set -u
cd "$(dirname "$0")/../.."
an=build/tests/pulse-analyzer-asan
[ -x "$an" ] || an=build/bin/pulse-analyzer
for need in sim/run_cluster build/bin/pulse-host-agent build/bin/pulse-eval-score "$an"; do
	if [ ! -x "$need" ]; then echo "skip: $need not built"; exit 77; fi
done
out=build/test-no-false-alarm
rm -rf "$out"
mkdir -p "$out"
exp="$out/expect.txt"
runs=()
for s in tests/analyzer/noalarm/*.json; do
	n=$(basename "$s" .json)
	echo "$n N" >>"$exp"
	tools/eval/run-one.sh "$s" "$out" 1 1 "$(date +%s)" "$an" || { echo "FAIL: $n did not run"; exit 1; }
	runs+=("$out/$n")
done
if ! build/bin/pulse-eval-score --expect "$exp" "${runs[@]}" >"$out/score.txt" 2>&1; then
	grep -E "WORSE|false alarm" "$out/score.txt"
	echo "FAIL: a run without a failure got a diagnosis"
	exit 1
fi
grep -E "^strict" "$out/score.txt"
echo "no_false_alarm: ${#runs[@]} runs without a failure, nothing reported"
