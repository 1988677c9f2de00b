/* pulse-host-agent: the interception rings of the host's training processes
 * (libpulse-hook.so and libpulse-nccl-profiler.so; include/pulse/hook_ring.h).
 *
 * Every poll:
 *  - discovery: list the ring directory (/dev/shm, or --hook-dir DIR) for
 *    "pulse-hook.<pid>" and attach to each new one (pulse_hook_ring_open).
 *    The hook creates its ring with shm_open, so the ring itself is always
 *    /dev/shm/pulse-hook.<pid>; another DIR only says which pids to look at
 *    (tests use a directory of links, so other rings on the host are left
 *    alone). An entry that cannot be attached (corrupt or unknown layout,
 *    another agent attached, no such ring) is logged once with the reason,
 *    counted, and skipped until it disappears; a layout error is accepted
 *    only on the third poll in a row, since a ring that its process is
 *    still creating reads as one;
 *  - drain: at most one ring's capacity of records from every ring (the
 *    drain never waits: a slot not yet published ends it), each handled by
 *    hooks_apply, which replay.c calls for replayed .rec records too: the
 *    mapping (qp_map.c), JSON lines for operator and group records, and
 *    those to the association (assoc_call);
 *  - drops: the ring's own drop counters, logged and counted when they grow;
 *  - exit: a ring whose process is gone is drained a last time, detached
 *    and removed (with the DIR entry), and its mapping entries dropped.
 * Then the mapping is written if it changed.
 *
 * Lines:
 *   {"type":"hook_op","t_ns" (the call, CLOCK_REALTIME),"pid","tid",
 *    "source":"hook"|"profiler","annotation","comm_id","seq","op","count",
 *    "datatype","redop","root_peer","stream","group_id","result",
 *    "nccl_seq","algo","proto","nchannels","comm_is":"pulse"|"nccl_hash",
 *    "unknown_comm"}
 *   {"type":"hook_group","t_ns","pid","tid","source","event":"start"|"end",
 *    "group_id","depth","result"} */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pulse/json_put.h"
#include "agent.h"
#include "probe.h"
#include "assoc.h"
#include "pulse/hook_ring.h"

#define DRAIN_BATCH 512u
#define SHM_DIR "/dev/shm"
#define PROTO_TRIES 3

struct hook_ring_ent {
	pid_t pid;
	struct pulse_hook_ring *r;
	uint64_t nr_seen, full_seen; /* the ring's drop counters at the last poll */
	int seen;              /* scan: listed; poll: alive */
};

struct hook_bad {
	pid_t pid;
	int err;               /* -errno of the last attach */
	int tries;
	int reported;
	int seen;
};

int hooks_init(struct hooks *h, const char *dir, char *err, size_t errlen)
{
	memset(h, 0, sizeof *h);
	if (!dir)
		dir = SHM_DIR;
	if (strlen(dir) >= sizeof h->dir - 32) {
		snprintf(err, errlen, "--hook-dir %s: path too long", dir);
		return -1;
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--hook-dir %s: not a directory (%s)", dir,
			 errno ? strerror(errno) : "not a directory");
		return -1;
	}
	snprintf(h->dir, sizeof h->dir, "%s", dir);
	char real[PATH_MAX];
	h->dir_is_shm = realpath(dir, real) && !strcmp(real, SHM_DIR);
	h->buf = malloc(DRAIN_BATCH * sizeof *h->buf);
	if (!h->buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	qp_map_init(&h->map);
	return 0;
}

static int pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno != ESRCH;
}

static int parse_name(const char *name, pid_t *pid)
{
	const size_t plen = strlen(PULSE_HOOK_RING_PREFIX);
	if (strncmp(name, PULSE_HOOK_RING_PREFIX, plen) != 0)
		return -1;
	const char *p = name + plen;
	char *end;
	errno = 0;
	long v = strtol(p, &end, 10);
	if (*p < '0' || *p > '9' || *end || errno || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

static struct hook_ring_ent *find_ring(struct hooks *h, pid_t pid)
{
	for (uint32_t i = 0; i < h->nrings; i++)
		if (h->rings[i].pid == pid)
			return &h->rings[i];
	return NULL;
}

static struct hook_bad *find_bad(struct hooks *h, pid_t pid)
{
	for (uint32_t i = 0; i < h->nbad; i++)
		if (h->bad[i].pid == pid)
			return &h->bad[i];
	return NULL;
}

static const char *attach_why(int e)
{
	switch (e) {
	case -EPROTO: return "not a Pulse interception ring of a layout this agent knows "
			     "(corrupt, truncated, or another record version)";
	case -EBUSY: return "another reader (agent) is attached to it";
	case -ENOENT: return "no ring " SHM_DIR "/" PULSE_HOOK_RING_PREFIX "<pid> behind this entry "
			     "(the hook creates rings only in " SHM_DIR ")";
	default: return strerror(-e);
	}
}

static void attach(struct agent *a, struct hooks *h, pid_t pid)
{
	struct hook_bad *b = find_bad(h, pid);
	if (b && b->reported) {
		b->seen = 1;
		return;
	}
	struct pulse_hook_ring *r = NULL;
	int rc = pulse_hook_ring_open(pid, &r);
	if (rc == 0) {
		if (h->nrings == h->caprings) {
			uint32_t nc = h->caprings ? h->caprings * 2 : 16;
			void *p = realloc(h->rings, nc * sizeof *h->rings);
			if (!p) {
				LOGE("hook ring of pid %ld: out of memory; not attached", (long)pid);
				pulse_hook_ring_close(r, 0);
				return;
			}
			h->rings = p;
			h->caprings = nc;
		}
		struct hook_ring_ent *e = &h->rings[h->nrings++];
		memset(e, 0, sizeof *e);
		e->pid = pid;
		e->r = r;
		e->seen = 1;
		struct pulse_hook_ring_stats st;
		pulse_hook_ring_stats(r, &st);
		pthread_mutex_lock(&a->lock);
		h->attached_total++;
		pthread_mutex_unlock(&a->lock);
		LOGI("hook ring of pid %ld attached (%s/%s%ld): %u slots, %" PRIu64 " written, %" PRIu64
		     " dropped before attach%s",
		     (long)pid, h->dir, PULSE_HOOK_RING_PREFIX, (long)pid, st.capacity, st.written,
		     st.dropped_no_reader, st.hook_loaded ? "" : " (profiler plugin only)");
		if (b)
			*b = h->bad[--h->nbad];
		return;
	}
	if (rc == -ENOENT && h->dir_is_shm)
		return; /* gone between the listing and the open (the process exited) */
	if (!b) {
		if (h->nbad == h->capbad) {
			uint32_t nc = h->capbad ? h->capbad * 2 : 16;
			void *p = realloc(h->bad, nc * sizeof *h->bad);
			if (!p)
				return;
			h->bad = p;
			h->capbad = nc;
		}
		b = &h->bad[h->nbad++];
		memset(b, 0, sizeof *b);
		b->pid = pid;
	}
	b->seen = 1;
	b->err = rc;
	b->tries++;
	if (rc == -EPROTO && b->tries < PROTO_TRIES && pid_alive(pid))
		return; /* may be half-built: look again next poll */
	b->reported = 1;
	pthread_mutex_lock(&a->lock);
	h->attach_errors++;
	pthread_mutex_unlock(&a->lock);
	LOGE("hook ring %s/%s%ld: cannot attach: %s; ignored until it goes away", h->dir,
	     PULSE_HOOK_RING_PREFIX, (long)pid, attach_why(rc));
}

static void scan(struct agent *a, struct hooks *h)
{
	DIR *d = opendir(h->dir);
	if (!d) {
		if (!h->scan_failed)
			LOGE("hook ring directory %s: %s; no interception rings until it is back", h->dir,
			     strerror(errno));
		h->scan_failed = 1;
		return;
	}
	if (h->scan_failed)
		LOGI("hook ring directory %s readable again", h->dir);
	h->scan_failed = 0;
	for (uint32_t i = 0; i < h->nrings; i++)
		h->rings[i].seen = 0;
	for (uint32_t i = 0; i < h->nbad; i++)
		h->bad[i].seen = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		pid_t pid;
		if (parse_name(de->d_name, &pid))
			continue;
		struct hook_ring_ent *e = find_ring(h, pid);
		if (e)
			e->seen = 1;
		else
			attach(a, h, pid);
	}
	closedir(d);
	/* forget failures whose entry is gone (a later ring of that pid is new) */
	for (uint32_t i = 0; i < h->nbad;)
		if (!h->bad[i].seen)
			h->bad[i] = h->bad[--h->nbad];
		else
			i++;
	pthread_mutex_lock(&a->lock);
	h->scans++;
	pthread_mutex_unlock(&a->lock);
}

static void put_fixed(FILE *f, const char *s, size_t n)
{
	char buf[32];
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	pulse_json_put_str(f, buf);
}

static void write_record(FILE *f, const struct pulse_hook_record *r)
{
	const char *src = r->source == PULSE_HOOK_SRC_PROFILER ? "profiler" : "hook";
	if (r->kind == PULSE_HOOK_OP) {
		const struct pulse_hook_op_body *o = &r->u.op;
		fprintf(f, "{\"type\":\"hook_op\",\"t_ns\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"source\":\"%s\","
			   "\"annotation\":%s,\"comm_id\":\"0x%016" PRIx64 "\",\"comm_is\":\"%s\","
			   "\"unknown_comm\":%s,\"seq\":%" PRIu64 ",\"op\":\"%s\",\"count\":%" PRIu64
			   ",\"datatype\":%u,\"redop\":",
			r->time_ns, r->pid, r->tid, src, r->flags & PULSE_HOOK_F_ANNOTATION ? "true" : "false",
			o->comm_id, r->flags & PULSE_HOOK_F_NCCL_HASH_ID ? "nccl_hash" : "pulse",
			r->flags & PULSE_HOOK_F_UNKNOWN_COMM ? "true" : "false", o->seq,
			qp_map_op_name(o->type), o->count, o->datatype);
		if (r->flags & PULSE_HOOK_F_REDOP32)
			fprintf(f, "%d", o->redop32); /* PreMulSum handles pass 255 */
		else if (o->redop == 0xff)
			fputs("null", f);
		else
			fprintf(f, "%u", o->redop);
		fprintf(f, ",\"root_peer\":%d,\"stream\":\"0x%" PRIx64 "\",\"group_id\":%" PRIu64
			   ",\"result\":%d,\"nccl_seq\":%" PRIu64 ",\"nchannels\":%u,\"algo\":",
			o->root_peer, o->stream, o->group_id, o->result, o->nccl_seq, o->nchannels);
		put_fixed(f, o->algo, sizeof o->algo);
		fputs(",\"proto\":", f);
		put_fixed(f, o->proto, sizeof o->proto);
		fputs("}\n", f);
	} else {
		const struct pulse_hook_group_body *g = &r->u.group;
		fprintf(f, "{\"type\":\"hook_group\",\"t_ns\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"source\":\"%s\","
			   "\"event\":\"%s\",\"group_id\":%" PRIu64 ",\"depth\":%u,\"result\":%d%s}\n",
			r->time_ns, r->pid, r->tid, src, r->kind == PULSE_HOOK_GROUP_START ? "start" : "end",
			g->group_id, g->depth, g->result,
			r->flags & PULSE_HOOK_F_SIMULATED ? ",\"simulated\":true" : "");
	}
}

int hooks_apply(struct agent *a, struct hooks *h, FILE *f, const struct pulse_hook_record *r,
		uint64_t *bad)
{
	if (r->version != PULSE_HOOK_RECORD_VERSION || r->kind < PULSE_HOOK_COMM_INIT ||
	    r->kind > PULSE_HOOK_KIND_MAX) {
		(*bad)++;
		return 0;
	}
	if (r->kind == PULSE_HOOK_OP || r->kind == PULSE_HOOK_GROUP_START ||
	    r->kind == PULSE_HOOK_GROUP_END) {
		if (f)
			write_record(f, r);
		if (a->assoc)
			assoc_call(a->assoc, r);
		return r->kind == PULSE_HOOK_OP;
	}
	if (r->kind == PULSE_HOOK_COMM_EVENT) {
		/* the communicator lives on: a line, no change to the mapping */
		const struct pulse_hook_comm_body *c = &r->u.comm;
		static const char *const ev[] = { "finalize", "revoke", "suspend", "resume" };
		unsigned k = (unsigned)c->how - PULSE_HOOK_HOW_FINALIZE;
		if (f)
			fprintf(f, "{\"type\":\"hook_comm_event\",\"t_ns\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,"
				   "\"event\":\"%s\",\"comm_id\":\"0x%016" PRIx64 "\",\"rank\":%d,"
				   "\"flags\":%d,\"result\":%d}\n",
				r->time_ns, r->pid, r->tid, k < 4 ? ev[k] : "unknown", c->comm_id, c->rank,
				c->key, c->result);
		return 0;
	}
	qp_map_apply(&h->map, r);
	if ((r->kind == PULSE_HOOK_QP_CREATE || r->kind == PULSE_HOOK_QP_RTR) && r->u.qp.result == 0)
		probe_note_qp(a, r->u.qp.dev, sizeof r->u.qp.dev, r->u.qp.gpu.pci_bus_id,
			      sizeof r->u.qp.gpu.pci_bus_id);
	return 0;
}

void hooks_init_records(struct hooks *h)
{
	memset(h, 0, sizeof *h);
	qp_map_init(&h->map);
}

/* Drains at most one capacity's worth: never spins behind a fast producer. */
static void drain_ring(struct agent *a, struct hooks *h, struct hook_ring_ent *e)
{
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(e->r, &st);
	uint64_t budget = st.capacity, got = 0, ops = 0, bad_kind = 0;
	while (got < budget) {
		size_t want = budget - got < DRAIN_BATCH ? (size_t)(budget - got) : DRAIN_BATCH;
		size_t n = pulse_hook_ring_drain(e->r, h->buf, want);
		if (!n)
			break;
		got += n;
		FILE *f = jsonl_begin();
		for (size_t i = 0; i < n; i++)
			ops += (uint64_t)hooks_apply(a, h, f, &h->buf[i], &bad_kind);
		if (f)
			jsonl_end();
		if (n < want)
			break;
	}
	pulse_hook_ring_stats(e->r, &st);
	uint64_t nr_new = st.dropped_no_reader - e->nr_seen, full_new = st.dropped_full - e->full_seen;
	if (st.dropped_no_reader < e->nr_seen || st.dropped_full < e->full_seen)
		nr_new = full_new = 0; /* counters never go back: not ours to trust */
	if (nr_new)
		LOGW("hook ring of pid %ld: %" PRIu64 " records dropped while no agent was attached "
		     "(ring full: %u slots)", (long)e->pid, nr_new, st.capacity);
	if (full_new)
		LOGW("hook ring of pid %ld: %" PRIu64 " records dropped since the last poll (ring full: "
		     "%u slots; %" PRIu64 " in all)", (long)e->pid, full_new, st.capacity, st.dropped_full);
	e->nr_seen = st.dropped_no_reader;
	e->full_seen = st.dropped_full;
	uint64_t new_drops = nr_new + full_new;
	if (bad_kind)
		LOGW("hook ring of pid %ld: %" PRIu64 " records of an unknown kind or version ignored",
		     (long)e->pid, bad_kind);
	pthread_mutex_lock(&a->lock);
	h->records += got;
	h->ops += ops;
	h->dropped += new_drops + bad_kind;
	pthread_mutex_unlock(&a->lock);
}

static void detach(struct agent *a, struct hooks *h, uint32_t i, int exited)
{
	struct hook_ring_ent *e = &h->rings[i];
	if (exited) {
		/* records published before the exit are all visible now */
		drain_ring(a, h, e);
		uint64_t left = pulse_hook_ring_pending(e->r);
		struct pulse_hook_ring_stats st;
		pulse_hook_ring_stats(e->r, &st);
		pulse_hook_ring_close(e->r, 1);
		if (!h->dir_is_shm) {
			char p[sizeof h->dir + 32];
			snprintf(p, sizeof p, "%s/%s%ld", h->dir, PULSE_HOOK_RING_PREFIX, (long)e->pid);
			unlink(p);
		}
		qp_map_drop_pid(&h->map, (uint32_t)e->pid);
		LOGI("hook ring of pid %ld dropped: the process exited (%" PRIu64 " records written, %" PRIu64
		     " dropped%s)",
		     (long)e->pid, st.written, st.dropped_full + st.dropped_no_reader,
		     left ? ", some left half-written by a thread that died mid-record" : "");
	} else {
		drain_ring(a, h, e);
		pulse_hook_ring_close(e->r, 0);
	}
	*e = h->rings[--h->nrings];
	pthread_mutex_lock(&a->lock);
	h->detached_total++;
	pthread_mutex_unlock(&a->lock);
}

void hooks_poll(struct agent *a, struct hooks *h)
{
	scan(a, h);
	int exits = 0;
	for (uint32_t i = 0; i < h->nrings; i++) {
		/* liveness first: a process seen dead has published everything */
		h->rings[i].seen = pid_alive(h->rings[i].pid);
		exits += !h->rings[i].seen;
		drain_ring(a, h, &h->rings[i]);
	}
	if (exits) {
		/* the mapping with the exited processes' last state, then without */
		qp_map_emit(&h->map);
		for (uint32_t i = 0; i < h->nrings;) {
			if (!h->rings[i].seen)
				detach(a, h, i, 1); /* moves the last entry into i */
			else
				i++;
		}
	}
	if (h->map.full_drops) {
		LOGW("hook mapping full (%u QPs, %u communicators at most): %" PRIu64 " records not kept",
		     QP_MAP_MAX_QPS, QP_MAP_MAX_COMMS, h->map.full_drops);
		pthread_mutex_lock(&a->lock);
		h->dropped += h->map.full_drops;
		pthread_mutex_unlock(&a->lock);
		h->map.full_drops = 0;
	}
	qp_map_emit(&h->map);
}

void hooks_close(struct agent *a, struct hooks *h)
{
	while (h->nrings)
		detach(a, h, h->nrings - 1, !pid_alive(h->rings[h->nrings - 1].pid));
	qp_map_emit(&h->map);
	qp_map_free(&h->map);
	free(h->rings);
	free(h->bad);
	free(h->buf);
	h->rings = NULL;
	h->bad = NULL;
	h->buf = NULL;
	h->nrings = h->nbad = 0;
}
