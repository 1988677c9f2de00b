#!/bin/sh
# The bus record message decoder's libFuzzer target (tests/fuzz/fuzz_bus_msg.c),
# seeded from tests/fuzz/corpus/bus_msg; see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_bus_msg 10 -max_len=65536 -- tests/fuzz/corpus/bus_msg/*
