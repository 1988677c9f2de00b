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

int an_pattern_of(uint32_t touched, uint32_t n, double spread)
{
	if (!n || !touched)
		return AN_PATTERN_NONE;
	if (3 * touched < n)
		return AN_PATTERN_SPIKE;
	if (3 * touched >= 2 * n && spread < 0.5)
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
	double *ref = nb >= 3 ? before : outside;
	size_t nr = nb >= 3 ? nb : no;
	if (nr >= 3) {
		double *tmp = malloc(nr * sizeof *tmp);
		if (tmp) {
			memcpy(tmp, ref, nr * sizeof *tmp);
			double med = an_median(tmp, nr);
			for (size_t i = 0; i < nr; i++)
				tmp[i] = fabs(ref[i] - med);
			double mad = an_median(tmp, nr);
			free(tmp);
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
	 * this far apart (the span within which the triggers' fires are one) */
	uint64_t gap = AN_CAUSE_PERIODS * (period ? period : 1000000000ull);
	uint32_t i0 = UINT32_MAX, i1 = 0;
	for (uint32_t i = 0; i < u->n; i++) {
		const struct an_unit *x = &u->u[i];
		if (x->t0 < lo || x->t0 > hi || !an_unit_touched(x))
			continue;
		if (i0 == UINT32_MAX) {
			i0 = i1 = i;
			ep->end_ns = x->t1;
			continue;
		}
		if (x->t0 > ep->end_ns + gap)
			break;
		i1 = i;
		if (x->t1 > ep->end_ns)
			ep->end_ns = x->t1;
	}
	if (i0 == UINT32_MAX)
		return;
	ep->start_ns = u->u[i0].t0;
	double *xs = malloc((i1 - i0 + 1) * sizeof *xs);
	if (!xs)
		return;
	size_t nx = 0;
	for (uint32_t i = i0; i < u->n && u->u[i].t0 <= ep->end_ns; i++) {
		if (!u->u[i].base)
			continue;
		ep->units++;
		if (an_unit_touched(&u->u[i])) {
			ep->touched++;
			if (nx < (size_t)(i1 - i0 + 1))
				xs[nx++] = unit_excess(&u->u[i]);
		}
	}
	if (nx) {
		double med = an_median(xs, nx);
		for (size_t i = 0; i < nx; i++)
			xs[i] = fabs(xs[i] - med);
		ep->spread = med > 0 ? an_median(xs, nx) / med : 0;
	}
	free(xs);
	ep->pattern = an_pattern_of(ep->touched, ep->units, ep->spread);
	ep->valid = 1;
	uint64_t ends[4096];
	uint32_t ne = an_iteration_ends(s, ends, sizeof ends / sizeof *ends);
	an_episode_iterations(ends, ne, ep->start_ns, ep->end_ns, s->epoch_ns, ep);
}
