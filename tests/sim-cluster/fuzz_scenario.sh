#!/bin/sh
# run_cluster's scenario parser's libFuzzer target, seeded with the shipped scenarios;
# see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_scenario 10 -max_len=4096 -- tests/scenarios/*.json tests/sim-cluster/*.json
