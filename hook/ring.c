/* The interception ring (include/pulse/hook_ring.h): a bounded lock-free
 * queue in one shared mapping. Each slot carries a sequence word: a producer
 * may claim position p when slot[p % cap].seq == p (CAS on tail), writes the
 * record, then publishes with seq = p + 1 (release). The consumer reads slot
 * p when seq == p + 1 (acquire), then frees it with seq = p + cap. A producer
 * that finds seq < p sees a full ring: it drops the record and counts it.
 * The handle is the mapping itself, so neither side allocates. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pulse/hook_ring.h"

struct slot {
	_Atomic uint64_t seq;
	struct pulse_hook_record rec;
}; /* 128 bytes */
_Static_assert(sizeof(struct slot) == 128, "slot is 128 bytes");

#define HDR_BYTES 4096u

struct pulse_hook_ring {
	uint64_t magic;
	uint32_t version;
	uint32_t record_size;
	uint32_t capacity;
	uint32_t pid;
	uint32_t hdr_bytes;
	uint32_t shared; /* 1: /dev/shm name, 0: anonymous */
	_Atomic uint32_t hook_loaded;
	_Atomic uint32_t reader_pid;
	_Alignas(64) _Atomic uint64_t tail; /* next position producers claim */
	_Alignas(64) _Atomic uint64_t head; /* next position the consumer reads */
	_Alignas(64) _Atomic uint64_t dropped_full;
	_Atomic uint64_t dropped_no_reader;
};
_Static_assert(sizeof(struct pulse_hook_ring) <= HDR_BYTES, "header fits a page");

static struct slot *slots(const struct pulse_hook_ring *r)
{
	return (struct slot *)((char *)r + HDR_BYTES);
}

static size_t map_bytes(uint32_t cap)
{
	return HDR_BYTES + (size_t)cap * sizeof(struct slot);
}

static int valid_cap(uint32_t cap)
{
	return cap >= 2 && cap <= PULSE_HOOK_RING_MAX_RECORDS && (cap & (cap - 1)) == 0;
}

static void ring_name(char *buf, size_t n, pid_t pid)
{
	snprintf(buf, n, "/" PULSE_HOOK_RING_PREFIX "%ld", (long)pid);
}

static void init_header(struct pulse_hook_ring *r, uint32_t cap, pid_t pid, int shared)
{
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->record_size = sizeof(struct pulse_hook_record);
	r->capacity = cap;
	r->pid = (uint32_t)pid;
	r->hdr_bytes = HDR_BYTES;
	r->shared = (uint32_t)shared;
	atomic_init(&r->hook_loaded, 0);
	atomic_init(&r->reader_pid, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->head, 0);
	atomic_init(&r->dropped_full, 0);
	atomic_init(&r->dropped_no_reader, 0);
	struct slot *s = slots(r);
	for (uint32_t i = 0; i < cap; i++)
		atomic_init(&s[i].seq, i);
	/* The magic last: a reader that maps a half-built ring rejects it. */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&r->magic, PULSE_HOOK_RING_MAGIC, __ATOMIC_RELEASE);
}

struct pulse_hook_ring *pulse_hook_ring_create(pid_t pid, uint32_t records)
{
	if (!valid_cap(records)) {
		errno = EINVAL;
		return NULL;
	}
	char name[64];
	ring_name(name, sizeof name, pid);
	/* A leftover from a dead process with a recycled pid: replace it. */
	shm_unlink(name);
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	size_t len = map_bytes(records);
	if (ftruncate(fd, (off_t)len) != 0) {
		int e = errno;
		close(fd);
		shm_unlink(name);
		errno = e;
		return NULL;
	}
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED) {
		shm_unlink(name);
		errno = e;
		return NULL;
	}
	init_header(m, records, pid, 1);
	return m;
}

struct pulse_hook_ring *pulse_hook_ring_create_private(uint32_t records)
{
	if (!valid_cap(records)) {
		errno = EINVAL;
		return NULL;
	}
	void *m = mmap(NULL, map_bytes(records), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	init_header(m, records, getpid(), 0);
	return m;
}

int pulse_hook_ring_push(struct pulse_hook_ring *r, const struct pulse_hook_record *rec)
{
	const uint64_t mask = r->capacity - 1;
	struct slot *s = slots(r);
	uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct slot *sl;
	for (;;) {
		sl = &s[pos & mask];
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		int64_t dif = (int64_t)(seq - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1,
					memory_order_relaxed, memory_order_relaxed))
				break;
		} else if (dif < 0) {
			if (atomic_load_explicit(&r->reader_pid, memory_order_relaxed))
				atomic_fetch_add_explicit(&r->dropped_full, 1, memory_order_relaxed);
			else
				atomic_fetch_add_explicit(&r->dropped_no_reader, 1, memory_order_relaxed);
			return -1;
		} else {
			pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
		}
	}
	memcpy(&sl->rec, rec, sizeof *rec);
	atomic_store_explicit(&sl->seq, pos + 1, memory_order_release);
	return 0;
}

void pulse_hook_ring_set_hook_loaded(struct pulse_hook_ring *r)
{
	atomic_store_explicit(&r->hook_loaded, 1, memory_order_relaxed);
}

int pulse_hook_ring_reader_attached(const struct pulse_hook_ring *r)
{
	return atomic_load_explicit(&((struct pulse_hook_ring *)r)->reader_pid,
				    memory_order_relaxed) != 0;
}

int pulse_hook_ring_open(pid_t pid, struct pulse_hook_ring **out)
{
	char name[64];
	ring_name(name, sizeof name, pid);
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)HDR_BYTES) {
		close(fd);
		return -EPROTO;
	}
	struct pulse_hook_ring *h = mmap(NULL, HDR_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		int e = errno;
		close(fd);
		return -e;
	}
	int ok = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == PULSE_HOOK_RING_MAGIC &&
		 h->version == PULSE_HOOK_RECORD_VERSION &&
		 h->record_size == sizeof(struct pulse_hook_record) &&
		 h->hdr_bytes == HDR_BYTES && valid_cap(h->capacity) &&
		 (off_t)map_bytes(h->capacity) == st.st_size;
	uint32_t cap = h->capacity;
	munmap(h, HDR_BYTES);
	if (!ok) {
		close(fd);
		return -EPROTO;
	}
	struct pulse_hook_ring *r = mmap(NULL, map_bytes(cap), PROT_READ | PROT_WRITE,
					 MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (r == MAP_FAILED)
		return -e;
	/* Attaching another process's private copy would be pointless, but a
	 * second reader is refused: the ring has one consumer. */
	uint32_t none = 0;
	if (!atomic_compare_exchange_strong(&r->reader_pid, &none, (uint32_t)getpid()) &&
	    none != (uint32_t)getpid()) {
		/* The previous reader may be dead (agent restart): take over only then. */
		if (kill((pid_t)none, 0) == 0 || errno != ESRCH) {
			munmap(r, map_bytes(cap));
			return -EBUSY;
		}
		atomic_store(&r->reader_pid, (uint32_t)getpid());
	}
	*out = r;
	return 0;
}

size_t pulse_hook_ring_drain(struct pulse_hook_ring *r, struct pulse_hook_record *out, size_t max)
{
	const uint64_t mask = r->capacity - 1;
	struct slot *s = slots(r);
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t n = 0;
	while (n < max) {
		struct slot *sl = &s[pos & mask];
		uint64_t seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
		if (seq != pos + 1)
			break;
		memcpy(&out[n++], &sl->rec, sizeof *out);
		atomic_store_explicit(&sl->seq, pos + r->capacity, memory_order_release);
		pos++;
	}
	atomic_store_explicit(&r->head, pos, memory_order_release);
	return n;
}

uint64_t pulse_hook_ring_pending(const struct pulse_hook_ring *r)
{
	struct pulse_hook_ring *m = (struct pulse_hook_ring *)r;
	uint64_t head = atomic_load_explicit(&m->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&m->tail, memory_order_acquire);
	return tail > head ? tail - head : 0;
}

void pulse_hook_ring_stats(const struct pulse_hook_ring *r, struct pulse_hook_ring_stats *st)
{
	struct pulse_hook_ring *m = (struct pulse_hook_ring *)r;
	memset(st, 0, sizeof *st);
	st->written = atomic_load(&m->tail);
	st->consumed = atomic_load(&m->head);
	st->dropped_full = atomic_load(&m->dropped_full);
	st->dropped_no_reader = atomic_load(&m->dropped_no_reader);
	st->capacity = m->capacity;
	st->pid = m->pid;
	st->reader_pid = atomic_load(&m->reader_pid);
	st->hook_loaded = atomic_load(&m->hook_loaded);
}

int pulse_hook_ring_scan(pid_t *pids, size_t max)
{
	DIR *d = opendir("/dev/shm");
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *de;
	const size_t plen = strlen(PULSE_HOOK_RING_PREFIX);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, PULSE_HOOK_RING_PREFIX, plen) != 0)
			continue;
		const char *p = de->d_name + plen;
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (*p == '\0' || *end != '\0' || errno || v <= 0 || v > INT_MAX)
			continue; /* not ours, or malformed: ignored */
		if ((size_t)n < max)
			pids[n] = (pid_t)v;
		if (n < INT_MAX)
			n++;
	}
	closedir(d);
	return n;
}

void pulse_hook_ring_forget(struct pulse_hook_ring *r)
{
	if (r)
		munmap(r, map_bytes(r->capacity));
}

void pulse_hook_ring_close(struct pulse_hook_ring *r, int unlink)
{
	if (!r)
		return;
	if (unlink && r->shared) {
		char name[64];
		ring_name(name, sizeof name, (pid_t)r->pid);
		shm_unlink(name);
	}
	pulse_hook_ring_forget(r);
}
