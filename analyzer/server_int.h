/* What the three files of pulse-analyzer's TCP service share
 * (analyzer/server.h is its interface):
 *   server_conn.c  connections and the loop: listening, accepting, reading
 *                  and flushing, the protocol state machine of one agent
 *                  connection (HELLO, data frames, BYE), throttling, clock
 *                  skew, ticks;
 *   server_join.c  the cross-host QP join over every host's latest map;
 *   server_main.c  configuration, statistics, signals, an_serve;
 *   server_metrics.c  /metrics (--metrics-listen), from a snapshot;
 *   server_bus.c   the job's records from NATS JetStream (--bus).
 * Calls go one way: main -> conn -> join (and join sends through conn). */
#ifndef PULSE_ANALYZER_SERVER_INT_H
#define PULSE_ANALYZER_SERVER_INT_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/analyzer_wire.h"
#include "pulse/qp_join.h"
#include "pulse/watermark.h"
#include "server.h"

#define MAX_HOSTS 4096
#define LOG_FIRST 20      /* per connection: the first this many bad events are logged, */
#define LOG_EVERY 1000    /* then every this many */

enum { C_NEW = 0, C_READY = 1, C_DEAD = 2, C_LINGER = 3 };
/* C_LINGER: we said ERROR; its input is read and discarded until it closes
 * or for LINGER_NS, so that closing with its data unread does not reset
 * the connection before it has read the ERROR. */
#define LINGER_NS 1000000000ull
#define ACTIVE(c) ((c)->state == C_NEW || (c)->state == C_READY)

struct host_ent {
	char name[PULSE_AW_NAME_LEN];
	struct conn *conn;           /* its current connection, or NULL */
	uint64_t t_gone;             /* monotonic ns its last connection ended (0: never) */
	/* its latest hook_map, parsed for the join */
	struct pulse_join_qp *qps;
	uint32_t nqps;
	struct pulse_join_comm *comms;
	uint32_t ncomms;
	int have_map;
	char *last_join;             /* what it was last sent (t_ns and version zeroed) */
	uint64_t agent_dropped;      /* the agent's own drops, from its HEARTBEAT */
	int skewed;
	int64_t skew_ns;
	int64_t skew_s[4];           /* the last samples (agent - analyzer realtime) */
	uint32_t nskew;
};

struct conn {
	int fd;
	int state;
	char peer[80];
	struct host_ent *host;
	uint16_t version;
	struct pulse_aw_decoder dec;
	uint8_t *out;
	size_t out_len, out_off, out_alloc;
	uint32_t seq;
	int wdead;                   /* sending failed: what it sent is still read, then closed */
	int wshut;                   /* lingering: our side shut down after the ERROR went out */
	uint64_t linger_until;
	uint64_t t_accept, t_rx;     /* monotonic ns */
	double tokens;
	uint64_t t_tokens;
	uint64_t throttled_since;     /* start of the current flood episode (0: none) */
	uint64_t throttled_last;      /* the last turn it was over its rate */
	uint64_t throttled_frames;   /* data frames taken on credit in this episode */
	uint64_t nlog;
	uint64_t frames, lines;
};

struct an_srv {
	struct an_state *state;
	struct an_srv_cfg cfg;
	FILE *log;
	int lfd;
	int port;
	char job[PULSE_AW_NAME_LEN];
	struct conn **conns;
	uint32_t nconns, capconns;
	struct host_ent *hosts;
	uint32_t nhosts;
	struct an_srv_stats st;
	struct pulse_wm *wm;         /* the analyzer's clock: lines wait here for the data-time
	                              * watermark (include/pulse/watermark.h) */
	uint64_t t_start, t_tick, join_due;
	uint64_t join_gen;
	int stop;
	struct pollfd *pfd;
	uint32_t cappfd;
	struct pulse_op_record *rec; /* one OPS record being decoded (large: not on the stack) */
	struct srv_metrics *metrics; /* --metrics-listen (server_metrics.c), or NULL */
	struct pulse_bus *bus;       /* --bus (server_bus.c), or NULL */
	char owner[96];              /* our name in the job's lease */
	int owned;                   /* we hold the job's lease: consume and publish */
	uint64_t lease_rev;          /* its revision: the fencing token of our diagnoses */
	uint64_t t_lease;            /* the last take or renewal attempt (monotonic ns) */
	uint64_t lease_ok_at;        /* the last successful one */
	int lease_lost;              /* stopped because another analyzer took the job */
	int lease_lapsed;            /* owned it, then could not renew it past its expiry
	                              * (the bus unreachable): reading on, publishing
	                              * nothing until it is ours again */
	uint64_t series_seq;         /* SERIES_REQ ids (server_series.c) */
};

/* set by server_main.c's signal handlers, read by the loop */
extern volatile sig_atomic_t srv_sig_stop, srv_sig_usr1;

/* ---- server_conn.c ---- */
void srv_log(struct an_srv *s, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queues one frame to c; 0, or -1 (the connection is then closed). */
int srv_conn_send(struct an_srv *s, struct conn *c, uint8_t type, const void *p, size_t len);

/* ---- server_metrics.c ---- */
/* Serves /metrics on listen; 0, or -1 with err. */
int srv_metrics_start(struct an_srv *s, const char *listen, char *err, size_t errlen);
/* A new snapshot of the counters for the next scrapes (the loop's thread). */
void srv_metrics_update(struct an_srv *s);
void srv_metrics_stop(struct an_srv *s);

/* ---- server_bus.c ---- */
int srv_bus_start(struct an_srv *s, char *err, size_t errlen);
/* Records from the bus, waiting up to timeout_ms: messages handled, -1 unreachable */
int srv_bus_poll(struct an_srv *s, int timeout_ms);
void srv_bus_diagnosis(struct an_srv *s, const struct an_diagnosis *d);
/* server_series.c (only the state's an_series_* functions, so that the
 * unit test's double of the state serves): SERIES_REQ for diagnosis i (when the direction applies),
 * a SERIES frame from c, and the requests past their wait (all: every one
 * still pending, at the end) */
void srv_series_request(struct an_srv *s, uint32_t diag);
void srv_series_answer(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f);
void srv_series_expire(struct an_srv *s, int all);
void srv_bus_stop(struct an_srv *s);

/* ---- server_join.c ---- */
/* A MAP payload (wire/hook_map.c) into h's join input. 0, or -1 with err. */
int srv_parse_map(struct host_ent *h, const char *line, size_t len, char *err, size_t errlen);
/* Joins every host's latest map; sends JOIN to each connected host whose
 * part of the result changed. */
void srv_run_join(struct an_srv *s);

#endif
