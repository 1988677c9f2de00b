/* pulse-sink's database side (sink/sink.h): libpq. A diagnosis goes in with
 * INSERT ... ON CONFLICT DO NOTHING on its key and day, so one said twice
 * (a resend, a replay by a new analyzer owner, a redelivery after a sink
 * crash) is stored once; its day's partition is made first if missing. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <libpq-fe.h>

#include "sink.h"
#include "store_int.h"

int sink_exec(PGconn *pg, const char *sql, char *err, size_t errlen)
{
	PGresult *r = PQexec(pg, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!ok)
		snprintf(err, errlen, "%s", PQerrorMessage(pg));
	PQclear(r);
	return ok ? 0 : -1;
}

static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

int sink_connect(struct sink_store *s, char *err, size_t errlen)
{
	if (s->pg && PQstatus(s->pg) == CONNECTION_OK)
		return 0;
	if (s->pg)
		PQfinish(s->pg);
	s->pg = PQconnectdb(s->conninfo);
	memset(s->made, 0, sizeof s->made);
	if (PQstatus(s->pg) != CONNECTION_OK) {
		snprintf(err, errlen, "PostgreSQL (%s): %s", s->conninfo, PQerrorMessage(s->pg));
		return -1;
	}
	PQsetNoticeProcessor(s->pg, quiet, NULL); /* "already exists, skipping" is not news */
	/* sinks of several jobs start together on a fresh database: CREATE ...
	 * IF NOT EXISTS is not safe against a concurrent one (a duplicate key in
	 * pg_type stopped the second sink), so one applies the schema at a time */
	if (sink_exec(s->pg, "SELECT pg_advisory_lock(7308843156)", err, errlen))
		return -1;
	int rc = sink_exec(s->pg, s->schema, err, errlen);
	char e2[8];
	sink_exec(s->pg, "SELECT pg_advisory_unlock(7308843156)", e2, sizeof e2);
	return rc;
}

struct sink_store *sink_store_open(const char *conninfo, const char *schema_sql, char *err, size_t errlen)
{
	struct sink_store *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->conninfo, sizeof s->conninfo, "%s", conninfo);
	s->schema = schema_sql;
	if (sink_connect(s, err, errlen)) {
		sink_store_close(s);
		return NULL;
	}
	return s;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* a time in ns since the epoch (a JSON number or decimal string) as SQL text */
static const char *ts(const cJSON *o, const char *k, char *buf, size_t n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	double ns = cJSON_IsNumber(v) ? v->valuedouble : cJSON_IsString(v) ? strtod(v->valuestring, NULL) : 0;
	if (!(ns > 0))
		return NULL;
	snprintf(buf, n, "%.6f", ns / 1e9);
	return buf;
}

int sink_partition(struct sink_store *s, const char *table, const char *day, char *err, size_t errlen)
{
	char tag[64];
	snprintf(tag, sizeof tag, "%s/%s", table, day);
	for (unsigned i = 0; i < SINK_PARTS_CACHED; i++)
		if (!strcmp(s->made[i], tag))
			return 0;
	int y, m, d;
	if (sscanf(day, "%4d-%2d-%2d", &y, &m, &d) != 3) {
		snprintf(err, errlen, "bad day %s", day);
		return -1;
	}
	char sql[512];
	snprintf(sql, sizeof sql,
		 "CREATE TABLE IF NOT EXISTS %s_%04d%02d%02d PARTITION OF %s "
		 "FOR VALUES FROM ('%s') TO (date '%s' + 1)",
		 table, y, m, d, table, day, day);
	if (sink_exec(s->pg, sql, err, errlen))
		return -1;
	snprintf(s->made[s->made_next++ % SINK_PARTS_CACHED], sizeof s->made[0], "%s", tag);
	return 0;
}

int sink_store_diag(struct sink_store *s, const char *json, size_t len, char *err, size_t errlen)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	const char *key = o ? str(o, "key") : NULL, *job = o ? str(o, "job") : NULL;
	const char *cls = o ? str(o, "class") : NULL, *level = o ? str(o, "level") : NULL;
	const char *loc = o ? str(o, "localizer") : NULL;
	char rt[40], on[40], es[40], ee[40];
	const char *report = o ? ts(o, "report_ns", rt, sizeof rt) : NULL;
	if (!key || !job || !cls || !level || !loc || !report) {
		snprintf(err, errlen, "diagnosis without key, job, class, level, localizer or report_ns");
		cJSON_Delete(o);
		return 1;
	}
	if (sink_connect(s, err, errlen)) {
		cJSON_Delete(o);
		return -1;
	}
	time_t t = (time_t)strtod(report, NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	char day[16];
	strftime(day, sizeof day, "%Y-%m-%d", &tm); /* the window's day too (sink_window_of) */
	if (sink_partition(s, "pulse_diagnoses", day, err, errlen)) {
		cJSON_Delete(o);
		return -1;
	}
	const cJSON *sus = cJSON_GetObjectItemCaseSensitive(o, "suspects");
	char *suspects = cJSON_IsArray(sus) ? cJSON_PrintUnformatted(sus) : strdup("[]");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(o, "episode");
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "score");
	const cJSON *lr = cJSON_GetObjectItemCaseSensitive(o, "lease_revision");
	char score[32] = "", rev[32] = "";
	if (cJSON_IsNumber(sc))
		snprintf(score, sizeof score, "%.17g", sc->valuedouble);
	if (cJSON_IsNumber(lr))
		snprintf(rev, sizeof rev, "%.0f", lr->valuedouble);
	const char *vals[15] = {key,
				day,
				job,
				cls,
				level,
				loc,
				suspects,
				json,
				score[0] ? score : NULL,
				ts(o, "onset_ns", on, sizeof on),
				report,
				ts(ep, "first_seen_ns", es, sizeof es),
				ts(ep, "last_seen_ns", ee, sizeof ee),
				rev[0] ? rev : NULL,
				str(o, "analyzer")};
	char *jcopy = strndup(json, len); /* the parameter is NUL-terminated text */
	vals[7] = jcopy;
	PGresult *r = PQexecParams(
		s->pg,
		"INSERT INTO pulse_diagnoses (key, day, job, class, level, localizer, suspects, evidence, score, "
		"onset_time, report_time, episode_start, episode_end, lease_revision, analyzer) VALUES "
		"($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, to_timestamp($10), to_timestamp($11), "
		"to_timestamp($12), to_timestamp($13), $14, $15) ON CONFLICT (key, day) DO NOTHING",
		15, NULL, vals, NULL, NULL, 0);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? (strcmp(PQcmdTuples(r), "0") ? 0 : 2) : -1;
	if (rc < 0)
		snprintf(err, errlen, "insert %s: %s", key, PQerrorMessage(s->pg));
	PQclear(r);
	free(jcopy);
	free(suspects);
	cJSON_Delete(o);
	return rc;
}

/* the tables partitioned by day: retention drops a day of each */
static const char *const day_tables[] = {"pulse_diagnoses", "pulse_windows", "pulse_window_records",
					 "pulse_iterations"};

int sink_store_retention(struct sink_store *s, int days, char *err, size_t errlen)
{
	if (days <= 0)
		return 0;
	if (sink_connect(s, err, errlen))
		return -1;
	int n = 0;
	for (size_t t = 0; t < sizeof day_tables / sizeof day_tables[0]; t++) {
		char sql[512];
		/* partition names end in _YYYYMMDD, which sorts as the day does */
		snprintf(sql, sizeof sql,
			 "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
			 "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = '%s' "
			 "AND c.relname < '%s_' || to_char(current_date - %d, 'YYYYMMDD')",
			 day_tables[t], day_tables[t], days);
		PGresult *r = PQexec(s->pg, sql);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			snprintf(err, errlen, "retention: %s", PQerrorMessage(s->pg));
			PQclear(r);
			return -1;
		}
		for (int i = 0; i < PQntuples(r); i++) {
			char drop[256];
			snprintf(drop, sizeof drop, "DROP TABLE IF EXISTS %s", PQgetvalue(r, i, 0));
			/* the count is of diagnosis days, as the log has always said */
			if (sink_exec(s->pg, drop, err, errlen) == 0 && t == 0)
				n++;
		}
		PQclear(r);
	}
	memset(s->made, 0, sizeof s->made);
	return n;
}

void sink_store_close(struct sink_store *s)
{
	if (!s)
		return;
	if (s->pg)
		PQfinish(s->pg);
	free(s);
}
