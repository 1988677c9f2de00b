#!/usr/bin/env bash
# Prints the epoch-length ablation table from the runs under DIR (run-eval.sh).
# Usage: ablation.sh DIR SCENARIO-NAME
set -u
dir=$1 name=$2
runs=()
for ep in 32 64 1000; do
	[ -d "$dir/$name-epoch${ep}us" ] && runs+=("$dir/$name-epoch${ep}us")
done
${SCORE:-build/bin/pulse-eval-score} --ablation "${runs[@]}"
echo "(ratio: the culprit's value over the median; for actual_rate_gbps, the culprit's transfers"
echo " while active against the median transfer; as epochs grow, the normal ranks' gaps fold into"
echo " their actual time, their rates drop toward the culprit's and the ratio moves toward 1:"
echo " at 1 ms the verdict can name the wrong machine, as §7.2.1 predicts)"
