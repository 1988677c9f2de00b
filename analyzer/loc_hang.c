/* pulse-analyzer: hang localization (shared with the OP-level baseline).
 * Walking the operators that did not finish in time order, where the
 * waiting ends:
 *   1. computation fail-stop: the first missing start. The first peer
 *      that is awaited (a member with no record of a hung collective, or
 *      the peer of an unfinished P2P) and that is idle itself (no call
 *      outstanding, nothing hung) stopped issuing: that rank's machine;
 *   2. an inconsistent call: a member called another operator or count;
 *   3. communication fail-stop, built-in collectives: in the first hung
 *      collective, the rank with the smallest volume sent (actual/expected);
 *   4. custom collectives: the node common to the uncompleted P2Ps. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"
#include "pulse/hook_record.h"

/* ---- hang ---- */

struct hmember {
	int node;
	int called, complete, sends, started, has_sig;
	uint8_t op;
	uint64_t count, vol, exp, last_tx, call_t;
	const struct an_rec *rec;
};

/* d: computation fail-stop of one machine, the member node (rank r) */
static void name_stop(const struct an_state *s, struct an_diagnosis *d, int kind, int node, int32_t r)
{
	d->cls = AN_COMP_STOP;
	d->hang_kind = kind;
	d->level = AN_LEVEL_MACHINE;
	an_diag_suspect(s, d, node, r);
}

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
		for (uint32_t k = 0; k < AN_HIST && !c->retired; k++) {
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
		if (rank < 0 || !c || rank >= c->nranks || c->retired)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			if (x->t + bound >= (s->hang_cut ? s->hang_cut : s->now_ns))
				continue;
			uint64_t key = an_call_key(p, x);
			int gone;
			if (an_rec_done(s, c, rank, key, an_call_record(c, rank, key, &gone)) || gone ||
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
		m->complete = an_rec_done(s, c, r, key, rec);
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
			if (!m->has_sig || x->head) {
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
		if (rank < 0 || !c || rank >= c->nranks || c->retired)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			uint64_t key = an_call_key(p, &p->calls[k]);
			int gone;
			const struct an_rec *r = an_call_record(c, rank, key, &gone);
			if (gone || an_rec_done(s, c, rank, key, r) || (!r && an_member_silent(c, rank, p->calls[k].op, p->calls[k].count)))
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

/* B for P2P operators (a group of sends and receives: each rank's counts
 * differ by design): the k-th send from r to q carries as many elements as
 * the k-th receive of q from r (NCCL pairs them in that order; an_call.pair).
 * A pair whose counts differ is an inconsistent call; the rank that is one
 * end of every such pair, with two partners at least (one pair alone does
 * not tell which end is wrong), called it. Returns its rank, or -1; the
 * counts of one of its pairs in *mine, *theirs. */
struct p2p_call {
	int32_t rank, peer;
	uint32_t pair;
	uint8_t op;
	uint64_t count;
};

static int cmp_p2p_call(const void *pa, const void *pb)
{
	const struct p2p_call *a = pa, *b = pb;
	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->peer != b->peer)
		return a->peer < b->peer ? -1 : 1;
	return a->pair < b->pair ? -1 : a->pair > b->pair;
}

/* The sends and receives of instance key on communicator c, every rank's
 * (from the hook lines: a rank's record does not list its calls), with
 * their NCCL pairing ordinal, into *out (malloc'd). Their number; 0 with
 * none or without memory. */
static size_t p2p_calls_at(const struct an_state *s, const struct an_comm *c, uint64_t key, struct p2p_call **out)
{
	size_t n = 0, cap = 0;
	struct p2p_call *v = NULL;
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (p->comm != c->id)
			continue;
		int32_t r = an_map_rank(s, p->host, p->pid, p->comm);
		if (r < 0 || r >= c->nranks)
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			if (an_call_key(p, x) != key || (x->op != PULSE_HOOK_OP_SEND && x->op != PULSE_HOOK_OP_RECV) ||
			    x->peer < 0 || x->peer >= c->nranks || x->peer == r || x->pair == UINT32_MAX)
				continue;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 64;
				struct p2p_call *y = realloc(v, nc * sizeof *y);
				if (!y) {
					free(v);
					*out = NULL;
					return 0;
				}
				v = y;
				cap = nc;
			}
			v[n++] = (struct p2p_call){ r, x->peer, x->pair, x->op, x->count };
		}
	}
	*out = v;
	return n;
}

static int32_t p2p_inconsistent(const struct an_state *s, const struct an_comm *c, uint64_t key, uint64_t *mine,
				uint64_t *theirs)
{
	int32_t culprit = -1;
	struct p2p_call *v = NULL;
	int *bad = calloc((size_t)c->nranks, sizeof *bad); /* mismatched pairs per rank */
	int *good = calloc((size_t)c->nranks, sizeof *good); /* matched ones */
	size_t n = bad && good ? p2p_calls_at(s, c, key, &v) : 0;
	if (!n)
		goto out;
	/* each send against its receive: sorted by (op, rank, peer, pair), the
	 * receive of q from r for the pair-th send r -> q is found by search */
	qsort(v, n, sizeof *v, cmp_p2p_call);
	int pairs = 0;
	const struct p2p_call *fs = NULL, *fr = NULL; /* a mismatched pair, for the report */
	for (size_t a = 0; a < n; a++) {
		if (v[a].op != PULSE_HOOK_OP_SEND)
			continue;
		struct p2p_call want = { v[a].peer, v[a].rank, v[a].pair, PULSE_HOOK_OP_RECV, 0 };
		const struct p2p_call *r = bsearch(&want, v, n, sizeof *v, cmp_p2p_call);
		if (!r)
			continue;
		if (r->count == v[a].count) {
			good[v[a].rank]++;
			good[r->rank]++;
			continue;
		}
		if (!fs) {
			fs = &v[a];
			fr = r;
		}
		pairs++;
		bad[v[a].rank]++;
		bad[r->rank]++;
	}
	if (!pairs)
		goto out;
	int32_t k = 0;
	for (int32_t q = 1; q < c->nranks; q++)
		if (bad[q] > bad[k])
			k = q;
	if (bad[k] != pairs)
		goto out; /* some mismatched pair without k: not one rank's call */
	/* every mismatched pair has k at one end: its partners are the others
	 * with a mismatch */
	int npart = 0, part = -1;
	for (int32_t q = 0; q < c->nranks; q++)
		if (q != k && bad[q] > 0) {
			npart++;
			part = q;
		}
	/* one pair alone: the end whose calls agree with two partners or more
	 * is not the one that called wrong (a one-to-all root and the one
	 * receiver that called another count), when the other end agrees with
	 * none */
	if (npart == 1 && pairs == 1) {
		if (good[k] >= 2 && !good[part])
			k = part;
		else if (!(good[part] >= 2 && !good[k]))
			goto out;
	} else if (npart < 2) {
		goto out;
	}
	culprit = k;
	*mine = fs->rank == k ? fs->count : fr->count;
	*theirs = fs->rank == k ? fr->count : fs->count;
out:
	free(v);
	free(bad);
	free(good);
	return culprit;
}

/* Hang localization for one hung operator; 1 with d filled. */
/* Several ranks called a collective and never started it: its kernels
 * wait on each other, and which of them is stuck does not show there. The
 * host's CPU issues calls ahead of its GPU, so the next operator of the
 * group tells: the one rank that never called it while every other did
 * stopped issuing operators; -1 when that is not one rank. In a group of
 * two the other one is all the evidence there is, and enough: without it
 * the volumes, nothing on either side, named a rank by its index as a
 * stopped link (seed 1147 #073: a DP pair's two-element all-reduce, both
 * called, neither started; host7 called the next one, host6 never did). */
static int32_t next_not_called(struct an_state *s, struct an_comm *c, uint64_t key)
{
	struct an_inst *in = an_inst_find(c, key + 1);
	int32_t quit = -1, called = 0;
	for (int32_t r = 0; r < c->nranks; r++) {
		struct hmember x;
		member_state(s, c, in, key + 1, r, &x);
		if (x.called) {
			called++;
		} else {
			if (quit >= 0)
				return -1;
			quit = r;
		}
	}
	return called >= 1 ? quit : -1;
}

/* The peer of call v made its matching call (NCCL's pairing, an_call.pair) */
static int p2p_peer_matched(const struct an_state *s, const struct an_comm *c, const struct p2p_call *v)
{
	int node = c->m[v->peer].node;
	if (node < 0)
		return 1; /* unknown: nothing to say it did not */
	const struct an_node *pn = &s->nodes[node];
	const struct an_proc *q = NULL;
	for (uint32_t j = 0; j < s->nprocs && !q; j++)
		if (s->procs[j].host == pn->host && s->procs[j].pid == pn->pid && s->procs[j].comm == c->id)
			q = &s->procs[j];
	/* the peer's calls of the other kind to this rank so far */
	uint32_t idx = 2 * (uint32_t)v->rank + (v->op == PULSE_HOOK_OP_SEND);
	uint32_t made = q && idx < q->npairs ? q->pairs[idx] : 0;
	return made > v->pair;
}

/* Rank r's sends of instance key wait for a receiver that has not posted
 * the matching receive, and is inside another call itself: a sender
 * cannot put its first byte on the wire before its receiver is ready
 * (NCCL's receiver grants the buffer), so its missing start is that
 * wait, not a stopped GPU (seed 1130 #33: a stage's send behind a
 * downstream stage stuck in a tensor-parallel collective of the failed
 * GPU's host). */
static int p2p_send_awaits_receiver(struct an_state *s, const struct an_comm *c, uint64_t key, int32_t r)
{
	struct p2p_call *v = NULL;
	size_t n = p2p_calls_at(s, c, key, &v);
	int waits = 0;
	for (size_t i = 0; i < n && !waits; i++)
		if (v[i].rank == r && v[i].op == PULSE_HOOK_OP_SEND && c->m[v[i].peer].node >= 0 &&
		    !p2p_peer_matched(s, c, &v[i]) && node_in_call(s, c->m[v[i].peer].node))
			waits = 1;
	free(v);
	return waits;
}

/* The rank the P2P calls of instance key wait for by NCCL's pairing (the
 * n-th send from A to B with the n-th receive on B from A, an_call.pair):
 * a peer that never made the matching call and is in no call itself
 * stopped issuing operators. Ranks of a P2P communicator number their
 * calls each on their own, so the peer's calls at the same seq say
 * nothing. -1 unless every such peer is one rank. */
static int32_t p2p_unmatched_peer(struct an_state *s, const struct an_comm *c, uint64_t key)
{
	int32_t who = -1;
	struct p2p_call *v = NULL;
	size_t n = p2p_calls_at(s, c, key, &v);
	for (size_t i = 0; i < n; i++) {
		int node = c->m[v[i].peer].node;
		if (node < 0)
			continue;
		if (p2p_peer_matched(s, c, &v[i]))
			continue; /* it made it: waiting elsewhere */
		if (node_in_call(s, node))
			continue; /* waiting itself: a link of the chain, not its end */
		if (who >= 0 && who != v[i].peer) {
			who = -1;
			break;
		}
		who = v[i].peer;
	}
	free(v);
	return who;
}

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
			name_stop(s, d, AN_HANG_NOT_ENTERED, m[r].node, r);
			if (!found) {
				snprintf(d->why, sizeof d->why,
					 "%s #%" PRIu64 " (%s group, %d ranks) hangs: %d ranks called it, rank %d never "
					 "did: it stopped issuing operators (computation)",
					 opn, key, an_par_label(c->par), n, ncalled, r);
				d->onset_ns = s->nodes[m[r].node].last_end;
			}
			found = 1;
		}
	if (!found && !an_is_builtin(op)) {
		int32_t r = p2p_unmatched_peer(s, c, key);
		if (r >= 0 && m[r].node >= 0) {
			name_stop(s, d, AN_HANG_NOT_ENTERED, m[r].node, r);
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " (%s group, %d ranks) hangs: its callers' sends and receives wait for "
				 "rank %d, which never made the matching calls and is in no call: it stopped issuing "
				 "operators (computation)",
				 opn, key, an_par_label(c->par), n, r);
			d->onset_ns = s->nodes[m[r].node].last_end;
			found = 1;
		}
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
				name_stop(s, d, AN_HANG_INCONSISTENT, m[r].node, r);
				if (!found)
					snprintf(d->why, sizeof d->why,
						 "%s #%" PRIu64 " (%s group) hangs: rank %d called %s of %" PRIu64
						 " elements where the other %d ranks called %s of %" PRIu64
						 ": inconsistent operators",
						 pulse_op_type_name(m[maj].op), key, an_par_label(c->par), r,
						 pulse_op_type_name(m[r].op), m[r].count, best,
						 pulse_op_type_name(m[maj].op), m[maj].count);
				found = 1;
			}
		if (found) {
			an_diag_step(d, "first hung operator: inconsistent calls");
			snprintf(d->metric, sizeof d->metric, "call");
			goto done;
		}
	} else {
		uint64_t mine = 0, theirs = 0;
		int32_t r = p2p_inconsistent(s, c, key, &mine, &theirs);
		if (r >= 0 && m[r].node >= 0) {
			name_stop(s, d, AN_HANG_INCONSISTENT, m[r].node, r);
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " (%s group) hangs: rank %d's sends and receives carry %" PRIu64
				 " elements where its peers' matching calls carry %" PRIu64 ": inconsistent operators",
				 opn, key, an_par_label(c->par), r, mine, theirs);
			an_diag_step(d, "first hung operator: P2P calls whose counts differ from their peers' "
					"matching calls, all at one rank");
			snprintf(d->metric, sizeof d->metric, "call");
			d->value = (double)mine;
			d->median = (double)theirs;
			found = 1;
			goto done;
		}
	}
	/* C: the first missing start: called, has data to send, never started */
	{
		int pick = -1, npick = 0, nwait = 0;
		for (int32_t r = 0; r < n; r++) {
			if (!m[r].called || m[r].complete || !m[r].sends || m[r].started || m[r].node < 0)
				continue;
			if (!an_is_builtin(op) && p2p_send_awaits_receiver(s, c, key, r)) {
				nwait++;
				continue;
			}
			npick++;
			if (pick < 0 || s->nodes[m[r].node].last_end < s->nodes[m[pick].node].last_end)
				pick = r;
		}
		int32_t quit = npick > 1 && an_is_builtin(op) ? next_not_called(s, c, key) : -1;
		if (quit >= 0 && m[quit].node >= 0) {
			name_stop(s, d, AN_HANG_NOT_ENTERED, m[quit].node, quit);
			snprintf(d->metric, sizeof d->metric, "call");
			d->value = 0;
			d->onset_ns = s->nodes[m[quit].node].last_end;
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " (%s group, %d ranks) hangs with %d ranks that called it and never "
				 "started; every other rank called the next operator, rank %d never did: it stopped "
				 "issuing operators (computation)",
				 opn, key, an_par_label(c->par), n, npick, quit);
			an_diag_step(d, "first hung operator in time order: several missing starts; the member "
					"that never called the next one");
			found = 1;
			goto done;
		}
		if (pick >= 0 && (nstarted > 0 || an_is_p2p(op))) {
			name_stop(s, d, AN_HANG_NOT_ENTERED, m[pick].node, pick);
			snprintf(d->metric, sizeof d->metric, "start_ns");
			d->value = 0;
			d->median = (double)m[pick].call_t;
			d->onset_ns = s->nodes[m[pick].node].last_end;
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " (%s group, %d ranks) hangs: rank %d called it but never sent its "
				 "first byte%s: its GPU stopped executing (computation)",
				 opn, key, an_par_label(c->par), n, pick,
				 nstarted ? " while the others started" : "");
			an_diag_step(d, "first hung operator in time order: first missing start");
			found = 1;
			goto done;
		}
		/* a sender waiting for its receiver: this operator is a link of
		 * the wait chain, a later hung operator is where it ends (and its
		 * volume says nothing of its NIC either) */
		if (nwait)
			goto out;
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
		d->hang_kind = AN_HANG_STOPPED_IN_COMM;
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
					 opn, key, an_par_label(c->par), n, an_node_host(s, bestn), s->nodes[bestn].gpu, pairs);
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
				 opn, key, an_par_label(c->par), n);
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
				 opn, key, an_par_label(c->par), n, lo, 100 * hfrac(&m[lo]));
		else if (m[lo].exp)
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d sent the least: %.1f%% of "
				 "its expected volume against a median of %.1f%%: its NIC or link stopped",
				 opn, key, an_par_label(c->par), n, lo, 100 * hfrac(&m[lo]), 100 * med);
		else
			snprintf(d->why, sizeof d->why,
				 "%s #%" PRIu64 " hangs in a %s group of %d ranks; rank %d sent the least (%.1f MB, "
				 "median %.1f MB): its NIC or link stopped",
				 opn, key, an_par_label(c->par), n, lo, (double)m[lo].vol / 1e6, med / 1e6);
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

/* Direct evidence before inference: a member host of the hung operator
 * whose NIC link went down before now, and has not come back, stopped
 * communicating (the host agent's rtnetlink link event, wire/host_event.c).
 * Returns 1 with d rewritten. */
static int link_evidence(struct an_state *s, const struct an_comm *c, uint64_t key, struct an_diagnosis *d)
{
	for (int32_t r = 0; r < c->nranks; r++) {
		int node = c->m[r].node;
		if (node < 0)
			continue;
		const struct an_link *l = an_link_down(s, s->nodes[node].host, s->now_ns);
		if (!l)
			continue;
		d->cls = AN_COMM_STOP;
		d->level = AN_LEVEL_MACHINE;
		d->hang_kind = AN_HANG_STOPPED_IN_COMM;
		d->nsuspects = 0;
		an_diag_suspect(s, d, node, r);
		d->comm_id = c->id;
		d->seq = key;
		snprintf(d->metric, sizeof d->metric, "link_down");
		d->value = 0;
		d->median = 0;
		d->onset_ns = l->t;
		snprintf(d->why, sizeof d->why,
			 "#%" PRIu64 " on communicator 0x%016" PRIx64 " hangs, and the NIC link of %s (netdev %s) "
			 "went down %.2f s before and has not come back: its NIC or link stopped",
			 key, c->id, an_node_host(s, node), l->netdev,
			 s->now_ns > l->t ? (double)(s->now_ns - l->t) / 1e9 : 0.0);
		an_diag_step(d, "a member's NIC link is down (the host agent's link event): direct evidence");
		return 1;
	}
	return 0;
}

int an_localize_hang(struct an_state *s, const struct an_trigger *t, int oplevel)
{
	struct hop *v = NULL;
	uint32_t n = collect_hung(s, &v);
	int found = 0;
	uint64_t since = 0;
	struct an_diagnosis d;
	uint32_t i = 0;
	for (; i < n && i < 16 && !found; i++) {
		an_diag_init(s, &d, oplevel ? "op-level" : "pulse", t);
		found = hang_one(s, s->comms[v[i].comm], v[i].key, oplevel, &d);
		since = v[i].t;
	}
	if (n) {
		uint32_t at = found ? i - 1 : 0;
		if (!found)
			an_diag_init(s, &d, oplevel ? "op-level" : "pulse", t);
		if (link_evidence(s, s->comms[v[at].comm], v[at].key, &d)) {
			found = 1;
			since = v[at].t;
		}
	}
	free(v);
	if (!found)
		return 0;
	if (!d.onset_ns)
		d.onset_ns = t->onset_ns;
	/* margin: how long the hung operator has waited, in hang bounds */
	if (since && s->now_ns > since)
		an_diag_margin(&d, (double)(s->now_ns - since), 0, (double)an_hang_bound(s));
	return an_diag_commit(s, &d);
}
