/* The TX event handler: the only code on the NIC's per-event path.
 * No division, no floating point, no allocation beyond popping a pool block
 * when an epoch closes.
 *
 * The common case (a known flow, another event in its open epoch, sane
 * input) runs inline in pulse_fw_on_tx: swap the thread's busy mark in, look
 * the QPN up, check the timestamp against the open epoch's time range, add,
 * store the thread's window tag back. Everything else (a new epoch, a new
 * flow, a reordered, late, clipped, zero or bad event, a shut gate) goes to
 * tx_slow, which checks everything from scratch. */
#include "fw_internal.h"

static inline uint64_t ev_pkts_inc(const struct pulse_tx_event *ev)
{
	return (uint64_t)ev->sent_pkts << 32 | 1u;
}

/* For delta < max_delta < 2^31, so the int32_t cast changes nothing (and
 * spares RISC-V a zero-extension). */
static inline uint32_t epoch_of(const struct pulse_fw *fw, uint32_t delta)
{
	return (uint32_t)(((uint64_t)(int64_t)(int32_t)delta * fw->cfg.recip) >> fw->cfg.shift);
}

static uint32_t clipped_units(const struct pulse_fw *fw, const struct pulse_tx_event *ev)
{
	/* The 16-bit counter saturated: estimate from packets, never below
	 * what the counter did show. */
	uint32_t est = (uint32_t)ev->sent_pkts * fw->cfg.clip_units_per_pkt; /* < 2^32 */
	return est < PULSE_SENT_UNITS_CLIPPED ? PULSE_SENT_UNITS_CLIPPED : est;
}

/* Adds units in `epoch` to a side: a new epoch, a reordered event, or the
 * first event of the flow in this window. Leaves the side's open record
 * covering the NIC times of its epoch (clipped to the window's accepted
 * range), so the next events of that epoch take the fast path. */
static inline __attribute__((always_inline)) void side_add(struct pulse_fw *fw, struct fw_thread *t, struct fw_side *s, uint32_t side,
		     uint32_t epoch, uint32_t units)
{
	if (epoch < s->open_epoch) {
		/* Stamped before the flow's current epoch (reordered across
		 * threads or clock noise): keep the bytes in the current epoch. */
		fw_ctr_add(&t->ctr[PULSE_STAT_REORDERED_EVENTS], 1);
		epoch = s->open_epoch;
	}
	if (epoch != s->open_epoch) {
		fw_side_flush(fw, t->ctr, s);
		s->open_epoch = epoch;
	}
	fw_side_add64(&s->open_units, units);
	/* epoch * epoch_ns <= delta < max_delta: no overflow, the length > 0 */
	uint32_t first = epoch * fw->cfg.epoch_ns;
	uint32_t len = fw->cfg.max_delta - first;
	s->open_ts = fw->win_start_lo[side] + first;
	s->open_len = len < fw->cfg.epoch_ns ? len : fw->cfg.epoch_ns;
}

/* Everything but the fast path's case, for a thread that holds `tag`. */
static void tx_slow(struct pulse_fw *fw, struct fw_thread *t, fw_tag_t tag,
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
	if (tag == FW_TAG_CLOSED) {
		atomic_fetch_add_explicit(&fw->drops_paused, 1, memory_order_relaxed);
		return;
	}
	if (units == PULSE_SENT_UNITS_CLIPPED) {
		fw_ctr_add(&t->ctr[PULSE_STAT_CLIPPED_EVENTS], 1);
		units = clipped_units(fw, ev);
	}
	uint32_t side = fw_tag_side(tag);
	uint32_t delta = ev->ts_ns - fw->win_start_lo[side];
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
	/* Consecutive events of one QP are ordered by the platform (DOCA
	 * serialises a flow), which orders this load after the slot's creation. */
	struct fw_flow *f;
	uint32_t slot = atomic_load_explicit(&fw->qpn_table[qpn], memory_order_relaxed);
	if (slot != 0) {
		f = &fw->flows[slot - 1u];
	} else {
		f = fw_flow_create(fw, t, qpn);
		if (!f)
			return;
	}
	struct fw_side *s = &f->side[side];
	side_add(fw, t, s, side, epoch_of(fw, delta), units);
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
}

/* The fast path's checks: a thread in an open window, a QPN of 24 bits, a
 * plausible byte count. Then the side of the flow the QPN table names (the
 * dummy flow's for entry 0). tag is negative for an open window: busy marks
 * and the closed tag are not. */
static inline bool fast_check(fw_tag_t tag, const struct pulse_tx_event *ev, int32_t *qpn,
			      uint32_t *units)
{
	/* QPNs read as signed: below 2^24 the same number, and RISC-V indexes
	 * with it as loaded, without a zero-extension. */
	int32_t q = *(const int32_t *)(const void *)&ev->qpn;
	/* Read as signed, 0 and 0xFFFF (clipped) are both <= 0; so are counts
	 * of 1 MiB and more, which the slow path takes as they are. (A signed
	 * and an unsigned type may alias.) */
	int32_t u = *(const int16_t *)(const void *)&ev->sent_32b;
	*qpn = q;
	*units = (uint32_t)u;
	return __builtin_expect(tag < 0 && ((uint32_t)q >> PULSE_QPN_BITS) == 0 && u > 0, 1);
}

static inline struct fw_side *fast_side(const struct pulse_fw *fw, fw_tag_t tag, int32_t qpn)
{
	/* QPNs 0 and 0xFFFFFF never get a flow: their entries stay 0, which
	 * reaches the dummy flow, never open. */
	uint32_t e = atomic_load_explicit(&fw->qpn_table[qpn], memory_order_relaxed);
	uintptr_t base = *(const uintptr_t *)(const void *)((const char *)fw->side_base + 16 + tag);
	return (struct fw_side *)(base + (uintptr_t)e * sizeof(struct fw_flow));
}

static inline bool fast_in_epoch(const struct fw_side *s, const struct pulse_tx_event *ev)
{
	return __builtin_expect(ev->ts_ns - s->open_ts < s->open_len, 1);
}

static inline void fast_add(struct fw_side *s, uint32_t units, const struct pulse_tx_event *ev)
{
	fw_side_add64(&s->open_units, units);
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
}

/* A new flow: an event that passed fast_check and found table entry 0. */
static inline void tx_new_flow(struct pulse_fw *fw, struct fw_thread *t, fw_tag_t tag,
			       const struct pulse_tx_event *ev, uint32_t units)
{
	uint32_t side = fw_tag_side(tag);
	uint32_t delta = ev->ts_ns - fw->win_start_lo[side];
	uint32_t qpn = ev->qpn;
	if (__builtin_expect(delta >= fw->cfg.max_delta ||
				     qpn - 1u >= PULSE_QPN_RESERVED_HIGH - 1u, /* 0, 0xFFFFFF */
			     0)) {
		tx_slow(fw, t, tag, ev);
		return;
	}
	struct fw_flow *f = fw_flow_create(fw, t, qpn);
	if (!f)
		return;
	struct fw_side *s = &f->side[side];
	side_add(fw, t, s, side, epoch_of(fw, delta), units);
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
}

/* A known flow's event that passed fast_check but is outside the flow's open
 * epoch: a new epoch, the flow's first event in this window, or a
 * reordered, late or out-of-range timestamp (those two go to tx_slow). */
static inline void tx_new_epoch(struct pulse_fw *fw, struct fw_thread *t, fw_tag_t tag,
				const struct pulse_tx_event *ev, struct fw_side *s, uint32_t units)
{
	uint32_t side = fw_tag_side(tag);
	uint32_t delta = ev->ts_ns - fw->win_start_lo[side];
	if (__builtin_expect(delta >= fw->cfg.max_delta, 0)) {
		tx_slow(fw, t, tag, ev);
		return;
	}
	side_add(fw, t, s, side, epoch_of(fw, delta), units);
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
}

/* Table entry 0 reaches the dummy flow_mem[0], the only one below flows[0]. */
static inline bool side_is_dummy(const struct pulse_fw *fw, const struct fw_side *s)
{
	return (uintptr_t)s < (uintptr_t)fw->flows;
}

/* A thread whose swap returned a busy mark: another caller is inside an
 * event with the same thread number (a platform bug). Drop, and leave the
 * tag word to the caller that holds it. */
static __attribute__((noinline)) void thread_clash(struct pulse_fw *fw, uint32_t n)
{
	atomic_fetch_add_explicit(&fw->drops_bad_thread, n, memory_order_relaxed);
}

/* Leaves in the window the mailbox wants: a thread that is never idle still
 * moves on (fw_quiesce). */
static inline void thread_leave_wanted(struct pulse_fw *fw, _Atomic fw_tag_t *tw)
{
	atomic_store_explicit(tw, atomic_load_explicit(&fw->want_tag, memory_order_acquire),
			      memory_order_release);
}

static __attribute__((noinline)) void tx_slow_leave(struct pulse_fw *fw, uint32_t thread,
						    const struct pulse_tx_event *ev, fw_tag_t tag)
{
	if (FW_TAG_IS_BUSY(tag)) {
		thread_clash(fw, 1);
		return;
	}
	tx_slow(fw, &fw->threads[(int32_t)thread], tag, ev);
	thread_leave_wanted(fw, fw_thread_tag(fw, thread));
}

static __attribute__((noinline)) void tx_new_flow_general_leave(struct pulse_fw *fw,
								uint32_t thread, const struct pulse_tx_event *ev,
								fw_tag_t tag,
								uint32_t units)
{
	tx_new_flow(fw, &fw->threads[(int32_t)thread], tag, ev, units);
	thread_leave_wanted(fw, fw_thread_tag(fw, thread));
}

/* A new flow, the common case without calls: a sane timestamp and QPN, a
 * slot popped from the free stack. The rest is a tail call. */
static __attribute__((noinline)) void tx_new_flow_leave(struct pulse_fw *fw, uint32_t thread,
							const struct pulse_tx_event *ev,
							fw_tag_t tag,
							int32_t units)
{
	uint32_t side = fw_tag_side(tag);
	uint32_t ws = fw->win_start_lo[side];
	uint32_t delta = ev->ts_ns - ws;
	uint32_t qpn = ev->qpn;
	if (__builtin_expect(delta >= fw->cfg.max_delta ||
				     qpn - 1u >= PULSE_QPN_RESERVED_HIGH - 1u, /* 0, 0xFFFFFF */
			     0))
		goto general;
	/* fw_stack_pop, inline */
	_Atomic uint64_t *head = &fw->free_flows.head;
	uint64_t old = atomic_load_explicit(head, memory_order_acquire), next;
	uint32_t top;
	do {
		top = (uint32_t)old;
		if (top == 0)
			goto general; /* no slot: counted there */
		next = ((old >> 32) + 1u) << 32 |
		       atomic_load_explicit(&fw->flow_next[top - 1u], memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(head, &old, next, memory_order_acquire,
							memory_order_acquire));
	struct fw_flow *f = fw_flow_publish(fw, &fw->threads[(int32_t)thread], top - 1u, qpn);
	/* side_add on a clear side */
	struct fw_side *s = &f->side[side];
	uint32_t epoch = epoch_of(fw, delta);
	s->open_epoch = epoch;
	/* units > 0: sign-extending is free on RISC-V */
	atomic_store_explicit(&s->open_units, (uint64_t)(int64_t)units, memory_order_relaxed);
	uint32_t first = epoch * fw->cfg.epoch_ns;
	uint32_t len = fw->cfg.max_delta - first;
	s->open_ts = ws + first;
	s->open_len = len < fw->cfg.epoch_ns ? len : fw->cfg.epoch_ns;
	atomic_store_explicit(&s->ev_pkts, ev_pkts_inc(ev), memory_order_relaxed);
	thread_leave_wanted(fw, fw_thread_tag(fw, (size_t)(int32_t)thread));
	return;
general:
	tx_new_flow_general_leave(fw, thread, ev, tag, (uint32_t)units);
}

static __attribute__((noinline)) void tx_new_epoch_leave(struct pulse_fw *fw, uint32_t thread,
							 const struct pulse_tx_event *ev,
							 fw_tag_t tag,
							 struct fw_side *s, uint32_t units)
{
	tx_new_epoch(fw, &fw->threads[(int32_t)thread], tag, ev, s, units);
	thread_leave_wanted(fw, fw_thread_tag(fw, thread));
}

/* The common new epoch, after tx_epoch_leave's checks: closes the open
 * record into the tail block (taking a new block first when `take` is set
 * and the tail is full) and opens `epoch` with this event's units. Returns
 * false, having changed nothing, if the pool is empty. */
static inline __attribute__((always_inline)) bool epoch_next(struct pulse_fw *fw,
							      struct fw_side *s, uint32_t ws,
							      uint32_t epoch, uint64_t open,
							      uint32_t advance, uint32_t fill,
							      int32_t units, bool take)
{
	uint32_t tail = s->tail;
	if (take) {
		/* side_append's new block */
		uint32_t b = fw_pool_get(fw);
		if (b == FW_NONE)
			return false;
		if (tail == FW_NONE)
			s->head = b;
		else
			atomic_store_explicit(fw_block_link(fw, tail), b, memory_order_relaxed);
		s->tail = tail = b;
		fill = 0;
	}
	fw_block_recs(fw, tail)[fill] = pulse_mb_rec_make(advance, (uint32_t)open);
	s->tail_fill = fill + 1u;
	s->nrec++;
	s->last_epoch = s->open_epoch;
	fw_ctr_add(&s->units, open);
	/* units > 0: sign-extending is free on RISC-V */
	atomic_store_explicit(&s->open_units, (uint64_t)(int64_t)units, memory_order_relaxed);
	s->open_epoch = epoch;
	uint32_t first = epoch * fw->cfg.epoch_ns;
	uint32_t len = fw->cfg.max_delta - first;
	s->open_ts = ws + first;
	s->open_len = len < fw->cfg.epoch_ns ? len : fw->cfg.epoch_ns;
	return true;
}

/* tx_epoch_leave's other cases: the tail block is full (the same as there,
 * with a new block first), or anything else (tx_new_epoch). */
static __attribute__((noinline)) void tx_epoch_more_leave(struct pulse_fw *fw, uint32_t thread,
							  const struct pulse_tx_event *ev,
							  fw_tag_t tag,
							  struct fw_side *s, int32_t units)
{
	uint32_t ws = fw->win_start_lo[fw_tag_side(tag)];
	uint32_t delta = ev->ts_ns - ws;
	uint32_t epoch = epoch_of(fw, delta);
	uint32_t cur = s->open_epoch;
	uint64_t open = atomic_load_explicit(&s->open_units, memory_order_relaxed);
	uint32_t advance = cur - s->last_epoch;
	if (delta >= fw->cfg.max_delta || epoch <= cur || open - 1u >= PULSE_MB_REC_MAX_UNITS ||
	    advance > PULSE_MB_REC_MAX_ADVANCE ||
	    !epoch_next(fw, s, ws, epoch, open, advance, s->tail_fill, units, true)) {
		tx_new_epoch_leave(fw, thread, ev, tag, s, (uint32_t)units);
		return;
	}
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
	thread_leave_wanted(fw, fw_thread_tag(fw, (size_t)(int32_t)thread));
}

/* The fast path's continuation when the event is outside its flow's open
 * epoch. The common case, the flow's next epoch with its open record fitting
 * the tail block as one record, is done here without calls (a leaf, no stack
 * frame); the others are tail calls. */
static __attribute__((noinline)) void tx_epoch_leave(struct pulse_fw *fw, uint32_t thread,
						     const struct pulse_tx_event *ev, fw_tag_t tag,
						     struct fw_side *s, int32_t units)
{
	uint32_t side = fw_tag_side(tag);
	if (side_is_dummy(fw, s)) {
		tx_new_flow_leave(fw, thread, ev, tag, units);
		return;
	}
	uint32_t ws = fw->win_start_lo[side];
	uint32_t delta = ev->ts_ns - ws;
	uint32_t epoch = epoch_of(fw, delta);
	uint32_t cur = s->open_epoch;
	uint64_t open = atomic_load_explicit(&s->open_units, memory_order_relaxed);
	uint32_t advance = cur - s->last_epoch;
	uint32_t fill = s->tail_fill;
	if (__builtin_expect(delta >= fw->cfg.max_delta || epoch <= cur || open - 1u >=
				     PULSE_MB_REC_MAX_UNITS || advance > PULSE_MB_REC_MAX_ADVANCE ||
				     fill >= PULSE_FW_RECORDS_PER_BLOCK,
			     0)) {
		tx_epoch_more_leave(fw, thread, ev, tag, s, units);
		return;
	}
	epoch_next(fw, s, ws, epoch, open, advance, fill, units, false);
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
	thread_leave_wanted(fw, fw_thread_tag(fw, (size_t)(int32_t)thread));
}

static __attribute__((noinline)) void count_bad_thread(struct pulse_fw *fw, uint32_t n)
{
	atomic_fetch_add_explicit(&fw->drops_bad_thread, n, memory_order_relaxed);
}

void pulse_fw_on_tx(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *ev)
{
	if (__builtin_expect(thread >= fw->max_threads, 0)) {
		count_bad_thread(fw, 1);
		return;
	}
	/* thread < max_threads <= 256: as int32_t it is the same number, and
	 * RISC-V needs no zero-extension for it. The tag line's offset is also
	 * the busy mark. */
	fw_tag_t busy = FW_TAG_BUSY((int32_t)thread);
	_Atomic fw_tag_t *tw = (_Atomic fw_tag_t *)(void *)((char *)fw - busy);
	fw_tag_t tag = atomic_exchange_explicit(tw, busy, memory_order_acquire);
	int32_t qpn;
	uint32_t units;
	if (!fast_check(tag, ev, &qpn, &units)) {
		tx_slow_leave(fw, thread, ev, tag); /* tail calls */
		return;
	}
	struct fw_side *s = fast_side(fw, tag, qpn);
	if (!fast_in_epoch(s, ev)) {
		tx_epoch_leave(fw, thread, ev, tag, s, (int32_t)units);
		return;
	}
	fast_add(s, units, ev);
	atomic_store_explicit(tw, tag, memory_order_release);
}

/* The burst's rare cases, out of line so the loop stays small. */
static __attribute__((noinline)) void burst_slow(struct pulse_fw *fw, struct fw_thread *t,
						 fw_tag_t tag, const struct pulse_tx_event *ev)
{
	tx_slow(fw, t, tag, ev);
}

static __attribute__((noinline)) void burst_new_flow(struct pulse_fw *fw, struct fw_thread *t,
						     fw_tag_t tag, const struct pulse_tx_event *ev,
						     uint32_t units)
{
	tx_new_flow(fw, t, tag, ev, units);
}

static __attribute__((noinline)) void burst_new_epoch(struct pulse_fw *fw, struct fw_thread *t,
						      fw_tag_t tag, const struct pulse_tx_event *ev,
						      struct fw_side *s, uint32_t units)
{
	tx_new_epoch(fw, t, tag, ev, s, units);
}

/* A known flow's event outside its open epoch, in a burst: the common case
 * (the flow's next epoch, its open record one record in the tail block, a
 * new block taken when the tail is full) inline, as tx_epoch_leave and
 * tx_epoch_more_leave do it; anything else through tx_new_epoch. */
static inline __attribute__((always_inline)) void burst_epoch(struct pulse_fw *fw,
							       struct fw_thread *t, fw_tag_t tag,
							       const struct pulse_tx_event *ev,
							       struct fw_side *s, uint32_t units)
{
	uint32_t ws = fw->win_start_lo[fw_tag_side(tag)];
	uint32_t delta = ev->ts_ns - ws;
	uint32_t epoch = epoch_of(fw, delta);
	uint32_t cur = s->open_epoch;
	uint64_t open = atomic_load_explicit(&s->open_units, memory_order_relaxed);
	uint32_t advance = cur - s->last_epoch;
	uint32_t fill = s->tail_fill;
	if (__builtin_expect(delta >= fw->cfg.max_delta || epoch <= cur ||
				     open - 1u >= PULSE_MB_REC_MAX_UNITS ||
				     advance > PULSE_MB_REC_MAX_ADVANCE,
			     0)) {
		burst_new_epoch(fw, t, tag, ev, s, units);
		return;
	}
	/* units came through fast_check: 0 < units < 2^15 */
	if (__builtin_expect(fill < PULSE_FW_RECORDS_PER_BLOCK, 1))
		epoch_next(fw, s, ws, epoch, open, advance, fill, (int32_t)units, false);
	else if (!epoch_next(fw, s, ws, epoch, open, advance, fill, (int32_t)units, true)) {
		burst_new_epoch(fw, t, tag, ev, s, units); /* pool empty: counted there */
		return;
	}
	fw_side_add64(&s->ev_pkts, ev_pkts_inc(ev));
}

/* How far ahead the burst prefetches: the QPN table entry of the event
 * FW_PF_TABLE positions ahead, the flow side of the one FW_PF_SIDE ahead
 * (whose table entry the first prefetch brought in). */
#define FW_PF_TABLE 16u
#define FW_PF_SIDE 8u
/* rv64imac has no prefetch instruction (__builtin_prefetch is a no-op
 * there), so the DPA build skips the lookahead and its table loads. */
#if defined(__riscv) && !defined(__riscv_zicbop)
#define FW_PREFETCH 0
#else
#define FW_PREFETCH 1
#endif

static inline void burst_prefetch_table(const struct pulse_fw *fw, const struct pulse_tx_event *ev)
{
	/* The QPN as the fast path reads it, cut to 24 bits: a bad one is
	 * only a useless prefetch, never an address outside the table. */
	uint32_t q = ev->qpn & (((uint32_t)1 << PULSE_QPN_BITS) - 1u);
	__builtin_prefetch((const void *)&fw->qpn_table[q], 0, 3);
}

static inline void burst_prefetch_side(const struct pulse_fw *fw, fw_tag_t tag,
				       const struct pulse_tx_event *ev)
{
	uint32_t q = ev->qpn & (((uint32_t)1 << PULSE_QPN_BITS) - 1u);
	/* A hint only: if the entry changes before the event is handled (a
	 * flow created or aged meanwhile), the loop reads it again. */
	__builtin_prefetch((const void *)fast_side(fw, tag, (int32_t)q), 1, 3);
}

void pulse_fw_on_tx_burst(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *evs,
			  uint32_t n)
{
	if (n == 0)
		return;
	if (thread >= fw->max_threads) {
		count_bad_thread(fw, n);
		return;
	}
	struct fw_thread *t = &fw->threads[(int32_t)thread];
	_Atomic fw_tag_t *tw = fw_thread_tag(fw, thread);
	/* One busy mark for the whole burst: the burst is one handler
	 * invocation on one thread, so the thread announces itself once (the
	 * swap is a locked instruction that waits for the previous stores)
	 * and stores its tag back once at the end. The handshake's guarantee
	 * holds as for one event: a poll or reset waits (fw_quiesce) while the
	 * mark is in, here until the last event of the burst is done. n is
	 * the caller's bound, so that wait is bounded too (see nic_agent.h:
	 * keep bursts short when a mailbox thread runs alongside). */
	fw_tag_t tag = atomic_exchange_explicit(tw, FW_TAG_BUSY(thread), memory_order_acquire);
	if (FW_TAG_IS_BUSY(tag)) {
		thread_clash(fw, n);
		return;
	}
	if (tag >= 0) {
		/* Not in an open window (a reset shut the gate): every event
		 * takes the slow path, which counts it; nothing to prefetch. */
		for (uint32_t i = 0; i < n; i++)
			burst_slow(fw, t, tag, &evs[i]);
		thread_leave_wanted(fw, tw);
		return;
	}
	if (FW_PREFETCH) {
		/* Prime the prefetch pipeline for the first events. */
		for (uint32_t j = 0; j < n && j < FW_PF_TABLE; j++)
			burst_prefetch_table(fw, &evs[j]);
		for (uint32_t j = 0; j < n && j < FW_PF_SIDE; j++)
			burst_prefetch_side(fw, tag, &evs[j]);
	}
	bool slow = false;
	/* Prefetch while events leave the fast path (new epochs, new flows:
	 * traffic spread over many flows, each event a cache miss); a run of
	 * fast-path events (a few hot flows, all in cache) turns it off. */
	bool pf = FW_PREFETCH;
	for (uint32_t i = 0; i < n; i++) {
		if (pf) {
			if (i + FW_PF_TABLE < n)
				burst_prefetch_table(fw, &evs[i + FW_PF_TABLE]);
			if (i + FW_PF_SIDE < n)
				burst_prefetch_side(fw, tag, &evs[i + FW_PF_SIDE]);
		}
		const struct pulse_tx_event *ev = &evs[i];
		int32_t qpn;
		uint32_t units;
		if (!fast_check(tag, ev, &qpn, &units)) {
			burst_slow(fw, t, tag, ev);
			slow = true;
			continue;
		}
		struct fw_side *s = fast_side(fw, tag, qpn);
		if (fast_in_epoch(s, ev)) {
			fast_add(s, units, ev);
			pf = false;
			continue;
		}
		slow = true;
		pf = FW_PREFETCH;
		if (side_is_dummy(fw, s))
			burst_new_flow(fw, t, tag, ev, units);
		else
			burst_epoch(fw, t, tag, ev, s, units);
	}
	if (slow)
		thread_leave_wanted(fw, tw);
	else
		atomic_store_explicit(tw, tag, memory_order_release);
}
