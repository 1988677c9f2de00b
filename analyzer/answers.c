/* pulse-analyzer: issue 16's answers for each diagnosis (answers.h):
 * builds the implicated GPUs' instances once per named host and derives
 * the slow ratio and the episode from them. */
#include <string.h>

#include "answers.h"

/* The answers for the GPUs d names on host h (nodes of s). Returns the
 * excess they add up to (0: none). */
static double answers_for_host(const struct an_state *s, const struct an_diagnosis *d, const char *h,
			       struct an_share *share, struct an_episode *ep)
{
	int nodes[AN_MAX_SUSPECTS];
	uint32_t nn = 0;
	for (uint32_t n = 0; n < s->nnodes && nn < AN_MAX_SUSPECTS; n++) {
		if (strcmp(s->hosts[s->nodes[n].host].name, h))
			continue;
		for (uint32_t i = 0; i < d->nsuspects; i++)
			if (!strcmp(d->suspects[i].host, h) && s->nodes[n].gpu == d->suspects[i].gpu) {
				nodes[nn++] = (int)n;
				break;
			}
	}
	if (!nn)
		return 0;
	uint64_t period = an_period_ns(s);
	uint64_t onset = d->onset_ns ? d->onset_ns : d->report_ns;
	/* history is what came before the anomaly: a fault that persists is
	 * not its own baseline */
	uint64_t before = onset > period ? onset - period : onset;
	struct an_units u;
	if (an_units_build(s, nodes, nn, before, &u)) {
		an_units_free(&u);
		return 0;
	}
	an_episode_from_units(s, &u, d, ep);
	if (ep->valid && ep->start_ns < before) {
		/* it began before its first evidence: judge it against what came
		 * before its own start */
		an_units_free(&u);
		before = ep->start_ns;
		if (an_units_build(s, nodes, nn, before, &u)) {
			an_units_free(&u);
			return 0;
		}
		an_episode_from_units(s, &u, d, ep);
	}
	uint64_t t0 = ep->valid ? ep->start_ns : before;
	uint64_t t1 = ep->valid ? ep->end_ns : d->report_ns;
	an_share_from_units(&u, t0, t1, share);
	an_units_free(&u);
	return share->delay_ns + share->active_ns + share->gap_ns;
}

void an_answers_fill(const struct an_state *s, struct an_diagnosis *d)
{
	memset(&d->share, 0, sizeof d->share);
	memset(&d->ep, 0, sizeof d->ep);
	d->ep.prior = -1;
	/* Pulse's answers from its µs data: the OP-level baseline stays what
	 * operator-level tools can say */
	if (strcmp(d->localizer, "pulse") || d->level != AN_LEVEL_MACHINE || !d->nsuspects ||
	    (d->cls != AN_COMP_SLOW && d->cls != AN_COMM_SLOW))
		return;
	/* "A or B" (the two ends of a transfer): the answers are those of the
	 * named host whose GPUs show the larger excess */
	double best = -1;
	for (uint32_t i = 0; i < d->nsuspects; i++) {
		int seen = 0;
		for (uint32_t j = 0; j < i; j++)
			seen |= !strcmp(d->suspects[j].host, d->suspects[i].host);
		if (seen)
			continue;
		struct an_share sh;
		struct an_episode ep;
		memset(&ep, 0, sizeof ep);
		ep.prior = -1;
		double x = answers_for_host(s, d, d->suspects[i].host, &sh, &ep);
		if (x > best) {
			best = x;
			d->share = sh;
			d->ep = ep;
		}
	}
}

void an_answers_update(struct an_state *s)
{
	for (uint32_t i = 0; i < s->ndiags; i++)
		an_answers_fill(s, &s->diags[i]);
}
