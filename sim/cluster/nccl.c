/* NCCL's behaviour over RDMA, at slice granularity.
 *
 * Communicators get their connections at init: per channel, ring
 * neighbours (i -> i+1) and, for communicators that carry P2P operators,
 * every ordered pair. An inter-host connection is a QP pair (a send QP on
 * the sender's NIC, a receive QP on the receiver's NIC); an intra-host one
 * is an NVLink copy with no QP.
 *
 * An operator instance matches the k-th call of each rank on a
 * communicator (P2P: the k-th send i->j with the k-th receive j<-i). It is
 * compiled into per-connection item lists (an item = one slice of at most
 * slice_bytes). An item is posted by the sender's proxy when
 *   - the sender's kernel runs (the rank called the op; launch latency),
 *   - the item's data dependency arrived (ring: the previous step's slice
 *     from the predecessor; chain: the same slice from the predecessor),
 *   - a buffer slot is free at the receiver (item < consumed + slots; a slot
 *     is consumed once the slice arrived AND the receiver's kernel runs),
 * and costs proxy latency; then the NIC sends it (one at a time per QP).
 * A rank's part of an operator ends when everything it sends and receives
 * has arrived. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static uint32_t alloc_qpn(struct sim *sm, int nic)
{
	struct nic *n = &sm->nics[nic];
	n->next_qpn += 1 + (uint32_t)(sc_rng_next(&sm->rng) % 4);
	if (n->next_qpn >= 0xFFF000u)
		n->next_qpn = 0x100;
	return n->next_qpn;
}

static int new_qpc(struct sim *sm, int comm, int ch, int src, int dst)
{
	if (sm->nqpcs == sm->capqpcs) {
		sm->capqpcs = sm->capqpcs ? sm->capqpcs * 2 : 256;
		sm->qpcs = xrealloc(sm->qpcs, (size_t)sm->capqpcs * sizeof *sm->qpcs);
	}
	struct qpc *q = &sm->qpcs[sm->nqpcs];
	memset(q, 0, sizeof *q);
	q->comm = comm;
	q->ch = ch;
	q->src_rank = src;
	q->dst_rank = dst;
	q->src_nic = nic_of(sm, src);
	q->dst_nic = nic_of(sm, dst);
	q->inter = sm->ranks[src].host != sm->ranks[dst].host;
	if (q->inter) {
		q->sqpn = alloc_qpn(sm, q->src_nic);
		q->rqpn = alloc_qpn(sm, q->dst_nic);
	}
	return sm->nqpcs++;
}

/* NCCL's double binary tree, simplified: tree 0 is a binary heap over the
 * comm ranks (parent of position p is (p-1)/2), tree 1 the same over the
 * mirrored order (position n-1-r), so most leaves of one tree are interior
 * nodes of the other. Channel ch uses tree ch % 2. */
static int tree_pos(int n, int t, int r)
{
	return t ? n - 1 - r : r;
}
static int tree_rank(int n, int t, int p)
{
	return t ? n - 1 - p : p;
}
int tree_parent(int n, int ch, int r)
{
	int p = tree_pos(n, ch % 2, r);
	return p == 0 ? -1 : tree_rank(n, ch % 2, (p - 1) / 2);
}
int tree_child(int n, int ch, int r, int k)
{
	int p = tree_pos(n, ch % 2, r), c = 2 * p + 1 + k;
	return c < n ? tree_rank(n, ch % 2, c) : -1;
}

int comm_create(struct sim *sm, const int *ranks, int n, int p2p, const char *label)
{
	if (sm->ncomms == sm->capcomms) {
		sm->capcomms = sm->capcomms ? sm->capcomms * 2 : 64;
		sm->comms = xrealloc(sm->comms, (size_t)sm->capcomms * sizeof *sm->comms);
	}
	int idx = sm->ncomms++;
	struct comm *c = &sm->comms[idx];
	memset(c, 0, sizeof *c);
	c->idx = idx;
	c->n = n;
	c->label = label;
	c->ranks = xcalloc((size_t)n, sizeof *c->ranks);
	memcpy(c->ranks, ranks, (size_t)n * sizeof *ranks);
	uint64_t x = sm->s->seed * 0x9e3779b97f4a7c15ull + (uint64_t)idx * 0x632be59bd9b4e019ull;
	c->id = sc_splitmix(&x);
	if (!c->id)
		c->id = 1;
	c->intra = 1;
	for (int i = 1; i < n; i++)
		if (sm->ranks[ranks[i]].host != sm->ranks[ranks[0]].host)
			c->intra = 0;
	c->p2p = p2p;
	c->gen = sm->comm_gen;
	int C = sm->s->channels, P = sm->s->p2p_channels;
	if (n >= 2) {
		c->ring_qpc = xcalloc((size_t)C * (size_t)n, sizeof *c->ring_qpc);
		for (int ch = 0; ch < C; ch++)
			for (int i = 0; i < n; i++)
				c->ring_qpc[ch * n + i] = new_qpc(sm, idx, ch, ranks[i], ranks[(i + 1) % n]);
		if (sm->s->algo == ALGO_TREE && !c->intra && n > 2) {
			c->tree_up = xcalloc((size_t)C * (size_t)n, sizeof *c->tree_up);
			c->tree_dn = xcalloc((size_t)C * (size_t)n * 2, sizeof *c->tree_dn);
			for (int ch = 0; ch < C; ch++)
				for (int i = 0; i < n; i++) {
					int pa = tree_parent(n, ch, i);
					c->tree_up[ch * n + i] =
						pa < 0 ? -1 : new_qpc(sm, idx, C + P + ch, ranks[i], ranks[pa]);
					for (int k = 0; k < 2; k++) {
						int ck = tree_child(n, ch, i, k);
						c->tree_dn[(ch * n + i) * 2 + k] =
							ck < 0 ? -1
							       : new_qpc(sm, idx, C + P + ch, ranks[i], ranks[ck]);
					}
				}
		}
		if (p2p) {
			c->p2p_qpc = xcalloc((size_t)P * (size_t)n * (size_t)n, sizeof *c->p2p_qpc);
			for (int ch = 0; ch < P; ch++)
				for (int i = 0; i < n; i++)
					for (int j = 0; j < n; j++)
						c->p2p_qpc[(ch * n + i) * n + j] =
							i == j ? -1 : new_qpc(sm, idx, C + ch, ranks[i], ranks[j]);
		}
	}
	c->p2p_inst = xcalloc((size_t)n * (size_t)n, sizeof *c->p2p_inst);
	c->p2p_ns = xcalloc((size_t)n * (size_t)n, sizeof *c->p2p_ns);
	c->p2p_nr = xcalloc((size_t)n * (size_t)n, sizeof *c->p2p_nr);
	c->p2p_cap = xcalloc((size_t)n * (size_t)n, sizeof *c->p2p_cap);
	return idx;
}

/* ---------- hook records of communicator init ---------- */
#define NCCL_RTR_MASK (1u | (1u << 7) | (1u << 8) | (1u << 12) | (1u << 15) | (1u << 17) | (1u << 20))

static void gpu_identity(const struct rankst *rk, struct pulse_hook_gpu *g)
{
	memset(g, 0, sizeof *g);
	g->cuda_dev = rk->gpu;
	g->source = PULSE_HOOK_GPU_CUDART;
	static const uint8_t bus[16] = { 0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb,
					 0x19, 0x2b, 0x3b, 0x5e, 0x9b, 0xac, 0xbb, 0xdc };
	snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "0000:%02x:00.0", bus[rk->gpu % 16]);
}

static void qp_record(struct sim *sm, struct rankst *rk, double t, uint8_t kind, int nic,
		      uint32_t qpn, int peer_nic, uint32_t dest_qpn)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.u.qp.dev, sizeof r.u.qp.dev, "%s", sm->nics[nic].dev);
	r.u.qp.qpn = qpn;
	r.u.qp.result = 0;
	if (kind == PULSE_HOOK_QP_RTR) {
		r.u.qp.dest_qpn = dest_qpn;
		r.u.qp.attr_mask = NCCL_RTR_MASK;
		r.u.qp.port = 1;
		r.u.qp.sgid_index = 3;
		r.u.qp.is_global = 1;
		memcpy(r.u.qp.remote_gid, sm->nics[peer_nic].gid, 16);
	}
	gpu_identity(rk, &r.u.qp.gpu);
	sm->sink.record(sm, rk, &r, kind, t, rk->tid + 3);
}

/* A COMM_INIT or COMM_DESTROY record of rank `me` of communicator ci, as
 * the hook writes it (the handle is the process's ncclComm_t). */
static void comm_record(struct sim *sm, struct rankst *rk, int ci, int me, uint8_t kind, uint8_t how,
			double t)
{
	const struct comm *c = &sm->comms[ci];
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.u.comm.comm_id = c->id;
	r.u.comm.handle = 0x55d0c0a00000ull + (uint64_t)ci * 0x4000 + (uint64_t)rk->g * 0x100000ull;
	r.u.comm.rank = me;
	r.u.comm.nranks = c->n;
	r.u.comm.color = -1;
	r.u.comm.key = -1;
	r.u.comm.how = how;
	gpu_identity(rk, &r.u.comm.gpu);
	sm->sink.record(sm, rk, &r, kind, t, rk->tid);
}

/* Every process inits its communicators in creation order; an init ends
 * when all members called it (bootstrap) plus the connection set-up. The
 * hook writes the QP records during the call (NCCL's proxy thread creates
 * and connects the QPs) and the COMM_INIT record after it returns, with the
 * call's start time. */
void comms_init(struct sim *sm, int gen, double base)
{
	double *tp = xcalloc((size_t)sm->nranks, sizeof *tp);
	for (int r = 0; r < sm->nranks; r++)
		tp[r] = base + sc_rng_range(&sm->rng, 0, 200e3);
	for (int ci = 0; ci < sm->ncomms; ci++) {
		struct comm *c = &sm->comms[ci];
		if (c->gen != gen)
			continue;
		double tmax = 0;
		for (int i = 0; i < c->n; i++)
			if (tp[c->ranks[i]] > tmax)
				tmax = tp[c->ranks[i]];
		double setup = c->intra ? 300e3 : 800e3;
		double tend = tmax + setup;
		for (int i = 0; i < c->n; i++) {
			int g = c->ranks[i];
			struct rankst *rk = &sm->ranks[g];
			double call = tp[g];
			double tq = tmax + setup * 0.2 + sc_rng_range(&sm->rng, 0, 20e3);
			/* QPs where this rank is an end: create all, then RTR all */
			for (int pass = 0; pass < 2; pass++) {
				double tt = pass == 0 ? tq : tmax + setup * 0.6 + sc_rng_range(&sm->rng, 0, 20e3);
				for (int q = 0; q < sm->nqpcs; q++) {
					const struct qpc *p = &sm->qpcs[q];
					if (p->comm != ci || !p->inter)
						continue;
					if (p->src_rank == g) {
						qp_record(sm, rk, tt, pass ? PULSE_HOOK_QP_RTR : PULSE_HOOK_QP_CREATE,
							  p->src_nic, p->sqpn, p->dst_nic, p->rqpn);
						tt += 2500;
					}
					if (p->dst_rank == g) {
						qp_record(sm, rk, tt, pass ? PULSE_HOOK_QP_RTR : PULSE_HOOK_QP_CREATE,
							  p->dst_nic, p->rqpn, p->src_nic, p->sqpn);
						tt += 2500;
					}
				}
			}
			comm_record(sm, rk, ci, i, PULSE_HOOK_COMM_INIT, PULSE_HOOK_HOW_INIT_RANK, call);
			tp[g] = tend + sc_rng_range(&sm->rng, 20e3, 80e3);
		}
	}
	for (int r = 0; r < sm->nranks; r++) {
		sm->ranks[r].t_cpu = tp[r];
	}
	free(tp);
}

/* A process that exits cleanly destroys its communicators
 * (torch.distributed.destroy_process_group -> ncclCommDestroy): the hook
 * sees each QP destroyed by the proxy thread, then COMM_DESTROY. A killed
 * process writes nothing. Communicators of generation `gen` only. */
void comms_destroy_rank(struct sim *sm, struct rankst *rk, int gen, double t)
{
	for (int ci = 0; ci < sm->ncomms; ci++) {
		const struct comm *c = &sm->comms[ci];
		int me = -1;
		for (int i = 0; i < c->n; i++)
			if (c->ranks[i] == rk->g)
				me = i;
		if (c->gen != gen || me < 0)
			continue;
		for (int q = 0; q < sm->nqpcs; q++) {
			const struct qpc *p = &sm->qpcs[q];
			if (p->comm != ci || !p->inter)
				continue;
			if (p->src_rank == rk->g) {
				qp_record(sm, rk, t, PULSE_HOOK_QP_DESTROY, p->src_nic, p->sqpn, -1, 0);
				t += 1500;
			}
			if (p->dst_rank == rk->g) {
				qp_record(sm, rk, t, PULSE_HOOK_QP_DESTROY, p->dst_nic, p->rqpn, -1, 0);
				t += 1500;
			}
		}
		comm_record(sm, rk, ci, me, PULSE_HOOK_COMM_DESTROY, PULSE_HOOK_HOW_DESTROY, t);
		t += 20e3;
	}
}

/* ---------- operator instances ---------- */
static int comm_rank_of(const struct comm *c, int g)
{
	for (int i = 0; i < c->n; i++)
		if (c->ranks[i] == g)
			return i;
	return -1;
}

static uint64_t share(uint64_t total, int parts, int i)
{
	return total / (uint64_t)parts + ((uint64_t)i < total % (uint64_t)parts ? 1 : 0);
}

static void conn_alloc(struct conn *cn, int nitems)
{
	cn->nitems = nitems;
	cn->bytes = xcalloc((size_t)(nitems ? nitems : 1), sizeof *cn->bytes);
	cn->deps = xcalloc((size_t)(nitems ? nitems : 1), 1);
}

/* Ring collectives as NCCL runs them per channel: loops of n chunks (a
 * chunk is at most chunk_slices slices); in each loop K steps (all-reduce:
 * n-1 reduce-scatter then n-1 all-gather steps; all-gather and
 * reduce-scatter: n-1), rank i sending one chunk per step, slice by slice.
 * Slice j of step k needs slice j of step k-1 from the predecessor
 * (forward after receive); the first slice of a loop comes after the last
 * receive of the loop before (one kernel runs the loops in sequence). */
static void build_ring(struct sim *sm, struct opinst *op)
{
	const struct sc_scenario *s = sm->s;
	int n = op->n, C = s->channels, K;
	uint64_t T = op->bytes;
	if (op->type != PULSE_HOOK_OP_ALLREDUCE)
		T = op->bytes * (uint64_t)n;
	K = op->K = op->type == PULSE_HOOK_OP_ALLREDUCE ? 2 * (n - 1) : n - 1;
	op->nconn = C * n;
	op->conns = xcalloc((size_t)op->nconn, sizeof *op->conns);
	uint64_t slice = proto_slice(sm, op->proto);
	uint64_t chunkmax = slice * (uint64_t)proto_chunk_slices(sm, op->proto);
	uint64_t loop = (uint64_t)n * chunkmax;
	for (int ch = 0; ch < C; ch++) {
		uint64_t Tc = share(T, C, ch);
		int nloops = (int)((Tc + loop - 1) / loop);
		/* slices per chunk in each loop, and the item index where it starts */
		int *S = xcalloc((size_t)nloops + 1, sizeof *S), *base = xcalloc((size_t)nloops + 1, sizeof *base);
		int nitems = 0;
		for (int l = 0; l < nloops; l++) {
			uint64_t L = Tc - (uint64_t)l * loop;
			if (L > loop)
				L = loop;
			uint64_t cmax = (L + (uint64_t)n - 1) / (uint64_t)n;
			S[l] = (int)((cmax + slice - 1) / slice);
			if (S[l] < 1)
				S[l] = 1;
			base[l] = nitems;
			nitems += K * S[l];
		}
		int32_t *next = xcalloc((size_t)(nitems ? nitems : 1), sizeof *next);
		for (int l = 0; l < nloops; l++)
			for (int k = 0; k < K; k++)
				for (int j = 0; j < S[l]; j++) {
					int it = base[l] + k * S[l] + j;
					if (k + 1 < K)
						next[it] = base[l] + (k + 1) * S[l] + j;
					else if (j == S[l] - 1 && l + 1 < nloops)
						next[it] = base[l + 1];
					else
						next[it] = -1;
				}
		for (int i = 0; i < n; i++) {
			struct conn *cn = &op->conns[ch * n + i];
			cn->op = op;
			cn->ch = ch;
			cn->from = i;
			cn->to = (i + 1) % n;
			cn->qpc = op->cm->ring_qpc[ch * n + i];
			cn->next = next;
			cn->owns_next = i == 0;
			conn_alloc(cn, nitems);
			for (int l = 0; l < nloops; l++) {
				uint64_t L = Tc - (uint64_t)l * loop;
				if (L > loop)
					L = loop;
				for (int k = 0; k < K; k++) {
					int chunk;
					if (k < n - 1)
						chunk = ((i - k) % n + n) % n;
					else
						chunk = ((i + 1 - (k - (n - 1))) % n + n) % n;
					uint64_t cb = share(L, n, chunk);
					for (int j = 0; j < S[l]; j++) {
						int it = base[l] + k * S[l] + j;
						cn->bytes[it] = (uint32_t)share(cb, S[l], j);
						cn->deps[it] = (k > 0 || (l > 0 && j == 0)) ? 1 : 0;
					}
				}
			}
			op->parts[i].pending += cn->nitems;
			op->parts[cn->to].pending += cn->nitems;
		}
		free(S);
		free(base);
	}
}

static void build_chain(struct sim *sm, struct opinst *op)
{
	const struct sc_scenario *s = sm->s;
	int n = op->n, C = s->channels;
	op->chain = xcalloc((size_t)n, sizeof *op->chain);
	for (int q = 0; q < n; q++)
		op->chain[q] = op->type == PULSE_HOOK_OP_BROADCAST ? (op->root + q) % n
								 : (op->root + 1 + q) % n;
	op->nconn = C * (n - 1);
	op->conns = xcalloc((size_t)op->nconn, sizeof *op->conns);
	uint64_t slice = proto_slice(sm, op->proto);
	for (int ch = 0; ch < C; ch++) {
		uint64_t Tc = share(op->bytes, C, ch);
		int ni = (int)((Tc + slice - 1) / slice);
		for (int q = 0; q + 1 < n; q++) {
			struct conn *cn = &op->conns[ch * (n - 1) + q];
			cn->op = op;
			cn->ch = ch;
			cn->from = op->chain[q];
			cn->to = op->chain[q + 1];
			/* the ring connection from -> from+1 when it is one, else the
			 * chain runs backwards over the ring (reduce): use P2P QPs */
			cn->qpc = op->cm->ring_qpc[ch * n + cn->from];
			conn_alloc(cn, ni);
			for (int it = 0; it < ni; it++) {
				uint64_t b = Tc - (uint64_t)it * slice;
				cn->bytes[it] = (uint32_t)(b > slice ? slice : b);
				cn->deps[it] = q ? 1 : 0;
			}
			op->parts[cn->from].pending += ni;
			op->parts[cn->to].pending += ni;
		}
	}
}

/* Tree all-reduce: per channel, reduce up (a node sends slice i to its
 * parent once slice i arrived from all its children), then broadcast down
 * (the root sends slice i to its children once it has all of them; an
 * interior node forwards slice i once it arrived from its parent). */
static void build_tree(struct sim *sm, struct opinst *op)
{
	const struct sc_scenario *s = sm->s;
	int n = op->n, C = s->channels;
	struct comm *c = op->cm;
	op->nconn = C * 2 * (n - 1);
	op->conns = xcalloc((size_t)op->nconn, sizeof *op->conns);
	op->tup = xcalloc((size_t)C * (size_t)n, sizeof *op->tup);
	op->tdn = xcalloc((size_t)C * (size_t)n * 2, sizeof *op->tdn);
	int ci = 0;
	uint64_t slice = proto_slice(sm, op->proto);
	for (int ch = 0; ch < C; ch++) {
		uint64_t Tc = share(op->bytes, C, ch);
		int ni = (int)((Tc + slice - 1) / slice);
		for (int i = 0; i < n; i++) {
			int nch = (tree_child(n, ch, i, 0) >= 0) + (tree_child(n, ch, i, 1) >= 0);
			op->tup[ch * n + i] = -1;
			for (int dir = 0; dir < 3; dir++) {
				int to = dir == 0 ? tree_parent(n, ch, i) : tree_child(n, ch, i, dir - 1);
				if (dir > 0)
					op->tdn[(ch * n + i) * 2 + dir - 1] = -1;
				if (to < 0)
					continue;
				struct conn *cn = &op->conns[ci];
				cn->op = op;
				cn->ch = ch;
				cn->from = i;
				cn->to = to;
				cn->qpc = dir == 0 ? c->tree_up[ch * n + i] : c->tree_dn[(ch * n + i) * 2 + dir - 1];
				conn_alloc(cn, ni);
				int is_root = tree_parent(n, ch, i) < 0;
				for (int it = 0; it < ni; it++) {
					uint64_t b = Tc - (uint64_t)it * slice;
					cn->bytes[it] = (uint32_t)(b > slice ? slice : b);
					/* up: wait for all children; down: root waits for all
					 * children, others for the parent */
					cn->deps[it] = (uint8_t)(dir == 0 || is_root ? nch : 1);
				}
				if (dir == 0)
					op->tup[ch * n + i] = ci;
				else
					op->tdn[(ch * n + i) * 2 + dir - 1] = ci;
				op->parts[i].pending += ni;
				op->parts[to].pending += ni;
				ci++;
			}
		}
	}
	op->nconn = ci;
}

static void build_p2p(struct sim *sm, struct opinst *op, int i, int j)
{
	const struct sc_scenario *s = sm->s;
	int P = s->p2p_channels, n = op->cm->n;
	op->nconn = P;
	op->conns = xcalloc((size_t)P, sizeof *op->conns);
	uint64_t slice = proto_slice(sm, op->proto);
	for (int ch = 0; ch < P; ch++) {
		struct conn *cn = &op->conns[ch];
		uint64_t Tc = share(op->bytes, P, ch);
		int ni = (int)((Tc + slice - 1) / slice);
		cn->op = op;
		cn->ch = ch;
		cn->from = 0;
		cn->to = 1;
		cn->qpc = op->cm->p2p_qpc[(ch * n + i) * n + j];
		conn_alloc(cn, ni);
		for (int it = 0; it < ni; it++) {
			uint64_t b = Tc - (uint64_t)it * slice;
			cn->bytes[it] = (uint32_t)(b > slice ? slice : b);
		}
		op->parts[0].pending += ni;
		op->parts[1].pending += ni;
	}
}

/* The items were cut in data bytes; LL and LL128 put their flags on the
 * wire too (proto.c), and the fabric, the NIC's counters and the truth
 * all see the wire bytes. */
static void op_to_wire(struct opinst *op)
{
	if (op->proto == PROTO_SIMPLE)
		return;
	for (int c = 0; c < op->nconn; c++)
		for (int it = 0; it < op->conns[c].nitems; it++)
			op->conns[c].bytes[it] = (uint32_t)proto_wire(op->proto, op->conns[c].bytes[it]);
}

static struct opinst *op_new(struct sim *sm, struct comm *c, int type, uint64_t bytes, int root,
			     int nparts)
{
	struct opinst *op = xcalloc(1, sizeof *op);
	op->cm = c;
	op->type = type;
	op->bytes = bytes;
	op->root = root;
	op->n = nparts;
	op->parts = xcalloc((size_t)nparts, sizeof *op->parts);
	for (int i = 0; i < nparts; i++) {
		op->parts[i].op = op;
		op->parts[i].idx = i;
	}
	op->intra = c->intra;
	(void)sm;
	return op;
}

struct part *op_call(struct sim *sm, struct rankst *rk, const struct instr *in, uint64_t seq,
		     uint64_t group_id)
{
	struct comm *c = &sm->comms[in->comm];
	int me = comm_rank_of(c, rk->g);
	struct opinst *op;
	struct part *pt;
	if (in->type == PULSE_HOOK_OP_SEND || in->type == PULSE_HOOK_OP_RECV) {
		int snd = in->type == PULSE_HOOK_OP_SEND;
		int i = snd ? me : in->peer, j = snd ? in->peer : me;
		size_t pi = (size_t)i * (size_t)c->n + (size_t)j;
		uint32_t kk = snd ? c->p2p_ns[pi]++ : c->p2p_nr[pi]++;
		if (kk >= c->p2p_cap[pi]) {
			uint32_t nc = c->p2p_cap[pi] ? c->p2p_cap[pi] * 2 : 16;
			c->p2p_inst[pi] = xrealloc(c->p2p_inst[pi], nc * sizeof **c->p2p_inst);
			memset(c->p2p_inst[pi] + c->p2p_cap[pi], 0,
			       (nc - c->p2p_cap[pi]) * sizeof **c->p2p_inst);
			c->p2p_cap[pi] = nc;
		}
		struct opinst **slot = c->p2p_inst[pi];
		op = slot[kk];
		if (!op) {
			op = op_new(sm, c, PULSE_HOOK_OP_SEND, in->bytes, -1, 2);
			op->kind = OPK_P2P;
			op->algo = ALGO_P2P;
			op->parts[0].comm_rank = i;
			op->parts[1].comm_rank = j;
			op->intra = sm->ranks[c->ranks[i]].host == sm->ranks[c->ranks[j]].host;
			op->proto = proto_pick(sm, op);
			build_p2p(sm, op, i, j);
			op_to_wire(op);
			slot[kk] = op;
		}
		pt = &op->parts[snd ? 0 : 1];
		pt->peer = snd ? j : i;
	} else {
		uint64_t idx = rk->coll_idx[in->comm]++;
		if (idx >= c->ncoll) {
			size_t nc = c->ncoll ? c->ncoll * 2 : 16;
			while (nc <= idx)
				nc *= 2;
			c->coll = xrealloc(c->coll, nc * sizeof *c->coll);
			memset(c->coll + c->ncoll, 0, (nc - c->ncoll) * sizeof *c->coll);
			c->ncoll = nc;
		}
		op = c->coll[idx];
		if (!op) {
			op = op_new(sm, c, in->type, in->bytes, in->peer, c->n);
			for (int i = 0; i < c->n; i++)
				op->parts[i].comm_rank = i;
			op->algo = ALGO_RING;
			if (c->n >= 2 && !c->intra) {
				if (in->type == PULSE_HOOK_OP_BROADCAST || in->type == PULSE_HOOK_OP_REDUCE) {
					op->kind = OPK_CHAIN;
					op->proto = proto_pick(sm, op);
					build_chain(sm, op);
				} else if (in->type == PULSE_HOOK_OP_ALLREDUCE && c->tree_up) {
					op->kind = OPK_TREE;
					op->algo = ALGO_TREE;
					op->proto = proto_pick(sm, op);
					build_tree(sm, op);
				} else {
					op->kind = OPK_RING;
					op->proto = proto_pick(sm, op);
					build_ring(sm, op);
				}
				op_to_wire(op);
			}
			c->coll[idx] = op;
		}
		pt = &op->parts[me];
		pt->peer = in->peer;
	}
	pt->rk = rk;
	pt->called = 1;
	pt->type = op->kind == OPK_P2P ? in->type : op->type;
	pt->call_t = sm->now;
	pt->hook_seq = seq;
	pt->group_id = group_id;
	pt->count = in->bytes;
	pt->bad = in->a == 1 || in->type != pt->type;
	op->nparts_called++;
	return pt;
}

/* ---------- progress ---------- */
/* When the rank's proxy thread can run at or after t. Under CPU
 * contention it is scheduled in and out (the kernel's time slices): on for
 * px_on_ns, then off for px_off_ns (each drawn from 0.5x..1.5x). */
static double proxy_ready(struct sim *sm, struct rankst *rk, double t)
{
	if (rk->px_off <= 0)
		return t;
	for (;;) {
		if (t < rk->px_a)
			return rk->px_a;
		if (t < rk->px_b)
			return t;
		double off = rk->px_off * sc_rng_range(&sm->rng, 0.5, 1.5);
		double on = rk->px_on * sc_rng_range(&sm->rng, 0.5, 1.5);
		rk->px_a = rk->px_b + off;
		rk->px_b = rk->px_a + on;
	}
}

/* Posting one slice: the proxy's work (proxy_ns, slower on a throttled
 * CPU), done when its thread runs. */
static double proxy_done_at(struct sim *sm, struct rankst *rk, int proto)
{
	double post = sm->s->proxy_ns * rk->proxy_f;
	if (proto != PROTO_SIMPLE)
		post *= proto_latency_factor(proto);
	double t = proxy_ready(sm, rk, sm->now) + post;
	return proxy_ready(sm, rk, t);
}

static void try_start_tx(struct sim *sm, struct conn *cn)
{
	if (cn->tx_busy || cn->n_started >= cn->n_posted)
		return;
	int it = cn->n_started++;
	cn->tx_busy = 1;
	const struct qpc *q = &sm->qpcs[cn->qpc];
	uint64_t b = cn->bytes[it];
	if (q->inter && b > 0) {
		struct opinst *op = cn->op;
		double pace = 0;
		if (op->proto != PROTO_SIMPLE)
			pace = proto_max_rate(sm, op->proto,
					      op->kind == OPK_P2P ? sm->s->p2p_channels : sm->s->channels,
					      sm->nics[q->src_nic].cap);
		net_start_flow(sm, cn, it, b, q->src_nic, q->dst_nic, q->sqpn, pace);
	} else {
		double d = q->inter ? 0 : (double)b / sm->bw_nvlink + 1000;
		heap_push(&sm->q, sm->now + d, EV_INTRA_END, cn, (uint32_t)it, 0);
	}
}

static void try_post(struct sim *sm, struct conn *cn)
{
	if (cn->proxy_busy || cn->next_post >= cn->nitems)
		return;
	struct part *S = &cn->op->parts[cn->from], *R = &cn->op->parts[cn->to];
	if (!S->launched || S->rk->gpu_dead)
		return;
	if (cn->deps[cn->next_post])
		return;
	/* the receiver's proxy offers `slots` buffers once its call is posted */
	int slots = cn->op->proto == PROTO_SIMPLE ? sm->s->slots : proto_slots(sm, cn->op->proto);
	if (!R->posted || cn->next_post >= cn->consumed + slots)
		return;
	cn->proxy_busy = 1;
	heap_push(&sm->q, proxy_done_at(sm, S->rk, cn->op->proto), EV_PROXY_DONE, cn, 0, 0);
}

void conn_proxy_done(struct sim *sm, struct conn *cn)
{
	cn->proxy_busy = 0;
	cn->next_post++;
	cn->n_posted++;
	try_start_tx(sm, cn);
	try_post(sm, cn);
}

void conn_flow_end(struct sim *sm, void *owner, int item, double first_t)
{
	struct conn *cn = owner;
	const struct qpc *q = &sm->qpcs[cn->qpc];
	cn->tx_busy = 0;
	if (q->inter && cn->bytes[item] > 0) {
		struct part *S = &cn->op->parts[cn->from];
		if (S->first_t == 0 || first_t < S->first_t)
			S->first_t = first_t;
		S->last_t = sm->now;
		S->bytes_sent += cn->bytes[item];
		double lat = sm->s->net_latency_ns;
		if (cn->op->proto != PROTO_SIMPLE)
			lat *= proto_latency_factor(cn->op->proto);
		if (!sm->nics[q->dst_nic].down)
			heap_push(&sm->q, sm->now + lat, EV_ARRIVE, cn, (uint32_t)item, 0);
	} else {
		conn_arrive(sm, cn, item);
	}
	sm->last_activity = sm->now;
	try_start_tx(sm, cn);
}

static void part_check_done(struct sim *sm, struct part *pt)
{
	if (pt->done || !pt->launched || pt->pending > 0 || !pt->called)
		return;
	pt->done = 1;
	pt->end_t = sm->now;
	pt->op->nparts_done++;
	sm->sink.part_done(sm, pt);
}

static void notify_dependents(struct sim *sm, struct conn *cn, int item)
{
	struct opinst *op = cn->op;
	if (op->kind == OPK_RING) {
		int n = op->n, d = cn->next[item];
		if (d < 0)
			return;
		struct conn *nx = &op->conns[cn->ch * n + cn->to];
		if (nx->deps[d]) {
			nx->deps[d]--;
			try_post(sm, nx);
		}
	} else if (op->kind == OPK_TREE) {
		int n = op->n, ch = cn->ch, X = cn->to;
		int up = tree_parent(n, ch, cn->from) == X; /* this conn went up */
		int xroot = tree_parent(n, ch, X) < 0;
		if (up && !xroot) {
			struct conn *nx = &op->conns[op->tup[ch * n + X]];
			if (nx->deps[item]) {
				nx->deps[item]--;
				try_post(sm, nx);
			}
		} else {
			/* the root got a child's slice, or a node got its parent's:
			 * both feed the down conns of X */
			for (int k = 0; k < 2; k++) {
				int d = op->tdn[(ch * n + X) * 2 + k];
				if (d < 0)
					continue;
				struct conn *nx = &op->conns[d];
				if (nx->deps[item]) {
					nx->deps[item]--;
					try_post(sm, nx);
				}
			}
		}
	} else if (op->kind == OPK_CHAIN) {
		int n = op->n;
		int q = (int)(cn - op->conns) % (n - 1);
		if (q + 1 > n - 2)
			return;
		struct conn *nx = &op->conns[cn->ch * (n - 1) + q + 1];
		if (nx->deps[item]) {
			nx->deps[item]--;
			try_post(sm, nx);
		}
	}
}

void conn_arrive(struct sim *sm, struct conn *cn, int item)
{
	struct opinst *op = cn->op;
	struct part *S = &op->parts[cn->from], *R = &op->parts[cn->to];
	cn->arrived++;
	if (R->launched && !R->rk->gpu_dead) {
		cn->consumed = cn->arrived;
		try_post(sm, cn);
	}
	notify_dependents(sm, cn, item);
	S->pending--;
	R->pending--;
	part_check_done(sm, S);
	part_check_done(sm, R);
}

void op_launch(struct sim *sm, struct part *pt)
{
	struct opinst *op = pt->op;
	if (pt->rk->gpu_dead || pt->bad)
		return;
	pt->launched = 1;
	pt->launch_t = sm->now;
	if (op->nconn == 0) {
		if (op->intra && op->n >= 2 && op->bytes > 0) {
			/* intra-host: all ranks synchronise, then NVLink time */
			int all = 1;
			for (int i = 0; i < op->n; i++)
				if (!op->parts[i].launched)
					all = 0;
			if (all) {
				double vol = (double)op->bytes;
				if (op->type == PULSE_HOOK_OP_ALLREDUCE)
					vol = 2.0 * vol * (op->n - 1) / op->n;
				else if (op->type == PULSE_HOOK_OP_ALLGATHER ||
					 op->type == PULSE_HOOK_OP_REDUCESCATTER)
					vol = vol * (op->n - 1);
				heap_push(&sm->q, sm->now + vol / sm->bw_nvlink + 5000, EV_OP_DONE, op, 0,
					  0);
			}
			return;
		}
		part_check_done(sm, pt);
		return;
	}
	for (int c = 0; c < op->nconn; c++) {
		struct conn *cn = &op->conns[c];
		if (cn->from == pt->idx)
			try_post(sm, cn);
		if (cn->to == pt->idx && cn->consumed < cn->arrived) {
			cn->consumed = cn->arrived;
			try_post(sm, cn);
		}
	}
	part_check_done(sm, pt);
}

/* The call reached the proxy (ncclGroupEnd for a group): receive buffers
 * are offered to the senders. */
void op_posted(struct sim *sm, struct part *pt)
{
	struct opinst *op = pt->op;
	pt->posted = 1;
	for (int c = 0; c < op->nconn; c++)
		if (op->conns[c].to == pt->idx)
			try_post(sm, &op->conns[c]);
}

void op_intra_done(struct sim *sm, struct opinst *op)
{
	for (int i = 0; i < op->n; i++) {
		struct part *pt = &op->parts[i];
		pt->pending = 0;
		if (!pt->rk->gpu_dead)
			part_check_done(sm, pt);
	}
}
