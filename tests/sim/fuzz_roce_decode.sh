#!/bin/sh
# The RoCEv2 decoder's libFuzzer target, seeded from the hand-made frames in
# tests/fuzz/corpus/roce_decode; see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_roce_decode 20 -- tests/fuzz/corpus/roce_decode/*
