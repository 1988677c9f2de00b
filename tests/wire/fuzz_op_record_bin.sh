#!/bin/sh
# The binary operator record decoder's libFuzzer target
# (tests/fuzz/fuzz_op_record_bin.c), seeded from tests/fuzz/corpus/op_record_bin;
# see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_op_record_bin 10 -max_len=16384 -- tests/fuzz/corpus/op_record_bin/*
