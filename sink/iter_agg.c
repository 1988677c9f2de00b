/* Per-iteration aggregates (sink/evidence.h): one per (communicator, seq,
 * op), the ranks' records summed up as they come. An aggregate is done when
 * every rank is in (nranks of them), or when the job's data time has gone
 * grace past its last record (a rank that never reports: a hang, a lost
 * host). Open ones are bounded in bytes: past the cap the oldest go out
 * early, with what they have (counted), and past twice the cap (the
 * database away, nothing going out) new records are dropped (counted). */
#include <stdlib.h>
#include <string.h>

#include "evidence.h"

#define MAX_BITMAP_RANKS (1u << 20) /* a rank bitmap past this: no de-duplication */

struct acc {
	struct sink_iter it;
	uint64_t *dur;          /* the ranks' durations */
	uint32_t ndur, cap;
	uint8_t *seen;          /* a bit per rank (NULL: nranks out of range) */
	uint64_t last_ns;       /* the latest record time in it */
	size_t bytes;
	int early;              /* handed out over the cap, before it was done */
};

struct sink_agg {
	size_t cap, bytes;
	struct acc **order;     /* open ones, oldest first */
	size_t n, size;
	struct acc **hash;      /* open addressing on (comm, seq, op), 2x n at least */
	size_t hsize;
	size_t *ready;          /* indices into order of the last sink_agg_ready */
	size_t nready;
	uint64_t records, duplicates, early, dropped;
};

static uint64_t mix(uint64_t comm, uint64_t seq, uint8_t op)
{
	uint64_t h = comm * 0x9e3779b97f4a7c15ull ^ (seq + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^ op;
	return h ^ (h >> 31);
}

static int same(const struct acc *a, uint64_t comm, uint64_t seq, uint8_t op)
{
	return a->it.comm_id == comm && a->it.seq == seq && a->it.op == op;
}

static int rehash(struct sink_agg *g, size_t hsize)
{
	struct acc **h = calloc(hsize, sizeof *h);
	if (!h)
		return -1;
	for (size_t i = 0; i < g->n; i++) {
		struct acc *a = g->order[i];
		size_t j = mix(a->it.comm_id, a->it.seq, a->it.op) & (hsize - 1);
		while (h[j])
			j = (j + 1) & (hsize - 1);
		h[j] = a;
	}
	free(g->hash);
	g->hash = h;
	g->hsize = hsize;
	return 0;
}

struct sink_agg *sink_agg_new(size_t cap)
{
	struct sink_agg *g = calloc(1, sizeof *g);
	if (g)
		g->cap = cap;
	if (g && rehash(g, 1024)) {
		free(g);
		return NULL;
	}
	return g;
}

static void acc_free(struct acc *a)
{
	free(a->dur);
	free(a->seen);
	free(a);
}

void sink_agg_free(struct sink_agg *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		acc_free(g->order[i]);
	free(g->order);
	free(g->hash);
	free(g->ready);
	free(g);
}

static struct acc *find_or_open(struct sink_agg *g, const struct pulse_op_record *r)
{
	size_t j = mix(r->comm_id, r->seq, r->op) & (g->hsize - 1);
	while (g->hash[j]) {
		if (same(g->hash[j], r->comm_id, r->seq, r->op))
			return g->hash[j];
		j = (j + 1) & (g->hsize - 1);
	}
	if (g->n == g->size) {
		size_t size = g->size ? g->size * 2 : 256;
		struct acc **o = realloc(g->order, size * sizeof *o);
		size_t *rd = realloc(g->ready, size * sizeof *rd);
		if (o)
			g->order = o;
		if (rd)
			g->ready = rd;
		if (!o || !rd)
			return NULL;
		g->size = size;
	}
	if (2 * (g->n + 1) > g->hsize) {
		if (rehash(g, g->hsize * 2))
			return NULL;
		return find_or_open(g, r);
	}
	struct acc *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->it.comm_id = r->comm_id;
	a->it.seq = r->seq;
	a->it.op = r->op;
	a->it.nranks = r->nranks;
	a->it.slowest_rank = -1;
	a->it.min_ns = UINT64_MAX;
	a->bytes = sizeof *a;
	if (r->nranks > 0 && (uint32_t)r->nranks <= MAX_BITMAP_RANKS) {
		a->seen = calloc((size_t)r->nranks / 8 + 1, 1);
		if (!a->seen) {
			free(a);
			return NULL;
		}
		a->bytes += (size_t)r->nranks / 8 + 1;
	}
	g->hash[j] = a;
	g->order[g->n++] = a;
	g->bytes += a->bytes;
	return a;
}

void sink_agg_add(struct sink_agg *g, const struct pulse_op_record *r)
{
	if (g->bytes > 2 * g->cap) {
		g->dropped++;
		return;
	}
	struct acc *a = find_or_open(g, r);
	if (!a) {
		g->dropped++;
		return;
	}
	if (a->seen && r->rank >= 0 && r->rank < a->it.nranks) {
		uint8_t bit = (uint8_t)(1u << (r->rank & 7));
		if (a->seen[r->rank / 8] & bit) {
			g->duplicates++; /* a redelivered message: the rank is in already */
			return;
		}
		a->seen[r->rank / 8] |= bit;
	}
	if (a->ndur == a->cap) {
		uint32_t cap = a->cap ? a->cap * 2 : 8;
		uint64_t *d = realloc(a->dur, cap * sizeof *d);
		if (!d) {
			g->dropped++;
			return;
		}
		a->bytes += (cap - a->cap) * sizeof *d;
		g->bytes += (cap - a->cap) * sizeof *d;
		a->dur = d;
		a->cap = cap;
	}
	struct sink_iter *it = &a->it;
	uint64_t d = r->duration_ns;
	a->dur[a->ndur++] = d;
	it->records++;
	g->records++;
	if (r->status != PULSE_OP_COMPLETE && r->status != PULSE_OP_NO_TRAFFIC)
		it->not_complete++;
	if (d < it->min_ns)
		it->min_ns = d;
	if (it->slowest_rank < 0 || d > it->max_ns || (d == it->max_ns && r->rank < it->slowest_rank)) {
		it->max_ns = d;
		it->slowest_rank = r->rank;
		it->slowest_gpu = r->gpu;
		memcpy(it->slowest_host, r->host, sizeof it->slowest_host);
		it->slowest_host[sizeof it->slowest_host - 1] = 0;
	}
	it->expected_bytes += r->expected_bytes;
	it->actual_bytes += r->actual_bytes;
	if (r->call_ns && (!it->first_call_ns || r->call_ns < it->first_call_ns))
		it->first_call_ns = r->call_ns;
	if (r->end_ns > it->last_end_ns)
		it->last_end_ns = r->end_ns;
	uint64_t t = sink_record_time(r);
	if (t > a->last_ns)
		a->last_ns = t;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static void summarize(struct acc *a, struct sink_iter *out)
{
	*out = a->it;
	qsort(a->dur, a->ndur, sizeof *a->dur, cmp_u64);
	uint32_t m = a->ndur / 2;
	/* the mean of the two middle ones on an even count: PostgreSQL's
	 * percentile_cont(0.5), so SQL over the window rows agrees */
	out->median_ns = a->ndur % 2 ? a->dur[m] : a->dur[m - 1] + (a->dur[m] - a->dur[m - 1]) / 2;
	if (!out->first_call_ns)
		out->first_call_ns = a->last_ns;
}

size_t sink_agg_ready(struct sink_agg *g, uint64_t watermark, uint64_t grace_ns, int all, struct sink_iter *out,
		      size_t max)
{
	g->nready = 0;
	size_t over = g->bytes > g->cap ? g->bytes - g->cap : 0;
	for (size_t i = 0; i < g->n && g->nready < max; i++) {
		struct acc *a = g->order[i];
		int done = all || (a->it.nranks > 0 && a->it.records >= (uint32_t)a->it.nranks) ||
			   (watermark > grace_ns && a->last_ns < watermark - grace_ns);
		a->early = !done && over;
		if (a->early)
			done = 1;
		if (!done)
			continue;
		over = over > a->bytes ? over - a->bytes : 0;
		summarize(a, &out[g->nready]);
		g->ready[g->nready++] = i;
	}
	return g->nready;
}

void sink_agg_done(struct sink_agg *g, size_t n)
{
	if (n > g->nready)
		n = g->nready;
	if (!n)
		return;
	/* the new table first: without it nothing is freed (the table must
	 * never point at a freed aggregate), and they go out again, stored
	 * once all the same */
	struct acc **h = calloc(g->hsize, sizeof *h);
	if (!h)
		return;
	for (size_t k = 0; k < n; k++) {
		struct acc *a = g->order[g->ready[k]];
		g->early += (uint64_t)a->early;
		g->bytes -= a->bytes;
		acc_free(a);
		g->order[g->ready[k]] = NULL;
	}
	size_t w = 0;
	for (size_t i = 0; i < g->n; i++)
		if (g->order[i])
			g->order[w++] = g->order[i];
	g->n = w;
	g->nready = 0;
	for (size_t i = 0; i < g->n; i++) {
		struct acc *a = g->order[i];
		size_t j = mix(a->it.comm_id, a->it.seq, a->it.op) & (g->hsize - 1);
		while (h[j])
			j = (j + 1) & (g->hsize - 1);
		h[j] = a;
	}
	free(g->hash);
	g->hash = h;
}

void sink_agg_stats(const struct sink_agg *g, struct sink_agg_stats *st)
{
	st->open = g->n;
	st->bytes = g->bytes;
	st->records = g->records;
	st->duplicates = g->duplicates;
	st->early = g->early;
	st->dropped = g->dropped;
}
