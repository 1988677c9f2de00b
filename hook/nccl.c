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
/* Set while this thread is inside one of our operator wrappers: NCCL's
 * ncclBcast is `return ncclBroadcast(...)`, and its exports are weak with
 * default visibility, so that inner call comes back through the PLT into
 * our ncclBroadcast. Only the outermost call is recorded. */
static PULSE_TLS uint32_t t_in_op;
/* Operators called inside a group are held until the group closes: NCCL
 * launches them at ncclGroupEnd, and never launches those of a group that
 * ncclGroupSimulateEnd closes (they are dropped, not reported). They get
 * their sequence numbers when released. A group with more than HELD_OPS
 * operators releases the oldest early (then, if simulated, those were
 * reported). Default TLS model: 10 KiB per thread. */
#define HELD_OPS 80u
struct held_op {
	struct pulse_hook_record r;
	ncclComm_t comm;
};
static __thread struct held_op t_held[HELD_OPS];
static PULSE_TLS uint32_t t_nheld;

/* ---------- inits waiting for the profiler plugin's join ----------
 * NCCL runs a communicator's init (and the profiler plugin's init inside
 * it) on the calling thread only for a blocking, ungrouped init. Grouped
 * inits run at ncclGroupEnd, ncclCommInitAll's and non-blocking ones on
 * NCCL's own threads, where t_init_id is 0. So every init we see also
 * leaves (id, rank, nranks) here until the plugin claims it by the rank
 * and size NCCL hands to its init, or the communicator goes away. A fixed
 * table, a spin lock (inits are rare), no allocation. */
#define PENDING_SLOTS 256u
enum { PEND_FREE = 0, PEND_WAITING, PEND_CLAIMED };
struct pending {
	uint64_t id, order;
	uintptr_t handle; /* the ncclComm_t, once the init call returned it */
	int32_t rank, nranks;
	int state;
};
static struct pending g_pend[PENDING_SLOTS];
static uint64_t g_pend_order;
static atomic_flag g_pend_lock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t g_pend_ambiguous;

static void pend_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&g_pend_lock, memory_order_acquire))
		;
}

static void pend_unlock(void)
{
	atomic_flag_clear_explicit(&g_pend_lock, memory_order_release);
}

/* Before the init call. Returns the slot (for pend_done). */
static int pend_add(uint64_t id, int rank, int nranks)
{
	if (!id || rank < 0 || nranks < 1)
		return -1;
	pend_lock();
	uint32_t best = 0;
	for (uint32_t i = 0; i < PENDING_SLOTS; i++) {
		if (g_pend[i].state == PEND_FREE) {
			best = i;
			break;
		}
		if (g_pend[i].order < g_pend[best].order)
			best = i; /* full: the oldest goes */
	}
	struct pending *p = &g_pend[best];
	p->id = id;
	p->rank = rank;
	p->nranks = nranks;
	p->handle = 0;
	p->order = ++g_pend_order;
	p->state = PEND_WAITING;
	pend_unlock();
	return (int)best;
}

/* After the init call: keep the entry while the init may still be running
 * (success or ncclInProgress), drop it otherwise. */
static void pend_done(int slot, uint64_t id, ncclComm_t c, ncclResult_t res)
{
	if (slot < 0)
		return;
	pend_lock();
	struct pending *p = &g_pend[slot];
	if (p->id == id && p->state != PEND_FREE) {
		if ((res == ncclSuccess || res == ncclInProgress) && c)
			p->handle = (uintptr_t)c;
		else if (p->state == PEND_WAITING)
			p->state = PEND_FREE;
	}
	pend_unlock();
}

static void pend_forget(ncclComm_t c)
{
	pend_lock();
	for (uint32_t i = 0; i < PENDING_SLOTS; i++)
		if (g_pend[i].state != PEND_FREE && g_pend[i].handle == (uintptr_t)c)
			g_pend[i].state = PEND_FREE;
	pend_unlock();
}

PULSE_EXPORT uint64_t pulse_hook_init_comm_id(void)
{
	return t_init_id;
}

/* For the profiler plugin's init, with the rank and size NCCL gives it:
 * the id of the init this thread is running, or else the one waiting init
 * of that rank and size; 0 when none or several match (then the agent
 * joins by NCCL's hash). */
PULSE_EXPORT uint64_t pulse_hook_claim_comm_id(int rank, int nranks)
{
	uint64_t mine = t_init_id, id = 0;
	pend_lock();
	struct pending *hit = NULL;
	int n = 0;
	for (uint32_t i = 0; i < PENDING_SLOTS; i++) {
		struct pending *p = &g_pend[i];
		if (p->state != PEND_WAITING || p->rank != rank || p->nranks != nranks)
			continue;
		if (mine && p->id != mine)
			continue;
		if (!hit || p->order < hit->order)
			hit = p;
		n++;
	}
	if (mine) {
		id = mine;
		if (hit)
			hit->state = PEND_CLAIMED;
	} else if (n == 1) {
		id = hit->id;
		hit->state = PEND_CLAIMED;
	} else if (n > 1) {
		atomic_fetch_add_explicit(&g_pend_ambiguous, 1, memory_order_relaxed);
	}
	pend_unlock();
	return id;
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
	t_in_op = 0;
	t_nheld = 0;
	for (uint32_t i = 0; i < PENDING_SLOTS; i++)
		g_pend[i].state = PEND_FREE;
	atomic_flag_clear(&g_pend_lock);
}

/* ---------- the real functions ---------- */

#define REAL(fn, type)                                                              \
	static _Atomic(type) real_##fn;                                             \
	static type get_##fn(void)                                                  \
	{                                                                           \
		type f = atomic_load_explicit(&real_##fn, memory_order_acquire);   \
		if (!f) {                                                           \
			f = (type)pulse_next_or_loaded(#fn, "libnccl.so");          \
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
typedef ncclResult_t (*put_signal_fn)(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int,
				      int, unsigned int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*signal_fn)(int, int, int, unsigned int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*wait_signal_fn)(int, ncclWaitSignalDesc_t *, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*sim_end_fn)(ncclSimInfo_t *);
typedef ncclResult_t (*shrink_fn)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);
typedef ncclResult_t (*grow_fn)(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, ncclConfig_t *);
typedef ncclResult_t (*comm_flags_fn)(ncclComm_t, int);

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
/* Newer entry points: resolved on first call like the others, so an older
 * NCCL without them loads and runs; a program that calls one there gets
 * ncclSystemError (it would not link or dlsym against that NCCL anyway). */
REAL(ncclGather, bcast_fn)
REAL(ncclScatter, bcast_fn)
REAL(ncclPutSignal, put_signal_fn)
REAL(ncclSignal, signal_fn)
REAL(ncclWaitSignal, wait_signal_fn)
REAL(ncclGroupSimulateEnd, sim_end_fn)
REAL(ncclCommShrink, shrink_fn)
REAL(ncclCommGrow, grow_fn)
REAL(ncclCommFinalize, comm_fn)
REAL(ncclCommRevoke, comm_flags_fn)
REAL(ncclCommSuspend, comm_flags_fn)
REAL(ncclCommResume, comm_fn)

#define MISSING(fn) ncclSystemError /* no next definition: NCCL is not there */
#define NO_REDOP 0xff
#define NO_DATATYPE 0xff

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
	int slot = pend_add(cid, rank, nranks);
	t_init_id = cid;
	ncclResult_t res = f(comm, nranks, id, rank);
	t_init_id = 0;
	pend_done(slot, cid, comm ? *comm : NULL, res);
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
	int slot = pend_add(cid, rank, nranks);
	t_init_id = cid;
	ncclResult_t res = f(comm, nranks, id, rank, config);
	t_init_id = 0;
	pend_done(slot, cid, comm ? *comm : NULL, res);
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
	int slot = pend_add(id, rank, nranks);
	t_init_id = id;
	ncclResult_t res = f(comm, nranks, rank, nId, ids, config);
	t_init_id = 0;
	pend_done(slot, id, comm ? *comm : NULL, res);
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
	/* NCCL runs the ndev inits on threads of its own */
	int slots[64];
	for (int i = 0; i < ndev && i < 64; i++)
		slots[i] = pend_add(id, i, ndev);
	t_init_id = id;
	ncclResult_t res = f(comms, ndev, devlist);
	t_init_id = 0;
	for (int i = 0; comms && i < ndev && i < 65536; i++) {
		ncclComm_t c = comms[i];
		if (i < 64)
			pend_done(slots[i], id, c, res);
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
	pend_forget(comm);
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

/* ---------- communicators made from others, state changes (2.27-2.29) ---------- */

/* The child of a shrink: every surviving rank calls it on its parent in
 * the same order as its splits, so the parent's derivation counter gives
 * an id equal on every rank, as for a split. */
#define SHRINK_COLOR (-0x5348) /* never a split color: those are >= 0 */

PULSE_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
					 ncclConfig_t *config, int flags)
{
	shrink_fn f = get_ncclCommShrink();
	if (!f)
		return MISSING(ncclCommShrink);
	if (!pulse_hook_ready())
		return f(comm, exclude, nexclude, newcomm, config, flags);
	uint64_t t = pulse_hook_now_ns();
	struct comm_slot *p = comm_find(comm);
	uint64_t parent = p ? p->id : 0;
	uint64_t k = p ? atomic_fetch_add(&p->splits, 1) : 0;
	uint64_t id = parent ? pulse_comm_id_split(parent, k, SHRINK_COLOR) : 0;
	t_init_id = id;
	ncclResult_t res = f(comm, exclude, nexclude, newcomm, config, flags);
	t_init_id = 0;
	/* rank and size are NCCL's to compute (-1), as for a split; key: the flags */
	after_init(PULSE_HOOK_HOW_SHRINK, newcomm, id, parent, -1, -1, -1, flags, res, t);
	return res;
}

/* Existing ranks pass their communicator (the root also the new id, the
 * others NULL); new ranks pass NULL and the id. The id is the hash of the
 * new unique id where this rank has it, else 0 (the agent then joins by
 * NCCL's hash through the profiler). */
PULSE_EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *uid, int rank,
				       ncclComm_t *newcomm, ncclConfig_t *config)
{
	grow_fn f = get_ncclCommGrow();
	if (!f)
		return MISSING(ncclCommGrow);
	if (!pulse_hook_ready())
		return f(comm, nranks, uid, rank, newcomm, config);
	uint64_t t = pulse_hook_now_ns();
	struct comm_slot *p = comm_find(comm);
	uint64_t parent = p ? p->id : 0;
	uint64_t id = uid ? pulse_comm_id_from_bytes(uid->internal, sizeof uid->internal) : 0;
	int slot = pend_add(id, rank, nranks);
	t_init_id = id;
	ncclResult_t res = f(comm, nranks, uid, rank, newcomm, config);
	t_init_id = 0;
	pend_done(slot, id, newcomm ? *newcomm : NULL, res);
	after_init(PULSE_HOOK_HOW_GROW, newcomm, id, parent, rank, nranks, -1, -1, res, t);
	return res;
}

static ncclResult_t comm_event(ncclComm_t comm, uint8_t how, int flags, ncclResult_t res, uint64_t t)
{
	struct comm_slot *s = comm_find(comm);
	emit_comm(PULSE_HOOK_COMM_EVENT, how, comm, s ? s->id : 0, 0, s ? s->rank : -1, s ? s->nranks : -1,
		  -1, flags, res, t, NULL);
	return res;
}

PULSE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	comm_fn f = get_ncclCommFinalize();
	if (!f)
		return MISSING(ncclCommFinalize);
	if (!pulse_hook_ready())
		return f(comm);
	uint64_t t = pulse_hook_now_ns();
	return comm_event(comm, PULSE_HOOK_HOW_FINALIZE, 0, f(comm), t);
}

PULSE_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
	comm_flags_fn f = get_ncclCommRevoke();
	if (!f)
		return MISSING(ncclCommRevoke);
	if (!pulse_hook_ready())
		return f(comm, flags);
	uint64_t t = pulse_hook_now_ns();
	return comm_event(comm, PULSE_HOOK_HOW_REVOKE, flags, f(comm, flags), t);
}

PULSE_EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
	comm_flags_fn f = get_ncclCommSuspend();
	if (!f)
		return MISSING(ncclCommSuspend);
	if (!pulse_hook_ready())
		return f(comm, flags);
	uint64_t t = pulse_hook_now_ns();
	return comm_event(comm, PULSE_HOOK_HOW_SUSPEND, flags, f(comm, flags), t);
}

PULSE_EXPORT ncclResult_t ncclCommResume(ncclComm_t comm)
{
	comm_fn f = get_ncclCommResume();
	if (!f)
		return MISSING(ncclCommResume);
	if (!pulse_hook_ready())
		return f(comm);
	uint64_t t = pulse_hook_now_ns();
	return comm_event(comm, PULSE_HOOK_HOW_RESUME, 0, f(comm), t);
}

/* ---------- operators: record, hold, release ---------- */

/* Give a finished record its sequence number and write it. */
static void op_release(struct pulse_hook_record *r, ncclComm_t comm)
{
	struct comm_slot *s = (r->flags & PULSE_HOOK_F_UNKNOWN_COMM) ? NULL : comm_find(comm);
	if (s && s->id == r->u.op.comm_id) {
		r->u.op.seq = atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
	} else {
		r->flags |= PULSE_HOOK_F_UNKNOWN_COMM;
		r->u.op.seq = atomic_fetch_add_explicit(&g_unknown_seq, 1, memory_order_relaxed);
	}
	pulse_hook_emit(r, PULSE_HOOK_OP);
}

static void held_release_all(void)
{
	for (uint32_t i = 0; i < t_nheld; i++)
		op_release(&t_held[i].r, t_held[i].comm);
	t_nheld = 0;
}

/* ---------- groups ---------- */

static void emit_group(uint8_t kind, uint64_t gid, uint32_t depth, ncclResult_t res, uint64_t t,
		       uint32_t flags)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = t;
	r.flags = flags;
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
	emit_group(PULSE_HOOK_GROUP_START, t_group_id, t_group_depth, res, t, 0);
	return res;
}

/* Closing a level: the outermost one releases the held operators (End) or
 * drops them (SimulateEnd: they never launch). */
static void group_close(ncclResult_t res, uint64_t t, int simulated)
{
	uint64_t gid = t_group_id;
	uint32_t depth = t_group_depth;
	int outer = t_group_depth <= 1;
	if (t_group_depth > 0 && --t_group_depth == 0)
		t_group_id = 0;
	if (outer) {
		if (simulated)
			t_nheld = 0;
		else
			held_release_all();
	}
	emit_group(PULSE_HOOK_GROUP_END, gid, depth, res, t, outer && simulated ? PULSE_HOOK_F_SIMULATED : 0);
}

PULSE_EXPORT ncclResult_t ncclGroupEnd(void)
{
	void_fn f = get_ncclGroupEnd();
	if (!f)
		return MISSING(ncclGroupEnd);
	if (!pulse_hook_ready())
		return f();
	uint64_t t = pulse_hook_now_ns();
	ncclResult_t res = f();
	group_close(res, t, 0);
	return res;
}

/* Since 2.22: closes the group like ncclGroupEnd; at the outermost level
 * NCCL only estimates the group's time and launches nothing. */
PULSE_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	sim_end_fn f = get_ncclGroupSimulateEnd();
	if (!f)
		return MISSING(ncclGroupSimulateEnd);
	if (!pulse_hook_ready())
		return f(info);
	uint64_t t = pulse_hook_now_ns();
	ncclResult_t res = f(info);
	group_close(res, t, 1);
	return res;
}

/* ---------- operators ---------- */

struct op_args {
	uint8_t type;
	int has_redop;
	ncclRedOp_t redop;
	ncclDataType_t dt;
	size_t count;
	int root_peer;
	ncclComm_t comm;
	cudaStream_t stream;
};

/* Before the call: time and communicator. */
static void op_begin(struct pulse_hook_record *r, const struct op_args *a)
{
	memset(r, 0, sizeof *r);
	r->time_ns = pulse_hook_now_ns();
	struct comm_slot *s = comm_find(a->comm);
	if (s)
		r->u.op.comm_id = s->id;
	else
		r->flags = PULSE_HOOK_F_UNKNOWN_COMM;
	r->u.op.count = a->count;
	r->u.op.stream = (uint64_t)(uintptr_t)a->stream;
	r->u.op.group_id = t_group_id;
	r->u.op.root_peer = a->root_peer;
	r->u.op.type = a->type;
	r->u.op.datatype = (uint8_t)a->dt;
	r->u.op.redop = a->has_redop ? (uint8_t)a->redop : NO_REDOP;
	if (a->has_redop) {
		/* ncclRedOpCreatePreMulSum's handles do not fit 8 bits */
		r->flags |= PULSE_HOOK_F_REDOP32;
		r->u.op.redop32 = a->redop;
	}
}

/* After the call: written now, or held until the group closes. */
static void op_end(struct pulse_hook_record *r, ncclComm_t comm, ncclResult_t res)
{
	r->u.op.result = res;
	if (t_group_depth == 0) {
		op_release(r, comm);
		return;
	}
	if (t_nheld == HELD_OPS) { /* release the oldest half early */
		uint32_t k = HELD_OPS / 2;
		for (uint32_t i = 0; i < k; i++)
			op_release(&t_held[i].r, t_held[i].comm);
		memmove(t_held, t_held + k, (HELD_OPS - k) * sizeof t_held[0]);
		t_nheld -= k;
	}
	t_held[t_nheld].r = *r;
	t_held[t_nheld].comm = comm;
	t_nheld++;
}

/* The body every operator wrapper shares: record the outermost call only. */
#define OP_CALL(call, ...)                                    \
	do {                                                  \
		if (!pulse_hook_ready() || t_in_op)           \
			return call;                          \
		struct pulse_hook_record r;                   \
		struct op_args a = { __VA_ARGS__ };           \
		op_begin(&r, &a);                             \
		t_in_op = 1;                                  \
		ncclResult_t res = call;                      \
		t_in_op = 0;                                  \
		op_end(&r, a.comm, res);                      \
		return res;                                   \
	} while (0)

#define RED 1
#define NORED 0, 0

PULSE_EXPORT ncclResult_t ncclAllReduce(const void *s, void *d, size_t count, ncclDataType_t dt,
					ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	allreduce_fn f = get_ncclAllReduce();
	if (!f)
		return MISSING(ncclAllReduce);
	OP_CALL(f(s, d, count, dt, op, comm, st), PULSE_HOOK_OP_ALLREDUCE, RED, op, dt, count, -1, comm, st);
}

PULSE_EXPORT ncclResult_t ncclReduceScatter(const void *s, void *d, size_t count, ncclDataType_t dt,
					    ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	allreduce_fn f = get_ncclReduceScatter();
	if (!f)
		return MISSING(ncclReduceScatter);
	OP_CALL(f(s, d, count, dt, op, comm, st), PULSE_HOOK_OP_REDUCESCATTER, RED, op, dt, count, -1, comm,
		st);
}

PULSE_EXPORT ncclResult_t ncclAllGather(const void *s, void *d, size_t count, ncclDataType_t dt,
					ncclComm_t comm, cudaStream_t st)
{
	gather_fn f = get_ncclAllGather();
	if (!f)
		return MISSING(ncclAllGather);
	OP_CALL(f(s, d, count, dt, comm, st), PULSE_HOOK_OP_ALLGATHER, NORED, dt, count, -1, comm, st);
}

PULSE_EXPORT ncclResult_t ncclAlltoAll(const void *s, void *d, size_t count, ncclDataType_t dt,
				       ncclComm_t comm, cudaStream_t st)
{
	gather_fn f = get_ncclAlltoAll();
	if (!f)
		return MISSING(ncclAlltoAll);
	OP_CALL(f(s, d, count, dt, comm, st), PULSE_HOOK_OP_ALLTOALL, NORED, dt, count, -1, comm, st);
}

PULSE_EXPORT ncclResult_t ncclBroadcast(const void *s, void *d, size_t count, ncclDataType_t dt,
					int root, ncclComm_t comm, cudaStream_t st)
{
	bcast_fn f = get_ncclBroadcast();
	if (!f)
		return MISSING(ncclBroadcast);
	OP_CALL(f(s, d, count, dt, root, comm, st), PULSE_HOOK_OP_BROADCAST, NORED, dt, count, root, comm, st);
}

PULSE_EXPORT ncclResult_t ncclBcast(void *buf, size_t count, ncclDataType_t dt, int root,
				    ncclComm_t comm, cudaStream_t st)
{
	bcast_inplace_fn f = get_ncclBcast();
	if (!f)
		return MISSING(ncclBcast);
	OP_CALL(f(buf, count, dt, root, comm, st), PULSE_HOOK_OP_BROADCAST, NORED, dt, count, root, comm, st);
}

PULSE_EXPORT ncclResult_t ncclReduce(const void *s, void *d, size_t count, ncclDataType_t dt,
				     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t st)
{
	reduce_fn f = get_ncclReduce();
	if (!f)
		return MISSING(ncclReduce);
	OP_CALL(f(s, d, count, dt, op, root, comm, st), PULSE_HOOK_OP_REDUCE, RED, op, dt, count, root, comm,
		st);
}

PULSE_EXPORT ncclResult_t ncclGather(const void *s, void *d, size_t count, ncclDataType_t dt, int root,
				     ncclComm_t comm, cudaStream_t st)
{
	bcast_fn f = get_ncclGather();
	if (!f)
		return MISSING(ncclGather);
	OP_CALL(f(s, d, count, dt, root, comm, st), PULSE_HOOK_OP_GATHER, NORED, dt, count, root, comm, st);
}

PULSE_EXPORT ncclResult_t ncclScatter(const void *s, void *d, size_t count, ncclDataType_t dt, int root,
				      ncclComm_t comm, cudaStream_t st)
{
	bcast_fn f = get_ncclScatter();
	if (!f)
		return MISSING(ncclScatter);
	OP_CALL(f(s, d, count, dt, root, comm, st), PULSE_HOOK_OP_SCATTER, NORED, dt, count, root, comm, st);
}

PULSE_EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer,
				   ncclComm_t comm, cudaStream_t st)
{
	send_fn f = get_ncclSend();
	if (!f)
		return MISSING(ncclSend);
	OP_CALL(f(s, count, dt, peer, comm, st), PULSE_HOOK_OP_SEND, NORED, dt, count, peer, comm, st);
}

PULSE_EXPORT ncclResult_t ncclRecv(void *d, size_t count, ncclDataType_t dt, int peer,
				   ncclComm_t comm, cudaStream_t st)
{
	recv_fn f = get_ncclRecv();
	if (!f)
		return MISSING(ncclRecv);
	OP_CALL(f(d, count, dt, peer, comm, st), PULSE_HOOK_OP_RECV, NORED, dt, count, peer, comm, st);
}

PULSE_EXPORT ncclResult_t ncclPutSignal(const void *buf, size_t count, ncclDataType_t dt, int peer,
					ncclWindow_t win, size_t off, int sig, int ctx, unsigned int flags,
					ncclComm_t comm, cudaStream_t st)
{
	put_signal_fn f = get_ncclPutSignal();
	if (!f)
		return MISSING(ncclPutSignal);
	OP_CALL(f(buf, count, dt, peer, win, off, sig, ctx, flags, comm, st), PULSE_HOOK_OP_PUT_SIGNAL, NORED,
		dt, count, peer, comm, st);
}

PULSE_EXPORT ncclResult_t ncclSignal(int peer, int sig, int ctx, unsigned int flags, ncclComm_t comm,
				     cudaStream_t st)
{
	signal_fn f = get_ncclSignal();
	if (!f)
		return MISSING(ncclSignal);
	OP_CALL(f(peer, sig, ctx, flags, comm, st), PULSE_HOOK_OP_SIGNAL, NORED, NO_DATATYPE, 0, peer, comm,
		st);
}

PULSE_EXPORT ncclResult_t ncclWaitSignal(int ndesc, ncclWaitSignalDesc_t *descs, ncclComm_t comm,
					 cudaStream_t st)
{
	wait_signal_fn f = get_ncclWaitSignal();
	if (!f)
		return MISSING(ncclWaitSignal);
	OP_CALL(f(ndesc, descs, comm, st), PULSE_HOOK_OP_WAIT_SIGNAL, NORED, NO_DATATYPE,
		ndesc > 0 ? (size_t)ndesc : 0, -1, comm, st);
}
