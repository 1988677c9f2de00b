/* Many threads through libpulse-hook.so at once, with a reader draining the
 * ring while they run (as the agent does): every call recorded once, each
 * communicator's sequence complete and in order, group brackets per thread.
 * Built twice: plain, and (tests/tsan/) against a TSan build of the hook
 * and of the workload, so the hook's own concurrency runs under TSan. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pulse/hook_ring.h"

#define THREADS 8
static char g_exe[4200], g_preload[8400], g_libdir[4200];
static long g_calls = 100000;

struct per_comm {
	uint64_t id;
	uint32_t tid;
	uint64_t next_seq;
	uint64_t group;    /* open group id, 0 none */
	uint64_t allreduce, send, recv, groups;
};

static void test_threads_through_hook(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", g_preload, 1);
		/* The stand-in verbs, not a system libibverbs.so.1: under TSan,
		 * dlopen runs from the sanitizer's interceptor, and the stand-in
		 * NCCL's RUNPATH no longer applies. */
		setenv("LD_LIBRARY_PATH", g_libdir, 1);
		setenv("PULSE_HOOK_RING_RECORDS", "1048576", 1);
		setenv("PULSE_HOOK_KEEP_RING", "1", 1);
		char calls[32];
		snprintf(calls, sizeof calls, "%ld", g_calls);
		execl(g_exe, g_exe, "8", calls, (char *)NULL);
		_exit(127);
	}
	struct pulse_hook_ring *r = NULL;
	for (int i = 0; i < 50000 && !r; i++)
		if (pulse_hook_ring_open(pid, &r) != 0) {
			r = NULL;
			usleep(100);
		}
	assert_non_null(r);
	static struct per_comm c[THREADS];
	memset(c, 0, sizeof c);
	int nc = 0, status = 0, exited = 0, bad = 0;
	uint64_t total = 0, last_group = 0;
	static struct pulse_hook_record buf[4096];
	for (;;) {
		size_t n = pulse_hook_ring_drain(r, buf, 4096);
		for (size_t i = 0; i < n && !bad; i++) {
			const struct pulse_hook_record *x = &buf[i];
			struct per_comm *p = NULL;
			for (int k = 0; k < nc; k++)
				if (c[k].tid == x->tid)
					p = &c[k];
			if (x->kind == PULSE_HOOK_QP_CREATE || x->kind == PULSE_HOOK_QP_RTR ||
			    x->kind == PULSE_HOOK_QP_DESTROY)
				continue;
			if (x->kind == PULSE_HOOK_COMM_INIT) {
				if (p || nc == THREADS) { bad = 1; break; }
				p = &c[nc++];
				p->id = x->u.comm.comm_id;
				p->tid = x->tid;
				continue;
			}
			if (!p) { bad = 2; break; }
			if (x->kind == PULSE_HOOK_GROUP_START) {
				if (p->group || x->u.group.group_id <= 0) { bad = 3; break; }
				p->group = x->u.group.group_id;
				p->groups++;
				if (x->u.group.group_id > last_group)
					last_group = x->u.group.group_id;
			} else if (x->kind == PULSE_HOOK_GROUP_END) {
				if (p->group != x->u.group.group_id) { bad = 4; break; }
				p->group = 0;
			} else if (x->kind == PULSE_HOOK_OP) {
				if (x->u.op.comm_id != p->id || x->u.op.seq != p->next_seq++ ||
				    x->u.op.group_id != p->group || x->u.op.result != 0) { bad = 5; break; }
				if (x->u.op.type == PULSE_HOOK_OP_ALLREDUCE) {
					p->allreduce++;
					if (x->u.op.count != (uint64_t)(p - c) + 1 && x->u.op.stream != x->u.op.count)
						bad = 6;
				} else if (x->u.op.type == PULSE_HOOK_OP_SEND) {
					p->send++;
				} else if (x->u.op.type == PULSE_HOOK_OP_RECV) {
					p->recv++;
				}
			}
		}
		total += n;
		if (bad)
			break;
		if (n == 0) {
			if (exited)
				break;
			if (waitpid(pid, &status, WNOHANG) == pid)
				exited = 1; /* one more drain */
			else
				usleep(200);
		}
	}
	if (!exited)
		waitpid(pid, &status, 0);
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(r, &st);
	pulse_hook_ring_close(r, 1);
	print_message("threads: %lu records, %d communicators, %lu dropped, check %d\n",
		      (unsigned long)total, nc, (unsigned long)(st.dropped_full + st.dropped_no_reader), bad);
	assert_int_equal(bad, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(nc, THREADS);
	assert_int_equal(st.dropped_full + st.dropped_no_reader, 0);
	uint64_t per_groups = (uint64_t)g_calls / 100;
	for (int k = 0; k < THREADS; k++) {
		assert_int_equal(c[k].allreduce, g_calls);
		assert_int_equal(c[k].groups, per_groups);
		assert_int_equal(c[k].send, per_groups);
		assert_int_equal(c[k].recv, per_groups);
		assert_int_equal(c[k].group, 0);
		for (int j = 0; j < k; j++)
			assert_int_not_equal(c[j].id, c[k].id);
	}
	assert_int_equal(last_group, THREADS * per_groups); /* group ids unique across threads */
}

int main(void)
{
	char self[4000];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0)
		return 1;
	self[k] = '\0';
	*strrchr(self, '/') = '\0';
	const char *v = getenv("PULSE_STRESS_CALLS");
	if (v)
		g_calls = atol(v);
	snprintf(g_libdir, sizeof g_libdir, "%s/%shook", self, strstr(self, "/tsan") ? "../" : "");
	if (strstr(self, "/tsan")) { /* build/tests/tsan */
		g_calls = v ? g_calls : 20000;
		snprintf(g_exe, sizeof g_exe, "%s/../hook/tsan/threads", self);
		snprintf(g_preload, sizeof g_preload, "%s/../../lib/tsan/libpulse-hook.so", self);
	} else {
		snprintf(g_exe, sizeof g_exe, "%s/hook/threads", self);
		snprintf(g_preload, sizeof g_preload, "%s/../lib/libpulse-hook.so", self);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_through_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
