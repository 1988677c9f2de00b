/* pulse-analyzer's TCP service: configuration (defaults and the
 * PULSE_ANALYZER_SERVER environment), statistics, signals, and an_serve,
 * which runs the loop (server_conn.c) until a signal or the configured end. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "analyzer.h"
#include "server_int.h"

volatile sig_atomic_t srv_sig_stop, srv_sig_usr1;
static struct an_srv_stats last_stats;

void an_srv_cfg_default(struct an_srv_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->listen = ":7410";
	c->max_conns = 256;
	c->max_payload = PULSE_AW_MAX_PAYLOAD;
	c->out_cap = 8u << 20;
	c->max_frames_per_s = 20000;
	c->flood_close_s = 10;
	c->read_per_turn = 256u << 10;
	c->max_skew_ns = 50000000ull;
	c->hello_timeout_ms = 5000;
	c->idle_timeout_ms = 30000;
	c->heartbeat_ms = 1000;
	c->tick_ms = 200;
	c->silent_ms = 5000;
	c->start_grace_ms = 2000;
	c->join_delay_ms = 100;
	c->lease_ms = 3000;
}

/* ---- stats ---- */

#define STAT_FIELDS(X)                                                                             \
	X(accepted) X(refused_full) X(closed) X(agents_now) X(agents_max) X(hellos) X(hello_bad)   \
	X(hello_version) X(hello_job) X(replaced) X(byes) X(agent_errors) X(hello_timeouts)        \
	X(idle_timeouts) X(mid_frame_disconnects) X(mid_frame_bytes) X(frames_in) X(bytes_in)      \
	X(frames_out) X(bytes_out) X(bad_magic) X(oversize) X(bad_frames) X(bad_payload)           \
	X(protocol_errors) X(flood_throttled) X(flood_closes) X(out_overflows) X(lines)              \
	X(lines_used) X(lines_ignored) X(lines_rejected) X(skew_events) X(skew_dropped)            \
	X(agent_dropped) X(maps) X(map_bad) X(join_runs) X(joins_sent) X(join_oversize)            \
	X(join_qps) X(join_paired) X(join_no_partner) X(join_ambiguous) X(join_not_connected)      \
	X(ticks) X(diagnoses) X(wm_late) X(wm_held_max) X(wm_silent) X(stats_requests)    \
	X(series_reqs) X(series_answers) X(series_bad) X(series_unanswered)

void an_srv_stats_print(FILE *f, const struct an_srv_stats *st)
{
	fputs("server:", f);
#define P(n) fprintf(f, " " #n "=%" PRIu64, st->n);
	STAT_FIELDS(P)
#undef P
	fprintf(f, " max_skew_ms=%.3f\n", (double)st->max_skew_ns / 1e6);
}

void *an_srv_stats_json(const struct an_srv_stats *st)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
#define J(n) cJSON_AddNumberToObject(o, #n, (double)st->n);
	STAT_FIELDS(J)
#undef J
	cJSON_AddNumberToObject(o, "max_skew_ms", (double)st->max_skew_ns / 1e6);
	return o;
}

const struct an_srv_stats *an_srv_stats(const struct an_srv *srv)
{
	return &srv->st;
}

const struct an_srv_stats *an_serve_last_stats(void)
{
	return &last_stats;
}

static void on_stop(int sig)
{
	(void)sig;
	srv_sig_stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	srv_sig_usr1 = 1;
}

int an_serve_cfg(struct an_state *state, const struct an_srv_cfg *cfg, struct an_srv_stats *out)
{
	char err[512];
	FILE *log = cfg->log ? cfg->log : stderr;
	struct an_srv *s = an_srv_new(state, cfg, err, sizeof err);
	if (!s) {
		fprintf(log, "pulse-analyzer error: %s\n", err);
		return 1;
	}
	struct sigaction old_term, old_int, old_usr1, old_pipe;
	if (!cfg->no_signals) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = on_stop; /* no SA_RESTART: poll returns at once */
		sigaction(SIGTERM, &sa, &old_term);
		sigaction(SIGINT, &sa, &old_int);
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, &old_usr1);
		sa.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &sa, &old_pipe);
	}
	srv_sig_stop = 0;
	while (an_srv_step(s, 1000))
		;
	if (srv_sig_stop)
		srv_log(s, "info", "stopping on a signal");
	fputs("pulse-analyzer ", s->log);
	an_srv_stats_print(s->log, &s->st);
	fflush(s->log);
	last_stats = s->st;
	if (out)
		*out = s->st;
	int lost = s->lease_lost;
	an_srv_free(s);
	if (!cfg->no_signals) {
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGUSR1, &old_usr1, NULL);
		sigaction(SIGPIPE, &old_pipe, NULL);
	}
	return lost ? 3 : 0;
}

/* PULSE_ANALYZER_SERVER="key=value,...": the service's bounds without
 * command-line options (an_serve's callers pass only the address). */
static int env_cfg(struct an_srv_cfg *c, FILE *log)
{
	const char *env = getenv("PULSE_ANALYZER_SERVER");
	if (!env || !*env)
		return 0;
	static char jobbuf[PULSE_AW_NAME_LEN], ownerbuf[96];
	char *dup = strdup(env), *save = NULL;
	if (!dup)
		return -1;
	int rc = 0;
	for (char *kv = strtok_r(dup, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		char *end = NULL;
		unsigned long long v = 0;
		if (eq) {
			*eq = 0;
			errno = 0;
			v = strtoull(eq + 1, &end, 10);
		}
		int num_ok = eq && end && !*end && eq[1] && !errno && v <= UINT32_MAX;
		if (eq && !strcmp(kv, "job") && strlen(eq + 1) < sizeof jobbuf) {
			snprintf(jobbuf, sizeof jobbuf, "%s", eq + 1);
			c->job = jobbuf;
			continue;
		}
		/* a stable name in the job's lease: restarted under it, the
		 * analyzer finds the lease still its own and goes on at once */
		if (eq && !strcmp(kv, "owner") && eq[1] && strlen(eq + 1) < sizeof ownerbuf) {
			snprintf(ownerbuf, sizeof ownerbuf, "%s", eq + 1);
			c->owner = ownerbuf;
			continue;
		}
#define K(name, field, scale)                                                                      \
	if (num_ok && !strcmp(kv, name)) {                                                         \
		c->field = (__typeof__(c->field))(v * (scale));                                    \
		continue;                                                                          \
	}
		K("max_conns", max_conns, 1)
		K("max_payload", max_payload, 1)
		K("out_cap", out_cap, 1)
		K("max_fps", max_frames_per_s, 1)
		K("flood_burst", flood_burst, 1)
		K("flood_close_s", flood_close_s, 1)
		K("read_per_turn", read_per_turn, 1)
		K("max_skew_ms", max_skew_ns, 1000000ull)
		K("drop_skewed", drop_skewed, 1)
		K("hello_timeout_ms", hello_timeout_ms, 1)
		K("idle_timeout_ms", idle_timeout_ms, 1)
		K("heartbeat_ms", heartbeat_ms, 1)
		K("tick_ms", tick_ms, 1)
		K("silent_ms", silent_ms, 1)
		K("start_grace_ms", start_grace_ms, 1)
		K("join_delay_ms", join_delay_ms, 1)
		K("run_ms", run_ns, 1000000ull)
		K("exit_after_byes", exit_after_byes, 1)
		K("max_version", max_version, 1)
		K("lease_ms", lease_ms, 1)
#undef K
		fprintf(log, "pulse-analyzer error: PULSE_ANALYZER_SERVER: '%s%s%s' is not a known "
			     "key=number (see analyzer/PROTOCOL.md)\n",
			kv, eq ? "=" : "", eq ? eq + 1 : "");
		rc = -1;
	}
	free(dup);
	return rc;
}

int an_serve(struct an_state *s, const char *listen_addr, const char *metrics_listen, FILE *log)
{
	return an_serve_bus(s, listen_addr, metrics_listen, NULL, NULL, log, NULL, NULL);
}

int an_serve_bus(struct an_state *s, const char *listen_addr, const char *metrics_listen, const char *bus,
		 const char *job, FILE *log, void (*on_diag)(void *ctx, const struct an_diagnosis *d),
		 void *ctx)
{
	struct an_srv_cfg c;
	an_srv_cfg_default(&c);
	c.listen = listen_addr;
	c.metrics_listen = metrics_listen;
	c.bus = bus;
	if (job)
		c.job = job;
	c.log = log;
	c.on_diagnosis = on_diag;
	c.ctx = ctx;
	if (env_cfg(&c, log ? log : stderr))
		return 1;
	return an_serve_cfg(s, &c, NULL);
}
