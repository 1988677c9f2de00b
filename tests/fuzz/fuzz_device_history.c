/* libFuzzer target: the analyzer's device history file (analyzer/
 * device_history.c, --device-history). Any bytes must parse to an error or
 * a history whose records keep their invariants (implicated jobs at most
 * the jobs, a weight within [0, implicated], unique names), and what it
 * saves must parse back to the same records; never a crash or a leak. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_devhist h;
	char err[256];
	an_devhist_init(&h);
	if (an_devhist_parse(&h, (const char *)data, size, err, sizeof err) == 0) {
		for (uint32_t i = 0; i < h.n; i++) {
			const struct an_devhost *x = &h.h[i];
			if (x->hits > x->jobs || !(x->weight >= 0) || x->weight > x->hits || !x->name[0])
				abort();
			for (uint32_t j = 0; j < i; j++)
				if (!strcmp(h.h[j].name, x->name))
					abort();
			double p = an_devhist_posterior(x);
			if (!(p > 0 && p <= 1))
				abort();
		}
		char path[64];
		snprintf(path, sizeof path, "/tmp/fuzz-devhist-%ld", (long)getpid());
		if (an_devhist_save(&h, path, err, sizeof err) == 0) {
			struct an_devhist b;
			an_devhist_init(&b);
			if (an_devhist_load(&b, path, err, sizeof err) || b.n != h.n || b.bad_lines)
				abort();
			for (uint32_t i = 0; i < h.n; i++)
				if (strcmp(b.h[i].name, h.h[i].name) || b.h[i].jobs != h.h[i].jobs ||
				    b.h[i].hits != h.h[i].hits || fabs(b.h[i].weight - h.h[i].weight) > 1e-5)
					abort();
			an_devhist_free(&b);
			remove(path);
		}
	}
	an_devhist_free(&h);
	return 0;
}
