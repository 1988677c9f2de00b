/* The epoch pool: fixed blocks of epoch records, handed to flows one block at
 * a time, so counter memory follows traffic rather than flows x epochs.
 * Also the lock-free stack that holds free blocks and free flow slots. */
#include "fw_internal.h"

void fw_stack_init(struct fw_stack *s, _Atomic uint32_t *links, uint32_t stride)
{
	s->links = links;
	s->stride = stride;
	atomic_store_explicit(&s->head, 0, memory_order_relaxed);
}

void fw_stack_fill(struct fw_stack *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&s->links[(size_t)i * s->stride], i + 2u <= n ? i + 2u : 0u,
				      memory_order_relaxed);
	uint64_t tag = atomic_load_explicit(&s->head, memory_order_relaxed) >> 32;
	atomic_store_explicit(&s->head, (tag + 1u) << 32 | (n ? 1u : 0u), memory_order_release);
}

void fw_stack_push(struct fw_stack *s, uint32_t idx)
{
	_Atomic uint32_t *link = &s->links[(size_t)idx * s->stride];
	uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t next;
	do {
		atomic_store_explicit(link, (uint32_t)old, memory_order_relaxed);
		next = ((old >> 32) + 1u) << 32 | (uint64_t)(idx + 1u);
	} while (!atomic_compare_exchange_weak_explicit(&s->head, &old, next, memory_order_release,
							memory_order_relaxed));
}

void fw_pool_reset(struct pulse_fw *fw)
{
	fw_stack_fill(&fw->free_blocks, fw->cfg.pool_limit);
	atomic_store_explicit(&fw->blocks_in_use, 0, memory_order_relaxed);
	atomic_store_explicit(&fw->blocks_peak, 0, memory_order_relaxed);
}

/* Returns a flow's chain of blocks. Only the mailbox thread frees, and only
 * blocks of a window no event thread can still write. */
void fw_pool_put_chain(struct pulse_fw *fw, uint32_t head)
{
	while (head != FW_NONE) {
		uint32_t next = atomic_load_explicit(fw_block_link(fw, head), memory_order_relaxed);
		/* Uncount before the push: once pushed, another thread may take
		 * the block and count it, and in_use must never exceed the pool. */
		atomic_fetch_sub_explicit(&fw->blocks_in_use, 1, memory_order_relaxed);
		fw_stack_push(&fw->free_blocks, head);
		head = next;
	}
}
