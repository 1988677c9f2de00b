#!/bin/sh
# The interception mapping decoder's libFuzzer target (tests/fuzz/fuzz_hook_map.c),
# seeded from tests/fuzz/corpus/hook_map; see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_hook_map 10 -max_len=65536 -- tests/fuzz/corpus/hook_map/*
