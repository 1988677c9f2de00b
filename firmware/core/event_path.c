/* The TX event handler: the only code on the NIC's per-event path.
 * No division, no floating point, no allocation beyond popping a pool block
 * when an epoch closes.
 *
 * The common case (a known flow, another event in its current epoch, sane
 * input) runs inline in tx_fast. A new epoch and a new flow go to helpers
 * that take over what tx_fast established; rare input (clipped counters,
 * late or bad events, a shut gate) goes to tx_slow, which checks everything. */
#include "fw_internal.h"

/* Announces this thread in the current generation. This seq_cst exchange and
 * load, against fw_quiesce's seq_cst store and loads, form a Dekker handshake:
 * either the mailbox thread sees this thread inside the old window and waits,
 * or this thread sees the new generation. (A relaxed store plus a seq_cst
 * fence is two instructions cheaper on RISC-V, but ThreadSanitizer cannot
 * model fences, and the stress test must check the code that ships.) */
static inline uint32_t thread_enter(struct pulse_fw *fw, struct fw_thread *t)
{
	uint32_t g = atomic_load_explicit(&fw->gen, memory_order_relaxed);
	for (;;) {
		atomic_exchange_explicit(&t->active, g | FW_GEN_ACTIVE, memory_order_seq_cst);
		uint32_t now = atomic_load_explicit(&fw->gen, memory_order_seq_cst);
		if (__builtin_expect(now == g, 1))
			return g;
		g = now;
	}
}

static inline void thread_leave(struct fw_thread *t)
{
	atomic_store_explicit(&t->active, 0, memory_order_release);
}

static inline uint64_t ev_pkts_inc(const struct pulse_tx_event *ev)
{
	return (uint64_t)ev->sent_pkts << 32 | 1u;
}

static inline void side_count_event(struct fw_side *s, const struct pulse_tx_event *ev)
{
	/* one writer (this flow's handler); relaxed so STATS may read it live */
	atomic_store_explicit(&s->ev_pkts,
			      atomic_load_explicit(&s->ev_pkts, memory_order_relaxed) + ev_pkts_inc(ev),
			      memory_order_relaxed);
}

static inline uint32_t epoch_of(const struct pulse_fw *fw, uint32_t delta)
{
	return (uint32_t)(((uint64_t)delta * fw->cfg.recip) >> fw->cfg.shift);
}

static uint32_t clipped_units(const struct pulse_fw *fw, const struct pulse_tx_event *ev)
{
	/* The 16-bit counter saturated: estimate from packets, never below
	 * what the counter did show. */
	uint32_t est = (uint32_t)ev->sent_pkts * fw->cfg.clip_units_per_pkt; /* < 2^32 */
	return est < PULSE_SENT_UNITS_CLIPPED ? PULSE_SENT_UNITS_CLIPPED : est;
}

/* Adds units to the open record, closing full records on the way: the
 * epoch continues in another record (advance 0), so a count never overflows
 * its 24 bits. Only clipped estimates or line rate on long epochs get here. */
static __attribute__((noinline)) void side_fill(struct pulse_fw *fw, struct fw_thread *t,
					       struct fw_side *s, uint32_t open, uint32_t units)
{
	while (units > PULSE_MB_REC_MAX_UNITS - open) {
		atomic_store_explicit(&s->open_units, PULSE_MB_REC_MAX_UNITS, memory_order_relaxed);
		fw_side_flush(fw, t->ctr, s);
		units -= PULSE_MB_REC_MAX_UNITS - open;
		open = 0;
	}
	atomic_store_explicit(&s->open_units, open + units, memory_order_relaxed);
}

/* Adds units in `epoch` to a side: a new epoch, a reordered event, or a full
 * open record. */
static inline void side_add(struct pulse_fw *fw, struct fw_thread *t, struct fw_side *s,
			    uint32_t epoch, uint32_t units)
{
	uint32_t open = atomic_load_explicit(&s->open_units, memory_order_relaxed);
	if (epoch < s->open_epoch) {
		/* Stamped before the flow's current epoch (reordered across
		 * threads or clock noise): keep the bytes in the current epoch. */
		fw_ctr_add(&t->ctr[PULSE_STAT_REORDERED_EVENTS], 1);
		epoch = s->open_epoch;
	}
	if (epoch != s->open_epoch) {
		fw_side_flush(fw, t->ctr, s);
		s->open_epoch = epoch;
		open = 0;
	}
	if (__builtin_expect(units > PULSE_MB_REC_MAX_UNITS - open, 0))
		side_fill(fw, t, s, open, units);
	else
		atomic_store_explicit(&s->open_units, open + units, memory_order_relaxed);
}

static __attribute__((noinline)) void tx_slow(struct pulse_fw *fw, struct fw_thread *t, uint32_t g,
					      const struct pulse_tx_event *ev)
{
	uint32_t qpn = ev->qpn;
	if (qpn - 1u >= PULSE_QPN_RESERVED_HIGH - 1u) { /* 0, 0xFFFFFF, or wider than 24 bits */
		fw_ctr_add(&t->ctr[PULSE_STAT_DROP_BAD_QPN], 1);
		return;
	}
	uint32_t units = ev->sent_32b;
	if (units == 0) {
		fw_ctr_add(&t->ctr[PULSE_STAT_ZERO_EVENTS], 1);
		return;
	}
	/* Before anything reads the configuration: a reset may be rewriting it. */
	if (g & FW_GEN_CLOSED) {
		atomic_fetch_add_explicit(&fw->drops_paused, 1, memory_order_relaxed);
		return;
	}
	if (units == PULSE_SENT_UNITS_CLIPPED) {
		fw_ctr_add(&t->ctr[PULSE_STAT_CLIPPED_EVENTS], 1);
		units = clipped_units(fw, ev);
	}
	uint32_t side_idx = FW_GEN_SIDE(g);
	uint32_t delta = ev->ts_ns - fw->win_start_lo[side_idx];
	if (delta >= fw->cfg.max_delta) {
		if (0u - delta > FW_LATE_LIMIT_NS) {
			fw_ctr_add(&t->ctr[PULSE_STAT_DROP_TS_RANGE], 1);
			return;
		}
		/* Stamped shortly before this window opened: the previous window
		 * is already closed, so the bytes go to this one's first epoch. */
		fw_ctr_add(&t->ctr[PULSE_STAT_LATE_EVENTS], 1);
		delta = 0;
	}
	struct fw_flow *f;
	uint32_t slot = atomic_load_explicit(&fw->qpn_table[qpn], memory_order_relaxed);
	if (slot != 0) {
		f = &fw->flows[slot - 1u];
	} else {
		f = fw_flow_create(fw, t, qpn);
		if (!f)
			return;
	}
	struct fw_side *s = &f->side[side_idx];
	side_add(fw, t, s, epoch_of(fw, delta), units);
	side_count_event(s, ev);
}

/* A known flow whose event opens a new epoch, comes out of order, or fills
 * its open record. Everything the fast path checked still holds. */
static inline void tx_known_flow(struct pulse_fw *fw, struct fw_thread *t,
						   struct fw_side *s, uint32_t epoch,
						   const struct pulse_tx_event *ev)
{
	side_add(fw, t, s, epoch, ev->sent_32b);
	side_count_event(s, ev);
}

/* The first event of a QP (or of a QP that aging released). */
static inline void tx_new_flow(struct pulse_fw *fw, struct fw_thread *t,
						 uint32_t side, uint32_t epoch,
						 const struct pulse_tx_event *ev)
{
	if (ev->qpn - 1u >= PULSE_QPN_RESERVED_HIGH - 1u) { /* 0 or 0xFFFFFF */
		fw_ctr_add(&t->ctr[PULSE_STAT_DROP_BAD_QPN], 1);
		return;
	}
	struct fw_flow *f = fw_flow_create(fw, t, ev->qpn);
	if (!f)
		return;
	struct fw_side *s = &f->side[side];
	side_add(fw, t, s, epoch, ev->sent_32b);
	side_count_event(s, ev);
}

enum tx_next { TX_DONE, TX_KNOWN_FLOW, TX_NEW_FLOW, TX_SLOW };

/* The common case (a known flow, another event in its current epoch, sane
 * input), inline and without calls. Anything else is left untouched and
 * named in the return value, for tx_rest. */
static inline enum tx_next tx_fast(struct pulse_fw *fw, uint32_t g, const struct pulse_tx_event *ev,
				    uint32_t *slot_out)
{
	uint32_t qpn = ev->qpn, units = ev->sent_32b;
	/* Wider than 24 bits, zero or clipped byte count, gate shut. QPNs 0 and
	 * 0xFFFFFF never get a flow, so their table entries stay 0 and
	 * tx_new_flow rejects them. */
	if ((qpn >> PULSE_QPN_BITS) || units - 1u >= PULSE_SENT_UNITS_CLIPPED - 1u ||
	    (g & FW_GEN_CLOSED))
		return TX_SLOW;
	uint32_t side = FW_GEN_SIDE(g);
	uint32_t delta = ev->ts_ns - fw->win_start_lo[side];
	if (delta >= fw->cfg.max_delta)
		return TX_SLOW; /* late, or out of range */
	/* Consecutive events of one QP are ordered by the platform (DOCA
	 * serialises a flow), which orders this load after the slot's creation. */
	uint32_t slot = atomic_load_explicit(&fw->qpn_table[qpn], memory_order_relaxed);
	*slot_out = slot; /* tx_rest must not look again: aging may clear it */
	if (slot == 0)
		return TX_NEW_FLOW;
	struct fw_side *s = &fw->flows[slot - 1u].side[side];
	uint32_t sum = atomic_load_explicit(&s->open_units, memory_order_relaxed) + units;
	if (epoch_of(fw, delta) != s->open_epoch || sum > PULSE_MB_REC_MAX_UNITS)
		return TX_KNOWN_FLOW;
	atomic_store_explicit(&s->open_units, sum, memory_order_relaxed);
	side_count_event(s, ev);
	return TX_DONE;
}

/* Finishes an event tx_fast did not, using what it established. */
static inline void tx_rest(struct pulse_fw *fw, struct fw_thread *t, uint32_t g,
			   const struct pulse_tx_event *ev, enum tx_next next, uint32_t slot)
{
	if (next == TX_SLOW) {
		/* The gate may be shut: touch nothing of the configuration here. */
		tx_slow(fw, t, g, ev);
		return;
	}
	uint32_t side = FW_GEN_SIDE(g);
	uint32_t epoch = epoch_of(fw, ev->ts_ns - fw->win_start_lo[side]);
	if (next == TX_KNOWN_FLOW)
		tx_known_flow(fw, t, &fw->flows[slot - 1u].side[side], epoch, ev);
	else
		tx_new_flow(fw, t, side, epoch, ev);
}

static __attribute__((noinline)) void tx_rest_leave(struct pulse_fw *fw, struct fw_thread *t,
						    uint32_t g, const struct pulse_tx_event *ev,
						    enum tx_next next, uint32_t slot)
{
	tx_rest(fw, t, g, ev, next, slot);
	thread_leave(t);
}

static __attribute__((noinline)) void count_bad_thread(struct pulse_fw *fw)
{
	atomic_fetch_add_explicit(&fw->drops_bad_thread, 1, memory_order_relaxed);
}

static inline struct fw_thread *thread_state(struct pulse_fw *fw, uint32_t thread)
{
	if (__builtin_expect(thread >= fw->max_threads, 0)) {
		count_bad_thread(fw);
		return 0;
	}
	return &fw->threads[thread];
}

void pulse_fw_on_tx(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *ev)
{
	struct fw_thread *t = thread_state(fw, thread);
	if (!t)
		return;
	uint32_t g = thread_enter(fw, t);
	uint32_t slot = 0;
	enum tx_next next = tx_fast(fw, g, ev, &slot);
	if (__builtin_expect(next == TX_DONE, 1)) {
		thread_leave(t);
		return;
	}
	tx_rest_leave(fw, t, g, ev, next, slot); /* a tail call: the fast path keeps no frame */
}

void pulse_fw_on_tx_burst(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *evs,
			  uint32_t n)
{
	if (n == 0)
		return;
	struct fw_thread *t = thread_state(fw, thread);
	if (!t) {
		if (n > 1)
			atomic_fetch_add_explicit(&fw->drops_bad_thread, n - 1u, memory_order_relaxed);
		return;
	}
	uint32_t g = thread_enter(fw, t);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = 0;
		enum tx_next next = tx_fast(fw, g, &evs[i], &slot);
		if (next != TX_DONE)
			tx_rest(fw, t, g, &evs[i], next, slot);
	}
	thread_leave(t);
}
