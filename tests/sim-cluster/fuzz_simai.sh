#!/bin/sh
# The SimAI workload reader's libFuzzer target, seeded with the real AICB
# files of ../shared/workloads/simai (read in place, copied to a scratch
# corpus by run-target.sh) and the small damaged files of
# tests/fuzz/corpus/simai/; see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_simai 10 -max_len=8192 -- \
	../shared/workloads/simai/*.txt tests/fuzz/corpus/simai/*
