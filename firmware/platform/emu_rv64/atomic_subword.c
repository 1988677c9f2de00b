/* Sub-word atomic compare-and-swap for the rv64imac image.
 *
 * The core's QPN table holds _Atomic uint16_t entries. RISC-V "A" only has
 * 32/64-bit LR/SC, and gcc 12 (Debian's riscv64-unknown-elf) turns a 16-bit
 * compare-exchange into a call to libatomic's __atomic_compare_exchange_2,
 * but that toolchain ships no libatomic. This is that routine, done the way
 * libatomic does it: LR/SC on the aligned 32-bit word holding the halfword,
 * changing only the halfword's bits. The acquire+release LR/SC pair gives
 * sequentially consistent ordering whatever the requested memory order. */
#include <stdbool.h>
#include <stdint.h>

/* The libcall ABI (libatomic's): no `weak` argument, unlike the builtin whose
 * name it shares, hence the assembler-level name. */
bool pulse_rv64_cas16(volatile void *ptr, void *expected, uint16_t desired, int success_order,
		      int failure_order) __asm__("__atomic_compare_exchange_2");

bool pulse_rv64_cas16(volatile void *ptr, void *expected, uint16_t desired, int success_order,
		      int failure_order)
{
	(void)success_order;
	(void)failure_order;
	uintptr_t addr = (uintptr_t)ptr;
	volatile uint32_t *word = (volatile uint32_t *)(addr & ~(uintptr_t)3);
	unsigned shift = (unsigned)(addr & 2u) * 8u; /* little-endian, halfword aligned */
	uint16_t want = *(uint16_t *)expected;
	/* 64-bit operands, zero-extended: lr.w sign-extends, the mask drops that */
	uint64_t mask = (uint64_t)0xFFFFu << shift;
	uint64_t exp = (uint64_t)want << shift;
	uint64_t des = (uint64_t)desired << shift;
	uint64_t old, tmp;
	__asm__ volatile("1:	lr.w.aqrl %0, (%2)\n"
			 "	and %1, %0, %3\n"
			 "	bne %1, %4, 2f\n"
			 "	and %1, %0, %5\n"
			 "	or %1, %1, %6\n"
			 "	sc.w.rl %1, %1, (%2)\n"
			 "	bnez %1, 1b\n"
			 "2:\n"
			 : "=&r"(old), "=&r"(tmp)
			 : "r"(word), "r"(mask), "r"(exp), "r"(~mask), "r"(des)
			 : "memory");
	uint16_t cur = (uint16_t)((old & mask) >> shift);
	if (cur == want)
		return true;
	*(uint16_t *)expected = cur;
	return false;
}
