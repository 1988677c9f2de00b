#!/bin/sh
# The SERIES_REQ/SERIES decoders' libFuzzer target (tests/fuzz/fuzz_qp_series.c), seeded from
# tests/fuzz/corpus/qp_series (an agent's answer on a simulator run); see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_qp_series 15 -max_len=65536 -- tests/fuzz/corpus/qp_series/*
