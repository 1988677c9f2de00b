/* The DOCA glue on x86: firmware/platform/doca_dpa/pulse_dpa.c and
 * mailbox/transport_doca.c, linked with the real firmware core and mailbox
 * client, against tests/doca-fake/fake_doca.c in place of the DOCA SDK.
 *
 * What this shows: the glue's own logic (event mask, rate, event -> core
 * translation, clock calibration, mailbox plumbing, the transport's worker
 * thread, timeouts, busy refusal, restarts, error messages, teardown) does
 * what its comments say, under ASan/UBSan and TSan. What it cannot show:
 * that the real DOCA SDK and the DPA behave like the fake. docs/hardware.md.
 *
 * The glue's DPA state is initialised once per process (as on the DPA, once
 * per PCC process load), so the tests run in order and build on each other. */
#define _POSIX_C_SOURCE 200809L
#define DOCA_ALLOW_EXPERIMENTAL_API /* the test calls the mailbox callback */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fake_doca.h"

#include <doca_pcc_dev.h>

#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"
#include "pulse/nic_client.h"
#include "pulse/transport_doca.h"

#if !defined(TEST_DPA_MAX_FLOWS) || !defined(TEST_PAGE_MAX)
#error "build with -DTEST_DPA_MAX_FLOWS and -DTEST_PAGE_MAX (pulse_dpa.c's flows and page cap)"
#endif

static char last_log[512];
static int log_lines;
static void capture_log(void *ctx, const char *line)
{
	(void)ctx;
	snprintf(last_log, sizeof(last_log), "%s", line);
	log_lines++;
	printf("  log: %s\n", line);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t fake_host_ns(void)
{
	static uint64_t t = 1700000000000000000ull;
	return t += 1000;
}

static void opts(struct pulse_doca_options *o, const char *dev)
{
	pulse_doca_options_init(o, dev);
	o->log = capture_log;
	o->coredump_file = ""; /* none */
	o->start_wait_ms = 50;
	o->restart_interval_ms = 1;
	o->close_grace_ms = 50;
}

/* The transport every test after the first uses. */
static struct pulse_doca *tr;
static struct pulse_nic_client cl;
/* Kept reachable on purpose: close leaves a transport with a stuck send to
 * process exit (see test_close_with_stuck_send). */
struct pulse_doca *volatile pulse_test_left_to_exit;

#define T0_US 5000000ull /* DPA timer when the PCC process first starts */
#define OFFSET_NS 0x80000000u /* event clock minus DPA timer*1000 */

static void tx(unsigned rank, uint32_t qpn, uint32_t units, uint32_t ts_ns, doca_pcc_dev_results_t *r)
{
	struct mlnx_cc_event_t ev = {.ev_type = DOCA_PCC_DEV_EVNT_ROCE_TX,
				     .qpn = qpn,
				     .sent_32b = units,
				     .sent_pkts = 1,
				     .ts_ns = ts_ns};
	doca_pcc_dev_algo_ctxt_t ctx;
	doca_pcc_dev_attr_t attr = {0};
	memset(&ctx, 0, sizeof(ctx));
	fake_doca_set_rank(rank);
	doca_pcc_dev_user_algo(&ctx, &ev, &attr, r);
}

static uint64_t stat_of(enum pulse_stat s)
{
	uint64_t out[PULSE_STAT_COUNT] = {0};
	uint32_t n = 0;
	assert_int_equal(pulse_nic_stats(&cl, out, PULSE_STAT_COUNT, &n), PULSE_NIC_OK);
	assert_true(n > (uint32_t)s);
	return out[s];
}

/* POLL and drain its upload by hand, for a window expected to be empty
 * (pulse_nic_poll is used for windows with data). */
static void raw_poll(struct pulse_mb_poll_resp *p)
{
	uint8_t body[PULSE_MB_POLL_REQ_SIZE], req[64], resp[PULSE_DOCA_RESPONSE_CAP_DEFAULT];
	struct pulse_mb_poll_req pr = {.host_ns = fake_host_ns()};
	struct pulse_mb_header h;
	uint32_t n = 0;
	pulse_mb_encode_poll_req(body, &pr);
	uint32_t len = pulse_mb_build_request(req, sizeof(req), PULSE_MB_POLL, 100, body, sizeof(body));
	assert_int_equal(pulse_doca_exchange(tr, req, len, resp, sizeof(resp), &n, 1000), 0);
	assert_int_equal(pulse_mb_decode_header(resp, n, &h), PULSE_MB_OK);
	assert_int_equal(h.status, PULSE_MB_OK);
	assert_true(n >= PULSE_MB_HEADER_SIZE + PULSE_MB_POLL_RESP_SIZE);
	pulse_mb_decode_poll_resp(resp + PULSE_MB_HEADER_SIZE, p);
	for (uint16_t page = 0; page < p->page_count; page++) {
		uint8_t pb[PULSE_MB_PAGE_REQ_SIZE];
		struct pulse_mb_page_req q = {.window_seq = p->window_seq, .page_seq = page};
		pulse_mb_encode_page_req(pb, &q);
		len = pulse_mb_build_request(req, sizeof(req), PULSE_MB_READ_PAGE, 101, pb, sizeof(pb));
		assert_int_equal(pulse_doca_exchange(tr, req, len, resp, sizeof(resp), &n, 1000), 0);
		assert_int_equal(pulse_mb_decode_header(resp, n, &h), PULSE_MB_OK);
		assert_int_equal(h.status, PULSE_MB_OK);
	}
}

/* --- open failures: clear messages, nothing left behind -------------------- */

static void test_open_errors(void **state)
{
	(void)state;
	struct pulse_doca_options o;
	char err[400];

	fake_doca_reset();
	fake_doca_set_timer_us(T0_US);

	opts(&o, "mlx5_9");
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	printf("  %s\n", err);
	assert_non_null(strstr(err, "no DOCA device named mlx5_9"));
	assert_non_null(strstr(err, "mlx5_0, mlx5_1"));

	opts(&o, "mlx5_1"); /* present, but PCC not enabled */
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	printf("  %s\n", err);
	assert_non_null(strstr(err, "doca_devinfo_get_is_pcc_supported(mlx5_1)"));
	assert_non_null(strstr(err, "USER_PROGRAMMABLE_CC=1"));

	opts(&o, "mlx5_0");
	o.response_cap = 100;
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "outside"));

	opts(&o, "mlx5_0");
	o.num_threads = 300;
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	assert_non_null(strstr(err, "300 PCC threads"));

	opts(&o, "mlx5_0");
	fake.fail_set_mailbox = DOCA_ERROR_INVALID_VALUE;
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	printf("  %s\n", err);
	assert_non_null(strstr(err, "doca_pcc_set_mailbox(request 256, response 4096) failed: "
				    "fake: invalid input"));
	assert_int_equal(fake.creates, fake.destroys);
	assert_int_equal(fake.dev_opens, fake.dev_closes);
	fake.fail_set_mailbox = DOCA_SUCCESS;

	/* Another PCC process owns the device: ours stays STANDBY. This start
	 * is also the first "DPA process load": the glue initialises here. */
	fake.state_after_start = DOCA_PCC_PS_STANDBY;
	assert_null(pulse_doca_open(&o, err, sizeof(err)));
	printf("  %s\n", err);
	assert_non_null(strstr(err, "STANDBY"));
	assert_non_null(strstr(err, "another PCC process"));
	assert_int_equal(fake.starts, 1);
	assert_int_equal(fake.stops, 1);
	assert_int_equal(fake.user_init_calls, 1);
	assert_int_equal(fake.metadata_calls, 1);                   /* algo 0 described */
	assert_int_equal(fake.slot_inits, DOCA_PCC_DEV_MAX_NUM_PORTS); /* slot 0 on every port */
	assert_int_equal(fake.creates, fake.destroys);
	assert_int_equal(fake.dev_opens, fake.dev_closes);
}

/* --- the DPA side as the library sees it ----------------------------------- */

static void test_open_init_mask_registration(void **state)
{
	(void)state;
	struct pulse_doca_options o;
	char err[400] = "";

	fake_doca_reset();
	opts(&o, "mlx5_0");
	tr = pulse_doca_open(&o, err, sizeof(err));
	assert_non_null(tr);
	assert_string_equal(pulse_doca_ibdev(tr), "mlx5_0");
	assert_int_equal(pulse_doca_response_cap(tr), PULSE_DOCA_RESPONSE_CAP_DEFAULT);
	assert_int_equal(fake.mailbox_req_cap, PULSE_DOCA_REQUEST_CAP);
	assert_int_equal(fake.mailbox_resp_cap, PULSE_DOCA_RESPONSE_CAP_DEFAULT);

	/* Only ROCE_TX passes the mask: FW, CNP, ACK, NACK, RTT are masked. */
	uint32_t want = 1u << DOCA_PCC_DEV_EVNT_FW | 1u << DOCA_PCC_DEV_EVNT_ROCE_CNP |
			1u << DOCA_PCC_DEV_EVNT_ROCE_ACK | 1u << DOCA_PCC_DEV_EVNT_ROCE_NACK |
			1u << DOCA_PCC_DEV_EVNT_RTT;
	assert_int_equal(fake.disable_mask, want);
	assert_int_equal(fake.disable_mask & (1u << DOCA_PCC_DEV_EVNT_ROCE_TX), 0);
	assert_int_equal(fake.user_init_calls, 1);
	/* registration happened once, at the first load (previous test) */
	assert_int_equal(fake.metadata_calls, 0);
	assert_int_equal(fake.printf_calls, 0); /* silent unless debugging */

	assert_int_equal(pulse_nic_client_init(&cl, pulse_doca_exchange, tr, pulse_doca_response_cap(tr),
					       1000),
			 PULSE_NIC_OK);
}

static void test_hello_through_the_mailbox(void **state)
{
	(void)state;
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_OK);
	assert_int_equal(cl.hello.platform, PULSE_PLATFORM_DOCA_DPA);
	assert_int_equal(cl.hello.max_flows, TEST_DPA_MAX_FLOWS);
	assert_int_equal(cl.hello.max_threads, PULSE_FW_MAX_THREADS);
	assert_true(cl.hello.pool_blocks > 1000);
	assert_true(cl.hello.instance_id & (1ull << 63));
	assert_int_equal(cl.hello.instance_id & ~(1ull << 63), T0_US); /* DPA timer at load */
	/* The default page must fit the DOCA mailbox response: the core grows
	 * its default page for big pools, and the response cap bounds that. */
	assert_true(cl.hello.page_bytes <= pulse_doca_response_cap(tr));
	assert_true(cl.hello.page_bytes <= TEST_PAGE_MAX);
	printf("  DPA build for the test: %u flows, %u pool blocks, default page %u bytes\n",
	       cl.hello.max_flows, cl.hello.pool_blocks, cl.hello.page_bytes);

	struct pulse_doca_stats st;
	pulse_doca_get_stats(tr, &st);
	assert_int_equal(st.exchanges, st.ok);
}

/* --- events, clock calibration and the upload ------------------------------ */

static void test_events_clock_and_upload(void **state)
{
	(void)state;
	doca_pcc_dev_results_t r;
	struct pulse_window w;
	pulse_window_init(&w);

	/* The event clock runs OFFSET_NS ahead of DPA timer * 1000. The window
	 * opened at load assumed offset 0, so the first event lands 2.1 s past
	 * its start: out of range, dropped and counted (the documented cost of
	 * the first, uncalibrated window). Its sample is 50 µs "early". */
	const uint64_t T1 = T0_US + 100000, T2 = T0_US + 200000;
	fake_doca_set_timer_us(T1);
	tx(0, 0x111, 10, OFFSET_NS + 50000u + (uint32_t)(T1 * 1000u), &r);

	fake_doca_set_timer_us(T2);
	struct pulse_mb_poll_resp p1;
	raw_poll(&p1);
	assert_true(p1.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal(p1.flows, 0);
	assert_int_equal(stat_of(PULSE_STAT_DROP_TS_RANGE), 1);
	assert_int_equal(stat_of(PULSE_STAT_EVENTS), 0);
	/* POLL 1 ran on the calibrated clock: the only sample (offset +50 µs) */
	const uint32_t now1 = OFFSET_NS + 50000u + (uint32_t)(T2 * 1000u);
	assert_int_equal((uint32_t)p1.nic_ns, now1);

	/* 0.95 s later two threads report; rank 1 handled its event at once,
	 * rank 2 seven µs late: the tightest (largest) offset must win, and
	 * rank 0's sample, now 1.2 s old, must be ignored although larger. */
	const uint64_t T3 = T2 + 950000, T4 = T2 + 1100000;
	fake_doca_set_timer_us(T3);
	tx(1, 0x123, 100, OFFSET_NS + (uint32_t)(T3 * 1000u), &r);
	tx(2, 0x456, 50, OFFSET_NS + (uint32_t)(T3 * 1000u) - 7000u, &r);

	fake_doca_set_timer_us(T4);
	assert_int_equal(pulse_nic_poll(&cl, 0, fake_host_ns, &w), PULSE_NIC_OK);
	assert_true(w.complete);
	const uint32_t now2 = OFFSET_NS + (uint32_t)(T4 * 1000u);
	assert_int_equal((uint32_t)w.nic_end_ns, now2);
	assert_int_equal(w.nic_end_ns - w.nic_start_ns, (uint64_t)(now2 - now1));

	/* Both events are in the upload, in the epoch their stamps name:
	 * (T3 - T2) * 1000 - 50 µs after the window start, 32 µs epochs. */
	assert_int_equal(w.epoch_ns, PULSE_EPOCH_NS_DEFAULT);
	uint32_t want_epoch = (uint32_t)(((T3 - T2) * 1000u - 50000u) / PULSE_EPOCH_NS_DEFAULT);
	const struct pulse_qp_series *a = pulse_window_find(&w, 0x123);
	const struct pulse_qp_series *b = pulse_window_find(&w, 0x456);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->count, 1);
	assert_int_equal(a->epoch[0], want_epoch);
	assert_int_equal(a->bytes[0], 100 * 32);
	assert_int_equal(b->count, 1);
	assert_int_equal(b->epoch[0], (uint32_t)(((T3 - T2) * 1000u - 57000u) / PULSE_EPOCH_NS_DEFAULT));
	assert_int_equal(b->bytes[0], 50 * 32);
	assert_int_equal(stat_of(PULSE_STAT_EVENTS), 2);
	assert_int_equal(stat_of(PULSE_STAT_UNITS), 150);
	pulse_window_free(&w);
}

/* A monitor never throttles: every event leaves the flow at line rate. */
static void test_rate_always_line_rate(void **state)
{
	(void)state;
	doca_pcc_dev_results_t r;
	memset(&r, 0xA5, sizeof(r));
	tx(0, 0x789, 1, 0, &r);
	assert_int_equal(r.rate, DOCA_PCC_DEV_MAX_RATE);
	assert_int_equal(r.rate, 1u << 20);
	assert_int_equal(r.rtt_req, 0);

	/* A CNP that slipped through the mask: not measured, still line rate. */
	uint64_t events = stat_of(PULSE_STAT_EVENTS) + stat_of(PULSE_STAT_DROP_TS_RANGE) +
			  stat_of(PULSE_STAT_LATE_EVENTS);
	struct mlnx_cc_event_t cnp = {.ev_type = DOCA_PCC_DEV_EVNT_ROCE_CNP, .qpn = 0x789, .sent_32b = 9};
	doca_pcc_dev_algo_ctxt_t ctx;
	doca_pcc_dev_attr_t attr = {0};
	memset(&r, 0xA5, sizeof(r));
	doca_pcc_dev_user_algo(&ctx, &cnp, &attr, &r);
	assert_int_equal(r.rate, DOCA_PCC_DEV_MAX_RATE);
	assert_int_equal(stat_of(PULSE_STAT_EVENTS) + stat_of(PULSE_STAT_DROP_TS_RANGE) +
				 stat_of(PULSE_STAT_LATE_EVENTS),
			 events);
	assert_int_equal(fake.internal_algo_calls, 0);

	/* rank beyond the DPA build's threads: counted by the core, no crash */
	tx(PULSE_FW_MAX_THREADS + 5, 0x789, 1, 0, &r);
	assert_int_equal(r.rate, DOCA_PCC_DEV_MAX_RATE);
	assert_int_equal(stat_of(PULSE_STAT_DROP_BAD_THREAD), 1);

	/* the library's parameter callback: Pulse has no parameters */
	uint32_t v = 1, p = 0;
	assert_int_equal(doca_pcc_dev_user_set_algo_params(0, 0, 0, 1, &v, &p), DOCA_PCC_DEV_STATUS_FAIL);
	assert_int_equal(doca_pcc_dev_user_set_algo_params(0, 0, 0, 0, &v, &p), DOCA_PCC_DEV_STATUS_OK);
}

/* Malformed calls into the DPA mailbox callback: answered, never crash. */
static void test_mailbox_callback_edges(void **state)
{
	(void)state;
	uint8_t resp[PULSE_MB_MIN_RESPONSE];
	uint32_t n = 77;
	assert_int_equal(doca_pcc_dev_user_mailbox_handle(NULL, 5, sizeof(resp), resp, &n),
			 DOCA_PCC_DEV_STATUS_OK);
	assert_true(n >= PULSE_MB_HEADER_SIZE); /* an in-band error answer */
	struct pulse_mb_header h;
	assert_int_equal(pulse_mb_decode_header(resp, n, &h), PULSE_MB_OK);
	assert_true(h.type & PULSE_MB_RESPONSE);
	assert_int_not_equal(h.status, PULSE_MB_OK);
	n = 77;
	assert_int_equal(doca_pcc_dev_user_mailbox_handle(resp, 12, 0, NULL, &n), DOCA_PCC_DEV_STATUS_OK);
	assert_int_equal(n, 0);
	assert_int_equal(doca_pcc_dev_user_mailbox_handle(resp, 12, 4, resp, NULL),
			 DOCA_PCC_DEV_STATUS_FAIL);
}

/* --- the transport under a hung or dead DPA -------------------------------- */

static void test_timeout_then_busy_then_recovery(void **state)
{
	(void)state;
	struct pulse_doca_stats before, after;
	pulse_doca_get_stats(tr, &before);

	fake_doca_set_hang_ms(400);
	cl.timeout_ms = 50;
	uint64_t t0 = mono_ms();
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_ETRANSPORT);
	uint64_t took = mono_ms() - t0;
	printf("  hung DPA: exchange gave up after %llu ms\n", (unsigned long long)took);
	assert_true(took >= 45 && took < 300);
	assert_non_null(strstr(last_log, "no mailbox response within 50 ms"));

	/* the send is still outstanding: refused at once, not queued */
	t0 = mono_ms();
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_ETRANSPORT);
	assert_true(mono_ms() - t0 < 40);
	assert_non_null(strstr(last_log, "refusing new exchanges"));

	sleep_ms(500); /* the hung send returns (with an error) */
	fake_doca_set_hang_ms(0);
	cl.timeout_ms = 1000;
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_OK);
	pulse_doca_get_stats(tr, &after);
	assert_int_equal(after.timeouts - before.timeouts, 1);
	assert_int_equal(after.busy - before.busy, 1);
	assert_int_equal(after.late_responses - before.late_responses, 1);
	assert_int_equal(after.ok - before.ok, 1);
}

static void test_deactivated_process_is_restarted(void **state)
{
	(void)state;
	struct pulse_doca_stats before, after;
	pulse_doca_get_stats(tr, &before);
	int starts = fake.starts, destroys = fake.destroys;

	fake_doca_set_state(DOCA_PCC_PS_DEACTIVATED);
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_ETRANSPORT);
	assert_non_null(strstr(last_log, "DEACTIVATED"));

	/* next exchange: destroy, re-create, start (reloads the DPA image), send */
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_OK);
	pulse_doca_get_stats(tr, &after);
	assert_int_equal(after.restarts - before.restarts, 1);
	assert_int_equal(fake.starts, starts + 1);
	assert_int_equal(fake.destroys, destroys + 1);
	assert_int_equal(fake.disable_mask & (1u << DOCA_PCC_DEV_EVNT_ROCE_TX), 0);
}

static void test_standby_is_refused(void **state)
{
	(void)state;
	struct pulse_doca_stats before, after;
	pulse_doca_get_stats(tr, &before);
	fake_doca_set_state(DOCA_PCC_PS_STANDBY);
	sleep_ms(1100); /* the worker re-checks the state at most once a second */
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_ETRANSPORT);
	assert_non_null(strstr(last_log, "STANDBY"));
	pulse_doca_get_stats(tr, &after);
	assert_int_equal(after.not_active - before.not_active, 1);
	fake_doca_set_state(DOCA_PCC_PS_ACTIVE);
	sleep_ms(1100);
	assert_int_equal(pulse_nic_hello(&cl), PULSE_NIC_OK);
}

static void test_oversized_request_and_small_buffer(void **state)
{
	(void)state;
	uint8_t big[PULSE_DOCA_REQUEST_CAP + 1];
	uint8_t small[8];
	uint32_t n = 5;
	memset(big, 0, sizeof(big));
	assert_int_equal(pulse_doca_exchange(tr, big, sizeof(big), small, sizeof(small), &n, 100), -1);
	assert_int_equal(n, 0);
	assert_non_null(strstr(last_log, "exceeds the 256-byte DOCA mailbox"));

	/* a HELLO answer (12 + 48 bytes) cannot fit 8 bytes: refused, not cut */
	uint8_t req[PULSE_MB_HEADER_SIZE];
	uint32_t len = pulse_mb_build_request(req, sizeof(req), PULSE_MB_HELLO, 9, NULL, 0);
	assert_int_equal(pulse_doca_exchange(tr, req, len, small, sizeof(small), &n, 1000), -1);
	assert_non_null(strstr(last_log, "does not fit the caller's 8 bytes"));
}

/* Two threads exchanging at once take turns; neither is refused as busy. */
static void *hello_thread(void *arg)
{
	uint8_t req[PULSE_MB_HEADER_SIZE], resp[256];
	uint32_t n = 0, len = pulse_mb_build_request(req, sizeof(req), PULSE_MB_HELLO, 7, NULL, 0);
	*(int *)arg = pulse_doca_exchange(tr, req, len, resp, sizeof(resp), &n, 2000);
	return NULL;
}

static void test_concurrent_callers_take_turns(void **state)
{
	(void)state;
	struct pulse_doca_stats before, after;
	pthread_t th[2];
	int rc[2] = {-9, -9};
	pulse_doca_get_stats(tr, &before);
	fake_doca_set_delay_ms(150); /* a slow, not hung, DPA */
	uint64_t t0 = mono_ms();
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hello_thread, &rc[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	fake_doca_set_delay_ms(0);
	assert_int_equal(rc[0], 0);
	assert_int_equal(rc[1], 0);
	assert_true(mono_ms() - t0 >= 290); /* one after the other */
	pulse_doca_get_stats(tr, &after);
	assert_int_equal(after.busy, before.busy);
	assert_int_equal(after.ok - before.ok, 2);
}

static void test_close_with_stuck_send(void **state)
{
	(void)state;
	struct pulse_doca_options o;
	char err[400] = "";
	opts(&o, "mlx5_0");
	struct pulse_doca *t2 = pulse_doca_open(&o, err, sizeof(err));
	assert_non_null(t2);
	uint8_t req[PULSE_MB_HEADER_SIZE], resp[256];
	uint32_t n, len = pulse_mb_build_request(req, sizeof(req), PULSE_MB_HELLO, 1, NULL, 0);

	fake_doca_set_hang_ms(400);
	assert_int_equal(pulse_doca_exchange(t2, req, len, resp, sizeof(resp), &n, 20), -1);
	uint64_t t0 = mono_ms();
	pulse_test_left_to_exit = t2;
	pulse_doca_close(t2); /* must not destroy the context under the blocked send */
	assert_true(mono_ms() - t0 < 300);
	assert_non_null(strstr(last_log, "leaving the PCC context to process exit"));
	sleep_ms(500);
	fake_doca_set_hang_ms(0);
}

static void test_clean_close(void **state)
{
	(void)state;
	int stops = fake.stops, destroys = fake.destroys, closes = fake.dev_closes;
	pulse_nic_client_free(&cl);
	pulse_doca_close(tr);
	tr = NULL;
	assert_int_equal(fake.stops, stops + 1);
	assert_int_equal(fake.destroys, destroys + 1);
	assert_int_equal(fake.dev_closes, closes + 1);
	assert_int_equal(pulse_doca_available(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_open_init_mask_registration),
		cmocka_unit_test(test_hello_through_the_mailbox),
		cmocka_unit_test(test_events_clock_and_upload),
		cmocka_unit_test(test_rate_always_line_rate),
		cmocka_unit_test(test_mailbox_callback_edges),
		cmocka_unit_test(test_timeout_then_busy_then_recovery),
		cmocka_unit_test(test_deactivated_process_is_restarted),
		cmocka_unit_test(test_standby_is_refused),
		cmocka_unit_test(test_oversized_request_and_small_buffer),
		cmocka_unit_test(test_concurrent_callers_take_turns),
		cmocka_unit_test(test_close_with_stuck_send),
		cmocka_unit_test(test_clean_close),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
