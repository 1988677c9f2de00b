/* libFuzzer target: the cluster simulator's scenario parser
 * (sim/cluster/scenario.c). Any input must give 0 and a scenario that
 * passes the cross-field checks (failures, benign events, TP across hosts,
 * NCCL protocols and shared NICs included), or -1 and a non-empty message;
 * never a crash, a leak or undefined behaviour. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/cluster/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sc_scenario s;
	char err[512];
	err[0] = 0;
	int rc = sc_scenario_parse((const char *)data, size, &s, err, sizeof err);
	if (rc == 0) {
		if (s.hosts < 1 || s.gpus < 1 || s.iterations < 1 || s.channels < 1 ||
		    s.slice_bytes < 4096 || s.failure.type < 0 || s.failure.type >= F_COUNT)
			abort();
		if (s.failure.type != 0 &&
		    (s.failure.host >= s.hosts || s.failure.start_iteration >= s.iterations))
			abort();
		if (s.workload == WL_GPT && (long)s.pp * s.dp * s.tp != (long)s.hosts * s.gpus)
			abort(); /* TP across hosts: the ranks still fill the cluster */
		if (s.nfailures < 0 || s.nfailures > SC_MAX_FAILURES)
			abort();
		for (int i = 0; i < s.nfailures; i++) {
			const struct sc_failure *f = &s.failures[i];
			if (f->type <= 0 || f->type >= F_COUNT || f->host >= s.hosts || f->gpu >= s.gpus ||
			    f->start_iteration >= s.iterations ||
			    (f->end_iteration && f->end_iteration <= f->start_iteration) ||
			    (f->on_iterations > 0) != (f->off_iterations > 0))
				abort();
		}
		/* NCCL as deployed: a protocol, and GPUs sharing NICs evenly */
		if (s.protocol < PROTO_SIMPLE || s.protocol > PROTO_LL128 || s.gpus_per_nic < 1 ||
		    s.gpus_per_nic > SC_MAX_GPUS_PER_NIC || s.gpus % s.gpus_per_nic)
			abort();
		if (s.ev.seqlen_change_at >= s.iterations || s.ev.restart_after >= s.iterations ||
		    s.ev.hiccup_prob < 0 || s.ev.hiccup_prob > 1)
			abort();
	} else if (rc != -1 || !err[0] || !memchr(err, 0, sizeof err)) {
		abort();
	}
	return 0;
}
