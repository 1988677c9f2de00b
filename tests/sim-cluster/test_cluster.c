/* Validation of the cluster simulator (sim/cluster/): it is only useful if
 * it is right. Every test runs the simulator in-process on a small
 * scenario, then reads back the run directory exactly as the host agent
 * would (the .evs streams and .rec hook records), and checks physics:
 *  - per-rank volumes of each collective against the paper's Appendix B;
 *  - a straggler at 1/p bandwidth makes ~40(p-1) us gaps on the other
 *    ranks of a 2-channel 400 Gb/s ring with 1 MB slices (paper §6.1);
 *  - a late receiver kernel stalls its sender after one buffer's worth;
 *  - no NIC's TX or RX exceeds its link capacity;
 *  - a NIC-down leaves that rank with the least volume in the hung op;
 *  - CPU contention stretches an operator but not its non-zero epochs;
 *  - a failure changes nothing but truth.json before it starts;
 *  - determinism from the seed; bad scenarios get clear errors.
 * Epochs are the firmware's: 32 us of NIC time. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cJSON.h>
#include <ftw.h>
#include <inttypes.h>
#include <glob.h>
#include <math.h>
#include <unistd.h>

#include "../../sim/cluster/cluster.h"
#include "cluster_testutil.h"
#include "pulse/cluster_run.h"
#include "pulse/event_stream.h"
#include "pulse/host_event.h"

#define EPOCH 32000.0

/* ---------- volumes (Appendix B) ---------- */
static void volume_case(const char *coll, const char *algo, int n, uint64_t size,
			double (*expect)(int rank, int n, uint64_t size))
{
	char json[1024];
	snprintf(json, sizeof json,
		 "{\"name\":\"vol\",\"seed\":5,\"workload\":\"standalone\",\"iterations\":1,"
		 "\"cluster\":{\"hosts\":%d,\"gpus_per_host\":1},\"nccl\":{\"algo\":\"%s\"},"
		 "\"standalone\":{\"pattern\":\"collective\",\"collective\":\"%s\",\"msg_bytes\":%" PRIu64
		 "}}",
		 n, algo, coll, size);
	char *dir = run_json(json, NULL);
	for (int r = 0; r < n; r++) {
		struct stream s;
		load_evs(dir, r, 0, &s);
		double want = expect(r, n, size);
		double got = (double)s.bytes;
		if (fabs(got - want) > 0.002 * want + 64 * 32) {
			fprintf(stderr, "%s/%s n=%d rank %d: %.0f bytes, expected %.0f\n", coll, algo, n,
				r, got, want);
			fail();
		}
		free_stream(&s);
	}
	done(dir);
}

static double v_allreduce(int r, int n, uint64_t size)
{
	(void)r;
	return 2.0 * (double)size * (n - 1) / n;
}
static double v_gather(int r, int n, uint64_t size)
{
	(void)r;
	return (double)size * (n - 1); /* sendcount / recvcount * (s - 1) */
}
static double v_bcast(int r, int n, uint64_t size)
{
	return r == n - 1 ? 0 : (double)size; /* chain from root 0: the last only receives */
}
static double v_reduce(int r, int n, uint64_t size)
{
	(void)n;
	return r == 0 ? 0 : (double)size; /* chain to root 0: the root only receives */
}
/* tree all-reduce: up to the parent once, down to each child, per tree */
static int tparent(int n, int t, int r)
{
	int p = t ? n - 1 - r : r;
	return p == 0 ? -1 : 1;
}
static int tchildren(int n, int t, int r)
{
	int p = t ? n - 1 - r : r, c = 0;
	for (int k = 0; k < 2; k++)
		c += 2 * p + 1 + k < n;
	return c;
}
static double v_tree(int r, int n, uint64_t size)
{
	double v = 0;
	for (int t = 0; t < 2; t++) /* 2 channels: channel c uses tree c % 2, half the data */
		v += (double)size / 2 * ((tparent(n, t, r) > 0) + tchildren(n, t, r));
	return v;
}

static void test_volumes(void **state)
{
	(void)state;
	volume_case("allreduce", "ring", 4, 64u << 20, v_allreduce);
	volume_case("allreduce", "ring", 3, 10000000, v_allreduce);
	volume_case("allgather", "ring", 4, 16u << 20, v_gather);
	volume_case("reducescatter", "ring", 5, 8u << 20, v_gather);
	volume_case("broadcast", "ring", 4, 32u << 20, v_bcast);
	volume_case("reduce", "ring", 4, 32u << 20, v_reduce);
	volume_case("allreduce", "tree", 7, 32u << 20, v_tree);
}

/* send/recv: neighbour exchange on a 2x2 torus (2 distinct neighbours),
 * all-to-one and one-to-all */
static void test_volumes_p2p(void **state)
{
	(void)state;
	const char *pat[] = { "neighbor_exchange", "all_to_one", "one_to_all" };
	for (int p = 0; p < 3; p++) {
		char json[512];
		snprintf(json, sizeof json,
			 "{\"name\":\"p2p\",\"seed\":5,\"workload\":\"standalone\",\"iterations\":2,"
			 "\"standalone\":{\"pattern\":\"%s\",\"msg_bytes\":8388608}}",
			 pat[p]);
		char *dir = run_json(json, NULL);
		for (int r = 0; r < 4; r++) {
			struct stream s;
			load_evs(dir, r, 0, &s);
			double per = 2 * 8388608.0, want;
			if (p == 0)
				want = 2 * per;
			else if (p == 1)
				want = r == 0 ? 0 : per;
			else
				want = r == 0 ? 3 * per : 0;
			assert_true(fabs((double)s.bytes - want) <= 0.001 * want + 1024);
			free_stream(&s);
		}
		done(dir);
	}
}

/* ---------- straggler gaps (§6.1) ---------- */
/* Median idle gap between consecutive slices of each QP on a NIC, in
 * [t0, t1) (NIC time). Gaps shorter than `min_gap` are inside a slice. */
static double median_gap(const struct stream *s, uint64_t t0, uint64_t t1, double min_gap,
			 size_t *count)
{
	double *g = calloc(s->n + 1, sizeof *g);
	size_t ng = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->ev[i].t < t0 || s->ev[i].t >= t1)
			continue;
		/* previous event of the same QP */
		for (size_t j = i; j-- > 0;) {
			if (s->ev[j].qpn != s->ev[i].qpn)
				continue;
			if (s->ev[j].t >= t0) {
				double d = (double)(s->ev[i].t - s->ev[j].t);
				if (d >= min_gap && d < 2e6)
					g[ng++] = d;
			}
			break;
		}
	}
	double m = 0;
	if (ng) {
		for (size_t i = 0; i < ng; i++)
			for (size_t j = i + 1; j < ng; j++)
				if (g[j] < g[i]) {
					double x = g[i];
					g[i] = g[j];
					g[j] = x;
				}
		m = g[ng / 2];
	}
	free(g);
	*count = ng;
	return m;
}

static void straggler_case(double p)
{
	char json[1024];
	/* memory misalignment caps host1's NIC at 1/p of line rate from
	 * iteration 1; 4 hosts x 1 GPU, ring all-reduce of 128 MiB, C = 2 */
	snprintf(json, sizeof json,
		 "{\"name\":\"strag\",\"seed\":11,\"workload\":\"standalone\",\"iterations\":2,"
		 "\"cluster\":{\"hosts\":4,\"gpus_per_host\":1,\"nic_gbps\":400},"
		 "\"nccl\":{\"channels\":2,\"slice_bytes\":1048576},"
		 "\"standalone\":{\"pattern\":\"collective\",\"collective\":\"allreduce\","
		 "\"msg_bytes\":134217728,\"gap_ns\":2000000},"
		 "\"failure\":{\"type\":\"memory_misalignment\",\"host\":1,\"gpu\":0,"
		 "\"severity\":%g,\"start_iteration\":1}}",
		 1.0 / p);
	char *dir = run_json(json, NULL);
	double expect = 41943.04 * (p - 1); /* 1 MiB at 25 GB/s per channel = 41.9 us */
	for (int r = 0; r < 4; r++) {
		struct stream s;
		load_evs(dir, r, 0, &s);
		/* iteration 1 is the second half of the traffic: split at the
		 * largest idle time (the 2 ms gap between the rounds) */
		size_t cut = 1;
		uint64_t best = 0;
		for (size_t i = 1; i < s.n; i++)
			if (s.ev[i].t - s.ev[i - 1].t > best) {
				best = s.ev[i].t - s.ev[i - 1].t;
				cut = i;
			}
		size_t c0, c1;
		double g0 = median_gap(&s, s.ev[0].t, s.ev[cut].t, 10e3, &c0);
		double g1 = median_gap(&s, s.ev[cut].t, s.ev[s.n - 1].t + 1, 10e3, &c1);
		if (r == 1) {
			/* the straggler itself sends without gaps */
			assert_true(g1 == 0 || g1 < 0.3 * expect);
		} else {
			if (fabs(g1 - expect) > 0.25 * expect) {
				fprintf(stderr, "p=%g rank %d: median gap %.1f us, expected %.1f us\n", p,
					r, g1 / 1e3, expect / 1e3);
				fail();
			}
		}
		fprintf(stderr, "p=%g rank %d: %zu gaps, median %.1f us (healthy); %zu, %.1f us (straggler)\n",
			p, r, c0, g0 / 1e3, c1, g1 / 1e3);
		/* healthy round: gaps only where a loop starts (NCCL runs its loops in
		 * sequence), about one slice in 2(n-1) x chunk_slices = 12 */
		assert_true(c0 * 8 < (size_t)(s.n / 16));
		/* 32 us epochs: the healthy ranks are active in about 1/p of them */
		uint64_t e0 = s.ev[cut].t, e1 = s.ev[s.n - 1].t;
		size_t ne = (size_t)((e1 - e0) / EPOCH) + 1, nz = 0;
		char *act = calloc(ne, 1);
		for (size_t i = cut; i < s.n; i++)
			act[(size_t)((s.ev[i].t - e0) / EPOCH)] = 1;
		for (size_t i = 0; i < ne; i++)
			nz += act[i];
		double frac = (double)nz / ne;
		if (r == 1)
			assert_true(frac > 0.9);
		else if (p >= 4)
			assert_true(frac < 0.6);
		free(act);
		free_stream(&s);
	}
	done(dir);
}

static void test_straggler_gap(void **state)
{
	(void)state;
	straggler_case(2);
	straggler_case(4);
}

/* ---------- late receiver (§6.1) ---------- */
static void test_late_receiver(void **state)
{
	(void)state;
	/* one-to-all from rank 0; rank 2's GPU is busy 5 ms longer before its
	 * receive kernel (its CPU already called ncclRecv) */
	const char *json =
		"{\"name\":\"late\",\"seed\":3,\"workload\":\"standalone\",\"iterations\":1,"
		"\"nccl\":{\"slots\":4,\"slice_bytes\":1048576,\"p2p_channels\":2},"
		"\"standalone\":{\"pattern\":\"one_to_all\",\"msg_bytes\":33554432,"
		"\"delay_ns\":[0,0,5000000,0]}}";
	char *dir = run_json(json, NULL);
	struct stream s;
	load_evs(dir, 0, 0, &s);
	/* the QPs of rank 0 towards host2: from its hook records (RTR GIDs) */
	char pat[512];
	snprintf(pat, sizeof pat, "%s/hosts/host0/hook-*.rec", dir);
	glob_t gl;
	assert_int_equal(glob(pat, 0, NULL, &gl), 0);
	size_t len;
	uint8_t *b = (uint8_t *)read_file(gl.gl_pathv[0], &len);
	globfree(&gl);
	uint32_t to2[8];
	int n2 = 0;
	for (size_t off = PULSE_HKR_HEADER_SIZE; off + 120 <= len; off += 120) {
		struct pulse_hook_record r;
		memcpy(&r, b + off, sizeof r);
		if (r.kind == PULSE_HOOK_QP_RTR && r.u.qp.remote_gid[13] == 2 && n2 < 8)
			to2[n2++] = r.u.qp.qpn;
	}
	free(b);
	assert_true(n2 >= 2);
	/* bytes towards rank 2 in its first burst (before a >= 1 ms pause) */
	uint64_t burst = 0, last = 0, total = 0;
	int stalled = 0;
	for (size_t i = 0; i < s.n; i++) {
		int mine = 0;
		for (int k = 0; k < n2; k++)
			mine |= s.ev[i].qpn == to2[k];
		if (!mine)
			continue;
		total += s.ev[i].bytes;
		if (last && s.ev[i].t - last > 1000000)
			stalled = 1;
		if (!stalled)
			burst += s.ev[i].bytes;
		last = s.ev[i].t;
	}
	assert_true(stalled);
	/* one buffer per channel: slots x slice x channels sent, then a stall */
	assert_int_equal(burst, 4ull * 1048576 * 2);
	assert_int_equal(total, 33554432ull);
	free_stream(&s);
	done(dir);
}

/* ---------- link capacity ---------- */
static void capacity_case(const char *json, int hosts, int gpus)
{
	char *dir = run_json(json, NULL);
	double cap = 50.0; /* bytes per ns at 400 Gb/s */
	double win = 256e3;
	/* TX: per NIC; RX: per destination NIC via the RTR records */
	size_t nn = (size_t)hosts * gpus;
	double **rx = calloc(nn, sizeof *rx);
	size_t nw = 0;
	struct stream *ss = calloc(nn, sizeof *ss);
	for (int h = 0; h < hosts; h++)
		for (int g = 0; g < gpus; g++) {
			load_evs(dir, h, g, &ss[h * gpus + g]);
			struct stream *s = &ss[h * gpus + g];
			if (s->n && s->ev[s->n - 1].t / win + 1 > nw)
				nw = (size_t)(s->ev[s->n - 1].t / win) + 1;
		}
	(void)rx;
	for (size_t i = 0; i < nn; i++) {
		struct stream *s = &ss[i];
		if (!s->n) {
			free_stream(s);
			continue;
		}
		/* TX windows of 256 us, from the NIC's first event */
		uint64_t t0 = s->ev[0].t;
		double acc = 0;
		uint64_t w = 0;
		for (size_t k = 0; k < s->n; k++) {
			uint64_t wk = (s->ev[k].t - t0) / (uint64_t)win;
			if (wk != w) {
				acc = 0;
				w = wk;
			}
			acc += s->ev[k].bytes;
			/* one coalesced event (<= 64 KiB) per QP may straddle */
			assert_true(acc <= cap * win + 8 * 65536);
		}
		free_stream(s);
	}
	free(ss);
	free(rx);
	done(dir);
}

static void test_link_capacity(void **state)
{
	(void)state;
	capacity_case("{\"name\":\"cap1\",\"seed\":2,\"workload\":\"standalone\",\"iterations\":2,"
		      "\"standalone\":{\"pattern\":\"one_to_all\",\"msg_bytes\":16777216}}",
		      4, 1);
	capacity_case("{\"name\":\"cap2\",\"seed\":2,\"workload\":\"moe\",\"iterations\":2,"
		      "\"cluster\":{\"hosts\":4,\"gpus_per_host\":2}}",
		      4, 2);
}

/* RX side: all-to-one; the root receives from 3 senders, whose summed TX
 * towards it must stay within its link (NIC clocks differ: compare each
 * sender's total rate over the whole transfer instead of windows). */
static void test_incast_rx(void **state)
{
	(void)state;
	char *dir = run_json("{\"name\":\"incast\",\"seed\":2,\"workload\":\"standalone\","
			     "\"iterations\":1,\"standalone\":{\"pattern\":\"all_to_one\","
			     "\"msg_bytes\":67108864,\"gap_ns\":0}}",
			     NULL);
	double sum_rate = 0;
	for (int r = 1; r < 4; r++) {
		struct stream s;
		load_evs(dir, r, 0, &s);
		double dur = (double)(s.ev[s.n - 1].t - s.ev[0].t);
		double rate = (double)s.bytes / dur;
		assert_true(rate < 50.0 / 3 * 1.05); /* a third of the root's link each */
		sum_rate += rate;
		free_stream(&s);
	}
	assert_true(sum_rate <= 50.0 * 1.02);
	assert_true(sum_rate >= 50.0 * 0.9);
	done(dir);
}

/* ---------- NIC down ---------- */
static void test_nic_down(void **state)
{
	(void)state;
	const char *json =
		"{\"name\":\"nicdown\",\"seed\":4,\"workload\":\"gpt\",\"iterations\":3,"
		"\"cluster\":{\"hosts\":4,\"gpus_per_host\":1},\"gpt\":{\"pp\":1,\"dp\":4},"
		"\"failure\":{\"type\":\"nic_down\",\"host\":2,\"gpu\":0,\"start_iteration\":1}}";
	struct sc_stats st;
	char *dir = run_json(json, &st);
	assert_true(st.hung);
	/* the hung operator: the DP op with completed=false; per rank, bytes
	 * sent in it = total NIC bytes minus the bytes of completed ops */
	char path[512];
	snprintf(path, sizeof path, "%s/truth-ops.jsonl", dir);
	size_t len;
	char *t = read_file(path, &len);
	assert_non_null(t);
	double done_bytes[4] = { 0 };
	int hung_seen = 0;
	for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
		int host;
		const char *h = strstr(line, "\"host\":\"host");
		assert_non_null(h);
		host = atoi(h + 12);
		const char *b = strstr(line, "\"bytes\":");
		assert_non_null(b);
		if (strstr(line, "\"completed\":true"))
			done_bytes[host] += atof(b + 8);
		else
			hung_seen = 1;
	}
	free(t);
	assert_true(hung_seen);
	double hung[4];
	for (int r = 0; r < 4; r++) {
		struct stream s;
		load_evs(dir, r, 0, &s);
		hung[r] = (double)s.bytes - done_bytes[r];
		free_stream(&s);
	}
	for (int r = 0; r < 4; r++)
		if (r != 2)
			assert_true(hung[2] < hung[r]);
	/* its host saw the link go down (links.jsonl), after the onset and in
	 * that host's clock; no other host saw anything */
	for (int h = 0; h < 4; h++) {
		snprintf(path, sizeof path, "%s/hosts/host%d/links.jsonl", dir, h);
		char *l = read_file(path, &len);
		if (h != 2) {
			assert_null(l);
			continue;
		}
		assert_non_null(l);
		assert_ptr_equal(strchr(l, '\n'), l + len - 1); /* one line */
		struct pulse_link_event e;
		char err[128];
		assert_int_equal(pulse_link_event_from_json(l, len - 1, &e, err, sizeof err), 0);
		assert_string_equal(e.host, "host2");
		assert_string_equal(e.dev, "mlx5_0");
		assert_string_equal(e.netdev, "eth0");
		assert_true(pulse_link_event_is_down(&e));
		cJSON *truth = read_run_json(dir, "truth.json");
		const cJSON *f = cJSON_GetObjectItem(truth, "failure");
		const cJSON *on = cJSON_GetObjectItem(f, "start_host_ns");
		assert_true(cJSON_IsString(on));
		/* a fail-stop starts when it stops; t_ns is read back to within a µs */
		assert_true(e.t_ns + 1000 >= strtoull(on->valuestring, NULL, 10));
		cJSON_Delete(truth);
		free(l);
	}
	done(dir);
}

/* ---------- CPU contention ---------- */
struct opstat {
	double dur;    /* first to last byte, ns */
	double active; /* non-zero 32 us epochs x 32 us */
};

/* the op of iteration `it` on NIC (r, 0): traffic between the rounds'
 * 3 ms pauses */
static void round_stats(const struct stream *s, int it, struct opstat *o)
{
	size_t start = 0, k = 0;
	size_t i;
	for (i = 1; i <= s->n; i++) {
		if (i == s->n || s->ev[i].t - s->ev[i - 1].t > 2500000) {
			if ((int)k == it)
				break;
			k++;
			start = i;
		}
	}
	uint64_t t0 = s->ev[start].t, t1 = s->ev[i - 1].t;
	o->dur = (double)(t1 - t0);
	/* epochs aligned to the NIC clock, as the firmware does */
	uint64_t e0 = t0 / (uint64_t)EPOCH;
	size_t ne = (size_t)(t1 / (uint64_t)EPOCH - e0) + 1, nz = 0;
	char *act = calloc(ne, 1);
	for (size_t j = start; j < i; j++)
		act[s->ev[j].t / (uint64_t)EPOCH - e0] = 1;
	for (size_t j = 0; j < ne; j++)
		nz += act[j];
	o->active = (double)nz * EPOCH;
	free(act);
}

static void test_cpu_contention(void **state)
{
	(void)state;
	const char *json =
		"{\"name\":\"cpu\",\"seed\":8,\"workload\":\"standalone\",\"iterations\":2,"
		"\"standalone\":{\"pattern\":\"collective\",\"collective\":\"allreduce\","
		"\"msg_bytes\":268435456,\"gap_ns\":3000000},"
		"\"failure\":{\"type\":\"cpu_contention\",\"host\":1,\"gpu\":0,\"severity\":1.0,"
		"\"start_iteration\":1}}";
	char *dir = run_json(json, NULL);
	struct stream s;
	load_evs(dir, 1, 0, &s);
	struct opstat a, b;
	round_stats(&s, 0, &a);
	round_stats(&s, 1, &b);
	fprintf(stderr, "cpu contention: duration %.2f -> %.2f ms, active %.2f -> %.2f ms\n",
		a.dur / 1e6, b.dur / 1e6, a.active / 1e6, b.active / 1e6);
	assert_true(b.dur > 1.4 * a.dur);
	assert_true(fabs(b.active - a.active) < 0.15 * a.active);
	free_stream(&s);
	done(dir);
}

/* ---------- no leak: only truth.json differs before the failure ---------- */
static void test_truth_only(void **state)
{
	(void)state;
	const char *base =
		"{\"name\":\"leak\",\"seed\":21,\"workload\":\"gpt\",\"iterations\":3,"
		"\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"gpt\":{\"pp\":2,\"dp\":2}%s}";
	char j1[1024], j2[1024];
	snprintf(j1, sizeof j1, base, "");
	snprintf(j2, sizeof j2, base,
		 ",\"failure\":{\"type\":\"pcie_downgrade\",\"host\":3,\"gpu\":1,\"severity\":0.4,"
		 "\"start_iteration\":2}");
	char *d1 = run_json(j1, NULL), *d2 = run_json(j2, NULL);
	char p1[512], p2[512];
	size_t l1, l2;
	/* cluster.json identical */
	snprintf(p1, sizeof p1, "%s/cluster.json", d1);
	snprintf(p2, sizeof p2, "%s/cluster.json", d2);
	char *a = read_file(p1, &l1), *b = read_file(p2, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	free(a);
	free(b);
	/* the same files */
	glob_t g1, g2;
	snprintf(p1, sizeof p1, "%s/hosts/*/*", d1);
	snprintf(p2, sizeof p2, "%s/hosts/*/*", d2);
	assert_int_equal(glob(p1, 0, NULL, &g1), 0);
	assert_int_equal(glob(p2, 0, NULL, &g2), 0);
	assert_int_equal(g1.gl_pathc, g2.gl_pathc);
	for (size_t i = 0; i < g1.gl_pathc; i++) {
		assert_string_equal(g1.gl_pathv[i] + strlen(d1), g2.gl_pathv[i] + strlen(d2));
		/* a common prefix: everything up to the failure is identical */
		a = read_file(g1.gl_pathv[i], &l1);
		b = read_file(g2.gl_pathv[i], &l2);
		size_t k = 0;
		while (k < l1 && k < l2 && a[k] == b[k])
			k++;
		assert_true(k > (l1 < l2 ? l1 : l2) / 3);
		free(a);
		free(b);
	}
	globfree(&g1);
	globfree(&g2);
	/* truth.json says what happened */
	snprintf(p2, sizeof p2, "%s/truth.json", d2);
	a = read_file(p2, &l2);
	assert_non_null(strstr(a, "\"type\":\"pcie_downgrade\""));
	assert_non_null(strstr(a, "\"host\":\"host3\""));
	free(a);
	done(d1);
	done(d2);
}

/* ---------- determinism ---------- */
static void test_deterministic(void **state)
{
	(void)state;
	const char *j = "{\"name\":\"det\",\"seed\":99,\"workload\":\"moe\",\"iterations\":2,"
			"\"cluster\":{\"hosts\":2,\"gpus_per_host\":2}}";
	char *d1 = run_json(j, NULL), *d2 = run_json(j, NULL);
	const char *files[] = { "truth.json", "truth-ops.jsonl", "hosts/host1/mlx5_1.evs",
				"cluster.json" };
	for (int i = 0; i < 4; i++) {
		char p1[512], p2[512];
		size_t l1, l2;
		snprintf(p1, sizeof p1, "%s/%s", d1, files[i]);
		snprintf(p2, sizeof p2, "%s/%s", d2, files[i]);
		char *a = read_file(p1, &l1), *b = read_file(p2, &l2);
		assert_non_null(a);
		assert_int_equal(l1, l2);
		assert_memory_equal(a, b, l1);
		free(a);
		free(b);
	}
	done(d1);
	done(d2);
}

/* ---------- hook records ---------- */
static void test_hook_records(void **state)
{
	(void)state;
	char *dir = run_json("{\"name\":\"hk\",\"seed\":5,\"workload\":\"gpt\",\"iterations\":2,"
			     "\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"gpt\":{\"pp\":2,\"dp\":2}}",
			     NULL);
	char pat[512];
	snprintf(pat, sizeof pat, "%s/hosts/*/hook-*.rec", dir);
	glob_t gl;
	assert_int_equal(glob(pat, 0, NULL, &gl), 0);
	assert_int_equal(gl.gl_pathc, 8);
	for (size_t f = 0; f < gl.gl_pathc; f++) {
		size_t len;
		uint8_t *b = (uint8_t *)read_file(gl.gl_pathv[f], &len);
		uint16_t hs;
		uint32_t pid;
		assert_int_equal(pulse_hkr_check_header(b, (uint32_t)len, &hs, &pid), 0);
		assert_int_equal((len - hs) % 120, 0);
		uint64_t comm[8] = { 0 }, seq[8] = { 0 }, open_group = 0, last_gid = 0;
		int ncomm = 0, rtr = 0, create = 0;
		for (size_t off = hs; off < len; off += 120) {
			struct pulse_hook_record r;
			memcpy(&r, b + off, sizeof r);
			assert_int_equal(r.pid, pid);
			assert_int_equal(r.version, PULSE_HOOK_RECORD_VERSION);
			assert_int_equal(r.source, PULSE_HOOK_SRC_HOOK);
			if (r.kind == PULSE_HOOK_COMM_INIT) {
				assert_true(ncomm < 8);
				comm[ncomm++] = r.u.comm.comm_id;
			} else if (r.kind == PULSE_HOOK_QP_CREATE) {
				create++;
			} else if (r.kind == PULSE_HOOK_QP_RTR) {
				rtr++;
				assert_int_equal(r.u.qp.is_global, 1);
				assert_true(r.u.qp.dest_qpn != 0);
				assert_int_equal(r.u.qp.remote_gid[10], 0xff);
			} else if (r.kind == PULSE_HOOK_GROUP_START) {
				assert_int_equal(open_group, 0);
				assert_int_equal(r.u.group.group_id, last_gid + 1);
				open_group = last_gid = r.u.group.group_id;
			} else if (r.kind == PULSE_HOOK_GROUP_END) {
				assert_int_equal(r.u.group.group_id, open_group);
				open_group = 0;
			} else if (r.kind == PULSE_HOOK_OP) {
				int c;
				for (c = 0; c < ncomm; c++)
					if (comm[c] == r.u.op.comm_id)
						break;
				assert_true(c < ncomm); /* only on an initialised comm */
				assert_int_equal(r.u.op.seq, seq[c]); /* per comm, from 0 */
				seq[c]++;
				assert_int_equal(r.u.op.group_id, open_group);
			}
		}
		assert_int_equal(create, rtr);
		assert_true(create > 0); /* every rank has inter-host peers here */
		free(b);
	}
	globfree(&gl);
	done(dir);
}

/* ---------- truth-ops.jsonl agrees with the traffic ---------- */
/* In a run that completes, the bytes truth-ops.jsonl gives each rank (and
 * per peer) add up to what its NIC's .evs carry; every call has a line. */
static void test_truth_ops_consistent(void **state)
{
	(void)state;
	char *dir = run_json("{\"name\":\"tc\",\"seed\":9,\"workload\":\"moe\",\"iterations\":2,"
			     "\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"moe\":{\"ep\":2}}",
			     NULL);
	char path[512];
	snprintf(path, sizeof path, "%s/truth-ops.jsonl", dir);
	size_t len;
	char *t = read_file(path, &len);
	assert_non_null(t);
	double bytes[8] = { 0 }, peer_bytes[8] = { 0 };
	int lines = 0;
	for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(line);
		assert_non_null(o);
		int g = (int)cJSON_GetObjectItem(o, "rank_global")->valuedouble;
		assert_true(g >= 0 && g < 8);
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "completed")));
		bytes[g] += cJSON_GetObjectItem(o, "bytes")->valuedouble;
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(o, "peers"))
			peer_bytes[g] += cJSON_GetObjectItem(p, "bytes")->valuedouble;
		const char *c = cJSON_GetObjectItem(o, "call_ns")->valuestring;
		const char *st = cJSON_GetObjectItem(o, "start_ns")->valuestring;
		if (strcmp(st, "0"))
			assert_true(strtoull(st, NULL, 10) >= strtoull(c, NULL, 10));
		cJSON_Delete(o);
		lines++;
	}
	free(t);
	assert_true(lines > 0);
	for (int g = 0; g < 8; g++) {
		struct stream s;
		load_evs(dir, g / 2, g % 2, &s);
		assert_true(fabs(bytes[g] - (double)s.bytes) <= 32.0 * s.n);
		assert_true(fabs(peer_bytes[g] - bytes[g]) < 1);
		free_stream(&s);
	}
	/* one OP record per line (hook records of all processes) */
	char pat[512];
	snprintf(pat, sizeof pat, "%s/hosts/*/hook-*.rec", dir);
	glob_t gl;
	assert_int_equal(glob(pat, 0, NULL, &gl), 0);
	int ops = 0;
	for (size_t f = 0; f < gl.gl_pathc; f++) {
		uint8_t *b = (uint8_t *)read_file(gl.gl_pathv[f], &len);
		for (size_t off = PULSE_HKR_HEADER_SIZE; off + 120 <= len; off += 120)
			ops += b[off] == PULSE_HOOK_OP;
		free(b);
	}
	globfree(&gl);
	assert_int_equal(ops, lines);
	done(dir);
}

/* ---------- --pcap through sim/run_trace ---------- */
/* The pcap of each NIC, replayed by run_trace (its own decoder, QPN
 * recovery from the ACKs and NIC emulation), gives the same per-QP volumes
 * as the .evs streams. */
static void test_pcap_run_trace(void **state)
{
	(void)state;
	const char *bin = getenv("PULSE_RUN_TRACE");
	if (!bin)
		bin = "build/bin/pulse-run-trace";
	if (access(bin, X_OK)) {
		fprintf(stderr, "skip: %s not built\n", bin);
		skip();
	}
	const char *json = "{\"name\":\"pc\",\"seed\":6,\"workload\":\"gpt\",\"iterations\":1,"
			   "\"cluster\":{\"hosts\":2,\"gpus_per_host\":2},"
			   "\"gpt\":{\"pp\":2,\"dp\":1,\"act_bytes\":3000000,\"microbatches\":2}}";
	struct sc_scenario sc;
	char err[512];
	assert_int_equal(sc_scenario_parse(json, strlen(json), &sc, err, sizeof err), 0);
	char *dir = strdup("/tmp/pulse-cluster-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct sc_stats st;
	memset(&st, 0, sizeof st);
	assert_int_equal(sc_run(&sc, dir, 1, &st, err, sizeof err), 0);
	assert_true(st.pcap_packets > 0);
	for (int h = 0; h < 2; h++)
		for (int g = 0; g < 2; g++) {
			struct stream s;
			load_evs(dir, h, g, &s);
			char cmd[1024];
			snprintf(cmd, sizeof cmd, "%s --bytes payload --json %s/hosts/host%d/mlx5_%d.pcap", bin,
				 dir, h, g);
			FILE *p = popen(cmd, "r");
			assert_non_null(p);
			size_t cap = 1 << 20, len = 0;
			char *buf = malloc(cap);
			size_t got;
			while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
				len += got;
				if (len + 1 >= cap)
					buf = realloc(buf, cap *= 2);
			}
			buf[len] = 0;
			assert_int_equal(pclose(p), 0);
			cJSON *root = cJSON_Parse(buf);
			assert_non_null(root);
			const cJSON *flows = cJSON_GetObjectItem(root, "flows"), *fl;
			int nflows = 0;
			cJSON_ArrayForEach(fl, flows)
			{
				double tx = cJSON_GetObjectItem(fl, "tx_bytes")->valuedouble;
				if (tx <= 0)
					continue;
				const cJSON *from = cJSON_GetObjectItem(fl, "local_qpn_from");
				assert_string_equal(from->valuestring, "ack");
				uint32_t qpn = (uint32_t)cJSON_GetObjectItem(fl, "local_qpn")->valuedouble;
				uint64_t mine = 0;
				for (size_t i = 0; i < s.n; i++)
					if (s.ev[i].qpn == qpn)
						mine += s.ev[i].bytes;
				if (fabs((double)mine - tx) > 32.0 * 64) {
					fprintf(stderr, "host%d mlx5_%d qpn %u: evs %" PRIu64 " run_trace %.0f\n", h,
						g, qpn, mine, tx);
					fail();
				}
				nflows++;
			}
			/* every sending QP of the .evs is a flow in the pcap */
			uint32_t qs[64];
			int nq = 0;
			for (size_t i = 0; i < s.n; i++) {
				int dup = 0;
				for (int k = 0; k < nq; k++)
					dup |= qs[k] == s.ev[i].qpn;
				if (!dup && nq < 64)
					qs[nq++] = s.ev[i].qpn;
			}
			assert_int_equal(nflows, nq);
			cJSON_Delete(root);
			free(buf);
			free_stream(&s);
		}
	done(dir);
}

/* ---------- bad scenarios ---------- */
static void test_bad_scenarios(void **state)
{
	(void)state;
	bad("", "not valid JSON");
	bad("{\"name\":", "not valid JSON");
	bad("[1,2]", "must be a JSON object");
	bad("{\"iterations\":\"3\"}", "iterations: expected a number");
	bad("{\"iterations\":0}", "out of range");
	bad("{\"iterations\":2.5}", "expected an integer");
	bad("{\"bogus\":1}", "unknown field \"bogus\"");
	bad("{\"cluster\":{\"hostz\":4}}", "cluster: unknown field \"hostz\"");
	bad("{\"workload\":\"bert\"}", "workload");
	bad("{\"cluster\":{\"hosts\":4},\"gpt\":{\"pp\":3,\"dp\":2}}", "pp (3) x dp (2)");
	bad("{\"failure\":{\"type\":\"meteor\"}}", "unknown type \"meteor\"");
	bad("{\"failure\":{\"host\":0}}", "failure.type: required");
	bad("{\"failure\":{\"type\":\"nic_down\",\"host\":9}}", "not in the cluster");
	bad("{\"iterations\":2,\"failure\":{\"type\":\"nic_down\",\"start_iteration\":2}}",
	    "start_iteration");
	bad("{\"name\":\"a/b\"}", "name");
	bad("{\"nccl\":{\"algo\":\"butterfly\"}}", "nccl.algo");
	bad("{\"standalone\":{\"delay_ns\":[1,-2]}}", "delay_ns[1]");
	bad("{\"cluster\":{\"nic_gbps\":1e400}}", "nic_gbps");
	struct sc_scenario s;
	char err[512];
	assert_int_equal(sc_scenario_load("/nonexistent/x.json", &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/x.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_scenarios),  cmocka_unit_test(test_volumes),
		cmocka_unit_test(test_volumes_p2p),    cmocka_unit_test(test_straggler_gap),
		cmocka_unit_test(test_late_receiver),  cmocka_unit_test(test_link_capacity),
		cmocka_unit_test(test_incast_rx),      cmocka_unit_test(test_nic_down),
		cmocka_unit_test(test_cpu_contention), cmocka_unit_test(test_truth_only),
		cmocka_unit_test(test_deterministic),  cmocka_unit_test(test_hook_records),
		cmocka_unit_test(test_pcap_run_trace), cmocka_unit_test(test_truth_ops_consistent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
