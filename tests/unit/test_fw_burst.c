/* pulse_fw_on_tx_burst: "results are identical to n calls of pulse_fw_on_tx".
 * Two instances get the same random stream (bad input included), one event
 * at a time and in bursts of random sizes; every upload page and every
 * counter must be byte-for-byte the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"

static void random_event(uint64_t *rng, uint32_t *clock, struct pulse_tx_event *ev)
{
	uint64_t r = ft_rand(rng);
	unsigned kind = (unsigned)(r % 100);
	ev->qpn = 1 + (uint32_t)((r >> 8) % 200);
	ev->sent_32b = (uint16_t)(1 + (r >> 20) % 5000);
	ev->sent_pkts = (uint16_t)(1 + (r >> 36) % 700);
	*clock += (uint32_t)((r >> 48) % 20000);
	ev->ts_ns = *clock;
	if (kind == 0)
		ev->qpn = 0;
	else if (kind == 1)
		ev->qpn = 0xFFFFFF;
	else if (kind == 2)
		ev->qpn |= 0x3000000;
	else if (kind == 3)
		ev->sent_32b = 0;
	else if (kind == 4)
		ev->sent_32b = PULSE_SENT_UNITS_CLIPPED;
	else if (kind == 5)
		ev->ts_ns = *clock - 40000; /* backwards */
	else if (kind == 6)
		ev->ts_ns = *clock + 2100000000u; /* out of range */
}

/* Reads all pages of an upload, raw, into buf; returns bytes. */
static size_t raw_upload(struct ft_fw *f, uint32_t now, uint8_t *buf, size_t cap,
			 struct pulse_mb_poll_resp *p)
{
	assert_int_equal(ft_poll(f, now, 0, 0, p), PULSE_MB_OK);
	size_t n = 0;
	for (uint16_t k = 0; k < p->page_count; k++) {
		assert_int_equal(ft_read_page(f, now, p->window_seq, k, FT_RESP_CAP), PULSE_MB_OK);
		/* everything after the header's seq */
		uint32_t len = f->last_resp_len - 8;
		assert_true(n + len <= cap);
		memcpy(buf + n, f->resp + 8, len);
		n += len;
	}
	return n;
}

static void test_burst_equals_single_events(void **state)
{
	(void)state;
	struct pulse_fw_limits lim = ft_limits(64, 512, 4);
	const uint32_t S = 0xFFF00000u;
	struct ft_fw *a = ft_fw_new(&lim, S), *b = ft_fw_new(&lim, S);
	struct pulse_mb_config c = {8000, 1000000000u, 512, 0, 0, 0};
	assert_int_equal(ft_configure(a, S, &c, NULL), PULSE_MB_OK);
	assert_int_equal(ft_configure(b, S, &c, NULL), PULSE_MB_OK);
	uint64_t rng = 4242;
	uint32_t clock = S;
	static struct pulse_tx_event evs[4096];
	static uint8_t ua[1 << 20], ub[1 << 20];
	for (int w = 0; w < 8; w++) {
		uint32_t done = 0;
		while (done < 20000) {
			uint32_t n = (uint32_t)(ft_rand(&rng) % 300);
			if (ft_rand(&rng) % 10 == 0)
				n = 0;
			/* bursts on one thread; several threads, each with its own QPNs
			 * would be the DPA contract, but a single stream on
			 * alternating threads is equally serial here */
			uint32_t thread = (uint32_t)(ft_rand(&rng) % 5); /* 4 = bad */
			if (n == 0 && thread == 4)
				thread = 0; /* an empty burst on a bad thread: see test_burst_edge_sizes */
			for (uint32_t i = 0; i < n; i++)
				random_event(&rng, &clock, &evs[i]);
			for (uint32_t i = 0; i < n; i++)
				pulse_fw_on_tx(a->fw, thread, &evs[i]);
			pulse_fw_on_tx_burst(b->fw, thread, evs, n);
			done += n ? n : 1;
		}
		clock += 1000;
		struct pulse_mb_poll_resp pa, pb;
		size_t na = raw_upload(a, clock, ua, sizeof(ua), &pa);
		size_t nb = raw_upload(b, clock, ub, sizeof(ub), &pb);
		assert_int_equal(pa.window_seq, pb.window_seq);
		assert_int_equal(pa.page_count, pb.page_count);
		assert_int_equal(pa.flags, pb.flags);
		assert_true(pa.nic_ns == pb.nic_ns && pa.window_start_ns == pb.window_start_ns);
		assert_int_equal(pa.flows, pb.flows);
		assert_int_equal(pa.records, pb.records);
		assert_int_equal(pa.upload_bytes, pb.upload_bytes);
		assert_int_equal(pa.flows_aged, pb.flows_aged);
		assert_int_equal(na, nb);
		assert_memory_equal(ua, ub, na);
		uint64_t sa[PULSE_STAT_COUNT], sb[PULSE_STAT_COUNT];
		pulse_fw_stats(a->fw, sa);
		pulse_fw_stats(b->fw, sb);
		for (unsigned k = 0; k < PULSE_STAT_COUNT; k++)
			if (sa[k] != sb[k]) {
				print_message("window %d, %s: single %llu, burst %llu\n", w,
					      pulse_stat_name((enum pulse_stat)k),
					      (unsigned long long)sa[k], (unsigned long long)sb[k]);
				fail();
			}
		clock += 1000;
	}
	ft_fw_free(a);
	ft_fw_free(b);
}

/* Edge sizes: 0 and 1, on a valid and an invalid thread. */
static void test_burst_edge_sizes(void **state)
{
	(void)state;
	struct pulse_fw_limits lim = ft_limits(8, 64, 2);
	struct ft_fw *f = ft_fw_new(&lim, 0);
	struct pulse_tx_event ev = {.qpn = 9, .sent_32b = 5, .sent_pkts = 1, .ts_ns = 10};
	pulse_fw_on_tx_burst(f->fw, 0, &ev, 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 0);
	pulse_fw_on_tx_burst(f->fw, 2, &ev, 0); /* nothing to drop */
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_THREAD), 0);
	pulse_fw_on_tx_burst(f->fw, 2, &ev, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_THREAD), 1);
	struct pulse_tx_event three[3] = {ev, ev, ev};
	pulse_fw_on_tx_burst(f->fw, 7, three, 3);
	assert_int_equal(ft_stat(f, PULSE_STAT_DROP_BAD_THREAD), 4);
	pulse_fw_on_tx_burst(f->fw, 1, &ev, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS), 1);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_equals_single_events),
		cmocka_unit_test(test_burst_edge_sizes),
	};
	return cmocka_run_group_tests_name("fw burst", tests, NULL, NULL);
}
