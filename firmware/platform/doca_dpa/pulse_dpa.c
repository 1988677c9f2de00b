/* Pulse NIC agent: DOCA PCC glue for the BlueField-3 DPA.
 *
 * This file is the platform layer that turns the firmware core
 * (include/pulse/nic_agent.h) into a DOCA PCC "reaction point" application.
 * The DOCA PCC device library owns the event loop; it calls three user
 * entry points, all defined here:
 *
 *   doca_pcc_dev_user_init            once, when the host starts the PCC
 *                                     process: lays out the core's memory,
 *                                     masks every event type except ROCE_TX;
 *   doca_pcc_dev_user_algo            per event, on many DPA threads at once:
 *                                     feeds TX events to pulse_fw_on_tx and
 *                                     leaves the flow's rate at line rate;
 *   doca_pcc_dev_user_mailbox_handle  per host doca_pcc_mailbox_send(): runs
 *                                     one Pulse mailbox request.
 * plus doca_pcc_dev_user_set_algo_params, which the library declares
 * non-weak (Pulse has no tunable parameters and refuses any).
 *
 * API source: DOCA 3.0 device headers as published in NVIDIA's API reference
 * (doxygen dump at github.com/stolyarchuk/doca-docs, docs/doca__pcc__dev*_8h*
 * and docs/group__DOCA__PCC__DEVICE*.html, generated Aug 13 2025, DOCA
 * 3.0.0058). Signatures used, as documented there:
 *   void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask);
 *   void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt,
 *        doca_pcc_dev_event_t *event, const doca_pcc_dev_attr_t *attr,
 *        doca_pcc_dev_results_t *results);
 *   doca_pcc_dev_error_t doca_pcc_dev_user_mailbox_handle(void *request,
 *        uint32_t request_size, uint32_t max_response_size, void *response,
 *        uint32_t *response_size);                 (weak, DOCA_EXPERIMENTAL)
 *   doca_pcc_dev_error_t doca_pcc_dev_user_set_algo_params(uint32_t port_num,
 *        uint32_t algo_slot, uint32_t param_id_base, uint32_t param_num,
 *        const uint32_t *new_param_values, uint32_t *params);
 *   doca_pcc_dev_event_general_attr_t doca_pcc_dev_get_ev_attr(event)  .ev_type
 *   uint32_t doca_pcc_dev_get_flow_qpn(event)     (BF3: TX events only; the
 *        getter is absent from the DOCA 2.6 headers, so DOCA >= 2.8 assumed)
 *   doca_pcc_dev_roce_tx_cntrs_t doca_pcc_dev_get_roce_tx_cntrs(event)
 *        .sent_32bytes:16 .sent_pkts:16
 *   uint32_t doca_pcc_dev_get_timestamp(event)    (1 ns granularity)
 *   unsigned int doca_pcc_dev_thread_rank(void)   (0..N-1, DOCA_EXPERIMENTAL)
 *   uint32_t doca_pcc_dev_get_timer_lo(void)      (MICROseconds)
 *   doca_pcc_dev_fence_memory()                   (macro: memory RW,RW fence)
 *   doca_pcc_dev_algo_init_metadata / doca_pcc_dev_init_algo_slot
 *   doca_pcc_dev_default_internal_algo            (only with
 *                                                  PULSE_DPA_DELEGATE_CC=1)
 *   results->rate: 20-bit fixed point in (0, 1] of line rate,
 *                  DOCA_PCC_DEV_MAX_RATE = 1 << 20.
 *
 * Built only by firmware/doca.mk with NVIDIA's dpacc when the DOCA SDK is
 * installed. There is no SDK and no BlueField in this repository's CI:
 * tests/doca-decls/check.sh compiles this file against declaration-only
 * stand-ins of the headers above (syntax and types), and
 * tests/doca-fake/ links it on x86 against a fake of those functions to run
 * the glue's logic with the real core. Neither is the hardware; this code is
 * written against the documented API and has NOT run on a DPA.
 * docs/hardware.md covers deployment and the caveats.
 *
 * Freestanding: no libc calls, no floating point, no division on the event
 * path. */
#ifndef DOCA_DPA_DEVICE
#define DOCA_DPA_DEVICE /* documented: define before the first DOCA include */
#endif
#ifndef DOCA_ALLOW_EXPERIMENTAL_API
/* The mailbox callback and thread_rank are DOCA_EXPERIMENTAL: without this
 * opt-in the SDK marks them deprecated and -Werror stops the build. */
#define DOCA_ALLOW_EXPERIMENTAL_API
#endif

#include <doca_pcc_dev.h>
#include <doca_pcc_dev_algo_access.h>
#include <doca_pcc_dev_event.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"
#include "pulse/tx_event.h"

/* --- build-time configuration (firmware/doca.mk passes -D overrides) ---- */

/* The core's memory region, a static array in the DPA image (.bss). See the
 * budget below and docs/hardware.md. */
#ifndef PULSE_DPA_MEM_MB
#define PULSE_DPA_MEM_MB 256
#endif
/* Flow slots: QPs that may send within one poll window. */
#ifndef PULSE_DPA_MAX_FLOWS
#define PULSE_DPA_MAX_FLOWS 16384
#endif
/* Event threads the core keeps per-thread state for. doca_pcc_dev_thread_rank
 * returns 0..N-1 for the N threads the host requested; the host agent must
 * not request more (mailbox/transport_doca.c checks). */
#ifndef PULSE_DPA_MAX_THREADS
#define PULSE_DPA_MAX_THREADS PULSE_FW_MAX_THREADS
#endif
/* 0 (default): pure monitor. Every event type but ROCE_TX is masked and
 * every flow is left at line rate. 1: measure TX events, then hand every
 * event to the SDK's built-in algorithm (doca_pcc_dev_default_internal_algo)
 * so the NIC keeps its own congestion control (the intent; that the built-in
 * algorithm behaves as natively inside a user process is unverified). See
 * docs/hardware.md. */
#ifndef PULSE_DPA_DELEGATE_CC
#define PULSE_DPA_DELEGATE_CC 0
#endif
/* 1: print the memory plan at init with doca_pcc_dev_printf. Off by
 * default: device prints land on the host agent's stdout. Fatal init
 * failures are printed either way. */
#ifndef PULSE_DPA_DEBUG_PRINT
#define PULSE_DPA_DEBUG_PRINT 0
#endif
/* The largest upload page the host can read: the DOCA mailbox response
 * size the host transport asks for (PULSE_DOCA_RESPONSE_CAP_DEFAULT in
 * include/pulse/transport_doca.h). The pool is capped so the core's default
 * page stays within it. */
#ifndef PULSE_DPA_PAGE_BYTES_MAX
#define PULSE_DPA_PAGE_BYTES_MAX 4096
#endif
/* Identifier reported for our algorithm slot (free choice; 0xBFFF is the
 * DOCA sample's). */
#ifndef PULSE_DPA_ALGO_ID
#define PULSE_DPA_ALGO_ID 0x5055u /* "PU" */
#endif

#if PULSE_DPA_MAX_THREADS < 1 || PULSE_DPA_MAX_THREADS > PULSE_FW_MAX_THREADS
#error "PULSE_DPA_MAX_THREADS must be 1..PULSE_FW_MAX_THREADS"
#endif
#if PULSE_DPA_MAX_FLOWS < 1 || PULSE_DPA_MAX_FLOWS > PULSE_FW_MAX_FLOWS
#error "PULSE_DPA_MAX_FLOWS must be 1..PULSE_FW_MAX_FLOWS"
#endif
#if PULSE_DPA_PAGE_BYTES_MAX < PULSE_PAGE_BYTES_DEFAULT
#error "PULSE_DPA_PAGE_BYTES_MAX below the core's smallest default page"
#endif
#if PULSE_DPA_MEM_MB < 34
#error "PULSE_DPA_MEM_MB: the QPN table alone is 32 MiB"
#endif

/* DPA memory budget, defaults (256 MiB, 16384 flows, 256 threads), as
 * pulse_fw_memory_size() of the x86 build of the same core computes it
 * (tests/doca-fake runs this configuration and prints the pool; the DPA's
 * 64-bit layout is the same):
 *   fixed part: QPN table 2^24 x u16 (32 MiB) + 16384 flow slots + 257
 *               per-thread lines                      34,800,256 B (33.2 MiB)
 *   epoch pool: the rest, 128 B per block of 31 records
 *               -> 1,825,275 blocks = 56.6 M non-zero flow-epochs, shared by
 *               the open window and the one being uploaded
 *   clock slots (this file): 256 x 64 B                   16 KiB
 * 2000 flows each busy in 30% of 31,250 epochs/s use 18.75 M records a
 * window: two windows fit with room to spare. The pool is further capped so
 * the default upload page fits a 4 KiB mailbox response (65535 pages of
 * 4 KiB carry ~2.1 M blocks, so ~270 MiB is the useful maximum unless the
 * response size grows too). The paper's implementation used ~184 MB on the
 * same DPA and cites a 1 GB DPA-accessible DDR region; no DOCA document
 * states how large a DPA image's .bss may be, so 256 MiB is unverified on
 * hardware. Shrink with make PULSE_DPA_MEM_MB=... (the pool shrinks; the
 * 33 MiB fixed part cannot). */
#define PULSE_DPA_MEM_BYTES ((size_t)(PULSE_DPA_MEM_MB) * 1024u * 1024u)

/* --- state -------------------------------------------------------------- */

static uint8_t pulse_dpa_mem[PULSE_DPA_MEM_BYTES] __attribute__((aligned(64)));

/* Clock calibration, one cache line per event thread (no false sharing).
 * `sample` packs the DPA timer (µs, low 32 bits) at the moment the thread
 * handled an event, and offset = event_ts_ns - timer_us * 1000 (mod 2^32).
 * It is one 64-bit atomic (a plain aligned store on RV64 when relaxed), so a
 * reader never sees half of it. `valid` is released once, after the first
 * sample. The core already relies on C11 atomics on the DPA. */
struct pulse_dpa_clock_slot {
	_Atomic uint64_t sample;
	_Atomic uint32_t valid;
	uint8_t pad[64 - sizeof(uint64_t) - sizeof(uint32_t)];
} __attribute__((aligned(64)));

static struct pulse_dpa_clock_slot pulse_dpa_clock[PULSE_DPA_MAX_THREADS];

/* The core, once initialised. Stored with release order at the end of
 * user_init; the library runs user_init at process load, before it
 * dispatches any event or mailbox request, so readers use relaxed loads
 * (no fence on the event path). */
static _Atomic(struct pulse_fw *) pulse_dpa_fw;

static struct {
	uint32_t initialised;         /* user_init ran (only the init thread) */
	/* mailbox thread only: */
	uint32_t clock_offset_ns;     /* event clock - timer*1000, mod 2^32 */
	uint32_t clock_calibrated;
	size_t mem_needed;
	struct pulse_fw_limits lim;
} pulse_dpa;

/* Samples older than this are used only when nothing fresher exists (the
 * two clocks may drift apart slowly; a fresh sample bounds the error). */
#define PULSE_DPA_CLOCK_FRESH_US 1000000u

/* --- NIC time ------------------------------------------------------------
 *
 * The core wants the mailbox's "now" in the clock of the event timestamps
 * (32-bit, 1 ns). The DOCA PCC device API documents no such clock: the only
 * timers are doca_pcc_dev_get_timer()/_lo(), elapsed MICROseconds from the
 * DPA thread timer (__dpa_thread_time), and nothing documents that their
 * origin is the event timestamps' origin. So:
 *
 *  1. Conversion: ns = us * 1000, taken mod 2^32. This is exact modulo 2^32
 *     even though only the timer's low 32 bits are read, because
 *     (2^32 * k * 1000) mod 2^32 = 0. Resolution is 1 µs (an epoch is
 *     >= 8 µs; the window start lands within 1 µs + the error below).
 *  2. Calibration: every TX event handler records
 *     offset = ts_ns - timer_us * 1000 for its thread. The mailbox takes the
 *     largest offset among samples fresher than 1 s: the handler runs after
 *     the event's timestamp, so each sample under-estimates the offset by
 *     that thread's queueing latency, and the largest is the tightest.
 *     now_ns = offset + timer_us * 1000.
 *  3. Consequence: until the first TX event has been handled, no offset is
 *     known and Pulse assumes 0 (the two clocks share an origin). If they do
 *     not, the window open when traffic first arrives (opened at init or at
 *     a CONFIGURE/POLL before any event) lies in the wrong clock: its events
 *     are dropped as out of range (PULSE_STAT_DROP_TS_RANGE) or, if the
 *     clocks differ by less than two windows, counted in wrong epochs. The
 *     next POLL opens the next window on the calibrated clock, so this costs
 *     at most one window per load (the NIC clock the host sees jumps once).
 *     Drift between the clocks is bounded by the 1 s freshness rule.
 */
static inline void pulse_dpa_clock_note(unsigned int rank, uint32_t ts_ns)
{
	if (rank >= PULSE_DPA_MAX_THREADS)
		return; /* the core counts the bad thread number */
	uint32_t t_us = doca_pcc_dev_get_timer_lo();
	uint32_t offset = ts_ns - t_us * 1000u;
	struct pulse_dpa_clock_slot *s = &pulse_dpa_clock[rank];
	atomic_store_explicit(&s->sample, (uint64_t)t_us << 32 | offset, memory_order_relaxed);
	if (__builtin_expect(!atomic_load_explicit(&s->valid, memory_order_relaxed), 0))
		atomic_store_explicit(&s->valid, 1u, memory_order_release); /* after the sample */
}

static uint32_t pulse_dpa_now_ns(void)
{
	uint32_t now_us = doca_pcc_dev_get_timer_lo();
	int have_fresh = 0, have_any = 0;
	uint32_t best_fresh = 0, best_any = 0, best_any_age = 0;

	doca_pcc_dev_fence_memory(); /* see the event threads' latest samples */
	for (unsigned int i = 0; i < PULSE_DPA_MAX_THREADS; i++) {
		if (!atomic_load_explicit(&pulse_dpa_clock[i].valid, memory_order_acquire))
			continue;
		uint64_t s = atomic_load_explicit(&pulse_dpa_clock[i].sample, memory_order_relaxed);
		uint32_t t_us = (uint32_t)(s >> 32);
		uint32_t offset = (uint32_t)s;
		uint32_t age_us = now_us - t_us;
		if (age_us <= PULSE_DPA_CLOCK_FRESH_US) {
			/* offsets of fresh samples differ by latencies (µs to ms):
			 * compare them as signed differences, immune to wrap */
			if (!have_fresh || (int32_t)(offset - best_fresh) > 0)
				best_fresh = offset;
			have_fresh = 1;
		}
		if (!have_any || age_us < best_any_age) {
			best_any = offset;
			best_any_age = age_us;
		}
		have_any = 1;
	}
	if (have_fresh || have_any) {
		pulse_dpa.clock_offset_ns = have_fresh ? best_fresh : best_any;
		pulse_dpa.clock_calibrated = 1;
	}
	return pulse_dpa.clock_offset_ns + now_us * 1000u;
}

/* --- init ---------------------------------------------------------------- */

/* Largest pool that fits the static region with these limits, by bisection
 * over pulse_fw_memory_size (monotonic in pool_blocks; 0 = invalid). Init
 * only: the event path never divides. Returns 0 if even one block does not
 * fit. */
static uint32_t pulse_dpa_plan_pool(struct pulse_fw_limits *lim, size_t mem, uint32_t cap)
{
	uint64_t hi = mem / (PULSE_FW_RECORDS_PER_BLOCK * sizeof(uint32_t));
	uint64_t lo = 0;
	if (hi > cap)
		hi = cap;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		lim->pool_blocks = (uint32_t)mid;
		size_t need = pulse_fw_memory_size(lim);
		if (need != 0 && need <= mem)
			lo = mid;
		else
			hi = mid - 1;
	}
	lim->pool_blocks = (uint32_t)lo;
	return (uint32_t)lo;
}

/* The core's default upload page, read back with a HELLO through the core
 * itself (before anything else can reach it). 0xFFFF if that fails. */
static uint32_t pulse_dpa_default_page(struct pulse_fw *fw, uint32_t now_ns)
{
	static uint8_t req[PULSE_MB_HEADER_SIZE];
	static uint8_t resp[PULSE_MB_MIN_RESPONSE];
	struct pulse_mb_header h;
	struct pulse_mb_hello hello;
	uint32_t len = 0;
	uint32_t n = pulse_mb_build_request(req, sizeof(req), PULSE_MB_HELLO, 0, NULL, 0);

	if (n == 0 || pulse_fw_mailbox(fw, req, n, resp, sizeof(resp), &len, now_ns) != PULSE_MB_OK ||
	    pulse_mb_decode_header(resp, len, &h) != PULSE_MB_OK ||
	    len < PULSE_MB_HEADER_SIZE + PULSE_MB_HELLO_SIZE)
		return 0xFFFFu;
	pulse_mb_decode_hello(resp + PULSE_MB_HEADER_SIZE, &hello);
	return hello.page_bytes;
}

static void pulse_dpa_spin_relax(void)
{
	/* The mailbox thread spins while event threads leave a closing window;
	 * a fence makes each re-read see their latest stores. */
	doca_pcc_dev_fence_memory();
}

/* Algorithm description reported with the slot metadata. */
static const char pulse_dpa_algo_desc[] __attribute__((used)) =
	"Pulse: per-QP TX byte monitor; leaves every flow at line rate";

static void pulse_dpa_register_algo(void)
{
	struct doca_pcc_dev_algo_meta_data md;
	md.algo_id = PULSE_DPA_ALGO_ID;
	md.algo_major_version = (PULSE_FW_VERSION >> 16) & 0xFFu;
	md.algo_minor_version = (PULSE_FW_VERSION >> 8) & 0xFFu;
	md.algo_desc_size = (uint32_t)sizeof(pulse_dpa_algo_desc);
	md.algo_desc_addr = (uint64_t)(uintptr_t)pulse_dpa_algo_desc;
	/* No parameters, no counters: Pulse is configured through the mailbox.
	 * Whether the library accepts zero of both is not documented; failures
	 * are printed, and events reach doca_pcc_dev_user_algo either way (the
	 * DOCA sample routes every slot through it). */
	if (doca_pcc_dev_algo_init_metadata(0, &md, 0, 0) != DOCA_PCC_DEV_STATUS_OK)
		doca_pcc_dev_printf("pulse: doca_pcc_dev_algo_init_metadata failed\n");
	for (uint32_t port = 0; port < DOCA_PCC_DEV_MAX_NUM_PORTS; port++)
		if (doca_pcc_dev_init_algo_slot(port, 0, 0, 1) != DOCA_PCC_DEV_STATUS_OK)
			doca_pcc_dev_printf("pulse: doca_pcc_dev_init_algo_slot(port %u) failed\n",
					    (unsigned int)port);
}

#define PULSE_DPA_EV_BIT(t) (1u << (uint32_t)(t))
#if PULSE_DPA_DELEGATE_CC
/* The built-in algorithm gets every event it would get without Pulse. */
#define PULSE_DPA_DISABLED_EVENTS 0u
#else
/* Only ROCE_TX reaches the handler. TX_FOR_ACK_NACK exists (and may be
 * masked) only on CX8+ per DOCA_PCC_DEV_ACK_NACK_TX_EVENT_DISABLED_SUPPORTED. */
#define PULSE_DPA_DISABLED_EVENTS                                                        \
	(PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_FW) | PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_ROCE_CNP) | \
	 PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_ROCE_ACK) |                                     \
	 PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_ROCE_NACK) | PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_RTT) | \
	 (DOCA_PCC_DEV_ACK_NACK_TX_EVENT_DISABLED_SUPPORTED                                 \
		  ? PULSE_DPA_EV_BIT(DOCA_PCC_DEV_EVNT_ROCE_TX_FOR_ACK_NACK)                       \
		  : 0u))
#endif

void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask)
{
	if (disable_event_bitmask != NULL)
		*disable_event_bitmask = PULSE_DPA_DISABLED_EVENTS;
	if (pulse_dpa.initialised)
		return; /* documented as once per process load; never re-lay memory */
	pulse_dpa.initialised = 1;

	pulse_dpa_register_algo();

	struct pulse_fw_limits *lim = &pulse_dpa.lim;
	lim->max_flows = PULSE_DPA_MAX_FLOWS;
	lim->max_threads = PULSE_DPA_MAX_THREADS;
	lim->platform = PULSE_PLATFORM_DOCA_DPA;
	/* Changes whenever the PCC process is (re)started: the DPA timer keeps
	 * running across processes. Bit 63 keeps it non-zero. */
	lim->instance_id = doca_pcc_dev_get_timer() | (1ull << 63);
	lim->spin_relax = pulse_dpa_spin_relax;

	/* The pool takes what the region leaves, but no more than a default
	 * upload page of PULSE_DPA_PAGE_BYTES_MAX can carry: the core grows its
	 * default page for big pools (65535 pages at most), and a page larger
	 * than the host's mailbox response could not be read. Checked against
	 * the core's own answer; at most a few re-plans, init only. */
	uint32_t cap = 0xFFFFFFFEu;
	struct pulse_fw *fw = NULL;
	for (int tries = 0; tries < 8; tries++) {
		if (pulse_dpa_plan_pool(lim, sizeof(pulse_dpa_mem), cap) == 0) {
			doca_pcc_dev_printf("pulse: %u MiB of DPA memory cannot hold %u flows; "
					    "the measurement core is NOT running\n",
					    (unsigned int)PULSE_DPA_MEM_MB,
					    (unsigned int)PULSE_DPA_MAX_FLOWS);
			return;
		}
		uint32_t now = pulse_dpa_now_ns();
		fw = pulse_fw_init(pulse_dpa_mem, sizeof(pulse_dpa_mem), lim, now);
		if (fw == NULL)
			break;
		uint32_t page = pulse_dpa_default_page(fw, now);
		if (page <= PULSE_DPA_PAGE_BYTES_MAX)
			break;
		/* pages are sized by records: shrink the pool in proportion */
		cap = (uint32_t)((uint64_t)lim->pool_blocks * PULSE_DPA_PAGE_BYTES_MAX / page * 15u / 16u);
		fw = NULL;
	}
	if (fw == NULL) {
		doca_pcc_dev_printf("pulse: pulse_fw_init failed; the measurement core is NOT running\n");
		return;
	}
	pulse_dpa.mem_needed = pulse_fw_memory_size(lim);
#if PULSE_DPA_DEBUG_PRINT
	doca_pcc_dev_printf("pulse: %u flows, %u threads, %u pool blocks, %u of %u KiB\n",
			    (unsigned int)lim->max_flows, (unsigned int)lim->max_threads,
			    (unsigned int)lim->pool_blocks, (unsigned int)(pulse_dpa.mem_needed >> 10),
			    (unsigned int)(sizeof(pulse_dpa_mem) >> 10));
#endif
	/* Publish: every store of the layout before the pointer (the DOCA fence
	 * for the DPA's memory system, the release for the C memory model). */
	doca_pcc_dev_fence_memory();
	atomic_store_explicit(&pulse_dpa_fw, fw, memory_order_release);
	doca_pcc_dev_fence_memory();
}

/* --- event path ---------------------------------------------------------- */

void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
			    const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results)
{
	struct pulse_fw *fw = atomic_load_explicit(&pulse_dpa_fw, memory_order_relaxed);

	if (doca_pcc_dev_get_ev_attr(event).ev_type == DOCA_PCC_DEV_EVNT_ROCE_TX &&
	    __builtin_expect(fw != NULL, 1)) {
		doca_pcc_dev_roce_tx_cntrs_t c = doca_pcc_dev_get_roce_tx_cntrs(event);
		unsigned int rank = doca_pcc_dev_thread_rank();
		struct pulse_tx_event ev;
		ev.qpn = doca_pcc_dev_get_flow_qpn(event); /* 24-bit field */
		ev.sent_32b = (uint16_t)c.sent_32bytes;
		ev.sent_pkts = (uint16_t)c.sent_pkts;
		ev.ts_ns = doca_pcc_dev_get_timestamp(event);
		pulse_dpa_clock_note(rank, ev.ts_ns);
		pulse_fw_on_tx(fw, rank, &ev);
	}

#if PULSE_DPA_DELEGATE_CC
	doca_pcc_dev_default_internal_algo(algo_ctxt, event, attr, results);
#else
	/* A monitor must not throttle: every flow, on every event type that
	 * reaches us, is left at the maximum rate (1.0 of line rate), and no
	 * RTT probe is requested. The per-flow context is not used. */
	(void)algo_ctxt;
	(void)attr;
	results->rate = DOCA_PCC_DEV_MAX_RATE;
	results->rtt_req = 0;
#endif
}

/* --- mailbox ------------------------------------------------------------- */

doca_pcc_dev_error_t doca_pcc_dev_user_mailbox_handle(void *request, uint32_t request_size,
						      uint32_t max_response_size, void *response,
						      uint32_t *response_size)
{
	struct pulse_fw *fw = atomic_load_explicit(&pulse_dpa_fw, memory_order_acquire);
	uint32_t len = 0;

	if (response_size == NULL)
		return DOCA_PCC_DEV_STATUS_FAIL;
	*response_size = 0;
	/* FAIL (cb_ret_val 1 on the host) means exactly one thing: the core did
	 * not initialise. Every protocol error is answered in-band instead. */
	if (fw == NULL)
		return DOCA_PCC_DEV_STATUS_FAIL;
	if (request == NULL)
		request_size = 0;
	if (response == NULL)
		max_response_size = 0;

	doca_pcc_dev_fence_memory(); /* read the request the host just placed */
	(void)pulse_fw_mailbox(fw, (const uint8_t *)request, request_size, (uint8_t *)response,
			       max_response_size, &len, pulse_dpa_now_ns());
	if (len > max_response_size)
		len = 0; /* cannot happen per nic_agent.h; never overrun the buffer */
	doca_pcc_dev_fence_memory(); /* the response is complete before we return */
	*response_size = len;
	return DOCA_PCC_DEV_STATUS_OK;
}

/* --- algorithm parameters ------------------------------------------------ */

doca_pcc_dev_error_t doca_pcc_dev_user_set_algo_params(uint32_t port_num, uint32_t algo_slot,
						       uint32_t param_id_base, uint32_t param_num,
						       const uint32_t *new_param_values,
						       uint32_t *params)
{
	(void)port_num;
	(void)algo_slot;
	(void)param_id_base;
	(void)new_param_values;
	(void)params;
	/* Pulse registers no parameters; a change request can only be wrong. */
	return param_num == 0 ? DOCA_PCC_DEV_STATUS_OK : DOCA_PCC_DEV_STATUS_FAIL;
}
