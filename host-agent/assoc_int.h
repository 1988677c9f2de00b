/* Internal state of the flow-operator association (host-agent/assoc.h).
 * Shared by assoc.c, assoc_expect.c, assoc_infer.c, assoc_segment.c and
 * assoc_parallel.c only.
 *
 * Model. One "rank stream" (struct as_rank) per (communicator, local rank).
 * It holds one pending-epoch buffer per remote rank (a "peer"): the
 * non-zero epochs of all channels' QPs to that peer, merged, in host time.
 * Operators of a communicator run one after the other (NCCL serializes
 * them on the communicator), so the calls are queued per rank stream in
 * sequence order and only the head of the queue consumes epochs: each of
 * its expected peers runs Algorithm 1 (pulse.txt §5.2) over its own
 * buffer with that peer's expected volume as the lower bound. The head is
 * final when every expected peer closed its segment (complete), when its
 * hang bound passed (hung / not started), or with status gap when NIC data
 * was lost while it was open. */
#ifndef PULSE_HOST_AGENT_ASSOC_INT_H
#define PULSE_HOST_AGENT_ASSOC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "assoc.h"

#define AS_DEFAULT_DELTA_NS 2000000ull  /* Algorithm 1's δ: 2 ms */
#define AS_DEFAULT_HANG_NS 5000000000ull /* 5 s */
#define AS_MAX_NICS 64
#define AS_MAX_RANKS 65536
#define AS_SMALL_SPLIT (64u * 1024u) /* a small operator: loss, metadata (§5.2 "None") */
#define AS_SMALL_CAP 4096u
#define AS_TINY_BYTES 4096u /* fewer bytes than one NIC TX event: no rate curve to infer from */

/* One non-zero epoch: its start in host time and its bytes. */
struct as_ev {
	uint64_t t;
	uint64_t b;
};

/* Per-peer pending epochs, ascending t; [head, n) not consumed yet. */
struct as_buf {
	struct as_ev *v;
	uint32_t head, n, cap;
};

/* Algorithm 1's state for one (operator, peer). */
struct as_seg {
	uint64_t tmp;        /* bytes since the segment started */
	uint64_t start, last; /* first and last non-zero epoch (host ns) */
	uint64_t epochs;     /* non-zero epochs */
	uint64_t peak;       /* most bytes in one event (one QP, one epoch) */
	uint8_t open, closed;
};

struct as_op_peer {
	int32_t rank;
	uint64_t expected;
	struct as_seg seg;
	uint8_t extra; /* not an expected peer: bytes seen during the operator */
};

#define AS_OP_MAX_PEERS 4096u  /* per operator, inside the agent; a record carries
				* PULSE_OP_MAX_PEERS of them (the expected ones first) */
#define AS_LEARN_MAX_PEERS 64u

struct as_call { /* one P2P call inside a group */
	uint8_t type;
	int32_t peer;
	uint64_t count;
	uint8_t datatype;
	uint64_t seq;
};

struct as_op {
	uint64_t seq, group_id, call_ns, count;
	uint8_t type;      /* enum pulse_hook_op_type or PULSE_OP_GROUP */
	uint8_t datatype;
	int32_t root_peer;
	uint8_t algo, algo_source;
	uint8_t prof_algo; /* from the profiler (PULSE_ALGO_*), 0 none */
	uint8_t set_up;    /* expected peers known */
	uint8_t final;
	uint8_t status;
	uint8_t tainted;   /* NIC data lost while it was open or pending */
	uint8_t building;  /* a group not closed by GROUP_END yet */
	uint8_t no_rdma;   /* no RDMA peers at all */
	uint64_t end_ns;   /* when final: end (or the time it became final) */
	uint32_t npeers, peers_cap;
	struct as_op_peer *peers; /* malloc'd */
	uint32_t ncalls;
	struct as_call *calls; /* group members (sends and recvs), malloc'd */
	uint32_t calls_cap;
	uint64_t *ut;         /* times of the consumed epochs, all peers (for the
			       * union of the peers' activity) */
	uint32_t nut, utcap;
	uint32_t peers_with_bytes;
};

struct as_peer {
	int32_t rank;      /* remote rank */
	int32_t gpu;       /* its GPU and host, from the join or membership */
	char host[PULSE_OP_HOST_LEN];
	struct as_buf buf;
	uint32_t nqps;     /* QPs (channels) to it */
};

/* Learned algorithm of a periodic operator (same comm, rank, type, count,
 * datatype): reused for its repeats. */
struct as_learn {
	uint8_t type, datatype, algo;
	uint64_t count;
	uint32_t npeers;
	int32_t rank[AS_LEARN_MAX_PEERS];
	uint64_t expected[AS_LEARN_MAX_PEERS];
};

struct as_rank {
	uint64_t comm_id;
	int32_t rank, nranks;
	uint32_t pid;
	int32_t gpu;
	uint32_t nqps;         /* QPs tied to this rank stream */
	uint64_t nic_mask;     /* NICs carrying them (bit per nic index < 64) */
	struct as_peer *peers; /* npeers, sorted by rank */
	uint32_t npeers, peers_cap;
	struct as_op *q;       /* queue of operators, seq order: [qhead, qn) */
	uint32_t qhead, qn, qcap;
	struct as_learn *learn;
	uint32_t nlearn, learn_cap;
	int32_t ring_next;     /* learned from a ring inference, -1 unknown */
	uint8_t last_algo;     /* the last algorithm inferred for a large collective */
	uint32_t ntree;        /* tree neighbours from the last tree inference */
#define AS_TREE_MAX_CHANNELS 32
	int32_t tree_peer[AS_LEARN_MAX_PEERS];
	uint8_t tree_mult[AS_LEARN_MAX_PEERS]; /* units of N/tree_den */
	uint8_t tree_den;      /* channels: a tree edge carries whole N/tree_den */
	uint64_t last_loss_end; /* host time up to which data was lost */
};

struct as_member {
	uint64_t comm_id;
	int32_t rank, nranks;
	char host[PULSE_OP_HOST_LEN];
	int32_t gpu;
	uint32_t pid;
	int local;
};

struct as_qp {
	uint16_t nic;
	uint32_t qpn;
	uint32_t pid;
	uint64_t comm_id;
	int32_t rank, remote_rank;
	char remote_host[PULSE_OP_HOST_LEN];
	int32_t remote_gpu;
	int32_t rs;   /* rank stream index, -1 none */
	int32_t peer; /* rank of the peer in the rank stream, -1 none */
	uint8_t used;
};

/* Per-communicator parallelism evidence (assoc_parallel.c). */
struct as_comm {
	uint64_t comm_id;
	uint32_t pid;         /* first local process seen with it */
	int32_t nranks;
	uint64_t n_coll, n_coll_big, coll_bytes; /* calls and N = count x size */
	uint64_t n_send, n_groups, n_alltoall;
	uint32_t max_group_peers; /* most distinct send peers in one group */
	uint32_t send_peers_max;  /* most distinct send peers of one local rank */
	int32_t send_peer[8];     /* distinct send peers seen (first 8) */
	uint32_t nsend_peer;
	uint64_t first_call, last_call;
	uint8_t label;
	uint8_t all_local; /* every known member on this host */
};

struct assoc {
	char host[PULSE_OP_HOST_LEN];
	uint32_t epoch_ns;
	uint64_t delta_ns, hang_ns, short_gap_ns, call_lag_ns;
	int finishing; /* assoc_finish: every pending operator is due */
	int peers_pending; /* assoc_peers_pending */
	uint64_t calls_until; /* assoc_calls_known, less the publication lag; 0: no bound */
	struct as_member *members;
	uint32_t nmembers, members_cap;
	struct as_qp *qps;         /* open-addressing table keyed by (nic, qpn) */
	uint32_t qp_cap, nqps_used;
	struct as_rank *ranks;
	uint32_t nranks_s, ranks_cap;
	struct as_comm *comms;
	uint32_t ncomms, comms_cap;
	uint64_t horizon[AS_MAX_NICS]; /* host time up to which NIC data is known */
	uint8_t nic_seen[AS_MAX_NICS];
	struct assoc_stats st;
	/* scratch for the window: flows by peer, merge cursors */
	struct as_pf *pf;
	uint32_t pf_cap;
	struct as_cursor *cur;
	uint32_t cur_cap;
};

/* ---- assoc_expect.c ---- */
uint32_t as_dtype_size(uint8_t datatype);
/* Bytes this rank sends in total for a collective under a ring (Appendix B). */
uint64_t as_ring_total(uint8_t type, uint64_t count, uint8_t datatype, int32_t nranks);
/* Tolerance under the expected volume that still counts as reached:
 * NCCL's chunking rounds per-step sizes. */
uint64_t as_tolerance(uint64_t expected, int32_t nranks);
/* Fills op->peers for an operator whose algorithm (or arguments) give its
 * expected peers. Returns 1 when set up, 0 when the algorithm must be
 * inferred first. */
int as_expect_setup(struct assoc *a, struct as_rank *rs, struct as_op *op);
struct as_peer *as_peer_get(struct as_rank *rs, int32_t rank, int create);
/* The ring successor (learned, else rank+1) is a member on this host. */
int as_succ_on_host(const struct assoc *a, const struct as_rank *rs);
void as_op_add_peer(struct as_op *op, int32_t rank, uint64_t expected, uint8_t extra);

/* ---- assoc_infer.c ---- */
/* Looks at the buffered traffic from the operator's call on: when a
 * rank-level segment (Algorithm 1 with the lower bound of every algorithm)
 * has ended, decides ring or tree from the active peers and sets up the
 * expected peers. Returns 1 when decided, 0 when more data is needed. */
int as_infer(struct assoc *a, struct as_rank *rs, struct as_op *op, uint64_t horizon);
/* NCCL's protocols, as far as their wire overhead goes (assoc_infer.c). */
enum { AS_PROTO_SIMPLE = 0, AS_PROTO_LL128 = 1, AS_PROTO_LL = 2 };
/* The bytes a protocol puts on the wire for `data` bytes of data. */
uint64_t as_proto_wire(uint64_t data, uint8_t proto);
/* ring / tree from the per-peer volumes of one operator (exposed for tests);
 * *proto_out: the protocol whose overhead the volumes showed (the expected
 * volumes include it). */
uint8_t as_infer_pattern(uint8_t type, int32_t nranks, uint64_t n_bytes, uint32_t npeers,
			 const int32_t *rank, const uint64_t *bytes, uint64_t *expected_out,
			 uint8_t *proto_out);

/* ---- assoc_segment.c ---- */
/* Algorithm 1 for one peer of the head operator over its buffer. Returns 1
 * when the peer's segment closed. next_call: call time of the next queued
 * operator of this rank stream (UINT64_MAX: none). */
int as_segment_peer(struct assoc *a, const struct as_rank *rs, struct as_op *op,
		    struct as_op_peer *p, struct as_buf *b, uint64_t horizon, uint64_t next_call);
/* Consumes one epoch into an operator's peer (bytes, times, union). */
void as_take(struct assoc *a, struct as_op *op, struct as_op_peer *p, const struct as_ev *e);
/* Earliest time an operator's traffic may start (its call, less clock slack). */
uint64_t as_call_floor(const struct assoc *a, const struct as_op *op);
/* Plain Algorithm 1 over one series (exposed for tests and the benchmark):
 * starts/ends of the segments of (t, bytes) with lower bound size. */
uint32_t as_alg1(const struct as_ev *ev, uint32_t n, uint64_t size, uint64_t delta_ns,
		 uint64_t *starts, uint64_t *ends, uint32_t max);

/* ---- assoc_parallel.c ---- */
struct as_comm *as_comm_get(struct assoc *a, uint64_t comm_id, int create);
void as_parallel_note_call(struct assoc *a, const struct as_rank *rs, const struct as_op *op);
uint8_t as_parallel_label(const struct assoc *a, const struct as_comm *c);
/* The label for one record: NONE for small-volume operators. */
uint8_t as_parallel_for_op(const struct assoc *a, const struct as_op *op, uint64_t comm_id);

#endif
