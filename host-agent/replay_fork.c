/* pulse-host-agent --replay DIR --bus: a sim/run_cluster run published to
 * the bus as the agents of a real cluster would publish it. Every host is
 * replayed by a process of its own (a child per host, each with its own
 * connection, queue and message ids), concurrently, so that the job's
 * stream interleaves the hosts' polls the way live agents do; with --speed
 * each paces its polls on the same origin (the run's first interception
 * record, at the parent's start), so the stream fills at X times real time
 * and a test can act (kill an analyzer, a server) before a failure's onset. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "agent.h"

#define MAX_CHILDREN 1024

/* the run's host names, from DIR/cluster.json; their count, or -1 (logged) */
static int host_names(const char *dir, char (**names)[64])
{
	char path[4096];
	snprintf(path, sizeof path, "%s/cluster.json", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		LOGE("--replay %s: cannot open %s: %s", dir, path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	char chunk[65536];
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (len + n > cap) {
			cap = (len + n) * 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				LOGE("out of memory");
				return -1;
			}
			buf = nb;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	fclose(f);
	cJSON *o = cJSON_ParseWithLength(buf ? buf : "", len);
	free(buf);
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(o, "hosts");
	int count = cJSON_IsArray(hosts) ? cJSON_GetArraySize(hosts) : 0;
	if (count <= 0 || count > MAX_CHILDREN) {
		LOGE("--replay %s: cluster.json has %s", dir,
		     count > MAX_CHILDREN ? "more hosts than one process may replay" : "no \"hosts\" array");
		cJSON_Delete(o);
		return -1;
	}
	*names = calloc((size_t)count, sizeof **names);
	int k = 0;
	const cJSON *h;
	cJSON_ArrayForEach(h, hosts)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(h, "name");
		if (!*names || !cJSON_IsString(nm) || !nm->valuestring[0] || strlen(nm->valuestring) >= 64) {
			LOGE("--replay %s: %s", dir, *names ? "a host without a usable \"name\"" : "out of memory");
			free(*names);
			cJSON_Delete(o);
			return -1;
		}
		snprintf((*names)[k++], 64, "%s", nm->valuestring);
	}
	cJSON_Delete(o);
	return count;
}

int agent_replay_fork(struct agent *a, int (*one)(struct agent *a))
{
	char(*names)[64] = NULL;
	int n = host_names(a->opt.replay_dir, &names);
	if (n < 0)
		return 2;
	static pid_t pids[MAX_CHILDREN];
	a->pace_wall0 = agent_mono_ns();
	LOGI("replay %s to the bus: %d hosts, one process each%s", a->opt.replay_dir, n,
	     a->opt.replay_speed > 0 ? "" : ", as fast as they go");
	fflush(NULL);
	int started = 0, status = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0) {
			LOGE("fork: %s; the hosts from %s on are not replayed", strerror(errno), names[i]);
			status = 1;
			break;
		}
		if (p == 0) {
			a->opt.replay_host = names[i];
			a->opt.replay_child = 1;
			fflush(NULL);
			_exit(one(a));
		}
		pids[started++] = p;
	}
	int left = started, signalled = 0;
	while (left > 0) {
		int ws;
		pid_t p = waitpid(-1, &ws, 0);
		if (p < 0 && errno == EINTR) {
			if (agent_sig_term && !signalled) { /* pass a stop on to every host */
				for (int i = 0; i < started; i++)
					if (pids[i])
						kill(pids[i], SIGTERM);
				signalled = 1;
			}
			continue;
		}
		if (p < 0)
			break;
		for (int i = 0; i < started; i++)
			if (pids[i] == p) {
				int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
				if (rc)
					LOGW("replay of host %s ended with status %d%s", names[i], rc,
					     WIFSIGNALED(ws) ? " (killed by a signal)" : "");
				if (rc > status)
					status = rc;
				pids[i] = 0;
				left--;
			}
	}
	free(names);
	return status;
}

void agent_replay_pace(struct agent *a, uint64_t t_ns)
{
	if (a->opt.replay_speed <= 0 || a->pace_t0 == UINT64_MAX || t_ns <= a->pace_t0)
		return;
	if (!a->pace_wall0)
		a->pace_wall0 = agent_mono_ns();
	uint64_t due = a->pace_wall0 + (uint64_t)((double)(t_ns - a->pace_t0) / a->opt.replay_speed);
	struct timespec ts = {.tv_sec = (time_t)(due / 1000000000u), .tv_nsec = (long)(due % 1000000000u)};
	while (!agent_sig_term && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
