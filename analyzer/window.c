/* pulse-analyzer: the window of operator instances around a trigger that
 * the localization methods examine. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"
#include "pulse/hook_record.h"

/* ---- the window around a trigger ---- */

static int cmp_inst(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	const struct an_inst *x = *(struct an_inst *const *)a, *y = *(struct an_inst *const *)b;
	uint64_t tx = x->first_call ? x->first_call : x->last_end;
	uint64_t ty = y->first_call ? y->first_call : y->last_end;
	return tx < ty ? -1 : tx > ty;
}

struct pair {
	struct an_inst *in;
	int comm;
};

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	return cmp_inst(&x->in, &y->in, NULL);
}

/* The iteration's signature: the one with the longest median period among
 * those with three periods at least (the iteration's operators recur once
 * per iteration). Two are no estimate: a PP group signature with two
 * periods of 165 ms (its instances two iterations apart) in a job of 85
 * ms iterations, and the confirmation that left half a period either side
 * of its evidence out had too little left (seed 1138 #196, a slow forward
 * pass named and never confirmed). Returns its median period, 0 (and
 * *comm NULL) when none has enough yet. */
#define PERIOD_MIN_SAMPLES 3
double an_iteration_sig(const struct an_state *s, const struct an_comm **comm, int *sig)
{
	double best = 0;
	if (comm)
		*comm = NULL;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < s->comms[i]->nsigs; k++) {
			double med;
			const struct an_roll *r = &s->comms[i]->sigs[k].period;
			if (r->n >= PERIOD_MIN_SAMPLES && an_roll_stats(r, &med, NULL) == 0 && med > best) {
				best = med;
				if (comm)
					*comm = s->comms[i];
				if (sig)
					*sig = (int)k;
			}
		}
	return best;
}

uint64_t an_period_ns(const struct an_state *s)
{
	return (uint64_t)an_iteration_sig(s, NULL, NULL);
}

/* How far before the first evidence a cause may lie: a few iterations
 * (the cause comes first, and a fail-slow acts on every iteration); 0 when
 * no period is known yet. */
static uint64_t cause_lookback_ns(const struct an_state *s)
{
	double best = AN_CAUSE_PERIODS * (double)an_period_ns(s);
	return (uint64_t)(best > 30e9 ? 30e9 : best);
}

static uint64_t lookback_ns(const struct an_state *s)
{
	/* the window itself reaches further back: the methods that judge
	 * against the window's medians need the iterations before the onset */
	double best = (double)cause_lookback_ns(s);
	if (best < 1e9)
		best = 1e9;
	return (uint64_t)best;
}

int an_excl_covers(const struct an_excl *x, uint64_t t, uint64_t comm, uint64_t seq)
{
	if (!x->b)
		return 0;
	if ((t >= x->a && t <= x->b) || (comm == x->comm && seq == x->seq))
		return 1;
	const struct an_excl_iter *o = &x->also;
	return o->b && ((t >= o->a && t <= o->b) || (comm == o->comm && seq == o->seq));
}

uint64_t an_excl_last(const struct an_excl *x)
{
	return x->also.b > x->b ? x->also.b : x->b;
}

void an_window_build(struct an_state *s, const struct an_trigger *t, struct an_window *w)
{
	memset(w, 0, sizeof *w);
	uint64_t back = lookback_ns(s);
	uint64_t onset = t->onset_ns ? t->onset_ns : t->fired_ns;
	w->t0 = onset > back ? onset - back : 0;
	uint64_t cback = cause_lookback_ns(s);
	w->cause0 = !cback ? w->t0 : onset > cback ? onset - cback : 0;
	w->t1 = s->now_ns;
	w->onset = onset;
	w->excl = t->excl;
	uint32_t cap = 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < AN_HIST; k++)
			cap += s->comms[i]->hist[k].used != 0;
	if (!cap)
		return;
	struct pair *p = malloc(cap * sizeof *p);
	if (!p)
		return;
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < AN_HIST; k++) {
			struct an_inst *in = &s->comms[i]->hist[k];
			if (!in->used)
				continue;
			uint64_t a = in->first_call ? in->first_call : in->last_end;
			uint64_t b = in->last_end > a ? in->last_end : a;
			if (an_excl_covers(&t->excl, a, s->comms[i]->id, in->seq))
				continue; /* left out to confirm a verdict */
			if (in->hung || (b >= w->t0 && a <= w->t1)) {
				p[n].in = in;
				p[n].comm = (int)i;
				n++;
			}
		}
	qsort(p, n, sizeof *p, cmp_pair);
	w->inst = malloc((n ? n : 1) * sizeof *w->inst);
	w->comm = malloc((n ? n : 1) * sizeof *w->comm);
	if (!w->inst || !w->comm) {
		free(w->inst);
		free(w->comm);
		free(p);
		memset(w, 0, sizeof *w);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		w->inst[i] = p[i].in;
		w->comm[i] = p[i].comm;
	}
	w->n = n;
	free(p);
}

void an_window_free(struct an_window *w)
{
	free(w->inst);
	free(w->comm);
	memset(w, 0, sizeof *w);
}
