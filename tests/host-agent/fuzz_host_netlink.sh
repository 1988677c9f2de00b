#!/bin/sh
# The host agent's netlink and sysfs parsers' libFuzzer target, seeded from
# tests/fuzz/corpus/host_netlink (netlink messages built with libnl from the uapi headers,
# sysfs values); see tests/fuzz/run-target.sh.
exec sh tests/fuzz/run-target.sh fuzz_host_netlink 20 -- tests/fuzz/corpus/host_netlink/*
