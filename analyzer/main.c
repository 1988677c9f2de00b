/* pulse-analyzer: options and wiring.
 *
 *   pulse-analyzer --replay DIR [--json] [--timeline FILE] [options]
 *   pulse-analyzer --listen ADDR:PORT [options]      (analyzer/server_main.c)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "an_internal.h"
#include "critical_path.h"
#include "answers.h"

/* analyzer/server_*.c (the live TCP service) are linked in when built;
 * without it --listen says so. */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pulse-analyzer --replay DIR [--json] [--timeline FILE] [options]\n"
		"       pulse-analyzer --listen ADDR:PORT [options]\n"
		"       pulse-analyzer --bus nats://HOST:PORT --job NAME [--listen ADDR:PORT] [options]\n"
		"\n"
		"Finds the machine at fault in a distributed training job from the Pulse host\n"
		"agents' per-operator measurements, and says whether it is a computation or a\n"
		"communication problem, fail-slow or fail-stop. The OP-level baseline (what\n"
		"operator-level tools see: start, end, duration, volume/duration) runs side by\n"
		"side on the same data.\n"
		"\n"
		"  --replay DIR        a sim/run_cluster output directory: reads DIR/agent/<host>.jsonl,\n"
		"                      or runs `pulse-host-agent --replay DIR --host H` to make them\n"
		"  --agent-out DIR2    where the agents' output is (or is written), default DIR/agent\n"
		"  --agent PATH        the pulse-host-agent binary (default: next to this one, else $PATH)\n"
		"  --json              the report as JSON on stdout (default: text)\n"
		"  --where HOST:GPU    also place that GPU's slowdown in the iteration (1F1B critical\n"
		"                      path), verdict or not: forward, backward or transmission,\n"
		"                      the micro-batch, on the critical path or absorbed by slack\n"
		"  --timeline FILE     write the window around the diagnosis as Chrome trace-event\n"
		"                      JSON (open it in https://ui.perfetto.dev or chrome://tracing)\n"
		"  --device-history FILE  per-host history across jobs (Holmes's prior): read at the\n"
		"                      start (absent: empty), this job folded in and written back at\n"
		"                      the end; the report ranks the hosts implicated again and again\n"
		"  --listen ADDR:PORT  serve live host agents over TCP\n"
		"  --metrics-listen IPV4:PORT  live: serve OpenMetrics at /metrics (Prometheus)\n"
		"  --bus nats://HOST:PORT[,...]  consume job --job's records from NATS JetStream\n"
		"                      (the streams bus/ makes; with or without --listen)\n"
		"  --job NAME          the job (--bus: required; --listen: only agents of this job)\n"
		"  --hang-ms N         a call outstanding this long with no record is a hang, and\n"
		"                      at least a poll and four of the longest operators (1000)\n"
		"  --slow-factor F     an operator or iteration this much slower than its running\n"
		"                      baseline triggers localization (1.1)\n"
		"  --settle-ms N       data time a trigger waits for the other hosts' records (1200);\n"
		"                      a slow one goes sooner when the agents' poll_end says they are in\n"
		"  --skew-bound-ms N   host clocks further apart are dropped and counted (50)\n"
		"  --verbose           log triggers and dropped lines on stderr\n"
		"  --quiet             no progress lines\n"
		"  --help              this text\n");
}

/* --listen: every verdict as it is made, with the wall clock it was made at
 * (CLOCK_REALTIME) next to the data time it stands at, so that whoever
 * watches can measure the latency from the onset. */
static void live_verdict(void *ctx, const struct an_diagnosis *d)
{
	(void)ctx;
	if (strcmp(d->localizer, "pulse"))
		return; /* the OP-level baseline's verdicts are in the final report */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t wall = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	printf("LIVE VERDICT wall_ns=%" PRIu64 " data_ns=%" PRIu64 " onset_ns=%" PRIu64 "\n  ", wall,
	       d->report_ns, d->onset_ns);
	an_diag_print(d, stdout);
	fflush(stdout);
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || end == s || *s == '-' || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "replay", required_argument, 0, 'r' },   { "json", no_argument, 0, 'j' },
		{ "timeline", required_argument, 0, 't' }, { "listen", required_argument, 0, 'l' },
		{ "agent", required_argument, 0, 'a' },    { "agent-out", required_argument, 0, 'o' },
		{ "hang-ms", required_argument, 0, 'H' },  { "slow-factor", required_argument, 0, 'f' },
		{ "settle-ms", required_argument, 0, 's' }, { "skew-bound-ms", required_argument, 0, 'k' },
		{ "verbose", no_argument, 0, 'v' },        { "quiet", no_argument, 0, 'q' },
		{ "metrics-listen", required_argument, 0, 'm' }, { "bus", required_argument, 0, 'B' },
		{ "job", required_argument, 0, 'J' },        { "where", required_argument, 0, 'W' },
		{ "job", required_argument, 0, 'J' },     { "device-history", required_argument, 0, 'D' },
		{ "help", no_argument, 0, 'h' },           { 0, 0, 0, 0 },
	};
	struct an_cfg cfg;
	an_cfg_default(&cfg);
	struct an_replay_opts ro = { 0 };
	ro.argv0 = argv[0];
	const char *timeline = NULL, *listen = NULL, *metrics = NULL, *bus = NULL, *job = NULL;
	const char *devhist = NULL;
	int json = 0, verbose = 0;
	const char *where = NULL;
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': ro.dir = optarg; break;
		case 'j': json = 1; break;
		case 't': timeline = optarg; break;
		case 'l': listen = optarg; break;
		case 'm': metrics = optarg; break;
		case 'B': bus = optarg; break;
		case 'J': job = optarg; break;
		case 'W': where = optarg; break;
		case 'D': devhist = optarg; break;
		case 'a': ro.agent_bin = optarg; break;
		case 'o': ro.agent_out = optarg; break;
		case 'v': verbose = 1; break;
		case 'q': ro.quiet = 1; break;
		case 'h': usage(stdout); return 0;
		case 'H':
			if (parse_u64(optarg, 86400000, &v) || !v) {
				fprintf(stderr, "pulse-analyzer: --hang-ms: expected 1..86400000, got \"%s\"\n", optarg);
				return 2;
			}
			cfg.hang_ns = v * 1000000;
			break;
		case 's':
			if (parse_u64(optarg, 600000, &v)) {
				fprintf(stderr, "pulse-analyzer: --settle-ms: expected 0..600000, got \"%s\"\n", optarg);
				return 2;
			}
			cfg.settle_ns = v * 1000000;
			break;
		case 'k':
			if (parse_u64(optarg, 600000, &v) || !v) {
				fprintf(stderr, "pulse-analyzer: --skew-bound-ms: expected 1..600000, got \"%s\"\n",
					optarg);
				return 2;
			}
			cfg.skew_bound_ns = v * 1000000;
			break;
		case 'f': {
			char *end;
			double f = strtod(optarg, &end);
			if (*end || end == optarg || !(f > 1.0 && f < 100)) {
				fprintf(stderr, "pulse-analyzer: --slow-factor: expected a number above 1, got \"%s\"\n",
					optarg);
				return 2;
			}
			cfg.slow_factor = f;
			break;
		}
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pulse-analyzer: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (metrics && !listen && !bus) {
		fprintf(stderr, "pulse-analyzer: --metrics-listen is for the live service (--listen, --bus)\n");
		return 2;
	}
	if (bus && !job) {
		fprintf(stderr, "pulse-analyzer: --bus needs --job NAME (the job whose stream to consume)\n");
		return 2;
	}
	if (!!ro.dir + !!(listen || bus) != 1) {
		fprintf(stderr, "pulse-analyzer: give --replay DIR, or --listen ADDR:PORT and/or --bus URL\n\n");
		usage(stderr);
		return 2;
	}
	struct an_devhist dh;
	an_devhist_init(&dh);
	char err[512];
	if (devhist && an_devhist_load(&dh, devhist, err, sizeof err)) {
		fprintf(stderr, "pulse-analyzer: --device-history: %s\n", err);
		an_devhist_free(&dh);
		return 2;
	}
	struct an_state *s = an_state_new(&cfg);
	if (!s) {
		fprintf(stderr, "pulse-analyzer: out of memory\n");
		an_devhist_free(&dh);
		return 1;
	}
	if (verbose)
		an_set_log(s, stderr);
	int rc = 0;
	if (listen || bus) {
		/* Serves until SIGINT/SIGTERM, then reports on everything it saw,
		 * like a replay does. */
		int src = an_serve_bus(s, listen, metrics, bus, job, stderr, live_verdict, NULL);
		if (src == 1) {
			an_state_free(s); /* could not listen: said why */
			an_devhist_free(&dh);
			return 1;
		}
		if (src == 3) { /* another analyzer took the job (--bus): its verdicts count */
			an_state_free(s);
			an_devhist_free(&dh);
			return 3;
		}
		an_finish(s);
	} else if (an_replay(s, &ro, err, sizeof err)) {
		fprintf(stderr, "pulse-analyzer: %s\n", err);
		an_state_free(s);
		an_devhist_free(&dh);
		return 1;
	}
	an_answers_update(s); /* the slow ratio and episodes over all the data */
	if (devhist) {
		an_devhist_add_job(&dh, s);
		an_devhist_rank(&dh);
		if (an_devhist_save(&dh, devhist, err, sizeof err)) {
			fprintf(stderr, "pulse-analyzer: --device-history: %s\n", err);
			rc = 1;
		}
	}
	uint32_t nd;
	const struct an_diagnosis *d = an_diagnoses(s, &nd);
	const struct an_diagnosis *pick = NULL;
	for (uint32_t i = 0; i < nd && !pick; i++)
		if (!strcmp(d[i].localizer, "pulse"))
			pick = &d[i];
	if (!pick && nd)
		pick = &d[0];
	if (timeline && an_timeline_write(s, pick, timeline, err, sizeof err)) {
		fprintf(stderr, "pulse-analyzer: --timeline: %s\n", err);
		rc = 1;
	}
	struct an_where wq;
	char wline[400] = "";
	if (where) {
		if (an_where_query(s, where, &wq, err, sizeof err)) {
			fprintf(stderr, "pulse-analyzer: --where: %s\n", err);
			an_state_free(s);
			return 2;
		}
		an_where_format(&wq, wline, sizeof wline);
	}
	if (json) {
		cJSON *o = an_report_json(s);
		if (o && timeline && !rc)
			cJSON_AddStringToObject(o, "timeline", timeline);
		if (o && where)
			cJSON_AddItemToObject(o, "where_query", an_where_json(&wq));
		if (o && devhist)
			cJSON_AddItemToObject(o, "device_history", an_devhist_json(&dh, 10));
		char *text = o ? cJSON_Print(o) : NULL;
		if (!text) {
			fprintf(stderr, "pulse-analyzer: out of memory\n");
			rc = 1;
		} else {
			puts(text);
		}
		free(text);
		cJSON_Delete(o);
	} else {
		an_report_text(s, stdout);
		if (where)
			printf("\nWhere in the iteration (--where %s): %s\n", where, wline);
		if (devhist)
			an_devhist_print(&dh, stdout, 10);
		if (timeline && !rc)
			printf("\nTimeline of the window around the diagnosis: %s\n"
			       "  (open it in https://ui.perfetto.dev or chrome://tracing)\n",
			       timeline);
	}
	/* a report cut short by a full disk or a closed pipe is no report */
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "pulse-analyzer: writing the report: %s\n", strerror(errno ? errno : EIO));
		rc = 1;
	}
	an_state_free(s);
	an_devhist_free(&dh);
	return rc;
}
