/* pulse-analyzer: the OP-level localizer, our reproduction of the paper's
 * "SOTA" column (Aegis, Holmes, Greyhound). It sees what an operator-level
 * logger sees: each operator's start (the call), end, duration, whether it
 * completed, and the observed rate = volume / duration. It never reads
 * active_ns, actual bytes or per-peer first-byte times.
 *
 * Hang: the first missing start (computation fail-stop, machine level); the
 * node common to the unfinished P2P operators (custom collectives); a hung
 * built-in collective: the whole group (it cannot tell who stopped).
 * Slow, in Pulse's order (a fair baseline: the same rule order and the
 * same sample minimum, 3, as Pulse): the node common to the transfers with
 * a low observed rate (volume / operator duration: the per-P2P outlier by
 * which the paper's SOTA reaches machine level, §D.11/D.12); for custom
 * collectives the lowest observed rate over the last k; the first delayed
 * start (computation fail-slow, machine level); else the group whose
 * operators take longer than usual is reported as a communication
 * fail-slow at group level (the paper's ○, and its ◐ when the cause was a
 * CPU). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"
#include "pulse/hook_record.h"

static int extended_group(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	struct an_inst *worst = NULL;
	struct an_comm *wc = NULL;
	double wr = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (in->nrec != (uint32_t)c->nranks || in->hung || c->nranks < 2)
			continue;
		double r[256];
		int n = 0;
		for (int32_t k = 0; k < c->nranks && n < 256; k++) {
			struct an_rec *x = in->recs[k];
			uint32_t nb;
			double dmax = an_rec_base(s, c, x, AN_BASE_DUR, &nb);
			if (x->status != PULSE_OP_COMPLETE || nb < 3 || !(dmax > 0) || !x->call || x->end <= x->call)
				continue;
			r[n++] = (double)(x->end - x->call) / dmax;
		}
		if (n < 2)
			continue;
		double med = an_median(r, (size_t)n);
		if (med >= s->cfg.slow_factor && med > wr) {
			wr = med;
			worst = in;
			wc = c;
		}
	}
	if (!worst)
		return 0;
	d->cls = AN_COMM_SLOW;
	d->level = AN_LEVEL_GROUP;
	an_diag_members(s, d, wc);
	d->comm_id = wc->id;
	d->seq = worst->seq;
	d->op = worst->op;
	snprintf(d->metric, sizeof d->metric, "duration_ratio");
	d->value = wr;
	d->median = 1.0;
	d->evidence_ranks = (uint32_t)wc->nranks;
	d->onset_ns = worst->first_call;
	snprintf(d->why, sizeof d->why,
		 "%s #%" PRIu64 " takes %.1fx its usual duration on the ranks of this group; operator-level "
		 "data shows the same duration on every member, so the group is reported",
		 pulse_op_type_name(worst->op), worst->seq, wr);
	return 1;
}

static int edge_rate_observed(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	return an_edge_rate(s, w, d, 1);
}

static int custom_rate_observed(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	return an_rule_custom_rate(s, w, d, 1);
}

static void step_edge(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	(void)g;
	an_diag_step(d, "all groups: observed rate per transfer (volume / duration), node common to the slow ones");
}

static void step_custom(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)g;
	an_diag_step(d, "custom collectives: lowest observed rate (volume / duration) over the last %u",
		     s->cfg.custom_k);
}

static void step_delayed(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	(void)g;
	an_diag_step(d, "operators in time order: first delayed start");
}

static void step_group(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	(void)g;
	an_diag_step(d, "extended durations: group level");
}

/* the same order as Pulse's methods (localize.c): communication first,
 * then delayed starts, then the group */
static const struct an_method oplevel_slow_methods[] = {
	{ "op-level: observed rate per transfer", edge_rate_observed, step_edge },
	{ "op-level: observed rate, custom collectives", custom_rate_observed, step_custom },
	{ "op-level: delayed start", an_rule_delayed_start, step_delayed },
	{ "op-level: extended group", extended_group, step_group },
};

int an_localize_oplevel(struct an_state *s, const struct an_trigger *t)
{
	/* the same hang-first order as Pulse (localize.c): a hang is
	 * operator-level evidence too */
	int hung = an_localize_hang(s, t, 1);
	if (hung || t->kind == AN_TRIG_HANG)
		return hung;
	return an_run_methods(s, t, "op-level", oplevel_slow_methods,
			      sizeof oplevel_slow_methods / sizeof *oplevel_slow_methods);
}
