/* pulse-host-agent's link to pulse-analyzer (host-agent/analyzer_link.h).
 * Wire format: include/pulse/analyzer_wire.h, analyzer/PROTOCOL.md. */
#define _GNU_SOURCE
#include <errno.h>
#include "pulse/clock_ns.h"
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "analyzer_link.h"
#include "line_tee.h"
#include "pulse/analyzer_wire.h"
#include "pulse/le.h"

#define MAX_ADDRS 8

enum { L_DOWN = 0, L_CONNECTING = 1, L_HELLO_SENT = 2, L_READY = 3 };

struct buf {
	uint8_t *p;
	size_t off, len, alloc;
};

struct alink {
	struct alink_cfg cfg;
	char job[PULSE_AW_NAME_LEN], host[PULSE_AW_NAME_LEN], agent[PULSE_AW_TEXT_LEN];
	char addr[300];
	struct sockaddr_storage addrs[MAX_ADDRS];
	socklen_t alens[MAX_ADDRS];
	int naddrs, next_addr;
	pthread_mutex_t mu;

	struct buf q;          /* data frames waiting, whole frames */
	size_t head_sent;      /* bytes of the head frame already on the socket */
	uint8_t batch_type;    /* the open CALLS/LINES batch (0: none) */
	struct buf batch;
	uint32_t seq;
	char *map;             /* the latest hook_map line */
	size_t maplen;
	uint32_t q_maps;       /* MAP frames in q */
	int dropping;          /* in a drop episode (logged once) */
	uint64_t dropped_at_episode;

	int fd, state;
	uint64_t t_state, t_retry, backoff_ms, t_rx, t_hb;
	uint64_t t_tx;         /* the last time data went out (send made progress) */
	uint64_t hb_sent_mono, hb_sent_real;
	struct buf ctl;        /* control frames, sent at frame boundaries */
	uint32_t peer_max_payload, hb_ms;
	struct pulse_aw_decoder dec;
	struct alink_stats st;
	uint16_t peer_version;  /* the last HELLO_ACK's choice (0: none yet) */
	uint32_t q_ops;         /* OPS frames in q */
	struct pulse_op_record *conv; /* for converting OPS to JSON (large) */
};

static void lg(struct alink *l, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void lg(struct alink *l, const char *level, const char *fmt, ...)
{
	char msg[768], full[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(full, sizeof full, "analyzer %s: %s", l->addr, msg);
	if (l->cfg.log)
		l->cfg.log(l->cfg.ctx, level, full);
	else
		fprintf(stderr, "pulse-host-agent %s: %s\n", level, full);
}

static int buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->off && b->alloc - b->len < n) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->alloc - b->len < n) {
		size_t na = b->alloc ? b->alloc : 4096;
		while (na - b->len < n)
			na *= 2;
		uint8_t *np = realloc(b->p, na);
		if (!np)
			return -1;
		b->p = np;
		b->alloc = na;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static size_t buf_used(const struct buf *b)
{
	return b->len - b->off;
}

static void buf_consume(struct buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len) {
		b->off = b->len = 0;
		if (b->alloc > (1u << 20)) { /* give back a burst's memory */
			free(b->p);
			b->p = NULL;
			b->alloc = 0;
		}
	}
}

/* ---- queueing ---- */

static int put_frame(struct alink *l, struct buf *b, uint8_t type, const void *p, size_t len)
{
	uint8_t h[PULSE_AW_HDR_LEN];
	struct pulse_aw_hdr hd = {.magic = PULSE_AW_MAGIC, .version = pulse_aw_type_since(type), .type = type,
				  .flags = 0, .length = (uint32_t)len, .seq = l->seq++};
	pulse_aw_hdr_put(h, &hd);
	if (buf_put(b, h, sizeof h))
		return -1;
	if (len && buf_put(b, p, len)) {
		b->len -= sizeof h;
		return -1;
	}
	return 0;
}

static int enqueue(struct alink *l, uint8_t type, const void *p, size_t len)
{
	uint32_t bound = l->peer_max_payload ? l->peer_max_payload : PULSE_AW_MAX_PAYLOAD;
	if (len > bound) {
		l->st.oversize_dropped++;
		lg(l, "warn", "%s line of %zu bytes over the payload bound of %" PRIu32 "; dropped",
		   pulse_aw_type_name(type), len, bound);
		return -1;
	}
	if (buf_used(&l->q) + PULSE_AW_HDR_LEN + len > l->cfg.queue_cap ||
	    put_frame(l, &l->q, type, p, len)) {
		l->st.queue_dropped++;
		if (!l->dropping) {
			l->dropping = 1;
			l->dropped_at_episode = l->st.queue_dropped - 1;
			lg(l, "warn",
			   "queue for the analyzer full (%zu bytes, cap %" PRIu32 "%s): dropping new frames",
			   buf_used(&l->q), l->cfg.queue_cap,
			   l->state == L_READY ? "; the analyzer reads slowly" : "; not connected");
		}
		return -1;
	}
	if (l->dropping) {
		l->dropping = 0;
		lg(l, "info", "queue has room again; %" PRIu64 " frame(s) were dropped",
		   l->st.queue_dropped - l->dropped_at_episode);
	}
	l->st.frames_queued++;
	if (type == PULSE_AW_MAP)
		l->q_maps++;
	if (type == PULSE_AW_OPS)
		l->q_ops++;
	return 0;
}

/* Binary records go out only to an analyzer that speaks version 2; before
 * the first answer they are queued binary and converted if need be. */
static int ops_ok(const struct alink *l)
{
	return l->cfg.max_version >= 2 && (!l->peer_version || l->peer_version >= 2);
}

/* An OPS payload as JSON OP frames into b (a version-1 analyzer). Records
 * beyond the queue's cap are dropped and counted. */
static void ops_to_json(struct alink *l, struct buf *b, const uint8_t *p, size_t len)
{
	size_t pos = 0, rl;
	const uint8_t *rec;
	if (!l->conv)
		l->conv = malloc(sizeof *l->conv);
	while (pulse_aw_ops_next(p, len, &pos, &rec, &rl, NULL, 0) == 1) {
		char *js = NULL;
		if (l->conv && !pulse_op_record_from_bin(rec, rl, l->conv, NULL, 0))
			js = pulse_op_record_to_json(l->conv);
		if (!js || buf_used(b) + PULSE_AW_HDR_LEN + strlen(js) > l->cfg.queue_cap ||
		    put_frame(l, b, PULSE_AW_OP, js, strlen(js))) {
			l->st.queue_dropped++;
		} else {
			l->st.records_converted++;
			l->st.frames_queued++;
		}
		free(js);
	}
}

/* After a version-1 HELLO_ACK: the queued OPS frames become OP frames, in
 * their place, so that the order of everything else is kept. */
static void convert_queue(struct alink *l)
{
	if (!l->q_ops)
		return;
	struct buf nq = {0};
	size_t off = l->q.off;
	while (l->q.len - off >= PULSE_AW_HDR_LEN) {
		struct pulse_aw_hdr h;
		pulse_aw_hdr_get(l->q.p + off, &h);
		const uint8_t *pl = l->q.p + off + PULSE_AW_HDR_LEN;
		if (h.type == PULSE_AW_OPS) {
			ops_to_json(l, &nq, pl, h.length);
			l->st.frames_queued--; /* the OPS frame itself is gone */
		} else if (buf_put(&nq, l->q.p + off, PULSE_AW_HDR_LEN + h.length)) {
			l->st.queue_dropped++;
		}
		off += PULSE_AW_HDR_LEN + h.length;
	}
	free(l->q.p);
	l->q = nq;
	l->q_ops = 0;
}

static void flush_batch(struct alink *l)
{
	if (l->batch_type == PULSE_AW_OPS && !ops_ok(l) && buf_used(&l->batch))
		ops_to_json(l, &l->q, l->batch.p + l->batch.off, buf_used(&l->batch));
	else if (l->batch_type && buf_used(&l->batch))
		enqueue(l, l->batch_type, l->batch.p + l->batch.off, buf_used(&l->batch));
	l->batch.off = l->batch.len = 0;
	l->batch_type = 0;
}

int alink_line(struct alink *l, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	char type[32], err[128];
	pthread_mutex_lock(&l->mu);
	l->st.lines++;
	if (!len || pulse_aw_line_type(line, len, type, sizeof type) ||
	    pulse_aw_lines_check(PULSE_AW_OP, (const uint8_t *)line, len, err, sizeof err) != 1) {
		l->st.untyped_dropped++;
		if (l->st.untyped_dropped <= 5 || l->st.untyped_dropped % 1000 == 0)
			lg(l, "warn", "a %zu-byte line without a \"type\" or with control bytes not sent (%" PRIu64
			   " so far)", len, l->st.untyped_dropped);
		pthread_mutex_unlock(&l->mu);
		return -1;
	}
	int rc;
	uint8_t ft;
	if (!strcmp(type, "op"))
		ft = PULSE_AW_OP;
	else if (!strcmp(type, "hook_map"))
		ft = PULSE_AW_MAP;
	else if (!strcmp(type, "hook_op") || !strcmp(type, "hook_group"))
		ft = PULSE_AW_CALLS;
	else
		ft = PULSE_AW_LINES;
	if (ft == PULSE_AW_MAP) {
		char *m = malloc(len);
		if (m) {
			memcpy(m, line, len);
			free(l->map);
			l->map = m;
			l->maplen = len;
		}
	}
	if (ft == PULSE_AW_OP || ft == PULSE_AW_MAP || len + 1 > l->cfg.batch_bytes) {
		flush_batch(l);
		rc = enqueue(l, ft, line, len);
	} else {
		if (l->batch_type != ft || buf_used(&l->batch) + 1 + len > l->cfg.batch_bytes)
			flush_batch(l);
		rc = 0;
		if ((l->batch_type && buf_put(&l->batch, "\n", 1)) || buf_put(&l->batch, line, len)) {
			l->st.queue_dropped++;
			rc = -1;
		} else {
			l->batch_type = ft;
		}
	}
	pthread_mutex_unlock(&l->mu);
	return rc;
}

int alink_op(struct alink *l, const struct pulse_op_record *r)
{
	pthread_mutex_lock(&l->mu);
	if (ops_ok(l)) {
		uint8_t tmp[2 + PULSE_OP_BIN_MAX];
		size_t n = pulse_aw_ops_put(tmp, 0, sizeof tmp, r);
		int rc = 0;
		l->st.lines++;
		if (l->batch_type != PULSE_AW_OPS || buf_used(&l->batch) + n > l->cfg.batch_bytes)
			flush_batch(l);
		if (!n || buf_put(&l->batch, tmp, n)) {
			l->st.queue_dropped++;
			rc = -1;
		} else {
			l->batch_type = PULSE_AW_OPS;
			l->st.records_bin++;
		}
		pthread_mutex_unlock(&l->mu);
		return rc;
	}
	l->st.records_json++;
	pthread_mutex_unlock(&l->mu);
	char *s = pulse_op_record_to_json(r);
	if (!s) {
		pthread_mutex_lock(&l->mu);
		l->st.queue_dropped++;
		pthread_mutex_unlock(&l->mu);
		return -1;
	}
	int rc = alink_line(l, s, strlen(s));
	free(s);
	return rc;
}

/* ---- connection ---- */

static void drop_conn(struct alink *l, uint64_t now, uint64_t retry_ms)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->state >= L_HELLO_SENT)
		l->st.disconnects++;
	l->state = L_DOWN;
	l->st.connected = 0;
	if (l->head_sent) {
		/* the analyzer got part of it and drops that part (it only takes
		 * whole frames): it goes again, whole, on the next connection */
		l->head_sent = 0;
		l->st.resent_cut++;
	}
	l->ctl.off = l->ctl.len = 0;
	l->hb_sent_mono = 0;
	pulse_aw_dec_free(&l->dec);
	l->t_retry = now + retry_ms * 1000000u;
}

static void fail(struct alink *l, uint64_t now, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A failed attempt or a lost connection: retry after the backoff, which
 * doubles up to its maximum (reset by a HELLO_ACK). */
static void fail(struct alink *l, uint64_t now, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (l->state < L_READY)
		l->st.connect_failures++;
	uint64_t wait = l->backoff_ms;
	/* log every failure while backing off is short, then only at the cap */
	if (wait < l->cfg.backoff_max_ms || l->st.connect_failures % 10 == 1)
		lg(l, "warn", "%s; retrying in %" PRIu64 " ms", msg, wait);
	drop_conn(l, now, wait);
	l->backoff_ms = l->backoff_ms * 2 > l->cfg.backoff_max_ms ? l->cfg.backoff_max_ms
								  : l->backoff_ms * 2;
	l->next_addr = (l->next_addr + 1) % l->naddrs;
}

static void start_connect(struct alink *l, uint64_t now)
{
	const struct sockaddr_storage *sa = &l->addrs[l->next_addr];
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fail(l, now, "socket: %s", strerror(errno));
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	l->fd = fd;
	l->t_state = now;
	if (pulse_aw_dec_init(&l->dec, PULSE_AW_MAX_PAYLOAD)) {
		fail(l, now, "out of memory");
		return;
	}
	if (connect(fd, (const struct sockaddr *)sa, l->alens[l->next_addr]) == 0 || errno == EINPROGRESS) {
		l->state = L_CONNECTING;
		return;
	}
	fail(l, now, "connect: %s", strerror(errno));
}

static void send_hello(struct alink *l, uint64_t now)
{
	struct pulse_aw_hello h = {.version_min = PULSE_AW_VERSION_MIN,
				   .version_max = l->cfg.max_version, .realtime_ns = pulse_real_ns()};
	snprintf(h.job, sizeof h.job, "%s", l->job);
	snprintf(h.host, sizeof h.host, "%s", l->host);
	snprintf(h.agent, sizeof h.agent, "%s", l->agent);
	uint8_t b[20 + 2 * PULSE_AW_NAME_LEN + PULSE_AW_TEXT_LEN];
	size_t n = pulse_aw_hello_encode(b, sizeof b, &h);
	if (!n || put_frame(l, &l->ctl, PULSE_AW_HELLO, b, n)) {
		fail(l, now, "cannot encode HELLO");
		return;
	}
	l->state = L_HELLO_SENT;
	l->t_state = now;
	l->t_rx = now;
}

static void send_heartbeat(struct alink *l, uint64_t now)
{
	struct pulse_aw_heartbeat hb = {.realtime_ns = pulse_real_ns(), .frames_sent = l->st.frames_sent,
					.frames_dropped = l->st.queue_dropped + l->st.oversize_dropped};
	uint8_t b[PULSE_AW_HEARTBEAT_LEN];
	pulse_aw_heartbeat_encode(b, sizeof b, &hb);
	put_frame(l, &l->ctl, PULSE_AW_HEARTBEAT, b, sizeof b);
	l->t_hb = now;
	if (!l->hb_sent_mono) { /* the oldest unanswered one */
		l->hb_sent_mono = now;
		l->hb_sent_real = hb.realtime_ns;
	}
}

static void on_frame(struct alink *l, const struct pulse_aw_frame *f, uint64_t now)
{
	char err[256];
	switch (f->h.type) {
	case PULSE_AW_HELLO_ACK: {
		struct pulse_aw_hello_ack a;
		if (l->state != L_HELLO_SENT) {
			l->st.bad_frames_rx++;
			return;
		}
		if (pulse_aw_hello_ack_decode(f->payload, f->h.length, &a, err, sizeof err)) {
			fail(l, now, "bad HELLO_ACK: %s", err);
			return;
		}
		if (a.version < PULSE_AW_VERSION_MIN || a.version > l->cfg.max_version) {
			fail(l, now, "analyzer chose protocol version %u, this agent speaks %d..%u", a.version,
			     PULSE_AW_VERSION_MIN, l->cfg.max_version);
			return;
		}
		l->peer_version = a.version;
		if (!ops_ok(l)) {
			if (l->q_ops)
				lg(l, "info", "analyzer speaks protocol %u: %" PRIu32 " queued OPS frame(s) "
				   "sent as JSON OP frames", a.version, l->q_ops);
			convert_queue(l);
		}
		l->state = L_READY;
		l->st.connected = 1;
		l->st.connects++;
		l->backoff_ms = l->cfg.backoff_min_ms;
		l->peer_max_payload = a.max_payload;
		l->hb_ms = a.heartbeat_ms ? a.heartbeat_ms : 1000;
		l->t_hb = now;
		l->t_tx = now;
		int64_t skew = (int64_t)(a.realtime_ns - pulse_real_ns());
		lg(l, "info", "connected (protocol %u, analyzer clock %+.3f ms from ours, %zu bytes queued)",
		   a.version, (double)skew / 1e6, buf_used(&l->q));
		if (l->map && !l->q_maps) {
			/* sent on an earlier connection: the analyzer may have lost it
			 * (restart), send it again */
			if (l->maplen <= l->peer_max_payload &&
			    !put_frame(l, &l->ctl, PULSE_AW_MAP, l->map, l->maplen))
				l->st.maps_resent++;
		}
		return;
	}
	case PULSE_AW_JOIN: {
		struct pulse_aw_join j;
		if (pulse_aw_join_from_json((const char *)f->payload, f->h.length, &j, err, sizeof err)) {
			l->st.joins_bad++;
			lg(l, "warn", "JOIN not used: %s", err);
			return;
		}
		if (strcmp(j.host, l->host)) {
			l->st.joins_bad++;
			lg(l, "warn", "JOIN for host %s, this is %s; not used", j.host, l->host);
		} else {
			l->st.joins++;
			if (l->cfg.on_join)
				l->cfg.on_join(l->cfg.ctx, &j);
		}
		pulse_aw_join_free(&j);
		return;
	}
	case PULSE_AW_SERIES_REQ: {
		struct pulse_qps_req q;
		if (l->state != L_READY || l->peer_version < 3 ||
		    pulse_qps_req_decode(f->payload, f->h.length, &q, err, sizeof err)) {
			l->st.series_bad++;
			lg(l, "warn", "SERIES_REQ not answered: %s",
			   l->state != L_READY || l->peer_version < 3 ? "not a protocol-3 connection" : err);
			return;
		}
		l->st.series_reqs++;
		size_t bound = l->peer_max_payload ? l->peer_max_payload : PULSE_AW_MAX_PAYLOAD;
		if (q.max_bytes && q.max_bytes < bound)
			bound = q.max_bytes;
		size_t len = 0;
		uint8_t *p = NULL;
		if (l->cfg.on_series)
			p = l->cfg.on_series(l->cfg.ctx, &q, bound, &len);
		else {
			struct pulse_qps_resp h = {.id = q.id, .status = PULSE_QPS_OFF, .from_ns = q.from_ns,
						   .to_ns = q.to_ns};
			snprintf(h.host, sizeof h.host, "%s", l->host);
			struct pulse_qps_builder b;
			if (!pulse_qps_build_begin(&b, &h, bound))
				len = pulse_qps_build_end(&b);
			p = b.buf;
		}
		if (p && len && !enqueue(l, PULSE_AW_SERIES, p, len)) {
			l->st.series_sent++;
			lg(l, "info", "SERIES_REQ %" PRIu32 ": %zu bytes of per-QP series queued", q.id, len);
		}
		free(p);
		return;
	}
	case PULSE_AW_HEARTBEAT: {
		struct pulse_aw_heartbeat hb;
		if (pulse_aw_heartbeat_decode(f->payload, f->h.length, &hb, err, sizeof err)) {
			l->st.bad_frames_rx++;
			return;
		}
		l->st.heartbeats_rx++;
		if (l->hb_sent_mono) {
			l->st.rtt_ns = now - l->hb_sent_mono;
			l->st.skew_ns = (int64_t)(hb.realtime_ns - (l->hb_sent_real + l->st.rtt_ns / 2));
			l->hb_sent_mono = 0;
		}
		return;
	}
	case PULSE_AW_ERROR:
	case PULSE_AW_BYE: {
		struct pulse_aw_status s;
		if (pulse_aw_status_decode(f->payload, f->h.length, &s, err, sizeof err))
			snprintf(s.text, sizeof s.text, "(undecodable: %.200s)", err);
		if (f->h.type == PULSE_AW_ERROR)
			l->st.errors_rx++;
		fail(l, now, "analyzer sent %s %s: %s", pulse_aw_type_name(f->h.type),
		     pulse_aw_err_name(s.code), s.text);
		return;
	}
	default:
		l->st.bad_frames_rx++;
		return;
	}
}

/* Writes ctl (whole) and queued data, at frame boundaries. 0, or -1 when
 * the connection failed (already handled). */
static int do_write(struct alink *l, uint64_t now, uint64_t deadline)
{
	while (pulse_mono_ns() < deadline || deadline == 0) {
		struct buf *b;
		int data;
		if (buf_used(&l->ctl) && l->head_sent == 0) {
			b = &l->ctl;
			data = 0;
		} else if (l->state == L_READY && buf_used(&l->q)) {
			b = &l->q;
			data = 1;
		} else {
			return 0;
		}
		/* data: the head frame's first head_sent bytes are out already */
		size_t skip = data ? l->head_sent : 0;
		size_t want = buf_used(b) - skip;
		if (want > (1u << 20))
			want = 1u << 20;
		if (data && l->head_sent && buf_used(&l->ctl)) {
			/* control frames wait: finish this frame only, then send them */
			size_t rest = PULSE_AW_HDR_LEN + pulse_get_u32(b->p + b->off + 8) - l->head_sent;
			if (want > rest)
				want = rest;
		}
		ssize_t n = send(l->fd, b->p + b->off + skip, want, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			fail(l, now, "send: %s", strerror(errno));
			return -1;
		}
		l->st.bytes_sent += (uint64_t)n;
		if (n > 0)
			l->t_tx = pulse_mono_ns();
		if (!data) {
			buf_consume(b, (size_t)n); /* ctl frames are sent whole before data resumes */
			continue;
		}
		size_t left = (size_t)n;
		while (left) {
			size_t total = PULSE_AW_HDR_LEN + pulse_get_u32(b->p + b->off + 8);
			size_t rest = total - l->head_sent;
			if (left >= rest) {
				if (b->p[b->off + 5] == PULSE_AW_MAP && l->q_maps)
					l->q_maps--;
				if (b->p[b->off + 5] == PULSE_AW_OPS && l->q_ops)
					l->q_ops--;
				left -= rest;
				l->head_sent = 0;
				buf_consume(b, total);
				l->st.frames_sent++;
			} else {
				l->head_sent += left;
				left = 0;
			}
		}
		if ((size_t)n < want)
			return 0;
		if (deadline == 0)
			deadline = 1; /* one pass only */
	}
	return 0;
}

static int do_read(struct alink *l, uint64_t now, uint64_t deadline)
{
	char err[256];
	while (l->fd >= 0) {
		size_t avail;
		uint8_t *p = pulse_aw_dec_space(&l->dec, &avail);
		if (!p || !avail) {
			fail(l, now, "cannot take more input from the analyzer");
			return -1;
		}
		ssize_t n = recv(l->fd, p, avail, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		if (n <= 0) {
			fail(l, now, "connection closed by the analyzer%s%s", n < 0 ? ": " : "",
			     n < 0 ? strerror(errno) : "");
			return -1;
		}
		pulse_aw_dec_commit(&l->dec, (size_t)n);
		l->t_rx = now;
		struct pulse_aw_frame f;
		int rc;
		while (l->fd >= 0 && (rc = pulse_aw_dec_next(&l->dec, &f, err, sizeof err)) != PULSE_AW_DEC_MORE) {
			if (rc == PULSE_AW_DEC_FATAL) {
				fail(l, now, "analyzer stream broken: %s", err);
				return -1;
			}
			if (rc == PULSE_AW_DEC_BAD) {
				l->st.bad_frames_rx++;
				lg(l, "warn", "frame from the analyzer skipped: %s", err);
				continue;
			}
			on_frame(l, &f, now);
		}
		if (pulse_mono_ns() > deadline)
			return 0;
	}
	return -1;
}

void alink_poll(struct alink *l, uint64_t now)
{
	pthread_mutex_lock(&l->mu);
	uint64_t deadline = pulse_mono_ns() + (uint64_t)l->cfg.io_budget_us * 1000u;
	flush_batch(l);
	if (l->state == L_DOWN && now >= l->t_retry)
		start_connect(l, now);
	if (l->state == L_CONNECTING) {
		struct pollfd pf = {.fd = l->fd, .events = POLLOUT};
		if (poll(&pf, 1, 0) > 0) {
			int e = 0;
			socklen_t el = sizeof e;
			getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &e, &el);
			if (e)
				fail(l, now, "connect: %s", strerror(e));
			else
				send_hello(l, now);
		} else if (now - l->t_state > (uint64_t)l->cfg.connect_timeout_ms * 1000000u) {
			fail(l, now, "connect: no answer within %" PRIu32 " ms", l->cfg.connect_timeout_ms);
		}
	}
	if (l->state == L_HELLO_SENT &&
	    now - l->t_state > (uint64_t)l->cfg.connect_timeout_ms * 1000000u)
		fail(l, now, "no HELLO_ACK within %" PRIu32 " ms", l->cfg.connect_timeout_ms);
	if (l->state == L_READY && now - l->t_hb >= (uint64_t)l->hb_ms * 1000000u)
		send_heartbeat(l, now);
	if (l->state >= L_HELLO_SENT) {
		if (do_write(l, now, deadline) == 0 && l->fd >= 0)
			do_read(l, now, deadline);
		if (l->fd >= 0 && l->state == L_READY)
			do_write(l, now, deadline); /* heartbeats answered, the map, more data */
	}
	/* after reading what is there: a caller that polls rarely is not the
	 * analyzer's silence. The analyzer answers every HEARTBEAT. */
	/* Silent: a HEARTBEAT unanswered and nothing received for the limit,
	 * while no data went out either (an analyzer that reads our backlog
	 * slowly answers late, but it is alive: what we send moves). */
	uint64_t lim = (uint64_t)l->hb_ms * 3000000u + 2000000000u;
	if (l->state == L_READY && l->hb_sent_mono && now - l->hb_sent_mono > lim &&
	    now - l->t_rx > lim && (!buf_used(&l->q) || now - l->t_tx > lim))
		fail(l, now, "analyzer silent: no answer to a HEARTBEAT for %" PRIu64 " ms",
		     (now - l->hb_sent_mono) / 1000000u);
	l->st.queued_bytes = (uint32_t)buf_used(&l->q);
	pthread_mutex_unlock(&l->mu);
}

int alink_fd(const struct alink *l, short *events)
{
	*events = 0;
	if (l->fd < 0)
		return -1;
	*events = POLLIN;
	if (l->state == L_CONNECTING || buf_used(&l->ctl) || (l->state == L_READY && buf_used(&l->q)))
		*events |= POLLOUT;
	return l->fd;
}

void alink_get_stats(struct alink *l, struct alink_stats *st)
{
	pthread_mutex_lock(&l->mu);
	*st = l->st;
	st->queued_bytes = (uint32_t)buf_used(&l->q);
	pthread_mutex_unlock(&l->mu);
}

struct alink *alink_new(const struct alink_cfg *cfg, char *err, size_t errlen)
{
	struct alink *l = calloc(1, sizeof *l);
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->cfg = *cfg;
	l->fd = -1;
	if (!l->cfg.queue_cap)
		l->cfg.queue_cap = 16u << 20;
	if (!l->cfg.batch_bytes || l->cfg.batch_bytes > PULSE_AW_MAX_PAYLOAD)
		l->cfg.batch_bytes = 64u << 10;
	if (!l->cfg.backoff_min_ms)
		l->cfg.backoff_min_ms = 100;
	if (l->cfg.backoff_max_ms < l->cfg.backoff_min_ms)
		l->cfg.backoff_max_ms = l->cfg.backoff_min_ms > 5000 ? l->cfg.backoff_min_ms : 5000;
	if (!l->cfg.connect_timeout_ms)
		l->cfg.connect_timeout_ms = 3000;
	if (!l->cfg.io_budget_us)
		l->cfg.io_budget_us = 2000;
	if (!l->cfg.max_version || l->cfg.max_version > PULSE_AW_VERSION_MAX)
		l->cfg.max_version = PULSE_AW_VERSION_MAX;
	l->backoff_ms = l->cfg.backoff_min_ms;
	snprintf(l->job, sizeof l->job, "%s", cfg->job ? cfg->job : "default");
	if (cfg->host)
		snprintf(l->host, sizeof l->host, "%s", cfg->host);
	else if (gethostname(l->host, sizeof l->host - 1))
		snprintf(l->host, sizeof l->host, "unknown");
	snprintf(l->agent, sizeof l->agent, "%s", cfg->agent_version ? cfg->agent_version : "pulse-host-agent");
	snprintf(l->addr, sizeof l->addr, "%s", cfg->addr ? cfg->addr : "(none)");
	/* the HELLO must be valid: check the names now, not at each connect */
	struct pulse_aw_hello h = {.version_min = 1, .version_max = 1};
	snprintf(h.job, sizeof h.job, "%s", l->job);
	snprintf(h.host, sizeof h.host, "%s", l->host);
	snprintf(h.agent, sizeof h.agent, "%s", l->agent);
	uint8_t hb[20 + 2 * PULSE_AW_NAME_LEN + PULSE_AW_TEXT_LEN];
	if ((cfg->job && strlen(cfg->job) >= PULSE_AW_NAME_LEN) ||
	    (cfg->host && strlen(cfg->host) >= PULSE_AW_NAME_LEN) ||
	    !pulse_aw_hello_encode(hb, sizeof hb, &h)) {
		snprintf(err, errlen,
			 "job '%s' / host '%s' / agent version: names are 1-63 characters of "
			 "[A-Za-z0-9._:@+-], the version printable text",
			 l->job, l->host);
		free(l);
		return NULL;
	}
	char hostpart[256], port[16];
	const char *a = cfg->addr;
	const char *colon = a ? (a[0] == '[' ? strstr(a, "]:") : strrchr(a, ':')) : NULL;
	if (!a || !colon || colon == a) {
		snprintf(err, errlen, "analyzer address '%s': want HOST:PORT or [IPV6]:PORT", l->addr);
		free(l);
		return NULL;
	}
	size_t hl = (size_t)(colon - a) - (a[0] == '[' ? 1 : 0);
	const char *pp = colon + (a[0] == '[' ? 2 : 1);
	if (hl >= sizeof hostpart || !*pp || strlen(pp) >= sizeof port ||
	    strspn(pp, "0123456789") != strlen(pp) || atol(pp) < 1 || atol(pp) > 65535) {
		snprintf(err, errlen, "analyzer address '%s': want HOST:PORT with a port 1..65535", l->addr);
		free(l);
		return NULL;
	}
	memcpy(hostpart, a + (a[0] == '[' ? 1 : 0), hl);
	hostpart[hl] = 0;
	snprintf(port, sizeof port, "%s", pp);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(hostpart, port, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "analyzer address '%s': %s", l->addr, gai_strerror(rc));
		free(l);
		return NULL;
	}
	for (struct addrinfo *ai = res; ai && l->naddrs < MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof l->addrs[0])
			continue;
		memcpy(&l->addrs[l->naddrs], ai->ai_addr, ai->ai_addrlen);
		l->alens[l->naddrs++] = ai->ai_addrlen;
	}
	freeaddrinfo(res);
	if (!l->naddrs) {
		snprintf(err, errlen, "analyzer address '%s': no usable address", l->addr);
		free(l);
		return NULL;
	}
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE); /* on_join may write lines */
	pthread_mutex_init(&l->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	return l;
}

void alink_close(struct alink *l, uint32_t budget_ms)
{
	if (!l)
		return;
	uint64_t end = pulse_mono_ns() + (uint64_t)budget_ms * 1000000u;
	pthread_mutex_lock(&l->mu);
	flush_batch(l);
	pthread_mutex_unlock(&l->mu);
	int bye = 0;
	for (;;) {
		uint64_t now = pulse_mono_ns();
		alink_poll(l, now);
		pthread_mutex_lock(&l->mu);
		int ready = l->state == L_READY;
		int idle = ready && !buf_used(&l->q) && !buf_used(&l->ctl) && l->head_sent == 0;
		if (idle && !bye) {
			struct pulse_aw_status s = {.code = PULSE_AW_E_NONE};
			snprintf(s.text, sizeof s.text, "agent stopping");
			uint8_t b[4 + PULSE_AW_TEXT_LEN];
			size_t n = pulse_aw_status_encode(b, sizeof b, &s);
			put_frame(l, &l->ctl, PULSE_AW_BYE, b, n);
			bye = 1;
			do_write(l, now, 0);
			idle = !buf_used(&l->ctl);
		}
		int fd = l->fd;
		short ev = 0;
		alink_fd(l, &ev);
		pthread_mutex_unlock(&l->mu);
		if ((bye && idle) || now >= end)
			break;
		if (fd >= 0) {
			struct pollfd pf = {.fd = fd, .events = ev};
			poll(&pf, 1, 10);
		} else {
			struct timespec ts = {0, 10000000};
			nanosleep(&ts, NULL);
		}
	}
	size_t left = buf_used(&l->q);
	if (left)
		lg(l, "warn", "closing with %zu bytes of frames not sent (%s)", left,
		   l->state == L_READY ? "the analyzer reads slowly" : "not connected");
	if (l->fd >= 0) {
		/* Half-close and read until the analyzer closes: closing a socket
		 * with unread input (its HEARTBEAT answers) sends a reset, which
		 * can destroy our last frames and the BYE before it reads them. */
		shutdown(l->fd, SHUT_WR);
		for (;;) {
			uint64_t now = pulse_mono_ns();
			if (now >= end)
				break;
			struct pollfd pf = {.fd = l->fd, .events = POLLIN};
			int ms = (int)((end - now) / 1000000u) + 1;
			if (poll(&pf, 1, ms > 50 ? 50 : ms) <= 0)
				continue;
			uint8_t junk[4096];
			ssize_t n = recv(l->fd, junk, sizeof junk, MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				break;
		}
		/* out of time: with nothing unread, close() still hands what is in
		 * the socket buffer to the analyzer (no reset) */
		uint8_t junk[4096];
		while (recv(l->fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
			;
		close(l->fd);
	}
	pulse_aw_dec_free(&l->dec);
	free(l->q.p);
	free(l->ctl.p);
	free(l->batch.p);
	free(l->map);
	free(l->conv);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* ---- tee ---- */

static void tee_line(void *ctx, const char *line, size_t len)
{
	struct alink *l = ctx;
	char type[8];
	/* "op" lines whose records the caller sends itself (records_direct) */
	if (l->cfg.records_direct && !pulse_aw_line_type(line, len, type, sizeof type) && !strcmp(type, "op"))
		return;
	alink_line(l, line, len);
}

static void tee_oversize(void *ctx)
{
	struct alink *l = ctx;
	pthread_mutex_lock(&l->mu);
	l->st.oversize_dropped++;
	pthread_mutex_unlock(&l->mu);
	lg(l, "warn", "a line over %u bytes not sent", PULSE_AW_MAX_PAYLOAD);
}

FILE *alink_tee(struct alink *l, FILE *inner, int close_inner)
{
	static const struct line_tee_ops ops = {.line = tee_line, .oversize = tee_oversize};
	return line_tee_open(inner, close_inner, PULSE_AW_MAX_PAYLOAD, &ops, l);
}
