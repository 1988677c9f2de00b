/* pulse-sink: a job's diagnoses from the NATS JetStream bus into
 * PostgreSQL, each exactly once (sink/README.md).
 *
 *   pulse-sink --bus nats://HOST:PORT --job J --db CONNINFO [--retention-days N]
 *
 * A diagnosis is acknowledged on the bus only once it is in the database
 * (or is malformed: counted and skipped), so a database outage loses
 * nothing the stream still holds: the sink retries with backoff and the
 * bus redelivers. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pulse/bus.h"
#include "sink.h"

extern const char pulse_sink_schema[]; /* sink/schema.sql, built in */

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct ctx {
	struct sink_store *store;
	uint64_t stored, duplicates, malformed, db_failures;
	int failing;
};

static void logf_(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(const char *level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "pulse-sink %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void bus_log(void *c, const char *level, const char *msg)
{
	(void)c;
	logf_(level, "bus: %s", msg);
}

static int store_one(void *c_, const char *json, size_t len)
{
	struct ctx *c = c_;
	char err[512];
	int rc = sink_store_diag(c->store, json, len, err, sizeof err);
	if (rc < 0) {
		if (!c->failing++)
			logf_("warn", "database: %s; retrying (the bus keeps the diagnoses)", err);
		c->db_failures++;
		return -1;
	}
	if (c->failing) {
		logf_("info", "database back after %d failed attempt(s)", c->failing);
		c->failing = 0;
	}
	if (rc == 1) {
		c->malformed++;
		logf_("warn", "diagnosis skipped: %s", err);
	} else if (rc == 2) {
		c->duplicates++;
	} else {
		c->stored++;
	}
	return 0;
}

static void usage(FILE *f)
{
	fputs("Usage: pulse-sink --bus nats://HOST:PORT[,...] --job NAME --db CONNINFO [options]\n"
	      "Stores the job's diagnoses (the bus's pulse.<job>.diag) in PostgreSQL, exactly once.\n"
	      "  --bus URLS           the NATS JetStream servers\n"
	      "  --job NAME           the job\n"
	      "  --db CONNINFO        libpq connection string, e.g. \"host=db dbname=pulse\"\n"
	      "  --retention-days N   drop day partitions older than N days (default 0: keep)\n"
	      "  --durable NAME       the bus consumer's durable name (default pulse-sink)\n"
	      "  --help               this text\n"
	      "Schema (applied at start, versioned): sink/schema.sql; example queries: sink/README.md.\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"bus", required_argument, 0, 'b'}, {"job", required_argument, 0, 'j'},
		{"db", required_argument, 0, 'd'},  {"retention-days", required_argument, 0, 'r'},
		{"durable", required_argument, 0, 'D'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	const char *bus = NULL, *job = NULL, *db = NULL, *durable = "pulse-sink";
	int retention = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': bus = optarg; break;
		case 'j': job = optarg; break;
		case 'd': db = optarg; break;
		case 'D': durable = optarg; break;
		case 'r':
			retention = atoi(optarg);
			if (retention < 0 || retention > 36500) {
				fprintf(stderr, "pulse-sink: --retention-days: 0..36500, not %s\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!bus || !job || !db) {
		fprintf(stderr, "pulse-sink: --bus, --job and --db are required\n\n");
		usage(stderr);
		return 2;
	}
	char err[512];
	struct ctx cx = {0};
	cx.store = sink_store_open(db, pulse_sink_schema, err, sizeof err);
	if (!cx.store) {
		fprintf(stderr, "pulse-sink: %s\n", err);
		return 1;
	}
	struct pulse_bus_cfg bc = {.url = bus, .job = job, .durable = durable, .log = bus_log};
	struct pulse_bus *b = pulse_bus_open(&bc, err, sizeof err);
	if (!b) {
		fprintf(stderr, "pulse-sink: %s\n", err);
		sink_store_close(cx.store);
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	logf_("info", "job %s: diagnoses from %s into PostgreSQL (schema version 1, retention %d days)",
	      job, bus, retention);
	time_t next_retention = 0;
	useconds_t backoff = 0;
	while (!stop) {
		if (retention && time(NULL) >= next_retention) {
			int n = sink_store_retention(cx.store, retention, err, sizeof err);
			if (n > 0)
				logf_("info", "retention: %d day partition(s) older than %d days dropped", n, retention);
			next_retention = time(NULL) + 3600;
		}
		uint64_t fails = cx.db_failures;
		pulse_bus_consume_diags(b, store_one, &cx, 64, 500);
		if (cx.db_failures > fails) { /* the database is away: back off, 0.1 .. 5 s */
			backoff = backoff ? (backoff * 2 > 5000000 ? 5000000 : backoff * 2) : 100000;
			usleep(backoff);
		} else {
			backoff = 0;
		}
	}
	logf_("info", "stopping: %" PRIu64 " diagnoses stored, %" PRIu64 " already there, %" PRIu64
		      " malformed, %" PRIu64 " database failures",
	      cx.stored, cx.duplicates, cx.malformed, cx.db_failures);
	pulse_bus_close(b);
	sink_store_close(cx.store);
	return 0;
}
