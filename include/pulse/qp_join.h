/* The cross-host QP join: ties every RDMA QP that the interception saw
 * (libpulse-hook.so's QP_CREATE/RTR/DESTROY records, as each host agent's
 * mapping holds them) to the QP at its other end, on another host (or the
 * same one), and so to the remote host, GPU, process and rank. Shared by the
 * host agent (host-agent/replay.c reads every host's records from a run
 * directory; live, the agent joins what it has) and the analyzer, which
 * receives every host's mapping (wire/qp_join.c; no allocation survives a
 * call, no global state, thread-compatible).
 *
 * How two QPs are paired. An RC QP pair is symmetric: A's remote QPN (from
 * its RTR) is B's QPN and B's remote QPN is A's, and A's remote GID is the
 * GID of B's device and the other way round. QPNs are small numbers that
 * repeat across hosts (and across time on one device after a destroy), so
 * symmetry alone can leave several candidates; they are narrowed, in order:
 *   1. GIDs: a device's own GID comes from the caller (cluster.json in
 *      replay, or the NIC itself) or is learned from a pair the filters
 *      made unique (B's device has the GID that A's RTR named): first from
 *      pairs unique on both sides, then, when those teach nothing more,
 *      from A's only candidate B. Known GIDs must agree with both RTRs.
 *      Learning repeats until nothing new.
 *   2. Communicators: NCCL connects a communicator's QPs to the same
 *      communicator's QPs, so when both ends know their comm_id they must
 *      be equal.
 *   3. Lifetime: both QPs existed at the same time (create..destroy on each
 *      host's clock, with a tolerance for clock offsets between hosts);
 *      only used to break a tie.
 * A QP with exactly one candidate left is PAIRED; one with none is
 * NO_PARTNER (the other host's records are missing, the peer is outside the
 * job); one with more is AMBIGUOUS (counted, never guessed). A QP that never
 * reached RTR is NOT_CONNECTED. Pairing is mutual: A pairs with B only if B's
 * only candidate is A.
 *
 * Communicator membership: every (comm_id, rank) once, with its host, GPU
 * and process (pulse_join_members). */
#ifndef PULSE_QP_JOIN_H
#define PULSE_QP_JOIN_H

#include <stdint.h>

#define PULSE_JOIN_HOST_LEN 64
#define PULSE_JOIN_DEV_LEN 21
/* Lifetimes of two QPs on two hosts overlap if they do within this much
 * (host clocks differ by an offset the join does not know). */
#define PULSE_JOIN_CLOCK_SLACK_NS 100000000ull

/* One QP (one incarnation of a QPN on a device) of one host. */
struct pulse_join_qp {
	char host[PULSE_JOIN_HOST_LEN];
	char dev[PULSE_JOIN_DEV_LEN];  /* ibv device name, e.g. "mlx5_0" */
	uint8_t connected;             /* an RTR was seen: dest_qpn and remote_gid are meaningful */
	uint8_t gid_valid;             /* the RTR carried a GRH (RoCE always does) */
	uint8_t destroyed;
	uint8_t remote_gid[16];
	uint32_t qpn, dest_qpn;
	uint32_t pid;
	int32_t gpu;                   /* CUDA ordinal, -1 unknown */
	uint64_t comm_id;              /* 0: not tied to a communicator */
	int32_t rank;                  /* its rank in comm_id, -1 unknown */
	uint64_t first_ns;             /* created (host clock) */
	uint64_t last_ns;              /* destroyed, or UINT64_MAX while alive */
};

/* One communicator member, as a host's mapping has it. */
struct pulse_join_comm {
	uint64_t comm_id;
	int32_t rank, nranks;          /* -1 unknown */
	char host[PULSE_JOIN_HOST_LEN];
	int32_t gpu;
	uint32_t pid;
	uint64_t time_ns;              /* the init call (host clock) */
};

/* A device's own GID, when known beforehand. */
struct pulse_join_gid {
	char host[PULSE_JOIN_HOST_LEN];
	char dev[PULSE_JOIN_DEV_LEN];
	uint8_t gid[16];
};

enum pulse_join_status {
	PULSE_JOIN_PAIRED = 1,
	PULSE_JOIN_NO_PARTNER = 2,
	PULSE_JOIN_AMBIGUOUS = 3,
	PULSE_JOIN_NOT_CONNECTED = 4,
};

struct pulse_join_result {
	uint8_t status;                /* enum pulse_join_status */
	uint32_t candidates;           /* after every filter (AMBIGUOUS: how many) */
	int32_t peer;                  /* PAIRED: index of the other end in the input, else -1 */
	/* PAIRED: the remote end (the partner QP's, completed from the
	 * communicator records when the QP itself does not know them) */
	int32_t remote_rank, remote_gpu;
	uint32_t remote_pid;
};

struct pulse_join_stats {
	uint32_t qps, paired, no_partner, ambiguous, not_connected;
	uint32_t devices, gids_given, gids_learned;
	uint32_t gid_conflicts;        /* a device seen with two GIDs (the first is kept) */
	uint32_t asymmetric;           /* A's only candidate is B, B's is not A */
};

/* Joins n QPs (any order, any hosts). gids: devices' own GIDs known
 * beforehand (may be NULL). comms: communicator records, for ranks and GPUs
 * the QPs lack (may be NULL). out: n results, by input index. Returns 0, or
 * -1 when memory ran out (out then says NO_PARTNER for every QP). */
int pulse_qp_join(const struct pulse_join_qp *qps, uint32_t n, const struct pulse_join_gid *gids,
		  uint32_t ngids, const struct pulse_join_comm *comms, uint32_t ncomms,
		  struct pulse_join_result *out, struct pulse_join_stats *st);

/* Communicator membership: copies every (comm_id, rank) once into out (which
 * holds n), sorted by comm_id then rank; a rank claimed by two different
 * processes keeps the latest init and counts a conflict. Members with an
 * unknown rank are left out. Returns the number written. */
uint32_t pulse_join_members(const struct pulse_join_comm *in, uint32_t n,
			    struct pulse_join_comm *out, uint32_t *conflicts);

const char *pulse_join_status_name(uint8_t status);

/* "fe80:0000:...:0001" (8 groups of 4 hex digits, or any IPv6 text form)
 * into 16 bytes. Returns 0 or -1. */
int pulse_join_parse_gid(const char *s, uint8_t gid[16]);

#endif
