/* Ring or tree, from the active-peer pattern on the rate curves (pulse.txt
 * §5.1).
 *
 * The first time a collective (communicator, type, count, datatype) is seen
 * and its algorithm is not known, the rank's traffic to all peers from the
 * call on is read WITHOUT consuming it: Algorithm 1 at the rank level, with
 * a lower bound every algorithm satisfies (all-reduce: N = count x size,
 * since a tree rank sends N/2 to its parent or children in each of the two
 * trees, and a ring rank 2N(s-1)/s >= N; the other collectives run on
 * rings only: their ring volume). When that segment has ended, the peers
 * that received a real share of its bytes (>= 1/5 of the largest; the
 * receiver-side clear-to-send writes are far below that) are the active
 * peers:
 *   one active peer   ring (its successor), except that a tree rank may
 *                     also send to a single peer (root or leaf of a single
 *                     tree, or a neighbour in both trees): N/2 or N, while
 *                     a ring successor gets 2N(s-1)/s >= 4N/3 for s >= 3;
 *                     the volume decides (midpoint); s = 2 is a ring;
 *   several           tree: parent and children. Each gets a whole number
 *                     of N/2 (one per tree in which it is a neighbour).
 * The answer (algorithm and the expected volume per peer) is kept per
 * (communicator, rank, type, count, datatype) and reused for the periodic
 * repeats of the operator (algo_source "reused"). When the profiler plugin
 * named the algorithm, its name goes in the record, and a disagreement with
 * the inference is counted (algo_conflicts) and marked "conflict".
 *
 * Not handled: channels that follow different rings (several successors)
 * read as a tree. */
#include <stdlib.h>
#include <string.h>

#include "assoc_int.h"

/* NCCL's protocols put more than the data on the wire (sim/README.md, "NCCL
 * protocols"): Simple the data, LL128 128 bytes per 120 of data, LL a
 * 4-byte flag per 4 bytes. The hook's records do not say which one ran
 * (only the profiler plugin does), so the volumes tell: the factor under
 * which they are whole multiples of the expected share. */
uint64_t as_proto_wire(uint64_t data, uint8_t proto)
{
	if (proto == AS_PROTO_LL)
		return 2 * data;
	if (proto == AS_PROTO_LL128)
		return data / 15 * 16 + data % 15 * 16 / 15;
	return data;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* How many units of w/c a peer's volume is, rounded. */
static uint64_t tree_units(uint64_t bytes, uint64_t c, uint64_t w)
{
	return (bytes * c + w / 2) / w;
}

/* The peer's expected volume: its whole units, one to c of them (more is
 * the next operator's traffic in the window). */
static uint64_t tree_expect(uint64_t bytes, uint64_t c, uint64_t w)
{
	uint64_t k = tree_units(bytes, c, w);
	return (k == 0 ? 1 : k > c ? c : k) * w / c;
}

/* The ring's volume as it was sent: the data under the protocol whose
 * overhead the measured volume matches (else the data, a lower bound). */
static uint64_t ring_wire(uint64_t ring, uint64_t measured, uint8_t *proto_out)
{
	static const uint8_t order[3] = { AS_PROTO_SIMPLE, AS_PROTO_LL128, AS_PROTO_LL };
	for (int k = 0; k < 3; k++) {
		uint64_t w = as_proto_wire(ring, order[k]);
		if (absdiff(measured, w) <= w / 64) {
			*proto_out = order[k];
			return w;
		}
	}
	*proto_out = AS_PROTO_SIMPLE;
	return ring;
}

uint8_t as_infer_pattern(uint8_t type, int32_t nranks, uint64_t n_bytes, uint32_t npeers,
			 const int32_t *rank, const uint64_t *bytes, uint64_t *expected_out,
			 uint8_t *proto_out)
{
	*proto_out = AS_PROTO_SIMPLE;
	(void)rank;
	uint64_t max = 0;
	uint32_t imax = 0, nd = 0;
	for (uint32_t i = 0; i < npeers; i++) {
		expected_out[i] = 0;
		if (bytes[i] > max) {
			max = bytes[i];
			imax = i;
		}
	}
	if (max == 0)
		return PULSE_ALGO_UNKNOWN;
	for (uint32_t i = 0; i < npeers; i++)
		if (bytes[i] * 5 >= max)
			nd++;
	uint64_t ring = 0;
	if (type != PULSE_HOOK_OP_ALLREDUCE) {
		/* datatype 0: 1 byte */
		expected_out[imax] = ring_wire(as_ring_total(type, n_bytes, 0, nranks), max, proto_out);
		return PULSE_ALGO_RING;
	}
	ring = as_ring_total(type, n_bytes, 0, nranks);
	if (nd == 1) {
		/* ring: 2N(s-1)/s; tree: N/2 or N to one peer */
		if (nranks <= 2 || 2 * max >= n_bytes + ring) {
			expected_out[imax] = ring_wire(ring, max, proto_out);
			return PULSE_ALGO_RING;
		}
	}
	/* Each channel runs one of the two trees and carries N/C: a neighbour
	 * in the trees of k of the C channels gets kN/C (C even: N/2 per tree,
	 * N for a neighbour in both; C odd: one tree has a channel more). C is
	 * read off the volumes: the fewest channels whose multiples of N/C all
	 * the active peers' volumes are (2 when none fits). */
	/* Under LL128 or LL the units are N/C times the protocol's overhead:
	 * for the fewest channels, the protocols are tried in turn (without it,
	 * LL128's 16/15 makes some larger C fit approximately, whose units
	 * overshoot what was sent). */
	uint64_t den = 2, nw = n_bytes;
	int found = 0;
	for (uint64_t c = 2; c <= AS_TREE_MAX_CHANNELS && !found; c++) {
		static const uint8_t order[3] = { AS_PROTO_SIMPLE, AS_PROTO_LL128, AS_PROTO_LL };
		for (int p = 0; p < 3 && !found; p++) {
			uint64_t w = as_proto_wire(n_bytes, order[p]);
			int fits = 1;
			for (uint32_t i = 0; i < npeers && fits; i++) {
				if (bytes[i] * 5 < max)
					continue;
				uint64_t k = tree_units(bytes[i], c, w);
				uint64_t want = k * w / c;
				fits = k >= 1 && k <= c && absdiff(bytes[i], want) <= w / 64;
			}
			if (fits) {
				den = c;
				nw = w;
				*proto_out = order[p];
				found = 1;
			}
		}
	}
	/* Packet headers also put more than the data on the wire (a NIC that
	 * counts wire bytes: the real NCCL capture's 24 KiB tree all-reduce
	 * sent 26304 bytes under Simple, 7% over, as LL128's 6.7%). When the
	 * Simple reading with two channels still gives every active peer a
	 * whole unit of data at most 8% under what it sent (a lower bound,
	 * as ring_wire's), the overhead is not told apart: Simple. */
	if (*proto_out != AS_PROTO_SIMPLE) {
		int simple_bound = 1;
		for (uint32_t i = 0; i < npeers && simple_bound; i++) {
			if (bytes[i] * 5 < max)
				continue;
			uint64_t want = tree_expect(bytes[i], 2, n_bytes);
			simple_bound = want <= bytes[i] && (bytes[i] - want) * 100 <= want * 8;
		}
		if (simple_bound) {
			den = 2;
			nw = n_bytes;
			*proto_out = AS_PROTO_SIMPLE;
		}
	}
	for (uint32_t i = 0; i < npeers; i++) {
		if (bytes[i] * 5 < max)
			continue;
		expected_out[i] = tree_expect(bytes[i], den, nw);
	}
	return PULSE_ALGO_TREE;
}

static uint8_t prof_name_algo(uint8_t a)
{
	return a;
}

/* A tiny collective (under AS_TINY_BYTES in total: the loss, metadata) has
 * no rate curve to infer from, and its few bytes share epochs with the
 * next operator's: it takes the algorithm last inferred for a large
 * collective of the same rank stream; before any, the peers it sends to in
 * its first epoch are its peers, algorithm unknown. */
static int infer_small(struct assoc *a, struct as_rank *rs, struct as_op *op, uint64_t n)
{
	uint64_t half = n / 2 ? n / 2 : 1;
	op->npeers = 0;
	if (rs->last_algo == PULSE_ALGO_RING && rs->ring_next >= 0) {
		op->algo = PULSE_ALGO_RING;
		op->algo_source = PULSE_ALGO_SRC_REUSED;
		as_op_add_peer(op, rs->ring_next, as_ring_total(op->type, op->count, op->datatype, rs->nranks), 0);
	} else if (rs->last_algo == PULSE_ALGO_TREE && rs->ntree) {
		op->algo = PULSE_ALGO_TREE;
		op->algo_source = PULSE_ALGO_SRC_REUSED;
		for (uint32_t i = 0; i < rs->ntree; i++)
			as_op_add_peer(op, rs->tree_peer[i], n * rs->tree_mult[i] / (rs->tree_den ? rs->tree_den : 2), 0);
	} else {
		uint64_t floor = as_call_floor(a, op), t0 = UINT64_MAX;
		for (uint32_t i = 0; i < rs->npeers; i++) {
			const struct as_buf *b = &rs->peers[i].buf;
			for (uint32_t j = b->head; j < b->n; j++)
				if (b->v[j].t + a->epoch_ns >= floor) {
					t0 = b->v[j].t < t0 ? b->v[j].t : t0;
					break;
				}
		}
		if (t0 == UINT64_MAX)
			return 0; /* no traffic yet */
		for (uint32_t i = 0; i < rs->npeers; i++) {
			const struct as_buf *b = &rs->peers[i].buf;
			for (uint32_t j = b->head; j < b->n; j++)
				if (b->v[j].t + a->epoch_ns >= floor) {
					if (b->v[j].t <= t0 + a->epoch_ns)
						as_op_add_peer(op, rs->peers[i].rank, half, 0);
					break;
				}
		}
		op->algo = PULSE_ALGO_UNKNOWN;
		op->algo_source = PULSE_ALGO_SRC_NONE;
	}
	if (op->prof_algo) {
		if (op->algo && op->prof_algo != op->algo)
			a->st.algo_conflicts++;
		op->algo_source = op->algo && op->prof_algo != op->algo ? PULSE_ALGO_SRC_CONFLICT
									 : PULSE_ALGO_SRC_PROFILER;
		op->algo = op->prof_algo;
	}
	op->set_up = 1;
	return 1;
}

/* The last rank of a broadcast's chain: its successor (learned, else
 * NCCL's rank order, as as_succ_on_host) is the root, which already has
 * the data. Without this a job of broadcasts alone (no other collective
 * to learn the successor from) never had a record for that rank, and no
 * instance of the communicator was ever complete. The rank order is a
 * guess until a ring collective shows the successor: a rank NCCL put
 * elsewhere whose data came over δ after its call is recorded no_traffic
 * and its bytes go unassociated (counted), as with as_succ_on_host. */
static int chain_end(const struct as_rank *rs, const struct as_op *op)
{
	if (op->type != PULSE_HOOK_OP_BROADCAST || rs->rank < 0 || rs->nranks < 2 || op->root_peer < 0)
		return 0;
	int32_t succ = rs->ring_next >= 0 ? rs->ring_next : (rs->rank + 1) % rs->nranks;
	return succ == op->root_peer;
}

/* A ring rank whose successor is on this host (NVLink/PCIe), or the end
 * of a broadcast's chain, sends no data over RDMA; its QPs are the
 * receive side from a remote predecessor and carry at most clear-to-send
 * writes. Decided once δ passed after the call with under 1/64 of N on
 * its QPs, unless a tree was seen on this rank or the profiler says tree
 * (a tree rank may wait for its children; a broadcast is a chain in NCCL
 * whatever the all-reduces use). */
static int no_data(const struct assoc *a, const struct as_rank *rs, const struct as_op *op, uint64_t horizon)
{
	int end = chain_end(rs, op);
	if (!end && (rs->last_algo == PULSE_ALGO_TREE || op->prof_algo == PULSE_ALGO_TREE))
		return 0;
	if (horizon < op->call_ns + a->delta_ns || !(end || as_succ_on_host(a, rs)))
		return 0;
	uint64_t n = op->count * (as_dtype_size(op->datatype) ? as_dtype_size(op->datatype) : 1);
	uint64_t floor = as_call_floor(a, op), sum = 0;
	for (uint32_t i = 0; i < rs->npeers; i++) {
		const struct as_buf *b = &rs->peers[i].buf;
		for (uint32_t j = b->head; j < b->n; j++)
			if (b->v[j].t + a->epoch_ns >= floor) {
				sum += b->v[j].b;
				if (sum * 64 > n)
					return 0;
			}
	}
	return 1;
}

int as_infer(struct assoc *a, struct as_rank *rs, struct as_op *op, uint64_t horizon)
{
	uint32_t np = rs->npeers;
	if (np == 0)
		return 0;
	if (no_data(a, rs, op, horizon)) {
		op->npeers = 0;
		op->algo = op->prof_algo ? op->prof_algo : PULSE_ALGO_RING;
		op->algo_source = op->prof_algo ? PULSE_ALGO_SRC_PROFILER : PULSE_ALGO_SRC_INFERRED;
		op->set_up = 1;
		return 1;
	}
	{
		uint64_t n = op->count * (as_dtype_size(op->datatype) ? as_dtype_size(op->datatype) : 1);
		uint64_t total = op->type == PULSE_HOOK_OP_ALLREDUCE
					 ? 2 * n
					 : as_ring_total(op->type, op->count, op->datatype, rs->nranks);
		if (total < AS_TINY_BYTES)
			return infer_small(a, rs, op, n);
	}
	uint32_t *ix = calloc(np, sizeof *ix);
	uint64_t *by = calloc(np, sizeof *by);
	int32_t *rk = calloc(np, sizeof *rk);
	uint64_t *ex = calloc(np, sizeof *ex);
	int done = 0;
	if (!ix || !by || !rk || !ex)
		goto out;
	uint64_t n = op->count * (as_dtype_size(op->datatype) ? as_dtype_size(op->datatype) : 1);
	uint64_t lower = op->type == PULSE_HOOK_OP_ALLREDUCE
				 ? n
				 : as_ring_total(op->type, op->count, op->datatype, rs->nranks);
	lower -= as_tolerance(lower, rs->nranks) < lower ? as_tolerance(lower, rs->nranks) : lower;
	uint64_t floor = as_call_floor(a, op);
	uint64_t ep = a->epoch_ns;
	/* the next operator's call, for back-to-back operators: the one after
	 * this operator in the queue, which may be behind the head (a tiny
	 * operator just before it, final and not taken off yet: its own call
	 * read as the next one ended a tree all-reduce at its first pause,
	 * mid-transfer, and its expectations were a wrong channel count) */
	uint64_t next_call = UINT64_MAX;
	uint32_t at = (uint32_t)(op - rs->q);
	if (at + 1 < rs->qn)
		next_call = rs->q[at + 1].call_ns;
	for (uint32_t i = 0; i < np; i++) {
		rk[i] = rs->peers[i].rank;
		ix[i] = rs->peers[i].buf.head;
		/* skip what came before the call */
		while (ix[i] < rs->peers[i].buf.n && rs->peers[i].buf.v[ix[i]].t + ep < floor)
			ix[i]++;
	}
	uint64_t tmp = 0, last = 0;
	int open = 0, ended = 0;
	for (;;) {
		uint32_t best = UINT32_MAX;
		uint64_t bt = UINT64_MAX;
		for (uint32_t i = 0; i < np; i++) {
			const struct as_buf *b = &rs->peers[i].buf;
			if (ix[i] < b->n && b->v[ix[i]].t < bt) {
				bt = b->v[ix[i]].t;
				best = i;
			}
		}
		if (best == UINT32_MAX)
			break;
		/* as in as_segment_peer: bytes after the calls known may be an
		 * operator's called since; with the next call unknown, they
		 * wait (two back-to-back collectives read as one, the volume
		 * of both taken for LL's, and every later operator its
		 * successor's traffic: live at 4x, live_cluster.sh comp_stop) */
		if (a->calls_until && bt > a->calls_until && next_call == UINT64_MAX && !a->finishing)
			goto out;
		if (open && tmp >= lower && bt > last + ep &&
		    (bt - last >= a->delta_ns || (bt - (last + ep) >= a->short_gap_ns && next_call <= bt))) {
			ended = 1;
			break;
		}
		const struct as_ev *e = &rs->peers[best].buf.v[ix[best]++];
		open = 1;
		tmp += e->b;
		by[best] += e->b;
		last = e->t;
	}
	if (!ended && open && tmp >= lower && horizon >= last + ep &&
	    (horizon - last >= a->delta_ns || (horizon - (last + ep) >= a->short_gap_ns && next_call <= horizon)))
		ended = 1;
	if (!ended && open && op->tainted && horizon >= last + a->delta_ns)
		ended = 1;
	if (!ended)
		goto out;
	uint8_t proto = AS_PROTO_SIMPLE;
	uint8_t algo = as_infer_pattern(op->type, rs->nranks, n, np, rk, by, ex, &proto);
	if (algo == PULSE_ALGO_UNKNOWN)
		goto out;
	done = 1;
	op->algo = algo;
	op->algo_source = PULSE_ALGO_SRC_INFERRED;
	if (op->prof_algo) {
		if (prof_name_algo(op->prof_algo) != algo) {
			a->st.algo_conflicts++;
			op->algo = op->prof_algo;
			op->algo_source = PULSE_ALGO_SRC_CONFLICT;
		} else {
			op->algo_source = PULSE_ALGO_SRC_PROFILER;
		}
	}
	op->npeers = 0;
	struct as_learn l;
	memset(&l, 0, sizeof l);
	l.type = op->type;
	l.datatype = op->datatype;
	l.count = op->count;
	l.algo = op->algo;
	for (uint32_t i = 0; i < np; i++) {
		if (!ex[i])
			continue;
		as_op_add_peer(op, rk[i], ex[i], 0);
		if (l.npeers < AS_LEARN_MAX_PEERS) {
			l.rank[l.npeers] = rk[i];
			l.expected[l.npeers] = ex[i];
			l.npeers++;
		}
		if (algo == PULSE_ALGO_RING)
			rs->ring_next = rk[i];
	}
	rs->last_algo = algo;
	if (algo == PULSE_ALGO_TREE) {
		rs->ntree = 0;
		/* the channel count behind the expectations (as_infer_pattern):
		 * every expectation a whole multiple of N/C */
		uint32_t den = 2;
		n = as_proto_wire(n, proto); /* the units were found on the wire */
		for (uint32_t c = 2; c <= AS_TREE_MAX_CHANNELS && n; c++) {
			int whole = 1;
			for (uint32_t i = 0; i < np && whole; i++)
				if (ex[i]) {
					uint64_t k = (ex[i] * c + n / 2) / n;
					whole = k >= 1 && k * n / c == ex[i];
				}
			if (whole) {
				den = c;
				break;
			}
		}
		rs->tree_den = (uint8_t)den;
		for (uint32_t i = 0; i < np && rs->ntree < AS_LEARN_MAX_PEERS; i++)
			if (ex[i]) {
				rs->tree_peer[rs->ntree] = rk[i];
				rs->tree_mult[rs->ntree++] = (uint8_t)(n ? (ex[i] * den + n / 2) / n : 1);
			}
	}
	op->set_up = 1;
	if (rs->nlearn == rs->learn_cap) {
		uint32_t nc = rs->learn_cap ? rs->learn_cap * 2 : 8;
		struct as_learn *p = realloc(rs->learn, (size_t)nc * sizeof *p);
		if (!p)
			goto out;
		rs->learn = p;
		rs->learn_cap = nc;
	}
	rs->learn[rs->nlearn++] = l;
out:
	free(ix);
	free(by);
	free(rk);
	free(ex);
	return done;
}
