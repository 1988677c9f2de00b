/* libpulse-nccl-profiler.so net profiling with NCCL's threads: this test is
 * the NCCL side, in one process. Per communicator, an application thread
 * starts and stops the collective task events (ABI v6) and hands each
 * task's handle to that communicator's proxy thread through a queue, as
 * NCCL's host-stream callback hands proxy ops to its proxy thread; the proxy
 * thread starts the task's proxy ops (often after the task event stopped),
 * their steps and one net event per work request. The main thread drains
 * the ring meanwhile, as the agent does. Checked: one NET_QP record per
 * (task, channel, direction), each naming its task (comm, seq, NCCL
 * seqNumber), with every work request and byte counted once; nothing lost.
 * test_net_edges: more QPs in a proxy op than are aggregated, net events
 * to ignore (counted), the proxy-op pool exhausted (counted), a PXN op.
 * Built plain and with ThreadSanitizer (a TSan-built plugin). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../profiler/nccl_profiler_abi.h"
#include "pulse/hook_ring.h"

#define NCOMMS 3
#define NTASKS 400
#define NSTEPS 6
#define QLEN 64

static char g_plugin[4200];
static void *g_lib;
static struct pulse_hook_ring *g_reader;
static void (*g_stats)(uint64_t *, uint64_t *, int *);
static _Atomic int g_finished; /* threads that returned */
static const pulse_nccl_profiler_v6_t *g_p;

struct comm {
	int idx;
	void *ctx;
	uint64_t hash;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	void *q[QLEN];
	unsigned head, tail;
	int done;
};

static void *start(struct comm *c, uint64_t type, void *parent, const void *u, size_t n)
{
	pulse_nccl_prof_descr_v6_t d;
	memset(&d, 0, sizeof d);
	d.type = type;
	d.parent_obj = parent;
	d.rank = c->idx;
	memcpy(&d.coll, u, n);
	void *h = NULL;
	g_p->start_event(c->ctx, &h, &d);
	return h;
}

static void *app(void *arg)
{
	struct comm *c = arg;
	for (int t = 0; t < NTASKS; t++) {
		struct pulse_nccl_prof_coll cd = { .seq_number = (uint64_t)t, .func = "AllReduce", .count = 64,
			.datatype = "ncclFloat32", .n_channels = 2, .algo = "Ring", .proto = "Simple" };
		void *h = start(c, PULSE_NCCL_PROF_COLL, NULL, &cd, sizeof cd);
		pthread_mutex_lock(&c->lock);
		while (c->tail - c->head == QLEN)
			pthread_cond_wait(&c->cv, &c->lock);
		c->q[c->tail++ % QLEN] = h;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->lock);
		g_p->stop_event(h); /* the proxy thread may not have started its ops yet */
	}
	pthread_mutex_lock(&c->lock);
	c->done = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->lock);
	atomic_fetch_add(&g_finished, 1);
	return NULL;
}

static uint32_t qpn_of(int comm, int ch) { return 0x100u + (uint32_t)comm * 16 + (uint32_t)ch; }

static void *proxy(void *arg)
{
	struct comm *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (c->head == c->tail && !c->done)
			pthread_cond_wait(&c->cv, &c->lock);
		if (c->head == c->tail) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		void *task = c->q[c->head++ % QLEN];
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->lock);
		for (int ch = 0; ch < 2; ch++)
			for (int send = 1; send >= 0; send--) {
				struct pulse_nccl_prof_proxy_op po = { .pid = getpid(), .channel_id = (uint8_t)ch,
					.peer = send, .n_steps = NSTEPS, .is_send = send };
				void *op = start(c, PULSE_NCCL_PROF_PROXY_OP, task, &po, sizeof po);
				for (int s = 0; s < NSTEPS; s++) {
					struct pulse_nccl_prof_proxy_step ps = { .step = s };
					void *st = start(c, PULSE_NCCL_PROF_PROXY_STEP, op, &ps, sizeof ps);
					struct pulse_nccl_net_ib_v1 ib;
					memset(&ib, 0, sizeof ib);
					ib.type = PULSE_NCCL_NET_IB_QP;
					ib.qp.qp_num = (int)qpn_of(c->idx, ch);
					ib.qp.length = send ? 4096 : 0;
					struct pulse_nccl_prof_net ne = {
						.id = (int64_t)(PULSE_NCCL_NET_TYPE_IB | PULSE_NCCL_NET_IB_VER), .data = &ib };
					g_p->stop_event(start(c, PULSE_NCCL_PROF_NET_PLUGIN, st, &ne, sizeof ne));
					g_p->stop_event(st);
				}
				g_p->stop_event(op);
			}
	}
	atomic_fetch_add(&g_finished, 1);
	return NULL;
}

static void test_net_threads(void **state)
{
	(void)state;
	static struct comm cs[NCOMMS];
	for (int i = 0; i < NCOMMS; i++) {
		memset(&cs[i], 0, sizeof cs[i]);
		cs[i].idx = i;
		cs[i].hash = 0x7700000000000000ull + (uint64_t)i;
		pthread_mutex_init(&cs[i].lock, NULL);
		pthread_cond_init(&cs[i].cv, NULL);
		int mask = 0;
		assert_int_equal(g_p->init(&cs[i].ctx, cs[i].hash, &mask, "t", 1, NCOMMS, i, NULL), 0);
		assert_true(mask & PULSE_NCCL_PROF_NET_PLUGIN);
	}
	if (!g_reader) /* the plugin made its ring at the first init */
		assert_int_equal(pulse_hook_ring_open(getpid(), &g_reader), 0);
	struct pulse_hook_ring *ring = g_reader;
	pthread_t th[2 * NCOMMS];
	for (int i = 0; i < NCOMMS; i++) {
		assert_int_equal(pthread_create(&th[2 * i], NULL, app, &cs[i]), 0);
		assert_int_equal(pthread_create(&th[2 * i + 1], NULL, proxy, &cs[i]), 0);
	}
	static struct pulse_hook_record buf[1024];
	static uint8_t seen[NCOMMS][NTASKS][4];
	size_t ops = 0, nets = 0, joined = 0;
	uint64_t bytes = 0, wrs = 0;
	for (;;) {
		size_t n = pulse_hook_ring_drain(ring, buf, 1024);
		for (size_t i = 0; i < n; i++) {
			const struct pulse_hook_record *r = &buf[i];
			if (r->kind == PULSE_HOOK_OP)
				ops++;
			if (r->kind != PULSE_HOOK_NET_QP)
				continue;
			nets++;
			const struct pulse_hook_net_qp_body *b = &r->u.net;
			int c = (int)(b->comm_id - 0x7700000000000000ull);
			assert_true(c >= 0 && c < NCOMMS);
			assert_int_equal(r->flags, PULSE_HOOK_F_NCCL_HASH_ID);
			assert_true(b->seq < NTASKS);
			assert_int_equal(b->nccl_seq, b->seq); /* the task it names */
			assert_int_equal(b->op_type, PULSE_HOOK_OP_ALLREDUCE);
			assert_int_equal(b->qpn, qpn_of(c, b->channel));
			assert_int_equal(b->peer, b->is_send);
			assert_int_equal(b->wrs, NSTEPS);
			assert_int_equal(b->bytes, b->is_send ? NSTEPS * 4096u : 0);
			assert_int_equal(b->unknown_total, 0);
			assert_int_equal(b->pool_drops_total, 0);
			uint8_t *s = &seen[c][b->seq][b->channel * 2 + b->is_send];
			assert_int_equal(*s, 0); /* once */
			*s = 1;
			joined++;
			bytes += b->bytes;
			wrs += b->wrs;
		}
		if (!n) {
			if (atomic_load(&g_finished) == 2 * NCOMMS)
				break;
			usleep(200);
		}
	}
	for (int i = 0; i < 2 * NCOMMS; i++)
		pthread_join(th[i], NULL);
	size_t n;
	while ((n = pulse_hook_ring_drain(ring, buf, 1024)) > 0) /* what the last drain left */
		for (size_t i = 0; i < n; i++) {
			nets += buf[i].kind == PULSE_HOOK_NET_QP;
			ops += buf[i].kind == PULSE_HOOK_OP;
			if (buf[i].kind == PULSE_HOOK_NET_QP) {
				joined++;
				bytes += buf[i].u.net.bytes;
				wrs += buf[i].u.net.wrs;
			}
		}
	assert_int_equal(ops, NCOMMS * NTASKS);
	assert_int_equal(nets, (size_t)NCOMMS * NTASKS * 4);
	assert_int_equal(joined, nets);
	assert_int_equal(wrs, (uint64_t)NCOMMS * NTASKS * 4 * NSTEPS);
	assert_int_equal(bytes, (uint64_t)NCOMMS * NTASKS * 2 * NSTEPS * 4096);
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(ring, &st);
	assert_int_equal(st.dropped_full + st.dropped_no_reader, 0);
	uint64_t unknown = 1, drops = 1;
	int on = 0;
	g_stats(&unknown, &drops, &on);
	assert_int_equal(unknown, 0);
	assert_int_equal(drops, 0);
	assert_int_equal(on, 1);
	for (int i = 0; i < NCOMMS; i++)
		assert_int_equal(g_p->finalize(cs[i].ctx), 0);
}

/* One thread, the cases NCCL rarely or never produces: more QPs in a proxy
 * op than are aggregated, net events to ignore, the proxy-op pool
 * exhausted, a PXN proxy op. */
static void *net(struct comm *c, void *parent, uint64_t id, const struct pulse_nccl_net_ib_v1 *ib)
{
	struct pulse_nccl_prof_net ne = { .id = (int64_t)id, .data = (void *)ib };
	void *h = start(c, PULSE_NCCL_PROF_NET_PLUGIN, parent, &ne, sizeof ne);
	assert_null(h);
	return h;
}

static void test_net_edges(void **state)
{
	(void)state;
	const uint64_t IB1 = PULSE_NCCL_NET_TYPE_IB | PULSE_NCCL_NET_IB_VER;
	static struct comm c;
	memset(&c, 0, sizeof c);
	c.hash = 0x7800000000000000ull;
	int mask = 0;
	assert_int_equal(g_p->init(&c.ctx, c.hash, &mask, "e", 1, 2, 1, NULL), 0);
	if (!g_reader)
		assert_int_equal(pulse_hook_ring_open(getpid(), &g_reader), 0);
	uint64_t unknown0, drops0, unknown, drops;
	g_stats(&unknown0, &drops0, NULL);
	struct pulse_nccl_prof_coll cd = { .seq_number = 77, .func = "AllGather", .count = 8, .datatype = "ncclInt8",
		.n_channels = 1, .algo = "Ring", .proto = "LL" };
	void *task = start(&c, PULSE_NCCL_PROF_COLL, NULL, &cd, sizeof cd);
	assert_non_null(task);
	g_p->stop_event(task);
	struct pulse_nccl_prof_proxy_op po = { .pid = getpid(), .channel_id = 3, .peer = 0, .n_steps = 1, .is_send = 1 };
	struct pulse_nccl_prof_proxy_step ps = { .step = 0 };
	struct pulse_nccl_net_ib_v1 ib;
	memset(&ib, 0, sizeof ib);
	ib.type = PULSE_NCCL_NET_IB_QP;
	ib.qp.length = 100;

	/* 1. ten QPs in one proxy op: eight records, the rest counted */
	void *op = start(&c, PULSE_NCCL_PROF_PROXY_OP, task, &po, sizeof po);
	void *st = start(&c, PULSE_NCCL_PROF_PROXY_STEP, op, &ps, sizeof ps);
	assert_non_null(st);
	assert_true((uintptr_t)st & 1);
	for (int q = 0; q < 10; q++) {
		ib.qp.qp_num = 0x500 + q;
		net(&c, st, IB1, &ib);
	}
	/* 2. net events to ignore, each counted */
	struct pulse_nccl_net_ib_v1 other = ib;
	other.type = 2;                                              /* an IB event type we do not know */
	net(&c, st, IB1, NULL);                                      /* no descriptor */
	net(&c, st, IB1, &other);
	net(&c, st, PULSE_NCCL_NET_TYPE_SOCK | 1, &ib);              /* the socket plugin */
	net(&c, st, PULSE_NCCL_NET_TYPE_IB | 2, &ib);                /* IB descriptor version 2 */
	net(&c, NULL, IB1, &ib);                                     /* no step */
	net(&c, op, IB1, &ib);                                       /* parent not a step handle */
	g_p->stop_event(st);
	g_p->stop_event(op);
	net(&c, st, IB1, &ib);                                       /* a step of a proxy op that ended */
	g_stats(&unknown, &drops, NULL);
	assert_int_equal(unknown - unknown0, 7);

	/* 3. the pool (16) exhausted: the 17th proxy op is not followed, counted */
	void *ops[17];
	for (int i = 0; i < 17; i++)
		ops[i] = start(&c, PULSE_NCCL_PROF_PROXY_OP, task, &po, sizeof po);
	for (int i = 0; i < 16; i++)
		assert_non_null(ops[i]);
	assert_null(ops[16]);
	assert_null(start(&c, PULSE_NCCL_PROF_PROXY_STEP, ops[16], &ps, sizeof ps));
	for (int i = 0; i < 17; i++)
		g_p->stop_event(ops[i]); /* no work requests: no records */
	g_stats(&unknown, &drops, NULL);
	assert_int_equal(drops - drops0, 1);

	/* 4. PXN: the parent is another process's, never read */
	po.pid = getpid() + 1;
	op = start(&c, PULSE_NCCL_PROF_PROXY_OP, (void *)0x10, &po, sizeof po);
	st = start(&c, PULSE_NCCL_PROF_PROXY_STEP, op, &ps, sizeof ps);
	ib.qp.qp_num = 0x600;
	net(&c, st, IB1, &ib);
	g_p->stop_event(st);
	g_p->stop_event(op);
	assert_int_equal(g_p->finalize(c.ctx), 0);

	static struct pulse_hook_record buf[256];
	size_t n = pulse_hook_ring_drain(g_reader, buf, 256), nets = 0, pxn = 0;
	for (size_t i = 0; i < n; i++) {
		const struct pulse_hook_record *r = &buf[i];
		if (r->kind != PULSE_HOOK_NET_QP)
			continue;
		const struct pulse_hook_net_qp_body *b = &r->u.net;
		assert_int_equal(b->comm_id, c.hash);
		assert_int_equal(b->channel, 3);
		if (b->net_flags & PULSE_HOOK_NET_F_NO_PARENT) {
			assert_int_equal(b->qpn, 0x600);
			assert_int_equal(b->seq, UINT64_MAX);
			assert_int_equal(b->nccl_seq, UINT64_MAX);
			assert_int_equal(b->op_type, PULSE_HOOK_OP_OTHER);
			assert_int_equal(b->pool_drops_total, drops);
			pxn++;
			continue;
		}
		assert_int_equal(b->qpn, 0x500 + nets);
		assert_int_equal(b->net_flags, PULSE_HOOK_NET_F_QP_OVERFLOW);
		assert_int_equal(b->qp_overflow_wrs, 2);
		assert_int_equal(b->wrs, 1);
		assert_int_equal(b->bytes, 100);
		assert_int_equal(b->nccl_seq, 77);
		assert_int_equal(b->op_type, PULSE_HOOK_OP_ALLGATHER);
		assert_int_equal(b->unknown_total, unknown0 + 6); /* the 7th came after this op ended */
		nets++;
	}
	assert_int_equal(nets, PULSE_HOOK_NET_QPS_PER_OP);
	assert_int_equal(pxn, 1);
}


int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	char self[4000];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0)
		return 1;
	self[k] = '\0';
	*strrchr(self, '/') = '\0';
	/* build/tests/test_profiler_threads -> build/lib/; build/tests/tsan/... -> build/lib/tsan/ */
	const char *tsan = strstr(self, "/tests/tsan");
	if (tsan) {
		*strstr(self, "/tests/tsan") = '\0';
		snprintf(g_plugin, sizeof g_plugin, "%s/lib/tsan/libpulse-nccl-profiler.so", self);
	} else {
		*strrchr(self, '/') = '\0';
		snprintf(g_plugin, sizeof g_plugin, "%s/lib/libpulse-nccl-profiler.so", self);
	}
	/* One plugin for both tests (it reads its settings once per process):
	 * a ring that holds every record, a proxy-op pool of 16. */
	setenv("PULSE_HOOK_RING_RECORDS", "65536", 1);
	setenv("PULSE_PROFILER_PROXY_OPS", "16", 1);
	g_lib = dlopen(g_plugin, RTLD_NOW | RTLD_LOCAL);
	if (!g_lib || !(g_p = dlsym(g_lib, "ncclProfiler_v6")) ||
	    !(*(void **)&g_stats = dlsym(g_lib, "pulse_nccl_profiler_net_stats"))) {
		fprintf(stderr, "test_profiler_threads: %s: %s\n", g_plugin, g_lib ? "missing symbols" : dlerror());
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_net_threads),
		cmocka_unit_test(test_net_edges),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (g_reader)
		pulse_hook_ring_close(g_reader, 1);
	return rc;
}
