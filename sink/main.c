/* pulse-sink: a job's diagnoses from the NATS JetStream bus into
 * PostgreSQL, each exactly once, with the records around each and
 * per-iteration aggregates (sink/README.md).
 *
 *   pulse-sink --bus nats://HOST:PORT --job J --db CONNINFO [--retention-days N]
 *
 * A diagnosis is acknowledged on the bus only once it is in the database
 * (or is malformed: counted and skipped), so a database outage loses
 * nothing the stream still holds: the sink retries with backoff and the
 * bus redelivers. The records are read from the stream's start at every
 * start (as a new analyzer owner does): the windows a stopped sink left
 * open are filled from them, and every row is keyed, so none is written
 * twice. */
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

#include "evidence.h"
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
	struct sink_ev *ev;
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

static void ev_log(const char *level, const char *msg)
{
	logf_(level, "%s", msg);
}

static int on_record(void *c_, const char *host, const struct pulse_op_record *r)
{
	struct ctx *c = c_;
	if (strcmp(r->host, host))
		return -1; /* as the analyzer: a record of another host on this host's subject */
	return sink_ev_record(c->ev, r);
}

static int on_line(void *c, const char *host, const char *line, size_t len)
{
	(void)c, (void)host, (void)line, (void)len;
	return 1; /* maps and the agents' other lines: the analyzer's, not ours */
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
		return 0;
	}
	/* its window, before the diagnosis is acknowledged: a failure here
	 * has it said again (found there already), and the window opened */
	if (sink_ev_diag(c->ev, json, len, err, sizeof err)) {
		if (!c->failing++)
			logf_("warn", "database: %s; retrying (the bus keeps the diagnoses)", err);
		c->db_failures++;
		return -1;
	}
	if (rc == 2) {
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
	      "  --window-s N         evidence window: onset - N s .. report + N s (default 5)\n"
	      "  --window-wait-s N    stream quiet this long: windows close as they are (default 30)\n"
	      "  --window-max N       records stored per window at most (default 100000)\n"
	      "  --ring-mb N          recent records kept for windows to come (default 64)\n"
	      "  --agg-mb N           open per-iteration aggregates (default 16)\n"
	      "  --pending-mb N       window records waiting for the database (default 16)\n"
	      "  --help               this text\n"
	      "Schema (applied at start, versioned): sink/schema.sql; example queries: sink/README.md.\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"bus", required_argument, 0, 'b'}, {"job", required_argument, 0, 'j'},
		{"db", required_argument, 0, 'd'},  {"retention-days", required_argument, 0, 'r'},
		{"durable", required_argument, 0, 'D'}, {"window-s", required_argument, 0, 'w'},
		{"window-wait-s", required_argument, 0, 'W'}, {"window-max", required_argument, 0, 'm'},
		{"ring-mb", required_argument, 0, 'R'}, {"agg-mb", required_argument, 0, 'A'},
		{"pending-mb", required_argument, 0, 'P'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
	long window_s = 5, wait_s = 30, window_max = 100000, ring_mb = 64, agg_mb = 16, pend_mb = 16;
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
		case 'w':
		case 'W':
		case 'm':
		case 'R':
		case 'A':
		case 'P': {
			static const struct {
				int c;
				const char *name;
				long lo, hi;
			} lim[] = {{'w', "--window-s", 0, 3600},      {'W', "--window-wait-s", 1, 86400},
				   {'m', "--window-max", 1, 10000000}, {'R', "--ring-mb", 1, 65536},
				   {'A', "--agg-mb", 1, 65536},        {'P', "--pending-mb", 1, 65536}};
			long *dst[] = {&window_s, &wait_s, &window_max, &ring_mb, &agg_mb, &pend_mb};
			for (int i = 0; i < 6; i++) {
				if (lim[i].c != c)
					continue;
				char *end;
				long v = strtol(optarg, &end, 10);
				if (!*optarg || *end || v < lim[i].lo || v > lim[i].hi) {
					fprintf(stderr, "pulse-sink: %s: %ld..%ld, not %s\n", lim[i].name, lim[i].lo,
						lim[i].hi, optarg);
					return 2;
				}
				*dst[i] = v;
			}
			break;
		}
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
	struct sink_ev_cfg ec = {.half_ns = (uint64_t)window_s * 1000000000ull,
				 .ring_bytes = (size_t)ring_mb << 20,
				 .agg_bytes = (size_t)agg_mb << 20,
				 .pend_bytes = (size_t)pend_mb << 20,
				 .window_max = (uint32_t)window_max,
				 .wait_s = (int)wait_s,
				 .log = ev_log};
	cx.ev = sink_ev_new(cx.store, job, &ec);
	struct pulse_bus_cfg bc = {.url = bus, .job = job, .durable = durable, .log = bus_log};
	struct pulse_bus *b = cx.ev ? pulse_bus_open(&bc, err, sizeof err) : NULL;
	/* the records through a consumer of their own, from the stream's start */
	struct pulse_bus_cfg rc_ = {.url = bus, .job = job, .durable = NULL, .log = bus_log};
	struct pulse_bus *rb = b ? pulse_bus_open(&rc_, err, sizeof err) : NULL;
	if (!rb) {
		fprintf(stderr, "pulse-sink: %s\n", cx.ev ? err : "out of memory");
		pulse_bus_close(b);
		sink_ev_free(cx.ev);
		sink_store_close(cx.store);
		return 1;
	}
	struct pulse_bus_sink rk = {.record = on_record, .line = on_line, .ctx = &cx};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	logf_("info", "job %s: diagnoses from %s into PostgreSQL (schema version 2, retention %d days), "
		      "evidence windows of +-%ld s",
	      job, bus, retention, window_s);
	time_t next_retention = 0;
	useconds_t backoff = 0;
	int started = 0;
	while (!stop) {
		if (!started)
			started = sink_ev_start(cx.ev, err, sizeof err) == 0;
		/* the records first: a diagnosis comes after those it rests on */
		int got = pulse_bus_consume(rb, &rk, 256, 100);
		struct pulse_bus_stats rs;
		pulse_bus_get_stats(rb, &rs);
		int caught_up = got >= 0 && got < 256 && rs.pending == 0;
		if (started && sink_ev_tick(cx.ev, caught_up, 0, err, sizeof err)) {
			if (!cx.failing++)
				logf_("warn", "database: %s; retrying (the rows wait in memory)", err);
			cx.db_failures++;
		}
		if (!started) {
			cx.db_failures++;
			usleep(200000);
			continue; /* no diagnosis before the open windows are known */
		}
		if (retention && time(NULL) >= next_retention) {
			int n = sink_store_retention(cx.store, retention, err, sizeof err);
			if (n > 0)
				logf_("info", "retention: %d day partition(s) older than %d days dropped", n, retention);
			next_retention = time(NULL) + 3600;
		}
		uint64_t fails = cx.db_failures;
		pulse_bus_consume_diags(b, store_one, &cx, 64, got > 0 ? 1 : 100);
		if (cx.db_failures > fails) { /* the database is away: back off, 0.1 .. 5 s */
			backoff = backoff ? (backoff * 2 > 5000000 ? 5000000 : backoff * 2) : 100000;
			usleep(backoff);
		} else {
			backoff = 0;
		}
	}
	if (started && sink_ev_tick(cx.ev, 0, 1, err, sizeof err))
		logf_("warn", "at exit: %s (the rows not written are written by the next sink)", err);
	logf_("info", "stopping: %" PRIu64 " diagnoses stored, %" PRIu64 " already there, %" PRIu64
		      " malformed, %" PRIu64 " database failures",
	      cx.stored, cx.duplicates, cx.malformed, cx.db_failures);
	struct sink_ev_stats es;
	sink_ev_stats(cx.ev, &es);
	logf_("info",
	      "evidence: %" PRIu64 " records read; windows %" PRIu64 " opened, %" PRIu64 " closed, %zu left open, %" PRIu64
	      " rows stored, %" PRIu64 " records over the caps; %" PRIu64 " iteration aggregates stored (%" PRIu64
	      " early: memory), %" PRIu64 " records left out of them, %" PRIu64 " said twice; ring: %" PRIu64
	      " records held, %" PRIu64 " dropped (oldest, over %ld MiB), %" PRIu64 " refused",
	      es.records, es.windows_opened, es.windows_closed, es.windows_open, es.window_rows, es.window_dropped,
	      es.iters_stored, es.agg.early, es.agg.dropped, es.agg.duplicates, es.ring.records, es.ring.evicted,
	      ring_mb, es.ring.refused);
	pulse_bus_close(rb);
	pulse_bus_close(b);
	sink_ev_free(cx.ev);
	sink_store_close(cx.store);
	return 0;
}
