/* The sink's evidence (sink/evidence.h): every record of the job's stream
 * goes into the ring (for windows of diagnoses still to come), into its
 * iteration's aggregate, and into the pending rows of each open window it
 * falls in. A window closes once the job's data time is N past its end
 * (its late records in), or, when the stream has been quiet for wait_s, at
 * once (a hang: nothing more comes). Rows are written from tick(), never
 * from a callback, so a database outage only lets them wait (bounded). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "pulse/analyzer_wire.h"

#define ITERS_PER_TX 512
#define ROWS_PER_TX 64 /* decoded records are 8 KiB each (their peers) */
#define ITER_GRACE_NS 10000000000ull /* a rank 10 s of data time late: stored without it */

struct sink_ev {
	struct sink_store *store;
	char job[64];
	struct sink_ev_cfg cfg;
	struct sink_ring *ring;
	struct sink_agg *agg;
	struct sink_window *win; /* open windows */
	size_t nwin, capwin;
	size_t pend_bytes;       /* all windows' pend_cap */
	uint64_t watermark;      /* the latest record time seen */
	time_t last_record;      /* wall clock */
	struct sink_iter *iters;
	const struct pulse_op_record **recs;
	struct pulse_op_record *dec; /* decoded pending rows, for one window */
	uint64_t records, opened, closed, rows, dropped, iters_stored, db_failures;
};

static void logf_(struct sink_ev *e, const char *level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void logf_(struct sink_ev *e, const char *level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (e->cfg.log)
		e->cfg.log(level, msg);
}

struct sink_ev *sink_ev_new(struct sink_store *s, const char *job, const struct sink_ev_cfg *cfg)
{
	struct sink_ev *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->store = s;
	snprintf(e->job, sizeof e->job, "%s", job);
	e->cfg = *cfg;
	e->ring = sink_ring_new(cfg->ring_bytes);
	e->agg = sink_agg_new(cfg->agg_bytes);
	e->iters = calloc(ITERS_PER_TX, sizeof *e->iters);
	e->recs = calloc(ROWS_PER_TX, sizeof *e->recs);
	e->dec = calloc(ROWS_PER_TX, sizeof *e->dec);
	e->last_record = time(NULL);
	if (!e->ring || !e->agg || !e->iters || !e->recs || !e->dec) {
		sink_ev_free(e);
		return NULL;
	}
	return e;
}

static void win_drop(struct sink_ev *e, size_t i)
{
	e->pend_bytes -= e->win[i].pend_cap;
	free(e->win[i].pend);
	e->win[i] = e->win[--e->nwin];
}

void sink_ev_free(struct sink_ev *e)
{
	if (!e)
		return;
	while (e->nwin)
		win_drop(e, 0);
	free(e->win);
	sink_ring_free(e->ring);
	sink_agg_free(e->agg);
	free(e->iters);
	free(e->recs);
	free(e->dec);
	free(e);
}

/* r into w's pending rows, within the window's and the sink's caps */
static void pend(struct sink_ev *e, struct sink_window *w, const struct pulse_op_record *r)
{
	if (w->stored + w->pend_n >= e->cfg.window_max) {
		w->dropped++;
		return;
	}
	if (w->pend_cap - w->pend_len < 2 + PULSE_OP_BIN_MAX) {
		size_t cap = w->pend_cap ? w->pend_cap * 2 : 4 * (2 + PULSE_OP_BIN_MAX);
		uint8_t *p = e->pend_bytes + cap - w->pend_cap <= e->cfg.pend_bytes ? realloc(w->pend, cap) : NULL;
		if (!p) {
			w->dropped++;
			return;
		}
		e->pend_bytes += cap - w->pend_cap;
		w->pend = p;
		w->pend_cap = cap;
	}
	size_t len = pulse_aw_ops_put(w->pend, w->pend_len, w->pend_cap, r);
	if (!len) {
		w->dropped++;
		return;
	}
	w->pend_len = len;
	w->pend_n++;
}

int sink_ev_record(struct sink_ev *e, const struct pulse_op_record *r)
{
	e->records++;
	e->last_record = time(NULL);
	uint64_t t = sink_record_time(r);
	if (t > e->watermark)
		e->watermark = t;
	sink_ring_push(e->ring, r); /* a refusal is counted there */
	sink_agg_add(e->agg, r);
	for (size_t i = 0; i < e->nwin; i++)
		if (sink_window_has(&e->win[i], r))
			pend(e, &e->win[i], r);
	return 0;
}

struct scan {
	struct sink_ev *e;
	struct sink_window *w;
};

static int scan_one(void *ctx, const struct pulse_op_record *r)
{
	struct scan *s = ctx;
	if (sink_window_has(s->w, r))
		pend(s->e, s->w, r);
	return 0;
}

/* w taken up: what the ring holds of it now, the rest as it comes */
static int win_add(struct sink_ev *e, const struct sink_window *w)
{
	if (e->nwin == e->capwin) {
		size_t cap = e->capwin ? e->capwin * 2 : 16;
		struct sink_window *p = realloc(e->win, cap * sizeof *p);
		if (!p)
			return -1;
		e->win = p;
		e->capwin = cap;
	}
	struct sink_window *x = &e->win[e->nwin++];
	*x = *w;
	x->opened = time(NULL);
	x->pend = NULL;
	x->pend_len = x->pend_cap = 0;
	x->pend_n = 0;
	x->stored = 0;
	struct scan s = {e, x};
	sink_ring_each(e->ring, scan_one, &s);
	e->opened++;
	return 0;
}

int sink_ev_start(struct sink_ev *e, char *err, size_t errlen)
{
	struct sink_window *w;
	size_t n;
	if (sink_store_windows_load(e->store, e->job, &w, &n, err, errlen))
		return -1;
	for (size_t i = 0; i < n; i++)
		win_add(e, &w[i]);
	free(w);
	if (n)
		logf_(e, "info", "%zu evidence window(s) left open by an earlier sink: filling them from the stream", n);
	return 0;
}

int sink_ev_diag(struct sink_ev *e, const char *json, size_t len, char *err, size_t errlen)
{
	struct sink_window w;
	char why[256];
	int rc = sink_window_of(json, len, e->cfg.half_ns, &w, why, sizeof why);
	if (rc == 1)
		return 0;
	if (rc < 0) {
		logf_(e, "warn", "diagnosis without a usable window: %s", why);
		return 0;
	}
	for (size_t i = 0; i < e->nwin; i++)
		if (!strcmp(e->win[i].key, w.key) && !strcmp(e->win[i].day, w.day))
			return 0; /* said again while its window is open */
	int complete;
	if (sink_store_window_open(e->store, e->job, &w, &complete, err, errlen)) {
		e->db_failures++;
		return -1;
	}
	if (complete)
		return 0; /* said again after its window was written */
	if (win_add(e, &w)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* w's pending rows into the database, a transaction per ROWS_PER_TX.
 * On a failure all stay pending: the ones committed already are found
 * there the next time (keyed), not stored twice. */
static int flush_window(struct sink_ev *e, struct sink_window *w, char *err, size_t errlen)
{
	size_t pos = 0, rl, added_all = 0;
	const uint8_t *rec;
	for (int more = w->pend_n > 0; more;) {
		size_t n = 0, added;
		while (n < ROWS_PER_TX && (more = pulse_aw_ops_next(w->pend, w->pend_len, &pos, &rec, &rl, NULL, 0) == 1))
			if (!pulse_op_record_from_bin(rec, rl, &e->dec[n], NULL, 0)) {
				e->recs[n] = &e->dec[n];
				n++;
			}
		if (sink_store_window_records(e->store, e->job, w, e->recs, n, &added, err, errlen))
			return -1;
		added_all += added;
	}
	w->stored += w->pend_n;
	e->rows += added_all;
	w->pend_len = 0;
	w->pend_n = 0;
	return 0;
}

int sink_ev_tick(struct sink_ev *e, int caught_up, int final, char *err, size_t errlen)
{
	int rc = 0;
	time_t now = time(NULL);
	int quiet = caught_up && now - e->last_record >= e->cfg.wait_s;
	for (size_t i = 0; i < e->nwin;) {
		struct sink_window *w = &e->win[i];
		if (flush_window(e, w, err, errlen)) {
			rc = -1;
			break;
		}
		int due = e->watermark >= w->to_ns + e->cfg.half_ns ||
			  (quiet && now - w->opened >= e->cfg.wait_s);
		if (!due) {
			i++;
			continue;
		}
		if (sink_store_window_close(e->store, w, err, errlen)) {
			rc = -1;
			break;
		}
		e->closed++;
		e->dropped += w->dropped;
		if (w->dropped)
			logf_(e, "warn", "window of %s: %u record(s) over the caps not stored", w->key, w->dropped);
		win_drop(e, i);
	}
	/* at exit: open windows stay open in the database; the next sink,
	 * reading the stream again, fills them. Aggregates go out whole or
	 * not (a later, fuller one replaces a partial one) */
	for (;;) {
		size_t n = sink_agg_ready(e->agg, e->watermark, ITER_GRACE_NS, final || quiet, e->iters, ITERS_PER_TX);
		if (!n)
			break;
		if (sink_store_iters(e->store, e->job, e->iters, n, err, errlen)) {
			rc = -1;
			break;
		}
		sink_agg_done(e->agg, n);
		e->iters_stored += n;
		if (n < ITERS_PER_TX)
			break;
	}
	if (rc)
		e->db_failures++;
	return rc;
}

void sink_ev_stats(const struct sink_ev *e, struct sink_ev_stats *st)
{
	memset(st, 0, sizeof *st);
	st->records = e->records;
	st->windows_opened = e->opened;
	st->windows_closed = e->closed;
	st->window_rows = e->rows;
	st->window_dropped = e->dropped;
	st->iters_stored = e->iters_stored;
	st->db_failures = e->db_failures;
	st->windows_open = e->nwin;
	sink_ring_stats(e->ring, &st->ring);
	sink_agg_stats(e->agg, &st->agg);
}
