/* pulse-host-agent: JSON lines, one object per line, to --out or stdout.
 *
 *   {"type":"window", "nic", "t_ns" (host time written), "window_seq",
 *    "host_start_ns", "host_end_ns" (window bounds in host CLOCK_REALTIME),
 *    "clock_err_ns" (bound of that mapping), "nic_start_ns", "nic_end_ns",
 *    "epoch_ns", "complete", "pages_missing", "gap" (flag names: pages, seq,
 *    restart, down, abandoned; [] if none), "upload_bytes",
 *    "upload_exchanges", "poll_ms", "flows",
 *    "qps": [{"qpn", "bytes", "active_epochs", "peak_epoch_bytes",
 *             "peak_gbps", "mean_gbps" (over active epochs),
 *             "start_ns", "end_ns" (host time of the first active epoch's
 *             start and the last one's end)}]}
 *   {"type":"event", "nic", "t_ns", "event": up|down|restarted|gap, "detail"}
 *   {"type":"hook_map"...} (qp_map.c), {"type":"hook_op"...} and
 *   {"type":"hook_group"...} (hook_drain.c): interception records.
 * A window with a gap lists the data it has; missing data is never zeros. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "pulse/json_put.h"

static FILE *out_f;
static FILE *out_file; /* the file under out_f (out_f may be the tee around it) */
static const char *out_path; /* NULL (stdout) or out_path_buf */
static char out_path_buf[4400];  /* a copy: callers pass paths on their stack */
/* The first write error since jsonl_open (0: none) and how many flushes
 * failed: a full disk must not pass for a complete output. */
static int out_errno;
static unsigned long out_failed_flushes;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *(*out_wrap)(void *ctx, FILE *inner, int close_inner); /* jsonl_set_wrap */
static void *out_wrap_ctx;

void jsonl_set_wrap(FILE *(*wrap)(void *ctx, FILE *inner, int close_inner), void *ctx)
{
	out_wrap = wrap;
	out_wrap_ctx = ctx;
}

/* The stream the lines go to: f itself, or the wrapper around it. */
static FILE *wrapped(FILE *f, int close_inner)
{
	if (!f || !out_wrap)
		return f;
	FILE *w = out_wrap(out_wrap_ctx, f, close_inner);
	if (!w) {
		LOGE("--out: cannot also send the lines to the analyzer (out of memory); writing "
		     "the file only");
		return f;
	}
	return w;
}

static const char *out_name(void)
{
	return out_path ? out_path : "-";
}

/* Flushes f (out_f, under out_lock) and the file under it. The tee keeps
 * feeding the analyzer when the file fails, so the file's own error flag is
 * the one that tells. */
static void out_flush(FILE *f)
{
	int bad = fflush(f) != 0 || ferror(f);
	int e = errno;
	if (out_file && out_file != f && (fflush(out_file) != 0 || ferror(out_file))) {
		bad = 1;
		e = errno;
	}
	if (!bad)
		return;
	out_failed_flushes++;
	if (!out_errno) {
		out_errno = e ? e : EIO;
		LOGE("--out %s: write failed: %s; the output is incomplete from here on", out_name(),
		     strerror(out_errno));
	}
	clearerr(f);
	if (out_file)
		clearerr(out_file);
}

int jsonl_open(const char *path)
{
	out_path = NULL;
	if (path && strcmp(path, "-")) {
		if (strlen(path) >= sizeof out_path_buf) {
			LOGE("--out: path too long (%zu bytes)", strlen(path));
			return -1;
		}
		strcpy(out_path_buf, path);
		out_path = out_path_buf;
	}
	out_errno = 0;
	out_failed_flushes = 0;
	if (!out_path) {
		out_file = stdout;
		out_f = wrapped(stdout, 0);
		return 0;
	}
	out_file = fopen(out_path, "a");
	out_f = wrapped(out_file, 1);
	if (!out_f) {
		LOGE("--out %s: cannot open: %s", out_path, strerror(errno));
		return -1;
	}
	return 0;
}

int jsonl_reopen(void)
{
	if (!out_path)
		return 0;
	pthread_mutex_lock(&out_lock);
	FILE *f = fopen(out_path, "a");
	int e = errno;
	if (f) {
		out_flush(out_f);
		fclose(out_f);
		out_file = f;
		out_f = wrapped(f, 1);
	}
	pthread_mutex_unlock(&out_lock);
	if (!f) {
		LOGE("--out %s: cannot reopen: %s; still writing to the old file", out_path, strerror(e));
		return -1;
	}
	return 0;
}

int jsonl_close(void)
{
	pthread_mutex_lock(&out_lock);
	if (out_f) {
		out_flush(out_f);
		if (out_f != stdout && fclose(out_f) && !out_errno) {
			out_errno = errno ? errno : EIO;
			LOGE("--out %s: closing: %s", out_name(), strerror(out_errno));
		}
	}
	int failed = out_errno != 0;
	if (out_failed_flushes)
		LOGE("--out %s: %lu writes failed (first: %s): the file lacks lines", out_name(),
		     out_failed_flushes, strerror(out_errno));
	out_f = NULL;
	out_file = NULL;
	out_errno = 0;
	out_failed_flushes = 0;
	pthread_mutex_unlock(&out_lock);
	return failed ? -1 : 0;
}

FILE *jsonl_begin(void)
{
	pthread_mutex_lock(&out_lock);
	if (!out_f) {
		pthread_mutex_unlock(&out_lock);
		return NULL;
	}
	return out_f;
}

void jsonl_end(void)
{
	if (out_f)
		out_flush(out_f);
	pthread_mutex_unlock(&out_lock);
}


#define put_str pulse_json_put_str
#define gap_names agent_gap_names

void jsonl_window(const struct agent_nic *n, const struct pulse_window *w, uint32_t gap,
		  double poll_s)
{
	pthread_mutex_lock(&out_lock);
	FILE *f = out_f;
	if (!f) {
		pthread_mutex_unlock(&out_lock);
		return;
	}
	const struct clock_sync *cs = &n->cs;
	fputs("{\"type\":\"window\",\"nic\":", f);
	put_str(f, n->name);
	fprintf(f, ",\"t_ns\":%" PRIu64 ",\"window_seq\":%u,\"host_start_ns\":%" PRIu64
		   ",\"host_end_ns\":%" PRIu64 ",\"clock_err_ns\":%" PRIu64 ",\"nic_start_ns\":%" PRIu64
		   ",\"nic_end_ns\":%" PRIu64 ",\"epoch_ns\":%u,\"complete\":%s,\"pages_missing\":%u,\"gap\":[",
		agent_realtime_ns(), w->window_seq, clock_sync_to_host(cs, w->nic_start_ns),
		clock_sync_to_host(cs, w->nic_end_ns), cs->err_ns, w->nic_start_ns, w->nic_end_ns,
		w->epoch_ns, w->complete ? "true" : "false", w->pages_missing);
	int first = 1;
	for (int i = 0; i < GAP_KINDS; i++)
		if (gap & (1u << i)) {
			fprintf(f, "%s\"%s\"", first ? "" : ",", gap_names[i]);
			first = 0;
		}
	fprintf(f, "],\"upload_bytes\":%u,\"upload_exchanges\":%u,\"poll_ms\":%.3f,\"flows\":%u,\"qps\":[",
		w->upload_bytes, w->upload_exchanges, poll_s * 1e3, w->flow_count);
	uint64_t start = clock_sync_to_host(cs, w->nic_start_ns);
	for (uint32_t i = 0; i < w->flow_count; i++) {
		const struct pulse_qp_series *s = &w->flows[i];
		uint64_t peak = 0;
		for (uint32_t k = 0; k < s->count; k++)
			if (s->bytes[k] > peak)
				peak = s->bytes[k];
		double ep = w->epoch_ns ? (double)w->epoch_ns : 1;
		double peak_gbps = (double)peak * 8 / ep;
		double mean_gbps = s->count ? (double)s->total_bytes * 8 / (ep * s->count) : 0;
		uint64_t s0 = s->count ? start + (uint64_t)s->epoch[0] * w->epoch_ns : 0;
		uint64_t s1 = s->count ? start + ((uint64_t)s->epoch[s->count - 1] + 1) * w->epoch_ns : 0;
		fprintf(f, "%s{\"qpn\":%u,\"bytes\":%" PRIu64 ",\"active_epochs\":%u,\"peak_epoch_bytes\":%" PRIu64
			   ",\"peak_gbps\":%.4f,\"mean_gbps\":%.4f,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}",
			i ? "," : "", s->qpn, s->total_bytes, s->count, peak, peak_gbps, mean_gbps, s0, s1);
	}
	fputs("]}\n", f);
	out_flush(f);
	pthread_mutex_unlock(&out_lock);
}

void jsonl_poll_end(uint64_t settled_ns)
{
	pthread_mutex_lock(&out_lock);
	FILE *f = out_f;
	if (f) {
		fprintf(f, "{\"type\":\"poll_end\",\"t_ns\":%" PRIu64 ",\"settled_ns\":\"%" PRIu64 "\"}\n",
			agent_realtime_ns(), settled_ns);
		out_flush(f);
	}
	pthread_mutex_unlock(&out_lock);
}

void jsonl_join_wait(uint32_t windows, uint32_t qps)
{
	pthread_mutex_lock(&out_lock);
	FILE *f = out_f;
	if (f) {
		fprintf(f, "{\"type\":\"join_wait\",\"t_ns\":%" PRIu64 ",\"windows\":%u,\"qps\":%u}\n",
			agent_realtime_ns(), windows, qps);
		out_flush(f);
	}
	pthread_mutex_unlock(&out_lock);
}

void jsonl_event(const struct agent_nic *n, const char *event, const char *detail)
{
	pthread_mutex_lock(&out_lock);
	FILE *f = out_f;
	if (f) {
		fputs("{\"type\":\"event\",\"nic\":", f);
		put_str(f, n->name);
		fprintf(f, ",\"t_ns\":%" PRIu64 ",\"event\":", agent_realtime_ns());
		put_str(f, event);
		fputs(",\"detail\":", f);
		put_str(f, detail ? detail : "");
		fputs("}\n", f);
		out_flush(f);
	}
	pthread_mutex_unlock(&out_lock);
}
