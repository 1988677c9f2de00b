/* The compact binary form of struct pulse_op_record (include/pulse/op_record.h):
 * what the agent sends on the analyzer wire protocol from version 2 on
 * (OPS frames) and on the bus. JSON (op_record.c) stays the form of files
 * and of version-1 peers.
 *
 * Why this layout: the JSON decoder spends most of the analyzer's time in
 * number parsing and key lookups. Here every field has a fixed place,
 * integers are LEB128 varints (small counts take one byte), times are
 * deltas from call_ns (zigzag, modulo 2^64, so any value round-trips
 * exactly, 0 included) and peer hosts equal to an earlier host are a
 * one-byte back reference. The decoder checks the same ranges as the JSON
 * decoder, so a record is accepted in both forms or in neither. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "pulse/hook_record.h"
#include "pulse/le.h"
#include "pulse/op_record.h"

#define U53 (1ull << 53)

struct bw {
	uint8_t *p, *end;
	int full;
};

static void put_byte(struct bw *w, uint8_t v)
{
	if (w->p < w->end)
		*w->p++ = v;
	else
		w->full = 1;
}

static void put_var(struct bw *w, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put_byte(w, (uint8_t)v);
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void put_svar(struct bw *w, int64_t v)
{
	put_var(w, zigzag(v));
}

/* t relative to base, modulo 2^64: exact for every pair of values */
static void put_delta(struct bw *w, uint64_t t, uint64_t base)
{
	put_svar(w, (int64_t)(t - base));
}

static void put_f64(struct bw *w, double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	if (w->end - w->p < 8) {
		w->full = 1;
		return;
	}
	pulse_put_u64(w->p, u);
	w->p += 8;
}

/* A host name: 0..63 bytes. Length byte L < 64: L bytes follow. 0x80 | i:
 * the same as the i-th host written before in this record (0: the
 * record's own), so that the peers of a ring cost a byte each. */
static void put_host(struct bw *w, const char *h, const char **seen, unsigned *nseen)
{
	for (unsigned i = 0; i < *nseen; i++)
		if (!strcmp(seen[i], h)) {
			put_byte(w, (uint8_t)(0x80 | i));
			return;
		}
	const char *z = memchr(h, 0, PULSE_OP_HOST_LEN - 1);
	size_t n = z ? (size_t)(z - h) : PULSE_OP_HOST_LEN - 1;
	put_byte(w, (uint8_t)n);
	for (size_t i = 0; i < n; i++)
		put_byte(w, (uint8_t)h[i]);
	if (*nseen < 64)
		seen[(*nseen)++] = h;
}

size_t pulse_op_record_to_bin(const struct pulse_op_record *r, uint8_t *out, size_t cap)
{
	struct bw w = {out, out + cap, 0};
	const char *seen[64];
	unsigned nseen = 0;
	uint32_t np = r->npeers < PULSE_OP_MAX_PEERS ? r->npeers : PULSE_OP_MAX_PEERS;
	put_byte(&w, PULSE_OP_BIN_VERSION);
	put_host(&w, r->host, seen, &nseen);
	put_svar(&w, r->gpu);
	put_var(&w, r->pid);
	if (w.end - w.p >= 8) {
		pulse_put_u64(w.p, r->comm_id); /* random bits: a varint would only grow it */
		w.p += 8;
	} else {
		w.full = 1;
	}
	put_svar(&w, r->rank);
	put_svar(&w, r->nranks);
	put_var(&w, r->seq);
	put_var(&w, r->group_id);
	put_byte(&w, r->op);
	put_byte(&w, r->datatype);
	put_byte(&w, r->algo);
	put_byte(&w, r->algo_source);
	put_byte(&w, r->parallelism);
	put_byte(&w, r->status);
	put_svar(&w, r->root_peer);
	put_var(&w, r->count);
	put_var(&w, r->epoch_ns);
	put_var(&w, r->call_ns);
	put_delta(&w, r->start_ns, r->call_ns);
	put_delta(&w, r->end_ns, r->call_ns);
	put_var(&w, r->duration_ns);
	put_var(&w, r->expected_bytes);
	put_var(&w, r->actual_bytes);
	put_var(&w, r->active_ns);
	put_var(&w, r->rank_active_ns);
	put_f64(&w, r->rank_rate_gbps);
	put_var(&w, np);
	for (uint32_t i = 0; i < np; i++) {
		const struct pulse_op_peer *p = &r->peers[i];
		put_svar(&w, p->rank);
		put_svar(&w, p->gpu);
		put_host(&w, p->host, seen, &nseen);
		put_var(&w, p->expected_bytes);
		put_var(&w, p->actual_bytes);
		put_delta(&w, p->start_ns, r->call_ns);
		put_delta(&w, p->end_ns, r->call_ns);
		put_var(&w, p->active_ns);
		put_var(&w, p->peak_epoch_bytes);
		put_byte(&w, p->complete ? 1 : 0);
	}
	return w.full ? 0 : (size_t)(w.p - out);
}

/* ---- decoding: every byte checked, nothing trusted ---- */

struct br {
	const uint8_t *p, *end;
	char *err;
	size_t errlen;
	int bad;
};

static void fail(struct br *b, const char *what)
{
	if (!b->bad && b->err && b->errlen)
		snprintf(b->err, b->errlen, "op record (binary): %s", what);
	b->bad = 1;
	b->p = b->end; /* later reads see nothing */
}

static uint8_t get_byte(struct br *b, const char *what)
{
	if (b->p >= b->end) {
		fail(b, what);
		return 0;
	}
	return *b->p++;
}

static uint64_t get_var(struct br *b, const char *what)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (b->p >= b->end) {
			fail(b, what);
			return 0;
		}
		uint8_t c = *b->p++;
		if (shift == 63 && c > 1) {
			fail(b, what);
			return 0;
		}
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	fail(b, what);
	return 0;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* A signed value within [lo, hi] (the JSON decoder's ranges) */
static int32_t get_i32(struct br *b, int32_t lo, int32_t hi, const char *what)
{
	int64_t v = unzigzag(get_var(b, what));
	if (v < lo || v > hi) {
		fail(b, what);
		return 0;
	}
	return (int32_t)v;
}

/* Counters: below 2^53, as in JSON, so both forms accept the same records */
static uint64_t get_u53(struct br *b, const char *what)
{
	uint64_t v = get_var(b, what);
	if (v > U53) {
		fail(b, what);
		return 0;
	}
	return v;
}

static uint64_t get_delta(struct br *b, uint64_t base, const char *what)
{
	return base + (uint64_t)unzigzag(get_var(b, what));
}

static void get_host(struct br *b, char out[PULSE_OP_HOST_LEN], char (*seen[64])[PULSE_OP_HOST_LEN],
		     unsigned *nseen, const char *what)
{
	uint8_t n = get_byte(b, what);
	if (n & 0x80) {
		unsigned i = n & 0x7f;
		if (i >= *nseen) {
			fail(b, what);
			out[0] = 0;
			return;
		}
		memcpy(out, *seen[i], PULSE_OP_HOST_LEN);
		return;
	}
	if (n >= PULSE_OP_HOST_LEN || b->end - b->p < n || memchr(b->p, 0, n)) {
		fail(b, what);
		out[0] = 0;
		return;
	}
	memcpy(out, b->p, n);
	memset(out + n, 0, PULSE_OP_HOST_LEN - n);
	b->p += n;
	if (*nseen < 64)
		seen[(*nseen)++] = (char (*)[PULSE_OP_HOST_LEN])out;
}

/* The enums' names are dense from 0 (op_record.c), so valid is <= max */
static uint8_t get_enum(struct br *b, uint8_t max, const char *what)
{
	uint8_t v = get_byte(b, what);
	if (v > max)
		fail(b, what);
	return v;
}

int pulse_op_record_from_bin(const uint8_t *p, size_t len, struct pulse_op_record *r, char *err,
			     size_t errlen)
{
	struct br b = {p, p + len, err, errlen, 0};
	char (*seen[64])[PULSE_OP_HOST_LEN];
	unsigned nseen = 0;
	/* the peers' array is most of the struct: only what is used is cleared */
	memset(r, 0, offsetof(struct pulse_op_record, peers));
	if (get_byte(&b, "empty") != PULSE_OP_BIN_VERSION) {
		fail(&b, "unsupported encoding version");
		return -1;
	}
	get_host(&b, r->host, seen, &nseen, "bad host");
	r->gpu = get_i32(&b, -1, 1 << 20, "bad gpu");
	uint64_t pid = get_var(&b, "bad pid");
	if (pid > UINT32_MAX)
		fail(&b, "bad pid");
	r->pid = (uint32_t)pid;
	if (b.end - b.p < 8)
		fail(&b, "truncated comm_id");
	else {
		r->comm_id = pulse_get_u64(b.p);
		b.p += 8;
	}
	r->rank = get_i32(&b, -1, 1 << 24, "bad rank");
	r->nranks = get_i32(&b, 0, 1 << 24, "bad nranks");
	r->seq = get_u53(&b, "bad seq");
	r->group_id = get_u53(&b, "bad group_id");
	r->op = get_byte(&b, "truncated op");
	uint8_t chk;
	if (!b.bad && (pulse_op_type_parse(pulse_op_type_name(r->op), &chk) || chk != r->op))
		fail(&b, "unknown op type");
	r->datatype = get_byte(&b, "truncated datatype");
	r->algo = get_enum(&b, PULSE_ALGO_P2P, "unknown algo");
	r->algo_source = get_enum(&b, PULSE_ALGO_SRC_ARGS, "unknown algo_source");
	r->parallelism = get_enum(&b, PULSE_PAR_NONE, "unknown parallelism");
	r->status = get_enum(&b, PULSE_OP_NO_TRAFFIC, "unknown status");
	r->root_peer = get_i32(&b, -1, 1 << 24, "bad root_peer");
	r->count = get_u53(&b, "bad count");
	uint64_t ep = get_var(&b, "bad epoch_ns");
	if (ep > UINT32_MAX)
		fail(&b, "bad epoch_ns");
	r->epoch_ns = (uint32_t)ep;
	r->call_ns = get_var(&b, "bad call_ns");
	r->start_ns = get_delta(&b, r->call_ns, "bad start_ns");
	r->end_ns = get_delta(&b, r->call_ns, "bad end_ns");
	r->duration_ns = get_u53(&b, "bad duration_ns");
	r->expected_bytes = get_u53(&b, "bad expected_bytes");
	r->actual_bytes = get_u53(&b, "bad actual_bytes");
	r->active_ns = get_u53(&b, "bad active_ns");
	r->rank_active_ns = get_u53(&b, "bad rank_active_ns");
	if (b.end - b.p < 8) {
		fail(&b, "truncated rank_rate_gbps");
	} else {
		uint64_t u = pulse_get_u64(b.p);
		memcpy(&r->rank_rate_gbps, &u, sizeof u);
		b.p += 8;
		if (!(r->rank_rate_gbps >= 0 && r->rank_rate_gbps <= 1e9)) /* NaN fails too */
			fail(&b, "bad rank_rate_gbps");
	}
	uint64_t np = get_var(&b, "bad npeers");
	if (np > PULSE_OP_MAX_PEERS)
		fail(&b, "too many peers");
	for (uint32_t i = 0; !b.bad && i < np; i++) {
		struct pulse_op_peer *q = &r->peers[i];
		memset(q, 0, sizeof *q);
		r->npeers = i + 1;
		q->rank = get_i32(&b, -1, 1 << 24, "bad peer rank");
		q->gpu = get_i32(&b, -1, 1 << 20, "bad peer gpu");
		get_host(&b, q->host, seen, &nseen, "bad peer host");
		q->expected_bytes = get_u53(&b, "bad peer expected_bytes");
		q->actual_bytes = get_u53(&b, "bad peer actual_bytes");
		q->start_ns = get_delta(&b, r->call_ns, "bad peer start_ns");
		q->end_ns = get_delta(&b, r->call_ns, "bad peer end_ns");
		q->active_ns = get_u53(&b, "bad peer active_ns");
		q->peak_epoch_bytes = get_u53(&b, "bad peer peak_epoch_bytes");
		uint8_t c = get_byte(&b, "truncated peer");
		if (c > 1)
			fail(&b, "bad peer complete flag");
		q->complete = c;
	}
	if (!b.bad && b.p != b.end)
		fail(&b, "trailing bytes");
	return b.bad ? -1 : 0;
}
