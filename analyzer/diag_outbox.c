/* Diagnoses waiting to be published: a bounded FIFO (diag_outbox.h). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "diag_outbox.h"

struct waiting {
	char *key, *payload;
	size_t len;
};

struct diag_outbox {
	struct waiting *q;
	uint32_t cap, head, n;
	struct diag_outbox_stats st;
};

struct diag_outbox *diag_outbox_new(uint32_t cap)
{
	struct diag_outbox *o = calloc(1, sizeof *o);
	if (!o)
		return NULL;
	o->cap = cap ? cap : 1024;
	o->q = calloc(o->cap, sizeof *o->q);
	if (!o->q) {
		free(o);
		return NULL;
	}
	return o;
}

static void drop_head(struct diag_outbox *o)
{
	struct waiting *w = &o->q[o->head];
	free(w->key);
	free(w->payload);
	memset(w, 0, sizeof *w);
	o->head = (o->head + 1) % o->cap;
	o->n--;
}

void diag_outbox_free(struct diag_outbox *o)
{
	if (!o)
		return;
	while (o->n)
		drop_head(o);
	free(o->q);
	free(o);
}

uint32_t diag_outbox_flush(struct diag_outbox *o, diag_outbox_put put, void *ctx)
{
	uint32_t done = 0;
	while (o->n) {
		const struct waiting *w = &o->q[o->head];
		if (put(ctx, w->key, w->payload, w->len)) {
			o->st.failures++;
			break;
		}
		o->st.published++;
		o->st.retried++;
		drop_head(o);
		done++;
	}
	o->st.queued = o->n;
	return done;
}

int diag_outbox_send(struct diag_outbox *o, const char *key, const char *payload, diag_outbox_put put, void *ctx)
{
	size_t len = strlen(payload);
	/* after those waiting: a consumer reads a job's diagnoses in the order
	 * they were made */
	diag_outbox_flush(o, put, ctx);
	if (!o->n) {
		if (!put(ctx, key, payload, len)) {
			o->st.published++;
			return 0;
		}
		o->st.failures++;
	}
	if (o->n == o->cap) {
		o->st.dropped++;
		return -1;
	}
	struct waiting *w = &o->q[(o->head + o->n) % o->cap];
	w->key = strdup(key);
	w->payload = strdup(payload);
	if (!w->key || !w->payload) {
		free(w->key);
		free(w->payload);
		memset(w, 0, sizeof *w);
		o->st.dropped++;
		return -1;
	}
	w->len = len;
	o->n++;
	o->st.queued = o->n;
	return 0;
}

void diag_outbox_get_stats(const struct diag_outbox *o, struct diag_outbox_stats *st)
{
	*st = o->st;
	st->queued = o->n;
}
