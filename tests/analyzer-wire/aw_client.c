#define _GNU_SOURCE
/* Test client for pulse-analyzer --listen (tests/analyzer-wire/analyzer_live.sh)
 * and the wire benchmarks. A well-behaved agent goes through the agent's
 * own link library (host-agent/analyzer_link.c); the misbehaving ones
 * write raw bytes.
 *
 *   aw_client good ADDR HOST N      N op records + N hook_op lines + a map, BYE;
 *                                   exit 0 only if every frame was sent
 *   aw_client garbage ADDR          HTTP text instead of frames
 *   aw_client oversize ADDR HOST    HELLO, then a header claiming 100 MiB
 *   aw_client midframe ADDR HOST    HELLO, then half a frame, then close
 *   aw_client badversion ADDR HOST  HELLO for protocol versions 5..6
 *   aw_client flood ADDR HOST SECS  HELLO, then CALLS frames as fast as it can
 *   aw_client skew ADDR HOST MS     HELLO with the clock MS ahead, 10 records, BYE
 *   aw_client bench                 decoder throughput (frames/s, MB/s)
 *   aw_client bench-e2e ADDR N [json|bin]  N op records through the link to a
 *                                   live analyzer, until its BYE is sent: records/s;
 *                                   json: the link offers protocol 1 only (JSON OP
 *                                   frames), bin (default): protocol 2 (OPS)
 * Raw modes print the analyzer's answer (ERROR code and text) and exit 0
 * when it answered as the protocol says. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host-agent/analyzer_link.h"
#include "pulse/analyzer_wire.h"
#include "pulse/le.h"
#include "pulse/op_record.h"

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

static void sample_op(struct pulse_op_record *r, const char *host, uint64_t seq)
{
	memset(r, 0, sizeof *r);
	snprintf(r->host, sizeof r->host, "%s", host);
	r->gpu = 0;
	r->pid = 4242;
	r->comm_id = 0xaaull;
	r->rank = 0;
	r->nranks = 2;
	r->seq = seq;
	r->op = 1; /* allreduce */
	r->count = 1 << 20;
	r->datatype = 7;
	r->root_peer = -1;
	r->algo = PULSE_ALGO_RING;
	r->algo_source = PULSE_ALGO_SRC_INFERRED;
	r->parallelism = PULSE_PAR_DP;
	r->status = PULSE_OP_COMPLETE;
	r->epoch_ns = 32000;
	r->call_ns = realt() - 1000000;
	r->start_ns = r->call_ns + 1000;
	r->end_ns = r->start_ns + 500000;
	r->duration_ns = 500000;
	r->expected_bytes = r->actual_bytes = 4u << 20;
	r->active_ns = r->rank_active_ns = 400000;
	r->rank_rate_gbps = 83.9;
	r->npeers = 1;
	r->peers[0] = (struct pulse_op_peer){.rank = 1, .gpu = 0, .expected_bytes = 4u << 20,
					     .actual_bytes = 4u << 20, .start_ns = r->start_ns,
					     .end_ns = r->end_ns, .active_ns = 400000, .complete = 1};
	snprintf(r->peers[0].host, sizeof r->peers[0].host, "peer-of-%s", host);
}

static void lg(void *ctx, const char *level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "aw_client link %s: %s\n", level, msg);
}

static int run_link(const char *addr, const char *host, long n, int ops_only, double *secs,
		    uint16_t max_version)
{
	char err[256];
	struct alink_cfg c = {.addr = addr, .job = "live", .host = host, .agent_version = "aw_client",
			      .queue_cap = 256u << 20, .backoff_min_ms = 20, .backoff_max_ms = 200,
			      .log = lg, .max_version = max_version};
	struct alink *l = alink_new(&c, err, sizeof err);
	if (!l) {
		fprintf(stderr, "aw_client: %s\n", err);
		return 2;
	}
	uint64_t t0 = mono();
	struct pulse_op_record r;
	char b[256];
	for (long i = 0; i < n; i++) {
		sample_op(&r, host, (uint64_t)i);
		if (ops_only) {
			/* the benchmark: the 8 GPUs of one host in one communicator,
			 * so that every operator instance completes (8 records) and
			 * the analyzer runs its per-instance checks as in a job */
			r.rank = r.gpu = (int32_t)(i % 8);
			r.nranks = 8;
			r.seq = (uint64_t)(i / 8);
			r.pid = 4242 + (uint32_t)r.rank;
			r.peers[0].rank = (r.rank + 1) % 8;
			r.peers[0].gpu = r.peers[0].rank;
			snprintf(r.peers[0].host, sizeof r.peers[0].host, "%s", host);
		}
		if (alink_op(l, &r))
			return 1;
		if (!ops_only) {
			snprintf(b, sizeof b, "{\"type\":\"hook_op\",\"t_ns\":%llu,\"comm_id\":\"0x00000000000000aa\",\"seq\":%ld}",
				 (unsigned long long)realt(), i);
			if (alink_line(l, b, strlen(b)))
				return 1;
		}
		if (i % 256 == 0)
			alink_poll(l, mono());
	}
	if (!ops_only) {
		const char *map = "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[],\"qps\":[]}";
		alink_line(l, map, strlen(map));
	}
	struct alink_stats st;
	uint64_t end = mono() + 20000000000ull;
	do { /* wait until everything went out */
		alink_poll(l, mono());
		alink_get_stats(l, &st);
		if (st.frames_sent + st.queue_dropped >= st.frames_queued && st.connected)
			break;
		short ev;
		int fd = alink_fd(l, &ev);
		if (fd >= 0) {
			struct pollfd pf = {.fd = fd, .events = ev};
			poll(&pf, 1, 5);
		} else {
			usleep(5000);
		}
	} while (mono() < end);
	alink_close(l, 10000);
	if (secs)
		*secs = (double)(mono() - t0) / 1e9;
	printf("aw_client %s: lines=%llu frames_queued=%llu frames_sent=%llu bytes_sent=%llu "
	       "queue_dropped=%llu connects=%llu connect_failures=%llu\n",
	       host, (unsigned long long)st.lines, (unsigned long long)st.frames_queued,
	       (unsigned long long)st.frames_sent, (unsigned long long)st.bytes_sent,
	       (unsigned long long)st.queue_dropped, (unsigned long long)st.connects,
	       (unsigned long long)st.connect_failures);
	return st.frames_sent == st.frames_queued && !st.queue_dropped ? 0 : 1;
}

/* ---- raw clients ---- */

static int raw_connect(const char *addr)
{
	char host[256], port[16];
	const char *colon = addr[0] == '[' ? strstr(addr, "]:") : strrchr(addr, ':');
	if (!colon)
		return -1;
	size_t hl = (size_t)(colon - addr) - (addr[0] == '[');
	snprintf(host, sizeof host, "%.*s", (int)hl, addr + (addr[0] == '['));
	snprintf(port, sizeof port, "%s", colon + (addr[0] == '[' ? 2 : 1));
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	int fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen)) {
		perror("aw_client: connect");
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int frame(int fd, uint8_t ver, uint8_t type, const void *p, size_t n)
{
	uint8_t *b = malloc(n + PULSE_AW_HDR_LEN);
	size_t k = pulse_aw_frame(b, n + PULSE_AW_HDR_LEN, ver, type, 0, p, n);
	int rc = send_all(fd, b, k);
	free(b);
	return rc;
}

static int hello(int fd, const char *host, uint16_t vmin, uint16_t vmax, int64_t skew_ns)
{
	struct pulse_aw_hello h = {.version_min = vmin, .version_max = vmax,
				   .realtime_ns = realt() + (uint64_t)skew_ns};
	snprintf(h.job, sizeof h.job, "live");
	snprintf(h.host, sizeof h.host, "%s", host);
	snprintf(h.agent, sizeof h.agent, "aw_client raw");
	uint8_t b[512];
	size_t n = pulse_aw_hello_encode(b, sizeof b, &h);
	return frame(fd, 1, PULSE_AW_HELLO, b, n);
}

/* Reads until an ERROR/BYE or close (at most ms). Returns the ERROR code,
 * -1 closed without one, -2 nothing within ms. */
static long answer(int fd, int ms)
{
	struct pulse_aw_decoder d;
	pulse_aw_dec_init(&d, 0);
	uint64_t end = mono() + (uint64_t)ms * 1000000u;
	long rc = -2;
	while (mono() < end) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 20) <= 0)
			continue;
		uint8_t b[4096];
		ssize_t n = recv(fd, b, sizeof b, 0);
		if (n <= 0) {
			rc = rc == -2 ? -1 : rc;
			break;
		}
		pulse_aw_dec_feed(&d, b, (size_t)n);
		struct pulse_aw_frame f;
		while (pulse_aw_dec_next(&d, &f, NULL, 0) == PULSE_AW_DEC_FRAME) {
			if (f.h.type == PULSE_AW_ERROR || f.h.type == PULSE_AW_BYE) {
				struct pulse_aw_status s;
				if (!pulse_aw_status_decode(f.payload, f.h.length, &s, NULL, 0)) {
					printf("aw_client: analyzer says %s %s: %s\n", pulse_aw_type_name(f.h.type),
					       pulse_aw_err_name(s.code), s.text);
					rc = (long)s.code;
				}
			}
		}
	}
	pulse_aw_dec_free(&d);
	return rc;
}

static int bench(void)
{
	struct pulse_op_record r;
	sample_op(&r, "host-bench", 1);
	char *op = pulse_op_record_to_json(&r);
	const char *call = "{\"type\":\"hook_op\",\"t_ns\":1700000000000000000,\"op\":\"allreduce\",\"seq\":1}";
	struct {
		const char *name;
		const char *payload;
		uint8_t type;
	} kinds[] = {{"OP (one op record)", op, PULSE_AW_OP}, {"CALLS (one hook_op line)", call, PULSE_AW_CALLS}};
	for (size_t k = 0; k < 2; k++) {
		size_t pl = strlen(kinds[k].payload), fl = pl + PULSE_AW_HDR_LEN;
		size_t nf = (64u << 20) / fl;
		uint8_t *buf = malloc(nf * fl);
		for (size_t i = 0; i < nf; i++)
			pulse_aw_frame(buf + i * fl, fl, 1, kinds[k].type, (uint32_t)i, kinds[k].payload, pl);
		double best = 1e9;
		for (int rep = 0; rep < 5; rep++) {
			struct pulse_aw_decoder d;
			pulse_aw_dec_init(&d, 0);
			uint64_t t0 = mono(), got = 0, sum = 0;
			for (size_t pos = 0; pos < nf * fl;) {
				size_t c = nf * fl - pos < 65536 ? nf * fl - pos : 65536; /* read()-sized chunks */
				pos += pulse_aw_dec_feed(&d, buf + pos, c);
				struct pulse_aw_frame f;
				while (pulse_aw_dec_next(&d, &f, NULL, 0) == PULSE_AW_DEC_FRAME) {
					got++;
					sum += f.payload[0];
					if (kinds[k].type != PULSE_AW_OP &&
					    pulse_aw_lines_check(f.h.type, f.payload, f.h.length, NULL, 0) != 1)
						return 1;
				}
			}
			double s = (double)(mono() - t0) / 1e9;
			if (got != nf || sum != nf * '{')
				return 1;
			if (s < best)
				best = s;
			pulse_aw_dec_free(&d);
		}
		printf("decode %-26s %zu frames of %zu bytes: %.2f M frames/s, %.0f MB/s (best of 5)\n",
		       kinds[k].name, nf, fl, (double)nf / best / 1e6, (double)(nf * fl) / best / 1e6);
		free(buf);
	}
	/* the whole OP path on the analyzer side: decode + line check + op JSON parse */
	size_t pl = strlen(op), fl = pl + PULSE_AW_HDR_LEN, nf = 100000;
	uint8_t *buf = malloc(nf * fl);
	for (size_t i = 0; i < nf; i++)
		pulse_aw_frame(buf + i * fl, fl, 1, PULSE_AW_OP, (uint32_t)i, op, pl);
	struct pulse_aw_decoder d;
	pulse_aw_dec_init(&d, 0);
	uint64_t t0 = mono(), got = 0;
	for (size_t pos = 0; pos < nf * fl;) {
		size_t c = nf * fl - pos < 65536 ? nf * fl - pos : 65536;
		pos += pulse_aw_dec_feed(&d, buf + pos, c);
		struct pulse_aw_frame f;
		while (pulse_aw_dec_next(&d, &f, NULL, 0) == PULSE_AW_DEC_FRAME) {
			struct pulse_op_record rr;
			if (pulse_aw_lines_check(f.h.type, f.payload, f.h.length, NULL, 0) != 1 ||
			    pulse_op_record_from_json((const char *)f.payload, f.h.length, &rr, NULL, 0))
				return 1;
			got++;
		}
	}
	double s = (double)(mono() - t0) / 1e9;
	printf("decode+check+parse OP     %zu records (JSON, %zu bytes each): %.0f k records/s\n", nf, pl,
	       (double)got / s / 1e3);
	pulse_aw_dec_free(&d);
	free(buf);
	/* the same records binary, batched in OPS frames of up to 64 KiB */
	static uint8_t ops[64 << 10];
	size_t ol = 0, per = 0;
	while ((ol = pulse_aw_ops_put(ops, ol, sizeof ops, &r)) != 0)
		per++;
	ol = 0;
	for (size_t i = 0; i < per; i++)
		ol = pulse_aw_ops_put(ops, ol, sizeof ops, &r);
	size_t nof = nf / per + 1;
	fl = ol + PULSE_AW_HDR_LEN;
	buf = malloc(nof * fl);
	for (size_t i = 0; i < nof; i++)
		pulse_aw_frame(buf + i * fl, fl, 2, PULSE_AW_OPS, (uint32_t)i, ops, ol);
	pulse_aw_dec_init(&d, 0);
	struct pulse_op_record *rb = malloc(sizeof *rb);
	t0 = mono();
	got = 0;
	for (size_t pos = 0; pos < nof * fl;) {
		size_t c = nof * fl - pos < 65536 ? nof * fl - pos : 65536;
		pos += pulse_aw_dec_feed(&d, buf + pos, c);
		struct pulse_aw_frame f;
		while (pulse_aw_dec_next(&d, &f, NULL, 0) == PULSE_AW_DEC_FRAME) {
			size_t p = 0, rl;
			const uint8_t *rec;
			while (pulse_aw_ops_next(f.payload, f.h.length, &p, &rec, &rl, NULL, 0) == 1) {
				if (pulse_op_record_from_bin(rec, rl, rb, NULL, 0))
					return 1;
				got++;
			}
		}
	}
	s = (double)(mono() - t0) / 1e9;
	printf("decode+parse OPS          %zu records (binary, %zu bytes each, %zu per frame): %.0f k records/s\n",
	       (size_t)got, ol / per - 2, per, (double)got / s / 1e3);
	pulse_aw_dec_free(&d);
	free(rb);
	free(buf);
	/* the agent's side: alink_line (route, check, batch, queue), no socket */
	char err[128];
	struct alink_cfg lc = {.addr = "127.0.0.1:9", .host = "host-bench", .queue_cap = 1u << 30,
			       .log = lg};
	struct alink *l = alink_new(&lc, err, sizeof err);
	if (!l)
		return 1;
	const long nl = 1000000;
	t0 = mono();
	for (long i = 0; i < nl; i++)
		if (alink_line(l, i % 4 ? call : op, strlen(i % 4 ? call : op)))
			return 1;
	s = (double)(mono() - t0) / 1e9;
	printf("agent alink_line          %ld lines (1 op record : 3 hook_op): %.0f ns per line\n", nl,
	       s / (double)nl * 1e9);
	alink_close(l, 0);
	free(op);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: see the header of tests/analyzer-wire/aw_client.c\n");
		return 2;
	}
	const char *m = argv[1];
	if (!strcmp(m, "bench"))
		return bench();
	if (argc < 3)
		return 2;
	const char *addr = argv[2];
	if (!strcmp(m, "good") && argc == 5)
		return run_link(addr, argv[3], atol(argv[4]), 0, NULL, 0);
	if (!strcmp(m, "bench-e2e") && (argc == 4 || argc == 5)) {
		double secs = 0;
		long n = atol(argv[3]);
		int json = argc == 5 && !strcmp(argv[4], "json");
		int rc = run_link(addr, "host-bench", n, 1, &secs, json ? 1 : 0);
		printf("end to end: %ld op records (%s) through the link to pulse-analyzer in %.3f s: %.0f k records/s\n",
		       n, json ? "JSON, protocol 1" : "binary, protocol 2", secs, (double)n / secs / 1e3);
		return rc;
	}
	int fd = raw_connect(addr);
	if (fd < 0)
		return 2;
	long code;
	if (!strcmp(m, "garbage")) {
		send_all(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
		code = answer(fd, 2000);
		return code == PULSE_AW_E_MALFORMED ? 0 : 1;
	}
	if (argc < 4)
		return 2;
	const char *host = argv[3];
	if (!strcmp(m, "badversion")) {
		hello(fd, host, 5, 6, 0);
		return answer(fd, 2000) == PULSE_AW_E_VERSION ? 0 : 1;
	}
	if (hello(fd, host, 1, 1, !strcmp(m, "skew") && argc > 4 ? atoll(argv[4]) * 1000000ll : 0))
		return 1;
	if (!strcmp(m, "oversize")) {
		uint8_t h[PULSE_AW_HDR_LEN];
		struct pulse_aw_hdr hd = {.magic = PULSE_AW_MAGIC, .version = 1, .type = PULSE_AW_OP,
					  .length = 100u << 20};
		pulse_aw_hdr_put(h, &hd);
		send_all(fd, h, sizeof h);
		return answer(fd, 2000) == PULSE_AW_E_OVERSIZE ? 0 : 1;
	}
	if (!strcmp(m, "midframe")) {
		struct pulse_op_record r;
		sample_op(&r, host, 0);
		char *s = pulse_op_record_to_json(&r);
		size_t n = strlen(s);
		uint8_t *b = malloc(n + PULSE_AW_HDR_LEN);
		pulse_aw_frame(b, n + PULSE_AW_HDR_LEN, 1, PULSE_AW_OP, 1, s, n);
		send_all(fd, b, (n + PULSE_AW_HDR_LEN) / 2);
		usleep(100000);
		close(fd);
		free(b);
		free(s);
		return 0;
	}
	if (!strcmp(m, "flood") && argc == 5) {
		uint64_t end = mono() + (uint64_t)(atof(argv[4]) * 1e9);
		static uint8_t b[1 << 16];
		size_t fl = 0;
		long sent = 0;
		const char *ln = "{\"type\":\"hook_op\",\"flood\":1}";
		while (fl + 100 < sizeof b)
			fl += pulse_aw_frame(b + fl, sizeof b - fl, 1, PULSE_AW_CALLS, 0, ln, strlen(ln));
		size_t per = fl / (PULSE_AW_HDR_LEN + strlen(ln));
		while (mono() < end) {
			if (send_all(fd, b, fl))
				break; /* closed by the analyzer */
			sent += (long)per;
		}
		printf("aw_client flood: %ld frames sent\n", sent);
		code = answer(fd, 3000);
		/* the ERROR may be lost to the reset of a connection closed with
		 * our unread frames in it: closed counts too (the analyzer's
		 * counters say why) */
		if (code == -1)
			printf("aw_client flood: closed by the analyzer\n");
		return code == PULSE_AW_E_FLOOD || code == -1 ? 0 : 1;
	}
	if (!strcmp(m, "skew")) {
		for (int i = 0; i < 10; i++) {
			struct pulse_op_record r;
			sample_op(&r, host, (uint64_t)i);
			char *s = pulse_op_record_to_json(&r);
			frame(fd, 1, PULSE_AW_OP, s, strlen(s));
			free(s);
		}
		uint8_t b[64];
		struct pulse_aw_status st = {.code = 0};
		size_t n = pulse_aw_status_encode(b, sizeof b, &st);
		frame(fd, 1, PULSE_AW_BYE, b, n);
		answer(fd, 300);
		close(fd);
		return 0;
	}
	fprintf(stderr, "aw_client: unknown mode %s\n", m);
	return 2;
}
