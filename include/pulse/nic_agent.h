/* The Pulse NIC agent core: per-QP, µs-epoch byte counting on the NIC.
 *
 * Freestanding C, compiled unchanged for three platforms: the DOCA PCC DPA
 * glue (firmware/platform/doca_dpa), the rv64imac image for qemu
 * (firmware/platform/emu_rv64) and the x86 library that sim/ and the tests
 * link. The platform owns memory and time; the core owns everything else.
 *
 * Memory: the platform hands the core one region at init, sized by
 * pulse_fw_memory_size(). Nothing is allocated afterwards. The region holds
 *   - the QPN table: 2^24 x u16 (32 MiB), direct-addressed by QPN, giving the
 *     flow slot (0 = no flow);
 *   - max_flows flow slots;
 *   - the epoch pool: pool_blocks blocks of PULSE_FW_RECORDS_PER_BLOCK epoch
 *     records, handed to flows one block at a time as they need them;
 *   - per-thread state (counters, quiescence flags).
 * Epoch records are sparse (one u32 per non-zero epoch of a flow, the format
 * of pulse_mb_proto.h), so pool use follows traffic, not flows x epochs.
 *
 * Concurrency contract, matching the DPA: pulse_fw_on_tx may run on many
 * threads at once, but the events of one QP are never handled concurrently
 * (DOCA PCC serialises a flow's events). pulse_fw_mailbox is called from one
 * thread at a time and may run concurrently with pulse_fw_on_tx. */
#ifndef PULSE_NIC_AGENT_H
#define PULSE_NIC_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"
#include "pulse/tx_event.h"

#define PULSE_FW_VERSION 0x000100u /* 0.1.0 */
#define PULSE_FW_RECORDS_PER_BLOCK 31u
#define PULSE_FW_MAX_FLOWS 65535u /* the QPN table stores u16 slot numbers */
#define PULSE_FW_MAX_THREADS 256u

struct pulse_fw;

struct pulse_fw_limits {
	uint32_t max_flows;   /* flow slots, 1..PULSE_FW_MAX_FLOWS */
	uint32_t pool_blocks; /* epoch-pool blocks */
	uint32_t max_threads; /* event threads, 1..PULSE_FW_MAX_THREADS */
	uint32_t platform;    /* enum pulse_mb_platform, reported in HELLO */
	uint64_t instance_id; /* reported in HELLO; changes across restarts */
	/* Called while the mailbox thread waits for event threads to leave the
	 * closing window (a pause hint, or sched_yield on a host). May be NULL. */
	void (*spin_relax)(void);
};

/* Bytes of memory the core needs for these limits (0 if they are invalid). */
size_t pulse_fw_memory_size(const struct pulse_fw_limits *lim);

/* Lays the core out in mem (64-byte aligned, at least pulse_fw_memory_size
 * bytes) and opens the first window at NIC time now_ns with the default
 * configuration. Returns NULL if the memory or limits are unusable. */
struct pulse_fw *pulse_fw_init(void *mem, size_t size, const struct pulse_fw_limits *lim,
			       uint32_t now_ns);

/* The event path: one call per TX event, on DPA thread `thread`. */
void pulse_fw_on_tx(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *ev);

/* The same for n events in a row, taking the thread's window tag once
 * instead of per event (each take is an atomic exchange that waits for the
 * previous stores). For platforms that get
 * events in batches, such as the simulator; results are identical to n calls
 * of pulse_fw_on_tx. A poll waits for the whole burst, so keep bursts short
 * (thousands of events, not millions) when a mailbox thread runs alongside. */
void pulse_fw_on_tx_burst(struct pulse_fw *fw, uint32_t thread, const struct pulse_tx_event *evs,
			  uint32_t n);

/* Answers one mailbox request. now_ns is the NIC clock when the request is
 * handled (same clock as event timestamps). Always writes a well-formed
 * response (an error status when the request is bad) and returns its status;
 * *resp_len is 0 only if resp_cap cannot hold a header. */
enum pulse_mb_status pulse_fw_mailbox(struct pulse_fw *fw, const uint8_t *req, uint32_t req_len,
				      uint8_t *resp, uint32_t resp_cap, uint32_t *resp_len,
				      uint32_t now_ns);

/* Counter snapshot, summed over threads (the STATS request returns the same). */
void pulse_fw_stats(struct pulse_fw *fw, uint64_t out[PULSE_STAT_COUNT]);

/* Bytes of the memory region actually in use now: the fixed part plus the
 * pool blocks held by flows. For the memory benchmarks. */
size_t pulse_fw_memory_in_use(struct pulse_fw *fw);

#endif
