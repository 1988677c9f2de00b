/* pulse-tracegen: the traffic model and the pcap writer. See tracegen.h. */
#define _GNU_SOURCE
#include "tracegen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE 0xFFFFFFFFu
#define MAX_FRAME 9216u

void tg_cfg_default(struct tg_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->pattern = TG_RING;
	c->nodes = 4;
	c->channels = 2;
	c->bytes = 16u << 20;
	c->mtu = 4096;
	c->slice = 512u << 10;
	c->msg = 1u << 20;
	c->gbps = 400.0;
	c->straggler = -1;
	c->slowdown = 1.0;
	c->iters = 1;
	c->gap_ns = 100000;
	c->prop_ns = 1000;
	c->ack_every = 16;
	c->cts = 1;
	c->vlan = -1;
	c->snaplen = 65535;
	c->seed = 1;
	c->start_ns = 1700000000000000000ull;
	c->qps = 1000;
}

void tg_node_addr(const struct tg_cfg *c, uint32_t node, uint8_t a[16])
{
	memset(a, 0, 16);
	if (c->ipv6) {
		a[0] = 0xfd;
		a[14] = (uint8_t)((node + 1) >> 8);
		a[15] = (uint8_t)(node + 1);
	} else {
		a[10] = a[11] = 0xff;
		a[12] = 10;
		a[13] = 0;
		a[14] = (uint8_t)((node + 1) >> 8);
		a[15] = (uint8_t)(node + 1);
	}
}

/* ---- deterministic randomness ---- */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- model ---- */
struct node {
	uint8_t mac[6];
	uint8_t addr[16];
	uint64_t ps_per_byte_x1000; /* link time per wire byte, in 1/1000 ps */
	uint64_t link_free;         /* ps */
	uint32_t *qps, nqps, qcap;
	uint32_t rr;
};

struct qp {
	uint32_t node, qpn, peer, conn;
	uint32_t psn, msn;      /* next PSN to send; messages completed (as responder) */
	uint16_t sport;
	uint32_t *fifo, fhead, fcount, fcap; /* data messages to send, in order */
	uint32_t rx_since_ack;
	uint64_t va;
	uint32_t rkey;
};

struct conn {
	uint32_t sq, rq; /* sending QP (data), receiving QP (CTS, ACKs) */
	uint32_t *seq_msg, nseq, seqcap; /* this iteration's messages by sequence */
};

struct msg {
	uint32_t qp, conn, seq;
	uint64_t bytes, off;
	uint64_t ready; /* ps */
	uint32_t deps;
	uint32_t dependents[4];
	uint8_t ndependents;
};

/* Control packets (ACK, CTS) wait in a min-heap until the data stream reaches their time. */
enum { CTL_ACK = 1, CTL_CTS = 2 };
struct ctl {
	uint64_t t; /* ps */
	uint64_t order;
	uint32_t qp; /* the sending QP */
	uint32_t psn, msn;
	uint8_t kind;
};

struct gen {
	const struct tg_cfg *c;
	uint64_t rng;
	struct node *nodes;
	struct qp *qps;
	uint32_t nqps, qpcap;
	struct conn *conns;
	uint32_t nconns, conncap, rescap;
	struct msg *msgs;
	uint32_t nmsgs, msgcap;
	uint32_t msgs_done;
	struct ctl *heap;
	uint32_t nheap, heapcap;
	uint64_t ctl_order;
	FILE *f;
	uint64_t last_ps;
	struct tg_result *res;
	uint8_t frame[MAX_FRAME];
	char *err;
	size_t errlen;
	int failed;
};

static int grow(void **a, uint32_t *cap, uint32_t n, size_t el)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 16;
	void *p = realloc(*a, (size_t)nc * el);
	if (!p)
		return -1;
	*a = p;
	*cap = nc;
	return 0;
}

static void oom(struct gen *g)
{
	if (!g->failed)
		snprintf(g->err, g->errlen, "out of memory");
	g->failed = 1;
}

/* ---- frames ---- */
static inline void p16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void p24(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); p16(p + 1, v); }
static inline void p32(uint8_t *p, uint32_t v) { p16(p, v >> 16); p16(p + 2, v); }

struct fspec {
	uint32_t src, dst;   /* nodes */
	uint16_t sport;
	uint8_t opcode;
	uint32_t dqpn, psn;
	int ackreq;
	uint64_t va;
	uint32_t rkey, dmalen;
	uint32_t msn;
	uint32_t imm;
	uint32_t payload;
	uint8_t fill;
};

/* Builds a frame; returns its length. Bytes past `limit` are not written
 * (they will not be captured anyway). */
static uint32_t build(struct gen *g, const struct fspec *s, uint32_t limit)
{
	const struct tg_cfg *c = g->c;
	uint8_t *b = g->frame;
	uint32_t o = 0;
	memcpy(b, g->nodes[s->dst].mac, 6);
	memcpy(b + 6, g->nodes[s->src].mac, 6);
	o = 12;
	if (c->vlan >= 0) {
		p16(b + o, 0x8100);
		p16(b + o + 2, (3u << 13) | (uint32_t)c->vlan); /* PCP 3: the usual RoCE class */
		o += 4;
	}
	p16(b + o, c->ipv6 ? 0x86DD : 0x0800);
	o += 2;
	uint8_t op = s->opcode;
	uint32_t ext = 0;
	if (op == 0x06 || op == 0x0A || op == 0x0B)
		ext += 16; /* RETH */
	if (op == 0x11)
		ext += 4; /* AETH */
	if (op == 0x09 || op == 0x0B)
		ext += 4; /* ImmDt */
	uint32_t pad = (4 - (s->payload & 3)) & 3;
	uint32_t udp_len = 8 + 12 + ext + s->payload + pad + 4;
	uint32_t ip_hdr = c->ipv6 ? 40 : 20;
	uint32_t ip_len = ip_hdr + udp_len;
	uint32_t ip = o;
	if (c->ipv6) {
		p32(b + o, 0x60000000u | (106u << 20)); /* traffic class: DSCP 26 (AF31), ECT(0) */
		p16(b + o + 4, udp_len);
		b[o + 6] = 17;
		b[o + 7] = 64;
		memcpy(b + o + 8, g->nodes[s->src].addr, 16);
		memcpy(b + o + 24, g->nodes[s->dst].addr, 16);
	} else {
		b[o] = 0x45;
		b[o + 1] = 106; /* DSCP 26, ECT(0) */
		p16(b + o + 2, ip_len);
		p16(b + o + 4, 0);
		p16(b + o + 6, 0x4000); /* DF */
		b[o + 8] = 64;
		b[o + 9] = 17;
		p16(b + o + 10, 0);
		memcpy(b + o + 12, g->nodes[s->src].addr + 12, 4);
		memcpy(b + o + 16, g->nodes[s->dst].addr + 12, 4);
		uint32_t sum = 0;
		for (uint32_t i = 0; i < 20; i += 2)
			sum += (uint32_t)b[o + i] << 8 | b[o + i + 1];
		while (sum >> 16)
			sum = (sum & 0xFFFF) + (sum >> 16);
		p16(b + o + 10, ~sum & 0xFFFF);
	}
	o += ip_hdr;
	p16(b + o, s->sport);
	p16(b + o + 2, 4791);
	p16(b + o + 4, udp_len);
	p16(b + o + 6, 0);
	o += 8;
	b[o] = op;
	b[o + 1] = (uint8_t)(((op == 0x09 || op == 0x0B) ? 0x80 : 0) | pad << 4);
	p16(b + o + 2, 0xFFFF);
	b[o + 4] = 0;
	p24(b + o + 5, s->dqpn);
	b[o + 8] = s->ackreq ? 0x80 : 0;
	p24(b + o + 9, s->psn);
	o += 12;
	if (op == 0x06 || op == 0x0A || op == 0x0B) {
		p32(b + o, (uint32_t)(s->va >> 32));
		p32(b + o + 4, (uint32_t)s->va);
		p32(b + o + 8, s->rkey);
		p32(b + o + 12, s->dmalen);
		o += 16;
	}
	if (op == 0x11) {
		b[o] = 0x1F; /* ACK, credit count invalid */
		p24(b + o + 1, s->msn);
		o += 4;
	}
	if (op == 0x09 || op == 0x0B) {
		p32(b + o, s->imm);
		o += 4;
	}
	uint32_t total = ip + ip_len;
	uint32_t want = total < limit ? total : limit;
	if (want > o)
		memset(b + o, s->fill, want - o); /* payload, pad, ICRC (not computed) */
	return total;
}

static void write_rec(struct gen *g, uint64_t ps, uint32_t len)
{
	uint32_t cap = len < g->c->snaplen ? len : g->c->snaplen;
	uint64_t ns = g->c->start_ns + ps / 1000u;
	uint8_t h[16];
	uint32_t sec = (uint32_t)(ns / 1000000000u), frac = (uint32_t)(ns % 1000000000u);
	if (g->c->usec)
		frac /= 1000u;
	memcpy(h, &sec, 4);
	memcpy(h + 4, &frac, 4);
	memcpy(h + 8, &cap, 4);
	memcpy(h + 12, &len, 4);
	if (fwrite(h, 16, 1, g->f) != 1 || fwrite(g->frame, cap, 1, g->f) != 1) {
		if (!g->failed)
			snprintf(g->err, g->errlen, "write failed: %s", strerror(errno));
		g->failed = 1;
	}
	g->res->bytes_written += 16 + cap;
	g->res->packets++;
	if (!g->res->first_ns && g->res->packets == 1)
		g->res->first_ns = ns;
	g->res->last_ns = ns;
	g->last_ps = ps;
}

/* Link time of a frame: the frame plus FCS, preamble and inter-frame gap. */
static uint64_t tx_ps(const struct gen *g, uint32_t node, uint32_t frame_len)
{
	return ((uint64_t)(frame_len + 24) * g->nodes[node].ps_per_byte_x1000 + 500) / 1000;
}

/* ---- control packet heap ---- */
static void heap_push(struct gen *g, uint64_t t, uint8_t kind, uint32_t qp, uint32_t psn,
		      uint32_t msn)
{
	if (grow((void **)&g->heap, &g->heapcap, g->nheap, sizeof *g->heap)) {
		oom(g);
		return;
	}
	struct ctl e = {t, g->ctl_order++, qp, psn, msn, kind};
	uint32_t i = g->nheap++;
	while (i) {
		uint32_t p = (i - 1) / 2;
		struct ctl *q = &g->heap[p];
		if (q->t < e.t || (q->t == e.t && q->order < e.order))
			break;
		g->heap[i] = *q;
		i = p;
	}
	g->heap[i] = e;
}

static struct ctl heap_pop(struct gen *g)
{
	struct ctl top = g->heap[0], last = g->heap[--g->nheap];
	uint32_t i = 0, n = g->nheap;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		const struct ctl *best = &last;
		if (l < n && (g->heap[l].t < best->t || (g->heap[l].t == best->t && g->heap[l].order < best->order))) {
			m = l;
			best = &g->heap[l];
		}
		if (r < n && (g->heap[r].t < best->t || (g->heap[r].t == best->t && g->heap[r].order < best->order)))
			m = r;
		if (m == i)
			break;
		g->heap[i] = g->heap[m];
		i = m;
	}
	if (n)
		g->heap[i] = last;
	return top;
}

#define ACK_DELAY_PS 200000u /* the responder's ACK turnaround, 200 ns */

static void emit_ctl(struct gen *g, const struct ctl *e)
{
	struct qp *q = &g->qps[e->qp];
	struct qp *peer = &g->qps[q->peer];
	struct fspec s = {.src = q->node, .dst = peer->node, .sport = q->sport, .dqpn = peer->qpn};
	uint32_t len;
	if (e->kind == CTL_ACK) {
		s.opcode = 0x11;
		s.psn = e->psn;
		s.msn = e->msn;
		len = build(g, &s, g->c->snaplen);
	} else {
		/* clear-to-send: the receiver writes a 64-byte FIFO entry */
		s.opcode = 0x0A;
		s.psn = q->psn;
		q->psn = (q->psn + 1) & 0xFFFFFF;
		s.ackreq = 1;
		s.va = peer->va + 0x100000000ull;
		s.rkey = peer->rkey ^ 0x5A5A;
		s.dmalen = TG_CTS_PAYLOAD;
		s.payload = TG_CTS_PAYLOAD;
		s.fill = 0xC7;
		len = build(g, &s, g->c->snaplen);
		/* the sender's NIC ACKs it */
		uint64_t arrive = e->t + tx_ps(g, q->node, len) + g->c->prop_ns * 1000u;
		peer->msn++;
		heap_push(g, arrive + ACK_DELAY_PS, CTL_ACK, q->peer, s.psn, peer->msn);
	}
	write_rec(g, e->t, len);
	g->res->ctl_packets++;
}

static void flush_ctl(struct gen *g, uint64_t upto)
{
	while (g->nheap && g->heap[0].t <= upto && !g->failed) {
		struct ctl e = heap_pop(g);
		emit_ctl(g, &e);
	}
}

/* ---- topology ---- */
static uint32_t new_qp(struct gen *g, uint32_t node)
{
	if (grow((void **)&g->qps, &g->qpcap, g->nqps, sizeof *g->qps)) {
		oom(g);
		return NONE;
	}
	struct node *n = &g->nodes[node];
	if (grow((void **)&n->qps, &n->qcap, n->nqps, sizeof *n->qps)) {
		oom(g);
		return NONE;
	}
	uint32_t id = g->nqps++;
	struct qp *q = &g->qps[id];
	memset(q, 0, sizeof *q);
	q->node = node;
	/* a random QPN, unique on this node, never 0/1 or 0xFFFFFF */
	for (;;) {
		uint32_t v = 0x100u + (uint32_t)(rng_next(&g->rng) % (0xFFFFFEu - 0x100u));
		int dup = 0;
		for (uint32_t k = 0; k < n->nqps; k++)
			dup |= g->qps[n->qps[k]].qpn == v;
		if (!dup) {
			q->qpn = v;
			break;
		}
	}
	q->psn = (uint32_t)(rng_next(&g->rng) & 0xFFFFFF);
	q->sport = (uint16_t)(0xC000u | (q->qpn & 0x3FFFu));
	q->va = 0x7f0000000000ull + ((rng_next(&g->rng) & 0xFFFFFFull) << 12);
	q->rkey = (uint32_t)rng_next(&g->rng);
	q->peer = NONE;
	n->qps[n->nqps++] = id;
	return id;
}

static uint32_t new_conn(struct gen *g, uint32_t src, uint32_t dst, uint32_t tree, uint32_t ch)
{
	if (grow((void **)&g->conns, &g->conncap, g->nconns, sizeof *g->conns) ||
	    grow((void **)&g->res->conns, &g->rescap, g->nconns, sizeof *g->res->conns)) {
		oom(g);
		return NONE;
	}
	uint32_t a = new_qp(g, src), b = new_qp(g, dst);
	if (a == NONE || b == NONE)
		return NONE;
	uint32_t id = g->nconns++;
	g->res->nconns = g->nconns;
	struct conn *c = &g->conns[id];
	memset(c, 0, sizeof *c);
	c->sq = a;
	c->rq = b;
	g->qps[a].peer = b;
	g->qps[b].peer = a;
	g->qps[a].conn = g->qps[b].conn = id;
	struct tg_conn_info *ci = &g->res->conns[id];
	memset(ci, 0, sizeof *ci);
	ci->src = src;
	ci->dst = dst;
	ci->src_qpn = g->qps[a].qpn;
	ci->dst_qpn = g->qps[b].qpn;
	ci->tree = tree;
	ci->channel = ch;
	return id;
}

/* A data message on connection cn, ready at `ready` once its deps arrive. */
static uint32_t new_msg(struct gen *g, uint32_t cn, uint64_t bytes, uint64_t t0)
{
	if (grow((void **)&g->msgs, &g->msgcap, g->nmsgs, sizeof *g->msgs)) {
		oom(g);
		return NONE;
	}
	struct conn *c = &g->conns[cn];
	struct qp *q = &g->qps[c->sq];
	if (grow((void **)&c->seq_msg, &c->seqcap, c->nseq, sizeof *c->seq_msg) ||
	    grow((void **)&q->fifo, &q->fcap, q->fhead + q->fcount, sizeof *q->fifo)) {
		oom(g);
		return NONE;
	}
	uint32_t id = g->nmsgs++;
	struct msg *m = &g->msgs[id];
	memset(m, 0, sizeof *m);
	m->qp = c->sq;
	m->conn = cn;
	m->seq = c->nseq;
	m->bytes = bytes;
	m->ready = t0;
	c->seq_msg[c->nseq++] = id;
	q->fifo[q->fhead + q->fcount++] = id;
	if (g->c->cts && g->c->pattern != TG_WRITE) {
		m->deps++; /* its clear-to-send */
		if (m->seq < TG_CTS_WINDOW)
			heap_push(g, t0 + (uint64_t)m->seq * 10000u, CTL_CTS, c->rq, 0, 0);
	}
	return id;
}

/* `later` may start only after `first` has arrived. */
static void depend(struct gen *g, uint32_t first, uint32_t later)
{
	if (first == NONE || later == NONE)
		return;
	struct msg *a = &g->msgs[first];
	if (a->ndependents >= 4) {
		snprintf(g->err, g->errlen, "internal: too many dependents");
		g->failed = 1;
		return;
	}
	a->dependents[a->ndependents++] = later;
	g->msgs[later].deps++;
}

static uint64_t split(uint64_t total, uint64_t parts, uint64_t i)
{
	return total / parts + (i < total % parts ? 1 : 0);
}

/* Messages of one chunk: ceil(size/slice) slices; returns the first index. */
static uint32_t chunk_msgs(struct gen *g, uint32_t cn, uint64_t size, uint64_t t0, uint32_t *n)
{
	uint64_t sl = g->c->slice;
	uint32_t k = (uint32_t)((size + sl - 1) / sl), first = NONE;
	for (uint32_t j = 0; j < k; j++) {
		uint64_t b = j + 1 < k ? sl : size - sl * (k - 1);
		uint32_t id = new_msg(g, cn, b, t0);
		if (j == 0)
			first = id;
	}
	*n = k;
	return first;
}

/* The i-th message of a chunk, clamped to its last one. */
static uint32_t nth(uint32_t first, uint32_t n, uint32_t i)
{
	if (first == NONE || n == 0)
		return NONE;
	return first + (i < n ? i : n - 1);
}

struct ring_state {
	uint32_t conn[TG_MAX_CHANNELS][TG_MAX_NODES]; /* rank r -> r+1 */
};
struct tree_state {
	uint32_t up[2][TG_MAX_CHANNELS][TG_MAX_NODES];   /* node -> its parent */
	uint32_t down[2][TG_MAX_CHANNELS][TG_MAX_NODES]; /* parent -> node */
};

static uint32_t tree_parent(uint32_t n, uint32_t t, uint32_t v)
{
	if (t == 0)
		return v == 0 ? NONE : (v - 1) / 2;
	uint32_t l = n - 1 - v; /* the mirrored tree */
	return l == 0 ? NONE : n - 1 - (l - 1) / 2;
}

static void build_ring(struct gen *g, struct ring_state *rs, uint64_t t0)
{
	const struct tg_cfg *c = g->c;
	uint32_t N = c->nodes, S = 2 * (N - 1);
	for (uint32_t ch = 0; ch < c->channels; ch++) {
		uint64_t bc = split(c->bytes, c->channels, ch);
		/* per rank: first message and count of each step */
		uint32_t *first = malloc(sizeof(uint32_t) * N * S), *cnt = malloc(sizeof(uint32_t) * N * S);
		if (!first || !cnt) {
			free(first);
			free(cnt);
			oom(g);
			return;
		}
		for (uint32_t s = 0; s < S; s++)
			for (uint32_t r = 0; r < N; r++) {
				uint32_t chunk = s < N - 1 ? (r + N - s % N) % N : (r + 1 + N - (s - (N - 1))) % N;
				uint64_t size = split(bc, N, chunk);
				first[r * S + s] = chunk_msgs(g, rs->conn[ch][r], size, t0, &cnt[r * S + s]);
			}
		for (uint32_t s = 1; s < S; s++)
			for (uint32_t r = 0; r < N; r++) {
				uint32_t p = (r + N - 1) % N;
				for (uint32_t j = 0; j < cnt[r * S + s]; j++)
					depend(g, nth(first[p * S + s - 1], cnt[p * S + s - 1], j),
					       first[r * S + s] + j);
			}
		free(first);
		free(cnt);
	}
}

static void build_tree(struct gen *g, struct tree_state *ts, uint64_t t0)
{
	const struct tg_cfg *c = g->c;
	uint32_t N = c->nodes;
	for (uint32_t ch = 0; ch < c->channels; ch++) {
		uint64_t bc = split(c->bytes, c->channels, ch);
		for (uint32_t t = 0; t < 2; t++) {
			uint64_t bt = split(bc, 2, t);
			uint32_t upf[TG_MAX_NODES], upn[TG_MAX_NODES], dnf[TG_MAX_NODES], dnn[TG_MAX_NODES];
			for (uint32_t v = 0; v < N; v++) {
				upf[v] = dnf[v] = NONE;
				upn[v] = dnn[v] = 0;
				if (tree_parent(N, t, v) != NONE) {
					upf[v] = chunk_msgs(g, ts->up[t][ch][v], bt, t0, &upn[v]);
					dnf[v] = chunk_msgs(g, ts->down[t][ch][v], bt, t0, &dnn[v]);
				}
			}
			for (uint32_t v = 0; v < N; v++) {
				uint32_t p = tree_parent(N, t, v);
				if (p == NONE)
					continue;
				uint32_t pp = tree_parent(N, t, p);
				for (uint32_t j = 0; j < upn[v]; j++) {
					if (pp != NONE) /* p reduces and forwards chunk j up */
						depend(g, upf[v] + j, nth(upf[p], upn[p], j));
					else /* p is the root: it broadcasts chunk j down to all children */
						for (uint32_t u = 0; u < N; u++)
							if (tree_parent(N, t, u) == p)
								depend(g, upf[v] + j, nth(dnf[u], dnn[u], j));
				}
				/* a node forwards chunk j down once it has it from its parent */
				for (uint32_t u = 0; u < N; u++)
					if (tree_parent(N, t, u) == v)
						for (uint32_t j = 0; j < dnn[v]; j++)
							depend(g, dnf[v] + j, nth(dnf[u], dnn[u], j));
			}
		}
	}
}

/* ---- the scheduler ---- */
static void send_packet(struct gen *g, uint32_t qi, uint64_t now)
{
	const struct tg_cfg *c = g->c;
	struct qp *q = &g->qps[qi];
	struct qp *rq = &g->qps[q->peer];
	uint32_t mi = q->fifo[q->fhead];
	struct msg *m = &g->msgs[mi];
	uint64_t left = m->bytes - m->off;
	uint32_t pay = left < c->mtu ? (uint32_t)left : c->mtu;
	int first = m->off == 0, last = pay == left;
	uint8_t op = first && last ? 0x0B : first ? 0x06 : last ? 0x09 : 0x07;
	if (c->pattern == TG_WRITE)
		op = first && last ? 0x0A : first ? 0x06 : last ? 0x08 : 0x07;
	struct fspec s = {
		.src = q->node, .dst = rq->node, .sport = q->sport, .opcode = op, .dqpn = rq->qpn,
		.psn = q->psn, .ackreq = last, .va = rq->va + m->off, .rkey = rq->rkey,
		.dmalen = (uint32_t)(m->bytes > 0xFFFFFFFFull ? 0xFFFFFFFFu : m->bytes),
		.imm = m->seq, .payload = pay, .fill = (uint8_t)q->psn,
	};
	q->psn = (q->psn + 1) & 0xFFFFFF;
	flush_ctl(g, now);
	uint32_t len = build(g, &s, c->snaplen);
	write_rec(g, now, len);
	g->res->data_packets++;
	uint64_t done = now + tx_ps(g, q->node, len);
	g->nodes[q->node].link_free = done;
	m->off += pay;
	uint64_t arrive = done + c->prop_ns * 1000u;
	if (last)
		rq->msn++;
	if (++rq->rx_since_ack >= c->ack_every || last) {
		rq->rx_since_ack = 0;
		heap_push(g, arrive + ACK_DELAY_PS, CTL_ACK, q->peer, s.psn, rq->msn);
	}
	if (!last)
		return;
	/* the message is complete: it arrives, releasing what waited for it */
	struct tg_conn_info *ci = &g->res->conns[m->conn];
	ci->data_bytes += m->bytes;
	ci->data_msgs++;
	q->fhead++;
	q->fcount--;
	g->msgs_done++;
	for (uint32_t k = 0; k < m->ndependents; k++) {
		struct msg *d = &g->msgs[m->dependents[k]];
		if (arrive > d->ready)
			d->ready = arrive;
		d->deps--;
	}
	struct conn *cn = &g->conns[m->conn];
	if (c->cts && c->pattern != TG_WRITE && m->seq + TG_CTS_WINDOW < cn->nseq) {
		/* the receiver frees the slot: clear-to-send for message seq+W */
		uint64_t cts_t = arrive + ACK_DELAY_PS;
		struct msg *d = &g->msgs[cn->seq_msg[m->seq + TG_CTS_WINDOW]];
		heap_push(g, cts_t, CTL_CTS, cn->rq, 0, 0);
		uint64_t at = cts_t + tx_ps(g, rq->node, 160) + c->prop_ns * 1000u;
		if (at > d->ready)
			d->ready = at;
		d->deps--;
	}
}

/* Runs until every message of this iteration is sent. */
static int run(struct gen *g, uint64_t t0)
{
	uint32_t N = g->c->nodes;
	/* the first W clear-to-sends of each connection are already in the heap;
	 * they satisfy their messages when they arrive */
	if (g->c->cts && g->c->pattern != TG_WRITE)
		for (uint32_t k = 0; k < g->nconns; k++) {
			struct conn *cn = &g->conns[k];
			for (uint32_t s = 0; s < cn->nseq && s < TG_CTS_WINDOW; s++) {
				struct msg *m = &g->msgs[cn->seq_msg[s]];
				uint64_t at = t0 + (uint64_t)s * 10000u +
					      tx_ps(g, g->qps[cn->rq].node, 160) + g->c->prop_ns * 1000u;
				if (at > m->ready)
					m->ready = at;
				m->deps--;
			}
		}
	while (!g->failed && g->msgs_done < g->nmsgs) {
		uint64_t best_t = UINT64_MAX;
		uint32_t best_n = NONE;
		for (uint32_t n = 0; n < N; n++) {
			struct node *nd = &g->nodes[n];
			uint64_t rdy = UINT64_MAX;
			for (uint32_t k = 0; k < nd->nqps; k++) {
				struct qp *q = &g->qps[nd->qps[k]];
				if (!q->fcount)
					continue;
				struct msg *m = &g->msgs[q->fifo[q->fhead]];
				if (!m->deps && m->ready < rdy)
					rdy = m->ready;
			}
			if (rdy == UINT64_MAX)
				continue;
			uint64_t t = rdy > nd->link_free ? rdy : nd->link_free;
			if (t < best_t) {
				best_t = t;
				best_n = n;
			}
		}
		if (best_n == NONE) {
			snprintf(g->err, g->errlen, "internal: %u messages can never be sent (deadlock)",
				 g->nmsgs - g->msgs_done);
			return -1;
		}
		/* round robin over this node's QPs with a ready message */
		struct node *nd = &g->nodes[best_n];
		for (uint32_t k = 0; k < nd->nqps; k++) {
			uint32_t idx = (nd->rr + k) % nd->nqps;
			struct qp *q = &g->qps[nd->qps[idx]];
			if (!q->fcount)
				continue;
			struct msg *m = &g->msgs[q->fifo[q->fhead]];
			if (m->deps || m->ready > best_t)
				continue;
			nd->rr = idx + 1;
			send_packet(g, nd->qps[idx], best_t);
			break;
		}
	}
	return g->failed ? -1 : 0;
}

/* TG_QPS: one small WRITE_ONLY to each of c->qps QPNs, back to back, no responses. */
static void gen_qps(struct gen *g)
{
	const struct tg_cfg *c = g->c;
	uint64_t t = 0;
	for (uint64_t i = 0; i < c->qps && !g->failed; i++) {
		uint32_t dqpn = (uint32_t)(1 + i % 0xFFFFFDu);
		struct fspec s = {
			.src = 0, .dst = 1, .sport = (uint16_t)(0xC000u | (i & 0x3FFF)), .opcode = 0x0A,
			.dqpn = dqpn, .psn = (uint32_t)(i * 7919u) & 0xFFFFFF, .ackreq = 1,
			.va = 0x7f0000000000ull, .rkey = 0x1234, .dmalen = 64, .payload = 64,
		};
		uint32_t len = build(g, &s, c->snaplen);
		write_rec(g, t, len);
		g->res->data_packets++;
		t += tx_ps(g, 0, len);
	}
}

int tg_generate(const struct tg_cfg *c, const char *path, struct tg_result *res, char *err,
		size_t errlen)
{
	memset(res, 0, sizeof *res);
	if (c->nodes < 2 || c->nodes > TG_MAX_NODES || c->channels < 1 ||
	    c->channels > TG_MAX_CHANNELS || c->mtu < 256 || c->mtu > 4096 || c->slice < c->mtu ||
	    c->slice > (1u << 20) || !(c->gbps > 0) || c->iters < 1 || c->ack_every < 1 ||
	    c->snaplen < 64 || c->snaplen > 262144 || c->msg < 1) {
		snprintf(err, errlen, "configuration out of range (nodes 2..%u, channels 1..%u, mtu "
			 "256..4096, mtu <= slice <= 1 MiB, rate > 0, snaplen 64..262144)",
			 TG_MAX_NODES, TG_MAX_CHANNELS);
		return -1;
	}
	if ((c->pattern == TG_RING || c->pattern == TG_TREE) && c->bytes < (uint64_t)c->nodes * c->channels) {
		snprintf(err, errlen, "--bytes must be at least nodes x channels");
		return -1;
	}
	static struct gen gs;
	struct gen *g = &gs;
	memset(g, 0, sizeof *g);
	g->c = c;
	g->res = res;
	g->err = err;
	g->errlen = errlen;
	g->rng = c->seed ^ 0x5055u;
	g->nodes = calloc(c->nodes, sizeof *g->nodes);
	if (!g->nodes) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t n = 0; n < c->nodes; n++) {
		struct node *nd = &g->nodes[n];
		uint8_t mac[6] = {0x02, 0x50, 0x4C, 0, (uint8_t)(n >> 8), (uint8_t)n};
		memcpy(nd->mac, mac, 6);
		tg_node_addr(c, n, nd->addr);
		double rate = c->gbps;
		if ((int32_t)n == c->straggler && c->slowdown > 0)
			rate /= c->slowdown;
		nd->ps_per_byte_x1000 = (uint64_t)(8.0 * 1e6 / rate + 0.5); /* 8 bits / Gb/s = ns; x1e3 ps x1e3 */
	}
	g->f = fopen(path, "wb");
	if (!g->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(g->nodes);
		return -1;
	}
	setvbuf(g->f, NULL, _IOFBF, 1u << 20);
	uint8_t hdr[24];
	uint32_t magic = c->usec ? 0xA1B2C3D4u : 0xA1B23C4Du, snap = c->snaplen, lt = 1, zero = 0;
	uint16_t vmaj = 2, vmin = 4;
	memcpy(hdr, &magic, 4);
	memcpy(hdr + 4, &vmaj, 2);
	memcpy(hdr + 6, &vmin, 2);
	memcpy(hdr + 8, &zero, 4);
	memcpy(hdr + 12, &zero, 4);
	memcpy(hdr + 16, &snap, 4);
	memcpy(hdr + 20, &lt, 4);
	fwrite(hdr, 24, 1, g->f);
	res->bytes_written = 24;

	static struct ring_state rs;
	static struct tree_state ts;
	uint32_t N = c->nodes;
	switch (c->pattern) {
	case TG_RING:
		for (uint32_t ch = 0; ch < c->channels; ch++)
			for (uint32_t r = 0; r < N; r++)
				rs.conn[ch][r] = new_conn(g, r, (r + 1) % N, 0, ch);
		break;
	case TG_TREE:
		for (uint32_t ch = 0; ch < c->channels; ch++)
			for (uint32_t t = 0; t < 2; t++)
				for (uint32_t v = 0; v < N; v++) {
					uint32_t p = tree_parent(N, t, v);
					if (p == NONE)
						continue;
					ts.up[t][ch][v] = new_conn(g, v, p, t, ch);
					ts.down[t][ch][v] = new_conn(g, p, v, t, ch);
				}
		break;
	case TG_SENDRECV:
	case TG_WRITE:
		for (uint32_t ch = 0; ch < c->channels; ch++)
			new_conn(g, 0, 1, 0, ch);
		break;
	case TG_QPS:
		break;
	}
	uint64_t t0 = 0;
	int rc = g->failed ? -1 : 0;
	if (c->pattern == TG_QPS) {
		gen_qps(g);
		rc = g->failed ? -1 : 0;
	}
	for (uint32_t it = 0; c->pattern != TG_QPS && it < c->iters && rc == 0; it++) {
		g->nmsgs = g->msgs_done = 0;
		for (uint32_t k = 0; k < g->nconns; k++)
			g->conns[k].nseq = 0;
		for (uint32_t k = 0; k < g->nqps; k++)
			g->qps[k].fhead = g->qps[k].fcount = 0;
		switch (c->pattern) {
		case TG_RING:
			build_ring(g, &rs, t0);
			break;
		case TG_TREE:
			build_tree(g, &ts, t0);
			break;
		case TG_SENDRECV:
			for (uint32_t ch = 0; ch < c->channels; ch++) {
				uint32_t n;
				chunk_msgs(g, ch, split(c->bytes, c->channels, ch), t0, &n);
			}
			break;
		case TG_WRITE: {
			uint64_t total = c->bytes;
			if (c->duration_ns) {
				/* as many full packets as the link carries in that time */
				uint32_t full = build(g, &(struct fspec){.opcode = 0x07, .payload = c->mtu}, 0);
				uint64_t pkts = c->duration_ns * 1000u / tx_ps(g, 0, full);
				total = pkts * c->mtu;
			}
			for (uint32_t ch = 0; ch < c->channels; ch++) {
				uint64_t b = split(total, c->channels, ch), m = c->msg;
				for (uint64_t off = 0; off < b && !g->failed; off += m)
					new_msg(g, ch, b - off < m ? b - off : m, t0);
			}
			break;
		}
		default:
			break;
		}
		rc = g->failed ? -1 : run(g, t0);
		flush_ctl(g, UINT64_MAX);
		uint64_t end = g->last_ps;
		for (uint32_t n = 0; n < N; n++)
			if (g->nodes[n].link_free > end)
				end = g->nodes[n].link_free;
		t0 = end + c->gap_ns * 1000u;
		for (uint32_t n = 0; n < N; n++)
			g->nodes[n].link_free = t0;
	}
	if (fclose(g->f) != 0 && rc == 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (g->failed)
		rc = -1;
	for (uint32_t n = 0; n < N; n++)
		free(g->nodes[n].qps);
	for (uint32_t k = 0; k < g->nqps; k++)
		free(g->qps[k].fifo);
	for (uint32_t k = 0; k < g->nconns; k++)
		free(g->conns[k].seq_msg);
	free(g->nodes);
	free(g->qps);
	free(g->conns);
	free(g->msgs);
	free(g->heap);
	if (rc)
		tg_result_free(res);
	return rc;
}

void tg_result_free(struct tg_result *r)
{
	free(r->conns);
	r->conns = NULL;
	r->nconns = 0;
}
