/* Flow-operator association (pulse.txt §5, Appendix B): turns one host's
 * per-QP µs rate curves (decoded poll windows) and the intercepted calls of
 * its training processes into per-operator, per-rank measurements
 * (struct pulse_op_record, include/pulse/op_record.h).
 *
 * One instance per host agent, fed by the same calls in live operation
 * (loop.c, hook_drain.c) and in replay (replay.c); only the sources differ.
 * Single-threaded: the caller serializes.
 *
 * Files:
 *   assoc.c           state, the feeding calls, flush and emission
 *   assoc_expect.c    expected volume and peers per algorithm (Appendix B)
 *   assoc_infer.c     ring/tree inference from the active-peer pattern (§5.1)
 *   assoc_segment.c   Algorithm 1, per peer over all channels' QPs
 *   assoc_parallel.c  DP/TP/PP/EP/none decision tree (§5.2)
 *   assoc_int.h       the internal model (rank streams, peer buffers, queues)
 * Tests: tests/assoc/ (synthetic windows, the real captures, accuracy.sh
 * against run_cluster's truth); benchmark: make bench-assoc.
 */
#ifndef PULSE_HOST_AGENT_ASSOC_H
#define PULSE_HOST_AGENT_ASSOC_H

#include <stdint.h>

#include "pulse/hook_record.h"
#include "pulse/nic_client.h"
#include "pulse/op_record.h"

struct assoc_cfg {
	const char *host;   /* this host's name, copied into every record */
	uint32_t epoch_ns;  /* the NIC's epoch length */
	uint64_t delta_ns;  /* Algorithm 1's δ; 0: default (2 ms) */
	uint64_t hang_ns;   /* an operator not complete this long after its call
			     * (or its first byte) is reported hung; 0: default (5 s) */
	uint64_t short_gap_ns; /* back-to-back operators: once a peer reached its
			     * expected volume and the next operator of the
			     * communicator was called, an idle gap this long
			     * (shorter than δ) also ends the segment;
			     * 0: default (4 epochs) */
	uint64_t call_lag_ns; /* live: how late a call may show in a ring after it
			     * was made, in host-clock ns (assoc_calls_known);
			     * 0: default (ASSOC_CALL_LAG_NS) */
};

/* How late a call may show in a ring after it was made, in wall time: the
 * calling thread publishes it at once, but may be preempted first (the
 * simulator's training processes, at 4x on a busy 2-core machine: with 2 ms,
 * 1 merge in 2 live runs remained; with 10 ms, none in clean runs). A
 * simulated host whose clock runs faster than the wall (--sim-clock) scales
 * it by its rate: preemption takes wall time. */
#define ASSOC_CALL_LAG_NS (10 * 1000000ull)

struct assoc;

struct assoc *assoc_new(const struct assoc_cfg *cfg);
void assoc_free(struct assoc *a);

/* Communicator membership, one call per (communicator, rank), local or
 * remote (remote ones come from the join of the other hosts' mappings).
 * Repeating a call updates it. */
struct assoc_member {
	uint64_t comm_id;
	int32_t rank, nranks;
	const char *host;   /* copied */
	int32_t gpu;
	uint32_t pid;
	int local;          /* a process on this host */
};
void assoc_member(struct assoc *a, const struct assoc_member *m);

/* A local QP and, once the join knows it, its remote end. Repeating a call
 * for the same (nic, qpn) updates it (e.g. when the join completes). */
struct assoc_qp {
	uint16_t nic;          /* index of the NIC whose windows carry this QP */
	uint32_t qpn;
	uint32_t pid;
	uint64_t comm_id;      /* 0: not tied to a communicator */
	int32_t rank;          /* local rank in comm_id, -1 unknown */
	int32_t remote_rank;   /* -1 until joined */
	const char *remote_host; /* copied; NULL until joined */
	int32_t remote_gpu;
};
void assoc_qp(struct assoc *a, const struct assoc_qp *q);

/* The remote ends of some QPs may still come (live: the analyzer's JOIN,
 * host-agent/join_wait.c). Meanwhile an operator of a rank with a QP whose
 * remote end is unknown is not set up: which of its peers the NIC carries
 * is not known (a send to a peer with no known QP would be taken for one
 * over NVLink, and the operator reported without traffic). It is once the
 * remote ends come, pending ends, or its hang bound passes. */
void assoc_peers_pending(struct assoc *a, int pending);

/* Live: every call made before until_ns (host clock) has been handed over
 * with assoc_call (the interception rings were drained then). A poll
 * window reaches past the drain, so its last bytes may belong to an
 * operator called after it: until that call is known, no operator whose
 * next call is not known yet takes bytes from after until_ns (less the
 * rings' publication lag, cfg.call_lag_ns): it would take the next
 * operator's too, and
 * every later operator its successor's (two back-to-back collectives,
 * 1 ms apart, merged in the live join test). They wait for the next
 * cycle. 0 (the default): no bound, the calls come ahead of their bytes
 * (a replay feeds them in time order). A call handed over later, made
 * before the bound, came later than the lag allows: the operator before it
 * may have taken its traffic; it is counted (assoc_stats.late_calls). */
void assoc_calls_known(struct assoc *a, uint64_t until_ns);
/* The publication lag in force (cfg.call_lag_ns or its default). */
uint64_t assoc_call_lag_ns(const struct assoc *a);

/* One intercepted record of a local process: PULSE_HOOK_OP, GROUP_START and
 * GROUP_END are used (others are ignored), in the order drained. */
void assoc_call(struct assoc *a, const struct pulse_hook_record *r);

/* One decoded poll window of NIC `nic`. NIC times convert to host time as
 * host_ns = nic_ns + offset_ns (clock_sync.c). gap != 0 says data before
 * this window was lost (enum gap_flag in agent.h): operators that span the
 * loss are reported PULSE_OP_GAP, never as zeros. */
void assoc_window(struct assoc *a, uint16_t nic, const struct pulse_window *w, int64_t offset_ns,
		  unsigned gap);

/* Emits every record that became final by host time now_ns (complete, hung,
 * not started, gap), each once, in end-time order per rank. */
typedef void (*assoc_emit_fn)(void *ctx, const struct pulse_op_record *r);
void assoc_flush(struct assoc *a, uint64_t now_ns, assoc_emit_fn emit, void *ctx);

/* End of the data (replay reached the end of its run directory, or the
 * agent stops): like assoc_flush, then every operator still pending is
 * emitted as it stands: hung (it sent some of its bytes), not_started
 * (none), gap (NIC data was lost meanwhile); the hang bound is not waited
 * for. The instance stays usable. */
void assoc_finish(struct assoc *a, uint64_t now_ns, assoc_emit_fn emit, void *ctx);

/* Host time before which every operator that ended has been emitted by the
 * flushes so far: the NICs' data horizon (the least of them) less
 * Algorithm 1's delta (a transfer is closed delta after its last byte), and
 * no later than the calls known (assoc_calls_known). 0 when it cannot be
 * said: no NIC data yet, or remote ends pending (assoc_peers_pending), when
 * operators wait whatever their bytes. What the agent's poll_end line says. */
uint64_t assoc_settled(const struct assoc *a);

/* The parallelism label of a communicator, as far as seen (PULSE_PAR_*). */
uint8_t assoc_parallelism(const struct assoc *a, uint64_t comm_id);

struct assoc_stats {
	uint64_t calls, windows, records, complete, hung, not_started, gaps;
	uint64_t unmatched_segments; /* traffic that matched no call (counted, logged):
				      * non-zero epochs dropped as no operator's */
	uint64_t unknown_qp_bytes;   /* bytes on QPs with no communicator */
	uint64_t algo_conflicts;     /* profiler said one algorithm, inference another */
	uint64_t late_calls;         /* calls made before the bound of calls known
				      * (assoc_calls_known), handed over after it */
	uint64_t late_call_max_ns;   /* the latest of them: how far before the bound */
};
void assoc_get_stats(const struct assoc *a, struct assoc_stats *s);

#endif
