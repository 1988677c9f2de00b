/* Expected volume and peers of an operator (pulse.txt §5.1, Appendix B).
 *
 * Volumes are the bytes THIS rank transmits over RDMA, per remote rank
 * ("peer"), summed over all channels' QPs to that peer. N = count x the
 * size of the datatype, s = nranks.
 *
 *   send           N to the peer of the call
 *   recv           nothing: a receive transmits no data from this rank (its
 *                  QP sends only the receiver's small clear-to-send writes,
 *                  which are counted as extra bytes, never expected)
 *   group          the sum of its sends, per peer
 *   all-reduce     ring: 2 N (s-1)/s to the ring successor (all channels
 *                  follow the same ring here, so the data split over the
 *                  channels adds up again on that peer);
 *                  tree: each of the C channels runs one of NCCL's two
 *                  binary trees and carries N/C each way: kN/C to the
 *                  parent (reduce) and to every child (broadcast), k the
 *                  channels on whose tree the peer is a neighbour (N/2 per
 *                  tree with C even, N for a neighbour in both trees; with
 *                  C odd one tree has a channel more). Which peers are tree
 *                  neighbours, and C, are read off the traffic
 *                  (assoc_infer.c).
 *   all-gather     ring: N (s-1) (count = sendcount)
 *   reduce-scatter ring: N (s-1) (count = recvcount)
 *   broadcast      ring (chain): N to the successor, none when the
 *                  successor is the root (not learned yet: by NCCL's
 *                  rank order, no_traffic once δ passed without data,
 *                  assoc_infer.c)
 *   reduce         ring (chain): N to the successor, none on the root
 *   all-to-all     N to every peer (count per peer)
 * A ring rank whose successor is on this host sends nothing over RDMA (the
 * successor is the learned one, else rank+1 as NCCL orders a flat ring):
 * assoc_infer.c reports its collectives as no_traffic once δ passed after
 * the call without data on its QPs.
 */
#include <stdlib.h>
#include <string.h>

#include "assoc_int.h"

/* ncclDataType_t: Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16,
 * Float32, Float64, Bfloat16, Float8e4m3, Float8e5m2. */
uint32_t as_dtype_size(uint8_t datatype)
{
	static const uint8_t size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
	return datatype < sizeof size ? size[datatype] : 0;
}

static uint64_t nbytes(uint64_t count, uint8_t datatype)
{
	uint32_t s = as_dtype_size(datatype);
	return count * (s ? s : 1);
}

uint64_t as_ring_total(uint8_t type, uint64_t count, uint8_t datatype, int32_t nranks)
{
	uint64_t n = nbytes(count, datatype);
	uint64_t s = nranks > 0 ? (uint64_t)nranks : 1;
	switch (type) {
	case PULSE_HOOK_OP_ALLREDUCE:
		return 2 * n * (s - 1) / s;
	case PULSE_HOOK_OP_ALLGATHER:
	case PULSE_HOOK_OP_REDUCESCATTER:
		return n * (s - 1);
	case PULSE_HOOK_OP_BROADCAST:
	case PULSE_HOOK_OP_REDUCE:
	case PULSE_HOOK_OP_SEND:
		return n;
	default:
		return 0;
	}
}

uint64_t as_tolerance(uint64_t expected, int32_t nranks)
{
	/* NCCL rounds every step to whole elements and slices; a step's
	 * rounding can leave the sum a little under the formula. */
	return expected / 64 + (uint64_t)(nranks > 0 ? nranks : 1) * 16;
}

struct as_peer *as_peer_get(struct as_rank *rs, int32_t rank, int create)
{
	uint32_t lo = 0, hi = rs->npeers;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (rs->peers[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < rs->npeers && rs->peers[lo].rank == rank)
		return &rs->peers[lo];
	if (!create)
		return NULL;
	if (rs->npeers == rs->peers_cap) {
		uint32_t nc = rs->peers_cap ? rs->peers_cap * 2 : 8;
		struct as_peer *p = realloc(rs->peers, (size_t)nc * sizeof *p);
		if (!p)
			return NULL;
		rs->peers = p;
		rs->peers_cap = nc;
	}
	memmove(&rs->peers[lo + 1], &rs->peers[lo], (size_t)(rs->npeers - lo) * sizeof *rs->peers);
	memset(&rs->peers[lo], 0, sizeof rs->peers[lo]);
	rs->peers[lo].rank = rank;
	rs->peers[lo].gpu = -1;
	rs->npeers++;
	return &rs->peers[lo];
}

void as_op_add_peer(struct as_op *op, int32_t rank, uint64_t expected, uint8_t extra)
{
	for (uint32_t i = 0; i < op->npeers; i++)
		if (op->peers[i].rank == rank) {
			op->peers[i].expected += expected;
			if (!extra)
				op->peers[i].extra = 0;
			return;
		}
	if (op->npeers >= AS_OP_MAX_PEERS)
		return;
	if (op->npeers == op->peers_cap) {
		uint32_t nc = op->peers_cap ? op->peers_cap * 2 : 4;
		struct as_op_peer *q = realloc(op->peers, (size_t)nc * sizeof *q);
		if (!q)
			return;
		op->peers = q;
		op->peers_cap = nc;
	}
	struct as_op_peer *p = &op->peers[op->npeers++];
	memset(p, 0, sizeof *p);
	p->rank = rank;
	p->expected = expected;
	p->extra = extra;
}

/* An RDMA peer: one this rank has a QP to. */
static int rdma_peer(struct as_rank *rs, int32_t rank)
{
	struct as_peer *p = as_peer_get(rs, rank, 0);
	return p && p->nqps > 0;
}

/* The ring successor (learned, else NCCL's rank order r+1, as in the real
 * captures' logs and the simulator) is a member on this host. */
int as_succ_on_host(const struct assoc *a, const struct as_rank *rs)
{
	if (rs->rank < 0 || rs->nranks < 2)
		return 0;
	int32_t succ = rs->ring_next >= 0 ? rs->ring_next : (rs->rank + 1) % rs->nranks;
	for (uint32_t i = 0; i < a->nmembers; i++) {
		const struct as_member *m = &a->members[i];
		if (m->comm_id == rs->comm_id && m->rank == succ)
			return m->local || (m->host[0] && !strcmp(m->host, a->host));
	}
	return 0;
}

static const struct as_learn *learned(const struct as_rank *rs, const struct as_op *op)
{
	for (uint32_t i = 0; i < rs->nlearn; i++) {
		const struct as_learn *l = &rs->learn[i];
		if (l->type == op->type && l->count == op->count && l->datatype == op->datatype)
			return l;
	}
	return NULL;
}

int as_expect_setup(struct assoc *a, struct as_rank *rs, struct as_op *op)
{
	op->npeers = 0;
	if (rs->nqps == 0) {
		/* every peer of this rank is on this host (NVLink/PCIe): the
		 * NIC sees nothing of it */
		op->no_rdma = 1;
		op->set_up = 1;
		return 1;
	}
	uint64_t n = nbytes(op->count, op->datatype);
	switch (op->type) {
	case PULSE_OP_GROUP:
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		for (uint32_t i = 0; i < op->ncalls; i++) {
			const struct as_call *c = &op->calls[i];
			/* recv: no TX from this rank (see the top of this file) */
			if (c->type == PULSE_HOOK_OP_SEND && c->peer >= 0 && rdma_peer(rs, c->peer))
				as_op_add_peer(op, c->peer, nbytes(c->count, c->datatype), 0);
		}
		break;
	case PULSE_HOOK_OP_SEND:
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		if (op->root_peer >= 0 && rdma_peer(rs, op->root_peer))
			as_op_add_peer(op, op->root_peer, n, 0);
		break;
	case PULSE_HOOK_OP_RECV:
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		break;
	case PULSE_HOOK_OP_GATHER:
		/* NCCL 2.28: every rank but the root sends its count elements
		 * straight to the root; the root sends nothing */
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		if (op->root_peer >= 0 && op->root_peer != rs->rank && rdma_peer(rs, op->root_peer))
			as_op_add_peer(op, op->root_peer, n, 0);
		break;
	case PULSE_HOOK_OP_SCATTER:
		/* the root sends count elements to every other rank; they send
		 * nothing */
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		if (rs->rank >= 0 && op->root_peer == rs->rank)
			for (int32_t p = 0; p < rs->nranks; p++)
				if (p != rs->rank && rdma_peer(rs, p))
					as_op_add_peer(op, p, n, 0);
		break;
	case PULSE_HOOK_OP_PUT_SIGNAL:
		/* one-sided: the data goes to the peer's window */
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		if (op->root_peer >= 0 && rdma_peer(rs, op->root_peer))
			as_op_add_peer(op, op->root_peer, n, 0);
		break;
	case PULSE_HOOK_OP_ALLTOALL:
		op->algo = PULSE_ALGO_P2P;
		op->algo_source = PULSE_ALGO_SRC_ARGS;
		for (uint32_t i = 0; i < rs->npeers; i++)
			if (rs->peers[i].nqps)
				as_op_add_peer(op, rs->peers[i].rank, n, 0);
		break;
	case PULSE_HOOK_OP_ALLREDUCE:
	case PULSE_HOOK_OP_ALLGATHER:
	case PULSE_HOOK_OP_REDUCESCATTER:
	case PULSE_HOOK_OP_BROADCAST:
	case PULSE_HOOK_OP_REDUCE: {
		const struct as_learn *l = learned(rs, op);
		if (l) {
			op->algo = l->algo;
			op->algo_source = PULSE_ALGO_SRC_REUSED;
			if (op->prof_algo && op->prof_algo != l->algo) {
				/* NCCL's own word goes in the record; the traffic
				 * still gives the expected peers */
				a->st.algo_conflicts++;
				op->algo = op->prof_algo;
				op->algo_source = PULSE_ALGO_SRC_CONFLICT;
			} else if (op->prof_algo) {
				op->algo_source = PULSE_ALGO_SRC_PROFILER;
			}
			for (uint32_t i = 0; i < l->npeers; i++)
				as_op_add_peer(op, l->rank[i], l->expected[i], 0);
			break;
		}
		/* chains (broadcast, reduce) and the ring for gathers: ring
		 * only in NCCL; the successor is needed */
		if (op->type != PULSE_HOOK_OP_ALLREDUCE && rs->ring_next >= 0) {
			op->algo = PULSE_ALGO_RING;
			op->algo_source = op->prof_algo ? PULSE_ALGO_SRC_PROFILER : PULSE_ALGO_SRC_REUSED;
			int none = (op->type == PULSE_HOOK_OP_BROADCAST && rs->ring_next == op->root_peer) ||
				   (op->type == PULSE_HOOK_OP_REDUCE && rs->rank == op->root_peer);
			if (!none && rdma_peer(rs, rs->ring_next))
				as_op_add_peer(op, rs->ring_next,
					       as_ring_total(op->type, op->count, op->datatype, rs->nranks), 0);
			break;
		}
		if (op->type == PULSE_HOOK_OP_REDUCE && rs->rank == op->root_peer) {
			op->algo = PULSE_ALGO_RING;
			op->algo_source = op->prof_algo ? PULSE_ALGO_SRC_PROFILER : PULSE_ALGO_SRC_REUSED;
			break; /* the root of a reduce sends nothing */
		}
		return 0; /* infer from the traffic (assoc_infer.c) */
	}
	default:
		/* an operator we cannot size: measured, never expected */
		op->algo = PULSE_ALGO_UNKNOWN;
		break;
	}
	op->set_up = 1;
	return 1;
}
