#define _GNU_SOURCE
/* A recorded host's link events for --replay and --sim-links (replay_links.h). The file
 * holds the wire's own "link" lines (wire/host_event.c), so they are read
 * with the decoder the analyzer uses and written back with the encoder the
 * live agent uses. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "replay_links.h"

#define LINKS_MAX 4096 /* a host's NICs going down and up: far fewer */

static int by_time(const void *a, const void *b)
{
	const struct pulse_link_event *x = a, *y = b;
	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

struct load_ctx {
	struct replay_links *l;
	const char *path, *host;
	uint32_t have;
	int oom;
};

static int load_bad(void *ctx, unsigned lineno, const char *why)
{
	struct load_ctx *x = ctx;
	LOGW("%s:%u: not a link event (%s): line skipped", x->path, lineno, why);
	x->l->bad++;
	return 0;
}

static int load_event(void *ctx, const struct pulse_link_event *e, unsigned lineno)
{
	struct load_ctx *x = ctx;
	struct replay_links *l = x->l;
	if (strcmp(e->host, x->host)) {
		LOGW("%s:%u: a link event of host %s in host %s's file: line skipped", x->path, lineno, e->host,
		     x->host);
		l->bad++;
		return 0;
	}
	if (l->n == LINKS_MAX) {
		LOGW("%s:%u: more than %d link events: the rest skipped", x->path, lineno, LINKS_MAX);
		l->bad++;
		return 1;
	}
	if (l->n == x->have) {
		uint32_t want = x->have ? x->have * 2 : 8;
		void *p = realloc(l->ev, sizeof *l->ev * want);
		if (!p) {
			x->oom = 1;
			return 1;
		}
		l->ev = p;
		x->have = want;
	}
	l->ev[l->n++] = *e;
	return 0;
}

int replay_links_load(struct replay_links *l, const char *path, const char *host)
{
	memset(l, 0, sizeof *l);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : (LOGE("%s: %s", path, strerror(errno)), -1);
	struct load_ctx x = { .l = l, .path = path, .host = host };
	int rc = pulse_link_events_read(f, load_event, load_bad, &x);
	fclose(f);
	if (rc || x.oom) {
		LOGE("%s: %s", path, x.oom ? "out of memory" : "read error");
		replay_links_free(l);
		return -1;
	}
	if (l->n)
		qsort(l->ev, l->n, sizeof *l->ev, by_time);
	return 0;
}

void replay_links_emit(struct replay_links *l, uint64_t until)
{
	for (; l->next < l->n && l->ev[l->next].t_ns <= until; l->next++) {
		const struct pulse_link_event *e = &l->ev[l->next];
		if (pulse_link_event_is_down(e))
			LOGW("link %s (%s): %s (recorded at host time %" PRIu64 ")", e->netdev,
			     e->dev[0] ? e->dev : "no RDMA device", e->state, e->t_ns);
		else
			LOGI("link %s (%s): %s (recorded at host time %" PRIu64 ")", e->netdev,
			     e->dev[0] ? e->dev : "no RDMA device", e->state, e->t_ns);
		agent_link_line(e);
	}
}

void replay_links_free(struct replay_links *l)
{
	free(l->ev);
	memset(l, 0, sizeof *l);
}
