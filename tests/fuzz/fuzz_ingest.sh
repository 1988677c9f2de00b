#!/bin/sh
# The analyzer's input parser's libFuzzer target (tests/fuzz/fuzz_analyzer_ingest.c),
# seeded from tests/fuzz/corpus/analyzer_ingest (lines of a real agent replay); see
# tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_analyzer_ingest 15 -timeout=10 -rss_limit_mb=2048 -max_len=65536 -- tests/fuzz/corpus/analyzer_ingest/*
