/* The mailbox protocol over a Unix stream socket. See pulse/transport_unix.h. */
#define _GNU_SOURCE
#include "pulse/transport_unix.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "pulse/le.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int remaining(uint64_t deadline)
{
	uint64_t now = mono_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

static int fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof a->sun_path)
		return -1;
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

/* Writes all of buf before the deadline. */
static int write_all(int fd, const uint8_t *buf, uint32_t len, uint64_t deadline)
{
	uint32_t off = 0;
	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (uint32_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int ms = remaining(deadline);
			if (ms == 0 || poll(&p, 1, ms) <= 0)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* Reads exactly len bytes before the deadline. */
static int read_all(int fd, uint8_t *buf, uint32_t len, uint64_t deadline)
{
	uint32_t off = 0;
	while (off < len) {
		ssize_t n = recv(fd, buf + off, len - off, 0);
		if (n > 0) {
			off += (uint32_t)n;
			continue;
		}
		if (n == 0)
			return -1; /* peer closed */
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int ms = remaining(deadline);
			if (ms == 0 || poll(&p, 1, ms) <= 0)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* ---- client ---- */
int pulse_unix_client_init(struct pulse_unix_client *c, const char *path)
{
	memset(c, 0, sizeof *c);
	c->fd = -1;
	if (strlen(path) >= sizeof c->path) {
		snprintf(c->last_error, sizeof c->last_error, "socket path too long: %s", path);
		return -1;
	}
	memcpy(c->path, path, strlen(path) + 1);
	return 0;
}

void pulse_unix_client_close(struct pulse_unix_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int client_connect(struct pulse_unix_client *c, uint64_t deadline)
{
	struct sockaddr_un a;
	if (fill_addr(&a, c->path)) {
		snprintf(c->last_error, sizeof c->last_error, "socket path too long");
		return -1;
	}
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(c->last_error, sizeof c->last_error, "socket: %s", strerror(errno));
			return -1;
		}
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
			c->fd = fd;
			c->connects++;
			return 0;
		}
		int e = errno;
		close(fd);
		if (e != ENOENT && e != ECONNREFUSED && e != EAGAIN && e != EINTR) {
			snprintf(c->last_error, sizeof c->last_error, "connect %s: %s", c->path,
				 strerror(e));
			return -1;
		}
		if (remaining(deadline) == 0) {
			snprintf(c->last_error, sizeof c->last_error, "connect %s: %s (gave up)",
				 c->path, strerror(e));
			return -1;
		}
		struct timespec ts = {0, 5000000}; /* the server may not be up yet */
		nanosleep(&ts, NULL);
	}
}

int pulse_unix_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms)
{
	struct pulse_unix_client *c = ctx;
	uint64_t deadline = mono_ms() + timeout_ms;
	*resp_len = 0;
	if (c->fd < 0 && client_connect(c, deadline))
		goto fail_nomsg;
	if (write_all(c->fd, req, req_len, deadline)) {
		snprintf(c->last_error, sizeof c->last_error, "send: %s",
			 errno ? strerror(errno) : "timed out");
		goto fail;
	}
	if (resp_cap < PULSE_MB_HEADER_SIZE) {
		snprintf(c->last_error, sizeof c->last_error, "response buffer below a header");
		goto fail;
	}
	if (read_all(c->fd, resp, PULSE_MB_HEADER_SIZE, deadline)) {
		snprintf(c->last_error, sizeof c->last_error,
			 "no response within %u ms (or the NIC hung up)", timeout_ms);
		goto fail;
	}
	uint32_t len = pulse_get_u16(resp + 4);
	if (len < PULSE_MB_HEADER_SIZE || len > resp_cap) {
		snprintf(c->last_error, sizeof c->last_error,
			 "response length %u outside %u..%u", len, PULSE_MB_HEADER_SIZE, resp_cap);
		goto fail;
	}
	if (read_all(c->fd, resp + PULSE_MB_HEADER_SIZE, len - PULSE_MB_HEADER_SIZE, deadline)) {
		snprintf(c->last_error, sizeof c->last_error, "response cut short (%u bytes expected)",
			 len);
		goto fail;
	}
	*resp_len = len;
	return 0;
fail:
	pulse_unix_client_close(c);
fail_nomsg:
	c->failures++;
	return -1;
}

/* ---- server ---- */
int pulse_unix_server_open(struct pulse_unix_server *s, const char *path, uint32_t resp_cap)
{
	memset(s, 0, sizeof *s);
	s->listen_fd = s->conn_fd = -1;
	struct sockaddr_un a;
	if (fill_addr(&a, path)) {
		snprintf(s->last_error, sizeof s->last_error, "socket path too long: %s", path);
		return -1;
	}
	memcpy(s->path, path, strlen(path) + 1);
	if (resp_cap < PULSE_MB_MIN_RESPONSE)
		resp_cap = PULSE_MB_MIN_RESPONSE;
	if (resp_cap > PULSE_MB_MAX_MESSAGE)
		resp_cap = PULSE_MB_MAX_MESSAGE;
	s->resp_cap = resp_cap;
	s->req = malloc(PULSE_MB_MAX_MESSAGE);
	s->resp = malloc(resp_cap);
	if (!s->req || !s->resp) {
		snprintf(s->last_error, sizeof s->last_error, "out of memory");
		goto fail;
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(s->last_error, sizeof s->last_error,
				 "%s exists and is not a socket: refusing to replace it", path);
			goto fail;
		}
		unlink(path); /* a stale socket from an earlier run */
	}
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(s->listen_fd, 4) != 0) {
		snprintf(s->last_error, sizeof s->last_error, "listen on %s: %s", path,
			 strerror(errno));
		goto fail;
	}
	return 0;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	free(s->req);
	free(s->resp);
	s->req = s->resp = NULL;
	return -1;
}

static void drop_client(struct pulse_unix_server *s)
{
	if (s->conn_fd >= 0)
		close(s->conn_fd);
	s->conn_fd = -1;
	s->req_fill = 0;
}

/* An error answer the transport gives itself when the framing is unusable. */
static void answer_bad_frame(struct pulse_unix_server *s, enum pulse_mb_status st)
{
	struct pulse_mb_header h = {
		.magic = PULSE_MB_MAGIC,
		.version = PULSE_MB_VERSION,
		.type = (uint8_t)(s->req[3] | PULSE_MB_RESPONSE),
		.length = PULSE_MB_HEADER_SIZE,
		.seq = pulse_get_u16(s->req + 6),
		.status = (uint16_t)st,
	};
	uint8_t out[PULSE_MB_HEADER_SIZE];
	pulse_mb_encode_header(out, &h);
	(void)write_all(s->conn_fd, out, sizeof out, mono_ms() + 100);
	s->bad_frames++;
	drop_client(s);
}

/* Answers every complete request in the buffer. */
static int serve_buffer(struct pulse_unix_server *s, pulse_unix_handler h, void *ctx)
{
	int answered = 0;
	while (s->conn_fd >= 0 && s->req_fill >= PULSE_MB_HEADER_SIZE) {
		if (pulse_get_u16(s->req) != PULSE_MB_MAGIC) {
			answer_bad_frame(s, PULSE_MB_E_MAGIC);
			break;
		}
		uint32_t len = pulse_get_u16(s->req + 4);
		if (len < PULSE_MB_HEADER_SIZE) {
			answer_bad_frame(s, PULSE_MB_E_TRUNCATED);
			break;
		}
		if (s->req_fill < len)
			break; /* wait for the rest */
		uint32_t rlen = 0;
		if (h(ctx, s->req, len, s->resp, s->resp_cap, &rlen) != 0 || rlen < PULSE_MB_HEADER_SIZE ||
		    rlen > s->resp_cap || write_all(s->conn_fd, s->resp, rlen, mono_ms() + 1000) != 0) {
			s->dropped++;
			drop_client(s);
			break;
		}
		s->requests++;
		answered++;
		memmove(s->req, s->req + len, s->req_fill - len);
		s->req_fill -= len;
	}
	return answered;
}

int pulse_unix_server_step(struct pulse_unix_server *s, int timeout_ms, pulse_unix_handler h,
			   void *ctx)
{
	struct pollfd p;
	p.fd = s->conn_fd >= 0 ? s->conn_fd : s->listen_fd;
	p.events = POLLIN;
	p.revents = 0;
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -1;
	if (r == 0)
		return 0;
	if (s->conn_fd < 0) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? 0 : -1;
		s->conn_fd = fd;
		s->accepted++;
		s->req_fill = 0;
	}
	int answered = 0;
	for (;;) {
		uint32_t room = PULSE_MB_MAX_MESSAGE - s->req_fill;
		ssize_t n = recv(s->conn_fd, s->req + s->req_fill, room, 0);
		if (n > 0) {
			s->req_fill += (uint32_t)n;
			answered += serve_buffer(s, h, ctx);
			if (s->conn_fd < 0)
				break;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		drop_client(s); /* hung up or failed */
		break;
	}
	return answered;
}

void pulse_unix_server_close(struct pulse_unix_server *s)
{
	drop_client(s);
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		unlink(s->path);
	}
	s->listen_fd = -1;
	free(s->req);
	free(s->resp);
	s->req = s->resp = NULL;
}
