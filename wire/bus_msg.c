/* The bus's names, message ids and record messages (include/pulse/bus_msg.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "json_dec.h"
#include "pulse/analyzer_wire.h"
#include "pulse/bus_msg.h"
#include "pulse/le.h"


int pulse_bus_token(const char *name, char *out, size_t cap)
{
	size_t o = 0;
	for (const char *s = name; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
		int n = plain ? 1 : c == '_' ? 2 : 3;
		if (o + (size_t)n >= cap)
			return -1;
		if (plain)
			out[o++] = (char)c;
		else if (c == '_')
			out[o++] = '_', out[o++] = '_';
		else
			o += (size_t)snprintf(out + o, cap - o, "_%02x", c);
	}
	if (!cap)
		return -1;
	out[o] = 0;
	return 0;
}

int pulse_bus_msg_id(const char *host, uint64_t seq, uint16_t part, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%" PRIu64 "/%u", host, seq, part);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int pulse_bus_lines_id(const char *host, uint64_t seq, uint16_t part, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%" PRIu64 "/l%u", host, seq, part);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

uint8_t *pulse_bus_ops_encode(const struct pulse_bus_ops *m, int level, size_t *outlen, char *err,
			      size_t errlen)
{
	if (m->len > PULSE_BUS_MAX_RAW || m->part >= m->parts) {
		wire_seterr(err, errlen, "bus message: %zu bytes of records (bound %u), part %u of %u", m->len,
		       PULSE_BUS_MAX_RAW, m->part, m->parts);
		return NULL;
	}
	size_t bound = ZSTD_compressBound(m->len);
	size_t cap = PULSE_BUS_HDR_LEN + (bound > m->len ? bound : m->len);
	uint8_t *out = malloc(cap);
	if (!out) {
		wire_seterr(err, errlen, "out of memory");
		return NULL;
	}
	uint16_t flags = 0;
	size_t body = m->len;
	if (level > 0 && m->len) {
		size_t z = ZSTD_compress(out + PULSE_BUS_HDR_LEN, cap - PULSE_BUS_HDR_LEN, m->body, m->len, level);
		if (!ZSTD_isError(z) && z < m->len) {
			flags = PULSE_BUS_F_ZSTD;
			body = z;
		}
	}
	if (!flags && m->len)
		memcpy(out + PULSE_BUS_HDR_LEN, m->body, m->len);
	pulse_put_u32(out, PULSE_BUS_MAGIC);
	out[4] = PULSE_BUS_VERSION;
	out[5] = m->kind ? m->kind : PULSE_BUS_KIND_OPS;
	pulse_put_u16(out + 6, flags);
	pulse_put_u32(out + 8, (uint32_t)m->len);
	pulse_put_u32(out + 12, m->records);
	pulse_put_u64(out + 16, m->seq);
	pulse_put_u16(out + 24, m->part);
	pulse_put_u16(out + 26, m->parts);
	*outlen = PULSE_BUS_HDR_LEN + body;
	return out;
}

int pulse_bus_ops_decode(const uint8_t *p, size_t len, struct pulse_bus_ops *m, uint8_t **scratch,
			 size_t *scratch_cap, char *err, size_t errlen)
{
	memset(m, 0, sizeof *m);
	if (len < PULSE_BUS_HDR_LEN || pulse_get_u32(p) != PULSE_BUS_MAGIC) {
		wire_seterr(err, errlen, "bus message: not a Pulse record message (%zu bytes)", len);
		return -1;
	}
	uint16_t flags = pulse_get_u16(p + 6);
	if (p[4] != PULSE_BUS_VERSION || (p[5] != PULSE_BUS_KIND_OPS && p[5] != PULSE_BUS_KIND_LINES) ||
	    (flags & ~PULSE_BUS_F_ZSTD)) {
		wire_seterr(err, errlen, "bus message: version %u, kind %u, flags 0x%04x not known", p[4], p[5],
		       flags);
		return -1;
	}
	uint32_t raw = pulse_get_u32(p + 8);
	m->kind = p[5];
	m->records = pulse_get_u32(p + 12);
	m->seq = pulse_get_u64(p + 16);
	m->part = pulse_get_u16(p + 24);
	m->parts = pulse_get_u16(p + 26);
	if (raw > PULSE_BUS_MAX_RAW || m->part >= m->parts) {
		wire_seterr(err, errlen, "bus message: raw length %" PRIu32 " (bound %u), part %u of %u", raw,
		       PULSE_BUS_MAX_RAW, m->part, m->parts);
		return -1;
	}
	const uint8_t *body = p + PULSE_BUS_HDR_LEN;
	size_t blen = len - PULSE_BUS_HDR_LEN;
	if (flags & PULSE_BUS_F_ZSTD) {
		if (*scratch_cap < raw || !*scratch) {
			size_t nc = raw ? raw : 1;
			uint8_t *ns = realloc(*scratch, nc);
			if (!ns) {
				wire_seterr(err, errlen, "out of memory");
				return -1;
			}
			*scratch = ns;
			*scratch_cap = nc;
		}
		size_t got = ZSTD_decompress(*scratch, raw, body, blen);
		if (ZSTD_isError(got) || got != raw) {
			wire_seterr(err, errlen, "bus message: zstd body %s", ZSTD_isError(got) ? ZSTD_getErrorName(got)
											    : "not of its raw length");
			return -1;
		}
		body = *scratch;
		blen = raw;
	} else if (blen != raw) {
		wire_seterr(err, errlen, "bus message: body of %zu bytes, header says %" PRIu32, blen, raw);
		return -1;
	}
	uint32_t n = 0;
	if (m->kind == PULSE_BUS_KIND_LINES) {
		/* whole, non-empty lines: the last byte ends one */
		if (blen && body[blen - 1] != '\n') {
			wire_seterr(err, errlen, "bus message: lines body without its final newline");
			return -1;
		}
		for (size_t i = 0; i < blen; i++)
			if (body[i] == '\n') {
				if (i == 0 || body[i - 1] == '\n') {
					wire_seterr(err, errlen, "bus message: an empty line");
					return -1;
				}
				n++;
			}
	} else {
		size_t pos = 0, rl;
		const uint8_t *rec;
		int rc;
		while ((rc = pulse_aw_ops_next(body, blen, &pos, &rec, &rl, err, errlen)) == 1)
			n++;
		if (rc < 0)
			return -1;
	}
	if (n != m->records) {
		wire_seterr(err, errlen, "bus message: %" PRIu32 " %s in the body, header says %" PRIu32, n,
			    m->kind == PULSE_BUS_KIND_LINES ? "lines" : "records", m->records);
		return -1;
	}
	m->body = body;
	m->len = blen;
	return 0;
}
