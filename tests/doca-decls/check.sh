#!/usr/bin/env bash
# Compile check of Pulse's DOCA glue without the DOCA SDK.
#
# firmware/platform/doca_dpa/pulse_dpa.c and mailbox/transport_doca.c are
# built for real only when the NVIDIA DOCA SDK is installed (firmware/doca.mk).
# This script compiles them with -fsyntax-only against tests/doca-decls/, the
# declaration-only stand-ins of the documented DOCA headers (a test aid, not
# an SDK: see README.md there), so a type error in the glue fails `make test`
# on any machine. It also:
#   - compiles the DPA glue for RISC-V (the DPA is a 64-bit RISC-V) as
#     freestanding code that may include only compiler-provided headers;
#   - compiles every file under negative/, each of which MUST fail: they
#     prove the stand-ins pin down the documented signatures (a vacuous
#     header would let them compile);
#   - when the real SDK is installed, compiles the host transport against
#     the real headers too (that result is the one that counts).
# Exit 0: all checks passed. Exit 1: at least one failed.
set -u
cd "$(dirname "$0")/../.." || exit 1

CC=${CC:-cc}
DECLS=tests/doca-decls
STRICT=(-std=c11 -Wall -Wextra -Werror -Wpedantic -fsyntax-only)
failed=0 passed=0

ok() { passed=$((passed + 1)); echo "ok    $*"; }
bad() { failed=$((failed + 1)); echo "FAIL  $*"; }

must_compile() {
	local what=$1; shift
	local out
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		bad "$what"
		echo "      \$ $*"
		printf '%s\n' "$out" | sed 's/^/      | /' | head -n 30
	fi
}

must_fail() {
	local what=$1; shift
	if "$@" >/dev/null 2>&1; then
		bad "$what (compiled, but must be rejected)"
		echo "      \$ $*"
	else
		ok "$what (rejected as it must be)"
	fi
}

DPA=firmware/platform/doca_dpa/pulse_dpa.c
HOST=mailbox/transport_doca.c

# 1. The DPA glue, both modes, with the host compilers we have.
for cc in "$CC" clang; do
	command -v "$cc" >/dev/null 2>&1 || continue
	for mode in 0 1; do
		must_compile "$cc: $DPA (DELEGATE_CC=$mode)" \
			"$cc" "${STRICT[@]}" -ffreestanding -I"$DECLS" -Iinclude \
			-DPULSE_DPA_DELEGATE_CC=$mode -DPULSE_DPA_DEBUG_PRINT=$mode "$DPA"
	done
done

# 2. The DPA glue as RISC-V freestanding code: only the compiler's own
#    headers (stdint.h, stddef.h, stdatomic.h) on the include path, no libc.
if command -v riscv64-unknown-elf-gcc >/dev/null 2>&1; then
	rvinc=$(riscv64-unknown-elf-gcc -print-file-name=include)
	must_compile "riscv64: $DPA freestanding, no libc headers" \
		riscv64-unknown-elf-gcc "${STRICT[@]}" -march=rv64imac -mabi=lp64 -ffreestanding \
		-nostdinc -isystem "$rvinc" -I"$DECLS" -Iinclude "$DPA"
else
	echo "note  riscv64-unknown-elf-gcc not installed: RISC-V freestanding check skipped"
fi

# 3. The host transport (and its no-SDK twin, which needs no DOCA headers).
for cc in "$CC" clang; do
	command -v "$cc" >/dev/null 2>&1 || continue
	must_compile "$cc: $HOST" "$cc" "${STRICT[@]}" -I"$DECLS" -Iinclude "$HOST"
	must_compile "$cc: mailbox/transport_doca_none.c" \
		"$cc" "${STRICT[@]}" -Iinclude mailbox/transport_doca_none.c
done

# 4. Negative cases: the stand-ins must reject these.
for f in "$DECLS"/negative/*.c; do
	must_fail "$f" "$CC" "${STRICT[@]}" -I"$DECLS" -Iinclude "$f"
done

# 5. The real SDK, when present.
if pkg-config --exists doca-pcc 2>/dev/null; then
	# shellcheck disable=SC2046
	must_compile "real DOCA headers: $HOST" "$CC" "${STRICT[@]}" \
		$(pkg-config --cflags doca-pcc doca-common) -Iinclude "$HOST"
else
	echo "note  DOCA SDK not installed (pkg-config doca-pcc): checked against the stand-ins only"
fi

echo "doca glue compile check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
