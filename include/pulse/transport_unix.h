/* The mailbox protocol over a Unix stream socket: how a host agent talks to
 * a simulated NIC (run_trace --serve), and how tests talk to either.
 *
 * Framing is the mailbox message itself: every message starts with the
 * 12-byte header of pulse/mailbox_proto.h whose u16 length field (offset 4)
 * is the size of the whole message. One request, then one response, in
 * order, on one connection. A peer that sends a header whose length is below
 * the header size gets an E_TRUNCATED response and is disconnected (the byte
 * stream cannot be resynchronised).
 *
 * Hosted C (POSIX sockets and poll). Both ends are here: the client exchange
 * function plugs into pulse_nic_client; the server helper runs the accept /
 * read / answer loop around any handler (the firmware core's
 * pulse_fw_mailbox in run_trace). */
#ifndef PULSE_TRANSPORT_UNIX_H
#define PULSE_TRANSPORT_UNIX_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"

/* ---- client ---- */
struct pulse_unix_client {
	int fd;                   /* -1 when not connected */
	char path[108];
	uint64_t connects;        /* successful connects (reconnects after a failure included) */
	uint64_t failures;        /* exchanges that failed or timed out */
	char last_error[160];
};

/* Remembers the path; connects lazily on the first exchange. Returns 0, or
 * -1 when the path does not fit a sockaddr_un. */
int pulse_unix_client_init(struct pulse_unix_client *c, const char *path);
void pulse_unix_client_close(struct pulse_unix_client *c);

/* A pulse_nic_exchange_fn; ctx is a struct pulse_unix_client. Connects if
 * needed (retrying while the socket does not exist yet or refuses, within the
 * timeout), sends the request, and reads one whole response. Any failure or
 * timeout closes the connection, so that a late answer cannot be taken for
 * the next request's; the next exchange reconnects. Returns 0 or -1. */
int pulse_unix_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms);

/* ---- server ---- */
/* Answers one request: writes a complete response message into resp
 * (resp_cap bytes) and sets *resp_len. Returns 0, or -1 to drop the client. */
typedef int (*pulse_unix_handler)(void *ctx, const uint8_t *req, uint32_t req_len,
				  uint8_t *resp, uint32_t resp_cap, uint32_t *resp_len);

struct pulse_unix_server {
	int listen_fd;
	int conn_fd;              /* one client at a time, like a NIC's mailbox */
	char path[108];
	uint8_t *req;             /* PULSE_MB_MAX_MESSAGE bytes */
	uint32_t req_fill;
	uint8_t *resp;
	uint32_t resp_cap;
	uint64_t accepted, requests, bad_frames, dropped;
	char last_error[160];
};

/* Binds and listens on path (a stale socket file there is replaced; any
 * other file is not). resp_cap is the largest response the handler may
 * write (at least PULSE_MB_MIN_RESPONSE). Returns 0 or -1 with s->last_error. */
int pulse_unix_server_open(struct pulse_unix_server *s, const char *path, uint32_t resp_cap);
/* Waits up to timeout_ms (0: just look) for a connection or request data,
 * then accepts, reads and answers whatever complete requests have arrived.
 * Returns the number of requests answered, or -1 on a listening-socket error.
 * A client that misbehaves or hangs up is disconnected and counted. */
int pulse_unix_server_step(struct pulse_unix_server *s, int timeout_ms, pulse_unix_handler h,
			   void *ctx);
/* Closes the sockets and removes the socket file. */
void pulse_unix_server_close(struct pulse_unix_server *s);

#endif
