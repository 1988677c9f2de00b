#!/bin/sh
# The analyzer's --device-history file parser (tests/fuzz/fuzz_device_history.c), seeded from
# tests/fuzz/corpus/device_history; see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_device_history 10 -timeout=10 -rss_limit_mb=2048 -max_len=4096 -- tests/fuzz/corpus/device_history/*
