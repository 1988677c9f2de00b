/* The bare-metal rv64imac image of the Pulse NIC agent for qemu.
 *
 * Parameters come through semihosting (picolibc's crt0-semihost turns the
 * qemu option -semihosting-config arg=... into argv; argv[0] is a placeholder):
 *   (no mode) | selftest       built-in self-test through the mailbox
 *   replay IN OUT [options]    the replay driver (firmware/replay/replay.h)
 *   icount [OUT]               instruction counts per TX event (needs -icount)
 * Files are host files, opened by qemu in its working directory. The exit
 * status goes back to qemu's through the virt test device.
 * firmware/platform/emu_rv64/run-qemu.sh wraps the qemu command line. */
#include <stdio.h>
#include <string.h>

#include "../../replay/replay.h"
#include "../../replay/selftest.h"
#include "rv64.h"

/* Linker symbols (firmware/emu_rv64.mk): the malloc heap ends at __heap_end;
 * the stack occupies the last __stack_size bytes below __stack. */
extern char __heap_end[], __stack[], __stack_size[];

void *rv64_fw_memory(size_t *size)
{
	uintptr_t a = ((uintptr_t)__heap_end + 63u) & ~(uintptr_t)63u;
	uintptr_t end = (uintptr_t)__stack - (uintptr_t)__stack_size;
	*size = end > a ? (size_t)(end - a) : 0;
	return (void *)a;
}

_Noreturn void rv64_exit(int code)
{
	fflush(stdout);
	fflush(stderr);
	volatile uint32_t *test_dev = (volatile uint32_t *)0x100000u;
	*test_dev = code == 0 ? 0x5555u : ((uint32_t)(code & 0xFFFF) << 16) | 0x3333u;
	for (;;)
		__asm__ volatile("wfi");
}

static void usage(void)
{
	printf("pulse-fw.elf (rv64imac, qemu virt, semihosting)\n"
	       "modes: selftest | replay IN OUT [options] | icount [OUT] | help\n");
	pulse_replay_usage("replay");
}

int main(int argc, char **argv)
{
	size_t size;
	void *mem = rv64_fw_memory(&size);
	const char *mode = argc > 1 ? argv[1] : "selftest";
	int rc;

	if (!strcmp(mode, "selftest")) {
		rc = pulse_selftest_run(mem, size, PULSE_PLATFORM_RV64_EMU) ? 1 : 0;
	} else if (!strcmp(mode, "replay")) {
		struct pulse_replay_opts o;
		if (pulse_replay_parse(argc - 2, argv + 2, PULSE_PLATFORM_RV64_EMU, &o))
			rc = 2;
		else
			rc = pulse_replay_run(&o, mem, size);
	} else if (!strcmp(mode, "icount")) {
		rc = rv64_icount_main(argc - 2, argv + 2, mem, size);
	} else if (!strcmp(mode, "help") || !strcmp(mode, "--help")) {
		usage();
		rc = 0;
	} else {
		fprintf(stderr, "pulse-fw.elf: unknown mode '%s'\n", mode);
		usage();
		rc = 2;
	}
	rv64_exit(rc);
}
