/* pulse-analyzer: computation fail-slow in the CPU (proxy threads):
 * operators whose duration is extended while start and actual time are
 * normal. The paper stops at the group; here the first bytes try to
 * pinpoint the node: the slow proxy posts its own first slice later than
 * its usual place in the group's start order; else the node common to the
 * slowed groups; else (all-to-all) it posts its receive buffers late, so
 * the other ranks' transfers to it start after their own first byte
 * (recv_post_votes). Group-level when none stands out. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"
#include "pulse/hook_record.h"

/* How much later than usual rank k of instance in (comm c) sent its first
 * byte, against the median of the other ranks' first bytes: now minus the
 * median of the same quantity over up to 16 earlier instances of the same
 * operator. NAN without history. */
static double lateness_shift(struct an_comm *c, const struct an_inst *in, int32_t k)
{
	const struct an_rec *r = in->recs[k];
	if (!r || !r->start)
		return NAN;
	double cur = NAN, v[16];
	int nv = 0;
	for (uint64_t back = 0; back <= 256 && nv < 16 && back <= in->seq; back++) {
		struct an_inst *y = an_inst_find(c, in->seq - back);
		if (!y || !y->recs[k] || !y->recs[k]->start || y->recs[k]->op != r->op ||
		    y->recs[k]->count != r->count)
			continue;
		double o[512];
		int n = 0;
		for (int32_t j = 0; j < c->nranks && n < 512; j++)
			if (j != k && y->recs[j] && y->recs[j]->start)
				o[n++] = (double)y->recs[j]->start;
		if (n < 2)
			continue;
		double l = (double)y->recs[k]->start - an_median(o, (size_t)n);
		if (back == 0)
			cur = l;
		else
			v[nv++] = l;
	}
	if (isnan(cur) || nv < 3)
		return NAN;
	return cur - an_median(v, (size_t)nv);
}

/* The last to arrive. Within one host's clock, rank k waited
 * start - call between its call and its first byte; a collective starts
 * when its last member arrives, so the others wait longer than usual for
 * it and it waits about as usual (2-rank rings, where every first byte is
 * the same instant and lateness_shift sees nothing). Returns now minus the
 * median over up to 16 earlier instances of the same operator, and in
 * *spread those instances' median absolute deviation; NAN without history
 * (no clock between hosts is involved). */
static double wait_shift(struct an_comm *c, const struct an_inst *in, int32_t k, double *spread)
{
	const struct an_rec *r = in->recs[k];
	if (!r || !r->start || !r->call || r->start < r->call)
		return NAN;
	double v[16], dev[16];
	int nv = 0;
	for (uint64_t back = 1; back <= 256 && nv < 16 && back <= in->seq; back++) {
		struct an_inst *y = an_inst_find(c, in->seq - back);
		const struct an_rec *q = y ? y->recs[k] : NULL;
		if (!q || !q->start || !q->call || q->start < q->call || q->op != r->op ||
		    q->count != r->count || q->status != PULSE_OP_COMPLETE)
			continue;
		v[nv++] = (double)(q->start - q->call);
	}
	if (nv < 3)
		return NAN;
	double med = an_median(v, (size_t)nv);
	for (int i = 0; i < nv; i++)
		dev[i] = fabs(v[i] - med);
	*spread = an_median(dev, (size_t)nv);
	return (double)(r->start - r->call) - med;
}

/* Receive buffers posted late (all-to-all groups). A sender starts its
 * transfer to a peer only once the peer's proxy has posted its receive
 * buffers (NCCL's slots), so within one instance a sender's transfers to
 * the peers whose proxy is on time start with its first byte, and those to
 * a peer whose proxy thread is slow (CPU contention or throttling) start
 * later. Per instance, for each receiver: the longest delay between a
 * sender's first byte and the start of its transfer to that receiver; the
 * receiver with the longest such delay, at least two epochs (one epoch is
 * the measurement's resolution) and more than every other receiver's,
 * gets a vote. Votes are counted per host in hvote (a CPU serves all its
 * GPUs); returns the number of votes cast, and adds the node of each vote
 * to nvote. */
static int recv_post_votes(const struct an_state *s, const struct an_window *w, int *nvote, int cap)
{
	uint64_t ep = s->epoch_ns ? s->epoch_ns : 32000;
	int votes = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		const struct an_inst *in = w->inst[i];
		const struct an_comm *c = s->comms[w->comm[i]];
		if (in->hung || in->nrec != (uint32_t)c->nranks || c->nranks < 3 || c->nranks > 512)
			continue;
		uint64_t late[512];
		memset(late, 0, (size_t)c->nranks * sizeof late[0]);
		int usable = 1;
		for (int32_t k = 0; k < c->nranks && usable; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->status != PULSE_OP_COMPLETE || !r->start || !an_is_p2p(r->op))
				usable = 0;
			else if (r->npeers < 2)
				usable = 0; /* one peer: nothing to compare its start with */
		}
		if (!usable)
			continue;
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			for (uint32_t p = 0; p < r->npeers; p++) {
				const struct an_peer *q = &r->peers[p];
				if (q->rank < 0 || q->rank >= c->nranks || q->rank == k || !q->start || !q->expected)
					continue;
				uint64_t dl = q->start > r->start ? q->start - r->start : 0;
				if (dl > late[q->rank])
					late[q->rank] = dl;
			}
		}
		int32_t hi = -1;
		uint64_t hv = 0, h2 = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			if (late[k] > hv) {
				h2 = hv;
				hv = late[k];
				hi = k;
			} else if (late[k] > h2) {
				h2 = late[k];
			}
		}
		if (hi < 0 || hv < 2 * ep || h2 >= hv)
			continue;
		int node = in->recs[hi]->node;
		if (node < 0 || node >= cap)
			continue;
		if (getenv("PULSE_ANALYZER_DEBUG"))
			fprintf(stderr, "cpu: %s #%" PRIu64 " comm %016" PRIx64 " transfers to rank %d (%s GPU %d) start "
				"%.3f ms after their senders' first byte (next receiver %.3f ms)\n",
				pulse_op_type_name(in->op), in->seq, c->id, hi, an_node_host(s, node),
				s->nodes[node].gpu, (double)hv / 1e6, (double)h2 / 1e6);
		nvote[node]++;
		votes++;
	}
	return votes;
}

/* Votes per node summed per host (a CPU serves all its GPUs): the host
 * with the most, its votes in *votes and the next host's in *second; -1
 * without votes (or memory). */
static int host_votes(const struct an_state *s, const int *nv, int cap, int *votes, int *second)
{
	*votes = *second = 0;
	int *hv = calloc((size_t)s->nhosts + 1, sizeof *hv);
	if (!hv)
		return -1;
	for (int j = 0; j < cap; j++)
		hv[s->nodes[j].host] += nv[j];
	int best = -1;
	for (uint32_t h = 0; h < s->nhosts; h++) {
		if (!hv[h])
			continue;
		if (best < 0 || hv[h] > hv[best]) {
			*second = best < 0 ? *second : hv[best];
			best = (int)h;
		} else if (hv[h] > *second) {
			*second = hv[h];
		}
	}
	*votes = best >= 0 ? hv[best] : 0;
	free(hv);
	return best;
}

/* rule_cpu's third way to the machine: receive buffers posted late
 * (recv_post_votes); a host with at least two votes, two thirds of them and
 * more than any other host is named. */
static int cpu_by_recv_post(const struct an_state *s, const struct an_window *w, struct an_diagnosis *d,
			    const struct an_comm *wc, const struct an_rec *ev, double wratio, int cap)
{
	int *nv = calloc((size_t)cap + 1, sizeof *nv);
	if (!nv)
		return 0;
	int total = recv_post_votes(s, w, nv, cap);
	int v, second;
	int best = host_votes(s, nv, cap, &v, &second);
	int ok = best >= 0 && v >= 2 && v * 3 >= total * 2 && second < v;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "cpu: late receive posting: %d votes, best %s with %d, second %d\n", total,
			best >= 0 ? s->hosts[best].name : "-", v, second);
	if (ok) {
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (nv[j] && s->nodes[j].host == best)
				an_diag_suspect(s, d, j, -1);
		an_diag_evidence(d, wc, ev, "late_recv_post_votes", v, total, wc->nranks);
		an_diag_margin(d, v, 0, 2.0 * total / 3.0);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal: in %d of %d all-to-all "
			 "operators, transfers to %.40s waited for its receive buffers (slow CPU proxy)",
			 wratio, v, total, s->hosts[best].name);
		an_diag_step(d, "extended durations with normal actual time: CPU; no late first byte, no node "
				"common to the slowed groups; the receiver whose incoming transfers start late "
				"in all-to-all operators pinpoints the node");
	}
	free(nv);
	return ok;
}

/* An instance in which one rank alone transmits (a one-to-all root's
 * group of sends): that rank, when its transfers to two receivers or more
 * stretched alike, their wire times within two epochs of each other (a
 * receiver that posts its buffers late holds back its own transfer
 * alone); -1 otherwise. */
static int single_sender(const struct an_state *s, const struct an_comm *c, const struct an_inst *in)
{
	uint64_t ep = s->epoch_ns ? s->epoch_ns : 32000;
	int32_t who = -1;
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || !r->start || r->end <= r->start)
			continue;
		if (who >= 0)
			return -1; /* two ranks transmit (one without history yet): not a sole sender */
		who = k;
	}
	if (who < 0 || !c->custom)
		return -1;
	const struct an_rec *r = in->recs[who];
	uint64_t lo = UINT64_MAX, hi = 0;
	uint32_t m = 0;
	for (uint32_t p = 0; p < r->npeers; p++) {
		const struct an_peer *q = &r->peers[p];
		if (!q->expected || !q->start || q->end <= q->start)
			continue;
		uint64_t dd = q->end - q->start;
		lo = dd < lo ? dd : lo;
		hi = dd > hi ? dd : hi;
		m++;
	}
	return m >= 2 && hi - lo <= 2 * ep ? who : -1;
}

/* The host of every sole sender's vote (single_sender); -1 without votes
 * or when they fall on two hosts. */
static int solo_host(const struct an_state *s, const int *svote, int nsolo, int cap)
{
	int h = -1;
	if (!nsolo)
		return -1;
	for (int j = 0; j < cap; j++) {
		if (!svote[j])
			continue;
		if (h >= 0 && s->nodes[j].host != h)
			return -1;
		h = s->nodes[j].host;
	}
	return h;
}

/* The host of the last-arrival votes (wait_shift), counted per host (a CPU
 * serves all its GPUs): two at least, two thirds of them, and more than any
 * other host's; -1 otherwise. */
static int last_arrival_host(const struct an_state *s, const int *avote, int navote, int cap, int *host)
{
	*host = -1;
	if (navote < 2)
		return -1;
	int v, second;
	int best = host_votes(s, avote, cap, &v, &second);
	int ok = best >= 0 && v >= 2 && 3 * v >= 2 * navote && second < v;
	*host = ok ? best : -1;
	return *host;
}

/* Extended durations with normal start and actual time: CPU (proxy). */
int an_comp_slow_cpu(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	struct an_inst *worst = NULL;
	struct an_comm *wc = NULL;
	double wratio = 0;
	int ext = 0;
	int cap = (int)s->nnodes;
	int *late = calloc((size_t)cap + 1, sizeof *late);
	int *pvote = calloc((size_t)cap + 1, sizeof *pvote);
	int *svote = calloc((size_t)cap + 1, sizeof *svote);
	int *avote = calloc((size_t)cap + 1, sizeof *avote);
	int npvote = 0, nsolo = 0, navote = 0, lone_vote = 0;
	char *ecomm = calloc((size_t)s->ncomms + 1, 1);
	if (!late || !ecomm || !pvote || !svote || !avote) {
		free(late);
		free(ecomm);
		free(pvote);
		free(svote);
		free(avote);
		return 0;
	}
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (in->nrec != (uint32_t)c->nranks || in->hung)
			continue;
		double ratios[256], t[256], exts[256];
		int n = 0, actnorm = 1;
		for (int32_t k = 0; k < c->nranks && n < 256; k++) {
			struct an_rec *r = in->recs[k];
			/* on the wire (first to last byte): the CPU side runs ahead */
			uint32_t wnb, anb;
			double wmax = an_rec_base(s, c, r, AN_BASE_WDUR, &wnb);
			double amed = an_rec_base(s, c, r, AN_BASE_ACT, &anb);
			if (r->status != PULSE_OP_COMPLETE || wnb < 3 || !(wmax > 0))
				continue;
			uint64_t dd = r->end > r->start && r->start ? r->end - r->start : 0;
			if (!dd)
				continue;
			exts[n] = (double)dd - wmax;
			ratios[n++] = (double)dd / wmax;
			if (anb >= 3 && r->active && (double)r->active > AN_ACTIVE_OUTLIER * amed &&
			    (double)r->active - amed > (double)s->cfg.min_slow_ns)
				actnorm = 0;
		}
		int solo = n == 1 ? single_sender(s, c, in) : -1;
		if (n < 2 && solo < 0)
			continue;
		memcpy(t, ratios, (size_t)n * sizeof *t);
		double med = an_median(t, (size_t)n);
		if (getenv("PULSE_ANALYZER_DEBUG") && med > 1.05)
			fprintf(stderr, "cpu: %s #%" PRIu64 " comm %016" PRIx64 " wire duration x%.2f\n",
				pulse_op_type_name(in->op), in->seq, c->id, med);
		if (med < s->cfg.slow_factor)
			continue;
		/* the trigger's widest floor (thr_of): a few hundred µs more than the
		 * longest recent one is what launch and proxy jitter do */
		if (an_median(exts, (size_t)n) <= (double)s->cfg.min_slow_ns)
			continue;
		/* starts must be normal: first bytes close together (a late
		 * start is a computation straggler elsewhere, not a slow proxy) */
		uint64_t s0 = 0, s1 = 0, ext = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			struct an_rec *r = in->recs[k];
			if (!r->start)
				continue;
			if (!s0 || r->start < s0)
				s0 = r->start;
			if (r->start > s1)
				s1 = r->start;
			uint64_t dd = r->end > r->start ? r->end - r->start : 0;
			uint32_t wnb;
			double wmax = an_rec_base(s, c, r, AN_BASE_WDUR, &wnb);
			if (wmax > 0 && (double)dd > wmax && (uint64_t)((double)dd - wmax) > ext)
				ext = (uint64_t)((double)dd - wmax);
		}
		if (getenv("PULSE_ANALYZER_DEBUG"))
			fprintf(stderr, "cpu:   starts spread %.3f ms, extension %.3f ms, actual time normal %d\n",
				(double)(s1 - s0) / 1e6, (double)ext / 1e6, actnorm);
		/* (the first bytes of a group's ranks spread by a few ms in normal
		 * times too; computation stragglers were ruled out before this rule
		 * runs by the delayed-start rule) */
		if (!s0 || !actnorm)
			continue;
		ext++;
		if (med > wratio) {
			wratio = med;
			worst = in;
			wc = c;
		}
		ecomm[w->comm[i]] = 1;
		if (solo >= 0 && in->recs[solo]->node >= 0 && in->recs[solo]->node < cap) {
			svote[in->recs[solo]->node]++;
			nsolo++;
			continue; /* no other first bytes to place it among */
		}
		/* the last to arrive: the rank that waited least more than usual
		 * between its call and its first byte, by more than both ranks'
		 * usual spread of that wait (and 0.1 ms) */
		{
			int lo = -1, lo2 = -1;
			double lv = 0, lv2 = 0, ls = 0, ls2 = 0;
			for (int32_t k = 0; k < c->nranks; k++) {
				double sp = 0, sh = wait_shift(c, in, k, &sp);
				if (isnan(sh))
					continue;
				if (lo < 0 || sh < lv) {
					lo2 = lo, lv2 = lv, ls2 = ls;
					lo = k, lv = sh, ls = sp;
				} else if (lo2 < 0 || sh < lv2) {
					lo2 = k, lv2 = sh, ls2 = sp;
				}
			}
			if (getenv("PULSE_ANALYZER_DEBUG") && lo2 >= 0 && in->recs[lo]->node >= 0)
				fprintf(stderr, "cpu: %s #%" PRIu64 " last to arrive rank %d (%s GPU %d): waited %+.3f ms "
						"of usual (spread %.3f), next %+.3f (spread %.3f)\n",
					pulse_op_type_name(in->op), in->seq, lo, an_node_host(s, in->recs[lo]->node),
					s->nodes[in->recs[lo]->node].gpu, lv / 1e6, ls / 1e6, lv2 / 1e6, ls2 / 1e6);
			if (lo2 >= 0 && in->recs[lo]->node >= 0 && in->recs[lo]->node < cap &&
			    lv2 - lv > 1e5 + 3 * (ls + ls2)) {
				avote[in->recs[lo]->node]++;
				navote++;
			}
		}
		/* the slow proxy posts its first slice late: the rank whose first
		 * byte is later than its usual place in this group's start order */
		int hi = -1;
		double hv = 0, h2 = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			double sh = lateness_shift(c, in, k);
			if (isnan(sh))
				continue;
			if (hi < 0 || sh > hv) {
				h2 = hi < 0 ? h2 : hv;
				hv = sh;
				hi = k;
			} else if (sh > h2) {
				h2 = sh;
			}
		}
		if (getenv("PULSE_ANALYZER_DEBUG") && hi >= 0)
			fprintf(stderr, "cpu: %s #%" PRIu64 " latest-than-usual rank %d (%s GPU %d) +%.3f ms, next +%.3f ms\n",
				pulse_op_type_name(in->op), in->seq, hi, an_node_host(s, in->recs[hi]->node),
				s->nodes[in->recs[hi]->node].gpu, hv / 1e6, h2 / 1e6);
		/* past the hosts' clock mapping bounds too: a first byte placed
		 * among other hosts' is known only to within them */
		if (hi >= 0 && in->recs[hi]->node >= 0 && in->recs[hi]->node < cap &&
		    hv > 1e5 + (double)an_clock_err_pair(s, in->recs[hi]->node)) {
			pvote[in->recs[hi]->node]++;
			npvote++;
			/* enough alone when the only slowed operator has it: one
			 * rank late (the next less than half as late, as a
			 * delayed start's one straggler), and the operator
			 * stretched past that lateness, which a slow proxy does
			 * (its every slice is late) and a straggler's late call
			 * does not (the others wait for it, no longer): seed 1137
			 * #180, a CPU in contention 0.9 ms late in the one slowed
			 * reduce-scatter, stretched 3.1 ms, was left at group
			 * level; #125, a PP stage's slow backward, a downstream DP
			 * rank 1.6 ms late in one stretched 1.2 ms */
			lone_vote = lone_vote || (2 * h2 < hv && hv < (double)ext);
		}
	}
	if (!worst) {
		free(late);
		free(ecomm);
		free(pvote);
		free(svote);
		free(avote);
		return 0;
	}
	/* the node common to the groups whose operators extended: a slow
	 * proxy (or CPU) slows every group its rank is in; the other members
	 * of one group are in other groups that stay normal */
	int ngroups = 0;
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		if (!ecomm[ci])
			continue;
		ngroups++;
		const struct an_comm *c = s->comms[ci];
		for (int32_t k = 0; k < c->nranks; k++)
			if (c->m[k].node >= 0 && c->m[k].node < cap)
				late[c->m[k].node]++;
	}
	d->cls = AN_COMP_SLOW;
	int best = -1, second = -1;
	for (int j = 0; j < cap; j++) {
		if (!late[j])
			continue;
		if (best < 0 || late[j] > late[best])
			second = best, best = j;
		else if (second < 0 || late[j] > late[second])
			second = j;
	}
	struct an_rec *ev = NULL;
	for (int32_t k = 0; k < wc->nranks; k++)
		if (!ev || (worst->recs[k]->end - worst->recs[k]->start) > (ev->end - ev->start))
			ev = worst->recs[k];
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "cpu: %d extended groups; best %s GPU %d in %d, second %d\n", ngroups,
			best >= 0 ? an_node_host(s, best) : "-", best >= 0 ? s->nodes[best].gpu : -1,
			best >= 0 ? late[best] : 0, second >= 0 ? late[second] : 0);
	/* votes per host: a CPU serves all the host's GPUs */
	int pv, psecond, ab = -1;
	int pbest = host_votes(s, pvote, cap, &pv, &psecond);
	/* two thirds of the votes, two at least; or the one vote of the one
	 * slowed operator, when it stands out alone (lone_vote) */
	if (pbest >= 0 && ((pv >= 2 && pv * 3 >= npvote * 2 && psecond < pv) ||
			   (npvote == 1 && ngroups == 1 && lone_vote))) {
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (pvote[j] && s->nodes[j].host == pbest)
				an_diag_suspect(s, d, j, -1);
		an_diag_evidence(d, wc, ev, "late_first_byte_votes", pv, npvote, wc->nranks);
		an_diag_margin(d, pv, 0, 2.0 * npvote / 3.0);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal (CPU proxy): in %d of %d "
			 "slowed operators %s's rank sent its first byte later than usual",
			 wratio, pv, npvote, s->hosts[pbest].name);
		an_diag_step(d, "extended durations with normal actual time: CPU; the rank whose first byte "
				"comes later than usual pinpoints the node");
	} else if (solo_host(s, svote, nsolo, cap) >= 0) {
		int h = solo_host(s, svote, nsolo, cap);
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (svote[j] && s->nodes[j].host == h)
				an_diag_suspect(s, d, j, -1);
		an_diag_evidence(d, wc, ev, "extended_sole_sender", nsolo, nsolo, wc->nranks);
		an_diag_margin(d, wratio, 1.0, s->cfg.slow_factor);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal (CPU proxy): %.40s's rank, "
			 "the one sender in %d of them, stretched its transfers to every receiver alike",
			 wratio, s->hosts[h].name, nsolo);
		an_diag_step(d, "extended durations with normal actual time: CPU; one sender whose transfers "
				"to all receivers stretched alike pinpoints the node");
	} else if (best >= 0 && ngroups >= 2 && late[best] == ngroups && (second < 0 || late[second] < late[best])) {
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, best, -1);
		an_diag_evidence(d, wc, ev, "extended_groups", late[best], ngroups, wc->nranks);
		an_diag_margin(d, late[best], 0, 2);
		snprintf(d->why, sizeof d->why,
			 "operators take %.1fx their usual time on the wire while every rank's actual "
			 "transmission time is normal (a computation bottleneck on a CPU proxy thread); "
			 "%s GPU %d is the one member of all %d groups that slowed down",
			 wratio, an_node_host(s, best), s->nodes[best].gpu, ngroups);
		an_diag_step(d, "extended durations with normal actual time: CPU; node common to the slowed groups");
	} else if (cpu_by_recv_post(s, w, d, wc, ev, wratio, cap)) {
		/* the slow proxy posts its receive buffers late */
	} else if (last_arrival_host(s, avote, navote, cap, &ab) >= 0) {
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (avote[j] && s->nodes[j].host == ab)
				an_diag_suspect(s, d, j, -1);
		int av = 0;
		for (int j = 0; j < cap; j++)
			if (s->nodes[j].host == ab)
				av += avote[j];
		an_diag_evidence(d, wc, ev, "last_arrival_votes", av, navote, wc->nranks);
		an_diag_margin(d, av, 0, 2.0 * navote / 3.0);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal (CPU): in %d of %d slowed "
			 "operators the others waited longer than usual from call to first byte and "
			 "%.40s's rank did not: it arrived last",
			 wratio, av, navote, s->hosts[ab].name);
		an_diag_step(d, "extended durations with normal actual time: CPU; the rank the others "
				"waited for (its call-to-first-byte wait as usual, theirs longer) pinpoints the node");
	} else {
		d->level = AN_LEVEL_GROUP;
		an_diag_members(s, d, wc);
		an_diag_evidence(d, wc, ev, "duration_ratio", wratio, 1.0, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "%s #%" PRIu64 " in a %s group takes %.1fx its usual time on every rank while the "
			 "ranks' actual transmission times are normal: a computation (CPU) bottleneck "
			 "somewhere in this group; no single member stands out",
			 pulse_op_type_name(worst->op), worst->seq, an_par_label(wc->par), wratio);
		an_diag_step(d, "extended durations with normal actual time: CPU, group level");
	}
	d->onset_ns = worst->first_call;
	(void)ext;
	free(late);
	free(ecomm);
	free(pvote);
	free(svote);
	free(avote);
	return 1;
}
