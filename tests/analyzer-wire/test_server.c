#define _GNU_SOURCE
/* The analyzer's TCP service (analyzer/server_*.c) and the agent's link
 * (host-agent/analyzer_link.c), in one process over loopback: records get
 * through; every kind of bad input is dropped, logged and counted while a
 * well-behaved agent keeps being served; the join goes back to the agents;
 * the link backs off, queues within its bound and never blocks.
 * The analyzer state here is a test double (fake_state.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "analyzer/server.h"
#include "fake_state.h"
#include "host-agent/analyzer_link.h"
#include "pulse/analyzer_wire.h"
#include "pulse/le.h"

static FILE *logf_;

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t realt(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cfg_test(struct an_srv_cfg *c)
{
	an_srv_cfg_default(c);
	c->listen = "127.0.0.1:0";
	c->no_signals = 1;
	c->log = logf_;
	c->tick_ms = 50;
	c->join_delay_ms = 20;
	c->start_grace_ms = 0; /* the transport is tested here, lines go in at once */
}

static struct an_srv *srv_start(const struct an_srv_cfg *c)
{
	char err[256];
	fake_reset();
	struct an_srv *s = an_srv_new(&fake_state, c, err, sizeof err);
	if (!s)
		fprintf(stderr, "an_srv_new: %s\n", err);
	assert_non_null(s);
	return s;
}

static uint64_t max_poll_ns;

/* Runs the server and the links for ms milliseconds, or until done(). */
static void pump(struct an_srv *s, struct alink **links, int nl, int ms, int (*done)(void *), void *ctx)
{
	uint64_t end = mono() + (uint64_t)ms * 1000000u;
	while (mono() < end) {
		if (s)
			an_srv_step(s, 2);
		for (int i = 0; i < nl; i++) {
			if (!links[i])
				continue;
			uint64_t t0 = mono();
			alink_poll(links[i], t0);
			uint64_t d = mono() - t0;
			if (d > max_poll_ns)
				max_poll_ns = d;
		}
		if (!s) {
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
		if (done && done(ctx))
			return;
	}
}

static void jlog(void *ctx, const char *level, const char *msg)
{
	(void)ctx;
	fprintf(logf_, "link %s: %s\n", level, msg);
}

struct joins {
	int n;
	uint32_t nqps, nmembers;
	char remote_host[64];
	uint32_t remote_qpn;
	int32_t remote_rank;
};

static void on_join(void *ctx, const struct pulse_aw_join *j)
{
	struct joins *js = ctx;
	js->n++;
	js->nqps = j->nqps;
	js->nmembers = j->nmembers;
	if (j->nqps) {
		snprintf(js->remote_host, sizeof js->remote_host, "%s", j->qps[0].remote_host);
		js->remote_qpn = j->qps[0].remote_qpn;
		js->remote_rank = j->qps[0].remote_rank;
	}
}

static struct alink *link_new(int port, const char *host, struct joins *js)
{
	char addr[64], err[256];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	struct alink_cfg c = {.addr = addr, .job = "job1", .host = host, .agent_version = "test 1",
			      .backoff_min_ms = 20, .backoff_max_ms = 200, .connect_timeout_ms = 1000,
			      .on_join = on_join, .log = jlog, .ctx = js};
	struct alink *l = alink_new(&c, err, sizeof err);
	if (!l)
		fprintf(stderr, "alink_new: %s\n", err);
	assert_non_null(l);
	return l;
}

static void op_line(char *b, size_t n, const char *host, int seq, const char *extra)
{
	snprintf(b, n,
		 "{\"type\":\"op\",\"v\":1,\"host\":\"%s\",\"gpu\":0,\"pid\":1,\"comm_id\":\"0x00000000000000aa\","
		 "\"rank\":0,\"nranks\":2,\"seq\":%d%s}",
		 host, seq, extra);
}

/* ---- a raw client ---- */

static int raw_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	return fd;
}

static void raw_send(int fd, const void *p, size_t n)
{
	assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

static void raw_frame(int fd, uint8_t ver, uint8_t type, const void *p, size_t n)
{
	uint8_t *b = malloc(n + PULSE_AW_HDR_LEN);
	size_t k = pulse_aw_frame(b, n + PULSE_AW_HDR_LEN, ver, type, 0, p, n);
	assert_int_equal(k, n + PULSE_AW_HDR_LEN);
	raw_send(fd, b, k);
	free(b);
}

static void raw_hello(int fd, const char *host, uint16_t vmin, uint16_t vmax, int64_t skew_ns)
{
	struct pulse_aw_hello h = {.version_min = vmin, .version_max = vmax,
				   .realtime_ns = realt() + (uint64_t)skew_ns};
	strcpy(h.job, "job1");
	snprintf(h.host, sizeof h.host, "%s", host);
	strcpy(h.agent, "raw test client");
	uint8_t b[512];
	size_t n = pulse_aw_hello_encode(b, sizeof b, &h);
	assert_true(n > 0);
	raw_frame(fd, 1, PULSE_AW_HELLO, b, n);
}

/* Reads frames until one of type want arrives (or the peer closes / 1 s).
 * Returns 1 found, 0 closed or not found. */
static int raw_expect(struct an_srv *s, int fd, uint8_t want, uint32_t *code)
{
	struct pulse_aw_decoder d;
	pulse_aw_dec_init(&d, 0);
	uint64_t end = mono() + 3000000000u;
	int found = 0;
	while (!found && mono() < end) {
		an_srv_step(s, 2);
		uint8_t b[4096];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			pulse_aw_dec_feed(&d, b, (size_t)n);
		struct pulse_aw_frame f;
		while (pulse_aw_dec_next(&d, &f, NULL, 0) == PULSE_AW_DEC_FRAME) {
			if (f.h.type == want) {
				found = 1;
				if (code && f.h.length >= 4)
					*code = pulse_get_u32(f.payload);
				break;
			}
		}
	}
	pulse_aw_dec_free(&d);
	return found;
}

static int is_closed(struct an_srv *s, int fd)
{
	uint64_t end = mono() + 3000000000u; /* the analyzer lingers 1 s after an ERROR */
	while (mono() < end) {
		an_srv_step(s, 2);
		uint8_t b[4096];
		ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return 1;
	}
	return 0;
}

/* ---- tests ---- */

struct want {
	const char *host;
	uint32_t n;
};
static int got_lines(void *ctx)
{
	const struct want *w = ctx;
	return fake_count(w->host, NULL) >= w->n;
}

/* One agent: OP, CALLS (batched), MAP, LINES get to an_ingest under its
 * host, in order; BYE at the end. */
static void test_link_delivers(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	struct an_srv *s = srv_start(&c);
	struct joins js = {0};
	struct alink *l = link_new(an_srv_port(s), "hostA", &js);
	char b[512];
	for (int i = 0; i < 100; i++) {
		op_line(b, sizeof b, "hostA", i, "");
		assert_int_equal(alink_line(l, b, strlen(b)), 0);
		snprintf(b, sizeof b, "{\"type\":\"hook_op\",\"seq\":%d}\n", i);
		assert_int_equal(alink_line(l, b, strlen(b)), 0);
	}
	const char *map = "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[],\"qps\":[]}";
	assert_int_equal(alink_line(l, map, strlen(map)), 0);
	const char *win = "{\"type\":\"window\",\"nic\":\"sim:/x\"}";
	assert_int_equal(alink_line(l, win, strlen(win)), 0);
	assert_int_equal(alink_line(l, "no type here", 12), -1);
	struct want w = {"hostA", 202};
	struct alink *ls[] = {l};
	pump(s, ls, 1, 3000, got_lines, &w);
	assert_int_equal(fake_count("hostA", "\"type\":\"op\""), 100);
	assert_int_equal(fake_count("hostA", "hook_op"), 100);
	assert_int_equal(fake_count("hostA", "hook_map"), 1);
	assert_int_equal(fake_count("hostA", "\"window\""), 1);
	/* order kept across frame types */
	for (uint32_t i = 0; i + 1 < 200; i += 2) {
		assert_non_null(strstr(fake_state.lines[i], "\"type\":\"op\""));
		assert_non_null(strstr(fake_state.lines[i + 1], "hook_op"));
	}
	const struct an_srv_stats *ss = an_srv_stats(s);
	assert_int_equal(ss->hellos, 1);
	assert_int_equal(ss->lines_used, 201);
	assert_int_equal(ss->frames_in, 1 + 200 + 2); /* HELLO, OP and CALLS alternate, MAP, LINES */
	assert_int_equal(ss->lines_ignored, 1);
	assert_int_equal(ss->maps, 1);
	/* consecutive calls lines are batched into few frames */
	uint64_t f0 = ss->frames_in;
	for (int i = 0; i < 500; i++) {
		snprintf(b, sizeof b, "{\"type\":\"hook_group\",\"seq\":%d}", i);
		assert_int_equal(alink_line(l, b, strlen(b)), 0);
	}
	w.n = 702;
	pump(s, ls, 1, 3000, got_lines, &w);
	assert_int_equal(fake_count("hostA", "hook_group"), 500);
	assert_true(ss->frames_in - f0 <= 4);
	struct alink_stats ls_;
	alink_get_stats(l, &ls_);
	assert_int_equal(ls_.connected, 1);
	assert_int_equal(ls_.untyped_dropped, 1);
	assert_int_equal(ls_.queue_dropped, 0);
	assert_int_equal(ss->lines_used, 701);
	/* BYE: the server sees it after the link closes (run the server meanwhile) */
	alink_close(l, 500);
	pump(s, NULL, 0, 200, NULL, NULL);
	assert_int_equal(ss->byes, 1);
	assert_int_equal(ss->agents_now, 0);
	assert_int_equal(ss->mid_frame_disconnects, 0);
	an_srv_free(s);
}

/* One good agent and a series of misbehaving ones: each bad input is
 * counted, and every good record still arrives. */
static void test_bad_agents(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.max_payload = 64 * 1024;
	c.max_frames_per_s = 300;
	c.flood_close_s = 1;
	c.hello_timeout_ms = 300;
	struct an_srv *s = srv_start(&c);
	int port = an_srv_port(s);
	struct joins js = {0};
	struct alink *good = link_new(port, "good", &js);
	struct alink *ls[] = {good};
	char b[512];
	int sent = 0;
#define GOOD_SOME()                                                                                \
	do {                                                                                       \
		for (int k = 0; k < 20; k++, sent++) {                                             \
			op_line(b, sizeof b, "good", sent, "");                                      \
			alink_line(good, b, strlen(b));                                            \
		}                                                                                  \
		pump(s, ls, 1, 30, NULL, NULL);                                                    \
	} while (0)
	GOOD_SOME();
	const struct an_srv_stats *ss = an_srv_stats(s);

	/* garbage */
	int fd = raw_connect(port);
	raw_send(fd, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, NULL));
	assert_true(is_closed(s, fd));
	close(fd);
	assert_int_equal(ss->bad_magic, 1);
	GOOD_SOME();

	/* oversized length after a good HELLO */
	fd = raw_connect(port);
	raw_hello(fd, "bad1", 1, 1, 0);
	uint8_t h[PULSE_AW_HDR_LEN];
	struct pulse_aw_hdr hd = {.magic = PULSE_AW_MAGIC, .version = 1, .type = PULSE_AW_OP,
				  .length = 10u << 20};
	pulse_aw_hdr_put(h, &hd);
	raw_send(fd, h, sizeof h);
	uint32_t code = 0;
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_OVERSIZE);
	close(fd);
	assert_int_equal(ss->oversize, 1);
	GOOD_SOME();

	/* unknown versions: HELLO for the two after the highest */
	fd = raw_connect(port);
	raw_hello(fd, "bad2", PULSE_AW_VERSION_MAX + 1, PULSE_AW_VERSION_MAX + 2, 0);
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_VERSION);
	close(fd);
	assert_int_equal(ss->hello_version, 1);

	/* data before HELLO */
	fd = raw_connect(port);
	op_line(b, sizeof b, "bad3", 0, "");
	raw_frame(fd, 1, PULSE_AW_OP, b, strlen(b));
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_PROTOCOL);
	close(fd);
	assert_int_equal(ss->protocol_errors, 1);
	GOOD_SOME();

	/* after HELLO: an unknown type, a frame of version 7, a malformed OP
	 * payload, a JOIN (the analyzer's to send) and a record the state
	 * rejects are skipped and counted; the connection goes on */
	fd = raw_connect(port);
	raw_hello(fd, "bad4", 1, 1, 0);
	raw_frame(fd, 1, 99, "xyz", 3);
	raw_frame(fd, 7, PULSE_AW_OP, "{}", 2);
	raw_frame(fd, 1, PULSE_AW_OP, "not json", 8);
	raw_frame(fd, 1, PULSE_AW_JOIN, "{}", 2);
	op_line(b, sizeof b, "bad4", 0, ",\"reject\":1");
	raw_frame(fd, 1, PULSE_AW_OP, b, strlen(b));
	op_line(b, sizeof b, "bad4", 1, "");
	raw_frame(fd, 1, PULSE_AW_OP, b, strlen(b));
	struct want w4 = {"bad4", 1};
	pump(s, ls, 1, 1000, got_lines, &w4);
	assert_int_equal(fake_count("bad4", NULL), 1);
	assert_int_equal(ss->bad_frames, 2);
	assert_int_equal(ss->bad_payload, 1);
	assert_int_equal(ss->protocol_errors, 2);
	assert_int_equal(ss->lines_rejected, 1);

	/* disconnect in the middle of a frame */
	raw_frame(fd, 1, PULSE_AW_OP, NULL, 0); /* empty OP: bad payload */
	uint8_t part[PULSE_AW_HDR_LEN + 10];
	op_line(b, sizeof b, "bad4", 2, "");
	pulse_aw_frame(part, sizeof part, 1, PULSE_AW_OP, 0, b, 10); /* claims 10, sends less */
	hd = (struct pulse_aw_hdr){.magic = PULSE_AW_MAGIC, .version = 1, .type = PULSE_AW_OP,
				   .length = (uint32_t)strlen(b)};
	pulse_aw_hdr_put(part, &hd);
	raw_send(fd, part, sizeof part);
	pump(s, ls, 1, 50, NULL, NULL);
	close(fd);
	pump(s, ls, 1, 100, NULL, NULL);
	assert_int_equal(ss->mid_frame_disconnects, 1);
	assert_int_equal(ss->mid_frame_bytes, sizeof part);
	assert_int_equal(ss->bad_payload, 2);
	GOOD_SOME();

	/* a flood: 300 frames/s allowed (bucket of 600), 2000 sent at once */
	fd = raw_connect(port);
	raw_hello(fd, "flood", 1, 1, 0);
	size_t fl = 0;
	uint8_t *fb = malloc(2000 * 200);
	for (int i = 0; i < 2000; i++) {
		char ln[160];
		snprintf(ln, sizeof ln, "{\"type\":\"hook_op\",\"seq\":%d}", i);
		fl += pulse_aw_frame(fb + fl, 2000 * 200 - fl, 1, PULSE_AW_CALLS, (uint32_t)i, ln, strlen(ln));
	}
	send(fd, fb, fl, MSG_NOSIGNAL);
	free(fb);
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_FLOOD);
	close(fd);
	/* throttled (not read) from the first second on, closed after 1 s of it;
	 * nothing it sent before was dropped by the analyzer */
	assert_int_equal(ss->flood_throttled, 1);
	assert_int_equal(ss->flood_closes, 1);
	assert_true(fake_count("flood", NULL) >= 600);
	GOOD_SOME();

	/* no HELLO at all */
	fd = raw_connect(port);
	assert_true(raw_expect(s, fd, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_TIMEOUT);
	close(fd);
	assert_int_equal(ss->hello_timeouts, 1);
	GOOD_SOME();

	/* the good agent's records all arrived, and it was never disconnected */
	struct want wg = {"good", (uint32_t)sent};
	pump(s, ls, 1, 2000, got_lines, &wg);
	assert_int_equal(fake_count("good", NULL), (uint32_t)sent);
	struct alink_stats as;
	alink_get_stats(good, &as);
	assert_int_equal(as.connects, 1);
	assert_int_equal(as.disconnects, 0);
	/* the stats line and JSON say what was dropped */
	char *txt = NULL;
	size_t tl = 0;
	FILE *mf = open_memstream(&txt, &tl);
	an_srv_stats_print(mf, ss);
	fclose(mf);
	assert_non_null(strstr(txt, " bad_magic=1 "));
	assert_non_null(strstr(txt, " flood_closes=1 "));
	assert_non_null(strstr(txt, " flood_throttled=1 "));
	assert_non_null(strstr(txt, " mid_frame_disconnects=1 "));
	free(txt);
	alink_close(good, 300);
	an_srv_free(s);
}

/* Clock skew beyond the bound in HELLO: counted and logged; with
 * drop_skewed, that host's lines are dropped. */
static void test_skew(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.max_skew_ns = 20000000;
	c.drop_skewed = 1;
	struct an_srv *s = srv_start(&c);
	int fd = raw_connect(an_srv_port(s));
	raw_hello(fd, "skewed", 1, 1, 900000000);
	assert_true(raw_expect(s, fd, PULSE_AW_HELLO_ACK, NULL));
	char b[512];
	op_line(b, sizeof b, "skewed", 0, "");
	raw_frame(fd, 1, PULSE_AW_OP, b, strlen(b));
	int fd2 = raw_connect(an_srv_port(s));
	raw_hello(fd2, "fine", 1, 1, 0);
	op_line(b, sizeof b, "fine", 0, "");
	raw_frame(fd2, 1, PULSE_AW_OP, b, strlen(b));
	struct want w = {"fine", 1};
	pump(s, NULL, 0, 1000, got_lines, &w);
	pump(s, NULL, 0, 50, NULL, NULL);
	const struct an_srv_stats *ss = an_srv_stats(s);
	assert_int_equal(ss->skew_events, 1);
	assert_int_equal(ss->skew_dropped, 1);
	assert_int_equal(fake_count("skewed", NULL), 0);
	assert_int_equal(fake_count("fine", NULL), 1);
	assert_true(ss->max_skew_ns > 800000000 && ss->max_skew_ns < 1000000000);
	/* a HEARTBEAT with a good clock clears it */
	struct pulse_aw_heartbeat hb = {.realtime_ns = realt()};
	uint8_t hbb[PULSE_AW_HEARTBEAT_LEN];
	pulse_aw_heartbeat_encode(hbb, sizeof hbb, &hb);
	raw_frame(fd, 1, PULSE_AW_HEARTBEAT, hbb, sizeof hbb);
	assert_true(raw_expect(s, fd, PULSE_AW_HEARTBEAT, NULL));
	op_line(b, sizeof b, "skewed", 1, "");
	raw_frame(fd, 1, PULSE_AW_OP, b, strlen(b));
	struct want w2 = {"skewed", 1};
	pump(s, NULL, 0, 1000, got_lines, &w2);
	assert_int_equal(fake_count("skewed", NULL), 1);
	/* an agent behind by 900 ms: one sample could be our own backlog, so
	 * it takes three in a row */
	int fd3 = raw_connect(an_srv_port(s));
	raw_hello(fd3, "behind", 1, 1, -900000000);
	assert_true(raw_expect(s, fd3, PULSE_AW_HELLO_ACK, NULL));
	assert_int_equal(ss->skew_events, 1);
	for (int i = 0; i < 2; i++) {
		hb.realtime_ns = realt() - 900000000;
		pulse_aw_heartbeat_encode(hbb, sizeof hbb, &hb);
		raw_frame(fd3, 1, PULSE_AW_HEARTBEAT, hbb, sizeof hbb);
		assert_true(raw_expect(s, fd3, PULSE_AW_HEARTBEAT, NULL));
	}
	assert_int_equal(ss->skew_events, 2);
	assert_true(ss->max_skew_ns < -800000000);
	close(fd3);
	close(fd);
	close(fd2);
	an_srv_free(s);
}

/* Two hosts' maps with one QP pair: each gets a JOIN naming the other end. */
static int both_joined(void *ctx)
{
	struct joins *j = ctx;
	return j[0].n > 0 && j[1].n > 0 && j[0].nqps == 1 && j[1].nqps == 1;
}

static void test_join(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	struct an_srv *s = srv_start(&c);
	struct joins js[2];
	memset(js, 0, sizeof js);
	uint64_t told0 = fake_state.joins_sent;
	struct alink *a = link_new(an_srv_port(s), "hostA", &js[0]);
	struct alink *b = link_new(an_srv_port(s), "hostB", &js[1]);
	const char *ma =
		"{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[{\"pid\":10,\"comm_id\":"
		"\"0x00000000000000aa\",\"rank\":0,\"nranks\":2,\"how\":\"init_rank\",\"source\":\"hook\","
		"\"destroyed\":false,\"nnodes\":2,\"t_ns\":5,\"gpu\":{\"cuda_dev\":0}}],\"qps\":[{\"dev\":"
		"\"mlx5_0\",\"port\":1,\"qpn\":100,\"state\":\"rtr\",\"pid\":10,\"tid\":10,\"comm_id\":"
		"\"0x00000000000000aa\",\"rank\":0,\"remote_qpn\":200,\"remote_gid\":null,\"gpu\":"
		"{\"cuda_dev\":0}}]}";
	const char *mb =
		"{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[{\"pid\":20,\"comm_id\":"
		"\"0x00000000000000aa\",\"rank\":1,\"nranks\":2,\"how\":\"init_rank\",\"source\":\"hook\","
		"\"destroyed\":false,\"nnodes\":2,\"t_ns\":5,\"gpu\":{\"cuda_dev\":3}}],\"qps\":[{\"dev\":"
		"\"mlx5_1\",\"port\":1,\"qpn\":200,\"state\":\"rtr\",\"pid\":20,\"tid\":20,\"comm_id\":"
		"\"0x00000000000000aa\",\"rank\":1,\"remote_qpn\":100,\"remote_gid\":null,\"gpu\":"
		"{\"cuda_dev\":3}}]}";
	alink_line(a, ma, strlen(ma));
	alink_line(b, mb, strlen(mb));
	struct alink *ls[] = {a, b};
	pump(s, ls, 2, 3000, both_joined, js);
	assert_int_equal(js[0].nqps, 1);
	assert_string_equal(js[0].remote_host, "hostB");
	assert_int_equal(js[0].remote_qpn, 200);
	assert_int_equal(js[0].remote_rank, 1);
	assert_int_equal(js[0].nmembers, 2);
	assert_string_equal(js[1].remote_host, "hostA");
	assert_int_equal(js[1].remote_qpn, 100);
	const struct an_srv_stats *ss = an_srv_stats(s);
	assert_int_equal(ss->join_paired, 2);
	/* the state hears of every JOIN sent (its hang bound counts a host's
	 * earlier calls from it) */
	assert_int_equal(fake_state.joins_sent - told0, (uint64_t)(js[0].n + js[1].n));
	int na = js[0].n;
	/* the same maps again: nothing changed, no new JOIN */
	alink_line(a, ma, strlen(ma));
	pump(s, ls, 2, 200, NULL, NULL);
	assert_int_equal(js[0].n, na);
	/* a bad map is counted and does not break the join */
	const char *bad = "{\"type\":\"hook_map\",\"qps\":7}";
	alink_line(a, bad, strlen(bad));
	pump(s, ls, 2, 200, NULL, NULL);
	assert_int_equal(ss->map_bad, 1);
	alink_close(a, 200);
	alink_close(b, 200);
	an_srv_free(s);
}

/* No analyzer yet: the link backs off without blocking and queues; when
 * the analyzer comes up it connects and delivers; the queue bound drops
 * (and counts) what does not fit. A second connection for the same host
 * replaces the first. */
static void test_link_backoff_and_queue(void **st)
{
	(void)st;
	/* a port nobody listens on: bind one, close it */
	struct an_srv_cfg c;
	cfg_test(&c);
	struct an_srv *s0 = srv_start(&c);
	int port = an_srv_port(s0);
	an_srv_free(s0);
	char addr[64], err[256];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	struct alink_cfg lc = {.addr = addr, .job = "job1", .host = "hostQ", .queue_cap = 64 * 1024,
			       .backoff_min_ms = 10, .backoff_max_ms = 80, .log = jlog};
	struct alink *l = alink_new(&lc, err, sizeof err);
	assert_non_null(l);
	char b[512];
	int queued = 0, dropped = 0;
	for (int i = 0; i < 2000; i++) {
		op_line(b, sizeof b, "hostQ", i, "");
		if (alink_line(l, b, strlen(b)) == 0)
			queued++;
		else
			dropped++;
	}
	assert_true(dropped > 0);
	assert_true(queued > 100);
	max_poll_ns = 0;
	struct alink *ls[] = {l};
	pump(NULL, ls, 1, 500, NULL, NULL);
	struct alink_stats as;
	alink_get_stats(l, &as);
	assert_true(as.connect_failures >= 3);     /* 10, 20, 40, 80, 80 ms ... */
	assert_true(as.connect_failures <= 20);    /* backed off, not spinning */
	assert_int_equal(as.queue_dropped, (uint64_t)dropped);
	assert_true(max_poll_ns < 20000000);       /* never blocked */
	/* the analyzer comes up on that port */
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	c.listen = addr;
	struct an_srv *s = srv_start(&c);
	struct want w = {"hostQ", (uint32_t)queued};
	pump(s, ls, 1, 3000, got_lines, &w);
	assert_int_equal(fake_count("hostQ", NULL), (uint32_t)queued);
	/* a second connection for hostQ replaces the first */
	int fd = raw_connect(port);
	raw_hello(fd, "hostQ", 1, 1, 0);
	assert_true(raw_expect(s, fd, PULSE_AW_HELLO_ACK, NULL));
	assert_int_equal(an_srv_stats(s)->replaced, 1);
	close(fd);
	alink_close(l, 100);
	an_srv_free(s);
}

/* Volume: 20000 op records (about 9 MB) at once, so that sends are cut
 * short by the socket buffer all the time: every frame arrives whole and
 * in order (a partial send resumed at the wrong byte shows as bad magic). */
static void test_link_volume(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.max_frames_per_s = 0;
	struct an_srv *s = srv_start(&c);
	/* the server is not run while the 20000 lines are queued (seconds under
	 * TSan on a loaded machine): a HELLO_ACK timeout would count as a
	 * disconnect, which is not what this test is about */
	char addr[64], err[256];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", an_srv_port(s));
	struct alink_cfg lc = {.addr = addr, .job = "job1", .host = "bulk", .backoff_min_ms = 20,
			       .backoff_max_ms = 200, .connect_timeout_ms = 60000, .log = jlog};
	struct alink *l = alink_new(&lc, err, sizeof err);
	assert_non_null(l);
	char b[600];
	char pad[401];
	memset(pad, 'x', 400);
	pad[400] = 0;
	enum { N = 20000 };
	for (int i = 0; i < N; i++) {
		char extra[440];
		snprintf(extra, sizeof extra, ",\"pad\":\"%s\"", pad + (i % 300));
		op_line(b, sizeof b, "bulk", i, extra);
		assert_int_equal(alink_line(l, b, strlen(b)), 0);
		if (i % 500 == 0)
			alink_poll(l, mono()); /* partial sends while the queue grows */
	}
	struct alink *ls[] = {l};
	struct want w = {"bulk", N};
	pump(s, ls, 1, 20000, got_lines, &w);
	const struct an_srv_stats *ss = an_srv_stats(s);
	assert_int_equal(ss->bad_magic, 0);
	assert_int_equal(fake_count("bulk", NULL), N);
	for (int i = 0; i < N; i++) {
		char key[32];
		snprintf(key, sizeof key, "\"seq\":%d,", i);
		assert_non_null(strstr(fake_state.lines[i], key));
	}
	struct alink_stats as;
	alink_get_stats(l, &as);
	assert_int_equal(as.frames_sent, N);
	assert_int_equal(as.disconnects, 0);
	alink_close(l, 200);
	an_srv_free(s);
}

/* An analyzer that accepts and acknowledges, then never answers: the link
 * notices (no answer to a HEARTBEAT) and reconnects. */
static void test_link_silent_analyzer(void **st)
{
	(void)st;
	int ls_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(bind(ls_fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(ls_fd, 4), 0);
	socklen_t al = sizeof a;
	getsockname(ls_fd, (struct sockaddr *)&a, &al);
	struct joins js = {0};
	struct alink *l = link_new(ntohs(a.sin_port), "quiet", &js);
	int accepted = 0, cfd = -1;
	uint64_t end = mono() + 6000000000ull;
	struct alink_stats as;
	while (mono() < end) {
		alink_poll(l, mono());
		struct pollfd pf = {.fd = ls_fd, .events = POLLIN};
		if (poll(&pf, 1, 5) > 0) {
			if (cfd >= 0)
				close(cfd);
			cfd = accept(ls_fd, NULL, NULL);
			accepted++;
			/* HELLO_ACK with a 50 ms heartbeat, then silence */
			struct pulse_aw_hello_ack ack = {.version = 1, .max_payload = 1 << 20,
							 .heartbeat_ms = 50, .realtime_ns = realt()};
			uint8_t b[PULSE_AW_HELLO_ACK_LEN];
			pulse_aw_hello_ack_encode(b, sizeof b, &ack);
			raw_frame(cfd, 1, PULSE_AW_HELLO_ACK, b, sizeof b);
		}
		alink_get_stats(l, &as);
		if (accepted >= 2)
			break;
	}
	assert_int_equal(accepted, 2);
	assert_int_equal(as.connects, 1);
	assert_int_equal(as.disconnects, 1);
	close(cfd);
	close(ls_fd);
	alink_close(l, 50);
}

/* Limits: too many agents, another job, a silent agent, a second HELLO. */
static void test_limits(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.max_conns = 2;
	c.idle_timeout_ms = 300;
	c.job = "job1";
	struct an_srv *s = srv_start(&c);
	int port = an_srv_port(s);
	const struct an_srv_stats *ss = an_srv_stats(s);
	uint32_t code = 0;
	int a = raw_connect(port), b = raw_connect(port);
	raw_hello(a, "la", 1, 1, 0);
	raw_hello(b, "lb", 1, 1, 0);
	assert_true(raw_expect(s, a, PULSE_AW_HELLO_ACK, NULL));
	assert_true(raw_expect(s, b, PULSE_AW_HELLO_ACK, NULL));
	int x = raw_connect(port);
	assert_true(raw_expect(s, x, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_FULL);
	assert_int_equal(ss->refused_full, 1);
	close(x);
	/* a second HELLO on a live connection: dropped, counted */
	raw_hello(a, "la", 1, 1, 0);
	pump(s, NULL, 0, 50, NULL, NULL);
	assert_int_equal(ss->protocol_errors, 1);
	/* both go silent: closed with ERROR timeout after 300 ms */
	assert_true(raw_expect(s, a, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_TIMEOUT);
	assert_true(raw_expect(s, b, PULSE_AW_ERROR, &code));
	assert_int_equal(ss->idle_timeouts, 2);
	close(a);
	close(b);
	pump(s, NULL, 0, 50, NULL, NULL);
	/* another job */
	int j = raw_connect(port);
	struct pulse_aw_hello h = {.version_min = 1, .version_max = 1, .realtime_ns = realt()};
	strcpy(h.job, "job2");
	strcpy(h.host, "lj");
	uint8_t hb[256];
	size_t n = pulse_aw_hello_encode(hb, sizeof hb, &h);
	raw_frame(j, 1, PULSE_AW_HELLO, hb, n);
	assert_true(raw_expect(s, j, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_JOB);
	assert_int_equal(ss->hello_job, 1);
	close(j);
	/* a malformed HELLO */
	j = raw_connect(port);
	raw_frame(j, 1, PULSE_AW_HELLO, hb, n - 1);
	assert_true(raw_expect(s, j, PULSE_AW_ERROR, &code));
	assert_int_equal(code, PULSE_AW_E_MALFORMED);
	assert_int_equal(ss->hello_bad, 1);
	close(j);
	an_srv_free(s);
}

/* Lines from several threads at once (the agent's metrics/control threads
 * may write events while the loop polls): all arrive, each thread's in
 * order. Also built with TSan (test_analyzer_server_tsan). */
struct thr_arg {
	struct alink *l;
	int id, n;
};

static void *thr_lines(void *p)
{
	struct thr_arg *t = p;
	char b[128];
	for (int i = 0; i < t->n; i++) {
		snprintf(b, sizeof b, "{\"type\":\"event\",\"thr\":%d,\"i\":%d}", t->id, i);
		if (alink_line(t->l, b, strlen(b)))
			return (void *)1;
	}
	return NULL;
}

static void test_link_threads(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.max_frames_per_s = 0;
	struct an_srv *s = srv_start(&c);
	struct joins js = {0};
	struct alink *l = link_new(an_srv_port(s), "thr", &js);
	enum { T = 4, N = 3000 };
	pthread_t th[T];
	struct thr_arg args[T];
	for (int i = 0; i < T; i++) {
		args[i] = (struct thr_arg){.l = l, .id = i, .n = N};
		assert_int_equal(pthread_create(&th[i], NULL, thr_lines, &args[i]), 0);
	}
	struct alink *ls[] = {l};
	pump(s, ls, 1, 300, NULL, NULL); /* polls while the threads write */
	for (int i = 0; i < T; i++) {
		void *rv;
		pthread_join(th[i], &rv);
		assert_null(rv);
	}
	struct want w = {"thr", T * N};
	pump(s, ls, 1, 10000, got_lines, &w);
	assert_int_equal(fake_count("thr", NULL), T * N);
	int next[T] = {0};
	for (uint32_t k = 0; k < fake_state.n; k++) {
		int t, i;
		if (sscanf(fake_state.lines[k], "{\"type\":\"event\",\"thr\":%d,\"i\":%d}", &t, &i) != 2)
			continue;
		assert_true(t >= 0 && t < T);
		assert_int_equal(i, next[t]);
		next[t]++;
	}
	alink_close(l, 200);
	an_srv_free(s);
}

/* The tee: what the agent writes to its --out file also goes to the link. */
static void test_tee(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	struct an_srv *s = srv_start(&c);
	struct joins js = {0};
	struct alink *l = link_new(an_srv_port(s), "teehost", &js);
	char *txt = NULL;
	size_t tl = 0;
	FILE *inner = open_memstream(&txt, &tl);
	FILE *t = alink_tee(l, inner, 0);
	assert_non_null(t);
	for (int i = 0; i < 50; i++) {
		fprintf(t, "{\"type\":\"hook_op\",\"i\":%d", i);
		fflush(t); /* a line split across writes */
		fprintf(t, "}\n");
	}
	fprintf(t, "{\"type\":\"event\",\"nic\":\"x\"}\n");
	fflush(t);
	struct alink *ls[] = {l};
	struct want w = {"teehost", 51};
	pump(s, ls, 1, 2000, got_lines, &w);
	assert_int_equal(fake_count("teehost", "hook_op"), 50);
	assert_int_equal(fake_count("teehost", "\"event\""), 1);
	fclose(t);
	fclose(inner);
	assert_int_equal(tl, strlen(txt));
	assert_non_null(strstr(txt, "{\"type\":\"hook_op\",\"i\":49}\n"));
	free(txt);
	alink_close(l, 200);
	an_srv_free(s);
}

static struct pulse_op_record brec; /* large: not on the stack */

static void bin_rec(const char *host, uint64_t seq)
{
	memset(&brec, 0, sizeof brec);
	snprintf(brec.host, sizeof brec.host, "%s", host);
	brec.comm_id = 0xaa;
	brec.nranks = 2;
	brec.seq = seq;
	brec.op = 1;
	brec.status = PULSE_OP_COMPLETE;
	brec.call_ns = realt();
	brec.npeers = 1;
	brec.peers[0].rank = 1;
	snprintf(brec.peers[0].host, sizeof brec.peers[0].host, "%s", host);
}

/* Protocol version 2: alink_op's records go binary in batched OPS frames,
 * in order with the JSON lines around them; a version-1 analyzer
 * (max_version 1) gets the same records as JSON OP frames, those queued
 * binary before it answered included; bad OPS input is counted. */
static void test_link_binary(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	struct an_srv *s = srv_start(&c);
	const struct an_srv_stats *ss = an_srv_stats(s);
	struct joins js = {0};
	struct alink *l = link_new(an_srv_port(s), "hostB", &js);
	struct alink *ls[] = {l};
	char b[256];
	for (int i = 0; i < 300; i++) {
		bin_rec("hostB", (uint64_t)i);
		assert_int_equal(alink_op(l, &brec), 0);
		if (i % 100 == 99) {
			snprintf(b, sizeof b, "{\"type\":\"hook_op\",\"seq\":%d}", i);
			assert_int_equal(alink_line(l, b, strlen(b)), 0);
		}
	}
	struct want w = {"hostB", 303};
	pump(s, ls, 1, 3000, got_lines, &w);
	assert_int_equal(fake_count("hostB", "\"type\":\"op\""), 300);
	assert_int_equal(fake_count("hostB", "hook_op"), 3);
	for (uint32_t i = 0; i < 303; i++) /* order: 100 records, a hook_op, ... */
		assert_non_null(strstr(fake_state.lines[i], i % 101 == 100 ? "hook_op" : "\"type\":\"op\""));
	assert_non_null(strstr(fake_state.lines[101], "\"seq\":100,"));
	struct alink_stats lst;
	alink_get_stats(l, &lst);
	assert_int_equal(lst.records_bin, 300);
	assert_int_equal(lst.records_json, 0);
	assert_true(ss->frames_in < 1 + 20); /* HELLO and a few batches, not 300 frames */
	assert_int_equal(ss->lines_used, 303);
	alink_close(l, 500);
	pump(s, NULL, 0, 100, NULL, NULL);

	/* bad OPS input from a raw version-2 client: a record that does not
	 * decode is rejected and the next one still read; broken framing drops
	 * the frame's rest; OPS on a version-1 connection is skipped */
	int fd = raw_connect(an_srv_port(s));
	raw_hello(fd, "bad5", 1, 2, 0);
	uint8_t pl[4096];
	size_t n = 0;
	bin_rec("bad5", 1);
	n = pulse_aw_ops_put(pl, n, sizeof pl, &brec);
	size_t first = n;
	bin_rec("bad5", 2);
	n = pulse_aw_ops_put(pl, n, sizeof pl, &brec);
	pl[2 + 1] = 0x7f; /* the first record's host: a length past its end */
	raw_frame(fd, 2, PULSE_AW_OPS, pl, n);
	raw_frame(fd, 2, PULSE_AW_OPS, pl, first - 1); /* the length says more than is there */
	uint64_t rej = ss->lines_rejected, badp = ss->bad_payload;
	struct want w5 = {"bad5", 1};
	pump(s, NULL, 0, 1000, got_lines, &w5);
	pump(s, NULL, 0, 50, NULL, NULL);
	assert_int_equal(fake_count("bad5", "\"seq\":2,"), 1);
	assert_int_equal(ss->lines_rejected, rej + 1);
	assert_int_equal(ss->bad_payload, badp + 1);
	close(fd);
	fd = raw_connect(an_srv_port(s));
	raw_hello(fd, "bad6", 1, 1, 0);
	uint64_t badf = ss->bad_frames;
	raw_frame(fd, 2, PULSE_AW_OPS, pl + first, n - first);
	pump(s, NULL, 0, 200, NULL, NULL);
	assert_int_equal(ss->bad_frames, badf + 1);
	assert_int_equal(fake_count("bad6", NULL), 0);
	close(fd);
	an_srv_free(s);

	/* a version-1 analyzer: records queued binary before it answered are
	 * converted, later ones go as JSON */
	cfg_test(&c);
	c.max_version = 1;
	s = srv_start(&c);
	ss = an_srv_stats(s);
	l = link_new(an_srv_port(s), "hostC", &js);
	ls[0] = l;
	for (int i = 0; i < 50; i++) {
		bin_rec("hostC", (uint64_t)i);
		assert_int_equal(alink_op(l, &brec), 0);
		if (i == 20)
			alink_poll(l, mono()); /* some in the queue, the rest in the open batch */
	}
	w = (struct want){"hostC", 50};
	pump(s, ls, 1, 3000, got_lines, &w);
	for (int i = 50; i < 60; i++) {
		bin_rec("hostC", (uint64_t)i);
		assert_int_equal(alink_op(l, &brec), 0);
	}
	w.n = 60;
	pump(s, ls, 1, 3000, got_lines, &w);
	assert_int_equal(fake_count("hostC", "\"type\":\"op\""), 60);
	for (uint32_t i = 0; i < 60; i++) {
		snprintf(b, sizeof b, "\"seq\":%u,", i);
		assert_non_null(strstr(fake_state.lines[i], b));
	}
	alink_get_stats(l, &lst);
	assert_int_equal(lst.records_bin, 50);
	assert_int_equal(lst.records_converted, 50);
	assert_int_equal(lst.records_json, 10);
	assert_int_equal(ss->frames_in, 1 + 60); /* HELLO, then one OP frame per record */
	alink_close(l, 500);
	pump(s, NULL, 0, 100, NULL, NULL);
	an_srv_free(s);

	/* records_direct (the agent's setting): the record goes once, binary;
	 * its JSON line goes to the file only, the other lines through the tee */
	cfg_test(&c);
	s = srv_start(&c);
	char addr[64], err[256];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", an_srv_port(s));
	struct alink_cfg lc = {.addr = addr, .job = "job1", .host = "hostD", .backoff_min_ms = 20,
			       .log = jlog, .records_direct = 1};
	l = alink_new(&lc, err, sizeof err);
	assert_non_null(l);
	ls[0] = l;
	char *txt = NULL;
	size_t tl = 0;
	FILE *inner = open_memstream(&txt, &tl);
	FILE *t = alink_tee(l, inner, 0);
	assert_non_null(t);
	bin_rec("hostD", 7);
	char *line = pulse_op_record_to_json(&brec);
	fprintf(t, "%s\n{\"type\":\"hook_op\",\"seq\":7}\n", line);
	fflush(t);
	assert_int_equal(alink_op(l, &brec), 0);
	w = (struct want){"hostD", 2};
	pump(s, ls, 1, 2000, got_lines, &w);
	pump(s, ls, 1, 50, NULL, NULL);
	assert_int_equal(fake_count("hostD", "\"type\":\"op\""), 1);
	assert_int_equal(fake_count("hostD", "hook_op"), 1);
	fclose(t);
	fclose(inner);
	assert_non_null(strstr(txt, line));
	free(line);
	free(txt);
	alink_get_stats(l, &lst);
	assert_int_equal(lst.records_bin, 1);
	alink_close(l, 200);
	an_srv_free(s);
}

/* GET path on port; the whole answer (headers and body) into out. */
static size_t http_get(int port, const char *path, char *out, size_t cap)
{
	int fd = raw_connect(port);
	char req[256];
	snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	raw_send(fd, req, strlen(req));
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = recv(fd, out + n, cap - 1 - n, 0)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(fd);
	return n;
}

/* The value of an OpenMetrics sample line "name{labels} value" */
static double sample_of(const char *text, const char *series)
{
	char key[256];
	snprintf(key, sizeof key, "\n%s ", series); /* a sample line, not its # TYPE */
	const char *p = strstr(text, key);
	return p ? atof(p + strlen(key)) : -1;
}

/* --metrics-listen: the snapshot the loop renders after each tick, served
 * from libmicrohttpd's thread (TSan build: no race with the loop) */
static void test_metrics(void **st)
{
	(void)st;
	struct an_srv_cfg c;
	cfg_test(&c);
	c.metrics_listen = "127.0.0.1:0";
	struct an_srv *s = srv_start(&c);
	int mport = an_srv_metrics_port(s);
	assert_true(mport > 0);
	struct joins js = {0};
	struct alink *l = link_new(an_srv_port(s), "hostM", &js);
	struct alink *ls[] = {l};
	for (int i = 0; i < 40; i++) {
		bin_rec("hostM", (uint64_t)i);
		assert_int_equal(alink_op(l, &brec), 0);
	}
	struct want w = {"hostM", 40};
	pump(s, ls, 1, 3000, got_lines, &w);
	pump(s, ls, 1, 120, NULL, NULL); /* a tick after: a fresh snapshot */
	static char out[65536];
	assert_true(http_get(mport, "/metrics", out, sizeof out) > 0);
	assert_non_null(strstr(out, "200 OK"));
	assert_non_null(strstr(out, "application/openmetrics-text"));
	assert_true(sample_of(out, "pulse_analyzer_records_total") == 40);
	assert_true(sample_of(out, "pulse_analyzer_jobs_owned") == 1);
	assert_true(sample_of(out, "pulse_analyzer_agents_connected") == 1);
	assert_non_null(strstr(out, "pulse_analyzer_info{job=\"job1\""));
	assert_non_null(strstr(out, "pulse_analyzer_diagnoses_total{class=\"comm_slow\",localizer=\"pulse\"} 0"));
	assert_non_null(strstr(out, "pulse_analyzer_consumer_lag_seconds NaN")); /* the test double has no data time */
	assert_true(strlen(out) > 6 && !strcmp(out + strlen(out) - 6, "# EOF\n"));
	assert_true(http_get(mport, "/nope", out, sizeof out) > 0);
	assert_non_null(strstr(out, "404"));
	alink_close(l, 200);
	an_srv_free(s);
	/* a bad address: a clear error, no server */
	cfg_test(&c);
	c.metrics_listen = "localhost:x";
	char err[256];
	assert_null(an_srv_new(&fake_state, &c, err, sizeof err));
	assert_non_null(strstr(err, "--metrics-listen"));
}

int main(void)
{
	logf_ = getenv("AW_TEST_VERBOSE") ? stderr : fopen("/dev/null", "w");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_delivers),
		cmocka_unit_test(test_bad_agents),
		cmocka_unit_test(test_skew),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_link_backoff_and_queue),
		cmocka_unit_test(test_tee),
		cmocka_unit_test(test_link_binary),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_link_volume),
		cmocka_unit_test(test_link_silent_analyzer),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_link_threads),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fake_reset();
	return rc;
}
