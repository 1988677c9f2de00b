/* pulse-fw-replay: the x86 build of the firmware replay driver and self-test.
 * The firmware core runs in a static region, as on the NIC: no malloc. */
#include <stdio.h>
#include <string.h>

#include "replay.h"
#include "selftest.h"

/* Big enough for any limits the replay's options allow with the default
 * pool; only the pages the core touches are ever backed by memory. */
#define HOST_FW_MEM (512u << 20)
static unsigned char fw_mem[HOST_FW_MEM] __attribute__((aligned(64)));

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		pulse_replay_usage(argv[0]);
		printf("       %s --selftest\n"
		       "Runs the built-in self-test through the mailbox; exit 0 when it passes.\n",
		       argv[0]);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--selftest"))
		return pulse_selftest_run(fw_mem, sizeof fw_mem, PULSE_PLATFORM_X86_SIM) ? 1 : 0;
	struct pulse_replay_opts o;
	if (pulse_replay_parse(argc - 1, argv + 1, PULSE_PLATFORM_X86_SIM, &o)) {
		fprintf(stderr, "(%s --help for usage)\n", argv[0]);
		return 2;
	}
	return pulse_replay_run(&o, fw_mem, sizeof fw_mem);
}
