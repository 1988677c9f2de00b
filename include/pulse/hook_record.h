/* Pulse interception records: the format that libpulse-hook.so (LD_PRELOAD)
 * and libpulse-nccl-profiler.so (NCCL profiler plugin) write into a
 * per-process shared-memory ring, and that the host agent drains.
 *
 * Versioned: every record carries PULSE_HOOK_RECORD_VERSION, the ring header
 * carries it too (include/pulse/hook_ring.h). A reader rejects a ring whose
 * version or record size it does not know. Fields are host byte order (the
 * ring never leaves the host). All records are exactly 120 bytes.
 *
 * Version 1. Compatibility rule within a version: kinds are only ever added
 * (with a new body in the union, never changing an existing one), so a
 * reader must skip, and count, records of a kind it does not know, and must
 * not reject the ring for them. Kinds 1-8 are the first set; kind 9
 * (NET_QP) was added later in version 1: a reader built before it counts
 * those records as unknown and loses only the net view. Kind 10 (COMM_EVENT)
 * came with NCCL 2.27-2.29's communicator calls; the op body's redop32 (and
 * flag REDOP32) sits in what was trailing padding, zero in older writers.
 */
#ifndef PULSE_HOOK_RECORD_H
#define PULSE_HOOK_RECORD_H

#include <stdint.h>

#define PULSE_HOOK_RECORD_VERSION 1u

enum pulse_hook_kind {
	PULSE_HOOK_COMM_INIT = 1,    /* body: comm */
	PULSE_HOOK_COMM_DESTROY = 2, /* body: comm (how = DESTROY or ABORT) */
	PULSE_HOOK_OP = 3,           /* body: op: one collective or P2P call */
	PULSE_HOOK_GROUP_START = 4,  /* body: group */
	PULSE_HOOK_GROUP_END = 5,    /* body: group */
	PULSE_HOOK_QP_CREATE = 6,    /* body: qp (dest fields zero) */
	PULSE_HOOK_QP_RTR = 7,       /* body: qp: ibv_modify_qp to RTR */
	PULSE_HOOK_QP_DESTROY = 8,   /* body: qp (dest fields zero) */
	PULSE_HOOK_NET_QP = 9,       /* body: net_qp: profiler net events of one
				      * (operator, channel, direction, QP), aggregated */
	PULSE_HOOK_COMM_EVENT = 10,  /* body: comm (how = FINALIZE, REVOKE, SUSPEND or
				      * RESUME; key = the call's flags): the communicator
				      * lives on, its state changed */
};
#define PULSE_HOOK_KIND_MAX PULSE_HOOK_COMM_EVENT /* the newest kind this header knows */

/* Who wrote the record. */
enum pulse_hook_source {
	PULSE_HOOK_SRC_HOOK = 1,     /* libpulse-hook.so, from the call itself */
	PULSE_HOOK_SRC_PROFILER = 2, /* libpulse-nccl-profiler.so, from NCCL's profiler ABI */
};

/* Record flags. */
#define PULSE_HOOK_F_ANNOTATION 0x1u /* profiler record written while the hook is
	* loaded in the same process: it adds what the hook cannot see (NCCL's
	* commHash, seqNumber, algo, proto, nChannels) and must NOT be counted as
	* another operator or communicator. See hook/README.md. */
#define PULSE_HOOK_F_UNKNOWN_COMM 0x2u /* op on a communicator the hook never saw created */
#define PULSE_HOOK_F_NCCL_HASH_ID 0x4u /* profiler without the hook: op.comm_id holds NCCL's
	* commHash (join with the profiler's COMM_INIT nccl_hash), not a Pulse id */
#define PULSE_HOOK_F_REDOP32 0x8u /* op.redop32 holds the whole ncclRedOp_t (op.redop
	* is its low 8 bits, 0xff none): ncclRedOpCreatePreMulSum hands out
	* values above 255 */
#define PULSE_HOOK_F_SIMULATED 0x10u /* GROUP_END: the group was closed by
	* ncclGroupSimulateEnd; its operators never launched and were not
	* recorded */
#define PULSE_HOOK_F_MLX5DV 0x20u /* QP_CREATE: the QP came from mlx5dv_create_qp
	* (libmlx5), not ibv_create_qp */

/* How a communicator came to be (comm.how). */
enum pulse_hook_comm_how {
	PULSE_HOOK_HOW_INIT_RANK = 1,
	PULSE_HOOK_HOW_INIT_RANK_CONFIG = 2,
	PULSE_HOOK_HOW_INIT_ALL = 3,
	PULSE_HOOK_HOW_SPLIT = 4,
	PULSE_HOOK_HOW_INIT_RANK_SCALABLE = 5,
	PULSE_HOOK_HOW_DESTROY = 6,
	PULSE_HOOK_HOW_ABORT = 7,
	PULSE_HOOK_HOW_PROFILER = 8, /* seen through the profiler's init */
	PULSE_HOOK_HOW_SHRINK = 9,   /* ncclCommShrink (2.27): child of parent_id */
	PULSE_HOOK_HOW_GROW = 10,    /* ncclCommGrow (2.29) */
	PULSE_HOOK_HOW_FINALIZE = 11, /* COMM_EVENT: ncclCommFinalize */
	PULSE_HOOK_HOW_REVOKE = 12,   /* COMM_EVENT: ncclCommRevoke (2.29) */
	PULSE_HOOK_HOW_SUSPEND = 13,  /* COMM_EVENT: ncclCommSuspend */
	PULSE_HOOK_HOW_RESUME = 14,   /* COMM_EVENT: ncclCommResume */
};

/* Operator type (op.type). */
enum pulse_hook_op_type {
	PULSE_HOOK_OP_ALLREDUCE = 1,
	PULSE_HOOK_OP_ALLGATHER = 2,
	PULSE_HOOK_OP_REDUCESCATTER = 3,
	PULSE_HOOK_OP_BROADCAST = 4,
	PULSE_HOOK_OP_REDUCE = 5,
	PULSE_HOOK_OP_ALLTOALL = 6,
	PULSE_HOOK_OP_SEND = 7,
	PULSE_HOOK_OP_RECV = 8,
	PULSE_HOOK_OP_GATHER = 9,      /* ncclGather (2.28): root_peer = root */
	PULSE_HOOK_OP_SCATTER = 10,    /* ncclScatter (2.28): root_peer = root */
	PULSE_HOOK_OP_PUT_SIGNAL = 11, /* ncclPutSignal (2.29): root_peer = peer */
	PULSE_HOOK_OP_SIGNAL = 12,     /* ncclSignal (2.29): root_peer = peer, count 0 */
	PULSE_HOOK_OP_WAIT_SIGNAL = 13, /* ncclWaitSignal (2.29): count = nDesc */
	PULSE_HOOK_OP_OTHER = 15, /* profiler: a func name we do not map */
};

/* Where the GPU identity came from (gpu_source). */
enum pulse_hook_gpu_source {
	PULSE_HOOK_GPU_UNKNOWN = 0,
	PULSE_HOOK_GPU_CUDART = 1,       /* cudaGetDevice + cudaDeviceGetPCIBusId */
	PULSE_HOOK_GPU_VISIBLE_DEVS = 2, /* CUDA_VISIBLE_DEVICES (first entry in `visible`) */
};

struct pulse_hook_gpu {
	int32_t cuda_dev;       /* CUDA device ordinal, -1 unknown */
	uint8_t source;         /* enum pulse_hook_gpu_source */
	uint8_t pad[3];
	char pci_bus_id[16];    /* "0000:3b:00.0", NUL-terminated, "" unknown */
	char visible[16];       /* CUDA_VISIBLE_DEVICES, truncated, "" unset */
}; /* 40 bytes */

struct pulse_hook_comm_body {
	uint64_t comm_id;   /* stable, equal on every rank (hook/README.md) */
	uint64_t parent_id; /* split: the parent's comm_id, else 0 */
	uint64_t handle;    /* the ncclComm_t value in this process */
	uint64_t nccl_hash; /* NCCL's commHash (profiler only), else 0 */
	int32_t rank, nranks;
	int32_t color, key; /* split only */
	int32_t result;     /* ncclResult_t returned to the caller */
	uint16_t nnodes;    /* profiler only, else 0 */
	uint8_t how;        /* enum pulse_hook_comm_how */
	uint8_t pad;
	struct pulse_hook_gpu gpu;
}; /* 92 bytes */

struct pulse_hook_op_body {
	uint64_t comm_id;
	uint64_t seq;       /* per communicator, from 0, in call order in this process */
	uint64_t count;     /* elements, as passed (AllGather: sendcount, ReduceScatter: recvcount) */
	uint64_t stream;    /* cudaStream_t value */
	uint64_t group_id;  /* id of the enclosing ncclGroupStart/End, 0 outside a group */
	uint64_t nccl_seq;  /* profiler: NCCL's seqNumber, else 0 */
	int32_t root_peer;  /* Broadcast/Reduce root, Send/Recv peer, else -1 */
	int32_t result;     /* ncclResult_t returned to the caller */
	uint8_t type;       /* enum pulse_hook_op_type */
	uint8_t datatype;   /* ncclDataType_t */
	uint8_t redop;      /* ncclRedOp_t (0xff: none) */
	uint8_t nchannels;  /* profiler only */
	char algo[8];       /* profiler only, e.g. "Ring" */
	char proto[8];      /* profiler only, e.g. "Simple" */
	int32_t redop32;    /* the whole ncclRedOp_t when flags has PULSE_HOOK_F_REDOP32 */
}; /* 80 bytes */

struct pulse_hook_group_body {
	uint64_t group_id;  /* process-wide counter, from 1 */
	uint32_t depth;     /* nesting depth after Start / before End (1 = outermost) */
	int32_t result;     /* ncclGroupEnd's return (Start: its return) */
};

struct pulse_hook_qp_body {
	char dev[20];       /* ibv device name, e.g. "mlx5_0" */
	uint32_t qpn;       /* local QPN */
	uint32_t dest_qpn;  /* RTR: remote QPN */
	uint32_t attr_mask; /* as passed to ibv_modify_qp */
	int32_t result;     /* the verbs function's return (create: 0 or -1) */
	uint8_t port;       /* RTR: ah_attr.port_num */
	uint8_t sgid_index; /* RTR: ah_attr.grh.sgid_index */
	uint8_t is_global;  /* RTR: ah_attr.is_global (remote_gid valid) */
	uint8_t pad;
	uint8_t remote_gid[16];
	struct pulse_hook_gpu gpu; /* the calling thread's GPU */
}; /* 96 bytes */

/* PULSE_HOOK_NET_QP: NCCL's IB network plugin reports every work request
 * it posts (profiler ABI, event type NetPlugin, IB descriptor v1: device
 * index, QP number, opcode, wr_id, length) under a proxy step of a proxy
 * operation (one channel, one peer, send or receive) of a collective or P2P
 * task. libpulse-nccl-profiler.so sums them per QP inside each proxy
 * operation and writes one record per (proxy operation, QP) when the proxy
 * operation ends: the record rate follows operators x channels x peers x
 * QPs, never work requests. Record header: time_ns = the first work request,
 * pid = the process that posted them (NCCL's proxy thread runs there), tid
 * = the proxy thread. Source is always PROFILER (an ANNOTATION when the hook
 * is loaded: it never counts as an operator, a communicator or a QP
 * creation; it ties the QP to the operator and its communicator). */
#define PULSE_HOOK_NET_F_NO_PARENT 0x01u /* proxy op without a task of this process
	* (PXN: posted for another process's operator): comm_id/nccl_hash are this
	* process's communicator, seq and nccl_seq unknown (UINT64_MAX) */
#define PULSE_HOOK_NET_F_QP_OVERFLOW 0x02u /* the proxy op used more QPs than the
	* plugin aggregates (PULSE_HOOK_NET_QPS_PER_OP): the rest are in qp_overflow_wrs */
#define PULSE_HOOK_NET_F_P2P 0x04u /* the task is a P2P operation (else a collective) */
#define PULSE_HOOK_NET_QPS_PER_OP 8 /* QPs aggregated per proxy op (NCCL posts on at most 8) */

struct pulse_hook_net_qp_body {
	uint64_t comm_id;   /* as op.comm_id: the hook's id when it is loaded, else NCCL's
			     * commHash and the record flag PULSE_HOOK_F_NCCL_HASH_ID */
	uint64_t nccl_hash; /* NCCL's commHash (v5+: commId) */
	uint64_t seq;       /* the profiler's own per-communicator op seq: equal to the
			     * u.op.seq of the profiler OP record of the same task */
	uint64_t nccl_seq;  /* collectives: NCCL's seqNumber; P2P: UINT64_MAX */
	uint64_t bytes;     /* sum of the posted work requests' lengths on this QP */
	uint64_t last_ns;   /* CLOCK_REALTIME of the last work request */
	uint32_t qpn;       /* the local QP number (ibv qp_num) */
	uint32_t wrs;       /* work requests posted on it in this proxy op */
	int32_t rank;       /* the task's rank (descriptor rank) */
	int32_t peer;       /* the proxy op's remote rank */
	int32_t nccl_dev;   /* NCCL's IB device index (not a name) */
	uint32_t opcodes;   /* bit (1 << ibv opcode) for each opcode seen (< 32) */
	uint32_t unknown_total; /* process-wide: net events ignored so far (unknown
			     * plugin type or descriptor version, or no parent) */
	uint32_t pool_drops_total; /* process-wide: tasks/proxy ops not followed
			     * (the plugin's event pool was full) */
	uint32_t qp_overflow_wrs; /* work requests on QPs past PULSE_HOOK_NET_QPS_PER_OP */
	uint8_t channel;    /* the proxy op's channel id */
	uint8_t is_send;    /* 1 send proxy op, 0 receive */
	uint8_t op_type;    /* enum pulse_hook_op_type of the task */
	uint8_t net_flags;  /* PULSE_HOOK_NET_F_* */
}; /* 88 bytes */

struct pulse_hook_record {
	uint8_t kind;       /* enum pulse_hook_kind */
	uint8_t source;     /* enum pulse_hook_source */
	uint16_t version;   /* PULSE_HOOK_RECORD_VERSION */
	uint32_t pid;
	uint32_t tid;
	uint32_t flags;     /* PULSE_HOOK_F_* */
	uint64_t time_ns;   /* CLOCK_REALTIME at the call */
	union {
		struct pulse_hook_comm_body comm;
		struct pulse_hook_op_body op;
		struct pulse_hook_group_body group;
		struct pulse_hook_qp_body qp;
		struct pulse_hook_net_qp_body net;
		uint8_t raw[96];
	} u;
};

_Static_assert(sizeof(struct pulse_hook_gpu) == 40, "gpu layout");
_Static_assert(sizeof(struct pulse_hook_qp_body) <= 96, "qp body");
_Static_assert(sizeof(struct pulse_hook_comm_body) <= 96, "comm body");
_Static_assert(sizeof(struct pulse_hook_op_body) <= 96, "op body");
_Static_assert(sizeof(struct pulse_hook_net_qp_body) <= 96, "net_qp body");
_Static_assert(sizeof(struct pulse_hook_record) == 120, "record is 120 bytes");

#endif
