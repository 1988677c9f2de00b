/* pulse-cluster-serve: the training processes. Each is a live child
 * process that creates its interception ring with the writer
 * libpulse-hook.so uses (pulse_hook_ring_create / pulse_hook_ring_push,
 * hook/ring.c, linked from libpulse_hookring.a), so the ring is
 * /dev/shm/pulse-hook.<its pid> and the host agent finds, attaches, drains
 * and, once the child is gone, removes it with its ordinary code. The
 * child writes the records of its .rec file at their times: pid and tid
 * become its own (the proxy thread keeps its offset), host times move by
 * the clock's shift. It stays alive after its last record, as a process of
 * a hung job would, until it is told to stop (SIGTERM) or its parent dies;
 * like the hook, it removes its ring at exit only when no agent ever
 * attached. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster_serve.h"
#include "pulse/clock_ns.h"
#include "pulse/cluster_run.h"
#include "pulse/hook_ring.h"

static volatile sig_atomic_t child_stop;
static void on_term(int sig)
{
	(void)sig;
	child_stop = 1;
}

static struct pulse_hook_record *load(const char *path, size_t *n, uint32_t *pid, char *err,
				      size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	uint8_t hdr[PULSE_HKR_HEADER_SIZE];
	uint16_t hs;
	if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || pulse_hkr_check_header(hdr, sizeof hdr, &hs, pid) ||
	    fseek(f, hs, SEEK_SET)) {
		snprintf(err, errlen, "%s: not a hook record file this program knows (PULSEHKR v%u)", path,
			 PULSE_HKR_VERSION);
		fclose(f);
		return NULL;
	}
	size_t cap = 1024, k = 0;
	struct pulse_hook_record *r = malloc(cap * sizeof *r);
	while (r) {
		if (k == cap) {
			struct pulse_hook_record *nr = realloc(r, 2 * cap * sizeof *r);
			if (!nr) {
				free(r);
				r = NULL;
				break;
			}
			r = nr;
			cap *= 2;
		}
		size_t got = fread(&r[k], 1, sizeof *r, f);
		if (got != sizeof *r) {
			if (got)
				fprintf(stderr, "pulse-cluster-serve: %s: a partial record at the end is "
						"ignored\n", path);
			break;
		}
		k++;
	}
	fclose(f);
	if (!r)
		snprintf(err, errlen, "%s: out of memory", path);
	*n = k;
	return r;
}

int cs_rank_scan(struct cs_rank *r, char *err, size_t errlen)
{
	size_t n;
	uint32_t pid;
	struct pulse_hook_record *recs = load(r->rec_path, &n, &pid, err, errlen);
	if (!recs)
		return -1;
	r->rec_pid = pid;
	r->last_ns = 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].time_ns > r->last_ns)
			r->last_ns = recs[i].time_ns;
	free(recs);
	return 0;
}

static void sleep_until(uint64_t mono_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(mono_ns / 1000000000u), .tv_nsec = (long)(mono_ns % 1000000000u)};
	while (!child_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void child(struct cs_rank *r, const struct cs_host *h, uint32_t ring_records, int ready_fd,
		  int clock_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	char err[4200];
	size_t n = 0;
	uint32_t rec_pid = 0;
	struct pulse_hook_record *recs = load(r->rec_path, &n, &rec_pid, err, sizeof err);
	pid_t me = getpid();
	struct pulse_hook_ring *ring = recs ? pulse_hook_ring_create(me, ring_records) : NULL;
	if (!ring) {
		fprintf(stderr, "pulse-cluster-serve: rank %u: %s\n", rec_pid,
			recs ? strerror(errno) : err);
		_exit(1);
	}
	pulse_hook_ring_set_hook_loaded(ring);
	char ok = 1;
	if (write(ready_fd, &ok, 1) != 1)
		_exit(1);
	close(ready_fd);
	/* the run's clock, once the parent has set everything up */
	struct cs_clock ck;
	size_t got = 0;
	while (got < sizeof ck && !child_stop) {
		ssize_t n = read(clock_fd, (char *)&ck + got, sizeof ck - got);
		if (n <= 0 && !(n < 0 && errno == EINTR))
			break;
		if (n > 0)
			got += (size_t)n;
	}
	close(clock_fd);
	if (got != sizeof ck) {
		pulse_hook_ring_close(ring, !pulse_hook_ring_reader_attached(ring));
		_exit(child_stop ? 0 : 1);
	}
	const struct cs_clock *clk = &ck;
	for (size_t i = 0; i < n && !child_stop; i++) {
		struct pulse_hook_record rec = recs[i];
		sleep_until(cs_wall_of(clk, h, rec.time_ns));
		if (child_stop)
			break;
		rec.tid = (uint32_t)me + (rec.tid - rec.pid);
		rec.pid = (uint32_t)me;
		rec.time_ns = (uint64_t)((int64_t)rec.time_ns + clk->shift);
		if (rec.kind == PULSE_HOOK_NET_QP)
			rec.u.net.last_ns = (uint64_t)((int64_t)rec.u.net.last_ns + clk->shift);
		pulse_hook_ring_push(ring, &rec); /* full: dropped and counted by the ring */
	}
	free(recs);
	while (!child_stop)
		pause(); /* a training process lives on after its last call */
	pulse_hook_ring_close(ring, !pulse_hook_ring_reader_attached(ring));
	_exit(0);
}

int cs_rank_start(struct cs_rank *r, const struct cs_host *h, uint32_t ring_records, char *err,
		  size_t errlen)
{
	int p[2], q[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(q, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		close(q[0]);
		close(q[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		close(q[1]);
		child(r, h, ring_records, p[1], q[0]);
	}
	close(p[1]);
	close(q[0]);
	r->clock_fd = q[1];
	char ok = 0;
	ssize_t got;
	while ((got = read(p[0], &ok, 1)) < 0 && errno == EINTR)
		;
	close(p[0]);
	r->pid = pid;
	r->ended = 0;
	if (got != 1) {
		waitpid(pid, &r->status, 0);
		r->ended = 1;
		snprintf(err, errlen, "the process for %s did not create its ring", r->rec_path);
		return -1;
	}
	return 0;
}

int cs_rank_go(struct cs_rank *r, const struct cs_clock *clk)
{
	ssize_t n = write(r->clock_fd, clk, sizeof *clk);
	close(r->clock_fd);
	r->clock_fd = -1;
	return n == (ssize_t)sizeof *clk ? 0 : -1;
}

int cs_ranks_reap(struct cs_rank *r, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (r[i].pid && !r[i].ended && waitpid(r[i].pid, &r[i].status, WNOHANG) == r[i].pid) {
			r[i].ended = 1;
			k++;
		}
	return k;
}

void cs_ranks_stop(struct cs_rank *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].pid && !r[i].ended)
			kill(r[i].pid, SIGTERM);
	for (int i = 0; i < n; i++)
		if (r[i].pid && !r[i].ended) {
			while (waitpid(r[i].pid, &r[i].status, 0) < 0 && errno == EINTR)
				;
			r[i].ended = 1;
		}
}
