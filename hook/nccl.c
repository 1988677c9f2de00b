/* NCCL interposition: communicator lifecycle, operators, group brackets.
 * Each wrapper calls the next definition (the real libnccl) and returns its
 * result unchanged; the record is written after the call (so it carries
 * the result) with the time taken before it. Communicators live in a fixed
 * open-addressed table (no allocation): handle -> id, sequence, splits. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"
#include "nccl_abi.h"

/* ---------- communicator table ---------- */

#define COMM_SLOTS 4096u /* power of two; a process with more live comms records them as unknown */
#define KEY_EMPTY 0u
#define KEY_TOMB 1u

struct comm_slot {
	_Atomic uintptr_t key;
	_Atomic int live;
	uint64_t id;
	_Atomic uint64_t seq;    /* next operator sequence number */
	_Atomic uint64_t splits; /* ncclCommSplit calls on this parent so far */
	int32_t rank, nranks;
};

static struct comm_slot g_comms[COMM_SLOTS];
static _Atomic uint64_t g_unknown_seq;
static _Atomic uint64_t g_group_ids;
static _Atomic uint64_t g_init_all_calls;
static PULSE_TLS uint32_t t_group_depth;
static PULSE_TLS uint64_t t_group_id;
/* The id of the communicator this thread is creating, while NCCL runs its
 * init: the profiler plugin's init (called inside it, on this thread, for
 * blocking communicators) reads it to tie NCCL's commHash to our id. */
static PULSE_TLS uint64_t t_init_id;

PULSE_EXPORT uint64_t pulse_hook_init_comm_id(void)
{
	return t_init_id;
}

static uint32_t slot_of(uintptr_t p)
{
	uint64_t x = (uint64_t)p * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(x >> 40) & (COMM_SLOTS - 1);
}

static struct comm_slot *comm_find(ncclComm_t c)
{
	uintptr_t k = (uintptr_t)c;
	if (k <= KEY_TOMB)
		return NULL;
	uint32_t i = slot_of(k);
	for (uint32_t n = 0; n < COMM_SLOTS; n++, i = (i + 1) & (COMM_SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&g_comms[i].key, memory_order_acquire);
		if (cur == k)
			return atomic_load_explicit(&g_comms[i].live, memory_order_acquire) ? &g_comms[i] : NULL;
		if (cur == KEY_EMPTY)
			return NULL;
	}
	return NULL;
}

static void comm_add(ncclComm_t c, uint64_t id, int rank, int nranks)
{
	uintptr_t k = (uintptr_t)c;
	if (k <= KEY_TOMB)
		return;
	struct comm_slot *old = comm_find(c);
	if (old) { /* a handle we missed being destroyed: reuse the slot */
		atomic_store(&old->live, 0);
		old->id = id;
		old->rank = rank;
		old->nranks = nranks;
		atomic_store(&old->seq, 0);
		atomic_store(&old->splits, 0);
		atomic_store_explicit(&old->live, 1, memory_order_release);
		return;
	}
	uint32_t i = slot_of(k);
	for (uint32_t n = 0; n < COMM_SLOTS; n++, i = (i + 1) & (COMM_SLOTS - 1)) {
		uintptr_t cur = atomic_load(&g_comms[i].key);
		if ((cur == KEY_EMPTY || cur == KEY_TOMB) &&
		    atomic_compare_exchange_strong(&g_comms[i].key, &cur, k)) {
			struct comm_slot *s = &g_comms[i];
			s->id = id;
			s->rank = rank;
			s->nranks = nranks;
			atomic_store(&s->seq, 0);
			atomic_store(&s->splits, 0);
			atomic_store_explicit(&s->live, 1, memory_order_release);
			return;
		}
	}
	/* Table full: its operators are recorded with PULSE_HOOK_F_UNKNOWN_COMM. */
}

static void comm_remove(ncclComm_t c)
{
	struct comm_slot *s = comm_find(c);
	if (!s)
		return;
	atomic_store(&s->live, 0);
	atomic_store_explicit(&s->key, KEY_TOMB, memory_order_release);
}

void pulse_hook_nccl_atfork_child(void)
{
	/* NCCL communicators do not survive fork; the child starts over. */
	for (uint32_t i = 0; i < COMM_SLOTS; i++) {
		atomic_store(&g_comms[i].live, 0);
		atomic_store(&g_comms[i].key, KEY_EMPTY);
	}
	t_group_depth = 0;
	t_group_id = 0;
}

/* ---------- the real functions ---------- */

#define REAL(fn, type)                                                              \
	static _Atomic(type) real_##fn;                                             \
	static type get_##fn(void)                                                  \
	{                                                                           \
		type f = atomic_load_explicit(&real_##fn, memory_order_acquire);   \
		if (!f) {                                                           \
			f = (type)pulse_next(#fn);                                  \
			atomic_store_explicit(&real_##fn, f, memory_order_release); \
		}                                                                   \
		return f;                                                           \
	}

typedef ncclResult_t (*init_rank_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*init_rank_config_fn)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
typedef ncclResult_t (*init_all_fn)(ncclComm_t *, int, const int *);
typedef ncclResult_t (*split_fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
typedef ncclResult_t (*init_scalable_fn)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *);
typedef ncclResult_t (*comm_fn)(ncclComm_t);
typedef ncclResult_t (*void_fn)(void);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
				     ncclComm_t, cudaStream_t);
typedef ncclResult_t (*gather_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*bcast_fn)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
				 cudaStream_t);
typedef ncclResult_t (*bcast_inplace_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
				  ncclComm_t, cudaStream_t);
typedef ncclResult_t (*send_fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*recv_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

REAL(ncclCommInitRank, init_rank_fn)
REAL(ncclCommInitRankConfig, init_rank_config_fn)
REAL(ncclCommInitAll, init_all_fn)
REAL(ncclCommSplit, split_fn)
REAL(ncclCommInitRankScalable, init_scalable_fn)
REAL(ncclCommDestroy, comm_fn)
REAL(ncclCommAbort, comm_fn)
REAL(ncclGroupStart, void_fn)
REAL(ncclGroupEnd, void_fn)
REAL(ncclAllReduce, allreduce_fn)
REAL(ncclAllGather, gather_fn)
REAL(ncclReduceScatter, allreduce_fn)
REAL(ncclAlltoAll, gather_fn)
REAL(ncclBroadcast, bcast_fn)
REAL(ncclBcast, bcast_inplace_fn)
REAL(ncclReduce, reduce_fn)
REAL(ncclSend, send_fn)
REAL(ncclRecv, recv_fn)

#define MISSING(fn) ncclSystemError /* no next definition: NCCL is not there */

/* ---------- lifecycle ---------- */

static void emit_comm(uint8_t kind, uint8_t how, ncclComm_t c, uint64_t id, uint64_t parent,
		      int rank, int nranks, int color, int key, ncclResult_t res, uint64_t t,
		      const struct pulse_hook_gpu *gpu)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = t;
	r.u.comm.comm_id = id;
	r.u.comm.parent_id = parent;
	r.u.comm.handle = (uint64_t)(uintptr_t)c;
	r.u.comm.rank = rank;
	r.u.comm.nranks = nranks;
	r.u.comm.color = color;
	r.u.comm.key = key;
	r.u.comm.result = res;
	r.u.comm.how = how;
	if (gpu)
		r.u.comm.gpu = *gpu;
	else
		r.u.comm.gpu.cuda_dev = -1;
	pulse_hook_emit(&r, kind);
}

static void after_init(uint8_t how, ncclComm_t *comm, uint64_t id, uint64_t parent, int rank,
		       int nranks, int color, int key, ncclResult_t res, uint64_t t)
{
	ncclComm_t c = comm ? *comm : NULL;
	if (c)
		comm_add(c, id, rank, nranks);
	struct pulse_hook_gpu gpu;
	pulse_hook_gpu_identify(&gpu);
	emit_comm(PULSE_HOOK_COMM_INIT, how, c, id, parent, rank, nranks, color, key, res, t, &gpu);
}

PULSE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	init_rank_fn f = get_ncclCommInitRank();
	if (!f)
		return MISSING(ncclCommInitRank);
	if (!pulse_hook_ready())
		return f(comm, nranks, id, rank);
	uint64_t t = pulse_hook_now_ns();
	uint64_t cid = pulse_comm_id_from_bytes(id.internal, sizeof id.internal);
	t_init_id = cid;
	ncclResult_t res = f(comm, nranks, id, rank);
	t_init_id = 0;
	after_init(PULSE_HOOK_HOW_INIT_RANK, comm, cid, 0, rank, nranks, -1, -1, res, t);
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
						 int rank, ncclConfig_t *config)
{
	init_rank_config_fn f = get_ncclCommInitRankConfig();
	if (!f)
		return MISSING(ncclCommInitRankConfig);
	if (!pulse_hook_ready())
		return f(comm, nranks, id, rank, config);
	uint64_t t = pulse_hook_now_ns();
	uint64_t cid = pulse_comm_id_from_bytes(id.internal, sizeof id.internal);
	t_init_id = cid;
	ncclResult_t res = f(comm, nranks, id, rank, config);
	t_init_id = 0;
	after_init(PULSE_HOOK_HOW_INIT_RANK_CONFIG, comm, cid, 0, rank, nranks, -1, -1, res, t);
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
						   ncclUniqueId *ids, ncclConfig_t *config)
{
	init_scalable_fn f = get_ncclCommInitRankScalable();
	if (!f)
		return MISSING(ncclCommInitRankScalable);
	if (!pulse_hook_ready())
		return f(comm, nranks, rank, nId, ids, config);
	uint64_t t = pulse_hook_now_ns();
	/* Bad arguments are NCCL's to reject; we only hash what is sane. */
	uint64_t id = 0;
	if (ids && nId > 0 && nId <= 65536)
		id = pulse_comm_id_from_bytes(ids, (size_t)nId * sizeof *ids);
	t_init_id = id;
	ncclResult_t res = f(comm, nranks, rank, nId, ids, config);
	t_init_id = 0;
	after_init(PULSE_HOOK_HOW_INIT_RANK_SCALABLE, comm, id, 0, rank, nranks, -1, -1, res, t);
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	init_all_fn f = get_ncclCommInitAll();
	if (!f)
		return MISSING(ncclCommInitAll);
	if (!pulse_hook_ready())
		return f(comms, ndev, devlist);
	uint64_t t = pulse_hook_now_ns();
	uint64_t call = atomic_fetch_add(&g_init_all_calls, 1);
	uint64_t id = pulse_comm_id_local((uint32_t)getpid(), call, 0);
	t_init_id = id;
	ncclResult_t res = f(comms, ndev, devlist);
	t_init_id = 0;
	for (int i = 0; comms && i < ndev && i < 65536; i++) {
		ncclComm_t c = comms[i];
		if (c)
			comm_add(c, id, i, ndev);
		struct pulse_hook_gpu gpu;
		memset(&gpu, 0, sizeof gpu);
		gpu.cuda_dev = devlist ? devlist[i] : i;
		gpu.source = PULSE_HOOK_GPU_CUDART;
		emit_comm(PULSE_HOOK_COMM_INIT, PULSE_HOOK_HOW_INIT_ALL, c, id, 0, i, ndev, -1, -1, res,
			  t, &gpu);
	}
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
					ncclConfig_t *config)
{
	split_fn f = get_ncclCommSplit();
	if (!f)
		return MISSING(ncclCommSplit);
	if (!pulse_hook_ready())
		return f(comm, color, key, newcomm, config);
	uint64_t t = pulse_hook_now_ns();
	struct comm_slot *p = comm_find(comm);
	uint64_t parent = p ? p->id : 0;
	uint64_t k = p ? atomic_fetch_add(&p->splits, 1) : 0;
	uint64_t id = parent ? pulse_comm_id_split(parent, k, color) : 0;
	t_init_id = id;
	ncclResult_t res = f(comm, color, key, newcomm, config);
	t_init_id = 0;
	ncclComm_t c = newcomm ? *newcomm : NULL;
	if (!c && res == ncclSuccess)
		return res; /* NCCL_SPLIT_NOCOLOR: no new communicator here */
	/* The child's rank and size are NCCL's to compute; -1 here (the
	 * profiler plugin reports them), the agent joins them by comm_id. */
	after_init(PULSE_HOOK_HOW_SPLIT, newcomm, id, parent, -1, -1, color, key, res, t);
	return res;
}

static ncclResult_t end_comm(comm_fn f, ncclComm_t comm, uint8_t how)
{
	if (!pulse_hook_ready())
		return f(comm);
	uint64_t t = pulse_hook_now_ns();
	struct comm_slot *s = comm_find(comm);
	uint64_t id = s ? s->id : 0;
	int rank = s ? s->rank : -1, nranks = s ? s->nranks : -1;
	comm_remove(comm);
	ncclResult_t res = f(comm);
	emit_comm(PULSE_HOOK_COMM_DESTROY, how, comm, id, 0, rank, nranks, -1, -1, res, t, NULL);
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	comm_fn f = get_ncclCommDestroy();
	return f ? end_comm(f, comm, PULSE_HOOK_HOW_DESTROY) : MISSING(ncclCommDestroy);
}

PULSE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	comm_fn f = get_ncclCommAbort();
	return f ? end_comm(f, comm, PULSE_HOOK_HOW_ABORT) : MISSING(ncclCommAbort);
}

/* ---------- groups ---------- */

static void emit_group(uint8_t kind, uint64_t gid, uint32_t depth, ncclResult_t res, uint64_t t)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = t;
	r.u.group.group_id = gid;
	r.u.group.depth = depth;
	r.u.group.result = res;
	pulse_hook_emit(&r, kind);
}

PULSE_EXPORT ncclResult_t ncclGroupStart(void)
{
	void_fn f = get_ncclGroupStart();
	if (!f)
		return MISSING(ncclGroupStart);
	if (!pulse_hook_ready())
		return f();
	uint64_t t = pulse_hook_now_ns();
	if (t_group_depth++ == 0)
		t_group_id = atomic_fetch_add_explicit(&g_group_ids, 1, memory_order_relaxed) + 1;
	ncclResult_t res = f();
	emit_group(PULSE_HOOK_GROUP_START, t_group_id, t_group_depth, res, t);
	return res;
}

PULSE_EXPORT ncclResult_t ncclGroupEnd(void)
{
	void_fn f = get_ncclGroupEnd();
	if (!f)
		return MISSING(ncclGroupEnd);
	if (!pulse_hook_ready())
		return f();
	uint64_t t = pulse_hook_now_ns();
	uint64_t gid = t_group_id;
	uint32_t depth = t_group_depth;
	if (t_group_depth > 0 && --t_group_depth == 0)
		t_group_id = 0;
	ncclResult_t res = f();
	emit_group(PULSE_HOOK_GROUP_END, gid, depth, res, t);
	return res;
}

/* ---------- operators ---------- */

struct op_args {
	uint8_t type;
	uint8_t redop;
	ncclDataType_t dt;
	size_t count;
	int root_peer;
	ncclComm_t comm;
	cudaStream_t stream;
};

/* Before the call: sequence number and time. */
static void op_begin(struct pulse_hook_record *r, const struct op_args *a)
{
	memset(r, 0, sizeof *r);
	r->time_ns = pulse_hook_now_ns();
	struct comm_slot *s = comm_find(a->comm);
	if (s) {
		r->u.op.comm_id = s->id;
		r->u.op.seq = atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
	} else {
		r->flags = PULSE_HOOK_F_UNKNOWN_COMM;
		r->u.op.seq = atomic_fetch_add_explicit(&g_unknown_seq, 1, memory_order_relaxed);
	}
	r->u.op.count = a->count;
	r->u.op.stream = (uint64_t)(uintptr_t)a->stream;
	r->u.op.group_id = t_group_id;
	r->u.op.root_peer = a->root_peer;
	r->u.op.type = a->type;
	r->u.op.datatype = (uint8_t)a->dt;
	r->u.op.redop = a->redop;
}

static void op_end(struct pulse_hook_record *r, ncclResult_t res)
{
	r->u.op.result = res;
	pulse_hook_emit(r, PULSE_HOOK_OP);
}

#define NO_REDOP 0xff

PULSE_EXPORT ncclResult_t ncclAllReduce(const void *s, void *d, size_t count, ncclDataType_t dt,
					ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	allreduce_fn f = get_ncclAllReduce();
	if (!f)
		return MISSING(ncclAllReduce);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, op, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_ALLREDUCE, (uint8_t)op, dt, count, -1, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, op, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclReduceScatter(const void *s, void *d, size_t count, ncclDataType_t dt,
					    ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	allreduce_fn f = get_ncclReduceScatter();
	if (!f)
		return MISSING(ncclReduceScatter);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, op, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_REDUCESCATTER, (uint8_t)op, dt, count, -1, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, op, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclAllGather(const void *s, void *d, size_t count, ncclDataType_t dt,
					ncclComm_t comm, cudaStream_t st)
{
	gather_fn f = get_ncclAllGather();
	if (!f)
		return MISSING(ncclAllGather);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_ALLGATHER, NO_REDOP, dt, count, -1, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclAlltoAll(const void *s, void *d, size_t count, ncclDataType_t dt,
				       ncclComm_t comm, cudaStream_t st)
{
	gather_fn f = get_ncclAlltoAll();
	if (!f)
		return MISSING(ncclAlltoAll);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_ALLTOALL, NO_REDOP, dt, count, -1, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclBroadcast(const void *s, void *d, size_t count, ncclDataType_t dt,
					int root, ncclComm_t comm, cudaStream_t st)
{
	bcast_fn f = get_ncclBroadcast();
	if (!f)
		return MISSING(ncclBroadcast);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, root, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_BROADCAST, NO_REDOP, dt, count, root, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, root, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclBcast(void *buf, size_t count, ncclDataType_t dt, int root,
				    ncclComm_t comm, cudaStream_t st)
{
	bcast_inplace_fn f = get_ncclBcast();
	if (!f)
		return MISSING(ncclBcast);
	if (!pulse_hook_ready())
		return f(buf, count, dt, root, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_BROADCAST, NO_REDOP, dt, count, root, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(buf, count, dt, root, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclReduce(const void *s, void *d, size_t count, ncclDataType_t dt,
				     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t st)
{
	reduce_fn f = get_ncclReduce();
	if (!f)
		return MISSING(ncclReduce);
	if (!pulse_hook_ready())
		return f(s, d, count, dt, op, root, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_REDUCE, (uint8_t)op, dt, count, root, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, d, count, dt, op, root, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer,
				   ncclComm_t comm, cudaStream_t st)
{
	send_fn f = get_ncclSend();
	if (!f)
		return MISSING(ncclSend);
	if (!pulse_hook_ready())
		return f(s, count, dt, peer, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_SEND, NO_REDOP, dt, count, peer, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(s, count, dt, peer, comm, st);
	op_end(&r, res);
	return res;
}

PULSE_EXPORT ncclResult_t ncclRecv(void *d, size_t count, ncclDataType_t dt, int peer,
				   ncclComm_t comm, cudaStream_t st)
{
	recv_fn f = get_ncclRecv();
	if (!f)
		return MISSING(ncclRecv);
	if (!pulse_hook_ready())
		return f(d, count, dt, peer, comm, st);
	struct pulse_hook_record r;
	struct op_args a = { PULSE_HOOK_OP_RECV, NO_REDOP, dt, count, peer, comm, st };
	op_begin(&r, &a);
	ncclResult_t res = f(d, count, dt, peer, comm, st);
	op_end(&r, res);
	return res;
}
