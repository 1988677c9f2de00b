/* Exact accounting of the NIC agent core, checked end to end through the
 * mailbox: events in, POLL + every page out, decoded per (QP, epoch) and
 * compared with the epochs the test computes itself from the timestamps:
 * epoch = (t - window_start) mod 2^32 / epoch_ns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"

/* Sends one event and records what the test expects of it. */
struct exp {
	struct ft_fw *f;
	struct ft_map map;
	uint32_t start, epoch_ns;
	uint64_t events, units, pkts;
};

static void exp_init(struct exp *x, struct ft_fw *f, uint32_t start, uint32_t epoch_ns)
{
	x->f = f;
	ft_map_init(&x->map);
	x->start = start;
	x->epoch_ns = epoch_ns;
	x->events = x->units = x->pkts = 0;
}

static void exp_ev(struct exp *x, uint32_t thread, uint32_t qpn, uint16_t units, uint16_t pkts,
		   uint32_t t)
{
	ft_ev_thr(x->f, thread, qpn, units, pkts, t);
	ft_map_add(&x->map, qpn, ft_epoch_of(t, x->start, x->epoch_ns), units);
	x->events++;
	x->units += units;
	x->pkts += pkts;
}

/* Next window: same expectations object, new start, cleared map. */
static void exp_next(struct exp *x, uint32_t start)
{
	ft_map_clear(&x->map);
	x->start = start;
}

static void check_upload(struct exp *x, struct ft_upload *u, const char *what)
{
	ft_map_normalize(&x->map);
	if (ft_map_diff(&u->map, &x->map, what)) {
		print_message("window_seq %u start %u\n", u->poll.window_seq, x->start);
		ft_dump_stats(x->f);
		fail();
	}
	assert_int_equal((uint32_t)u->poll.window_start_ns, x->start);
}


/* Several QPNs, several epochs, gaps, and one flow that spans many pages of
 * 256 bytes; events interleaved in time over 4 threads. */
static void test_exact_accounting_many_pages(void **state)
{
	(void)state;
	const uint32_t S = 1000003u;
	struct pulse_fw_limits lim = ft_limits(64, 8192, 4);
	struct ft_fw *f = ft_fw_new(&lim, 5u);
	struct pulse_mb_config c = ft_config(32000, 1000000000u, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);

	static const uint32_t qpns[] = {1, 0x10, 0x123456, 0xFFFFFE, 0x800000, 0x7FFFFF};
	const unsigned nq = sizeof(qpns) / sizeof(qpns[0]);
	struct exp x;
	exp_init(&x, f, S, 32000);
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	/* 900 ms of traffic: flow 0 dense (most epochs), others sparse with gaps
	 * from 1 to thousands of epochs */
	uint32_t t = S;
	uint32_t next[6];
	for (unsigned q = 0; q < nq; q++)
		next[q] = S + (uint32_t)(ft_rand(&rng) % 100000);
	for (;;) {
		unsigned q = 0;
		for (unsigned i = 1; i < nq; i++)
			if (next[i] - S < next[q] - S)
				q = i;
		t = next[q];
		if (t - S >= 900000000u)
			break;
		uint16_t units = (uint16_t)(1 + ft_rand(&rng) % 0xFFFE);
		uint16_t pkts = (uint16_t)(1 + ft_rand(&rng) % 600);
		exp_ev(&x, q % 4, qpns[q], units, pkts, t);
		uint32_t gap;
		if (q == 0)
			gap = 5000 + (uint32_t)(ft_rand(&rng) % 60000); /* ~1 event/epoch */
		else
			gap = 1 + (uint32_t)(ft_rand(&rng) % (q * 20000000u));
		next[q] = t + gap;
	}
	assert_true(x.events > 20000);

	struct ft_upload u;
	ft_poll_upload(f, S + 900000000u, 0, &u);
	assert_true(u.poll.page_count > 100); /* flow 0 alone needs >100 pages */
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_true(u.poll.nic_ns - u.poll.window_start_ns == 900000000u);
	check_upload(&x, &u, "many pages");

	uint64_t st[PULSE_STAT_COUNT];
	ft_stats(f, S + 900000001u, st);
	assert_int_equal(st[PULSE_STAT_UNITS], ft_map_total(&u.map));
	assert_int_equal(st[PULSE_STAT_UNITS] * PULSE_UNIT_BYTES, x.units * 32u);
	assert_int_equal(st[PULSE_STAT_EVENTS], x.events);
	assert_int_equal(st[PULSE_STAT_PKTS], x.pkts);
	assert_int_equal(st[PULSE_STAT_FLOWS_CREATED], nq);
	assert_int_equal(st[PULSE_STAT_FLOWS_ACTIVE], nq);
	assert_int_equal(st[PULSE_STAT_CLIPPED_EVENTS], 0);
	assert_int_equal(st[PULSE_STAT_REORDERED_EVENTS], 0);
	assert_int_equal(st[PULSE_STAT_LATE_EVENTS], 0);
	assert_int_equal(st[PULSE_STAT_DROP_NO_POOL], 0);
	assert_int_equal(st[PULSE_STAT_DROP_NO_SLOT], 0);
	assert_int_equal(st[PULSE_STAT_DROP_TS_RANGE], 0);
	assert_int_equal(st[PULSE_STAT_POLLS], 1);
	assert_true(st[PULSE_STAT_POOL_USED] <= st[PULSE_STAT_POOL_BLOCKS]);
	assert_true(st[PULSE_STAT_POOL_PEAK] >= st[PULSE_STAT_POOL_USED]);
	assert_true(st[PULSE_STAT_PAGES_SERVED] >= u.poll.page_count);
	ft_upload_free(&u);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* Windows of 1.99 s across two 2^32 ns wraps; events at and around the wrap. */
static void test_timestamp_wrap(void **state)
{
	(void)state;
	const uint32_t W = 1990000000u;
	uint32_t S = 0xFFFFFFFFu - 1500000000u; /* wraps 1.5 s into the first window */
	struct pulse_fw_limits lim = ft_limits(32, 8192, 2);
	struct ft_fw *f = ft_fw_new(&lim, S - 77u);
	struct pulse_mb_config c = ft_config(32000, 2000000000u, 4096);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct exp x;
	exp_init(&x, f, S, 32000);
	uint64_t rng = 12345;
	uint64_t prev_end = 0, first_start = 0;
	uint32_t prev_seq = 0;
	for (int w = 0; w < 6; w++) {
		/* random events, sorted per QPN by construction (increasing t) */
		uint32_t off = 0;
		while (1) {
			off += 1 + (uint32_t)(ft_rand(&rng) % 3000000u);
			if (off >= W)
				break;
			uint32_t q = 1 + (uint32_t)(ft_rand(&rng) % 5);
			exp_ev(&x, q & 1, q, (uint16_t)(1 + ft_rand(&rng) % 5000), 3, S + off);
		}
		/* exactly at the wrap, if this window holds it */
		uint32_t to_wrap = 0u - S; /* t = 0 */
		if (to_wrap != 0 && to_wrap < W) {
			/* QPN 9 only here: -1 ns, 0, +1 ns */
			exp_ev(&x, 0, 9, 100, 1, 0xFFFFFFFFu);
			exp_ev(&x, 0, 9, 200, 1, 0u);
			exp_ev(&x, 0, 9, 300, 1, 1u);
		}
		struct ft_upload u;
		ft_poll_upload(f, S + W, 0, &u);
		check_upload(&x, &u, "wrap window");
		assert_true(u.poll.nic_ns - u.poll.window_start_ns == W);
		if (w == 0)
			first_start = u.poll.window_start_ns;
		if (w > 0) {
			/* the extended 64-bit clock is continuous */
			assert_true(u.poll.window_start_ns == prev_end);
			assert_int_equal(u.poll.window_seq, prev_seq + 1);
			assert_false(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
		}
		prev_end = u.poll.nic_ns;
		prev_seq = u.poll.window_seq;
		ft_upload_free(&u);
		S += W;
		exp_next(&x, S);
	}
	/* 6 x 1.99 s = 11.94 s of extended 64-bit NIC time, across two wraps */
	assert_true(prev_end - first_start == 6ull * W);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), x.units);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_TS_RANGE), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_LATE_EVENTS), 0);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* Epoch index exact at boundaries t = k*E - 1 and t = k*E, for epoch lengths
 * 8, 32, 1024 us and the non-powers of two 10 and 33 us; window start both
 * small and just below the wrap. */
static void run_boundaries(uint32_t E, uint32_t S)
{
	struct pulse_fw_limits lim = ft_limits(16, 1024, 1);
	struct ft_fw *f = ft_fw_new(&lim, S - 1000u);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 1024);
	struct pulse_mb_hello h;
	assert_int_equal(ft_configure(f, S, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.epoch_ns, E);
	struct exp x;
	exp_init(&x, f, S, E);
	static const uint32_t ks[] = {1, 2, 3, 5, 7, 64, 254, 255, 256, 257, 509, 510, 511,
				      900, 4096, 65535, 65536, 65537, 100000, 124999};
	uint16_t u = 1;
	exp_ev(&x, 0, 0x42, u++, 1, S); /* epoch 0, first ns */
	uint32_t last = 0;
	for (unsigned i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		uint64_t at = (uint64_t)ks[i] * E;
		if (at + E >= 990000000u)
			break;
		exp_ev(&x, 0, 0x42, u++, 1, S + (uint32_t)at - 1u);
		exp_ev(&x, 0, 0x42, u++, 1, S + (uint32_t)at);
		/* a second flow, one event per boundary, on the late side only */
		exp_ev(&x, 0, 0x4242, (uint16_t)(1000 + u), 1, S + (uint32_t)at + E - 1u);
		last = ks[i];
	}
	assert_true(last > 0);
	struct ft_upload up;
	ft_poll_upload(f, S + 990000000u, 0, &up);
	char what[64];
	snprintf(what, sizeof(what), "epoch %u ns, start %u", E, S);
	check_upload(&x, &up, what);
	/* and the cells are where the formula says, explicitly */
	assert_int_equal(ft_map_get(&up.map, 0x42, 0), 1 + 2); /* t=S and t=S+E-1 */
	assert_int_equal(ft_map_get(&up.map, 0x42, 1), 3 + 4);
	ft_upload_free(&up);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

static void test_epoch_boundaries(void **state)
{
	(void)state;
	static const uint32_t Es[] = {8000, 32000, 1024000, 10000, 33000};
	for (unsigned i = 0; i < sizeof(Es) / sizeof(Es[0]); i++) {
		run_boundaries(Es[i], 123457u);
		run_boundaries(Es[i], 0xFFFFFFFFu - 5u * Es[i] + 3u);
	}
}

/* Advances around the 8-bit record limit and the skip encoding. */
static void test_epoch_gaps(void **state)
{
	(void)state;
	const uint32_t E = 8000, S = 77u;
	struct pulse_fw_limits lim = ft_limits(8, 1024, 1);
	struct ft_fw *f = ft_fw_new(&lim, 0);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct exp x;
	exp_init(&x, f, S, E);
	static const uint32_t ep[] = {0,     254,   509,   765,   766,   1276,  1276 + 65536,
				      66813, 66813 + 255, 66813 + 255 + 254, 124999};
	for (unsigned i = 0; i < sizeof(ep) / sizeof(ep[0]); i++)
		exp_ev(&x, 0, 7, (uint16_t)(10 + i), 1, S + ep[i] * E + (uint32_t)(i * 37 % E));
	/* a flow whose first epoch is late in the window */
	exp_ev(&x, 0, 8, 5, 1, S + 124999u * E);
	/* and one whose first epoch is 255 */
	exp_ev(&x, 0, 9, 6, 1, S + 255u * E);
	struct ft_upload u;
	ft_poll_upload(f, S + 1000000000u, 0, &u);
	check_upload(&x, &u, "gaps");
	ft_upload_free(&u);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* 800 Gb/s into one 1024 us epoch: 102.4 MB = 3,200,000 units. */
static void test_line_rate_800g_no_overflow(void **state)
{
	(void)state;
	const uint32_t E = 1024000, S = 5000u;
	struct pulse_fw_limits lim = ft_limits(8, 1024, 4);
	struct ft_fw *f = ft_fw_new(&lim, 0);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 1024);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct exp x;
	exp_init(&x, f, S, E);
	const uint32_t e0 = S + 3u * E; /* epoch 3 */
	/* A: the NIC's way, one event per 4 KB: 25,000 x 128 units */
	for (uint32_t i = 0; i < 25000; i++)
		exp_ev(&x, 0, 0xA, 128, 1, e0 + i * 40u); /* 40 ns apart: 1,000,000 ns */
	/* B: heavily coalesced, 16-bit counter just below clipping */
	for (uint32_t i = 0; i < 48; i++)
		exp_ev(&x, 1, 0xB, 0xFFFE, 504, e0 + i * 20000u);
	exp_ev(&x, 1, 0xB, 3200000u - 48u * 0xFFFEu, 415, e0 + 1000000u);
	struct ft_upload u;
	ft_poll_upload(f, S + 10u * E, 0, &u);
	check_upload(&x, &u, "800G");
	assert_int_equal(ft_map_get(&u.map, 0xA, 3), 3200000u);
	assert_int_equal(ft_map_get(&u.map, 0xB, 3), 3200000u);
	ft_upload_free(&u);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* Clipped events: the 16-bit counter saturated at 0xFFFF; bytes are estimated
 * from packets x clip_units_per_pkt. Packet counts are chosen so that the
 * estimate exceeds 0xFFFF (the only consistent case). */
static void test_clipped_events(void **state)
{
	(void)state;
	const uint32_t E = 32000, S = 100u;
	struct pulse_fw_limits lim = ft_limits(8, 1024, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct ft_map want;
	ft_map_init(&want);
	/* default clip_units_per_pkt: 130 */
	ft_ev(f, 5, 0xFFFF, 600, S + 10);
	ft_map_add(&want, 5, 0, 600u * PULSE_CLIP_UNITS_PER_PKT_DEFAULT);
	ft_ev(f, 5, 0xFFFE, 600, S + E + 10); /* not clipped */
	ft_map_add(&want, 5, 1, 0xFFFE);
	ft_ev(f, 6, 0xFFFF, 0xFFFF, S + 2 * E); /* the largest possible estimate */
	ft_map_add(&want, 6, 2, 0xFFFFu * PULSE_CLIP_UNITS_PER_PKT_DEFAULT);
	struct ft_upload u;
	ft_poll_upload(f, S + 100 * E, 0, &u);
	ft_map_normalize(&want);
	assert_int_equal(ft_map_diff(&u.map, &want, "clipped, default"), 0);
	ft_upload_free(&u);
	assert_int_equal(ft_stat(f, PULSE_STAT_CLIPPED_EVENTS), 2);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS),
			 600u * 130u + 0xFFFEu + 0xFFFFu * 130u);

	/* configured factor; then 0 keeps it */
	uint32_t S2 = S + 100 * E;
	struct pulse_mb_config c = ft_config(E, 1000000000u, 1024);
	c.clip_units_per_pkt = 200;
	struct pulse_mb_hello h;
	assert_int_equal(ft_configure(f, S2, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.clip_units_per_pkt, 200);
	c.clip_units_per_pkt = 0;
	assert_int_equal(ft_configure(f, S2, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.clip_units_per_pkt, 200);
	ft_map_clear(&want);
	ft_ev(f, 5, 0xFFFF, 1000, S2 + 3 * E + 1);
	ft_map_add(&want, 5, 3, 200000);
	ft_poll_upload(f, S2 + 10 * E, 0, &u);
	ft_map_normalize(&want);
	assert_int_equal(ft_map_diff(&u.map, &want, "clipped, 200/pkt"), 0);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* Far beyond line rate: more units in one epoch than one 24-bit record holds.
 * The record format lets two records name the same epoch, so nothing may be
 * lost or wrapped. */
static void test_epoch_beyond_24bit_record(void **state)
{
	(void)state;
	const uint32_t E = 1024000, S = 0;
	struct pulse_fw_limits lim = ft_limits(8, 1024, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 1024);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	/* 3 clipped events of 65535 pkts: 3 x 8,519,550 = 25,558,650 units */
	for (int i = 0; i < 3; i++)
		ft_ev(f, 0x77, 0xFFFF, 0xFFFF, S + E + (uint32_t)i);
	/* plus 300 unclipped events of 0xFFFE: 19,660,200 units */
	for (int i = 0; i < 300; i++)
		ft_ev(f, 0x77, 0xFFFE, 500, S + E + 100u + (uint32_t)i);
	uint64_t want = 3ull * 0xFFFFu * 130u + 300ull * 0xFFFEu;
	struct ft_upload u;
	ft_poll_upload(f, S + 5 * E, 0, &u);
	if (ft_map_get(&u.map, 0x77, 1) != want)
		print_message("epoch 1 of QPN 0x77: got %llu units, want %llu\n",
			      (unsigned long long)ft_map_get(&u.map, 0x77, 1),
			      (unsigned long long)want);
	assert_int_equal(ft_map_get(&u.map, 0x77, 1), want);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), want);
	ft_upload_free(&u);
	ft_fw_free(f);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Several windows with random traffic; every window exact; the sum over all
 * uploads equals the UNITS counter. */
static void test_many_windows_random(void **state)
{
	(void)state;
	uint32_t S = 0xF0000000u;
	struct pulse_fw_limits lim = ft_limits(512, 16384, 4);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(10000, 50000000u, 512); /* 10 us epochs, 50 ms */
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct exp x;
	exp_init(&x, f, S, 10000);
	uint64_t rng = 777, total = 0;
	static uint32_t offs[3000];
	for (int w = 0; w < 40; w++) {
		uint32_t len = 1000000u + (uint32_t)(ft_rand(&rng) % 60000000u); /* 1..61 ms */
		unsigned nev = (unsigned)(ft_rand(&rng) % 3000);
		for (unsigned i = 0; i < nev; i++)
			offs[i] = (uint32_t)(ft_rand(&rng) % len);
		qsort(offs, nev, sizeof(offs[0]), cmp_u32);
		/* the active QPN subset changes between windows, so flows age */
		uint32_t qbase = 1 + (uint32_t)(ft_rand(&rng) % 64);
		for (unsigned i = 0; i < nev; i++) {
			uint32_t q = qbase + (uint32_t)(ft_rand(&rng) % 40);
			exp_ev(&x, q % 4, q, (uint16_t)(1 + ft_rand(&rng) % 4000), 2, S + offs[i]);
		}
		struct ft_upload u;
		ft_poll_upload(f, S + len, 0, &u);
		check_upload(&x, &u, "random window");
		total += ft_map_total(&u.map);
		ft_upload_free(&u);
		S += len;
		exp_next(&x, S);
	}
	assert_int_equal(total, x.units);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), x.units);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), x.events);
	assert_int_equal(ft_stat(f, PULSE_STAT_REORDERED_EVENTS), 0);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* The epoch index is exact for any epoch length and any offset the window
 * allows: 300 random epoch lengths in [8, 1024] us (plus the edges), events at
 * k*E - 1 and k*E for k up to the end of a 2 s window (offsets near 2^31). */
static void test_epoch_index_random_lengths(void **state)
{
	(void)state;
	const uint32_t W = 2000000000u;
	struct pulse_fw_limits lim = ft_limits(8, 256, 1);
	uint32_t S = 0x89ABCDEFu;
	struct ft_fw *f = ft_fw_new(&lim, S);
	uint64_t rng = 99;
	for (int i = 0; i < 300; i++) {
		uint32_t E;
		if (i == 0)
			E = PULSE_EPOCH_NS_MIN;
		else if (i == 1)
			E = PULSE_EPOCH_NS_MAX;
		else if (i == 2)
			E = PULSE_EPOCH_NS_MIN + 1;
		else if (i == 3)
			E = PULSE_EPOCH_NS_MAX - 1;
		else
			E = PULSE_EPOCH_NS_MIN +
			    (uint32_t)(ft_rand(&rng) % (PULSE_EPOCH_NS_MAX - PULSE_EPOCH_NS_MIN + 1));
		struct pulse_mb_config c = ft_config(E, W, 1024);
		assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
		struct exp x;
		exp_init(&x, f, S, E);
		uint32_t kmax = (W - 1000000u) / E; /* the last whole epoch before 1.999 s */
		uint32_t ks[6] = {1, 2, kmax / 3, kmax / 2, kmax - 1, kmax};
		for (int j = 0; j < 6; j++) {
			uint32_t k = ks[j];
			if (j > 0 && k <= ks[j - 1])
				continue;
			exp_ev(&x, 0, 0x100, (uint16_t)(2 * j + 1), 1, S + k * E - 1u);
			exp_ev(&x, 0, 0x100, (uint16_t)(2 * j + 2), 1, S + k * E);
		}
		/* the farthest offset the window holds, and one random one */
		uint32_t far = W - 1u;
		exp_ev(&x, 0, 0x100, 99, 1, S + far);
		struct ft_upload u;
		ft_poll_upload(f, S + W, 0, &u);
		char what[64];
		snprintf(what, sizeof(what), "epoch %u ns", E);
		check_upload(&x, &u, what);
		ft_upload_free(&u);
		ft_map_free(&x.map);
		S += W + 12345u;
	}
	ft_fw_free(f);
}

/* Every epoch of a maximal window active: 8 us epochs over 2 s is 250,000
 * records for one flow, across many pages of the largest size. */
static void test_dense_maximal_window(void **state)
{
	(void)state;
	const uint32_t E = 8000, W = 2000000000u, S = 4000000000u;
	struct pulse_fw_limits lim = ft_limits(4, 9000, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E, W, 65535);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct exp x;
	exp_init(&x, f, S, E);
	for (uint32_t e = 0; e < W / E; e++)
		exp_ev(&x, 0, 0xABCDEF, (uint16_t)(1 + e % 60000), 1, S + e * E + (e % E));
	struct ft_upload u;
	ft_poll_upload(f, S + W, 0, &u);
	assert_int_equal(u.nonskip_records, W / E);
	assert_true(u.poll.page_count >= 15);
	check_upload(&x, &u, "dense 2 s");
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_POOL), 0);
	ft_upload_free(&u);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

/* The largest thread count: every thread index works, and counters from all
 * of them add up. */
static void test_256_threads(void **state)
{
	(void)state;
	const uint32_t S = 0;
	struct pulse_fw_limits lim = ft_limits(512, 1024, PULSE_FW_MAX_THREADS);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct exp x;
	exp_init(&x, f, S, 32000);
	for (uint32_t t = 0; t < PULSE_FW_MAX_THREADS; t++)
		exp_ev(&x, t, 1 + t, (uint16_t)(t + 1), 1, S + t * 1000u);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), PULSE_FW_MAX_THREADS);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), PULSE_FW_MAX_THREADS);
	struct ft_upload u;
	ft_poll_upload(f, S + 100000000u, 0, &u);
	check_upload(&x, &u, "256 threads");
	ft_upload_free(&u);
	ft_map_free(&x.map);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_accounting_many_pages),
		cmocka_unit_test(test_timestamp_wrap),
		cmocka_unit_test(test_epoch_boundaries),
		cmocka_unit_test(test_epoch_gaps),
		cmocka_unit_test(test_line_rate_800g_no_overflow),
		cmocka_unit_test(test_clipped_events),
		cmocka_unit_test(test_epoch_beyond_24bit_record),
		cmocka_unit_test(test_many_windows_random),
		cmocka_unit_test(test_epoch_index_random_lengths),
		cmocka_unit_test(test_dense_maximal_window),
		cmocka_unit_test(test_256_threads),
	};
	return cmocka_run_group_tests_name("fw accounting", tests, NULL, NULL);
}
