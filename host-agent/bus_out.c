/* pulse-host-agent --bus: the agent's side of the NATS JetStream bus
 * (include/pulse/bus.h). What the agent writes to --out goes to the job's
 * stream as the analyzer link would get it: the operator records in binary
 * (op_feed.c calls pulse_bus_put_op), every other line as it is
 * (pulse_bus_put_line, through the tee below), one poll at a time; the
 * QP map also goes to the state stream. Shared by live operation (main.c)
 * and --replay (replay.c, replay_fork.c). */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "agent.h"
#include "analyzer_link.h"
#include "line_tee.h"
#include "pulse/analyzer_wire.h"
#include "pulse/bus.h"
#include "pulse/bus_msg.h"

static void bus_log_cb(void *ctx, const char *level, const char *msg)
{
	(void)ctx;
	agent_log(level, "bus: %s", msg);
}

int agent_bus_open(struct agent *a)
{
	char err[600];
	struct pulse_bus_cfg bc = {.url = a->opt.bus, .job = a->opt.job ? a->opt.job : "default",
				   .log = bus_log_cb};
	a->bus = pulse_bus_open(&bc, err, sizeof err);
	if (!a->bus) {
		LOGE("%s", err);
		return -1;
	}
	LOGI("bus: publishing to %s (job %s, host %s)", a->opt.bus, bc.job, a->host_name);
	return 0;
}

void agent_bus_close(struct agent *a, uint64_t final_seq)
{
	if (!a->bus)
		return;
	struct pulse_bus_stats bs;
	pulse_bus_end_poll(a->bus, a->host_name, final_seq); /* what is still pending or queued */
	pulse_bus_get_stats(a->bus, &bs);
	/* a queue left behind is lost: give the bus a bounded while to come
	 * back (a server failing over, a stream electing its leader) */
	for (int i = 0; bs.queued && i < 150 && !(agent_sig_term && i); i++) {
		if (i == 0)
			LOGI("bus: %u messages still queued; waiting up to 30 s for the bus", bs.queued);
		struct timespec ts = {0, 200000000};
		nanosleep(&ts, NULL);
		pulse_bus_end_poll(a->bus, a->host_name, final_seq); /* nothing new: sends the queue */
		pulse_bus_get_stats(a->bus, &bs);
	}
	LOGI("bus: %llu messages (%llu records, %llu other lines) published, %llu duplicates, %llu publish "
	     "failures, %u still queued, %llu dropped at the queue cap",
	     (unsigned long long)bs.msgs_published, (unsigned long long)bs.records_published,
	     (unsigned long long)bs.lines_published, (unsigned long long)bs.msgs_duplicate,
	     (unsigned long long)bs.publish_failures, bs.queued, (unsigned long long)bs.queue_dropped);
	pulse_bus_close(a->bus);
	a->bus = NULL;
}

void agent_bus_map_line(void *ctx, const char *line, size_t len)
{
	struct agent *a = ctx;
	while (len && line[len - 1] == '\n')
		len--;
	pulse_bus_put_map(a->bus, a->host_name, line, len);
}

static void bus_line(void *ctx, const char *line, size_t len)
{
	struct agent *a = ctx;
	char type[16];
	int typed = !pulse_aw_line_type(line, len, type, sizeof type);
	if (typed && !strcmp(type, "op"))
		return; /* published as a binary record */
	/* a poll's lines go out before its records (pulse_bus_end_poll: the
	 * mapping first), but the ones that close it after them, where the
	 * file has them: a poll_end ahead of the records would say "all in"
	 * too soon, and without it the analyzer localized a poll later than
	 * from the file (bus_cluster.sh, job B: report at 9.0 s, replay 8.0 s) */
	int closing = typed && (!strcmp(type, "poll_end") || !strcmp(type, "join_wait"));
	if (closing ? pulse_bus_put_line_after(a->bus, line, len) : pulse_bus_put_line(a->bus, line, len))
		LOGW("bus: a line of %zu bytes not published (out of memory, or the poll's lines over "
		     "their bound)", len);
}

static void bus_oversize(void *ctx)
{
	(void)ctx;
	LOGW("bus: a line over %u bytes not published", PULSE_BUS_MAX_RAW);
}

FILE *agent_out_wrap(void *ctx, FILE *inner, int close_inner)
{
	static const struct line_tee_ops ops = {.line = bus_line, .oversize = bus_oversize};
	struct agent *a = ctx;
	FILE *f = inner;
	if (a->bus) {
		f = line_tee_open(inner, close_inner, PULSE_BUS_MAX_RAW - 1, &ops, a);
		if (!f)
			return NULL;
		close_inner = 1;
	}
	if (a->alink) {
		FILE *g = alink_tee(a->alink, f, close_inner);
		if (!g && f != inner) {
			LOGE("--out: cannot also send the lines to the analyzer (out of memory)");
			return f; /* the file and the bus still get them */
		}
		return g;
	}
	return f;
}
