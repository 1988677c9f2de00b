/* Private layout of the NIC agent core. Only firmware/core/ includes this. */
#ifndef PULSE_FW_INTERNAL_H
#define PULSE_FW_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"

#define FW_NONE 0xFFFFFFFFu
#define FW_CACHELINE 64u
#define FW_BLOCK_WORDS (PULSE_FW_RECORDS_PER_BLOCK + 1u) /* word 0 links blocks */

/* Generation word (mailbox thread only). Bits 2.. count windows; bit 1 is
 * set while a reset rebuilds state. The side a window writes is bit 2. */
#define FW_GEN_CLOSED 0x2u
#define FW_GEN_STEP 0x4u
#define FW_GEN_SIDE(g) (((g) >> 2) & 1u)

/* The window handshake. Each event thread owns a tag word: while the thread
 * is idle it holds the window tag the thread will write next; while it runs
 * an event it holds the busy mark, the thread's index times 64. An event
 * swaps the busy mark in (acquire) and stores its tag back (release) when it
 * is done: no fence, no retry. Only the mailbox thread moves an idle thread
 * to a new window, with a compare-and-swap from the old tag; it waits while
 * the thread is busy (fw_quiesce). The slow path also adopts the mailbox's
 * wanted tag on its way out, so a thread that is never idle still moves.
 * Tags are negative as int32 (busy marks and the closed tag are not), and a
 * side's tag is the byte offset of its entry in side_base[] from its end, so
 * the fast path tests and uses the tag in one instruction each. */
typedef int64_t fw_tag_t; /* a register's width: no sign-extending on RISC-V */
#define FW_TAG_SIDE(side) ((fw_tag_t)(-16 + 8 * (int32_t)(side)))
#define FW_TAG_CLOSED ((fw_tag_t)0x40000000)
/* busy mark: the thread's index times FW_CACHELINE (its tag line's offset) */
#define FW_TAG_BUSY(thread) ((fw_tag_t)(thread) * (fw_tag_t)FW_CACHELINE)
#define FW_TAG_IS_BUSY(tag) ((uint64_t)(tag) < (uint64_t)PULSE_FW_MAX_THREADS * FW_CACHELINE)
static inline uint32_t fw_tag_side(fw_tag_t tag)
{
	return (uint32_t)(tag >> 3) & 1u;
}

/* Tag words, a cache line each. Thread i's is at (char *)fw - 64 * i: thread
 * 0's is the first line of struct pulse_fw, the others lie below it, so the
 * event path finds its word with a shift and a subtract. */
struct fw_tagline {
	_Atomic fw_tag_t tag;
	uint8_t pad[FW_CACHELINE - sizeof(fw_tag_t)];
};

/* Events stamped up to this long before the open window are late, not bad. */
#define FW_LATE_LIMIT_NS 1000000u
/* A mailbox clock this far behind the last one stands still (noise). */
#define FW_CLOCK_NOISE_NS 100000000u
/* Spins while waiting for event threads to leave a closing window. */
#define FW_QUIESCE_SPINS (1u << 24)

/* One window's records of one flow. Records go into pool blocks as they close;
 * the open record (the flow's current epoch) stays here until its epoch ends.
 * The counters are this window's; the mailbox thread folds them into its
 * totals when the window closes, and STATS reads the open window's live.
 * 64 bytes; the last 8 hold the flow's qpn and state in side[0]. */
struct fw_side {
	_Atomic uint64_t open_units; /* first: the fast path's add needs no offset */
	_Atomic uint64_t ev_pkts;    /* events (bits 0-31) and packets (bits 32-63) */
	/* The open record covers NIC times [open_ts, open_ts + open_len);
	 * open_len 0: no open record (the next event takes the slow path). */
	uint32_t open_ts;
	uint32_t open_len;
	_Atomic uint64_t units;      /* units closed out of the open record */
	uint32_t open_epoch;
	uint32_t head;       /* first block, FW_NONE when the flow sent nothing */
	uint32_t tail;       /* block being filled */
	uint32_t nrec;       /* records stored in blocks */
	uint32_t tail_fill;  /* records in the tail block */
	uint32_t last_epoch; /* epoch of the last stored record (0 before any) */
	uint32_t reserved_[2]; /* side[0]: the flow's qpn and state */
};

enum fw_flow_state {
	FLOW_FREE = 0,
	FLOW_ACTIVE,   /* published in the QPN table */
	FLOW_RETIRING, /* unpublished by aging; a racing event may still land once */
	FLOW_DEAD,     /* in the current upload for the last time; freed after it */
};

/* 128 bytes, a side per cache line. */
struct fw_flow {
	union {
		struct fw_side side[2];
		struct {
			uint8_t side0_fields_[56];
			uint32_t qpn;
			_Atomic uint32_t state; /* enum fw_flow_state */
		};
	};
};
_Static_assert(sizeof(struct fw_side) == 64, "fw_side is one cache line");
_Static_assert(sizeof(struct fw_flow) == 128, "fw_flow is two cache lines");
_Static_assert(offsetof(struct fw_side, open_units) == 0, "open_units first");
_Static_assert(offsetof(struct fw_flow, qpn) == offsetof(struct fw_side, reserved_),
	       "qpn in side[0]'s spare words");

/* Per-event-thread state, one cache line each so threads never share a line. */
struct fw_thread {
	_Atomic uint64_t ctr[PULSE_STAT_COUNT]; /* single writer: this thread */
} __attribute__((aligned(FW_CACHELINE)));

/* Tagged Treiber stack: 32-bit tag over a 32-bit (index + 1). The tag defeats
 * ABA between the mailbox thread pushing and event threads popping. Element i
 * links through links[i * stride]. */
struct fw_stack {
	_Atomic uint64_t head;
	_Atomic uint32_t *links;
	uint32_t stride;
};

struct fw_config {
	uint32_t epoch_ns;
	uint32_t window_ns;
	uint16_t page_bytes;
	uint16_t clip_units_per_pkt;
	uint32_t flow_limit;
	uint32_t pool_limit;
	/* epoch = (delta * recip) >> shift, exact for delta < 2^31 */
	uint64_t recip;
	uint32_t shift;
	uint32_t max_delta; /* events stamped this far past the window start are bad: 1.25 windows */
};

/* Where the page serializer stands in the upload. */
struct fw_cursor {
	uint32_t list_idx;  /* flow in upload_list */
	uint32_t rec_idx;   /* record within that flow */
	uint32_t block;     /* block holding rec_idx */
	uint32_t epoch;     /* epoch of the record before rec_idx */
	uint32_t page_seq;  /* page this cursor starts */
};

struct pulse_fw {
	struct fw_tagline tag0; /* thread 0's tag word (see struct fw_tagline) */
	/* read on every event: keep together */
	uint32_t max_threads;
	uint32_t pad0_;
	struct fw_thread *threads;
	_Atomic uint16_t *qpn_table; /* 2^24 entries: flow index + 1, 0 = none */
	/* &flow_mem[0].side[k]: side k of the flow the table entry e names is
	 * at side_base[k] + e * sizeof(struct fw_flow); entry 0 reaches the
	 * dummy flow_mem[0], whose sides are never open. */
	uintptr_t side_base[2];
	uint32_t win_start_lo[2];  /* NIC time (low 32 bits) each side's window opened */
	struct fw_config cfg;
	struct fw_flow *flows;     /* &flow_mem[1]: flows[i] has table entry i + 1 */
	_Atomic fw_tag_t want_tag; /* the tag the mailbox moves threads to */
	_Atomic uint32_t gen;      /* mailbox thread only (STATS reads the side) */

	struct pulse_fw_limits lim;
	_Atomic uint32_t *flow_next; /* free-stack links */
	struct fw_stack free_flows;
	_Atomic uint32_t *blocks;  /* pool_blocks x FW_BLOCK_WORDS */
	struct fw_stack free_blocks;
	_Atomic uint32_t blocks_in_use;
	_Atomic uint32_t blocks_peak;
	_Atomic uint64_t drops_bad_thread;
	_Atomic uint64_t drops_paused;

	/* mailbox thread only */
	uint64_t now_ext;            /* NIC clock extended to 64 bits */
	uint64_t win_start_ext;      /* open window start, 64-bit NIC time */
	uint32_t window_seq;         /* last closed window, 0 before the first poll */
	/* Flows aging unpublished since the last reset: the flows the QPN table
	 * points to are the flows created (the threads' counters) minus these. */
	uint64_t flows_unpublished;
	bool restarted;              /* no poll since init/reset/configure */
	bool quiesce_pending;        /* flipped, but threads not yet out of the old window */
	bool upload_open;
	bool upload_done;            /* last page served */
	uint16_t upload_flags;
	struct pulse_mb_poll_resp upload; /* the poll response that opened it */
	uint32_t upload_side;
	uint32_t *upload_list;       /* flows in the upload */
	uint32_t upload_len;
	struct fw_cursor cur, prev;  /* next page; start of the page served last */
	struct fw_thread *mb; /* counters the mailbox thread owns (threads[max_threads]) */
};

/* Adds to a counter that only one thread writes at a time and others read
 * live. On RISC-V a relaxed AMO is one instruction; on x86 a locked add costs
 * 20 cycles, so there the single writer loads and stores. */
static inline void fw_side_add64(_Atomic uint64_t *c, uint64_t v)
{
#if defined(__riscv)
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
#else
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
#endif
}

static inline void fw_ctr_add(_Atomic uint64_t *c, uint64_t v)
{
	/* single writer: a relaxed load/store pair, no locked RMW */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

static inline _Atomic fw_tag_t *fw_thread_tag(struct pulse_fw *fw, size_t thread)
{
	return &((struct fw_tagline *)(void *)((char *)fw - FW_CACHELINE * thread))->tag;
}

/* --- epoch_pool.c --- */
void fw_stack_init(struct fw_stack *s, _Atomic uint32_t *links, uint32_t stride);
/* Builds the stack holding 0..n-1 (0 on top); only while no thread uses it. */
void fw_stack_fill(struct fw_stack *s, uint32_t n);
void fw_stack_push(struct fw_stack *s, uint32_t idx);
void fw_pool_reset(struct pulse_fw *fw);
void fw_pool_put_chain(struct pulse_fw *fw, uint32_t head);
static inline uint32_t *fw_block_recs(struct pulse_fw *fw, uint32_t b)
{
	/* records are only touched by the block's owner; word 0 is the atomic link */
	return (uint32_t *)(void *)&fw->blocks[(size_t)b * FW_BLOCK_WORDS + 1u];
}
static inline _Atomic uint32_t *fw_block_link(struct pulse_fw *fw, uint32_t b)
{
	return &fw->blocks[(size_t)b * FW_BLOCK_WORDS];
}

/* Pops the stack's top, FW_NONE if empty. Inline: the event path's new
 * flow and new block. */
static inline uint32_t fw_stack_pop(struct fw_stack *s)
{
	uint64_t old = atomic_load_explicit(&s->head, memory_order_acquire);
	uint64_t next;
	do {
		uint32_t top = (uint32_t)old;
		if (top == 0)
			return FW_NONE;
		uint32_t below = atomic_load_explicit(&s->links[(size_t)(top - 1u) * s->stride],
						      memory_order_relaxed);
		next = ((old >> 32) + 1u) << 32 | below;
	} while (!atomic_compare_exchange_weak_explicit(&s->head, &old, next, memory_order_acquire,
							memory_order_acquire));
	return (uint32_t)old - 1u;
}

/* Takes a block from the pool, FW_NONE if it is empty. */
static inline uint32_t fw_pool_get(struct pulse_fw *fw)
{
	uint32_t b = fw_stack_pop(&fw->free_blocks);
	if (b == FW_NONE)
		return FW_NONE;
	atomic_store_explicit(fw_block_link(fw, b), FW_NONE, memory_order_relaxed);
	uint32_t used = atomic_fetch_add_explicit(&fw->blocks_in_use, 1, memory_order_relaxed) + 1u;
	uint32_t peak = atomic_load_explicit(&fw->blocks_peak, memory_order_relaxed);
	while (used > peak && !atomic_compare_exchange_weak_explicit(
				      &fw->blocks_peak, &peak, used, memory_order_relaxed,
				      memory_order_relaxed))
		;
	return b;
}

/* --- flow_records.c --- */
/* The general case of fw_side_flush, for open_units already taken. */
bool fw_side_flush_slow(struct pulse_fw *fw, _Atomic uint64_t *ctr, struct fw_side *s,
			uint64_t open_units);
/* Returns the side's blocks to the pool and empties it. */
void fw_side_clear(struct pulse_fw *fw, struct fw_side *s);
/* Empties a side whose blocks are accounted for elsewhere (reset). */
void fw_side_init(struct fw_side *s);

/* Closes the side's open record into its blocks. Returns false (and counts
 * the loss) if the pool is empty. Inline: the event path's new-epoch case. */
static inline bool fw_side_flush(struct pulse_fw *fw, _Atomic uint64_t *ctr, struct fw_side *s)
{
	uint64_t open_units = atomic_load_explicit(&s->open_units, memory_order_relaxed);
	s->open_len = 0;
	if (open_units == 0)
		return true;
	atomic_store_explicit(&s->open_units, 0, memory_order_relaxed);
	fw_ctr_add(&s->units, open_units);
	uint32_t advance = s->open_epoch - s->last_epoch;
	uint32_t fill = s->tail_fill;
	if (__builtin_expect(open_units > PULSE_MB_REC_MAX_UNITS ||
				     advance > PULSE_MB_REC_MAX_ADVANCE ||
				     fill >= PULSE_FW_RECORDS_PER_BLOCK,
			     0))
		return fw_side_flush_slow(fw, ctr, s, open_units);
	/* The common case: one record into the current block. */
	fw_block_recs(fw, s->tail)[fill] = pulse_mb_rec_make(advance, (uint32_t)open_units);
	s->tail_fill = fill + 1u;
	s->nrec++;
	s->last_epoch = s->open_epoch;
	return true;
}

/* --- flow_table.c --- */
/* Takes a free flow slot, FW_NONE if there is none. */
static inline uint32_t fw_slot_pop(struct pulse_fw *fw)
{
	return fw_stack_pop(&fw->free_flows);
}

/* Publishes free slot i for qpn. Its sides are clear: fw_flow_free and
 * fw_flows_reset leave them so. */
static inline struct fw_flow *fw_flow_publish(struct pulse_fw *fw, struct fw_thread *t,
					      uint32_t i, uint32_t qpn)
{
	struct fw_flow *f = &fw->flows[i];
	f->qpn = qpn;
	/* The mailbox reads qpn after its acquire load of state. */
	atomic_store_explicit(&f->state, FLOW_ACTIVE, memory_order_release);
	/* A plain store publishes the slot: DOCA never runs two events of one
	 * QP at once and orders them, so nobody else can be publishing this
	 * QPN, and the QP's next event (on any thread) comes after this one
	 * (a 16-bit compare-and-swap would be a library call on rv64imac). */
	atomic_store_explicit(&fw->qpn_table[qpn], (uint16_t)(i + 1u), memory_order_relaxed);
	fw_ctr_add(&t->ctr[PULSE_STAT_FLOWS_CREATED], 1);
	return f;
}

struct fw_flow *fw_flow_create(struct pulse_fw *fw, struct fw_thread *t, uint32_t qpn);
void fw_flows_reset(struct pulse_fw *fw);
void fw_flow_free(struct pulse_fw *fw, uint32_t idx);

/* --- window.c --- */
/* Moves every event thread to window tag `tag` (already in want_tag),
 * waiting while one is inside an event. */
bool fw_quiesce(struct pulse_fw *fw, fw_tag_t tag);
enum pulse_mb_status fw_poll(struct pulse_fw *fw, const struct pulse_mb_poll_req *req,
			     struct pulse_mb_poll_resp *resp);
enum pulse_mb_status fw_read_page(struct pulse_fw *fw, const struct pulse_mb_page_req *req,
				  uint8_t *out, uint32_t cap, uint32_t *len);
/* Shuts the event gate, waits for threads, forgets all flows and counters,
 * installs new_cfg if given, and opens a fresh window. */
enum pulse_mb_status fw_reset(struct pulse_fw *fw, const struct fw_config *new_cfg);
uint32_t fw_page_payload(const struct pulse_fw *fw);

/* --- config.c --- */
enum pulse_mb_status fw_config_apply(struct pulse_fw *fw, const struct pulse_mb_config *req,
				     uint32_t resp_cap);
void fw_config_default(struct pulse_fw *fw);
void fw_hello(const struct pulse_fw *fw, struct pulse_mb_hello *h);
void fw_clock_tick(struct pulse_fw *fw, uint32_t now_ns);

/* Adds a closed side's counters to the mailbox thread's totals. */
void fw_side_fold(struct pulse_fw *fw, struct fw_side *s);

#endif
