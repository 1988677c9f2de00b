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

int replay_links_load(struct replay_links *l, const char *path, const char *host)
{
	memset(l, 0, sizeof *l);
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : (LOGE("%s: %s", path, strerror(errno)), -1);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint32_t lineno = 0, have = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len)
			continue;
		struct pulse_link_event e;
		char err[160];
		if (pulse_link_event_from_json(line, (size_t)len, &e, err, sizeof err)) {
			LOGW("%s:%u: not a link event (%s): line skipped", path, lineno, err);
			l->bad++;
			continue;
		}
		if (strcmp(e.host, host)) {
			LOGW("%s:%u: a link event of host %s in host %s's file: line skipped", path, lineno,
			     e.host, host);
			l->bad++;
			continue;
		}
		if (l->n == LINKS_MAX) {
			LOGW("%s:%u: more than %d link events: the rest skipped", path, lineno, LINKS_MAX);
			l->bad++;
			break;
		}
		if (l->n == have) {
			uint32_t want = have ? have * 2 : 8;
			void *p = realloc(l->ev, sizeof *l->ev * want);
			if (!p) {
				LOGE("%s: out of memory", path);
				free(line);
				fclose(f);
				replay_links_free(l);
				return -1;
			}
			l->ev = p;
			have = want;
		}
		l->ev[l->n++] = e;
	}
	free(line);
	int rd_err = ferror(f);
	fclose(f);
	if (rd_err) {
		LOGE("%s: read error", path);
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
