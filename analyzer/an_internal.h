/* pulse-analyzer internals shared by state.c, trigger.c, the localizers
 * baseline.c, report.c, timeline.c (not part of the public API in
 * analyzer.h). */
#ifndef PULSE_ANALYZER_INTERNAL_H
#define PULSE_ANALYZER_INTERNAL_H

#include <stdarg.h>

#include "pulse/host_event.h"
#include "analyzer.h"

#define AN_HIST 2048       /* operator instances kept per communicator */
#define AN_SIG_MAX 16      /* operator signatures (op, count) per communicator */
#define AN_BASE_N 64       /* history kept per baseline */
#define AN_NODE_ENDS 32    /* recent operator ends kept per node */
#define AN_MAX_RANKS 4096
#define AN_MAX_COMMS 4096
#define AN_MAX_NODES 65536
#define AN_MAX_DIAG 256
#define AN_QP_RING 8192    /* per-QP window summaries kept (timeline) */
#define AN_TRIG_MAX 64

/* A rolling sample for running baselines (median and MAD of the last N).
 * t: the data time of each sample (0 when not kept), so a baseline can be
 * taken as it was before a time (an_roll_base). */
struct an_roll {
	double v[AN_BASE_N];
	uint64_t t[AN_BASE_N];
	uint32_t n, pos;
	/* the slots of v in ascending order of value, kept as samples come
	 * and go, so that median and MAD need no sort (every record asks for
	 * five of them: an_trigger_on_record) */
	uint8_t by_value[AN_BASE_N];
};
void an_roll_add(struct an_roll *r, double v);
void an_roll_add_at(struct an_roll *r, double v, uint64_t t);
/* max (want_max) or median of the samples taken before `before` (all when
 * before is 0); *n: how many. 0 when none. */
double an_roll_base(const struct an_roll *r, uint64_t before, int want_max, uint32_t *n);
int an_roll_stats(const struct an_roll *r, double *median, double *mad); /* -1 when empty */
double an_roll_max(const struct an_roll *r);
double an_roll_min(const struct an_roll *r);
double an_median(double *v, size_t n); /* sorts v */
double an_binom_tail(int n, int k, double p); /* P(X >= k), X binomial(n, p) */
/* One-sided Fisher exact test: P(X >= c1) for X hypergeometric, n1 drawn
 * from n1 + n0 of which c1 + c0 are marked: how often c1 of n1 happens by
 * chance when the shares of n1 and n0 are the same; 1 when c1 is 0 or the
 * counts do not fit (c1 > n1, c0 > n0) */
double an_fisher_tail(int c1, int n1, int c0, int n0);
/* *p holds *cap elements of size bytes: at least need (at most max), the
 * new ones zeroed. -1: above max or out of memory. */
int an_grow(void **p, uint32_t *cap, uint32_t need, size_t size, uint32_t max);

/* A node: one training process (host and GPU), across all communicators. */
struct an_node {
	int host;                /* index into s->hosts */
	int32_t gpu;
	uint32_t pid;
	uint64_t last_call;      /* latest call seen (records or hook_op lines) */
	uint64_t last_end;       /* latest operator end */
	uint64_t ends[AN_NODE_ENDS];
	uint32_t nends, endpos;
	uint64_t open_hung;      /* records of this node currently hung / not started */
	uint64_t hung_since;     /* earliest call among them */
};

struct an_peer {
	int32_t rank;
	int node;                /* -1 unknown */
	uint64_t expected, actual, start, end, active;
	uint64_t peak;           /* most bytes in one epoch (0: not measured) */
	uint8_t complete;
};

/* One rank's measurement of one operator (compact struct pulse_op_record). */
struct an_rec {
	int node;
	int32_t rank;
	uint8_t op, status, par, algo;
	uint64_t seq, group_id, count;
	uint64_t call, start, end, dur;
	uint64_t expected, actual, active, rank_active;
	double rate_gbps;        /* rank-level actual rate */
	uint32_t epoch_ns;
	int64_t pre_gap;         /* call - previous op end of this node; -1 unknown */
	/* the member's running baselines when this record arrived (nb: samples) */
	uint32_t gap_nb, dur_nb;
	double gap_med, gap_mad, dur_med, dur_mad, act_med, dur_max;
	uint32_t act_nb, wdur_nb;
	double wdur_max;
	int sig;                 /* index in comm->sigs */
	uint32_t npeers;
	struct an_peer *peers;
};

struct an_inst {
	int used;
	uint64_t seq;
	uint8_t op;
	int sig;
	uint32_t nrec;
	struct an_rec **recs;    /* [nranks] */
	uint64_t first_call, last_end;
	int evaluated;           /* trigger checks done */
	int hung;                /* some record hung / not started */
	int xdirty;              /* records arrived since the transfer check */
	uint32_t xmed_nrec;      /* nrec when xmed was computed (0: never) */
	double xmed;             /* median transfer rate of the instance (Gb/s) */
	uint32_t xmed_n;         /* transfers behind it */
};

/* A cause lies at most this many iterations before its first evidence:
 * the window's candidates for "first in time order" (window.c), and the
 * span within which a slow trigger's fires are one episode (trigger.c) */
#define AN_CAUSE_PERIODS 4
/* a confirmation takes a delayed start this many iterations after the
 * evidence's at most (loc_comp_slow.c) */
#define AN_CONFIRM_PERIODS 2

/* actual time this much above its operator instance's median is an outlier
 * (the localizer's rule and the peer trigger) */
#define AN_ACTIVE_OUTLIER 1.15

/* the last caller (loc_lateness.c): the same rank in AN_LAST_K of a group's
 * AN_LAST_N most recent collectives; in a group of sends and receives,
 * those AN_LAST_K spanning AN_LAST_PERIODS iterations at least (an MoE
 * iteration's all-to-alls all wait on the same routing: its heaviest
 * expert is their last caller in every layer, forward and backward) */
#define AN_LAST_N 10
#define AN_LAST_K 8
#define AN_LAST_PERIODS 2

/* consecutive samples above the largest of the baseline before them */
struct an_sig {
	int peer_node;           /* the node whose actual time stood out of its peers' in the last
	                          * instance (-1 none), and that instance */
	uint64_t peer_seq;
	int cap_node;            /* the same for a capped peak epoch (an_peer.peak) */
	uint64_t cap_seq;
	uint8_t op;
	uint64_t count;
	struct an_roll span;     /* first call .. last end over the ranks */
	uint64_t last_end;       /* previous instance's last end (period) */
	struct an_roll period;
};

struct an_member {
	int node;                /* -1 until known */
	uint64_t recorded_bytes; /* actual bytes of all its records (for residuals) */
	uint64_t last_expected[AN_SIG_MAX]; /* expected bytes of its last complete record per signature */
	uint32_t nrecs[AN_SIG_MAX];      /* records of it per signature, any status */
	struct an_roll gap[AN_SIG_MAX];  /* pre_gap per signature */
	struct an_roll dur[AN_SIG_MAX];  /* call..end per signature */
	struct an_roll act[AN_SIG_MAX];  /* active_ns per signature */
	struct an_roll wdur[AN_SIG_MAX]; /* first to last byte per signature */
	struct an_roll rate;     /* rank-level actual rate (custom collectives) */
	struct an_roll orate;    /* observed rate volume/duration (OP-level) */
};

struct an_comm {
	uint64_t id;
	int32_t nranks;
	uint8_t par;
	int custom;              /* P2P / group operators seen */
	int builtin;             /* built-in collectives seen */
	uint64_t born_ns;        /* data time it was first seen */
	uint64_t done_ns;        /* the last end of a complete record on it */
	int retired;             /* a job restarted after a hang left it behind: its open calls
	                          * wait for nothing any more */
	struct an_member *m;     /* [nranks] */
	struct an_inst hist[AN_HIST];
	struct an_sig sigs[AN_SIG_MAX];
	uint32_t nsigs;
	uint64_t records;
	int xpending;            /* some instance waits for its transfer check, */
	uint64_t xlo, xhi;       /* all of them within these seqs */
	uint64_t xdue;           /* none of them is due before this data time (a lower bound:
	                          * the checks are skipped until then) */
	int32_t last_callers[AN_LAST_N]; /* the last caller (an_last_caller) of its most recent
	                          * complete collectives or groups of sends and receives, a
	                          * ring: rank + 1, 0 none */
	uint64_t last_t[AN_LAST_N]; /* their first calls */
	uint32_t nlast;          /* instances put in the ring */
	int last_fired;          /* the ring's last count passed the trigger's bar */
};

/* Calls seen on hook_op lines, per process and communicator (the mapping
 * may come later than the calls: resolved when used). */
#define AN_CALLS 64
/* The group seqs of one rank's n-th, (n+1)-th... send to (receive from)
 * one peer, as arithmetic runs: a schedule repeats, so a few runs hold a
 * long history (a one-to-all root's sends to one receiver: 0, 6, 12...). */
#define AN_KEY_RUNS 8
struct an_key_run {
	uint64_t x0, y0;         /* pair ordinal x0 + i is in group y0 + i dy */
	int64_t dy;
	uint32_t n;
};
struct an_key_runs {
	struct an_key_run r[AN_KEY_RUNS];
	uint32_t n, pos;         /* runs kept; the newest is r[(pos + AN_KEY_RUNS - 1) % AN_KEY_RUNS] */
};

struct an_call {
	uint64_t seq, t, group_id, count;
	uint64_t key;            /* its group: the group's first member's seq */
	uint64_t ikey;           /* the instance, when ikey_set (state.c group_instance) */
	uint8_t ikey_set;
	uint8_t op;
	uint8_t head;            /* the first call of its group (or alone) */
	int32_t peer;
	uint32_t pair;           /* sends to (receives from) peer before it; UINT32_MAX: none */
};
struct an_proc {
	int host;
	uint32_t pid;
	uint64_t comm;
	struct an_call calls[AN_CALLS];
	uint32_t n, pos;
	uint64_t max_seq, last_t;
	int any;
	uint32_t *pairs;         /* [2 peer + (receive)]: calls so far, state.c pair_next */
	struct an_key_runs *runs; /* [as pairs]: the group of each of those calls */
	uint32_t npairs;
};

/* One QP of one host: its mapping (hook_map) and the bytes the agent's
 * windows counted on it. */
struct an_qp {
	int host;
	char dev[24];
	uint32_t qpn;
	uint64_t comm;           /* 0 unknown */
	int32_t rank;
	uint64_t bytes, first, last;
};

struct an_qpwin {
	int host;
	char nic[24];
	uint32_t qpn;
	uint64_t start, end, bytes;
	double mean_gbps;
};

/* AN_TRIG_STRAGGLER: a rank every other rank waited for, persistently
 * (trigger.c last_caller_check); its evidence spans AN_LAST_K instances, so
 * the rest after a slow trigger's localization (slow_rearm) does not hold it */
enum an_trig_kind { AN_TRIG_SLOW = 1, AN_TRIG_HANG = 2, AN_TRIG_STRAGGLER = 3 };

/* An iteration a confirmation leaves out: the instances first called in
 * [a, b], and the evidence's own instance (comm, seq: a P2P instance
 * gathers calls each rank numbered on its own, so its first call may lie
 * outside [a, b]). b 0: none. (Leaving a whole chain of replaced
 * verdicts out was tried, trigger.c.) also: a second iteration left out
 * with it, later than [a, b] (two verdicts that name each other in turn,
 * trigger.c pending_cycle); also.b 0: none. */
struct an_excl_iter {
	uint64_t a, b, comm, seq;
};
struct an_excl {
	uint64_t a, b, comm, seq;
	struct an_excl_iter also;
};

/* whether an instance first called at t (comm, seq) is left out */
int an_excl_covers(const struct an_excl *x, uint64_t t, uint64_t comm, uint64_t seq);
/* the end of the latest iteration left out (0: none) */
uint64_t an_excl_last(const struct an_excl *x);

struct an_trigger {
	int kind;
	int comm;                /* index of the comm that fired */
	uint64_t seq;
	uint64_t fired_ns;       /* data time */
	uint64_t due_ns;         /* its evidence's last data time: localized once every
	                          * host's records are in past it (an_data_in) */
	uint64_t onset_ns;
	uint64_t first_onset_ns; /* the onset of the fire that armed it */
	struct an_excl excl;     /* a confirmation: the iteration left out */
	char why[160];
};

/* A fail-slow verdict waiting for its confirmation: the same localizer
 * must name the same host with the same class again with the iteration of
 * its evidence left out (a fail-slow persists over iterations; a single
 * late or slow operator among the hundreds of a window, and what it
 * drags along in the same iteration, is what noise does). */
#define AN_PENDING_MAX 16
struct an_pending {
	struct an_diagnosis d;
	uint64_t onset;          /* the trigger's onset: the same window */
	struct an_excl excl;     /* the evidence's iteration, left out */
	uint32_t chain;          /* verdicts replaced so far */
	/* the verdict this one replaced, with its own iteration left out
	 * (prev_excl), to see the chain turn back to it (pending_cycle);
	 * cycle: both iterations are left out now, and either verdict is
	 * confirmed */
	struct an_diagnosis prev;
	struct an_excl prev_excl;
	int has_prev, cycle;
	uint64_t next_try, give_up;
	uint64_t armed_now, armed_report; /* the tick that armed it and its report time */
	int early;               /* armed by a localization before its trigger's settle time */
};

struct an_stats {
	uint64_t lines, used, ignored, malformed;
	uint64_t ops, op_unknown_comm, op_bad_rank, op_skew, op_dup, op_evicted;
	uint64_t hook_ops, hook_unknown_comm, maps, windows;
	uint64_t triggers_slow, triggers_hang, localizations, diag_dups;
	uint64_t unconfirmed, confirmed;
};

#define AN_CLOCK_ERRS 16
struct an_host {
	char name[PULSE_OP_HOST_LEN];
	int64_t skew_ns;         /* estimated offset against the other hosts */
	uint32_t skew_samples;
	int skewed;              /* beyond the sync bound: its records are dropped */
	uint64_t dropped_skew;
	/* live: the data time of the first tick after its agent was sent a
	 * JOIN (join_sent: not ticked since). Its traffic waited for the JOIN
	 * (host-agent/join_wait.c), so the records of its calls before then
	 * come only after it. */
	uint64_t join_ns;
	int join_sent;
	/* host time of the last poll whose operators its agent said wait for
	 * the JOIN (a "join_wait" line): the records of calls before it come
	 * only after the wait, however long the JOIN took */
	uint64_t join_wait_ns;
	/* the bound of its agents' NIC-to-host clock mapping (a window's
	 * clock_err_ns: half the best recent poll round trip) in its last
	 * AN_CLOCK_ERRS windows: a first or last byte is known only to within
	 * it, and a busy host's polls make it milliseconds */
	uint64_t clock_err[AN_CLOCK_ERRS];
	uint32_t clock_err_pos;
	uint64_t clock_err_max;  /* the largest of them */
	/* its agent's last poll_end: every operator that ended before this
	 * (its clock) has been reported (0: its agent never said; an older
	 * agent, or one waiting for a JOIN) */
	uint64_t settled_ns;
	int win_seen;            /* it sent a window */
};

/* What the agents say about their hosts besides traffic (wire/host_event.c):
 * link changes, kept while the analyzer runs (the last AN_LINKS), and the
 * configuration findings (the first AN_FINDINGS). */
#define AN_LINKS 256
#define AN_FINDINGS 64
struct an_link {
	int host;
	uint64_t t;              /* host time */
	int down;                /* down or gone */
	char netdev[PULSE_HOST_EVENT_NAME_LEN];
};

struct an_state {
	struct an_cfg cfg;
	struct an_host *hosts;
	uint32_t nhosts, hosts_cap;
	uint64_t clock_err_any;     /* the largest of the hosts' clock_err_max */
	struct an_node *nodes;
	uint32_t nnodes, nodes_cap;
	struct an_comm **comms;
	uint32_t ncomms, comms_cap;
	struct an_diagnosis *diags;
	uint32_t ndiags, diags_cap;
	struct an_trigger trig[AN_TRIG_MAX];
	uint32_t ntrig;
	uint64_t now_ns;         /* latest data time seen */
	uint64_t last_tick;
	/* every host's records are in up to this data time: the smallest
	 * settled_ns of the hosts that sent windows (0: some host never said);
	 * settled_moved: it moved since the triggers last ran */
	uint64_t data_in_ns;
	int settled_moved;
	/* a slow localization before its trigger's settle time (by data_in):
	 * a call counts as hung only past the hang bound before this, a
	 * settle time ago, as a hang trigger's would (0: now) */
	uint64_t hang_cut;
	uint64_t slow_rearm;     /* no new slow trigger before (data time) */
	uint64_t slow_seen;      /* nor one whose evidence ends before this: a localization
	                          * with every record in up to it (an_data_in) saw it */
	/* A hang was diagnosed at this data time (0: none open): the job is
	 * stopped, and every call that waits from now on is that hang, not a
	 * new one. It closes when the job runs again: an operator completes
	 * on its communicator after the hung one, or on a communicator that
	 * appeared after the diagnosis (a restarted job). */
	uint64_t hang_open_ns;
	uint64_t hang_comm, hang_seq;
	int finishing;           /* an_finish: localize what is pending */
	uint64_t report_ns;      /* data time of the localization running now */
	uint64_t base_before;    /* nonzero: rules judge records against the baselines as
	                          * they were before this time (a confirmation run) */
	/* localization into tent[] instead of the diagnoses (an_diag_commit) */
	int tentative;
	struct an_diagnosis tent[2];
	uint32_t ntent;
	struct an_pending pend[AN_PENDING_MAX];
	uint32_t npend;
	uint32_t epoch_ns;       /* as reported by records / windows */
	struct an_qpwin *qpw;    /* ring */
	uint32_t nqpw, qpw_pos;
	struct an_stats st;
	FILE *log;               /* NULL: silent */
	uint64_t log_lines;      /* rate limit */
	struct an_proc *procs;
	uint64_t pairs_bytes;     /* an_proc.pairs, all together (state.c pair_next) */
	uint32_t nprocs, procs_cap;
	struct an_qp *qps;
	uint32_t nqps, qps_cap;
	uint64_t max_op_ns;      /* longest call-to-end seen (hang bound) */
	uint64_t poll_ns;        /* agent poll interval seen in windows */
	/* pid -> gpu of hook_map lines: (host, pid, comm) -> rank */
	struct an_hmap { int host; uint32_t pid; uint64_t comm; int32_t rank, nranks, gpu; } *hmap;
	uint32_t nhmap, hmap_cap;
	struct an_link links[AN_LINKS];
	uint32_t nlinks, links_pos;
	struct pulse_config_finding findings[AN_FINDINGS];
	uint32_t nfindings;
	/* the per-QP series fetched around diagnoses and their direction
	 * (analyzer/direction.h, series_fetch.c) */
	struct an_dir_entry *dirs;
	uint32_t ndirs;
};

void an_log(struct an_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int an_host_index(struct an_state *s, const char *name, int create);
int an_node_index(struct an_state *s, int host, int32_t gpu, uint32_t pid, int create);
const char *an_node_host(const struct an_state *s, int node);
int an_node_host_index(const struct an_state *s, int node); /* -1: unknown */
/* How far a byte time of node's host may lie off against another host's:
 * the largest clock mapping bound of its recent windows plus the largest
 * of any host's (the other side of a comparison). 0 in a replay of the
 * simulator, whose agents map the NIC clock exactly. */
uint64_t an_clock_err_pair(const struct an_state *s, int node);
struct an_comm *an_comm_find(const struct an_state *s, uint64_t id);

/* the instance of comm c holding seq, or NULL */
struct an_inst *an_inst_find(struct an_comm *c, uint64_t seq);

/* trigger.c: called from state.c when a record arrives / in an_tick */
void an_trigger_on_record(struct an_state *s, struct an_comm *c, struct an_inst *in,
			  struct an_rec *r);
void an_trigger_on_instance(struct an_state *s, struct an_comm *c, struct an_inst *in);
int an_trigger_tick(struct an_state *s, uint64_t now_ns);

/* Per-transfer rates inside one operator instance (trigger.c). A transfer
 * is one peer entry of a record (rank k -> peer): its actual rate, bytes
 * over active epochs, when it is complete and active for at least
 * AN_XFER_MIN_EPOCHS epochs (else 0). */
#define AN_XFER_MIN_EPOCHS 8
double an_xfer_rate(const struct an_rec *r, const struct an_peer *p);
/* median transfer rate of the instance, 0 with fewer than 3 transfers */
double an_inst_xfer_median(struct an_comm *c, struct an_inst *in);
/* transfer pi of rank k in instance in: its rate over the instance's
 * median, divided by the median of the same ratio for the same transfer
 * (same rank, peer, op and count) over up to 16 earlier instances (at least
 * AN_XFER_ROLL_MIN). *thr: the relative drop that counts as slow, the larger of four
 * robust standard deviations of that history and four epochs of the
 * transfer's active time. NAN when unusable. */
double an_xfer_shift(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr);
/* the same against the instances that began before `before` only (0: any):
 * a slowdown's later instances judged against the usual from before it */
double an_xfer_shift_before(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr,
			    uint64_t before);
/* the same with at least min_n earlier instances (the defaults: 6 before
 * `before`, AN_XFER_BEFORE_MIN; AN_XFER_ROLL_MIN rolling) */
double an_xfer_shift_min(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr,
			 uint64_t before, int min_n);
#define AN_XFER_BEFORE_MIN 6
#define AN_XFER_ROLL_MIN 3
/* An early onset: a transfer level with its siblings in the first two
 * iterations and below them from the third on is a slowdown (seed 1134
 * #071: a congested receiver of a one-to-all from iteration 2, its
 * transfer 11% below the others' in every instance from then on, never
 * fired: with three earlier instances needed, they held the slowdown by
 * then). Against so few, the transfer must also be below the instance's
 * median (a share measured twice is no noise estimate): the trigger's
 * second try, and the transfer-share rule's when no transfer has
 * AN_XFER_BEFORE_MIN before the look-back */
#define AN_XFER_EARLY_MIN 2
/* the previous instance (before in) where rank k has a record with the
 * same op and count, or NULL */
struct an_inst *an_xfer_prev(struct an_comm *c, const struct an_inst *in, int32_t k);

/* Localizers: append at most one diagnosis for trigger t each. Return 1 if
 * they added one. */
int an_localize_pulse(struct an_state *s, const struct an_trigger *t);
int an_localize_oplevel(struct an_state *s, const struct an_trigger *t);

/* Shared by both localizers (window.c, diagnosis.c, loc_*.c). */
struct an_window {
	struct an_inst **inst;   /* sorted by first call */
	int *comm;               /* comm index per instance */
	uint32_t n;
	uint64_t t0, t1;
	uint64_t cause0;         /* the earliest a cause may start: a few iterations before the
	                          * onset (t0 reaches further back, for the baselines) */
	uint64_t onset;          /* the trigger's */
	struct an_excl excl;     /* a confirmation: records that start in [a, b] are no evidence */
};
void an_window_build(struct an_state *s, const struct an_trigger *t, struct an_window *w);
void an_window_free(struct an_window *w);
void an_diag_init(struct an_state *s, struct an_diagnosis *d, const char *localizer,
		  const struct an_trigger *t);
void an_diag_suspect(const struct an_state *s, struct an_diagnosis *d, int node, int32_t rank);
void an_diag_members(const struct an_state *s, struct an_diagnosis *d, const struct an_comm *c);
void an_diag_step(struct an_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int an_diag_commit(struct an_state *s, const struct an_diagnosis *d); /* dedup; 1 if kept */
void an_diag_seen_again(struct an_state *s, struct an_diagnosis *e, const struct an_diagnosis *d);
int an_same_verdict(const struct an_diagnosis *a, const struct an_diagnosis *b);
int an_is_p2p(uint8_t op);
int an_is_builtin(uint8_t op);
/* Hang localization shared by both localizers (oplevel: no volumes). */
int an_localize_hang(struct an_state *s, const struct an_trigger *t, int oplevel);
/* Delayed start (computation fail-slow): both localizers use it (OP-level
 * data suffices, as in the paper). Returns 1 with d filled. */
int an_rule_delayed_start(struct an_state *s, const struct an_window *w, struct an_diagnosis *d);
/* loc_lateness.c: the rank of a one-to-all instance that sends to all
 * the others, which send nothing; -1 when the instance is not one */
int32_t an_inst_fan_out_root(const struct an_comm *c, const struct an_inst *in);
/* loc_lateness.c: the rank of an instance that every other rank sends
 * to, and to no one else, and that sends nothing (an all-to-one); -1 when
 * the instance is not one */
int32_t an_inst_fan_in_root(const struct an_comm *c, const struct an_inst *in);
/* loc_lateness.c: the rank of a complete instance that every other rank
 * waited for (least slack between its call and its first byte, past the
 * others' noise; in a group of sends and receives, the rank whose
 * transfers waited for its receive), or -1; its slack (a one-to-all's:
 * its transfer's delay) and the others' median */
int32_t an_last_caller(const struct an_state *s, const struct an_comm *c, const struct an_inst *in,
		       double *mine, double *others);
/* Rank-level actual rate of custom collectives, averaged over each node's
 * last k records in the window (observed: the OP-level variant, volume /
 * duration). Returns 1 with d filled. */
int an_rule_custom_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d,
			int observed);
/* Per-transfer rate, node common to the slow transfers (loc_comm_slow.c);
 * observed: the OP-level variant (volume / operator duration). */
int an_edge_rate(struct an_state *s, const struct an_window *w, struct an_diagnosis *d, int observed);
int an_comm_index_of(const struct an_state *s, const struct an_comm *c);
/* rank of (host, pid) in comm from the mappings, -1 unknown */
int32_t an_map_rank(const struct an_state *s, int host, uint32_t pid, uint64_t comm);
/* bytes on the member's QPs that no record accounts for, and the last time
 * any of them sent (0: none seen) */
uint64_t an_residual(const struct an_state *s, const struct an_comm *c, int32_t rank, uint64_t *last);
uint64_t an_hang_bound(const struct an_state *s);
/* Every host's records are in past data time t (its evidence's last byte),
 * by the agents' poll_end lines, with the hosts' clock bound as margin. */
int an_data_in(const struct an_state *s, uint64_t t);
/* A record's baseline for its own signature and rank: the longest call-to-end
 * (AN_BASE_DUR), first-to-last byte (AN_BASE_WDUR) or median active time
 * (AN_BASE_ACT) before it arrived, or, in a confirmation run, before
 * s->base_before (so a fail-slow that persists is still judged against the
 * time before it began). *nb: samples behind it. */
enum { AN_BASE_DUR, AN_BASE_WDUR, AN_BASE_ACT };
double an_rec_base(const struct an_state *s, const struct an_comm *c, const struct an_rec *r, int which,
		   uint32_t *nb);
/* the job's iteration period as seen so far (the longest median period of
 * an operator signature), 0 unknown */
uint64_t an_period_ns(const struct an_state *s);
/* the iteration's signature (*comm, *sig; either may be NULL) and its median period */
double an_iteration_sig(const struct an_state *s, const struct an_comm **comm, int *sig);
/* rank's record of the instance a call (key) belongs to, NULL when none;
 * *gone: the history moved past it (it was recorded long ago) */
const struct an_rec *an_call_record(const struct an_comm *c, int32_t rank, uint64_t key, int *gone);
/* complete, or complete without RDMA traffic */
int an_rec_finished(const struct an_rec *r);
int an_rec_done(const struct an_state *s, struct an_comm *c, int32_t rank, uint64_t key, const struct an_rec *r);
int an_call_send_unmade(const struct an_state *s, const struct an_comm *c, int32_t rank, const struct an_proc *p,
			uint32_t k, const struct an_rec *r);
int an_member_silent(const struct an_comm *c, int32_t rank, uint8_t op, uint64_t count);
/* A link of host h that went down at or before t and has not come back up
 * since (the last such), or NULL. */
const struct an_link *an_link_down(const struct an_state *s, int h, uint64_t t);
/* peak epochs (an_peer.peak): a transfer long enough to have reached its
 * path's capacity, and the median of an instance's (-1: fewer than 3) */
int an_peer_peak_measured(const struct an_rec *r, const struct an_peer *q);
int an_inst_peak_median(const struct an_inst *in, const struct an_comm *c, double *med);
/* the instance key of a call: a group's first member seq */
uint64_t an_call_key(const struct an_proc *p, const struct an_call *k);

#endif
