/* The interception ring (include/pulse/hook_ring.h): order, full ring,
 * reader attach and layout checks, discovery, and the stress test:
 * 8 producer threads x PULSE_STRESS_CALLS (default 10^6, TSan too)
 * with a reader that keeps up (no record lost) and one that does not
 * (every lost record counted). Built plain and with TSan. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pulse/hook_ring.h"

#ifdef __SANITIZE_THREAD__
#define DEFAULT_CALLS 1000000ul
#else
#define DEFAULT_CALLS 1000000ul
#endif
#define THREADS 8

static unsigned long calls(void)
{
	const char *v = getenv("PULSE_STRESS_CALLS");
	return v ? strtoul(v, NULL, 10) : DEFAULT_CALLS;
}

static void mk(struct pulse_hook_record *r, uint32_t thread, uint64_t seq)
{
	memset(r, 0, sizeof *r);
	r->kind = PULSE_HOOK_OP;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->tid = thread;
	r->u.op.seq = seq;
	r->u.op.count = seq * 3 + thread; /* a payload to check */
}

static void test_order_and_full(void **state)
{
	(void)state;
	struct pulse_hook_ring *r = pulse_hook_ring_create_private(8);
	assert_non_null(r);
	struct pulse_hook_record rec, out[16];
	for (uint64_t i = 0; i < 8; i++) {
		mk(&rec, 0, i);
		assert_int_equal(pulse_hook_ring_push(r, &rec), 0);
	}
	mk(&rec, 0, 8);
	assert_int_equal(pulse_hook_ring_push(r, &rec), -1);
	assert_int_equal(pulse_hook_ring_pending(r), 8);
	assert_int_equal(pulse_hook_ring_drain(r, out, 3), 3);
	assert_int_equal(pulse_hook_ring_drain(r, out + 3, 16), 5);
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(out[i].u.op.seq, i);
	assert_int_equal(pulse_hook_ring_drain(r, out, 16), 0);
	/* Wraps around. */
	for (uint64_t i = 100; i < 106; i++) {
		mk(&rec, 0, i);
		assert_int_equal(pulse_hook_ring_push(r, &rec), 0);
	}
	assert_int_equal(pulse_hook_ring_drain(r, out, 16), 6);
	assert_int_equal(out[5].u.op.seq, 105);
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(r, &st);
	assert_int_equal(st.written, 14);
	assert_int_equal(st.consumed, 14);
	assert_int_equal(st.dropped_no_reader, 1);
	assert_int_equal(st.dropped_full, 0);
	pulse_hook_ring_close(r, 0);
	assert_null(pulse_hook_ring_create_private(6));
	assert_int_equal(errno, EINVAL);
	assert_null(pulse_hook_ring_create_private(1u << 23));
}

static void test_shared_attach_and_scan(void **state)
{
	(void)state;
	pid_t me = getpid();
	struct pulse_hook_ring *w = pulse_hook_ring_create(me, 4), *rd = NULL;
	assert_non_null(w);
	struct pulse_hook_record rec, out[8];
	mk(&rec, 1, 1);
	for (int i = 0; i < 5; i++)
		pulse_hook_ring_push(w, &rec);
	assert_int_equal(pulse_hook_ring_open(me, &rd), 0);
	assert_true(pulse_hook_ring_reader_attached(w));
	assert_int_equal(pulse_hook_ring_push(w, &rec), -1); /* still full, now with a reader */
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(rd, &st);
	assert_int_equal(st.dropped_no_reader, 1);
	assert_int_equal(st.dropped_full, 1);
	assert_int_equal(st.reader_pid, (uint32_t)me);
	assert_int_equal(st.pid, (uint32_t)me);
	assert_int_equal(pulse_hook_ring_drain(rd, out, 8), 4);
	pid_t pids[4];
	int n = pulse_hook_ring_scan(pids, 4);
	int found = 0;
	for (int i = 0; i < n && i < 4; i++)
		found |= pids[i] == me;
	assert_true(found);
	pulse_hook_ring_close(rd, 1);
	pulse_hook_ring_forget(w);
	assert_int_equal(pulse_hook_ring_open(me, &rd), -ENOENT);

	/* Not a ring: a reader refuses it instead of trusting it. */
	char name[64];
	snprintf(name, sizeof name, "/" PULSE_HOOK_RING_PREFIX "%d", (int)me);
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096 + 128 * 4), 0);
	char junk[256];
	memset(junk, 0x5a, sizeof junk);
	assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
	close(fd);
	assert_int_equal(pulse_hook_ring_open(me, &rd), -EPROTO);
	shm_unlink(name);
}

struct stress {
	struct pulse_hook_ring *w, *rd;
	unsigned long n;
	int throttle;
	atomic_int producers_done;
	uint64_t got;
	uint64_t last[THREADS];
	int bad;
};

static void *producer(void *arg)
{
	static atomic_uint next_id;
	struct stress *s = arg;
	uint32_t id = atomic_fetch_add(&next_id, 1) % THREADS;
	struct pulse_hook_record rec;
	uint32_t cap = 4096;
	for (unsigned long i = 1; i <= s->n; i++) {
		/* "The reader keeps up": a producer never gets more than half a
		 * ring ahead of it. */
		while (s->throttle && pulse_hook_ring_pending(s->w) > cap / 2)
			sched_yield();
		mk(&rec, id, i);
		pulse_hook_ring_push(s->w, &rec);
	}
	atomic_fetch_add(&s->producers_done, 1);
	return NULL;
}

static void drain_all(struct stress *s, int slow)
{
	static struct pulse_hook_record buf[1024];
	for (;;) {
		int done = atomic_load(&s->producers_done) == THREADS;
		size_t n = pulse_hook_ring_drain(s->rd, buf, slow ? 64 : 1024);
		for (size_t i = 0; i < n; i++) {
			uint32_t t = buf[i].tid;
			uint64_t q = buf[i].u.op.seq;
			if (t >= THREADS || q <= s->last[t] || buf[i].u.op.count != q * 3 + t ||
			    (!slow && q != s->last[t] + 1))
				s->bad++;
			if (t < THREADS)
				s->last[t] = q;
		}
		s->got += n;
		if (done && n == 0)
			break;
		if (slow) {
			struct timespec ts = { 0, 200000 };
			nanosleep(&ts, NULL);
		}
	}
}

static void run_stress(int throttle, int slow)
{
	pid_t me = getpid();
	struct stress *s = calloc(1, sizeof *s);
	assert_non_null(s);
	s->w = pulse_hook_ring_create(me, 4096);
	assert_non_null(s->w);
	assert_int_equal(pulse_hook_ring_open(me, &s->rd), 0);
	s->n = calls();
	s->throttle = throttle;
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, producer, s), 0);
	drain_all(s, slow);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	drain_all(s, 0 * slow); /* leftovers */
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(s->rd, &st);
	uint64_t total = (uint64_t)THREADS * s->n;
	print_message("stress: %lu calls, %lu received, %lu dropped (full), %d bad\n",
		      (unsigned long)total, (unsigned long)s->got, (unsigned long)st.dropped_full, s->bad);
	assert_int_equal(s->bad, 0);
	assert_int_equal(st.written, s->got);
	assert_int_equal(st.written + st.dropped_full + st.dropped_no_reader, total);
	if (throttle) {
		assert_int_equal(s->got, total);
		assert_int_equal(st.dropped_full, 0);
		for (int i = 0; i < THREADS; i++)
			assert_int_equal(s->last[i], s->n);
	} else {
		assert_true(st.dropped_full > 0);
	}
	pulse_hook_ring_close(s->rd, 1);
	pulse_hook_ring_forget(s->w);
	free(s);
}

static void test_stress_reader_keeps_up(void **state)
{
	(void)state;
	run_stress(1, 0);
}

static void test_stress_reader_falls_behind(void **state)
{
	(void)state;
	run_stress(0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_full),
		cmocka_unit_test(test_shared_attach_and_scan),
		cmocka_unit_test(test_stress_reader_keeps_up),
		cmocka_unit_test(test_stress_reader_falls_behind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
