/* The analyzer's clock: a data-time watermark over the host agents' lines.
 *
 * The analyzer decides on data time, never on its own clock, so that the
 * same lines give the same verdicts whether they come from files
 * (pulse-analyzer --replay), over TCP from live agents (--listen), or over a
 * message bus. Every line has a data-time key in its host's clock
 * (pulse_wm_line_key); a host's keys never go back (a line without a key, or
 * with an earlier one, takes the host's latest). The watermark is the
 * smallest latest key over the hosts that still send: every host has
 * delivered everything up to it. Lines are released in key order up to the
 * watermark (ties: the host registered first), and the consumer's clock is
 * advanced to each new key before the line with that key is delivered, which
 * is exactly what a replay over the merged files does.
 *
 * A host that has said it is done (pulse_wm_end: BYE, end of file) no longer
 * holds the watermark. A host that has sent nothing for silent_ns of wall
 * time (a dead agent, a cut link) stops holding it too, so that one host
 * cannot stop the diagnosis of the others; it counts as silent until it
 * sends again. Lines that arrive below the consumer's clock (from a host that
 * was silent, or that joined late) are delivered at once and counted as late.
 *
 * Independent of any transport: the caller pushes lines with the wall time
 * they arrived and calls pulse_wm_advance; the consumer is a table of
 * functions. One thread. */
#ifndef PULSE_WATERMARK_H
#define PULSE_WATERMARK_H

#include <stddef.h>
#include <stdint.h>

struct pulse_wm_ops {
	/* The consumer's clock moves to data time now_ns (strictly increasing). */
	void (*tick)(void *ctx, uint64_t now_ns);
	/* One line of host `host`, in watermark order. */
	void (*deliver)(void *ctx, const char *host, const char *line, size_t len);
	/* One opaque record pushed with pulse_wm_push_rec (a binary operator
	 * record, wire/op_record_bin.c), in the same order as the lines. */
	void (*deliver_rec)(void *ctx, const char *host, const void *rec, size_t len);
};

struct pulse_wm_stats {
	uint64_t pushed, delivered, late;  /* late: delivered below the clock on arrival */
	uint64_t held, held_max;           /* lines waiting for the watermark (now, most) */
	uint64_t silent_events;            /* a host stopped holding the watermark (wall bound) */
	uint64_t ticks;
	uint64_t mark_ns;                  /* the consumer's clock (data time) */
	uint32_t hosts, hosts_silent;
};

struct pulse_wm;

/* silent_ns: wall time after which a host that sends nothing stops holding
 * the watermark (0: never; a replay). NULL on out of memory. */
struct pulse_wm *pulse_wm_new(const struct pulse_wm_ops *ops, void *ctx, uint64_t silent_ns);
void pulse_wm_free(struct pulse_wm *w);

/* Registers a host (idempotent); it holds the watermark from now on, even
 * before its first line. Returns its index, or -1 (out of memory, or a name
 * too long). A host that ended and registers again holds it again. */
int pulse_wm_host(struct pulse_wm *w, const char *host, uint64_t wall_ns);
/* One line (copied). key 0: the line's own key (pulse_wm_line_key), else
 * the caller's. Returns 0, or -1 on out of memory (the line is lost and the
 * caller counts it). */
int pulse_wm_push(struct pulse_wm *w, const char *host, const char *line, size_t len,
		  uint64_t wall_ns);
/* One opaque record (copied) with its data-time key in the host's clock,
 * which the caller knows from decoding it (a binary operator record: its
 * last byte or its call, whichever is later, as pulse_wm_line_key). Held and
 * ordered with the host's lines; released through ops->deliver_rec. */
int pulse_wm_push_rec(struct pulse_wm *w, const char *host, const void *rec, size_t len, uint64_t key,
		      uint64_t wall_ns);
/* The transport is behind or cut off (a backlog it has not read yet, a
 * fetch that failed): every host's lines may be in that backlog, so none
 * counts as silent as of wall_ns. A host is silent only while the
 * transport keeps up and its lines have stopped. */
void pulse_wm_touch(struct pulse_wm *w, uint64_t wall_ns);
/* The host is done: it stops holding the watermark. */
void pulse_wm_end(struct pulse_wm *w, const char *host);
/* Releases nothing before wall time wall_ns: the hosts that will register are
 * not all there yet (a service that just started: its agents connect one by
 * one, and the first must not be analyzed alone). Later calls only extend. */
void pulse_wm_hold_until(struct pulse_wm *w, uint64_t wall_ns);
/* Releases every line the watermark allows at wall time wall_ns. Returns the
 * number of lines delivered. */
uint64_t pulse_wm_advance(struct pulse_wm *w, uint64_t wall_ns);
/* End of input: releases everything held, in key order. */
uint64_t pulse_wm_flush(struct pulse_wm *w);
/* For a pull-driven source (a replay over files): the index of a host that
 * holds the watermark with nothing queued, so its next line (or its end) is
 * needed before anything more can be released; -1 when none. */
int pulse_wm_starving(const struct pulse_wm *w);
const char *pulse_wm_host_name(const struct pulse_wm *w, int idx);
void pulse_wm_stats(const struct pulse_wm *w, struct pulse_wm_stats *st);

/* The data-time key of one agent JSON line (include/pulse/op_record.h and
 * host-agent/README.md): an "op" its last byte or its call, whichever is
 * later; a "window" its end (host_end_ns); a "hook_op"/"hook_group" its call
 * (t_ns); any other line 0 (it takes its host's latest key). */
uint64_t pulse_wm_line_key(const char *line, size_t len);

#endif
