#define _GNU_SOURCE
/* The agent <-> analyzer wire codec (include/pulse/analyzer_wire.h):
 * frames through the streaming decoder in every chunking, rejection of bad
 * headers and payloads, the payload codecs' round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/analyzer_wire.h"
#include "pulse/le.h"

static size_t put_frame(uint8_t *out, size_t cap, uint8_t type, uint32_t seq, const char *s)
{
	size_t n = pulse_aw_frame(out, cap, 1, type, seq, s, strlen(s));
	assert_true(n > 0);
	return n;
}

/* A stream of frames of varied sizes, fed in chunks of every size 1..40 and
 * random ones: the same frames come out, in order, with their payloads. */
static void test_stream_chunks(void **st)
{
	(void)st;
	enum { NF = 60 };
	static uint8_t stream[1 << 20];
	static char payloads[NF][3000];
	size_t total = 0;
	for (int i = 0; i < NF; i++) {
		int len = (i * 977) % 2900 + 1;
		payloads[i][0] = '{';
		for (int k = 1; k < len; k++)
			payloads[i][k] = (char)('a' + (i + k) % 26);
		payloads[i][len] = 0;
		total += put_frame(stream + total, sizeof stream - total, PULSE_AW_CALLS, (uint32_t)i,
				   payloads[i]);
	}
	total += pulse_aw_frame(stream + total, sizeof stream - total, 1, PULSE_AW_HEARTBEAT, NF, NULL, 0);
	unsigned rnd = 12345;
	for (int chunk = 0; chunk <= 41; chunk++) {
		struct pulse_aw_decoder d;
		assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
		size_t pos = 0;
		int got = 0;
		while (pos < total || 1) {
			size_t c = chunk ? (size_t)chunk : (rnd = rnd * 1103515245 + 12345, (rnd >> 16) % 5000 + 1);
			if (c > total - pos)
				c = total - pos;
			size_t took = pulse_aw_dec_feed(&d, stream + pos, c);
			pos += took;
			struct pulse_aw_frame f;
			char err[200];
			int rc;
			while ((rc = pulse_aw_dec_next(&d, &f, err, sizeof err)) == PULSE_AW_DEC_FRAME) {
				assert_int_equal(f.h.seq, (uint32_t)got);
				if (got < NF) {
					assert_int_equal(f.h.type, PULSE_AW_CALLS);
					assert_int_equal(f.h.length, strlen(payloads[got]));
					assert_memory_equal(f.payload, payloads[got], f.h.length);
				} else {
					assert_int_equal(f.h.type, PULSE_AW_HEARTBEAT);
					assert_int_equal(f.h.length, 0);
				}
				got++;
			}
			assert_int_equal(rc, PULSE_AW_DEC_MORE);
			if (pos == total)
				break;
		}
		assert_int_equal(got, NF + 1);
		assert_int_equal(pulse_aw_dec_pending(&d), 0);
		assert_int_equal(d.frames, NF + 1);
		assert_int_equal(d.bytes, total);
		pulse_aw_dec_free(&d);
	}
}

/* Reading straight into the decoder's space (as the server does). */
static void test_space_commit(void **st)
{
	(void)st;
	uint8_t fr[256];
	size_t n = put_frame(fr, sizeof fr, PULSE_AW_OP, 7, "{\"type\":\"op\"}");
	struct pulse_aw_decoder d;
	assert_int_equal(pulse_aw_dec_init(&d, 4096), 0);
	for (int rep = 0; rep < 3; rep++) {
		for (size_t i = 0; i < n; i++) {
			size_t avail;
			uint8_t *p = pulse_aw_dec_space(&d, &avail);
			assert_non_null(p);
			assert_true(avail >= 1);
			*p = fr[i];
			pulse_aw_dec_commit(&d, 1);
			struct pulse_aw_frame f;
			int rc = pulse_aw_dec_next(&d, &f, NULL, 0);
			if (i + 1 < n) {
				assert_int_equal(rc, PULSE_AW_DEC_MORE);
				assert_int_equal(pulse_aw_dec_pending(&d), i + 1);
			} else {
				assert_int_equal(rc, PULSE_AW_DEC_FRAME);
				assert_int_equal(f.h.seq, 7);
			}
		}
	}
	pulse_aw_dec_free(&d);
}

/* A frame near the bound makes the buffer grow; afterwards it shrinks. */
static void test_big_frame(void **st)
{
	(void)st;
	size_t len = PULSE_AW_MAX_PAYLOAD;
	uint8_t *fr = malloc(len + PULSE_AW_HDR_LEN);
	char *pl = malloc(len);
	assert_non_null(fr);
	assert_non_null(pl);
	memset(pl, 'x', len);
	pl[0] = '{';
	assert_int_equal(pulse_aw_frame(fr, len + PULSE_AW_HDR_LEN, 1, PULSE_AW_MAP, 0, pl, len),
			 len + PULSE_AW_HDR_LEN);
	assert_int_equal(pulse_aw_frame(fr, len + PULSE_AW_HDR_LEN - 1, 1, PULSE_AW_MAP, 0, pl, len), 0);
	assert_int_equal(pulse_aw_frame(fr, len + PULSE_AW_HDR_LEN + 1, 1, PULSE_AW_MAP, 0, pl, len + 1), 0);
	struct pulse_aw_decoder d;
	assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
	size_t pos = 0;
	while (pos < len + PULSE_AW_HDR_LEN) {
		size_t c = len + PULSE_AW_HDR_LEN - pos < 65536 ? len + PULSE_AW_HDR_LEN - pos : 65536;
		assert_int_equal(pulse_aw_dec_feed(&d, fr + pos, c), c);
		pos += c;
	}
	struct pulse_aw_frame f;
	assert_int_equal(pulse_aw_dec_next(&d, &f, NULL, 0), PULSE_AW_DEC_FRAME);
	assert_int_equal(f.h.length, len);
	assert_memory_equal(f.payload, pl, len);
	assert_true(d.cap >= len);
	assert_int_equal(pulse_aw_dec_next(&d, &f, NULL, 0), PULSE_AW_DEC_MORE);
	assert_true(d.cap < 1024 * 1024);
	pulse_aw_dec_free(&d);
	free(fr);
	free(pl);
}

static void test_bad_magic(void **st)
{
	(void)st;
	uint8_t fr[64];
	size_t n = put_frame(fr, sizeof fr, PULSE_AW_OP, 0, "{}");
	uint8_t two[128];
	memcpy(two, fr, n);
	memcpy(two + n, fr, n);
	two[n] ^= 0x40; /* second frame's magic */
	struct pulse_aw_decoder d;
	assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
	assert_int_equal(pulse_aw_dec_feed(&d, two, 2 * n), 2 * n);
	struct pulse_aw_frame f;
	char err[200];
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FRAME);
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FATAL);
	assert_non_null(strstr(err, "bad magic"));
	assert_int_equal(d.failed, 1);
	/* sticky: no more frames, no more input taken */
	assert_int_equal(pulse_aw_dec_feed(&d, fr, n), 0);
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FATAL);
	pulse_aw_dec_free(&d);

	/* garbage text at the start (someone speaking HTTP) */
	assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
	const char *get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	pulse_aw_dec_feed(&d, get, strlen(get));
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FATAL);
	pulse_aw_dec_free(&d);
}

static void test_oversize(void **st)
{
	(void)st;
	uint8_t h[PULSE_AW_HDR_LEN];
	struct pulse_aw_hdr hd = {.magic = PULSE_AW_MAGIC, .version = 1, .type = PULSE_AW_OP,
				  .length = 5000, .seq = 0};
	pulse_aw_hdr_put(h, &hd);
	struct pulse_aw_decoder d;
	assert_int_equal(pulse_aw_dec_init(&d, 4096), 0);
	/* byte by byte: the error comes as soon as the header is complete */
	struct pulse_aw_frame f;
	char err[200];
	for (int i = 0; i < PULSE_AW_HDR_LEN - 1; i++) {
		assert_int_equal(pulse_aw_dec_feed(&d, h + i, 1), 1);
		assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_MORE);
	}
	assert_int_equal(pulse_aw_dec_feed(&d, h + PULSE_AW_HDR_LEN - 1, 1), 1);
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FATAL);
	assert_non_null(strstr(err, "over the bound"));
	pulse_aw_dec_free(&d);
	/* 0xffffffff length with the default bound */
	hd.length = 0xffffffffu;
	pulse_aw_hdr_put(h, &hd);
	assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
	pulse_aw_dec_feed(&d, h, sizeof h);
	assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_FATAL);
	pulse_aw_dec_free(&d);
}

/* Unknown version, type or flags: the frame is skipped, the next one
 * decodes. */
static void test_bad_frames_skipped(void **st)
{
	(void)st;
	uint8_t buf[512];
	size_t n = 0;
	struct pulse_aw_hdr hd = {.magic = PULSE_AW_MAGIC, .version = 9, .type = PULSE_AW_OP,
				  .length = 3, .seq = 0};
	const struct {
		uint8_t version, type;
		uint16_t flags;
		const char *why;
	} bad[] = {{9, PULSE_AW_OP, 0, "unknown protocol version"},
		   {0, PULSE_AW_OP, 0, "unknown protocol version"},
		   {1, 0, 0, "unknown frame type"},
		   {1, 200, 0, "unknown frame type"},
		   {1, PULSE_AW_NTYPES, 0, "unknown frame type"},
		   {1, PULSE_AW_OP, 1, "unknown flags"}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		hd.version = bad[i].version;
		hd.type = bad[i].type;
		hd.flags = bad[i].flags;
		pulse_aw_hdr_put(buf + n, &hd);
		memcpy(buf + n + PULSE_AW_HDR_LEN, "{x}", 3);
		n += PULSE_AW_HDR_LEN + 3;
	}
	n += put_frame(buf + n, sizeof buf - n, PULSE_AW_OP, 42, "{\"ok\":1}");
	struct pulse_aw_decoder d;
	assert_int_equal(pulse_aw_dec_init(&d, 0), 0);
	assert_int_equal(pulse_aw_dec_feed(&d, buf, n), n);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pulse_aw_frame f;
		char err[200] = "";
		assert_int_equal(pulse_aw_dec_next(&d, &f, err, sizeof err), PULSE_AW_DEC_BAD);
		assert_non_null(strstr(err, bad[i].why));
		assert_null(f.payload);
	}
	struct pulse_aw_frame f;
	assert_int_equal(pulse_aw_dec_next(&d, &f, NULL, 0), PULSE_AW_DEC_FRAME);
	assert_int_equal(f.h.seq, 42);
	assert_int_equal(d.bad_frames, sizeof bad / sizeof bad[0]);
	pulse_aw_dec_free(&d);
}

static void test_hello(void **st)
{
	(void)st;
	struct pulse_aw_hello h = {.version_min = 1, .version_max = 3, .realtime_ns = 1700000000123456789ull};
	strcpy(h.job, "gpt-7b.run_42");
	strcpy(h.host, "host3");
	strcpy(h.agent, "pulse-host-agent 0.4 (test)");
	uint8_t buf[600];
	size_t n = pulse_aw_hello_encode(buf, sizeof buf, &h);
	assert_int_equal(n, 20 + strlen(h.job) + strlen(h.host) + strlen(h.agent));
	struct pulse_aw_hello g;
	char err[200];
	assert_int_equal(pulse_aw_hello_decode(buf, n, &g, err, sizeof err), 0);
	assert_int_equal(g.version_min, 1);
	assert_int_equal(g.version_max, 3);
	assert_true(g.realtime_ns == h.realtime_ns);
	assert_string_equal(g.job, h.job);
	assert_string_equal(g.host, h.host);
	assert_string_equal(g.agent, h.agent);
	/* every truncation and one byte too many fail */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(pulse_aw_hello_decode(buf, k, &g, err, sizeof err), -1);
	buf[n] = 'x';
	assert_int_equal(pulse_aw_hello_decode(buf, n + 1, &g, err, sizeof err), -1);
	/* a host name with a slash, a newline in the agent text */
	uint8_t b2[600];
	memcpy(b2, buf, n);
	b2[20 + strlen(h.job)] = '/';
	assert_int_equal(pulse_aw_hello_decode(b2, n, &g, err, sizeof err), -1);
	assert_non_null(strstr(err, "host"));
	memcpy(b2, buf, n);
	b2[n - 1] = '\n';
	assert_int_equal(pulse_aw_hello_decode(b2, n, &g, err, sizeof err), -1);
	/* versions: 0, min > max */
	memcpy(b2, buf, n);
	pulse_put_u16(b2, 0);
	assert_int_equal(pulse_aw_hello_decode(b2, n, &g, err, sizeof err), -1);
	pulse_put_u16(b2, 4);
	assert_int_equal(pulse_aw_hello_decode(b2, n, &g, err, sizeof err), -1);
	/* reserved flags */
	memcpy(b2, buf, n);
	b2[5] = 1;
	assert_int_equal(pulse_aw_hello_decode(b2, n, &g, err, sizeof err), -1);
	/* empty host */
	struct pulse_aw_hello e = h;
	e.host[0] = 0;
	assert_int_equal(pulse_aw_hello_encode(buf, sizeof buf, &e), 0);
	memcpy(b2, buf, 0);
	/* the encoder refuses what the decoder would */
	e = h;
	strcpy(e.host, "a b");
	assert_int_equal(pulse_aw_hello_encode(buf, sizeof buf, &e), 0);
	memset(e.host, 'a', sizeof e.host); /* no NUL within 64 */
	assert_int_equal(pulse_aw_hello_encode(buf, sizeof buf, &e), 0);
	assert_int_equal(pulse_aw_hello_encode(buf, 20, &h), 0);
}

static void test_fixed_payloads(void **st)
{
	(void)st;
	uint8_t buf[64];
	char err[200];
	struct pulse_aw_hello_ack a = {.version = 1, .max_payload = 1 << 20, .heartbeat_ms = 1000,
				       .realtime_ns = 123456789012345ull}, a2;
	assert_int_equal(pulse_aw_hello_ack_encode(buf, sizeof buf, &a), PULSE_AW_HELLO_ACK_LEN);
	assert_int_equal(pulse_aw_hello_ack_decode(buf, PULSE_AW_HELLO_ACK_LEN, &a2, err, sizeof err), 0);
	assert_memory_equal(&a, &a2, sizeof a);
	assert_int_equal(pulse_aw_hello_ack_decode(buf, PULSE_AW_HELLO_ACK_LEN - 1, &a2, err, sizeof err), -1);
	pulse_put_u32(buf + 4, 100); /* payload bound too small */
	assert_int_equal(pulse_aw_hello_ack_decode(buf, PULSE_AW_HELLO_ACK_LEN, &a2, err, sizeof err), -1);

	struct pulse_aw_heartbeat b = {.realtime_ns = 5, .frames_sent = 6, .frames_dropped = 7}, b2;
	assert_int_equal(pulse_aw_heartbeat_encode(buf, sizeof buf, &b), PULSE_AW_HEARTBEAT_LEN);
	assert_int_equal(pulse_aw_heartbeat_decode(buf, PULSE_AW_HEARTBEAT_LEN, &b2, err, sizeof err), 0);
	assert_memory_equal(&b, &b2, sizeof b);
	assert_int_equal(pulse_aw_heartbeat_decode(buf, 25, &b2, err, sizeof err), -1);

	struct pulse_aw_status s = {.code = PULSE_AW_E_FLOOD}, s2;
	strcpy(s.text, "too fast: 50000 frames/s");
	uint8_t sb[300];
	size_t n = pulse_aw_status_encode(sb, sizeof sb, &s);
	assert_int_equal(n, 4 + strlen(s.text));
	assert_int_equal(pulse_aw_status_decode(sb, n, &s2, err, sizeof err), 0);
	assert_int_equal(s2.code, PULSE_AW_E_FLOOD);
	assert_string_equal(s2.text, s.text);
	assert_int_equal(pulse_aw_status_decode(sb, 3, &s2, err, sizeof err), -1);
	sb[6] = 0;
	assert_int_equal(pulse_aw_status_decode(sb, n, &s2, err, sizeof err), -1);
	strcpy(s.text, "tab\there");
	n = pulse_aw_status_encode(sb, sizeof sb, &s); /* control bytes become '?' */
	assert_int_equal(pulse_aw_status_decode(sb, n, &s2, err, sizeof err), 0);
	assert_string_equal(s2.text, "tab?here");
	assert_string_equal(pulse_aw_err_name(PULSE_AW_E_FLOOD), "flood");
	assert_string_equal(pulse_aw_err_name(999), "unknown");
	assert_string_equal(pulse_aw_type_name(PULSE_AW_JOIN), "JOIN");
	assert_string_equal(pulse_aw_type_name(0), "type?");
	assert_int_equal(pulse_aw_type_senders(PULSE_AW_OP), PULSE_AW_FROM_AGENT);
	assert_int_equal(pulse_aw_type_senders(PULSE_AW_JOIN), PULSE_AW_FROM_ANALYZER);
	assert_int_equal(pulse_aw_type_senders(PULSE_AW_BYE), PULSE_AW_FROM_AGENT | PULSE_AW_FROM_ANALYZER);
}

static int lc(uint8_t type, const char *s)
{
	char err[200];
	return pulse_aw_lines_check(type, (const uint8_t *)s, strlen(s), err, sizeof err);
}

static void test_lines(void **st)
{
	(void)st;
	assert_int_equal(lc(PULSE_AW_OP, "{\"type\":\"op\"}"), 1);
	assert_int_equal(lc(PULSE_AW_OP, "{\"type\":\"op\"}\n"), 1);
	assert_int_equal(lc(PULSE_AW_OP, "{\"a\":1}\n{\"b\":2}"), -1);
	assert_int_equal(lc(PULSE_AW_CALLS, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"), 3);
	assert_int_equal(lc(PULSE_AW_CALLS, "{\"a\":1}\n\n{\"b\":2}"), -1);
	assert_int_equal(lc(PULSE_AW_CALLS, "\n"), -1);
	assert_int_equal(lc(PULSE_AW_CALLS, ""), -1);
	assert_int_equal(lc(PULSE_AW_CALLS, "[1]"), -1);
	assert_int_equal(lc(PULSE_AW_LINES, "{\"a\":\"\x01\"}"), -1);
	assert_int_equal(lc(PULSE_AW_LINES, "{\"a\":\"\t\xc3\xa9\"}"), 1);
	const uint8_t nul[] = "{\"a\0\":1}";
	char err[200];
	assert_int_equal(pulse_aw_lines_check(PULSE_AW_LINES, nul, sizeof nul - 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "control byte"));

	const char *p = "{\"a\":1}\n{\"bb\":2}\n";
	size_t pos = 0, ll;
	const char *line;
	assert_int_equal(pulse_aw_lines_next((const uint8_t *)p, strlen(p), &pos, &line, &ll), 1);
	assert_int_equal(ll, 7);
	assert_memory_equal(line, "{\"a\":1}", 7);
	assert_int_equal(pulse_aw_lines_next((const uint8_t *)p, strlen(p), &pos, &line, &ll), 1);
	assert_int_equal(ll, 8);
	assert_int_equal(pulse_aw_lines_next((const uint8_t *)p, strlen(p), &pos, &line, &ll), 0);

	char t[16];
	const char *l1 = "{\"type\":\"hook_op\",\"x\":1}";
	assert_int_equal(pulse_aw_line_type(l1, strlen(l1), t, sizeof t), 0);
	assert_string_equal(t, "hook_op");
	const char *l2 = "{ \"type\" : \"op\" }";
	assert_int_equal(pulse_aw_line_type(l2, strlen(l2), t, sizeof t), 0);
	assert_string_equal(t, "op");
	const char *l3 = "{\"type\":\"a_type_name_too_long_for_it\"}";
	assert_int_equal(pulse_aw_line_type(l3, strlen(l3), t, sizeof t), -1);
	const char *l4 = "{\"type\":\"op";
	assert_int_equal(pulse_aw_line_type(l4, strlen(l4), t, sizeof t), -1);
	assert_int_equal(pulse_aw_line_type(l1, 12, t, sizeof t), -1);
	const char *l5 = "{\"x\":1}";
	assert_int_equal(pulse_aw_line_type(l5, strlen(l5), t, sizeof t), -1);
}

static void test_join(void **st)
{
	(void)st;
	struct pulse_aw_join_qp qps[2] = {
		{.dev = "mlx5_0", .qpn = 0x123, .pid = 77, .comm_id = 0xfedcba9876543210ull, .rank = 2,
		 .remote_host = "host4", .remote_gpu = 1, .remote_rank = 3, .remote_qpn = 0xffffff},
		{.dev = "mlx5_1", .qpn = 5, .pid = 78, .comm_id = 1, .rank = -1, .remote_host = "h-5",
		 .remote_gpu = -1, .remote_rank = -1, .remote_qpn = 0}};
	struct pulse_aw_join_member mem[1] = {
		{.comm_id = 0xfedcba9876543210ull, .rank = 3, .nranks = 8, .host = "host4", .gpu = 1,
		 .pid = 99}};
	struct pulse_aw_join j = {.host = "host3", .t_ns = 1700000000123456789ull, .version = 12,
				  .nqps = 2, .nmembers = 1, .qps = qps, .members = mem};
	char *s = pulse_aw_join_to_json(&j);
	assert_non_null(s);
	struct pulse_aw_join g;
	char err[200];
	assert_int_equal(pulse_aw_join_from_json(s, strlen(s), &g, err, sizeof err), 0);
	assert_string_equal(g.host, "host3");
	assert_true(g.t_ns == j.t_ns);
	assert_int_equal(g.version, 12);
	assert_int_equal(g.nqps, 2);
	assert_int_equal(g.nmembers, 1);
	assert_memory_equal(&g.qps[0], &qps[0], sizeof qps[0]);
	assert_memory_equal(&g.qps[1], &qps[1], sizeof qps[1]);
	assert_memory_equal(&g.members[0], &mem[0], sizeof mem[0]);
	pulse_aw_join_free(&g);
	/* every truncation fails without reading past it */
	size_t n = strlen(s);
	for (size_t k = 0; k < n; k++) {
		char *c = malloc(k ? k : 1);
		memcpy(c, s, k);
		assert_int_equal(pulse_aw_join_from_json(c, k, &g, err, sizeof err), -1);
		assert_null(g.qps);
		free(c);
	}
	free(s);
	const char *bad[] = {
		"{\"type\":\"op\",\"v\":1}",
		"{\"type\":\"join\",\"v\":2,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":1,\"version\":1,\"qps\":[],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":{},\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[],\"members\":"
		"[{\"comm_id\":\"0x1\",\"rank\":8,\"nranks\":8,\"host\":\"a\",\"gpu\":0,\"pid\":1}]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[],\"members\":"
		"[{\"comm_id\":\"1\",\"rank\":0,\"nranks\":8,\"host\":\"a\",\"gpu\":0,\"pid\":1}]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[{\"dev\":\"m\","
		"\"qpn\":16777216,\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"remote_host\":\"b\","
		"\"remote_gpu\":0,\"remote_rank\":1,\"remote_qpn\":1}],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[{\"dev\":\"m\","
		"\"qpn\":1.5,\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"remote_host\":\"b\","
		"\"remote_gpu\":0,\"remote_rank\":1,\"remote_qpn\":1}],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[7],\"members\":[]}",
		"{\"type\":\"join\",\"v\":1,\"host\":\"h\",\"t_ns\":\"1\",\"version\":1,\"qps\":[],\"members\":"
		"[{\"comm_id\":\"0x-1\",\"rank\":0,\"nranks\":8,\"host\":\"a\",\"gpu\":0,\"pid\":1}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_int_equal(pulse_aw_join_from_json(bad[i], strlen(bad[i]), &g, err, sizeof err), -1);
		assert_true(err[0] != 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_chunks),  cmocka_unit_test(test_space_commit),
		cmocka_unit_test(test_big_frame),      cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_oversize),       cmocka_unit_test(test_bad_frames_skipped),
		cmocka_unit_test(test_hello),          cmocka_unit_test(test_fixed_payloads),
		cmocka_unit_test(test_lines),          cmocka_unit_test(test_join),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
