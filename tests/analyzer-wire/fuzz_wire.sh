#!/bin/sh
# The agent <-> analyzer wire decoder's libFuzzer target
# (tests/fuzz/fuzz_analyzer_wire.c), seeded from tests/fuzz/corpus/analyzer_wire; see
# tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_analyzer_wire 20 -max_len=65536 -- tests/fuzz/corpus/analyzer_wire/*
