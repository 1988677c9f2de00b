/* Pulse on NATS JetStream (issue 15): the host agents publish, analyzers
 * consume. Formats and names: include/pulse/bus_msg.h (wire/bus_msg.c).
 *   bus/bus_conn.c  connection (a server list, reconnecting), the job's
 *                   streams, statistics, logging
 *   bus/bus_pub.c   the publisher: a poll's records per host, batched,
 *                   zstd-compressed, with idempotent message ids, queued
 *                   (bounded, drops counted) while the bus is unreachable;
 *                   the host's latest MAP; diagnoses
 *   bus/bus_sub.c   the consumer: the latest MAP of every host first, then
 *                   the record messages in stream order, handed to the
 *                   caller's sink (the analyzer's an_ingest_op / an_ingest)
 * Streams of job J (token T, bus_msg.h):
 *   PULSE_T        pulse.T.ops.*    records; file-backed, replicas, kept by
 *                                   age and size, 2 min duplicate window
 *   PULSE_T_STATE  pulse.T.state.*  one message per subject: each host's MAP
 *   PULSE_T_DIAG   pulse.T.diag     diagnoses, the diagnosis key as id
 *   bus/bus_lease.c  job ownership: a lease per job in the KV bucket
 *                   PULSE_LEASES, expiring unless renewed; its revision is
 *                   the fencing token
 * Not built yet: several jobs per analyzer process, checkpoints other than
 * the stream's start (docs/bus.md). */
#ifndef PULSE_BUS_H
#define PULSE_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/op_record.h"

struct pulse_bus_cfg {
	const char *url;          /* "nats://HOST:PORT[,nats://HOST:PORT...]" */
	const char *job;          /* job name ([A-Za-z0-9._:@+-], 1-63) */
	int replicas;             /* stream replicas (1; 3 in production) */
	int64_t max_age_s;        /* records kept this long (86400) */
	int64_t max_bytes;        /* and at most this many bytes (1 GiB) */
	int zstd_level;           /* 0: stored; default 3 */
	uint32_t queue_cap;       /* publisher: bytes held while the bus is unreachable (64 MiB) */
	const char *durable;      /* consumer: a durable name, whose position survives the
	                           * consumer; NULL: ephemeral, from the stream's start
	                           * (an analyzer taking a job over replays it whole) */
	uint32_t request_ms;      /* the longest one JetStream request (a lease's
	                           * take or renewal, a subscribe, a consumer's
	                           * check) waits; 0: the library's 5000. An owner
	                           * of a lease wants a third of its expiry: a
	                           * request must not outlast the lease it renews */
	void (*log)(void *ctx, const char *level, const char *msg); /* NULL: stderr */
	void *ctx;
};

struct pulse_bus_stats {
	uint64_t msgs_published, msgs_duplicate, publish_failures;
	uint64_t records_published, lines_published, bytes_raw, bytes_sent;
	uint64_t queue_dropped;   /* messages dropped: the queue at its cap */
	uint32_t queued;          /* messages waiting for the bus */
	uint64_t msgs_in, msgs_bad, records_in, records_bad, lines_in, maps_in, diags_published;
	uint64_t pending;         /* consumer: messages the server still holds for us */
	uint64_t resubscribed;    /* consumer: made again after its server lost it */
	uint64_t maps_reread;     /* consumer: MAPs read again, records of a host without one */
	int connected;
};

struct pulse_bus;
/* PULSE_BUS in the environment ("replicas=3,max_age_s=…,max_bytes=…,
 * zstd_level=…,queue_cap=…") overrides cfg's limits (docs/bus.md).
 * Connects (retrying in the background if the servers are down: a later
 * call works once one is up) and creates or updates the job's streams.
 * NULL with err on a bad configuration or a server that refuses. */
struct pulse_bus *pulse_bus_open(const struct pulse_bus_cfg *cfg, char *err, size_t errlen);
void pulse_bus_close(struct pulse_bus *b);
void pulse_bus_get_stats(struct pulse_bus *b, struct pulse_bus_stats *st);

/* ---- publisher (thread-safe) ---- */
/* One record of host's current poll. */
int pulse_bus_put_op(struct pulse_bus *b, const struct pulse_op_record *r);
/* One of the host's other JSON lines of the current poll (hook_op, window,
 * hook_map, link...: what the analyzer reads besides the records; no
 * newline). They go out before the poll's records, as the agent's file has
 * them. 0, or -1: over PULSE_BUS_MAX_RAW or out of memory (counted in
 * queue_dropped). */
int pulse_bus_put_line(struct pulse_bus *b, const char *line, size_t len);
/* The same for a line that closes the poll (poll_end, join_wait): it goes
 * out after the poll's records, as the agent's file has it, so that the
 * analyzer settles a trigger on it over the bus as it does from the file. */
int pulse_bus_put_line_after(struct pulse_bus *b, const char *line, size_t len);
/* The poll's lines, then its records, as messages "<host>/<poll_seq>/<part>", then
 * whatever was queued. Returns 0, or -1 when the bus is unreachable (kept
 * in the queue up to its cap). */
int pulse_bus_end_poll(struct pulse_bus *b, const char *host, uint64_t poll_seq);
/* host's latest MAP (a hook_map JSON line) into the state stream. */
int pulse_bus_put_map(struct pulse_bus *b, const char *host, const char *line, size_t len);
/* A diagnosis (JSON) under its key, the message id: said again, kept once.
 * Returns 0 published, -1 not yet: it waits in the queue (after what waited
 * before it) up to the queue's cap, for pulse_bus_flush or the next put. */
int pulse_bus_put_diag(struct pulse_bus *b, const char *key, const char *json, size_t len);
/* Publishes what waits in the queue, oldest first, until one fails.
 * Returns 0 when the queue is empty, -1 when something still waits. */
int pulse_bus_flush(struct pulse_bus *b);

/* ---- job ownership ---- */
/* Takes or renews the job's lease for owner (entries expire ttl_ms after
 * their last write; the first caller sets the bucket's ttl). Returns 1
 * held (*rev: the revision, the fencing token), 0 another holds it (its
 * name in who), -1 the bus is unreachable (then it is not ours to use
 * once ttl passes). Call it every ttl/3 or so. */
int pulse_bus_lease(struct pulse_bus *b, const char *owner, uint32_t ttl_ms, uint64_t *rev, char *who,
		    size_t wholen);
/* Gives the lease back at once (a clean stop). */
void pulse_bus_lease_release(struct pulse_bus *b);

/* ---- consumer (one thread) ---- */
struct pulse_bus_sink {
	/* a record: 0 used, 1 ignored, -1 rejected (counted in records_bad) */
	int (*record)(void *ctx, const char *host, const struct pulse_op_record *r);
	/* a host's MAP line (state stream) or another of its lines (in stream order) */
	int (*line)(void *ctx, const char *host, const char *line, size_t len);
	void *ctx;
};
/* Hands the next messages (at most max, waiting up to timeout_ms for the
 * first) to the sink: MAPs first, then records. A message that does not
 * decode is counted (msgs_bad), logged and acknowledged, never retried.
 * Returns the number of messages handled, or -1 when the bus is unreachable. */
int pulse_bus_consume(struct pulse_bus *b, const struct pulse_bus_sink *sink, int max, int timeout_ms);

/* ---- diagnoses (pulse-sink) ---- */
/* Hands the next diagnosis messages (JSON) of the job, through the durable
 * consumer cfg.durable (required), to fn; a message is acknowledged only
 * when fn returns 0, so one fn could not store comes again (after
 * AckWait, 10 s). Returns the number acknowledged, or -1 unreachable. */
int pulse_bus_consume_diags(struct pulse_bus *b, int (*fn)(void *ctx, const char *json, size_t len),
			    void *ctx, int max, int timeout_ms);

#endif
