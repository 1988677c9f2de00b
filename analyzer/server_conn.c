/* pulse-analyzer's TCP service (analyzer/server.h): connections and the
 * loop. Listening and accepting, each agent connection's reading, decoding
 * and output buffer, the per-connection protocol state machine (HELLO,
 * data frames into an_ingest, MAP into the join, BYE), frame-rate
 * throttling, clock skew, and the turn of the loop (an_srv_step) with its
 * timeouts, ticks and the delayed join. Wire format:
 * include/pulse/analyzer_wire.h, analyzer/PROTOCOL.md. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "analyzer.h"
#include "pulse/analyzer_wire.h"
#include "pulse/clock_ns.h"
#include "server_int.h"

void srv_log(struct an_srv *s, const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	uint64_t t = pulse_real_ns();
	time_t sec = (time_t)(t / 1000000000u);
	struct tm tm;
	gmtime_r(&sec, &tm);
	fprintf(s->log, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ pulse-analyzer %s: %s\n", tm.tm_year + 1900,
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		(unsigned)(t % 1000000000u / 1000000u), level, msg);
	fflush(s->log);
}

/* Rate limit for one connection's bad-input lines. */
static int conn_logok(struct conn *c)
{
	c->nlog++;
	return c->nlog <= LOG_FIRST || c->nlog % LOG_EVERY == 0;
}

static const char *cname(const struct conn *c)
{
	return c->host ? c->host->name : "(no HELLO yet)";
}

/* ---- listening ---- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* "ADDR:PORT", "[V6]:PORT", ":PORT", "*:PORT", "PORT" */
static int split_addr(const char *in, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon;
	host[0] = 0;
	if (in[0] == '[') {
		const char *rb = strchr(in, ']');
		if (!rb || rb[1] != ':' || (size_t)(rb - in - 1) >= hostlen)
			return -1;
		memcpy(host, in + 1, (size_t)(rb - in - 1));
		host[rb - in - 1] = 0;
		colon = rb + 1;
	} else if ((colon = strrchr(in, ':'))) {
		if ((size_t)(colon - in) >= hostlen)
			return -1;
		memcpy(host, in, (size_t)(colon - in));
		host[colon - in] = 0;
		if (!strcmp(host, "*"))
			host[0] = 0;
	} else {
		colon = in - 1; /* just a port */
	}
	const char *p = colon + 1;
	if (!*p || strlen(p) >= portlen || strspn(p, "0123456789") != strlen(p) || atol(p) > 65535)
		return -1;
	strcpy(port, p);
	return 0;
}

static int listen_on(struct an_srv *s, const char *addr, char *err, size_t errlen)
{
	char host[256], port[16];
	if (!addr || split_addr(addr, host, sizeof host, port, sizeof port)) {
		snprintf(err, errlen, "--listen %s: want ADDR:PORT, [IPV6]:PORT or :PORT",
			 addr ? addr : "(none)");
		return -1;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host[0] ? host : "::", port, &hints, &res);
	if (rc && !host[0]) { /* no IPv6 here: any IPv4 address */
		rc = getaddrinfo("0.0.0.0", port, &hints, &res);
	}
	if (rc) {
		snprintf(err, errlen, "--listen %s: %s", addr, gai_strerror(rc));
		return -1;
	}
	int last = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int one = 1, zero = 0;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (ai->ai_family == AF_INET6 && !host[0]) /* any address: IPv4 too */
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128) || set_nonblock(fd)) {
			last = errno;
			close(fd);
			continue;
		}
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		getsockname(fd, (struct sockaddr *)&ss, &sl);
		s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							 : ((struct sockaddr_in *)&ss)->sin_port);
		s->lfd = fd;
		freeaddrinfo(res);
		return 0;
	}
	freeaddrinfo(res);
	snprintf(err, errlen, "--listen %s: %s", addr, strerror(last ? last : EADDRNOTAVAIL));
	return -1;
}

/* ---- hosts ---- */

static struct host_ent *host_get(struct an_srv *s, const char *name)
{
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, name))
			return &s->hosts[i];
	if (s->nhosts == MAX_HOSTS)
		return NULL;
	struct host_ent *h = &s->hosts[s->nhosts++];
	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", name);
	return h;
}

static void host_free(struct host_ent *h)
{
	free(h->qps);
	free(h->comms);
	free(h->last_join);
	h->qps = NULL;
	h->comms = NULL;
	h->last_join = NULL;
}

/* ---- output ---- */

static void conn_kill(struct an_srv *s, struct conn *c);

static int conn_flush(struct an_srv *s, struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_off += (size_t)n;
			s->st.bytes_out += (uint64_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 0;
		/* the agent is gone or going (e.g. it sent BYE and closed while our
		 * answer to its last HEARTBEAT was on the way): nothing more is
		 * sent, what it sent is still read up to the end */
		if (!c->wdead && c->state != C_DEAD && conn_logok(c))
			srv_log(s, "info", "agent %s [%s]: send failed: %s; reading what it sent, then closing",
			     cname(c), c->peer, n < 0 ? strerror(errno) : "closed");
		c->wdead = 1;
		c->out_off = c->out_len = 0;
		return -1;
	}
	c->out_off = c->out_len = 0;
	if (c->state == C_LINGER && !c->wshut) {
		shutdown(c->fd, SHUT_WR);
		c->wshut = 1;
	}
	return 0;
}

int srv_conn_send(struct an_srv *s, struct conn *c, uint8_t type, const void *p, size_t len)
{
	if (!ACTIVE(c) || c->wdead)
		return -1;
	size_t need = PULSE_AW_HDR_LEN + len;
	if (c->out_len - c->out_off + need > s->cfg.out_cap) {
		s->st.out_overflows++;
		srv_log(s, "warn",
		     "agent %s [%s]: output over its cap of %" PRIu32 " bytes (the agent does not read); "
		     "closing",
		     cname(c), c->peer, s->cfg.out_cap);
		conn_kill(s, c);
		return -1;
	}
	if (c->out_off && c->out_alloc - c->out_len < need) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_alloc - c->out_len < need) {
		size_t na = c->out_alloc ? c->out_alloc : 4096;
		while (na - c->out_len < need)
			na *= 2;
		uint8_t *nb = realloc(c->out, na);
		if (!nb) {
			srv_log(s, "error", "agent %s: out of memory for output; closing", cname(c));
			conn_kill(s, c);
			return -1;
		}
		c->out = nb;
		c->out_alloc = na;
	}
	uint16_t ver = c->version ? c->version : PULSE_AW_VERSION_MIN;
	if (type == PULSE_AW_HELLO_ACK)
		ver = PULSE_AW_VERSION_MIN;
	size_t n = pulse_aw_frame(c->out + c->out_len, c->out_alloc - c->out_len, (uint8_t)ver, type,
				  c->seq++, p, len);
	if (!n)
		return -1;
	c->out_len += n;
	s->st.frames_out++;
	return conn_flush(s, c);
}

static void conn_error(struct an_srv *s, struct conn *c, uint32_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* ERROR to the agent (best effort, nonblocking), then close. */
static void conn_error(struct an_srv *s, struct conn *c, uint32_t code, const char *fmt, ...)
{
	struct pulse_aw_status st = {.code = code};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st.text, sizeof st.text, fmt, ap);
	va_end(ap);
	uint8_t b[4 + PULSE_AW_TEXT_LEN];
	size_t n = pulse_aw_status_encode(b, sizeof b, &st);
	if (!ACTIVE(c))
		return;
	if (srv_conn_send(s, c, PULSE_AW_ERROR, b, n) || c->wdead) {
		conn_kill(s, c);
		return;
	}
	/* linger: it reads the ERROR, we discard what it still sends */
	if (c->state == C_READY && s->st.agents_now)
		s->st.agents_now--;
	if (c->host && c->host->conn == c) {
		c->host->conn = NULL;
		c->host->t_gone = pulse_mono_ns();
	}
	c->state = C_LINGER;
	c->linger_until = pulse_mono_ns() + LINGER_NS;
	conn_flush(s, c);
}

/* A lingering connection's input: discarded; its end or an error closes. */
static void linger_read(struct an_srv *s, struct conn *c)
{
	uint8_t junk[16384];
	for (int i = 0; i < 16 && c->state == C_LINGER; i++) {
		ssize_t n = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		conn_kill(s, c);
	}
}

static void conn_kill(struct an_srv *s, struct conn *c)
{
	if (c->state == C_DEAD)
		return;
	if (c->state == C_READY && s->st.agents_now)
		s->st.agents_now--;
	c->state = C_DEAD;
	if (c->host && c->host->conn == c) {
		c->host->conn = NULL;
		c->host->t_gone = pulse_mono_ns();
	}
	shutdown(c->fd, SHUT_RDWR);
	close(c->fd);
	c->fd = -1;
	s->st.closed++;
}

/* ---- clock skew ---- */

/* A sample is the agent's realtime in a HELLO/HEARTBEAT minus ours when we
 * read it: the true offset plus nothing, minus the frame's delay (network,
 * our backlog). So a sample is a lower bound of the offset: an agent ahead
 * beyond the bound is certain from one sample; one behind only when the
 * best (largest) of the last 3 samples says so, so that a backlog on our
 * side does not read as skew. */
static void check_skew(struct an_srv *s, struct conn *c, uint64_t agent_rt, const char *what)
{
	uint64_t now = pulse_real_ns();
	int64_t sample = (int64_t)(agent_rt - now);
	struct host_ent *h = c->host;
	h->skew_s[h->nskew++ % 4] = sample;
	uint32_t n = h->nskew < 4 ? h->nskew : 4;
	uint32_t recent = n < 3 ? n : 3;
	int64_t best = INT64_MIN;
	for (uint32_t i = 0; i < recent; i++) {
		int64_t v = h->skew_s[(h->nskew - 1 - i) % 4];
		if (v > best)
			best = v;
	}
	int64_t bound = (int64_t)s->cfg.max_skew_ns;
	int beyond = 1;
	int64_t skew = sample;
	if (sample <= bound) {
		if (recent >= 3 && best < -bound)
			skew = best;
		else
			beyond = 0;
	}
	h->skew_ns = skew;
	uint64_t mag = skew < 0 ? (uint64_t)-skew : (uint64_t)skew;
	uint64_t maxmag = s->st.max_skew_ns < 0 ? (uint64_t)-s->st.max_skew_ns : (uint64_t)s->st.max_skew_ns;
	if (mag > maxmag && (beyond || skew > 0))
		s->st.max_skew_ns = skew;
	if (beyond) {
		s->st.skew_events++;
		if (!h->skewed)
			srv_log(s, "warn",
			     "agent %s: clock skew %+.3f ms (its %s realtime against ours) beyond the bound of "
			     "%.3f ms; %s",
			     h->name, (double)skew / 1e6, what, (double)s->cfg.max_skew_ns / 1e6,
			     s->cfg.drop_skewed ? "its data is dropped until it is back within"
						: "its data is kept, cross-host times are off by that much");
		h->skewed = 1;
	} else if (h->skewed) {
		srv_log(s, "info", "agent %s: clock skew %+.3f ms, back within the bound", h->name,
		     (double)skew / 1e6);
		h->skewed = 0;
	}
}

/* ---- frames from an agent ---- */

/* What the state made of one line or record (an_ingest's return), counted
 * and, within the per-connection bound, logged. */
static void count_line(struct an_srv *s, struct conn *c, int rc, const char *what, const char *err)
{
	if (rc == 0) {
		s->st.lines_used++;
	} else if (rc > 0) {
		s->st.lines_ignored++;
	} else {
		s->st.lines_rejected++;
		if (conn_logok(c))
			srv_log(s, "warn", "agent %s: %s line rejected by the analyzer: %s", c->host->name,
				what, err[0] ? err : "(no reason)");
	}
}

static void ingest_lines(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	size_t pos = 0, ll;
	const char *line;
	uint64_t now = pulse_mono_ns();
	while (pulse_aw_lines_next(f->payload, f->h.length, &pos, &line, &ll)) {
		s->st.lines++;
		c->lines++;
		if (pulse_wm_push(s->wm, c->host->name, line, ll, now)) {
			s->st.lines_rejected++;
			if (conn_logok(c))
				srv_log(s, "warn", "agent %s: out of memory holding a line for the watermark; dropped",
					c->host->name);
		}
	}
}

/* OPS (protocol version 2): binary records, through the watermark like the
 * JSON lines they replace (decoded here for their data-time key, and again
 * when released); counted as lines. */
static void ingest_ops(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	char err[256];
	size_t pos = 0, rl;
	const uint8_t *rec;
	int rc;
	uint64_t now = pulse_mono_ns();
	while ((rc = pulse_aw_ops_next(f->payload, f->h.length, &pos, &rec, &rl, err, sizeof err)) == 1) {
		s->st.lines++;
		c->lines++;
		err[0] = 0;
		if (pulse_op_record_from_bin(rec, rl, s->rec, err, sizeof err)) {
			count_line(s, c, -1, "OPS record", err);
			continue;
		}
		uint64_t key = s->rec->end_ns > s->rec->call_ns ? s->rec->end_ns : s->rec->call_ns;
		if (pulse_wm_push_rec(s->wm, c->host->name, rec, rl, key, now)) {
			s->st.lines_rejected++;
			if (conn_logok(c))
				srv_log(s, "warn", "agent %s: out of memory holding a record for the watermark; dropped",
					c->host->name);
		}
	}
	if (rc < 0) {
		s->st.bad_payload++;
		if (conn_logok(c))
			srv_log(s, "warn", "agent %s: OPS frame %" PRIu32 ": %s; its other records dropped",
				cname(c), f->h.seq, err);
	}
}

/* What the state made of a line or record the watermark released, counted
 * and, every so often, logged. */
static void count_released(struct an_srv *s, const char *host, const char *what, int rc, const char *err)
{
	if (rc == 0) {
		s->st.lines_used++;
	} else if (rc > 0) {
		s->st.lines_ignored++;
	} else {
		s->st.lines_rejected++;
		if (s->st.lines_rejected <= LOG_FIRST || s->st.lines_rejected % LOG_EVERY == 0)
			srv_log(s, "warn", "agent %s: %s rejected by the analyzer: %s", host, what,
				err[0] ? err : "(no reason)");
	}
}

static void publish_new(struct an_srv *s, int n);

/* The watermark releases a line: into the analyzer. */
static void wm_deliver(void *ctx, const char *host, const char *line, size_t len)
{
	struct an_srv *s = ctx;
	char err[256];
	err[0] = 0;
	count_released(s, host, "line", an_ingest(s->state, host, line, len, err, sizeof err), err);
	/* a poll_end that completed a trigger's evidence: localized now */
	publish_new(s, an_tick_if_settled(s->state));
}

/* The watermark releases a binary record (OPS, or the bus's): into the
 * analyzer's record entry point. */
static void wm_deliver_rec(void *ctx, const char *host, const void *rec, size_t len)
{
	struct an_srv *s = ctx;
	char err[256];
	err[0] = 0;
	int rc = pulse_op_record_from_bin(rec, len, s->rec, err, sizeof err);
	if (rc == 0)
		rc = an_ingest_op(s->state, host, s->rec, err, sizeof err);
	count_released(s, host, "record", rc, err);
}

/* the last n diagnoses are new: out to the bus, the series fetch and the log */
static void publish_new(struct an_srv *s, int n)
{
	if (n <= 0)
		return;
	s->st.diagnoses += (uint64_t)n;
	uint32_t total = 0;
	const struct an_diagnosis *d = an_diagnoses(s->state, &total);
	for (uint32_t i = total >= (uint32_t)n ? total - (uint32_t)n : 0; d && i < total; i++) {
		srv_bus_diagnosis(s, &d[i]);
		srv_series_request(s, i);
		if (s->cfg.on_diagnosis)
			s->cfg.on_diagnosis(s->cfg.ctx, &d[i]);
		else
			srv_log(s, "info", "diagnosis (%s): %s", d[i].localizer ? d[i].localizer : "?",
			     d[i].why);
	}
}

static void wm_tick(void *ctx, uint64_t now_ns)
{
	struct an_srv *s = ctx;
	s->st.ticks++;
	publish_new(s, an_tick(s->state, now_ns));
}

static void wm_stats(struct an_srv *s)
{
	struct pulse_wm_stats w;
	pulse_wm_stats(s->wm, &w);
	s->st.wm_late = w.late;
	s->st.wm_held_max = w.held_max;
	s->st.wm_silent = w.silent_events;
}

/* The frame-rate bound: a token bucket per connection. Each data frame
 * takes a token, on credit if need be (frames already read are never
 * dropped); a connection without tokens is not read until the bucket
 * refills, so a flooding agent is slowed by TCP's own flow control (its
 * link queues, and drops and counts at its bound) and the others are
 * served as usual. Throttled without a break for flood_close_s: ERROR flood
 * and closed. */
static double bucket_depth(const struct an_srv *s)
{
	return s->cfg.flood_burst ? s->cfg.flood_burst : 2.0 * s->cfg.max_frames_per_s;
}

static void refill(struct an_srv *s, struct conn *c, uint64_t now)
{
	if (!s->cfg.max_frames_per_s)
		return;
	c->tokens += (double)(now - c->t_tokens) * 1e-9 * s->cfg.max_frames_per_s;
	if (c->tokens > bucket_depth(s))
		c->tokens = bucket_depth(s);
	c->t_tokens = now;
}

static void take_token(struct an_srv *s, struct conn *c)
{
	if (!s->cfg.max_frames_per_s)
		return;
	c->tokens -= 1;
	if (c->tokens >= 0)
		return;
	c->throttled_frames++;
	if (!c->throttled_since) {
		c->throttled_since = c->throttled_last = pulse_mono_ns();
		s->st.flood_throttled++;
		srv_log(s, "warn",
		     "agent %s: over %" PRIu32 " frames/s: not reading from it until it is back "
		     "under (it queues, and drops and counts at its own bound)",
		     cname(c), s->cfg.max_frames_per_s);
	}
}

/* Called every loop turn: 1 when the connection may be read now. An
 * episode lasts until the connection has stayed under its rate for 1 s. */
static int throttle_check(struct an_srv *s, struct conn *c, uint64_t now)
{
	refill(s, c, now);
	if (!s->cfg.max_frames_per_s || c->tokens >= 1) {
		if (c->throttled_since && now - c->throttled_last > 1000000000u) {
			srv_log(s, "info",
			     "agent %s: back under %" PRIu32 " frames/s (over it for %.1f s, %" PRIu64
			     " frames over)",
			     cname(c), s->cfg.max_frames_per_s,
			     (double)(c->throttled_last - c->throttled_since) / 1e9, c->throttled_frames);
			c->throttled_since = 0;
			c->throttled_frames = 0;
		}
		return 1;
	}
	c->throttled_last = now;
	if (s->cfg.flood_close_s && c->throttled_since &&
	    now - c->throttled_since >= (uint64_t)s->cfg.flood_close_s * 1000000000u) {
		s->st.flood_closes++;
		srv_log(s, "warn", "agent %s: over %" PRIu32 " frames/s for %" PRIu32 " s; closing with ERROR flood",
		     cname(c), s->cfg.max_frames_per_s, s->cfg.flood_close_s);
		conn_error(s, c, PULSE_AW_E_FLOOD, "over %" PRIu32 " frames/s for %" PRIu32 " s",
			   s->cfg.max_frames_per_s, s->cfg.flood_close_s);
	}
	return 0;
}

static void on_hello(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	struct pulse_aw_hello h;
	char err[256];
	if (pulse_aw_hello_decode(f->payload, f->h.length, &h, err, sizeof err)) {
		s->st.hello_bad++;
		srv_log(s, "warn", "connection [%s]: bad HELLO: %s; closing", c->peer, err);
		conn_error(s, c, PULSE_AW_E_MALFORMED, "%s", err);
		return;
	}
	uint16_t lo = h.version_min > PULSE_AW_VERSION_MIN ? h.version_min : PULSE_AW_VERSION_MIN;
	uint16_t mine = s->cfg.max_version && s->cfg.max_version < PULSE_AW_VERSION_MAX
				? (uint16_t)s->cfg.max_version : PULSE_AW_VERSION_MAX;
	uint16_t hi = h.version_max < mine ? h.version_max : mine;
	if (lo > hi) {
		s->st.hello_version++;
		srv_log(s, "warn",
		     "agent %s [%s]: speaks protocol versions %u..%u, this analyzer %d..%u; closing",
		     h.host, c->peer, h.version_min, h.version_max, PULSE_AW_VERSION_MIN, mine);
		conn_error(s, c, PULSE_AW_E_VERSION, "analyzer speaks protocol versions %d..%u, agent %u..%u",
			   PULSE_AW_VERSION_MIN, mine, h.version_min, h.version_max);
		return;
	}
	if (!s->job[0])
		snprintf(s->job, sizeof s->job, "%s", h.job);
	if (strcmp(s->job, h.job)) {
		s->st.hello_job++;
		srv_log(s, "warn", "agent %s [%s]: HELLO for job '%s', this analyzer serves '%s'; closing",
		     h.host, c->peer, h.job, s->job);
		conn_error(s, c, PULSE_AW_E_JOB, "this analyzer serves job '%s'", s->job);
		return;
	}
	struct host_ent *he = host_get(s, h.host);
	if (!he) {
		srv_log(s, "warn", "agent %s [%s]: %d hosts known already; closing", h.host, c->peer, MAX_HOSTS);
		conn_error(s, c, PULSE_AW_E_FULL, "too many hosts");
		return;
	}
	if (he->conn && he->conn != c) {
		s->st.replaced++;
		srv_log(s, "warn", "agent %s: new connection from %s replaces the one from %s", h.host, c->peer,
		     he->conn->peer);
		conn_error(s, he->conn, PULSE_AW_E_REPLACED, "a newer connection for host %s", h.host);
	}
	if (he->t_gone && !he->conn) {
		struct pulse_wm_stats w;
		pulse_wm_stats(s->wm, &w);
		srv_log(s, "warn", "agent %s reconnected %.1f s after its connection ended: a gap in its data "
				"(what its agent did not queue is missing; the analysis goes on at data time %.3f s)",
			h.host, (double)(pulse_mono_ns() - he->t_gone) / 1e9, (double)w.mark_ns / 1e9);
	}
	he->conn = c;
	c->host = he;
	c->version = hi;
	if (!s->st.hellos)
		pulse_wm_hold_until(s->wm, pulse_mono_ns() + (uint64_t)s->cfg.start_grace_ms * 1000000u);
	pulse_wm_host(s->wm, he->name, pulse_mono_ns());
	c->state = C_READY;
	s->st.hellos++;
	if (++s->st.agents_now > s->st.agents_max)
		s->st.agents_max = s->st.agents_now;
	he->nskew = 0;
	free(he->last_join); /* a new connection gets the whole join again */
	he->last_join = NULL;
	struct pulse_aw_hello_ack a = {.version = hi, .max_payload = s->cfg.max_payload,
				       .heartbeat_ms = s->cfg.heartbeat_ms, .realtime_ns = pulse_real_ns()};
	uint8_t b[PULSE_AW_HELLO_ACK_LEN];
	pulse_aw_hello_ack_encode(b, sizeof b, &a);
	if (srv_conn_send(s, c, PULSE_AW_HELLO_ACK, b, sizeof b))
		return;
	srv_log(s, "info", "agent %s connected from %s (job %s, %s, protocol %u)", h.host, c->peer, h.job,
	     h.agent[0] ? h.agent : "agent version not given", hi);
	check_skew(s, c, h.realtime_ns, "HELLO");
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (s->hosts[i].have_map) {
			s->join_due = pulse_mono_ns() + (uint64_t)s->cfg.join_delay_ms * 1000000u;
			break;
		}
}

static void on_frame(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	char err[256];
	uint8_t t = f->h.type;
	s->st.frames_in++;
	c->frames++;
	if (!(pulse_aw_type_senders(t) & PULSE_AW_FROM_AGENT)) {
		s->st.protocol_errors++;
		if (conn_logok(c))
			srv_log(s, "warn", "agent %s [%s]: %s frame is the analyzer's to send; dropped", cname(c),
			     c->peer, pulse_aw_type_name(t));
		return;
	}
	if (c->state == C_NEW) {
		if (t != PULSE_AW_HELLO) {
			s->st.protocol_errors++;
			srv_log(s, "warn", "connection [%s]: %s before HELLO; closing", c->peer,
			     pulse_aw_type_name(t));
			conn_error(s, c, PULSE_AW_E_PROTOCOL, "%s before HELLO", pulse_aw_type_name(t));
			return;
		}
		on_hello(s, c, f);
		return;
	}
	if (t == PULSE_AW_HELLO) {
		s->st.protocol_errors++;
		if (conn_logok(c))
			srv_log(s, "warn", "agent %s: second HELLO; dropped", cname(c));
		return;
	}
	/* a frame carries the version that defined its type, at most the
	 * connection's (include/pulse/analyzer_wire.h) */
	if (f->h.version < pulse_aw_type_since(t) || f->h.version > c->version) {
		s->st.bad_frames++;
		if (conn_logok(c))
			srv_log(s, "warn", "agent %s: %s frame of version %u, the connection speaks %u; dropped",
			     cname(c), pulse_aw_type_name(t), f->h.version, c->version);
		return;
	}
	switch (t) {
	case PULSE_AW_OP:
	case PULSE_AW_CALLS:
	case PULSE_AW_MAP:
	case PULSE_AW_LINES: {
		take_token(s, c);
		int n = pulse_aw_lines_check(t, f->payload, f->h.length, err, sizeof err);
		if (n < 0) {
			s->st.bad_payload++;
			if (conn_logok(c))
				srv_log(s, "warn", "agent %s: %s frame %" PRIu32 " dropped: %s", cname(c),
				     pulse_aw_type_name(t), f->h.seq, err);
			return;
		}
		if (c->host->skewed && s->cfg.drop_skewed) {
			s->st.skew_dropped += (uint64_t)n;
			return;
		}
		if (t == PULSE_AW_MAP) {
			s->st.maps++;
			if (srv_parse_map(c->host, (const char *)f->payload, f->h.length, err, sizeof err)) {
				s->st.map_bad++;
				if (conn_logok(c))
					srv_log(s, "warn", "agent %s: map not used for the join: %s", cname(c), err);
			} else {
				s->join_due = pulse_mono_ns() + (uint64_t)s->cfg.join_delay_ms * 1000000u;
			}
		}
		ingest_lines(s, c, f);
		return;
	}
	case PULSE_AW_OPS:
		take_token(s, c);
		if (c->host->skewed && s->cfg.drop_skewed) {
			size_t pos = 0, rl;
			const uint8_t *rec;
			while (pulse_aw_ops_next(f->payload, f->h.length, &pos, &rec, &rl, NULL, 0) == 1)
				s->st.skew_dropped++;
			return;
		}
		ingest_ops(s, c, f);
		return;
	case PULSE_AW_SERIES:
		srv_series_answer(s, c, f);
		return;
	case PULSE_AW_HEARTBEAT: {
		struct pulse_aw_heartbeat hb;
		if (pulse_aw_heartbeat_decode(f->payload, f->h.length, &hb, err, sizeof err)) {
			s->st.bad_payload++;
			if (conn_logok(c))
				srv_log(s, "warn", "agent %s: %s", cname(c), err);
			return;
		}
		check_skew(s, c, hb.realtime_ns, "HEARTBEAT");
		if (hb.frames_dropped != c->host->agent_dropped) {
			if (hb.frames_dropped > c->host->agent_dropped)
				srv_log(s, "warn", "agent %s reports %" PRIu64 " frame(s) dropped on its side so far",
				     cname(c), hb.frames_dropped);
			s->st.agent_dropped += hb.frames_dropped - c->host->agent_dropped;
			c->host->agent_dropped = hb.frames_dropped;
		}
		struct pulse_aw_heartbeat r = {.realtime_ns = pulse_real_ns(), .frames_sent = s->st.frames_out,
					       .frames_dropped = 0};
		uint8_t b[PULSE_AW_HEARTBEAT_LEN];
		pulse_aw_heartbeat_encode(b, sizeof b, &r);
		srv_conn_send(s, c, PULSE_AW_HEARTBEAT, b, sizeof b);
		return;
	}
	case PULSE_AW_BYE:
	case PULSE_AW_ERROR: {
		struct pulse_aw_status st;
		if (pulse_aw_status_decode(f->payload, f->h.length, &st, err, sizeof err)) {
			s->st.bad_payload++;
			snprintf(st.text, sizeof st.text, "(undecodable: %.200s)", err);
			st.code = 0;
		}
		if (t == PULSE_AW_BYE) {
			s->st.byes++;
			if (c->host)
				pulse_wm_end(s->wm, c->host->name);
			srv_log(s, "info", "agent %s says BYE (%s%s%s) after %" PRIu64 " frames, %" PRIu64 " lines",
			     cname(c), pulse_aw_err_name(st.code), st.text[0] ? ": " : "", st.text, c->frames,
			     c->lines);
		} else {
			s->st.agent_errors++;
			srv_log(s, "warn", "agent %s sent ERROR %s: %s; closing", cname(c),
			     pulse_aw_err_name(st.code), st.text);
		}
		conn_kill(s, c);
		return;
	}
	default:
		return;
	}
}

static void conn_read(struct an_srv *s, struct conn *c)
{
	size_t budget = s->cfg.read_per_turn;
	char err[256];
	while (ACTIVE(c) && budget) {
		if (s->cfg.max_frames_per_s && c->tokens < 1 && c->state == C_READY)
			return; /* throttled: what is read is taken, no more */
		size_t avail;
		uint8_t *p = pulse_aw_dec_space(&c->dec, &avail);
		ssize_t n = 0;
		if (p && avail) {
			n = recv(c->fd, p, avail < budget ? avail : budget, MSG_DONTWAIT);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				return;
			if (n <= 0) {
				size_t pend = pulse_aw_dec_pending(&c->dec);
				if (pend) {
					s->st.mid_frame_disconnects++;
					s->st.mid_frame_bytes += pend;
					srv_log(s, "warn",
					     "agent %s [%s]: disconnected in the middle of a frame (%zu bytes of it "
					     "dropped)",
					     cname(c), c->peer, pend);
				} else if (c->state == C_READY) {
					srv_log(s, "info", "agent %s [%s]: connection closed%s%s", cname(c), c->peer,
					     n < 0 ? ": " : " without BYE", n < 0 ? strerror(errno) : "");
				}
				conn_kill(s, c);
				return;
			}
			pulse_aw_dec_commit(&c->dec, (size_t)n);
			s->st.bytes_in += (uint64_t)n;
			budget -= (size_t)n;
			c->t_rx = pulse_mono_ns();
		} else if (!c->dec.failed) {
			/* no room: a whole frame waits (the loop below takes it) or memory ran out */
		}
		int rc, got = 0;
		struct pulse_aw_frame f;
		while (ACTIVE(c) &&
		       (rc = pulse_aw_dec_next(&c->dec, &f, err, sizeof err)) != PULSE_AW_DEC_MORE) {
			got = 1;
			if (rc == PULSE_AW_DEC_FATAL) {
				int magic = f.h.magic != PULSE_AW_MAGIC;
				if (magic)
					s->st.bad_magic++;
				else
					s->st.oversize++;
				srv_log(s, "warn", "agent %s [%s]: %s; closing", cname(c), c->peer, err);
				conn_error(s, c, magic ? PULSE_AW_E_MALFORMED : PULSE_AW_E_OVERSIZE, "%s", err);
				return;
			}
			if (rc == PULSE_AW_DEC_BAD) {
				s->st.frames_in++;
				s->st.bad_frames++;
				if (c->state == C_NEW) {
					srv_log(s, "warn", "connection [%s]: %s before HELLO; closing", c->peer, err);
					conn_error(s, c,
						   f.h.version != PULSE_AW_VERSION_MIN ? PULSE_AW_E_VERSION
										: PULSE_AW_E_PROTOCOL,
						   "%s", err);
					return;
				}
				if (conn_logok(c))
					srv_log(s, "warn", "agent %s: %s; skipped", cname(c), err);
				continue;
			}
			on_frame(s, c, &f);
		}
		if (!p || !avail) {
			if (!got) { /* could not make room and nothing to take out */
				srv_log(s, "error", "agent %s: no memory for its input; closing", cname(c));
				conn_kill(s, c);
			}
			continue;
		}
		if ((size_t)n < avail)
			return; /* the socket is drained */
	}
}

/* ---- the loop ---- */

static void accept_all(struct an_srv *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				srv_log(s, "warn", "accept: %s", strerror(errno));
			return;
		}
		char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";
		getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, port, sizeof port,
			    NI_NUMERICHOST | NI_NUMERICSERV);
		uint32_t live = 0;
		for (uint32_t i = 0; i < s->nconns; i++)
			live += s->conns[i]->state != C_DEAD;
		if (live >= s->cfg.max_conns) {
			s->st.refused_full++;
			struct pulse_aw_status st = {.code = PULSE_AW_E_FULL};
			snprintf(st.text, sizeof st.text, "analyzer serves %" PRIu32 " agents at most",
				 s->cfg.max_conns);
			uint8_t b[PULSE_AW_HDR_LEN + 4 + PULSE_AW_TEXT_LEN], pl[4 + PULSE_AW_TEXT_LEN];
			size_t pn = pulse_aw_status_encode(pl, sizeof pl, &st);
			size_t n = pulse_aw_frame(b, sizeof b, PULSE_AW_VERSION_MIN, PULSE_AW_ERROR, 0, pl, pn);
			if (send(fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* best effort */
			}
			close(fd);
			srv_log(s, "warn", "connection from %s:%s refused: %" PRIu32 " agents connected already",
			     host, port, live);
			continue;
		}
		if (s->nconns == s->capconns) {
			uint32_t nc = s->capconns ? s->capconns * 2 : 16;
			struct conn **n = realloc(s->conns, nc * sizeof *n);
			if (!n) {
				close(fd);
				continue;
			}
			s->conns = n;
			s->capconns = nc;
		}
		struct conn *c = calloc(1, sizeof *c);
		if (!c || pulse_aw_dec_init(&c->dec, s->cfg.max_payload)) {
			free(c);
			close(fd);
			srv_log(s, "error", "connection from %s:%s: out of memory", host, port);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		c->fd = fd;
		snprintf(c->peer, sizeof c->peer, "%s%s%s:%s", strchr(host, ':') ? "[" : "", host,
			 strchr(host, ':') ? "]" : "", port);
		c->t_accept = c->t_rx = c->t_tokens = pulse_mono_ns();
		c->tokens = bucket_depth(s);
		s->conns[s->nconns++] = c;
		s->st.accepted++;
	}
}

static void conn_free(struct conn *c)
{
	pulse_aw_dec_free(&c->dec);
	free(c->out);
	free(c);
}

static void reap(struct an_srv *s)
{
	uint32_t j = 0;
	for (uint32_t i = 0; i < s->nconns; i++) {
		if (s->conns[i]->state == C_DEAD)
			conn_free(s->conns[i]);
		else
			s->conns[j++] = s->conns[i];
	}
	s->nconns = j;
}

/* The analyzer's clock is the watermark: whatever it allows goes in, and
 * an_tick runs at the data times it reaches (wm_tick). */
static void do_tick(struct an_srv *s)
{
	pulse_wm_advance(s->wm, pulse_mono_ns());
	srv_series_expire(s, 0);
	wm_stats(s);
	srv_metrics_update(s);
}

struct an_srv *an_srv_new(struct an_state *st, const struct an_srv_cfg *cfg, char *err,
			  size_t errlen)
{
	struct an_srv *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->rec = malloc(sizeof *s->rec);
	if (!s->rec) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->state = st;
	s->cfg = *cfg;
	s->log = cfg->log ? cfg->log : stderr;
	s->lfd = -1;
	if (!s->cfg.max_conns)
		s->cfg.max_conns = 256;
	if (!s->cfg.max_payload || s->cfg.max_payload > PULSE_AW_MAX_PAYLOAD)
		s->cfg.max_payload = PULSE_AW_MAX_PAYLOAD;
	if (s->cfg.max_payload < 1024)
		s->cfg.max_payload = 1024;
	if (!s->cfg.out_cap)
		s->cfg.out_cap = 8u << 20;
	if (!s->cfg.read_per_turn)
		s->cfg.read_per_turn = 256u << 10;
	if (!s->cfg.heartbeat_ms)
		s->cfg.heartbeat_ms = 1000;
	if (!s->cfg.tick_ms)
		s->cfg.tick_ms = 200;
	if (cfg->job)
		snprintf(s->job, sizeof s->job, "%s", cfg->job);
	static const struct pulse_wm_ops wm_ops = {.tick = wm_tick, .deliver = wm_deliver,
						   .deliver_rec = wm_deliver_rec};
	s->hosts = calloc(MAX_HOSTS, sizeof *s->hosts);
	s->wm = pulse_wm_new(&wm_ops, s, (uint64_t)s->cfg.silent_ms * 1000000u);
	if (!s->hosts || !s->wm) {
		snprintf(err, errlen, "out of memory");
		pulse_wm_free(s->wm);
		free(s->hosts);
		free(s->rec);
		free(s);
		return NULL;
	}
	if ((!cfg->listen && !cfg->bus) || (cfg->bus && (!cfg->job || !cfg->job[0]))) {
		snprintf(err, errlen, cfg->bus ? "--bus needs the job to consume (--job)"
					      : "nothing to serve: give --listen, --bus or both");
		pulse_wm_free(s->wm);
		free(s->hosts);
		free(s->rec);
		free(s);
		return NULL;
	}
	if (cfg->listen && listen_on(s, cfg->listen, err, errlen)) {
		pulse_wm_free(s->wm);
		free(s->hosts);
		free(s->rec);
		free(s);
		return NULL;
	}
	if (cfg->port_file) {
		FILE *pf = fopen(cfg->port_file, "w");
		if (!pf || fprintf(pf, "%d\n", s->port) < 0 || fclose(pf)) {
			snprintf(err, errlen, "--port-file %s: %s", cfg->port_file, strerror(errno));
			close(s->lfd);
			pulse_wm_free(s->wm);
			free(s->hosts);
			free(s->rec);
			free(s);
			return NULL;
		}
	}
	s->t_start = s->t_tick = pulse_mono_ns();
	if (cfg->listen)
		srv_log(s, "info", "listening on %s (port %d) for host agents, protocol %d..%d%s%s",
			cfg->listen, s->port, PULSE_AW_VERSION_MIN, PULSE_AW_VERSION_MAX,
			s->job[0] ? ", job " : "", s->job);
	if ((cfg->metrics_listen && srv_metrics_start(s, cfg->metrics_listen, err, errlen)) ||
	    (cfg->bus && srv_bus_start(s, err, errlen))) {
		an_srv_free(s);
		return NULL;
	}
	return s;
}

int an_srv_port(const struct an_srv *srv)
{
	return srv->port;
}

void an_srv_stop(struct an_srv *srv)
{
	srv->stop = 1;
}

int an_srv_step(struct an_srv *s, int timeout_ms)
{
	if (s->stop)
		return 0;
	uint32_t n = s->nconns + 1;
	if (n > s->cappfd) {
		struct pollfd *np = realloc(s->pfd, n * 2 * sizeof *np);
		if (!np)
			return 1;
		s->pfd = np;
		s->cappfd = n * 2;
	}
	s->pfd[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
	uint64_t now = pulse_mono_ns();
	uint64_t next = s->t_tick + (uint64_t)s->cfg.tick_ms * 1000000u;
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		int readable = !ACTIVE(c) || throttle_check(s, c, now);
		if (!readable && now + 5000000u < next)
			next = now + 5000000u; /* look again when the bucket has refilled a bit */
		s->pfd[i + 1] = (struct pollfd){
			.fd = c->fd,
			.events = (short)((readable ? POLLIN : 0) | (c->out_off < c->out_len ? POLLOUT : 0))};
	}
	if (s->join_due && s->join_due < next)
		next = s->join_due;
	int wait = timeout_ms;
	if (next <= now)
		wait = 0;
	else if ((next - now) / 1000000u < (uint64_t)wait)
		wait = (int)((next - now) / 1000000u) + 1;
	if (s->bus) {
		/* the bus first: a fetch waits for records as poll waits for the
		 * sockets, so with agents connected too it only peeks */
		int got = srv_bus_poll(s, s->nconns ? 1 : (wait > 100 ? 100 : wait > 0 ? wait : 1));
		if (got >= 0)
			wait = 0; /* the fetch did the waiting, or there is more to do */
	}
	int rc = poll(s->pfd, n, wait);
	if (rc < 0 && errno != EINTR) {
		srv_log(s, "error", "poll: %s", strerror(errno));
		return 0;
	}
	if (rc > 0) {
		if (s->pfd[0].revents & POLLIN)
			accept_all(s);
		for (uint32_t i = 0; i + 1 < n && i < s->nconns; i++) {
			struct conn *c = s->conns[i];
			short re = s->pfd[i + 1].revents;
			if (c->state == C_DEAD || !re)
				continue;
			if (re & POLLOUT)
				conn_flush(s, c);
			if (c->state == C_LINGER && (re & (POLLIN | POLLHUP | POLLERR)))
				linger_read(s, c);
			else if (ACTIVE(c) && (re & (POLLIN | POLLHUP | POLLERR)))
				conn_read(s, c);
		}
	}
	now = pulse_mono_ns();
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (c->state == C_LINGER && now >= c->linger_until) {
			conn_kill(s, c);
		} else if (c->state == C_NEW &&
			   now - c->t_accept > (uint64_t)s->cfg.hello_timeout_ms * 1000000u) {
			s->st.hello_timeouts++;
			srv_log(s, "warn", "connection [%s]: no HELLO within %" PRIu32 " ms; closing", c->peer,
			     s->cfg.hello_timeout_ms);
			conn_error(s, c, PULSE_AW_E_TIMEOUT, "no HELLO within %" PRIu32 " ms",
				   s->cfg.hello_timeout_ms);
		} else if (c->state == C_READY && s->cfg.idle_timeout_ms &&
			   now - c->t_rx > (uint64_t)s->cfg.idle_timeout_ms * 1000000u) {
			s->st.idle_timeouts++;
			srv_log(s, "warn", "agent %s: silent for %" PRIu32 " ms; closing", cname(c),
			     s->cfg.idle_timeout_ms);
			conn_error(s, c, PULSE_AW_E_TIMEOUT, "silent for %" PRIu32 " ms", s->cfg.idle_timeout_ms);
		}
	}
	if (s->join_due && now >= s->join_due) {
		s->join_due = 0;
		srv_run_join(s);
	}
	do_tick(s); /* cheap when the watermark has not moved */
	if (now - s->t_tick >= (uint64_t)s->cfg.tick_ms * 1000000u)
		s->t_tick = now;
	reap(s);
	if (srv_sig_usr1) {
		srv_sig_usr1 = 0;
		s->st.stats_requests++;
		an_srv_stats_print(s->log, &s->st);
		fflush(s->log);
	}
	if (srv_sig_stop)
		return 0;
	if (s->cfg.run_ns && now - s->t_start >= s->cfg.run_ns)
		return 0;
	if (s->cfg.exit_after_byes && s->st.byes >= s->cfg.exit_after_byes && s->nconns == 0)
		return 0;
	return 1;
}

void an_srv_free(struct an_srv *s)
{
	if (!s)
		return;
	/* what the watermark still holds goes in: the report covers every line */
	pulse_wm_flush(s->wm);
	pulse_wm_free(s->wm);
	srv_series_expire(s, 1); /* the report shows what came */
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (c->state == C_READY) {
			struct pulse_aw_status st = {.code = PULSE_AW_E_SHUTDOWN};
			snprintf(st.text, sizeof st.text, "analyzer stopping");
			uint8_t b[4 + PULSE_AW_TEXT_LEN];
			size_t n = pulse_aw_status_encode(b, sizeof b, &st);
			srv_conn_send(s, c, PULSE_AW_BYE, b, n);
		}
		conn_kill(s, c);
		conn_free(c);
	}
	free(s->conns);
	for (uint32_t i = 0; i < s->nhosts; i++)
		host_free(&s->hosts[i]);
	free(s->hosts);
	srv_metrics_stop(s);
	srv_bus_stop(s);
	free(s->pfd);
	free(s->rec);
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
}
