/* x86 benchmarks of the NIC agent core (make bench):
 *   1. events/s on one core, ours against a hash-table baseline, same events;
 *   2. firmware memory at 2000 and 16,000 flows for several traffic shapes;
 *   3. upload bytes per poll against active epochs.
 * Prints a Markdown table for BENCHMARKS.md. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pulse/nic_agent.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t xr(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* --- the baseline: what a straightforward design does ------------------ */
/* Open-addressing hash on QPN, and a dense u32 counter per epoch per flow. */
#define BASE_SLOTS 4096u
#define BASE_EPOCHS 31250u
struct base_flow {
	uint32_t qpn;
	uint32_t *epochs;
};
static struct base_flow base_tab[BASE_SLOTS];
static uint32_t base_start, base_epoch_ns = 32000;

static void base_on_tx(const struct pulse_tx_event *ev)
{
	uint32_t h = (ev->qpn * 2654435761u) & (BASE_SLOTS - 1u);
	while (base_tab[h].qpn != ev->qpn) {
		if (base_tab[h].qpn == 0) {
			base_tab[h].qpn = ev->qpn;
			base_tab[h].epochs = calloc(BASE_EPOCHS, sizeof(uint32_t));
			break;
		}
		h = (h + 1u) & (BASE_SLOTS - 1u);
	}
	uint32_t e = (ev->ts_ns - base_start) / base_epoch_ns;
	if (e < BASE_EPOCHS)
		base_tab[h].epochs[e] += ev->sent_32b;
}

/* --- workloads ----------------------------------------------------------- */
enum shape { SATURATED, BURSTY, SPARSE };
static const char *shape_name[] = {
	"all flows share line rate evenly (worst case for sparse records)",
	"collective bursts: 8 of the flows at a time, 5 ms on, rest idle",
	"bursts of 1-3 ms, each spreading line rate over a tenth of the flows",
};

/* Fills evs with n events of `flows` QPNs over `span_ns` at `gbps`. */
static uint32_t make_events(struct pulse_tx_event *evs, uint32_t n, uint32_t flows, double gbps,
			    enum shape shape)
{
	double gap = 4096.0 * 8.0 / gbps; /* ns between 4 KB events at line rate */
	double t = 0;
	uint32_t k = 0, burst_left = 0, group = 0;
	while (k < n) {
		uint32_t f;
		if (shape == SATURATED) {
			f = k % flows;
		} else if (shape == BURSTY) {
			if (burst_left == 0) {
				group = xr() % (flows / 8u);
				burst_left = (uint32_t)(5e6 / gap);
			}
			burst_left--;
			f = group * 8u + (k % 8u);
		} else {
			/* each event picks a flow among those in a burst now */
			if (burst_left == 0) {
				group = xr() % flows;
				burst_left = (uint32_t)((1e6 + (xr() % 2000000u)) / gap);
			}
			burst_left--;
			f = (group + (k % (flows / 10u + 1u)) * 10u) % flows;
		}
		evs[k].qpn = 0x100u + f * 7u;
		evs[k].sent_32b = 128;
		evs[k].sent_pkts = 1;
		evs[k].ts_ns = 1000u + (uint32_t)t;
		t += gap;
		k++;
	}
	return k;
}

static struct pulse_fw *fw_new(uint32_t flows, uint32_t blocks, void **mem)
{
	struct pulse_fw_limits lim = {.max_flows = flows, .pool_blocks = blocks, .max_threads = 16,
				      .platform = PULSE_PLATFORM_X86_SIM};
	size_t sz = pulse_fw_memory_size(&lim);
	*mem = aligned_alloc(64, (sz + 63u) & ~(size_t)63u);
	return pulse_fw_init(*mem, sz, &lim, 1000);
}

static uint8_t req[64], resp[65536];

static struct pulse_mb_poll_resp poll_drain(struct pulse_fw *fw, uint32_t now)
{
	uint8_t body[16];
	uint32_t len;
	struct pulse_mb_poll_req pr = {.host_ns = 1};
	pulse_mb_encode_poll_req(body, &pr);
	uint32_t n = pulse_mb_build_request(req, sizeof req, PULSE_MB_POLL, 1, body, 12);
	pulse_fw_mailbox(fw, req, n, resp, sizeof resp, &len, now);
	struct pulse_mb_poll_resp p;
	pulse_mb_decode_poll_resp(resp + PULSE_MB_HEADER_SIZE, &p);
	for (uint32_t pg = 0; pg < p.page_count; pg++) {
		struct pulse_mb_page_req q = {.window_seq = p.window_seq, .page_seq = (uint16_t)pg};
		pulse_mb_encode_page_req(body, &q);
		n = pulse_mb_build_request(req, sizeof req, PULSE_MB_READ_PAGE, 2, body, 8);
		pulse_fw_mailbox(fw, req, n, resp, sizeof resp, &len, now);
	}
	return p;
}

static int rate_reps = 3;

static void bench_rate(void)
{
	const uint32_t n = 12000000; /* ~1 s of a 400 Gb/s NIC at 4 KB per event */
	struct pulse_tx_event *evs = malloc(n * sizeof *evs);
	printf("\n### Events per second, one core (x86)\n\n");
	printf("| workload | flows | Pulse core, pulse_fw_on_tx (M events/s) | Pulse core, bursts of 256 (M events/s) | hash + dense baseline (M events/s) |\n");
	printf("|---|---|---|---|---|\n");
	for (int shape = SATURATED; shape <= BURSTY; shape++) {
		uint32_t flows = 2000;
		make_events(evs, n, flows, 400.0, (enum shape)shape);
		double best_ours = 0, best_base = 0, best_burst = 0;
		for (int rep = 0; rep < rate_reps; rep++) {
			void *mem;
			struct pulse_fw *fw = fw_new(flows, 1u << 19, &mem);
			double t0 = now_s();
			for (uint32_t i = 0; i < n; i++)
				pulse_fw_on_tx(fw, 0, &evs[i]);
			double t1 = now_s();
			free(mem);
			fw = fw_new(flows, 1u << 19, &mem);
			double tb0 = now_s();
			for (uint32_t i = 0; i < n; i += 256)
				pulse_fw_on_tx_burst(fw, 0, &evs[i], n - i < 256 ? n - i : 256);
			double tb1 = now_s();
			free(mem);
			double burst = n / (tb1 - tb0) / 1e6;
			if (burst > best_burst)
				best_burst = burst;
			memset(base_tab, 0, sizeof base_tab);
			base_start = 1000;
			double t2 = now_s();
			for (uint32_t i = 0; i < n; i++)
				base_on_tx(&evs[i]);
			double t3 = now_s();
			for (uint32_t i = 0; i < BASE_SLOTS; i++)
				free(base_tab[i].epochs);
			double ours = n / (t1 - t0) / 1e6, base = n / (t3 - t2) / 1e6;
			if (ours > best_ours)
				best_ours = ours;
			if (base > best_base)
				best_base = base;
		}
		printf("| %s | %u | %.1f | %.1f | %.1f |\n",
		       shape == SATURATED ? "saturated round-robin" : "collective bursts", flows, best_ours,
		       best_burst, best_base);
	}
	free(evs);
}

static void bench_memory(void)
{
	printf("\n### Firmware memory for a 1 s poll window, 32 us epochs (x86 run of the core)\n\n");
	printf("| flows | line rate | traffic | fixed (QPN table + slots) | epoch pool peak | total | "
	       "dense 2 B/epoch (paper) | records | upload bytes | bytes per active epoch |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|\n");
	struct { uint32_t flows; double gbps; enum shape shape; } runs[] = {
		{2000, 400, SATURATED}, {2000, 400, BURSTY}, {2000, 400, SPARSE},
		{2000, 800, SATURATED}, {16000, 400, SATURATED}, {16000, 400, SPARSE},
	};
	for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
		double gap = 4096.0 * 8.0 / runs[r].gbps;
		uint32_t n = (uint32_t)(1e9 / gap); /* one second of traffic */
		struct pulse_tx_event *evs = malloc((size_t)n * sizeof *evs);
		make_events(evs, n, runs[r].flows, runs[r].gbps, runs[r].shape);
		void *mem;
		struct pulse_fw *fw = fw_new(runs[r].flows, 1u << 20, &mem);
		for (uint32_t i = 0; i < n; i++)
			pulse_fw_on_tx(fw, 0, &evs[i]);
		uint64_t st[PULSE_STAT_COUNT];
		struct pulse_mb_poll_resp p = poll_drain(fw, 1000u + 1000000000u);
		pulse_fw_stats(fw, st);
		size_t fixed = pulse_fw_memory_in_use(fw) - st[PULSE_STAT_POOL_USED] * 128u;
		size_t pool = st[PULSE_STAT_POOL_PEAK] * 128u;
		double dense = runs[r].flows * 31250.0 * 2 + 64e6;
		printf("| %u | %.0f Gb/s | %s | %.1f MB | %.1f MB | %.1f MB | %.1f MB | %u | %u | %.2f |\n",
		       runs[r].flows, runs[r].gbps, shape_name[runs[r].shape], fixed / 1e6, pool / 1e6,
		       (fixed + pool) / 1e6, dense / 1e6, p.records, p.upload_bytes,
		       p.records ? (double)p.upload_bytes / p.records : 0.0);
		if (st[PULSE_STAT_DROP_NO_POOL] || st[PULSE_STAT_DROP_NO_SLOT])
			printf("|  | drops: pool %" PRIu64 " slots %" PRIu64 " |\n",
			       st[PULSE_STAT_DROP_NO_POOL], st[PULSE_STAT_DROP_NO_SLOT]);
		free(mem);
		free(evs);
	}
}

int main(int argc, char **argv)
{
	/* bench_fw [WHICH [REPS]]: WHICH 0 all, 1 events/s, 2 memory; REPS runs
	 * of each events/s measurement, the best kept (default 3). */
	int which = argc > 1 ? atoi(argv[1]) : 0;
	if (argc > 2 && atoi(argv[2]) > 0)
		rate_reps = atoi(argv[2]);
	printf("## NIC agent core on x86 (tests/bench/bench_fw.c)\n");
	if (which == 0 || which == 1)
		bench_rate();
	if (which == 0 || which == 2)
		bench_memory();
	return 0;
}
