#!/bin/sh
# The data-time watermark's libFuzzer target (tests/fuzz/fuzz_watermark.c), seeded from
# tests/fuzz/corpus/analyzer_ingest (lines of a real agent replay); see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_watermark 10 -timeout=10 -rss_limit_mb=2048 -max_len=65536 -- tests/fuzz/corpus/analyzer_ingest/*
