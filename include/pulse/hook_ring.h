/* The per-process interception ring: lock-free, many producers (the threads
 * of one training process, through libpulse-hook.so and/or
 * libpulse-nccl-profiler.so), one consumer (the host agent).
 *
 * Discovery: the producer side creates POSIX shared memory named
 * "/pulse-hook.<pid>" (i.e. /dev/shm/pulse-hook.<pid>) when it loads. The
 * agent lists /dev/shm for that prefix (pulse_hook_ring_scan), attaches
 * (pulse_hook_ring_open), drains every poll, and once the pid is gone and
 * the ring is empty, closes it with unlink=1.
 *
 * Records are written whether or not a reader is attached; a record that
 * finds the ring full is dropped and counted (dropped_full while a reader is
 * attached, dropped_no_reader while none has ever attached). So an agent
 * that starts late still gets the first `capacity` records (communicator
 * creation comes first), and never a stale tail.
 */
#ifndef PULSE_HOOK_RING_H
#define PULSE_HOOK_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pulse/hook_record.h"

#define PULSE_HOOK_RING_MAGIC 0x474e495245534c50ull /* "PLSERING" */
#define PULSE_HOOK_RING_PREFIX "pulse-hook."
#define PULSE_HOOK_RING_DEFAULT_RECORDS 16384u
#define PULSE_HOOK_RING_MAX_RECORDS (1u << 22)

struct pulse_hook_ring; /* a mapping of one ring, writer or reader side */

struct pulse_hook_ring_stats {
	uint64_t written;           /* records published */
	uint64_t consumed;          /* records drained */
	uint64_t dropped_full;      /* ring full, a reader attached */
	uint64_t dropped_no_reader; /* ring full, no reader ever attached */
	uint32_t capacity;
	uint32_t pid;               /* producer process */
	uint32_t reader_pid;        /* 0: never attached */
	uint32_t hook_loaded;       /* 1: libpulse-hook.so writes here */
};

/* ---- producer side (libpulse-hook.so, the profiler plugin, tests) ---- */

/* Create "/<prefix><pid>" with `records` slots (power of two, 2..2^22).
 * Returns NULL and sets errno on failure. */
struct pulse_hook_ring *pulse_hook_ring_create(pid_t pid, uint32_t records);
/* Anonymous (process-private) ring, for tests and benchmarks. */
struct pulse_hook_ring *pulse_hook_ring_create_private(uint32_t records);
/* Lock-free; never blocks, never allocates. 0 or -1 (full: dropped, counted). */
int pulse_hook_ring_push(struct pulse_hook_ring *r, const struct pulse_hook_record *rec);
void pulse_hook_ring_set_hook_loaded(struct pulse_hook_ring *r);
/* 1 when a reader has attached. */
int pulse_hook_ring_reader_attached(const struct pulse_hook_ring *r);

/* ---- consumer side (the host agent) ---- */

/* Attach to the ring of `pid`. 0, or -errno (ENOENT: none; EPROTO: unknown
 * version/layout). Marks the ring as attached by this process. */
int pulse_hook_ring_open(pid_t pid, struct pulse_hook_ring **out);
/* Copy up to `max` ready records, oldest first. Single consumer only. */
size_t pulse_hook_ring_drain(struct pulse_hook_ring *r, struct pulse_hook_record *out, size_t max);
/* Records published but not yet drained. */
uint64_t pulse_hook_ring_pending(const struct pulse_hook_ring *r);
void pulse_hook_ring_stats(const struct pulse_hook_ring *r, struct pulse_hook_ring_stats *st);
/* Fill `pids` with the producers that have a ring in /dev/shm; returns how
 * many were found (may exceed max; only max are written), -errno on error. */
int pulse_hook_ring_scan(pid_t *pids, size_t max);
/* Unmap; unlink=1 also removes the shared-memory name (the agent does that
 * once the producer is gone and the ring drained). NULL is fine. */
void pulse_hook_ring_close(struct pulse_hook_ring *r, int unlink);
/* Unmap without touching the name (after fork, in the child). */
void pulse_hook_ring_forget(struct pulse_hook_ring *r);

#endif
