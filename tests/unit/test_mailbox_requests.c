/* The firmware end of the mailbox (pulse_fw_mailbox): every request, good or
 * bad, gets a well-formed response (checked in ft_raw for every exchange);
 * bad requests get the documented status and leave the state alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"
#include "pulse/le.h"

#define E32 32000u


static struct ft_fw *small_fw(uint32_t now)
{
	struct pulse_fw_limits lim = ft_limits(16, 256, 2);
	return ft_fw_new(&lim, now);
}

/* Enough data for many 256-byte pages: QPN 0x99, one record per epoch. */
static uint64_t fill_pages(struct ft_fw *f, uint32_t start, uint32_t epochs, uint32_t epoch_ns)
{
	uint64_t units = 0;
	for (uint32_t e = 0; e < epochs; e++) {
		ft_ev(f, 0x99, (uint16_t)(1 + e), 1, start + e * epoch_ns + 3);
		units += 1 + e;
	}
	return units;
}

static void test_hello_defaults(void **state)
{
	(void)state;
	struct pulse_fw_limits lim = ft_limits(16, 256, 3);
	lim.platform = PULSE_PLATFORM_RV64_EMU;
	lim.instance_id = 0xFEEDFACECAFEBEEFull;
	struct ft_fw *f = ft_fw_new(&lim, 99);
	struct pulse_mb_hello h;
	assert_int_equal(ft_hello(f, 100, &h), PULSE_MB_OK);
	assert_int_equal(h.proto_min, PULSE_MB_VERSION);
	assert_int_equal(h.proto_max, PULSE_MB_VERSION);
	assert_int_equal(h.fw_version, PULSE_FW_VERSION);
	assert_int_equal(h.platform, PULSE_PLATFORM_RV64_EMU);
	assert_int_equal(h.max_flows, 16);
	assert_int_equal(h.pool_blocks, 256);
	assert_int_equal(h.records_per_block, PULSE_FW_RECORDS_PER_BLOCK);
	assert_int_equal(h.max_threads, 3);
	assert_int_equal(h.epoch_ns, PULSE_EPOCH_NS_DEFAULT);
	assert_int_equal(h.window_ns, PULSE_WINDOW_NS_DEFAULT);
	assert_int_equal(h.page_bytes, PULSE_PAGE_BYTES_DEFAULT);
	assert_int_equal(h.clip_units_per_pkt, PULSE_CLIP_UNITS_PER_PKT_DEFAULT);
	assert_int_equal(h.flow_limit, 16);
	assert_true(h.instance_id == 0xFEEDFACECAFEBEEFull);
	/* HELLO changes nothing: ask twice */
	struct pulse_mb_hello h2;
	assert_int_equal(ft_hello(f, 101, &h2), PULSE_MB_OK);
	assert_memory_equal(&h, &h2, sizeof(h));
	ft_fw_free(f);
}

static void test_configure_reports_and_hello_agrees(void **state)
{
	(void)state;
	struct pulse_fw_limits lim = ft_limits(16, 256, 2);
	struct ft_fw *f = ft_fw_new(&lim, 0);
	struct pulse_mb_config c = {.epoch_ns = 33000,
				    .window_ns = 250000000,
				    .page_bytes = 300,
				    .clip_units_per_pkt = 128,
				    .flow_limit = 5,
				    .pool_limit = 100};
	struct pulse_mb_hello h, h2;
	assert_int_equal(ft_configure(f, 10, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.epoch_ns, 33000);
	assert_int_equal(h.window_ns, 250000000);
	assert_int_equal(h.page_bytes, 300);
	assert_int_equal(h.clip_units_per_pkt, 128);
	assert_int_equal(h.flow_limit, 5);
	assert_int_equal(h.max_flows, 16);
	assert_int_equal(h.pool_blocks, 256);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_BLOCKS), 100);
	assert_int_equal(ft_hello(f, 11, &h2), PULSE_MB_OK);
	assert_memory_equal(&h, &h2, sizeof(h));
	/* 0 means "all" for the limits, "keep" for clip_units_per_pkt */
	c.flow_limit = 0;
	c.pool_limit = 0;
	c.clip_units_per_pkt = 0;
	assert_int_equal(ft_configure(f, 12, &c, &h), PULSE_MB_OK);
	assert_int_equal(h.flow_limit, 16);
	assert_int_equal(h.clip_units_per_pkt, 128);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_BLOCKS), 256);
	/* the extremes of every range are accepted */
	struct pulse_mb_config lo = {8000, 1000000, 256, 1, 1, 1};
	assert_int_equal(ft_configure(f, 13, &lo, &h), PULSE_MB_OK);
	assert_int_equal(h.epoch_ns, 8000);
	assert_int_equal(h.window_ns, 1000000);
	assert_int_equal(h.page_bytes, 256);
	struct pulse_mb_config hi = {1024000, 2000000000u, 65535, 0xFFFF, 16, 256};
	assert_int_equal(ft_configure(f, 14, &hi, &h), PULSE_MB_OK);
	assert_int_equal(h.epoch_ns, 1024000);
	assert_int_equal(h.window_ns, 2000000000u);
	assert_int_equal(h.page_bytes, 65535);
	assert_int_equal(h.clip_units_per_pkt, 0xFFFF);
	ft_fw_free(f);
}

/* Out-of-range configurations are refused with E_RANGE and change nothing:
 * not the configuration, not the measurement state. */
static void test_configure_range_errors(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct ft_fw *f = small_fw(S);
	struct pulse_mb_config good = ft_config(16000, 100000000, 512);
	struct pulse_mb_hello before, h;
	assert_int_equal(ft_configure(f, S, &good, &before), PULSE_MB_OK);
	ft_ev(f, 0x31, 77, 1, S + 3 * 16000 + 1);
	struct pulse_mb_config bad[] = {
		ft_config(7999, 100000000, 512),      ft_config(1024001, 100000000, 512),
		ft_config(0, 100000000, 512),         ft_config(0xFFFFFFFF, 100000000, 512),
		ft_config(16000, 999999, 512),        ft_config(16000, 2000000001u, 512),
		ft_config(16000, 0, 512),             ft_config(16000, 100000000, 255),
		ft_config(16000, 100000000, 0),
	};
	uint64_t bad_before = ft_stat(f, PULSE_STAT_BAD_REQUESTS);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t body[PULSE_MB_CONFIG_SIZE];
		pulse_mb_encode_config(body, &bad[i]);
		assert_int_equal(ft_req(f, PULSE_MB_CONFIGURE, body, sizeof(body), FT_RESP_CAP, S + 10),
				 PULSE_MB_E_RANGE);
	}
	struct pulse_mb_config lim_bad = good;
	lim_bad.flow_limit = 17; /* max_flows is 16 */
	uint8_t body[PULSE_MB_CONFIG_SIZE];
	pulse_mb_encode_config(body, &lim_bad);
	assert_int_equal(ft_req(f, PULSE_MB_CONFIGURE, body, sizeof(body), FT_RESP_CAP, S + 10),
			 PULSE_MB_E_RANGE);
	lim_bad = good;
	lim_bad.pool_limit = 257; /* pool_blocks is 256 */
	pulse_mb_encode_config(body, &lim_bad);
	assert_int_equal(ft_req(f, PULSE_MB_CONFIGURE, body, sizeof(body), FT_RESP_CAP, S + 10),
			 PULSE_MB_E_RANGE);
	/* page_bytes larger than the response buffer this transport offers */
	lim_bad = good;
	lim_bad.page_bytes = 1025;
	pulse_mb_encode_config(body, &lim_bad);
	assert_int_equal(ft_req(f, PULSE_MB_CONFIGURE, body, sizeof(body), 1024, S + 10),
			 PULSE_MB_E_RANGE);
	assert_true(ft_stat(f, PULSE_STAT_BAD_REQUESTS) >= bad_before + 12);

	assert_int_equal(ft_hello(f, S + 11, &h), PULSE_MB_OK);
	assert_memory_equal(&h, &before, sizeof(h));
	/* the event sent before the refused configurations is still there */
	struct ft_upload u;
	ft_poll_upload(f, S + 100 * 16000, 0, &u);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 0x31, 3), 77);
	assert_int_equal((uint32_t)u.poll.window_start_ns, S);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* Sends raw bytes; checks status, seq echo when asked, and BAD_REQUESTS. */
static void bad_req(struct ft_fw *f, const uint8_t *req, uint32_t len, enum pulse_mb_status want,
		    int check_seq, uint16_t seq)
{
	uint64_t b0 = ft_stat(f, PULSE_STAT_BAD_REQUESTS);
	enum pulse_mb_status st = ft_raw(f, req, len, FT_RESP_CAP, 5000);
	if (st != want)
		print_message("request of %u bytes: status %s, want %s\n", len,
			      pulse_mb_status_name(st), pulse_mb_status_name(want));
	assert_int_equal(st, want);
	if (check_seq)
		assert_int_equal(ft_resp_header(f).seq, seq);
	assert_int_equal(ft_stat(f, PULSE_STAT_BAD_REQUESTS), b0 + 1);
}

static void test_bad_headers(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct ft_fw *f = small_fw(S);
	ft_ev(f, 0x21, 5, 1, S + 2 * E32);
	uint8_t r[64];

	/* wrong magic: byte-swapped, zero */
	uint32_t n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_HELLO, 0x1111, NULL, 0);
	r[0] = 'L';
	r[1] = 'P';
	bad_req(f, r, n, PULSE_MB_E_MAGIC, 0, 0);
	memset(r, 0, sizeof(r));
	bad_req(f, r, 12, PULSE_MB_E_MAGIC, 0, 0);

	/* wrong version */
	n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_HELLO, 0x2222, NULL, 0);
	r[2] = 2;
	bad_req(f, r, n, PULSE_MB_E_VERSION, 0, 0);
	r[2] = 0;
	bad_req(f, r, n, PULSE_MB_E_VERSION, 0, 0);

	/* fewer bytes than a header */
	n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_HELLO, 0x3333, NULL, 0);
	bad_req(f, r, 0, PULSE_MB_E_TRUNCATED, 0, 0);
	bad_req(f, r, 1, PULSE_MB_E_TRUNCATED, 0, 0);
	bad_req(f, r, 11, PULSE_MB_E_TRUNCATED, 0, 0);

	/* length field larger than the bytes */
	uint8_t body[PULSE_MB_POLL_REQ_SIZE] = {0};
	n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_POLL, 0x4444, body, sizeof(body));
	bad_req(f, r, n - 1, PULSE_MB_E_TRUNCATED, 0, 0);
	bad_req(f, r, 12, PULSE_MB_E_TRUNCATED, 0, 0);
	pulse_put_u16(r + 4, 0xFFFF);
	bad_req(f, r, n, PULSE_MB_E_TRUNCATED, 0, 0);
	/* length field below a header */
	pulse_put_u16(r + 4, 4);
	bad_req(f, r, n, PULSE_MB_E_TRUNCATED, 0, 0);

	/* bodies shorter than their type needs, length consistent */
	static const struct {
		uint8_t type;
		uint32_t need;
	} bodies[] = {{PULSE_MB_CONFIGURE, PULSE_MB_CONFIG_SIZE},
		      {PULSE_MB_POLL, PULSE_MB_POLL_REQ_SIZE},
		      {PULSE_MB_READ_PAGE, PULSE_MB_PAGE_REQ_SIZE}};
	uint8_t zero[32] = {0};
	for (unsigned i = 0; i < 3; i++) {
		for (uint32_t bl = 0; bl < bodies[i].need; bl += (bl < 2 ? 1 : bodies[i].need - 3)) {
			n = pulse_mb_build_request(r, sizeof(r), bodies[i].type, (uint16_t)(0x5500 + i),
						   zero, bl);
			bad_req(f, r, n, PULSE_MB_E_TRUNCATED, 1, (uint16_t)(0x5500 + i));
		}
		n = pulse_mb_build_request(r, sizeof(r), bodies[i].type, 1, zero, bodies[i].need - 1);
		bad_req(f, r, n, PULSE_MB_E_TRUNCATED, 1, 1);
	}

	/* unknown types, including a response type sent as a request */
	static const uint8_t types[] = {0, 7, 8, 0x7F, PULSE_MB_HELLO | PULSE_MB_RESPONSE,
					PULSE_MB_POLL | PULSE_MB_RESPONSE, 0xFF};
	for (unsigned i = 0; i < sizeof(types); i++) {
		n = pulse_mb_build_request(r, sizeof(r), types[i], (uint16_t)(0x6600 + i), NULL, 0);
		bad_req(f, r, n, PULSE_MB_E_TYPE, 1, (uint16_t)(0x6600 + i));
		assert_int_equal(ft_resp_header(f).type, types[i] | PULSE_MB_RESPONSE);
	}

	/* none of that touched the window: the one event is there, and the
	 * bad POLLs above did not close a window */
	struct ft_upload u;
	ft_poll_upload(f, S + 50 * E32, 0, &u);
	assert_int_equal(u.poll.window_seq, 1);
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal(ft_map_get(&u.map, 0x21, 2), 5);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_POLLS), 1);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* "length field and received bytes disagree": more bytes than the length. */
static void test_length_smaller_than_received(void **state)
{
	(void)state;
	struct ft_fw *f = small_fw(0);
	uint8_t r[64];
	memset(r, 0, sizeof(r));
	uint32_t n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_HELLO, 0x7777, NULL, 0);
	assert_int_equal(n, 12);
	bad_req(f, r, 20, PULSE_MB_E_TRUNCATED, 1, 0x7777);
	ft_fw_free(f);
}

static void test_response_buffer_too_small(void **state)
{
	(void)state;
	const uint32_t S = 1000;
	struct ft_fw *f = small_fw(S);
	ft_ev(f, 0x41, 9, 1, S + 1);
	uint8_t r[64];
	uint32_t n = pulse_mb_build_request(r, sizeof(r), PULSE_MB_HELLO, 1, NULL, 0);
	/* no room for a header: nothing written, length 0 */
	for (uint32_t cap = 0; cap < PULSE_MB_HEADER_SIZE; cap++) {
		ft_raw(f, r, n, cap, S + 2);
		assert_int_equal(f->last_resp_len, 0);
		for (unsigned i = 0; i < 64; i++)
			assert_int_equal(f->resp[i], 0xEE);
	}
	/* a header fits but not the answer: E_NOSPACE, header only */
	for (uint32_t cap = PULSE_MB_HEADER_SIZE; cap < PULSE_MB_HEADER_SIZE + PULSE_MB_HELLO_SIZE;
	     cap += 7) {
		assert_int_equal(ft_req(f, PULSE_MB_HELLO, NULL, 0, cap, S + 3), PULSE_MB_E_NOSPACE);
		assert_int_equal(f->last_resp_len, PULSE_MB_HEADER_SIZE);
	}
	/* STATS must fit in the minimum response a transport may offer */
	assert_int_equal(ft_req(f, PULSE_MB_STATS, NULL, 0, PULSE_MB_MIN_RESPONSE, S + 4),
			 PULSE_MB_OK);
	assert_int_equal(pulse_get_u16(ft_resp_body(f)), PULSE_STAT_COUNT);
	uint32_t stats_len = f->last_resp_len;
	assert_int_equal(ft_req(f, PULSE_MB_STATS, NULL, 0, stats_len - 1, S + 4),
			 PULSE_MB_E_NOSPACE);
	/* and so must HELLO, CONFIGURE and POLL */
	assert_int_equal(ft_req(f, PULSE_MB_HELLO, NULL, 0, PULSE_MB_MIN_RESPONSE, S + 4),
			 PULSE_MB_OK);

	/* a POLL that cannot be answered does not close the window */
	uint8_t pb[PULSE_MB_POLL_REQ_SIZE];
	struct pulse_mb_poll_req pr = {.host_ns = 1, .flags = 0};
	pulse_mb_encode_poll_req(pb, &pr);
	assert_int_equal(ft_req(f, PULSE_MB_POLL, pb, sizeof(pb),
				PULSE_MB_HEADER_SIZE + PULSE_MB_POLL_RESP_SIZE - 1, S + 5),
			 PULSE_MB_E_NOSPACE);
	ft_ev(f, 0x41, 10, 1, S + 6);
	struct ft_upload u;
	ft_poll_upload(f, S + 10 * E32, 0, &u);
	assert_int_equal(u.poll.window_seq, 1);
	assert_int_equal(ft_map_get(&u.map, 0x41, 0), 19);
	assert_int_equal((uint32_t)u.poll.window_start_ns, S);
	ft_upload_free(&u);

	/* a page read into too small a buffer; then the same page fits */
	const uint32_t S2 = S + 10 * E32;
	fill_pages(f, S2, 10, E32);
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, S2 + 20 * E32, 0, 0, &p), PULSE_MB_OK);
	assert_int_equal(ft_read_page(f, S2 + 20 * E32, p.window_seq, 0, 64), PULSE_MB_E_NOSPACE);
	assert_int_equal(f->last_resp_len, PULSE_MB_HEADER_SIZE);
	assert_int_equal(ft_read_page(f, S2 + 20 * E32, p.window_seq, 0, FT_RESP_CAP), PULSE_MB_OK);
	ft_fw_free(f);
}

/* POLL while an upload is unfinished: E_BUSY (window stays open, nothing
 * lost); FORCE abandons it, flags it and counts it. */
static void test_poll_busy_then_force(void **state)
{
	(void)state;
	const uint32_t S = 2000;
	struct ft_fw *f = small_fw(S);
	struct pulse_mb_config c = ft_config(8000, 1000000000u, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	fill_pages(f, S, 200, 8000);
	const uint32_t T1 = S + 300 * 8000;
	struct pulse_mb_poll_resp p1, p2, p3;
	assert_int_equal(ft_poll(f, T1, 0, 11, &p1), PULSE_MB_OK);
	assert_true(p1.page_count >= 3);
	assert_int_equal(ft_read_page(f, T1 + 1, p1.window_seq, 0, FT_RESP_CAP), PULSE_MB_OK);
	/* window 2 traffic, before and after the refused POLL */
	ft_ev(f, 0x55, 100, 1, T1 + 1 * 8000);
	assert_int_equal(ft_poll(f, T1 + 10 * 8000, 0, 12, &p2), PULSE_MB_E_BUSY);
	assert_int_equal(ft_stat(f, PULSE_STAT_POLLS_BUSY), 1);
	ft_ev(f, 0x55, 200, 1, T1 + 20 * 8000);
	/* the unfinished upload is still readable after the refusal */
	assert_int_equal(ft_read_page(f, T1 + 21 * 8000, p1.window_seq, 1, FT_RESP_CAP), PULSE_MB_OK);
	/* FORCE */
	struct ft_upload u;
	memset(&u, 0, sizeof(u));
	ft_map_init(&u.map);
	assert_int_equal(ft_poll(f, T1 + 30 * 8000, PULSE_MB_POLL_FORCE, 13, &u.poll), PULSE_MB_OK);
	assert_true(u.poll.flags & PULSE_MB_POLLF_ABANDONED);
	assert_false(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal(u.poll.window_seq, p1.window_seq + 1);
	assert_int_equal(ft_stat(f, PULSE_STAT_UPLOADS_ABANDONED), 1);
	/* the old window is gone */
	assert_int_equal(ft_read_page(f, T1 + 31 * 8000, p1.window_seq, 2, FT_RESP_CAP),
			 PULSE_MB_E_WINDOW);
	ft_read_upload(f, T1 + 31 * 8000, &u);
	/* window 2 began at the first POLL, not at the refused one */
	assert_int_equal((uint32_t)u.poll.window_start_ns, T1);
	assert_int_equal(ft_map_get(&u.map, 0x55, 1), 100);
	assert_int_equal(ft_map_get(&u.map, 0x55, 20), 200);
	assert_int_equal(ft_map_qpn_total(&u.map, 0x55), 300);
	ft_upload_free(&u);
	/* a completed upload does not make the next POLL busy, and FORCE on a
	 * finished upload is not an abandonment */
	assert_int_equal(ft_poll(f, T1 + 40 * 8000, PULSE_MB_POLL_FORCE, 14, &p3), PULSE_MB_OK);
	assert_false(p3.flags & PULSE_MB_POLLF_ABANDONED);
	assert_int_equal(ft_stat(f, PULSE_STAT_UPLOADS_ABANDONED), 1);
	ft_fw_free(f);
}

/* Pages are read in order; the page just served may be read again and is
 * byte-identical (also after events arrived in between, and for the last
 * page after the upload is complete); anything else is E_RANGE. */
static void test_page_order_and_repeat(void **state)
{
	(void)state;
	const uint32_t S = 3000, E = 8000;
	struct ft_fw *f = small_fw(S);
	struct pulse_mb_config c = ft_config(E, 1000000000u, 256);
	assert_int_equal(ft_configure(f, S, &c, NULL), PULSE_MB_OK);
	fill_pages(f, S, 300, E);
	const uint32_t T = S + 400 * E;
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, T, 0, 0, &p), PULSE_MB_OK);
	uint16_t pc = p.page_count;
	assert_true(pc >= 4);
	uint32_t w = p.window_seq;
	static uint8_t first[FT_RESP_CAP], again[FT_RESP_CAP];
	uint32_t first_len;

	assert_int_equal(ft_read_page(f, T, w, 1, FT_RESP_CAP), PULSE_MB_E_RANGE); /* ahead */
	assert_int_equal(ft_read_page(f, T, w, 0, FT_RESP_CAP), PULSE_MB_OK);
	first_len = f->last_resp_len;
	memcpy(first, f->resp, first_len);
	/* traffic of the next window between the two reads */
	for (uint32_t e = 0; e < 50; e++)
		ft_ev(f, 0x99, 1, 1, T + e * E);
	ft_ev(f, 0x12, 1, 1, T + 1);
	assert_int_equal(ft_read_page(f, T, w, 0, FT_RESP_CAP), PULSE_MB_OK); /* repeat */
	assert_int_equal(f->last_resp_len, first_len);
	/* identical apart from the echoed seq */
	assert_memory_equal(f->resp + 8, first + 8, first_len - 8);
	assert_int_equal(ft_stat(f, PULSE_STAT_PAGE_REPEATS), 1);
	assert_int_equal(ft_read_page(f, T, w, 2, FT_RESP_CAP), PULSE_MB_E_RANGE); /* skip */
	assert_int_equal(ft_read_page(f, T, w, 1, FT_RESP_CAP), PULSE_MB_OK);
	assert_int_equal(ft_read_page(f, T, w, 0, FT_RESP_CAP), PULSE_MB_E_RANGE); /* stale */
	assert_int_equal(ft_read_page(f, T, w, pc, FT_RESP_CAP), PULSE_MB_E_RANGE);
	assert_int_equal(ft_read_page(f, T, w, 0xFFFF, FT_RESP_CAP), PULSE_MB_E_RANGE);
	assert_int_equal(ft_read_page(f, T, w + 1, 2, FT_RESP_CAP), PULSE_MB_E_WINDOW);
	assert_int_equal(ft_read_page(f, T, w - 1, 2, FT_RESP_CAP), PULSE_MB_E_WINDOW);
	assert_int_equal(ft_read_page(f, T, 0xFFFFFFFF, 2, FT_RESP_CAP), PULSE_MB_E_WINDOW);
	for (uint16_t k = 2; k < pc; k++)
		assert_int_equal(ft_read_page(f, T, w, k, FT_RESP_CAP), PULSE_MB_OK);
	first_len = f->last_resp_len;
	memcpy(first, f->resp, first_len);
	/* the last page again, after the upload is complete */
	ft_ev(f, 0x99, 1, 1, T + 60 * E);
	assert_int_equal(ft_read_page(f, T, w, pc - 1, FT_RESP_CAP), PULSE_MB_OK);
	memcpy(again, f->resp, f->last_resp_len);
	assert_int_equal(f->last_resp_len, first_len);
	assert_memory_equal(again + 8, first + 8, first_len - 8);
	assert_int_equal(ft_read_page(f, T, w, pc, FT_RESP_CAP), PULSE_MB_E_RANGE);
	assert_int_equal(ft_stat(f, PULSE_STAT_PAGE_REPEATS), 2);
	assert_true(ft_stat(f, PULSE_STAT_PAGES_SERVED) >= pc);
	/* the upload is complete: POLL is not busy */
	assert_int_equal(ft_poll(f, T + 100 * E, 0, 0, &p), PULSE_MB_OK);
	assert_false(p.flags & PULSE_MB_POLLF_ABANDONED);
	ft_fw_free(f);
}

static void test_read_page_without_upload(void **state)
{
	(void)state;
	const uint32_t S = 3000;
	struct ft_fw *f = small_fw(S);
	assert_int_equal(ft_read_page(f, S, 0, 0, FT_RESP_CAP), PULSE_MB_E_NO_UPLOAD);
	assert_int_equal(ft_read_page(f, S, 1, 0, FT_RESP_CAP), PULSE_MB_E_NO_UPLOAD);
	ft_ev(f, 3, 3, 1, S + 1);
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, S + E32, 0, 0, &p), PULSE_MB_OK);
	assert_int_equal(ft_reset(f, S + E32 + 1), PULSE_MB_OK);
	assert_int_equal(ft_read_page(f, S + E32 + 2, p.window_seq, 0, FT_RESP_CAP),
			 PULSE_MB_E_NO_UPLOAD);
	/* and a POLL after RESET is not busy */
	assert_int_equal(ft_poll(f, S + 2 * E32, 0, 0, &p), PULSE_MB_OK);
	assert_true(p.flags & PULSE_MB_POLLF_RESTARTED);
	assert_false(p.flags & PULSE_MB_POLLF_ABANDONED);
	ft_fw_free(f);
}

/* A window without traffic: zero flows, readable to the end, not busy after. */
static void test_empty_window(void **state)
{
	(void)state;
	const uint32_t S = 3000;
	struct ft_fw *f = small_fw(S);
	struct ft_upload u;
	for (int i = 0; i < 3; i++) {
		ft_poll_upload(f, S + (uint32_t)(i + 1) * 1000000u, 0, &u);
		assert_int_equal(u.poll.flows, 0);
		assert_int_equal(u.map.n, 0);
		assert_true(u.poll.page_count <= 1);
		assert_int_equal(u.poll.flows_aged, 0);
		assert_int_equal(u.poll.window_seq, (uint32_t)i + 1);
		assert_int_equal(!!(u.poll.flags & PULSE_MB_POLLF_RESTARTED), i == 0);
		ft_upload_free(&u);
	}
	ft_fw_free(f);
}

/* RESET and CONFIGURE clear measurement state and restart the window. */
static void test_reset_and_configure_clear_state(void **state)
{
	(void)state;
	const uint32_t S = 3000;
	struct ft_fw *f = small_fw(S);
	for (uint32_t q = 1; q <= 5; q++)
		for (uint32_t e = 0; e < 40; e++)
			ft_ev(f, q, 10, 1, S + e * E32);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 5);
	assert_true(ft_stat(f, PULSE_STAT_POOL_USED) > 0);
	struct pulse_mb_poll_resp p;
	assert_int_equal(ft_poll(f, S + 50 * E32, 0, 0, &p), PULSE_MB_OK); /* upload left open */
	ft_ev(f, 1, 10, 1, S + 51 * E32);

	const uint32_t R = S + 60 * E32;
	assert_int_equal(ft_reset(f, R), PULSE_MB_OK);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	assert_true(pulse_fw_memory_in_use(f->fw) <= pulse_fw_memory_size(&f->lim));
	/* not busy: the open upload went with the reset */
	ft_ev(f, 2, 33, 1, R + 7 * E32 + 5);
	struct ft_upload u;
	ft_poll_upload(f, R + 20 * E32, 0, &u);
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_false(u.poll.flags & PULSE_MB_POLLF_ABANDONED);
	assert_int_equal((uint32_t)u.poll.window_start_ns, R);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 2, 7), 33);
	ft_upload_free(&u);

	/* CONFIGURE does the same, with the new epoch */
	const uint32_t C = R + 30 * E32;
	ft_ev(f, 3, 1, 1, C - 5);
	struct pulse_mb_config c = ft_config(10000, 500000000, 512);
	assert_int_equal(ft_configure(f, C, &c, NULL), PULSE_MB_OK);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_ACTIVE), 0);
	assert_int_equal(ft_stat(f, PULSE_STAT_POOL_USED), 0);
	ft_ev(f, 4, 44, 1, C + 3 * 10000);
	ft_poll_upload(f, C + 100 * 10000, 0, &u);
	assert_true(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	assert_int_equal(u.poll.epoch_ns, 10000);
	assert_int_equal((uint32_t)u.poll.window_start_ns, C);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_get(&u.map, 4, 3), 44);
	ft_upload_free(&u);
	/* the next one is not a restart */
	ft_poll_upload(f, C + 200 * 10000, 0, &u);
	assert_false(u.poll.flags & PULSE_MB_POLLF_RESTARTED);
	ft_upload_free(&u);
	ft_fw_free(f);
}

/* STATS over the mailbox equals pulse_fw_stats, and counts what happened. */
static void test_stats_counts(void **state)
{
	(void)state;
	const uint32_t S = 3000;
	struct ft_fw *f = small_fw(S);
	ft_ev(f, 1, 10, 2, S + 1);
	ft_ev(f, 1, 20, 3, S + 2);
	ft_ev(f, 2, 30, 4, S + E32);
	ft_ev(f, 0, 30, 4, S + E32);
	uint64_t st[PULSE_STAT_COUNT];
	ft_stats(f, S + 2 * E32, st);
	assert_int_equal(st[PULSE_STAT_EVENTS], 3);
	assert_int_equal(st[PULSE_STAT_UNITS], 60);
	assert_int_equal(st[PULSE_STAT_PKTS], 9);
	assert_int_equal(st[PULSE_STAT_FLOWS_CREATED], 2);
	assert_int_equal(st[PULSE_STAT_FLOWS_ACTIVE], 2);
	assert_int_equal(st[PULSE_STAT_DROP_BAD_QPN], 1);
	assert_int_equal(st[PULSE_STAT_POOL_BLOCKS], 256);
	assert_int_equal(st[PULSE_STAT_POLLS], 0);
	struct ft_upload u;
	ft_poll_upload(f, S + 3 * E32, 0, &u);
	ft_stats(f, S + 4 * E32, st);
	assert_int_equal(st[PULSE_STAT_POLLS], 1);
	assert_true(st[PULSE_STAT_PAGES_SERVED] >= u.poll.page_count);
	ft_upload_free(&u);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_defaults),
		cmocka_unit_test(test_configure_reports_and_hello_agrees),
		cmocka_unit_test(test_configure_range_errors),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_length_smaller_than_received),
		cmocka_unit_test(test_response_buffer_too_small),
		cmocka_unit_test(test_poll_busy_then_force),
		cmocka_unit_test(test_page_order_and_repeat),
		cmocka_unit_test(test_read_page_without_upload),
		cmocka_unit_test(test_empty_window),
		cmocka_unit_test(test_reset_and_configure_clear_state),
		cmocka_unit_test(test_stats_counts),
	};
	return cmocka_run_group_tests_name("mailbox requests", tests, NULL, NULL);
}
