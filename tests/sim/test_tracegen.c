/* pulse-tracegen: the volumes in the capture (read back with the decoder)
 * against Appendix B of the Pulse paper, packetisation, determinism, rates. */
#include "sim_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../tools/tracegen/tracegen.h"

#define MAXN 16

/* What a capture holds, by node pair and by (src, dest QPN). */
struct vol {
	uint64_t data[MAXN][MAXN];   /* payload of data writes (FIRST/MIDDLE/LAST_IMM/ONLY_IMM) */
	uint64_t cts[MAXN][MAXN];    /* clear-to-send WRITE_ONLY messages */
	uint64_t acks[MAXN][MAXN];
	uint64_t other;              /* anything else */
	uint64_t pkts, max_payload, max_dmalen, first_ns, last_ns;
	uint64_t bad_psn;            /* data packets whose PSN is not the QP's previous + 1 */
	uint64_t wire_data;          /* wire bytes of data packets */
	uint64_t data_pkts;
	uint64_t min_gap_ns[MAXN];   /* smallest gap between a node's consecutive data packets */
	uint64_t last_ts[MAXN];
	struct { uint32_t node, dqpn, psn; uint64_t bytes; } q[256];
	uint32_t nq;
	uint32_t distinct_dqpn;
};

static uint32_t node_of(const uint8_t a[16])
{
	return (uint32_t)a[15] - 1; /* 10.0.0.N+1 or fd00::N+1 */
}

static void read_capture(const char *path, struct vol *v)
{
	memset(v, 0, sizeof *v);
	for (int i = 0; i < MAXN; i++)
		v->min_gap_ns[i] = UINT64_MAX;
	struct sim_pcap in;
	assert_int_equal(sim_pcap_open(&in, path), SIM_EXIT_OK);
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts;
	struct pulse_roce_pkt k;
	while (sim_pcap_next(&in, &d, &cap, &wire, &ts) == 1) {
		assert_int_equal(pulse_roce_decode(d, cap, wire, in.link, &k), PULSE_ROCE_OK);
		if (!v->pkts++)
			v->first_ns = ts;
		assert_true(ts >= v->last_ns); /* written in time order */
		v->last_ns = ts;
		uint32_t s = node_of(k.src), t = node_of(k.dst);
		assert_true(s < MAXN && t < MAXN);
		switch (k.opcode) {
		case 0x06: case 0x07: case 0x08: case 0x09: case 0x0B: {
			v->data[s][t] += k.payload_len;
			v->wire_data += k.wire_len;
			v->data_pkts++;
			if (k.payload_len > v->max_payload)
				v->max_payload = k.payload_len;
			if ((k.headers & PULSE_ROCE_H_RETH) && k.reth_dmalen > v->max_dmalen)
				v->max_dmalen = k.reth_dmalen;
			if (v->last_ts[s] && ts - v->last_ts[s] < v->min_gap_ns[s])
				v->min_gap_ns[s] = ts - v->last_ts[s];
			v->last_ts[s] = ts;
			uint32_t j;
			for (j = 0; j < v->nq; j++)
				if (v->q[j].node == s && v->q[j].dqpn == k.dqpn)
					break;
			if (j == v->nq && v->nq < 256) {
				v->q[v->nq].node = s;
				v->q[v->nq].dqpn = k.dqpn;
				v->q[v->nq].psn = (k.psn - 1) & 0xFFFFFF;
				v->nq++;
			}
			if (j < 256) {
				if (k.psn != ((v->q[j].psn + 1) & 0xFFFFFF))
					v->bad_psn++;
				v->q[j].psn = k.psn;
				v->q[j].bytes += k.payload_len;
			}
			break;
		}
		case 0x0A:
			if (k.payload_len == TG_CTS_PAYLOAD)
				v->cts[s][t]++;
			else
				v->data[s][t] += k.payload_len; /* the write pattern's single-packet messages */
			break;
		case 0x11:
			v->acks[s][t]++;
			break;
		default:
			v->other++;
		}
	}
	sim_pcap_close(&in);
}

static char *gen(char *dir, struct tg_cfg *c, struct tg_result *r)
{
	static char p[600];
	static int n;
	snprintf(p, sizeof p, "%s/g%d.pcap", dir, n++);
	char err[256];
	if (tg_generate(c, p, r, err, sizeof err))
		fail_msg("%s", err);
	return p;
}

/* Appendix B, ring all-reduce: every rank sends v = 2 * count * (s - 1) / s,
 * all of it to its successor. */
static void test_ring_volume(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	static const struct { uint32_t n, c; uint64_t count; } cases[] = {
		{4, 2, 8u << 20}, {3, 1, 3u << 20}, {8, 4, 16u << 20}, {2, 1, 1u << 20},
		{3, 2, 1000003}, /* not divisible: chunks differ by a byte */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tg_cfg c;
		tg_cfg_default(&c);
		c.nodes = cases[i].n;
		c.channels = cases[i].c;
		c.bytes = cases[i].count;
		c.snaplen = 128;
		struct tg_result r;
		struct vol v;
		read_capture(gen(dir, &c, &r), &v);
		uint64_t s = c.nodes;
		double want = 2.0 * (double)c.bytes * (double)(s - 1) / (double)s;
		for (uint32_t a = 0; a < s; a++)
			for (uint32_t b = 0; b < s; b++) {
				if (b != (a + 1) % s) {
					assert_int_equal(v.data[a][b], 0);
					continue;
				}
				double got = (double)v.data[a][b];
				if (c.bytes % (s * c.channels) == 0)
					assert_true(got == want);
				else
					assert_true(got >= want - 2.0 * c.channels && got <= want + 2.0 * c.channels);
				/* the responder ACKs; the receiver clears each message to send */
				assert_true(v.acks[b][a] > 0);
				assert_true(v.cts[b][a] > 0);
			}
		assert_int_equal(v.other, 0);
		assert_int_equal(v.bad_psn, 0);
		/* C channels: one QP per connection, each carrying 1/C */
		assert_int_equal(v.nq, s * c.channels);
		for (uint32_t j = 0; j < v.nq; j++) {
			double per = want / c.channels;
			assert_true((double)v.q[j].bytes >= per - 2 && (double)v.q[j].bytes <= per + 2);
		}
		/* the generator's own books agree with the capture */
		for (uint32_t k = 0; k < r.nconns; k++) {
			uint32_t j;
			for (j = 0; j < v.nq; j++)
				if (v.q[j].node == r.conns[k].src && v.q[j].dqpn == r.conns[k].dst_qpn)
					break;
			assert_true(j < v.nq);
			assert_int_equal(v.q[j].bytes, r.conns[k].data_bytes);
		}
		tg_result_free(&r);
	}
	tmpdir_remove(dir);
}

/* The tree the generator documents (tools/tracegen/README.md): tree 0 is a
 * binary heap rooted at node 0, tree 1 the same over reversed node numbers. */
static int parent(uint32_t n, int t, uint32_t v)
{
	if (t == 0)
		return v == 0 ? -1 : (int)((v - 1) / 2);
	uint32_t l = n - 1 - v;
	return l == 0 ? -1 : (int)(n - 1 - (l - 1) / 2);
}

/* Appendix B, tree all-reduce: count per tree link and direction, split
 * evenly over the two trees. */
static void test_tree_volume(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	static const uint32_t sizes[] = {2, 5, 7};
	for (size_t si = 0; si < 3; si++) {
		uint32_t n = sizes[si];
		struct tg_cfg c;
		tg_cfg_default(&c);
		c.pattern = TG_TREE;
		c.nodes = n;
		c.channels = 1;
		c.bytes = 2u << 20;
		c.snaplen = 128;
		struct tg_result r;
		struct vol v;
		read_capture(gen(dir, &c, &r), &v);
		uint64_t want[MAXN][MAXN] = {{0}};
		for (int t = 0; t < 2; t++)
			for (uint32_t u = 0; u < n; u++) {
				int p = parent(n, t, u);
				if (p < 0)
					continue;
				want[u][p] += c.bytes / 2; /* reduce, up */
				want[p][u] += c.bytes / 2; /* broadcast, down */
			}
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = 0; b < n; b++)
				if (v.data[a][b] != want[a][b])
					fail_msg("tree n=%u: %u -> %u carried %llu, expected %llu", n, a, b,
						 (unsigned long long)v.data[a][b],
						 (unsigned long long)want[a][b]);
		/* every link of a tree carries `count / 2` each way: per node and tree,
		 * up to its parent and down to each child */
		uint64_t total = 0;
		for (uint32_t a = 0; a < n; a++)
			for (uint32_t b = 0; b < n; b++)
				total += v.data[a][b];
		assert_int_equal(total, 2ull * 2 * (n - 1) * (c.bytes / 2));
		assert_int_equal(v.bad_psn, 0);
		tg_result_free(&r);
	}
	tmpdir_remove(dir);
}

static void test_sendrecv_and_packets(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	struct tg_cfg c;
	tg_cfg_default(&c);
	c.pattern = TG_SENDRECV;
	c.nodes = 2;
	c.channels = 1;
	c.bytes = (3u << 20) + 1000;
	c.mtu = 1024;
	c.slice = 256u << 10;
	c.snaplen = 128;
	struct tg_result r;
	struct vol v;
	read_capture(gen(dir, &c, &r), &v);
	assert_int_equal(v.data[0][1], c.bytes);
	assert_int_equal(v.data[1][0], 0);
	assert_true(v.max_payload <= c.mtu);
	assert_int_equal(v.max_dmalen, c.slice);
	/* ceil(bytes / slice) messages, each cleared to send, each ACKed */
	uint64_t msgs = (c.bytes + c.slice - 1) / c.slice;
	assert_int_equal(v.cts[1][0], msgs);
	assert_int_equal(r.conns[0].data_msgs, msgs);
	assert_true(v.acks[1][0] >= msgs);
	/* ceil(slice/mtu) packets a full message */
	assert_int_equal(v.data_pkts, (c.bytes + c.mtu - 1) / c.mtu);
	tg_result_free(&r);
	tmpdir_remove(dir);
}

static void test_deterministic(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	struct tg_cfg c;
	tg_cfg_default(&c);
	c.bytes = 2u << 20;
	c.snaplen = 128;
	struct tg_result r1, r2, r3;
	char p1[600], p2[600], p3[600];
	snprintf(p1, sizeof p1, "%s", gen(dir, &c, &r1));
	snprintf(p2, sizeof p2, "%s", gen(dir, &c, &r2));
	c.seed = 2;
	snprintf(p3, sizeof p3, "%s", gen(dir, &c, &r3));
	char cmd[2000];
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", p1, p2);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", p1, p3);
	assert_int_not_equal(system(cmd), 0);
	assert_int_not_equal(r1.conns[0].src_qpn, r3.conns[0].src_qpn);
	assert_int_equal(r1.conns[0].data_bytes, r3.conns[0].data_bytes);
	tg_result_free(&r1);
	tg_result_free(&r2);
	tg_result_free(&r3);
	tmpdir_remove(dir);
}

/* Line rate, and a straggler's link at 1/p of it. */
static void test_rates(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	struct tg_cfg c;
	tg_cfg_default(&c);
	c.pattern = TG_WRITE;
	c.channels = 1;
	c.gbps = 100;
	c.duration_ns = 200000;
	c.snaplen = 128;
	struct tg_result r;
	struct vol v;
	read_capture(gen(dir, &c, &r), &v);
	/* frames + FCS, preamble, gap over the first-to-last span: 100 Gb/s */
	double bits = 8.0 * (double)(v.wire_data + 24 * v.data_pkts);
	double gbps = bits / (double)(v.last_ns - v.first_ns);
	assert_true(gbps > 99.0 && gbps < 101.5);
	assert_true(v.last_ns - v.first_ns > 195000 && v.last_ns - v.first_ns < 205000);
	tg_result_free(&r);

	tg_cfg_default(&c);
	c.nodes = 4;
	c.channels = 1;
	c.bytes = 4u << 20;
	c.snaplen = 128;
	c.straggler = 1;
	c.slowdown = 8;
	read_capture(gen(dir, &c, &r), &v);
	/* a full 4096-byte packet: 4154 bytes + 24 on the wire */
	double full = (4154.0 + 24) * 8 / 400; /* ns at 400 Gb/s: 83.56 */
	assert_true(v.min_gap_ns[0] >= full - 2 && v.min_gap_ns[0] <= full + 2);
	assert_true(v.min_gap_ns[1] >= 8 * full - 2 && v.min_gap_ns[1] <= 8 * full + 2);
	/* the volume is unchanged */
	assert_int_equal(v.data[1][2], 2ull * (4u << 20) * 3 / 4);
	tg_result_free(&r);
	tmpdir_remove(dir);
}

static void test_many_qpns(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	struct tg_cfg c;
	tg_cfg_default(&c);
	c.pattern = TG_QPS;
	c.qps = 3000;
	c.snaplen = 96;
	struct tg_result r;
	const char *p = gen(dir, &c, &r);
	struct sim_pcap in;
	assert_int_equal(sim_pcap_open(&in, p), SIM_EXIT_OK);
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts, n = 0;
	struct pulse_roce_pkt k;
	uint8_t *seen = calloc(1u << 24, 1);
	uint64_t distinct = 0;
	while (sim_pcap_next(&in, &d, &cap, &wire, &ts) == 1) {
		assert_int_equal(pulse_roce_decode(d, cap, wire, in.link, &k), PULSE_ROCE_OK);
		assert_true(cap <= 96);
		distinct += !seen[k.dqpn];
		seen[k.dqpn] = 1;
		n++;
	}
	sim_pcap_close(&in);
	free(seen);
	assert_int_equal(n, 3000);
	assert_int_equal(distinct, 3000);
	tg_result_free(&r);
	tmpdir_remove(dir);
}

static void test_bad_config(void **st)
{
	(void)st;
	struct tg_cfg c;
	struct tg_result r;
	char err[256];
	tg_cfg_default(&c);
	c.nodes = 1;
	assert_int_equal(tg_generate(&c, "/tmp/never-written.pcap", &r, err, sizeof err), -1);
	tg_cfg_default(&c);
	c.slice = 2u << 20; /* slices are at most 1 MiB */
	assert_int_equal(tg_generate(&c, "/tmp/never-written.pcap", &r, err, sizeof err), -1);
	tg_cfg_default(&c);
	assert_int_equal(tg_generate(&c, "/nonexistent-dir/x.pcap", &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "nonexistent"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_volume),
		cmocka_unit_test(test_tree_volume),
		cmocka_unit_test(test_sendrecv_and_packets),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_many_qpns),
		cmocka_unit_test(test_bad_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
