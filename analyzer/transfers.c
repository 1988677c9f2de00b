/* pulse-analyzer: the window's transfers and their own history
 * (analyzer/transfers.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transfers.h"

static int by_edge(const void *a, const void *b)
{
	const struct an_edge *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->rec->start < y->rec->start ? -1 : x->rec->start > y->rec->start;
}

/* observed: the OP-level variant (the per-P2P observed-rate outlier by
 * which the paper's SOTA reaches machine level, §D.11/D.12): what an
 * operator-level logger sees; no µs data. */
struct an_edge *an_edges_collect(const struct an_state *s, const struct an_window *w, int observed, int min_epochs,
				  uint32_t *np)
{
	uint32_t cap = 0, n = 0;
	struct an_edge *e = NULL;
	double ep = s->epoch_ns ? s->epoch_ns : 32000;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->status != PULSE_OP_COMPLETE || (!observed && !r->actual))
				continue;
			/* (observed: point-to-point only; a collective's members all
			 * end together, so their durations say nothing per transfer) */
			if (observed && an_is_builtin(r->op))
				continue;
			uint64_t od = r->end > r->call && r->call ? r->end - r->call : 0;
			for (uint32_t p = 0; p < r->npeers; p++) {
				const struct an_peer *q = &r->peers[p];
				double rate;
				if (observed) {
					if (q->node < 0 || (double)od < min_epochs * ep || q->expected < (1u << 20))
						continue;
					rate = (double)q->expected * 8 / (double)od;
				} else {
					if (q->node < 0 || !q->active || (double)q->active < min_epochs * ep || q->actual < (1u << 20))
						continue;
					rate = (double)q->actual * 8 / (double)q->active;
				}
				if (n == cap) {
					cap = cap ? cap * 2 : 256;
					struct an_edge *x = realloc(e, cap * sizeof *x);
					if (!x) {
						free(e);
						*np = 0;
						return NULL;
					}
					e = x;
				}
				e[n++] = (struct an_edge){ r->node, q->node, rate, r, c };
			}
		}
	}
	*np = n;
	return e;
}

uint32_t an_pairs_judge(uint64_t before, uint64_t after, struct an_edge *e, uint32_t n, struct an_pair_judge *pj,
			    double *b, double *a)
{
	uint32_t np = 0;
	if (!after || before > after)
		return 0;
	qsort(e, n, sizeof *e, by_edge);
	for (uint32_t i = 0, j; i < n; i = j) {
		uint32_t nb = 0, na = 0;
		uint32_t nearly = 0;
		for (j = i; j < n && e[j].from == e[i].from && e[j].to == e[i].to; j++) {
			if (e[j].rec->start < before)
				b[nb++] = e[j].rate;
			else if (e[j].rec->start >= after)
				a[na++] = e[j].rate;
			else
				nearly++;
		}
		/* an onset in the first iterations leaves too few before the
		 * look-back: those before the onset itself, which did not fire
		 * the trigger */
		if (nb < 3 && nb + nearly >= 3)
			for (uint32_t k = i; k < j; k++)
				if (e[k].rec->start >= before && e[k].rec->start < after)
					b[nb++] = e[k].rate;
		if (nb < 3 || na < 2 || e[i].from < 0 || e[i].to < 0)
			continue;
		double mb = an_median(b, nb), ma = an_median(a, na);
		pj[np++] = (struct an_pair_judge){ e[i].from, e[i].to, ma * AN_ACTIVE_OUTLIER < mb, mb, ma };
	}
	return np;
}

/* a slow sender slows its transfers to every peer, a shared receiver
 * (an incast, background flows into its NIC) those from every peer: two
 * thirds of one side's other pairs slowed, at most a third of the other
 * side's, two such pairs in all at least */
static int mostly(int slowed, int judged)
{
	return slowed && 3 * slowed >= 2 * judged;
}

int an_edge_side(const struct an_state *s, const struct an_window *w, int sender, int recv, uint64_t from,
			  struct an_edge_sides *es)
{
	uint32_t n = 0;
	/* three epochs, not eight: a pipeline's sends of a few MB last five
	 * or six at full rate, and each pair is only compared with itself,
	 * over several transfers (88001 #070: none judged at eight) */
	struct an_edge *e = an_edges_collect(s, w, 0, 3, &n);
	double *b = malloc((n + 1) * sizeof *b), *a = malloc((n + 1) * sizeof *a);
	struct an_pair_judge *pj = malloc((n + 1) * sizeof *pj);
	int found = -1;
	memset(es, 0, sizeof *es);
	if (!e || !b || !a || !pj)
		goto out;
	uint32_t np = an_pairs_judge(from, from, e, n, pj, b, a);
	for (uint32_t i = 0; i < np; i++) {
		if (pj[i].to == recv && pj[i].from != sender) {
			es->in_judged++;
			es->in_slowed += pj[i].slowed;
		} else if (pj[i].from == sender && pj[i].to != recv) {
			es->out_judged++;
			es->out_slowed += pj[i].slowed;
		}
	}
	if (es->in_judged + es->out_judged >= 2) {
		if (mostly(es->in_slowed, es->in_judged) && 3 * es->out_slowed <= es->out_judged)
			found = recv;
		else if (mostly(es->out_slowed, es->out_judged) && 3 * es->in_slowed <= es->in_judged)
			found = sender;
	}
	/* one end has no other transfer to judge, and the other end's all
	 * kept their rate: that end is cleared, the unexamined one is left (a
	 * pipeline's stage 0 receives from stage 1 alone; stage 1's sends to
	 * stage 2 at their usual rate clear its NIC) */
	if (found < 0 && !es->in_judged && es->out_judged && !es->out_slowed)
		found = recv;
	else if (found < 0 && !es->out_judged && es->in_judged && !es->in_slowed)
		found = sender;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "direction %s GPU %d -> %s GPU %d: into the receiver %d of %d slowed, from the sender "
			"%d of %d: %s\n", an_node_host(s, sender), s->nodes[sender].gpu, an_node_host(s, recv),
			s->nodes[recv].gpu, es->in_slowed, es->in_judged, es->out_slowed, es->out_judged,
			found < 0 ? "either" : found == recv ? "receiver" : "sender");
out:
	free(e);
	free(b);
	free(a);
	free(pj);
	return found;
}
