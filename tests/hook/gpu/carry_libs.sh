#!/bin/sh
# Copies the shared libraries that pulse-host-agent needs, as `ldd` lists them
# on this (build) machine, into DIR, so that the agent can run on a machine
# that has none of Pulse's build dependencies (libcjson, libmicrohttpd,
# libnats, libzstd, libnl, libibverbs, gnutls, ... and what they need in
# turn): put DIR on the agent's LD_LIBRARY_PATH, and only the agent's
# (tests/hook/gpu/device_smoke.sh does, through torch_nccl_smoke.py
# --agent-lib-path, when $BUILD/device-libs exists).
#
# glibc's own libraries are left out (libc, libm, libpthread, libdl, librt,
# libresolv, libanl, libutil, libmvec, ld-linux, linux-vdso): they come from
# the target, whose glibc must be as new as this machine's, and glibc's parts
# must all come from one build.
#
#   make build/bin/pulse-host-agent
#   tests/hook/gpu/carry_libs.sh build/device-libs [PROGRAM]   # default $BUILD/bin/pulse-host-agent
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 DIR [PROGRAM]" >&2; exit 2; }
dir=$1
prog=${2:-${BUILD:-build}/bin/pulse-host-agent}
[ -x "$prog" ] || { echo "carry_libs.sh: $prog not built" >&2; exit 2; }
command -v ldd >/dev/null || { echo "carry_libs.sh: ldd needed" >&2; exit 2; }
list=$(ldd "$prog") || { echo "carry_libs.sh: ldd $prog failed" >&2; exit 1; }
if echo "$list" | grep -q "not found"; then
	echo "carry_libs.sh: $prog has libraries this machine lacks:" >&2
	echo "$list" | grep "not found" >&2
	exit 1
fi
mkdir -p "$dir"
n=0
# "	libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"; linux-vdso and
# ld-linux have no "=> path"
for lib in $(echo "$list" | awk '$2 == "=>" && $3 ~ /^\// { print $1 "=" $3 }'); do
	name=${lib%%=*} path=${lib#*=}
	case $name in
	libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | \
		libanl.so.* | libutil.so.* | libmvec.so.* | ld-linux*.so.* | linux-vdso.so.*)
		continue ;;
	esac
	cp -L "$path" "$dir/$name"
	n=$((n + 1))
done
echo "carry_libs.sh: $n libraries of $prog in $dir ($(du -sh "$dir" | cut -f1))"
# the check: with DIR first, each library the program loads is one of DIR's or glibc's
LD_LIBRARY_PATH=$(cd "$dir" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$prog" |
	awk -v d="$(cd "$dir" && pwd)/" '$2 == "=>" && index($3, d) != 1 { print "  from the system: " $1 }'
