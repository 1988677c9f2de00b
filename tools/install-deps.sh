#!/bin/sh
# Installs the Debian packages Pulse needs to build, test and benchmark.
# Uses sudo when not run as root. Safe to run again.
set -eu
PACKAGES="
  make gcc libc6-dev pkg-config
  libcmocka-dev
  libpcap-dev libcjson-dev libmicrohttpd-dev
  libibverbs-dev libnl-3-dev libnl-route-3-dev iproute2
  clang libclang-rt-14-dev
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
  prometheus curl python3
  libzstd-dev nats-server libnats-dev
  postgresql libpq-dev
"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
missing=""
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages already installed"
	exit 0
fi
echo "install-deps: installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
