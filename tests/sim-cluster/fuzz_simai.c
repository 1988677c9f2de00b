/* libFuzzer target: the SimAI/AICB workload reader (sim/cluster/simai_parse.c).
 * Any input must give 0 and a workload whose every field is in range, or -1
 * and a message naming its line ("line N: ...") or the whole file; never a
 * crash, a leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/cluster/simai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct simai_workload w;
	char err[512];
	err[0] = 0;
	int rc = simai_parse((const char *)data, size, &w, err, sizeof err);
	if (rc == 0) {
		if (w.nlayers < 1 || !w.layers || w.tp < 1 || w.pp < 1 || w.ep < 1 || w.all_gpus < 1)
			abort();
		for (int i = 0; i < w.nlayers; i++)
			for (int p = 0; p < SP_COUNT; p++)
				if (w.layers[i].comm[p].op > SA_ALLTOALL ||
				    w.layers[i].comm[p].group >= SG_COUNT ||
				    (w.layers[i].comm[p].op != SA_NONE) != (w.layers[i].comm[p].group != SG_NONE))
					abort();
		char e2[256];
		(void)simai_check_gpus(&w, w.all_gpus, e2, sizeof e2);
		simai_free(&w);
	} else if (rc != -1 || !err[0] || !memchr(err, 0, sizeof err) || w.layers) {
		abort();
	}
	return 0;
}
