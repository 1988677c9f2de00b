/* The cross-host QP join (include/pulse/qp_join.h): pairs QPs by QPN
 * symmetry, narrowed by device GIDs (given or learned), communicator and
 * lifetime; communicator membership. Hosted C11; every allocation is freed
 * before returning. */
#define _GNU_SOURCE
#include "pulse/qp_join.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

struct dev {
	const char *host, *dev;
	uint8_t gid[16];
	uint8_t known;   /* 1 given, 2 learned */
};

struct ctx {
	const struct pulse_join_qp *q;
	uint32_t n;
	uint32_t *devof;      /* QP -> device index */
	struct dev *devs;
	uint32_t ndevs;
	uint32_t *byqpn;      /* connected QPs sorted by (qpn, dest_qpn) */
	uint32_t nconn;
	uint32_t *ncand;      /* per QP: candidates after the filters */
	int32_t *cand;        /* per QP: the candidate when ncand == 1 */
	const struct pulse_join_comm *comms;
	uint32_t *bycomm;     /* comms sorted by (comm_id, pid, host) */
	uint32_t ncomms;
};

/* qsort has no context argument in C11: the arrays being sorted are index
 * arrays into this (set just before each sort, single-threaded per call). */
static _Thread_local const struct pulse_join_qp *sort_q;
static _Thread_local const struct pulse_join_comm *sort_c;

static int cmp_dev(const void *a, const void *b)
{
	const struct pulse_join_qp *x = &sort_q[*(const uint32_t *)a], *y = &sort_q[*(const uint32_t *)b];
	int c = strncmp(x->host, y->host, PULSE_JOIN_HOST_LEN);
	return c ? c : strncmp(x->dev, y->dev, PULSE_JOIN_DEV_LEN);
}

static int cmp_key(const void *a, const void *b)
{
	const struct pulse_join_qp *x = &sort_q[*(const uint32_t *)a], *y = &sort_q[*(const uint32_t *)b];
	if (x->qpn != y->qpn)
		return x->qpn < y->qpn ? -1 : 1;
	if (x->dest_qpn != y->dest_qpn)
		return x->dest_qpn < y->dest_qpn ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_comm(const void *a, const void *b)
{
	const struct pulse_join_comm *x = &sort_c[*(const uint32_t *)a], *y = &sort_c[*(const uint32_t *)b];
	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strncmp(x->host, y->host, PULSE_JOIN_HOST_LEN);
}

static int same_str(const char *a, const char *b, size_t n)
{
	return strncmp(a, b, n) == 0;
}

static uint32_t find_dev(const struct ctx *c, const char *host, const char *dev)
{
	uint32_t lo = 0, hi = c->ndevs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int r = strncmp(c->devs[mid].host, host, PULSE_JOIN_HOST_LEN);
		if (!r)
			r = strncmp(c->devs[mid].dev, dev, PULSE_JOIN_DEV_LEN);
		if (!r)
			return mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT32_MAX;
}

/* The first index in byqpn whose key is >= (qpn, dest). */
static uint32_t lower(const struct ctx *c, uint32_t qpn, uint32_t dest)
{
	uint32_t lo = 0, hi = c->nconn;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct pulse_join_qp *m = &c->q[c->byqpn[mid]];
		if (m->qpn < qpn || (m->qpn == qpn && m->dest_qpn < dest))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Do i and j agree on GIDs and communicator? */
static int compatible(const struct ctx *c, uint32_t i, uint32_t j)
{
	const struct pulse_join_qp *a = &c->q[i], *b = &c->q[j];
	const struct dev *da = &c->devs[c->devof[i]], *db = &c->devs[c->devof[j]];
	if (a->gid_valid && db->known && memcmp(db->gid, a->remote_gid, 16))
		return 0;
	if (b->gid_valid && da->known && memcmp(da->gid, b->remote_gid, 16))
		return 0;
	if (a->comm_id && b->comm_id && a->comm_id != b->comm_id)
		return 0;
	return 1;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int overlap(const struct pulse_join_qp *a, const struct pulse_join_qp *b)
{
	uint64_t a0 = a->first_ns > PULSE_JOIN_CLOCK_SLACK_NS ? a->first_ns - PULSE_JOIN_CLOCK_SLACK_NS : 0;
	uint64_t a1 = sat_add(a->last_ns, PULSE_JOIN_CLOCK_SLACK_NS);
	return a0 <= b->last_ns && b->first_ns <= a1;
}

/* Candidates of every connected QP under the current GID knowledge. */
static void candidates(struct ctx *c)
{
	for (uint32_t k = 0; k < c->nconn; k++) {
		uint32_t i = c->byqpn[k];
		const struct pulse_join_qp *a = &c->q[i];
		uint32_t cnt = 0, live = 0;
		int32_t one = -1, one_live = -1;
		for (uint32_t m = lower(c, a->dest_qpn, a->qpn); m < c->nconn; m++) {
			uint32_t j = c->byqpn[m];
			const struct pulse_join_qp *b = &c->q[j];
			if (b->qpn != a->dest_qpn || b->dest_qpn != a->qpn)
				break;
			if (j == i || !compatible(c, i, j))
				continue;
			cnt++;
			one = (int32_t)j;
			if (overlap(a, b)) {
				live++;
				one_live = (int32_t)j;
			}
		}
		if (cnt > 1 && live == 1) { /* the lifetimes break the tie */
			cnt = 1;
			one = one_live;
		}
		c->ncand[i] = cnt;
		c->cand[i] = cnt == 1 ? one : -1;
	}
}

/* Learns device GIDs from unique candidates; returns how many. mutual: only
 * from pairs where each is the other's only candidate; else also where A's
 * only candidate is B (B's device then has the GID A's RTR named), which is
 * tried only when the mutual pairs teach nothing more. */
static uint32_t learn(struct ctx *c, struct pulse_join_stats *st, int mutual)
{
	uint32_t learned = 0;
	for (uint32_t k = 0; k < c->nconn; k++) {
		uint32_t i = c->byqpn[k];
		if (c->ncand[i] != 1)
			continue;
		uint32_t j = (uint32_t)c->cand[i];
		if (mutual && (c->ncand[j] != 1 || c->cand[j] != (int32_t)i))
			continue;
		const struct pulse_join_qp *a = &c->q[i];
		struct dev *db = &c->devs[c->devof[j]];
		if (!a->gid_valid)
			continue;
		if (!db->known) {
			memcpy(db->gid, a->remote_gid, 16);
			db->known = 2;
			learned++;
			st->gids_learned++;
		} else if (memcmp(db->gid, a->remote_gid, 16)) {
			st->gid_conflicts++; /* compatible() makes this unreachable; kept as a guard */
		}
	}
	return learned;
}

static const struct pulse_join_comm *comm_of(const struct ctx *c, const struct pulse_join_qp *q)
{
	if (!q->comm_id || !c->ncomms)
		return NULL;
	uint32_t lo = 0, hi = c->ncomms;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct pulse_join_comm *m = &c->comms[c->bycomm[mid]];
		int r = m->comm_id != q->comm_id ? (m->comm_id < q->comm_id ? -1 : 1)
			: m->pid != q->pid	 ? (m->pid < q->pid ? -1 : 1)
						 : strncmp(m->host, q->host, PULSE_JOIN_HOST_LEN);
		if (!r)
			return m;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int pulse_qp_join(const struct pulse_join_qp *qps, uint32_t n, const struct pulse_join_gid *gids,
		  uint32_t ngids, const struct pulse_join_comm *comms, uint32_t ncomms,
		  struct pulse_join_result *out, struct pulse_join_stats *st)
{
	struct pulse_join_stats dummy;
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof *st);
	st->qps = n;
	for (uint32_t i = 0; i < n; i++) {
		out[i].status = PULSE_JOIN_NO_PARTNER;
		out[i].candidates = 0;
		out[i].peer = -1;
		out[i].remote_rank = -1;
		out[i].remote_gpu = -1;
		out[i].remote_pid = 0;
	}
	if (!n)
		return 0;
	struct ctx c = {.q = qps, .n = n, .comms = comms, .ncomms = comms ? ncomms : 0};
	uint32_t *order = malloc(sizeof(uint32_t) * n);
	c.devof = malloc(sizeof(uint32_t) * n);
	c.devs = malloc(sizeof(struct dev) * n);
	c.byqpn = malloc(sizeof(uint32_t) * n);
	c.ncand = calloc(n, sizeof(uint32_t));
	c.cand = malloc(sizeof(int32_t) * n);
	c.bycomm = malloc(sizeof(uint32_t) * (c.ncomms ? c.ncomms : 1));
	int rc = -1;
	if (!order || !c.devof || !c.devs || !c.byqpn || !c.ncand || !c.cand || !c.bycomm)
		goto done;

	/* devices */
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	sort_q = qps;
	qsort(order, n, sizeof *order, cmp_dev);
	for (uint32_t k = 0; k < n; k++) {
		const struct pulse_join_qp *q = &qps[order[k]];
		if (!c.ndevs || !same_str(c.devs[c.ndevs - 1].host, q->host, PULSE_JOIN_HOST_LEN) ||
		    !same_str(c.devs[c.ndevs - 1].dev, q->dev, PULSE_JOIN_DEV_LEN)) {
			struct dev *d = &c.devs[c.ndevs++];
			memset(d, 0, sizeof *d);
			d->host = q->host;
			d->dev = q->dev;
		}
		c.devof[order[k]] = c.ndevs - 1;
	}
	st->devices = c.ndevs;
	for (uint32_t g = 0; gids && g < ngids; g++) {
		uint32_t d = find_dev(&c, gids[g].host, gids[g].dev);
		if (d == UINT32_MAX)
			continue;
		if (c.devs[d].known && memcmp(c.devs[d].gid, gids[g].gid, 16)) {
			st->gid_conflicts++;
			continue;
		}
		if (!c.devs[d].known)
			st->gids_given++;
		memcpy(c.devs[d].gid, gids[g].gid, 16);
		c.devs[d].known = 1;
	}

	/* symmetry index */
	for (uint32_t i = 0; i < n; i++)
		if (qps[i].connected)
			c.byqpn[c.nconn++] = i;
	qsort(c.byqpn, c.nconn, sizeof *c.byqpn, cmp_key);
	for (uint32_t i = 0; i < c.ncomms; i++)
		c.bycomm[i] = i;
	sort_c = comms;
	if (c.ncomms)
		qsort(c.bycomm, c.ncomms, sizeof *c.bycomm, cmp_comm);

	/* candidates, learning GIDs until nothing new (each round learns at
	 * least one device, so at most ndevs rounds) */
	for (uint32_t round = 0; round <= c.ndevs; round++) {
		candidates(&c);
		if (!learn(&c, st, 1) && !learn(&c, st, 0))
			break;
	}

	for (uint32_t i = 0; i < n; i++) {
		struct pulse_join_result *r = &out[i];
		if (!qps[i].connected) {
			r->status = PULSE_JOIN_NOT_CONNECTED;
			st->not_connected++;
			continue;
		}
		r->candidates = c.ncand[i];
		if (c.ncand[i] == 0) {
			st->no_partner++;
			continue;
		}
		uint32_t j = (uint32_t)c.cand[i];
		if (c.ncand[i] > 1 || c.ncand[j] != 1 || c.cand[j] != (int32_t)i) {
			if (c.ncand[i] == 1)
				st->asymmetric++;
			r->status = PULSE_JOIN_AMBIGUOUS;
			st->ambiguous++;
			continue;
		}
		const struct pulse_join_qp *p = &qps[j];
		const struct pulse_join_comm *pc = comm_of(&c, p);
		r->status = PULSE_JOIN_PAIRED;
		r->peer = (int32_t)j;
		r->remote_pid = p->pid;
		r->remote_rank = p->rank >= 0 ? p->rank : pc ? pc->rank : -1;
		r->remote_gpu = p->gpu >= 0 ? p->gpu : pc ? pc->gpu : -1;
		st->paired++;
	}
	rc = 0;
done:
	free(order);
	free(c.devof);
	free(c.devs);
	free(c.byqpn);
	free(c.ncand);
	free(c.cand);
	free(c.bycomm);
	return rc;
}

static int cmp_member(const void *a, const void *b)
{
	const struct pulse_join_comm *x = a, *y = b;
	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return 0;
}

uint32_t pulse_join_members(const struct pulse_join_comm *in, uint32_t n, struct pulse_join_comm *out,
			    uint32_t *conflicts)
{
	uint32_t m = 0, bad = 0;
	for (uint32_t i = 0; i < n; i++)
		if (in[i].rank >= 0)
			out[m++] = in[i];
	qsort(out, m, sizeof *out, cmp_member);
	uint32_t w = 0;
	for (uint32_t i = 0; i < m; i++) {
		if (w && out[w - 1].comm_id == out[i].comm_id && out[w - 1].rank == out[i].rank) {
			/* the same member again: a re-init of the same process, or a
			 * second process claiming the rank (kept: the latest init) */
			if (out[w - 1].pid != out[i].pid ||
			    !same_str(out[w - 1].host, out[i].host, PULSE_JOIN_HOST_LEN))
				bad++;
			if (out[w - 1].nranks < 0 || out[i].nranks >= 0)
				out[w - 1] = out[i];
			continue;
		}
		out[w++] = out[i];
	}
	if (conflicts)
		*conflicts = bad;
	return w;
}

const char *pulse_join_status_name(uint8_t s)
{
	switch (s) {
	case PULSE_JOIN_PAIRED: return "paired";
	case PULSE_JOIN_NO_PARTNER: return "no_partner";
	case PULSE_JOIN_AMBIGUOUS: return "ambiguous";
	case PULSE_JOIN_NOT_CONNECTED: return "not_connected";
	default: return "unknown";
	}
}

int pulse_join_parse_gid(const char *s, uint8_t gid[16])
{
	struct in6_addr a;
	if (!s || inet_pton(AF_INET6, s, &a) != 1)
		return -1;
	memcpy(gid, &a, 16);
	return 0;
}
