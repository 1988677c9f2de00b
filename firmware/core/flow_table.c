/* The direct-address QPN table and the bounded set of flow slots.
 * A QPN indexes the table in one load, with no hashing and no collisions;
 * the table holds a slot number, so per-flow state costs memory only for
 * flows that exist. */
#include "fw_internal.h"

struct fw_flow *fw_flow_create(struct pulse_fw *fw, struct fw_thread *t, uint32_t qpn)
{
	uint32_t i = fw_slot_pop(fw);
	if (i == FW_NONE) {
		fw_ctr_add(&t->ctr[PULSE_STAT_DROP_NO_SLOT], 1);
		return 0;
	}
	return fw_flow_publish(fw, t, i, qpn);
}

/* Only for flows no event thread can reach: unpublished a full window ago. */
void fw_flow_free(struct pulse_fw *fw, uint32_t idx)
{
	struct fw_flow *f = &fw->flows[idx];
	fw_side_clear(fw, &f->side[0]);
	fw_side_clear(fw, &f->side[1]);
	f->qpn = 0;
	atomic_store_explicit(&f->state, FLOW_FREE, memory_order_relaxed);
	fw_stack_push(&fw->free_flows, idx);
}

/* With the gate shut and threads quiescent: forget every flow. The table is
 * cleared entry by entry from the slots, not wholesale (32 MiB). */
void fw_flows_reset(struct pulse_fw *fw)
{
	for (uint32_t i = 0; i < fw->lim.max_flows; i++) {
		struct fw_flow *f = &fw->flows[i];
		if (atomic_load_explicit(&f->state, memory_order_relaxed) != FLOW_FREE) {
			uint16_t mine = (uint16_t)(i + 1u);
			atomic_compare_exchange_strong_explicit(&fw->qpn_table[f->qpn & PULSE_QPN_MASK],
								&mine, 0, memory_order_relaxed,
								memory_order_relaxed);
		}
		fw_side_init(&f->side[0]);
		fw_side_init(&f->side[1]);
		f->qpn = 0;
		atomic_store_explicit(&f->state, FLOW_FREE, memory_order_relaxed);
	}
	fw->flows_unpublished = 0;
	fw_stack_fill(&fw->free_flows, fw->cfg.flow_limit);
}
