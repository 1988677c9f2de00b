/* Memory layout and start-up. All memory comes from the one region the
 * platform hands over; nothing is allocated after this. */
#include "fw_internal.h"

struct fw_layout {
	size_t fw, threads, qpn_table, flows, flow_next, upload_list, blocks, total;
};

static size_t align_up(size_t v)
{
	return (v + FW_CACHELINE - 1u) & ~(size_t)(FW_CACHELINE - 1u);
}

static bool layout(const struct pulse_fw_limits *lim, struct fw_layout *l)
{
	if (!lim || lim->max_flows == 0 || lim->max_flows > PULSE_FW_MAX_FLOWS ||
	    lim->max_threads == 0 || lim->max_threads > PULSE_FW_MAX_THREADS ||
	    lim->pool_blocks == 0 || lim->pool_blocks >= FW_NONE / FW_BLOCK_WORDS)
		return false;
	/* tag lines of threads max_threads-1 .. 1, then the struct */
	l->fw = FW_CACHELINE * (size_t)(lim->max_threads - 1u);
	size_t off = align_up(l->fw + sizeof(struct pulse_fw));
	l->threads = off;
	off = align_up(off + sizeof(struct fw_thread) * (lim->max_threads + 1u));
	l->qpn_table = off;
	off = align_up(off + sizeof(_Atomic uint16_t) * PULSE_QPN_COUNT);
	l->flows = off;
	/* one more: the dummy flow table entry 0 reaches */
	off = align_up(off + sizeof(struct fw_flow) * (lim->max_flows + 1u));
	l->flow_next = off;
	off = align_up(off + sizeof(_Atomic uint32_t) * lim->max_flows);
	l->upload_list = off;
	off = align_up(off + sizeof(uint32_t) * lim->max_flows);
	l->blocks = off;
	off = align_up(off + sizeof(_Atomic uint32_t) * FW_BLOCK_WORDS * (size_t)lim->pool_blocks);
	l->total = off;
	return true;
}

size_t pulse_fw_memory_size(const struct pulse_fw_limits *lim)
{
	struct fw_layout l;
	return layout(lim, &l) ? l.total : 0;
}

size_t pulse_fw_memory_in_use(struct pulse_fw *fw)
{
	struct fw_layout l;
	layout(&fw->lim, &l);
	return l.blocks + (size_t)atomic_load_explicit(&fw->blocks_in_use, memory_order_relaxed) *
				  FW_BLOCK_WORDS * sizeof(uint32_t);
}

struct pulse_fw *pulse_fw_init(void *mem, size_t size, const struct pulse_fw_limits *lim,
			       uint32_t now_ns)
{
	struct fw_layout l;
	if (!mem || ((uintptr_t)mem & (FW_CACHELINE - 1u)) || !layout(lim, &l) || size < l.total)
		return 0;
	uint8_t *base = mem;
	/* Everything but the QPN table and the pool starts zeroed; those two are
	 * large and get exactly the initialisation they need below. */
	__builtin_memset(base, 0, l.qpn_table);
	__builtin_memset(base + l.flows, 0, l.blocks - l.flows);
	struct pulse_fw *fw = (struct pulse_fw *)(void *)(base + l.fw);
	fw->lim = *lim;
	fw->max_threads = lim->max_threads;
	fw->threads = (struct fw_thread *)(void *)(base + l.threads);
	fw->mb = &fw->threads[lim->max_threads];
	fw->qpn_table = (_Atomic uint16_t *)(void *)(base + l.qpn_table);
	struct fw_flow *flow_mem = (struct fw_flow *)(void *)(base + l.flows);
	fw->flows = flow_mem + 1;
	fw->side_base[0] = (uintptr_t)&flow_mem[0].side[0];
	fw->side_base[1] = (uintptr_t)&flow_mem[0].side[1];
	fw->flow_next = (_Atomic uint32_t *)(void *)(base + l.flow_next);
	fw->upload_list = (uint32_t *)(void *)(base + l.upload_list);
	fw->blocks = (_Atomic uint32_t *)(void *)(base + l.blocks);
	__builtin_memset(base + l.qpn_table, 0, sizeof(_Atomic uint16_t) * PULSE_QPN_COUNT);
	fw_stack_init(&fw->free_flows, fw->flow_next, 1);
	fw_stack_init(&fw->free_blocks, fw->blocks, FW_BLOCK_WORDS);
	for (uint32_t i = 0; i <= lim->max_flows; i++) {
		fw_side_init(&flow_mem[i].side[0]);
		fw_side_init(&flow_mem[i].side[1]);
	}
	/* Idle and closed: fw_reset opens the first window. */
	for (uint32_t i = 0; i < lim->max_threads; i++)
		atomic_store_explicit(fw_thread_tag(fw, i), FW_TAG_CLOSED, memory_order_relaxed);
	fw_config_default(fw);
	fw->now_ext = now_ns;
	atomic_store_explicit(&fw->gen, 0, memory_order_relaxed);
	if (fw_reset(fw, 0) != PULSE_MB_OK)
		return 0;
	return fw;
}
