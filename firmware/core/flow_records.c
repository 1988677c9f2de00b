/* A flow's sparse epoch records: one u32 per non-zero epoch, appended to pool
 * blocks as each epoch closes (format in pulse/mailbox_proto.h). Keeping the
 * open epoch in the flow slot means the common case, another event in the
 * same epoch, is one add. */
#include "fw_internal.h"

void fw_side_clear(struct pulse_fw *fw, struct fw_side *s)
{
	if (s->head != FW_NONE)
		fw_pool_put_chain(fw, s->head);
	fw_side_init(s);
}

void fw_side_init(struct fw_side *s)
{
	atomic_store_explicit(&s->ev_pkts, 0, memory_order_relaxed);
	atomic_store_explicit(&s->units, 0, memory_order_relaxed);
	s->head = FW_NONE;
	s->tail = FW_NONE;
	s->nrec = 0;
	s->tail_fill = PULSE_FW_RECORDS_PER_BLOCK; /* no tail block: as if full */
	s->last_epoch = 0;
	s->open_epoch = 0;
	s->open_ts = 0;
	s->open_len = 0;
	atomic_store_explicit(&s->open_units, 0, memory_order_relaxed);
}

void fw_side_fold(struct pulse_fw *fw, struct fw_side *s)
{
	_Atomic uint64_t *ctr = fw->mb->ctr;
	uint64_t ep = atomic_load_explicit(&s->ev_pkts, memory_order_relaxed);
	fw_ctr_add(&ctr[PULSE_STAT_EVENTS], (uint32_t)ep);
	fw_ctr_add(&ctr[PULSE_STAT_PKTS], ep >> 32);
	fw_ctr_add(&ctr[PULSE_STAT_UNITS], atomic_load_explicit(&s->units, memory_order_relaxed));
}

static void side_append(struct pulse_fw *fw, struct fw_side *s, uint32_t *spare, uint32_t rec)
{
	if (s->tail_fill == PULSE_FW_RECORDS_PER_BLOCK) {
		uint32_t b = *spare;
		*spare = FW_NONE;
		if (s->tail == FW_NONE)
			s->head = b;
		else
			atomic_store_explicit(fw_block_link(fw, s->tail), b, memory_order_relaxed);
		s->tail = b;
		s->tail_fill = 0;
	}
	fw_block_recs(fw, s->tail)[s->tail_fill++] = rec;
	s->nrec++;
}

/* The general case: a skip record is needed, or a new block, or the pool is
 * empty, or the epoch holds more than one record's 24 bits (it continues in
 * further records of advance 0, so a count never overflows). */
bool fw_side_flush_slow(struct pulse_fw *fw, _Atomic uint64_t *ctr, struct fw_side *s,
			uint64_t open_units)
{
	bool ok = true;
	uint32_t advance = s->open_epoch - s->last_epoch;
	while (open_units) {
		uint32_t u = open_units > PULSE_MB_REC_MAX_UNITS ? PULSE_MB_REC_MAX_UNITS
								 : (uint32_t)open_units;
		open_units -= u;
		uint32_t need = advance > PULSE_MB_REC_MAX_ADVANCE ? 2u : 1u;
		uint32_t room = PULSE_FW_RECORDS_PER_BLOCK - s->tail_fill; /* 0 without a block */
		uint32_t spare = FW_NONE;
		if (room < need) {
			/* Take the block before writing anything, so a failure
			 * leaves the record chain consistent: the record is lost,
			 * nothing is misplaced. */
			spare = fw_pool_get(fw);
			if (spare == FW_NONE) {
				fw_ctr_add(&ctr[PULSE_STAT_DROP_NO_POOL], 1);
				fw_ctr_add(&ctr[PULSE_STAT_DROP_NO_POOL_UNITS], u);
				ok = false;
				continue;
			}
		}
		if (need == 2) {
			side_append(fw, s, &spare, pulse_mb_rec_make(PULSE_MB_REC_SKIP, advance));
			advance = 0;
		}
		side_append(fw, s, &spare, pulse_mb_rec_make(advance, u));
		s->last_epoch = s->open_epoch;
		advance = 0;
	}
	return ok;
}
