/* One measured communication operator of one rank: what the host agent's
 * flow-operator association (host-agent/assoc*.c) produces from the NIC's
 * per-QP µs rate curves and the intercepted calls, and what the analyzer
 * localizes from. One record type for collectives, single P2P operators and
 * groups of P2P operators (custom collectives such as all-to-all).
 *
 * Wire form: one JSON object per line on the agent's output (--out) and in
 * the analyzer wire protocol's OP message, written and read by
 * wire/op_record.c only (pulse_op_record_to_json / _from_json):
 *
 *   {"type":"op","v":1,"host":"host3","gpu":2,"pid":1234,
 *    "comm_id":"0x...","rank":5,"nranks":8,"seq":17,"group_id":0,
 *    "op":"allreduce","count":N,"datatype":7,"root_peer":-1,
 *    "algo":"ring","algo_source":"inferred","parallelism":"dp",
 *    "status":"complete","epoch_ns":32000,
 *    "call_ns":"T","start_ns":"T","end_ns":"T","duration_ns":D,
 *    "expected_bytes":B,"actual_bytes":B,"active_ns":D,
 *    "rank_active_ns":D,"rank_rate_gbps":R,
 *    "peers":[{"rank":6,"host":"host3","gpu":3,"expected_bytes":B,
 *              "actual_bytes":B,"start_ns":"T","end_ns":"T","active_ns":D,
 *              "peak_epoch_bytes":B,"complete":true}]}
 *
 * peak_epoch_bytes came later: a reader takes a line without it (peak 0,
 * not measured).
 *
 * Binary form (wire/op_record_bin.c): what the analyzer wire protocol's
 * OPS frames (protocol version 2) and the bus carry; about 5x smaller and
 * an order of magnitude cheaper to decode than the JSON line. Layout,
 * after a version byte (PULSE_OP_BIN_VERSION): the fields in the order of
 * struct pulse_op_record, unsigned integers as LEB128 varints, signed ones
 * zigzag-encoded, comm_id as 8 little-endian bytes, rank_rate_gbps as an
 * IEEE double (8 bytes LE), start/end times as zigzag deltas from call_ns
 * (mod 2^64), the six enums one byte each, host names as a length byte and
 * the bytes or 0x80|i for the i-th host already written in the record, and
 * the peers after their count. Documented field by field in
 * analyzer/PROTOCOL.md. Both decoders check the same ranges, so a record is
 * accepted in both forms or in neither.
 *
 * Times are the agent host's CLOCK_REALTIME in ns (NIC times converted
 * through the POLL clock sync); 0 means unknown (e.g. no traffic yet).
 * Absolute times ("T") are decimal strings, since CLOCK_REALTIME ns exceed
 * a JSON number's exact range; durations and byte counts are numbers.
 * 64-bit ids are "0x%016x" strings. */
#ifndef PULSE_OP_RECORD_H
#define PULSE_OP_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define PULSE_OP_RECORD_VERSION 1
#define PULSE_OP_MAX_PEERS 64
#define PULSE_OP_HOST_LEN 64

/* op: enum pulse_hook_op_type (include/pulse/hook_record.h), plus: */
#define PULSE_OP_GROUP 16 /* a ncclGroupStart/End of P2P operators, measured as one unit */

enum pulse_op_algo {
	PULSE_ALGO_UNKNOWN = 0,
	PULSE_ALGO_RING = 1,
	PULSE_ALGO_TREE = 2,
	PULSE_ALGO_P2P = 3, /* send/recv and groups: peers come from the arguments */
};

enum pulse_op_algo_source {
	PULSE_ALGO_SRC_NONE = 0,     /* not known (no traffic to infer from yet) */
	PULSE_ALGO_SRC_INFERRED = 1, /* from the active-peer pattern (§5.1) */
	PULSE_ALGO_SRC_REUSED = 2,   /* inferred earlier for the same periodic operator */
	PULSE_ALGO_SRC_PROFILER = 3, /* the profiler plugin said so, inference agrees or had nothing */
	PULSE_ALGO_SRC_CONFLICT = 4, /* the profiler said so, and the inference disagreed (logged) */
	PULSE_ALGO_SRC_ARGS = 5,     /* P2P: from the call's arguments */
};

enum pulse_op_parallelism {
	PULSE_PAR_UNKNOWN = 0,
	PULSE_PAR_DP = 1,
	PULSE_PAR_TP = 2,
	PULSE_PAR_PP = 3,
	PULSE_PAR_EP = 4,
	PULSE_PAR_NONE = 5, /* small-volume operators (loss, metadata) */
};

enum pulse_op_status {
	PULSE_OP_COMPLETE = 1,    /* every peer reached its expected volume and went quiet */
	PULSE_OP_HUNG = 2,        /* called, not complete within the hang bound */
	PULSE_OP_NOT_STARTED = 3, /* called, no traffic at all within the hang bound */
	PULSE_OP_GAP = 4,         /* NIC data missing during the operator (poll gap): unknown */
	PULSE_OP_NO_TRAFFIC = 5,  /* completes without RDMA traffic (all peers on this host) */
};

struct pulse_op_peer {
	int32_t rank;             /* the peer's rank in the communicator, -1 unknown */
	int32_t gpu;              /* the peer's GPU on its host, -1 unknown */
	char host[PULSE_OP_HOST_LEN];
	uint64_t expected_bytes;  /* to this peer */
	uint64_t actual_bytes;    /* measured to this peer, over all channels' QPs */
	uint64_t start_ns, end_ns;
	uint64_t active_ns;       /* epochs with a non-zero rate x epoch length */
	uint64_t peak_epoch_bytes; /* most bytes to this peer in one epoch on one QP (0: not
	                            * measured): a capped NIC or path never reaches its
	                            * peers' peak, even where pacing evens out the averages */
	uint8_t complete;
};

struct pulse_op_record {
	char host[PULSE_OP_HOST_LEN];
	int32_t gpu;              /* local GPU (CUDA ordinal), -1 unknown */
	uint32_t pid;
	uint64_t comm_id;
	int32_t rank, nranks;
	uint64_t seq;             /* per communicator, from the hook (group: first member's) */
	uint64_t group_id;        /* 0 outside a group */
	uint8_t op;               /* enum pulse_hook_op_type or PULSE_OP_GROUP */
	uint8_t datatype;
	uint8_t algo;             /* enum pulse_op_algo */
	uint8_t algo_source;      /* enum pulse_op_algo_source */
	uint8_t parallelism;      /* enum pulse_op_parallelism (of the communicator) */
	uint8_t status;           /* enum pulse_op_status */
	int32_t root_peer;
	uint64_t count;
	uint32_t epoch_ns;
	uint64_t call_ns;         /* the intercepted call */
	uint64_t start_ns, end_ns, duration_ns; /* first and last byte on the wire */
	uint64_t expected_bytes, actual_bytes;
	uint64_t active_ns;       /* sum of epochs with non-zero rate (§6.2) */
	uint64_t rank_active_ns;  /* groups: union of the P2Ps' activity; else = active_ns */
	double rank_rate_gbps;    /* groups: actual_bytes*8 / rank_active_ns; else the same for the op */
	uint32_t npeers;
	struct pulse_op_peer peers[PULSE_OP_MAX_PEERS];
};

const char *pulse_op_type_name(uint8_t op);       /* "allreduce", ..., "group", "other" */
int pulse_op_type_parse(const char *s, uint8_t *op);
const char *pulse_op_algo_name(uint8_t algo);     /* "unknown","ring","tree","p2p" */
const char *pulse_op_algo_source_name(uint8_t s); /* "none","inferred","reused","profiler","conflict","args" */
const char *pulse_op_par_name(uint8_t p);         /* "unknown","dp","tp","pp","ep","none" */
const char *pulse_op_status_name(uint8_t s);      /* "complete","hung","not_started","gap","no_traffic" */

/* Encodes one record as one JSON line (no newline) into a malloc'd string. */
char *pulse_op_record_to_json(const struct pulse_op_record *r);
/* Decodes one JSON object (text, not necessarily NUL-terminated within len).
 * Returns 0, or -1 with a one-line reason in err; never reads past len. */
int pulse_op_record_from_json(const char *text, size_t len, struct pulse_op_record *r, char *err,
			      size_t errlen);

/* The binary form. PULSE_OP_BIN_MAX bounds any encoded record. */
#define PULSE_OP_BIN_VERSION 1
#define PULSE_OP_BIN_MAX 9216
/* Encodes r into out; returns its size, or 0 when cap is too small. */
size_t pulse_op_record_to_bin(const struct pulse_op_record *r, uint8_t *out, size_t cap);
/* Decodes exactly len bytes (one record). Returns 0, or -1 with a one-line
 * reason in err (err may be NULL). Only the peers in use are written. */
int pulse_op_record_from_bin(const uint8_t *p, size_t len, struct pulse_op_record *r, char *err,
			     size_t errlen);

#endif
