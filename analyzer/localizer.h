/* pulse-analyzer: the localization methods' interface.
 *
 * A method examines the window of operator instances around a trigger
 * (window.c) and, when its evidence holds, fills the diagnosis and returns
 * 1. localize.c runs Pulse's fail-slow methods in the order of a table
 * (struct an_method), the way rdma-core puts providers behind
 * verbs_context_ops: a new method is one file and one table line. Hangs
 * are localized first and apart (loc_hang.c): a hang explains a slowdown.
 *
 *   loc_hang.c       hangs: where the waiting ends (fail-stop)
 *   loc_comm_slow.c  communication fail-slow (per-transfer rate, actual
 *                    time, rank-level rate, a transfer's share)
 *   loc_comp_slow.c  computation fail-slow: delayed starts
 *   loc_cpu.c        computation fail-slow in the CPU (proxy threads)
 *   loc_lateness.c   computation fail-slow below one instance's noise: a
 *                    rank's lateness shifted, persistently; the last
 *                    caller (least slack between call and first byte)
 *   diagnosis.c      building, comparing and keeping diagnoses
 *   window.c         the window around a trigger */
#ifndef PULSE_ANALYZER_LOCALIZER_H
#define PULSE_ANALYZER_LOCALIZER_H

#include "an_internal.h"

struct an_method {
	const char *name;
	/* 1: the verdict is in d; 0: no evidence, the next method runs; -1:
	 * the evidence is not complete yet (an open-ended delay, which may
	 * still end as a slowdown or become a hang): no verdict now */
	int (*localize)(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
	/* the step it adds to the diagnosis, from the groups in the window
	 * per parallelism (NULL: the method writes its own) */
	void (*step)(const struct an_state *s, const int groups[6], struct an_diagnosis *d);
};

/* Runs the methods in order on the window around t, each on a fresh
 * diagnosis of localizer `who`: the first whose evidence holds is the
 * verdict (an_diag_commit's return). Pulse's table and the OP-level
 * baseline's go through the same runner: the same rule order. (Running
 * every method when confirming a verdict was tried: no run gained on two
 * development seeds, one more wrong host.) */
int an_run_methods(struct an_state *s, const struct an_trigger *t, const char *who,
		   const struct an_method *m, size_t n);

/* loc_comm_slow.c */
int an_comm_slow_edge_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
int an_comm_slow_active_outlier(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
int an_comm_slow_xfer_shift(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
int an_comm_slow_peak_cap(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
/* an_rule_custom_rate: an_internal.h (the baseline uses it too) */

/* loc_lateness.c */
int an_comp_slow_lateness(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
int an_comp_slow_last_caller(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);

/* loc_cpu.c */
int an_comp_slow_cpu(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);

/* loc_comp_slow.c: an_rule_delayed_start (an_internal.h); and a record
 * that starts in the iteration a confirmation leaves out */
int an_rec_excluded(const struct an_window *w, const struct an_rec *r);
/* an instance of P2P groups whose ranks start their transfers with their
 * own kernels alike (an all-to-all, or a neighbour exchange: every rank
 * sends to each peer it receives from), so that they are each other's
 * baseline; a pipeline's groups are not */
int an_inst_ranks_comparable(const struct an_comm *c, const struct an_inst *in);

/* diagnosis.c */
const char *an_par_label(uint8_t par);
void an_diag_evidence(struct an_diagnosis *d, const struct an_comm *c, const struct an_rec *r,
		      const char *metric, double value, double median, uint32_t nranks);
/* the evidence's margin past its rule's threshold (struct an_diagnosis):
 * value against baseline, as far as threshold is from baseline */
void an_diag_margin(struct an_diagnosis *d, double value, double baseline, double threshold);

#endif
