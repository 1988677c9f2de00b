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

struct sink_store {
	PGconn *pg;
	char conninfo[512];
	const char *schema;
	char last_day[16]; /* the partition made last */
};

static int exec_ok(PGconn *pg, const char *sql, char *err, size_t errlen)
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

static int connect_db(struct sink_store *s, char *err, size_t errlen)
{
	if (s->pg && PQstatus(s->pg) == CONNECTION_OK)
		return 0;
	if (s->pg)
		PQfinish(s->pg);
	s->pg = PQconnectdb(s->conninfo);
	s->last_day[0] = 0;
	if (PQstatus(s->pg) != CONNECTION_OK) {
		snprintf(err, errlen, "PostgreSQL (%s): %s", s->conninfo, PQerrorMessage(s->pg));
		return -1;
	}
	PQsetNoticeProcessor(s->pg, quiet, NULL); /* "already exists, skipping" is not news */
	/* sinks of several jobs start together on a fresh database: CREATE ...
	 * IF NOT EXISTS is not safe against a concurrent one (a duplicate key in
	 * pg_type stopped the second sink), so one applies the schema at a time */
	if (exec_ok(s->pg, "SELECT pg_advisory_lock(7308843156)", err, errlen))
		return -1;
	int rc = exec_ok(s->pg, s->schema, err, errlen);
	char e2[8];
	exec_ok(s->pg, "SELECT pg_advisory_unlock(7308843156)", e2, sizeof e2);
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
	if (connect_db(s, err, errlen)) {
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

static int ensure_partition(struct sink_store *s, const char *day, char *err, size_t errlen)
{
	if (!strcmp(day, s->last_day))
		return 0;
	int y, m, d;
	if (sscanf(day, "%4d-%2d-%2d", &y, &m, &d) != 3)
		return -1;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "CREATE TABLE IF NOT EXISTS pulse_diagnoses_%04d%02d%02d PARTITION OF pulse_diagnoses "
		 "FOR VALUES FROM ('%s') TO (date '%s' + 1)",
		 y, m, d, day, day);
	if (exec_ok(s->pg, sql, err, errlen))
		return -1;
	snprintf(s->last_day, sizeof s->last_day, "%s", day);
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
	if (connect_db(s, err, errlen)) {
		cJSON_Delete(o);
		return -1;
	}
	time_t t = (time_t)strtod(report, NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	char day[16];
	strftime(day, sizeof day, "%Y-%m-%d", &tm);
	if (ensure_partition(s, day, err, errlen)) {
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

int sink_store_retention(struct sink_store *s, int days, char *err, size_t errlen)
{
	if (days <= 0)
		return 0;
	if (connect_db(s, err, errlen))
		return -1;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
		 "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'pulse_diagnoses' "
		 "AND c.relname < 'pulse_diagnoses_' || to_char(current_date - %d, 'YYYYMMDD')",
		 days);
	PGresult *r = PQexec(s->pg, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(err, errlen, "retention: %s", PQerrorMessage(s->pg));
		PQclear(r);
		return -1;
	}
	int n = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		char drop[256];
		snprintf(drop, sizeof drop, "DROP TABLE IF EXISTS %s", PQgetvalue(r, i, 0));
		if (exec_ok(s->pg, drop, err, errlen) == 0)
			n++;
	}
	PQclear(r);
	s->last_day[0] = 0;
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
