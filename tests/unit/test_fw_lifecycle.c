/* Life cycle of the NIC agent core: memory sizing and init, the first
 * window, double-buffered windows, flow aging and the return of pool blocks
 * and flow slots. */
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

static void test_memory_size_validation(void **state)
{
	(void)state;
	struct pulse_fw_limits l = ft_limits(16, 256, 2);
	size_t base = pulse_fw_memory_size(&l);
	/* the QPN table alone: 2^24 x u16 */
	assert_true(base >= (size_t)PULSE_QPN_COUNT * 2u);
	l.max_flows = 0;
	assert_int_equal(pulse_fw_memory_size(&l), 0);
	l.max_flows = PULSE_FW_MAX_FLOWS + 1;
	assert_int_equal(pulse_fw_memory_size(&l), 0);
	l.max_flows = PULSE_FW_MAX_FLOWS;
	assert_true(pulse_fw_memory_size(&l) > base);
	l = ft_limits(16, 256, 0);
	assert_int_equal(pulse_fw_memory_size(&l), 0);
	l = ft_limits(16, 256, PULSE_FW_MAX_THREADS + 1);
	assert_int_equal(pulse_fw_memory_size(&l), 0);
	l = ft_limits(16, 256, PULSE_FW_MAX_THREADS);
	assert_true(pulse_fw_memory_size(&l) > base);
	/* the pool costs at least its records */
	struct pulse_fw_limits a = ft_limits(16, 1000, 2), b = ft_limits(16, 2000, 2);
	assert_true(pulse_fw_memory_size(&b) - pulse_fw_memory_size(&a) >=
		    1000u * PULSE_FW_RECORDS_PER_BLOCK * 4u);
	/* a huge pool must not wrap the size computation into something small */
	struct pulse_fw_limits huge = ft_limits(16, 0xFFFFFFFFu, 2);
	size_t hs = pulse_fw_memory_size(&huge);
	assert_true(hs == 0 || hs >= (size_t)0xFFFFFFFFu * PULSE_FW_RECORDS_PER_BLOCK * 4u);
}

static void test_init_rejects_bad_memory(void **state)
{
	(void)state;
	struct pulse_fw_limits l = ft_limits(16, 256, 2);
	size_t need = pulse_fw_memory_size(&l);
	uint8_t *mem = aligned_alloc(64, need + 128);
	assert_non_null(mem);
	memset(mem, 0x5A, need + 128);
	assert_null(pulse_fw_init(NULL, need, &l, 0));
	assert_null(pulse_fw_init(mem, need - 1, &l, 0));
	assert_null(pulse_fw_init(mem + 8, need, &l, 0)); /* not 64-byte aligned */
	struct pulse_fw_limits bad = ft_limits(0, 256, 2);
	assert_null(pulse_fw_init(mem, need, &bad, 0));
	/* nothing past the region is touched */
	struct pulse_fw *fw = pulse_fw_init(mem, need, &l, 0);
	assert_non_null(fw);
	for (size_t i = need; i < need + 128; i++)
		assert_int_equal(mem[i], 0x5A);
	free(mem);
}

/* init on memory that held a live instance: a restart starts clean. */
static void test_reinit_same_memory(void **state)
{
	(void)state;
	struct pulse_fw_limits l = ft_limits(16, 256, 2);
	struct ft_fw *f = ft_fw_new(&l, 100);
	for (uint32_t q = 1; q <= 10; q++)
		for (uint32_t e = 0; e < 40; e++)
			ft_ev(f, q * 7, 5, 1, 100 + e * E32);
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, 100 + 50 * E32, 0, 0, &p), PULSE_MB_OK);
	l.instance_id = 42;
	f->fw = pulse_fw_init(f->mem, f->size, &l, 7777);
	f->nic_clock = 7777; /* a restarted NIC agent starts its clock afresh */
	assert_non_null(f->fw);
	f->lim = l;
	struct pulse_mb_hello h;
	assert_int_equal(ft_hello(f, 7778, &h), PULSE_MB_OK);
	assert_true(h.instance_id == 42);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	assert_int_equal(ft_read_page(f, 7779, p.window_seq, 0, FT_RESP_CAP), PULSE_MB_E_NO_UPLOAD);
	ft_ev(f, 14, 9, 1, 7777 + 2 * E32);
	struct ft_upload u;
	ft_poll_upload(f, 7777 + 10 * E32, 0, &u);
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal((uint32_t)u.poll.window_start_ns, 7777);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 14, 2), 9);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* The first window opens at init's now_ns with the default configuration. */
static void test_first_window(void **state)
{
	(void)state;
	const uint32_t S = 0xFFFFFFF0u;
	struct pulse_fw_limits l = ft_limits(16, 256, 2);
	struct ft_fw *f = ft_fw_new(&l, S);
	ft_ev(f, 5, 1, 1, S);
	ft_ev(f, 5, 2, 1, S + E32 - 1);
	ft_ev(f, 5, 4, 1, S + E32);
	struct ft_upload u;
	ft_poll_upload(f, S + 3 * E32, 0, &u);
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal((uint32_t)u.poll.window_start_ns, S);
	assert_true(u.poll.nic_ns - u.poll.window_start_ns == 3 * E32);
	assert_int_equal(u.poll.epoch_ns, PULSE_EPOCH_NS_DEFAULT);
	assert_int_equal(ft_map_get(&u.map, 5, 0), 3);
	assert_int_equal(ft_map_get(&u.map, 5, 1), 4);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* Events between POLL and reading the pages belong to the next window: not
 * lost, not in the current upload. */
static void test_double_buffered_windows(void **state)
{
	(void)state;
	const uint32_t S = 500, E = 8000;
	struct pulse_fw_limits l = ft_limits(16, 1024, 2);
	struct ft_fw *f = ft_fw_new(&l, S);
	struct pulse_mb_config c = {E, 1000000000u, 256, 0, 0, 0};
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	struct ft_map w1, w2;
	ft_map_init(&w1);
	ft_map_init(&w2);
	for (uint32_t e = 0; e < 200; e++) {
		ft_ev(f, 0x10, (uint16_t)(e + 1), 1, S + e * E);
		ft_map_add(&w1, 0x10, e, e + 1);
	}
	ft_ev(f, 0x11, 3, 1, S + 5);
	ft_map_add(&w1, 0x11, 0, 3);
	const uint32_t T1 = S + 250 * E;
	struct ft_upload u;
	memset(&u, 0, sizeof(u));
	ft_map_init(&u.map);
	assert_int_equal(ft_poll(f, T1, 0, 0, &u.poll), PULSE_MB_OK);
	assert_true(u.poll.page_count >= 3);
	/* between the POLL and the pages: old flows, a new flow, many epochs,
	 * interleaved with the page reads */
	uint32_t e2 = 0;
	uint32_t prev_qpn = 0;
	for (uint16_t p = 0; p < u.poll.page_count; p++) {
		for (int k = 0; k < 60; k++, e2++) {
			ft_ev(f, 0x10, 1000, 1, T1 + e2 * E + 1);
			ft_map_add(&w2, 0x10, e2, 1000);
			ft_ev_thr(f, 1, 0x12, 7, 1, T1 + e2 * E + 2);
			ft_map_add(&w2, 0x12, e2, 7);
		}
		assert_int_equal(ft_read_page(f, T1 + e2 * E, u.poll.window_seq, p, FT_RESP_CAP),
				 PULSE_MB_OK);
		ft_decode_page(ft_resp_body(f), ft_resp_body_len(f), &u.map, &prev_qpn, &u.records,
			       &u.nonskip_records, &u.flow_starts);
	}
	ft_map_normalize(&u.map);
	ft_map_normalize(&w1);
	assert_int_equal(ft_map_diff(&u.map, &w1, "window 1"), 0);
	ft_map_clear(&u.map);
	/* and after the pages were read */
	ft_ev(f, 0x11, 5, 1, T1 + e2 * E + 3);
	ft_map_add(&w2, 0x11, e2, 5);
	ft_upload_free(&u);
	ft_poll_upload(f, T1 + (e2 + 10) * E, 0, &u);
	ft_map_normalize(&w2);
	assert_int_equal(ft_map_diff(&u.map, &w2, "window 2"), 0);
	assert_int_equal((uint32_t)u.poll.window_start_ns, T1);
	assert_int_equal(u.poll.flows_aged, 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_LATE_EVENTS), 0);
	ft_upload_free(&u);
	ft_map_free(&w1);
	ft_map_free(&w2);
	ft_fw_free(f);
}

/* A flow idle for a whole window is released at the POLL; its blocks return;
 * after idle windows the pool is empty and memory in use is back to the
 * fixed part. */
static void test_flow_aging(void **state)
{
	(void)state;
	const uint32_t S = 100, E = 8000;
	struct pulse_fw_limits l = ft_limits(16, 1024, 2);
	struct ft_fw *f = ft_fw_new(&l, S);
	struct pulse_mb_config c = {E, 1000000000u, 1024, 0, 0, 0};
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	size_t base_mem = pulse_fw_memory_in_use(f->fw);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	/* W1: A, B, C, each many epochs (several blocks each) */
	for (uint32_t e = 0; e < 100; e++) {
		ft_ev(f, 0xA, 1, 1, S + e * E);
		ft_ev(f, 0xB, 2, 1, S + e * E + 1);
		ft_ev(f, 0xC, 3, 1, S + e * E + 2);
	}
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 3);
	assert_true(ft_stat(f, PULSE_STAT_POOL_USED) >= 9);
	assert_true(pulse_fw_memory_in_use(f->fw) > base_mem);
	struct ft_upload u;
	uint32_t T = S + 200 * E;
	ft_poll_upload(f, T, 0, &u);
	assert_int_equal(u.poll.flows, 3);
	assert_int_equal(u.poll.flows_aged, 0);
	ft_upload_free(&u);
	/* W2: only A */
	ft_ev(f, 0xA, 1, 1, T + 5);
	T += 200 * E;
	ft_poll_upload(f, T, 0, &u);
	assert_int_equal(u.poll.flows_aged, 2);
	assert_int_equal(u.poll.flows, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_AGED), 2);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 1);
	ft_upload_free(&u);
	/* W3: B comes back: a new flow */
	uint64_t created = ft_stat(f, PULSE_STAT_FLOWS_CREATED);
	ft_ev(f, 0xB, 9, 1, T + 3 * E);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), created + 1);
	T += 200 * E;
	ft_poll_upload(f, T, 0, &u);
	assert_int_equal(u.poll.flows_aged, 1); /* A */
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 0xB, 3), 9);
	ft_upload_free(&u);
	/* idle windows */
	for (int i = 0; i < 3; i++) {
		T += 200 * E;
		ft_poll_upload(f, T, 0, &u);
		assert_int_equal(u.map.n, 0);
		ft_upload_free(&u);
	}
	uint64_t st[PULSE_STAT_COUNT];
	ft_stats(f, T + 1, st);
	assert_int_equal(st[PULSE_STAT_FLOWS_ACTIVE], 0);
	assert_int_equal(st[PULSE_STAT_FLOWS_AGED], 4);
	assert_int_equal(st[PULSE_STAT_POOL_USED], 0);
	assert_true(st[PULSE_STAT_POOL_PEAK] >= 9);
	assert_int_equal(pulse_fw_memory_in_use(f->fw), base_mem);
	ft_fw_free(f);
}

/* With one flow slot: after A is aged, its slot serves B, and A's stale QPN
 * table entry must not lead into B's slot. The slot may come back a little
 * after the aging POLL (a racing event thread may still hold it), but it
 * must come back, and the wait is counted as DROP_NO_SLOT. */
static void test_aged_slot_reused(void **state)
{
	(void)state;
	const uint32_t S = 100;
	struct pulse_fw_limits l = ft_limits(1, 64, 1);
	struct ft_fw *f = ft_fw_new(&l, S);
	ft_ev(f, 0xA, 5, 1, S + 1);
	struct ft_upload u;
	uint32_t T = S + 10 * E32;
	ft_poll_upload(f, T, 0, &u); /* W1: A */
	ft_upload_free(&u);
	T += 10 * E32;
	ft_poll_upload(f, T, 0, &u); /* W2 idle: A aged */
	assert_int_equal(u.poll.flows_aged, 1);
	ft_upload_free(&u);
	int polls_after_aging = 0;
	uint64_t drops0 = ft_stat(f, PULSE_STAT_DROP_NO_SLOT);
	uint64_t sent_b = 0, drops = 0;
	struct ft_map want;
	ft_map_init(&want);
	for (;;) {
		ft_ev(f, 0xB, 7, 1, T + 1);
		if (ft_stat(f, PULSE_STAT_FLOWS_ACTIVE) == 1)
			break;
		drops++;
		assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_SLOT), drops0 + drops);
		assert_true(++polls_after_aging <= 3);
		T += 10 * E32;
		ft_poll_upload(f, T, 0, &u);
		ft_upload_free(&u);
	}
	if (polls_after_aging)
		print_message("note: the aged slot came back %d POLL(s) after the aging POLL\n",
			      polls_after_aging);
	sent_b = 7;
	ft_map_add(&want, 0xB, 0, sent_b);
	/* A again: no slot, and B's data untouched */
	ft_ev(f, 0xA, 100, 1, T + E32);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_SLOT), drops0 + drops + 1);
	ft_ev(f, 0xB, 8, 1, T + 2 * E32);
	ft_map_add(&want, 0xB, 2, 8);
	ft_poll_upload(f, T + 10 * E32, 0, &u);
	ft_map_normalize(&want);
	assert_int_equal(ft_map_diff(&u.map, &want, "slot reuse"), 0);
	ft_upload_free(&u);
	ft_map_free(&want);
	ft_fw_free(f);
}

/* FORCE over an unfinished upload: the abandoned window's blocks still come
 * back, nothing leaks over many cycles. */
static void test_abandoned_uploads_do_not_leak(void **state)
{
	(void)state;
	const uint32_t E = 8000;
	uint32_t T = 0;
	struct pulse_fw_limits l = ft_limits(64, 512, 2);
	struct ft_fw *f = ft_fw_new(&l, T);
	struct pulse_mb_config c = {E, 1000000000u, 256, 0, 0, 0};
	assert_int_equal(ft_configure(f, T, &c, NULL), PULSE_MB_OK);
	size_t base_mem = pulse_fw_memory_in_use(f->fw);
	struct pulse_mb_poll_resp p;
	for (int cyc = 0; cyc < 50; cyc++) {
		for (uint32_t q = 1; q <= 8; q++)
			for (uint32_t e = 0; e < 40; e++)
				ft_ev(f, q + (uint32_t)cyc % 3, 1, 1, T + e * E + q);
		T += 100 * E;
		enum pulse_mb_status st = ft_poll(f, T, PULSE_MB_POLL_FORCE, 0, &p);
		assert_int_equal(st, PULSE_MB_OK);
		if (cyc % 2 == 0)
			assert_int_equal(ft_read_page(f, T, p.window_seq, 0, FT_RESP_CAP), PULSE_MB_OK);
	}
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_NO_POOL), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_UPLOADS_ABANDONED), 49);
	for (int i = 0; i < 4; i++) {
		T += 100 * E;
		assert_int_equal(ft_poll(f, T, PULSE_MB_POLL_FORCE, 0, &p), PULSE_MB_OK);
	}
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 0);
	assert_int_equal(pulse_fw_memory_in_use(f->fw), base_mem);
	ft_fw_free(f);
}

/* Memory follows traffic: many flows with one active epoch each hold one
 * block each, not a window's worth of epochs. */
static void test_memory_follows_traffic(void **state)
{
	(void)state;
	uint32_t T = 0;
	struct pulse_fw_limits l = ft_limits(4096, 8192, 2);
	struct ft_fw *f = ft_fw_new(&l, T);
	size_t base_mem = pulse_fw_memory_in_use(f->fw);
	for (uint32_t q = 1; q <= 2000; q++)
		ft_ev(f, q * 3, 10, 1, T + (q % 1000) * E32 + 1);
	struct ft_upload u;
	ft_poll_upload(f, T + 1000000000u - 1, 0, &u);
	assert_int_equal(u.poll.flows, 2000);
	assert_int_equal(u.nonskip_records, 2000); /* skips may add advance-only records */
	uint64_t used = ft_stat(f, PULSE_STAT_POOL_USED);
	assert_true(used <= 2000);
	size_t per_block = (pulse_fw_memory_in_use(f->fw) - base_mem) / (used ? used : 1);
	assert_true(per_block >= PULSE_FW_RECORDS_PER_BLOCK * 4u && per_block <= 256u);
	/* the upload is sparse: bytes follow records, not flows x epochs */
	assert_true(u.poll.upload_bytes <= 2000u * (PULSE_MB_CHUNK_HEADER_SIZE + 8u) +
						   (uint32_t)u.poll.page_count * 64u);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* The counters are exact whatever happens to the windows: read, abandoned,
 * flows aged and recreated, late events, pool exhaustion; and each window
 * that is read in full holds exactly what was sent in it, less the counted
 * pool drops. */
static void test_counters_exact_across_windows(void **state)
{
	(void)state;
	const uint32_t E = 8000;
	uint32_t T = 0xFFFF0000u;
	struct pulse_fw_limits l = ft_limits(64, 24, 3);
	struct ft_fw *f = ft_fw_new(&l, T);
	struct pulse_mb_config c = {E, 100000000u, 256, 0, 0, 0};
	assert_int_equal(ft_configure(f, T, &c, NULL), PULSE_MB_OK);
	uint64_t rng = 31337;
	uint64_t events = 0, units = 0, pkts = 0, clipped = 0, zero = 0, bad = 0, late = 0;
	uint64_t nopool_before = 0;
	int abandoned = 0, checked = 0;
	for (int w = 0; w < 60; w++) {
		uint64_t units_w = 0;
		uint32_t n = (uint32_t)(ft_rand(&rng) % 400);
		uint32_t qbase = 1 + (uint32_t)(ft_rand(&rng) % 20);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t r = ft_rand(&rng);
			uint32_t q = qbase + (uint32_t)(r % 12);
			uint16_t u = (uint16_t)(1 + (r >> 8) % 3000);
			uint16_t p = (uint16_t)(1 + (r >> 24) % 50);
			uint32_t ts = T + i * 2000u + (uint32_t)((r >> 32) % 1000);
			unsigned kind = (unsigned)((r >> 40) % 50);
			if (kind == 0) {
				ft_ev_thr(f, q % 3, q, 0, p, ts);
				zero++;
				continue;
			}
			if (kind == 1) {
				ft_ev_thr(f, q % 3, q | 0x1000000, u, p, ts);
				bad++;
				continue;
			}
			if (kind == 2) {
				u = PULSE_SENT_UNITS_CLIPPED;
				p = 600;
				clipped++;
			}
			if (i == 0 && w > 0 && kind < 25) {
				ts = T - 500; /* late: before the open window */
				late++;
			}
			ft_ev_thr(f, q % 3, q, u, p, ts);
			uint32_t cu = u == PULSE_SENT_UNITS_CLIPPED ? 600u * 130u : u;
			events++;
			units += cu;
			units_w += cu;
			pkts += p;
		}
		T += n * 2000u + 5000u;
		struct ft_upload up;
		memset(&up, 0, sizeof(up));
		ft_map_init(&up.map);
		assert_int_equal(ft_poll(f, T, PULSE_MB_POLL_FORCE, 0, &up.poll), PULSE_MB_OK);
		assert_int_equal(!!(up.poll.flags & PULSE_MB_POLLF_ABANDONED), abandoned);
		uint64_t nopool = ft_stat(f, PULSE_STAT_DROP_NO_POOL_UNITS);
		if (ft_rand(&rng) % 4) {
			ft_read_upload(f, T, &up);
			assert_int_equal(ft_map_total(&up.map) + (nopool - nopool_before), units_w);
			abandoned = 0;
			checked++;
		} else {
			abandoned = up.poll.page_count > 0; /* left unread */
		}
		nopool_before = nopool;
		ft_upload_free(&up);
		uint64_t st[PULSE_STAT_COUNT];
		ft_stats(f, T, st);
		assert_int_equal(st[PULSE_STAT_EVENTS], events);
		assert_int_equal(st[PULSE_STAT_UNITS], units);
		assert_int_equal(st[PULSE_STAT_PKTS], pkts);
		assert_int_equal(st[PULSE_STAT_CLIPPED_EVENTS], clipped);
		assert_int_equal(st[PULSE_STAT_ZERO_EVENTS], zero);
		assert_int_equal(st[PULSE_STAT_DROP_BAD_QPN], bad);
		assert_int_equal(st[PULSE_STAT_LATE_EVENTS], late);
	}
	assert_true(checked > 30);
	assert_true(ft_stat(f, PULSE_STAT_DROP_NO_POOL) > 0); /* the pool was too small */
	assert_true(ft_stat(f, PULSE_STAT_FLOWS_AGED) > 0);
	assert_true(ft_stat(f, PULSE_STAT_UPLOADS_ABANDONED) > 0);
	ft_fw_free(f);
}

/* Counters while the window is open (STATS between polls) count the events
 * already handled, not only those of closed windows. */
static void test_counters_live_between_polls(void **state)
{
	(void)state;
	struct pulse_fw_limits l = ft_limits(8, 64, 2);
	struct ft_fw *f = ft_fw_new(&l, 0);
	uint64_t st[PULSE_STAT_COUNT];
	for (uint32_t i = 1; i <= 10; i++) {
		ft_ev_thr(f, i & 1, 3, 100, 2, i * 1000u);
		ft_stats(f, i * 1000u + 1, st);
		assert_int_equal(st[PULSE_STAT_EVENTS], i);
		assert_int_equal(st[PULSE_STAT_UNITS], 100u * i);
		assert_int_equal(st[PULSE_STAT_PKTS], 2u * i);
	}
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, 20000, 0, 0, &p), PULSE_MB_OK);
	ft_ev(f, 3, 7, 1, 21000);
	ft_stats(f, 22000, st);
	assert_int_equal(st[PULSE_STAT_EVENTS], 11);
	assert_int_equal(st[PULSE_STAT_UNITS], 1007);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_size_validation),
		cmocka_unit_test(test_init_rejects_bad_memory),
		cmocka_unit_test(test_reinit_same_memory),
		cmocka_unit_test(test_first_window),
		cmocka_unit_test(test_double_buffered_windows),
		cmocka_unit_test(test_flow_aging),
		cmocka_unit_test(test_aged_slot_reused),
		cmocka_unit_test(test_abandoned_uploads_do_not_leak),
		cmocka_unit_test(test_memory_follows_traffic),
		cmocka_unit_test(test_counters_exact_across_windows),
		cmocka_unit_test(test_counters_live_between_polls),
	};
	return cmocka_run_group_tests_name("fw lifecycle", tests, NULL, NULL);
}
