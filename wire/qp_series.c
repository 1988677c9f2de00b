/* SERIES_REQ and SERIES payloads (include/pulse/qp_series_wire.h): the
 * one codec the agent (host-agent/series_query.c) and the analyzer
 * (analyzer/series_fetch.c) share, live and in replay. */
#include <stdlib.h>
#include <string.h>

#include "json_dec.h"
#include "pulse/le.h"
#include "pulse/qp_series_wire.h"

const char *pulse_qps_status_name(uint8_t st)
{
	static const char *const n[] = {"ok", "truncated", "none", "off"};
	return st < sizeof n / sizeof n[0] ? n[st] : "status?";
}

size_t pulse_qps_req_encode(uint8_t *out, size_t cap, const struct pulse_qps_req *r)
{
	if (cap < PULSE_QPS_REQ_LEN)
		return 0;
	memset(out, 0, PULSE_QPS_REQ_LEN);
	pulse_put_u32(out, r->id);
	pulse_put_u64(out + 8, r->from_ns);
	pulse_put_u64(out + 16, r->to_ns);
	pulse_put_u32(out + 24, r->max_bytes);
	return PULSE_QPS_REQ_LEN;
}

int pulse_qps_req_decode(const uint8_t *p, size_t len, struct pulse_qps_req *r, char *err,
			 size_t errlen)
{
	if (len != PULSE_QPS_REQ_LEN) {
		wire_seterr(err, errlen, "SERIES_REQ: %zu bytes, want %d", len, PULSE_QPS_REQ_LEN);
		return -1;
	}
	if (pulse_get_u32(p + 4) || pulse_get_u32(p + 28)) {
		wire_seterr(err, errlen, "SERIES_REQ: reserved fields not 0");
		return -1;
	}
	r->id = pulse_get_u32(p);
	r->from_ns = pulse_get_u64(p + 8);
	r->to_ns = pulse_get_u64(p + 16);
	r->max_bytes = pulse_get_u32(p + 24);
	if (r->from_ns >= r->to_ns) {
		wire_seterr(err, errlen, "SERIES_REQ: empty range (from %llu, to %llu)",
			    (unsigned long long)r->from_ns, (unsigned long long)r->to_ns);
		return -1;
	}
	return 0;
}

/* ---- building an answer ---- */

static int room(struct pulse_qps_builder *b, size_t n)
{
	if (b->len + n <= b->cap)
		return 0;
	size_t c = b->cap ? b->cap : 4096;
	while (c < b->len + n)
		c *= 2;
	uint8_t *p = realloc(b->buf, c);
	if (!p)
		return -1;
	b->buf = p;
	b->cap = c;
	return 0;
}

/* a name of 0..max-1 printable bytes: u8 length and the bytes */
static size_t name_len(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

static void put_var(uint8_t *p, size_t *o, uint64_t v)
{
	while (v >= 0x80) {
		p[(*o)++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[(*o)++] = (uint8_t)v;
}

int pulse_qps_build_begin(struct pulse_qps_builder *b, const struct pulse_qps_resp *hdr,
			  size_t max_bytes)
{
	memset(b, 0, sizeof *b);
	size_t hl = name_len(hdr->host, PULSE_OP_HOST_LEN);
	if (!hl || hl >= PULSE_OP_HOST_LEN)
		return -1;
	b->max = max_bytes;
	if (room(b, PULSE_QPS_HDR_LEN + hl))
		return -1;
	memset(b->buf, 0, PULSE_QPS_HDR_LEN);
	pulse_put_u32(b->buf, hdr->id);
	b->buf[4] = hdr->status;
	b->buf[5] = (uint8_t)hl;
	pulse_put_u64(b->buf + 8, hdr->from_ns);
	pulse_put_u64(b->buf + 16, hdr->to_ns);
	pulse_put_u64(b->buf + 24, hdr->oldest_ns);
	pulse_put_u64(b->buf + 32, hdr->evicted);
	memcpy(b->buf + PULSE_QPS_HDR_LEN, hdr->host, hl);
	b->len = PULSE_QPS_HDR_LEN + hl;
	return b->len > b->max ? -1 : 0;
}

int pulse_qps_build_seg(struct pulse_qps_builder *b, const struct pulse_qps_seg *s)
{
	size_t dl = name_len(s->dev, PULSE_QPS_DEV_LEN), rl = name_len(s->remote_host, PULSE_OP_HOST_LEN);
	if (!dl || dl >= PULSE_QPS_DEV_LEN || rl >= PULSE_OP_HOST_LEN || !s->n ||
	    s->n > PULSE_QPS_MAX_EPOCHS || !s->epoch_ns || s->epoch_ns > (1u << 20) ||
	    s->remote_gpu < -1)
		return -1;
	/* worst case: fixed fields and 15 bytes per epoch */
	size_t worst = 1 + dl + 4 + 1 + rl + 5 + 8 + 4 + 1 + 5 + (size_t)s->n * 15;
	if (b->nseg >= PULSE_QPS_MAX_SEGS) {
		b->left_out++;
		return 1;
	}
	if (room(b, worst))
		return -1;
	size_t o = b->len;
	uint8_t *p = b->buf;
	p[o++] = (uint8_t)dl;
	memcpy(p + o, s->dev, dl);
	o += dl;
	pulse_put_u32(p + o, s->qpn);
	o += 4;
	p[o++] = (uint8_t)rl;
	memcpy(p + o, s->remote_host, rl);
	o += rl;
	put_var(p, &o, s->remote_gpu < 0 ? 1u : (uint64_t)s->remote_gpu << 1);
	pulse_put_u64(p + o, s->t0_ns);
	o += 8;
	pulse_put_u32(p + o, s->epoch_ns);
	o += 4;
	p[o++] = s->gap;
	put_var(p, &o, s->n);
	uint32_t prev = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		if (i && s->epoch[i] <= prev)
			return -1;
		if (s->bytes[i] > (1ull << 40))
			return -1;
		put_var(p, &o, s->epoch[i] - (i ? prev : 0));
		put_var(p, &o, s->bytes[i]);
		prev = s->epoch[i];
	}
	if (o > b->max) {
		b->left_out++;
		return 1;
	}
	b->len = o;
	b->nseg++;
	return 0;
}

size_t pulse_qps_build_end(struct pulse_qps_builder *b)
{
	if (!b->buf)
		return 0;
	pulse_put_u32(b->buf + 40, b->nseg);
	pulse_put_u32(b->buf + 44, b->left_out);
	if (b->left_out && b->buf[4] == PULSE_QPS_OK)
		b->buf[4] = PULSE_QPS_TRUNCATED;
	return b->len;
}

/* ---- decoding ---- */

struct rd {
	const uint8_t *p;
	size_t len, o;
	int bad;
};

static uint64_t get_var(struct rd *r)
{
	uint64_t v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (r->o >= r->len) {
			r->bad = 1;
			return 0;
		}
		uint8_t c = r->p[r->o++];
		if (sh == 63 && c > 1) {
			r->bad = 1;
			return 0;
		}
		v |= (uint64_t)(c & 0x7f) << sh;
		if (!(c & 0x80)) {
			/* one encoding per value: no trailing zero groups */
			if (!c && sh)
				r->bad = 1;
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

static int get_fixed(struct rd *r, size_t n)
{
	if (r->len - r->o < n) {
		r->bad = 1;
		return -1;
	}
	return 0;
}

/* u8 length and bytes into out (NUL-terminated); printable ASCII only */
static int get_name(struct rd *r, char *out, size_t max, int may_be_empty)
{
	if (get_fixed(r, 1))
		return -1;
	size_t n = r->p[r->o++];
	if ((!n && !may_be_empty) || n >= max || get_fixed(r, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (r->p[r->o + i] < 0x21 || r->p[r->o + i] > 0x7e)
			return -1;
	memcpy(out, r->p + r->o, n);
	out[n] = '\0';
	r->o += n;
	return 0;
}

void pulse_qps_resp_free(struct pulse_qps_resp *r)
{
	for (uint32_t i = 0; r->segs && i < r->nseg; i++) {
		free(r->segs[i].epoch);
		free(r->segs[i].bytes);
	}
	free(r->segs);
	r->segs = NULL;
	r->nseg = 0;
}

int pulse_qps_resp_decode(const uint8_t *p, size_t len, struct pulse_qps_resp *out, char *err,
			  size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (len < PULSE_QPS_HDR_LEN) {
		wire_seterr(err, errlen, "SERIES: %zu bytes, shorter than its header", len);
		return -1;
	}
	out->id = pulse_get_u32(p);
	out->status = p[4];
	out->from_ns = pulse_get_u64(p + 8);
	out->to_ns = pulse_get_u64(p + 16);
	out->oldest_ns = pulse_get_u64(p + 24);
	out->evicted = pulse_get_u64(p + 32);
	uint32_t nseg = pulse_get_u32(p + 40);
	out->segs_left_out = pulse_get_u32(p + 44);
	if (out->status > PULSE_QPS_OFF || pulse_get_u16(p + 6)) {
		wire_seterr(err, errlen, "SERIES: unknown status %u or reserved bits set", out->status);
		return -1;
	}
	/* a segment takes at least 22 bytes: the count is bounded by the payload */
	if (nseg > PULSE_QPS_MAX_SEGS || nseg > len / 22) {
		wire_seterr(err, errlen, "SERIES: %u segments cannot fit %zu bytes", nseg, len);
		return -1;
	}
	struct rd r = {.p = p, .len = len};
	size_t hl = p[5];
	if (!hl || hl >= PULSE_OP_HOST_LEN || len - PULSE_QPS_HDR_LEN < hl) {
		wire_seterr(err, errlen, "SERIES: bad host name length %zu", hl);
		return -1;
	}
	for (size_t i = 0; i < hl; i++)
		if (p[PULSE_QPS_HDR_LEN + i] < 0x21 || p[PULSE_QPS_HDR_LEN + i] > 0x7e) {
			wire_seterr(err, errlen, "SERIES: host name not printable");
			return -1;
		}
	memcpy(out->host, p + PULSE_QPS_HDR_LEN, hl);
	out->host[hl] = '\0';
	r.o = PULSE_QPS_HDR_LEN + hl;
	out->segs = nseg ? calloc(nseg, sizeof *out->segs) : NULL;
	if (nseg && !out->segs) {
		wire_seterr(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < nseg; i++) {
		struct pulse_qps_seg *s = &out->segs[i];
		out->nseg = i + 1; /* what _free must release */
		const char *what = "device name";
		if (get_name(&r, s->dev, PULSE_QPS_DEV_LEN, 0))
			goto bad;
		what = "qpn";
		if (get_fixed(&r, 4))
			goto bad;
		s->qpn = pulse_get_u32(p + r.o);
		r.o += 4;
		what = "remote host";
		if (get_name(&r, s->remote_host, PULSE_OP_HOST_LEN, 1))
			goto bad;
		what = "remote gpu";
		uint64_t g = get_var(&r);
		if (r.bad || (g != 1 && (g & 1)) || g > (1u << 21))
			goto bad;
		s->remote_gpu = g == 1 ? -1 : (int32_t)(g >> 1);
		what = "times";
		if (get_fixed(&r, 13))
			goto bad;
		s->t0_ns = pulse_get_u64(p + r.o);
		s->epoch_ns = pulse_get_u32(p + r.o + 8);
		s->gap = p[r.o + 12];
		r.o += 13;
		if (!s->epoch_ns || s->epoch_ns > (1u << 20))
			goto bad;
		what = "epoch count";
		uint64_t n = get_var(&r);
		/* each epoch takes at least two bytes */
		if (r.bad || !n || n > PULSE_QPS_MAX_EPOCHS || n > (r.len - r.o) / 2)
			goto bad;
		s->epoch = malloc(n * sizeof *s->epoch);
		s->bytes = malloc(n * sizeof *s->bytes);
		if (!s->epoch || !s->bytes) {
			wire_seterr(err, errlen, "out of memory");
			pulse_qps_resp_free(out);
			return -1;
		}
		s->n = (uint32_t)n;
		what = "epochs";
		uint64_t idx = 0;
		for (uint32_t k = 0; k < s->n; k++) {
			uint64_t d = get_var(&r);
			uint64_t b = get_var(&r);
			if (r.bad || (k && !d) || d > UINT32_MAX || b > (1ull << 40))
				goto bad;
			idx += d;
			if (idx > UINT32_MAX)
				goto bad;
			s->epoch[k] = (uint32_t)idx;
			s->bytes[k] = b;
		}
		continue;
bad:
		wire_seterr(err, errlen, "SERIES: segment %u: bad %s", i, what);
		pulse_qps_resp_free(out);
		return -1;
	}
	if (r.o != len) {
		wire_seterr(err, errlen, "SERIES: %zu bytes after the last segment", len - r.o);
		pulse_qps_resp_free(out);
		return -1;
	}
	return 0;
}
