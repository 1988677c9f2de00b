/* pulse-analyzer: Pulse's localization from µs-level operator metrics
 * (pulse.txt §6.2, the cases of §7.2 and Appendix D).
 *
 * Hang (shared with the OP-level baseline, an_localize_hang):
 *   1. computation fail-stop: the first missing start. Walking the hung
 *      records in time order, the first peer that is awaited (a member with
 *      no record of a hung collective, or the peer of an unfinished P2P)
 *      and that is idle itself (no call outstanding, nothing hung) stopped
 *      issuing: that rank's machine.
 *   2. communication fail-stop, built-in collectives: in the first hung
 *      collective, the rank with the smallest volume sent (actual/expected).
 *   3. custom collectives: the node common to the uncompleted P2Ps.
 * Slow:
 *   1. communication fail-slow, built-in collectives (DP/TP groups): the
 *      rank whose actual communication time (active_ns, the sum of epochs
 *      with a non-zero rate) is the outlier of its operator, by votes over
 *      the window;
 *   2. communication fail-slow, custom collectives (EP all-to-all, P2P
 *      patterns): the lowest rank-level actual rate averaged over the last
 *      k=10 of the rank's collectives;
 *   3. computation fail-slow: the first operator in time order whose start
 *      is delayed (the rank's compute time before it against its running
 *      baseline, PP groups first), with the other GPUs of that host that
 *      show the same delay (TP inside a host synchronizes them, §D.4);
 *   4. computation fail-slow, CPU (proxy threads): operators whose duration
 *      is extended while start and actual time are normal. The paper stops
 *      at the group; here the per-peer first-byte times try to pinpoint the
 *      node: the slow proxy posts its own sends late and advertises its
 *      receive buffers late, so the late edges (peer start against both
 *      ends' calls) share that node. Group-level when they do not. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "pulse/hook_record.h"

#define ACTIVE_OUTLIER 1.15 /* actual time this much above the operator's median */
#define RATE_OUTLIER 1.15   /* rank-level rate this much below the members' median */

/* ---- diagnoses ---- */

void an_diag_init(struct an_state *s, struct an_diagnosis *d, const char *localizer,
		  const struct an_trigger *t)
{
	memset(d, 0, sizeof *d);
	d->localizer = localizer;
	d->report_ns = s->report_ns ? s->report_ns : s->now_ns;
	d->onset_ns = t->onset_ns;
	snprintf(d->trigger, sizeof d->trigger, "%s", t->why);
}

void an_diag_suspect(const struct an_state *s, struct an_diagnosis *d, int node, int32_t rank)
{
	if (node < 0 || d->nsuspects >= AN_MAX_SUSPECTS)
		return;
	const struct an_node *n = &s->nodes[node];
	for (uint32_t i = 0; i < d->nsuspects; i++)
		if (!strcmp(d->suspects[i].host, s->hosts[n->host].name) && d->suspects[i].gpu == n->gpu)
			return;
	struct an_suspect *x = &d->suspects[d->nsuspects++];
	snprintf(x->host, sizeof x->host, "%s", s->hosts[n->host].name);
	x->gpu = n->gpu;
	x->rank = rank;
}

void an_diag_members(const struct an_state *s, struct an_diagnosis *d, const struct an_comm *c)
{
	d->nmembers = 0;
	for (int32_t i = 0; i < c->nranks && d->nmembers < AN_MAX_MEMBERS; i++) {
		struct an_suspect *x = &d->members[d->nmembers++];
		int node = c->m[i].node;
		if (node >= 0) {
			snprintf(x->host, sizeof x->host, "%s", s->hosts[s->nodes[node].host].name);
			x->gpu = s->nodes[node].gpu;
		} else {
			snprintf(x->host, sizeof x->host, "?");
			x->gpu = -1;
		}
		x->rank = i;
	}
}

void an_diag_step(struct an_diagnosis *d, const char *fmt, ...)
{
	size_t l = strlen(d->steps);
	if (l + 4 >= sizeof d->steps)
		return;
	if (l) {
		strcat(d->steps, "; ");
		l += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->steps + l, sizeof d->steps - l, fmt, ap);
	va_end(ap);
}

static int same_verdict(const struct an_diagnosis *a, const struct an_diagnosis *b)
{
	if (strcmp(a->localizer, b->localizer) || a->cls != b->cls || a->level != b->level)
		return 0;
	if (a->level == AN_LEVEL_MACHINE)
		return a->nsuspects && b->nsuspects && !strcmp(a->suspects[0].host, b->suspects[0].host) &&
		       a->suspects[0].gpu == b->suspects[0].gpu;
	return a->comm_id == b->comm_id;
}

int an_diag_commit(struct an_state *s, const struct an_diagnosis *d)
{
	for (uint32_t i = 0; i < s->ndiags; i++)
		if (same_verdict(&s->diags[i], d)) {
			s->st.diag_dups++;
			return 0;
		}
	if (s->ndiags >= AN_MAX_DIAG)
		return 0;
	if (s->ndiags == s->diags_cap) {
		uint32_t n = s->diags_cap ? s->diags_cap * 2 : 8;
		struct an_diagnosis *p = realloc(s->diags, n * sizeof *p);
		if (!p)
			return 0;
		s->diags = p;
		s->diags_cap = n;
	}
	s->diags[s->ndiags++] = *d;
	an_log(s, "diagnosis (%s): %s, %s", d->localizer, an_class_name(d->cls),
	       d->level == AN_LEVEL_MACHINE ? "machine level" : "group level");
	return 1;
}

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

static uint64_t lookback_ns(const struct an_state *s)
{
	double best = 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < s->comms[i]->nsigs; k++) {
			double med;
			if (an_roll_stats(&s->comms[i]->sigs[k].period, &med, NULL) == 0 && med > best)
				best = med;
		}
	if (best < 100e6)
		best = 100e6;
	if (best > 30e9)
		best = 30e9;
	return (uint64_t)best;
}

void an_window_build(struct an_state *s, const struct an_trigger *t, struct an_window *w)
{
	memset(w, 0, sizeof *w);
	uint64_t back = lookback_ns(s);
	uint64_t onset = t->onset_ns ? t->onset_ns : t->fired_ns;
	w->t0 = onset > back ? onset - back : 0;
	w->t1 = s->now_ns;
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

static const char *par_label(uint8_t p)
{
	switch (p) {
	case PULSE_PAR_DP: return "DP";
	case PULSE_PAR_TP: return "TP";
	case PULSE_PAR_PP: return "PP";
	case PULSE_PAR_EP: return "EP";
	case PULSE_PAR_NONE: return "small-volume";
	default: return "unlabelled";
	}
}

static void evidence(struct an_diagnosis *d, const struct an_comm *c, const struct an_rec *r,
		     const char *metric, double value, double median, uint32_t nranks)
{
	d->comm_id = c->id;
	d->seq = r ? r->seq : 0;
	d->op = r ? r->op : 0;
	snprintf(d->metric, sizeof d->metric, "%s", metric);
	d->value = value;
	d->median = median;
	d->evidence_ranks = nranks;
}

/* ---- hang ---- */

static int node_idle(const struct an_state *s, int node)
{
	const struct an_node *n = &s->nodes[node];
	if (s->hosts[n->host].skewed)
		return 0; /* unknown, not idle */
	return !n->open_hung && n->last_call <= n->last_end;
}

static int is_hung(const struct an_rec *r)
{
	return r && (r->status == PULSE_OP_HUNG || r->status == PULSE_OP_NOT_STARTED);
}

int an_localize_hang(struct an_state *s, const struct an_trigger *t, int oplevel)
{
	struct an_window w;
	an_window_build(s, t, &w);
	struct an_diagnosis d;
	an_diag_init(s, &d, oplevel ? "op-level" : "pulse", t);
	int found = 0;

	/* 1. the first missing start */
	for (uint32_t i = 0; i < w.n && !found; i++) {
		struct an_inst *in = w.inst[i];
		struct an_comm *c = s->comms[w.comm[i]];
		if (!in->hung)
			continue;
		for (int32_t k = 0; k < c->nranks && !found; k++) {
			struct an_rec *r = in->recs[k];
			if (!is_hung(r))
				continue;
			/* who does this hung record wait for? */
			if (an_is_builtin(r->op)) {
				for (int32_t j = 0; j < c->nranks; j++) {
					int node = c->m[j].node;
					if (in->recs[j] || node < 0 || !node_idle(s, node))
						continue;
					d.cls = AN_COMP_STOP;
					d.level = AN_LEVEL_MACHINE;
					an_diag_suspect(s, &d, node, j);
					evidence(&d, c, r, "start_ns", 0, (double)in->first_call, in->nrec);
					d.onset_ns = s->nodes[node].last_end;
					snprintf(d.why, sizeof d.why,
						 "%s #%" PRIu64 " (%s group, %u ranks) hangs: %u ranks called it, rank %d "
						 "never did and issues nothing since its last operator: it stopped computing",
						 pulse_op_type_name(r->op), r->seq, par_label(c->par), c->nranks, in->nrec, j);
					found = 1;
					break;
				}
			} else {
				for (uint32_t p = 0; p < r->npeers; p++) {
					const struct an_peer *q = &r->peers[p];
					if (q->complete || q->node < 0 || !node_idle(s, q->node))
						continue;
					d.cls = AN_COMP_STOP;
					d.level = AN_LEVEL_MACHINE;
					an_diag_suspect(s, &d, q->node, q->rank);
					evidence(&d, c, r, "start_ns", 0, (double)r->call, 2);
					d.onset_ns = s->nodes[q->node].last_end;
					snprintf(d.why, sizeof d.why,
						 "%s #%" PRIu64 " (%s group) of rank %d waits for rank %d, which never "
						 "started its side and issues nothing since its last operator: it stopped computing",
						 pulse_op_type_name(r->op), r->seq, par_label(c->par), r->rank, q->rank);
					found = 1;
					break;
				}
			}
		}
	}
	if (found)
		an_diag_step(&d, "walked the hung operators in time order: first missing start found");

	/* 2. built-in collective: the smallest volume in the first hung one */
	for (uint32_t i = 0; i < w.n && !found; i++) {
		struct an_inst *in = w.inst[i];
		struct an_comm *c = s->comms[w.comm[i]];
		if (!in->hung || !an_is_builtin(in->op) || in->nrec < 2)
			continue;
		double frac[AN_MAX_RANKS > 256 ? 256 : AN_MAX_RANKS], t[256];
		int32_t rk[256];
		int n = 0;
		for (int32_t k = 0; k < c->nranks && n < 256; k++) {
			struct an_rec *r = in->recs[k];
			if (!r || !r->expected)
				continue;
			frac[n] = (double)r->actual / (double)r->expected;
			rk[n++] = k;
		}
		if (n < 2)
			continue;
		memcpy(t, frac, (size_t)n * sizeof *t);
		double med = an_median(t, (size_t)n);
		int lo = 0;
		for (int j = 1; j < n; j++)
			if (frac[j] < frac[lo])
				lo = j;
		struct an_rec *r = in->recs[rk[lo]];
		if (oplevel) {
			d.cls = AN_COMM_STOP;
			d.level = AN_LEVEL_GROUP;
			an_diag_members(s, &d, c);
			evidence(&d, c, r, "status", 0, 0, in->nrec);
			d.comm_id = c->id;
			snprintf(d.why, sizeof d.why,
				 "%s #%" PRIu64 " hangs on all %d ranks of this %s group; operator-level data "
				 "cannot tell which member stopped communicating",
				 pulse_op_type_name(in->op), in->seq, c->nranks, par_label(c->par));
			found = 1;
			break;
		}
		if (frac[lo] < 0.97 * med || (med > 0 && frac[lo] == 0)) {
			d.cls = AN_COMM_STOP;
			d.level = AN_LEVEL_MACHINE;
			an_diag_suspect(s, &d, r->node, r->rank);
			evidence(&d, c, r, "actual_bytes", (double)r->actual,
				 med * (double)r->expected, (uint32_t)n);
			snprintf(d.why, sizeof d.why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d sent the least: "
				 "%.1f%% of its expected volume against a median of %.1f%%",
				 pulse_op_type_name(in->op), in->seq, par_label(c->par), c->nranks, r->rank,
				 100 * frac[lo], 100 * med);
			an_diag_step(&d, "hung %s group: compared the volume each rank sent", par_label(c->par));
			found = 1;
		} else {
			d.cls = AN_COMM_STOP;
			d.level = AN_LEVEL_GROUP;
			an_diag_members(s, &d, c);
			evidence(&d, c, r, "actual_bytes", (double)r->actual, med * (double)r->expected,
				 (uint32_t)n);
			snprintf(d.why, sizeof d.why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; every rank sent about the "
				 "same volume (%.1f%% of expected), so no single rank stands out",
				 pulse_op_type_name(in->op), in->seq, par_label(c->par), c->nranks, 100 * med);
			found = 1;
		}
	}

	/* 3. custom collectives / P2P: the node common to the uncompleted P2Ps */
	if (!found) {
		int cap = (int)s->nnodes;
		int *cnt = calloc((size_t)cap + 1, sizeof *cnt);
		double *sent = calloc((size_t)cap + 1, sizeof *sent);
		double *exp = calloc((size_t)cap + 1, sizeof *exp);
		int pairs = 0;
		struct an_rec *first = NULL;
		struct an_comm *fc = NULL;
		for (uint32_t i = 0; cnt && sent && exp && i < w.n; i++) {
			struct an_inst *in = w.inst[i];
			struct an_comm *c = s->comms[w.comm[i]];
			if (!in->hung)
				continue;
			for (int32_t k = 0; k < c->nranks; k++) {
				struct an_rec *r = in->recs[k];
				if (!is_hung(r) || an_is_builtin(r->op))
					continue;
				for (uint32_t p = 0; p < r->npeers; p++) {
					const struct an_peer *q = &r->peers[p];
					if (q->complete || q->node < 0 || q->node >= cap || r->node >= cap)
						continue;
					if (!q->expected && r->op != PULSE_HOOK_OP_RECV)
						continue;
					cnt[r->node]++;
					cnt[q->node]++;
					sent[r->node] += (double)q->actual;
					exp[r->node] += (double)q->expected;
					pairs++;
					if (!first) {
						first = r;
						fc = c;
					}
				}
			}
		}
		if (pairs) {
			int best = -1, second = -1;
			for (int j = 0; j < cap; j++) {
				if (!cnt[j])
					continue;
				if (best < 0 || cnt[j] > cnt[best])
					second = best, best = j;
				else if (second < 0 || cnt[j] > cnt[second])
					second = j;
			}
			d.cls = AN_COMM_STOP;
			d.level = AN_LEVEL_MACHINE;
			if (cnt[best] == pairs && second >= 0 && cnt[second] == pairs) {
				/* one pair: both ends; the one that sent the smaller share first */
				double fb = exp[best] > 0 ? sent[best] / exp[best] : 1;
				double fs = exp[second] > 0 ? sent[second] / exp[second] : 1;
				if (fs < fb) {
					int x = best;
					best = second;
					second = x;
				}
				an_diag_suspect(s, &d, best, -1);
				an_diag_suspect(s, &d, second, -1);
			} else {
				an_diag_suspect(s, &d, best, -1);
			}
			evidence(&d, fc, first, "incomplete_p2p", cnt[best], pairs, (uint32_t)pairs);
			snprintf(d.why, sizeof d.why,
				 "%d point-to-point transfers of %s groups did not complete; %s GPU %d is an end "
				 "of %d of them%s",
				 pairs, par_label(fc->par), an_node_host(s, best), s->nodes[best].gpu, cnt[best],
				 d.nsuspects > 1 ? " (as is its single peer: both named)" : "");
			an_diag_step(&d, "custom collective: node common to the uncompleted P2Ps");
			found = 1;
		}
		free(cnt);
		free(sent);
		free(exp);
	}
	an_window_free(&w);
	if (!found)
		return 0;
	if (!d.onset_ns)
		d.onset_ns = t->onset_ns;
	return an_diag_commit(s, &d);
}

/* ---- slow: shared rule, delayed start ---- */


/* A start is delayed when the compute time before it exceeds the rank's
 * usual one by DELAY_REL of it (and min_slow_ns, and 4 MADs of its jitter). */
#define DELAY_REL 0.1
static double rec_delay(const struct an_state *s, const struct an_rec *r, int *sig)
{
	*sig = 0;
	if (!r || r->gap_nb < 3 || r->pre_gap < 0)
		return 0;
	double d = (double)r->pre_gap - r->gap_med;
	double thr = DELAY_REL * r->gap_med;
	if (thr < (double)s->cfg.min_slow_ns)
		thr = (double)s->cfg.min_slow_ns;
	if (thr < 4 * r->gap_mad)
		thr = 4 * r->gap_mad;
	*sig = d > thr;
	return d;
}

static int par_rank(uint8_t p)
{
	switch (p) {
	case PULSE_PAR_PP: return 0;
	case PULSE_PAR_EP: return 1;
	case PULSE_PAR_DP: return 2;
	default: return 3;
	}
}

int an_rule_delayed_start(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	struct an_rec *best = NULL;
	struct an_comm *bc = NULL;
	struct an_inst *bi = NULL;
	double bdelay = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			struct an_rec *r = in->recs[k];
			int sig;
			double dl = rec_delay(s, r, &sig);
			if (!sig || r->call < w->t0)
				continue;
			/* the others of this operator must not be equally late */
			double o[256];
			int n = 0;
			for (int32_t j = 0; j < c->nranks && n < 256; j++) {
				int sg;
				if (j != k && in->recs[j] && in->recs[j]->gap_nb >= 3 && in->recs[j]->pre_gap >= 0)
					o[n++] = rec_delay(s, in->recs[j], &sg);
			}
			if (n && an_median(o, (size_t)n) > 0.5 * dl)
				continue;
			if (!best || r->call < best->call ||
			    (r->call == best->call && par_rank(c->par) < par_rank(bc->par))) {
				best = r;
				bc = c;
				bi = in;
				bdelay = dl;
			}
		}
	}
	if (!best)
		return 0;
	(void)bi;
	d->cls = AN_COMP_SLOW;
	d->level = AN_LEVEL_MACHINE;
	an_diag_suspect(s, d, best->node, best->rank);
	/* the other GPUs of the same host that start late in the window */
	int host = s->nodes[best->node].host;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			struct an_rec *r = in->recs[k];
			int sig;
			rec_delay(s, r, &sig);
			if (sig && s->nodes[r->node].host == host && r->node != best->node)
				an_diag_suspect(s, d, r->node, r->rank);
		}
	}
	evidence(d, bc, best, "start_ns", (double)best->pre_gap, best->gap_med, 1);
	d->onset_ns = best->call > (uint64_t)best->pre_gap ? best->call - (uint64_t)best->pre_gap : best->call;
	snprintf(d->why, sizeof d->why,
		 "the first operator in time order that started late: %s #%" PRIu64 " (%s group) on rank %d "
		 "began %.1f ms after the rank's previous operator, usually %.1f ms; the peers were on time%s",
		 pulse_op_type_name(best->op), best->seq, par_label(bc->par), best->rank,
		 (double)best->pre_gap / 1e6, best->gap_med / 1e6,
		 d->nsuspects > 1 ? " (other GPUs of the same host are late too: they wait for it inside the host)" : "");
	(void)bdelay;
	return 1;
}

/* ---- Pulse slow rules ---- */

static int rule_active_outlier(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	int cap = (int)s->nnodes;
	int *votes = calloc((size_t)cap + 1, sizeof *votes);
	double *bestr = calloc((size_t)cap + 1, sizeof *bestr);
	if (!votes || !bestr) {
		free(votes);
		free(bestr);
		return 0;
	}
	int outl = 0, elig = 0;
	struct an_rec *ev = NULL;
	struct an_comm *evc = NULL;
	double evmed = 0;
	uint32_t evn = 0;
	int ep = s->epoch_ns ? (int)s->epoch_ns : 32000;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (!an_is_builtin(in->op) || in->nrec != (uint32_t)c->nranks)
			continue;
		double v[256], t[256];
		int32_t rk[256];
		int n = 0;
		for (int32_t k = 0; k < c->nranks && n < 256; k++) {
			struct an_rec *r = in->recs[k];
			if (r->status != PULSE_OP_COMPLETE || !r->actual || !r->active)
				continue;
			v[n] = (double)r->active;
			rk[n++] = k;
		}
		if (n < 2)
			continue;
		elig++;
		memcpy(t, v, (size_t)n * sizeof *t);
		double med = n == 2 ? (v[0] < v[1] ? v[0] : v[1]) : an_median(t, (size_t)n);
		int hi = 0;
		for (int j = 1; j < n; j++)
			if (v[j] > v[hi])
				hi = j;
		if (!(v[hi] > ACTIVE_OUTLIER * med && v[hi] - med > 2.0 * ep))
			continue;
		struct an_rec *r = in->recs[rk[hi]];
		outl++;
		votes[r->node]++;
		if (v[hi] / med > bestr[r->node]) {
			bestr[r->node] = v[hi] / med;
			if (!ev || r->node != ev->node || 1) {
				/* evidence: the strongest outlier of the eventual culprit (set below) */
			}
		}
		(void)evn;
	}
	int best = -1;
	for (int j = 0; j < cap; j++)
		if (votes[j] && (best < 0 || votes[j] > votes[best]))
			best = j;
	int ok = best >= 0 && votes[best] * 2 >= outl && (votes[best] >= 2 || elig <= 2);
	if (ok) {
		/* the culprit's strongest outlier as evidence */
		double br = 0;
		for (uint32_t i = 0; i < w->n; i++) {
			struct an_inst *in = w->inst[i];
			struct an_comm *c = s->comms[w->comm[i]];
			if (!an_is_builtin(in->op) || in->nrec != (uint32_t)c->nranks)
				continue;
			double t[256];
			int n = 0;
			struct an_rec *mine = NULL;
			for (int32_t k = 0; k < c->nranks && n < 256; k++) {
				struct an_rec *r = in->recs[k];
				if (r->status != PULSE_OP_COMPLETE || !r->actual || !r->active)
					continue;
				t[n++] = (double)r->active;
				if (r->node == best)
					mine = r;
			}
			if (!mine || n < 2)
				continue;
			double med = an_median(t, (size_t)n);
			if ((double)mine->active / med > br) {
				br = (double)mine->active / med;
				ev = mine;
				evc = c;
				evmed = med;
				evn = (uint32_t)n;
			}
		}
	}
	if (ok && ev) {
		d->cls = AN_COMM_SLOW;
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, best, ev->rank);
		evidence(d, evc, ev, "active_ns", (double)ev->active, evmed, evn);
		d->onset_ns = ev->call;
		snprintf(d->why, sizeof d->why,
			 "in the %s group's %s #%" PRIu64 ", rank %d spent %.2f ms actually transmitting (epochs "
			 "with a non-zero rate) against a median of %.2f ms; it was the outlier in %d of %d "
			 "slow collectives: its link or NIC is slow",
			 par_label(evc->par), pulse_op_type_name(ev->op), ev->seq, ev->rank,
			 (double)ev->active / 1e6, evmed / 1e6, votes[best], outl);
	}
	free(votes);
	free(bestr);
	return ok && ev;
}

/* Rank-level actual rate of custom collectives, averaged over each node's
 * last k records in the window. Returns 1 with d filled. observed: the
 * OP-level variant (volume / duration). */
int an_rule_custom_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d,
			int observed);
int an_rule_custom_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d,
			int observed)
{
	int done = 0;
	uint32_t k = s->cfg.custom_k;
	for (uint32_t ci = 0; ci < s->ncomms && !done; ci++) {
		struct an_comm *c = s->comms[ci];
		if (!c->custom || c->nranks < 2)
			continue;
		double *sum = calloc((size_t)c->nranks, sizeof *sum);
		uint32_t *cnt = calloc((size_t)c->nranks, sizeof *cnt);
		struct an_rec **last = calloc((size_t)c->nranks, sizeof *last);
		if (!sum || !cnt || !last) {
			free(sum);
			free(cnt);
			free(last);
			break;
		}
		/* walk the window backwards: the last k per rank */
		for (uint32_t i = w->n; i-- > 0;) {
			if (w->comm[i] != (int)ci)
				continue;
			struct an_inst *in = w->inst[i];
			for (int32_t r = 0; r < c->nranks; r++) {
				struct an_rec *x = in->recs[r];
				if (!x || x->status != PULSE_OP_COMPLETE || !x->actual || cnt[r] >= k ||
				    !an_is_p2p(x->op))
					continue;
				double v;
				if (observed) {
					uint64_t dur = x->end > x->call && x->call ? x->end - x->call : x->dur;
					if (!dur || !x->expected)
						continue;
					v = (double)x->expected * 8 / (double)dur;
				} else {
					if (!(x->rate_gbps > 0))
						continue;
					v = x->rate_gbps;
				}
				sum[r] += v;
				cnt[r]++;
				if (!last[r])
					last[r] = x;
			}
		}
		double avg[AN_MAX_RANKS > 512 ? 512 : AN_MAX_RANKS], t[512];
		int32_t rk[512];
		int n = 0;
		for (int32_t r = 0; r < c->nranks && n < 512; r++)
			if (cnt[r] >= (k < 3 ? k : 3)) {
				avg[n] = sum[r] / cnt[r];
				rk[n++] = r;
			}
		if (n >= 3) {
			memcpy(t, avg, (size_t)n * sizeof *t);
			double med = an_median(t, (size_t)n);
			int lo = 0;
			for (int j = 1; j < n; j++)
				if (avg[j] < avg[lo])
					lo = j;
			if (avg[lo] * RATE_OUTLIER < med) {
				struct an_rec *x = last[rk[lo]];
				d->cls = AN_COMM_SLOW;
				d->level = AN_LEVEL_MACHINE;
				an_diag_suspect(s, d, x->node, x->rank);
				evidence(d, c, x, observed ? "observed_rate_gbps" : "rank_rate_gbps", avg[lo], med,
					 (uint32_t)n);
				d->onset_ns = x->call;
				snprintf(d->why, sizeof d->why,
					 "in the %s group's %s operators, rank %d's %s averaged over its last %u is "
					 "%.1f Gb/s against a median of %.1f Gb/s",
					 par_label(c->par), pulse_op_type_name(x->op), x->rank,
					 observed ? "observed rate (volume / duration)" : "rank-level actual rate",
					 cnt[rk[lo]], avg[lo], med);
				done = 1;
			}
		}
		free(sum);
		free(cnt);
		free(last);
	}
	return done;
}

/* Extended durations with normal start and actual time: CPU (proxy). */
static int rule_cpu(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	struct an_inst *worst = NULL;
	struct an_comm *wc = NULL;
	double wratio = 0;
	int ext = 0;
	int cap = (int)s->nnodes;
	int *late = calloc((size_t)cap + 1, sizeof *late);
	int nlate = 0;
	if (!late)
		return 0;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (in->nrec != (uint32_t)c->nranks || in->hung)
			continue;
		double ratios[256], t[256];
		int n = 0, actnorm = 1;
		for (int32_t k = 0; k < c->nranks && n < 256; k++) {
			struct an_rec *r = in->recs[k];
			if (r->status != PULSE_OP_COMPLETE || r->dur_nb < 3 || !(r->dur_med > 0))
				continue;
			uint64_t dd = r->end > r->call && r->call ? r->end - r->call : 0;
			if (!dd)
				continue;
			ratios[n++] = (double)dd / r->dur_med;
			if (r->act_nb >= 3 && r->active && (double)r->active > ACTIVE_OUTLIER * r->act_med &&
			    (double)r->active - r->act_med > (double)s->cfg.min_slow_ns)
				actnorm = 0;
		}
		if (n < 2 || !actnorm)
			continue;
		memcpy(t, ratios, (size_t)n * sizeof *t);
		double med = an_median(t, (size_t)n);
		if (med < s->cfg.slow_factor)
			continue;
		ext++;
		if (med > wratio) {
			wratio = med;
			worst = in;
			wc = c;
		}
		/* late edges: a peer's first byte against both ends' calls */
		if (!an_is_builtin(in->op))
			continue;
		double lat[1024];
		int ln = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			struct an_rec *r = in->recs[k];
			for (uint32_t p = 0; p < r->npeers && ln < 1024; p++) {
				const struct an_peer *q = &r->peers[p];
				if (!q->start || q->rank < 0 || q->rank >= c->nranks || !in->recs[q->rank])
					continue;
				uint64_t ready = r->call > in->recs[q->rank]->call ? r->call : in->recs[q->rank]->call;
				lat[ln++] = q->start > ready ? (double)(q->start - ready) : 0;
			}
		}
		if (ln < 3)
			continue;
		double tl[1024];
		memcpy(tl, lat, (size_t)ln * sizeof *tl);
		an_median(tl, (size_t)ln); /* sorts */
		double ref = tl[ln / 4];  /* the punctual edges: lower quartile */
		double ep = s->epoch_ns ? s->epoch_ns : 32000;
		double margin = 4 * ep > 500e3 ? 4 * ep : 500e3;
		int li = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			struct an_rec *r = in->recs[k];
			for (uint32_t p = 0; p < r->npeers && li < ln; p++) {
				const struct an_peer *q = &r->peers[p];
				if (!q->start || q->rank < 0 || q->rank >= c->nranks || !in->recs[q->rank])
					continue;
				double l = lat[li++];
				if (l > ref + margin && r->node < cap && q->node >= 0 && q->node < cap) {
					late[r->node]++;
					late[q->node]++;
					nlate++;
				}
			}
		}
	}
	if (!worst) {
		free(late);
		return 0;
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
		if (!ev || (worst->recs[k]->end - worst->recs[k]->call) > (ev->end - ev->call))
			ev = worst->recs[k];
	if (best >= 0 && nlate >= 2 && late[best] >= (nlate * 9) / 10 &&
	    (second < 0 || late[second] * 2 <= late[best])) {
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, best, -1);
		evidence(d, wc, ev, "late_first_byte_edges", late[best], nlate, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "operators take %.1fx their usual time while every rank's actual transmission time "
			 "is normal (a computation bottleneck on a CPU proxy thread); %s GPU %d is an end of "
			 "%d of the %d transfers whose first byte left late",
			 wratio, an_node_host(s, best), s->nodes[best].gpu, late[best], nlate);
		an_diag_step(d, "extended durations with normal actual time: CPU; late first bytes pinpoint the node");
	} else {
		d->level = AN_LEVEL_GROUP;
		an_diag_members(s, d, wc);
		evidence(d, wc, ev, "duration_ratio", wratio, 1.0, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "%s #%" PRIu64 " in a %s group takes %.1fx its usual time on every rank while the "
			 "ranks' actual transmission times are normal: a computation (CPU) bottleneck "
			 "somewhere in this group; no single member stands out",
			 pulse_op_type_name(worst->op), worst->seq, par_label(wc->par), wratio);
		an_diag_step(d, "extended durations with normal actual time: CPU, group level");
	}
	d->onset_ns = worst->first_call;
	(void)ext;
	free(late);
	return 1;
}

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

int an_localize_pulse(struct an_state *s, const struct an_trigger *t)
{
	if (t->kind == AN_TRIG_HANG)
		return an_localize_hang(s, t, 0);
	struct an_window w;
	an_window_build(s, t, &w);
	struct an_diagnosis d;
	an_diag_init(s, &d, "pulse", t);
	int g[6];
	count_groups(s, &w, g);
	int ok = 0;
	if (rule_active_outlier(s, &w, &d)) {
		an_diag_step(&d, "DP/TP groups (%d, %d): actual communication time outlier", g[PULSE_PAR_DP],
			     g[PULSE_PAR_TP]);
		ok = 1;
	} else if (an_rule_custom_rate(s, &w, &d, 0)) {
		an_diag_step(&d, "DP/TP groups: no actual-time outlier; EP/custom groups (%d): lowest rank-level "
				 "actual rate over the last %u", g[PULSE_PAR_EP], s->cfg.custom_k);
		ok = 1;
	} else if (an_rule_delayed_start(s, &w, &d)) {
		an_diag_step(&d, "no communication outlier (actual time, rank rate); PP groups (%d) then the "
				 "others in time order: first delayed start", g[PULSE_PAR_PP]);
		ok = 1;
	} else if (rule_cpu(s, &w, &d)) {
		ok = 1;
	}
	an_window_free(&w);
	return ok ? an_diag_commit(s, &d) : 0;
}
