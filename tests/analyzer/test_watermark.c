/* The data-time watermark (include/pulse/watermark.h): release order, ties,
 * a host that ends, a silent host and its late lines, a transport behind
 * its backlog (no host silent meanwhile), the line keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/watermark.h"

struct rec {
	char out[16][64]; /* "host:line" or "tick N" */
	int n;
};

static void tick(void *ctx, uint64_t now)
{
	struct rec *r = ctx;
	snprintf(r->out[r->n++ % 16], 64, "tick %llu", (unsigned long long)now);
}

static void deliver(void *ctx, const char *host, const char *line, size_t len)
{
	struct rec *r = ctx;
	snprintf(r->out[r->n++ % 16], 64, "%s:%.*s", host, (int)len, line);
}

static void deliver_rec(void *ctx, const char *host, const void *rec, size_t len)
{
	struct rec *r = ctx;
	snprintf(r->out[r->n++ % 16], 64, "%s:rec %.*s", host, (int)len, (const char *)rec);
}

static const struct pulse_wm_ops ops = {.tick = tick, .deliver = deliver, .deliver_rec = deliver_rec};

#define WIN(k) "{\"type\":\"window\",\"host_end_ns\":" #k "}"

static void test_order_ties_end(void **st)
{
	(void)st;
	struct rec r = {0};
	struct pulse_wm *w = pulse_wm_new(&ops, &r, 0);
	assert_non_null(w);
	assert_int_equal(pulse_wm_host(w, "a", 0), 0);
	assert_int_equal(pulse_wm_host(w, "b", 0), 1);
	assert_int_equal(pulse_wm_push(w, "a", WIN(10), strlen(WIN(10)), 0), 0);
	assert_int_equal(pulse_wm_push(w, "a", WIN(30), strlen(WIN(30)), 0), 0);
	/* nothing from b yet: it holds the watermark at 0 */
	assert_int_equal(pulse_wm_advance(w, 0), 0);
	assert_int_equal(pulse_wm_push(w, "b", WIN(20), strlen(WIN(20)), 0), 0);
	/* a line without a key takes its host's latest (20) */
	assert_int_equal(pulse_wm_push(w, "b", "{\"type\":\"event\"}", 16, 0), 0);
	/* watermark min(30, 20) = 20: 10 (a), 20 (b), 20 (b); 30 waits */
	assert_int_equal(pulse_wm_advance(w, 0), 3);
	assert_int_equal(r.n, 5);
	assert_string_equal(r.out[0], "tick 10");
	assert_string_equal(r.out[1], "a:" WIN(10));
	assert_string_equal(r.out[2], "tick 20");
	assert_string_equal(r.out[3], "b:" WIN(20));
	assert_string_equal(r.out[4], "b:{\"type\":\"event\"}");
	/* b says BYE: it no longer holds a back */
	pulse_wm_end(w, "b");
	assert_int_equal(pulse_wm_advance(w, 0), 1);
	assert_string_equal(r.out[6], "a:" WIN(30));
	/* a tie between hosts goes to the one registered first */
	assert_int_equal(pulse_wm_push(w, "b", WIN(40), strlen(WIN(40)), 0), 0);
	assert_int_equal(pulse_wm_push(w, "a", WIN(40), strlen(WIN(40)), 0), 0);
	assert_int_equal(pulse_wm_flush(w), 2);
	assert_string_equal(r.out[8], "a:" WIN(40));
	assert_string_equal(r.out[9], "b:" WIN(40));
	struct pulse_wm_stats s;
	pulse_wm_stats(w, &s);
	assert_int_equal(s.delivered, 6);
	assert_int_equal(s.held, 0);
	assert_int_equal(s.late, 0);
	assert_int_equal(s.mark_ns, 40);
	pulse_wm_free(w);
}

/* Opaque records (binary operator records, from TCP's OPS frames or the
 * bus) are held and released in key order with the lines, through
 * deliver_rec, with the key their pusher gave. */
static void test_records_with_lines(void **st)
{
	(void)st;
	struct rec r = {0};
	struct pulse_wm *w = pulse_wm_new(&ops, &r, 0);
	assert_non_null(w);
	assert_int_equal(pulse_wm_host(w, "a", 0), 0);
	assert_int_equal(pulse_wm_host(w, "b", 0), 1);
	assert_int_equal(pulse_wm_push_rec(w, "a", "R15", 3, 15, 0), 0);
	assert_int_equal(pulse_wm_push(w, "b", WIN(10), strlen(WIN(10)), 0), 0);
	assert_int_equal(pulse_wm_push(w, "b", WIN(20), strlen(WIN(20)), 0), 0);
	/* watermark min(15, 20): 10 (b's line), 15 (a's record) */
	assert_int_equal(pulse_wm_advance(w, 0), 2);
	assert_string_equal(r.out[0], "tick 10");
	assert_string_equal(r.out[1], "b:" WIN(10));
	assert_string_equal(r.out[2], "tick 15");
	assert_string_equal(r.out[3], "a:rec R15");
	/* a record's key never goes back either: 12 after 15 is held at 15 */
	assert_int_equal(pulse_wm_push_rec(w, "a", "R12", 3, 12, 0), 0);
	assert_int_equal(pulse_wm_advance(w, 0), 1);
	assert_string_equal(r.out[4], "a:rec R12");
	assert_int_equal(pulse_wm_flush(w), 1);
	assert_string_equal(r.out[6], "b:" WIN(20));
	pulse_wm_free(w);
}

static void test_silent_and_late(void **st)
{
	(void)st;
	struct rec r = {0};
	struct pulse_wm *w = pulse_wm_new(&ops, &r, 100); /* 100 ns of wall time */
	pulse_wm_host(w, "a", 0);
	pulse_wm_push(w, "a", WIN(50), strlen(WIN(50)), 0);
	/* a service that just started holds everything for a while: b is coming */
	pulse_wm_hold_until(w, 60);
	assert_int_equal(pulse_wm_advance(w, 10), 0);
	pulse_wm_host(w, "b", 20);
	pulse_wm_push(w, "a", WIN(50), strlen(WIN(50)), 150);
	assert_int_equal(pulse_wm_advance(w, 90), 0);  /* b may still send */
	assert_int_equal(pulse_wm_advance(w, 200), 2); /* b silent (a is not): a goes on */
	struct pulse_wm_stats s;
	pulse_wm_stats(w, &s);
	assert_int_equal(s.silent_events, 1);
	assert_int_equal(s.hosts_silent, 1);
	/* b comes back with older data: delivered at once, counted late */
	pulse_wm_push(w, "b", WIN(20), strlen(WIN(20)), 210);
	assert_int_equal(pulse_wm_advance(w, 210), 1);
	pulse_wm_stats(w, &s);
	assert_int_equal(s.late, 1);
	assert_int_equal(s.hosts_silent, 0);
	assert_int_equal(s.mark_ns, 50); /* the clock never goes back */
	pulse_wm_free(w);
}

/* A bus consumer stalled (the cluster losing a server) or behind its
 * backlog touches the watermark: b's lines may be in what is still to read,
 * so b does not go silent and a's later lines wait for it; once the
 * transport keeps up and b stays quiet, b is silent as before. */
static void test_touch_behind(void **st)
{
	(void)st;
	struct rec r = {0};
	struct pulse_wm *w = pulse_wm_new(&ops, &r, 100);
	pulse_wm_host(w, "a", 0);
	pulse_wm_host(w, "b", 0);
	pulse_wm_push(w, "a", WIN(50), strlen(WIN(50)), 150);
	pulse_wm_touch(w, 150);                       /* behind at 150 */
	assert_int_equal(pulse_wm_advance(w, 200), 0); /* b is not silent: a waits */
	pulse_wm_push(w, "b", WIN(40), strlen(WIN(40)), 220);
	assert_int_equal(pulse_wm_advance(w, 220), 1); /* b's line came from the backlog */
	assert_string_equal(r.out[1], "b:" WIN(40));
	struct pulse_wm_stats s;
	pulse_wm_stats(w, &s);
	assert_int_equal(s.silent_events, 0);
	assert_int_equal(s.late, 0);
	/* caught up, a sends on and b nothing more: b silent past the bound */
	pulse_wm_push(w, "a", WIN(60), strlen(WIN(60)), 390);
	assert_int_equal(pulse_wm_advance(w, 400), 2);
	pulse_wm_stats(w, &s);
	assert_int_equal(s.silent_events, 1);
	pulse_wm_free(w);
}

static void test_keys(void **st)
{
	(void)st;
	const char *op = "{\"type\":\"op\",\"call_ns\":\"100\",\"start_ns\":\"150\",\"end_ns\":\"300\"}";
	assert_int_equal(pulse_wm_line_key(op, strlen(op)), 300);
	const char *hung = "{\"type\":\"op\",\"call_ns\":\"100\",\"end_ns\":\"0\"}";
	assert_int_equal(pulse_wm_line_key(hung, strlen(hung)), 100);
	const char *win = "{\"type\":\"window\",\"host_start_ns\":5,\"host_end_ns\":7}";
	assert_int_equal(pulse_wm_line_key(win, strlen(win)), 7);
	const char *call = "{\"type\":\"hook_op\",\"t_ns\":9}";
	assert_int_equal(pulse_wm_line_key(call, strlen(call)), 9);
	const char *map = "{\"type\":\"hook_map\",\"t_ns\":9}";
	assert_int_equal(pulse_wm_line_key(map, strlen(map)), 0);
	assert_int_equal(pulse_wm_line_key("garbage", 7), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_ties_end),
		cmocka_unit_test(test_records_with_lines),
		cmocka_unit_test(test_silent_and_late),
		cmocka_unit_test(test_touch_behind),
		cmocka_unit_test(test_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
