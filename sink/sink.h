/* pulse-sink: diagnoses from the bus into PostgreSQL (sink/README.md).
 *   sink/store.c  the database: schema, a partition per day, retention,
 *                 one diagnosis stored exactly once
 *   sink/main.c   options, the loop (bus -> store), retries */
#ifndef PULSE_SINK_H
#define PULSE_SINK_H

#include <stddef.h>
#include <stdint.h>

struct sink_store;
/* Connects (conninfo: libpq's, e.g. "host=/tmp port=5433 dbname=pulse") and
 * applies sink/schema.sql. NULL with err. */
struct sink_store *sink_store_open(const char *conninfo, const char *schema_sql, char *err, size_t errlen);
/* One diagnosis (the analyzer's JSON: key, job, class, ...). Returns 0
 * stored, 2 already there (the same key), 1 malformed (never stored: skip
 * it), -1 the database failed (try again later; err says why). */
int sink_store_diag(struct sink_store *s, const char *json, size_t len, char *err, size_t errlen);
/* Drops the day partitions older than days (0: keep all); how many, or -1. */
int sink_store_retention(struct sink_store *s, int days, char *err, size_t errlen);
void sink_store_close(struct sink_store *s);

#endif
