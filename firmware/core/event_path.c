/* The TX event handler: the only code on the NIC's per-event path.
 * No division, no floating point, no allocation beyond popping a pool block
 * when an epoch closes. */
#include "fw_internal.h"

/* Announces this thread in the current generation. The exchange/load pair is
 * one half of a Dekker handshake with fw_quiesce: either the mailbox thread
 * sees this thread inside the old window and waits, or this thread sees the
 * new generation. */
static inline uint32_t thread_enter(struct pulse_fw *fw, struct fw_thread *t)
{
	uint32_t g = atomic_load_explicit(&fw->gen, memory_order_relaxed);
	for (;;) {
		atomic_exchange_explicit(&t->active, g | FW_GEN_ACTIVE, memory_order_seq_cst);
		uint32_t now = atomic_load_explicit(&fw->gen, memory_order_seq_cst);
		if (now == g)
			return g;
		g = now;
	}
}

static inline void thread_leave(struct fw_thread *t)
{
	atomic_store_explicit(&t->active, 0, memory_order_release);
}

/* A new epoch, a reordered event, or a full open record. */
static void side_add_slow(struct pulse_fw *fw, struct fw_thread *t, struct fw_side *s,
			  uint32_t epoch, uint32_t units)
{
	if (epoch < s->open_epoch) {
		/* Stamped before the flow's current epoch (reordered across
		 * threads or clock noise): keep the bytes in the current epoch. */
		fw_ctr_add(&t->ctr[PULSE_STAT_REORDERED_EVENTS], 1);
		epoch = s->open_epoch;
	}
	if (epoch != s->open_epoch || s->open_units + units > PULSE_MB_REC_MAX_UNITS) {
		/* A full record is closed and the epoch continues in a second
		 * record (advance 0): the counter itself never overflows. */
		fw_side_flush(fw, t->ctr, s);
		s->open_epoch = epoch;
	}
	s->open_units += units;
}

static uint32_t clipped_units(const struct pulse_fw *fw, const struct pulse_tx_event *ev)
{
	/* The 16-bit counter saturated: estimate from packets, never below
	 * what the counter did show. */
	uint64_t est = (uint64_t)ev->sent_pkts * fw->cfg.clip_units_per_pkt;
	if (est < PULSE_SENT_UNITS_CLIPPED)
		est = PULSE_SENT_UNITS_CLIPPED;
	if (est > PULSE_MB_REC_MAX_UNITS)
		est = PULSE_MB_REC_MAX_UNITS;
	return (uint32_t)est;
}

/* One event, with this thread already announced in generation g. */
static inline void tx_one(struct pulse_fw *fw, struct fw_thread *t, uint32_t g,
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
	if (units == PULSE_SENT_UNITS_CLIPPED) {
		fw_ctr_add(&t->ctr[PULSE_STAT_CLIPPED_EVENTS], 1);
		units = clipped_units(fw, ev);
	}
	if (g & FW_GEN_CLOSED) {
		atomic_fetch_add_explicit(&fw->drops_paused, 1, memory_order_relaxed);
		return;
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
	uint32_t epoch = (uint32_t)(((uint64_t)delta * fw->cfg.recip) >> fw->cfg.shift);

	struct fw_flow *f;
	uint32_t slot = atomic_load_explicit(&fw->qpn_table[qpn], memory_order_acquire);
	if (__builtin_expect(slot != 0, 1)) {
		f = &fw->flows[slot - 1u];
	} else {
		f = fw_flow_create(fw, t, qpn);
		if (!f)
			return;
	}

	struct fw_side *s = &f->side[side_idx];
	uint32_t sum = s->open_units + units;
	if (__builtin_expect(epoch == s->open_epoch && sum <= PULSE_MB_REC_MAX_UNITS, 1))
		s->open_units = sum;
	else
		side_add_slow(fw, t, s, epoch, units);

	fw_ctr_add(&t->ctr[PULSE_STAT_EVENTS], 1);
	fw_ctr_add(&t->ctr[PULSE_STAT_UNITS], units);
	fw_ctr_add(&t->ctr[PULSE_STAT_PKTS], ev->sent_pkts);
}

static struct fw_thread *thread_state(struct pulse_fw *fw, uint32_t thread)
{
	if (thread >= fw->lim.max_threads) {
		atomic_fetch_add_explicit(&fw->drops_bad_thread, 1, memory_order_relaxed);
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
	tx_one(fw, t, g, ev);
	thread_leave(t);
}

void pulse_fw_on_tx_burst(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *evs,
			  uint32_t n)
{
	struct fw_thread *t = thread_state(fw, thread);
	if (!t) {
		if (n > 1)
			atomic_fetch_add_explicit(&fw->drops_bad_thread, n - 1u, memory_order_relaxed);
		return;
	}
	uint32_t g = thread_enter(fw, t);
	for (uint32_t i = 0; i < n; i++)
		tx_one(fw, t, g, &evs[i]);
	thread_leave(t);
}
