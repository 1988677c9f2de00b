/* The firmware replay driver: feeds an event-stream file
 * (include/pulse/event_stream.h) through the NIC agent core exactly as the
 * NIC and the host agent would, and writes every mailbox response it gets.
 *
 * Portable C on stdio only (fopen/fread/fwrite), so the same source is built
 * for x86 (glibc, build/bin/pulse-fw-replay) and for the rv64imac image
 * (picolibc, file I/O through semihosting, build/rv64/pulse-fw.elf). For the
 * same stream and options both must write byte-identical output; the
 * same-code check (tests/emu/same-output.sh) compares them.
 *
 * Output file: for every response, u32 little-endian length, then the
 * response message exactly as pulse_fw_mailbox wrote it. The CONFIGURE
 * response is not written: it carries the platform id (HELLO layout), which
 * differs between the builds by design. Its status is checked instead.
 *
 * What it sends:
 *   start:          pulse_fw_init(now = first record's timestamp), then
 *                   CONFIGURE (epoch, window, page size, clip, limits)
 *   TX record:      pulse_fw_on_tx(thread = record.thread % max_threads)
 *   POLL record:    POLL (host_ns from the record, now = record ts), then
 *                   READ_PAGE 0, 1, ... until the page flagged LAST, then STATS
 *   end of file:    the same sequence once more (the final poll), with now =
 *                   the last record's timestamp. */
#ifndef PULSE_FW_REPLAY_H
#define PULSE_FW_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/nic_agent.h"

/* Limits the replay uses unless told otherwise. They fit the rv64 image's
 * memory (see firmware/emu_rv64.mk) with room to spare. */
#define PULSE_REPLAY_DEFAULT_MAX_FLOWS 4096u
#define PULSE_REPLAY_DEFAULT_POOL_BLOCKS 131072u
#define PULSE_REPLAY_DEFAULT_THREADS 16u
#define PULSE_REPLAY_RESP_CAP 65535u

struct pulse_replay_opts {
	const char *in;
	const char *out;
	struct pulse_fw_limits lim;
	struct pulse_mb_config cfg; /* sent as CONFIGURE */
	int verbose;                /* one line per poll on stdout */
	int print_stats;            /* the last STATS response's counters at the end */
};

/* Usage text, for --help and errors; `prog` is how the caller is invoked. */
void pulse_replay_usage(const char *prog);

/* Parses "IN OUT [options]" (argv[0] is the first of these). Fills o with the
 * defaults first. Returns 0, or -1 after printing the reason. */
int pulse_replay_parse(int argc, char **argv, uint32_t platform, struct pulse_replay_opts *o);

/* Runs the replay in the caller's memory region (64-byte aligned). Returns 0
 * on success, 1 when the input was bad (unreadable, bad header, truncated),
 * 2 on a setup error (memory, limits, CONFIGURE refused, output not
 * writable). Progress and errors go to stdout/stderr. */
int pulse_replay_run(const struct pulse_replay_opts *o, void *mem, size_t mem_size);

/* Small helpers shared by the platform mains. */
int pulse_replay_parse_u32(const char *s, uint32_t *out);

#endif
