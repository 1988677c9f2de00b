/* pulse-sink's evidence parts without a database (sink/evidence.h): the
 * ring stays within its cap and counts what it drops; a diagnosis's window
 * from its JSON, and every kind of bad diagnosis refused with a reason;
 * which records a window holds; per-iteration aggregates on known input
 * (median, slowest rank, a rank said twice, done when all ranks are in or
 * data time passed, out early over the memory cap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../sink/evidence.h"

static struct pulse_op_record rec;

static const struct pulse_op_record *mk(uint64_t comm, int32_t rank, int32_t nranks, uint64_t seq, uint64_t call,
					uint64_t dur_ms)
{
	memset(&rec, 0, sizeof rec);
	snprintf(rec.host, sizeof rec.host, "host%d", rank / 2);
	rec.comm_id = comm;
	rec.rank = rank;
	rec.nranks = nranks;
	rec.gpu = rank % 2;
	rec.seq = seq;
	rec.op = 1;
	rec.status = PULSE_OP_COMPLETE;
	rec.call_ns = call;
	rec.start_ns = call + 1000;
	rec.duration_ns = dur_ms * 1000000ull;
	rec.end_ns = rec.start_ns + rec.duration_ns;
	rec.expected_bytes = rec.actual_bytes = 1000;
	return &rec;
}

static int count_cb(void *ctx, const struct pulse_op_record *r)
{
	uint64_t *seqs = ctx;
	seqs[seqs[0]++ + 1] = r->seq;
	return 0;
}

static void ring_bounded(void **state)
{
	(void)state;
	struct sink_ring *g = sink_ring_new(8192);
	assert_non_null(g);
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(sink_ring_push(g, mk(0xc0, 1, 4, i, 1000000000ull * i, 5)), 0);
	struct sink_ring_stats st;
	sink_ring_stats(g, &st);
	assert_true(st.bytes <= 8192);
	assert_true(st.records > 10);
	assert_int_equal(st.pushed, 1000);
	assert_int_equal(st.evicted, 1000 - st.records); /* every one dropped is counted */
	static uint64_t seqs[1001];
	seqs[0] = 0;
	sink_ring_each(g, count_cb, seqs);
	assert_int_equal(seqs[0], st.records);
	for (uint64_t i = 0; i < seqs[0]; i++) /* the newest, oldest first */
		assert_int_equal(seqs[i + 1], 1000 - st.records + i);
	sink_ring_free(g);
	/* a cap below one record: refused, counted, nothing held */
	g = sink_ring_new(16);
	assert_int_equal(sink_ring_push(g, mk(0xc0, 1, 4, 1, 1, 5)), -1);
	sink_ring_stats(g, &st);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.records, 0);
	sink_ring_free(g);
}

#define S 1000000000ull

static void window_parse(void **state)
{
	(void)state;
	struct sink_window w;
	char err[256];
	const char *ok = "{\"key\":\"pulse/3/0xc0/5/h/1\",\"evidence\":{\"comm_id\":\"0x00000000000000c0\"},"
			 "\"onset_ns\":\"1700000020000000000\",\"report_ns\":\"1700000022000000000\"}";
	assert_int_equal(sink_window_of(ok, strlen(ok), 5 * S, &w, err, sizeof err), 0);
	assert_string_equal(w.key, "pulse/3/0xc0/5/h/1");
	assert_int_equal(w.comm_id, 0xc0);
	assert_int_equal(w.from_ns, 1700000015000000000ull);
	assert_int_equal(w.to_ns, 1700000027000000000ull);
	assert_string_equal(w.day, "2023-11-14");
	/* no onset, or one after the report: around the report */
	const char *no_onset = "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"100000000000\"}";
	assert_int_equal(sink_window_of(no_onset, strlen(no_onset), 5 * S, &w, err, sizeof err), 0);
	assert_int_equal(w.from_ns, 95 * S);
	assert_int_equal(w.to_ns, 105 * S);
	/* the window starts at 0 at the earliest */
	const char *early = "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1000\"}";
	assert_int_equal(sink_window_of(early, strlen(early), 5 * S, &w, err, sizeof err), 0);
	assert_int_equal(w.from_ns, 0);
	/* nothing to keep: no evidence communicator, or the analyzer's 0 */
	const char *none[] = {"{\"key\":\"k\",\"report_ns\":\"100\"}",
			      "{\"key\":\"k\",\"evidence\":{},\"report_ns\":\"100\"}",
			      "{\"key\":\"k\",\"evidence\":{\"comm_id\":null},\"report_ns\":\"100\"}",
			      "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0x0\"},\"report_ns\":\"100\"}"};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
		assert_int_equal(sink_window_of(none[i], strlen(none[i]), S, &w, err, sizeof err), 1);
	/* bad ones: refused with a reason */
	static char longkey[400];
	memset(longkey, 'k', sizeof longkey);
	char json[600];
	snprintf(json, sizeof json, "{\"key\":\"%.300s\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1\"}",
		 longkey);
	const char *bad[] = {"",
			     "[]",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1\"",
			     "{\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1\"}",
			     "{\"key\":\"\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1\"}",
			     "{\"key\":7,\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"1\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"}}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"0\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"-5\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"12x\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"99999999999999999999\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":-1}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":1e300}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"5\",\"onset_ns\":true}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"zz\"},\"report_ns\":\"5\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":192},\"report_ns\":\"5\"}",
			     "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0x1ffffffffffffffff\"},\"report_ns\":\"5\"}",
			     json};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_int_equal(sink_window_of(bad[i], strlen(bad[i]), S, &w, err, sizeof err), -1);
		assert_true(err[0] != 0);
	}
	/* len bounds the read: a valid object cut short is refused */
	assert_int_equal(sink_window_of(ok, strlen(ok) - 1, S, &w, err, sizeof err), -1);
	/* the largest time: the window's end stays within bigint */
	const char *late = "{\"key\":\"k\",\"evidence\":{\"comm_id\":\"0xc0\"},\"report_ns\":\"9223372036854775807\"}";
	assert_int_equal(sink_window_of(late, strlen(late), 5 * S, &w, err, sizeof err), 0);
	assert_int_equal(w.to_ns, 9223372036854775807ull);
}

static void window_match(void **state)
{
	(void)state;
	struct sink_window w = {.comm_id = 0xc0, .from_ns = 15 * S, .to_ns = 27 * S};
	assert_true(sink_window_has(&w, mk(0xc0, 0, 4, 15, 15 * S, 100)));
	assert_true(sink_window_has(&w, mk(0xc0, 0, 4, 27, 27 * S, 100)));  /* called at its end */
	assert_true(sink_window_has(&w, mk(0xc0, 0, 4, 14, 14 * S, 1500))); /* running into it */
	assert_false(sink_window_has(&w, mk(0xc0, 0, 4, 14, 14 * S, 100))); /* over before it */
	assert_false(sink_window_has(&w, mk(0xc0, 0, 4, 28, 27 * S + 1, 1)));
	assert_false(sink_window_has(&w, mk(0xd0, 0, 4, 20, 20 * S, 100))); /* another communicator */
	/* a hung record: no end, its call in the window */
	const struct pulse_op_record *h = mk(0xc0, 2, 4, 20, 20 * S, 0);
	rec.end_ns = rec.start_ns = 0;
	rec.status = PULSE_OP_NOT_STARTED;
	assert_true(sink_window_has(&w, h));
}

static void aggregates(void **state)
{
	(void)state;
	struct sink_agg *a = sink_agg_new(1 << 20);
	static struct sink_iter out[64];
	/* iteration 5 of 0xc0, 4 ranks: 100, 110, 400, 130 ms; rank 1 said twice */
	uint64_t d[4] = {100, 110, 400, 130};
	for (int r = 0; r < 3; r++)
		sink_agg_add(a, mk(0xc0, r, 4, 5, 5 * S, d[r]));
	sink_agg_add(a, mk(0xc0, 1, 4, 5, 5 * S, 999));
	assert_int_equal(sink_agg_ready(a, 6 * S, 10 * S, 0, out, 64), 0); /* rank 3 missing */
	sink_agg_add(a, mk(0xc0, 3, 4, 5, 5 * S, d[3]));
	assert_int_equal(sink_agg_ready(a, 6 * S, 10 * S, 0, out, 64), 1);
	const struct sink_iter *it = &out[0];
	assert_int_equal(it->records, 4);
	assert_int_equal(it->min_ns, 100000000);
	assert_int_equal(it->median_ns, 120000000);
	assert_int_equal(it->max_ns, 400000000);
	assert_int_equal(it->slowest_rank, 2);
	assert_string_equal(it->slowest_host, "host1");
	assert_int_equal(it->expected_bytes, 4000);
	assert_int_equal(it->first_call_ns, 5 * S);
	sink_agg_done(a, 1);
	struct sink_agg_stats st;
	sink_agg_stats(a, &st);
	assert_int_equal(st.open, 0);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.bytes, 0);
	/* odd count: the middle one; a rank never reporting: out once data
	 * time passed its last record by the grace */
	sink_agg_add(a, mk(0xc0, 0, 4, 6, 6 * S, 30));
	sink_agg_add(a, mk(0xc0, 1, 4, 6, 6 * S, 10));
	sink_agg_add(a, mk(0xc0, 2, 4, 6, 6 * S, 20));
	assert_int_equal(sink_agg_ready(a, 10 * S, 10 * S, 0, out, 64), 0);
	assert_int_equal(sink_agg_ready(a, 17 * S, 10 * S, 0, out, 64), 1);
	assert_int_equal(out[0].median_ns, 20000000);
	assert_int_equal(out[0].slowest_rank, 0);
	/* not marked stored: it comes again */
	assert_int_equal(sink_agg_ready(a, 17 * S, 10 * S, 0, out, 64), 1);
	sink_agg_done(a, 1);
	/* many iterations over a small cap: the oldest go out early, counted */
	sink_agg_free(a);
	a = sink_agg_new(4096);
	for (uint64_t s = 0; s < 100; s++)
		sink_agg_add(a, mk(0xc0, 0, 4, s, s * S, 10));
	sink_agg_stats(a, &st);
	assert_true(st.bytes > 4096);
	size_t n = sink_agg_ready(a, 100 * S, 1000 * S, 0, out, 64);
	assert_true(n > 0);
	assert_int_equal(out[0].seq, 0); /* oldest first */
	sink_agg_done(a, n);
	sink_agg_stats(a, &st);
	assert_int_equal(st.early, n);
	assert_true(st.bytes <= 4096 || n == 64);
	/* twice over the cap (nothing stored): new records dropped, counted */
	sink_agg_free(a);
	a = sink_agg_new(2048);
	for (uint64_t s = 0; s < 200; s++)
		sink_agg_add(a, mk(0xc0, 0, 4, s, s * S, 10));
	sink_agg_stats(a, &st);
	assert_true(st.dropped > 0);
	assert_true(st.bytes <= 2 * 2048 + 1024);
	/* at exit: all of them */
	n = sink_agg_ready(a, 0, 10 * S, 1, out, 64);
	assert_int_equal(n, st.open < 64 ? st.open : 64);
	sink_agg_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ring_bounded),
		cmocka_unit_test(window_parse),
		cmocka_unit_test(window_match),
		cmocka_unit_test(aggregates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
