/* Internal state of pulse-run-cluster (see cluster.h). Time is the true
 * simulation clock in ns (double, from 0). */
#ifndef PULSE_SIM_CLUSTER_INTERNAL_H
#define PULSE_SIM_CLUSTER_INTERNAL_H

#include "cluster.h"
#include "../util.h" /* xcalloc, xrealloc */

#define SC_INF 1e300
#define SC_FAIL_EPISODES 64 /* an intermittent fault's episodes kept for the truth */

/* ---------- event queue ---------- */
enum ev_kind {
	EV_RESUME = 1,   /* a rank's program continues (p: rank) */
	EV_FLOW_DONE,    /* a network flow finishes (p: flow, ver) */
	EV_PROXY_DONE,   /* the proxy posted a slice (p: conn) */
	EV_ARRIVE,       /* a slice arrived at the receiver (p: conn, a: item) */
	EV_LAUNCH,       /* a rank's kernel for an op starts (p: part) */
	EV_NIC_RATE,     /* a NIC's rate factor changes (a: nic) */
	EV_NIC_DOWN,     /* a NIC stops (a: nic) */
	EV_INTRA_END,    /* an intra-host (NVLink) slice copy ends (p: conn, a: item) */
	EV_OP_DONE,      /* an intra-host collective completes on all ranks (p: op) */
	EV_GPU_DONE,     /* a rank's GPU finished a compute item (p: rank) */
};

struct ev {
	double t;
	uint64_t seq;
	void *p;
	uint32_t a, ver;
	uint8_t kind;
};

struct heap {
	struct ev *v;
	size_t n, cap;
	uint64_t seq;
};

/* ---------- fabric ---------- */
struct flow;
struct txrec {
	double t;
	uint32_t qpn;
	uint32_t bytes;
};

struct nic {
	int host, gpu;
	char dev[20];
	uint8_t gid[16];
	char gidstr[48];
	double cap;      /* bytes per ns at line rate */
	double txf, rxf; /* current rate factors (failures), 1 = healthy */
	int ntx, nrx;
	struct flow *txl, *rxl;
	struct txrec *ev;
	size_t nev, evcap;
	double clk_off, clk_rate; /* NIC clock = clk_off + t * clk_rate */
	uint32_t next_qpn;
	int arm_down;    /* NIC-down armed: stops shortly after its next flow starts */
	int down;
	double down_t;   /* when it went down: its link's down event (links.jsonl) */
	double fluct_lo; /* cross-NUMA: factor drawn in [fluct_lo, 1] */
	int fluct_fail;  /* the failure whose rate changes run (EV_NIC_RATE) */
	uint32_t rate_ver; /* bumped when they stop: pending EV_NIC_RATE are stale */
};

struct path {
	int src, dst; /* nic indices */
	int fail;     /* congested by failure fail - 1 (0: none) */
	double cap;   /* shared by its flows (fabric.paths: background traffic) */
	double factor; /* congestion control throttles each flow on it to this share */
	int n;
	struct flow *l;
};

struct flow {
	void *owner;   /* whoever started it (a struct conn), handed back at its end */
	int item;
	int src, dst, path;
	double total, prog, rate, t_last, last_ev, t_start;
	uint64_t emitted;
	double max_rate; /* the protocol's pacing (bytes per ns), 0: the fabric's share only */
	uint32_t ver, qpn;
	struct flow *tx_prev, *tx_next, *rx_prev, *rx_next, *p_prev, *p_next;
	struct flow *free_next;
};

/* ---------- NCCL ---------- */
/* A connection's QP pair, created at communicator init. */
struct qpc {
	int comm, ch;
	int src_rank, dst_rank; /* global ranks */
	int src_nic, dst_nic;
	uint32_t sqpn, rqpn;
	int inter;
};

struct opinst;
struct part {
	struct opinst *op;
	struct rankst *rk;
	int idx;       /* index in op->parts */
	int comm_rank; /* rank in the communicator */
	int launched, done, called, posted;
	int pending;   /* items still to send or receive */
	double call_t, launch_t, end_t;
	double first_t, last_t; /* first/last byte on this rank's NIC */
	uint64_t bytes_sent;    /* RDMA bytes */
	uint64_t hook_seq, group_id, count;
	int type, peer; /* op type; root (coll) or peer (p2p, comm rank) */
	int bad;        /* called inconsistently: its kernel never matches (hang) */
};

struct conn {
	struct opinst *op;
	int from, to; /* part indices */
	int qpc;      /* index into the qpc table */
	int ch;
	int nitems;
	uint32_t *bytes;
	uint8_t *deps;
	int32_t *next; /* ring: the item of the receiver's send that this item feeds */
	int owns_next;
	int next_post, proxy_busy, n_posted, n_started, tx_busy, arrived, consumed;
	int stalled; /* sender stopped (hang) */
};

enum op_kind { OPK_RING = 1, OPK_CHAIN, OPK_P2P, OPK_TREE };

struct opinst {
	struct comm *cm;
	int kind, type, algo;
	int proto;    /* enum sc_proto: SIMPLE, LL or LL128 (never AUTO) */
	int n;        /* parts */
	uint64_t bytes; /* buffer bytes (all-reduce: count*size; AG: sendcount; RS: recvcount) */
	int root;     /* comm rank */
	int K;        /* ring: steps per loop */
	struct part *parts;
	int nconn;
	struct conn *conns;
	int *chain;   /* OPK_CHAIN: comm ranks in chain order */
	int *tup, *tdn; /* OPK_TREE: conn index of i's up conn [ch*n+i], down [(ch*n+i)*2+k] */
	int nparts_called, nparts_done;
	int intra;    /* all parts on one host: analytic */
	uint64_t key;
};

struct comm {
	uint64_t id;
	int idx;
	int n;
	int *ranks; /* global ranks, by comm rank */
	int intra;
	int p2p;   /* has P2P connections */
	int *ring_qpc; /* [ch * n + i]: i -> i+1 */
	int *p2p_qpc;  /* [(ch * n + i) * n + j] */
	int *tree_up;  /* [ch * n + i]: i -> parent (tree algorithm), -1 at the root */
	int *tree_dn;  /* [(ch * n + i) * 2 + k]: i -> its k-th child, -1 none */
	/* collective instances by index */
	struct opinst **coll;
	size_t ncoll;
	/* p2p instances: per ordered pair, by k */
	struct opinst ***p2p_inst;
	uint32_t *p2p_ns, *p2p_nr, *p2p_cap;
	const char *label;
	int gen; /* 0; 1: created by a job restart (events.restart_after) */
};

/* ---------- programs ---------- */
enum instr_kind {
	I_COMPUTE = 1,
	I_OP,
	I_GSTART,
	I_GEND,
	I_ITER,     /* a: iteration index starts */
	I_ITER_END, /* a: iteration ends */
	I_HALT,     /* the process gets stuck here (never calls anything again) */
	I_EVENT,    /* a benign event (a: enum bev_kind, comm: iteration, dur: CPU pause) */
};

/* Benign events in a rank's program (struct sc_events) and in truth.json. */
enum bev_kind {
	BEV_CHECKPOINT = 1, /* sync with the GPU, then the CPU pauses */
	BEV_EVAL_BEGIN,     /* an evaluation step starts (no pause) */
	BEV_EVAL_END,       /* ... and ends: sync with the GPU */
	BEV_HICCUP,         /* the data loader stalls the CPU (the GPU drains its queue) */
	BEV_RESTART,        /* the process exits; a new one starts after the pause */
};
struct bev_rec {
	int kind, iter, rank;
	double t0, t1;
};
enum phase { PH_OTHER = 0, PH_FWD, PH_BWD, PH_OPT, PH_ATTN, PH_EXPERT };

struct instr {
	uint8_t kind, type, phase, dtype;
	int comm;
	int peer;   /* comm rank: root / peer, -1 */
	uint64_t bytes;
	double dur;
	int a;
};

/* an item on a rank's GPU stream: a compute phase, or the kernels of one
 * operator call or one group */
struct gitem {
	double dur;
	struct part **parts;
	int nparts;
	int phase;
};

struct rankst {
	int g, host, gpu;
	uint32_t pid, tid;
	struct instr *prog;
	size_t nprog, capprog;
	size_t pc;
	int waiting;  /* CPU: 1 timer, 3 GPU queue full, 4 sync with the GPU */
	int stopped;  /* fail-stop: the process stopped calling */
	int gpu_dead; /* the GPU stream stopped */
	struct gitem *gq;
	size_t gq_head, gq_n, gq_cap;
	int gpu_busy, gpu_pending;
	int in_group;
	uint64_t group_ctr, group_id;
	struct part **grp;
	int ngrp, capgrp;
	uint64_t *hook_seq; /* per comm */
	uint64_t *coll_idx; /* per comm */
	struct pulse_hook_record *rec;
	size_t nrec, caprec;
	double t_cpu; /* CPU is busy until */
	int iter;
	int build_mb1; /* building the program: the micro-batch of the pass (from 1; 0 none) */
	double pass_f; /* its forward and backward passes x this (gpt.last_stage_compute; 0: 1) */
	/* failure effects on this rank */
	double compute_f, proxy_f, cpu_f;
	double px_on, px_off, px_a, px_b; /* proxy thread on/off schedule */
	unsigned fail_on; /* bit i: failure i acts on this rank now */
	int mark_bad;
	double done_t;
	/* job restart: the process before it (its records are rec[0, nrec_old)) */
	uint32_t pid_old;
	size_t nrec_old;
	double exit_t;
};

struct host {
	char name[16];
	double off, drift_ppm;
	double poll_phase;
};

struct sim;
struct rankst;
struct part;
/* The fabric (engine.c) reports each finished network flow here: its owner
 * and item as given to net_start_flow, and when it started. */
typedef void (*sim_flow_end_fn)(struct sim *sm, void *owner, int item, double t_start);
/* How nccl.c reaches the ranks (run.c): a hook record of a rank, and a
 * part of an operator that finished on its rank. */
struct rank_sink {
	void (*record)(struct sim *sm, struct rankst *rk, struct pulse_hook_record *r, uint8_t kind,
		       double t, uint32_t tid);
	void (*part_done)(struct sim *sm, struct part *pt);
};

struct sim {
	const struct sc_scenario *s;
	sim_flow_end_fn on_flow_end; /* set by run.c: nccl.c's conn_flow_end */
	struct rank_sink sink;       /* set by run.c: its ranks */
	struct pulse_rng rng;
	double now;
	struct heap q;
	int nhosts, ngpus, nranks;
	struct host *hosts;
	struct nic *nics;
	struct path *paths;
	int npaths;
	struct rankst *ranks;
	struct comm *comms;
	int ncomms, capcomms;
	struct qpc *qpcs;
	int nqpcs, capqpcs;
	struct flow *flow_free;
	double bw_nvlink; /* bytes per ns */
	uint64_t stat_flows, stat_events;
	int nactive_ranks;
	/* truth */
	double *iter_start, *iter_end;
	int *iter_nend; /* ranks that finished the iteration */
	struct fail_rt {
		int rank;         /* = its NIC */
		int on;           /* its effect is in place */
		int started;      /* it activated */
		double start;     /* first onset (fail-stop: when the rank stopped) */
		int nep;          /* episodes (on .. off) */
		double ep[SC_FAIL_EPISODES][2]; /* start, end (0: still on) */
	} frt[SC_MAX_FAILURES];
	int nfail;
	FILE *truth_ops;
	double last_activity;
	/* benign events: their own PRNG (a run without them draws nothing from
	 * it, so it stays byte-identical), the workload's current sequence-length
	 * scale while programs are built, and what happened, for truth.json */
	struct pulse_rng erng;
	double wl_scale;
	int comm_gen;    /* generation of the communicators being created */
	int restart_n;   /* ranks whose process exited for the restart */
	double pause_until; /* the end of the latest benign pause */
	struct bev_rec *bevs;
	size_t nbevs, capbevs;
	char err[8400];
};

/* run.c: the failure of this type acting on the rank now, or -1 */
int rank_fail(const struct sim *sm, const struct rankst *rk, int type);
/* the failure of this type on the rank (active or not), or -1 */
int rank_fail_any(const struct sim *sm, int rank, int type);
/* a fail-stop's onset is when the rank stopped, not when it activated */
void fail_stopped(struct sim *sm, int i, double t);

/* engine.c */
void heap_push(struct heap *h, double t, uint8_t kind, void *p, uint32_t a, uint32_t ver);
int heap_pop(struct heap *h, struct ev *out);
void net_start_flow(struct sim *sm, void *owner, int item, uint64_t bytes, int src, int dst,
		    uint32_t qpn, double max_rate);
void net_flow_done(struct sim *sm, struct flow *f);
void net_refresh_nic(struct sim *sm, int nic);
double sim_jitter(struct sim *sm, double base);
uint64_t host_clock(const struct sim *sm, int host, double t);

/* nccl.c */
int comm_create(struct sim *sm, const int *ranks, int n, int p2p, const char *label);
void comms_init(struct sim *sm, int gen, double base);
void comms_destroy_rank(struct sim *sm, struct rankst *rk, int gen, double t);
struct part *op_call(struct sim *sm, struct rankst *rk, const struct instr *in, uint64_t seq,
		     uint64_t group_id);
void op_launch(struct sim *sm, struct part *pt);
void op_posted(struct sim *sm, struct part *pt);
void op_intra_done(struct sim *sm, struct opinst *op);
void conn_proxy_done(struct sim *sm, struct conn *cn);
/* a slice transfer ended (owner: its struct conn); sim_flow_end_fn */
void conn_flow_end(struct sim *sm, void *owner, int item, double first_t);
void conn_arrive(struct sim *sm, struct conn *cn, int item);
void ops_flush_truth(struct sim *sm);

/* proto.c: NCCL's protocols */
int proto_pick(const struct sim *sm, const struct opinst *op);
uint64_t proto_wire(int proto, uint64_t data);
uint64_t proto_slice(const struct sim *sm, int proto);
int proto_chunk_slices(const struct sim *sm, int proto);
int proto_slots(const struct sim *sm, int proto);
double proto_latency_factor(int proto);
double proto_max_rate(const struct sim *sm, int proto, int nchannels, double nic_cap);
const char *proto_name(int proto);

/* The NIC a GPU's traffic leaves through: its own, or with
 * cluster.gpus_per_nic > 1 the one of the first GPU of its group. The NIC
 * table keeps one slot per GPU; the slots of the other GPUs of a group
 * stay unused (nic_used). */
static inline int nic_of(const struct sim *sm, int grank)
{
	int k = sm->s->gpus_per_nic;
	return k > 1 ? grank - sm->ranks[grank].gpu % k : grank;
}
static inline int nic_used(const struct sim *sm, int nic)
{
	return sm->nics[nic].gpu % sm->s->gpus_per_nic == 0;
}

/* workload.c */
int workload_build(struct sim *sm);
/* simai.c: the SimAI workload's programs (simai.h) */
int simai_build(struct sim *sm);
double seqlen_scale(const struct sc_scenario *s, int it);
void prog_add(struct rankst *rk, struct instr in);

/* output.c */
int out_write_all(struct sim *sm, const char *dir, int pcap, struct sc_stats *st);
int out_mkdirs(const char *dir, const struct sim *sm);

/* pcap_out.c */
int pcap_write_nic(struct sim *sm, const char *path, int nic, uint64_t *npkts);

#endif
