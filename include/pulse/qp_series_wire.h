/* The retained µs per-QP series, fetched by the analyzer from a host agent
 * (protocol version 3 of include/pulse/analyzer_wire.h): SERIES_REQ
 * (analyzer -> agent) asks for a time range, SERIES (agent -> analyzer)
 * answers with every retained epoch of every QP in it. The same payloads
 * are the file `pulse-host-agent --replay DIR --series-query` writes, so a
 * replayed run and a live one go through one codec and one answer
 * (host-agent/series_query.c). Reference: analyzer/PROTOCOL.md, "SERIES".
 *
 * SERIES_REQ (32 bytes): u32 id, u32 flags (0), u64 from_ns, u64 to_ns
 * (host CLOCK_REALTIME, from < to), u32 max_bytes (the largest answer the
 * analyzer takes: 0 means its payload bound), u32 0.
 *
 * SERIES: u32 id (the request's), u8 status, u8 host length L (1..63),
 * u16 0, u64 from_ns, u64 to_ns (echoed), u64 oldest_ns (host start of the
 * oldest window still retained: data before it was evicted; 0 nothing
 * retained), u64 evicted (windows the agent's ring evicted so far: age or
 * memory cap), u32 nseg, u32 segs_left_out (segments that did not fit
 * max_bytes), then the host name, then nseg segments. A segment is one QP
 * in one retained window: u8 device length D (1..23) and D bytes, u32 qpn,
 * u8 remote host length R (0: unknown, else 1..63) and R bytes, varint
 * zigzag remote GPU (-1 unknown), u64 t0_ns (host time of the window's
 * epoch 0), u32 epoch_ns (1..2^20), u8 gap flags of the window, varint n
 * (1..2^20), then n pairs of varints: the epoch index as a delta from the
 * previous one (the first from 0; indices strictly increase, so every
 * delta after the first is at least 1) and the bytes of that epoch
 * (at most 2^40). Only epochs that start in [from_ns, to_ns) are sent. */
#ifndef PULSE_QP_SERIES_WIRE_H
#define PULSE_QP_SERIES_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/op_record.h"

#define PULSE_QPS_REQ_LEN 32
#define PULSE_QPS_HDR_LEN 48           /* fixed part of SERIES before the host name */
#define PULSE_QPS_MAX_EPOCHS (1u << 20)
#define PULSE_QPS_MAX_SEGS (1u << 20)
#define PULSE_QPS_DEV_LEN 24

enum pulse_qps_status {
	PULSE_QPS_OK = 0,
	PULSE_QPS_TRUNCATED = 1, /* segs_left_out > 0: max_bytes reached */
	PULSE_QPS_NONE = 2,      /* nothing retained in the range */
	PULSE_QPS_OFF = 3,       /* the agent keeps no series (no retention) */
};
const char *pulse_qps_status_name(uint8_t st);

struct pulse_qps_req {
	uint32_t id;
	uint64_t from_ns, to_ns;
	uint32_t max_bytes;
};
size_t pulse_qps_req_encode(uint8_t *out, size_t cap, const struct pulse_qps_req *r);
int pulse_qps_req_decode(const uint8_t *p, size_t len, struct pulse_qps_req *r, char *err,
			 size_t errlen);

struct pulse_qps_seg {
	char dev[PULSE_QPS_DEV_LEN];
	uint32_t qpn;
	char remote_host[PULSE_OP_HOST_LEN]; /* "" unknown */
	int32_t remote_gpu;
	uint64_t t0_ns;
	uint32_t epoch_ns;
	uint8_t gap;
	uint32_t n;
	uint32_t *epoch;   /* n, strictly increasing */
	uint64_t *bytes;   /* n */
};

struct pulse_qps_resp {
	uint32_t id;
	uint8_t status;
	char host[PULSE_OP_HOST_LEN];
	uint64_t from_ns, to_ns, oldest_ns, evicted;
	uint32_t nseg, segs_left_out;
	struct pulse_qps_seg *segs; /* malloc'd by _decode (pulse_qps_resp_free) */
};

/* An answer being built (the agent): the fixed part first, then segments
 * appended until max_bytes; a segment that does not fit is counted in
 * segs_left_out and the status becomes TRUNCATED. */
struct pulse_qps_builder {
	uint8_t *buf;
	size_t len, cap, max;
	uint32_t nseg, left_out;
};
int pulse_qps_build_begin(struct pulse_qps_builder *b, const struct pulse_qps_resp *hdr,
			  size_t max_bytes);
/* Adds one segment (the epochs given: the caller filters the range).
 * Returns 0 added, 1 left out (did not fit), -1 invalid segment or no
 * memory. */
int pulse_qps_build_seg(struct pulse_qps_builder *b, const struct pulse_qps_seg *s);
/* Finishes the header (counts, status); returns the payload length. The
 * payload stays in b->buf (the caller frees it). */
size_t pulse_qps_build_end(struct pulse_qps_builder *b);

/* Decodes a whole SERIES payload. 0, or -1 with a one-line reason. */
int pulse_qps_resp_decode(const uint8_t *p, size_t len, struct pulse_qps_resp *r, char *err,
			  size_t errlen);
void pulse_qps_resp_free(struct pulse_qps_resp *r);

#endif
