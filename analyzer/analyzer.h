/* pulse-analyzer: the central service that compares operators across ranks
 * and names the faulty machine (pulse.txt §6.2, §7, §8.1).
 *
 * Internal interfaces between its files, one responsibility each:
 *   state.c      per-job state, fed one agent JSON line at a time: hosts,
 *                communicators and members, operator records, calls
 *   trigger.c    slow-iteration and hang detection (running baseline)
 *   localize.c   Pulse's localization from µs-level operator metrics
 *   baseline.c   the OP-level localizer (start, end, duration, observed rate)
 *   report.c     diagnosis as text and as JSON (--json)
 *   timeline.c   Chrome trace-event export of the window around a diagnosis
 *   replay.c     --replay DIR: agent outputs, or runs pulse-host-agent --replay
 *   server.c     TCP service for live agents (wire format: include/pulse/analyzer_wire.h)
 *   main.c       options and wiring
 * Hosted C11 + POSIX, libcjson. */
#ifndef PULSE_ANALYZER_H
#define PULSE_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/op_record.h"

struct an_cfg {
	uint64_t hang_ns;        /* an operator unfinished this long, or a rank silent
				  * this long while its peers wait: a hang (default 10 s) */
	double slow_factor;      /* an iteration this much slower than the running
				  * baseline triggers localization (default 1.2) */
	uint32_t custom_k;       /* custom collectives: average over the last k (10) */
};
void an_cfg_default(struct an_cfg *c);

enum an_class {
	AN_CLASS_NONE = 0,
	AN_COMP_SLOW = 1,
	AN_COMP_STOP = 2,
	AN_COMM_SLOW = 3,
	AN_COMM_STOP = 4,
};
const char *an_class_name(int c); /* "computation fail-slow", ... */

enum an_level {
	AN_LEVEL_NONE = 0,
	AN_LEVEL_MACHINE = 1, /* host and GPU named (or a set of at most two, as §D.4) */
	AN_LEVEL_GROUP = 2,   /* only a communicator's members */
};

#define AN_MAX_SUSPECTS 8
#define AN_MAX_MEMBERS 256

struct an_suspect {
	char host[PULSE_OP_HOST_LEN];
	int32_t gpu;
	int32_t rank;            /* in the evidence communicator */
};

struct an_diagnosis {
	int cls;                 /* enum an_class */
	int level;               /* enum an_level */
	const char *localizer;   /* "pulse" or "op-level" */
	uint32_t nsuspects;
	struct an_suspect suspects[AN_MAX_SUSPECTS];
	uint32_t nmembers;       /* group-level: the group */
	struct an_suspect members[AN_MAX_MEMBERS];
	/* evidence */
	uint64_t comm_id;
	uint64_t seq;
	uint8_t op;              /* PULSE_HOOK_OP_* or PULSE_OP_GROUP */
	char metric[48];         /* e.g. "active_ns", "start_ns", "actual_bytes", "rank_rate_gbps" */
	double value, median;    /* the culprit's value and the group median */
	char why[256];           /* one sentence a cluster operator understands */
	uint64_t onset_ns;       /* first evidence of the anomaly (host realtime) */
	uint64_t report_ns;      /* when the analyzer could report it (data time) */
};

struct an_state;
struct an_state *an_state_new(const struct an_cfg *cfg);
void an_state_free(struct an_state *s);

/* One JSON line of host `host`'s agent output ("op", "hook_op", "hook_group",
 * "hook_map", "window", "event", ...). Returns 0 used, 1 ignored (a type the
 * analyzer does not use; counted), -1 malformed (err set; counted). */
int an_ingest(struct an_state *s, const char *host, const char *line, size_t len, char *err,
	      size_t errlen);

/* Runs the triggers on everything ingested up to data time now_ns and, when
 * one fires, both localizers. Returns the number of new diagnoses. */
int an_tick(struct an_state *s, uint64_t now_ns);
/* All diagnoses so far, in order (Pulse and OP-level interleaved). */
const struct an_diagnosis *an_diagnoses(const struct an_state *s, uint32_t *n);

#endif
