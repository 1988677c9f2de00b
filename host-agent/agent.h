/* pulse-host-agent: the host's collection daemon. Internal interfaces
 * between its files, one file per responsibility:
 *   options.c    command line
 *   log.c        one line per event on the log (stderr or --log FILE)
 *   nic.c        one NIC: transport, handshake, poll, gap detection
 *   clock_sync.c NIC clock -> host CLOCK_REALTIME with an error bound
 *   retention.c  bounded ring of recent windows (--retain, --retain-mem)
 *   dump.c       the ring as epochs.csv / epochs.json (run_trace --out schema)
 *   jsonl.c      per-poll per-QP summaries as JSON lines (--out)
 *   metrics.c    OpenMetrics endpoint (libmicrohttpd)
 *   daemon.c     signals, lock files, the control socket
 *   hook_drain.c interception rings (libpulse-hook.so): discovery, drain,
 *                drops, operator/group records as JSON lines
 *   qp_map.c     the host's mapping from those records: QPs and communicators
 *   loop.c       the poll scheduler
 *   op_feed.c    the association's inputs each cycle: join store, mapping,
 *                windows, flush to "op" lines
 *   replay.c     --replay DIR: a run_cluster directory through the same code
 *   main.c       wiring
 * Hosted C11 + POSIX. */
#ifndef PULSE_HOST_AGENT_H
#define PULSE_HOST_AGENT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/nic_client.h"
#include "pulse/transport_doca.h"
#include "pulse/transport_unix.h"

#define AGENT_MAX_NICS 16
#define AGENT_NAME_MAX 128

/* ---- options.c ---- */
enum nic_kind { NIC_SIM, NIC_DOCA, NIC_REPLAY /* replay.c: in-process firmware core */ };

struct agent_opts {
	int nnics;
	enum nic_kind kind[AGENT_MAX_NICS];
	const char *target[AGENT_MAX_NICS]; /* socket path or IB device name */
	const char *dev[AGENT_MAX_NICS];    /* IB device name the QP mapping uses (--sim DEV=SOCKET) */
	uint64_t poll_ns;
	uint32_t epoch_ns;
	uint32_t page_bytes;
	uint32_t timeout_ms;       /* per exchange */
	const char *out_path;      /* JSON lines; NULL or "-": stdout */
	const char *log_path;      /* NULL: stderr */
	uint64_t retain_ns;
	uint64_t retain_mem;
	const char *dump_path;     /* SIGUSR1 target directory */
	const char *control_path;  /* command socket */
	const char *metrics_listen;/* "ADDR:PORT" */
	const char *lock_dir;
	uint64_t exit_after_ns;    /* 0: run until signalled */
	uint64_t max_polls;        /* 0: unlimited */
	int quiet_windows;         /* no JSON lines (benchmarks) */
	const char *hook_dir;      /* where to look for interception rings (NULL: /dev/shm) */
	int no_hooks;              /* --no-hooks */
	const char *replay_dir;    /* --replay DIR: a sim/run_cluster run directory */
	const char *replay_host;   /* --host H (NULL: every host of the run) */
	const char *host_name;     /* --host-name (NULL: gethostname) */
	const char *analyzer;      /* --analyzer HOST:PORT (pulse-analyzer --listen) */
	const char *job;           /* --job ID */
	const char *bus;           /* --bus nats://… (NATS JetStream, bus/) */
	double replay_speed;       /* --speed X: a replay paced at X x real time (0: flat out) */
	int replay_child;          /* a child of replay_fork.c: the parent made --out fresh */
	uint64_t hang_ns;          /* --hang: the association's hang bound (0: its default) */
	const char *sim_clock;     /* --sim-clock FILE: a simulated host's clock (cluster server) */
	const char *sim_links;     /* --sim-links FILE: its link events (cluster server) */
	double clock_rate;         /* host-clock ns per wall ns (1; --sim-clock: its rate) */
	int epoch_set, poll_set;   /* --epoch / --poll given explicitly */
	const char *sysfs_root;    /* --sysfs-root DIR (NULL: /sys) */
	int list_devices;          /* --list-devices */
	int device_auto;           /* --device auto */
	const char *netdevs[AGENT_MAX_NICS]; /* --netdev IF: also watch these links */
	int nnetdevs;
	int no_netlink;            /* --no-netlink */
	uint64_t series_from_ns, series_to_ns; /* --series-query (replay): 0 0 none */
	const char *series_out;    /* --series-out FILE */
};

/* Returns 0 to run, 1 when --help was printed (exit 0), 2 on bad usage
 * (message already printed). */
int agent_parse_options(struct agent_opts *o, int argc, char **argv);
/* "500ms", "1s", "2s", "32us", "1.5s"; bare numbers use default_unit_ns. */
int agent_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out);
/* "256M", "1G", "4096", "64K". */
int agent_parse_size(const char *s, uint64_t *out);

/* ---- log.c ---- */
int agent_log_open(const char *path); /* NULL: stderr. 0 or -1 */
int agent_log_reopen(void);
void agent_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define LOGI(...) agent_log("info", __VA_ARGS__)
#define LOGW(...) agent_log("warn", __VA_ARGS__)
#define LOGE(...) agent_log("error", __VA_ARGS__)

/* The host's CLOCK_REALTIME, as every part of the agent reads it. Replay
 * (replay.c) sets a virtual time instead: the host time of the poll being
 * replayed, so the live code paths run unchanged on recorded time. The log's
 * own timestamps stay on the real clock. */
uint64_t agent_realtime_ns(void);
void agent_clock_set_virtual(uint64_t ns); /* 0: back to the real clock */
/* A simulated host's clock (--sim-clock): realtime = real0 + (monotonic -
 * mono0) x rate. Reads FILE (one line "pulse-sim-clock 1 REAL0 MONO0 RATE",
 * written by pulse-cluster-serve). 0, or -1 with err. */
int agent_clock_load_sim(const char *path, double *rate, char *err, size_t errlen);
/* With a PHASE in the clock file (the host time of one of the simulated
 * run's own polls): CLOCK_MONOTONIC of the next poll in phase with it, so
 * that the live agent cuts the same windows as the recorded one; else 0. */
uint64_t agent_clock_sim_align(uint64_t period_ns);
uint64_t agent_mono_ns(void);

/* ---- clock_sync.c ---- */
#define CLOCK_SYNC_HIST 4
struct clock_sync {
	int valid;
	int64_t offset_ns;   /* host CLOCK_REALTIME = NIC ns + offset */
	uint64_t err_ns;     /* the error bound of that offset */
	uint64_t max_err_ns; /* worst error seen */
	uint64_t samples;
	/* the last polls: a slow one (a busy host) does not replace the offset
	 * of a fast one a few seconds older (the filter of NTP's clock filter) */
	struct { int64_t offset_ns; uint64_t err_ns, mid_ns; } hist[CLOCK_SYNC_HIST];
	uint32_t nhist;
};
/* Takes one POLL exchange: host send/receive times and the NIC's time at the
 * poll (the window end). The NIC time is taken as the midpoint; the offset
 * kept stays while every one of the last CLOCK_SYNC_HIST samples allows it
 * (its bound widened by 50 ppm of drift over its age), and moves to the
 * nearest offset they all allow when one does not. */
void clock_sync_update(struct clock_sync *cs, uint64_t host_send_ns, uint64_t host_recv_ns,
		       uint64_t nic_ns);
uint64_t clock_sync_to_host(const struct clock_sync *cs, uint64_t nic_ns);

/* ---- nic.c ---- */
enum gap_flag {
	GAP_NONE = 0,
	GAP_PAGES = 1 << 0,     /* pages of this window missing */
	GAP_SEQ = 1 << 1,       /* windows between the last one and this never arrived */
	GAP_RESTART = 1 << 2,   /* the NIC agent restarted (or was reconfigured): data lost */
	GAP_DOWN = 1 << 3,      /* the NIC was unreachable since the last window */
	GAP_ABANDONED = 1 << 4, /* the firmware abandoned our previous upload */
	GAP_LONG = 1 << 5,      /* the window lasted over twice its configured length (the
				 * NIC went unpolled): events past the firmware's range are lost */
};
#define GAP_KINDS 6
extern const char *const agent_gap_names[GAP_KINDS];

enum err_cause {
	ERR_TRANSPORT, ERR_VERSION, ERR_SHORT, ERR_REPEAT, ERR_COUNT_CHANGED, ERR_WINDOW,
	ERR_STATUS, ERR_COUNT
};
extern const char *const agent_err_names[ERR_COUNT];

struct agent_nic {
	char name[AGENT_NAME_MAX];   /* "sim:/path" or "mlx5_0" */
	enum nic_kind kind;
	const char *target;
	char dev[24];                /* IB device name (QP mapping -> this NIC), "" unknown */
	struct pulse_unix_client uc;
	struct pulse_doca *doca;
	struct pulse_nic_client cl;
	int client_ok;
	struct pulse_window w;
	int lock_fd;

	int up;                /* handshake done and the last exchange worked */
	int ever_up;
	uint64_t instance_id;
	int have_instance;
	int expect_restart;    /* we configured: the next window says RESTARTED */
	int have_seq;
	uint32_t last_seq;
	uint64_t last_nic_end;
	uint64_t last_host_end;
	unsigned pending_gap;  /* gap flags for the next window */
	uint64_t down_attempts;
	struct clock_sync cs;
	struct pulse_mb_hello hello;

	/* counters (read by metrics under the agent lock) */
	uint64_t polls, poll_failures, windows, windows_incomplete, upload_bytes,
		upload_exchanges, slow_uploads, handshakes, restarts, gaps_total;
	uint64_t gaps[GAP_KINDS]; /* by gap flag bit */
	uint64_t errs[ERR_COUNT];
	uint64_t windows_missed; /* windows lost to sequence gaps */
	double last_poll_s, max_poll_s, poll_s_sum;
	double last_upload_s;
	uint64_t fw_stats[PULSE_STAT_COUNT];
	int have_fw_stats;
	uint32_t last_flows;
};

struct agent;
int nic_open(struct agent *a, struct agent_nic *n, enum nic_kind kind, const char *target,
	     char *err, size_t errlen);
void nic_close(struct agent_nic *n);
/* One poll period's work for one NIC: handshake if needed, POLL, drain,
 * STATS, outputs. Never blocks longer than a few exchange timeouts. */
void nic_cycle(struct agent *a, struct agent_nic *n);

/* ---- retention.c ---- */
struct ret_flow {
	uint32_t qpn;
	uint32_t count;
	uint64_t total_bytes;
	uint32_t *epoch;
	uint64_t *bytes;
};
struct ret_window {
	uint16_t nic;            /* index into agent.nics */
	uint16_t poll_flags;
	uint32_t window_seq;
	uint32_t epoch_ns;
	uint32_t pages_missing;
	uint32_t flows_aged;
	uint32_t gap;            /* enum gap_flag bits */
	int complete;
	uint64_t nic_start_ns, nic_end_ns, host_send_ns, host_recv_ns;
	uint64_t host_start_ns, host_end_ns, clock_err_ns;
	uint32_t nflows;
	size_t mem;              /* bytes this entry holds */
	struct ret_flow *flows;
};
struct retention {
	uint64_t retain_ns;
	uint64_t cap_bytes;
	struct ret_window **ring;
	uint32_t cap, head, count;
	uint64_t mem;
	uint64_t stored, expired, dropped_cap, dropped_oversize;
};
int retention_init(struct retention *r, uint64_t retain_ns, uint64_t cap_bytes);
void retention_free(struct retention *r);
/* Copies the window in; evicts by age (host_end older than now - retain) and
 * by the memory cap (oldest first, counted). Returns 0, or -1 if dropped. */
int retention_add(struct retention *r, uint16_t nic, const struct pulse_window *w,
		  const struct clock_sync *cs, uint32_t gap, uint64_t now_ns);
void retention_expire(struct retention *r, uint64_t now_ns);
const struct ret_window *retention_get(const struct retention *r, uint32_t i); /* oldest first */

/* ---- dump.c ---- */
/* Writes DIR/epochs.csv and DIR/epochs.json (creating DIR). Returns the
 * number of windows written, or -1 with err. */
long agent_dump(const struct agent *a, const char *dir, char *err, size_t errlen);

/* ---- jsonl.c ---- */
int jsonl_open(const char *path); /* NULL or "-": stdout */
int jsonl_reopen(void);
int jsonl_close(void); /* -1: a write to --out failed since jsonl_open (logged) */
/* Every stream jsonl_open/jsonl_reopen open is handed to wrap (before
 * them), whose FILE the lines then go to: the analyzer link's tee
 * (alink_tee), which writes through to the file. */
void jsonl_set_wrap(FILE *(*wrap)(void *ctx, FILE *inner, int close_inner), void *ctx);
void jsonl_window(const struct agent_nic *n, const struct pulse_window *w, uint32_t gap,
		  double poll_s);
void jsonl_event(const struct agent_nic *n, const char *event, const char *detail);
/* The end of a poll's lines: every operator that ended before settled_ns
 * (host clock) has been reported (assoc_settled); the analyzer localizes on
 * it instead of waiting out its settle time (analyzer/PROTOCOL.md). */
void jsonl_poll_end(uint64_t settled_ns);
/* This poll's operators wait for the analyzer's JOIN (join_wait.c): windows
 * held, QPs without a remote end. */
void jsonl_join_wait(uint32_t windows, uint32_t qps);

/* The output stream for other line types: locks it and returns the FILE,
 * or NULL (unlocked) when there is none. jsonl_end flushes and unlocks. */
FILE *jsonl_begin(void);
void jsonl_end(void);
/* probe.c: one "link" line on the output (wire/host_event.c's form), as the
 * link watcher writes it; --replay writes the recorded ones with it */
struct pulse_link_event;
void agent_link_line(const struct pulse_link_event *e);

/* ---- qp_map.c ---- */
#include "pulse/hook_record.h"
#define QP_MAP_MAX_QPS 65536u
#define QP_MAP_MAX_COMMS 16384u
struct map_qp {
	char dev[21];
	uint8_t port, state;          /* state: 1 created, 2 RTR, 3 destroyed */
	uint8_t have_comm;
	uint32_t qpn, dest_qpn;
	uint32_t pid, tid;
	int32_t rank;                 /* -1 unknown */
	uint8_t gid_valid;
	uint8_t remote_gid[16];
	uint64_t comm_id;
	uint64_t time_ns;             /* the create/RTR call */
	struct pulse_hook_gpu gpu;
};
struct map_comm {
	uint64_t comm_id, parent_id, nccl_hash, handle;
	uint32_t pid;
	int32_t rank, nranks;
	uint16_t nnodes;
	uint8_t how, source, destroyed;
	uint64_t time_ns;
	struct pulse_hook_gpu gpu;
};
struct qp_map {
	struct map_qp *qps;
	uint32_t nqps, capqps;
	struct map_comm *comms;
	uint32_t ncomms, capcomms;
	int dirty;                    /* changed since the last qp_map_emit */
	/* also handed each line qp_map_emit writes (the bus's state stream) */
	void (*on_line)(void *ctx, const char *line, size_t len);
	void *on_line_ctx;
	uint64_t version;             /* mapping lines written */
	uint64_t full_drops;          /* records not kept: table at its cap */
};
void qp_map_init(struct qp_map *m);
void qp_map_free(struct qp_map *m);
/* Applies COMM_INIT/DESTROY and QP_CREATE/RTR/DESTROY records; others are ignored. */
void qp_map_apply(struct qp_map *m, const struct pulse_hook_record *r);
/* Removes everything of an exited process. */
void qp_map_drop_pid(struct qp_map *m, uint32_t pid);
/* Writes a "hook_map" line if the mapping changed since the last one. */
void qp_map_emit(struct qp_map *m);
const char *qp_map_op_name(uint8_t type);

/* ---- hook_drain.c ---- */
struct hook_ring_ent;
struct hooks {
	char dir[4096];
	int dir_is_shm;               /* the rings' own directory (/dev/shm) */
	struct hook_ring_ent *rings;
	uint32_t nrings, caprings;
	struct hook_bad *bad;         /* entries that failed to attach (logged once) */
	uint32_t nbad, capbad;
	struct pulse_hook_record *buf;
	struct qp_map map;
	int scan_failed;              /* last scan error logged */
	/* counters (read by metrics under the agent lock) */
	uint64_t attached_total, detached_total, records, ops, dropped, attach_errors, scans;
};
int hooks_init(struct hooks *h, const char *dir, char *err, size_t errlen);
/* One poll: discover, attach, drain every ring, drop exited ones, write
 * the JSON lines. Never blocks on a ring. Takes the agent lock for counters. */
void hooks_poll(struct agent *a, struct hooks *h);
/* The one place a record from either source is handled: a drained ring
 * (hooks_poll) or a replayed hook-<pid>.rec file (replay.c). Checks kind and
 * version (bad ones counted in *bad), applies it to the mapping, writes the
 * hook_op/hook_group line and hands operator and group records to the
 * association. Returns 1 for an operator record, else 0. f: the locked
 * output stream (jsonl_begin) or NULL. */
int hooks_apply(struct agent *a, struct hooks *h, FILE *f, const struct pulse_hook_record *r,
		uint64_t *bad);
/* A hooks instance with no ring directory (replay feeds it records). */
void hooks_init_records(struct hooks *h);
/* Final drain, then detach without removing live rings. */
void hooks_close(struct agent *a, struct hooks *h);

/* ---- metrics.c ---- */
int metrics_start(struct agent *a, const char *listen, char *err, size_t errlen);
void metrics_stop(void);
/* The exposition text (malloc'd), for tests and the HTTP handler. Caller
 * holds nothing; this takes the agent lock. */
char *metrics_render(struct agent *a, size_t *len);

/* ---- daemon.c ---- */
extern volatile sig_atomic_t agent_sig_term, agent_sig_hup, agent_sig_usr1;
int agent_signals_install(void);
/* Exclusive lock for one NIC; returns the fd or -1 with err. */
int agent_lock_nic(const char *lock_dir, const char *nic_name, char *err, size_t errlen);
int control_start(struct agent *a, const char *path, char *err, size_t errlen);
void control_stop(void);

/* ---- op_feed.c ---- */
#include "pulse/analyzer_wire.h"
#include "pulse/qp_join.h"
/* The remote ends of this host's QPs: every host's QPs and communicator
 * members known to this agent, joined (wire/qp_join.c). Live, the local
 * part is rebuilt from the mapping whenever it changes (the other hosts'
 * parts come from the analyzer); in replay every host's records are read
 * from the run directory first and the join is fixed. */
struct agent_join {
	struct pulse_join_qp *qps;
	uint32_t nqps, capqps;
	struct pulse_join_comm *comms;
	uint32_t ncomms, capcomms;
	struct pulse_join_gid *gids;
	uint32_t ngids, capgids;
	struct pulse_join_result *res; /* by QP index, valid after agent_join_run */
	uint8_t *given;                /* comms handed to the association */
	struct pulse_join_stats st;
	int fixed;                     /* replay: never rebuilt from the local mapping */
	int ran;
	/* live: the analyzer's join of every host (JOIN frames,
	 * agent_on_join): the remote end of local QPs, which wins over the
	 * local join (that only knows this host) */
	struct pulse_aw_join_qp *remote;
	uint32_t nremote;
};
/* Makes room for element n of the array *p of *cap elements of elem bytes
 * (doubling, 64 at first); -1 out of memory (the array left as it was). */
int agent_grow(void **p, uint32_t *cap, uint32_t n, size_t elem);
int agent_join_add_qp(struct agent_join *j, const struct pulse_join_qp *q);
int agent_join_add_comm(struct agent_join *j, const struct pulse_join_comm *c);
int agent_join_add_gid(struct agent_join *j, const struct pulse_join_gid *g);
/* Removes one host's QPs and communicators (before adding its new ones). */
void agent_join_drop_host(struct agent_join *j, const char *host);
int agent_join_run(struct agent_join *j);
/* The analyzer's JOIN (host-agent/analyzer_link.h's on_join; ctx: the
 * agent): remote ends of this host's QPs and communicator members, into
 * the association now and again whenever the mapping changes. Call it from
 * the poll loop's thread. */
struct pulse_aw_join;
void agent_on_join(void *ctx, const struct pulse_aw_join *j);
void agent_join_free(struct agent_join *j);
/* A mapping entry as join input. */
void agent_join_qp_from_map(const struct map_qp *q, const char *host, struct pulse_join_qp *out);
void agent_join_comm_from_map(const struct map_comm *c, const char *host,
			      struct pulse_join_comm *out);

/* The other end of a local QP (device, QPN) as the join knows it now:
 * 0 with its host and GPU, -1 unknown (host "", gpu -1). */
int agent_qp_remote(const struct agent *a, const char *dev, uint32_t qpn, char *host, size_t hostlen,
		    int32_t *gpu);

/* ---- series_query.c ---- */
/* The answer to a SERIES_REQ (include/pulse/qp_series_wire.h) from the
 * retention ring: every epoch of every QP in [from, to), at most max_bytes
 * (segments past it are counted as left out). Used by the analyzer link
 * (live) and by --replay --series-query (a file the analyzer's replay
 * reads). Takes the agent lock. Returns the payload (malloc'd) and its
 * length in *len, or NULL when out of memory. */
struct pulse_qps_req;
uint8_t *agent_series_answer(struct agent *a, const struct pulse_qps_req *q, size_t max_bytes,
			     size_t *len);
/* The same as the analyzer link's on_series callback (ctx: the agent). */
uint8_t *agent_on_series(void *ctx, const struct pulse_qps_req *q, size_t max_bytes, size_t *len);

/* Called by nic_cycle for every window it accepted, after its JSON line:
 * hands the window to the association (host time through the NIC's clock
 * sync). */
void agent_window_done(struct agent *a, struct agent_nic *n, const struct pulse_window *w,
		       unsigned gap);
/* One cycle is: the hook records (hooks_poll, or replayed ones), then
 * agent_cycle_begin (the mapping and join into the association), then every
 * NIC (nic_cycle), then agent_cycle_end (the association's final records as
 * "op" lines). now_ns: host time of the cycle. */
void agent_cycle_begin(struct agent *a, uint64_t now_ns);
void agent_cycle_end(struct agent *a, uint64_t now_ns);

/* ---- join_wait.c: windows wait for the analyzer's JOIN ---- */
struct join_wait_qp {
	uint16_t nic;
	uint32_t qpn;
	uint64_t until; /* host time its traffic stops waiting */
};
struct held_window;
struct assoc;
struct join_wait {
	struct join_wait_qp *qps; /* QPs of a communicator, remote end unknown; sorted */
	uint32_t nqps, capqps;
	uint64_t until;           /* the latest of their untils */
	struct held_window *head, *tail;
	uint32_t nheld;
	uint64_t held;             /* windows that waited */
	uint64_t released_unknown; /* of them, given over with a remote end still unknown */
	uint64_t released_cap;     /* given over early: too many held */
	uint64_t not_held;         /* no memory to hold one */
};
/* The waiting QPs are rebuilt on every mapping or JOIN change: reset, add
 * each (made_ns: its creation, host time; wait_ns: agent_join_wait_ns),
 * sort. */
void join_wait_reset(struct join_wait *jw);
uint64_t agent_join_wait_ns(uint64_t poll_ns, double clock_rate);
int join_wait_add(struct join_wait *jw, uint16_t nic, uint32_t qpn, uint64_t made_ns, uint64_t wait_ns);
void join_wait_sort(struct join_wait *jw);
/* A window for the association: handed over now (0), or held (1; -1: could
 * not be held, handed over). */
int join_wait_window(struct join_wait *jw, struct assoc *as, uint16_t nic, const struct pulse_window *w,
		     int64_t offset_ns, unsigned gap, uint64_t now_ns);
/* Hands over the held windows that wait no more, in order (all: every
 * one); returns how many. */
uint32_t join_wait_release(struct join_wait *jw, struct assoc *as, uint64_t now_ns, int all);
/* Whether the association still waits for the JOIN: windows held, or a
 * QP's wait not over (its operators are held: assoc_peers_pending). */
int join_wait_pending(const struct join_wait *jw, uint64_t now_ns);
void join_wait_free(struct join_wait *jw);

/* ---- loop.c ---- */
int agent_run(struct agent *a);

/* ---- replay.c ---- */
/* pulse-host-agent --replay DIR [--host H]: see replay.c. Returns the exit
 * status. */
int agent_replay(struct agent *a);

/* bus_out.c: the agent's side of --bus. Opens the publisher (a->bus; 0,
 * or -1 logged); closes it after publishing what is pending as poll
 * final_seq, and logs what was published. */
int agent_bus_open(struct agent *a);
void agent_bus_close(struct agent *a, uint64_t final_seq);
/* each new QP map line into the bus's state stream (qp_map's on_line; ctx: the agent) */
void agent_bus_map_line(void *ctx, const char *line, size_t len);
/* jsonl_set_wrap's wrapper (ctx: the agent): the lines also go to the bus
 * (a->bus: every line but "op", whose records op_feed.c publishes) and to
 * the analyzer link (a->alink) */
FILE *agent_out_wrap(void *ctx, FILE *inner, int close_inner);

/* replay_fork.c: --replay DIR --bus without --host: one child process per
 * host of the run, each replaying its host and publishing, as the agents of
 * a real cluster would; returns the worst exit status. */
int agent_replay_fork(struct agent *a, int (*one)(struct agent *a));
/* --speed: waits until host time t_ns is due (a->pace_*); no-op when flat out */
void agent_replay_pace(struct agent *a, uint64_t t_ns);

/* ---- the agent ---- */
struct replay_links;

struct agent {
	struct agent_opts opt;
	int nnics;
	struct agent_nic nics[AGENT_MAX_NICS];
	struct retention ret;
	pthread_mutex_t lock;       /* ring and counters vs metrics/control threads */
	uint64_t start_realtime_ns;
	uint64_t cycles, overruns, dumps, dump_failures;
	int late_calls_warned;      /* the association's first late call was warned of */
	struct hooks *hooks;        /* NULL with --no-hooks */
	char host_name[64];         /* --host-name, gethostname, or the replayed host */
	struct assoc *assoc;        /* flow-operator association (assoc.h); NULL: none */
	struct agent_join *join;    /* remote ends of local QPs (op_feed.c; replay.c fills it) */
	struct join_wait jwait;     /* live with --analyzer: windows waiting for the JOIN */
	uint64_t map_version_seen;  /* qp_map version last handed to the association */
	uint64_t op_records;        /* "op" lines written */
	struct alink *alink;        /* --analyzer: the link (analyzer_link.h); NULL: none */
	struct replay_links *sim_links; /* --sim-links: a simulated host's link events; NULL: none */
	struct pulse_bus *bus;      /* --bus: the publisher (include/pulse/bus.h); NULL: none */
	uint64_t bus_seq;           /* the last poll sequence handed to the bus */
	uint64_t pace_wall0, pace_t0; /* --speed: monotonic wall and host time of the replay's start */
	struct probe *probe;        /* RDMA devices, links, kernel QPs (probe.h); NULL: none */
};

#endif
