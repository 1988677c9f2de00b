/* analyzer/diag_outbox.c: diagnoses the bus refused wait in order, are
 * published again later, and past the bound are dropped and counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "diag_outbox.h"

/* a bus that refuses while `down`, and records what it took */
struct fake_bus {
	int down;
	int n;
	char keys[64][32];
	char payloads[64][32];
};

static int put(void *ctx, const char *key, const char *payload, size_t len)
{
	struct fake_bus *b = ctx;
	if (b->down || b->n >= 64)
		return -1;
	assert_int_equal(len, strlen(payload));
	snprintf(b->keys[b->n], sizeof b->keys[0], "%s", key);
	snprintf(b->payloads[b->n], sizeof b->payloads[0], "%s", payload);
	b->n++;
	return 0;
}

static void test_published_at_once(void **state)
{
	(void)state;
	struct fake_bus b = {0};
	struct diag_outbox *o = diag_outbox_new(4);
	assert_non_null(o);
	assert_int_equal(diag_outbox_send(o, "k1", "{\"a\":1}", put, &b), 0);
	assert_int_equal(b.n, 1);
	assert_string_equal(b.keys[0], "k1");
	assert_string_equal(b.payloads[0], "{\"a\":1}");
	struct diag_outbox_stats st;
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.published, 1);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.retried, 0);
	assert_int_equal(st.failures, 0);
	diag_outbox_free(o);
}

/* the stream has no leader for a while: what was refused waits and goes
 * out first, in the order the diagnoses were made */
static void test_refused_then_in_order(void **state)
{
	(void)state;
	struct fake_bus b = {.down = 1};
	struct diag_outbox *o = diag_outbox_new(4);
	assert_int_equal(diag_outbox_send(o, "k1", "one", put, &b), 0);
	assert_int_equal(diag_outbox_send(o, "k2", "two", put, &b), 0);
	assert_int_equal(b.n, 0);
	struct diag_outbox_stats st;
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.queued, 2);
	assert_int_equal(st.failures, 2);
	/* still down: a flush publishes nothing and keeps both */
	assert_int_equal(diag_outbox_flush(o, put, &b), 0);
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.queued, 2);
	/* back: a new diagnosis goes out after the two that waited */
	b.down = 0;
	assert_int_equal(diag_outbox_send(o, "k3", "three", put, &b), 0);
	assert_int_equal(b.n, 3);
	assert_string_equal(b.keys[0], "k1");
	assert_string_equal(b.keys[1], "k2");
	assert_string_equal(b.keys[2], "k3");
	assert_string_equal(b.payloads[2], "three");
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.published, 3);
	assert_int_equal(st.retried, 2);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.dropped, 0);
	diag_outbox_free(o);
}

/* bounded: past the cap a new diagnosis is dropped and counted, the
 * oldest are kept; what waits is freed with the outbox (ASan) */
static void test_bounded(void **state)
{
	(void)state;
	struct fake_bus b = {.down = 1};
	struct diag_outbox *o = diag_outbox_new(3);
	char key[16];
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof key, "k%d", i);
		assert_int_equal(diag_outbox_send(o, key, "x", put, &b), i < 3 ? 0 : -1);
	}
	struct diag_outbox_stats st;
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.queued, 3);
	assert_int_equal(st.dropped, 2);
	b.down = 0;
	assert_int_equal(diag_outbox_flush(o, put, &b), 3);
	assert_string_equal(b.keys[0], "k0");
	assert_string_equal(b.keys[2], "k2");
	/* refused again, left waiting at the end: freed with the outbox */
	b.down = 1;
	assert_int_equal(diag_outbox_send(o, "k9", "y", put, &b), 0);
	diag_outbox_free(o);
	diag_outbox_free(NULL);
}

/* the bus takes the first of two and refuses the second: the flush stops
 * there, the rest keeps its order */
static void test_flush_stops_at_failure(void **state)
{
	(void)state;
	struct fake_bus b = {.down = 1};
	struct diag_outbox *o = diag_outbox_new(0);
	assert_int_equal(diag_outbox_send(o, "a", "1", put, &b), 0);
	assert_int_equal(diag_outbox_send(o, "b", "2", put, &b), 0);
	assert_int_equal(diag_outbox_send(o, "c", "3", put, &b), 0);
	b.down = 0;
	b.n = 63; /* room for one */
	assert_int_equal(diag_outbox_flush(o, put, &b), 1);
	assert_string_equal(b.keys[63], "a");
	struct diag_outbox_stats st;
	diag_outbox_get_stats(o, &st);
	assert_int_equal(st.queued, 2);
	b.n = 0;
	assert_int_equal(diag_outbox_flush(o, put, &b), 2);
	assert_string_equal(b.keys[0], "b");
	assert_string_equal(b.keys[1], "c");
	diag_outbox_free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published_at_once),
		cmocka_unit_test(test_refused_then_in_order),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_flush_stops_at_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
