/* What Pulse puts on the NATS JetStream bus (issue 15): names, message ids
 * and the payload of a record message. One codec (wire/bus_msg.c) for the
 * publishing agent and the consuming analyzer. The bus itself (publisher,
 * consumer, leases) is not built yet; this is its format.
 *
 * Names. A job or host name ([A-Za-z0-9._:@+-], analyzer_wire.h) becomes
 * one subject token and part of a stream name, where '.', ':', '@' and '+'
 * may not appear: pulse_bus_token writes them as "_xx" (hex) and '_' as
 * "__", so distinct names stay distinct:
 *   stream   PULSE_<job token>            one per job
 *   subjects pulse.<job>.ops.<host>       a host's records, one message per
 *                                         poll part
 *            pulse.<job>.state.<host>     its latest MAP (a stream keeping one
 *                                         message per subject)
 *            pulse.<job>.diag             diagnoses, the diagnosis key as id
 * Message id of a record message: "<host>/<poll seq>/<part>", so that a
 * resend after a reconnect is dropped by JetStream's duplicate window.
 *
 * Record message payload, little-endian:
 *   0  4  magic "PBUS"
 *   4  1  version (1)
 *   5  1  kind: 1 operator records, 2 the host's other JSON lines
 *   6  2  flags: bit 0 the body is one zstd frame; others must be 0
 *   8  4  raw length: the body's length uncompressed (<= PULSE_BUS_MAX_RAW)
 *   12 4  records in the body
 *   16 8  poll sequence of the host
 *   24 2  part, 26 2 parts (part < parts): a poll's records in several messages
 *   28 .. body, compressed or not: kind 1 an OPS payload (analyzer_wire.h:
 *         u16 length + binary record, back to back); kind 2 the agent's
 *         JSON lines other than "op" (hook_op, window, hook_map, link, ...:
 *         what the analyzer reads besides the records), each ending in '\n',
 *         "records" of them, in the order the agent wrote them.
 * A poll publishes its lines (id "<host>/<poll seq>/l<part>") before its
 * records: the agent writes the poll's operator records last, so the stream
 * keeps the order of the agent's --out file. */
#ifndef PULSE_BUS_MSG_H
#define PULSE_BUS_MSG_H

#include <stddef.h>
#include <stdint.h>

#define PULSE_BUS_MAGIC 0x53554250u /* "PBUS" */
#define PULSE_BUS_VERSION 1
#define PULSE_BUS_HDR_LEN 28
#define PULSE_BUS_KIND_OPS 1
#define PULSE_BUS_KIND_LINES 2
#define PULSE_BUS_F_ZSTD 1u
#define PULSE_BUS_MAX_RAW (1u << 20) /* a part's records, uncompressed */
#define PULSE_BUS_TOKEN_LEN 192      /* a 63-byte name escaped, and NUL */

/* name as a subject token / stream name part; 0, or -1 when out is too small */
int pulse_bus_token(const char *name, char *out, size_t cap);
/* "<host>/<seq>/<part>" into out; 0, or -1 when it does not fit */
int pulse_bus_msg_id(const char *host, uint64_t seq, uint16_t part, char *out, size_t cap);
/* the same for a lines message: "<host>/<seq>/l<part>" */
int pulse_bus_lines_id(const char *host, uint64_t seq, uint16_t part, char *out, size_t cap);

struct pulse_bus_ops {
	uint8_t kind;        /* PULSE_BUS_KIND_OPS (0 taken as it) or _LINES */
	uint64_t seq;
	uint16_t part, parts;
	uint32_t records;
	const uint8_t *body; /* the OPS payload or the lines, uncompressed */
	size_t len;
};
/* One message: header and body, zstd-compressed at level (0: stored) when
 * that is smaller. Returns a malloc'd payload (*outlen set), or NULL with
 * err (body over PULSE_BUS_MAX_RAW, part >= parts, out of memory). */
uint8_t *pulse_bus_ops_encode(const struct pulse_bus_ops *m, int level, size_t *outlen, char *err,
			      size_t errlen);
/* Decodes a message: *m's body points into *scratch (malloc'd, grown as
 * needed, the caller frees it), checked to hold m->records whole records
 * of the OPS framing (kind 1) or m->records whole non-empty lines (kind 2;
 * m->kind says which). Returns 0, or -1 with err: bad magic, version, kind
 * or flags, a raw length over the bound or not the one decompressed, a
 * broken zstd frame, a record count that does not match. Never reads past
 * len, never decompresses past PULSE_BUS_MAX_RAW. */
int pulse_bus_ops_decode(const uint8_t *p, size_t len, struct pulse_bus_ops *m, uint8_t **scratch,
			 size_t *scratch_cap, char *err, size_t errlen);

#endif
