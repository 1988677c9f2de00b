/* pulse-analyzer --replay DIR: the host agents' output of a run_cluster
 * directory (include/pulse/cluster_run.h), fed through the analyzer in
 * data-time order.
 *
 * The agents' output is DIR/agent/<host>.jsonl (or --agent-out DIR2). When
 * a host's file is not there, `pulse-host-agent --replay DIR --host H --out
 * FILE` is run for it (the binary next to this one, else from $PATH), two
 * hosts at a time. The hosts come from DIR/cluster.json.
 *
 * Time order: every line gets a data-time key in its host's clock: op
 * records their last byte (or call), window lines their end, hook lines
 * their call; other lines (mappings, events) and op records written at a
 * poll keep the host's latest key, so a record is never earlier than the
 * poll that delivered it (collection latency is part of the report). The
 * hosts' files are merged by key, and the analyzer's clock advances with
 * it (an_tick): the data-time watermark of include/pulse/watermark.h, the
 * same clock the live service runs on. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "an_internal.h"
#include "direction.h"
#include "pulse/cluster_run.h"
#include "pulse/watermark.h"

struct src {
	char host[PULSE_OP_HOST_LEN];
	char path[PATH_MAX];
	FILE *f;
	char *line;
	size_t cap;
	ssize_t len;
	uint64_t lines;
	int eof;
};

static char *slurp(const char *path, size_t max, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(max + 1);
	size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
	fclose(f);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (n > max) {
		snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* hosts of DIR/cluster.json */
static int read_hosts(const char *dir, char (**names)[PULSE_OP_HOST_LEN], int *n, char *err,
		      size_t errlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/cluster.json", dir);
	char *text = slurp(path, 16u << 20, err, errlen);
	if (!text)
		return -1;
	cJSON *o = cJSON_Parse(text);
	free(text);
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "format");
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(o, "hosts");
	if (!cJSON_IsObject(o) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, PULSE_CLUSTER_FORMAT) ||
	    !cJSON_IsArray(hosts)) {
		snprintf(err, errlen, "%s: not a run_cluster description (format \"%s\" with a hosts array)",
			 path, PULSE_CLUSTER_FORMAT);
		cJSON_Delete(o);
		return -1;
	}
	int cnt = cJSON_GetArraySize(hosts);
	*names = calloc((size_t)(cnt ? cnt : 1), sizeof **names);
	if (!*names) {
		cJSON_Delete(o);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int k = 0;
	const cJSON *h;
	cJSON_ArrayForEach(h, hosts)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(h, "name");
		if (!cJSON_IsString(nm) || !nm->valuestring[0] || strlen(nm->valuestring) >= PULSE_OP_HOST_LEN ||
		    strchr(nm->valuestring, '/') || nm->valuestring[0] == '.') {
			snprintf(err, errlen, "%s: host %d has no usable name", path, k);
			cJSON_Delete(o);
			free(*names);
			return -1;
		}
		strcpy((*names)[k++], nm->valuestring);
	}
	cJSON_Delete(o);
	*n = k;
	if (!k) {
		snprintf(err, errlen, "%s: no hosts", path);
		free(*names);
		return -1;
	}
	return 0;
}

static void find_agent(const struct an_replay_opts *o, char *out, size_t n)
{
	if (o->agent_bin) {
		snprintf(out, n, "%s", o->agent_bin);
		return;
	}
	char self[PATH_MAX - 64];
	ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
	if (l > 0) {
		self[l] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(out, n, "%s/pulse-host-agent", self);
			if (access(out, X_OK) == 0)
				return;
			/* build tree: tests run the ASan analyzer from build/tests */
			snprintf(out, n, "%s/../bin/pulse-host-agent", self);
			if (access(out, X_OK) == 0)
				return;
		}
	}
	snprintf(out, n, "pulse-host-agent");
}

static pid_t spawn_agent(const char *bin, const char *dir, const char *host, const char *out, const char *log)
{
	pid_t pid = fork();
	if (pid)
		return pid;
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	execlp(bin, bin, "--replay", dir, "--host", host, "--out", out, (char *)NULL);
	fprintf(stderr, "pulse-analyzer: cannot run %s: %s\n", bin, strerror(errno));
	_exit(127);
}

static int run_agents(const struct an_replay_opts *o, const char *outdir, struct src *srcs, int n,
		      char *err, size_t errlen)
{
	char bin[PATH_MAX];
	find_agent(o, bin, sizeof bin);
	int next = 0, running = 0, failed = -1, status_bad = 0;
	pid_t pids[2] = { 0, 0 };
	int who[2] = { -1, -1 };
	int *retries = calloc((size_t)n, sizeof *retries);
	if (!retries) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	while (next < n || running) {
		while (running < 2 && next < n) {
			if (access(srcs[next].path, R_OK) == 0) {
				next++;
				continue;
			}
			char tmp[PATH_MAX + 96], log[PATH_MAX + 96];
			snprintf(tmp, sizeof tmp, "%s.part", srcs[next].path);
			snprintf(log, sizeof log, "%s/%s.log", outdir, srcs[next].host);
			unlink(tmp);
			if (!o->quiet)
				fprintf(stderr, "pulse-analyzer: running %s --replay %s --host %s\n", bin, o->dir,
					srcs[next].host);
			int slot = pids[0] ? 1 : 0;
			pids[slot] = spawn_agent(bin, o->dir, srcs[next].host, tmp, log);
			if (pids[slot] < 0) {
				snprintf(err, errlen, "fork: %s", strerror(errno));
				pids[slot] = 0;
				free(retries);
				return -1;
			}
			who[slot] = next++;
			running++;
		}
		if (!running)
			break;
		int st;
		pid_t p = wait(&st);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			if (pids[k] != p)
				continue;
			pids[k] = 0;
			running--;
			struct src *x = &srcs[who[k]];
			char tmp[PATH_MAX + 96];
			snprintf(tmp, sizeof tmp, "%s.part", x->path);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && retries[who[k]] < 3) {
				/* the binary could not be executed (e.g. being rebuilt
				 * this very moment): try again shortly */
				retries[who[k]]++;
				sleep(1);
				char log2[PATH_MAX + 96];
				snprintf(log2, sizeof log2, "%s/%s.log", outdir, x->host);
				pids[k] = spawn_agent(bin, o->dir, x->host, tmp, log2);
				if (pids[k] > 0) {
					running++;
					continue;
				}
				pids[k] = 0;
			}
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
				if (rename(tmp, x->path)) {
					snprintf(err, errlen, "%s: %s", x->path, strerror(errno));
					failed = who[k];
				}
			} else if (failed < 0) {
				failed = who[k];
				status_bad = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
		}
	}
	free(retries);
	if (failed >= 0) {
		if (!err[0])
			snprintf(err, errlen,
				 "%s --replay %s --host %s failed (status %d); its log is %s/%s.log%s", bin, o->dir,
				 srcs[failed].host, status_bad, outdir, srcs[failed].host,
				 status_bad == 127 ? " (is pulse-host-agent built? `make`)" : "");
		return -1;
	}
	return 0;
}

static void src_next(struct src *x)
{
	x->len = getline(&x->line, &x->cap, x->f);
	if (x->len < 0) {
		x->eof = 1;
		return;
	}
	x->lines++;
}

/* The replay is the watermark's pull-driven case: the host it waits for
 * gives its next line. */
struct replay_ctx {
	struct an_state *s;
	uint64_t lines, bad;
};

static void wm_tick(void *ctx, uint64_t now_ns)
{
	an_tick(((struct replay_ctx *)ctx)->s, now_ns);
}

static void wm_deliver(void *ctx, const char *host, const char *line, size_t len)
{
	struct replay_ctx *r = ctx;
	char lerr[256];
	if (an_ingest(r->s, host, line, len, lerr, sizeof lerr) < 0)
		r->bad++;
	r->lines++;
	an_tick_if_settled(r->s);
}

int an_replay(struct an_state *s, const struct an_replay_opts *o, char *err, size_t errlen)
{
	err[0] = '\0';
	struct stat sb;
	if (!o->dir || stat(o->dir, &sb) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "--replay %s: not a directory", o->dir ? o->dir : "(none)");
		return -1;
	}
	char (*names)[PULSE_OP_HOST_LEN] = NULL;
	int n = 0;
	if (read_hosts(o->dir, &names, &n, err, errlen))
		return -1;
	char outdir[PATH_MAX - 128];
	if (o->agent_out)
		snprintf(outdir, sizeof outdir, "%s", o->agent_out);
	else
		snprintf(outdir, sizeof outdir, "%s/agent", o->dir);
	struct src *srcs = calloc((size_t)n, sizeof *srcs);
	if (!srcs) {
		free(names);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int need = 0;
	for (int i = 0; i < n; i++) {
		snprintf(srcs[i].host, sizeof srcs[i].host, "%s", names[i]);
		snprintf(srcs[i].path, sizeof srcs[i].path, "%s/%s.jsonl", outdir, names[i]);
		need += access(srcs[i].path, R_OK) != 0;
	}
	free(names);
	int rc = -1;
	if (need) {
		if (mkdir(outdir, 0755) && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s (use --agent-out DIR for a writable place)", outdir,
				 strerror(errno));
			goto out;
		}
		if (run_agents(o, outdir, srcs, n, err, errlen))
			goto out;
	}
	struct replay_ctx rc_ = {.s = s};
	static const struct pulse_wm_ops wm_ops = {.tick = wm_tick, .deliver = wm_deliver};
	struct pulse_wm *wm = pulse_wm_new(&wm_ops, &rc_, 0);
	if (!wm) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		srcs[i].f = fopen(srcs[i].path, "r");
		if (!srcs[i].f || pulse_wm_host(wm, srcs[i].host, 0) != i) {
			snprintf(err, errlen, "%s: %s", srcs[i].path, srcs[i].f ? "host name too long" : strerror(errno));
			pulse_wm_free(wm);
			goto out;
		}
	}
	for (;;) {
		int need = pulse_wm_starving(wm);
		if (need < 0) {
			if (!pulse_wm_advance(wm, 0))
				break;
			continue;
		}
		struct src *x = &srcs[need];
		src_next(x);
		if (x->eof)
			pulse_wm_end(wm, x->host);
		else if (pulse_wm_push(wm, x->host, x->line, (size_t)x->len, 0)) {
			snprintf(err, errlen, "out of memory");
			pulse_wm_free(wm);
			goto out;
		}
	}
	pulse_wm_flush(wm);
	pulse_wm_free(wm);
	uint64_t lines = rc_.lines, bad = rc_.bad;
	an_finish(s);
	char bin[PATH_MAX];
	find_agent(o, bin, sizeof bin);
	an_dir_fetch_replay(s, o, bin, outdir);
	if (!o->quiet)
		fprintf(stderr, "pulse-analyzer: replayed %" PRIu64 " lines from %d hosts (%" PRIu64
				" not usable, see the counters)\n",
			lines, n, bad);
	rc = 0;
out:
	for (int i = 0; i < n; i++) {
		if (srcs[i].f)
			fclose(srcs[i].f);
		free(srcs[i].line);
	}
	free(srcs);
	return rc;
}
