/* pulse-analyzer: the central service that compares operators across ranks
 * and names the faulty machine (pulse.txt §6.2, §7, §8.1).
 *
 * Internal interfaces between its files, one responsibility each:
 *   state.c      per-job state, fed one agent JSON line at a time: hosts,
 *                communicators and members, operator records, calls
 *   trigger.c    slow-iteration and hang detection (running baseline)
 *   localize.c   Pulse's localization: the order of its methods (localizer.h)
 *   loc_hang.c, loc_comm_slow.c, loc_comp_slow.c, loc_cpu.c
 *                one localization method each (hang; communication
 *                fail-slow; delayed starts; CPU)
 *   diagnosis.c  building, comparing and keeping diagnoses
 *   window.c     the window of instances around a trigger
 *   baseline.c   the OP-level localizer (start, end, duration, observed rate)
 *   report.c     diagnosis as text and as JSON (--json)
 *   timeline.c   Chrome trace-event export of the window around a diagnosis
 *   replay.c     --replay DIR: agent outputs, or runs pulse-host-agent --replay
 *   server_conn.c  TCP service for live agents: connections and the loop
 *                (wire format: include/pulse/analyzer_wire.h)
 *   server_join.c  the service's cross-host QP join
 *   server_main.c  the service's configuration, statistics, signals, an_serve
 *   main.c       options and wiring
 * Hosted C11 + POSIX, libcjson. */
#ifndef PULSE_ANALYZER_H
#define PULSE_ANALYZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/op_record.h"

struct an_cfg {
	uint64_t hang_ns;        /* a call with no operator record this long is a hang;
				  * the bound used is at least one agent poll interval plus
				  * four times the longest operator seen (default 1 s) */
	double slow_factor;      /* an iteration this much slower than the running
				  * baseline triggers localization (default 1.1) */
	uint32_t custom_k;       /* custom collectives: average over the last k (10) */
	/* Added by the localization work (additive): */
	uint64_t skew_bound_ns;  /* host clocks further apart than this: that host's
				  * records are dropped and counted (default 50 ms) */
	uint64_t settle_ns;      /* wait this long in data time after a trigger so the
				  * other hosts' records of the same operators arrive
				  * (default 1.2 s: one agent poll and a margin) */
	uint64_t min_slow_ns;    /* a slowdown smaller than this is not a trigger (500 us) */
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

/* What a hang's culprit was doing (CCL-D's H1-H3), for fail-stop verdicts */
enum an_hang_kind {
	AN_HANG_NONE = 0,
	AN_HANG_NOT_ENTERED = 1,     /* it never entered the operator: in no call, or its GPU never
	                              * started it (H1) */
	AN_HANG_INCONSISTENT = 2,    /* it called another operator or count than its peers (H2) */
	AN_HANG_STOPPED_IN_COMM = 3, /* inside the operator, its NIC stopped sending (H3) */
};
const char *an_hang_kind_key(int k); /* "not_entered", "inconsistent", "stopped_in_comm", "" */

/* Issue 16's answers for a fail-slow machine-level diagnosis
 * (analyzer/answers.h); valid 0: not computed or nothing to say. */
struct an_share {            /* CCL-D's slow ratio */
	int valid;
	double comp_share;       /* computation's share of the excess, 0..1 */
	double delay_ns;         /* start delay (compute before the operators) */
	double active_ns;        /* extra active transmission time (the network path) */
	double gap_ns;           /* extra proxy gaps (wire time minus active epochs) */
	double gap_comp_ns;      /* of gap_ns, the host's (CPU, proxy) */
	uint32_t instances;      /* slowed operator instances behind it */
};
enum an_pattern { AN_PATTERN_NONE = 0, AN_PATTERN_SPIKE, AN_PATTERN_FLUCTUATION, AN_PATTERN_PERSISTENT };
struct an_episode {          /* Holmes's episode */
	int valid;
	uint64_t start_ns, end_ns; /* first and last slowed instance (data time) */
	int pattern;             /* enum an_pattern */
	uint32_t units, touched; /* the node's operator instances in it, those slowed (of the
	                          * operators with any slowed instance) */
	uint32_t xfer_slowed;    /* of those, slowed in their transfers' active time */
	uint32_t capped;         /* of these, with the peak epoch capped too */
	double irregularity;     /* robust CV (1.4826 MAD / median) of the node's excess per iteration */
	double tail;             /* slowed transfers: 90th percentile of the relative extra active
	                          * time over its median (0: fewer than 5) */
	uint32_t it_first, it_last, it_touched; /* iterations (0: the first seen) */
	double it_base_ns;       /* baseline iteration time (0: unknown) */
	double cost_ns;          /* Σ (iteration time − baseline) over the touched iterations */
	double prior;            /* --device-history: the host's posterior (-1: none) */
	uint32_t prior_jobs, prior_hits; /* jobs in the history, those that implicated it */
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
	/* Added by the localization work (additive): */
	char trigger[160];       /* what started the localization */
	char steps[512];         /* the groups walked, in order, as the paper's cases do */
	uint32_t evidence_ranks; /* ranks compared in the evidence */
	int persistent;          /* the evidence already spans two iterations (needs no
	                          * confirmation, trigger.c) */
	int hang_kind;           /* enum an_hang_kind (fail-stop verdicts) */
	/* How far past its rule's threshold the evidence lies: (value -
	 * baseline) / (threshold - baseline), 1 at the threshold, larger
	 * farther; for a hang, how long the culprit has been waiting over the
	 * hang bound. 0: the rule has no threshold (a group verdict). */
	double margin;
	double score;            /* margin / (1 + margin): 0.5 at the threshold, 0.9 at 9x: one
	                          * scale for an alert threshold across rules */
	/* the episode: identical verdicts merge into one (an_same_verdict) */
	uint64_t first_seen_ns, last_seen_ns; /* data time */
	/* the first evidence of the slowdown in the window, where a rule
	 * knows it (onset_ns is its evidence's instance, the iteration a
	 * confirmation leaves out); 0: onset_ns */
	uint64_t slow_from_ns;
	uint32_t times_seen;
	/* A fail-stop verdict whose job went on (its communicator completed a
	 * later operator): a stall, not a hang. The class becomes the
	 * fail-slow one and this is how long it stood still (0: none). */
	uint64_t stall_ns;
	/* issue 16 (analyzer/answers.h) */
	struct an_share share;
	struct an_episode ep;
};

struct an_state;
struct an_state *an_state_new(const struct an_cfg *cfg);
void an_state_free(struct an_state *s);

/* One JSON line of host `host`'s agent output ("op", "hook_op", "hook_group",
 * "hook_map", "window", "event", ...). Returns 0 used, 1 ignored (a type the
 * analyzer does not use; counted), -1 malformed (err set; counted). */
int an_ingest(struct an_state *s, const char *host, const char *line, size_t len, char *err,
	      size_t errlen);

/* One operator record already decoded (the binary form of the wire
 * protocol's OPS frames, include/pulse/op_record.h): exactly what
 * an_ingest does with an "op" line, counted the same way, without the
 * JSON. Every live input (TCP, the bus) goes through an_ingest or this. */
int an_ingest_op(struct an_state *s, const char *host, const struct pulse_op_record *r, char *err,
		 size_t errlen);

/* Live: host `host`'s agent was just sent a JOIN (analyzer/server_join.c).
 * Its traffic waited for the remote ends the JOIN names
 * (host-agent/join_wait.c), so the records of its calls from before the
 * JOIN may come only now: the hang trigger counts them from the JOIN. */
void an_host_join_sent(struct an_state *s, const char *host);

/* Runs the triggers on everything ingested up to data time now_ns and, when
 * one fires, both localizers. Returns the number of new diagnoses. */
int an_tick(struct an_state *s, uint64_t now_ns);
/* After an_ingest: when the line was a host's poll_end and every host's
 * records are now in past what a waiting trigger needs (the "data in"
 * rule, trigger.c), runs the triggers at the current data time, as
 * an_tick does; else nothing. Returns the number of new diagnoses. The
 * watermark's consumers call it after each line they deliver. */
int an_tick_if_settled(struct an_state *s);
/* All diagnoses so far, in order (Pulse and OP-level interleaved). */
const struct an_diagnosis *an_diagnoses(const struct an_state *s, uint32_t *n);

/* ---- Added by the localization work (additive) ---- */

/* End of input (replay): localizes the triggers still waiting for data at
 * the last data time. Returns the number of new diagnoses. */
int an_finish(struct an_state *s);

/* Where an_ingest's drops and the triggers are logged (one line each,
 * rate-limited); NULL (the default) is silent. */
void an_set_log(struct an_state *s, FILE *f);

/* Counters for reports and tests. */
struct an_counters {
	uint64_t lines, used, ignored, malformed;
	uint64_t ops, op_unknown_comm, op_bad_rank, op_skew, op_dup;
	uint64_t hook_ops, hook_unknown_comm, maps, windows;
	uint64_t triggers_slow, triggers_hang, localizations;
	uint64_t confirmed, unconfirmed; /* fail-slow candidates (trigger.c) */
	uint32_t hosts, nodes, comms, skewed_hosts;
	uint64_t data_ns;        /* latest data time */
};
void an_get_counters(const struct an_state *s, struct an_counters *c);

/* Text and JSON reports (report.c). an_report_json returns a cJSON* as
 * void* so that this header does not need cJSON.h; the caller deletes it. */
void an_report_text(const struct an_state *s, FILE *f);
void *an_report_json(const struct an_state *s);
/* One diagnosis as the report lists it (a cJSON object; the caller deletes it). */
void *an_diag_json(const struct an_diagnosis *d);
/* The same with the answers that need the state: "where" (critical_path.c). */
void *an_diag_json_answers(const struct an_state *s, const struct an_diagnosis *d);
/* One diagnosis in a sentence or two (text). */
void an_diag_print(const struct an_diagnosis *d, FILE *f);

/* Chrome trace-event export of the window around diagnosis d (timeline.c).
 * Returns 0, or -1 with errno / a reason in err. */
int an_timeline_write(const struct an_state *s, const struct an_diagnosis *d, const char *path,
		      char *err, size_t errlen);

/* The per-QP series around a diagnosis, asked of live agents
 * (series_fetch.c; the service's side: server_series.c). Requests are
 * known by their id. */
/* Opens request id for diagnosis diag when the direction applies to it
 * (communication fail-slow at machine level): the number of hosts to ask,
 * 0 for none. */
uint32_t an_series_open(struct an_state *s, uint32_t diag, uint32_t id, uint64_t now_mono);
/* Its time range (host time). */
void an_series_range(const struct an_state *s, uint32_t id, uint64_t *from_ns, uint64_t *to_ns);
/* Host k of request id (NULL past the last). */
const char *an_series_host(const struct an_state *s, uint32_t id, uint32_t k);
/* Host k will not answer (not connected, an older protocol, ...). */
void an_series_host_failed(struct an_state *s, uint32_t id, uint32_t k, const char *why);
/* The requests went out to sent hosts; with none the direction is decided
 * at once from nothing (unclear). */
void an_series_sent(struct an_state *s, uint32_t id, uint32_t sent);
/* A SERIES payload from host: 0 taken (*id: its request, *decided: its
 * direction is now decided), -1 undecodable or for no open request (err). */
int an_series_answer(struct an_state *s, const char *host, const uint8_t *p, size_t len, uint32_t *id,
		     int *decided, char *err, size_t errlen);
/* Requests asked before now_mono - wait_ns (all: every open one) are
 * decided with what came; decided(ctx, id) for each. Returns how many
 * hosts never answered. */
uint32_t an_series_expire(struct an_state *s, uint64_t now_mono, uint64_t wait_ns, int all,
			  void (*decided)(void *ctx, uint32_t id), void *ctx);
/* The direction of request id in a line ("egress: ..."), "" while open. */
const char *an_series_result(const struct an_state *s, uint32_t id, char *buf, size_t n);

/* Replay (replay.c): --replay DIR. */
struct an_replay_opts {
	const char *dir;
	const char *agent_bin;   /* NULL: next to this program, else $PATH */
	const char *argv0;
	int quiet;               /* no progress lines on stderr */
	const char *agent_out;   /* NULL: DIR/agent */
	uint32_t epoch_override; /* unused by the analyzer itself (eval passes it to run_cluster) */
};
/* Reads (or produces) the agents' output and feeds it through s in time
 * order. Returns 0, or -1 with a reason in err. */
int an_replay(struct an_state *s, const struct an_replay_opts *o, char *err, size_t errlen);

/* Live service (analyzer/server_*.c, H-ANSVC): serves agents on addr
 * ("HOST:PORT") feeding s until a signal. Returns the exit status. */
int an_serve(struct an_state *s, const char *listen_addr, const char *metrics_listen, FILE *log);
/* The same, and/or the job's records from NATS JetStream (bus: "nats://…",
 * NULL: none), calling on_diag for each diagnosis as soon as it is made
 * (NULL: logged). Returns 0, 1 (could not start: logged), or 3 (another
 * analyzer took the job's lease). */
int an_serve_bus(struct an_state *s, const char *listen_addr, const char *metrics_listen, const char *bus,
		 const char *job, FILE *log, void (*on_diag)(void *ctx, const struct an_diagnosis *d),
		 void *ctx);

#endif
