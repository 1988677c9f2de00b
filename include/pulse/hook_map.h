/* A host's interception mapping (host-agent/qp_map.c): which QPs and
 * communicators its training processes have. The host agent writes it on
 * its output (--out) and in the analyzer wire protocol's MAP message when
 * it changed; the analyzer reads it for the cross-host QP join
 * (analyzer/server_join.c) and for ranks and GPUs (analyzer/state.c).
 * Written and read by wire/hook_map.c only, so the two sides cannot drift.
 *
 * Wire form, one JSON object on one line:
 *   {"type":"hook_map","t_ns":T,"version":V,
 *    "comms":[{"pid","comm_id","parent_id","rank","nranks","how","source",
 *              "destroyed","nccl_hash","nnodes","t_ns","gpu":{...}}],
 *    "qps":[{"dev","port","qpn","state" ("created"|"rtr"|"destroyed"|"net"),
 *            "pid","tid","comm_id","rank","remote_qpn","remote_gid",
 *            "gpu":{...},"comm_from" ("init"|"net"|null)}]}
 *   gpu: {"cuda_dev":N,"pci_bus_id":"...","visible":"...","source":"..."}
 * Ids are "0x%016x" strings (include/pulse/hex_id.h); unknown ones null.
 * remote_gid is 8 groups of 4 hex digits, or null.
 *
 * What the decoder requires (everything the agent writes is accepted):
 *   comms[]: pid, comm_id (an id), rank and nranks (numbers, -1 unknown);
 *   qps[]:   dev, qpn, pid;
 * every other key may be absent (unknown); when present it must have its
 * type and range. "gpu" is the object above or, as older writers had it, a
 * bare CUDA ordinal; a cuda_dev out of range reads as -1 (unknown). */
#ifndef PULSE_HOOK_MAP_H
#define PULSE_HOOK_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/hook_record.h"

#define PULSE_HOOK_MAP_DEV_LEN 21 /* ibv device name and NUL */
#define PULSE_HOOK_MAP_MAX 1048576 /* entries of each array the decoder takes */

enum pulse_hook_map_qp_state {
	PULSE_HOOK_MAP_QP_CREATED = 1,
	PULSE_HOOK_MAP_QP_RTR = 2,
	PULSE_HOOK_MAP_QP_DESTROYED = 3,
	PULSE_HOOK_MAP_QP_NET = 4, /* known only from a profiler net record */
};

/* how a QP was tied to its communicator */
enum pulse_hook_map_comm_from {
	PULSE_HOOK_MAP_UNTIED = 0,
	PULSE_HOOK_MAP_FROM_INIT = 1, /* created during the communicator's init call */
	PULSE_HOOK_MAP_FROM_NET = 2,  /* a profiler net record named it */
};

struct pulse_hook_map_comm {
	uint32_t pid;
	uint64_t comm_id;
	uint64_t parent_id;      /* 0 unknown (null) */
	int32_t rank, nranks;    /* -1 unknown */
	uint8_t how;             /* enum pulse_hook_comm_how */
	uint8_t source;          /* PULSE_HOOK_SRC_HOOK or _PROFILER; 0 unknown */
	uint8_t destroyed;
	uint64_t nccl_hash;      /* 0 unknown (null) */
	uint32_t nnodes;
	uint64_t t_ns;           /* the init call (host clock) */
	struct pulse_hook_gpu gpu;
};

struct pulse_hook_map_qp {
	char dev[PULSE_HOOK_MAP_DEV_LEN];
	uint32_t port;
	uint32_t qpn;
	uint8_t state;           /* enum pulse_hook_map_qp_state */
	uint32_t pid, tid;
	uint8_t has_comm;        /* comm_id is known */
	uint8_t comm_from;       /* enum pulse_hook_map_comm_from */
	uint64_t comm_id;
	int32_t rank;            /* -1 unknown */
	uint8_t remote_qpn_known;
	uint32_t remote_qpn;
	uint8_t gid_valid;
	uint8_t remote_gid[16];
	struct pulse_hook_gpu gpu;
};

struct pulse_hook_map {
	uint64_t t_ns;           /* when it was written (host clock) */
	uint64_t version;        /* counts the mapping lines of this agent */
	uint32_t ncomms, nqps;
	struct pulse_hook_map_comm *comms;
	struct pulse_hook_map_qp *qps;
};

/* Writes m as one line, newline included. Returns 0, or -1 on a write error. */
int pulse_hook_map_write(FILE *f, const struct pulse_hook_map *m);
/* The same line (without the newline) in a malloc'd string, or NULL. */
char *pulse_hook_map_to_json(const struct pulse_hook_map *m);

/* Decodes one "hook_map" object (text, not necessarily NUL-terminated
 * within len) into m, whose arrays are malloc'd (pulse_hook_map_free).
 * Returns 0, or -1 with a one-line reason in err (m then holds nothing);
 * never reads past len. */
int pulse_hook_map_from_json(const char *text, size_t len, struct pulse_hook_map *m, char *err,
			     size_t errlen);
void pulse_hook_map_free(struct pulse_hook_map *m);

const char *pulse_hook_map_how_name(uint8_t how); /* "unknown","init_rank",...,"profiler" */
const char *pulse_hook_map_state_name(uint8_t state);

#endif
