#!/usr/bin/env bash
# Prints the epoch-length ablation table from the runs under DIR (run-eval.sh).
# Usage: ablation.sh DIR SCENARIO-NAME
set -u
dir=$1 name=$2
runs=()
for ep in 32 64 1000; do
	[ -d "$dir/$name-epoch${ep}us" ] && runs+=("$dir/$name-epoch${ep}us")
done
build/bin/pulse-eval-score --ablation "${runs[@]}"
echo "(ratio: the culprit's actual communication time over the group median; as epochs grow,"
echo " the normal ranks' gaps fold into their actual time and the ratio shrinks toward 1)"
