/* The NCCL profiler plugin ABI versions libpulse-nccl-profiler.so supports,
 * declared from NCCL's public plugin documentation (plugins/profiler in
 * NVIDIA/nccl): NCCL dlopens the library named by NCCL_PROFILER_PLUGIN and
 * looks up a struct named ncclProfiler_vN, newest first.
 *
 *   v4: NCCL 2.25 - 2.26   init(ctx, mask, commName, commHash, nNodes, nranks, rank, log)
 *   v5: NCCL 2.27 - 2.28   init(ctx, commId, mask, commName, nNodes, nranks, rank, log);
 *                          the descriptor's type widens to 64 bits, API events appear
 *   v6: the next release   v5's functions and descriptor members, plus copy-engine
 *                          event types that this plugin never enables
 * Only the descriptor members this plugin reads are relied on; their order
 * and types follow the documentation. Later versions are not declared.
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
};

/* Collective and P2P descriptors: identical in v4 and v5 up to nChannels
 * (v5 appends a parentGroup pointer to each). */
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

/* The union's largest member in either version is smaller than this; the
 * plugin never writes the descriptor and reads only coll/p2p. */
typedef struct {
	uint8_t type; /* v4: 8-bit type */
	void *parent_obj;
	int rank;
	union {
		struct pulse_nccl_prof_coll coll;
		struct pulse_nccl_prof_p2p p2p;
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

#endif
