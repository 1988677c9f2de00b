/* The agent <-> analyzer wire format: frame header, streaming decoder and
 * payload codecs (include/pulse/analyzer_wire.h, analyzer/PROTOCOL.md).
 * Everything here reads only the bytes it is given. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "json_dec.h"
#include "pulse/analyzer_wire.h"
#include "pulse/hex_id.h"
#include "pulse/le.h"


static const char *const type_names[PULSE_AW_NTYPES] = {
	[PULSE_AW_HELLO] = "HELLO",     [PULSE_AW_HELLO_ACK] = "HELLO_ACK",
	[PULSE_AW_OP] = "OP",           [PULSE_AW_CALLS] = "CALLS",
	[PULSE_AW_MAP] = "MAP",         [PULSE_AW_LINES] = "LINES",
	[PULSE_AW_JOIN] = "JOIN",       [PULSE_AW_HEARTBEAT] = "HEARTBEAT",
	[PULSE_AW_BYE] = "BYE",         [PULSE_AW_ERROR] = "ERROR",
	[PULSE_AW_OPS] = "OPS",
	[PULSE_AW_SERIES_REQ] = "SERIES_REQ", [PULSE_AW_SERIES] = "SERIES",
};

uint8_t pulse_aw_type_since(uint8_t type)
{
	if (!pulse_aw_type_senders(type))
		return 0;
	if (type == PULSE_AW_SERIES_REQ || type == PULSE_AW_SERIES)
		return 3;
	return type == PULSE_AW_OPS ? 2 : 1;
}

const char *pulse_aw_type_name(uint8_t type)
{
	return type < PULSE_AW_NTYPES && type_names[type] ? type_names[type] : "type?";
}

unsigned pulse_aw_type_senders(uint8_t type)
{
	switch (type) {
	case PULSE_AW_HELLO:
	case PULSE_AW_OP:
	case PULSE_AW_CALLS:
	case PULSE_AW_MAP:
	case PULSE_AW_LINES:
	case PULSE_AW_OPS:
	case PULSE_AW_SERIES:
		return PULSE_AW_FROM_AGENT;
	case PULSE_AW_HELLO_ACK:
	case PULSE_AW_JOIN:
	case PULSE_AW_SERIES_REQ:
		return PULSE_AW_FROM_ANALYZER;
	case PULSE_AW_HEARTBEAT:
	case PULSE_AW_BYE:
	case PULSE_AW_ERROR:
		return PULSE_AW_FROM_AGENT | PULSE_AW_FROM_ANALYZER;
	default:
		return 0;
	}
}

const char *pulse_aw_err_name(uint32_t code)
{
	static const char *const n[] = {"none",    "version",  "malformed", "oversize",
					"flood",   "protocol", "job",       "replaced",
					"timeout", "shutdown", "full"};
	return code < sizeof n / sizeof n[0] ? n[code] : "unknown";
}

/* ---- header ---- */

void pulse_aw_hdr_put(uint8_t out[PULSE_AW_HDR_LEN], const struct pulse_aw_hdr *h)
{
	pulse_put_u32(out, h->magic);
	pulse_put_u8(out + 4, h->version);
	pulse_put_u8(out + 5, h->type);
	pulse_put_u16(out + 6, h->flags);
	pulse_put_u32(out + 8, h->length);
	pulse_put_u32(out + 12, h->seq);
}

void pulse_aw_hdr_get(const uint8_t in[PULSE_AW_HDR_LEN], struct pulse_aw_hdr *h)
{
	h->magic = pulse_get_u32(in);
	h->version = pulse_get_u8(in + 4);
	h->type = pulse_get_u8(in + 5);
	h->flags = pulse_get_u16(in + 6);
	h->length = pulse_get_u32(in + 8);
	h->seq = pulse_get_u32(in + 12);
}

size_t pulse_aw_frame(uint8_t *out, size_t cap, uint8_t version, uint8_t type, uint32_t seq,
		      const void *payload, size_t len)
{
	if (len > PULSE_AW_MAX_PAYLOAD || cap < PULSE_AW_HDR_LEN || cap - PULSE_AW_HDR_LEN < len)
		return 0;
	struct pulse_aw_hdr h = {.magic = PULSE_AW_MAGIC,
				 .version = version,
				 .type = type,
				 .flags = 0,
				 .length = (uint32_t)len,
				 .seq = seq};
	pulse_aw_hdr_put(out, &h);
	if (len)
		memcpy(out + PULSE_AW_HDR_LEN, payload, len);
	return PULSE_AW_HDR_LEN + len;
}

/* ---- streaming decoder ---- */

#define DEC_INIT_CAP (16u << 10)
#define DEC_SHRINK_CAP (256u << 10)

int pulse_aw_dec_init(struct pulse_aw_decoder *d, uint32_t max_payload)
{
	memset(d, 0, sizeof *d);
	if (max_payload == 0 || max_payload > PULSE_AW_MAX_PAYLOAD)
		max_payload = PULSE_AW_MAX_PAYLOAD;
	d->max_payload = max_payload;
	d->buf = malloc(DEC_INIT_CAP);
	if (!d->buf)
		return -1;
	d->cap = DEC_INIT_CAP;
	return 0;
}

void pulse_aw_dec_free(struct pulse_aw_decoder *d)
{
	free(d->buf);
	d->buf = NULL;
	d->cap = d->len = d->off = d->skip = 0;
}

static void dec_drop_returned(struct pulse_aw_decoder *d)
{
	d->off += d->skip;
	d->skip = 0;
	if (d->off == d->len) {
		d->off = d->len = 0;
		if (d->cap > DEC_SHRINK_CAP) { /* give back a big frame's buffer */
			uint8_t *nb = realloc(d->buf, DEC_INIT_CAP);
			if (nb) {
				d->buf = nb;
				d->cap = DEC_INIT_CAP;
			}
		}
	}
}

/* The total size of the frame starting at off, if its header is there and
 * sane: >0 size, 0 header incomplete, -1 bad magic, -2 over the bound. */
static long long dec_frame_size(const struct pulse_aw_decoder *d, struct pulse_aw_hdr *h)
{
	if (d->len - d->off < PULSE_AW_HDR_LEN)
		return 0;
	pulse_aw_hdr_get(d->buf + d->off, h);
	if (h->magic != PULSE_AW_MAGIC)
		return -1;
	if (h->length > d->max_payload)
		return -2;
	return (long long)PULSE_AW_HDR_LEN + h->length;
}

uint8_t *pulse_aw_dec_space(struct pulse_aw_decoder *d, size_t *avail)
{
	*avail = 0;
	if (d->failed || !d->buf)
		return NULL;
	dec_drop_returned(d);
	if (d->off) { /* what is left is the start of one frame: move it to the front */
		memmove(d->buf, d->buf + d->off, d->len - d->off);
		d->len -= d->off;
		d->off = 0;
	}
	if (d->len == d->cap) {
		struct pulse_aw_hdr h;
		long long need = dec_frame_size(d, &h);
		if (need < 0) {
			d->failed = 1; /* dec_next says why */
			return NULL;
		}
		size_t want = d->cap * 2;
		if (need > 0 && (size_t)need > want)
			want = (size_t)need;
		size_t most = PULSE_AW_HDR_LEN + (size_t)d->max_payload;
		if (want > most)
			want = most;
		if (want <= d->cap)
			return NULL; /* a whole frame is there: dec_next first */
		uint8_t *nb = realloc(d->buf, want);
		if (!nb)
			return NULL;
		d->buf = nb;
		d->cap = want;
	}
	*avail = d->cap - d->len;
	return d->buf + d->len;
}

void pulse_aw_dec_commit(struct pulse_aw_decoder *d, size_t n)
{
	if (n > d->cap - d->len)
		n = d->cap - d->len;
	d->len += n;
	d->bytes += n;
}

size_t pulse_aw_dec_feed(struct pulse_aw_decoder *d, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t taken = 0;
	while (taken < n) {
		size_t avail;
		uint8_t *dst = pulse_aw_dec_space(d, &avail);
		if (!dst || !avail)
			break;
		size_t k = n - taken < avail ? n - taken : avail;
		memcpy(dst, p + taken, k);
		pulse_aw_dec_commit(d, k);
		taken += k;
		if (taken < n) {
			/* full: the caller must take frames out first, unless the
			 * buffer can still grow for the frame at its front */
			struct pulse_aw_hdr h;
			long long need = dec_frame_size(d, &h);
			if (need != 0 && (need < 0 || (size_t)need <= d->len - d->off))
				break;
		}
	}
	return taken;
}

size_t pulse_aw_dec_pending(const struct pulse_aw_decoder *d)
{
	return d->len - d->off - d->skip;
}

int pulse_aw_dec_next(struct pulse_aw_decoder *d, struct pulse_aw_frame *f, char *err,
		      size_t errlen)
{
	memset(f, 0, sizeof *f);
	if (!d->buf) {
		wire_seterr(err, errlen, "decoder not initialized");
		return PULSE_AW_DEC_FATAL;
	}
	dec_drop_returned(d);
	long long size = dec_frame_size(d, &f->h);
	if (size == -1) {
		d->failed = 1;
		wire_seterr(err, errlen, "bad magic 0x%08" PRIx32 " (want 0x%08x): not a Pulse agent stream",
		       f->h.magic, PULSE_AW_MAGIC);
		return PULSE_AW_DEC_FATAL;
	}
	if (size == -2) {
		d->failed = 1;
		wire_seterr(err, errlen, "%s frame of %" PRIu32 " bytes over the bound of %" PRIu32,
		       pulse_aw_type_name(f->h.type), f->h.length, d->max_payload);
		return PULSE_AW_DEC_FATAL;
	}
	if (d->failed) {
		wire_seterr(err, errlen, "stream failed earlier");
		return PULSE_AW_DEC_FATAL;
	}
	if (size == 0 || d->len - d->off < (size_t)size)
		return PULSE_AW_DEC_MORE;
	d->skip = (size_t)size;
	d->frames++;
	if (f->h.version < PULSE_AW_VERSION_MIN || f->h.version > PULSE_AW_VERSION_MAX) {
		d->bad_frames++;
		wire_seterr(err, errlen, "%s frame of unknown protocol version %u (this side speaks %d..%d)",
		       pulse_aw_type_name(f->h.type), f->h.version, PULSE_AW_VERSION_MIN,
		       PULSE_AW_VERSION_MAX);
		return PULSE_AW_DEC_BAD;
	}
	if (!pulse_aw_type_senders(f->h.type)) {
		d->bad_frames++;
		wire_seterr(err, errlen, "unknown frame type %u (%" PRIu32 " bytes skipped)", f->h.type,
		       f->h.length);
		return PULSE_AW_DEC_BAD;
	}
	if (f->h.flags) {
		d->bad_frames++;
		wire_seterr(err, errlen, "%s frame with unknown flags 0x%04x", pulse_aw_type_name(f->h.type),
		       f->h.flags);
		return PULSE_AW_DEC_BAD;
	}
	f->payload = d->buf + d->off + PULSE_AW_HDR_LEN;
	return PULSE_AW_DEC_FRAME;
}

/* ---- payloads ---- */

static int name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '@' || c == '+' || c == '-';
}

/* Copies a length-counted string field into out (NUL-terminated); names
 * must be non-empty and use name characters, texts printable ASCII. */
static int get_str(const uint8_t *p, size_t n, char *out, size_t outlen, int is_name,
		   const char *what, char *err, size_t errlen)
{
	if (n >= outlen) {
		wire_seterr(err, errlen, "%s: %zu bytes, at most %zu", what, n, outlen - 1);
		return -1;
	}
	if (is_name && n == 0) {
		wire_seterr(err, errlen, "%s: empty", what);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		if (is_name ? !name_char(c) : (c < 0x20 || c > 0x7e)) {
			wire_seterr(err, errlen, "%s: byte 0x%02x at %zu not allowed", what, c, i);
			return -1;
		}
	}
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

static int check_str(const char *s, size_t max, int is_name)
{
	size_t n = strnlen(s, max + 1);
	if (n > max || (is_name && n == 0))
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_name ? !name_char(c) : (c < 0x20 || c > 0x7e))
			return -1;
	}
	return (int)n;
}

#define HELLO_FIXED 20

size_t pulse_aw_hello_encode(uint8_t *out, size_t cap, const struct pulse_aw_hello *h)
{
	int jl = check_str(h->job, PULSE_AW_NAME_LEN - 1, 1);
	int hl = check_str(h->host, PULSE_AW_NAME_LEN - 1, 1);
	int al = check_str(h->agent, PULSE_AW_TEXT_LEN - 1, 0);
	if (jl < 0 || hl < 0 || al < 0)
		return 0;
	size_t n = HELLO_FIXED + (size_t)jl + (size_t)hl + (size_t)al;
	if (cap < n)
		return 0;
	pulse_put_u16(out, h->version_min);
	pulse_put_u16(out + 2, h->version_max);
	pulse_put_u32(out + 4, 0);
	pulse_put_u64(out + 8, h->realtime_ns);
	out[16] = (uint8_t)jl;
	out[17] = (uint8_t)hl;
	out[18] = (uint8_t)al;
	out[19] = 0;
	memcpy(out + HELLO_FIXED, h->job, (size_t)jl);
	memcpy(out + HELLO_FIXED + jl, h->host, (size_t)hl);
	memcpy(out + HELLO_FIXED + jl + hl, h->agent, (size_t)al);
	return n;
}

int pulse_aw_hello_decode(const uint8_t *p, size_t len, struct pulse_aw_hello *h, char *err,
			  size_t errlen)
{
	memset(h, 0, sizeof *h);
	if (len < HELLO_FIXED) {
		wire_seterr(err, errlen, "HELLO: %zu bytes, at least %d", len, HELLO_FIXED);
		return -1;
	}
	h->version_min = pulse_get_u16(p);
	h->version_max = pulse_get_u16(p + 2);
	uint32_t flags = pulse_get_u32(p + 4);
	h->realtime_ns = pulse_get_u64(p + 8);
	size_t jl = p[16], hl = p[17], al = p[18];
	if (flags || p[19]) {
		wire_seterr(err, errlen, "HELLO: reserved fields not zero");
		return -1;
	}
	if (h->version_min == 0 || h->version_min > h->version_max) {
		wire_seterr(err, errlen, "HELLO: bad version range %u..%u", h->version_min, h->version_max);
		return -1;
	}
	if (HELLO_FIXED + jl + hl + al != len) {
		wire_seterr(err, errlen, "HELLO: string lengths %zu+%zu+%zu do not match the %zu-byte payload",
		       jl, hl, al, len);
		return -1;
	}
	const uint8_t *s = p + HELLO_FIXED;
	if (get_str(s, jl, h->job, sizeof h->job, 1, "HELLO job", err, errlen) ||
	    get_str(s + jl, hl, h->host, sizeof h->host, 1, "HELLO host", err, errlen) ||
	    get_str(s + jl + hl, al, h->agent, sizeof h->agent, 0, "HELLO agent version", err, errlen))
		return -1;
	return 0;
}

size_t pulse_aw_hello_ack_encode(uint8_t *out, size_t cap, const struct pulse_aw_hello_ack *a)
{
	if (cap < PULSE_AW_HELLO_ACK_LEN)
		return 0;
	pulse_put_u16(out, a->version);
	pulse_put_u16(out + 2, 0);
	pulse_put_u32(out + 4, a->max_payload);
	pulse_put_u32(out + 8, a->heartbeat_ms);
	pulse_put_u32(out + 12, 0);
	pulse_put_u64(out + 16, a->realtime_ns);
	return PULSE_AW_HELLO_ACK_LEN;
}

int pulse_aw_hello_ack_decode(const uint8_t *p, size_t len, struct pulse_aw_hello_ack *a,
			      char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	if (len != PULSE_AW_HELLO_ACK_LEN) {
		wire_seterr(err, errlen, "HELLO_ACK: %zu bytes, want %d", len, PULSE_AW_HELLO_ACK_LEN);
		return -1;
	}
	a->version = pulse_get_u16(p);
	a->max_payload = pulse_get_u32(p + 4);
	a->heartbeat_ms = pulse_get_u32(p + 8);
	a->realtime_ns = pulse_get_u64(p + 16);
	if (pulse_get_u16(p + 2) || pulse_get_u32(p + 12)) {
		wire_seterr(err, errlen, "HELLO_ACK: reserved fields not zero");
		return -1;
	}
	if (a->version == 0) {
		wire_seterr(err, errlen, "HELLO_ACK: version 0");
		return -1;
	}
	if (a->max_payload < 1024 || a->max_payload > PULSE_AW_MAX_PAYLOAD) {
		wire_seterr(err, errlen, "HELLO_ACK: payload bound %" PRIu32 " outside 1024..%u",
		       a->max_payload, PULSE_AW_MAX_PAYLOAD);
		return -1;
	}
	return 0;
}

size_t pulse_aw_heartbeat_encode(uint8_t *out, size_t cap, const struct pulse_aw_heartbeat *b)
{
	if (cap < PULSE_AW_HEARTBEAT_LEN)
		return 0;
	pulse_put_u64(out, b->realtime_ns);
	pulse_put_u64(out + 8, b->frames_sent);
	pulse_put_u64(out + 16, b->frames_dropped);
	return PULSE_AW_HEARTBEAT_LEN;
}

int pulse_aw_heartbeat_decode(const uint8_t *p, size_t len, struct pulse_aw_heartbeat *b,
			      char *err, size_t errlen)
{
	memset(b, 0, sizeof *b);
	if (len != PULSE_AW_HEARTBEAT_LEN) {
		wire_seterr(err, errlen, "HEARTBEAT: %zu bytes, want %d", len, PULSE_AW_HEARTBEAT_LEN);
		return -1;
	}
	b->realtime_ns = pulse_get_u64(p);
	b->frames_sent = pulse_get_u64(p + 8);
	b->frames_dropped = pulse_get_u64(p + 16);
	return 0;
}

size_t pulse_aw_status_encode(uint8_t *out, size_t cap, const struct pulse_aw_status *s)
{
	size_t n = strnlen(s->text, PULSE_AW_TEXT_LEN - 1);
	if (cap < 4 + n)
		return 0;
	pulse_put_u32(out, s->code);
	for (size_t i = 0; i < n; i++) { /* texts are printable: replace anything else */
		unsigned char c = (unsigned char)s->text[i];
		out[4 + i] = c < 0x20 || c > 0x7e ? '?' : c;
	}
	return 4 + n;
}

int pulse_aw_status_decode(const uint8_t *p, size_t len, struct pulse_aw_status *s, char *err,
			   size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (len < 4) {
		wire_seterr(err, errlen, "BYE/ERROR: %zu bytes, at least 4", len);
		return -1;
	}
	s->code = pulse_get_u32(p);
	return get_str(p + 4, len - 4, s->text, sizeof s->text, 0, "BYE/ERROR text", err, errlen);
}

int pulse_aw_lines_check(uint8_t type, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	if (len == 0) {
		wire_seterr(err, errlen, "%s: empty payload", pulse_aw_type_name(type));
		return -1;
	}
	int n = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '\n') {
			unsigned char c = p[i];
			if ((c < 0x20 && c != '\t') || c == 0x7f) {
				wire_seterr(err, errlen, "%s: control byte 0x%02x at %zu", pulse_aw_type_name(type),
				       c, i);
				return -1;
			}
			continue;
		}
		if (i == len && start == len && n > 0)
			break; /* trailing newline */
		if (i == start) {
			wire_seterr(err, errlen, "%s: empty line at %zu", pulse_aw_type_name(type), i);
			return -1;
		}
		if (p[start] != '{') {
			wire_seterr(err, errlen, "%s: line %d does not start with '{'", pulse_aw_type_name(type),
			       n + 1);
			return -1;
		}
		n++;
		if (n == 0x7fffffff)
			break;
		start = i + 1;
	}
	if ((type == PULSE_AW_OP || type == PULSE_AW_MAP) && n != 1) {
		wire_seterr(err, errlen, "%s: %d lines, want 1", pulse_aw_type_name(type), n);
		return -1;
	}
	return n;
}

int pulse_aw_lines_next(const uint8_t *p, size_t len, size_t *pos, const char **line,
			size_t *linelen)
{
	if (*pos >= len)
		return 0;
	const uint8_t *s = p + *pos;
	const uint8_t *nl = memchr(s, '\n', len - *pos);
	size_t n = nl ? (size_t)(nl - s) : len - *pos;
	*line = (const char *)s;
	*linelen = n;
	*pos += n + (nl ? 1 : 0);
	return n ? 1 : 0;
}

int pulse_aw_line_type(const char *line, size_t len, char *out, size_t outlen)
{
	static const char key[] = "\"type\"";
	const size_t kl = sizeof key - 1;
	size_t lim = len < 512 ? len : 512;
	if (!outlen)
		return -1;
	for (size_t i = 0; i + kl <= lim; i++) {
		if (memcmp(line + i, key, kl))
			continue;
		size_t j = i + kl;
		while (j < len && (line[j] == ' ' || line[j] == '\t'))
			j++;
		if (j >= len || line[j] != ':')
			continue;
		j++;
		while (j < len && (line[j] == ' ' || line[j] == '\t'))
			j++;
		if (j >= len || line[j] != '"')
			return -1;
		j++;
		size_t k = 0;
		while (j < len && line[j] != '"' && line[j] != '\\') {
			if (k + 1 >= outlen)
				return -1;
			out[k++] = line[j++];
		}
		if (j >= len || line[j] != '"')
			return -1;
		out[k] = 0;
		return 0;
	}
	return -1;
}

/* ---- JOIN ---- */

static void put_id(cJSON *o, const char *k, uint64_t v)
{
	char b[PULSE_HEX_ID_LEN];
	cJSON_AddStringToObject(o, k, pulse_hex_id_format(b, v));
}

char *pulse_aw_join_to_json(const struct pulse_aw_join *j)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	char b[24];
	cJSON_AddStringToObject(o, "type", "join");
	cJSON_AddNumberToObject(o, "v", 1);
	cJSON_AddStringToObject(o, "host", j->host);
	snprintf(b, sizeof b, "%" PRIu64, j->t_ns);
	cJSON_AddStringToObject(o, "t_ns", b);
	cJSON_AddNumberToObject(o, "version", (double)j->version);
	cJSON *qa = cJSON_AddArrayToObject(o, "qps");
	for (uint32_t i = 0; qa && i < j->nqps; i++) {
		const struct pulse_aw_join_qp *q = &j->qps[i];
		cJSON *e = cJSON_CreateObject();
		if (!e)
			break;
		cJSON_AddStringToObject(e, "dev", q->dev);
		cJSON_AddNumberToObject(e, "qpn", q->qpn);
		cJSON_AddNumberToObject(e, "pid", q->pid);
		put_id(e, "comm_id", q->comm_id);
		cJSON_AddNumberToObject(e, "rank", q->rank);
		cJSON_AddStringToObject(e, "remote_host", q->remote_host);
		cJSON_AddNumberToObject(e, "remote_gpu", q->remote_gpu);
		cJSON_AddNumberToObject(e, "remote_rank", q->remote_rank);
		cJSON_AddNumberToObject(e, "remote_qpn", q->remote_qpn);
		cJSON_AddItemToArray(qa, e);
	}
	cJSON *ma = cJSON_AddArrayToObject(o, "members");
	for (uint32_t i = 0; ma && i < j->nmembers; i++) {
		const struct pulse_aw_join_member *m = &j->members[i];
		cJSON *e = cJSON_CreateObject();
		if (!e)
			break;
		put_id(e, "comm_id", m->comm_id);
		cJSON_AddNumberToObject(e, "rank", m->rank);
		cJSON_AddNumberToObject(e, "nranks", m->nranks);
		cJSON_AddStringToObject(e, "host", m->host);
		cJSON_AddNumberToObject(e, "gpu", m->gpu);
		cJSON_AddNumberToObject(e, "pid", m->pid);
		cJSON_AddItemToArray(ma, e);
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

static int j_int(const cJSON *o, const char *k, int64_t lo, int64_t hi, int64_t *v, char *err,
		 size_t errlen)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(x) || x->valuedouble != x->valuedouble || x->valuedouble < (double)lo ||
	    x->valuedouble > (double)hi || x->valuedouble != (double)(int64_t)x->valuedouble) {
		wire_seterr(err, errlen, "JOIN: \"%s\" missing or not an integer in %" PRId64 "..%" PRId64, k,
		       lo, hi);
		return -1;
	}
	*v = (int64_t)x->valuedouble;
	return 0;
}

static int j_str(const cJSON *o, const char *k, char *out, size_t outlen, int is_name, char *err,
		 size_t errlen)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsString(x) || !x->valuestring) {
		wire_seterr(err, errlen, "JOIN: \"%s\" missing or not a string", k);
		return -1;
	}
	char what[48];
	snprintf(what, sizeof what, "JOIN \"%s\"", k);
	return get_str((const uint8_t *)x->valuestring, strlen(x->valuestring), out, outlen, is_name,
		       what, err, errlen);
}

static int j_u64s(const cJSON *o, const char *k, int hex, uint64_t *v, char *err, size_t errlen)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	const char *s = cJSON_IsString(x) ? x->valuestring : NULL;
	if (hex) {
		if (pulse_hex_id_parse(s, v)) {
			wire_seterr(err, errlen, "JOIN: \"%s\" missing or not a 0x-hex 64-bit id", k);
			return -1;
		}
		return 0;
	}
	if (!s || *s < '0' || *s > '9') {
		wire_seterr(err, errlen, "JOIN: \"%s\" missing or not a decimal string", k);
		return -1;
	}
	char *end;
	errno = 0;
	unsigned long long u = strtoull(s, &end, 10);
	if (errno || *end) {
		wire_seterr(err, errlen, "JOIN: \"%s\" is not a 64-bit number", k);
		return -1;
	}
	*v = u;
	return 0;
}

void pulse_aw_join_free(struct pulse_aw_join *j)
{
	free(j->qps);
	free(j->members);
	j->qps = NULL;
	j->members = NULL;
	j->nqps = j->nmembers = 0;
}

int pulse_aw_join_from_json(const char *text, size_t len, struct pulse_aw_join *j, char *err,
			    size_t errlen)
{
	memset(j, 0, sizeof *j);
	if (err && errlen)
		err[0] = 0;
	cJSON *o = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(o)) {
		wire_seterr(err, errlen, "JOIN: not a JSON object");
		cJSON_Delete(o);
		return -1;
	}
	int64_t v;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!cJSON_IsString(t) || strcmp(t->valuestring, "join")) {
		wire_seterr(err, errlen, "JOIN: \"type\" is not \"join\"");
		goto bad;
	}
	if (j_int(o, "v", 1, 1, &v, err, errlen) ||
	    j_str(o, "host", j->host, sizeof j->host, 1, err, errlen) ||
	    j_u64s(o, "t_ns", 0, &j->t_ns, err, errlen) ||
	    j_int(o, "version", 0, (int64_t)1 << 53, &v, err, errlen))
		goto bad;
	j->version = (uint64_t)v;
	const cJSON *qa = cJSON_GetObjectItemCaseSensitive(o, "qps");
	const cJSON *ma = cJSON_GetObjectItemCaseSensitive(o, "members");
	if (!cJSON_IsArray(qa) || !cJSON_IsArray(ma)) {
		wire_seterr(err, errlen, "JOIN: \"qps\" or \"members\" missing or not an array");
		goto bad;
	}
	int nq = cJSON_GetArraySize(qa), nm = cJSON_GetArraySize(ma);
	if (nq < 0 || (uint32_t)nq > PULSE_AW_JOIN_MAX_QPS || nm < 0 ||
	    (uint32_t)nm > PULSE_AW_JOIN_MAX_MEMBERS) {
		wire_seterr(err, errlen, "JOIN: %d qps / %d members over the bounds %u / %u", nq, nm,
		       PULSE_AW_JOIN_MAX_QPS, PULSE_AW_JOIN_MAX_MEMBERS);
		goto bad;
	}
	j->qps = calloc((size_t)nq + 1, sizeof *j->qps);
	j->members = calloc((size_t)nm + 1, sizeof *j->members);
	if (!j->qps || !j->members) {
		wire_seterr(err, errlen, "JOIN: out of memory");
		goto bad;
	}
	const cJSON *e;
	cJSON_ArrayForEach(e, qa)
	{
		struct pulse_aw_join_qp *q = &j->qps[j->nqps];
		if (!cJSON_IsObject(e) || j_str(e, "dev", q->dev, sizeof q->dev, 1, err, errlen) ||
		    j_int(e, "qpn", 0, 0xffffff, &v, err, errlen))
			goto bad;
		q->qpn = (uint32_t)v;
		if (j_int(e, "pid", 0, UINT32_MAX, &v, err, errlen))
			goto bad;
		q->pid = (uint32_t)v;
		if (j_u64s(e, "comm_id", 1, &q->comm_id, err, errlen) ||
		    j_int(e, "rank", -1, INT32_MAX, &v, err, errlen))
			goto bad;
		q->rank = (int32_t)v;
		if (j_str(e, "remote_host", q->remote_host, sizeof q->remote_host, 1, err, errlen) ||
		    j_int(e, "remote_gpu", -1, INT32_MAX, &v, err, errlen))
			goto bad;
		q->remote_gpu = (int32_t)v;
		if (j_int(e, "remote_rank", -1, INT32_MAX, &v, err, errlen))
			goto bad;
		q->remote_rank = (int32_t)v;
		if (j_int(e, "remote_qpn", 0, 0xffffff, &v, err, errlen))
			goto bad;
		q->remote_qpn = (uint32_t)v;
		j->nqps++;
	}
	cJSON_ArrayForEach(e, ma)
	{
		struct pulse_aw_join_member *m = &j->members[j->nmembers];
		if (!cJSON_IsObject(e) || j_u64s(e, "comm_id", 1, &m->comm_id, err, errlen) ||
		    j_int(e, "rank", 0, INT32_MAX, &v, err, errlen))
			goto bad;
		m->rank = (int32_t)v;
		if (j_int(e, "nranks", 1, INT32_MAX, &v, err, errlen))
			goto bad;
		m->nranks = (int32_t)v;
		if (m->rank >= m->nranks) {
			wire_seterr(err, errlen, "JOIN: member rank %d not below nranks %d", m->rank, m->nranks);
			goto bad;
		}
		if (j_str(e, "host", m->host, sizeof m->host, 1, err, errlen) ||
		    j_int(e, "gpu", -1, INT32_MAX, &v, err, errlen))
			goto bad;
		m->gpu = (int32_t)v;
		if (j_int(e, "pid", 0, UINT32_MAX, &v, err, errlen))
			goto bad;
		m->pid = (uint32_t)v;
		j->nmembers++;
	}
	cJSON_Delete(o);
	return 0;
bad:
	if (err && errlen && !err[0])
		wire_seterr(err, errlen, "JOIN: malformed entry");
	cJSON_Delete(o);
	pulse_aw_join_free(j);
	return -1;
}

/* ---- OPS: binary operator records ---- */

size_t pulse_aw_ops_put(uint8_t *buf, size_t len, size_t cap, const struct pulse_op_record *r)
{
	if (len > cap || cap - len < 2 + 1)
		return 0;
	size_t room = cap - len - 2;
	size_t n = pulse_op_record_to_bin(r, buf + len + 2, room < PULSE_OP_BIN_MAX ? room : PULSE_OP_BIN_MAX);
	if (!n)
		return 0;
	pulse_put_u16(buf + len, (uint16_t)n);
	return len + 2 + n;
}

int pulse_aw_ops_next(const uint8_t *p, size_t len, size_t *pos, const uint8_t **rec,
		      size_t *reclen, char *err, size_t errlen)
{
	if (*pos >= len)
		return 0;
	if (len - *pos < 2) {
		wire_seterr(err, errlen, "OPS: %zu stray byte(s) at %zu", len - *pos, *pos);
		*pos = len;
		return -1;
	}
	size_t n = pulse_get_u16(p + *pos);
	if (!n || n > PULSE_OP_BIN_MAX || n > len - *pos - 2) {
		wire_seterr(err, errlen, "OPS: record length %zu at %zu (payload %zu bytes)", n, *pos, len);
		*pos = len;
		return -1;
	}
	*rec = p + *pos + 2;
	*reclen = n;
	*pos += 2 + n;
	return 1;
}
