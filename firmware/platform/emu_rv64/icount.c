/* Instruction-count benchmark of the TX event path, rv64imac on qemu.
 *
 * Run under qemu with -icount shift=0, where minstret counts retired
 * instructions exactly. Each pulse_fw_on_tx call (and each call of the
 * baseline, baseline.c) is bracketed by two minstret reads; the cost of an
 * empty bracket is measured first and subtracted. Three cases, each on fresh
 * state, same events for both implementations:
 *   (a) an existing flow, an event in the flow's current epoch,
 *   (b) an existing flow, an event that opens a new epoch (closing the old
 *       one into the epoch pool, a pool block every 31 records),
 *   (c) a new flow (slot allocation, QPN table publish).
 * Results go to stdout and, if given, to the file named by the first
 * argument (a host file, through semihosting). */
#include <stdio.h>
#include <string.h>

#include "baseline.h"
#include "pulse/nic_agent.h"
#include "rv64.h"

#define NFLOWS 512u
#define ROUNDS 4u /* new-epoch events per flow */
#define EPOCH_NS PULSE_EPOCH_NS_DEFAULT
#define WINDOW_NS PULSE_WINDOW_NS_DEFAULT
#define T0 1000u /* NIC time at init */

struct agg {
	uint64_t sum, n, min, max;
};

static void agg_add(struct agg *a, uint64_t v)
{
	if (a->n == 0 || v < a->min)
		a->min = v;
	if (v > a->max)
		a->max = v;
	a->sum += v;
	a->n++;
}

/* average x100, rounded, for two decimals without floating point */
static uint64_t avg100(const struct agg *a) { return a->n ? (a->sum * 100 + a->n / 2) / a->n : 0; }

static uint64_t overhead;

static __attribute__((noinline)) uint64_t empty_pair(void)
{
	uint64_t a = rv64_minstret();
	uint64_t b = rv64_minstret();
	return b - a;
}

static __attribute__((noinline)) uint64_t time_fw(struct pulse_fw *fw,
						  const struct pulse_tx_event *ev)
{
	uint64_t a = rv64_minstret();
	pulse_fw_on_tx(fw, 0, ev);
	uint64_t b = rv64_minstret();
	return b - a - overhead;
}

static __attribute__((noinline)) uint64_t time_bl(struct bl_table *t,
						  const struct pulse_tx_event *ev)
{
	uint64_t a = rv64_minstret();
	bl_on_tx(t, ev);
	uint64_t b = rv64_minstret();
	return b - a - overhead;
}

static uint32_t qpn_of(uint32_t i) { return 0x000100u + i * 2654435u % 0xFFF000u; }

enum { CASE_SAME, CASE_NEW_EPOCH, CASE_NEW_FLOW, CASE_EPOCH_FITS, CASE_EPOCH_BLOCK, NCASES };
static const char *const case_name[NCASES] = {
	"(a) existing flow, same epoch",
	"(b) existing flow, new epoch",
	"(c) new flow",
	"(b) of which: record fits block",
	"(b) of which: takes a pool block",
};

/* The same-epoch case once more through pulse_fw_on_tx_burst, which
 * does the window handshake once per batch (the simulator's entry point; the DPA
 * calls the handler once per event): instructions per event of the batch. */
static struct pulse_tx_event burst_evs[NFLOWS];
static uint64_t burst_total;

static __attribute__((noinline)) void time_burst(struct pulse_fw *fw)
{
	for (uint32_t i = 0; i < NFLOWS; i++)
		burst_evs[i] = (struct pulse_tx_event){.qpn = qpn_of(i), .sent_32b = 128,
						       .sent_pkts = 1, .ts_ns = T0 + 20000u + i};
	uint64_t a = rv64_minstret();
	pulse_fw_on_tx_burst(fw, 0, burst_evs, NFLOWS);
	uint64_t b = rv64_minstret();
	burst_total = b - a - overhead;
}

/* Replays the benchmark's event sequence through one implementation. */
static void run_events(struct pulse_fw *fw, struct bl_table *bl, struct agg res[NCASES])
{
	struct pulse_tx_event ev;
	/* (c) new flows, all in epoch 0 */
	for (uint32_t i = 0; i < NFLOWS; i++) {
		ev = (struct pulse_tx_event){.qpn = qpn_of(i), .sent_32b = 128, .sent_pkts = 1,
					     .ts_ns = T0 + 100u + i};
		agg_add(&res[CASE_NEW_FLOW], fw ? time_fw(fw, &ev) : time_bl(bl, &ev));
	}
	/* (a) the same flows again, same epoch */
	for (uint32_t i = 0; i < NFLOWS; i++) {
		ev = (struct pulse_tx_event){.qpn = qpn_of(i), .sent_32b = 128, .sent_pkts = 1,
					     .ts_ns = T0 + 10000u + i};
		agg_add(&res[CASE_SAME], fw ? time_fw(fw, &ev) : time_bl(bl, &ev));
	}
	if (fw)
		time_burst(fw);
	else
		for (uint32_t i = 0; i < NFLOWS; i++) {
			ev = (struct pulse_tx_event){.qpn = qpn_of(i), .sent_32b = 128,
						     .sent_pkts = 1, .ts_ns = T0 + 20000u + i};
			bl_on_tx(bl, &ev);
		}
	/* (b) every flow moves on by one epoch per round */
	for (uint32_t r = 1; r <= ROUNDS; r++)
		for (uint32_t i = 0; i < NFLOWS; i++) {
			ev = (struct pulse_tx_event){.qpn = qpn_of(i), .sent_32b = 128,
						     .sent_pkts = 1,
						     .ts_ns = T0 + r * EPOCH_NS + 100u + i};
			uint64_t n = fw ? time_fw(fw, &ev) : time_bl(bl, &ev);
			agg_add(&res[CASE_NEW_EPOCH], n);
			/* a flow's first closed record takes its first block */
			agg_add(&res[r == 1 ? CASE_EPOCH_BLOCK : CASE_EPOCH_FITS], n);
		}
}

static void report(FILE *f, const struct agg fw[NCASES], const struct agg bl[NCASES])
{
	fprintf(f, "%-32s %7s %9s %5s %5s %9s %5s %5s\n", "case", "events", "pulse avg", "min",
		"max", "hash avg", "min", "max");
	for (int c = 0; c < NCASES; c++) {
		uint64_t a = avg100(&fw[c]), b = avg100(&bl[c]);
		if (c >= CASE_EPOCH_FITS) { /* the baseline has no such split */
			fprintf(f, "%-32s %7lu %6lu.%02lu %5lu %5lu\n", case_name[c],
				(unsigned long)fw[c].n, (unsigned long)(a / 100),
				(unsigned long)(a % 100), (unsigned long)fw[c].min,
				(unsigned long)fw[c].max);
			continue;
		}
		fprintf(f, "%-32s %7lu %6lu.%02lu %5lu %5lu %6lu.%02lu %5lu %5lu\n", case_name[c],
			(unsigned long)fw[c].n, (unsigned long)(a / 100), (unsigned long)(a % 100),
			(unsigned long)fw[c].min, (unsigned long)fw[c].max, (unsigned long)(b / 100),
			(unsigned long)(b % 100), (unsigned long)bl[c].min, (unsigned long)bl[c].max);
	}
}

int rv64_icount_main(int argc, char **argv, void *mem, size_t size)
{
	const char *out = argc > 0 ? argv[0] : NULL;

	/* Is minstret exact? Under -icount shift=0 an empty bracket costs the
	 * same handful of instructions every time. */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < 64; i++) {
		uint64_t d = empty_pair();
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	if (lo != hi || hi > 16) {
		printf("icount: minstret does not count instructions here (empty bracket %lu..%lu); "
		       "run qemu with -icount shift=0\n",
		       (unsigned long)lo, (unsigned long)hi);
		return 1;
	}
	overhead = lo;

	struct pulse_fw_limits lim = {.max_flows = 4096,
				      .pool_blocks = 4096,
				      .max_threads = 1,
				      .platform = PULSE_PLATFORM_RV64_EMU,
				      .instance_id = 1,
				      .spin_relax = NULL};
	size_t fw_need = pulse_fw_memory_size(&lim);
	size_t fw_size = (fw_need + 63u) & ~(size_t)63u;
	size_t bl_need = bl_memory_size(NFLOWS, WINDOW_NS, EPOCH_NS);
	if (fw_need == 0 || fw_size + bl_need > size) {
		printf("icount: need %lu + %lu bytes, the image has %lu\n", (unsigned long)fw_need,
		       (unsigned long)bl_need, (unsigned long)size);
		return 1;
	}
	struct pulse_fw *fw = pulse_fw_init(mem, fw_need, &lim, T0);
	static struct bl_table bl;
	bl_init(&bl, (char *)mem + fw_size, NFLOWS, WINDOW_NS, EPOCH_NS, T0);
	if (!fw) {
		printf("icount: pulse_fw_init failed\n");
		return 1;
	}

	static struct agg r_fw[NCASES], r_bl[NCASES];
	memset(r_fw, 0, sizeof r_fw);
	memset(r_bl, 0, sizeof r_bl);
	run_events(fw, NULL, r_fw);
	run_events(NULL, &bl, r_bl);

	/* Both must have counted every event: otherwise the numbers measure a
	 * drop path, not the event path. */
	uint64_t st[PULSE_STAT_COUNT];
	pulse_fw_stats(fw, st);
	uint64_t sent = (uint64_t)NFLOWS * (3 + ROUNDS);
	int ok = st[PULSE_STAT_EVENTS] == sent && st[PULSE_STAT_UNITS] == sent * 128 &&
		 bl.events == sent && bl.units == sent * 128 && st[PULSE_STAT_FLOWS_CREATED] == NFLOWS;
	if (!ok) {
		printf("icount: FAIL: events not all counted (pulse %lu events %lu units, "
		       "baseline %lu events %lu units, %lu sent)\n",
		       (unsigned long)st[PULSE_STAT_EVENTS], (unsigned long)st[PULSE_STAT_UNITS],
		       (unsigned long)bl.events, (unsigned long)bl.units, (unsigned long)sent);
		return 1;
	}

	uint64_t a100 = avg100(&r_fw[CASE_SAME]), b100 = avg100(&r_fw[CASE_NEW_EPOCH]),
		 c100 = avg100(&r_fw[CASE_NEW_FLOW]);
	int t_same = a100 <= 4000, t_epoch = b100 <= 4000, t_new = c100 <= 15000;
	FILE *files[2] = {stdout, NULL};
	if (out) {
		files[1] = fopen(out, "w");
		if (!files[1])
			printf("icount: cannot create %s\n", out);
	}
	for (int k = 0; k < 2; k++) {
		FILE *f = files[k];
		if (!f)
			continue;
		fprintf(f,
			"RISC-V instructions retired per TX event (rv64imac, -O2, qemu -icount "
			"shift=0, minstret)\n"
			"pulse = pulse_fw_on_tx (firmware/core); hash = open-addressing QPN hash "
			"table + fixed per-flow u32 epoch array (baseline.c)\n"
			"%u flows, %u-ns epochs; empty minstret bracket = %lu instructions, "
			"subtracted\n",
			NFLOWS, EPOCH_NS, (unsigned long)overhead);
		report(f, r_fw, r_bl);
		/* steady state: one closed record in PULSE_FW_RECORDS_PER_BLOCK
		 * takes a block */
		uint64_t fits = avg100(&r_fw[CASE_EPOCH_FITS]), blk = avg100(&r_fw[CASE_EPOCH_BLOCK]);
		uint64_t steady = (fits * (PULSE_FW_RECORDS_PER_BLOCK - 1u) + blk +
				   PULSE_FW_RECORDS_PER_BLOCK / 2u) /
				  PULSE_FW_RECORDS_PER_BLOCK;
		fprintf(f, "%-32s %7s %6lu.%02lu   (a block every %u records: (%u x fits + 1 x block) / %u)\n",
			"(b) steady state", "", (unsigned long)(steady / 100),
			(unsigned long)(steady % 100), PULSE_FW_RECORDS_PER_BLOCK,
			PULSE_FW_RECORDS_PER_BLOCK - 1u, PULSE_FW_RECORDS_PER_BLOCK);
		uint64_t bavg = (burst_total * 100 + NFLOWS / 2) / NFLOWS;
		fprintf(f, "%-32s %7u %6lu.%02lu   (pulse_fw_on_tx_burst, one batch: per event)\n",
			"(a) same epoch, one burst call", NFLOWS, (unsigned long)(bavg / 100),
			(unsigned long)(bavg % 100));
		fprintf(f,
			"target existing flow <= 40: %s for (a) same epoch (%lu.%02lu); %s for (b) "
			"new epoch (%lu.%02lu)\n"
			"target new flow <= 150: %s ((c) %lu.%02lu)\n",
			t_same ? "met" : "MISSED", (unsigned long)(a100 / 100),
			(unsigned long)(a100 % 100), t_epoch ? "met" : "MISSED",
			(unsigned long)(b100 / 100), (unsigned long)(b100 % 100),
			t_new ? "met" : "MISSED", (unsigned long)(c100 / 100),
			(unsigned long)(c100 % 100));
	}
	if (files[1] && fclose(files[1]) != 0) {
		printf("icount: writing %s failed\n", out);
		return 1;
	}
	return 0;
}
