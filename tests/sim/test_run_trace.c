/* run_trace's library (sim/): the real NCCL captures' QPNs against the NCCL
 * logs, every perftest capture, the committed ring.pcap, the emulation's
 * knobs, and bad input. The millions-of-QPNs case and the command line are
 * in tests/sim/run_trace_*.sh; serve mode in test_serve.c. */
#include "sim_test_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../../tools/tracegen/tracegen.h"

static struct sim_cfg defcfg(void)
{
	struct sim_cfg c;
	sim_cfg_default(&c);
	c.fw_pool_blocks = 4096; /* keep the ASan build light */
	c.max_nics = 8;
	return c;
}

/* Every QP's firmware measurement equals the bytes the capture says it
 * sent, less the sub-32-byte remainder the 32-byte counter leaves behind. */
static void check_measured(struct treplay *r)
{
	for (uint32_t i = 0; i < r->t.nqps; i++) {
		const struct sim_qp *q = &r->t.qps[i];
		if (!r->t.nics[q->nic].emulated)
			continue;
		assert_true(q->meas_bytes <= q->tx_bytes);
		assert_true(q->tx_bytes - q->meas_bytes < PULSE_UNIT_BYTES);
	}
	for (uint32_t i = 0; i < r->e.nnics; i++) {
		assert_int_equal(r->e.nics[i].clock_mismatches, 0);
		assert_int_equal(r->e.nics[i].unknown_qpns, 0);
		assert_int_equal(r->e.nics[i].poll_errors, 0);
		assert_int_equal(r->e.nics[i].windows_incomplete, 0);
		assert_int_equal(r->e.nics[i].fw_stats[PULSE_STAT_DROP_NO_SLOT], 0);
		assert_int_equal(r->e.nics[i].fw_stats[PULSE_STAT_DROP_TS_RANGE], 0);
	}
}

/* ---- real NCCL captures: local/remote QPNs against the NCCL logs ----
 *
 * Hosts (env*.txt, logs "Bootstrap : Using eth0:..."): rank 0 = 172.30.0.25,
 * rank 1 = 172.30.0.11, rank 2 = 172.30.0.12.
 *
 * NCCL 2.20.5's ncclIbConnect (the sending side of a connection) logs two
 * lines per connection right after "Channel 00/0 : a[0] -> b[0] [send]":
 *   "NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn X mtu 3 query_ece=..."  X = the
 *       local QP it created (the sender's QPN)
 *   "NET/IB: IbDev 0 Port 1 qpn Y set_ece=..."  Y = remMeta.qpInfo[0].qpn,
 *       the receiver's QP that it connects to (the remote QPN)
 * On the wire, the sender's packets carry dest QPN Y and the receiver's
 * packets back (ACKs, NCCL's clear-to-send WRITE_ONLY) carry dest QPN X. */
struct qexp {
	const char *src, *dst;
	uint32_t remote, local;
	const char *why;
};

static const struct qexp ring2_exp[] = {
	/* ring2_node0.log: "0[0] -> 1[0] [send]", "qpn 34 mtu 3", "qpn 35 set_ece" */
	{"172.30.0.25", "172.30.0.11", 35, 34, "ring2_node0.log qpn 34 / set_ece 35"},
	{"172.30.0.11", "172.30.0.25", 34, 35, "reverse of ring2_node0.log 34/35"},
	/* ring2_node1.log: "1[0] -> 2[0] [send]", "qpn 34 mtu 3", "qpn 40 set_ece" */
	{"172.30.0.11", "172.30.0.12", 40, 34, "ring2_node1.log qpn 34 / set_ece 40"},
	{"172.30.0.12", "172.30.0.11", 34, 40, "reverse of ring2_node1.log 34/40"},
	/* ring2_node2.log: "2[0] -> 0[0] [send]", "qpn 39 mtu 3", "qpn 35 set_ece" */
	{"172.30.0.12", "172.30.0.25", 35, 39, "ring2_node2.log qpn 39 / set_ece 35"},
	{"172.30.0.25", "172.30.0.12", 39, 35, "reverse of ring2_node2.log 39/35"},
};

static const struct qexp tree2_exp[] = {
	/* tree2_node0.log: "0[0] -> 2[0] [send]", "qpn 39 mtu 3", "qpn 46 set_ece" */
	{"172.30.0.25", "172.30.0.12", 46, 39, "tree2_node0.log qpn 39 / set_ece 46"},
	{"172.30.0.12", "172.30.0.25", 39, 46, "reverse of tree2_node0.log 39/46"},
	/* tree2_node0.log: "0[0] -> 1[0] [send]", "qpn 37 mtu 3", "qpn 38 set_ece" (the
	 * ring connection: unused by this Tree run, so absent from the captures) */
	{"172.30.0.25", "172.30.0.11", 38, 37, "tree2_node0.log qpn 37 / set_ece 38"},
	/* tree2_node1.log: "1[0] -> 2[0] [send]", "qpn 37 mtu 3", "qpn 44 set_ece" */
	{"172.30.0.11", "172.30.0.12", 44, 37, "tree2_node1.log qpn 37 / set_ece 44"},
	{"172.30.0.12", "172.30.0.11", 37, 44, "reverse of tree2_node1.log 37/44"},
	/* tree2_node2.log: "2[0] -> 0[0] [send]", "qpn 43 mtu 3", "qpn 38 set_ece" */
	{"172.30.0.12", "172.30.0.25", 38, 43, "tree2_node2.log qpn 43 / set_ece 38"},
	{"172.30.0.25", "172.30.0.12", 43, 38, "reverse of tree2_node2.log 43/38"},
	/* tree2_node2.log: "2[0] -> 1[0] [send]", "qpn 45 mtu 3", "qpn 39 set_ece" */
	{"172.30.0.12", "172.30.0.11", 39, 45, "tree2_node2.log qpn 45 / set_ece 39"},
	{"172.30.0.11", "172.30.0.12", 45, 39, "reverse of tree2_node2.log 45/39"},
};

static void check_real(const char *name, const struct qexp *exp, size_t nexp, uint32_t min_match)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", SHARED_TRACES, name);
	if (!have_file(path)) {
		print_message("%s missing: skipped\n", path);
		skip();
	}
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, path, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.cnt.malformed, 0);
	uint32_t matched = 0;
	for (size_t i = 0; i < nexp; i++) {
		const struct sim_flow *f = tflow(&r.t, exp[i].src, exp[i].dst, exp[i].remote);
		if (!f)
			continue;
		if (f->local_qpn != exp[i].local || f->method != SIM_QPN_ACK)
			fail_msg("%s: flow %s -> %s remote %u: local QPN %u (%s), expected %u (%s)", name,
				 exp[i].src, exp[i].dst, exp[i].remote, f->local_qpn,
				 sim_qpn_method_name((enum sim_qpn_method)f->method), exp[i].local,
				 exp[i].why);
		matched++;
	}
	/* every RC flow of the capture must be one the logs explain */
	for (uint32_t k = 0; k < r.t.nflows; k++)
		assert_int_equal(r.t.flows[k].method, SIM_QPN_ACK);
	if (matched < min_match)
		fail_msg("%s: only %u of the logged connections found", name, matched);
	assert_int_equal(matched, r.t.nflows);
	check_measured(&r);
	treplay_free(&r);
}

static void test_real_ring2_qpns(void **s)
{
	(void)s;
	check_real("ring2_node0.pcap", ring2_exp, 6, 4);
	check_real("ring2_node1.pcap", ring2_exp, 6, 4);
	check_real("ring2_node2.pcap", ring2_exp, 6, 4);
}

static void test_real_tree2_qpns(void **s)
{
	(void)s;
	check_real("tree2_node0.pcap", tree2_exp, 9, 4);
	check_real("tree2_node1.pcap", tree2_exp, 9, 4);
	check_real("tree2_node2.pcap", tree2_exp, 9, 8);
}

/* nccl_node*.log have no NET/IB qpn lines: the three captures must at least
 * agree with each other on every connection two of them see. */
static void test_real_nccl_consistent(void **s)
{
	(void)s;
	struct treplay r[3];
	for (int n = 0; n < 3; n++) {
		char path[256];
		snprintf(path, sizeof path, "%s/nccl_node%d.pcap", SHARED_TRACES, n);
		if (!have_file(path))
			skip();
		struct sim_cfg c = defcfg();
		assert_int_equal(treplay_run(&r[n], path, &c), SIM_EXIT_OK);
		assert_int_equal(r[n].t.nflows, 4);
		check_measured(&r[n]);
	}
	uint32_t shared = 0;
	for (int a = 0; a < 3; a++)
		for (int b = a + 1; b < 3; b++)
			for (uint32_t i = 0; i < r[a].t.nflows; i++) {
				const struct sim_flow *f = &r[a].t.flows[i];
				char sa[46], da[46];
				pulse_roce_addr_str(r[a].t.hosts[f->src].addr, sa);
				pulse_roce_addr_str(r[a].t.hosts[f->dst].addr, da);
				const struct sim_flow *g = tflow(&r[b].t, sa, da, f->dqpn);
				if (!g)
					continue;
				assert_int_equal(f->local_qpn, g->local_qpn);
				assert_int_equal(f->tx_bytes, g->tx_bytes);
				shared++;
			}
	assert_int_equal(shared, 6); /* each pair of nodes' captures shares one connection */
	for (int n = 0; n < 3; n++)
		treplay_free(&r[n]);
}

/* ---- every perftest/verbs capture replays cleanly ---- */
static void test_perftest_captures(void **s)
{
	(void)s;
	static const struct {
		const char *name;
		uint32_t flows;
		enum sim_qpn_method method; /* of the flows that send data */
	} caps[] = {
		{"rdma_write_bw.pcap", 2, SIM_QPN_ACK}, {"rdma_write_lat.pcap", 2, SIM_QPN_ACK},
		{"rdma_read_bw.pcap", 2, SIM_QPN_ACK},  {"rdma_read_lat.pcap", 2, SIM_QPN_ACK},
		{"rdma_send_bw.pcap", 2, SIM_QPN_ACK},  {"rdma_atomic_bw.pcap", 2, SIM_QPN_ACK},
		{"pingpong_rc.pcap", 2, SIM_QPN_ACK},   {"pingpong_uc.pcap", 2, SIM_QPN_SOLE_PAIR},
		{"pingpong_ud.pcap", 2, SIM_QPN_DETH},  {"rdma_cm.pcap", 6, SIM_QPN_NONE},
		{"rping.pcap", 4, SIM_QPN_NONE},
	};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		char path[256];
		snprintf(path, sizeof path, "%s/%s", SHARED_TRACES, caps[i].name);
		if (!have_file(path)) {
			print_message("%s missing: skipped\n", path);
			skip();
		}
		struct sim_cfg c = defcfg();
		struct treplay r;
		int rc = treplay_run(&r, path, &c);
		if (rc != SIM_EXIT_OK)
			fail_msg("%s: %s", caps[i].name, r.err);
		assert_int_equal(r.t.cnt.malformed, 0);
		assert_int_equal(r.t.cnt.ts_backwards, 0);
		assert_true(r.t.cnt.roce > 0);
		assert_int_equal(r.t.nflows, caps[i].flows);
		assert_int_equal(r.t.method_count[SIM_QPN_SYNTHETIC], 0);
		for (uint32_t k = 0; k < r.t.nflows; k++) {
			const struct sim_flow *f = &r.t.flows[k];
			assert_int_not_equal(f->local_qpn, SIM_NONE);
			if (caps[i].method != SIM_QPN_NONE)
				assert_int_equal(f->method, caps[i].method);
		}
		check_measured(&r);
		treplay_free(&r);
	}
}

/* ---- the committed generated capture ---- */
static void test_ring_pcap(void **s)
{
	(void)s;
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	assert_int_equal(r.t.nnics, 4);
	assert_int_equal(r.t.nflows, 16);
	assert_int_equal(r.t.method_count[SIM_QPN_ACK], 16);
	assert_int_equal(r.t.nqps, 16);
	check_measured(&r);
	/* tests/traces/README.md: --bytes 8M --channels 2 --nodes 4 --iters 2:
	 * each data QP carries 2 x (2 * 4 MiB * 3/4) of payload in 4096-byte
	 * packets (+58 bytes of headers, +16 on WRITE_FIRST) at 400 Gb/s shared
	 * by two QPs, i.e. just under 200 Gb/s each on the wire. */
	uint32_t data_qps = 0;
	for (uint32_t i = 0; i < r.t.nqps; i++) {
		const struct sim_qp *q = &r.t.qps[i];
		const struct sim_flow *f = &r.t.flows[q->first_flow];
		if (f->payload_bytes < 1000000)
			continue; /* a clear-to-send QP */
		data_qps++;
		assert_int_equal(f->payload_bytes, 2ull * 2 * (4u << 20) * 3 / 4);
		double peak = (double)q->peak_epoch_bytes * 8 / c.epoch_ns;
		if (peak < 190 || peak > 200.5)
			fail_msg("QP %u peak %.2f Gb/s, expected just under 200", q->qpn, peak);
	}
	assert_int_equal(data_qps, 8);
	treplay_free(&r);
}

/* Shorter polls and a NIC clock that wraps inside the capture change the
 * windows, not the bytes. */
static void test_polls_and_clock_wrap(void **s)
{
	(void)s;
	struct sim_cfg c = defcfg();
	struct treplay a, b;
	assert_int_equal(treplay_run(&a, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	c.poll_ns = 1000000;                   /* 1 ms: the minimum window */
	c.nic_clock_start = 0xFFFFFFFFu - 300000u; /* wraps 300 us in */
	assert_int_equal(treplay_run(&b, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	check_measured(&b);
	for (uint32_t i = 0; i < a.t.nqps; i++)
		assert_int_equal(a.t.qps[i].meas_bytes, b.t.qps[i].meas_bytes);
	for (uint32_t i = 0; i < b.e.nnics; i++)
		assert_int_equal(b.e.nics[i].polls, 1); /* 718 us of traffic: one 1 ms window */
	/* 0.25 ms polls would be below the firmware's minimum: use the 1 ms
	 * limit with epoch 8 us for several windows instead */
	c.poll_ns = 1000000;
	c.epoch_ns = 8000;
	treplay_free(&b);
	assert_int_equal(treplay_run(&b, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	check_measured(&b);
	treplay_free(&a);
	treplay_free(&b);
}

/* Pass 2 from pass 1's packet log, from the file again, or from a log that
 * outgrew its budget: the same replay, to the byte. */
static void test_log_and_file_replay_agree(void **s)
{
	(void)s;
	struct sim_cfg c = defcfg();
	c.poll_ns = 1000000;
	c.nic_clock_start = 0xFFFFFFFFu - 300000u;
	struct treplay r[3];
	uint64_t budgets[3] = {1ull << 30, 0, 4096};
	for (int i = 0; i < 3; i++) {
		c.log_budget = budgets[i];
		assert_int_equal(treplay_run(&r[i], "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
		check_measured(&r[i]);
	}
	assert_non_null(r[0].t.log);
	assert_int_equal(r[0].t.log_overflow, 0);
	assert_null(r[1].t.log);
	assert_int_equal(r[2].t.log_overflow, 1);
	for (int i = 1; i < 3; i++) {
		assert_int_equal(r[i].t.nqps, r[0].t.nqps);
		for (uint32_t q = 0; q < r[0].t.nqps; q++) {
			assert_int_equal(r[i].t.qps[q].meas_bytes, r[0].t.qps[q].meas_bytes);
			assert_int_equal(r[i].t.qps[q].events, r[0].t.qps[q].events);
			assert_int_equal(r[i].t.qps[q].peak_epoch_bytes, r[0].t.qps[q].peak_epoch_bytes);
			assert_int_equal(r[i].t.qps[q].active_epochs, r[0].t.qps[q].active_epochs);
		}
		for (uint32_t n = 0; n < r[0].e.nnics; n++) {
			assert_int_equal(r[i].e.nics[n].polls, r[0].e.nics[n].polls);
			assert_int_equal(r[i].e.nics[n].events, r[0].e.nics[n].events);
		}
	}
	for (int i = 0; i < 3; i++)
		treplay_free(&r[i]);
}

/* A generated capture in a temp dir. */
static char *gen(const char *dir, const char *name, struct tg_cfg *g, struct tg_result *res)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char err[256];
	if (tg_generate(g, path, res, err, sizeof err))
		fail_msg("tracegen: %s", err);
	return path;
}

static void test_long_capture_many_windows(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	assert_non_null(dir);
	struct tg_cfg g;
	tg_cfg_default(&g);
	g.pattern = TG_WRITE;
	g.channels = 1;
	g.gbps = 10;
	g.bytes = 8u << 20;
	g.snaplen = 128;
	struct tg_result res;
	const char *p = gen(dir, "w.pcap", &g, &res); /* ~6.8 ms at 10 Gb/s */
	struct sim_cfg c = defcfg();
	c.poll_ns = 1000000;
	c.nic_clock_start = 0xFFFFFFFFu - 2500000u;
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	check_measured(&r);
	assert_true(r.e.nics[0].polls >= 7);
	/* the data QP sent every epoch at ~10 Gb/s */
	const struct sim_flow *f = tflow(&r.t, "10.0.0.1", "10.0.0.2", res.conns[0].dst_qpn);
	assert_non_null(f);
	assert_int_equal(f->local_qpn, res.conns[0].src_qpn);
	const struct sim_qp *q = &r.t.qps[f->qp];
	double peak = (double)q->peak_epoch_bytes * 8 / c.epoch_ns;
	assert_true(peak > 10.0 && peak < 10.6); /* 9 or 10 packets of 4154 B per 32 us epoch */
	assert_int_equal(f->payload_bytes, 8u << 20);
	treplay_free(&r);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

/* TX events: one per --event-bytes, and the 16-bit counter clipping. */
static void test_event_bytes_and_clipping(void **s)
{
	(void)s;
	struct sim_cfg c = defcfg();
	c.event_bytes = 16384;
	struct treplay r;
	assert_int_equal(treplay_run(&r, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	check_measured(&r);
	for (uint32_t i = 0; i < r.t.nqps; i++) {
		const struct sim_qp *q = &r.t.qps[i];
		if (q->tx_bytes < 1000000)
			continue;
		/* each event carries 16 KiB to 16 KiB + one packet, except the
		 * flushes at burst ends and polls */
		assert_true(q->events >= q->tx_bytes / (16384 + 4200));
		assert_true(q->events <= q->tx_bytes / 16384 + 40);
	}
	treplay_free(&r);

	/* 4 MiB per event cannot fit the 16-bit 32-byte counter (2 MiB): the
	 * NIC clips it and the firmware estimates from the packet count */
	c.event_bytes = 4u << 20;
	c.burst_gap_ns = 0;
	assert_int_equal(treplay_run(&r, "tests/traces/ring.pcap", &c), SIM_EXIT_OK);
	uint64_t clipped = 0;
	for (uint32_t i = 0; i < r.t.nqps; i++)
		clipped += r.t.qps[i].clipped_events;
	assert_true(clipped > 0);
	uint64_t fw_clipped = 0;
	for (uint32_t i = 0; i < r.e.nnics; i++)
		fw_clipped += r.e.nics[i].fw_stats[PULSE_STAT_CLIPPED_EVENTS];
	assert_int_equal(fw_clipped, clipped);
	for (uint32_t i = 0; i < r.t.nqps; i++) {
		const struct sim_qp *q = &r.t.qps[i];
		if (q->clipped_events)
			assert_int_not_equal(q->meas_bytes, 0); /* estimated, not dropped */
	}
	treplay_free(&r);
}

static void test_payload_mode(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	struct tg_cfg g;
	tg_cfg_default(&g);
	g.nodes = 3;
	g.channels = 1;
	g.bytes = 3u << 20;
	g.snaplen = 128;
	g.ipv6 = 1;
	g.vlan = 7;
	g.usec = 1;
	struct tg_result res;
	const char *p = gen(dir, "v6.pcap", &g, &res);
	struct sim_cfg c = defcfg();
	c.bytes_mode = SIM_BYTES_PAYLOAD;
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	check_measured(&r);
	assert_int_equal(r.t.method_count[SIM_QPN_ACK], r.t.nflows);
	for (uint32_t k = 0; k < res.nconns; k++) {
		uint8_t a[16], b[16];
		char sa[46], sb[46];
		tg_node_addr(&g, res.conns[k].src, a);
		tg_node_addr(&g, res.conns[k].dst, b);
		pulse_roce_addr_str(a, sa);
		pulse_roce_addr_str(b, sb);
		const struct sim_flow *f = tflow(&r.t, sa, sb, res.conns[k].dst_qpn);
		assert_non_null(f);
		assert_int_equal(f->local_qpn, res.conns[k].src_qpn);
		/* payload mode: exactly the data the generator sent */
		assert_int_equal(f->tx_bytes, res.conns[k].data_bytes);
		assert_int_equal(f->tx_bytes, 2ull * (3u << 20) * 2 / 3);
	}
	treplay_free(&r);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

/* A straggler at 1/4 line rate: its QP's peak is a quarter of the others'. */
static void test_straggler(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	struct tg_cfg g;
	tg_cfg_default(&g);
	g.nodes = 4;
	g.channels = 1;
	g.bytes = 16u << 20; /* 4 MiB chunks: long enough bursts to fill epochs */
	g.snaplen = 128;
	g.straggler = 2;
	g.slowdown = 4;
	struct tg_result res;
	const char *p = gen(dir, "s.pcap", &g, &res);
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	check_measured(&r);
	double peak[4] = {0};
	for (uint32_t k = 0; k < res.nconns; k++) {
		char sa[46], sb[46];
		uint8_t a[16], b[16];
		tg_node_addr(&g, res.conns[k].src, a);
		tg_node_addr(&g, res.conns[k].dst, b);
		const struct sim_flow *f = tflow(&r.t, pulse_roce_addr_str(a, sa),
						 pulse_roce_addr_str(b, sb), res.conns[k].dst_qpn);
		assert_non_null(f);
		peak[res.conns[k].src] = (double)r.t.qps[f->qp].peak_epoch_bytes * 8 / c.epoch_ns;
	}
	assert_true(peak[2] > 95 && peak[2] < 100.5);
	assert_true(peak[0] > 390 && peak[0] < 400.5);
	treplay_free(&r);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

/* ---- pcapng, Linux cooked and raw-IP captures ---- */
static void put32le(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }

static void pcapng_epb(FILE *f, uint64_t ts, const uint8_t *b, uint32_t n)
{
	uint32_t pad = (4 - n % 4) % 4, len = 32 + n + pad;
	put32le(f, 6);
	put32le(f, len);
	put32le(f, 0);
	put32le(f, (uint32_t)(ts >> 32));
	put32le(f, (uint32_t)ts);
	put32le(f, n);
	put32le(f, n);
	fwrite(b, n, 1, f);
	fwrite("\0\0\0", pad, 1, f);
	put32le(f, len);
}

/* A pcapng file: section header, one interface (link type, ns resolution). */
static FILE *pcapng_open(const char *path, uint16_t linktype)
{
	FILE *f = fopen(path, "wb");
	put32le(f, 0x0A0D0D0A);
	put32le(f, 28);
	put32le(f, 0x1A2B3C4D);
	put32le(f, 0x00000001); /* version 1.0 */
	put32le(f, 0xFFFFFFFF);
	put32le(f, 0xFFFFFFFF); /* section length unknown */
	put32le(f, 28);
	put32le(f, 1);
	put32le(f, 32);
	put32le(f, linktype);   /* link type, reserved */
	put32le(f, 65535);
	put32le(f, 0x00010009); /* if_tsresol, 1 byte */
	put32le(f, 9);          /* 10^-9 s */
	put32le(f, 0);          /* end of options */
	put32le(f, 32);
	return f;
}

static void test_pcapng_and_link_types(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	char p[600];
	struct tframe f, g;
	tf_roce(&f, 1, 2, 4791, 0x0A, 0x77, 100, 16, 4096, 0, 5); /* WRITE_ONLY 10.0.0.1 -> .2 */
	tf_roce(&g, 2, 1, 4791, 0x11, 0x55, 100, 4, 0, 0, 5);     /* its ACK, to QP 0x55 */
	const uint64_t t0 = 1700000000000001234ull;
	struct sim_cfg c = defcfg();
	struct treplay r;

	/* pcapng, Ethernet, nanosecond resolution */
	snprintf(p, sizeof p, "%s/a.pcapng", dir);
	FILE *fp = pcapng_open(p, 1);
	pcapng_epb(fp, t0, f.b, f.n);
	pcapng_epb(fp, t0 + 2000, g.b, g.n);
	pcapng_epb(fp, t0 + 4444, f.b, f.n);
	fclose(fp);
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.pcapng, 1);
	assert_int_equal(r.t.first_ns, t0);
	assert_int_equal(r.t.last_ns, t0 + 4444);
	const struct sim_flow *fl = tflow(&r.t, "10.0.0.1", "10.0.0.2", 0x77);
	assert_non_null(fl);
	assert_int_equal(fl->local_qpn, 0x55); /* paired by the ACK */
	assert_int_equal(fl->method, SIM_QPN_ACK);
	assert_int_equal(fl->tx_pkts, 2);
	assert_int_equal(fl->last_ns - fl->first_ns, 4444);
	check_measured(&r);
	treplay_free(&r);

	/* Linux cooked capture (v1) in pcapng */
	snprintf(p, sizeof p, "%s/sll.pcapng", dir);
	fp = pcapng_open(p, 113);
	struct tframe sf;
	sf.n = 0;
	uint8_t sll[16] = {0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00};
	tf_put(&sf, sll, 16);
	tf_put(&sf, f.b + 14, f.n - 14);
	pcapng_epb(fp, t0, sf.b, sf.n);
	fclose(fp);
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.cnt.roce, 1);
	assert_int_equal(r.t.flows[0].tx_bytes, f.n); /* counted as the Ethernet frame */
	treplay_free(&r);

	/* raw IPv4 (LINKTYPE_RAW 101) in classic pcap, microsecond timestamps */
	snprintf(p, sizeof p, "%s/raw.pcap", dir);
	struct tpcap w;
	tpcap_open(&w, p, 0xA1B2C3D4u, 65535, 101);
	uint32_t h[4] = {1700000000u, 17u, f.n - 14, f.n - 14};
	fwrite(h, 4, 4, w.f);
	fwrite(f.b + 14, f.n - 14, 1, w.f);
	tpcap_close(&w);
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.cnt.roce, 1);
	assert_int_equal(r.t.file_nsec, 0);
	assert_int_equal(r.t.first_ns, 1700000000000017000ull); /* 17 us */
	treplay_free(&r);
	tmpdir_remove(dir);
}

/* ---- bad input ---- */
static void expect_bad(const char *path, int want, const char *msg_part)
{
	struct sim_cfg c = defcfg();
	struct sim_trace t;
	char err[1200] = "";
	sim_trace_init(&t, &c);
	int rc = sim_trace_scan(&t, path, err, sizeof err);
	if (rc != want || !strstr(err, msg_part))
		fail_msg("%s: rc %d (want %d), message \"%s\" (want \"%s\")", path, rc, want, err,
			 msg_part);
	sim_trace_free(&t);
}

static void test_bad_files(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	char p[600];
	struct tpcap w;
	struct tframe f;
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 1, 16, 64, 0, 5);

	snprintf(p, sizeof p, "%s/missing.pcap", dir);
	expect_bad(p, SIM_EXIT_BAD_FILE, "cannot open");
	expect_bad(dir, SIM_EXIT_BAD_FILE, "");

	snprintf(p, sizeof p, "%s/empty.pcap", dir);
	fclose(fopen(p, "wb"));
	expect_bad(p, SIM_EXIT_BAD_FILE, "too short");

	snprintf(p, sizeof p, "%s/magic.pcap", dir);
	tpcap_open(&w, p, 0x12345678u, 65535, 1);
	tpcap_rec(&w, 1, f.b, f.n, f.n);
	tpcap_close(&w);
	expect_bad(p, SIM_EXIT_BAD_FILE, "wrong magic");

	snprintf(p, sizeof p, "%s/linktype.pcap", dir);
	tpcap_open(&w, p, 0xA1B23C4Du, 65535, 105); /* IEEE 802.11 */
	tpcap_rec(&w, 1, f.b, f.n, f.n);
	tpcap_close(&w);
	expect_bad(p, SIM_EXIT_BAD_FILE, "not supported");

	snprintf(p, sizeof p, "%s/snaplen0.pcap", dir);
	tpcap_open(&w, p, 0xA1B23C4Du, 0, 1);
	tpcap_rec(&w, 1, f.b, f.n, f.n);
	tpcap_close(&w);
	expect_bad(p, SIM_EXIT_BAD_FILE, "snaplen 0");

	snprintf(p, sizeof p, "%s/header.pcap", dir);
	FILE *h = fopen(p, "wb");
	uint32_t m = 0xA1B2C3D4u;
	fwrite(&m, 4, 1, h);
	fwrite("\x02\x00\x04\x00\x00\x00", 6, 1, h);
	fclose(h);
	expect_bad(p, SIM_EXIT_BAD_FILE, "truncated pcap file header");

	/* cut in the middle of the third packet: the first two are replayed */
	snprintf(p, sizeof p, "%s/cut.pcap", dir);
	tpcap_open(&w, p, 0xA1B23C4Du, 65535, 1);
	for (int i = 0; i < 3; i++)
		tpcap_rec(&w, 1000u * (uint64_t)(i + 1), f.b, f.n, f.n);
	tpcap_close(&w);
	assert_int_equal(truncate(p, 24 + 2 * (16 + f.n) + 16 + 10), 0);
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_TRUNCATED);
	assert_int_equal(r.scan_rc, SIM_EXIT_TRUNCATED);
	assert_int_equal(r.t.cnt.read, 2);
	assert_int_equal(r.t.truncated, 1);
	assert_non_null(strstr(r.t.trunc_msg, "truncated"));
	assert_int_equal(r.t.nflows, 1);
	treplay_free(&r);
	/* cut inside a record header */
	assert_int_equal(truncate(p, 24 + 2 * (16 + f.n) + 7), 0);
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_TRUNCATED);
	assert_int_equal(r.t.cnt.read, 2);
	treplay_free(&r);
	tmpdir_remove(dir);
}

static void test_malformed_packets(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	char p[600];
	snprintf(p, sizeof p, "%s/mixed.pcap", dir);
	struct tpcap w;
	struct tframe f;
	uint64_t t = 1000000000ull;
	tpcap_open(&w, p, 0xA1B23C4Du, 65535, 1);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 1, 16, 1024, 0x4000, 5); /* good WRITE_ONLY */
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 2, 16, 1024, 0, 8); /* good, with IPv4 options */
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 3, 16, 1024, 0x2000, 5); /* a fragment */
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x15, 5, 4, 16, 1024, 0, 5); /* reserved opcode */
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 5, 0, 0, 0, 5); /* 16 bytes: not RoCE on 4791 */
	f.n -= 4;
	f.b[14 + 3] = (uint8_t)(f.n - 14);
	f.b[14 + 20 + 5] = (uint8_t)(f.n - 34);
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 6, 16, 1024, 0, 5); /* shorter than its IP header says */
	tpcap_rec(&w, t += 1000, f.b, f.n - 100, f.n - 100);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 7, 16, 1024, 0, 5); /* cut by the snaplen: skipped */
	tpcap_rec(&w, t += 1000, f.b, 40, f.n);
	tf_roce(&f, 1, 2, 4792, 0x0A, 5, 8, 16, 1024, 0, 5); /* another UDP port */
	tpcap_rec(&w, t += 1000, f.b, f.n, f.n);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 9, 16, 1024, 0, 5);
	f.b[12] = 0x08; /* ARP */
	f.b[13] = 0x06;
	tpcap_rec(&w, t += 1000, f.b, 60, 60);
	tpcap_close(&w);
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	struct sim_counts *n = &r.t.cnt;
	assert_int_equal(n->read, 9);
	assert_int_equal(n->roce, 2);
	assert_int_equal(n->status[PULSE_ROCE_IP_FRAGMENT], 1);
	assert_int_equal(n->status[PULSE_ROCE_E_OPCODE], 1);
	assert_int_equal(n->status[PULSE_ROCE_E_NOT_ROCE], 1);
	assert_int_equal(n->status[PULSE_ROCE_E_IP_LENGTH], 1);
	assert_int_equal(n->status[PULSE_ROCE_E_SNAPLEN], 1);
	assert_int_equal(n->status[PULSE_ROCE_NOT_ROCE_PORT], 1);
	assert_int_equal(n->status[PULSE_ROCE_NOT_IP], 1);
	assert_int_equal(n->malformed, 3);
	assert_int_equal(n->skipped, 2);
	assert_int_equal(n->not_roce, 2);
	/* the two good packets: one one-way flow, a synthetic local QPN */
	assert_int_equal(r.t.nflows, 1);
	assert_int_equal(r.t.flows[0].method, SIM_QPN_SYNTHETIC);
	assert_int_equal(r.t.flows[0].tx_pkts, 2);
	assert_true(r.t.qps[0].synthetic);
	check_measured(&r);
	treplay_free(&r);
	tmpdir_remove(dir);
}

static void test_timestamps_backwards(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	char p[600];
	snprintf(p, sizeof p, "%s/back.pcap", dir);
	struct tpcap w;
	struct tframe f;
	tpcap_open(&w, p, 0xA1B23C4Du, 65535, 1);
	tf_roce(&f, 1, 2, 4791, 0x0A, 5, 1, 16, 4096, 0, 5);
	uint64_t ts[] = {5000000, 5001000, 5000400, 5000100, 5002000};
	for (int i = 0; i < 5; i++)
		tpcap_rec(&w, 1700000000000000000ull + ts[i], f.b, f.n, f.n);
	tpcap_close(&w);
	struct sim_cfg c = defcfg();
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.cnt.ts_backwards, 2);
	assert_int_equal(r.t.cnt.ts_backwards_max_ns, 900);
	assert_int_equal(r.t.flows[0].tx_pkts, 5);
	check_measured(&r);
	for (uint32_t i = 0; i < r.e.nnics; i++) {
		assert_int_equal(r.e.nics[i].fw_stats[PULSE_STAT_REORDERED_EVENTS], 0);
		assert_int_equal(r.e.nics[i].fw_stats[PULSE_STAT_LATE_EVENTS], 0);
	}
	treplay_free(&r);
	tmpdir_remove(dir);
}

/* More flows than the firmware has slots: counted drops, the rest intact. */
static void test_slot_exhaustion_small(void **s)
{
	(void)s;
	char *dir = tmpdir_make();
	struct tg_cfg g;
	tg_cfg_default(&g);
	g.pattern = TG_QPS;
	g.qps = 5000;
	g.snaplen = 128;
	struct tg_result res;
	const char *p = gen(dir, "q.pcap", &g, &res);
	struct sim_cfg c = defcfg();
	c.fw_flows = 1000;
	struct treplay r;
	assert_int_equal(treplay_run(&r, p, &c), SIM_EXIT_OK);
	assert_int_equal(r.t.nflows, 5000);
	assert_int_equal(r.t.method_count[SIM_QPN_SYNTHETIC], 5000);
	assert_int_equal(r.e.nics[0].fw_stats[PULSE_STAT_FLOWS_CREATED], 1000);
	assert_int_equal(r.e.nics[0].fw_stats[PULSE_STAT_DROP_NO_SLOT], 4000);
	uint64_t measured = 0;
	for (uint32_t i = 0; i < r.t.nqps; i++)
		measured += r.t.qps[i].meas_bytes > 0;
	assert_int_equal(measured, 1000);
	treplay_free(&r);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_ring2_qpns),
		cmocka_unit_test(test_real_tree2_qpns),
		cmocka_unit_test(test_real_nccl_consistent),
		cmocka_unit_test(test_perftest_captures),
		cmocka_unit_test(test_ring_pcap),
		cmocka_unit_test(test_polls_and_clock_wrap),
		cmocka_unit_test(test_log_and_file_replay_agree),
		cmocka_unit_test(test_long_capture_many_windows),
		cmocka_unit_test(test_event_bytes_and_clipping),
		cmocka_unit_test(test_payload_mode),
		cmocka_unit_test(test_straggler),
		cmocka_unit_test(test_pcapng_and_link_types),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_malformed_packets),
		cmocka_unit_test(test_timestamps_backwards),
		cmocka_unit_test(test_slot_exhaustion_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
