/* pulse-analyzer: issue 16's answers for each diagnosis (answers.h):
 * builds the implicated host's instances once and derives the slow ratio
 * and the episode from them. */
#include <string.h>

#include "answers.h"

void an_answers_fill(const struct an_state *s, struct an_diagnosis *d)
{
	memset(&d->share, 0, sizeof d->share);
	memset(&d->ep, 0, sizeof d->ep);
	d->ep.prior = -1;
	if (d->level != AN_LEVEL_MACHINE || !d->nsuspects || (d->cls != AN_COMP_SLOW && d->cls != AN_COMM_SLOW))
		return;
	/* the suspects of the first one's host: the GPUs it names */
	int nodes[AN_MAX_SUSPECTS];
	uint32_t nn = 0;
	for (uint32_t n = 0; n < s->nnodes; n++) {
		const char *hn = s->hosts[s->nodes[n].host].name;
		for (uint32_t i = 0; i < d->nsuspects && nn < AN_MAX_SUSPECTS; i++)
			if (!strcmp(hn, d->suspects[0].host) && !strcmp(hn, d->suspects[i].host) &&
			    s->nodes[n].gpu == d->suspects[i].gpu) {
				nodes[nn++] = (int)n;
				break;
			}
	}
	if (!nn)
		return;
	uint64_t period = an_period_ns(s);
	uint64_t onset = d->onset_ns ? d->onset_ns : d->report_ns;
	/* history is what came before the anomaly: a fault that persists is
	 * not its own baseline */
	uint64_t before = onset > period ? onset - period : onset;
	struct an_units u;
	if (an_units_build(s, nodes, nn, before, &u)) {
		an_units_free(&u);
		return;
	}
	an_episode_from_units(s, &u, d, &d->ep);
	if (d->ep.valid && d->ep.start_ns < before) {
		/* it began before its first evidence: judge it against what came
		 * before its own start */
		an_units_free(&u);
		before = d->ep.start_ns;
		if (an_units_build(s, nodes, nn, before, &u)) {
			an_units_free(&u);
			return;
		}
		an_episode_from_units(s, &u, d, &d->ep);
	}
	uint64_t t0 = d->ep.valid ? d->ep.start_ns : before;
	uint64_t t1 = d->ep.valid ? d->ep.end_ns : d->report_ns;
	an_share_from_units(&u, t0, t1, &d->share);
	an_units_free(&u);
}

void an_answers_update(struct an_state *s)
{
	for (uint32_t i = 0; i < s->ndiags; i++)
		an_answers_fill(s, &s->diags[i]);
}
