/* libpulse-hook.so: load, configuration, the process's ring, fork and exit.
 *
 * Environment:
 *   PULSE_HOOK_DISABLE=1         record nothing (every call passes straight through)
 *   PULSE_HOOK_RING_RECORDS=N    ring slots, power of two (default 16384, 128 B each)
 *   PULSE_HOOK_KEEP_RING=1       keep /dev/shm/pulse-hook.<pid> at exit even if no
 *                                agent attached (by default it is removed then)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"
#include "pulse/hook_ring.h"

enum { ST_UNINIT = 0, ST_INITIALISING, ST_READY, ST_DISABLED };

static _Atomic int g_state;
static struct pulse_hook_ring *_Atomic g_ring;
static uint32_t g_records = PULSE_HOOK_RING_DEFAULT_RECORDS;
static _Atomic uint32_t g_pid;
static _Atomic uint32_t g_fork_gen = 1;
static _Atomic uint64_t g_dropped_no_ring; /* ring could not be created */
static PULSE_TLS uint32_t t_tid, t_gen;

uint64_t pulse_hook_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t tid_now(void)
{
	uint32_t gen = atomic_load_explicit(&g_fork_gen, memory_order_relaxed);
	if (t_gen != gen) {
		t_tid = (uint32_t)syscall(SYS_gettid);
		t_gen = gen;
	}
	return t_tid;
}

static void say(const char *msg)
{
	/* stderr only, once per event; never fatal. */
	ssize_t r = write(2, msg, strlen(msg));
	(void)r;
}

static void open_ring(void)
{
	pid_t pid = getpid();
	atomic_store(&g_pid, (uint32_t)pid);
	struct pulse_hook_ring *r = pulse_hook_ring_create(pid, g_records);
	if (!r) {
		char buf[160];
		snprintf(buf, sizeof buf,
			 "pulse-hook: cannot create /dev/shm/" PULSE_HOOK_RING_PREFIX "%ld (%s); "
			 "records will be dropped and counted\n", (long)pid, strerror(errno));
		say(buf);
	} else {
		pulse_hook_ring_set_hook_loaded(r);
	}
	atomic_store_explicit(&g_ring, r, memory_order_release);
}

static void atfork_child(void)
{
	/* Only this thread exists now. The parent's ring stays the parent's. */
	atomic_fetch_add(&g_fork_gen, 1);
	struct pulse_hook_ring *old = atomic_exchange(&g_ring, NULL);
	pulse_hook_ring_forget(old);
	pulse_hook_nccl_atfork_child();
	if (atomic_load(&g_state) == ST_READY)
		open_ring();
}

static void do_init(void)
{
	const char *v = getenv("PULSE_HOOK_DISABLE");
	if (v && *v && strcmp(v, "0") != 0) {
		atomic_store(&g_state, ST_DISABLED);
		return;
	}
	v = getenv("PULSE_HOOK_RING_RECORDS");
	if (v && *v) {
		char *end;
		unsigned long n = strtoul(v, &end, 10);
		if (*end || n < 2 || n > PULSE_HOOK_RING_MAX_RECORDS || (n & (n - 1)))
			say("pulse-hook: PULSE_HOOK_RING_RECORDS must be a power of two in "
			    "[2, 4194304]; using the default 16384\n");
		else
			g_records = (uint32_t)n;
	}
	/* Resolve glibc's dlsym now, outside any caller's lookup. */
	(void)pulse_real_dlsym(NULL, NULL);
	open_ring();
	pthread_atfork(NULL, NULL, atfork_child);
	atomic_store_explicit(&g_state, ST_READY, memory_order_release);
}

int pulse_hook_ready(void)
{
	int s = atomic_load_explicit(&g_state, memory_order_acquire);
	if (s == ST_READY)
		return 1;
	if (s != ST_UNINIT)
		return 0; /* disabled, or another thread is initialising: pass through */
	int expect = ST_UNINIT;
	if (!atomic_compare_exchange_strong(&g_state, &expect, ST_INITIALISING))
		return 0;
	do_init();
	return atomic_load(&g_state) == ST_READY;
}

__attribute__((constructor)) static void pulse_hook_ctor(void)
{
	(void)pulse_hook_ready();
}

__attribute__((destructor)) static void pulse_hook_dtor(void)
{
	struct pulse_hook_ring *r = atomic_load(&g_ring);
	if (!r || (uint32_t)getpid() != atomic_load(&g_pid))
		return;
	const char *keep = getenv("PULSE_HOOK_KEEP_RING");
	/* With an agent attached, the agent removes the name once drained. The
	 * mapping stays: other threads may still be writing. */
	if (!pulse_hook_ring_reader_attached(r) && !(keep && *keep && strcmp(keep, "0") != 0)) {
		char name[64];
		snprintf(name, sizeof name, "/" PULSE_HOOK_RING_PREFIX "%ld", (long)getpid());
		shm_unlink(name);
	}
}

void pulse_hook_emit(struct pulse_hook_record *rec, uint8_t kind)
{
	rec->kind = kind;
	rec->source = PULSE_HOOK_SRC_HOOK;
	rec->version = PULSE_HOOK_RECORD_VERSION;
	rec->pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
	rec->tid = tid_now();
	struct pulse_hook_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
	if (!r) {
		atomic_fetch_add_explicit(&g_dropped_no_ring, 1, memory_order_relaxed);
		return;
	}
	(void)pulse_hook_ring_push(r, rec);
}

/* For libpulse-nccl-profiler.so: when the hook is loaded, the plugin writes
 * through here, into the same ring. Returns 0, or -1 when dropped. */
PULSE_EXPORT int pulse_hook_submit(const struct pulse_hook_record *rec)
{
	if (!rec || !pulse_hook_ready())
		return -1;
	struct pulse_hook_ring *r = atomic_load_explicit(&g_ring, memory_order_acquire);
	if (!r) {
		atomic_fetch_add_explicit(&g_dropped_no_ring, 1, memory_order_relaxed);
		return -1;
	}
	return pulse_hook_ring_push(r, rec);
}

/* Records lost because no ring exists in this process (create failed). */
PULSE_EXPORT uint64_t pulse_hook_dropped_no_ring(void)
{
	return atomic_load(&g_dropped_no_ring);
}
