/* Bad input on the event path (issue #2, "Bad input"): each case gets a
 * counted drop, never a crash or corrupted state, and the other flows' data
 * stays exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"

#define E32 32000u


static void expect_map(struct ft_upload *u, struct ft_map *want, const char *what)
{
	ft_map_normalize(want);
	assert_int_equal(ft_map_diff(&u->map, want, what), 0);
}

static void test_bad_qpn(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	static const uint32_t bad[] = {0,          0xFFFFFF,   0x1000000, 0x1000001,
				       0x1000005,  0xFFFFFFFF, 0x80000001, 0x2FFFFFF};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ft_ev(f, bad[i], 100, 1, S + 10 + i);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_QPN), 8);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), 0);
	/* the valid neighbours of the bad ones still work, and the wide QPNs
	 * were not masked into 1 or 5 */
	struct ft_map want;
	ft_map_init(&want);
	ft_ev(f, 1, 7, 1, S + 100);
	ft_map_add(&want, 1, 0, 7);
	ft_ev(f, 5, 9, 1, S + 100);
	ft_map_add(&want, 5, 0, 9);
	ft_ev(f, 0xFFFFFE, 11, 1, S + 100);
	ft_map_add(&want, 0xFFFFFE, 0, 11);
	ft_ev(f, 0x1000001, 1000, 1, S + 101); /* after QPN 1 exists */
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	expect_map(&u, &want, "bad qpn");
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_QPN), 9);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

static void test_zero_byte_events(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	ft_ev(f, 3, 0, 0, S + 1);
	ft_ev(f, 4, 0, 17, S + 2); /* packets but no bytes */
	assert_int_equal(ft_stat(f, PULSE_STAT_ZERO_EVENTS), 2);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	/* a zero event on an existing flow changes nothing */
	ft_ev(f, 5, 10, 1, S + 3);
	ft_ev(f, 5, 0, 0, S + 3 * E32);
	struct ft_map want;
	ft_map_init(&want);
	ft_map_add(&want, 5, 0, 10);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	expect_map(&u, &want, "zero events");
	assert_int_equal(u.poll.flows, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_ZERO_EVENTS), 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 1);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* A timestamp going backwards across epochs within the window: REORDERED,
 * bytes kept in the flow's current (last) epoch; other flows unaffected. */
static void test_timestamp_backwards_reordered(void **state)
{
	(void)state;
	const uint32_t S = 5000;
	struct pulse_fw_limits lim = ft_limits(8, 64, 2);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct ft_map want;
	ft_map_init(&want);
	ft_ev(f, 10, 100, 1, S + 10 * E32 + 5);
	ft_ev(f, 10, 200, 1, S + 10 * E32 + 1); /* backwards, same epoch: not reordered */
	assert_int_equal(ft_stat(f, PULSE_STAT_REORDERED_EVENTS), 0);
	ft_ev(f, 10, 300, 1, S + 5 * E32);      /* back 5 epochs */
	assert_int_equal(ft_stat(f, PULSE_STAT_REORDERED_EVENTS), 1);
	ft_ev(f, 10, 400, 1, S + 12 * E32);
	ft_ev(f, 10, 500, 1, S + 1);            /* back to epoch 0 */
	assert_int_equal(ft_stat(f, PULSE_STAT_REORDERED_EVENTS), 2);
	ft_map_add(&want, 10, 10, 100 + 200 + 300);
	ft_map_add(&want, 10, 12, 400 + 500);
	/* another flow, in epochs the first one went back to */
	ft_ev_thr(f, 1, 11, 7, 1, S + 5 * E32);
	ft_map_add(&want, 11, 5, 7);
	struct ft_upload u;
	ft_poll_upload(f, S + 20 * E32, 0, &u);
	expect_map(&u, &want, "reordered");
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), 1507);
	assert_int_equal(ft_stat(f, PULSE_STAT_LATE_EVENTS), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_TS_RANGE), 0);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* Stamped shortly before the open window (the previous one is closed):
 * LATE, counted in epoch 0 of the open window. */
static void test_late_event(void **state)
{
	(void)state;
	const uint32_t S = 0xFFFFFF00u; /* and across the wrap */
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	ft_ev(f, 20, 50, 1, S + 3 * E32);
	struct ft_upload u;
	const uint32_t T1 = S + 10 * E32;
	ft_poll_upload(f, T1, 0, &u);
	assert_int_equal(ft_map_get(&u.map, 20, 3), 50);
	ft_upload_free(&u);
	ft_ev(f, 20, 60, 1, T1 - 5000);  /* 5 us before the window */
	ft_ev(f, 21, 70, 1, T1 - 1);     /* a new flow, 1 ns before */
	assert_int_equal(ft_stat(f, PULSE_STAT_LATE_EVENTS), 2);
	ft_ev(f, 21, 80, 1, T1 + 2 * E32);
	struct ft_map want;
	ft_map_init(&want);
	ft_map_add(&want, 20, 0, 60);
	ft_map_add(&want, 21, 0, 70);
	ft_map_add(&want, 21, 2, 80);
	ft_poll_upload(f, T1 + 10 * E32, 0, &u);
	expect_map(&u, &want, "late");
	assert_int_equal((uint32_t)u.poll.window_start_ns, T1);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* A timestamp jumping forward by seconds, beyond any legal window (2 s max):
 * dropped and counted; the flow's state is not disturbed by it. */
static void test_timestamp_jump_forward_out_of_range(void **state)
{
	(void)state;
	const uint32_t S = 12345;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct ft_map want;
	ft_map_init(&want);
	ft_ev(f, 30, 10, 1, S + 1000000);
	ft_map_add(&want, 30, 1000000 / E32, 10);
	ft_ev(f, 30, 20, 1, S + 2100000000u); /* +2.1 s: past PULSE_WINDOW_NS_MAX */
	ft_ev(f, 31, 30, 1, S + 2100000000u); /* a new flow with a bad first stamp */
	ft_ev(f, 30, 40, 1, S + 3000000000u); /* +3 s */
	ft_ev(f, 30, 50, 1, S + 2000000);     /* back to normal: neither late nor reordered */
	ft_map_add(&want, 30, 2000000 / E32, 50);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_TS_RANGE), 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_REORDERED_EVENTS), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), 60);
	struct ft_upload u;
	ft_poll_upload(f, S + 900000000u, 0, &u);
	expect_map(&u, &want, "jump forward");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* A single event stamped seconds in the future, but within twice the window:
 * wherever it goes, the flow's later (correct) events must not be dragged
 * along with it, and the upload must not claim bytes after the window end.
 * The spec leaves the exact range to the firmware; what it does fix is that
 * a jump by seconds is a counted drop, never corrupted data. */
static void test_timestamp_jump_forward_by_seconds_then_back(void **state)
{
	(void)state;
	const uint32_t S = 777;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S); /* default window: 1 s */
	struct ft_map want;
	ft_map_init(&want);
	ft_ev(f, 40, 10, 1, S + 1000000);
	ft_map_add(&want, 40, 1000000 / E32, 10);
	ft_ev(f, 40, 999, 1, S + 1500000000u); /* +1.5 s, one bad stamp */
	for (uint32_t k = 2; k < 30; k++) {
		ft_ev(f, 40, (uint16_t)k, 1, S + k * 1000000u);
		ft_map_add(&want, 40, k * 1000000u / E32, k);
	}
	struct ft_upload u;
	ft_poll_upload(f, S + 1000000000u, 0, &u);
	uint64_t bad_here = ft_map_get(&u.map, 40, 1500000000u / E32);
	if (bad_here)
		print_message("the +1.5 s event was uploaded in epoch %u of a %u-epoch window\n",
			      1500000000u / E32, 1000000000u / E32);
	uint64_t st[PULSE_STAT_COUNT];
	pulse_fw_stats(f->fw, st);
	print_message("DROP_TS_RANGE %llu, REORDERED %llu\n",
		      (unsigned long long)st[PULSE_STAT_DROP_TS_RANGE],
		      (unsigned long long)st[PULSE_STAT_REORDERED_EVENTS]);
	/* the later, correctly stamped events are where they belong */
	for (size_t i = 0; i < u.map.n; i++)
		assert_true((uint64_t)u.map.v[i].epoch * E32 < 1000000000u);
	expect_map(&u, &want, "jump +1.5 s");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* The NIC time handed to the mailbox stepping back (platform noise) must not
 * read as a 4.29 s jump forward: the clock stands still. */
static void test_mailbox_clock_steps_back(void **state)
{
	(void)state;
	const uint32_t S = 5000000;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	ft_ev(f, 3, 10, 1, S + 1000);
	struct ft_upload u;
	ft_poll_upload(f, S + 2000000, 0, &u); /* window 1 ends at +2 ms */
	ft_upload_free(&u);
	ft_poll_upload(f, S + 2000000 - 1000, 0, &u); /* 1 us back */
	assert_true(u.poll.nic_ns == u.poll.window_start_ns); /* not 2^32 - 1000 */
	ft_upload_free(&u);
	ft_ev(f, 3, 20, 1, S + 2500000);
	ft_poll_upload(f, S + 3000000, 0, &u);
	assert_true(u.poll.nic_ns - u.poll.window_start_ns == 1000000u);
	assert_int_equal(ft_map_total(&u.map), 20);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* A timestamp going back by seconds, before the open window: either late
 * (counted in epoch 0) or out of range (dropped), but counted and consistent. */
static void test_timestamp_jump_backward_by_seconds(void **state)
{
	(void)state;
	const uint32_t S = 100;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	ft_ev(f, 50, 10, 1, S + 5 * E32);
	ft_ev(f, 51, 20, 1, S - 1500000000u); /* 1.5 s before the window, wraps */
	ft_ev(f, 50, 30, 1, S - 1500000000u);
	uint64_t late = ft_stat(f, PULSE_STAT_LATE_EVENTS);
	uint64_t range = ft_stat(f, PULSE_STAT_DROP_TS_RANGE);
	assert_int_equal(late + range, 2);
	struct ft_upload u;
	ft_poll_upload(f, S + 100 * E32, 0, &u);
	assert_int_equal(ft_map_get(&u.map, 50, 5), 10 + (range ? 0 : 30));
	assert_int_equal(ft_map_qpn_total(&u.map, 51), range ? 0 : 20);
	assert_int_equal(ft_map_total(&u.map), ft_stat(f, PULSE_STAT_UNITS));
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* Pool exhaustion: the lost records are counted (events and units), what is
 * uploaded is exact, and a flow that had its blocks first keeps its data. */
static void test_pool_exhaustion(void **state)
{
	(void)state;
	const uint32_t S = 0, E = 8000;
	struct pulse_fw_limits lim = ft_limits(8, 6, 2); /* 6 x 31 = 186 records */
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct ft_map want;
	ft_map_init(&want);
	uint64_t sent = 0;
	/* victim: 20 epochs, fits its first block */
	for (uint32_t e = 0; e < 20; e++) {
		ft_ev(f, 0xAA, (uint16_t)(100 + e), 1, S + e * E + 1);
		ft_map_add(&want, 0xAA, e, 100 + e);
		sent += 100 + e;
	}
	/* hog: 400 epochs, exhausts the pool */
	for (uint32_t e = 0; e < 400; e++) {
		ft_ev_thr(f, 1, 0xBB, (uint16_t)(1000 + e), 2, S + e * E + 2);
		ft_map_add(&want, 0xBB, e, 1000 + e);
		sent += 1000 + e;
	}
	/* victim goes on: some of this needs a new block and is lost */
	for (uint32_t e = 20; e < 60; e++) {
		ft_ev(f, 0xAA, (uint16_t)(100 + e), 1, S + e * E + 3);
		ft_map_add(&want, 0xAA, e, 100 + e);
		sent += 100 + e;
	}
	/* a new flow while the pool is empty */
	ft_ev(f, 0xCC, 5, 1, S + 500 * E);
	ft_map_add(&want, 0xCC, 500, 5);
	sent += 5;
	struct ft_upload u;
	ft_poll_upload(f, S + 1000 * E, 0, &u);
	ft_map_normalize(&want);
	uint64_t st[PULSE_STAT_COUNT];
	pulse_fw_stats(f->fw, st);
	assert_true(st[PULSE_STAT_DROP_NO_POOL] > 0);
	assert_true(st[PULSE_STAT_POOL_USED] <= 6);
	assert_int_equal(st[PULSE_STAT_POOL_PEAK], 6);
	assert_int_equal(st[PULSE_STAT_POOL_BLOCKS], 6);
	/* every uploaded cell is exactly what was sent in it */
	for (size_t i = 0; i < u.map.n; i++) {
		uint64_t w = ft_map_get(&want, u.map.v[i].qpn, u.map.v[i].epoch);
		if (w != u.map.v[i].units)
			print_message("qpn %x epoch %u: got %llu want %llu\n", u.map.v[i].qpn,
				      u.map.v[i].epoch, (unsigned long long)u.map.v[i].units,
				      (unsigned long long)w);
		assert_int_equal(u.map.v[i].units, w);
	}
	/* the victim's first 20 epochs survived the hog */
	for (uint32_t e = 0; e < 20; e++)
		assert_int_equal(ft_map_get(&u.map, 0xAA, e), 100 + e);
	/* nothing vanished without a count */
	assert_int_equal(ft_map_total(&u.map) + st[PULSE_STAT_DROP_NO_POOL_UNITS], sent);
	assert_true(st[PULSE_STAT_DROP_NO_POOL_UNITS] > 0);
	ft_upload_free(&u);

	/* The blocks come back: a window's blocks may be held until the next
	 * POLL (the last page may still be re-read), so the window after that
	 * one has the whole pool again. */
	const uint32_t S2 = S + 1000 * E;
	ft_poll_upload(f, S2 + 10 * E, 0, &u);
	ft_upload_free(&u);
	const uint32_t S3 = S2 + 10 * E;
	ft_map_clear(&want);
	for (uint32_t e = 0; e < 150; e++) {
		ft_ev(f, 0xAA, 7, 1, S3 + e * E);
		ft_map_add(&want, 0xAA, e, 7);
	}
	ft_poll_upload(f, S3 + 200 * E, 0, &u);
	expect_map(&u, &want, "after exhaustion");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* pool_limit restricts the blocks the pool hands out. */
static void test_pool_limit_config(void **state)
{
	(void)state;
	const uint32_t S = 0, E = 8000;
	struct pulse_fw_limits lim = ft_limits(8, 100, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 256);
	c.pool_limit = 2;
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_BLOCKS), 2);
	for (uint32_t e = 0; e < 200; e++)
		ft_ev(f, 9, 1, 1, S + e * E);
	assert_true(ft_stat(f, PULSE_STAT_POOL_USED) <= 2);
	struct ft_upload u;
	ft_poll_upload(f, S + 300 * E, 0, &u);
	assert_true(u.map.n <= 62);
	assert_true(ft_stat(f, PULSE_STAT_DROP_NO_POOL) > 0);
	assert_int_equal(ft_map_total(&u.map) + ft_stat(f, PULSE_STAT_DROP_NO_POOL_UNITS), 200);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* Slot exhaustion: small max_flows, and flow_limit below it. */
static void test_slot_exhaustion(void **state)
{
	(void)state;
	const uint32_t S = 0;
	struct pulse_fw_limits lim = ft_limits(4, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct ft_map want;
	ft_map_init(&want);
	for (uint32_t q = 1; q <= 4; q++) {
		ft_ev(f, q * 0x1000, (uint16_t)q, 1, S + q);
		ft_map_add(&want, q * 0x1000, 0, q);
	}
	ft_ev(f, 0x5000, 99, 1, S + 10);
	ft_ev(f, 0x6000, 99, 1, S + 11);
	ft_ev(f, 0x5000, 99, 1, S + E32 + 12);
	for (uint32_t q = 1; q <= 4; q++) {
		ft_ev(f, q * 0x1000, 10, 1, S + E32 + 20 + q);
		ft_map_add(&want, q * 0x1000, 1, 10);
	}
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_SLOT), 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 4);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), 4);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	expect_map(&u, &want, "slots");
	ft_upload_free(&u);

	/* flow_limit 2 of the 4 slots */
	struct pulse_mb_config c = ft_config(E32, 1000000000u, 1024);
	c.flow_limit = 2;
	struct pulse_mb_hello h;
	const uint32_t S2 = S + 10 * E32;
	assert_int_equal(ft_configure(f, S2, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.flow_limit, 2);
	assert_int_equal(h.max_flows, 4);
	ft_map_clear(&want);
	ft_ev(f, 7, 1, 1, S2 + 1);
	ft_map_add(&want, 7, 0, 1);
	ft_ev(f, 8, 2, 1, S2 + 2);
	ft_map_add(&want, 8, 0, 2);
	uint64_t before = ft_stat(f, PULSE_STAT_DROP_NO_SLOT);
	ft_ev(f, 9, 3, 1, S2 + 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_SLOT), before + 1);
	ft_poll_upload(f, S2 + 10 * E32, 0, &u);
	expect_map(&u, &want, "flow_limit");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* The largest slot count: 65535 flows (u16 slot numbers, 0 = none) all live
 * at once, and the 65536th is refused; no slot number wraps onto another. */
static void test_max_flows_65535(void **state)
{
	(void)state;
	const uint32_t S = 0;
	struct pulse_fw_limits lim = ft_limits(PULSE_FW_MAX_FLOWS, 70000, 4);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E32, 1000000000u, 60000);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct ft_map want;
	ft_map_init(&want);
	for (uint32_t i = 0; i < PULSE_FW_MAX_FLOWS; i++) {
		uint32_t q = 1 + i * 256u; /* spread over the table */
		ft_ev_thr(f, i & 3, q, (uint16_t)(1 + (i & 0x7FFF)), 1, S + i % E32);
		ft_map_add(&want, q, 0, 1 + (i & 0x7FFF));
	}
	ft_ev(f, 0xFFFFFE, 5, 1, S + 70000);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_SLOT), 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), PULSE_FW_MAX_FLOWS);
	/* second event of every flow lands in its own slot */
	for (uint32_t i = 0; i < PULSE_FW_MAX_FLOWS; i++) {
		uint32_t q = 1 + i * 256u;
		ft_ev_thr(f, i & 3, q, 3, 1, S + E32 + i % E32);
		ft_map_add(&want, q, 1, 3);
	}
	struct ft_upload u;
	ft_poll_upload(f, S + 100 * E32, 0, &u);
	assert_int_equal(u.poll.flows, PULSE_FW_MAX_FLOWS);
	expect_map(&u, &want, "65535 flows");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* The platform passing a thread number it was not built for. */
static void test_bad_thread_index(void **state)
{
	(void)state;
	const uint32_t S = 0;
	struct pulse_fw_limits lim = ft_limits(8, 64, 3);
	struct ft_fw *f = ft_fw_new(&lim, S);
	ft_ev_thr(f, 3, 10, 100, 1, S + 1);
	ft_ev_thr(f, 255, 10, 100, 1, S + 2);
	ft_ev_thr(f, 256, 10, 100, 1, S + 3);
	ft_ev_thr(f, 0xFFFFFFFFu, 10, 100, 1, S + 4);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_THREAD), 4);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 0);
	ft_ev_thr(f, 2, 10, 5, 1, S + 5);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 10, 0), 5);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* Clipped estimate beyond what one 24-bit record holds: a configured
 * clip_units_per_pkt of 300 and 60000 packets is 18,000,000 units. */
static void test_clipped_estimate_above_24_bits(void **state)
{
	(void)state;
	const uint32_t S = 0;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(1024000, 1000000000u, 1024);
	c.clip_units_per_pkt = 300;
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	ft_ev(f, 12, 0xFFFF, 60000, S + 5);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * 1024000u, 0, &u);
	if (ft_map_get(&u.map, 12, 0) != 18000000u)
		print_message("clipped 60000 pkts x 300: uploaded %llu units, UNITS %llu\n",
			      (unsigned long long)ft_map_get(&u.map, 12, 0),
			      (unsigned long long)ft_stat(f, PULSE_STAT_UNITS));
	assert_int_equal(ft_map_get(&u.map, 12, 0), 18000000u);
	assert_int_equal(ft_stat(f, PULSE_STAT_CLIPPED_EVENTS), 1);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* The window's accepted range (1.25 windows) ends inside an epoch: an event
 * past it is out of range even when an earlier event of the same flow opened
 * that same epoch (the fast path's time range is clipped to the window's). */
static void test_range_end_inside_epoch(void **state)
{
	(void)state;
	const uint32_t S = 1000, E = 32000u, W = 1000000u; /* max delta 1,250,000 */
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	struct pulse_mb_config c = ft_config(E, W, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	/* epoch 39 covers [1,248,000, 1,280,000), of which 2,000 ns are in range */
	ft_ev(f, 9, 10, 1, S + 1248500u);
	ft_ev(f, 9, 20, 1, S + 1249999u); /* last accepted ns, same epoch */
	ft_ev(f, 9, 40, 1, S + 1250000u); /* same epoch index, out of range */
	ft_ev(f, 9, 80, 1, S + 1270000u);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_TS_RANGE), 2);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 2);
	struct ft_map want;
	ft_map_init(&want);
	ft_map_add(&want, 9, 39, 30);
	struct ft_upload u;
	ft_poll_upload(f, S + 1260000u, 0, &u);
	expect_map(&u, &want, "range end inside an epoch");
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* Many ordinary events in one epoch add up past a record's 24 bits on the
 * fast path: the epoch closes as a full record plus a continuation. */
static void test_fast_path_above_24_bits(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct pulse_fw_limits lim = ft_limits(8, 64, 1);
	struct ft_fw *f = ft_fw_new(&lim, S);
	for (uint32_t i = 0; i < 600; i++)
		ft_ev(f, 12, 0x7FFF, 1, S + 10 + i);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	assert_int_equal(u.poll.records, 2);
	assert_int_equal(ft_map_qpn_total(&u.map, 12), 600u * 0x7FFFu);
	assert_int_equal(ft_map_get(&u.map, 12, 0), 600u * 0x7FFFu);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS), 600u * 0x7FFFu);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 600);
	ft_upload_free(&u);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_qpn),
		cmocka_unit_test(test_zero_byte_events),
		cmocka_unit_test(test_timestamp_backwards_reordered),
		cmocka_unit_test(test_late_event),
		cmocka_unit_test(test_timestamp_jump_forward_out_of_range),
		cmocka_unit_test(test_timestamp_jump_forward_by_seconds_then_back),
		cmocka_unit_test(test_timestamp_jump_backward_by_seconds),
		cmocka_unit_test(test_mailbox_clock_steps_back),
		cmocka_unit_test(test_pool_exhaustion),
		cmocka_unit_test(test_pool_limit_config),
		cmocka_unit_test(test_slot_exhaustion),
		cmocka_unit_test(test_max_flows_65535),
		cmocka_unit_test(test_bad_thread_index),
		cmocka_unit_test(test_clipped_estimate_above_24_bits),
		cmocka_unit_test(test_range_end_inside_epoch),
		cmocka_unit_test(test_fast_path_above_24_bits),
	};
	return cmocka_run_group_tests_name("fw bad input", tests, NULL, NULL);
}
