/* Pass 1 over a capture: hosts, flows, connection pairing and local-QPN
 * recovery, sending QPs per NIC. See sim/README.md, "Source QPN recovery". */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_cfg_default(struct sim_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->epoch_ns = PULSE_EPOCH_NS_DEFAULT;
	c->poll_ns = 1000000000ull;
	c->event_bytes = 4096;
	c->burst_gap_ns = 10000;
	c->bytes_mode = SIM_BYTES_WIRE;
	c->fw_flows = 4096;
	c->fw_pool_blocks = 65536;
	c->fw_threads = 16;
	c->nic_clock_start = 0;
	c->max_flows = 4u << 20;
	c->max_nics = 64;
	c->psn_cache_bits = 18;
	c->log_budget = 1ull << 30;
}

const char *sim_qpn_method_name(enum sim_qpn_method m)
{
	switch (m) {
	case SIM_QPN_ACK: return "ack";
	case SIM_QPN_DETH: return "deth";
	case SIM_QPN_SOLE_PAIR: return "sole-pair";
	case SIM_QPN_SYNTHETIC: return "synthetic";
	default: return "none";
	}
}

/* ---- hashing ---- */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}
static inline uint64_t hash_addr(const uint8_t a[16])
{
	return mix64(load64(a) ^ mix64(load64(a + 8) + 0x9e3779b97f4a7c15ull));
}
static inline uint64_t hash_flow(uint32_t src, uint32_t dst, uint32_t dqpn, uint32_t sqpn)
{
	return mix64(((uint64_t)src << 32 | dst) ^ mix64((uint64_t)dqpn << 32 | sqpn));
}
static inline uint64_t hash_qp(uint32_t nic, uint32_t qpn)
{
	return mix64((uint64_t)nic << 32 | qpn);
}

static int index_init(struct sim_index *ix, uint32_t cap)
{
	ix->slot = malloc(sizeof(uint32_t) * cap);
	if (!ix->slot)
		return -1;
	memset(ix->slot, 0xFF, sizeof(uint32_t) * cap);
	ix->mask = cap - 1;
	ix->count = 0;
	return 0;
}

/* Grows when half full; rehash needs each id's hash, which the caller gives. */
typedef uint64_t (*rehash_fn)(const struct sim_trace *t, uint32_t id);
static int index_grow(struct sim_index *ix, const struct sim_trace *t, rehash_fn h)
{
	if ((uint64_t)(ix->count + 1) * 2 <= (uint64_t)ix->mask + 1)
		return 0;
	uint32_t ncap = (ix->mask + 1) * 2;
	uint32_t *ns = malloc(sizeof(uint32_t) * ncap);
	if (!ns)
		return -1;
	memset(ns, 0xFF, sizeof(uint32_t) * ncap);
	for (uint32_t i = 0; i <= ix->mask; i++) {
		uint32_t id = ix->slot[i];
		if (id == SIM_NONE)
			continue;
		uint32_t j = (uint32_t)h(t, id) & (ncap - 1);
		while (ns[j] != SIM_NONE)
			j = (j + 1) & (ncap - 1);
		ns[j] = id;
	}
	free(ix->slot);
	ix->slot = ns;
	ix->mask = ncap - 1;
	return 0;
}

static uint64_t rehash_host(const struct sim_trace *t, uint32_t id)
{
	return hash_addr(t->hosts[id].addr);
}
static uint64_t rehash_flow(const struct sim_trace *t, uint32_t id)
{
	const struct sim_flow *f = &t->flows[id];
	return hash_flow(f->src, f->dst, f->dqpn, f->sqpn);
}
static uint64_t rehash_qp(const struct sim_trace *t, uint32_t id)
{
	return hash_qp(t->qps[id].nic, t->qps[id].qpn);
}

/* Grows an array of n elements to hold one more. */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 64;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

void sim_trace_init(struct sim_trace *t, const struct sim_cfg *cfg)
{
	memset(t, 0, sizeof *t);
	t->cfg = *cfg;
	index_init(&t->host_ix, 64);
	index_init(&t->flow_ix, 1024);
	index_init(&t->qp_ix, 1024);
	uint32_t n = 1u << cfg->psn_cache_bits;
	t->psn_key = malloc(sizeof(uint32_t) * 3u * n);
	t->psn_flow = malloc(sizeof(uint32_t) * n);
	if (t->psn_flow)
		memset(t->psn_flow, 0xFF, sizeof(uint32_t) * n);
	t->psn_mask = n - 1;
	t->last_flow = SIM_NONE;
	t->pair_src = SIM_NONE;
}

void sim_trace_free(struct sim_trace *t)
{
	free(t->hosts);
	free(t->flows);
	free(t->qps);
	free(t->nics);
	free(t->host_ix.slot);
	free(t->flow_ix.slot);
	free(t->qp_ix.slot);
	free(t->psn_key);
	free(t->psn_flow);
	free(t->log);
	memset(t, 0, sizeof *t);
}

uint32_t sim_trace_find_host(const struct sim_trace *t, const uint8_t addr[16])
{
	const struct sim_index *ix = &t->host_ix;
	uint32_t j = (uint32_t)hash_addr(addr) & ix->mask;
	for (;;) {
		uint32_t id = ix->slot[j];
		if (id == SIM_NONE || memcmp(t->hosts[id].addr, addr, 16) == 0)
			return id;
		j = (j + 1) & ix->mask;
	}
}

static uint32_t host_add(struct sim_trace *t, const uint8_t addr[16])
{
	uint32_t id = sim_trace_find_host(t, addr);
	if (id != SIM_NONE)
		return id;
	if (index_grow(&t->host_ix, t, rehash_host) ||
	    grow((void **)&t->hosts, &t->hosts_cap, t->nhosts, sizeof *t->hosts))
		return SIM_NONE;
	id = t->nhosts++;
	memcpy(t->hosts[id].addr, addr, 16);
	t->hosts[id].nic = SIM_NONE;
	uint32_t j = (uint32_t)hash_addr(addr) & t->host_ix.mask;
	while (t->host_ix.slot[j] != SIM_NONE)
		j = (j + 1) & t->host_ix.mask;
	t->host_ix.slot[j] = id;
	t->host_ix.count++;
	return id;
}

static uint32_t flow_find(const struct sim_trace *t, uint32_t src, uint32_t dst, uint32_t dqpn,
			  uint32_t sqpn, uint32_t *slot)
{
	const struct sim_index *ix = &t->flow_ix;
	uint32_t j = (uint32_t)hash_flow(src, dst, dqpn, sqpn) & ix->mask;
	for (;;) {
		uint32_t id = ix->slot[j];
		if (id == SIM_NONE) {
			*slot = j;
			return SIM_NONE;
		}
		const struct sim_flow *f = &t->flows[id];
		if (f->dqpn == dqpn && f->src == src && f->dst == dst && f->sqpn == sqpn)
			return id;
		j = (j + 1) & ix->mask;
	}
}

static uint32_t flow_key_sqpn(const struct pulse_roce_pkt *k)
{
	return k->transport == PULSE_ROCE_UD ? k->deth_sqpn : SIM_NONE;
}

uint32_t sim_trace_find_flow(struct sim_trace *t, const struct pulse_roce_pkt *k)
{
	uint32_t sq = flow_key_sqpn(k);
	if (t->last_flow != SIM_NONE && t->last_dqpn == k->dqpn && t->last_sqpn == sq &&
	    memcmp(t->last_src, k->src, 16) == 0 && memcmp(t->last_dst, k->dst, 16) == 0)
		return t->last_flow;
	/* Most packets share their host pair with the previous one even when
	 * they belong to another QP (round robin over QPs): cache the pair. */
	uint32_t s, d, slot;
	if (t->pair_src != SIM_NONE && memcmp(t->pair_saddr, k->src, 16) == 0 &&
	    memcmp(t->pair_daddr, k->dst, 16) == 0) {
		s = t->pair_src;
		d = t->pair_dst;
	} else {
		s = sim_trace_find_host(t, k->src);
		d = sim_trace_find_host(t, k->dst);
		if (s == SIM_NONE || d == SIM_NONE)
			return SIM_NONE;
		t->pair_src = s;
		t->pair_dst = d;
		memcpy(t->pair_saddr, k->src, 16);
		memcpy(t->pair_daddr, k->dst, 16);
	}
	uint32_t id = flow_find(t, s, d, k->dqpn, sq, &slot);
	if (id != SIM_NONE) {
		t->last_flow = id;
		t->last_dqpn = k->dqpn;
		t->last_sqpn = sq;
		memcpy(t->last_src, k->src, 16);
		memcpy(t->last_dst, k->dst, 16);
	}
	return id;
}

static uint32_t flow_add(struct sim_trace *t, const struct pulse_roce_pkt *k)
{
	uint32_t id = sim_trace_find_flow(t, k);
	if (id != SIM_NONE)
		return id;
	if (t->nflows >= t->cfg.max_flows)
		return SIM_NONE;
	uint32_t s = host_add(t, k->src), d = host_add(t, k->dst), slot;
	if (s == SIM_NONE || d == SIM_NONE)
		return SIM_NONE;
	uint32_t sq = flow_key_sqpn(k);
	if (index_grow(&t->flow_ix, t, rehash_flow) ||
	    grow((void **)&t->flows, &t->flows_cap, t->nflows, sizeof *t->flows))
		return SIM_NONE;
	(void)flow_find(t, s, d, k->dqpn, sq, &slot);
	id = t->nflows++;
	struct sim_flow *f = &t->flows[id];
	memset(f, 0, sizeof *f);
	f->src = s;
	f->dst = d;
	f->dqpn = k->dqpn;
	f->sqpn = sq;
	f->peer = SIM_NONE;
	f->local_qpn = SIM_NONE;
	f->qp = SIM_NONE;
	f->vote_cand = SIM_NONE;
	t->flow_ix.slot[slot] = id;
	t->flow_ix.count++;
	return id;
}

/* ---- PSN cache: which flow sent request PSN p from src to dst ---- */
static inline uint32_t psn_slot(const struct sim_trace *t, uint32_t src, uint32_t dst, uint32_t psn)
{
	return (uint32_t)mix64((uint64_t)src << 40 ^ (uint64_t)dst << 24 ^ psn) & t->psn_mask;
}
static void psn_put(struct sim_trace *t, uint32_t src, uint32_t dst, uint32_t psn, uint32_t flow)
{
	uint32_t j = psn_slot(t, src, dst, psn);
	t->psn_key[3 * j] = src;
	t->psn_key[3 * j + 1] = dst;
	t->psn_key[3 * j + 2] = psn;
	t->psn_flow[j] = flow;
}
static uint32_t psn_get(const struct sim_trace *t, uint32_t src, uint32_t dst, uint32_t psn)
{
	uint32_t j = psn_slot(t, src, dst, psn);
	if (t->psn_flow[j] != SIM_NONE && t->psn_key[3 * j] == src && t->psn_key[3 * j + 1] == dst &&
	    t->psn_key[3 * j + 2] == psn)
		return t->psn_flow[j];
	return SIM_NONE;
}

/* Remembers a counted packet for pass 2, while the log fits its budget. */
static void log_packet(struct sim_trace *t, uint64_t ts, uint32_t flow, uint32_t bytes)
{
	if (t->log_overflow || !t->cfg.log_budget)
		return;
	if (t->nlog == t->logcap) {
		uint64_t cap = t->logcap ? t->logcap * 2 : 65536;
		if (cap * sizeof *t->log > t->cfg.log_budget)
			cap = t->cfg.log_budget / sizeof *t->log;
		struct sim_pkt_rec *p = cap > t->logcap ? realloc(t->log, cap * sizeof *p) : NULL;
		if (!p) {
			/* over budget (or out of memory): pass 2 reads the file again */
			free(t->log);
			t->log = NULL;
			t->nlog = t->logcap = 0;
			t->log_overflow = 1;
			return;
		}
		t->log = p;
		t->logcap = cap;
	}
	t->log[t->nlog++] = (struct sim_pkt_rec){ts, flow, bytes};
}

void sim_trace_add(struct sim_trace *t, enum pulse_roce_status st, const struct pulse_roce_pkt *k,
		   uint64_t ts)
{
	t->cnt.status[st]++;
	switch (pulse_roce_status_group(st)) {
	case PULSE_ROCE_GROUP_ROCE: t->cnt.roce++; break;
	case PULSE_ROCE_GROUP_NOT_ROCE: t->cnt.not_roce++; return;
	case PULSE_ROCE_GROUP_SKIPPED: t->cnt.skipped++; return;
	default: t->cnt.malformed++; return;
	}
	uint32_t fi = flow_add(t, k);
	if (fi == SIM_NONE) {
		t->cnt.flows_untracked++;
		return;
	}
	struct sim_flow *f = &t->flows[fi];
	f->transports |= (uint8_t)(1u << k->transport);
	f->op_mask[k->opcode >> 5] |= 1u << (k->opcode & 31);
	f->pkts++;
	f->wire_bytes += k->wire_len;
	f->payload_bytes += k->payload_len;
	if (sim_is_ctl(k)) {
		f->ctl_pkts++;
		t->cnt.ctl_pkts++;
	} else {
		uint32_t b = sim_counted_bytes(&t->cfg, k);
		if (b == 0) {
			t->cnt.zero_pkts++;
		} else {
			if (!f->tx_pkts)
				f->first_ns = ts;
			f->tx_pkts++;
			f->tx_bytes += b;
			f->last_ns = ts;
			log_packet(t, ts, fi, b);
		}
	}
	/* Pairing evidence (RC and XRC only: the transports with responses). */
	if (k->transport != PULSE_ROCE_RC && k->transport != PULSE_ROCE_XRC)
		return;
	switch (k->kind) {
	case PULSE_ROCE_K_SEND:
	case PULSE_ROCE_K_WRITE:
	case PULSE_ROCE_K_READ_REQ:
	case PULSE_ROCE_K_ATOMIC:
	case PULSE_ROCE_K_FLUSH:
		if (!f->settled)
			psn_put(t, f->src, f->dst, k->psn, fi);
		break;
	case PULSE_ROCE_K_ACK:
	case PULSE_ROCE_K_ATOMIC_ACK:
	case PULSE_ROCE_K_READ_RESP: {
		/* A response from B to A carries A's QPN as its dest QPN and
		 * the PSN of a request A sent to B. */
		if (f->vote_cnt >= SIM_VOTES_SETTLED)
			break; /* decided: spare the cache misses */
		uint32_t g = psn_get(t, f->dst, f->src, k->psn);
		if (g == SIM_NONE || g == fi)
			break;
		f->votes++;
		if (f->vote_cnt == 0) {
			f->vote_cand = g;
			f->vote_cnt = 1;
		} else if (f->vote_cand == g) {
			if (++f->vote_cnt >= SIM_VOTES_SETTLED)
				t->flows[g].settled = 1; /* its requests need no more tracking */
		} else {
			f->vote_cnt--;
		}
		break;
	}
	default:
		break;
	}
}

static void pair(struct sim_trace *t, uint32_t a, uint32_t b, enum sim_qpn_method m)
{
	struct sim_flow *fa = &t->flows[a], *fb = &t->flows[b];
	fa->peer = b;
	fb->peer = a;
	fa->local_qpn = fb->dqpn; /* a is sent by the QP that b is addressed to */
	fb->local_qpn = fa->dqpn;
	fa->method = fb->method = (uint8_t)m;
}

/* Sort key for the sole-pair step: unordered host pair, then direction. */
struct pairkey {
	uint32_t lo, hi, fwd, flow, tclass;
};
static int cmp_pairkey(const void *x, const void *y)
{
	const struct pairkey *a = x, *b = y;
	if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
	if (a->tclass != b->tclass) return a->tclass < b->tclass ? -1 : 1;
	if (a->fwd != b->fwd) return a->fwd < b->fwd ? -1 : 1;
	return a->flow < b->flow ? -1 : a->flow > b->flow;
}

uint32_t sim_trace_find_qp(const struct sim_trace *t, uint32_t nic, uint32_t qpn)
{
	const struct sim_index *ix = &t->qp_ix;
	uint32_t j = (uint32_t)hash_qp(nic, qpn) & ix->mask;
	for (;;) {
		uint32_t id = ix->slot[j];
		if (id == SIM_NONE || (t->qps[id].nic == nic && t->qps[id].qpn == qpn))
			return id;
		j = (j + 1) & ix->mask;
	}
}

static uint32_t nic_of_host(struct sim_trace *t, uint32_t host)
{
	if (t->hosts[host].nic == SIM_NONE) {
		struct sim_nic *n = realloc(t->nics, sizeof *n * (t->nnics + 1));
		if (!n)
			return SIM_NONE;
		t->nics = n;
		memset(&n[t->nnics], 0, sizeof *n);
		n[t->nnics].host = host;
		t->hosts[host].nic = t->nnics++;
	}
	return t->hosts[host].nic;
}

static uint32_t qp_add(struct sim_trace *t, uint32_t nic, uint32_t qpn, int synthetic)
{
	uint32_t id = sim_trace_find_qp(t, nic, qpn);
	if (id != SIM_NONE)
		return id;
	if (index_grow(&t->qp_ix, t, rehash_qp) ||
	    grow((void **)&t->qps, &t->qps_cap, t->nqps, sizeof *t->qps))
		return SIM_NONE;
	id = t->nqps++;
	struct sim_qp *q = &t->qps[id];
	memset(q, 0, sizeof *q);
	q->nic = nic;
	q->qpn = qpn;
	q->synthetic = (uint8_t)synthetic;
	q->first_flow = SIM_NONE;
	uint32_t j = (uint32_t)hash_qp(nic, qpn) & t->qp_ix.mask;
	while (t->qp_ix.slot[j] != SIM_NONE)
		j = (j + 1) & t->qp_ix.mask;
	t->qp_ix.slot[j] = id;
	t->qp_ix.count++;
	t->nics[nic].nqps++;
	return id;
}

static void attach(struct sim_trace *t, uint32_t fi, uint32_t q)
{
	struct sim_flow *f = &t->flows[fi];
	struct sim_qp *p = &t->qps[q];
	f->qp = q;
	if (p->first_flow == SIM_NONE)
		p->first_flow = fi;
	p->nflows++;
	if (!p->tx_pkts || f->first_ns < p->first_ns)
		p->first_ns = f->first_ns;
	if (f->last_ns > p->last_ns)
		p->last_ns = f->last_ns;
	p->tx_pkts += f->tx_pkts;
	p->tx_bytes += f->tx_bytes;
	t->nics[p->nic].tx_pkts += f->tx_pkts;
	t->nics[p->nic].tx_bytes += f->tx_bytes;
}

static int cmp_nic_bytes(const void *x, const void *y, void *ctx)
{
	const struct sim_nic *n = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (n[a].tx_bytes != n[b].tx_bytes)
		return n[a].tx_bytes > n[b].tx_bytes ? -1 : 1;
	return a < b ? -1 : a > b;
}

void sim_trace_resolve(struct sim_trace *t)
{
	/* 1. ACK evidence: a flow's majority candidate is its reverse flow. */
	for (uint32_t i = 0; i < t->nflows; i++) {
		struct sim_flow *f = &t->flows[i];
		if (!f->votes || !f->vote_cnt)
			continue;
		uint32_t g = f->vote_cand;
		struct sim_flow *r = &t->flows[g];
		if (f->peer == g)
			continue; /* already paired from the other side */
		if (f->peer == SIM_NONE && r->peer == SIM_NONE && r->src == f->dst && r->dst == f->src)
			pair(t, i, g, SIM_QPN_ACK);
		else
			t->pair_conflicts++;
	}
	/* 2. UD: the source QPN is in the DETH. */
	for (uint32_t i = 0; i < t->nflows; i++) {
		struct sim_flow *f = &t->flows[i];
		if (f->peer == SIM_NONE && f->sqpn != SIM_NONE) {
			f->local_qpn = f->sqpn;
			f->method = SIM_QPN_DETH;
		}
	}
	/* 3. The only unpaired flow each way between two hosts, same transport. */
	uint32_t n = 0;
	struct pairkey *pk = malloc(sizeof *pk * (t->nflows ? t->nflows : 1));
	if (pk) {
		for (uint32_t i = 0; i < t->nflows; i++) {
			struct sim_flow *f = &t->flows[i];
			if (f->method != SIM_QPN_NONE)
				continue;
			uint32_t lo = f->src < f->dst ? f->src : f->dst;
			uint32_t hi = f->src < f->dst ? f->dst : f->src;
			pk[n++] = (struct pairkey){lo, hi, f->src == lo, i, f->transports};
		}
		qsort(pk, n, sizeof *pk, cmp_pairkey);
		for (uint32_t a = 0; a < n;) {
			uint32_t b = a;
			while (b < n && pk[b].lo == pk[a].lo && pk[b].hi == pk[a].hi &&
			       pk[b].tclass == pk[a].tclass)
				b++;
			/* [a, b): one host pair and transport set, sorted by direction */
			if (b - a == 2 && pk[a].fwd != pk[a + 1].fwd && pk[a].lo != pk[a].hi)
				pair(t, pk[a].flow, pk[a + 1].flow, SIM_QPN_SOLE_PAIR);
			a = b;
		}
		free(pk);
	}
	/* 4. Sending QPs for every flow with counted bytes and a known local QPN. */
	for (uint32_t i = 0; i < t->nflows; i++) {
		struct sim_flow *f = &t->flows[i];
		if (!f->tx_pkts || f->local_qpn == SIM_NONE)
			continue;
		uint32_t nic = nic_of_host(t, f->src);
		uint32_t q = nic == SIM_NONE ? SIM_NONE : qp_add(t, nic, f->local_qpn, 0);
		if (q != SIM_NONE)
			attach(t, i, q);
	}
	/* 5. The rest get a synthetic local id: counting down from 0xFFFFFE,
	 * skipping the real QPNs of the same NIC. */
	uint32_t *next = NULL, nn = 0;
	for (uint32_t i = 0; i < t->nflows; i++) {
		struct sim_flow *f = &t->flows[i];
		if (!f->tx_pkts || f->local_qpn != SIM_NONE)
			continue;
		uint32_t nic = nic_of_host(t, f->src);
		if (nic == SIM_NONE)
			continue;
		if (nic >= nn) {
			uint32_t *p = realloc(next, sizeof *p * (nic + 1));
			if (!p)
				continue;
			for (uint32_t k = nn; k <= nic; k++)
				p[k] = PULSE_QPN_RESERVED_HIGH - 1u;
			next = p;
			nn = nic + 1;
		}
		while (next[nic] > 0 && sim_trace_find_qp(t, nic, next[nic]) != SIM_NONE)
			next[nic]--;
		if (next[nic] == 0)
			continue; /* 16 M QPNs in use on one NIC: cannot happen below max_flows */
		f->local_qpn = next[nic]--;
		f->method = SIM_QPN_SYNTHETIC;
		uint32_t q = qp_add(t, nic, f->local_qpn, 1);
		if (q != SIM_NONE)
			attach(t, i, q);
	}
	free(next);
	for (uint32_t i = 0; i < t->nflows; i++)
		t->method_count[t->flows[i].method]++;
	/* 6. Which NICs are emulated: the --nic filter, then the busiest max_nics. */
	uint32_t *order = malloc(sizeof *order * (t->nnics ? t->nnics : 1));
	if (order) {
		for (uint32_t i = 0; i < t->nnics; i++)
			order[i] = i;
		qsort_r(order, t->nnics, sizeof *order, cmp_nic_bytes, t->nics);
		uint32_t taken = 0;
		for (uint32_t k = 0; k < t->nnics; k++) {
			struct sim_nic *nc = &t->nics[order[k]];
			int ok = !t->cfg.nic_filter ||
				 memcmp(t->hosts[nc->host].addr, t->cfg.nic_addr, 16) == 0;
			if (ok && taken < t->cfg.max_nics) {
				nc->emulated = 1;
				taken++;
			}
		}
		free(order);
	}
}

int sim_trace_scan(struct sim_trace *t, const char *path, char *err, size_t errlen)
{
	struct sim_pcap in;
	int rc = sim_pcap_open(&in, path);
	if (rc != SIM_EXIT_OK) {
		snprintf(err, errlen, "%s", in.err);
		return rc;
	}
	if (!t->host_ix.slot || !t->flow_ix.slot || !t->qp_ix.slot || !t->psn_key || !t->psn_flow) {
		snprintf(err, errlen, "out of memory");
		sim_pcap_close(&in);
		return SIM_EXIT_RUNTIME;
	}
	snprintf(t->path, sizeof t->path, "%s", path);
	t->dlt = in.dlt;
	t->file_nsec = in.file_nsec;
	t->pcapng = in.pcapng;
	t->snaplen = in.snaplen;
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts, prev = 0;
	struct pulse_roce_pkt k;
	for (;;) {
		int r = sim_pcap_next(&in, &d, &cap, &wire, &ts);
		if (r == 0)
			break;
		if (r < 0) {
			t->truncated = 1;
			snprintf(t->trunc_msg, sizeof t->trunc_msg, "%s", in.err);
			break;
		}
		if (t->cnt.read++ == 0) {
			t->first_ns = ts;
			prev = ts;
		}
		if (ts < prev) {
			t->cnt.ts_backwards++;
			if (prev - ts > t->cnt.ts_backwards_max_ns)
				t->cnt.ts_backwards_max_ns = prev - ts;
			ts = prev;
		}
		if (ts - prev > SIM_JUMP_POLLS * t->cfg.poll_ns) {
			if (!t->cnt.ts_jumps++)
				t->cnt.ts_jump_first_rec = t->cnt.read;
			if (ts - prev > t->cnt.ts_jump_max_ns)
				t->cnt.ts_jump_max_ns = ts - prev;
		}
		prev = ts;
		enum pulse_roce_status st = pulse_roce_decode(d, cap, wire, in.link, &k);
		sim_trace_add(t, st, &k, ts);
	}
	t->last_ns = prev;
	sim_pcap_close(&in);
	sim_trace_resolve(t);
	if (t->truncated) {
		snprintf(err, errlen, "%s", t->trunc_msg);
		return SIM_EXIT_TRUNCATED;
	}
	return SIM_EXIT_OK;
}
