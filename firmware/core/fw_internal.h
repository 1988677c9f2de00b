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

/* Generation word. Bits 2.. count windows; bit 1 shuts the gate while a reset
 * rebuilds state; event threads announce `gen | FW_GEN_ACTIVE` while inside
 * the handler. The side a window writes is bit 2. */
#define FW_GEN_ACTIVE 0x1u
#define FW_GEN_CLOSED 0x2u
#define FW_GEN_STEP 0x4u
#define FW_GEN_SIDE(g) (((g) >> 2) & 1u)

/* Events stamped up to this long before the open window are late, not bad. */
#define FW_LATE_LIMIT_NS 1000000u
/* A mailbox clock this far behind the last one stands still (noise). */
#define FW_CLOCK_NOISE_NS 100000000u
/* Spins while waiting for event threads to leave a closing window. */
#define FW_QUIESCE_SPINS (1u << 24)

/* One window's records of one flow. Records go into pool blocks as they close;
 * the open record (the flow's current epoch) stays here until its epoch ends.
 * The counters are this window's; the mailbox thread folds them into its
 * totals when the window closes, and STATS reads the open window's live. */
struct fw_side {
	uint32_t open_epoch;
	_Atomic uint32_t open_units; /* 0: no open record */
	_Atomic uint64_t ev_pkts;    /* events (bits 0-31) and packets (bits 32-63) */
	_Atomic uint64_t units;      /* units closed out of the open record */
	uint32_t head;       /* first block, FW_NONE when the flow sent nothing */
	uint32_t tail;       /* block being filled */
	uint32_t nrec;       /* records stored in blocks */
	uint32_t tail_fill;  /* records in the tail block */
	uint32_t last_epoch; /* epoch of the last stored record (0 before any) */
};

enum fw_flow_state {
	FLOW_FREE = 0,
	FLOW_ACTIVE,   /* published in the QPN table */
	FLOW_RETIRING, /* unpublished by aging; a racing event may still land once */
	FLOW_DEAD,     /* in the current upload for the last time; freed after it */
};

struct fw_flow {
	uint32_t qpn;
	_Atomic uint32_t state; /* enum fw_flow_state */
	struct fw_side side[2];
};

/* Per-event-thread state, one cache line each so threads never share a line. */
struct fw_thread {
	_Atomic uint32_t active; /* 0 idle, else the generation being written | 1 */
	uint32_t pad0;
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
	/* read on every event: keep together */
	_Atomic uint32_t gen;
	uint32_t max_threads;
	uint32_t win_start_lo[2];  /* NIC time (low 32 bits) each side's window opened */
	struct fw_config cfg;
	_Atomic uint16_t *qpn_table; /* 2^24 entries: flow index + 1, 0 = none */
	struct fw_flow *flows;
	struct fw_thread *threads;

	struct pulse_fw_limits lim;
	_Atomic uint32_t *flow_next; /* free-stack links */
	struct fw_stack free_flows;
	_Atomic uint32_t *blocks;  /* pool_blocks x FW_BLOCK_WORDS */
	struct fw_stack free_blocks;
	_Atomic uint32_t flows_in_use;   /* slots taken, retiring ones included */
	_Atomic uint32_t flows_published; /* flows the QPN table points to */
	_Atomic uint32_t blocks_in_use;
	_Atomic uint32_t blocks_peak;
	_Atomic uint64_t drops_bad_thread;
	_Atomic uint64_t drops_paused;

	/* mailbox thread only */
	uint64_t now_ext;            /* NIC clock extended to 64 bits */
	uint64_t win_start_ext;      /* open window start, 64-bit NIC time */
	uint32_t window_seq;         /* last closed window, 0 before the first poll */
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

/* --- epoch_pool.c --- */
void fw_stack_init(struct fw_stack *s, _Atomic uint32_t *links, uint32_t stride);
/* Builds the stack holding 0..n-1 (0 on top); only while no thread uses it. */
void fw_stack_fill(struct fw_stack *s, uint32_t n);
void fw_stack_push(struct fw_stack *s, uint32_t idx);
uint32_t fw_stack_pop(struct fw_stack *s);
void fw_pool_reset(struct pulse_fw *fw);
uint32_t fw_pool_get(struct pulse_fw *fw);
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

/* --- flow_records.c --- */
/* Closes the side's open record into its blocks. Returns false (and counts
 * the loss) if the pool is empty. */
bool fw_side_flush(struct pulse_fw *fw, _Atomic uint64_t *ctr, struct fw_side *s);
/* Returns the side's blocks to the pool and empties it. */
void fw_side_clear(struct pulse_fw *fw, struct fw_side *s);
/* Empties a side whose blocks are accounted for elsewhere (reset). */
void fw_side_init(struct fw_side *s);

/* --- flow_table.c --- */
struct fw_flow *fw_flow_create(struct pulse_fw *fw, struct fw_thread *t, uint32_t qpn);
void fw_flows_reset(struct pulse_fw *fw);
void fw_flow_free(struct pulse_fw *fw, uint32_t idx);

/* --- window.c --- */
bool fw_quiesce(struct pulse_fw *fw, uint32_t gen);
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

static inline void fw_ctr_add(_Atomic uint64_t *c, uint64_t v)
{
	/* single writer: a relaxed load/store pair, no locked RMW */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

#endif
