#!/bin/sh
# The link event and configuration finding decoders' libFuzzer target
# (tests/fuzz/fuzz_host_event.c), seeded from tests/fuzz/corpus/host_event; see
# tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_host_event 10 -max_len=4096 -- tests/fuzz/corpus/host_event/*
