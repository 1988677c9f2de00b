/* What pulse-sink keeps of the job's operator records (sink/README.md,
 * "Evidence windows and iterations"): the records around each diagnosis
 * and per-iteration aggregates of every communicator. The records come
 * from the job's record stream, decoded by the bus (wire/op_record_bin.c).
 *   sink/ring.c      the recent records, bounded in bytes, oldest dropped
 *   sink/window.c    a diagnosis's window: parsed from its JSON, matched
 *   sink/iter_agg.c  per (communicator, seq, op) summaries, bounded
 *   sink/store_ev.c  their tables (schema version 2)
 *   sink/evidence.c  the three together: records in, rows out, retries */
#ifndef PULSE_SINK_EVIDENCE_H
#define PULSE_SINK_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pulse/op_record.h"

struct sink_store;

/* ---- ring ---- */
struct sink_ring;
/* cap: bytes of encoded records (and their bookkeeping) held at most */
struct sink_ring *sink_ring_new(size_t cap);
void sink_ring_free(struct sink_ring *g);
/* Keeps r (its binary form), dropping the oldest records beyond the cap
 * (counted). 0, or -1: r does not encode or memory ran out (counted). */
int sink_ring_push(struct sink_ring *g, const struct pulse_op_record *r);
/* fn on every record held, oldest first; stops at fn's first non-zero */
int sink_ring_each(struct sink_ring *g, int (*fn)(void *ctx, const struct pulse_op_record *r), void *ctx);
struct sink_ring_stats {
	uint64_t records, bytes, pushed, evicted, refused;
};
void sink_ring_stats(const struct sink_ring *g, struct sink_ring_stats *st);

/* ---- a diagnosis's window ---- */
#define SINK_KEY_LEN 256
struct sink_window {
	char key[SINK_KEY_LEN];
	char day[16];            /* the diagnosis's day (its report time, UTC) */
	uint64_t comm_id;        /* the evidence's communicator */
	uint64_t from_ns, to_ns; /* onset - N, report + N */
	/* the sink's bookkeeping */
	time_t opened;           /* wall clock, when the sink took it up */
	uint32_t stored, dropped; /* rows written; records over the caps, not stored */
	uint8_t *pend;           /* records matched, not yet written: OPS framing */
	size_t pend_len, pend_cap;
	uint32_t pend_n;
};
/* The window of a diagnosis (the analyzer's JSON: key, report_ns, onset_ns,
 * evidence.comm_id), half_ns on either side. 0 set, 1 the diagnosis names
 * no communicator (nothing to keep), -1 malformed (err says why). Reads
 * nothing past len. */
int sink_window_of(const char *json, size_t len, uint64_t half_ns, struct sink_window *w, char *err,
		   size_t errlen);
/* the UTC day of a time in ns since the epoch, "YYYY-MM-DD" */
void sink_day_of_ns(uint64_t ns, char day[16]);
/* r's time [call, end] overlaps the window, and r is of its communicator */
int sink_window_has(const struct sink_window *w, const struct pulse_op_record *r);
/* the latest time r tells of (its end, else its start, else its call) */
uint64_t sink_record_time(const struct pulse_op_record *r);

/* ---- per-iteration aggregates ---- */
struct sink_iter {
	uint64_t comm_id, seq;
	uint8_t op;
	int32_t nranks;
	uint32_t records, not_complete;
	uint64_t min_ns, median_ns, max_ns;
	uint64_t expected_bytes, actual_bytes;
	int32_t slowest_rank, slowest_gpu;
	char slowest_host[PULSE_OP_HOST_LEN];
	uint64_t first_call_ns, last_end_ns;
};
struct sink_agg;
/* cap: bytes of open aggregates held at most (the oldest go out early) */
struct sink_agg *sink_agg_new(size_t cap);
void sink_agg_free(struct sink_agg *a);
/* One record into its iteration's aggregate; a rank said twice counts once */
void sink_agg_add(struct sink_agg *a, const struct pulse_op_record *r);
/* The aggregates done (every rank in, or nothing new for grace_ns of data
 * time: watermark is the latest record time; all: every one, at exit, or
 * over the memory cap), oldest first, into out (up to max). They stay
 * until sink_agg_done says they are stored. Returns how many. */
size_t sink_agg_ready(struct sink_agg *a, uint64_t watermark, uint64_t grace_ns, int all, struct sink_iter *out,
		      size_t max);
/* the first n of the last sink_agg_ready are stored: forget them */
void sink_agg_done(struct sink_agg *a, size_t n);
struct sink_agg_stats {
	uint64_t open, bytes, records, duplicates;
	uint64_t early;   /* stored before they were done: over the memory cap */
	uint64_t dropped; /* records left out: memory (twice the cap: the database away) */
};
void sink_agg_stats(const struct sink_agg *a, struct sink_agg_stats *st);

/* ---- their tables (sink/store_ev.c); each: 0, or -1 (err) ---- */
/* the window's row; *complete: it was there already, done (a redelivery) */
int sink_store_window_open(struct sink_store *s, const char *job, const struct sink_window *w, int *complete,
			   char *err, size_t errlen);
/* the open windows of job (a restart goes on with them) into *out (malloc'd) */
int sink_store_windows_load(struct sink_store *s, const char *job, struct sink_window **out, size_t *n,
			    char *err, size_t errlen);
/* records of the window, in one transaction; *added: new rows */
int sink_store_window_records(struct sink_store *s, const char *job, const struct sink_window *w,
			      const struct pulse_op_record *const *r, size_t n, size_t *added, char *err,
			      size_t errlen);
/* the window done: its row's counts from what is stored */
int sink_store_window_close(struct sink_store *s, const struct sink_window *w, char *err, size_t errlen);
/* aggregates, in one transaction, each stored once (a later one with more
 * records replaces it: one stored at exit before all ranks were in) */
int sink_store_iters(struct sink_store *s, const char *job, const struct sink_iter *it, size_t n, char *err,
		     size_t errlen);

/* ---- the three together (sink/evidence.c) ---- */
struct sink_ev_cfg {
	uint64_t half_ns;          /* N: the window is onset - N .. report + N */
	size_t ring_bytes;         /* recent records kept */
	size_t agg_bytes;          /* open aggregates */
	size_t pend_bytes;         /* window records matched, not yet written (all windows) */
	uint32_t window_max;       /* records stored per window at most */
	int wait_s;                /* caught up with the stream and no record for so long
	                            * (wall clock): windows close, aggregates go out */
	void (*log)(const char *level, const char *msg);
};
struct sink_ev_stats {
	uint64_t records, windows_opened, windows_closed, window_rows, window_dropped, iters_stored;
	uint64_t db_failures;
	struct sink_ring_stats ring;
	struct sink_agg_stats agg;
	size_t windows_open;
};
struct sink_ev;
struct sink_ev *sink_ev_new(struct sink_store *s, const char *job, const struct sink_ev_cfg *cfg);
void sink_ev_free(struct sink_ev *e);
/* the windows a sink before this one left open; 0, or -1 (the database) */
int sink_ev_start(struct sink_ev *e, char *err, size_t errlen);
/* a record of the job's stream: the ring, the aggregates, open windows */
int sink_ev_record(struct sink_ev *e, const struct pulse_op_record *r);
/* a diagnosis (stored already): its window opened, filled from the ring.
 * 0, or -1 the database failed (say it again later) */
int sink_ev_diag(struct sink_ev *e, const char *json, size_t len, char *err, size_t errlen);
/* writes what is due; caught_up: the record stream has nothing pending;
 * final: at exit, everything (windows stay open in the database). 0, or
 * -1 the database failed (the rows wait in memory, within the caps) */
int sink_ev_tick(struct sink_ev *e, int caught_up, int final, char *err, size_t errlen);
void sink_ev_stats(const struct sink_ev *e, struct sink_ev_stats *st);

#endif
