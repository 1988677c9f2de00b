/* Interception benchmarks (make bench -> build/bench/hook.md):
 *  1. ns per intercepted call, no hook vs hook side by side (alternating
 *     runs of the same workload, bench_calls, on the stand-in NCCL), with a
 *     reader draining the ring as the agent would, with no reader (ring
 *     full: the drop path), and with PULSE_HOOK_DISABLE=1;
 *  2. records per second through the ring: 1 and 8 producer threads, one
 *     consumer, in one process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pulse/hook_ring.h"

static char g_dir[4000], g_hook[4100];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* mode: 0 no hook, 1 hook + reader, 2 hook no reader, 3 hook disabled */
static int run_calls(int mode, long n, double *ar, double *send, unsigned long *drained,
		     unsigned long *dropped)
{
	int pfd[2];
	if (pipe(pfd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		if (mode != 0)
			setenv("LD_PRELOAD", g_hook, 1);
		if (mode == 3)
			setenv("PULSE_HOOK_DISABLE", "1", 1);
		if (mode == 2)
			setenv("PULSE_HOOK_KEEP_RING", "1", 1); /* read its drop count after */
		setenv("PULSE_HOOK_RING_RECORDS", "65536", 1);
		char path[4100], ns[32];
		snprintf(path, sizeof path, "%s/bench_calls", g_dir);
		snprintf(ns, sizeof ns, "%ld", n);
		execl(path, path, ns, mode == 1 ? "300" : "0", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	struct pulse_hook_ring *r = NULL;
	static struct pulse_hook_record buf[4096];
	*drained = 0;
	if (mode == 1) {
		for (int i = 0; i < 2000 && !r; i++) {
			if (pulse_hook_ring_open(pid, &r) != 0) {
				r = NULL;
				usleep(100);
			}
		}
		int st;
		for (;;) {
			size_t k = pulse_hook_ring_drain(r, buf, 4096);
			*drained += k;
			if (k == 0) {
				if (waitpid(pid, &st, WNOHANG) == pid) {
					*drained += pulse_hook_ring_drain(r, buf, 4096);
					pid = -1;
					break;
				}
				usleep(50);
			}
		}
	}
	char out[1024] = { 0 };
	size_t used = 0;
	ssize_t k;
	while (used < sizeof out - 1 && (k = read(pfd[0], out + used, sizeof out - 1 - used)) > 0)
		used += (size_t)k;
	close(pfd[0]);
	const char *line = strstr(out, "allreduce_ns");
	if (pid > 0)
		waitpid(pid, NULL, 0);
	if (mode == 2 && pulse_hook_ring_open(pid, &r) != 0)
		r = NULL;
	*dropped = 0;
	if (r) {
		struct pulse_hook_ring_stats st;
		pulse_hook_ring_stats(r, &st);
		*dropped = st.dropped_full + st.dropped_no_reader;
		pulse_hook_ring_close(r, 1);
	}
	if (!line || sscanf(line, "allreduce_ns %lf send_ns %lf", ar, send) != 2)
		return -1;
	return 0;
}

struct prod {
	struct pulse_hook_ring *r;
	long n;
	atomic_int *done;
};

static void *producer(void *arg)
{
	struct prod *p = arg;
	struct pulse_hook_record rec;
	memset(&rec, 0, sizeof rec);
	rec.kind = PULSE_HOOK_OP;
	for (long i = 0; i < p->n; i++) {
		rec.u.op.seq = (uint64_t)i;
		while (pulse_hook_ring_push(p->r, &rec) != 0)
			; /* measure throughput, not drops: retry */
	}
	atomic_fetch_add(p->done, 1);
	return NULL;
}

static double ring_rate(int threads, long per_thread)
{
	struct pulse_hook_ring *r = pulse_hook_ring_create_private(65536);
	if (!r)
		return 0;
	atomic_int done = 0;
	struct prod p = { r, per_thread, &done };
	pthread_t th[8];
	static struct pulse_hook_record buf[4096];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, producer, &p);
	long got = 0, total = (long)threads * per_thread;
	while (got < total)
		got += (long)pulse_hook_ring_drain(r, buf, 4096);
	double t = now() - t0;
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	pulse_hook_ring_close(r, 0);
	return total / (t / 1e9);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	char self[3900];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0)
		return 1;
	self[k] = '\0';
	*strrchr(self, '/') = '\0'; /* build/bench */
	snprintf(g_dir, sizeof g_dir, "%s/../tests/hook", self);
	snprintf(g_hook, sizeof g_hook, "%s/../lib/libpulse-hook.so", self);
	const long n = 1000000;
	const int reps = 5;
	static const char *const names[] = { "no hook", "hook, agent draining the ring",
		"hook, no reader (ring full: drop path)", "hook loaded, PULSE_HOOK_DISABLE=1" };
	double ar[4][8], sd[4][8];
	unsigned long drained[4] = { 0 }, dropped[4] = { 0 };
	for (int rep = 0; rep < reps; rep++)
		for (int m = 0; m < 4; m++) /* alternate: side by side */
			if (run_calls(m, n, &ar[m][rep], &sd[m][rep], &drained[m], &dropped[m]) != 0) {
				fprintf(stderr, "bench_hook: run failed (mode %d)\n", m);
				return 1;
			}
	printf("### ns per call (median of %d alternating runs, %ld calls each, stand-in NCCL)\n\n", reps, n);
	printf("| configuration | ncclAllReduce ns/call | ncclSend (in a group) ns/call | records drained / dropped (last run) |\n|---|---|---|---|\n");
	for (int m = 0; m < 4; m++) {
		qsort(ar[m], reps, sizeof(double), cmp);
		qsort(sd[m], reps, sizeof(double), cmp);
		printf("| %s | %.1f | %.1f | %lu / %lu |\n", names[m], ar[m][reps / 2], sd[m][reps / 2],
		       drained[m], dropped[m]);
	}
	printf("\nAdded by the hook with an agent draining: %.1f ns (AllReduce), %.1f ns (Send).\n\n",
	       ar[1][reps / 2] - ar[0][reps / 2], sd[1][reps / 2] - sd[0][reps / 2]);
	printf("### Records per second through the ring (one process, 65536 slots, one consumer)\n\n");
	printf("| producers | M records/s |\n|---|---|\n");
	int tcount[] = { 1, 2, 8 };
	for (int i = 0; i < 3; i++) {
		double best = 0;
		for (int rep = 0; rep < 3; rep++) {
			double v = ring_rate(tcount[i], 4000000 / tcount[i]);
			best = v > best ? v : best;
		}
		printf("| %d | %.1f |\n", tcount[i], best / 1e6);
	}
	return 0;
}
