/* pulse-analyzer's TCP service for live host agents: analyzer/server_conn.c
 * (connections and the loop), server_join.c (the QP join), server_main.c
 * (configuration, signals, an_serve); what they share: server_int.h.
 * Wire format: include/pulse/analyzer_wire.h, analyzer/PROTOCOL.md.
 *
 * One thread, poll(2), nonblocking sockets. Each agent connection has a
 * streaming decoder (input bounded by the payload bound), an output buffer
 * with a cap, and a frame-rate bound. Agent lines (OP, CALLS, MAP, LINES)
 * go under the host name of the connection's HELLO through the data-time
 * watermark (include/pulse/watermark.h) to an_ingest(), and an_tick() runs
 * at data time as the watermark advances, never at the analyzer's own clock,
 * so that a live run and its replay decide alike. Each host's
 * latest hook_map is kept; when any changes, the cross-host QP join
 * (include/pulse/qp_join.h) runs over all of them and every connected host
 * whose part of the result changed gets a JOIN.
 *
 * Bad input never stops the service: every case has a log line (rate
 * limited per connection) and a counter in struct an_srv_stats, printed on
 * SIGUSR1 and at the end (an_srv_stats_print) and available as JSON. */
#ifndef PULSE_ANALYZER_SERVER_H
#define PULSE_ANALYZER_SERVER_H

#include <stdint.h>
#include <stdio.h>

struct an_state;
struct an_diagnosis;

struct an_srv_cfg {
	const char *listen;          /* "ADDR:PORT", "[V6ADDR]:PORT", ":PORT" or "PORT" (any
				      * address, IPv6 and IPv4); port 0 picks a free one */
	const char *job;             /* NULL: the first HELLO's job, then only that one */
	const char *port_file;       /* write the bound port here (with port 0) */
	uint32_t max_conns;          /* agents at once (256); more get ERROR FULL */
	uint32_t max_payload;        /* frame payload bound (PULSE_AW_MAX_PAYLOAD) */
	uint32_t out_cap;            /* per-connection output bytes (8 MiB); over it: closed */
	uint32_t max_frames_per_s;   /* data frames per connection and second (20000); 0: no
				      * bound. Over it the connection is not read (backpressure)
				      * until it is back under: nothing read is dropped */
	uint32_t flood_burst;        /* token bucket depth (0: 2 x max_frames_per_s) */
	uint32_t flood_close_s;      /* throttled without a break this long: ERROR FLOOD and
				      * close (10) */
	uint32_t read_per_turn;      /* bytes read from one connection per loop turn (256 KiB) */
	uint64_t max_skew_ns;        /* |agent realtime - ours| above this is a skew event (50 ms) */
	int drop_skewed;             /* drop the data of a host while it is beyond the bound
				      * (default 0: keep it, count and log) */
	uint32_t hello_timeout_ms;   /* 5000 */
	uint32_t idle_timeout_ms;    /* 30000: nothing received for this long: closed */
	uint32_t heartbeat_ms;       /* told to the agents in HELLO_ACK (1000) */
	uint32_t tick_ms;            /* how often the service looks at its timers (200) */
	uint32_t silent_ms;          /* an agent silent this long (wall time) stops holding the
	                              * watermark, so the others are analyzed (5000) */
	uint32_t start_grace_ms;     /* after the first HELLO, nothing is analyzed for this
	                              * long, so that the other agents (reconnecting after a
	                              * restart of the analyzer) are there too (2000) */
	uint32_t join_delay_ms;      /* a changed map is joined after this quiet time (100) */
	uint64_t run_ns;             /* 0: until SIGTERM/SIGINT (or stop) */
	uint32_t exit_after_byes;    /* >0: return once this many agents said BYE and
				      * none is connected (tests, demo) */
	const char *metrics_listen;  /* "IPV4:PORT": serve /metrics there (NULL: no) */
	const char *bus;             /* "nats://…": consume the job's records from NATS
				      * JetStream (with job; listen may then be NULL) */
	const char *bus_durable;     /* a durable consumer name (NULL: read the stream from its start) */
	const char *owner;           /* this analyzer's name in the job's lease (NULL: host-pid) */
	uint32_t lease_ms;           /* the lease expires this long after its last renewal (3000);
				      * renewed every third of it */
	uint32_t max_version;        /* highest protocol version to choose (0: PULSE_AW_VERSION_MAX);
				      * 1 makes agents send JSON OP frames (a comparison, or to
				      * see the records in a capture) */
	int no_signals;              /* do not install SIGTERM/SIGINT/SIGUSR1 handlers */
	FILE *log;                   /* NULL: stderr */
	/* called after each an_tick that found new diagnoses (may be NULL) */
	void (*on_diagnosis)(void *ctx, const struct an_diagnosis *d);
	void *ctx;
};
void an_srv_cfg_default(struct an_srv_cfg *c);

struct an_srv_stats {
	/* connections */
	uint64_t accepted, refused_full, closed, agents_now, agents_max;
	uint64_t hellos, hello_bad, hello_version, hello_job, replaced, byes, agent_errors;
	uint64_t hello_timeouts, idle_timeouts;
	uint64_t mid_frame_disconnects;   /* closed with part of a frame received */
	uint64_t mid_frame_bytes;         /* the bytes of those partial frames */
	/* frames */
	uint64_t frames_in, bytes_in, frames_out, bytes_out;
	uint64_t bad_magic, oversize;     /* stream fatal: ERROR and close */
	uint64_t bad_frames;              /* unknown version/type/flags: skipped */
	uint64_t bad_payload;             /* a payload that does not decode: skipped */
	uint64_t protocol_errors;         /* a frame in the wrong state or direction */
	uint64_t flood_throttled;         /* episodes of a connection over its frame rate */
	uint64_t flood_closes;            /* closed after flood_close_s throttled */
	uint64_t out_overflows;           /* output cap reached: closed */
	/* lines into the analyzer state */
	uint64_t lines, lines_used, lines_ignored, lines_rejected;
	/* clocks */
	uint64_t skew_events;             /* HELLO/HEARTBEAT beyond the bound */
	uint64_t skew_dropped;            /* lines dropped (drop_skewed) */
	int64_t max_skew_ns;              /* the largest |skew| seen, signed (agent - analyzer) */
	uint64_t agent_dropped;           /* what the agents reported dropping (latest per host, summed) */
	/* join */
	uint64_t maps, map_bad, join_runs, joins_sent, join_oversize;
	uint64_t join_qps, join_paired, join_no_partner, join_ambiguous, join_not_connected;
	/* analysis */
	uint64_t ticks, diagnoses;
	uint64_t wm_late, wm_held_max, wm_silent; /* watermark: lines late, most held, hosts silent */
	uint64_t stats_requests;          /* SIGUSR1 */
	/* per-QP series around diagnoses (protocol 3, server_series.c) */
	uint64_t series_reqs, series_answers, series_bad, series_unanswered;
};
/* One line "server: accepted=... ..." (no trailing newline added by callers). */
void an_srv_stats_print(FILE *f, const struct an_srv_stats *st);
/* A cJSON object (as void*, so that this header does not need cJSON.h);
 * the caller deletes it or adds it to a report. */
void *an_srv_stats_json(const struct an_srv_stats *st);

/* Step-wise use (tests, or a caller with its own loop). */
struct an_srv;
struct an_srv *an_srv_new(struct an_state *s, const struct an_srv_cfg *cfg, char *err,
			  size_t errlen);
int an_srv_port(const struct an_srv *srv);
/* The /metrics port (metrics_listen with port 0 picks one); -1 without. */
int an_srv_metrics_port(const struct an_srv *srv);               /* the bound port */
/* One loop turn: waits up to timeout_ms for sockets, then serves them and
 * runs due timers. Returns 1 while it should go on, 0 when done (run time
 * over, exit_after_byes reached, stop requested). */
int an_srv_step(struct an_srv *srv, int timeout_ms);
void an_srv_stop(struct an_srv *srv);                    /* the next step returns 0 */
const struct an_srv_stats *an_srv_stats(const struct an_srv *srv);
/* Closes every connection (BYE "shutdown"), the listener, and frees. */
void an_srv_free(struct an_srv *srv);

/* Serves until the end (signals, run_ns, exit_after_byes). Prints the stats
 * line to the log at the end and copies the counters to *st (may be NULL).
 * Returns 0, or 1 when it could not start (reason logged). */
int an_serve_cfg(struct an_state *s, const struct an_srv_cfg *cfg, struct an_srv_stats *st);
/* The same with the defaults (analyzer/analyzer.h's declaration), changed
 * by the environment variable PULSE_ANALYZER_SERVER="key=value,..." with
 * keys max_conns, max_payload, out_cap, max_fps, flood_burst,
 * flood_close_s, read_per_turn, max_skew_ms, drop_skewed, hello_timeout_ms,
 * idle_timeout_ms, heartbeat_ms, tick_ms, silent_ms, start_grace_ms, join_delay_ms, run_ms,
 * exit_after_byes (numbers) and job (a name); an unknown key is an error. */
int an_serve(struct an_state *s, const char *listen_addr, const char *metrics_listen, FILE *log);
/* The same with the bus (NULL: none), the job (NULL: the first HELLO's),
 * and on_diag called with each diagnosis as soon as it is made (NULL: it
 * is logged). Returns 0, 1 (could not start: logged), or 3 (--bus: another
 * analyzer took the job's lease). */
int an_serve_bus(struct an_state *s, const char *listen_addr, const char *metrics_listen, const char *bus,
		 const char *job, FILE *log, void (*on_diag)(void *ctx, const struct an_diagnosis *d),
		 void *ctx);
/* The counters of the last an_serve / an_serve_cfg run (for --json). */
const struct an_srv_stats *an_serve_last_stats(void);

#endif
