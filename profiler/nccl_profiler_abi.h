/* The NCCL profiler plugin ABI versions libpulse-nccl-profiler.so supports,
 * declared here in our own words from NCCL's plugin documentation and
 * headers (NVIDIA/nccl: plugins/profiler/README.md and
 * src/include/plugin/profiler/profiler_vN.h, net_ib_v1.h, read at tag
 * v2.30.7-1 and checked at v2.27.7-1, v2.28.9-1, v2.29.7-1). NCCL dlopens
 * the library named by NCCL_PROFILER_PLUGIN and looks up a struct named
 * ncclProfiler_vN, newest it knows first, then older ones:
 *
 *   NCCL 2.23        v1   2.24 - 2.25  v2    2.26  v3     (not supported here)
 *   NCCL 2.27        v4   init(ctx, mask, commName, commHash, nNodes, nranks, rank, log)
 *   NCCL 2.28        v5   init(ctx, commId, mask, commName, nNodes, nranks, rank, log);
 *                         the descriptor's type widens to 64 bits, coll/p2p gain a
 *                         trailing parentGroup, API and kernel-launch events appear
 *   NCCL 2.29, 2.30  v6   v5's functions and members, plus copy-engine events
 *                         (never enabled here)
 *
 * v3 (NCCL 2.26) has no communicator in init and is not exported: NCCL
 * 2.26 then finds no version it knows and runs without the plugin.
 *
 * Event tree as NCCL builds it (parentObj is the handle the plugin returned
 * for the parent): Group -> Coll | P2p -> ProxyOp (one channel, one peer,
 * send or recv; started on NCCL's proxy thread, possibly after the task
 * event stopped) -> ProxyStep -> NetPlugin (one per posted work request of
 * the IB net plugin; descriptor id = type << 16 | version, data -> the IB
 * descriptor below). ProxyOp and ProxyStep events are started when
 * NetPlugin is in the activation mask even if they are not.
 * Only the members this plugin reads are relied on; their order and types
 * follow NCCL's headers (offsets checked by the asserts at the end).
 */
#ifndef PULSE_NCCL_PROFILER_ABI_H
#define PULSE_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../hook/nccl_abi.h"

typedef void (*pulse_nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
				    const char *fmt, ...);

/* Event types (bit flags in the activation mask). */
enum {
	PULSE_NCCL_PROF_GROUP = 1 << 0,
	PULSE_NCCL_PROF_COLL = 1 << 1,
	PULSE_NCCL_PROF_P2P = 1 << 2,
	PULSE_NCCL_PROF_PROXY_OP = 1 << 3,
	PULSE_NCCL_PROF_PROXY_STEP = 1 << 4,
	PULSE_NCCL_PROF_PROXY_CTRL = 1 << 5,
	PULSE_NCCL_PROF_KERNEL_CH = 1 << 6,
	PULSE_NCCL_PROF_NET_PLUGIN = 1 << 7,
	PULSE_NCCL_PROF_GROUP_API = 1 << 8,    /* v5+ */
	PULSE_NCCL_PROF_COLL_API = 1 << 9,     /* v5+ */
	PULSE_NCCL_PROF_P2P_API = 1 << 10,     /* v5+ */
	PULSE_NCCL_PROF_KERNEL_LAUNCH = 1 << 11, /* v5+ */
	PULSE_NCCL_PROF_CE_COLL = 1 << 12,     /* v6 */
	PULSE_NCCL_PROF_CE_SYNC = 1 << 13,     /* v6 */
	PULSE_NCCL_PROF_CE_BATCH = 1 << 14,    /* v6 */
};

/* NetPlugin events: descriptor id = plugin type in the high bits, the
 * version of the plugin's own descriptor in the low 16 bits. */
#define PULSE_NCCL_NET_VER_BITS 16
#define PULSE_NCCL_NET_VER_MASK 0xffffull
#define PULSE_NCCL_NET_TYPE_IB (1ull << PULSE_NCCL_NET_VER_BITS)
#define PULSE_NCCL_NET_TYPE_SOCK (2ull << PULSE_NCCL_NET_VER_BITS)
#define PULSE_NCCL_NET_IB_VER 1 /* the only IB descriptor version so far (2.26 - 2.30) */
#define PULSE_NCCL_NET_IB_QP 1  /* IB descriptor event type: a work request posted on a QP */

/* The IB net plugin's descriptor, version 1. */
struct pulse_nccl_net_ib_v1 {
	uint8_t type; /* PULSE_NCCL_NET_IB_QP */
	union {
		struct {
			int device;      /* NCCL's IB device index */
			uint64_t wr_id;
			int opcode;      /* enum ibv_wr_opcode (send side) */
			int qp_num;      /* the QP the request was posted on */
			size_t length;   /* bytes (send side; receives leave it as it was) */
		} qp;
	};
};

/* Collective and P2P descriptors: identical in v4 and v5 up to nChannels
 * (v5 appends a parentGroup pointer to each).
 *
 * `func` is NCCL's name of the operation: "AllReduce", "AllGather",
 * "ReduceScatter", "Broadcast", "Reduce", "AlltoAll" (2.28), "Gather" and
 * "Scatter" (2.28) for collectives; "Send", "Recv", and "PutSignal",
 * "Signal", "WaitSignal" (2.29, one-sided) for P2P. `datatype` is the
 * ncclDataType_t's name: "ncclInt8", "ncclUint8", "ncclInt32",
 * "ncclUint32", "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
 * "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2" (in
 * ncclDataType_t order). */
struct pulse_nccl_prof_coll {
	uint64_t seq_number;
	const char *func;
	const void *send_buff;
	void *recv_buff;
	size_t count;
	int root;
	const char *datatype;
	uint8_t n_channels;
	uint8_t n_warps;
	const char *algo;
	const char *proto;
	void *parent_group; /* v5 only */
};

struct pulse_nccl_prof_p2p {
	const char *func;
	void *buff;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t n_channels;
	void *parent_group; /* v5 only */
};

struct pulse_nccl_prof_proxy_op {
	pid_t pid;          /* the process whose task this is (PXN: another one) */
	uint8_t channel_id;
	int peer;
	int n_steps;
	int chunk_size;
	int is_send;
};

struct pulse_nccl_prof_proxy_step {
	int step;
};

struct pulse_nccl_prof_net {
	int64_t id;  /* PULSE_NCCL_NET_TYPE_* | version */
	void *data;  /* the net plugin's descriptor */
};

/* NCCL's descriptor unions are larger than what is read here (v6's CE
 * members); the plugin never writes a descriptor, and the stand-in NCCL
 * passes ours, whose union is padded past every member declared. */
typedef struct {
	uint8_t type; /* v4: 8-bit type */
	void *parent_obj;
	int rank;
	union {
		struct pulse_nccl_prof_coll coll;
		struct pulse_nccl_prof_p2p p2p;
		struct pulse_nccl_prof_proxy_op proxy_op;
		struct pulse_nccl_prof_proxy_step proxy_step;
		struct pulse_nccl_prof_net net;
		uint8_t other[96];
	};
} pulse_nccl_prof_descr_v4_t;

typedef struct {
	uint64_t type; /* v5: 64-bit type */
	void *parent_obj;
	int rank;
	union {
		struct pulse_nccl_prof_coll coll;
		struct pulse_nccl_prof_p2p p2p;
		struct pulse_nccl_prof_proxy_op proxy_op;
		struct pulse_nccl_prof_proxy_step proxy_step;
		struct pulse_nccl_prof_net net;
		uint8_t other[96];
	};
} pulse_nccl_prof_descr_v5_t;

typedef int pulse_nccl_prof_state_t;
typedef union {
	size_t trans_size;
	int appended_proxy_ops;
	void *data;
	uint64_t ptimer;
} pulse_nccl_prof_state_args_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, int *activation_mask, const char *comm_name,
			     uint64_t comm_hash, int n_nodes, int nranks, int rank,
			     pulse_nccl_logger_t logfn);
	ncclResult_t (*start_event)(void *context, void **handle, pulse_nccl_prof_descr_v4_t *d);
	ncclResult_t (*stop_event)(void *handle);
	ncclResult_t (*record_event_state)(void *handle, pulse_nccl_prof_state_t state,
					   pulse_nccl_prof_state_args_t *args);
	ncclResult_t (*finalize)(void *context);
} pulse_nccl_profiler_v4_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **context, uint64_t comm_id, int *activation_mask,
			     const char *comm_name, int n_nodes, int nranks, int rank,
			     pulse_nccl_logger_t logfn);
	ncclResult_t (*start_event)(void *context, void **handle, pulse_nccl_prof_descr_v5_t *d);
	ncclResult_t (*stop_event)(void *handle);
	ncclResult_t (*record_event_state)(void *handle, pulse_nccl_prof_state_t state,
					   pulse_nccl_prof_state_args_t *args);
	ncclResult_t (*finalize)(void *context);
} pulse_nccl_profiler_v5_t;

/* v6: the same functions; coll and p2p sit where v5 has them. */
typedef pulse_nccl_profiler_v5_t pulse_nccl_profiler_v6_t;
typedef pulse_nccl_prof_descr_v5_t pulse_nccl_prof_descr_v6_t;

_Static_assert(offsetof(struct pulse_nccl_prof_coll, n_channels) == 56, "coll layout");
_Static_assert(offsetof(struct pulse_nccl_prof_coll, algo) == 64, "coll layout");
_Static_assert(offsetof(pulse_nccl_prof_descr_v4_t, coll) == 24, "descr layout");
_Static_assert(offsetof(pulse_nccl_prof_descr_v5_t, coll) == 24, "descr layout");
_Static_assert(offsetof(pulse_nccl_prof_descr_v4_t, proxy_op) == 24, "descr layout");
_Static_assert(offsetof(struct pulse_nccl_prof_proxy_op, channel_id) == 4, "proxyOp layout");
_Static_assert(offsetof(struct pulse_nccl_prof_proxy_op, peer) == 8, "proxyOp layout");
_Static_assert(offsetof(struct pulse_nccl_prof_proxy_op, is_send) == 20, "proxyOp layout");
_Static_assert(offsetof(struct pulse_nccl_prof_net, data) == 8, "netPlugin layout");
_Static_assert(offsetof(struct pulse_nccl_net_ib_v1, qp.device) == 8, "IB descr layout");
_Static_assert(offsetof(struct pulse_nccl_net_ib_v1, qp.wr_id) == 16, "IB descr layout");
_Static_assert(offsetof(struct pulse_nccl_net_ib_v1, qp.opcode) == 24, "IB descr layout");
_Static_assert(offsetof(struct pulse_nccl_net_ib_v1, qp.qp_num) == 28, "IB descr layout");
_Static_assert(offsetof(struct pulse_nccl_net_ib_v1, qp.length) == 32, "IB descr layout");

#endif
