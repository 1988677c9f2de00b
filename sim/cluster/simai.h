/* SimAI/AICB workload files (sim/README.md, "SimAI workloads"): the reader
 * (simai_parse.c, no simulator state: the fuzz target links it alone) and
 * the program builder (simai.c) that turns one file into every rank's
 * compute phases and operator calls.
 *
 * The format is AICB's text output as SimAI's astra-sim reads it: line 1 the
 * parallelism policy and "key: value" pairs, line 2 the number of layer
 * lines, then one layer per line: name, dependency, and for the forward,
 * input-gradient and weight-gradient phases a compute time (ns) followed by
 * a communication type and size (bytes), and last the weight-update time. */
#ifndef PULSE_SIM_CLUSTER_SIMAI_H
#define PULSE_SIM_CLUSTER_SIMAI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* the group a communication runs on */
enum simai_group { SG_NONE = 0, SG_TP, SG_DP, SG_EP, SG_DP_EP, SG_COUNT };
/* what it does (SA_NONE: nothing) */
enum simai_op { SA_NONE = 0, SA_ALLREDUCE, SA_ALLGATHER, SA_REDUCESCATTER, SA_ALLTOALL };
/* the three phases of a layer */
enum simai_phase { SP_FWD = 0, SP_IG, SP_WG, SP_COUNT };

struct simai_comm {
	uint8_t op;    /* enum simai_op */
	uint8_t group; /* enum simai_group */
	uint64_t bytes;
};

struct simai_layer {
	char name[64];
	int line; /* in the file, from 1 */
	int dep;
	uint64_t compute_ns[SP_COUNT];
	struct simai_comm comm[SP_COUNT];
	uint64_t update_ns;
};

struct simai_workload {
	char policy[40];
	int tp, ep, pp, vpp, ga, all_gpus;
	uint64_t pp_comm; /* bytes of each pipeline send */
	int nlayers;
	struct simai_layer *layers;
};

#define SIMAI_MAX_LAYERS 1000000
#define SIMAI_MAX_FILE (64u << 20)

/* Parses a whole file held in memory. On error returns -1 with a message
 * that starts with "line N: " (nothing is left allocated); the caller adds
 * the file name. */
int simai_parse(const char *text, size_t len, struct simai_workload *w, char *err, size_t errlen);
/* Reads and parses PATH; errors are "PATH: line N: ...". */
int simai_load(const char *path, struct simai_workload *w, char *err, size_t errlen);
void simai_free(struct simai_workload *w);
/* Whether the job fits `gpus` GPUs: TP x PP must divide them and EP the
 * data-parallel size that leaves; pp > 1 needs a pp_comm. 0 or -1 with a
 * message naming simai.gpus. */
int simai_check_gpus(const struct simai_workload *w, int gpus, char *err, size_t errlen);
/* One paragraph on the job and what one rank does per iteration: what
 * --check-simai prints. */
void simai_describe(FILE *f, const char *path, const struct simai_workload *w);
const char *simai_op_name(int op);
const char *simai_group_name(int group);

#endif
