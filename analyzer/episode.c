/* pulse-analyzer: Holmes's episodes (holmes.txt §3, §4.4): when a
 * slowdown began and ended, its pattern, the iterations it touched and
 * the training time it cost (analyzer/answers.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"

#define MAD_SD 1.4826
#define NOISE_SD 3.0

int an_pattern_of(double irregularity, double tail, uint32_t xfer_slowed, uint32_t capped)
{
	if (!isfinite(irregularity))
		return AN_PATTERN_NONE;
	if (irregularity > 0.5 || tail >= 4)
		return AN_PATTERN_SPIKE;
	if (!xfer_slowed || 5 * capped >= xfer_slowed)
		return AN_PATTERN_PERSISTENT;
	return AN_PATTERN_FLUCTUATION;
}

const char *an_pattern_name(int p)
{
	switch (p) {
	case AN_PATTERN_SPIKE: return "spike";
	case AN_PATTERN_FLUCTUATION: return "fluctuation";
	case AN_PATTERN_PERSISTENT: return "persistent";
	default: return "";
	}
}

void an_episode_iterations(const uint64_t *ends, uint32_t n, uint64_t t0, uint64_t t1, double floor_ns,
			   struct an_episode *ep)
{
	ep->it_first = ep->it_last = ep->it_touched = 0;
	ep->it_base_ns = 0;
	ep->cost_ns = 0;
	if (n < 2)
		return;
	double *before = malloc(n * sizeof *before), *outside = malloc(n * sizeof *outside);
	if (!before || !outside) {
		free(before);
		free(outside);
		return;
	}
	size_t nb = 0, no = 0;
	/* iteration i (1..n-1) spans (ends[i-1], ends[i]]; the first has no start */
	for (uint32_t i = 1; i < n; i++) {
		double len = (double)(ends[i] - ends[i - 1]);
		if (ends[i] < t0)
			before[nb++] = len;
		if (ends[i] < t0 || ends[i - 1] > t1)
			outside[no++] = len;
	}
	/* two iterations give a median and a spread, if a rough one */
	double *ref = nb >= 2 ? before : outside;
	size_t nr = nb >= 2 ? nb : no;
	if (nr >= 2) {
		{
			double med, mad;
			an_med_mad(ref, nr, &med, &mad);
			double thr = NOISE_SD * MAD_SD * mad + floor_ns;
			ep->it_base_ns = med;
			int any = 0;
			for (uint32_t i = 1; i < n; i++) {
				if (ends[i] < t0 || ends[i - 1] > t1)
					continue;
				double x = (double)(ends[i] - ends[i - 1]) - med;
				if (x <= thr)
					continue;
				if (!any)
					ep->it_first = i;
				ep->it_last = i;
				any = 1;
				ep->it_touched++;
				ep->cost_ns += x;
			}
		}
	}
	free(before);
	free(outside);
}

static double unit_excess(const struct an_unit *u)
{
	return u->x_launch + u->x_active + u->x_gaps;
}

/* How heavy the tail of the transfers' slowdowns is: the 90th percentile
 * of their relative extra active time over its median (0 with fewer than
 * 5 slowed transfers) */
static double slow_tail(const struct an_units *u, uint32_t i0, uint64_t t1)
{
	uint32_t n = 0;
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= t1; i++)
		n += u->u[i].base == 1 && u->u[i].x_active > 0 && u->u[i].active > u->u[i].x_active;
	if (n < 5)
		return 0;
	double *r = malloc(n * sizeof *r);
	if (!r)
		return 0;
	uint32_t k = 0;
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= t1 && k < n; i++) {
		const struct an_unit *x = &u->u[i];
		if (x->base == 1 && x->x_active > 0 && x->active > x->x_active)
			r[k++] = x->x_active / (x->active - x->x_active);
	}
	double med = an_median(r, k); /* sorts */
	double q90 = r[(k * 9) / 10 < k ? (k * 9) / 10 : k - 1];
	free(r);
	return med > 0 ? q90 / med : 0;
}

/* A slowed instance that can bound an episode: judged against its own
 * history (against its peers, an instance of the first iterations is
 * judged against ranks that play other parts, which is noisier) */
static int bound_touched(const struct an_unit *x)
{
	return x->base == 1 && an_unit_touched(x);
}

/* the units of a (communicator, signature, place) group that had any
 * slowed instance in [t0, t1] */
static int group_touched(const struct an_units *u, uint32_t i0, uint64_t t1, const struct an_unit *x)
{
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= t1; i++) {
		const struct an_unit *y = &u->u[i];
		if (y->comm == x->comm && y->sig == x->sig && y->ord == x->ord && an_unit_touched(y))
			return 1;
	}
	return 0;
}

void an_episode_from_units(const struct an_state *s, const struct an_units *u, const struct an_diagnosis *d,
			   struct an_episode *ep)
{
	memset(ep, 0, sizeof *ep);
	ep->prior = -1;
	uint64_t period = an_period_ns(s);
	uint64_t onset = d->onset_ns ? d->onset_ns : d->first_seen_ns ? d->first_seen_ns : d->report_ns;
	uint64_t lo = onset > period ? onset - period : 0;
	uint64_t hi = d->last_seen_ns > d->report_ns ? d->last_seen_ns : d->report_ns;
	/* a slowdown is one episode while its slowed instances come at most
	 * this far apart (the span within which the triggers' fires are one);
	 * it starts by the verdict's last report and may outlast it */
	uint64_t gap = AN_CAUSE_PERIODS * (period ? period : 1000000000ull);
	uint32_t i0 = UINT32_MAX;
	for (uint32_t i = 0; i < u->n; i++) {
		const struct an_unit *x = &u->u[i];
		if (x->t0 < lo || !bound_touched(x))
			continue;
		if (i0 == UINT32_MAX) {
			if (x->t0 > hi)
				break;
			i0 = i;
			ep->end_ns = x->t1;
			continue;
		}
		if (x->t0 > ep->end_ns + gap)
			break;
		if (x->t1 > ep->end_ns)
			ep->end_ns = x->t1;
	}
	if (i0 == UINT32_MAX)
		return;
	/* the first evidence may come late: the episode reaches back over the
	 * slowed instances that came before it as closely */
	for (uint32_t j = i0; j-- > 0;)
		if (bound_touched(&u->u[j])) {
			if (u->u[j].t1 + gap < u->u[i0].t0)
				break;
			i0 = j;
		}
	ep->start_ns = u->u[i0].t0;
	double xa = 0, xl = 0;
	/* the pattern is judged on the operators the slowdown reached: an
	 * operator that no slowed instance came from says nothing of it */
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= ep->end_ns; i++) {
		const struct an_unit *x = &u->u[i];
		if (!x->base || !group_touched(u, i0, ep->end_ns, x))
			continue;
		ep->units++;
		if (an_unit_touched(x))
			ep->touched++;
		if (x->x_active > 0) {
			ep->xfer_slowed++;
			ep->capped += x->capped != 0;
		}
		xa += x->x_active;
		xl += x->x_launch;
	}
	/* the transfers' shape speaks only where they carry the excess: a few
	 * noisy transfers beside a computation slowdown say nothing */
	uint32_t xs = xa >= xl ? ep->xfer_slowed : 0;
	ep->tail = slow_tail(u, i0, ep->end_ns);
	/* the node's excess per iteration over the episode (iterations with
	 * none count as 0): how regular it was */
	uint32_t f = u->u[i0].iter, l = f;
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= ep->end_ns; i++)
		if (u->u[i].iter > l)
			l = u->u[i].iter;
	uint32_t ni = l - f + 1;
	double *xi = calloc(ni, sizeof *xi);
	ep->irregularity = NAN;
	if (xi) {
		for (uint32_t i = i0; i < u->n && u->u[i].t0 <= ep->end_ns; i++)
			if (u->u[i].base == 1)
				xi[u->u[i].iter - f] += unit_excess(&u->u[i]);
		double med, mad;
		an_med_mad(xi, ni, &med, &mad);
		ep->irregularity = med > 0 ? MAD_SD * mad / med : mad > 0 ? INFINITY : 0;
	}
	free(xi);
	ep->pattern = an_pattern_of(ep->irregularity, ep->tail, xs, ep->capped);
	ep->valid = 1;
	uint64_t ends[4096];
	uint32_t ne = an_iteration_ends(s, ends, sizeof ends / sizeof *ends);
	an_episode_iterations(ends, ne, ep->start_ns, ep->end_ns, s->epoch_ns, ep);
}
