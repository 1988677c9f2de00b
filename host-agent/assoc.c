/* Flow-operator association: state, the feeding calls, flush and emission.
 * See assoc.h for the API and assoc_int.h for the model. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "assoc_int.h"

static void copy_host(char *dst, const char *src)
{
	size_t n = src ? strnlen(src, PULSE_OP_HOST_LEN - 1) : 0;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

struct assoc *assoc_new(const struct assoc_cfg *cfg)
{
	if (!cfg || cfg->epoch_ns == 0)
		return NULL;
	struct assoc *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	copy_host(a->host, cfg->host);
	a->epoch_ns = cfg->epoch_ns;
	a->delta_ns = cfg->delta_ns ? cfg->delta_ns : AS_DEFAULT_DELTA_NS;
	a->hang_ns = cfg->hang_ns ? cfg->hang_ns : AS_DEFAULT_HANG_NS;
	a->short_gap_ns = cfg->short_gap_ns ? cfg->short_gap_ns : 4ull * cfg->epoch_ns;
	a->call_lag_ns = cfg->call_lag_ns ? cfg->call_lag_ns : ASSOC_CALL_LAG_NS;
	a->qp_cap = 1024;
	a->qps = calloc(a->qp_cap, sizeof *a->qps);
	if (!a->qps) {
		free(a);
		return NULL;
	}
	return a;
}

static void op_free(struct as_op *op)
{
	free(op->calls);
	free(op->ut);
	free(op->peers);
	op->calls = NULL;
	op->ut = NULL;
	op->peers = NULL;
}

void assoc_free(struct assoc *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; i < a->nranks_s; i++) {
		struct as_rank *rs = &a->ranks[i];
		for (uint32_t j = 0; j < rs->npeers; j++)
			free(rs->peers[j].buf.v);
		free(rs->peers);
		for (uint32_t j = rs->qhead; j < rs->qn; j++)
			op_free(&rs->q[j]);
		free(rs->q);
		free(rs->learn);
	}
	free(a->ranks);
	free(a->members);
	free(a->qps);
	free(a->comms);
	free(a->pf);
	free(a->cur);
	free(a);
}

/* ---- members ---- */
static struct as_member *member_find(struct assoc *a, uint64_t comm_id, int32_t rank)
{
	for (uint32_t i = 0; i < a->nmembers; i++)
		if (a->members[i].comm_id == comm_id && a->members[i].rank == rank)
			return &a->members[i];
	return NULL;
}

/* ---- rank streams, keyed by (communicator, local process) ---- */
static struct as_rank *rank_find(struct assoc *a, uint64_t comm_id, uint32_t pid, int create)
{
	for (uint32_t i = 0; i < a->nranks_s; i++)
		if (a->ranks[i].comm_id == comm_id && a->ranks[i].pid == pid)
			return &a->ranks[i];
	if (!create)
		return NULL;
	if (a->nranks_s == a->ranks_cap) {
		uint32_t nc = a->ranks_cap ? a->ranks_cap * 2 : 16;
		struct as_rank *p = realloc(a->ranks, (size_t)nc * sizeof *p);
		if (!p)
			return NULL;
		a->ranks = p;
		a->ranks_cap = nc;
	}
	struct as_rank *rs = &a->ranks[a->nranks_s++];
	memset(rs, 0, sizeof *rs);
	rs->comm_id = comm_id;
	rs->pid = pid;
	rs->rank = -1;
	rs->gpu = -1;
	rs->ring_next = -1;
	for (uint32_t i = 0; i < a->nmembers; i++) {
		const struct as_member *m = &a->members[i];
		if (m->comm_id == comm_id && m->local && m->pid == pid) {
			rs->rank = m->rank;
			rs->nranks = m->nranks;
			rs->gpu = m->gpu;
		} else if (m->comm_id == comm_id && m->nranks > rs->nranks) {
			rs->nranks = m->nranks;
		}
	}
	as_comm_get(a, comm_id, 1);
	return rs;
}

void assoc_member(struct assoc *a, const struct assoc_member *m)
{
	if (!a || !m || m->rank < 0 || m->rank >= AS_MAX_RANKS)
		return;
	struct as_member *e = member_find(a, m->comm_id, m->rank);
	if (!e) {
		if (a->nmembers == a->members_cap) {
			uint32_t nc = a->members_cap ? a->members_cap * 2 : 64;
			struct as_member *p = realloc(a->members, (size_t)nc * sizeof *p);
			if (!p)
				return;
			a->members = p;
			a->members_cap = nc;
		}
		e = &a->members[a->nmembers++];
	}
	e->comm_id = m->comm_id;
	e->rank = m->rank;
	e->nranks = m->nranks;
	copy_host(e->host, m->host);
	e->gpu = m->gpu;
	e->pid = m->pid;
	e->local = m->local;
	struct as_comm *c = as_comm_get(a, m->comm_id, 1);
	if (c && m->nranks > c->nranks)
		c->nranks = m->nranks;
	for (uint32_t i = 0; i < a->nranks_s; i++) {
		struct as_rank *rs = &a->ranks[i];
		if (rs->comm_id != m->comm_id)
			continue;
		if (m->nranks > rs->nranks)
			rs->nranks = m->nranks;
		if (m->local && rs->pid == m->pid) {
			rs->rank = m->rank;
			rs->gpu = m->gpu;
		}
		struct as_peer *p = as_peer_get(rs, m->rank, 0);
		if (p && m->host && m->host[0]) {
			copy_host(p->host, m->host);
			p->gpu = m->gpu;
		}
	}
	if (m->local)
		rank_find(a, m->comm_id, m->pid, 1);
}

/* ---- QP table: open addressing on (nic, qpn) ---- */
static uint32_t qp_hash(uint16_t nic, uint32_t qpn)
{
	uint64_t k = ((uint64_t)nic << 32) | qpn;
	k *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(k >> 32);
}

static struct as_qp *qp_slot(struct as_qp *tab, uint32_t cap, uint16_t nic, uint32_t qpn)
{
	uint32_t i = qp_hash(nic, qpn) & (cap - 1);
	for (;;) {
		struct as_qp *q = &tab[i];
		if (!q->used || (q->nic == nic && q->qpn == qpn))
			return q;
		i = (i + 1) & (cap - 1);
	}
}

static struct as_qp *qp_find(const struct assoc *a, uint16_t nic, uint32_t qpn)
{
	struct as_qp *q = qp_slot(a->qps, a->qp_cap, nic, qpn);
	return q->used ? q : NULL;
}

static int qp_grow(struct assoc *a)
{
	uint32_t nc = a->qp_cap * 2;
	struct as_qp *t = calloc(nc, sizeof *t);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < a->qp_cap; i++)
		if (a->qps[i].used)
			*qp_slot(t, nc, a->qps[i].nic, a->qps[i].qpn) = a->qps[i];
	free(a->qps);
	a->qps = t;
	a->qp_cap = nc;
	return 0;
}

static void qp_unlink(struct assoc *a, struct as_qp *q)
{
	if (q->rs < 0)
		return;
	struct as_rank *rs = &a->ranks[q->rs];
	if (rs->nqps)
		rs->nqps--;
	struct as_peer *p = q->peer >= 0 ? as_peer_get(rs, q->peer, 0) : NULL;
	if (p && p->nqps)
		p->nqps--;
	q->rs = -1;
	q->peer = -1;
}

void assoc_qp(struct assoc *a, const struct assoc_qp *in)
{
	if (!a || !in || in->nic >= AS_MAX_NICS)
		return;
	if ((a->nqps_used + 1) * 2 > a->qp_cap && qp_grow(a))
		return;
	struct as_qp *q = qp_slot(a->qps, a->qp_cap, in->nic, in->qpn);
	if (q->used && q->pid == in->pid && q->comm_id == in->comm_id && q->rank == in->rank &&
	    q->remote_rank == in->remote_rank && q->remote_gpu == in->remote_gpu &&
	    !strncmp(q->remote_host, in->remote_host ? in->remote_host : "", PULSE_OP_HOST_LEN - 1))
		return; /* the same QP again (an analyzer's JOIN resent after a reconnect): its
			 * operators in flight are left alone */
	if (q->used) {
		qp_unlink(a, q);
	} else {
		memset(q, 0, sizeof *q);
		q->used = 1;
		a->nqps_used++;
	}
	q->nic = in->nic;
	q->qpn = in->qpn;
	q->pid = in->pid;
	q->comm_id = in->comm_id;
	q->rank = in->rank;
	q->remote_rank = in->remote_rank;
	copy_host(q->remote_host, in->remote_host);
	q->remote_gpu = in->remote_gpu;
	q->rs = -1;
	q->peer = -1;
	if (!in->comm_id)
		return;
	struct as_rank *rs = rank_find(a, in->comm_id, in->pid, 1);
	if (!rs)
		return;
	if (rs->rank < 0 && in->rank >= 0)
		rs->rank = in->rank;
	q->rs = (int32_t)(rs - a->ranks);
	rs->nqps++;
	rs->nic_mask |= 1ull << in->nic;
	if (in->remote_rank >= 0 && in->remote_rank < AS_MAX_RANKS) {
		struct as_peer *p = as_peer_get(rs, in->remote_rank, 1);
		if (p) {
			p->nqps++;
			q->peer = in->remote_rank;
			const struct as_member *m = member_find(a, in->comm_id, in->remote_rank);
			if (m && m->host[0]) {
				copy_host(p->host, m->host);
				p->gpu = m->gpu;
			} else if (in->remote_host && in->remote_host[0]) {
				copy_host(p->host, in->remote_host);
				p->gpu = in->remote_gpu;
			}
		}
		if (in->remote_rank + 1 > rs->nranks && !member_find(a, in->comm_id, in->remote_rank))
			rs->nranks = rs->nranks > in->remote_rank + 1 ? rs->nranks : in->remote_rank + 1;
	}
}

/* ---- calls ---- */
static struct as_op *op_push(struct as_rank *rs)
{
	if (rs->qhead > 0 && rs->qn == rs->qcap) {
		memmove(rs->q, rs->q + rs->qhead, (size_t)(rs->qn - rs->qhead) * sizeof *rs->q);
		rs->qn -= rs->qhead;
		rs->qhead = 0;
	}
	if (rs->qn == rs->qcap) {
		uint32_t nc = rs->qcap ? rs->qcap * 2 : 16;
		struct as_op *p = realloc(rs->q, (size_t)nc * sizeof *p);
		if (!p)
			return NULL;
		rs->q = p;
		rs->qcap = nc;
	}
	struct as_op *op = &rs->q[rs->qn++];
	memset(op, 0, sizeof *op);
	op->root_peer = -1;
	return op;
}

static uint8_t algo_from_name(const char *s, size_t n)
{
	char b[9];
	size_t i;
	for (i = 0; i < n && i < 8 && s[i]; i++)
		b[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
	b[i] = '\0';
	if (!b[0])
		return 0;
	if (!strcmp(b, "ring"))
		return PULSE_ALGO_RING;
	if (!strcmp(b, "tree"))
		return PULSE_ALGO_TREE;
	return PULSE_ALGO_UNKNOWN; /* CollNet, NVLS, PAT...: named, not ring or tree */
}

static void call_op(struct assoc *a, const struct pulse_hook_record *r)
{
	const struct pulse_hook_op_body *b = &r->u.op;
	struct as_rank *rs = rank_find(a, b->comm_id, r->pid, 1);
	if (!rs)
		return;
	uint8_t prof = r->source == PULSE_HOOK_SRC_PROFILER ? algo_from_name(b->algo, sizeof b->algo) : 0;
	if (r->flags & PULSE_HOOK_F_ANNOTATION) {
		/* the profiler's view of a call the hook recorded: add its
		 * algorithm to the oldest matching pending call */
		for (uint32_t i = rs->qhead; i < rs->qn; i++) {
			struct as_op *op = &rs->q[i];
			if (op->type == b->type && op->count == b->count && !op->prof_algo && !op->final) {
				op->prof_algo = prof;
				if (op->set_up && prof && op->algo != prof &&
				    op->algo_source != PULSE_ALGO_SRC_ARGS) {
					a->st.algo_conflicts++;
					op->algo = prof;
					op->algo_source = PULSE_ALGO_SRC_CONFLICT;
				} else if (op->set_up && prof && op->algo == prof) {
					op->algo_source = PULSE_ALGO_SRC_PROFILER;
				}
				return;
			}
		}
		return;
	}
	a->st.calls++;
	if (a->calls_until && r->time_ns < a->calls_until) {
		a->st.late_calls++;
		if (a->calls_until - r->time_ns > a->st.late_call_max_ns)
			a->st.late_call_max_ns = a->calls_until - r->time_ns;
	}
	if (b->group_id && (b->type == PULSE_HOOK_OP_SEND || b->type == PULSE_HOOK_OP_RECV)) {
		struct as_op *g = NULL;
		for (uint32_t i = rs->qhead; i < rs->qn; i++)
			if (rs->q[i].type == PULSE_OP_GROUP && rs->q[i].group_id == b->group_id &&
			    rs->q[i].building)
				g = &rs->q[i];
		if (!g) {
			g = op_push(rs);
			if (!g)
				return;
			g->type = PULSE_OP_GROUP;
			g->group_id = b->group_id;
			g->seq = b->seq;
			g->call_ns = r->time_ns;
			g->datatype = b->datatype;
			g->building = 1;
		}
		if (g->ncalls == g->calls_cap) {
			uint32_t nc = g->calls_cap ? g->calls_cap * 2 : 8;
			struct as_call *p = realloc(g->calls, (size_t)nc * sizeof *p);
			if (!p)
				return;
			g->calls = p;
			g->calls_cap = nc;
		}
		struct as_call *c = &g->calls[g->ncalls++];
		c->type = b->type;
		c->peer = b->root_peer;
		c->count = b->count;
		c->datatype = b->datatype;
		c->seq = b->seq;
		g->count += b->type == PULSE_HOOK_OP_SEND ? b->count : 0;
		as_parallel_note_call(a, rs, g);
		return;
	}
	struct as_op *op = op_push(rs);
	if (!op)
		return;
	op->seq = b->seq;
	op->group_id = b->group_id;
	op->call_ns = r->time_ns;
	op->count = b->count;
	op->type = b->type;
	op->datatype = b->datatype;
	op->root_peer = b->root_peer;
	op->prof_algo = prof;
	as_parallel_note_call(a, rs, op);
}

static void call_group_end(struct assoc *a, const struct pulse_hook_record *r)
{
	for (uint32_t i = 0; i < a->nranks_s; i++) {
		struct as_rank *rs = &a->ranks[i];
		if (rs->pid != r->pid)
			continue;
		for (uint32_t j = rs->qhead; j < rs->qn; j++) {
			struct as_op *op = &rs->q[j];
			if (op->building && op->group_id == r->u.group.group_id) {
				op->building = 0;
				as_parallel_note_call(a, rs, op);
			}
		}
	}
}

void assoc_call(struct assoc *a, const struct pulse_hook_record *r)
{
	if (!a || !r)
		return;
	switch (r->kind) {
	case PULSE_HOOK_OP:
		call_op(a, r);
		break;
	case PULSE_HOOK_GROUP_END:
		/* the outermost End closes the group (depth is the depth
		 * before End: 1 = outermost) */
		if (r->u.group.depth <= 1)
			call_group_end(a, r);
		break;
	default:
		break;
	}
}

/* ---- windows ---- */
static int buf_reserve(struct as_buf *b, uint32_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	if (b->head > 0) {
		memmove(b->v, b->v + b->head, (size_t)(b->n - b->head) * sizeof *b->v);
		b->n -= b->head;
		b->head = 0;
		if (b->n + more <= b->cap)
			return 0;
	}
	uint64_t nc = b->cap ? b->cap : 64;
	while (nc < (uint64_t)b->n + more)
		nc *= 2;
	if (nc > UINT32_MAX / 2)
		return -1;
	struct as_ev *p = realloc(b->v, (size_t)nc * sizeof *p);
	if (!p)
		return -1;
	b->v = p;
	b->cap = (uint32_t)nc;
	return 0;
}

/* One peer's QPs (channels) in one window, merged into its buffer in time
 * order in one pass (equal epochs add up). Epochs at or before what the
 * buffer already holds cannot come from a later window except after a
 * clock step: an equal one adds, earlier ones are dropped and counted. */
struct as_cursor {
	const struct pulse_qp_series *s;
	uint32_t i;
};

static void append_one(struct assoc *a, struct as_buf *b, int *have, uint64_t *prev, uint64_t t,
		       uint64_t bytes)
{
	if (*have && t <= *prev) {
		if (t == *prev)
			b->v[b->n - 1].b += bytes;
		else
			a->st.unmatched_segments++;
		return;
	}
	b->v[b->n].t = t;
	b->v[b->n].b = bytes;
	b->n++;
	*prev = t;
	*have = 1;
}

static void append_peer(struct assoc *a, struct as_buf *b, struct as_cursor *cur, uint32_t k, uint64_t base,
			uint32_t ep)
{
	uint64_t total = 0;
	for (uint32_t j = 0; j < k; j++)
		total += cur[j].s->count;
	if (total > UINT32_MAX / 4 || buf_reserve(b, (uint32_t)total))
		return;
	int have = b->n > b->head;
	uint64_t prev = have ? b->v[b->n - 1].t : 0;
	if (k <= 16) {
		/* heads cached locally: a peer's channels mostly move in lockstep */
		uint32_t headv[16], idx[16];
		const struct pulse_qp_series *sv[16];
		for (uint32_t j = 0; j < k; j++) {
			sv[j] = cur[j].s;
			idx[j] = 0;
			headv[j] = sv[j]->count ? sv[j]->epoch[0] : UINT32_MAX;
		}
		for (;;) {
			uint32_t be = UINT32_MAX;
			for (uint32_t j = 0; j < k; j++)
				be = headv[j] < be ? headv[j] : be;
			if (be == UINT32_MAX)
				break;
			uint64_t bytes = 0;
			for (uint32_t j = 0; j < k; j++)
				if (headv[j] == be) {
					bytes += sv[j]->bytes[idx[j]++];
					headv[j] = idx[j] < sv[j]->count ? sv[j]->epoch[idx[j]] : UINT32_MAX;
				}
			append_one(a, b, &have, &prev, base + (uint64_t)be * ep, bytes);
		}
		return;
	}
	for (;;) {
		uint32_t be = UINT32_MAX;
		for (uint32_t j = 0; j < k; j++)
			if (cur[j].i < cur[j].s->count && cur[j].s->epoch[cur[j].i] < be)
				be = cur[j].s->epoch[cur[j].i];
		if (be == UINT32_MAX)
			break;
		uint64_t bytes = 0;
		for (uint32_t j = 0; j < k; j++)
			if (cur[j].i < cur[j].s->count && cur[j].s->epoch[cur[j].i] == be)
				bytes += cur[j].s->bytes[cur[j].i++];
		append_one(a, b, &have, &prev, base + (uint64_t)be * ep, bytes);
	}
}

static uint64_t rank_horizon(const struct assoc *a, const struct as_rank *rs)
{
	uint64_t h = UINT64_MAX;
	int any = 0;
	for (unsigned i = 0; i < AS_MAX_NICS; i++)
		if ((rs->nic_mask >> i) & 1 && a->nic_seen[i]) {
			any = 1;
			if (a->horizon[i] < h)
				h = a->horizon[i];
		}
	return any ? h : 0;
}


struct as_pf {
	struct as_peer *p;
	const struct pulse_qp_series *s;
};

static int cmp_pf(const void *x, const void *y)
{
	const struct as_pf *a = x, *b = y;
	return a->p < b->p ? -1 : a->p > b->p;
}

static void advance(struct assoc *a, struct as_rank *rs, uint64_t now_ns);

void assoc_window(struct assoc *a, uint16_t nic, const struct pulse_window *w, int64_t offset_ns,
		  unsigned gap)
{
	if (!a || !w || nic >= AS_MAX_NICS)
		return;
	a->st.windows++;
	uint32_t ep = w->epoch_ns ? w->epoch_ns : a->epoch_ns;
	uint64_t base = (uint64_t)((int64_t)w->nic_start_ns + offset_ns);
	uint64_t wend = (uint64_t)((int64_t)w->nic_end_ns + offset_ns);
	/* data lost: before this window (gap flags) or inside it (pages):
	 * every operator pending then is reported as a gap */
	int lost_in = !w->complete || w->pages_missing;
	if (gap || lost_in) {
		uint64_t loss_end = lost_in ? wend : base;
		for (uint32_t i = 0; i < a->nranks_s; i++) {
			struct as_rank *rs = &a->ranks[i];
			if (!((rs->nic_mask >> nic) & 1))
				continue;
			for (uint32_t j = rs->qhead; j < rs->qn; j++) {
				struct as_op *op = &rs->q[j];
				if (!op->final && as_call_floor(a, op) < loss_end)
					op->tainted = 1;
			}
			if (loss_end > rs->last_loss_end)
				rs->last_loss_end = loss_end;
		}
	}
	/* flows -> peers (all channels' QPs to one remote rank) */
	if (w->flow_count > a->pf_cap) {
		struct as_pf *p = realloc(a->pf, (size_t)w->flow_count * sizeof *p);
		if (!p)
			return;
		a->pf = p;
		a->pf_cap = w->flow_count;
	}
	uint32_t npf = 0;
	for (uint32_t f = 0; f < w->flow_count; f++) {
		const struct pulse_qp_series *s = &w->flows[f];
		if (!s->count)
			continue;
		struct as_qp *q = qp_find(a, nic, s->qpn);
		struct as_peer *p = q && q->rs >= 0 && q->peer >= 0 ? as_peer_get(&a->ranks[q->rs], q->peer, 0) : NULL;
		if (!p) {
			a->st.unknown_qp_bytes += s->total_bytes;
			continue;
		}
		a->pf[npf].p = p;
		a->pf[npf].s = s;
		npf++;
	}
	if (npf > 1)
		qsort(a->pf, npf, sizeof *a->pf, cmp_pf);
	for (uint32_t i = 0; i < npf;) {
		uint32_t j = i;
		while (j < npf && a->pf[j].p == a->pf[i].p)
			j++;
		uint32_t k = j - i;
		if (k > a->cur_cap) {
			struct as_cursor *c = realloc(a->cur, (size_t)k * sizeof *c);
			if (!c)
				return;
			a->cur = c;
			a->cur_cap = k;
		}
		for (uint32_t x = 0; x < k; x++) {
			a->cur[x].s = a->pf[i + x].s;
			a->cur[x].i = 0;
		}
		append_peer(a, &a->pf[i].p->buf, a->cur, k, base, ep);
		i = j;
	}
	if (!a->nic_seen[nic] || wend > a->horizon[nic])
		a->horizon[nic] = wend;
	a->nic_seen[nic] = 1;
	for (uint32_t i = 0; i < a->nranks_s; i++)
		if ((a->ranks[i].nic_mask >> nic) & 1)
			advance(a, &a->ranks[i], 0);
}

/* ---- the operator queue ---- */
static void finalize(struct as_op *op, uint8_t status, uint64_t when)
{
	op->final = 1;
	op->status = status;
	op->end_ns = when;
}

/* After the expected peers closed: the other peers' bytes up to the end
 * (clear-to-send writes of the receive side, retransmissions) are the
 * operator's extra bytes. */
static void drain_extras(struct assoc *a, struct as_rank *rs, struct as_op *op, uint64_t end)
{
	uint64_t floor = as_call_floor(a, op);
	for (uint32_t i = 0; i < rs->npeers; i++) {
		struct as_peer *p = &rs->peers[i];
		int expected = 0;
		for (uint32_t j = 0; j < op->npeers; j++)
			if (op->peers[j].rank == p->rank && !op->peers[j].extra)
				expected = 1;
		if (expected)
			continue;
		struct as_buf *b = &p->buf;
		struct as_op_peer *xp = NULL;
		while (b->head < b->n && b->v[b->head].t < end) {
			const struct as_ev *e = &b->v[b->head++];
			if (e->t + a->epoch_ns < floor) {
				a->st.unmatched_segments++;
				continue;
			}
			if (!xp) {
				as_op_add_peer(op, p->rank, 0, 1);
				for (uint32_t j = 0; j < op->npeers; j++)
					if (op->peers[j].rank == p->rank)
						xp = &op->peers[j];
				if (!xp)
					break;
			}
			as_take(a, op, xp, e);
		}
	}
}

/* A hung operator whose algorithm was never known: its bytes from its call
 * up to the next call, per peer. */
static void take_unknown(struct assoc *a, struct as_rank *rs, struct as_op *op, uint64_t next_call)
{
	uint64_t floor = as_call_floor(a, op);
	uint64_t slack = a->delta_ns / 2; /* as in as_call_floor */
	uint64_t limit = next_call == UINT64_MAX ? UINT64_MAX : next_call > slack ? next_call - slack : 0;
	op->npeers = 0;
	for (uint32_t i = 0; i < rs->npeers; i++) {
		struct as_buf *b = &rs->peers[i].buf;
		struct as_op_peer *xp = NULL;
		while (b->head < b->n && b->v[b->head].t < limit) {
			const struct as_ev *e = &b->v[b->head++];
			if (e->t + a->epoch_ns < floor) {
				a->st.unmatched_segments++;
				continue;
			}
			if (!xp) {
				as_op_add_peer(op, rs->peers[i].rank, 0, 0);
				xp = op->npeers ? &op->peers[op->npeers - 1] : NULL;
				if (!xp || xp->rank != rs->peers[i].rank)
					break;
			}
			as_take(a, op, xp, e);
		}
	}
}

static int hang_due(const struct assoc *a, const struct as_rank *rs, const struct as_op *op,
		    uint64_t now_ns)
{
	if (a->finishing)
		return 1;
	uint64_t due = op->call_ns + a->hang_ns;
	if (now_ns < due)
		return 0;
	uint64_t h = rank_horizon(a, rs);
	return h >= due || rs->nic_mask == 0 || now_ns >= due + a->hang_ns;
}

void assoc_peers_pending(struct assoc *a, int pending)
{
	if (a)
		a->peers_pending = pending;
}

uint64_t assoc_call_lag_ns(const struct assoc *a)
{
	return a ? a->call_lag_ns : 0;
}

void assoc_calls_known(struct assoc *a, uint64_t until_ns)
{
	if (a)
		a->calls_until = until_ns > a->call_lag_ns ? until_ns - a->call_lag_ns : 1;
}

/* Some of the rank's QPs have no remote end yet, and it may still come. */
static int peers_unknown(const struct assoc *a, const struct as_rank *rs)
{
	if (!a->peers_pending)
		return 0;
	uint32_t known = 0;
	for (uint32_t i = 0; i < rs->npeers; i++)
		known += rs->peers[i].nqps;
	return rs->nqps > known;
}

static void advance(struct assoc *a, struct as_rank *rs, uint64_t now_ns)
{
	/* at the end of the data, silence lasts forever */
	uint64_t horizon = a->finishing ? UINT64_MAX / 2 : rank_horizon(a, rs);
	for (uint32_t i = rs->qhead; i < rs->qn; i++) {
		struct as_op *op = &rs->q[i];
		if (op->final)
			continue;
		if (op->building) {
			if (now_ns && hang_due(a, rs, op, now_ns))
				op->building = 0; /* never closed by a GROUP_END */
			else
				return;
		}
		uint64_t next_call = i + 1 < rs->qn ? rs->q[i + 1].call_ns : UINT64_MAX;
		if (!op->set_up && peers_unknown(a, rs) && !(now_ns && hang_due(a, rs, op, now_ns)))
			return;
		if (!op->set_up && !as_expect_setup(a, rs, op) && !as_infer(a, rs, op, horizon)) {
			if (now_ns && hang_due(a, rs, op, now_ns)) {
				/* nothing to infer from: no traffic at all, or
				 * traffic that never completed a segment. What
				 * it sent before the next call is its own (the
				 * next operator cannot start before its call):
				 * reported per peer, expected unknown (0). */
				take_unknown(a, rs, op, next_call);
				finalize(op, op->tainted ? PULSE_OP_GAP
					    : op->peers_with_bytes ? PULSE_OP_HUNG : PULSE_OP_NOT_STARTED,
					 now_ns);
				continue;
			}
			return;
		}
		uint32_t nexp = 0, nclosed = 0;
		for (uint32_t j = 0; j < op->npeers; j++) {
			struct as_op_peer *p = &op->peers[j];
			if (p->extra)
				continue;
			nexp++;
			struct as_peer *pp = as_peer_get(rs, p->rank, 0);
			if (!pp) {
				p->seg.closed = 1;
				nclosed++;
				continue;
			}
			if (op->tainted && !p->seg.open && !p->seg.closed) {
				/* lost data may have held all of it: once the
				 * next operator's traffic shows, give up */
				const struct as_buf *b = &pp->buf;
				if ((b->head < b->n && b->v[b->head].t >= next_call) ||
				    (next_call != UINT64_MAX && horizon >= next_call + a->delta_ns)) {
					p->seg.closed = 1;
					nclosed++;
					continue;
				}
			}
			nclosed += (uint32_t)as_segment_peer(a, rs, op, p, &pp->buf, horizon, next_call);
		}
		if (nexp == 0) {
			/* nothing expected on the NIC: lost NIC data changes nothing */
			finalize(op, PULSE_OP_NO_TRAFFIC, op->call_ns);
			continue;
		}
		if (nclosed == nexp) {
			uint64_t end = 0;
			for (uint32_t j = 0; j < op->npeers; j++)
				if (op->peers[j].seg.open && op->peers[j].seg.last + a->epoch_ns > end)
					end = op->peers[j].seg.last + a->epoch_ns;
			drain_extras(a, rs, op, end);
			finalize(op, op->tainted ? PULSE_OP_GAP : PULSE_OP_COMPLETE, end);
			continue;
		}
		if (now_ns && hang_due(a, rs, op, now_ns)) {
			finalize(op, op->tainted ? PULSE_OP_GAP
					    : op->peers_with_bytes ? PULSE_OP_HUNG : PULSE_OP_NOT_STARTED,
				 now_ns);
			continue;
		}
		return;
	}
}

/* ---- records ---- */
static void peer_identity(const struct assoc *a, struct as_rank *rs, int32_t rank, struct pulse_op_peer *out)
{
	uint64_t comm_id = rs->comm_id;
	out->gpu = -1;
	out->host[0] = '\0';
	const struct as_peer *pp = as_peer_get(rs, rank, 0);
	if (pp && pp->host[0]) {
		copy_host(out->host, pp->host);
		out->gpu = pp->gpu;
		return;
	}
	for (uint32_t i = 0; i < a->nmembers; i++)
		if (a->members[i].comm_id == comm_id && a->members[i].rank == rank) {
			copy_host(out->host, a->members[i].host);
			out->gpu = a->members[i].gpu;
			return;
		}
	for (uint32_t i = 0; i < a->qp_cap; i++) {
		const struct as_qp *q = &a->qps[i];
		if (q->used && q->comm_id == comm_id && q->remote_rank == rank) {
			copy_host(out->host, q->remote_host);
			out->gpu = q->remote_gpu;
			return;
		}
	}
}

static void build_record(struct assoc *a, struct as_rank *rs, struct as_op *op,
			 struct pulse_op_record *r)
{
	memset(r, 0, sizeof *r);
	copy_host(r->host, a->host);
	r->gpu = rs->gpu;
	r->pid = rs->pid;
	r->comm_id = rs->comm_id;
	r->rank = rs->rank;
	r->nranks = rs->nranks;
	r->seq = op->seq;
	r->group_id = op->group_id;
	r->op = op->type;
	r->datatype = op->datatype;
	r->algo = op->algo;
	r->algo_source = op->algo_source;
	if (!op->algo && op->prof_algo) {
		r->algo = op->prof_algo;
		r->algo_source = PULSE_ALGO_SRC_PROFILER;
	}
	r->parallelism = as_parallel_for_op(a, op, rs->comm_id);
	r->status = op->status;
	r->root_peer = op->root_peer;
	r->count = op->count;
	r->epoch_ns = a->epoch_ns;
	r->call_ns = op->call_ns;
	uint64_t start = UINT64_MAX, end = 0, sum_epochs = 0, data_epochs = 0;
	/* the expected peers first, then the extra ones, as many as a record
	 * carries; the totals cover them all */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t j = 0; j < op->npeers; j++) {
			const struct as_op_peer *p = &op->peers[j];
			if ((int)p->extra != pass)
				continue;
			if (p->seg.open && !p->extra) {
				if (p->seg.start < start)
					start = p->seg.start;
				if (p->seg.last + a->epoch_ns > end)
					end = p->seg.last + a->epoch_ns;
			}
			r->expected_bytes += p->expected;
			r->actual_bytes += p->seg.tmp;
			sum_epochs += p->seg.epochs;
			if (!p->extra)
				data_epochs += p->seg.epochs;
			if (r->npeers >= PULSE_OP_MAX_PEERS)
				continue;
			struct pulse_op_peer *o = &r->peers[r->npeers++];
			o->rank = p->rank;
			peer_identity(a, rs, p->rank, o);
			o->expected_bytes = p->expected;
			o->actual_bytes = p->seg.tmp;
			if (p->seg.open) {
				o->start_ns = p->seg.start;
				o->end_ns = p->seg.last + a->epoch_ns;
			}
			o->active_ns = p->seg.epochs * a->epoch_ns;
			o->peak_epoch_bytes = p->seg.peak;
			/* reached its expected volume; a peer whose volume was
			 * never known (hung before inference) is not complete */
			o->complete = p->extra || (p->expected
							   ? p->seg.tmp + as_tolerance(p->expected, rs->nranks) >= p->expected
							   : op->status == PULSE_OP_COMPLETE);
		}
	if (start != UINT64_MAX) {
		r->start_ns = start;
		r->end_ns = end;
		r->duration_ns = end - start;
	}
	/* the union of the expected peers' activity (extra bytes, e.g. the
	 * receive side's clear-to-send writes, are counted in actual_bytes
	 * but not as communication time) */
	uint64_t uni = data_epochs;
	if (op->nut == data_epochs && op->peers_with_bytes > 1 && op->nut > 0) {
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint32_t i = 0; i < op->nut; i++) {
			lo = op->ut[i] < lo ? op->ut[i] : lo;
			hi = op->ut[i] > hi ? op->ut[i] : hi;
		}
		uint64_t span = (hi - lo) / a->epoch_ns + 1;
		uint64_t *bits = span < (1ull << 32) ? calloc((size_t)(span + 63) / 64, sizeof *bits) : NULL;
		if (bits) {
			uni = 0;
			for (uint32_t i = 0; i < op->nut; i++) {
				uint64_t e = (op->ut[i] - lo) / a->epoch_ns;
				if (!(bits[e / 64] >> (e % 64) & 1)) {
					bits[e / 64] |= 1ull << (e % 64);
					uni++;
				}
			}
			free(bits);
		}
	}
	r->active_ns = uni * a->epoch_ns;
	r->rank_active_ns = r->active_ns;
	r->rank_rate_gbps = r->rank_active_ns ? (double)r->actual_bytes * 8.0 / (double)r->rank_active_ns : 0.0;
	if (op->status == PULSE_OP_NO_TRAFFIC) {
		r->start_ns = 0;
		r->end_ns = 0;
	}
}

void assoc_flush(struct assoc *a, uint64_t now_ns, assoc_emit_fn emit, void *ctx)
{
	if (!a)
		return;
	struct pulse_op_record *r = malloc(sizeof *r);
	if (!r)
		return;
	for (uint32_t i = 0; i < a->nranks_s; i++) {
		struct as_rank *rs = &a->ranks[i];
		advance(a, rs, now_ns ? now_ns : 1);
		while (rs->qhead < rs->qn && rs->q[rs->qhead].final) {
			struct as_op *op = &rs->q[rs->qhead];
			build_record(a, rs, op, r);
			a->st.records++;
			switch (op->status) {
			case PULSE_OP_COMPLETE: a->st.complete++; break;
			case PULSE_OP_HUNG: a->st.hung++; break;
			case PULSE_OP_NOT_STARTED: a->st.not_started++; break;
			case PULSE_OP_GAP: a->st.gaps++; break;
			default: break;
			}
			if (emit)
				emit(ctx, r);
			op_free(op);
			rs->qhead++;
		}
		if (rs->qhead == rs->qn)
			rs->qhead = rs->qn = 0;
		/* traffic with no operator to take it, older than the hang
		 * bound, is dropped as unmatched */
		if (rs->qhead == rs->qn) {
			uint64_t h = rank_horizon(a, rs);
			for (uint32_t j = 0; j < rs->npeers; j++) {
				struct as_buf *b = &rs->peers[j].buf;
				while (b->head < b->n && b->v[b->head].t + a->hang_ns < h) {
					b->head++;
					a->st.unmatched_segments++;
				}
			}
		}
	}
	free(r);
}

void assoc_finish(struct assoc *a, uint64_t now_ns, assoc_emit_fn emit, void *ctx)
{
	if (!a)
		return;
	assoc_flush(a, now_ns, emit, ctx);
	a->finishing = 1;
	assoc_flush(a, now_ns, emit, ctx);
	a->finishing = 0;
}

uint64_t assoc_settled(const struct assoc *a)
{
	if (!a || a->peers_pending)
		return 0;
	uint64_t h = UINT64_MAX;
	for (unsigned i = 0; i < AS_MAX_NICS; i++)
		if (a->nic_seen[i] && a->horizon[i] < h)
			h = a->horizon[i];
	if (h == UINT64_MAX || h <= a->delta_ns)
		return 0;
	h -= a->delta_ns;
	if (a->calls_until && a->calls_until < h)
		h = a->calls_until;
	return h;
}

uint8_t assoc_parallelism(const struct assoc *a, uint64_t comm_id)
{
	if (!a)
		return PULSE_PAR_UNKNOWN;
	for (uint32_t i = 0; i < a->ncomms; i++)
		if (a->comms[i].comm_id == comm_id)
			return as_parallel_label(a, &a->comms[i]);
	return PULSE_PAR_UNKNOWN;
}

void assoc_get_stats(const struct assoc *a, struct assoc_stats *s)
{
	if (!a || !s)
		return;
	*s = a->st;
}
