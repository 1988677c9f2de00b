/* Segmentation (pulse.txt §5.2, Algorithm 1), per peer over all channels'
 * QPs to that peer.
 *
 * Algorithm 1 ends a segment at the last non-zero epoch before a silence of
 * at least δ, once the segment holds at least the expected volume (a lower
 * bound: headers, synchronization messages and retransmissions only add).
 * Gaps inside an operator (µs-scale NCCL gaps, ms-scale receiver stalls
 * before the volume is reached) do not end it; retransmitted or extra bytes
 * stay with their operator because the cut waits for silence, so errors do
 * not accumulate from one operator to the next (the drift of volume-only
 * segmentation, pulse.txt Figure 31).
 *
 * Extensions, all needed by the streaming form:
 *  - state lives across poll windows: a segment that is still open at the
 *    end of the data keeps its state; it is closed by silence once the
 *    NIC's data horizon is δ past its last epoch;
 *  - back-to-back operators: when the next operator of the communicator
 *    has been called (at the latest within the epoch of the bytes after
 *    the gap) and the volume is reached, an idle gap of short_gap_ns (a
 *    few epochs) also ends the segment: NCCL runs a communicator's
 *    operators in order, so that traffic is the next one's;
 *  - live, bytes after the last drain of the interception (less its
 *    publication lag) wait
 *    while the operator's next call is not known: an operator called
 *    after the drain may own them (assoc_calls_known);
 *  - epochs from before the operator's call (less a clock slack) cannot be
 *    its traffic: they are counted as unmatched and dropped;
 *  - an operator that lost NIC data (poll gap) cannot reach its volume: its
 *    segment ends at the first silence of δ whatever the volume;
 *  - a small operator (under AS_SMALL_SPLIT expected bytes, e.g. the loss
 *    all-reduce) followed WITHOUT any gap by the next, already called,
 *    operator (possibly in the same epoch): the volume alone decides, at
 *    twice the expected volume plus AS_SMALL_CAP (headers), and the rest of
 *    a shared epoch stays for the next operator. Only for small operators:
 *    for large ones a volume cut would move retransmitted bytes to the next
 *    operator, which then reaches its volume early and cuts early too, the
 *    drift of Figure 31; large operators run back to back without any idle
 *    epoch are merged (a limit: no gap, no boundary).
 */

#include <stdlib.h>
#include <string.h>

#include "assoc_int.h"

uint32_t as_alg1(const struct as_ev *ev, uint32_t n, uint64_t size, uint64_t delta_ns,
		 uint64_t *starts, uint64_t *ends, uint32_t max)
{
	uint64_t last_t = 0, tmp = 0;
	uint32_t ns = 0, ne = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = ev[i].t;
		if (t - last_t >= delta_ns && tmp >= size) {
			if (ne < max)
				ends[ne] = last_t;
			ne++;
			tmp = 0;
		}
		if (tmp == 0) {
			if (ns < max)
				starts[ns] = t;
			ns++;
		}
		last_t = t;
		tmp += ev[i].b;
	}
	(void)ne;
	return ns < max ? ns : max;
}

uint64_t as_call_floor(const struct assoc *a, const struct as_op *op)
{
	uint64_t slack = a->delta_ns / 2;
	return op->call_ns > slack ? op->call_ns - slack : 0;
}

void as_take(struct assoc *a, struct as_op *op, struct as_op_peer *p, const struct as_ev *e)
{
	(void)a;
	struct as_seg *s = &p->seg;
	if (!s->open) {
		s->open = 1;
		s->start = s->last = e->t;
		op->peers_with_bytes++;
	}
	/* an epoch out of order (the clock mapping stepped back between two
	 * windows) moves neither end inward */
	if (e->t < s->start)
		s->start = e->t;
	if (e->t > s->last)
		s->last = e->t;
	s->tmp += e->b;
	s->epochs++;
	if (e->b > s->peak)
		s->peak = e->b;
	if (p->extra)
		return;
	if (op->nut == UINT32_MAX)
		return;
	if (op->nut == op->utcap) {
		uint32_t nc = op->utcap ? op->utcap * 2 : 64;
		uint64_t *u = realloc(op->ut, (size_t)nc * sizeof *u);
		if (!u) {
			/* no memory: the union falls back to the sum of the
			 * peers' epochs (nut no longer matches) */
			op->nut = UINT32_MAX;
			return;
		}
		op->ut = u;
		op->utcap = nc;
	}
	op->ut[op->nut++] = e->t;
}

static int reached(const struct as_op_peer *p, int32_t nranks)
{
	return p->expected > 0 && p->seg.tmp + as_tolerance(p->expected, nranks) >= p->expected;
}

int as_segment_peer(struct assoc *a, const struct as_rank *rs, struct as_op *op,
		    struct as_op_peer *p, struct as_buf *b, uint64_t horizon, uint64_t next_call)
{
	struct as_seg *s = &p->seg;
	if (s->closed)
		return 1;
	uint64_t floor = as_call_floor(a, op);
	uint64_t ep = a->epoch_ns;
	while (b->head < b->n) {
		const struct as_ev *e = &b->v[b->head];
		if (!s->open) {
			if (e->t + ep < floor) {
				/* before the call: not this operator's */
				a->st.unmatched_segments++;
				b->head++;
				continue;
			}
		} else {
			/* silent time between; none for an epoch at or before the
			 * last one (the clock mapping stepped back between two
			 * windows, within its error bound) */
			uint64_t idle = e->t > s->last + ep ? e->t - (s->last + ep) : 0;
			uint64_t since = e->t > s->last ? e->t - s->last : 0;
			int ok = reached(p, rs->nranks);
			/* an epoch is stamped with its start: bytes in the epoch
			 * the next call falls in, after a gap, are the next
			 * operator's (a rank that calls late, its GPU waiting,
			 * sends within the epoch of its call) */
			if ((ok && since >= a->delta_ns) ||
			    (ok && idle >= a->short_gap_ns && next_call < e->t + ep) ||
			    (op->tainted && since >= a->delta_ns)) {
				s->closed = 1;
				return 1;
			}
		}
		/* the next operator may have been called after the last
		 * drain of the calls (assoc_calls_known): its bytes wait */
		if (a->calls_until && e->t > a->calls_until && next_call == UINT64_MAX && !a->finishing)
			return 0;
		/* a small operator (loss, metadata) followed without a gap by
		 * the next one, possibly inside the same epoch: its volume
		 * decides (at most AS_SMALL_CAP more than expected is its own)
		 * and the rest of the epoch stays for the next operator */
		if (p->expected > 0 && p->expected < AS_SMALL_SPLIT && next_call <= e->t + ep &&
		    !op->tainted) {
			uint64_t cap = 2 * p->expected + AS_SMALL_CAP;
			if (s->open && reached(p, rs->nranks) && s->tmp + e->b > cap) {
				s->closed = 1;
				return 1;
			}
			if (s->tmp + e->b > cap) {
				struct as_ev part = { e->t, cap > s->tmp ? cap - s->tmp : 0 };
				if (part.b) {
					as_take(a, op, p, &part);
					b->v[b->head].b -= part.b;
				}
				s->closed = 1;
				return 1;
			}
		}
		as_take(a, op, p, e);
		b->head++;
	}
	/* no more data: closed by silence once the horizon is far enough */
	if (s->open && horizon >= s->last + ep) {
		uint64_t idle = horizon - (s->last + ep);
		int ok = reached(p, rs->nranks);
		if (((ok || op->tainted) && horizon - s->last >= a->delta_ns) ||
		    (ok && idle >= a->short_gap_ns && next_call <= horizon)) {
			s->closed = 1;
			return 1;
		}
	}
	return 0;
}
