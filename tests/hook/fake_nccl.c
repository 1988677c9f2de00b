/* Stand-in libnccl.so.2 for the interception tests. It presents NCCL's C ABI
 * (the entry points in hook/nccl_abi.h) and, like NCCL's ibvwrap, loads
 * libibverbs with dlopen and resolves the verbs with
 * dlvsym(handle, name, "IBVERBS_1.1"). Each communicator gets one QP taken
 * through INIT -> RTR -> RTS, as NCCL's IB transport does per connection.
 * No GPU, no network: operators only validate their arguments. It prints
 * one line per verbs call result so a test can compare them with records,
 * and, as NCCL does with NCCL_DEBUG=INFO, an "Init COMPLETE" line per
 * communicator (subsystem INIT) and a line per call it accepts (COLL), in
 * NCCL's formats (the GPU smoke test's report reads them). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "../../hook/nccl_abi.h"
#include "../../profiler/nccl_profiler_abi.h"

#define EXPORT __attribute__((visibility("default")))

/* The leading members of NCCL's ncclConfig_t (nccl.h): the stand-in reads
 * only `blocking`. */
struct ncclConfig {
	size_t size;
	unsigned int magic, version;
	int blocking;
};

struct ncclComm {
	int rank, nranks;
	uint32_t salt;
	_Atomic int state;  /* ncclInProgress while a non-blocking init runs */
	struct ncclComm *next_deferred;
	struct ibv_qp *qp;
	struct ibv_qp *qp2; /* channel 1's QP, connected at the first net-profiled op */
	uint64_t hash;     /* this stand-in's "commHash" */
	void *prof;        /* profiler plugin context */
	uint64_t coll_seq; /* NCCL's per-communicator collective seqNumber */
	_Atomic uint64_t op_count; /* NCCL's opCount, as its COLL log lines show it */
	const char *func;  /* the init entry point, for the "Init COMPLETE" line */
	const struct ncclComm *parent; /* a split's parent (printed only) */
	int color, key, child_index;
	_Atomic int children;
};

/* How a communicator came to be, for NCCL's "Init COMPLETE" line. */
struct origin {
	const char *func;
	struct ncclComm *parent;
	int color, key;
};

/* ---- NCCL's log: NCCL_DEBUG=INFO (or TRACE) and NCCL_DEBUG_SUBSYS (a
 * comma-separated list, ALL, or ^LIST for all but those; default
 * INIT,BOOTSTRAP,ENV), to stdout as NCCL does without NCCL_DEBUG_FILE ---- */
static int log_on(const char *subsys)
{
	const char *d = getenv("NCCL_DEBUG");
	if (!d || (strcasecmp(d, "INFO") != 0 && strcasecmp(d, "TRACE") != 0))
		return 0;
	const char *l = getenv("NCCL_DEBUG_SUBSYS");
	if (!l)
		l = "INIT,BOOTSTRAP,ENV";
	int invert = l[0] == '^';
	if (invert)
		l++;
	size_t n = strlen(subsys);
	for (const char *p = l; *p;) {
		size_t len = strcspn(p, ",");
		if ((len == n && strncasecmp(p, subsys, n) == 0) || (len == 3 && strncasecmp(p, "ALL", 3) == 0))
			return !invert;
		p += len + (p[len] == ',');
	}
	return invert;
}

static void log_init_complete(const struct ncclComm *c)
{
	if (!log_on("INIT"))
		return;
	if (c->parent)
		printf("fake:%d:%d [0] NCCL INFO %s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 3b000 "
		       "parent %p childCount %d color %d key %d - Init COMPLETE\n",
		       (int)getpid(), (int)getpid(), c->func, (const void *)c, c->rank, c->nranks,
		       (const void *)c->parent, c->child_index, c->color, c->key);
	else
		printf("fake:%d:%d [0] NCCL INFO %s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 3b000 "
		       "commId 0x%llx - Init COMPLETE\n",
		       (int)getpid(), (int)getpid(), c->func, (const void *)c, c->rank, c->nranks,
		       (unsigned long long)c->hash);
	fflush(stdout);
}

/* As ncclEnqueueCheck, once the arguments were checked. */
static void log_call(const char *name, const void *s, const void *d, size_t n, int dt, int op, int root,
		     struct ncclComm *c, cudaStream_t st)
{
	uint64_t k = atomic_fetch_add(&c->op_count, 1);
	if (log_on("COLL")) {
		printf("fake:%d:%d [0] NCCL INFO %s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d "
		       "op %d root %d comm %p [nranks=%d] stream %p\n",
		       (int)getpid(), (int)getpid(), name, (unsigned long long)k, s, d, n, dt, op, root,
		       (const void *)c, c->nranks, st);
		fflush(stdout);
	}
}

/* ---- profiler plugin, loaded the way NCCL loads it ---- */
static int g_prof_loaded;
static const pulse_nccl_profiler_v5_t *g_prof5;
static const pulse_nccl_profiler_v4_t *g_prof4;
static int g_prof_mask;

static void prof_load(void)
{
	if (g_prof_loaded)
		return;
	g_prof_loaded = 1;
	const char *path = getenv("NCCL_PROFILER_PLUGIN");
	if (!path || !*path)
		return;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fake-nccl: profiler plugin: %s\n", dlerror());
		return;
	}
	/* Newest first, as NCCL does; FAKE_NCCL_PROFILER_ABI=N behaves as an
	 * NCCL whose newest version is N. v6 has v5's layout for what we use. */
	const char *abi = getenv("FAKE_NCCL_PROFILER_ABI");
	int newest = abi ? atoi(abi) : 6;
	const char *which = NULL;
	if (newest >= 6 && (g_prof5 = dlsym(h, "ncclProfiler_v6")))
		which = "v6";
	if (!which && newest >= 5 && (g_prof5 = dlsym(h, "ncclProfiler_v5")))
		which = "v5";
	if (!which && newest >= 4 && (g_prof4 = dlsym(h, "ncclProfiler_v4")))
		which = "v4";
	if (!which)
		fprintf(stderr, "fake-nccl: profiler plugin %s has no usable ncclProfiler_vN\n", path);
	else
		printf("fake-nccl: profiler %s\n", which);
}

static void prof_init(struct ncclComm *c)
{
	prof_load();
	int mask = 0;
	if (g_prof5 && g_prof5->init(&c->prof, c->hash, &mask, "fake", 1, c->nranks, c->rank, NULL) != 0)
		c->prof = NULL;
	if (g_prof4 && g_prof4->init(&c->prof, &mask, "fake", c->hash, 1, c->nranks, c->rank, NULL) != 0)
		c->prof = NULL;
	g_prof_mask = mask;
}

/* startEvent with a descriptor of the version NCCL picked: v5/v6 carry a
 * 64-bit type, v4 an 8-bit one; the union sits at the same offset. */
static void *prof_start(struct ncclComm *c, uint64_t type, void *parent, const void *u, size_t ulen)
{
	void *ev = NULL;
	if (g_prof5) {
		pulse_nccl_prof_descr_v5_t d;
		memset(&d, 0, sizeof d);
		d.type = type;
		d.parent_obj = parent;
		d.rank = c->rank;
		memcpy(&d.coll, u, ulen);
		g_prof5->start_event(c->prof, &ev, &d);
	} else if (g_prof4) {
		pulse_nccl_prof_descr_v4_t d;
		memset(&d, 0, sizeof d);
		d.type = (uint8_t)type;
		d.parent_obj = parent;
		d.rank = c->rank;
		memcpy(&d.coll, u, ulen);
		g_prof4->start_event(c->prof, &ev, &d);
	}
	return ev;
}

static void prof_stop(void *ev)
{
	if (g_prof5)
		g_prof5->stop_event(ev);
	else if (g_prof4)
		g_prof4->stop_event(ev);
}

static void prof_state(void *ev, int state, pulse_nccl_prof_state_args_t *a)
{
	if (g_prof5)
		g_prof5->record_event_state(ev, state, a);
	else if (g_prof4)
		g_prof4->record_event_state(ev, state, a);
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

static int lazy_connect(struct ncclComm *c);

/* One proxy op of a task, as NCCL's proxy thread drives it with net
 * profiling: ProxyOp (parent: the task's handle) -> ProxyStep per step ->
 * one NetPlugin event per posted work request (IB descriptor v1, parent:
 * the step's handle). Send steps post an RDMA write of the chunk and a
 * 4-byte write with immediate; receive steps post one receive (length 0,
 * as NCCL leaves it). FAKE_NCCL_NET_STEPS steps (default 4);
 * FAKE_NCCL_NET_BOGUS=1 adds, on the first step, an event of the socket
 * plugin and one of an IB descriptor version 2 (unknown: to be ignored);
 * pxn: the proxy op belongs to another process (its parent is not ours). */
static void prof_proxy(struct ncclComm *c, void *task, int ch, int peer, int is_send, uint32_t qpn, int pxn)
{
	int steps = env_int("FAKE_NCCL_NET_STEPS", 4), bogus = env_int("FAKE_NCCL_NET_BOGUS", 0);
	struct pulse_nccl_prof_proxy_op po = { .pid = pxn ? getpid() + 1000000 : getpid(),
		.channel_id = (uint8_t)ch, .peer = peer, .n_steps = steps, .chunk_size = 1 << 16,
		.is_send = is_send };
	void *op = prof_start(c, PULSE_NCCL_PROF_PROXY_OP, pxn ? (void *)0x10 : task, &po, sizeof po);
	pulse_nccl_prof_state_args_t a;
	/* NCCL's IB plugin reuses its request descriptors: a receive fills in
	 * only device, wr_id and qpNum (src/transport/net_ib/p2p.cc), so its
	 * length and opcode are whatever the descriptor last held; here, a
	 * send's. */
	static _Thread_local struct pulse_nccl_net_ib_v1 ib;
	for (int s = 0; s < steps; s++) {
		struct pulse_nccl_prof_proxy_step ps = { .step = s };
		void *st = op ? prof_start(c, PULSE_NCCL_PROF_PROXY_STEP, op, &ps, sizeof ps) : NULL;
		ib.type = PULSE_NCCL_NET_IB_QP;
		ib.qp.device = 0;
		ib.qp.qp_num = (int)qpn;
		struct pulse_nccl_prof_net ne = { .id = (int64_t)(PULSE_NCCL_NET_TYPE_IB | PULSE_NCCL_NET_IB_VER),
			.data = &ib };
		if (bogus && s == 0) {
			struct pulse_nccl_prof_net b1 = { .id = (int64_t)(PULSE_NCCL_NET_TYPE_SOCK | 1), .data = &ib };
			struct pulse_nccl_prof_net b2 = { .id = (int64_t)(PULSE_NCCL_NET_TYPE_IB | 2), .data = &ib };
			prof_stop(prof_start(c, PULSE_NCCL_PROF_NET_PLUGIN, st, &b1, sizeof b1));
			prof_stop(prof_start(c, PULSE_NCCL_PROF_NET_PLUGIN, st, &b2, sizeof b2));
		}
		for (int w = 0; w < (is_send ? 2 : 1); w++) {
			ib.qp.wr_id = (uint64_t)(s * 2 + w);
			if (is_send) {
				ib.qp.opcode = w; /* IBV_WR_RDMA_WRITE, _WITH_IMM */
				ib.qp.length = w ? 4 : (size_t)(1000 + 100 * ch);
			} else if (s == 0 && !ib.qp.length) {
				ib.qp.opcode = 4; /* nothing sent yet on this thread: stale all the same */
				ib.qp.length = 77;
			}
			void *ne_h = prof_start(c, PULSE_NCCL_PROF_NET_PLUGIN, st, &ne, sizeof ne);
			a.data = &ib;
			prof_state(ne_h, 21 /* NetPluginUpdate */, &a);
			prof_stop(ne_h);
		}
		a.trans_size = 1000;
		prof_state(st, 9 /* ProxyStepSendWait */, &a);
		prof_stop(st);
	}
	prof_stop(op);
}

static const char *const dt_names[] = { "ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
	"ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16",
	"ncclFloat8e4m3", "ncclFloat8e5m2" };

/* The task event, then (net profiling) its proxy ops, started after the
 * task event stopped as NCCL's proxy thread may: a collective sends to the
 * next rank and receives from the previous one on each of its 2 channels
 * (channel 0 on the QP connected at init, channel 1 on one connected at
 * the first such op), a P2P op uses channel 0 towards its peer. */
static void prof_event(struct ncclComm *c, int coll, const char *func, size_t count, int root_peer,
		       int dt)
{
	if (!c->prof || !(g_prof_mask & (coll ? PULSE_NCCL_PROF_COLL : PULSE_NCCL_PROF_P2P)))
		return;
	struct pulse_nccl_prof_coll cd = { .seq_number = c->coll_seq, .func = func, .count = count,
		.root = root_peer, .datatype = dt_names[dt], .n_channels = 2, .n_warps = 16,
		.algo = "Ring", .proto = "Simple" };
	struct pulse_nccl_prof_p2p pd = { .func = func, .count = count, .peer = root_peer,
		.datatype = dt_names[dt], .n_channels = 1 };
	void *ev = coll ? prof_start(c, PULSE_NCCL_PROF_COLL, NULL, &cd, sizeof cd)
			: prof_start(c, PULSE_NCCL_PROF_P2P, NULL, &pd, sizeof pd);
	prof_stop(ev);
	if (coll)
		c->coll_seq++;
	if (!(g_prof_mask & PULSE_NCCL_PROF_NET_PLUGIN) || lazy_connect(c) != 0)
		return;
	int pxn = coll && !strcmp(func, "AlltoAll") && env_int("FAKE_NCCL_NET_PXN", 0);
	if (coll) {
		for (int ch = 0; ch < 2; ch++) {
			uint32_t qpn = ch ? c->qp2->qp_num : c->qp->qp_num;
			prof_proxy(c, ev, ch, (c->rank + 1) % c->nranks, 1, qpn, pxn);
			prof_proxy(c, ev, ch, (c->rank + c->nranks - 1) % c->nranks, 0, qpn, pxn);
		}
	} else {
		prof_proxy(c, ev, 0, root_peer, func[0] == 'S', c->qp->qp_num, 0);
	}
}

static void prof_fini(struct ncclComm *c)
{
	if (c->prof && g_prof5)
		g_prof5->finalize(c->prof);
	else if (c->prof && g_prof4)
		g_prof4->finalize(c->prof);
	c->prof = NULL;
}

static struct ibv_device **(*p_get_list)(int *);
static struct ibv_context *(*p_open)(struct ibv_device *);
static struct ibv_pd *(*p_alloc_pd)(struct ibv_context *);
static struct ibv_qp *(*p_create)(struct ibv_pd *, struct ibv_qp_init_attr *);
static int (*p_modify)(struct ibv_qp *, struct ibv_qp_attr *, int);
static int (*p_destroy)(struct ibv_qp *);
static struct ibv_pd *g_pd;
static _Thread_local int g_group; /* NCCL group state is per thread */

/* What NCCL's ibvwrap does: dlopen, then dlvsym with the version. */
static int load_verbs(void)
{
	if (g_pd)
		return 0;
	void *h = dlopen("libibverbs.so", RTLD_NOW);
	if (!h)
		h = dlopen("libibverbs.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "fake-nccl: cannot dlopen libibverbs: %s\n", dlerror());
		return -1;
	}
	*(void **)&p_get_list = dlvsym(h, "ibv_get_device_list", "IBVERBS_1.0");
	*(void **)&p_open = dlvsym(h, "ibv_open_device", "IBVERBS_1.0");
	*(void **)&p_alloc_pd = dlvsym(h, "ibv_alloc_pd", "IBVERBS_1.0");
	*(void **)&p_create = dlvsym(h, "ibv_create_qp", "IBVERBS_1.1");
	*(void **)&p_modify = dlvsym(h, "ibv_modify_qp", "IBVERBS_1.1");
	*(void **)&p_destroy = dlvsym(h, "ibv_destroy_qp", "IBVERBS_1.1");
	if (!p_get_list || !p_open || !p_alloc_pd || !p_create || !p_modify || !p_destroy) {
		fprintf(stderr, "fake-nccl: missing verbs symbols\n");
		return -1;
	}
	int n = 0;
	struct ibv_device **l = p_get_list(&n);
	if (!l || n < 1)
		return -1;
	g_pd = p_alloc_pd(p_open(l[0]));
	return g_pd ? 0 : -1;
}

static uint32_t uid_word(const ncclUniqueId *id)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof id->internal; i++)
		h = (h ^ (uint8_t)id->internal[i]) * 16777619u;
	return h;
}

/* One connection: create, INIT, RTR to the "next" rank, RTS. */
static int connect_qp(struct ncclComm *c, uint32_t salt)
{
	if (load_verbs() != 0)
		return ncclSystemError;
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof init);
	c->qp = p_create(g_pd, &init);
	if (!c->qp)
		return ncclSystemError;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	int rc = p_modify(c->qp, &a, IBV_QP_STATE | IBV_QP_PORT);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = 0x1000u + (uint32_t)((c->rank + 1) % c->nranks) + (salt & 0xff) * 16;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 3;
	a.ah_attr.grh.dgid.raw[0] = 0xfe;
	a.ah_attr.grh.dgid.raw[1] = 0x80;
	for (int i = 8; i < 16; i++)
		a.ah_attr.grh.dgid.raw[i] = (uint8_t)(salt >> ((i % 4) * 8)) ^ (uint8_t)c->rank;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN;
	int rtr = p_modify(c->qp, &a, mask);
	printf("fake-nccl: rtr qpn=%u dest=%u rc=%d state=%d\n", c->qp->qp_num, a.dest_qp_num, rtr,
	       c->qp->state);
	/* A bad transition, as a broken peer exchange would give: its result
	 * (EINVAL) must come back unchanged through any interposer. */
	struct ibv_qp_attr bad = a;
	bad.dest_qp_num = 0;
	int brc = p_modify(c->qp, &bad, mask);
	printf("fake-nccl: bad rtr qpn=%u rc=%d\n", c->qp->qp_num, brc);
	memset(&a, 0, sizeof a);
	a.qp_state = 3; /* RTS */
	rc |= p_modify(c->qp, &a, IBV_QP_STATE);
	fflush(stdout);
	return (rc || rtr) ? ncclSystemError : ncclSuccess;
}

/* NCCL connects most connections at their first use, after init: the
 * second QP of a communicator comes then (create, RTR, RTS), so no init
 * call is running when it is made. */
static int lazy_connect(struct ncclComm *c)
{
	if (c->qp2)
		return 0;
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof init);
	c->qp2 = p_create(g_pd, &init);
	if (!c->qp2)
		return -1;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.dest_qp_num = 0x2000u + (uint32_t)c->rank;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid.raw[0] = 0xfe;
	a.ah_attr.grh.dgid.raw[1] = 0x80;
	int rtr = p_modify(c->qp2, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN);
	printf("fake-nccl: lazy connect qpn=%u dest=%u rc=%d comm=%016llx\n", c->qp2->qp_num, a.dest_qp_num,
	       rtr, (unsigned long long)c->hash);
	fflush(stdout);
	return rtr;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	if (!id)
		return ncclInvalidArgument;
	const char *seed = getenv("FAKE_NCCL_UID");
	if (!seed)
		seed = "fake-nccl";
	uint64_t x = 1469598103934665603ull;
	for (const char *p = seed; *p; p++)
		x = (x ^ (uint8_t)*p) * 1099511628211ull;
	for (size_t i = 0; i < sizeof id->internal; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdull;
		id->internal[i] = (char)(x >> 56);
	}
	return ncclSuccess;
}

/* NCCL serialises little here; the stand-in serialises its whole init
 * (verbs loading, the plugin) so inits on several threads stay simple. */
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

/* The init proper: connect, then the profiler plugin's init, on whatever
 * thread NCCL runs it. */
static ncclResult_t comm_setup(struct ncclComm *c)
{
	pthread_mutex_lock(&g_init_lock);
	ncclResult_t r = connect_qp(c, c->salt);
	if (r == ncclSuccess) {
		prof_init(c);
		log_init_complete(c);
	}
	pthread_mutex_unlock(&g_init_lock);
	atomic_store(&c->state, r);
	return r;
}

static void *setup_thread(void *arg)
{
	comm_setup(arg);
	return NULL;
}

/* Run comm_setup on a thread of the stand-in's own, as NCCL does for
 * grouped, ncclCommInitAll and non-blocking inits; wait for it unless
 * detached. */
static ncclResult_t setup_on_thread(struct ncclComm *c, int detach)
{
	pthread_t t;
	if (pthread_create(&t, NULL, setup_thread, c) != 0)
		return ncclSystemError;
	if (detach)
		return pthread_detach(t) == 0 ? ncclSuccess : ncclSystemError;
	pthread_join(t, NULL);
	return atomic_load(&c->state);
}

static _Thread_local struct ncclComm *g_deferred; /* grouped inits, run at the outermost ncclGroupEnd */

static int config_blocking(const ncclConfig_t *config)
{
	return !config || config->size < offsetof(struct ncclConfig, blocking) + sizeof(int) ||
	       config->blocking != 0;
}

static ncclResult_t new_comm_cfg(ncclComm_t *out, int nranks, int rank, uint32_t salt,
				 const ncclConfig_t *config, const struct origin *o)
{
	if (!out || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	struct ncclComm *c = calloc(1, sizeof *c);
	if (!c)
		return ncclSystemError;
	c->rank = rank;
	c->nranks = nranks;
	c->salt = salt;
	c->hash = 0x9000000000000000ull ^ salt;
	c->func = o->func;
	c->parent = o->parent;
	c->color = o->color;
	c->key = o->key;
	if (o->parent)
		c->child_index = atomic_fetch_add(&o->parent->children, 1) + 1;
	atomic_store(&c->state, ncclInProgress);
	if (g_group > 0) { /* NCCL runs it at ncclGroupEnd */
		c->next_deferred = g_deferred;
		g_deferred = c;
		*out = c;
		return ncclSuccess;
	}
	if (!config_blocking(config)) { /* runs on in the background */
		*out = c;
		ncclResult_t r = setup_on_thread(c, 1);
		return r == ncclSuccess ? ncclInProgress : r;
	}
	ncclResult_t r = comm_setup(c);
	if (r != ncclSuccess) {
		free(c);
		return r;
	}
	*out = c;
	return ncclSuccess;
}

static ncclResult_t new_comm(ncclComm_t *out, int nranks, int rank, uint32_t salt, const char *func)
{
	return new_comm_cfg(out, nranks, rank, salt, NULL, &(struct origin){ .func = func });
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *res)
{
	if (!comm || !res)
		return ncclInvalidArgument;
	*res = atomic_load(&comm->state);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	return new_comm(comm, nranks, rank, uid_word(&id), "ncclCommInitRank");
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					   ncclConfig_t *config)
{
	return new_comm_cfg(comm, nranks, rank, uid_word(&id), config,
			    &(struct origin){ .func = "ncclCommInitRankConfig" });
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
					     ncclUniqueId *ids, ncclConfig_t *config)
{
	if (nId < 1 || !ids)
		return ncclInvalidArgument;
	return new_comm_cfg(comm, nranks, rank, uid_word(&ids[0]), config,
			    &(struct origin){ .func = "ncclCommInitRankScalable" });
}

/* As NCCL: one init per device, each on a thread of its own. */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	(void)devlist;
	if (!comms || ndev < 1)
		return ncclInvalidArgument;
	for (int i = 0; i < ndev; i++) {
		struct ncclComm *c = calloc(1, sizeof *c);
		if (!c)
			return ncclSystemError;
		c->rank = i;
		c->nranks = ndev;
		c->salt = 0xa11;
		c->hash = 0x9000000000000000ull ^ 0xa11u ^ ((uint64_t)i << 32);
		c->func = "ncclCommInitAll";
		ncclResult_t r = setup_on_thread(c, 0);
		if (r != ncclSuccess) {
			free(c);
			return r;
		}
		comms[i] = c;
	}
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	if (!comm || !newcomm)
		return ncclInvalidArgument;
	if (color < 0) { /* NCCL_SPLIT_NOCOLOR */
		*newcomm = NULL;
		return ncclSuccess;
	}
	/* Stand-in for the collective: ranks alternate between two colors. */
	return new_comm_cfg(newcomm, (comm->nranks + 1 - (comm->rank % 2)) / 2, comm->rank / 2,
			    0x5000u + (uint32_t)color, config,
			    &(struct origin){ .func = "ncclCommSplit", .parent = comm, .color = color, .key = key });
}

/* 2.27: the ranks left after excluding some; here the excluded ranks are
 * taken off the top. */
EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
				   ncclConfig_t *config, int flags)
{
	(void)exclude;
	(void)flags;
	if (!comm || !newcomm || nexclude < 0 || nexclude >= comm->nranks)
		return ncclInvalidArgument;
	return new_comm_cfg(newcomm, comm->nranks - nexclude, comm->rank % (comm->nranks - nexclude),
			    0x6000u + (uint32_t)nexclude, config,
			    &(struct origin){ .func = "ncclCommShrink", .parent = comm, .color = -1 });
}

/* 2.29 */
EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks, const ncclUniqueId *uid, int rank,
				 ncclComm_t *newcomm, ncclConfig_t *config)
{
	if (!newcomm || (!comm && !uid) || (comm && nranks < comm->nranks))
		return ncclInvalidArgument;
	return new_comm_cfg(newcomm, nranks, rank, uid ? uid_word(uid) : 0x7000u, config,
			    &(struct origin){ .func = "ncclCommGrow", .parent = uid ? NULL : comm });
}

static ncclResult_t end_comm(ncclComm_t comm)
{
	if (!comm)
		return ncclInvalidArgument;
	prof_fini(comm);
	int rc = p_destroy(comm->qp);
	if (comm->qp2)
		rc |= p_destroy(comm->qp2);
	free(comm);
	return rc ? ncclSystemError : ncclSuccess;
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return end_comm(comm); }
EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return end_comm(comm); }
EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }
EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
	return comm && flags >= 0 ? ncclSuccess : ncclInvalidArgument;
}
EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)
{
	return comm && flags >= 0 ? ncclSuccess : ncclInvalidArgument;
}
EXPORT ncclResult_t ncclCommResume(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

EXPORT ncclResult_t ncclGroupStart(void)
{
	g_group++;
	return ncclSuccess;
}

static ncclResult_t group_end(void)
{
	if (g_group <= 0)
		return ncclInvalidArgument;
	if (--g_group > 0)
		return ncclSuccess;
	/* grouped inits, in call order, each on a thread of its own */
	struct ncclComm *l = NULL;
	while (g_deferred) {
		struct ncclComm *c = g_deferred;
		g_deferred = c->next_deferred;
		c->next_deferred = l;
		l = c;
	}
	ncclResult_t r = ncclSuccess;
	for (; l; l = l->next_deferred)
		if (setup_on_thread(l, 0) != ncclSuccess)
			r = ncclSystemError;
	return r;
}

EXPORT ncclResult_t ncclGroupEnd(void) { return group_end(); }

/* 2.22: closes the group; at the outermost level only estimates its time
 * (here: launches nothing, as the stand-in never does). */
EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	(void)info;
	return group_end();
}

static ncclResult_t check(const void *buf, ncclDataType_t dt, ncclComm_t comm)
{
	if (!comm || dt < 0 || dt > 11)
		return ncclInvalidArgument;
	(void)buf;
	return ncclSuccess;
}

static ncclResult_t check_peer(ncclComm_t comm, int peer)
{
	return (comm && (peer < 0 || peer >= comm->nranks)) ? ncclInvalidArgument : ncclSuccess;
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *d, size_t n, ncclDataType_t dt, ncclRedOp_t op,
				  ncclComm_t comm, cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess) {
		log_call("AllReduce", s, d, n, dt, (int)op, 0, comm, st);
		prof_event(comm, 1, "AllReduce", n, -1, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *d, size_t n, ncclDataType_t dt,
				      ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess) {
		log_call("ReduceScatter", s, d, n, dt, (int)op, 0, comm, st);
		prof_event(comm, 1, "ReduceScatter", n, -1, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *d, size_t n, ncclDataType_t dt, ncclComm_t comm,
				  cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess) {
		log_call("AllGather", s, d, n, dt, 0, 0, comm, st);
		prof_event(comm, 1, "AllGather", n, -1, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclAlltoAll(const void *s, void *d, size_t n, ncclDataType_t dt, ncclComm_t comm,
				 cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess) {
		log_call("AlltoAll", s, d, n, dt, 0, 0, comm, st);
		prof_event(comm, 1, "AlltoAll", n, -1, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *d, size_t n, ncclDataType_t dt, int root,
				  ncclComm_t comm, cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess)
		r = check_peer(comm, root);
	if (r == ncclSuccess) {
		log_call("Broadcast", s, d, n, dt, 0, root, comm, st);
		prof_event(comm, 1, "Broadcast", n, root, dt);
	}
	return r;
}

/* As NCCL's src/collectives.cc: `return ncclBroadcast(...)`. The call is
 * to an exported, interposable function, so it goes through the PLT and
 * reaches an interposer's ncclBroadcast too. */
EXPORT ncclResult_t ncclBcast(void *b, size_t n, ncclDataType_t dt, int root, ncclComm_t comm,
			      cudaStream_t st)
{
	return ncclBroadcast(b, b, n, dt, root, comm, st);
}

EXPORT ncclResult_t ncclReduce(const void *s, void *d, size_t n, ncclDataType_t dt, ncclRedOp_t op,
			       int root, ncclComm_t comm, cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess)
		r = check_peer(comm, root);
	if (r == ncclSuccess) {
		log_call("Reduce", s, d, n, dt, (int)op, root, comm, st);
		prof_event(comm, 1, "Reduce", n, root, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t dt, int peer, ncclComm_t comm,
			     cudaStream_t st)
{
	ncclResult_t r = check(s, dt, comm);
	if (r == ncclSuccess)
		r = check_peer(comm, peer);
	if (r == ncclSuccess) {
		log_call("Send", NULL, s, n, dt, 0, peer, comm, st);
		prof_event(comm, 0, "Send", n, peer, dt);
	}
	return r;
}

EXPORT ncclResult_t ncclRecv(void *d, size_t n, ncclDataType_t dt, int peer, ncclComm_t comm,
			     cudaStream_t st)
{
	ncclResult_t r = check(d, dt, comm);
	if (r == ncclSuccess)
		r = check_peer(comm, peer);
	if (r == ncclSuccess) {
		log_call("Recv", NULL, d, n, dt, 0, peer, comm, st);
		prof_event(comm, 0, "Recv", n, peer, dt);
	}
	return r;
}

/* 2.28 */
EXPORT ncclResult_t ncclGather(const void *s, void *d, size_t n, ncclDataType_t dt, int root,
			       ncclComm_t comm, cudaStream_t st)
{
	(void)d; (void)n; (void)st;
	ncclResult_t r = check(s, dt, comm);
	return r == ncclSuccess ? check_peer(comm, root) : r;
}

EXPORT ncclResult_t ncclScatter(const void *s, void *d, size_t n, ncclDataType_t dt, int root,
				ncclComm_t comm, cudaStream_t st)
{
	(void)s; (void)n; (void)st;
	ncclResult_t r = check(d, dt, comm);
	return r == ncclSuccess ? check_peer(comm, root) : r;
}

/* 2.29 */
EXPORT ncclResult_t ncclPutSignal(const void *buf, size_t n, ncclDataType_t dt, int peer, ncclWindow_t win,
				  size_t off, int sig, int ctx, unsigned int flags, ncclComm_t comm,
				  cudaStream_t st)
{
	(void)n; (void)off; (void)st;
	ncclResult_t r = check(buf, dt, comm);
	if (r == ncclSuccess && (!win || sig != 0 || ctx != 0 || flags != 0))
		r = ncclInvalidArgument;
	return r == ncclSuccess ? check_peer(comm, peer) : r;
}

EXPORT ncclResult_t ncclSignal(int peer, int sig, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t st)
{
	(void)st;
	if (!comm || sig != 0 || ctx != 0 || flags != 0)
		return ncclInvalidArgument;
	return check_peer(comm, peer);
}

EXPORT ncclResult_t ncclWaitSignal(int ndesc, ncclWaitSignalDesc_t *descs, ncclComm_t comm, cudaStream_t st)
{
	(void)st;
	return comm && ndesc >= 0 && (ndesc == 0 || descs) ? ncclSuccess : ncclInvalidArgument;
}
