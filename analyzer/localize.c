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
 *      at the group; here the first bytes try to pinpoint the node: the
 *      slow proxy posts its own first slice later than its usual place in
 *      the group's start order; else the node common to the slowed groups;
 *      else (all-to-all) it posts its receive buffers late, so the other
 *      ranks' transfers to it start after their own first byte
 *      (recv_post_votes). Group-level when none stands out;
 *   5. communication fail-slow too small for the window's medians: a
 *      transfer slower than its usual share of its operator instance's
 *      median rate (an_xfer_shift, trigger.c), node with the most slow
 *      transfers (rule_xfer_shift). */
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

/* The same verdict: localizer, class, level, and the same machine (host:
 * the GPUs of one host wait for each other through TP) or the same group.
 * Used to merge repeated diagnoses and to confirm a fail-slow candidate
 * (trigger.c). */
int an_same_verdict(const struct an_diagnosis *a, const struct an_diagnosis *b)
{
	if (strcmp(a->localizer, b->localizer) || a->cls != b->cls || a->level != b->level)
		return 0;
	if (a->level == AN_LEVEL_MACHINE)
		return a->nsuspects && b->nsuspects && !strcmp(a->suspects[0].host, b->suspects[0].host);
	return a->comm_id == b->comm_id;
}

int an_diag_commit(struct an_state *s, const struct an_diagnosis *d)
{
	if (s->tentative) {
		/* a verdict to be confirmed (trigger.c), not a diagnosis yet */
		if (s->ntent < sizeof s->tent / sizeof *s->tent)
			s->tent[s->ntent++] = *d;
		return 0;
	}
	for (uint32_t i = 0; i < s->ndiags; i++)
		if (an_same_verdict(&s->diags[i], d)) {
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

uint64_t an_period_ns(const struct an_state *s)
{
	double best = 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < s->comms[i]->nsigs; k++) {
			double med;
			if (an_roll_stats(&s->comms[i]->sigs[k].period, &med, NULL) == 0 && med > best)
				best = med;
		}
	return (uint64_t)best;
}

static uint64_t lookback_ns(const struct an_state *s)
{
	/* a few iterations before the first evidence: the cause comes first */
	double best = 4.0 * (double)an_period_ns(s);
	if (best < 1e9)
		best = 1e9;
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
	w->excl_a = t->excl_a;
	w->excl_b = t->excl_b;
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
			if (t->excl_b && ((a >= t->excl_a && a <= t->excl_b) ||
					  (s->comms[i]->id == t->excl_comm && in->seq == t->excl_seq)))
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

struct hmember {
	int node;
	int called, complete, sends, started, has_sig;
	uint8_t op;
	uint64_t count, vol, exp, last_tx, call_t;
	const struct an_rec *rec;
};

static double hfrac(const struct hmember *m)
{
	return m->exp ? (double)m->vol / (double)m->exp : (double)m->vol;
}

struct hop {
	int comm;
	uint64_t key, t;
};

static int cmp_hop(const void *a, const void *b)
{
	const struct hop *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int hop_add(struct hop **v, uint32_t *n, uint32_t *cap, int comm, uint64_t key, uint64_t t)
{
	for (uint32_t i = 0; i < *n; i++)
		if ((*v)[i].comm == comm && (*v)[i].key == key) {
			if (t && t < (*v)[i].t)
				(*v)[i].t = t;
			return 0;
		}
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 16;
		struct hop *p = realloc(*v, nc * sizeof *p);
		if (!p)
			return -1;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct hop){ comm, key, t };
	return 0;
}

/* The operators that did not finish: hung records, and calls without a
 * record past the hang bound. */
static uint32_t collect_hung(struct an_state *s, struct hop **out)
{
	struct hop *v = NULL;
	uint32_t n = 0, cap = 0;
	uint64_t bound = an_hang_bound(s);
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		struct an_comm *c = s->comms[ci];
		for (uint32_t k = 0; k < AN_HIST; k++) {
			struct an_inst *in = &c->hist[k];
			if (in->used && in->hung)
				hop_add(&v, &n, &cap, (int)ci, in->seq, in->first_call);
		}
	}
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (s->hosts[p->host].skewed)
			continue;
		int32_t rank = an_map_rank(s, p->host, p->pid, p->comm);
		struct an_comm *c = an_comm_find(s, p->comm);
		if (rank < 0 || !c || rank >= c->nranks)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			if (x->t + bound >= s->now_ns)
				continue;
			uint64_t key = an_call_key(p, x);
			int gone;
			if (an_rec_finished(an_call_record(c, rank, key, &gone)) || gone ||
			    an_member_silent(c, rank, x->op, x->count))
				continue;
			hop_add(&v, &n, &cap, an_comm_index_of(s, c), key, x->t);
		}
	}
	if (n)
		qsort(v, n, sizeof *v, cmp_hop);
	*out = v;
	return n;
}

static void member_state(struct an_state *s, struct an_comm *c, struct an_inst *in, uint64_t key,
			 int32_t r, struct hmember *m)
{
	memset(m, 0, sizeof *m);
	m->node = c->m[r].node;
	const struct an_rec *rec = in && in->seq == key ? in->recs[r] : NULL;
	m->rec = rec;
	if (rec) {
		m->called = 1;
		m->complete = an_rec_finished(rec);
		m->op = rec->op;
		m->count = rec->count;
		m->has_sig = 1;
		m->sends = rec->expected > 0;
		m->exp = rec->expected;
		m->call_t = rec->call;
	}
	/* calls on hook lines */
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (p->comm != c->id || an_map_rank(s, p->host, p->pid, p->comm) != r)
			continue;
		if (m->node < 0) {
			for (uint32_t h = 0; h < s->nhmap; h++)
				if (s->hmap[h].host == p->host && s->hmap[h].pid == p->pid && s->hmap[h].comm == c->id)
					m->node = an_node_index(s, p->host, s->hmap[h].gpu, p->pid, 1);
		}
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			if (an_call_key(p, x) != key)
				continue;
			m->called = 1;
			if (!m->call_t || x->t < m->call_t)
				m->call_t = x->t;
			if (!m->has_sig || x->seq == key) {
				if (!rec) {
					m->op = x->group_id ? PULSE_OP_GROUP : x->op;
					m->count = x->count;
				}
				m->has_sig = 1;
			}
			if (!rec && x->op != PULSE_HOOK_OP_RECV)
				m->sends = 1;
		}
	}
	if (!rec && m->sends && m->has_sig && an_member_silent(c, r, m->op, m->count))
		m->sends = 0; /* a receive-only member: nothing of it shows on its NIC */
	if (m->complete) {
		m->started = 1;
		m->vol = m->exp;
		return;
	}
	uint64_t last = 0;
	uint64_t res = an_residual(s, c, r, &last);
	m->last_tx = last;
	m->vol = rec && rec->actual > res ? rec->actual : res;
	m->started = m->vol >= 4096 || (rec && rec->start);
	if (!m->exp && m->has_sig) {
		for (uint32_t g = 0; g < c->nsigs; g++)
			if (c->sigs[g].op == m->op && c->sigs[g].count == m->count)
				m->exp = c->m[r].last_expected[g];
	}
}

/* Some member of c finished an operator after key: a collective at key
 * is over for all its members. */
static int comm_moved_on(struct an_comm *c, uint64_t key)
{
	for (uint64_t q = key + 1; q <= key + 8; q++) {
		const struct an_inst *in = an_inst_find(c, q);
		for (int32_t k = 0; in && k < c->nranks; k++)
			if (in->recs[k] && in->recs[k]->status == PULSE_OP_COMPLETE)
				return 1;
	}
	return 0;
}

/* The node is inside a call: some call of its process, on any
 * communicator, has no finished record (a rank waiting in a call is a
 * link of a wait chain, not where it ends). */
static int node_in_call(struct an_state *s, int node)
{
	const struct an_node *nd = &s->nodes[node];
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (p->host != nd->host || p->pid != nd->pid)
			continue;
		int32_t rank = an_map_rank(s, p->host, p->pid, p->comm);
		struct an_comm *c = an_comm_find(s, p->comm);
		if (rank < 0 || !c || rank >= c->nranks)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			uint64_t key = an_call_key(p, &p->calls[k]);
			int gone;
			const struct an_rec *r = an_call_record(c, rank, key, &gone);
			if (gone || an_rec_finished(r) || (!r && an_member_silent(c, rank, p->calls[k].op, p->calls[k].count)))
				continue; /* recorded long ago, or finished, or nothing to show */
			if (an_is_builtin(p->calls[k].op) && comm_moved_on(c, key))
				continue; /* a collective the others finished: so did this rank (its record
					   * waits for the agent to see its next call) */
			if (getenv("PULSE_ANALYZER_DEBUG"))
				fprintf(stderr, "in call: %s GPU %d comm %016" PRIx64 " #%" PRIu64 " %s (%s)\n",
					an_node_host(s, node), nd->gpu, c->id, key, pulse_op_type_name(p->calls[k].op),
					r ? "not complete" : "no record");
			return 1;
		}
	}
	return 0;
}

/* Ranks of comm c that the callers of P2P instance key wait for: the
 * peers whose transfers in their hung records are not complete (the root
 * of a one-to-all waits for the one receiver that never posted, not for
 * those that have their data), else the peers of their send and receive
 * calls (a pipeline stage waits for its two neighbours only; ranks of a
 * P2P communicator number their calls each on their own). */
static void p2p_awaited(struct an_state *s, struct an_comm *c, const struct an_inst *in, uint64_t key,
			uint8_t *awaited)
{
	int any = 0;
	for (int32_t q = 0; in && in->seq == key && q < c->nranks; q++) {
		const struct an_rec *r = in->recs[q];
		if (!r || an_rec_finished(r))
			continue;
		for (uint32_t i = 0; i < r->npeers; i++)
			if (!r->peers[i].complete && r->peers[i].expected && r->peers[i].rank >= 0 &&
			    r->peers[i].rank < c->nranks)
				awaited[r->peers[i].rank] = any = 1;
	}
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "awaited in #%" PRIu64 " of %016" PRIx64 ": %s\n", key, c->id,
			any ? "from the hung records' incomplete peers" : in ? "from the calls" : "no instance");
	if (any)
		return;
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (p->comm != c->id)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			if (an_call_key(p, x) == key && x->peer >= 0 && x->peer < c->nranks)
				awaited[x->peer] = any = 1;
		}
	}
	if (!any) /* the calls name no peer: every member may be awaited */
		memset(awaited, 1, (size_t)c->nranks);
}

/* Hang localization for one hung operator; 1 with d filled. */
static int hang_one(struct an_state *s, struct an_comm *c, uint64_t key, int oplevel,
		    struct an_diagnosis *d)
{
	struct an_inst *in = an_inst_find(c, key);
	int32_t n = c->nranks;
	struct hmember *m = calloc((size_t)n, sizeof *m);
	uint8_t *awaited = calloc((size_t)n, 1);
	if (!m || !awaited) {
		free(m);
		free(awaited);
		return 0;
	}
	int ncomplete = 0, ncalled = 0, nstarted = 0;
	for (int32_t r = 0; r < n; r++) {
		member_state(s, c, in, key, r, &m[r]);
		ncomplete += m[r].complete;
		ncalled += m[r].called;
		nstarted += m[r].started;
	}
	int found = 0;
	uint8_t op = 0;
	for (int32_t r = 0; r < n && !op; r++)
		if (m[r].has_sig)
			op = m[r].op;
	const char *opn = pulse_op_type_name(op);
	if (ncomplete == n || !ncalled)
		goto out;
	/* A: members that never called it: they stopped issuing operators.
	 * In a P2P instance (a pipeline's sends and receives, numbered by each
	 * rank on its own) only the callers' peers are awaited, and an awaited
	 * peer that is waiting in another call itself (a stage waiting for its
	 * upstream one) is not where the waiting ends: a later hop finds the
	 * root. (Built-in collectives: a member's last call stays open until
	 * the agent sees its next one, so "in a call" cannot be told there.) */
	if (an_is_builtin(op))
		memset(awaited, 1, (size_t)n);
	else
		p2p_awaited(s, c, in, key, awaited);
	uint64_t first_call = 0, half_period = an_period_ns(s) / 2;
	for (int32_t r = 0; r < n; r++)
		if (m[r].called && m[r].call_t && (!first_call || m[r].call_t < first_call))
			first_call = m[r].call_t;
	/* P2P: an awaited peer must be in no call itself; of several, the
	 * ones that made no call around the hung one (a receiver numbers its
	 * calls on its own, so its group is not its sender's seq, but it took
	 * part if it called then). A GPU that failed may have had its CPU
	 * issue calls ahead: when no peer is left by that, it is not used. */
	int quiet_only = 0;
	for (int32_t r = 0; r < n && !an_is_builtin(op); r++)
		if (!m[r].called && !m[r].complete && m[r].node >= 0 && awaited[r] && !node_in_call(s, m[r].node) &&
		    first_call && s->nodes[m[r].node].last_call + half_period <= first_call)
			quiet_only = 1;
	for (int32_t r = 0; r < n; r++)
		if (!m[r].called && !m[r].complete && m[r].node >= 0 && awaited[r] &&
		    (an_is_builtin(op) ||
		     (!node_in_call(s, m[r].node) &&
		      !(quiet_only && s->nodes[m[r].node].last_call + half_period > first_call)))) {
			d->cls = AN_COMP_STOP;
			d->level = AN_LEVEL_MACHINE;
			an_diag_suspect(s, d, m[r].node, r);
			if (!found) {
				snprintf(d->why, sizeof d->why,
					 "%s #%" PRIu64 " (%s group, %d ranks) hangs: %d ranks called it, rank %d never "
					 "did: it stopped issuing operators (computation)",
					 opn, key, par_label(c->par), n, ncalled, r);
				d->onset_ns = s->nodes[m[r].node].last_end;
			}
			found = 1;
		}
	if (found) {
		an_diag_step(d, "first hung operator in time order: a member never called it");
		d->value = 0;
		snprintf(d->metric, sizeof d->metric, "call");
		goto done;
	}
	/* B: a member called a different operator or count at this position
	 * (built-in collectives: a group's members differ per rank by design) */
	if (an_is_builtin(op)) {
		int maj = -1, best = 0;
		for (int32_t r = 0; r < n; r++) {
			if (!m[r].has_sig)
				continue;
			int cnt = 0;
			for (int32_t q = 0; q < n; q++)
				cnt += m[q].has_sig && m[q].op == m[r].op && m[q].count == m[r].count;
			if (cnt > best) {
				best = cnt;
				maj = r;
			}
		}
		for (int32_t r = 0; maj >= 0 && r < n; r++)
			if (m[r].has_sig && (m[r].op != m[maj].op || m[r].count != m[maj].count) && m[r].node >= 0 &&
			    best * 2 > n) {
				d->cls = AN_COMP_STOP;
				d->level = AN_LEVEL_MACHINE;
				an_diag_suspect(s, d, m[r].node, r);
				if (!found)
					snprintf(d->why, sizeof d->why,
						 "%s #%" PRIu64 " (%s group) hangs: rank %d called %s of %" PRIu64
						 " elements where the other %d ranks called %s of %" PRIu64
						 ": inconsistent operators",
						 pulse_op_type_name(m[maj].op), key, par_label(c->par), r,
						 pulse_op_type_name(m[r].op), m[r].count, best,
						 pulse_op_type_name(m[maj].op), m[maj].count);
				found = 1;
			}
		if (found) {
			an_diag_step(d, "first hung operator: inconsistent calls");
			snprintf(d->metric, sizeof d->metric, "call");
			goto done;
		}
	}
	/* C: the first missing start: called, has data to send, never started */
	{
		int pick = -1;
		for (int32_t r = 0; r < n; r++) {
			if (!m[r].called || m[r].complete || !m[r].sends || m[r].started || m[r].node < 0)
				continue;
			if (pick < 0 || s->nodes[m[r].node].last_end < s->nodes[m[pick].node].last_end)
				pick = r;
		}
		if (pick >= 0 && (nstarted > 0 || an_is_p2p(op))) {
			d->cls = AN_COMP_STOP;
			d->level = AN_LEVEL_MACHINE;
			an_diag_suspect(s, d, m[pick].node, pick);
			snprintf(d->metric, sizeof d->metric, "start_ns");
			d->value = 0;
			d->median = (double)m[pick].call_t;
			d->onset_ns = s->nodes[m[pick].node].last_end;
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " (%s group, %d ranks) hangs: rank %d called it but never sent its "
				 "first byte%s: its GPU stopped executing (computation)",
				 opn, key, par_label(c->par), n, pick,
				 nstarted ? " while the others started" : "");
			an_diag_step(d, "first hung operator in time order: first missing start");
			found = 1;
			goto done;
		}
	}
	/* D: everyone started: the smallest volume (communication) */
	{
		int lo = -1, nv = 0;
		double t[512];
		for (int32_t r = 0; r < n; r++) {
			if (m[r].complete || !m[r].sends || m[r].node < 0)
				continue;
			double f = hfrac(&m[r]);
			if (nv < 512)
				t[nv++] = f;
			if (lo < 0 || f < hfrac(&m[lo]))
				lo = r;
		}
		if (lo < 0)
			goto out;
		double med = an_median(t, (size_t)nv);
		d->cls = AN_COMM_STOP;
		/* (P2P completion is operator-level data: both localizers use it, §D.8) */
		/* custom collectives: the node common to the uncompleted P2Ps
		 * (from the hung records' per-peer completion, §6.2) */
		if (an_is_p2p(op)) {
			int nn = (int)s->nnodes, pairs = 0, bestn = -1;
			int *cnt = calloc((size_t)nn + 1, sizeof *cnt);
			for (int32_t r = 0; cnt && r < n; r++) {
				const struct an_rec *x = m[r].rec;
				if (!x || m[r].complete)
					continue;
				for (uint32_t p = 0; p < x->npeers; p++) {
					const struct an_peer *q = &x->peers[p];
					if (q->complete || q->node < 0 || q->node >= nn || x->node >= nn)
						continue;
					cnt[x->node]++;
					cnt[q->node]++;
					pairs++;
				}
			}
			for (int j = 0; cnt && j < nn; j++)
				if (cnt[j] && (bestn < 0 || cnt[j] > cnt[bestn]))
					bestn = j;
			int unique = bestn >= 0 && cnt[bestn] == pairs;
			for (int j = 0; unique && j < nn; j++)
				if (j != bestn && cnt[j] == pairs)
					unique = 0;
			if (unique && pairs >= 2) {
				d->level = AN_LEVEL_MACHINE;
				an_diag_suspect(s, d, bestn, -1);
				snprintf(d->metric, sizeof d->metric, "incomplete_p2p");
				d->value = cnt[bestn];
				d->median = pairs;
				snprintf(d->why, sizeof d->why,
					 "%s #%" PRIu64 " (%s group, %d ranks) hangs: %s GPU %d is an end of all %d "
					 "point-to-point transfers that did not complete: its NIC or link stopped",
					 opn, key, par_label(c->par), n, an_node_host(s, bestn), s->nodes[bestn].gpu, pairs);
				an_diag_step(d, "custom collective: node common to the uncompleted P2Ps");
				free(cnt);
				found = 1;
				goto done;
			}
			free(cnt);
		}
		if (oplevel) {
			d->level = AN_LEVEL_GROUP;
			an_diag_members(s, d, c);
			snprintf(d->metric, sizeof d->metric, "status");
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs on the ranks of this %s group (%d ranks); every rank started "
				 "it and none finished: operator-level data cannot tell which one stopped",
				 opn, key, par_label(c->par), n);
			an_diag_step(d, "first hung operator: all started, none finished: group level");
			found = 1;
			goto done;
		}
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, m[lo].node, lo);
		if ((op == PULSE_HOOK_OP_SEND || op == PULSE_HOOK_OP_RECV) && nv == 1) {
			/* one transfer: its receiver may be the one that stopped */
			for (int32_t r = 0; r < n; r++)
				if (r != lo && m[r].node >= 0)
					an_diag_suspect(s, d, m[r].node, r);
		}
		snprintf(d->metric, sizeof d->metric, "actual_bytes");
		d->value = (double)m[lo].vol;
		d->median = m[lo].exp ? (nv == 1 ? (double)m[lo].exp : med * (double)m[lo].exp) : med;
		d->onset_ns = m[lo].last_tx;
		if (nv == 1 && m[lo].exp)
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d, its only sender, stopped "
				 "after %.1f%% of its expected volume and sent nothing since: its NIC or link stopped",
				 opn, key, par_label(c->par), n, lo, 100 * hfrac(&m[lo]));
		else if (m[lo].exp)
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d sent the least: %.1f%% of "
				 "its expected volume against a median of %.1f%%: its NIC or link stopped",
				 opn, key, par_label(c->par), n, lo, 100 * hfrac(&m[lo]), 100 * med);
		else
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d sent the least (%.1f MB, "
				 "median %.1f MB): its NIC or link stopped",
				 opn, key, par_label(c->par), n, lo, (double)m[lo].vol / 1e6, med / 1e6);
		an_diag_step(d, "first hung operator in time order: all members started it; compared the "
				"volume each sent since its last finished operator");
		found = 1;
	}
done:
	d->comm_id = c->id;
	d->seq = key;
	d->op = op;
	d->evidence_ranks = (uint32_t)n;
out:
	free(m);
	free(awaited);
	return found;
}

int an_localize_hang(struct an_state *s, const struct an_trigger *t, int oplevel)
{
	struct hop *v = NULL;
	uint32_t n = collect_hung(s, &v);
	int found = 0;
	struct an_diagnosis d;
	for (uint32_t i = 0; i < n && i < 16 && !found; i++) {
		an_diag_init(s, &d, oplevel ? "op-level" : "pulse", t);
		found = hang_one(s, s->comms[v[i].comm], v[i].key, oplevel, &d);
	}
	free(v);
	if (!found)
		return 0;
	if (!d.onset_ns)
		d.onset_ns = t->onset_ns;
	return an_diag_commit(s, &d);
}

/* ---- slow: shared rule, delayed start ---- */


/* Delayed start (computation fail-slow), as the paper's §D.4: an operator
 * whose first byte leaves later than the same operator (same sequence
 * number and rank) in the sibling groups (the other communicators of the
 * same parallelism and size: the other pipelines for PP, the other DP or
 * EP groups), which run the same schedule. The first such operator in time
 * order names the rank. A delay counts when it exceeds DELAY_SDS robust
 * standard deviations of the pair offsets it is measured against (the
 * measured noise of the schedule) and the floor of delay_significant. (A
 * share of the rank's compute time before the operator is no measure of
 * noise: that gap changes with the place in the 1F1B schedule, so a
 * stage-0 rank's delays went unseen.) Ranks
 * compared to their siblings need no history, so the 1F1B schedule's
 * uneven gaps are not mistaken for delays. */

static uint64_t rec_start(const struct an_rec *r)
{
	return r->start ? r->start : 0;
}

static int siblings(const struct an_state *s, const struct an_comm *c, int *out, int max)
{
	int n = 0;
	for (uint32_t i = 0; i < s->ncomms && n < max; i++) {
		const struct an_comm *x = s->comms[i];
		if (x != c && x->par == c->par && x->nranks == c->nranks && x->builtin == c->builtin &&
		    x->custom == c->custom)
			out[n++] = (int)i;
	}
	return n;
}


/* start of rank k's record of comm x at seq, 0 if none */
static uint64_t start_at(struct an_comm *x, uint64_t seq, int32_t k, const struct an_rec *like)
{
	struct an_inst *y = an_inst_find(x, seq);
	if (!y || !y->recs[k])
		return 0;
	const struct an_rec *q = y->recs[k];
	if (q->op != like->op || q->count != like->count || q->status != PULSE_OP_COMPLETE)
		return 0;
	return rec_start(q);
}

/* The usual offset between the starts of rank k's operators in comm c and
 * in its sibling x: median over up to 16 operators before seq and before
 * t0. Returns 0 when it is not steady (not the same schedule). */
static int pair_offset(struct an_comm *c, struct an_comm *x, int32_t k, uint64_t seq, uint64_t t0,
		       double *out, double *sd)
{
	(void)t0; /* the operators just before seq: the first delayed one has normal ones before it */
	double off[16];
	int no = 0;
	for (uint64_t back = 1; back <= 64 && no < 16 && back <= seq; back++) {
		uint64_t q = seq - back;
		struct an_inst *yi = an_inst_find(c, q);
		if (!yi || !yi->recs[k])
			continue;
		/* the two must run the same operators in the same order */
		struct an_inst *xi = an_inst_find(x, q);
		if (xi && xi->recs[k] && (xi->recs[k]->op != yi->recs[k]->op || xi->recs[k]->count != yi->recs[k]->count))
			return 0;
		uint64_t a = start_at(c, q, k, yi->recs[k]);
		uint64_t b = a ? start_at(x, q, k, yi->recs[k]) : 0;
		if (a && b)
			off[no++] = (double)a - (double)b;
	}
	if (no < 3)
		return 0;
	double t[16];
	memcpy(t, off, (size_t)no * sizeof *t);
	double med = an_median(t, (size_t)no);
	for (int q = 0; q < no; q++)
		t[q] = fabs(off[q] - med);
	double mad = an_median(t, (size_t)no);
	if (mad > 1e6)
		return 0;
	*out = med;
	*sd = 1.4826 * mad;
	return 1;
}

/* The delay of rank k's operator seq in comm c against the same operator
 * in its sibling groups, each corrected by the pair's usual offset; median
 * over the siblings. A missing record counts as starting now (a lower
 * bound). *expect: when it should have started (median of the siblings'
 * corrected starts). */
#define DELAY_SDS 5.0
static int64_t sibling_delay2(const struct an_state *s, struct an_comm *c, uint64_t seq, int32_t k,
			      const struct an_rec *like, uint64_t t0, int *nsib, uint64_t *expect)
{
	*nsib = 0;
	const struct an_inst *in = an_inst_find(c, seq);
	const struct an_rec *r = in ? in->recs[k] : NULL;
	if (r && (!rec_start(r) || r->status != PULSE_OP_COMPLETE))
		return 0;
	uint64_t mine = r ? rec_start(r) : s->now_ns;
	int sib[64];
	int ns = siblings(s, c, sib, 64);
	double dv[64], ev[64], sv[64];
	int n = 0;
	for (int i = 0; i < ns; i++) {
		struct an_comm *x = s->comms[sib[i]];
		uint64_t sx = start_at(x, seq, k, like);
		double off, sd;
		if (!sx || !pair_offset(c, x, k, seq, t0, &off, &sd))
			continue;
		ev[n] = (double)sx + off;
		dv[n] = (double)mine - ev[n];
		sv[n] = sd;
		n++;
	}
	*nsib = n;
	if (!n)
		return 0;
	*expect = (uint64_t)an_median(ev, (size_t)n);
	double delay = an_median(dv, (size_t)n);
	/* within DELAY_SDS robust standard deviations of the pair offsets it
	 * is measured against, a delay is the pipelines' own drift (jitter
	 * accumulates along a deep pipeline) */
	if (delay <= DELAY_SDS * an_median(sv, (size_t)n))
		return 0;
	return (int64_t)delay;
}

static int64_t sibling_delay(const struct an_state *s, const struct an_comm *c, const struct an_inst *in,
			     int32_t k, uint64_t t0, int *nsib)
{
	uint64_t ex;
	if (!in->recs[k])
		return 0;
	return sibling_delay2(s, (struct an_comm *)c, in->seq, k, in->recs[k], t0, nsib, &ex);
}

static int delay_significant(const struct an_state *s, int64_t dl)
{
	/* a start delay must exceed a millisecond (twice the trigger floor):
	 * kernel launch and proxy jitter move first bytes by hundreds of µs */
	double thr = 2.0 * (double)s->cfg.min_slow_ns;
	if (thr < 1e6)
		thr = 1e6;
	return (double)dl > thr;
}

/* The median, over up to 16 earlier instances of group c, of how much
 * later rank k started than the median of the others. */
static double inst_usual_lateness(struct an_comm *c, uint64_t seq, int32_t k)
{
	double v[16];
	int nv = 0;
	for (uint64_t back = 1; back <= 256 && nv < 16 && back <= seq; back++) {
		struct an_inst *y = an_inst_find(c, seq - back);
		if (!y || !y->recs[k] || y->op != PULSE_OP_GROUP || !rec_start(y->recs[k]))
			continue;
		double o[512];
		int n = 0;
		for (int32_t j = 0; j < c->nranks && n < 512; j++)
			if (j != k && y->recs[j] && rec_start(y->recs[j]))
				o[n++] = (double)rec_start(y->recs[j]);
		if (n < 2)
			continue;
		v[nv++] = (double)rec_start(y->recs[k]) - an_median(o, (size_t)n);
	}
	return nv >= 3 ? an_median(v, (size_t)nv) : NAN;
}

/* An instance whose ranks all exchange with each other (all-to-all): each
 * rank's transfers start with its own kernel, so the ranks are each
 * other's baseline. A pipeline's P2P groups are not: a stage sends to one
 * neighbour at its own place in the 1F1B schedule, and the last stage is
 * "late" in every iteration by construction. */
static int inst_all_to_all(const struct an_comm *c, const struct an_inst *in)
{
	if (c->nranks < 3)
		return 0;
	int n = 0;
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE)
			continue;
		if (2 * (int32_t)r->npeers < c->nranks - 1)
			return 0;
		n++;
	}
	return n >= 3;
}

/* a record that starts in the iteration a confirmation leaves out (a P2P
 * instance gathers calls each rank numbered on its own, so its instance
 * may lie elsewhere) */
static int excluded(const struct an_window *w, const struct an_rec *r)
{
	return w->excl_b && r->start >= w->excl_a && r->start <= w->excl_b;
}

int an_rule_delayed_start(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	const struct an_rec *best = NULL;
	const struct an_comm *bc = NULL;
	int64_t bdelay = 0;
	uint64_t bexp = 0;
	int bn = 0, bmissing = 0, bnode = -1, binst = 0;
	int32_t brank = -1;
	uint64_t bseq = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || (r->call < w->t0 && r->start < w->t0) || excluded(w, r))
				continue;
			int nsib;
			uint64_t ex = 0;
			int64_t dl = sibling_delay2(s, c, in->seq, k, r, w->t0, &nsib, &ex);
			if (getenv("PULSE_ANALYZER_DEBUG2") && nsib && dl > 1000000)
				fprintf(stderr, "  cand %s gpu %d comm %016" PRIx64 " seq %" PRIu64 " dl %.3f ms nsib %d sig %d exp %.3f\n",
					an_node_host(s, r->node), s->nodes[r->node].gpu, c->id, in->seq, (double)dl / 1e6, nsib,
					delay_significant(s, dl), (double)(ex % 10000000000ull) / 1e6);
			if (nsib >= 2 && delay_significant(s, dl) && (!best || ex < bexp)) {
				best = r;
				bc = c;
				bdelay = dl;
				bexp = ex;
				bn = nsib;
				bmissing = 0;
				bnode = r->node;
				brank = k;
				bseq = in->seq;
			}
			/* siblings that have not started this operator at all */
			if (!rec_start(r) || r->status != PULSE_OP_COMPLETE)
				continue;
			int sib[64];
			int ns = siblings(s, c, sib, 64);
			for (int q = 0; q < ns; q++) {
				struct an_comm *x = s->comms[sib[q]];
				struct an_inst *y = an_inst_find(x, in->seq);
				if ((y && y->recs[k]) || x->m[k].node < 0)
					continue;
				if (y == NULL) {
					const struct an_inst *slot = &x->hist[in->seq % AN_HIST];
					if (slot->used && slot->seq > in->seq)
						continue;
				}
				int ns2;
				uint64_t ex2 = 0;
				int64_t dl2 = sibling_delay2(s, x, in->seq, k, r, w->t0, &ns2, &ex2);
				if (ns2 < 2 || !delay_significant(s, dl2) || (best && ex2 >= bexp))
					continue;
				best = r; /* the sibling's record stands for the signature */
				bc = x;
				bdelay = dl2;
				bexp = ex2;
				bn = ns2;
				bmissing = 1;
				bnode = x->m[k].node;
				brank = k;
				bseq = in->seq;
			}
		}
	}
	/* custom collectives (all-to-all as P2P groups): each rank's P2Ps start
	 * with its own kernel, so the ranks of one instance are comparable:
	 * the rank that starts latest against the others' median (§7.2.4) */
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (!c->custom || in->op != PULSE_OP_GROUP || !inst_all_to_all(c, in))
			continue;
		double st[512];
		int32_t rk[512];
		int n = 0;
		for (int32_t k = 0; k < c->nranks && n < 512; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->status != PULSE_OP_COMPLETE || !rec_start(r))
				continue;
			st[n] = (double)rec_start(r);
			rk[n++] = k;
		}
		if (n < 3)
			continue;
		double t[512];
		memcpy(t, st, (size_t)n * sizeof *t);
		double med = an_median(t, (size_t)n);
		int hi = 0;
		for (int j = 1; j < n; j++)
			if (st[j] > st[hi])
				hi = j;
		const struct an_rec *r = in->recs[rk[hi]];
		if (excluded(w, r))
			continue;
		/* against this rank's usual lateness in this group (uneven routing
		 * makes some ranks late every time: that is the schedule, not an
		 * onset) */
		double usual = inst_usual_lateness(c, in->seq, rk[hi]);
		if (isnan(usual))
			continue; /* no history for this group yet */
		int64_t dl = (int64_t)(st[hi] - med - usual);
		if ((r->call < w->t0 && r->start < w->t0) || !delay_significant(s, dl))
			continue;
		/* the second latest must be clearly earlier: one straggler */
		double second = 0;
		for (int j = 0; j < n; j++)
			if (j != hi && st[j] > second)
				second = st[j];
		if (st[hi] - second < 0.5 * (double)dl)
			continue;
		if (!best || (uint64_t)med < bexp) {
			best = r;
			bc = c;
			bdelay = dl;
			bexp = (uint64_t)med;
			bn = n - 1;
			bmissing = 0;
			bnode = r->node;
			brank = rk[hi];
			bseq = in->seq;
			binst = 1;
		}
	}
	if (!best)
		return 0;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "delayed start: %s GPU %d comm %016" PRIx64 " seq %" PRIu64 " delay %.3f ms%s\n",
			an_node_host(s, bnode), s->nodes[bnode].gpu, bc->id, bseq, (double)bdelay / 1e6,
			bmissing ? " (not started yet)" : "");
	d->cls = AN_COMP_SLOW;
	d->level = AN_LEVEL_MACHINE;
	an_diag_suspect(s, d, bnode, brank);
	/* the other GPUs of the same host delayed in the same window (TP
	 * inside a host synchronizes them: machine-level, §D.4) */
	int host = s->nodes[bnode].host;
	for (uint32_t i = 0; i < w->n && !bmissing; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->node == bnode || s->nodes[r->node].host != host)
				continue;
			int nsib;
			int64_t dl = sibling_delay(s, c, in, k, w->t0, &nsib);
			if (nsib && delay_significant(s, dl))
				an_diag_suspect(s, d, r->node, r->rank);
		}
	}
	/* a point-to-point pair (PP stages): the other end late as well may be
	 * the cause (it did not post or drain in time): both named, as §D.4 */
	if (!bmissing && an_is_p2p(best->op) && bc->nranks == 2) {
		struct an_inst *in = an_inst_find((struct an_comm *)bc, bseq);
		int32_t other = 1 - brank;
		if (in && in->recs[other]) {
			int nsib;
			uint64_t ex;
			int64_t dl = sibling_delay2(s, (struct an_comm *)bc, bseq, other, in->recs[other], w->t0, &nsib, &ex);
			if (getenv("PULSE_ANALYZER_DEBUG"))
				fprintf(stderr, "pair: other end %s GPU %d delay %.3f ms (first %.3f ms)\n",
					an_node_host(s, in->recs[other]->node), s->nodes[in->recs[other]->node].gpu,
					(double)dl / 1e6, (double)bdelay / 1e6);
			/* the end that fell further behind is where the delay comes
			 * from; both when they are within 10% */
			if (nsib >= 2 && delay_significant(s, dl)) {
				if ((double)dl > 1.1 * (double)bdelay) {
					d->nsuspects = 0;
					an_diag_suspect(s, d, in->recs[other]->node, other);
					bnode = in->recs[other]->node;
					brank = other;
					bdelay = dl;
					best = in->recs[other];
				} else if ((double)dl * 1.1 >= (double)bdelay) {
					an_diag_suspect(s, d, in->recs[other]->node, other);
				}
			}
		}
	}
	d->comm_id = bc->id;
	d->seq = bseq;
	d->op = best->op;
	snprintf(d->metric, sizeof d->metric, "start_delay_ns");
	d->value = (double)bdelay;
	d->median = 0;
	d->evidence_ranks = (uint32_t)bn + 1;
	d->onset_ns = bexp;
	if (binst)
		snprintf(d->why, sizeof d->why,
			 "first operator in time order that started late: %s #%" PRIu64 " (%s group) on rank %d "
			 "sent its first byte %.2f ms after the median of the other %d ranks of the same "
			 "operator: the machine computes slowly%s",
			 pulse_op_type_name(best->op), bseq, par_label(bc->par), brank, (double)bdelay / 1e6, bn,
			 d->nsuspects > 1 ? " (its other GPUs wait for it)" : "");
	else
		snprintf(d->why, sizeof d->why,
			 "first operator in time order that started late: %s #%" PRIu64 " (%s group) on rank %d "
			 "%s %.2f ms after the same operator in %d sibling %s groups: the machine computes slowly%s",
			 pulse_op_type_name(best->op), bseq, par_label(bc->par), brank,
			 bmissing ? "has not started" : "sent its first byte", (double)bdelay / 1e6, bn,
			 par_label(bc->par), d->nsuspects > 1 ? " (its other GPUs wait for it)" : "");
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

/* Communication fail-slow from the actual rate of each transfer (bytes to
 * one peer over the epochs in which they moved: gaps excluded, §6.2): a
 * slow NIC, PCIe link or path slows the transfers it sends and the ones it
 * receives, in every group it is in. The transfers of the window slower
 * than the window's median by ACTIVE_OUTLIER are counted per node (both
 * ends); the node that is an end of most of them, and whose own transfers
 * are mostly slow, is the culprit. With one group of two ranks both ends
 * tie: both are named, unless another group of one of them clears it. */
struct edge {
	int from, to;
	double rate;
	const struct an_rec *rec;
	const struct an_comm *c;
};

static int rule_edge_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	uint32_t cap = 0, n = 0;
	struct edge *e = NULL;
	double ep = s->epoch_ns ? s->epoch_ns : 32000;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->status != PULSE_OP_COMPLETE || !r->actual)
				continue;
			for (uint32_t p = 0; p < r->npeers; p++) {
				const struct an_peer *q = &r->peers[p];
				if (q->node < 0 || !q->active || (double)q->active < 8 * ep || q->actual < (1u << 20))
					continue;
				if (n == cap) {
					cap = cap ? cap * 2 : 256;
					struct edge *x = realloc(e, cap * sizeof *x);
					if (!x) {
						free(e);
						return 0;
					}
					e = x;
				}
				e[n++] = (struct edge){ r->node, q->node, (double)q->actual * 8 / (double)q->active, r, c };
			}
		}
	}
	if (n < 4) {
		free(e);
		return 0;
	}
	double *t = malloc(n * sizeof *t);
	int nn = (int)s->nnodes;
	int *slow = calloc((size_t)nn + 1, sizeof *slow), *tot = calloc((size_t)nn + 1, sizeof *tot);
	double *srate = calloc((size_t)nn + 1, sizeof *srate);
	int ok = 0;
	if (!t || !slow || !tot || !srate)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		t[i] = e[i].rate;
	double G = an_median(t, n);
	int nslow = 0;
	for (uint32_t i = 0; i < n; i++) {
		tot[e[i].from]++;
		tot[e[i].to]++;
		if (e[i].rate * ACTIVE_OUTLIER < G) {
			slow[e[i].from]++;
			slow[e[i].to]++;
			srate[e[i].from] += e[i].rate;
			srate[e[i].to] += e[i].rate;
			nslow++;
		}
	}
	if (getenv("PULSE_ANALYZER_DEBUG")) {
		fprintf(stderr, "edges: %u, median %.1f Gb/s, %d slow\n", n, G, nslow);
		for (int j = 0; j < nn; j++)
			if (slow[j])
				fprintf(stderr, "  %s GPU %d: %d slow of %d\n", an_node_host(s, j), s->nodes[j].gpu, slow[j], tot[j]);
	}
	if (nslow < 2)
		goto out;
	int best = -1, second = -1;
	for (int j = 0; j < nn; j++) {
		if (slow[j] * 2 < nslow)
			continue; /* an end of at least half of the slow transfers */
		double fj = (double)slow[j] / tot[j];
		if (best < 0 || fj > (double)slow[best] / tot[best])
			second = best, best = j;
		else if (second < 0 || fj > (double)slow[second] / tot[second])
			second = j;
	}
	if (best < 0)
		goto out;
	double fb = (double)slow[best] / tot[best];
	if (fb < 0.5)
		goto out;
	d->cls = AN_COMM_SLOW;
	d->level = AN_LEVEL_MACHINE;
	an_diag_suspect(s, d, best, -1);
	int both = second >= 0 && (double)slow[second] / tot[second] > 0.9 * fb;
	if (both)
		an_diag_suspect(s, d, second, -1);
	/* evidence: the culprit's slowest record and its group */
	const struct edge *ev = NULL;
	for (uint32_t i = 0; i < n; i++)
		if ((e[i].from == best || e[i].to == best) && (!ev || e[i].rate < ev->rate))
			ev = &e[i];
	double mine = srate[best] / slow[best];
	evidence(d, ev->c, ev->rec, "actual_rate_gbps", mine, G, (uint32_t)n);
	d->onset_ns = ev->rec->call;
	snprintf(d->why, sizeof d->why,
		 "%s GPU %d is an end of %d of the %d transfers slower than the median (%.0f against %.0f "
		 "Gb/s while active, gaps excluded); %.0f%% of its transfers are slow%s: its NIC, PCIe or path",
		 an_node_host(s, best), s->nodes[best].gpu, slow[best], nslow, mine, G, 100 * fb,
		 both ? " (as are its peer's: both named)" : "");
	ok = 1;
out:
	free(e);
	free(t);
	free(slow);
	free(tot);
	free(srate);
	return ok;
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
		/* the observed rate (volume / duration) of a pipeline of three or
		 * more stages includes each stage's wait at its own place in the
		 * 1F1B schedule: the last stage's is lower by construction. The
		 * actual rate (bytes over active epochs) has no waits in it. */
		if (!c->custom || c->nranks < 2 || (observed && c->par == PULSE_PAR_PP && c->nranks >= 3))
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

/* rule_cpu's third way to the machine: receive buffers posted late
 * (recv_post_votes); a host with at least two votes, two thirds of them and
 * more than any other host is named. */
static int cpu_by_recv_post(const struct an_state *s, const struct an_window *w, struct an_diagnosis *d,
			    const struct an_comm *wc, const struct an_rec *ev, double wratio, int cap)
{
	int *nv = calloc((size_t)cap + 1, sizeof *nv);
	int *hv = calloc((size_t)s->nhosts + 1, sizeof *hv);
	if (!nv || !hv) {
		free(nv);
		free(hv);
		return 0;
	}
	int total = recv_post_votes(s, w, nv, cap);
	for (int j = 0; j < cap; j++)
		hv[s->nodes[j].host] += nv[j];
	int best = -1, second = 0;
	for (uint32_t h = 0; h < s->nhosts; h++) {
		if (!hv[h])
			continue;
		if (best < 0 || hv[h] > hv[best]) {
			second = best < 0 ? second : hv[best];
			best = (int)h;
		} else if (hv[h] > second) {
			second = hv[h];
		}
	}
	int v = best >= 0 ? hv[best] : 0;
	int ok = best >= 0 && v >= 2 && v * 3 >= total * 2 && second < v;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "cpu: late receive posting: %d votes, best %s with %d, second %d\n", total,
			best >= 0 ? s->hosts[best].name : "-", v, second);
	if (ok) {
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (nv[j] && s->nodes[j].host == best)
				an_diag_suspect(s, d, j, -1);
		evidence(d, wc, ev, "late_recv_post_votes", v, total, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal: in %d of %d all-to-all "
			 "operators, transfers to %.40s waited for its receive buffers (slow CPU proxy)",
			 wratio, v, total, s->hosts[best].name);
		an_diag_step(d, "extended durations with normal actual time: CPU; no late first byte, no node "
				"common to the slowed groups; the receiver whose incoming transfers start late "
				"in all-to-all operators pinpoints the node");
	}
	free(nv);
	free(hv);
	return ok;
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
	int *pvote = calloc((size_t)cap + 1, sizeof *pvote);
	int npvote = 0;
	char *ecomm = calloc((size_t)s->ncomms + 1, 1);
	if (!late || !ecomm || !pvote) {
		free(late);
		free(ecomm);
		free(pvote);
		return 0;
	}
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (in->nrec != (uint32_t)c->nranks || in->hung)
			continue;
		double ratios[256], t[256];
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
			ratios[n++] = (double)dd / wmax;
			if (anb >= 3 && r->active && (double)r->active > ACTIVE_OUTLIER * amed &&
			    (double)r->active - amed > (double)s->cfg.min_slow_ns)
				actnorm = 0;
		}
		if (n < 2)
			continue;
		memcpy(t, ratios, (size_t)n * sizeof *t);
		double med = an_median(t, (size_t)n);
		if (getenv("PULSE_ANALYZER_DEBUG") && med > 1.05)
			fprintf(stderr, "cpu: %s #%" PRIu64 " comm %016" PRIx64 " wire duration x%.2f\n",
				pulse_op_type_name(in->op), in->seq, c->id, med);
		if (med < s->cfg.slow_factor)
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
		if (hi >= 0 && hv > 1e5 && in->recs[hi]->node < cap) {
			pvote[in->recs[hi]->node]++;
			npvote++;
		}
	}
	if (!worst) {
		free(late);
		free(ecomm);
		free(pvote);
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
	int pbest = -1, psecond = 0;
	int *hv2 = calloc((size_t)s->nhosts + 1, sizeof *hv2);
	for (int j = 0; hv2 && j < cap; j++)
		hv2[s->nodes[j].host] += pvote[j];
	for (uint32_t h = 0; hv2 && h < s->nhosts; h++) {
		if (!hv2[h])
			continue;
		if (pbest < 0 || hv2[h] > hv2[pbest]) {
			psecond = pbest < 0 ? psecond : hv2[pbest];
			pbest = (int)h;
		} else if (hv2[h] > psecond) {
			psecond = hv2[h];
		}
	}
	int pv = pbest >= 0 ? hv2[pbest] : 0;
	free(hv2);
	if (pbest >= 0 && pv >= 2 && pv * 3 >= npvote * 2 && psecond < pv) {
		d->level = AN_LEVEL_MACHINE;
		for (int j = 0; j < cap; j++)
			if (pvote[j] && s->nodes[j].host == pbest)
				an_diag_suspect(s, d, j, -1);
		evidence(d, wc, ev, "late_first_byte_votes", pv, npvote, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "operators %.1fx longer on the wire, actual time normal (CPU proxy): in %d of %d "
			 "slowed operators %s's rank sent its first byte later than usual",
			 wratio, pv, npvote, s->hosts[pbest].name);
		an_diag_step(d, "extended durations with normal actual time: CPU; the rank whose first byte "
				"comes later than usual pinpoints the node");
	} else if (best >= 0 && ngroups >= 2 && late[best] == ngroups && (second < 0 || late[second] < late[best])) {
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, best, -1);
		evidence(d, wc, ev, "extended_groups", late[best], ngroups, wc->nranks);
		snprintf(d->why, sizeof d->why,
			 "operators take %.1fx their usual time on the wire while every rank's actual "
			 "transmission time is normal (a computation bottleneck on a CPU proxy thread); "
			 "%s GPU %d is the one member of all %d groups that slowed down",
			 wratio, an_node_host(s, best), s->nodes[best].gpu, ngroups);
		an_diag_step(d, "extended durations with normal actual time: CPU; node common to the slowed groups");
	} else if (cpu_by_recv_post(s, w, d, wc, ev, wratio, cap)) {
		/* the slow proxy posts its receive buffers late */
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
	free(ecomm);
	free(pvote);
	return 1;
}

/* Communication fail-slow from a transfer's place among the transfers of
 * the same operator instance (an_xfer_shift, the trigger's measure): a
 * transfer slower than its usual share of the instance's median rate. Over
 * the window, per node, the transfers it is an end of and how many of them
 * are slow; the node with at least two slow transfers, at least half of its
 * transfers slow and a larger share than any other node is named (in a
 * one-to-all the root is an end of every transfer, most of them normal; the
 * slow receiver of only slow ones). Runs after the other rules: a slowdown
 * too small for the window-median rules above. */
static int rule_xfer_shift(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	int cap = (int)s->nnodes;
	int *slow = calloc((size_t)cap + 1, sizeof *slow);
	int *tot = calloc((size_t)cap + 1, sizeof *tot);
	if (!slow || !tot) {
		free(slow);
		free(tot);
		return 0;
	}
	double worst = 1;
	struct an_inst *win = NULL;
	struct an_comm *wcm = NULL;
	const struct an_rec *wr = NULL;
	uint32_t wp = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		struct an_inst *in = w->inst[i];
		struct an_comm *c = s->comms[w->comm[i]];
		if (in->hung || an_inst_xfer_median(c, in) <= 0)
			continue;
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (!r || r->node < 0 || r->node >= cap)
				continue;
			for (uint32_t pi = 0; pi < r->npeers; pi++) {
				double thr = 0;
				double sh = an_xfer_shift(c, in, k, pi, &thr);
				if (isnan(sh))
					continue;
				int pn = r->peers[pi].node;
				int isslow = sh < 1.0 - thr;
				tot[r->node]++;
				slow[r->node] += isslow;
				if (pn >= 0 && pn < cap) {
					tot[pn]++;
					slow[pn] += isslow;
				}
				if (isslow && sh < worst) {
					worst = sh;
					win = in;
					wcm = c;
					wr = r;
					wp = pi;
				}
			}
		}
	}
	int best = -1;
	double bf = 0, sf = 0;
	for (int j = 0; j < cap; j++) {
		if (!tot[j] || slow[j] < 2)
			continue;
		double f = (double)slow[j] / tot[j];
		if (best < 0 || f > bf) {
			sf = best < 0 ? sf : bf;
			bf = f;
			best = j;
		} else if (f > sf) {
			sf = f;
		}
	}
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "xfer: best %s GPU %d slow %d of %d (share %.2f, next %.2f), worst shift %.3f\n",
			best >= 0 ? an_node_host(s, best) : "-", best >= 0 ? s->nodes[best].gpu : -1,
			best >= 0 ? slow[best] : 0, best >= 0 ? tot[best] : 0, bf, sf, worst);
	int ok = best >= 0 && bf >= 0.5 && sf < bf && win;
	if (ok) {
		/* the per-transfer measure fires only when a transfer is slow in
		 * two consecutive instances: persistent by construction */
		d->persistent = 1;
		d->cls = AN_COMM_SLOW;
		d->level = AN_LEVEL_MACHINE;
		an_diag_suspect(s, d, best, -1);
		double rate = an_xfer_rate(wr, &wr->peers[wp]);
		evidence(d, wcm, wr, "transfer_rate_gbps", rate, win->xmed, wcm->nranks);
		snprintf(d->why, sizeof d->why,
			 "%s GPU %d is an end of %d of the %d transfers slower than their usual share of "
			 "their operator's median rate (worst %.0f against %.0f Gb/s, %.0f%% below usual): "
			 "its NIC, PCIe or path",
			 an_node_host(s, best), s->nodes[best].gpu, slow[best], tot[best], rate, win->xmed,
			 100.0 * (1.0 - worst));
		d->onset_ns = win->first_call;
	}
	free(slow);
	free(tot);
	return ok;
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
	/* A slow trigger localized when a hang is already visible (calls
	 * unanswered past the hang bound at this data time): the hang explains
	 * the slowdown, and a rank that never started is fail-stop, not a
	 * delayed start. */
	int hung = an_localize_hang(s, t, 0);
	if (hung || t->kind == AN_TRIG_HANG)
		return hung;
	struct an_window w;
	an_window_build(s, t, &w);
	struct an_diagnosis d;
	an_diag_init(s, &d, "pulse", t);
	int g[6];
	count_groups(s, &w, g);
	int ok = 0;
	if (rule_edge_rate(s, &w, &d)) {
		an_diag_step(&d, "all groups in the window (DP %d, PP %d, EP %d): actual rate per transfer, "
				 "node common to the slow ones", g[PULSE_PAR_DP], g[PULSE_PAR_PP], g[PULSE_PAR_EP]);
		ok = 1;
	} else if (rule_active_outlier(s, &w, &d)) {
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
	} else if (rule_xfer_shift(s, &w, &d)) {
		an_diag_step(&d, "no outlier against the window's medians; per transfer: rate against its usual "
				 "share of its operator's median, node with the most slow transfers");
		ok = 1;
	}
	an_window_free(&w);
	return ok ? an_diag_commit(s, &d) : 0;
}
