/* Where in the iteration (VenusTrace's critical path, issue 16 part 2):
 * the 1F1B schedule of a pipeline rebuilt from its P2P records alone, the
 * DAG of compute runs and transfers of one iteration, its critical path,
 * and for a fail-slow verdict the stage kind (forward, backward,
 * transmission), the micro-batch, and whether the slowed part lay on the
 * critical path or was absorbed by slack. It only reads the analyzer's
 * state: it never changes which machine a diagnosis names. */
#ifndef PULSE_ANALYZER_CRITICAL_PATH_H
#define PULSE_ANALYZER_CRITICAL_PATH_H

#include <stddef.h>
#include <stdint.h>

struct an_state;
struct an_diagnosis;

/* ---- 1F1B schedule of one stage (Megatron-LM's order) ---- */
enum an_pp_item_kind { AN_PP_FWD = 1, AN_PP_BWD = 2, AN_PP_GROUP = 3 };
/* A group sends to / receives from the next (+1) or previous (-1) stage,
 * 0 none; the micro-batch of what it sends and receives. */
struct an_pp_item {
	uint8_t kind;
	int16_t mb;              /* compute: its micro-batch */
	int8_t send_dir, recv_dir;
	int16_t send_mb, recv_mb;
};
#define AN_PP_MAX_MB 64
#define AN_PP_MAX_STAGES 64
#define AN_PP_MAX_ITEMS (6 * AN_PP_MAX_MB + 4)
/* Stage s of P with M micro-batches, one iteration: warm-up forwards
 * (P - s - 1, at most M), steady 1F1B, cool-down backwards; groups with
 * neither a send nor a receive are left out. Returns the item count, -1
 * on bad arguments. */
int an_pp_1f1b(int P, int s, int M, struct an_pp_item *out, int max);
/* The per-iteration group signature of that stage: one character per
 * group, 'f' (it sends to the next stage: forward activations), 'b' (to the
 * previous stage: backward gradients), '-' (receives only). Returns its
 * length, -1 on bad arguments. */
int an_pp_signature(int P, int s, int M, char *out, int max);
/* From a rank's observed group signature (its P2P records in call order,
 * characters as above): the micro-batch count M and the index of the first
 * record that starts an iteration, such that the string is that stage's
 * signature repeated (the first and last iterations may be cut). Needs at
 * least one whole iteration. Returns M, 0 when no M up to AN_PP_MAX_MB
 * (or more than one) explains it. */
int an_pp_infer(const char *obs, int n, int P, int s, int *phase);

/* ---- critical path of a DAG ---- */
struct an_cp_vertex {
	double dur;              /* ns */
	double release;          /* earliest start (ns), 0: none */
	int pred[4];             /* -1 unused */
	/* computed */
	double es, ef, lf, slack;
};
/* Earliest and latest times and slack of every vertex (vertices listed in
 * a topological order: every pred index below the vertex's own). Returns
 * the makespan (the latest finish). */
double an_cp_solve(struct an_cp_vertex *v, int n);

/* ---- the answer for a diagnosis ---- */
struct an_where {
	int found;               /* 0: no answer, note says why */
	char kind[20];           /* "forward", "backward", "transmission", "forward+backward" */
	int stage, nstages;      /* stage = the suspect's rank in its PP communicator */
	int micro_batch, nmicro; /* the slowed part's micro-batch (from 0), of nmicro */
	int critical;            /* 1: on the critical path; 0: absorbed by slack */
	uint32_t nslow;          /* slowed parts of that kind on the suspect's stage */
	double excess_ms;        /* their time over the expected */
	double cost_ms;          /* what they added to the iteration in the DAG (expected times,
	                          * then theirs measured) */
	double grew_ms;          /* what the pipeline's measured span grew over its baselines
	                          * (NAN: no baseline span) */
	double slack_ms;         /* the named part's slack before it was slowed */
	double iter_ms;          /* the pipeline's iteration span in the DAG */
	uint64_t comm_id;        /* the PP communicator */
	uint64_t t0_ns, t1_ns;   /* the named part's measured start and end (host clock) */
	char host[64];
	int gpu;
	int alike[8];            /* other suspects of the host with the same answer (TP keeps a
	                          * host's GPUs in step: the data cannot tell them apart) */
	uint32_t nalike;
	char baseline[24];       /* "sibling pipelines" or "earlier iterations" */
	char note[200];
};
/* The answer for diagnosis d (fail-slow, machine level, a suspect in a
 * pipeline); w->found 0 with w->note otherwise. Reads s only. */
int an_where_find(const struct an_state *s, const struct an_diagnosis *d, struct an_where *w);
/* The same for a GPU no verdict names ("HOST:GPU"): where its slowdown lies,
 * against the sibling pipelines. Returns 0 (w filled, w->found 0 with a
 * note when nothing stands out), -1 with err on a bad argument. */
int an_where_query(const struct an_state *s, const char *host_gpu, struct an_where *w, char *err, size_t errlen);
/* One line for the text report ("forward of micro-batch 2 on stage 1 of 2:
 * on the critical path, +3.1 ms ..."). */
void an_where_format(const struct an_where *w, char *buf, size_t n);
/* The answer as a cJSON object (void*: this header needs no cJSON.h). */
void *an_where_json(const struct an_where *w);

#endif
