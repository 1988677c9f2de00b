/* The bare-metal rv64imac platform (qemu-system-riscv64 -machine virt). */
#ifndef PULSE_EMU_RV64_H
#define PULSE_EMU_RV64_H

#include <stddef.h>
#include <stdint.h>

/* Retired-instruction counter. Exact only under qemu -icount shift=0.
 * csrrs rd, minstret(0xB02), x0, written as .insn because the rv64imac
 * multilib assembler has no Zicsr; 0xB02 as a signed 12-bit immediate is
 * -1278. */
static inline uint64_t rv64_minstret(void)
{
	uint64_t v;
	__asm__ volatile(".insn i 0x73, 2, %0, x0, -1278" : "=r"(v) : : "memory");
	return v;
}

/* The firmware's memory region: the RAM between the small malloc heap
 * (picolibc stdio) and the stack. Not zeroed by the C runtime; the core
 * initialises what it uses. */
void *rv64_fw_memory(size_t *size);

/* Ends qemu through the virt test device (sifive_test at 0x100000):
 * 0x5555 exits 0, (code << 16) | 0x3333 exits with code. */
_Noreturn void rv64_exit(int code);

/* icount.c: the instruction-count benchmark; returns 0 when it ran. */
int rv64_icount_main(int argc, char **argv, void *mem, size_t size);

#endif
