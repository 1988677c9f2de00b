/* pulse-analyzer: Pulse's localization from µs-level operator metrics
 * (pulse.txt §6.2, the cases of §7.2 and Appendix D): the order in which
 * the methods run. Each method is its own file behind struct an_method
 * (localizer.h):
 *
 * Hang first (loc_hang.c, shared with the OP-level baseline): a hang
 * visible at this data time explains any slowdown.
 * Slow, in this order (the first whose evidence holds names the culprit):
 *   1. per transfer: actual rate, node common to the slow transfers;
 *   2. DP/TP groups: actual communication time outlier;
 *   3. EP/custom groups: lowest rank-level actual rate;
 *   4. computation: the rank every other rank waited for, persistently
 *      (the last caller, loc_lateness.c);
 *   5. computation: the first delayed start against sibling groups or the
 *      instance's peers (loc_comp_slow.c);
 *   6. computation in the CPU (proxy threads, loc_cpu.c);
 *   7. a transfer slower than its usual share of its operator instance
 *      (too small for the window's medians);
 *   8. peers only, no history: the transfers whose peak epoch stays below
 *      their instance's (a capped NIC or path, from the first iteration);
 *   9. a persistent shift of a rank's lateness (loc_lateness.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"

static void count_groups(const struct an_state *s, const struct an_window *w, int cnt[6])
{
	memset(cnt, 0, 6 * sizeof *cnt);
	for (uint32_t i = 0; i < s->ncomms; i++) {
		int seen = 0;
		for (uint32_t k = 0; k < w->n && !seen; k++)
			seen = w->comm[k] == (int)i;
		if (seen)
			cnt[s->comms[i]->par < 6 ? s->comms[i]->par : 0]++;
	}
}

static void step_edge(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	an_diag_step(d, "all groups in the window (DP %d, PP %d, EP %d): actual rate per transfer, "
			"node common to the slow ones", g[PULSE_PAR_DP], g[PULSE_PAR_PP], g[PULSE_PAR_EP]);
}

static void step_active(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	an_diag_step(d, "DP/TP groups (%d, %d): actual communication time outlier", g[PULSE_PAR_DP],
		     g[PULSE_PAR_TP]);
}

static int custom_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	return an_rule_custom_rate(s, w, d, 0);
}

static void step_custom(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	an_diag_step(d, "DP/TP groups: no actual-time outlier; EP/custom groups (%d): lowest rank-level "
			"actual rate over the last %u", g[PULSE_PAR_EP], s->cfg.custom_k);
}

static void step_peak(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	(void)g;
	an_diag_step(d, "no outlier in actual time, rate or a transfer's share, no delayed start; per "
			"operator instance: the transfers whose peak epoch stays below their peers', node common "
			"to them");
}

static void step_delayed(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	an_diag_step(d, "no communication outlier (actual time, rank rate); PP groups (%d) then the "
			"others in time order: first delayed start", g[PULSE_PAR_PP]);
}

static void step_xfer(const struct an_state *s, const int g[6], struct an_diagnosis *d)
{
	(void)s;
	(void)g;
	an_diag_step(d, "no outlier against the window's medians; per transfer: rate against its usual "
			"share of its operator's median, node with the most slow transfers");
}

static const struct an_method pulse_slow_methods[] = {
	{ "comm-slow: per-transfer rate", an_comm_slow_edge_rate, step_edge },
	{ "comm-slow: actual-time outlier", an_comm_slow_active_outlier, step_active },
	{ "comm-slow: rank-level rate", custom_rate, step_custom },
	{ "comp-slow: last caller", an_comp_slow_last_caller, NULL },
	{ "comp-slow: delayed start", an_rule_delayed_start, step_delayed },
	{ "comp-slow: CPU", an_comp_slow_cpu, NULL },
	{ "comm-slow: transfer share", an_comm_slow_xfer_shift, step_xfer },
	/* last: peaks of short transfers are noisy; what the others find
	 * with their history comes first */
	{ "comm-slow: capped peak", an_comm_slow_peak_cap, step_peak },
	/* a slowdown below every instance's noise, persistent: nothing above
	 * saw it */
	{ "comp-slow: lateness shift", an_comp_slow_lateness, NULL },
};

/* d names one machine, and it is among those held names */
static int one_of(const struct an_diagnosis *d, const struct an_diagnosis *held)
{
	if (d->nsuspects != 1 || d->level != AN_LEVEL_MACHINE)
		return 0;
	for (uint32_t i = 0; i < held->nsuspects; i++)
		if (!strcmp(d->suspects[0].host, held->suspects[i].host))
			return 1;
	return 0;
}

int an_run_methods(struct an_state *s, const struct an_trigger *t, const char *who,
		   const struct an_method *m, size_t n)
{
	struct an_window w;
	an_window_build(s, t, &w);
	int g[6];
	count_groups(s, &w, g);
	int added = 0;
	/* A verdict that names several machines (the two ends of a slow
	 * transfer) is held while the later methods may tell them apart: one
	 * of them named alone, by any method, is taken instead; anything else
	 * leaves the held one. */
	struct an_diagnosis held;
	int holding = 0;
	for (size_t i = 0; i < n; i++) {
		/* a fresh diagnosis each: what a method wrote before its evidence
		 * failed is not the next one's */
		struct an_diagnosis d;
		an_diag_init(s, &d, who, t);
		int rc = m[i].localize(s, &w, &d);
		if (getenv("PULSE_ANALYZER_DEBUG"))
			fprintf(stderr, "method %s: %d\n", m[i].name, rc);
		if (rc < 0) {
			/* the method's evidence is still open (a rank that has not
			 * started yet): no verdict from this window, none from a
			 * later method either, which would explain the wait by its
			 * effects */
			holding = 0;
			break;
		}
		if (!rc)
			continue;
		if (m[i].step)
			m[i].step(s, g, &d);
		if (holding && !one_of(&d, &held))
			continue;
		if (!holding && d.nsuspects > 1 && d.level == AN_LEVEL_MACHINE && i + 1 < n) {
			held = d;
			holding = 1;
			continue;
		}
		holding = 0;
		added = an_diag_commit(s, &d);
		break;
	}
	if (holding)
		added = an_diag_commit(s, &held);
	an_window_free(&w);
	return added;
}

int an_localize_pulse(struct an_state *s, const struct an_trigger *t)
{
	/* A slow trigger localized when a hang is already visible (calls
	 * unanswered past the hang bound at this data time): the hang explains
	 * the slowdown, and a rank that never started is fail-stop, not a
	 * delayed start. */
	int hung = an_localize_hang(s, t, 0);
	if (hung || t->kind == AN_TRIG_HANG)
		return hung;
	size_t n = sizeof pulse_slow_methods / sizeof *pulse_slow_methods;
	/* A straggler trigger is evidence for the last caller alone: the
	 * communication methods before it still explain a rank that is late
	 * because its NIC is slow, the methods after it would read the same
	 * records again for a verdict of their own, from no new evidence. */
	if (t->kind == AN_TRIG_STRAGGLER)
		for (size_t i = 0; i < n; i++)
			if (pulse_slow_methods[i].localize == an_comp_slow_last_caller)
				n = i + 1;
	return an_run_methods(s, t, "pulse", pulse_slow_methods, n);
}
