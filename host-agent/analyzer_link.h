/* pulse-host-agent's link to pulse-analyzer (host-agent/analyzer_link.c).
 * Wire format: include/pulse/analyzer_wire.h, analyzer/PROTOCOL.md.
 *
 * The agent hands over its JSON lines as it writes them (alink_line, or a
 * FILE from alink_tee that copies everything written to it); the link
 * routes them by their "type" into OP, CALLS, MAP and LINES frames (CALLS
 * and LINES batched, order kept); operator records handed over as structs
 * (alink_op) go in binary OPS frames, batched, where the analyzer speaks
 * protocol version 2, queues them (bounded; over the bound new
 * frames are dropped and counted) and sends them when alink_poll runs.
 * alink_poll never blocks: connecting is nonblocking, a failed or lost
 * connection is retried with exponential backoff, and each call does at
 * most a bounded amount of I/O. After a reconnect the latest hook_map is
 * sent again. JOIN frames from the analyzer are decoded and handed to the
 * on_join callback (which feeds assoc_qp / assoc_member, host-agent/assoc.h);
 * SERIES_REQ frames (protocol 3) to on_series, whose answer goes back as a
 * SERIES frame (host-agent/series_query.c).
 *
 * Thread-safe: alink_line/alink_op/the tee may be called from any thread;
 * alink_poll from one. The callbacks run inside alink_poll. */
#ifndef PULSE_HOST_AGENT_ANALYZER_LINK_H
#define PULSE_HOST_AGENT_ANALYZER_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/analyzer_wire.h"
#include "pulse/op_record.h"
#include "pulse/qp_series_wire.h"

struct alink_cfg {
	const char *addr;             /* "HOST:PORT", "[IPV6]:PORT"; HOST is resolved once, in alink_new */
	const char *job;              /* job id (NULL: "default") */
	const char *host;             /* this host's name (NULL: gethostname) */
	const char *agent_version;    /* free text (NULL: "pulse-host-agent") */
	uint32_t queue_cap;           /* bytes of frames held for the analyzer (16 MiB) */
	uint32_t batch_bytes;         /* CALLS/LINES frames up to this size (64 KiB) */
	uint32_t backoff_min_ms;      /* first retry after a failure (100) */
	uint32_t backoff_max_ms;      /* retries back off up to this (5000) */
	uint32_t connect_timeout_ms;  /* a connect or HELLO_ACK not done by then fails (3000) */
	uint32_t io_budget_us;        /* time one alink_poll may spend on I/O (2000) */
	/* Highest protocol version to offer (0: PULSE_AW_VERSION_MAX). From 2
	 * on, alink_op sends binary OPS frames; 1 keeps JSON OP frames (for a
	 * comparison, or an analyzer that must not see version 2). */
	uint16_t max_version;
	/* The caller hands its operator records to alink_op, so the tee leaves
	 * "op" lines to the file instead of sending them a second time. */
	int records_direct;
	/* JOIN from the analyzer; j is valid during the call only. */
	void (*on_join)(void *ctx, const struct pulse_aw_join *j);
	/* SERIES_REQ from the analyzer (protocol 3): the SERIES payload to send
	 * back (malloc'd, at most max_bytes; the link frees it), or NULL. NULL
	 * callback: answered with status "off" (this agent keeps no series). */
	uint8_t *(*on_series)(void *ctx, const struct pulse_qps_req *q, size_t max_bytes, size_t *len);
	/* log lines (level "info"/"warn"/"error"); NULL: stderr */
	void (*log)(void *ctx, const char *level, const char *msg);
	void *ctx;
};

struct alink_stats {
	uint64_t connects, connect_failures, disconnects;
	uint64_t lines, frames_queued, frames_sent, bytes_sent;
	uint64_t queue_dropped;       /* frames not queued: queue at its cap */
	uint64_t oversize_dropped;    /* lines over the analyzer's payload bound */
	uint64_t untyped_dropped;     /* lines without a "type" */
	uint64_t resent_cut;          /* frames cut by a lost connection, sent again whole */
	uint64_t maps_resent;
	uint64_t joins, joins_bad, errors_rx, heartbeats_rx, bad_frames_rx;
	uint64_t series_reqs, series_bad, series_sent; /* SERIES_REQ taken, refused; answers queued */
	uint64_t records_bin;         /* operator records queued in binary (OPS) */
	uint64_t records_json;        /* ... as JSON OP frames (version-1 analyzer, or max_version 1) */
	uint64_t records_converted;   /* queued binary, turned into JSON for a version-1 analyzer */
	int64_t skew_ns;              /* analyzer realtime - ours, at the last HEARTBEAT reply
				       * (half the round trip corrected) */
	uint64_t rtt_ns;
	uint32_t queued_bytes;
	int connected;                /* HELLO_ACK received on the current connection */
};

struct alink;
/* Checks the configuration and resolves the address (may block for a DNS
 * lookup, once). Does not connect yet. NULL with err on failure. */
struct alink *alink_new(const struct alink_cfg *cfg, char *err, size_t errlen);
/* One agent JSON line (a trailing newline is allowed). Returns 0 queued,
 * -1 dropped (counted). */
int alink_line(struct alink *l, const char *line, size_t len);
/* One operator record: binary in OPS frames (batched like CALLS) while
 * the analyzer speaks version 2 (or before any is known); JSON OP frames
 * for a version-1 analyzer, to which OPS frames already queued are
 * converted when it answers. */
int alink_op(struct alink *l, const struct pulse_op_record *r);
/* Connects, sends, receives, as far as possible without blocking; call it
 * every poll cycle (and more often if you like). now_ns: CLOCK_MONOTONIC. */
void alink_poll(struct alink *l, uint64_t now_ns);
/* The socket to wait on (-1 when none) and the events alink_poll wants. */
int alink_fd(const struct alink *l, short *events);
void alink_get_stats(struct alink *l, struct alink_stats *st);
/* Sends what is queued and BYE for at most budget_ms, then closes and frees. */
void alink_close(struct alink *l, uint32_t budget_ms);

/* A FILE whose writes go to inner (if not NULL, flushed with it) and, line
 * by line, to alink_line. fclose of it closes inner only if close_inner. */
FILE *alink_tee(struct alink *l, FILE *inner, int close_inner);

#endif
