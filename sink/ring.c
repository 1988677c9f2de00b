/* The sink's recent records (sink/evidence.h): a diagnosis comes after the
 * records it rests on, so its window's past must still be at hand. They
 * are kept in their binary form (wire/op_record_bin.c, about 5x smaller
 * than the struct) in a circular array, and the oldest are dropped once
 * the bytes pass the cap: memory stays bounded whatever the job's rate. */
#include <stdlib.h>
#include <string.h>

#include "evidence.h"

struct slot {
	uint8_t *p;
	uint32_t len;
};

struct sink_ring {
	size_t cap;
	struct slot *s;
	size_t n, head, size; /* size: slots allocated */
	size_t bytes;
	uint64_t pushed, evicted, refused;
	uint8_t buf[PULSE_OP_BIN_MAX];
	struct pulse_op_record rec; /* what sink_ring_each hands out */
};

/* what a record costs: its bytes, the allocator's header, its slot */
static size_t cost(uint32_t len)
{
	return len + 16 + sizeof(struct slot);
}

struct sink_ring *sink_ring_new(size_t cap)
{
	struct sink_ring *g = calloc(1, sizeof *g);
	if (g)
		g->cap = cap;
	return g;
}

void sink_ring_free(struct sink_ring *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		free(g->s[(g->head + i) % g->size].p);
	free(g->s);
	free(g);
}

static void drop_oldest(struct sink_ring *g)
{
	struct slot *o = &g->s[g->head];
	g->bytes -= cost(o->len);
	free(o->p);
	o->p = NULL;
	g->head = (g->head + 1) % g->size;
	g->n--;
	g->evicted++;
}

static int grow(struct sink_ring *g)
{
	size_t size = g->size ? g->size * 2 : 1024;
	struct slot *s = malloc(size * sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < g->n; i++) /* unrolled: oldest at 0 */
		s[i] = g->s[(g->head + i) % g->size];
	free(g->s);
	g->s = s;
	g->size = size;
	g->head = 0;
	return 0;
}

int sink_ring_push(struct sink_ring *g, const struct pulse_op_record *r)
{
	size_t len = pulse_op_record_to_bin(r, g->buf, sizeof g->buf);
	if (!len || cost((uint32_t)len) > g->cap) {
		g->refused++;
		return -1;
	}
	while (g->n && g->bytes + cost((uint32_t)len) > g->cap)
		drop_oldest(g);
	if (g->n == g->size && grow(g)) {
		g->refused++;
		return -1;
	}
	uint8_t *p = malloc(len);
	if (!p) {
		g->refused++;
		return -1;
	}
	memcpy(p, g->buf, len);
	struct slot *t = &g->s[(g->head + g->n) % g->size];
	t->p = p;
	t->len = (uint32_t)len;
	g->n++;
	g->bytes += cost((uint32_t)len);
	g->pushed++;
	return 0;
}

int sink_ring_each(struct sink_ring *g, int (*fn)(void *ctx, const struct pulse_op_record *r), void *ctx)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct slot *t = &g->s[(g->head + i) % g->size];
		/* encoded here, so it decodes; a failure would be our bug: skip */
		if (pulse_op_record_from_bin(t->p, t->len, &g->rec, NULL, 0))
			continue;
		int rc = fn(ctx, &g->rec);
		if (rc)
			return rc;
	}
	return 0;
}

void sink_ring_stats(const struct sink_ring *g, struct sink_ring_stats *st)
{
	st->records = g->n;
	st->bytes = g->bytes;
	st->pushed = g->pushed;
	st->evicted = g->evicted;
	st->refused = g->refused;
}
