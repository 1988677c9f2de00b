/* libpulse-nccl-profiler.so: an NCCL profiler plugin (NCCL_PROFILER_PLUGIN,
 * ABI v4 in NCCL 2.27, v5 in 2.28, v6 in 2.29 and later; see
 * profiler/nccl_profiler_abi.h) that writes Pulse interception
 * records (include/pulse/hook_record.h, source PROFILER) into the process's
 * ring.
 *
 *   init     -> COMM_INIT: NCCL's commHash, nNodes, nranks, rank
 *   Coll     -> OP: NCCL seqNumber, func, count, datatype, root, algo, proto, nChannels
 *   P2P      -> OP: func (Send/Recv), peer, count, datatype, nChannels
 *   finalize -> COMM_DESTROY
 *   NetPlugin (IB, descriptor v1) under ProxyStep under ProxyOp under the
 *            Coll/P2P task -> NET_QP: one record per (proxy op, QP) when
 *            the proxy op ends, with the task's comm, seq and NCCL
 *            seqNumber, the proxy op's channel, peer and direction, and the
 *            work requests and bytes posted on that QP (never one record
 *            per work request). PULSE_PROFILER_NET=0 turns it off (the
 *            activation mask then asks for Coll and P2P only).
 *
 * Net profiling keeps state between events, without allocating on the
 * event path:
 *  - tasks (Coll/P2P): a ring of PULSE_PROFILER_TASKS slots (default 4096),
 *    handed out round-robin; the slot is the task's handle. NCCL's proxy
 *    thread may start a task's proxy ops after the task event stopped, so
 *    a slot is never freed, only reused 4096 tasks later: a proxy op that
 *    starts that late (never seen) would take a newer task's identity.
 *  - proxy ops: a pool of PULSE_PROFILER_PROXY_OPS (default 1024) objects on
 *    a mutex-guarded free list; taken at proxy op start, written out and
 *    returned at its stop (NCCL starts and stops a proxy op, its steps and
 *    their net events on one proxy thread). None free: the proxy op is not
 *    followed, counted (pool_drops_total).
 *  - proxy steps: the handle is the proxy op's address with the low bit
 *    set; nothing is allocated per step.
 *  - net events: the handle is NULL (NCCL accepts it; stop/record ignore it).
 * Net events of another plugin type or descriptor version, or without a
 * followed proxy step, are ignored and counted (unknown_total).
 *
 * With libpulse-hook.so loaded in the same process, the plugin writes
 * through the hook (pulse_hook_submit, same ring) and marks every record
 * PULSE_HOOK_F_ANNOTATION: the hook's records are the count of calls and
 * communicators, the plugin's only add NCCL's view of them (hook/README.md,
 * the no-double-counting rule). Its communicator records
 * then carry the hook's comm_id (pulse_hook_claim_comm_id: the init the
 * calling thread runs, or, for inits NCCL runs on its own threads, the
 * one init of that rank and size the hook saw start; 0 when ambiguous,
 * and the agent joins by NCCL's hash).
 * Without the hook it creates /dev/shm/pulse-hook.<pid> itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include "pulse/clock_ns.h"
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

#define MAGIC_CTX 0x50435458u   /* "PCTX" */
#define MAGIC_TASK 0x5054534bu  /* "PTSK" */
#define MAGIC_PROXY 0x50505859u /* "PPXY" */

struct ctx {
	uint32_t magic;
	uint64_t nccl_hash;
	uint64_t comm_id; /* the hook's, 0 without it */
	int rank, nranks, nnodes;
	_Atomic uint64_t seq;
};

typedef int (*submit_fn)(const struct pulse_hook_record *);
typedef uint64_t (*init_id_fn)(void);
typedef uint64_t (*claim_id_fn)(int rank, int nranks);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static submit_fn g_submit;        /* the hook's, when loaded */
static init_id_fn g_init_id;
static claim_id_fn g_claim_id; /* the hook's join that holds on NCCL's own init threads */
static struct pulse_hook_ring *g_ring; /* our own, without the hook */
static _Atomic uint64_t g_dropped;

/* ---- net profiling state ---- */
struct task {
	uint32_t magic;
	uint8_t op_type, is_p2p;
	uint32_t flags;     /* PULSE_HOOK_F_NCCL_HASH_ID when comm_id is NCCL's */
	uint64_t comm_id, nccl_hash, seq, nccl_seq;
};

struct net_qp {
	uint32_t qpn;
	int32_t dev;
	uint32_t wrs, opcodes;
	uint64_t bytes;
	uint64_t first_ns;
};

struct proxy {
	uint32_t magic;
	uint8_t channel, is_send, op_type, net_flags;
	uint32_t flags;
	int32_t rank, peer;
	uint64_t comm_id, nccl_hash, seq, nccl_seq;
	uint32_t nqps, overflow_wrs;
	struct net_qp qps[PULSE_HOOK_NET_QPS_PER_OP];
	struct proxy *next_free;
};

static int g_net = 1;
static struct task *g_tasks;
static uint32_t g_task_mask;
static _Atomic uint64_t g_task_next;
static struct proxy *g_proxies, *g_free;
static pthread_mutex_t g_free_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t g_unknown, g_pool_drops, g_ctx_fails;

static unsigned long env_pow2(const char *name, unsigned long dflt, unsigned long max)
{
	const char *v = getenv(name);
	unsigned long n = v ? strtoul(v, NULL, 10) : dflt;
	if (n < 2 || n > max || (n & (n - 1)))
		n = dflt;
	return n;
}

static void net_setup(void)
{
	const char *v = getenv("PULSE_PROFILER_NET");
	if (v && !strcmp(v, "0"))
		return;
	unsigned long nt = env_pow2("PULSE_PROFILER_TASKS", 4096, 1ul << 20);
	unsigned long np = env_pow2("PULSE_PROFILER_PROXY_OPS", 1024, 1ul << 20);
	g_tasks = calloc(nt, sizeof *g_tasks);
	g_proxies = calloc(np, sizeof *g_proxies);
	if (!g_tasks || !g_proxies) { /* fail open: no net profiling */
		free(g_tasks);
		free(g_proxies);
		g_tasks = NULL;
		g_proxies = NULL;
		return;
	}
	g_task_mask = (uint32_t)(nt - 1);
	for (unsigned long i = 0; i < np; i++) {
		g_proxies[i].next_free = g_free;
		g_free = &g_proxies[i];
	}
	g_net = 2; /* on */
}

/* pid and tid cached (a syscall each costs about 1 us on some VMs); a fork
 * gives the child its pid and a new tid generation. */
static _Atomic uint32_t g_pid, g_gen;
static __thread uint32_t t_tid, t_gen;

static void atfork_child(void)
{
	atomic_store(&g_pid, (uint32_t)getpid());
	atomic_fetch_add(&g_gen, 1);
}

static uint32_t tid_now(void)
{
	uint32_t gen = atomic_load_explicit(&g_gen, memory_order_relaxed) + 1;
	if (t_gen != gen) {
		t_tid = (uint32_t)syscall(SYS_gettid);
		t_gen = gen;
	}
	return t_tid;
}

static void setup(void)
{
	atomic_store(&g_pid, (uint32_t)getpid());
	pthread_atfork(NULL, NULL, atfork_child);
	net_setup();
	g_submit = (submit_fn)dlsym(RTLD_DEFAULT, "pulse_hook_submit");
	g_init_id = (init_id_fn)dlsym(RTLD_DEFAULT, "pulse_hook_init_comm_id");
	g_claim_id = (claim_id_fn)dlsym(RTLD_DEFAULT, "pulse_hook_claim_comm_id");
	if (g_submit)
		return;
	const char *v = getenv("PULSE_HOOK_RING_RECORDS");
	unsigned long n = v ? strtoul(v, NULL, 10) : PULSE_HOOK_RING_DEFAULT_RECORDS;
	if (n < 2 || n > PULSE_HOOK_RING_MAX_RECORDS || (n & (n - 1)))
		n = PULSE_HOOK_RING_DEFAULT_RECORDS;
	g_ring = pulse_hook_ring_create(getpid(), (uint32_t)n);
}

static void emit(struct pulse_hook_record *r, uint8_t kind)
{
	r->kind = kind;
	r->source = PULSE_HOOK_SRC_PROFILER;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->pid = atomic_load_explicit(&g_pid, memory_order_relaxed);
	r->tid = tid_now();
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
		{ "SendRecv", PULSE_HOOK_OP_SEND }, { "Gather", PULSE_HOOK_OP_GATHER },
		{ "Scatter", PULSE_HOOK_OP_SCATTER }, { "PutSignal", PULSE_HOOK_OP_PUT_SIGNAL },
		{ "Signal", PULSE_HOOK_OP_SIGNAL }, { "WaitSignal", PULSE_HOOK_OP_WAIT_SIGNAL },
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
	/* The mask is one NCCL global for every communicator: always the
	 * same value, even for a communicator we cannot follow. */
	*mask = PULSE_NCCL_PROF_COLL | PULSE_NCCL_PROF_P2P;
	if (g_net == 2) /* NCCL then also starts the ProxyOp and ProxyStep parents */
		*mask |= PULSE_NCCL_PROF_NET_PLUGIN;
	struct ctx *c = calloc(1, sizeof *c);
	*context = c;
	if (!c) {
		/* fail open for this communicator alone: its events come with a
		 * NULL context and are ignored; the others go on */
		atomic_fetch_add_explicit(&g_ctx_fails, 1, memory_order_relaxed);
		return ncclSuccess;
	}
	c->magic = MAGIC_CTX;
	c->nccl_hash = hash;
	/* The hook's id: the init this thread runs, or, when NCCL runs the
	 * init on a thread of its own (grouped, ncclCommInitAll,
	 * non-blocking), the one waiting init of this rank and size. */
	c->comm_id = g_claim_id ? g_claim_id(rank, nranks) : g_init_id ? g_init_id() : 0;
	c->rank = rank;
	c->nranks = nranks;
	c->nnodes = nnodes;
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_real_ns();
	/* Without the hook the communicator is known by NCCL's hash, as its
	 * operators are (two communicators of one process must not both be 0). */
	r.u.comm.comm_id = c->comm_id ? c->comm_id : hash;
	if (!c->comm_id)
		r.flags |= PULSE_HOOK_F_NCCL_HASH_ID;
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

/* Writes the OP record; with net profiling, returns the task slot that is
 * the event's handle. */
static void *op_record(struct ctx *c, uint64_t type, const struct pulse_nccl_prof_coll *coll,
		       const struct pulse_nccl_prof_p2p *p2p)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_real_ns();
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
	struct task *t = NULL;
	if (g_tasks) {
		uint64_t i = atomic_fetch_add_explicit(&g_task_next, 1, memory_order_relaxed);
		t = &g_tasks[i & g_task_mask];
		t->magic = MAGIC_TASK;
		t->op_type = r.u.op.type;
		t->is_p2p = type == PULSE_NCCL_PROF_P2P;
		t->flags = r.flags & PULSE_HOOK_F_NCCL_HASH_ID;
		t->comm_id = r.u.op.comm_id;
		t->nccl_hash = c->nccl_hash;
		t->seq = r.u.op.seq;
		t->nccl_seq = t->is_p2p ? UINT64_MAX : r.u.op.nccl_seq;
	}
	emit(&r, PULSE_HOOK_OP);
	return t;
}

static struct proxy *proxy_get(void)
{
	pthread_mutex_lock(&g_free_lock);
	struct proxy *p = g_free;
	if (p)
		g_free = p->next_free;
	pthread_mutex_unlock(&g_free_lock);
	return p;
}

static void proxy_put(struct proxy *p)
{
	p->magic = 0;
	pthread_mutex_lock(&g_free_lock);
	p->next_free = g_free;
	g_free = p;
	pthread_mutex_unlock(&g_free_lock);
}

static void *proxy_op_start(struct ctx *c, void *parent, int rank, const struct pulse_nccl_prof_proxy_op *o)
{
	if (!g_proxies)
		return NULL;
	struct proxy *p = proxy_get();
	if (!p) {
		atomic_fetch_add_explicit(&g_pool_drops, 1, memory_order_relaxed);
		return NULL;
	}
	memset(p, 0, offsetof(struct proxy, qps));
	p->magic = MAGIC_PROXY;
	p->channel = o->channel_id;
	p->is_send = o->is_send != 0;
	p->rank = rank;
	p->peer = o->peer;
	/* PXN: the parent is an address in another process; never read it. */
	const struct task *t =
		(uint32_t)o->pid == atomic_load_explicit(&g_pid, memory_order_relaxed) ? parent : NULL;
	if (t && t->magic == MAGIC_TASK) {
		p->op_type = t->op_type;
		p->net_flags = t->is_p2p ? PULSE_HOOK_NET_F_P2P : 0;
		p->flags = t->flags;
		p->comm_id = t->comm_id;
		p->nccl_hash = t->nccl_hash;
		p->seq = t->seq;
		p->nccl_seq = t->nccl_seq;
	} else {
		p->op_type = PULSE_HOOK_OP_OTHER;
		p->net_flags = PULSE_HOOK_NET_F_NO_PARENT;
		p->comm_id = c->comm_id ? c->comm_id : c->nccl_hash;
		p->flags = c->comm_id ? 0 : PULSE_HOOK_F_NCCL_HASH_ID;
		p->nccl_hash = c->nccl_hash;
		p->seq = p->nccl_seq = UINT64_MAX;
	}
	return p;
}

/* The hot path: one posted work request. */
static void net_event(void *parent, const struct pulse_nccl_prof_net *n)
{
	uintptr_t u = (uintptr_t)parent;
	struct proxy *p = (struct proxy *)(u & ~(uintptr_t)1);
	const struct pulse_nccl_net_ib_v1 *ib = n->data;
	if (!(u & 1) || !p || p->magic != MAGIC_PROXY ||
	    (uint64_t)n->id != (PULSE_NCCL_NET_TYPE_IB | PULSE_NCCL_NET_IB_VER) || !ib ||
	    ib->type != PULSE_NCCL_NET_IB_QP) {
		atomic_fetch_add_explicit(&g_unknown, 1, memory_order_relaxed);
		return;
	}
	uint32_t qpn = (uint32_t)ib->qp.qp_num;
	struct net_qp *q = NULL;
	for (uint32_t i = 0; i < p->nqps; i++)
		if (p->qps[i].qpn == qpn && p->qps[i].dev == ib->qp.device) {
			q = &p->qps[i];
			break;
		}
	if (!q) {
		if (p->nqps == PULSE_HOOK_NET_QPS_PER_OP) {
			p->overflow_wrs++;
			return;
		}
		q = &p->qps[p->nqps++];
		q->qpn = qpn;
		q->dev = ib->qp.device;
		q->wrs = q->opcodes = 0;
		q->bytes = 0;
		q->first_ns = pulse_real_ns();
	}
	q->wrs++;
	/* NCCL fills only device, wr_id and qpNum for a receive: its length
	 * and opcode are stale */
	if (p->is_send) {
		q->bytes += ib->qp.length;
		if ((unsigned)ib->qp.opcode < 32)
			q->opcodes |= 1u << ib->qp.opcode;
	}
}

static void proxy_op_stop(struct proxy *p)
{
	uint64_t end = pulse_real_ns();
	uint32_t unknown = atomic_load_explicit(&g_unknown, memory_order_relaxed);
	uint32_t drops = atomic_load_explicit(&g_pool_drops, memory_order_relaxed);
	for (uint32_t i = 0; i < p->nqps; i++) {
		const struct net_qp *q = &p->qps[i];
		struct pulse_hook_record r;
		memset(&r, 0, sizeof r);
		r.time_ns = q->first_ns;
		r.flags = p->flags;
		struct pulse_hook_net_qp_body *b = &r.u.net;
		b->comm_id = p->comm_id;
		b->nccl_hash = p->nccl_hash;
		b->seq = p->seq;
		b->nccl_seq = p->nccl_seq;
		b->bytes = q->bytes;
		b->last_ns = end;
		b->qpn = q->qpn;
		b->wrs = q->wrs;
		b->rank = p->rank;
		b->peer = p->peer;
		b->nccl_dev = q->dev;
		b->opcodes = q->opcodes;
		b->unknown_total = unknown;
		b->pool_drops_total = drops;
		b->qp_overflow_wrs = p->overflow_wrs;
		b->channel = p->channel;
		b->is_send = p->is_send;
		b->op_type = p->op_type;
		b->net_flags = (uint8_t)(p->net_flags | (p->overflow_wrs ? PULSE_HOOK_NET_F_QP_OVERFLOW : 0));
		emit(&r, PULSE_HOOK_NET_QP);
	}
	proxy_put(p);
}

/* Events we do not follow get a NULL handle; stop/record accept it. The
 * descriptor's union is at the same offset in every version; only the type
 * member's width differs. */
static void start_any(struct ctx *c, void **handle, uint64_t type, void *parent, int rank,
		      const void *u)
{
	void *h = NULL;
	switch (type) {
	case PULSE_NCCL_PROF_COLL: h = op_record(c, type, u, NULL); break;
	case PULSE_NCCL_PROF_P2P: h = op_record(c, type, NULL, u); break;
	case PULSE_NCCL_PROF_PROXY_OP:
		if (g_net == 2)
			h = proxy_op_start(c, parent, rank, u);
		break;
	case PULSE_NCCL_PROF_PROXY_STEP:
		if (parent && !((uintptr_t)parent & 1) && *(const uint32_t *)parent == MAGIC_PROXY)
			h = (void *)((uintptr_t)parent | 1);
		break;
	case PULSE_NCCL_PROF_NET_PLUGIN:
		if (g_net == 2)
			net_event(parent, u);
		break;
	default: break;
	}
	if (handle)
		*handle = h;
}

static ncclResult_t start_v4(void *context, void **handle, pulse_nccl_prof_descr_v4_t *d)
{
	if (handle)
		*handle = NULL;
	struct ctx *c = context;
	if (!c || !d || c->magic != MAGIC_CTX)
		return ncclSuccess;
	start_any(c, handle, d->type, d->parent_obj, d->rank, &d->coll);
	return ncclSuccess;
}

static ncclResult_t start_v5(void *context, void **handle, pulse_nccl_prof_descr_v5_t *d)
{
	if (handle)
		*handle = NULL;
	struct ctx *c = context;
	if (!c || !d || c->magic != MAGIC_CTX)
		return ncclSuccess;
	start_any(c, handle, d->type, d->parent_obj, d->rank, &d->coll);
	return ncclSuccess;
}

/* Tasks: nothing (the slot stays for proxy ops that start later); steps
 * (tagged) and net events (NULL): nothing; proxy ops: their records. */
static ncclResult_t stop_event(void *handle)
{
	uintptr_t u = (uintptr_t)handle;
	if (!u || (u & 1))
		return ncclSuccess;
	if (*(const uint32_t *)handle == MAGIC_PROXY) /* every handle starts with its magic */
		proxy_op_stop(handle);
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
	r.time_ns = pulse_real_ns();
	r.u.comm.comm_id = c->comm_id ? c->comm_id : c->nccl_hash;
	if (!c->comm_id)
		r.flags |= PULSE_HOOK_F_NCCL_HASH_ID;
	r.u.comm.nccl_hash = c->nccl_hash;
	r.u.comm.rank = c->rank;
	r.u.comm.nranks = c->nranks;
	r.u.comm.color = r.u.comm.key = -1;
	r.u.comm.how = PULSE_HOOK_HOW_PROFILER;
	r.u.comm.gpu.cuda_dev = -1;
	emit(&r, PULSE_HOOK_COMM_DESTROY);
	c->magic = 0;
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

/* For tests and benchmarks that load the plugin themselves: net events
 * ignored, tasks/proxy ops not followed (pool full), net profiling on. */
EXPORT void pulse_nccl_profiler_net_stats(uint64_t *unknown, uint64_t *pool_drops, int *net_on)
{
	if (unknown)
		*unknown = atomic_load(&g_unknown);
	if (pool_drops)
		*pool_drops = atomic_load(&g_pool_drops);
	if (net_on)
		*net_on = g_net == 2;
}
