/* Benchmarks for run_trace (make bench-run-trace; results in BENCHMARKS.md).
 *
 * On one capture, in one process, best of N runs each, side by side:
 *   floor     libpcap reading every record, nothing else
 *   decode    libpcap reading + pulse_roce_decode of every record
 *   memdecode pulse_roce_decode alone, over frames already in memory
 *   replay    the whole of run_trace: pass 1 (flows, QPN recovery) and
 *             pass 2 (aggregation, firmware core, mailbox polls)
 * Usage: bench_run_trace CAPTURE [RUNS] */
#define _GNU_SOURCE
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t floor_run(const char *path, int decode, uint64_t *roce)
{
	struct sim_pcap in;
	if (sim_pcap_open(&in, path) != SIM_EXIT_OK) {
		fprintf(stderr, "%s\n", in.err);
		exit(1);
	}
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts, n = 0, ok = 0;
	struct pulse_roce_pkt k;
	while (sim_pcap_next(&in, &d, &cap, &wire, &ts) == 1) {
		n++;
		if (decode)
			ok += pulse_roce_decode(d, cap, wire, in.link, &k) == PULSE_ROCE_OK;
		else
			ok += d[0]; /* touch the frame, as a decoder must */
	}
	sim_pcap_close(&in);
	*roce = ok;
	return n;
}

/* libpcap as most programs use it: pcap_open_offline, stdio's default buffer. */
static uint64_t plain_libpcap(const char *path)
{
	char eb[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!p) {
		fprintf(stderr, "%s\n", eb);
		exit(1);
	}
	struct pcap_pkthdr *h;
	const u_char *d;
	uint64_t n = 0, sum = 0;
	while (pcap_next_ex(p, &h, &d) == 1) {
		n++;
		sum += d[0];
	}
	pcap_close(p);
	return n + (sum & 0); /* sum keeps the reads */
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_run_trace CAPTURE [RUNS]\n");
		return 2;
	}
	const char *path = argv[1];
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	if (runs < 1)
		runs = 1;
	double best_floor = 1e30, best_dec = 1e30, best_mem = 1e30, best_rep = 1e30, best_plain = 1e30;
	uint64_t n = 0, roce = 0, sink = 0;

	/* frames for the in-memory decode: the first 2 M records */
	const uint32_t MEMN = 2000000;
	uint8_t *frames = malloc((size_t)MEMN * 128);
	uint32_t *caps = malloc(sizeof(uint32_t) * MEMN), *wires = malloc(sizeof(uint32_t) * MEMN);
	uint32_t nm = 0;
	if (!frames || !caps || !wires)
		return 1;
	struct sim_pcap in;
	if (sim_pcap_open(&in, path) != SIM_EXIT_OK) {
		fprintf(stderr, "%s\n", in.err);
		return 1;
	}
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts;
	while (nm < MEMN && sim_pcap_next(&in, &d, &cap, &wire, &ts) == 1) {
		caps[nm] = cap < 128 ? cap : 128;
		wires[nm] = wire;
		memcpy(frames + (size_t)nm * 128, d, caps[nm]);
		nm++;
	}
	enum pulse_roce_link link = in.link;
	sim_pcap_close(&in);

	for (int r = 0; r < runs; r++) {
		double t0 = now_s();
		n = floor_run(path, 0, &sink);
		double t1 = now_s();
		floor_run(path, 1, &roce);
		double t2 = now_s();
		struct pulse_roce_pkt k;
		uint64_t ok = 0;
		for (uint32_t i = 0; i < nm; i++)
			ok += pulse_roce_decode(frames + (size_t)i * 128, caps[i], wires[i], link, &k) ==
			      PULSE_ROCE_OK;
		double t3 = now_s();
		sink += ok;
		struct sim_cfg c;
		sim_cfg_default(&c);
		struct sim_trace t;
		struct sim_emu e;
		char err[1200];
		sim_trace_init(&t, &c);
		if (sim_trace_scan(&t, path, err, sizeof err) != SIM_EXIT_OK ||
		    sim_emu_init(&e, &t, t.first_ns, err, sizeof err) ||
		    sim_replay(&e, path, err, sizeof err) != SIM_EXIT_OK) {
			fprintf(stderr, "replay: %s\n", err);
			return 1;
		}
		double t4 = now_s();
		if (r == 0) {
			uint64_t meas = 0, tx = 0;
			for (uint32_t i = 0; i < t.nqps; i++) {
				meas += t.qps[i].meas_bytes;
				tx += t.qps[i].tx_bytes;
			}
			printf("capture: %s: %llu records (%llu RoCEv2), %.3f s of traffic, %llu bytes "
			       "sent by %u QPs on %u NICs, %llu measured by the firmware\n",
			       path, (unsigned long long)n, (unsigned long long)roce,
			       (double)(t.last_ns - t.first_ns) / 1e9, (unsigned long long)tx, t.nqps,
			       t.nnics, (unsigned long long)meas);
		}
		sim_emu_free(&e);
		sim_trace_free(&t);
		double t5 = now_s();
		if (plain_libpcap(path) != n)
			return 1;
		double t6 = now_s();
		if (t6 - t5 < best_plain) best_plain = t6 - t5;
		if (t1 - t0 < best_floor) best_floor = t1 - t0;
		if (t2 - t1 < best_dec) best_dec = t2 - t1;
		if (t3 - t2 < best_mem) best_mem = t3 - t2;
		if (t4 - t3 < best_rep) best_rep = t4 - t3;
	}
	printf("\nbest of %d runs, one core, file in the page cache:\n\n", runs);
	printf("| measurement | time (s) | M records/s | vs floor |\n|---|---|---|---|\n");
	printf("| libpcap read only, 1 MiB stdio buffer (the floor) | %.3f | %.1f | 1.00 |\n", best_floor,
	       (double)n / best_floor / 1e6);
	printf("| libpcap read only, stdio's default buffer (pcap_open_offline) | %.3f | %.1f | %.2f |\n",
	       best_plain, (double)n / best_plain / 1e6, best_plain / best_floor);
	printf("| libpcap read + RoCEv2 decode | %.3f | %.1f | %.2f |\n", best_dec,
	       (double)n / best_dec / 1e6, best_dec / best_floor);
	printf("| decode only, %u frames in memory | %.3f | %.1f | - |\n", nm, best_mem,
	       (double)nm / best_mem / 1e6);
	printf("| run_trace end to end (2 passes, firmware, polls) | %.3f | %.1f | %.2f |\n",
	       best_rep, (double)n / best_rep / 1e6, best_rep / best_floor);
	fprintf(stderr, "(checksum %llu)\n", (unsigned long long)sink);
	free(frames);
	free(caps);
	free(wires);
	return 0;
}
