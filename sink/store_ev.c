/* The tables of schema version 2 (sink/schema.sql, sink/evidence.h): a
 * diagnosis's window and its records, and per-iteration aggregates. Every
 * insert is keyed on what the row is (the diagnosis and the rank's
 * operator; the iteration), so writing a row again (a look through the
 * ring after an outage, a restarted sink reading the stream again) leaves
 * one. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "pulse/hex_id.h"
#include "sink.h"
#include "store_int.h"

/* PostgreSQL's bigint holds what the records' decoders accept; a value
 * past it would be a bug upstream, stored as the largest rather than
 * failing the whole window */
static const char *i64(uint64_t v, char buf[24])
{
	snprintf(buf, 24, "%" PRIu64, v > INT64_MAX ? (uint64_t)INT64_MAX : v);
	return buf;
}

/* seconds since the epoch for to_timestamp(), NULL for an unknown time (0) */
static const char *secs(uint64_t ns, char buf[32])
{
	if (!ns)
		return NULL;
	snprintf(buf, 32, "%" PRIu64 ".%06" PRIu64, ns / 1000000000u, ns % 1000000000u / 1000u);
	return buf;
}

static int ok(PGresult *r)
{
	ExecStatusType t = PQresultStatus(r);
	return t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK;
}

static int fail(struct sink_store *s, PGresult *r, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, PQerrorMessage(s->pg));
	PQclear(r);
	return -1;
}

static void rollback(struct sink_store *s)
{
	char e[8];
	sink_exec(s->pg, "ROLLBACK", e, sizeof e);
}

int sink_store_window_open(struct sink_store *s, const char *job, const struct sink_window *w, int *complete,
			   char *err, size_t errlen)
{
	*complete = 0;
	if (sink_connect(s, err, errlen) || sink_partition(s, "pulse_windows", w->day, err, errlen))
		return -1;
	char comm[PULSE_HEX_ID_LEN], f[32], t[32], fn[24], tn[24];
	const char *v[8] = {w->key, w->day, job, pulse_hex_id_format(comm, w->comm_id),
			    secs(w->from_ns, f), secs(w->to_ns, t), i64(w->from_ns, fn), i64(w->to_ns, tn)};
	if (!v[4])
		v[4] = "0";
	PGresult *r = PQexecParams(s->pg,
				   "INSERT INTO pulse_windows (key, day, job, comm_id, from_time, to_time, from_ns, "
				   "to_ns) VALUES ($1, $2, $3, $4, to_timestamp($5), to_timestamp($6), $7, $8) "
				   "ON CONFLICT (key, day) DO NOTHING",
				   8, NULL, v, NULL, NULL, 0);
	if (!ok(r))
		return fail(s, r, "window", err, errlen);
	int fresh = strcmp(PQcmdTuples(r), "0") != 0;
	PQclear(r);
	if (fresh)
		return 0;
	r = PQexecParams(s->pg, "SELECT complete FROM pulse_windows WHERE key = $1 AND day = $2", 2, NULL, v, NULL,
			 NULL, 0);
	if (!ok(r))
		return fail(s, r, "window", err, errlen);
	*complete = PQntuples(r) == 1 && !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	return 0;
}

int sink_store_windows_load(struct sink_store *s, const char *job, struct sink_window **out, size_t *n,
			    char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (sink_connect(s, err, errlen))
		return -1;
	const char *v[1] = {job};
	PGresult *r = PQexecParams(s->pg,
				   "SELECT key, day, comm_id, from_ns, to_ns, dropped FROM pulse_windows "
				   "WHERE job = $1 AND NOT complete ORDER BY day, key",
				   1, NULL, v, NULL, NULL, 0);
	if (!ok(r))
		return fail(s, r, "open windows", err, errlen);
	int rows = PQntuples(r);
	struct sink_window *w = rows ? calloc((size_t)rows, sizeof *w) : NULL;
	if (rows && !w) {
		PQclear(r);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t k = 0;
	for (int i = 0; i < rows; i++) {
		struct sink_window *x = &w[k];
		if (strlen(PQgetvalue(r, i, 0)) >= sizeof x->key || pulse_hex_id_parse(PQgetvalue(r, i, 2), &x->comm_id))
			continue; /* not ours to write (another version's row) */
		snprintf(x->key, sizeof x->key, "%s", PQgetvalue(r, i, 0));
		snprintf(x->day, sizeof x->day, "%s", PQgetvalue(r, i, 1));
		x->from_ns = strtoull(PQgetvalue(r, i, 3), NULL, 10);
		x->to_ns = strtoull(PQgetvalue(r, i, 4), NULL, 10);
		x->dropped = (uint32_t)strtoul(PQgetvalue(r, i, 5), NULL, 10);
		k++;
	}
	PQclear(r);
	*out = w;
	*n = k;
	return 0;
}

int sink_store_window_records(struct sink_store *s, const char *job, const struct sink_window *w,
			      const struct pulse_op_record *const *recs, size_t n, size_t *added, char *err,
			      size_t errlen)
{
	*added = 0;
	if (!n)
		return 0;
	if (sink_connect(s, err, errlen) || sink_partition(s, "pulse_window_records", w->day, err, errlen) ||
	    sink_exec(s->pg, "BEGIN", err, errlen))
		return -1;
	char comm[PULSE_HEX_ID_LEN];
	pulse_hex_id_format(comm, w->comm_id);
	for (size_t i = 0; i < n; i++) {
		const struct pulse_op_record *x = recs[i];
		char rank[16], seq[24], nr[16], gpu[16], ct[32], st[32], et[32], cn[24], du[24], eb[24], ab[24], rate[32];
		snprintf(rank, sizeof rank, "%" PRId32, x->rank);
		snprintf(nr, sizeof nr, "%" PRId32, x->nranks);
		snprintf(gpu, sizeof gpu, "%" PRId32, x->gpu);
		snprintf(rate, sizeof rate, "%.17g", x->rank_rate_gbps);
		char *json = pulse_op_record_to_json(x); /* the record's one JSON codec (wire/op_record.c) */
		if (!json) {
			rollback(s);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		const char *v[20] = {w->key,
				     w->day,
				     job,
				     comm,
				     rank,
				     i64(x->seq, seq),
				     pulse_op_type_name(x->op),
				     nr,
				     x->host,
				     gpu,
				     pulse_op_status_name(x->status),
				     secs(x->call_ns, ct),
				     secs(x->start_ns, st),
				     secs(x->end_ns, et),
				     i64(x->call_ns, cn),
				     i64(x->duration_ns, du),
				     i64(x->expected_bytes, eb),
				     i64(x->actual_bytes, ab),
				     rate,
				     json};
		PGresult *r = PQexecParams(
			s->pg,
			"INSERT INTO pulse_window_records (key, day, job, comm_id, rank, seq, op, nranks, host, gpu, "
			"status, call_time, start_time, end_time, call_ns, duration_ns, expected_bytes, actual_bytes, "
			"rate_gbps, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, to_timestamp($12), "
			"to_timestamp($13), to_timestamp($14), $15, $16, $17, $18, $19, $20::jsonb) "
			"ON CONFLICT (key, day, comm_id, rank, seq, op) DO NOTHING",
			20, NULL, v, NULL, NULL, 0);
		free(json);
		if (!ok(r)) {
			fail(s, r, "window records", err, errlen);
			rollback(s);
			*added = 0;
			return -1;
		}
		*added += strcmp(PQcmdTuples(r), "0") != 0;
		PQclear(r);
	}
	if (sink_exec(s->pg, "COMMIT", err, errlen)) {
		*added = 0;
		return -1;
	}
	return 0;
}

int sink_store_window_close(struct sink_store *s, const struct sink_window *w, char *err, size_t errlen)
{
	if (sink_connect(s, err, errlen))
		return -1;
	char dr[24];
	snprintf(dr, sizeof dr, "%" PRIu32, w->dropped);
	const char *v[3] = {w->key, w->day, dr};
	PGresult *r = PQexecParams(s->pg,
				   "UPDATE pulse_windows SET complete = true, dropped = $3, records = (SELECT count(*) "
				   "FROM pulse_window_records WHERE key = $1 AND day = $2) WHERE key = $1 AND day = $2",
				   3, NULL, v, NULL, NULL, 0);
	if (!ok(r))
		return fail(s, r, "window close", err, errlen);
	PQclear(r);
	return 0;
}

int sink_store_iters(struct sink_store *s, const char *job, const struct sink_iter *it, size_t n, char *err,
		     size_t errlen)
{
	if (!n)
		return 0;
	if (sink_connect(s, err, errlen))
		return -1;
	/* the partitions before the transaction: one made inside it and
	 * rolled back would stay in the cache of made ones */
	for (size_t i = 0; i < n; i++) {
		char day[16];
		sink_day_of_ns(it[i].first_call_ns, day);
		if (sink_partition(s, "pulse_iterations", day, err, errlen))
			return -1;
	}
	if (sink_exec(s->pg, "BEGIN", err, errlen))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct sink_iter *x = &it[i];
		char comm[PULSE_HEX_ID_LEN], day[16], seq[24], nr[16], rec[16], nc[16], mn[24], md[24], mx[24], eb[24],
			ab[24], sr[16], sg[16], fc[32], le[32];
		sink_day_of_ns(x->first_call_ns, day);
		snprintf(nr, sizeof nr, "%" PRId32, x->nranks);
		snprintf(rec, sizeof rec, "%" PRIu32, x->records);
		snprintf(nc, sizeof nc, "%" PRIu32, x->not_complete);
		snprintf(sr, sizeof sr, "%" PRId32, x->slowest_rank);
		snprintf(sg, sizeof sg, "%" PRId32, x->slowest_gpu);
		const char *v[18] = {job,
				     pulse_hex_id_format(comm, x->comm_id),
				     i64(x->seq, seq),
				     pulse_op_type_name(x->op),
				     day,
				     nr,
				     rec,
				     nc,
				     i64(x->min_ns, mn),
				     i64(x->median_ns, md),
				     i64(x->max_ns, mx),
				     i64(x->expected_bytes, eb),
				     i64(x->actual_bytes, ab),
				     sr,
				     x->slowest_host,
				     sg,
				     secs(x->first_call_ns, fc),
				     secs(x->last_end_ns, le)};
		if (!v[16])
			v[16] = "0";
		PGresult *r = PQexecParams(
			s->pg,
			"INSERT INTO pulse_iterations AS t (job, comm_id, seq, op, day, nranks, records, not_complete, "
			"min_ns, median_ns, max_ns, expected_bytes, actual_bytes, slowest_rank, slowest_host, "
			"slowest_gpu, first_call, last_end) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
			"$13, $14, $15, $16, to_timestamp($17), to_timestamp($18)) "
			"ON CONFLICT (job, comm_id, seq, op, day) DO UPDATE SET nranks = EXCLUDED.nranks, "
			"records = EXCLUDED.records, not_complete = EXCLUDED.not_complete, min_ns = EXCLUDED.min_ns, "
			"median_ns = EXCLUDED.median_ns, max_ns = EXCLUDED.max_ns, "
			"expected_bytes = EXCLUDED.expected_bytes, actual_bytes = EXCLUDED.actual_bytes, "
			"slowest_rank = EXCLUDED.slowest_rank, slowest_host = EXCLUDED.slowest_host, "
			"slowest_gpu = EXCLUDED.slowest_gpu, first_call = EXCLUDED.first_call, "
			"last_end = EXCLUDED.last_end WHERE t.records < EXCLUDED.records",
			18, NULL, v, NULL, NULL, 0);
		if (!ok(r)) {
			fail(s, r, "iterations", err, errlen);
			rollback(s);
			return -1;
		}
		PQclear(r);
	}
	return sink_exec(s->pg, "COMMIT", err, errlen);
}
