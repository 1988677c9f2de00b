/* libpulse-nccl-profiler.so: an NCCL profiler plugin (NCCL_PROFILER_PLUGIN,
 * ABI v4 from NCCL 2.25, v5 from 2.27, and v6) that writes Pulse interception
 * records (include/pulse/hook_record.h, source PROFILER) into the process's
 * ring.
 *
 *   init     -> COMM_INIT: NCCL's commHash, nNodes, nranks, rank
 *   Coll     -> OP: NCCL seqNumber, func, count, datatype, root, algo, proto, nChannels
 *   P2P      -> OP: func (Send/Recv), peer, count, datatype, nChannels
 *   finalize -> COMM_DESTROY
 *
 * With libpulse-hook.so loaded in the same process, the plugin writes
 * through the hook (pulse_hook_submit, same ring) and marks every record
 * PULSE_HOOK_F_ANNOTATION: the hook's records are the count of calls and
 * communicators, the plugin's only add NCCL's view of them (README
 * "Interception", the no-double-counting rule). Its communicator records
 * then carry the hook's comm_id (pulse_hook_init_comm_id, read inside
 * NCCL's init on the creating thread), so both join without guessing.
 * Without the hook it creates /dev/shm/pulse-hook.<pid> itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl_profiler_abi.h"
#include "pulse/hook_ring.h"

#define EXPORT __attribute__((visibility("default")))

struct ctx {
	uint64_t nccl_hash;
	uint64_t comm_id; /* the hook's, 0 without it */
	int rank, nranks, nnodes;
	_Atomic uint64_t seq;
};

typedef int (*submit_fn)(const struct pulse_hook_record *);
typedef uint64_t (*init_id_fn)(void);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static submit_fn g_submit;        /* the hook's, when loaded */
static init_id_fn g_init_id;
static struct pulse_hook_ring *g_ring; /* our own, without the hook */
static _Atomic uint64_t g_dropped;

static void setup(void)
{
	g_submit = (submit_fn)dlsym(RTLD_DEFAULT, "pulse_hook_submit");
	g_init_id = (init_id_fn)dlsym(RTLD_DEFAULT, "pulse_hook_init_comm_id");
	if (g_submit)
		return;
	const char *v = getenv("PULSE_HOOK_RING_RECORDS");
	unsigned long n = v ? strtoul(v, NULL, 10) : PULSE_HOOK_RING_DEFAULT_RECORDS;
	if (n < 2 || n > PULSE_HOOK_RING_MAX_RECORDS || (n & (n - 1)))
		n = PULSE_HOOK_RING_DEFAULT_RECORDS;
	g_ring = pulse_hook_ring_create(getpid(), (uint32_t)n);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit(struct pulse_hook_record *r, uint8_t kind)
{
	r->kind = kind;
	r->source = PULSE_HOOK_SRC_PROFILER;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->pid = (uint32_t)getpid();
	r->tid = (uint32_t)syscall(SYS_gettid);
	if (g_submit) {
		r->flags |= PULSE_HOOK_F_ANNOTATION;
		g_submit(r);
	} else if (g_ring) {
		pulse_hook_ring_push(g_ring, r);
	} else {
		atomic_fetch_add_explicit(&g_dropped, 1, memory_order_relaxed);
	}
}

static void copy_str(char *dst, size_t n, const char *src)
{
	if (!src)
		return;
	size_t len = strnlen(src, n - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static uint8_t op_type(const char *f)
{
	static const struct {
		const char *name;
		uint8_t type;
	} map[] = {
		{ "AllReduce", PULSE_HOOK_OP_ALLREDUCE }, { "AllGather", PULSE_HOOK_OP_ALLGATHER },
		{ "ReduceScatter", PULSE_HOOK_OP_REDUCESCATTER }, { "Broadcast", PULSE_HOOK_OP_BROADCAST },
		{ "Reduce", PULSE_HOOK_OP_REDUCE }, { "AlltoAll", PULSE_HOOK_OP_ALLTOALL },
		{ "Send", PULSE_HOOK_OP_SEND }, { "Recv", PULSE_HOOK_OP_RECV },
		{ "SendRecv", PULSE_HOOK_OP_SEND },
	};
	for (size_t i = 0; f && i < sizeof map / sizeof map[0]; i++)
		if (strcmp(f, map[i].name) == 0)
			return map[i].type;
	return PULSE_HOOK_OP_OTHER;
}

static uint8_t dtype(const char *d)
{
	static const char *const names[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
		"ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16",
		"ncclFloat8e4m3", "ncclFloat8e5m2" };
	for (uint8_t i = 0; d && i < sizeof names / sizeof names[0]; i++)
		if (strcmp(d, names[i]) == 0)
			return i;
	return 0xff;
}

static ncclResult_t do_init(void **context, int *mask, uint64_t hash, int nnodes, int nranks, int rank)
{
	if (!context || !mask)
		return ncclInvalidArgument;
	pthread_once(&g_once, setup);
	struct ctx *c = calloc(1, sizeof *c);
	*context = c;
	if (!c) {
		*mask = 0;
		return ncclSuccess; /* fail open: profile nothing for this communicator */
	}
	c->nccl_hash = hash;
	c->comm_id = g_init_id ? g_init_id() : 0;
	c->rank = rank;
	c->nranks = nranks;
	c->nnodes = nnodes;
	*mask = PULSE_NCCL_PROF_COLL | PULSE_NCCL_PROF_P2P;
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = now_ns();
	r.u.comm.comm_id = c->comm_id;
	r.u.comm.nccl_hash = hash;
	r.u.comm.rank = rank;
	r.u.comm.nranks = nranks;
	r.u.comm.nnodes = (uint16_t)(nnodes < 0 ? 0 : nnodes > 65535 ? 65535 : nnodes);
	r.u.comm.color = r.u.comm.key = -1;
	r.u.comm.how = PULSE_HOOK_HOW_PROFILER;
	r.u.comm.gpu.cuda_dev = -1;
	emit(&r, PULSE_HOOK_COMM_INIT);
	return ncclSuccess;
}

static ncclResult_t init_v4(void **context, int *mask, const char *name, uint64_t hash, int nnodes,
			    int nranks, int rank, pulse_nccl_logger_t logfn)
{
	(void)name;
	(void)logfn;
	return do_init(context, mask, hash, nnodes, nranks, rank);
}

static ncclResult_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
			    int nranks, int rank, pulse_nccl_logger_t logfn)
{
	(void)name;
	(void)logfn;
	return do_init(context, mask, comm_id, nnodes, nranks, rank);
}

static void op_record(struct ctx *c, uint64_t type, const struct pulse_nccl_prof_coll *coll,
		      const struct pulse_nccl_prof_p2p *p2p)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = now_ns();
	r.u.op.comm_id = c->comm_id ? c->comm_id : c->nccl_hash;
	r.u.op.seq = atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);
	r.u.op.root_peer = -1;
	r.u.op.redop = 0xff;
	if (type == PULSE_NCCL_PROF_COLL) {
		r.u.op.type = op_type(coll->func);
		r.u.op.nccl_seq = coll->seq_number;
		r.u.op.count = coll->count;
		r.u.op.datatype = dtype(coll->datatype);
		r.u.op.nchannels = coll->n_channels;
		if (r.u.op.type == PULSE_HOOK_OP_BROADCAST || r.u.op.type == PULSE_HOOK_OP_REDUCE)
			r.u.op.root_peer = coll->root;
		copy_str(r.u.op.algo, sizeof r.u.op.algo, coll->algo);
		copy_str(r.u.op.proto, sizeof r.u.op.proto, coll->proto);
	} else {
		r.u.op.type = op_type(p2p->func);
		r.u.op.count = p2p->count;
		r.u.op.datatype = dtype(p2p->datatype);
		r.u.op.nchannels = p2p->n_channels;
		r.u.op.root_peer = p2p->peer;
	}
	if (!c->comm_id)
		r.flags |= PULSE_HOOK_F_NCCL_HASH_ID;
	emit(&r, PULSE_HOOK_OP);
}

/* Events we do not follow get a NULL handle; stop/record accept it. */
static ncclResult_t start_v4(void *context, void **handle, pulse_nccl_prof_descr_v4_t *d)
{
	if (handle)
		*handle = NULL;
	if (!context || !d)
		return ncclSuccess;
	if (d->type == PULSE_NCCL_PROF_COLL)
		op_record(context, PULSE_NCCL_PROF_COLL, &d->coll, NULL);
	else if (d->type == PULSE_NCCL_PROF_P2P)
		op_record(context, PULSE_NCCL_PROF_P2P, NULL, &d->p2p);
	return ncclSuccess;
}

static ncclResult_t start_v5(void *context, void **handle, pulse_nccl_prof_descr_v5_t *d)
{
	if (handle)
		*handle = NULL;
	if (!context || !d)
		return ncclSuccess;
	if (d->type == PULSE_NCCL_PROF_COLL)
		op_record(context, PULSE_NCCL_PROF_COLL, &d->coll, NULL);
	else if (d->type == PULSE_NCCL_PROF_P2P)
		op_record(context, PULSE_NCCL_PROF_P2P, NULL, &d->p2p);
	return ncclSuccess;
}

static ncclResult_t stop_event(void *handle)
{
	(void)handle;
	return ncclSuccess;
}

static ncclResult_t record_state(void *handle, pulse_nccl_prof_state_t s, pulse_nccl_prof_state_args_t *a)
{
	(void)handle;
	(void)s;
	(void)a;
	return ncclSuccess;
}

static ncclResult_t finalize(void *context)
{
	struct ctx *c = context;
	if (!c)
		return ncclSuccess;
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = now_ns();
	r.u.comm.comm_id = c->comm_id;
	r.u.comm.nccl_hash = c->nccl_hash;
	r.u.comm.rank = c->rank;
	r.u.comm.nranks = c->nranks;
	r.u.comm.color = r.u.comm.key = -1;
	r.u.comm.how = PULSE_HOOK_HOW_PROFILER;
	r.u.comm.gpu.cuda_dev = -1;
	emit(&r, PULSE_HOOK_COMM_DESTROY);
	free(c);
	return ncclSuccess;
}

EXPORT const pulse_nccl_profiler_v6_t ncclProfiler_v6 = {
	"pulse", init_v5, start_v5, stop_event, record_state, finalize,
};
EXPORT const pulse_nccl_profiler_v5_t ncclProfiler_v5 = {
	"pulse", init_v5, start_v5, stop_event, record_state, finalize,
};
EXPORT const pulse_nccl_profiler_v4_t ncclProfiler_v4 = {
	"pulse", init_v4, start_v4, stop_event, record_state, finalize,
};
