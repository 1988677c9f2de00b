/* The wire format between pulse-host-agent and pulse-analyzer (TCP).
 * Full description, with examples: analyzer/PROTOCOL.md.
 *
 * A connection is a stream of frames. Every frame is a 16-byte header and
 * a payload, all integers little-endian:
 *
 *   offset size field
 *   0      4    magic    0x57534c50 (the bytes "PLSW")
 *   4      1    version  protocol version of this frame (1)
 *   5      1    type     enum pulse_aw_type
 *   6      2    flags    0 (no flag is defined in version 1; others are an error)
 *   8      4    length   payload bytes, 0 .. PULSE_AW_MAX_PAYLOAD (the receiver's
 *                        own bound may be lower: HELLO_ACK says it)
 *   12     4    seq      the sender's frame counter on this connection, from 0
 *   16     ...  payload
 *
 * The header layout is the same in every protocol version. HELLO and
 * HELLO_ACK are always sent with version PULSE_AW_VERSION_MIN so that any
 * peer can read them. After that a frame carries the version that defined
 * its type (pulse_aw_type_since: OPS 2, all others 1), which may not exceed
 * the version the analyzer chose in HELLO_ACK: a version-1 analyzer never
 * sees a version-2 frame, and a version-2 analyzer reads version-1 agents. A frame whose magic is wrong or whose length exceeds
 * the bound desynchronizes the stream: the receiver says ERROR and closes.
 * A frame with an unknown type or flags, or a payload that does not decode,
 * is skipped (its length is known) and counted.
 *
 * Conversation (agent A, analyzer Z):
 *   A->Z HELLO        version range, job, host, agent version, A's realtime
 *   Z->A HELLO_ACK    chosen version, Z's realtime, Z's payload bound,
 *                     heartbeat period; or ERROR and close
 *   A->Z OP           one operator record, JSON (include/pulse/op_record.h)
 *   A->Z OPS          (version 2) operator records, binary, batched (below)
 *   A->Z CALLS        hook_op / hook_group JSON lines, '\n'-separated
 *   A->Z MAP          the host's hook_map JSON line (host-agent/qp_map.c)
 *   A->Z LINES        other agent JSON lines ("window", "event"), '\n'-separated
 *   Z->A JOIN         the joined remote ends of the host's QPs and the
 *                     communicators' membership, JSON (below)
 *   Z->A SERIES_REQ   (version 3) the retained per-QP epoch series of a time
 *                     range (around a diagnosis)
 *   A->Z SERIES       (version 3) the answer (include/pulse/qp_series_wire.h)
 *   A<>Z HEARTBEAT    sender's realtime and counters; Z answers each one
 *   A<>Z BYE          orderly close, with a reason
 *   A<>Z ERROR        code and text; the sender closes after it
 *
 * Hosted C11; the JOIN codec uses libcjson. Implementation: wire/frame.c. */
#ifndef PULSE_ANALYZER_WIRE_H
#define PULSE_ANALYZER_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/op_record.h"

#define PULSE_AW_MAGIC 0x57534c50u /* "PLSW" */
#define PULSE_AW_VERSION_MIN 1
#define PULSE_AW_VERSION_MAX 3
#define PULSE_AW_HDR_LEN 16
#define PULSE_AW_MAX_PAYLOAD (4u << 20)   /* hard bound of the format */
#define PULSE_AW_DEFAULT_PORT 7410

enum pulse_aw_type {
	PULSE_AW_HELLO = 1,
	PULSE_AW_HELLO_ACK = 2,
	PULSE_AW_OP = 3,
	PULSE_AW_CALLS = 4,
	PULSE_AW_MAP = 5,
	PULSE_AW_LINES = 6,
	PULSE_AW_JOIN = 7,
	PULSE_AW_HEARTBEAT = 8,
	PULSE_AW_BYE = 9,
	PULSE_AW_ERROR = 10,
	PULSE_AW_OPS = 11, /* version 2: binary operator records, batched */
	PULSE_AW_SERIES_REQ = 12, /* version 3: the analyzer asks for retained per-QP series */
	PULSE_AW_SERIES = 13,     /* version 3: the agent's answer (include/pulse/qp_series_wire.h) */
};
#define PULSE_AW_NTYPES 14 /* one past the largest type */

/* Who may send a type. */
#define PULSE_AW_FROM_AGENT 1u
#define PULSE_AW_FROM_ANALYZER 2u
unsigned pulse_aw_type_senders(uint8_t type); /* 0: unknown type */
const char *pulse_aw_type_name(uint8_t type); /* "HELLO", ..., "type?" */
/* The protocol version that defined a type (its frames carry it): 1, 2
 * for OPS, 3 for SERIES_REQ and SERIES; 0 for an unknown type. */
uint8_t pulse_aw_type_since(uint8_t type);

/* ERROR codes (and BYE reasons) */
enum pulse_aw_err {
	PULSE_AW_E_NONE = 0,      /* BYE: normal end */
	PULSE_AW_E_VERSION = 1,   /* no common protocol version */
	PULSE_AW_E_MALFORMED = 2, /* bad magic, bad header, undecodable payload */
	PULSE_AW_E_OVERSIZE = 3,  /* length above the receiver's bound */
	PULSE_AW_E_FLOOD = 4,     /* over the per-connection rate or queue bound */
	PULSE_AW_E_PROTOCOL = 5,  /* a frame out of order (data before HELLO, ...) */
	PULSE_AW_E_JOB = 6,       /* HELLO for another job */
	PULSE_AW_E_REPLACED = 7,  /* a newer connection for the same host */
	PULSE_AW_E_TIMEOUT = 8,   /* no HELLO, or silent past the idle bound */
	PULSE_AW_E_SHUTDOWN = 9,  /* the sender is stopping */
	PULSE_AW_E_FULL = 10,     /* the analyzer has no room for another agent */
};
const char *pulse_aw_err_name(uint32_t code);

/* ---- header ---- */
struct pulse_aw_hdr {
	uint32_t magic;
	uint8_t version, type;
	uint16_t flags;
	uint32_t length, seq;
};
void pulse_aw_hdr_put(uint8_t out[PULSE_AW_HDR_LEN], const struct pulse_aw_hdr *h);
void pulse_aw_hdr_get(const uint8_t in[PULSE_AW_HDR_LEN], struct pulse_aw_hdr *h);

/* Encodes one frame into out (cap bytes). Returns its size, or 0 when it
 * does not fit or len exceeds PULSE_AW_MAX_PAYLOAD. */
size_t pulse_aw_frame(uint8_t *out, size_t cap, uint8_t version, uint8_t type, uint32_t seq,
		      const void *payload, size_t len);

/* ---- streaming decoder ----
 * Takes the byte stream in chunks of any size (a frame may span many reads)
 * and returns whole frames. Its buffer grows as frames need, up to
 * PULSE_AW_HDR_LEN + max_payload; it never reads past what it was given. */
struct pulse_aw_decoder {
	uint8_t *buf;
	size_t cap, len, off;     /* bytes buf[off..len) not yet returned */
	size_t skip;              /* a returned frame's bytes, dropped at the next call */
	uint32_t max_payload;
	int failed;               /* stream desynchronized: nothing more is decoded */
	uint64_t frames, bytes, bad_frames;
};
int pulse_aw_dec_init(struct pulse_aw_decoder *d, uint32_t max_payload);
void pulse_aw_dec_free(struct pulse_aw_decoder *d);
/* Room for the next read (at least 1 byte unless failed; may grow buf). */
uint8_t *pulse_aw_dec_space(struct pulse_aw_decoder *d, size_t *avail);
void pulse_aw_dec_commit(struct pulse_aw_decoder *d, size_t n);
/* Copies in up to n bytes; returns how many were taken (all, unless the
 * decoder failed or allocation failed). */
size_t pulse_aw_dec_feed(struct pulse_aw_decoder *d, const void *data, size_t n);
/* Bytes held that belong to a frame not complete yet. */
size_t pulse_aw_dec_pending(const struct pulse_aw_decoder *d);

struct pulse_aw_frame {
	struct pulse_aw_hdr h;
	const uint8_t *payload;   /* into the decoder's buffer, valid until the next call */
};
enum pulse_aw_dec_rc {
	PULSE_AW_DEC_FATAL = -2,  /* bad magic or oversized length: close the stream (err says) */
	PULSE_AW_DEC_BAD = -1,    /* a whole frame with unknown version/type/flags, skipped */
	PULSE_AW_DEC_MORE = 0,    /* need more bytes */
	PULSE_AW_DEC_FRAME = 1,   /* *f is a frame */
};
/* The next frame. On PULSE_AW_DEC_BAD, *f still holds the bad frame's
 * header (payload NULL). The version check accepts MIN..MAX. */
int pulse_aw_dec_next(struct pulse_aw_decoder *d, struct pulse_aw_frame *f, char *err,
		      size_t errlen);

/* ---- payloads ----
 * Each _decode returns 0, or -1 with a one-line reason in err; it reads
 * only the len bytes given. Strings are at most the sizes below, printable
 * ASCII; names (job, host) only [A-Za-z0-9._:@+-]. */
#define PULSE_AW_NAME_LEN 64    /* job, host: up to 63 bytes + NUL */
#define PULSE_AW_TEXT_LEN 256   /* agent version, error text: up to 255 + NUL */

/* HELLO: u16 version_min, u16 version_max, u32 flags (0), u64 realtime_ns,
 * u8 job_len, u8 host_len, u8 agent_len, u8 0, then the three strings. */
struct pulse_aw_hello {
	uint16_t version_min, version_max;
	uint64_t realtime_ns;
	char job[PULSE_AW_NAME_LEN];
	char host[PULSE_AW_NAME_LEN];
	char agent[PULSE_AW_TEXT_LEN];
};
size_t pulse_aw_hello_encode(uint8_t *out, size_t cap, const struct pulse_aw_hello *h);
int pulse_aw_hello_decode(const uint8_t *p, size_t len, struct pulse_aw_hello *h, char *err,
			  size_t errlen);

/* HELLO_ACK: u16 version, u16 0, u32 max_payload, u32 heartbeat_ms,
 * u32 0, u64 realtime_ns (24 bytes). */
struct pulse_aw_hello_ack {
	uint16_t version;
	uint32_t max_payload;
	uint32_t heartbeat_ms;
	uint64_t realtime_ns;
};
#define PULSE_AW_HELLO_ACK_LEN 24
size_t pulse_aw_hello_ack_encode(uint8_t *out, size_t cap, const struct pulse_aw_hello_ack *a);
int pulse_aw_hello_ack_decode(const uint8_t *p, size_t len, struct pulse_aw_hello_ack *a,
			      char *err, size_t errlen);

/* HEARTBEAT: u64 realtime_ns, u64 frames_sent, u64 frames_dropped (the
 * sender's own drops, e.g. a full queue) (24 bytes). */
struct pulse_aw_heartbeat {
	uint64_t realtime_ns, frames_sent, frames_dropped;
};
#define PULSE_AW_HEARTBEAT_LEN 24
size_t pulse_aw_heartbeat_encode(uint8_t *out, size_t cap, const struct pulse_aw_heartbeat *b);
int pulse_aw_heartbeat_decode(const uint8_t *p, size_t len, struct pulse_aw_heartbeat *b,
			      char *err, size_t errlen);

/* BYE and ERROR: u32 code (enum pulse_aw_err), then text (0..255 bytes). */
struct pulse_aw_status {
	uint32_t code;
	char text[PULSE_AW_TEXT_LEN];
};
size_t pulse_aw_status_encode(uint8_t *out, size_t cap, const struct pulse_aw_status *s);
int pulse_aw_status_decode(const uint8_t *p, size_t len, struct pulse_aw_status *s, char *err,
			   size_t errlen);

/* OP, CALLS, MAP, LINES: JSON text. Checks the payload is one (OP, MAP) or
 * more (CALLS, LINES) non-empty lines separated by single '\n' (a trailing
 * '\n' allowed), each starting with '{', with no NUL or other control
 * bytes but tab. Returns the number of lines, or -1 with err. */
int pulse_aw_lines_check(uint8_t type, const uint8_t *p, size_t len, char *err, size_t errlen);
/* Iterates the lines of a checked payload: *pos starts at 0; returns 1 with
 * the line in (*line, *linelen), 0 at the end. */
int pulse_aw_lines_next(const uint8_t *p, size_t len, size_t *pos, const char **line,
			size_t *linelen);
/* The value of the top-level "type" key in a JSON line, without parsing it
 * all: copies it into out (NUL-terminated) and returns 0, or -1 if there is
 * none in the first bytes. Used to route agent lines into frame types. */
int pulse_aw_line_type(const char *line, size_t len, char *out, size_t outlen);

/* OPS (version 2): binary operator records (pulse_op_record_to_bin,
 * include/pulse/op_record.h), each as u16 length (1..PULSE_OP_BIN_MAX)
 * then the record, back to back, as many as the payload bound allows.
 * Appends one record to a payload being built (buf holds len bytes, cap
 * in all): returns the new length, or 0 when it does not fit. */
size_t pulse_aw_ops_put(uint8_t *buf, size_t len, size_t cap, const struct pulse_op_record *r);
/* Iterates an OPS payload: *pos starts at 0; returns 1 with the next
 * record's bytes in (*rec, *reclen), 0 at the end, -1 when the framing is
 * broken (a zero or oversized length, or one past the payload: the rest
 * of the payload is unusable, err says why). A record that does not decode
 * is the caller's to count; the ones after it are still read. */
int pulse_aw_ops_next(const uint8_t *p, size_t len, size_t *pos, const uint8_t **rec,
		      size_t *reclen, char *err, size_t errlen);

/* JOIN: one JSON object:
 *   {"type":"join","v":1,"host":"host3","t_ns":"T","version":N,
 *    "qps":[{"dev":"mlx5_0","qpn":123,"pid":77,"comm_id":"0x...","rank":2,
 *            "remote_host":"host4","remote_gpu":1,"remote_rank":3,
 *            "remote_qpn":456}],
 *    "members":[{"comm_id":"0x...","rank":3,"nranks":8,"host":"host4",
 *                "gpu":1,"pid":99}]}
 * qps: this host's QPs whose remote end the join found; members: every
 * known rank of every communicator this host takes part in (its own ranks
 * too; the receiver marks as local those whose host is its own).
 * version: the analyzer's join generation (grows when anything changes). */
struct pulse_aw_join_qp {
	char dev[24];
	uint32_t qpn, pid;
	uint64_t comm_id;
	int32_t rank;
	char remote_host[PULSE_OP_HOST_LEN];
	int32_t remote_gpu, remote_rank;
	uint32_t remote_qpn;
};
struct pulse_aw_join_member {
	uint64_t comm_id;
	int32_t rank, nranks;
	char host[PULSE_OP_HOST_LEN];
	int32_t gpu;
	uint32_t pid;
};
struct pulse_aw_join {
	char host[PULSE_OP_HOST_LEN];  /* the receiving host */
	uint64_t t_ns, version;
	uint32_t nqps, nmembers;
	struct pulse_aw_join_qp *qps;          /* malloc'd by _decode */
	struct pulse_aw_join_member *members;  /* malloc'd by _decode */
};
#define PULSE_AW_JOIN_MAX_QPS 65536u
/* Polls an agent holds the traffic of a QP whose remote end no JOIN has
 * named yet, from the QP's creation, and 5 s of wall time at least
 * (host-agent/join_wait.c); the analyzer counts a hang of such a QP's calls
 * from the JOIN for as long, and from the end of the wait when the agent
 * says it waited (its "join_wait" lines; analyzer/trigger.c). The MAP goes out at the end of the poll that saw
 * the QP, the analyzer joins once the maps have been quiet for its
 * join_delay_ms, and the agent takes the JOIN in at its next poll: three
 * polls or more when the hosts' maps come in one by one (3 was too few:
 * the live join test at 4x lost a job's first operators to it in 2 runs
 * of 14, a complete JOIN a poll after a partial one). */
#define PULSE_AW_JOIN_WAIT_POLLS 5u
#define PULSE_AW_JOIN_MAX_MEMBERS 65536u
/* A JSON line (no newline), malloc'd; NULL on allocation failure. */
char *pulse_aw_join_to_json(const struct pulse_aw_join *j);
int pulse_aw_join_from_json(const char *text, size_t len, struct pulse_aw_join *j, char *err,
			    size_t errlen);
void pulse_aw_join_free(struct pulse_aw_join *j);

#endif
