/* pulse-analyzer: CCL-D's slow ratio (ccl-d.txt §4.2.2, equation 4) from
 * µs data: how much of a slowdown is computation, how much communication
 * (analyzer/answers.h). CCL-D estimates it from the spread of the ranks'
 * communication times; here the implicated host's own instances give the
 * three parts directly. */
#include <math.h>
#include <string.h>

#include "answers.h"

/* CCL-D's α and β around an even split */
#define SHARE_COMM_BELOW 0.4
#define SHARE_COMP_ABOVE 0.6

void an_share_split(double delay, double active, double gaps_host, double gaps_shared, struct an_share *out)
{
	memset(out, 0, sizeof *out);
	delay = delay > 0 ? delay : 0;
	active = active > 0 ? active : 0;
	gaps_host = gaps_host > 0 ? gaps_host : 0;
	gaps_shared = gaps_shared > 0 ? gaps_shared : 0;
	out->delay_ns = delay;
	out->active_ns = active;
	out->gap_ns = gaps_host + gaps_shared;
	double host = delay + gaps_host; /* what the GPU's own host did */
	out->gap_comp_ns = gaps_host + (host + active > 0 ? gaps_shared * host / (host + active) : gaps_shared);
	double total = delay + active + out->gap_ns;
	if (total > 0) {
		out->comp_share = (delay + out->gap_comp_ns) / total;
		out->valid = 1;
	}
}

const char *an_share_label(const struct an_share *sh)
{
	if (!sh->valid)
		return "";
	if (sh->comp_share > SHARE_COMP_ABOVE)
		return "computation";
	if (sh->comp_share < SHARE_COMM_BELOW)
		return "communication";
	return "mixed";
}

void an_share_from_units(const struct an_units *u, uint64_t t0, uint64_t t1, struct an_share *out)
{
	double d = 0, a = 0, gh = 0, gs = 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < u->n; i++) {
		const struct an_unit *x = &u->u[i];
		if (x->t0 < t0 || x->t0 > t1 || !an_unit_touched(x))
			continue;
		d += x->x_launch;
		a += x->x_active;
		if (x->sent && !x->capped && x->x_gaps >= x->x_active) {
			/* a transfer the GPU sent that stopped more than it slowed,
			 * on a path that still reached its peak: starved by its host
			 * (a proxy that stalls mid-epoch stretches the active time
			 * too) */
			gh += x->x_gaps + x->x_active;
			a -= x->x_active;
		} else if (x->sent && !x->capped) {
			gh += x->x_gaps;
		} else {
			gs += x->x_gaps;
		}
		n++;
	}
	an_share_split(d, a, gh, gs, out);
	out->instances = n;
}
