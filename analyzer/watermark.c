/* The data-time watermark (include/pulse/watermark.h): per-host queues of
 * lines, released in key order up to the smallest latest key of the hosts
 * that hold the watermark. Shared by the replay (analyzer/replay.c), the TCP
 * service (analyzer/server_conn.c) and any other transport, so that they all
 * decide on the same clock. */
#include <stdlib.h>
#include <string.h>

#include "pulse/watermark.h"

#define WM_HOST_LEN 64

struct wm_line {
	struct wm_line *next;
	uint64_t key;
	size_t len;
	int rec;     /* an opaque record (pulse_wm_push_rec), not a line */
	char text[]; /* NUL-terminated copy */
};

struct wm_host {
	char name[WM_HOST_LEN];
	struct wm_line *head, *tail;
	uint64_t last_key;   /* the latest key it sent (keys never go back) */
	uint64_t last_wall;  /* wall time of its latest line or registration */
	int ended;
	int silent;
};

struct pulse_wm {
	struct pulse_wm_ops ops;
	void *ctx;
	uint64_t silent_ns;
	struct wm_host *hosts;
	uint32_t nhosts, cap;
	uint64_t mark;       /* the consumer's clock */
	uint64_t hold_until; /* wall time before which nothing is released */
	struct pulse_wm_stats st;
};

struct pulse_wm *pulse_wm_new(const struct pulse_wm_ops *ops, void *ctx, uint64_t silent_ns)
{
	struct pulse_wm *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->ops = *ops;
	w->ctx = ctx;
	w->silent_ns = silent_ns;
	return w;
}

void pulse_wm_free(struct pulse_wm *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->nhosts; i++)
		for (struct wm_line *l = w->hosts[i].head, *n; l; l = n) {
			n = l->next;
			free(l);
		}
	free(w->hosts);
	free(w);
}

static int find(const struct pulse_wm *w, const char *host)
{
	for (uint32_t i = 0; i < w->nhosts; i++)
		if (!strcmp(w->hosts[i].name, host))
			return (int)i;
	return -1;
}

int pulse_wm_host(struct pulse_wm *w, const char *host, uint64_t wall_ns)
{
	if (strlen(host) >= WM_HOST_LEN)
		return -1;
	int i = find(w, host);
	if (i < 0) {
		if (w->nhosts == w->cap) {
			uint32_t nc = w->cap ? w->cap * 2 : 16;
			struct wm_host *nh = realloc(w->hosts, nc * sizeof *nh);
			if (!nh)
				return -1;
			w->hosts = nh;
			w->cap = nc;
		}
		i = (int)w->nhosts++;
		memset(&w->hosts[i], 0, sizeof w->hosts[i]);
		memcpy(w->hosts[i].name, host, strlen(host) + 1);
	}
	w->hosts[i].ended = 0;
	w->hosts[i].silent = 0;
	w->hosts[i].last_wall = wall_ns;
	return i;
}

/* key 0: the line's own (pulse_wm_line_key) */
static int push(struct pulse_wm *w, const char *host, const void *data, size_t len, int rec, uint64_t key,
		uint64_t wall_ns)
{
	int i = find(w, host);
	if (i < 0 || w->hosts[i].ended)
		i = pulse_wm_host(w, host, wall_ns);
	if (i < 0)
		return -1;
	struct wm_line *l = malloc(sizeof *l + len + 1);
	if (!l)
		return -1;
	memcpy(l->text, data, len);
	l->text[len] = 0;
	l->len = len;
	l->rec = rec;
	l->next = NULL;
	struct wm_host *h = &w->hosts[i];
	uint64_t k = rec ? key : pulse_wm_line_key(l->text, len);
	if (k > h->last_key)
		h->last_key = k;
	l->key = h->last_key;
	if (h->tail)
		h->tail->next = l;
	else
		h->head = l;
	h->tail = l;
	h->last_wall = wall_ns;
	h->silent = 0;
	w->st.pushed++;
	if (++w->st.held > w->st.held_max)
		w->st.held_max = w->st.held;
	return 0;
}

int pulse_wm_push(struct pulse_wm *w, const char *host, const char *line, size_t len,
		  uint64_t wall_ns)
{
	return push(w, host, line, len, 0, 0, wall_ns);
}

int pulse_wm_push_rec(struct pulse_wm *w, const char *host, const void *rec, size_t len, uint64_t key,
		      uint64_t wall_ns)
{
	return push(w, host, rec, len, 1, key, wall_ns);
}

void pulse_wm_touch(struct pulse_wm *w, uint64_t wall_ns)
{
	for (uint32_t i = 0; i < w->nhosts; i++)
		if (!w->hosts[i].ended && w->hosts[i].last_wall < wall_ns) {
			w->hosts[i].last_wall = wall_ns;
			w->hosts[i].silent = 0;
		}
}

void pulse_wm_end(struct pulse_wm *w, const char *host)
{
	int i = find(w, host);
	if (i >= 0)
		w->hosts[i].ended = 1;
}

static int holds(const struct pulse_wm *w, const struct wm_host *h, uint64_t wall_ns)
{
	if (h->ended)
		return 0;
	if (w->silent_ns && wall_ns > h->last_wall && wall_ns - h->last_wall > w->silent_ns)
		return 0;
	return 1;
}

/* Delivers the line with the smallest key (ties: the first host) if it is
 * at most `limit`. 1 when one was delivered. */
static int release_one(struct pulse_wm *w, uint64_t limit)
{
	int best = -1;
	for (uint32_t i = 0; i < w->nhosts; i++)
		if (w->hosts[i].head && (best < 0 || w->hosts[i].head->key < w->hosts[best].head->key))
			best = (int)i;
	if (best < 0 || w->hosts[best].head->key > limit)
		return 0;
	struct wm_host *h = &w->hosts[best];
	struct wm_line *l = h->head;
	h->head = l->next;
	if (!h->head)
		h->tail = NULL;
	w->st.held--;
	if (l->key > w->mark) {
		w->mark = l->key;
		w->st.ticks++;
		if (w->ops.tick)
			w->ops.tick(w->ctx, l->key);
	} else if (l->key < w->mark) {
		w->st.late++;
	}
	w->st.delivered++;
	if (l->rec) {
		if (w->ops.deliver_rec)
			w->ops.deliver_rec(w->ctx, h->name, l->text, l->len);
	} else if (w->ops.deliver) {
		w->ops.deliver(w->ctx, h->name, l->text, l->len);
	}
	free(l);
	return 1;
}

static uint64_t watermark(struct pulse_wm *w, uint64_t wall_ns)
{
	uint64_t m = UINT64_MAX;
	for (uint32_t i = 0; i < w->nhosts; i++) {
		struct wm_host *h = &w->hosts[i];
		int hold = holds(w, h, wall_ns);
		if (!hold && !h->ended && !h->silent) {
			h->silent = 1;
			w->st.silent_events++;
		}
		if (hold && h->last_key < m)
			m = h->last_key;
	}
	return m;
}

void pulse_wm_hold_until(struct pulse_wm *w, uint64_t wall_ns)
{
	if (wall_ns > w->hold_until)
		w->hold_until = wall_ns;
}

uint64_t pulse_wm_advance(struct pulse_wm *w, uint64_t wall_ns)
{
	if (wall_ns < w->hold_until)
		return 0;
	uint64_t limit = watermark(w, wall_ns), n = 0;
	while (release_one(w, limit))
		n++;
	return n;
}

uint64_t pulse_wm_flush(struct pulse_wm *w)
{
	uint64_t n = 0;
	while (release_one(w, UINT64_MAX))
		n++;
	return n;
}

int pulse_wm_starving(const struct pulse_wm *w)
{
	for (uint32_t i = 0; i < w->nhosts; i++)
		if (!w->hosts[i].ended && !w->hosts[i].head)
			return (int)i;
	return -1;
}

const char *pulse_wm_host_name(const struct pulse_wm *w, int idx)
{
	return idx >= 0 && (uint32_t)idx < w->nhosts ? w->hosts[idx].name : NULL;
}

void pulse_wm_stats(const struct pulse_wm *w, struct pulse_wm_stats *st)
{
	*st = w->st;
	st->mark_ns = w->mark;
	st->hosts = w->nhosts;
	st->hosts_silent = 0;
	for (uint32_t i = 0; i < w->nhosts; i++)
		st->hosts_silent += (uint32_t)(w->hosts[i].silent && !w->hosts[i].ended);
}

/* ---- keys ---- */

static uint64_t num_after(const char *line, const char *key)
{
	const char *p = strstr(line, key);
	if (!p)
		return 0;
	p += strlen(key);
	if (*p == '"')
		p++;
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

uint64_t pulse_wm_line_key(const char *line, size_t len)
{
	(void)len; /* line is NUL-terminated at len */
	const char *t = strstr(line, "\"type\":\"");
	if (!t)
		return 0;
	t += 8;
	if (!strncmp(t, "op\"", 3)) {
		uint64_t e = num_after(line, "\"end_ns\":");
		uint64_t c = num_after(line, "\"call_ns\":");
		return e > c ? e : c;
	}
	if (!strncmp(t, "window\"", 7))
		return num_after(line, "\"host_end_ns\":");
	if (!strncmp(t, "hook_op\"", 8) || !strncmp(t, "hook_group\"", 11))
		return num_after(line, "\"t_ns\":");
	return 0;
}
