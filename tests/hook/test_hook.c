/* libpulse-hook.so end to end: the unmodified training program (train.c),
 * linked against the stand-in NCCL (which loads the stand-in verbs with
 * dlopen + dlvsym), runs under LD_PRELOAD; the test then drains the
 * process's ring like the host agent and checks every record. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pulse/hook_ring.h"

#define MAXREC 4096
#define TDIR "build/tests/hook"

static char g_dir[4200], g_hook[4200];

struct run {
	pid_t pid;
	int status;
	char out[8192];
	struct pulse_hook_record rec[MAXREC];
	size_t n;
	struct pulse_hook_ring_stats st;
	int open_rc;
};

/* Run PROG ARGS... with the hook preloaded and EXTRA env ("K=V", NULL-ended). */
static void run(struct run *r, const char *const *argv, const char *const *extra)
{
	memset(r, 0, sizeof *r);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		setenv("LD_PRELOAD", g_hook, 1);
		setenv("LD_LIBRARY_PATH", g_dir, 1); /* the stand-ins, never a system libibverbs */
		setenv("PULSE_HOOK_KEEP_RING", "1", 1);
		setenv("FAKE_NCCL_UID", "job-42", 1);
		for (int i = 0; extra && extra[i]; i++)
			putenv((char *)extra[i]);
		char path[4400];
		snprintf(path, sizeof path, "%s/%s", g_dir, argv[0]);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t used = 0;
	ssize_t k;
	while ((k = read(pfd[0], r->out + used, sizeof r->out - 1 - used)) > 0)
		used += (size_t)k;
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	r->pid = pid;
	struct pulse_hook_ring *ring;
	r->open_rc = pulse_hook_ring_open(pid, &ring);
	if (r->open_rc == 0) {
		r->n = pulse_hook_ring_drain(ring, r->rec, MAXREC);
		pulse_hook_ring_stats(ring, &r->st);
		pulse_hook_ring_close(ring, 1);
	}
}

/* ---- expectations for train.c ---- */

struct cursor {
	const struct run *r;
	size_t i;
};

static const struct pulse_hook_record *next(struct cursor *c, uint8_t kind)
{
	if (c->i >= c->r->n)
		fail_msg("record %zu: expected kind %d, ring has only %zu", c->i, kind, c->r->n);
	const struct pulse_hook_record *x = &c->r->rec[c->i++];
	if (x->kind != kind)
		fail_msg("record %zu: kind %d, expected %d", c->i - 1, x->kind, kind);
	assert_int_equal(x->source, PULSE_HOOK_SRC_HOOK);
	assert_int_equal(x->version, PULSE_HOOK_RECORD_VERSION);
	assert_int_equal(x->pid, (uint32_t)c->r->pid);
	return x;
}

/* Parse "fake-nccl: rtr qpn=Q dest=D rc=R" and "bad rtr qpn=Q rc=R" lines in order. */
struct rtr_line {
	unsigned qpn, dest;
	int rc;
};

static size_t rtr_lines(const char *out, struct rtr_line *l, size_t max)
{
	size_t n = 0;
	for (const char *p = out; p && *p && n < max; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (sscanf(p, "fake-nccl: rtr qpn=%u dest=%u rc=%d", &l[n].qpn, &l[n].dest, &l[n].rc) == 3)
			n++;
		else if (sscanf(p, "fake-nccl: bad rtr qpn=%u rc=%d", &l[n].qpn, &l[n].rc) == 2)
			l[n].dest = 0, n++;
	}
	return n;
}

static uint64_t check_connect(struct cursor *c, const struct rtr_line *l, size_t *li)
{
	const struct pulse_hook_record *x = next(c, PULSE_HOOK_QP_CREATE);
	uint32_t qpn = x->u.qp.qpn;
	assert_string_equal(x->u.qp.dev, "mlx5_fake0");
	for (int k = 0; k < 2; k++) { /* the good RTR, then the refused one */
		x = next(c, PULSE_HOOK_QP_RTR);
		const struct rtr_line *e = &l[(*li)++];
		assert_int_equal(x->u.qp.qpn, qpn);
		assert_int_equal(x->u.qp.qpn, e->qpn);
		assert_int_equal(x->u.qp.dest_qpn, e->dest);
		assert_int_equal(x->u.qp.result, e->rc);
		assert_int_equal(x->u.qp.result, k == 0 ? 0 : EINVAL);
		assert_string_equal(x->u.qp.dev, "mlx5_fake0");
		assert_int_equal(x->u.qp.port, 1);
		assert_int_equal(x->u.qp.sgid_index, 3);
		assert_int_equal(x->u.qp.is_global, 1);
		assert_int_equal(x->u.qp.remote_gid[0], 0xfe);
		assert_int_equal(x->u.qp.remote_gid[1], 0x80);
		assert_int_equal(x->u.qp.gpu.source, PULSE_HOOK_GPU_VISIBLE_DEVS);
		assert_string_equal(x->u.qp.gpu.visible, "3");
		assert_int_equal(x->u.qp.gpu.cuda_dev, 3);
	}
	return qpn;
}

static void check_op(struct cursor *c, uint64_t comm, uint64_t seq, uint8_t type, uint64_t count,
		     uint8_t dt, uint8_t redop, int root_peer, uint64_t group)
{
	const struct pulse_hook_record *x = next(c, PULSE_HOOK_OP);
	assert_int_equal(x->u.op.comm_id, comm);
	assert_int_equal(x->u.op.seq, seq);
	assert_int_equal(x->u.op.type, type);
	assert_int_equal(x->u.op.count, count);
	assert_int_equal(x->u.op.datatype, dt);
	assert_int_equal(x->u.op.redop, redop);
	assert_int_equal(x->u.op.root_peer, root_peer);
	assert_int_equal(x->u.op.stream, 0x5000);
	assert_int_equal(x->u.op.group_id, group);
	assert_int_equal(x->u.op.result, 0);
	/* the whole ncclRedOp_t rides in redop32 for the ops that have one */
	assert_int_equal(x->flags, redop == 0xff ? 0 : PULSE_HOOK_F_REDOP32);
	if (redop != 0xff)
		assert_int_equal(x->u.op.redop32, redop);
}

struct ids {
	uint64_t world, half;
};

static struct ids check_train(const struct run *r, int rank, int nranks, int steps)
{
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
	assert_int_equal(r->open_rc, 0);
	struct rtr_line l[16];
	size_t nl = rtr_lines(r->out, l, 16), li = 0;
	assert_int_equal(nl, 4);
	struct cursor c = { r, 0 };
	struct ids id;
	uint64_t t0 = 0;

	check_connect(&c, l, &li);
	const struct pulse_hook_record *x = next(&c, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_INIT_RANK_CONFIG);
	assert_int_equal(x->u.comm.rank, rank);
	assert_int_equal(x->u.comm.nranks, nranks);
	assert_int_equal(x->u.comm.result, 0);
	assert_int_equal(x->u.comm.parent_id, 0);
	assert_int_not_equal(x->u.comm.handle, 0);
	assert_int_equal(x->u.comm.gpu.source, PULSE_HOOK_GPU_VISIBLE_DEVS);
	id.world = x->u.comm.comm_id;
	assert_int_not_equal(id.world, 0);
	t0 = x->time_ns;

	check_connect(&c, l, &li);
	x = next(&c, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_SPLIT);
	assert_int_equal(x->u.comm.parent_id, id.world);
	assert_int_equal(x->u.comm.color, rank % 2);
	assert_int_equal(x->u.comm.key, rank);
	id.half = x->u.comm.comm_id;
	assert_int_not_equal(id.half, 0);
	assert_int_not_equal(id.half, id.world);

	uint64_t ws = 0, hs = 0, last_group = 0;
	for (int s = 0; s < steps; s++) {
		check_op(&c, id.world, ws++, PULSE_HOOK_OP_ALLREDUCE, 1024, 7, 0, -1, 0);
		check_op(&c, id.world, ws++, PULSE_HOOK_OP_ALLGATHER, 256, 9, 0xff, -1, 0);
		check_op(&c, id.half, hs++, PULSE_HOOK_OP_REDUCESCATTER, 128, 7, 2, -1, 0);
		check_op(&c, id.half, hs++, PULSE_HOOK_OP_BROADCAST, 64, 2, 0xff, 0, 0);
		check_op(&c, id.world, ws++, PULSE_HOOK_OP_REDUCE, 32, 8, 3, 1, 0);
		check_op(&c, id.world, ws++, PULSE_HOOK_OP_ALLTOALL, 16, 0, 0xff, -1, 0);
		x = next(&c, PULSE_HOOK_GROUP_START);
		uint64_t g = x->u.group.group_id;
		assert_true(g > last_group);
		last_group = g;
		assert_int_equal(x->u.group.depth, 1);
		for (int p = 0; p < nranks; p++) {
			check_op(&c, id.world, ws++, PULSE_HOOK_OP_SEND, 8, 1, 0xff, p, g);
			check_op(&c, id.world, ws++, PULSE_HOOK_OP_RECV, 8, 1, 0xff, p, g);
		}
		x = next(&c, PULSE_HOOK_GROUP_END);
		assert_int_equal(x->u.group.group_id, g);
		assert_int_equal(x->u.group.depth, 1);
		assert_int_equal(x->u.group.result, 0);
	}
	x = next(&c, PULSE_HOOK_QP_DESTROY);
	assert_int_equal(x->u.qp.result, 0);
	x = next(&c, PULSE_HOOK_COMM_DESTROY);
	assert_int_equal(x->u.comm.comm_id, id.half);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_DESTROY);
	next(&c, PULSE_HOOK_QP_DESTROY);
	x = next(&c, PULSE_HOOK_COMM_DESTROY);
	assert_int_equal(x->u.comm.comm_id, id.world);
	assert_int_equal(x->u.comm.rank, rank);
	assert_int_equal(c.i, r->n); /* nothing else */
	/* Each record carries the time of its call; a record is written when
	 * the call returns, so an init's time precedes the QP records made
	 * inside it. Operators (one thread) never go back in time. */
	uint64_t last_op = 0;
	for (size_t i = 0; i < r->n; i++) {
		assert_true(r->rec[i].time_ns >= t0);
		if (r->rec[i].kind == PULSE_HOOK_OP) {
			assert_true(r->rec[i].time_ns >= last_op);
			last_op = r->rec[i].time_ns;
		}
	}
	assert_int_equal(r->st.dropped_full + r->st.dropped_no_reader, 0);
	assert_int_equal(r->st.hook_loaded, 1);
	return id;
}

static void test_train_four_ranks(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	struct ids id[4];
	static const char *const env[] = { "CUDA_VISIBLE_DEVICES=3,1", NULL };
	for (int rank = 0; rank < 4; rank++) {
		char rs[8];
		snprintf(rs, sizeof rs, "%d", rank);
		const char *argv[] = { "train", rs, "4", "3", NULL };
		run(r, argv, env);
		id[rank] = check_train(r, rank, 4, 3);
	}
	/* Same ids on every rank; same split id for the same color only. */
	for (int rank = 1; rank < 4; rank++)
		assert_int_equal(id[rank].world, id[0].world);
	assert_int_equal(id[2].half, id[0].half);
	assert_int_equal(id[3].half, id[1].half);
	assert_int_not_equal(id[0].half, id[1].half);
	free(r);
}

/* NCCL reached only through a library dlopened with RTLD_LOCAL, as PyTorch's
 * extension module reaches it: outside the global scope that RTLD_NEXT
 * searches. Every call must still be recorded and reach the real NCCL (on
 * torch 2.11 / NCCL 2.28.9 each one returned ncclSystemError instead). */
static void test_nccl_in_local_scope(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char module[4400];
	snprintf(module, sizeof module, "%s/libtrain_module.so", g_dir);
	for (int rank = 0; rank < 2; rank++) {
		char rs[8];
		snprintf(rs, sizeof rs, "%d", rank);
		const char *argv[] = { "load_local", module, rs, "2", "2", NULL };
		static const char *const env[] = { "CUDA_VISIBLE_DEVICES=3,1", NULL };
		run(r, argv, env);
		check_train(r, rank, 2, 2);
	}
	free(r);
}

static void test_other_job_other_id(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	static const char *const env[] = { "CUDA_VISIBLE_DEVICES=3", NULL };
	const char *argv[] = { "train", "0", "4", "1", NULL };
	run(r, argv, env);
	uint64_t a = check_train(r, 0, 4, 1).world;
	static const char *const env2[] = { "CUDA_VISIBLE_DEVICES=3", "FAKE_NCCL_UID=job-43", NULL };
	run(r, argv, env2);
	assert_int_not_equal(check_train(r, 0, 4, 1).world, a);
	free(r);
}

static void test_no_reader_drops_counted(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	static const char *const env[] = { "PULSE_HOOK_RING_RECORDS=16", NULL };
	const char *argv[] = { "train", "1", "4", "2", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_int_equal(r->open_rc, 0);
	assert_int_equal(r->n, 16);
	/* 2 connects x (create + 2 RTR + init) + 2 steps x (6 + 2 + 8) + 4 destroys = 44 */
	assert_int_equal(r->st.written, 16);
	assert_int_equal(r->st.dropped_no_reader, 44 - 16);
	assert_int_equal(r->st.dropped_full, 0);
	assert_int_equal(r->rec[0].kind, PULSE_HOOK_QP_CREATE); /* the oldest are kept */
	assert_int_equal(r->rec[3].kind, PULSE_HOOK_COMM_INIT);
	free(r);
}

static void test_disabled_passes_through(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	static const char *const env[] = { "PULSE_HOOK_DISABLE=1", NULL };
	const char *argv[] = { "train", "0", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_int_equal(r->open_rc, -ENOENT);
	assert_non_null(strstr(r->out, "bad rtr qpn=256 rc=22"));
	free(r);
}

static void test_gpu_from_cuda_runtime(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char preload[9000];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s %s/libcudart.so.12", g_hook, g_dir);
	const char *env[] = { preload, "FAKE_CUDA_DEVICE=2", "CUDA_VISIBLE_DEVICES=5,6,7", NULL };
	const char *argv[] = { "train", "0", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_int_equal(r->open_rc, 0);
	int inits = 0, rtrs = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct pulse_hook_gpu *g = NULL;
		if (r->rec[i].kind == PULSE_HOOK_COMM_INIT)
			g = &r->rec[i].u.comm.gpu, inits++;
		else if (r->rec[i].kind == PULSE_HOOK_QP_RTR)
			g = &r->rec[i].u.qp.gpu, rtrs++;
		if (!g)
			continue;
		assert_int_equal(g->source, PULSE_HOOK_GPU_CUDART);
		assert_int_equal(g->cuda_dev, 2);
		assert_string_equal(g->pci_bus_id, "0000:3b:00.2");
		assert_string_equal(g->visible, "5");
	}
	assert_int_equal(inits, 2);
	assert_int_equal(rtrs, 4);
	free(r);
}

static const struct pulse_hook_record *find(const struct run *r, size_t *from, uint8_t kind)
{
	for (; *from < r->n; (*from)++)
		if (r->rec[*from].kind == kind)
			return &r->rec[(*from)++];
	fail_msg("no record of kind %d after %zu", kind, *from);
	return NULL;
}

static void test_other_entry_points_fork_and_direct_verbs(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	const char *argv[] = { "apis", NULL };
	run(r, argv, NULL);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0); /* includes dlsym(RTLD_NEXT) from the program */
	assert_int_equal(r->open_rc, 0);
	size_t i = 0;
	const struct pulse_hook_record *x = find(r, &i, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_INIT_RANK);
	assert_int_equal(x->u.comm.rank, 1);
	uint64_t a = x->u.comm.comm_id;
	x = find(r, &i, PULSE_HOOK_OP);
	assert_int_equal(x->u.op.type, PULSE_HOOK_OP_BROADCAST);
	assert_int_equal(x->u.op.root_peer, 1);
	assert_int_equal(x->u.op.seq, 0);
	x = find(r, &i, PULSE_HOOK_OP);
	assert_int_equal(x->u.op.root_peer, 5);
	assert_int_equal(x->u.op.result, 4); /* NCCL's ncclInvalidArgument, unchanged */
	assert_int_equal(x->u.op.seq, 1);
	/* ncclBcast calls ncclBroadcast through the PLT (the stand-in as NCCL):
	 * each call is one record, never two */
	size_t ops_before_initall = 0;
	for (size_t k = 0; k < r->n && !(r->rec[k].kind == PULSE_HOOK_COMM_INIT &&
					 r->rec[k].u.comm.how == PULSE_HOOK_HOW_INIT_ALL); k++)
		ops_before_initall += r->rec[k].kind == PULSE_HOOK_OP;
	assert_int_equal(ops_before_initall, 2);
	assert_non_null(strstr(r->out, "apis: dlvsym 1.0 passed through"));
	/* The NOCOLOR split makes no communicator and no record; InitAll: two. */
	x = find(r, &i, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_INIT_ALL);
	assert_int_equal(x->u.comm.rank, 0);
	assert_int_equal(x->u.comm.gpu.cuda_dev, 3);
	uint64_t all = x->u.comm.comm_id;
	x = find(r, &i, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_INIT_ALL);
	assert_int_equal(x->u.comm.rank, 1);
	assert_int_equal(x->u.comm.nranks, 2);
	assert_int_equal(x->u.comm.gpu.cuda_dev, 5);
	assert_int_equal(x->u.comm.comm_id, all);
	x = find(r, &i, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_INIT_RANK_SCALABLE);
	assert_int_equal(x->u.comm.rank, 2);
	assert_int_equal(x->u.comm.nranks, 4);
	uint64_t sc = x->u.comm.comm_id;
	assert_int_not_equal(sc, a);
	x = find(r, &i, PULSE_HOOK_COMM_DESTROY);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_ABORT);
	assert_int_equal(x->u.comm.comm_id, sc);
	/* Direct verbs: create, RTR, destroy, from the program itself. */
	unsigned qpn = 0;
	const char *p = strstr(r->out, "apis: direct qpn=");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "apis: direct qpn=%u", &qpn), 1);
	size_t j = i;
	for (;;) {
		x = find(r, &j, PULSE_HOOK_QP_RTR);
		if (x->u.qp.qpn == qpn)
			break;
	}
	assert_int_equal(x->u.qp.dest_qpn, 0xabcde);
	assert_int_equal(x->u.qp.port, 2);
	assert_int_equal(x->u.qp.is_global, 0);
	assert_int_equal(x->u.qp.result, 0);
	x = find(r, &j, PULSE_HOOK_QP_DESTROY);
	assert_int_equal(x->u.qp.qpn, qpn);
	/* dlvsym of IBVERBS_1.0 went past the hook; the 1.1 lookup after it is
	 * still the wrapper, and still reaches the 1.1 function: its RTR is
	 * recorded with the 1.1 function's result */
	p = strstr(r->out, "apis: dlvsym qpn=");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "apis: dlvsym qpn=%u", &qpn), 1);
	for (;;) {
		x = find(r, &j, PULSE_HOOK_QP_RTR);
		if (x->u.qp.qpn == qpn)
			break;
	}
	assert_int_equal(x->u.qp.dest_qpn, 0x1234);
	assert_int_equal(x->u.qp.result, 0);
	/* mlx5dv_create_qp, called directly and through dlvsym(MLX5_1.3): a
	 * QP_CREATE each, flagged, with the stand-in libmlx5's QPN and device */
	const char *dvl[2] = { "apis: mlx5dv direct qpn=", "apis: mlx5dv dlvsym qpn=" };
	for (int k = 0; k < 2; k++) {
		p = strstr(r->out, dvl[k]);
		assert_non_null(p);
		assert_int_equal(sscanf(p + strlen(dvl[k]), "%u", &qpn), 1);
		assert_true(qpn >= 0x800);
		for (;;) {
			x = find(r, &j, PULSE_HOOK_QP_CREATE);
			if (x->u.qp.qpn == qpn)
				break;
		}
		assert_int_equal(x->flags, PULSE_HOOK_F_MLX5DV);
		assert_string_equal(x->u.qp.dev, "mlx5_fake0");
		assert_int_equal(x->u.qp.result, 0);
		x = find(r, &j, PULSE_HOOK_QP_DESTROY);
		assert_int_equal(x->u.qp.qpn, qpn);
	}
	/* After fork the parent's sequence goes on (the child's op is not in
	 * the parent's ring): AllReduce is op 2 of communicator a. */
	x = find(r, &j, PULSE_HOOK_OP);
	assert_int_equal(x->u.op.type, PULSE_HOOK_OP_ALLREDUCE);
	assert_int_equal(x->u.op.count, 9);
	assert_int_equal(x->u.op.comm_id, a);
	assert_int_equal(x->u.op.seq, 2);

	/* The child wrote to its own ring. Its communicator table starts empty
	 * (NCCL communicators do not survive fork): unknown comm. */
	int child = 0;
	p = strstr(r->out, "child pid ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "child pid %d", &child), 1);
	struct pulse_hook_ring *ring;
	assert_int_equal(pulse_hook_ring_open(child, &ring), 0);
	struct pulse_hook_record cr[8];
	size_t n = pulse_hook_ring_drain(ring, cr, 8);
	pulse_hook_ring_close(ring, 1);
	assert_int_equal(n, 1);
	assert_int_equal(cr[0].kind, PULSE_HOOK_OP);
	assert_int_equal(cr[0].pid, (uint32_t)child);
	assert_int_equal(cr[0].u.op.count, 7);
	assert_int_equal(cr[0].flags, PULSE_HOOK_F_UNKNOWN_COMM | PULSE_HOOK_F_REDOP32);
	free(r);
}

/* The next record that is not about a QP. */
static const struct pulse_hook_record *next_nq(struct cursor *c, uint8_t kind)
{
	while (c->i < c->r->n && (c->r->rec[c->i].kind == PULSE_HOOK_QP_CREATE ||
				  c->r->rec[c->i].kind == PULSE_HOOK_QP_RTR ||
				  c->r->rec[c->i].kind == PULSE_HOOK_QP_DESTROY))
		c->i++;
	return next(c, kind);
}

static const struct pulse_hook_record *next_op(struct cursor *c, uint64_t comm, uint64_t seq, uint8_t type,
					       uint64_t count, uint8_t dt, int root_peer, uint64_t group)
{
	const struct pulse_hook_record *x = next_nq(c, PULSE_HOOK_OP);
	assert_int_equal(x->u.op.comm_id, comm);
	assert_int_equal(x->u.op.seq, seq);
	assert_int_equal(x->u.op.type, type);
	assert_int_equal(x->u.op.count, count);
	assert_int_equal(x->u.op.datatype, dt);
	assert_int_equal(x->u.op.root_peer, root_peer);
	assert_int_equal(x->u.op.group_id, group);
	assert_int_equal(x->u.op.result, 0);
	assert_int_equal(x->u.op.stream, 0x5000);
	return x;
}

/* NCCL 2.22-2.29 entry points (newapis.c): every call is recorded once,
 * with its arguments; a simulated group leaves its bracket but no
 * operators; communicators made by shrink and grow carry their parent. */
static void test_new_entry_points(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	const char *argv[] = { "newapis", NULL };
	run(r, argv, NULL);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
	assert_int_equal(r->open_rc, 0);
	struct cursor c = { r, 0 };
	const struct pulse_hook_record *x = next_nq(&c, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.rank, 1);
	uint64_t a = x->u.comm.comm_id;
	next_op(&c, a, 0, PULSE_HOOK_OP_GATHER, 16, 7, 2, 0);
	next_op(&c, a, 1, PULSE_HOOK_OP_SCATTER, 32, 7, 0, 0);
	next_op(&c, a, 2, PULSE_HOOK_OP_PUT_SIGNAL, 64, 1, 3, 0);
	x = next_op(&c, a, 3, PULSE_HOOK_OP_SIGNAL, 0, 0xff, 2, 0);
	assert_int_equal(x->u.op.redop, 0xff);
	assert_int_equal(x->flags, 0);
	next_op(&c, a, 4, PULSE_HOOK_OP_WAIT_SIGNAL, 3, 0xff, -1, 0);
	/* a PreMulSum handle above 255: whole in redop32 */
	x = next_op(&c, a, 5, PULSE_HOOK_OP_ALLREDUCE, 8, 7, -1, 0);
	assert_int_equal(x->flags, PULSE_HOOK_F_REDOP32);
	assert_int_equal(x->u.op.redop32, 0x105);
	assert_int_equal(x->u.op.redop, 0x05);
	/* the simulated group: its bracket, marked, and nothing inside */
	x = next_nq(&c, PULSE_HOOK_GROUP_START);
	uint64_t g1 = x->u.group.group_id;
	x = next_nq(&c, PULSE_HOOK_GROUP_END);
	assert_int_equal(x->u.group.group_id, g1);
	assert_int_equal(x->u.group.depth, 1);
	assert_int_equal(x->flags, PULSE_HOOK_F_SIMULATED);
	/* the real one: depth back to 0 before it, a new id, seq goes on */
	x = next_nq(&c, PULSE_HOOK_GROUP_START);
	uint64_t g2 = x->u.group.group_id;
	assert_true(g2 > g1);
	assert_int_equal(x->u.group.depth, 1);
	next_op(&c, a, 6, PULSE_HOOK_OP_ALLREDUCE, 300, 7, -1, g2);
	next_op(&c, a, 7, PULSE_HOOK_OP_SEND, 400, 7, 0, g2);
	x = next_nq(&c, PULSE_HOOK_GROUP_END);
	assert_int_equal(x->u.group.group_id, g2);
	assert_int_equal(x->flags, 0);
	x = next_nq(&c, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_SHRINK);
	assert_int_equal(x->u.comm.parent_id, a);
	assert_int_equal(x->u.comm.result, 0);
	uint64_t sh = x->u.comm.comm_id;
	assert_true(sh != 0 && sh != a);
	next_op(&c, sh, 0, PULSE_HOOK_OP_ALLREDUCE, 5, 7, -1, 0);
	x = next_nq(&c, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_GROW);
	assert_int_equal(x->u.comm.parent_id, a);
	assert_int_equal(x->u.comm.rank, 1);
	assert_int_equal(x->u.comm.nranks, 6);
	uint64_t gr = x->u.comm.comm_id;
	assert_true(gr != 0 && gr != a && gr != sh);
	next_op(&c, gr, 0, PULSE_HOOK_OP_ALLREDUCE, 6, 7, -1, 0);
	static const struct {
		uint8_t how;
		int key;
	} ev[] = { { PULSE_HOOK_HOW_SUSPEND, 1 }, { PULSE_HOOK_HOW_RESUME, 0 },
		   { PULSE_HOOK_HOW_REVOKE, 0 }, { PULSE_HOOK_HOW_FINALIZE, 0 } };
	for (int k = 0; k < 4; k++) {
		x = next_nq(&c, PULSE_HOOK_COMM_EVENT);
		assert_int_equal(x->u.comm.how, ev[k].how);
		assert_int_equal(x->u.comm.key, ev[k].key);
		assert_int_equal(x->u.comm.comm_id, ev[k].how == PULSE_HOOK_HOW_REVOKE ? sh : a);
		assert_int_equal(x->u.comm.result, 0);
	}
	uint64_t destroyed[3] = { gr, sh, a };
	for (int k = 0; k < 3; k++) {
		x = next_nq(&c, PULSE_HOOK_COMM_DESTROY);
		assert_int_equal(x->u.comm.comm_id, destroyed[k]);
	}
	while (c.i < r->n && r->rec[c.i].kind == PULSE_HOOK_QP_DESTROY)
		c.i++;
	assert_int_equal(c.i, r->n);
	free(r);
}

/* ---- the profiler plugin, driven through its ABI by the stand-in NCCL ---- */

static void filter(const struct run *in, struct run *out, uint8_t source)
{
	memcpy(out, in, offsetof(struct run, rec));
	out->n = 0;
	for (size_t i = 0; i < in->n; i++)
		if (in->rec[i].source == source)
			out->rec[out->n++] = in->rec[i];
	out->st = in->st;
	out->open_rc = in->open_rc;
}

static void check_prof_op(const struct pulse_hook_record *x, uint64_t comm, uint64_t seq, uint8_t type,
			  uint64_t count, uint8_t dt, int root_peer, int coll, uint64_t nseq, uint32_t flags)
{
	assert_int_equal(x->kind, PULSE_HOOK_OP);
	assert_int_equal(x->source, PULSE_HOOK_SRC_PROFILER);
	assert_int_equal(x->flags, flags);
	assert_int_equal(x->u.op.comm_id, comm);
	assert_int_equal(x->u.op.seq, seq);
	assert_int_equal(x->u.op.type, type);
	assert_int_equal(x->u.op.count, count);
	assert_int_equal(x->u.op.datatype, dt);
	assert_int_equal(x->u.op.root_peer, root_peer);
	if (coll) {
		assert_int_equal(x->u.op.nccl_seq, nseq);
		assert_string_equal(x->u.op.algo, "Ring");
		assert_string_equal(x->u.op.proto, "Simple");
		assert_int_equal(x->u.op.nchannels, 2);
	} else {
		assert_int_equal(x->u.op.nchannels, 1);
	}
}

/* The plugin's records of train RANK 2 1; world/half are the comm ids the
 * ops must carry (NCCL hashes without the hook, ours with it). */
static void check_prof(const struct run *p, int rank, int with_hook, uint64_t world, uint64_t half)
{
	uint32_t f = with_hook ? PULSE_HOOK_F_ANNOTATION : PULSE_HOOK_F_NCCL_HASH_ID;
	uint32_t cf = with_hook ? PULSE_HOOK_F_ANNOTATION : PULSE_HOOK_F_NCCL_HASH_ID;
	assert_int_equal(p->n, 2 + 6 + 4 + 2);
	const struct pulse_hook_record *x = &p->rec[0];
	assert_int_equal(x->kind, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->flags, cf);
	assert_int_equal(x->u.comm.how, PULSE_HOOK_HOW_PROFILER);
	assert_int_equal(x->u.comm.rank, rank);
	assert_int_equal(x->u.comm.nranks, 2);
	assert_int_equal(x->u.comm.nnodes, 1);
	assert_int_equal(x->u.comm.nccl_hash >> 60, 9); /* the stand-in's commHash */
	/* without the hook, a communicator is known by NCCL's hash */
	assert_int_equal(x->u.comm.comm_id, with_hook ? world : x->u.comm.nccl_hash);
	uint64_t wh = x->u.comm.nccl_hash;
	x = &p->rec[1];
	assert_int_equal(x->kind, PULSE_HOOK_COMM_INIT);
	assert_int_equal(x->u.comm.rank, rank / 2);
	assert_int_equal(x->flags, cf);
	assert_int_equal(x->u.comm.comm_id, with_hook ? half : x->u.comm.nccl_hash);
	uint64_t hh = x->u.comm.nccl_hash;
	assert_int_not_equal(wh, hh);
	uint64_t w = with_hook ? world : wh, h = with_hook ? half : hh;
	check_prof_op(&p->rec[2], w, 0, PULSE_HOOK_OP_ALLREDUCE, 1024, 7, -1, 1, 0, f);
	check_prof_op(&p->rec[3], w, 1, PULSE_HOOK_OP_ALLGATHER, 256, 9, -1, 1, 1, f);
	check_prof_op(&p->rec[4], h, 0, PULSE_HOOK_OP_REDUCESCATTER, 128, 7, -1, 1, 0, f);
	check_prof_op(&p->rec[5], h, 1, PULSE_HOOK_OP_BROADCAST, 64, 2, 0, 1, 1, f);
	check_prof_op(&p->rec[6], w, 2, PULSE_HOOK_OP_REDUCE, 32, 8, 1, 1, 2, f);
	check_prof_op(&p->rec[7], w, 3, PULSE_HOOK_OP_ALLTOALL, 16, 0, -1, 1, 3, f);
	for (int q = 0; q < 2; q++) {
		check_prof_op(&p->rec[8 + 2 * q], w, 4 + 2 * (uint64_t)q, PULSE_HOOK_OP_SEND, 8, 1, q, 0, 0, f);
		check_prof_op(&p->rec[9 + 2 * q], w, 5 + 2 * (uint64_t)q, PULSE_HOOK_OP_RECV, 8, 1, q, 0, 0, f);
	}
	assert_int_equal(p->rec[12].kind, PULSE_HOOK_COMM_DESTROY);
	assert_int_equal(p->rec[12].u.comm.nccl_hash, hh);
	assert_int_equal(p->rec[13].kind, PULSE_HOOK_COMM_DESTROY);
	assert_int_equal(p->rec[13].u.comm.nccl_hash, wh);
	assert_int_equal(p->rec[13].u.comm.comm_id, with_hook ? world : wh);
	assert_int_equal(p->rec[13].flags, cf);
}

static char g_plugin[4300];

static void test_profiler_plugin_alone(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r), *p = malloc(sizeof *p);
	assert_non_null(r);
	assert_non_null(p);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	static const char *const abis[] = { "FAKE_NCCL_PROFILER_ABI=4", "FAKE_NCCL_PROFILER_ABI=5",
		"FAKE_NCCL_PROFILER_ABI=6" };
	static const char *const seen[] = { "fake-nccl: profiler v4", "fake-nccl: profiler v5",
		"fake-nccl: profiler v6" };
	for (int abi = 0; abi < 3; abi++) {
		const char *env[] = { "LD_PRELOAD=", env_plugin, abis[abi], "PULSE_PROFILER_NET=0", NULL };
		const char *argv[] = { "train", "1", "2", "1", NULL };
		run(r, argv, env);
		assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
		assert_non_null(strstr(r->out, seen[abi])); /* the ABI version NCCL picked */
		assert_int_equal(r->open_rc, 0); /* the plugin made the ring itself */
		assert_int_equal(r->st.hook_loaded, 0);
		filter(r, p, PULSE_HOOK_SRC_PROFILER);
		assert_int_equal(p->n, r->n); /* nothing else wrote */
		check_prof(p, 1, 0, 0, 0);
	}
	/* An NCCL whose newest profiler ABI is v3 (2.26) finds no version it
	 * knows in the plugin and runs without it: no records, no ring. */
	const char *env3[] = { "LD_PRELOAD=", env_plugin, "FAKE_NCCL_PROFILER_ABI=3", NULL };
	const char *argv3[] = { "train", "1", "2", "1", NULL };
	run(r, argv3, env3);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_null(strstr(r->out, "fake-nccl: profiler v"));
	assert_int_not_equal(r->open_rc, 0);
	free(r);
	free(p);
}

static void test_profiler_plugin_with_hook(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r), *p = malloc(sizeof *p);
	assert_non_null(r);
	assert_non_null(p);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	const char *env[] = { env_plugin, "CUDA_VISIBLE_DEVICES=3", "PULSE_PROFILER_NET=0", NULL };
	const char *argv[] = { "train", "0", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_int_equal(r->st.hook_loaded, 1);
	/* The hook's records are exactly what they are without the plugin... */
	filter(r, p, PULSE_HOOK_SRC_HOOK);
	struct ids id = check_train(p, 0, 2, 1);
	/* ...and the plugin's are all annotations that carry the hook's ids. */
	filter(r, p, PULSE_HOOK_SRC_PROFILER);
	check_prof(p, 0, 1, id.world, id.half);
	/* The rule: count operators from non-annotation records only. */
	size_t ops = 0;
	for (size_t i = 0; i < r->n; i++)
		ops += r->rec[i].kind == PULSE_HOOK_OP && !(r->rec[i].flags & PULSE_HOOK_F_ANNOTATION);
	assert_int_equal(ops, 6 + 2 * 2);
	free(r);
	free(p);
}

/* ---- net profiling: NET_QP records from the stand-in's net events ---- */

/* The QPNs the stand-in NCCL connected: at init ("rtr qpn=", world then
 * half) and lazily at the first op ("lazy connect qpn=", same order). */
struct net_qpns {
	unsigned init[2], lazy[2];
	int ninit, nlazy;
};

static void net_qpns(const char *out, struct net_qpns *q)
{
	memset(q, 0, sizeof *q);
	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		unsigned v, d;
		if (sscanf(p, "fake-nccl: rtr qpn=%u dest=%u", &v, &d) == 2 && q->ninit < 2)
			q->init[q->ninit++] = v;
		else if (sscanf(p, "fake-nccl: lazy connect qpn=%u", &v) == 1 && q->nlazy < 2)
			q->lazy[q->nlazy++] = v;
	}
}

struct net_expect {
	uint64_t comm, hash, seq, nseq;
	uint8_t type, ch, send, flags;
	int peer;
	unsigned qpn;
};

static void check_net(const struct pulse_hook_record *x, const struct net_expect *e, int steps, uint32_t rflags,
		      int rank)
{
	assert_int_equal(x->kind, PULSE_HOOK_NET_QP);
	assert_int_equal(x->source, PULSE_HOOK_SRC_PROFILER);
	assert_int_equal(x->flags, rflags);
	const struct pulse_hook_net_qp_body *b = &x->u.net;
	assert_int_equal(b->comm_id, e->comm);
	assert_int_equal(b->nccl_hash, e->hash);
	assert_int_equal(b->seq, e->seq);
	assert_int_equal(b->nccl_seq, e->nseq);
	assert_int_equal(b->op_type, e->type);
	assert_int_equal(b->net_flags, e->flags);
	assert_int_equal(b->channel, e->ch);
	assert_int_equal(b->is_send, e->send);
	assert_int_equal(b->peer, e->peer);
	assert_int_equal(b->rank, rank);
	assert_int_equal(b->qpn, e->qpn);
	assert_int_equal(b->nccl_dev, 0);
	/* sums of the work requests, one record for all of them */
	assert_int_equal(b->wrs, (uint32_t)(e->send ? 2 * steps : steps));
	assert_int_equal(b->bytes, e->send ? (uint64_t)steps * (1000 + 100 * e->ch + 4) : 0);
	/* a receive's length and opcode are stale in NCCL's descriptor (the
	 * stand-in leaves a send's there): never counted */
	assert_int_equal(b->opcodes, e->send ? 0x3u : 0x0u);
	assert_int_equal(b->qp_overflow_wrs, 0);
	assert_int_equal(b->pool_drops_total, 0);
	assert_true(b->last_ns >= x->time_ns && x->time_ns > 0);
}

/* The expected NET_QP records of `train RANK 2 1` in order: per collective
 * 2 channels x (send to next, recv from previous), per P2P one on channel
 * 0; AlltoAll's proxy ops are PXN (pxn=1: no task, seq unknown). */
static size_t net_expected(struct net_expect *e, const struct net_qpns *q, uint64_t world, uint64_t half,
			   uint64_t wh, uint64_t hh, int rank, int pxn)
{
	static const struct {
		int half, p2p, peer;
		uint8_t type;
	} ops[] = {
		{ 0, 0, 0, PULSE_HOOK_OP_ALLREDUCE }, { 0, 0, 0, PULSE_HOOK_OP_ALLGATHER },
		{ 1, 0, 0, PULSE_HOOK_OP_REDUCESCATTER }, { 1, 0, 0, PULSE_HOOK_OP_BROADCAST },
		{ 0, 0, 0, PULSE_HOOK_OP_REDUCE }, { 0, 0, 0, PULSE_HOOK_OP_ALLTOALL },
		{ 0, 1, 0, PULSE_HOOK_OP_SEND }, { 0, 1, 0, PULSE_HOOK_OP_RECV },
		{ 0, 1, 1, PULSE_HOOK_OP_SEND }, { 0, 1, 1, PULSE_HOOK_OP_RECV },
	};
	uint64_t seq[2] = { 0, 0 }, nseq[2] = { 0, 0 };
	size_t n = 0;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		int h = ops[i].half, nr = h ? 1 : 2, r = h ? rank / 2 : rank;
		uint64_t comm = h ? half : world, hash = h ? hh : wh;
		uint64_t s = seq[h]++;
		if (ops[i].p2p) {
			e[n++] = (struct net_expect){ comm, hash, s, UINT64_MAX, ops[i].type, 0,
				ops[i].type == PULSE_HOOK_OP_SEND, PULSE_HOOK_NET_F_P2P, ops[i].peer, q->init[h] };
			continue;
		}
		uint64_t ns = nseq[h]++;
		int x = pxn && ops[i].type == PULSE_HOOK_OP_ALLTOALL;
		for (int ch = 0; ch < 2; ch++)
			for (int send = 1; send >= 0; send--)
				e[n++] = (struct net_expect){ comm, hash, x ? UINT64_MAX : s, x ? UINT64_MAX : ns,
					x ? PULSE_HOOK_OP_OTHER : ops[i].type, (uint8_t)ch, (uint8_t)send,
					x ? PULSE_HOOK_NET_F_NO_PARENT : 0, send ? (r + 1) % nr : (r + nr - 1) % nr,
					ch ? q->lazy[h] : q->init[h] };
	}
	return n;
}

/* Each NET_QP record of a task names the profiler OP record of that task. */
static void check_net_joins_op(const struct run *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct pulse_hook_record *x = &p->rec[i];
		if (x->kind != PULSE_HOOK_NET_QP || (x->u.net.net_flags & PULSE_HOOK_NET_F_NO_PARENT))
			continue;
		int found = 0;
		for (size_t j = 0; j < i; j++) {
			const struct pulse_hook_record *o = &p->rec[j];
			if (o->kind == PULSE_HOOK_OP && o->u.op.comm_id == x->u.net.comm_id &&
			    o->u.op.seq == x->u.net.seq) {
				assert_int_equal(o->u.op.type, x->u.net.op_type);
				if (!(x->u.net.net_flags & PULSE_HOOK_NET_F_P2P))
					assert_int_equal(o->u.op.nccl_seq, x->u.net.nccl_seq);
				found++;
			}
		}
		assert_int_equal(found, 1);
	}
}

static void test_profiler_net_alone(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	static const char *const abis[] = { "FAKE_NCCL_PROFILER_ABI=4", "FAKE_NCCL_PROFILER_ABI=5",
		"FAKE_NCCL_PROFILER_ABI=6" };
	static const char *const seen[] = { "fake-nccl: profiler v4", "fake-nccl: profiler v5",
		"fake-nccl: profiler v6" };
	for (int abi = 0; abi < 3; abi++) {
		const char *env[] = { "LD_PRELOAD=", env_plugin, abis[abi], "FAKE_NCCL_NET_STEPS=5",
			"FAKE_NCCL_NET_BOGUS=1", "FAKE_NCCL_NET_PXN=1", NULL };
		const char *argv[] = { "train", "1", "2", "1", NULL };
		run(r, argv, env);
		assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
		assert_non_null(strstr(r->out, seen[abi]));
		assert_int_equal(r->open_rc, 0);
		struct net_qpns q;
		net_qpns(r->out, &q);
		assert_int_equal(q.ninit, 2);
		assert_int_equal(q.nlazy, 2);
		/* communicators: NCCL's hashes */
		assert_int_equal(r->rec[0].kind, PULSE_HOOK_COMM_INIT);
		assert_int_equal(r->rec[1].kind, PULSE_HOOK_COMM_INIT);
		uint64_t wh = r->rec[0].u.comm.nccl_hash, hh = r->rec[1].u.comm.nccl_hash;
		struct net_expect e[64];
		size_t ne = net_expected(e, &q, wh, hh, wh, hh, 1, 1);
		assert_int_equal(ne, 28);
		size_t k = 0, ops = 0;
		for (size_t i = 0; i < r->n; i++) {
			const struct pulse_hook_record *x = &r->rec[i];
			ops += x->kind == PULSE_HOOK_OP;
			if (x->kind != PULSE_HOOK_NET_QP)
				continue;
			assert_true(k < ne);
			int rank = e[k].comm == hh ? 0 : 1;
			check_net(x, &e[k], 5, PULSE_HOOK_F_NCCL_HASH_ID, rank);
			/* 2 events of unknown kind per proxy op, counted; one record per proxy op */
			assert_int_equal(x->u.net.unknown_total, 2 * (k + 1));
			k++;
		}
		assert_int_equal(k, ne);
		assert_int_equal(ops, 10); /* net events never add operators */
		assert_int_equal(r->n, 2 + 10 + 28 + 2);
		check_net_joins_op(r);
	}
	free(r);
}

/* The record count does not grow with the work requests: 10x the steps,
 * the same 28 records (each with 10x the work requests). */
static void test_profiler_net_bounded(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	const char *env[] = { "LD_PRELOAD=", env_plugin, "FAKE_NCCL_NET_STEPS=50", NULL };
	const char *argv[] = { "train", "1", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_non_null(strstr(r->out, "fake-nccl: profiler v6"));
	struct net_qpns q;
	net_qpns(r->out, &q);
	uint64_t wh = r->rec[0].u.comm.nccl_hash, hh = r->rec[1].u.comm.nccl_hash;
	struct net_expect e[64];
	size_t ne = net_expected(e, &q, wh, hh, wh, hh, 1, 0);
	assert_int_equal(ne, 28);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->rec[i].kind == PULSE_HOOK_NET_QP) {
			check_net(&r->rec[i], &e[k], 50, PULSE_HOOK_F_NCCL_HASH_ID, e[k].comm == hh ? 0 : 1);
			assert_int_equal(r->rec[i].u.net.unknown_total, 0);
			k++;
		}
	assert_int_equal(k, 28);
	check_net_joins_op(r);
	/* a pool too small for one proxy op in flight at a time is impossible
	 * here (one at a time); a task ring of 2 still names the right tasks */
	const char *env2[] = { "LD_PRELOAD=", env_plugin, "PULSE_PROFILER_TASKS=2", "PULSE_PROFILER_PROXY_OPS=2",
		NULL };
	run(r, argv, env2);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->rec[i].kind == PULSE_HOOK_NET_QP) {
			check_net(&r->rec[i], &e[k], 4, PULSE_HOOK_F_NCCL_HASH_ID, e[k].comm == hh ? 0 : 1);
			k++;
		}
	assert_int_equal(k, 28);
	free(r);
}

/* With the hook: the NET_QP records are annotations with the hook's comm
 * ids, and their QPNs are the QPs the hook saw created, the lazily
 * connected ones included (which no init call could claim). */
static void test_profiler_net_with_hook(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	const char *env[] = { env_plugin, NULL };
	const char *argv[] = { "train", "0", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0);
	assert_int_equal(r->st.hook_loaded, 1);
	struct net_qpns q;
	net_qpns(r->out, &q);
	assert_int_equal(q.nlazy, 2);
	/* the hook's ids, from its own COMM_INIT records (world, then the split) */
	uint64_t world = 0, half = 0, wh = 0, hh = 0;
	size_t hook_ops = 0, creates = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct pulse_hook_record *x = &r->rec[i];
		if (x->source == PULSE_HOOK_SRC_HOOK && x->kind == PULSE_HOOK_COMM_INIT) {
			if (x->u.comm.how == PULSE_HOOK_HOW_SPLIT)
				half = x->u.comm.comm_id;
			else
				world = x->u.comm.comm_id;
		}
		if (x->source == PULSE_HOOK_SRC_PROFILER && x->kind == PULSE_HOOK_COMM_INIT) {
			if (!wh)
				wh = x->u.comm.nccl_hash;
			else
				hh = x->u.comm.nccl_hash;
		}
		hook_ops += x->kind == PULSE_HOOK_OP && !(x->flags & PULSE_HOOK_F_ANNOTATION);
		if (x->kind == PULSE_HOOK_QP_CREATE)
			for (int k = 0; k < 2; k++)
				creates += x->u.qp.qpn == q.lazy[k] || x->u.qp.qpn == q.init[k];
	}
	assert_true(world && half && wh && hh);
	assert_int_equal(creates, 4); /* the hook saw all four QPs */
	assert_int_equal(hook_ops, 10);
	struct net_expect e[64];
	size_t ne = net_expected(e, &q, world, half, wh, hh, 0, 0), k = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->rec[i].kind == PULSE_HOOK_NET_QP) {
			assert_true(k < ne);
			check_net(&r->rec[i], &e[k], 4, PULSE_HOOK_F_ANNOTATION, 0); /* rank 0 in both */
			k++;
		}
	assert_int_equal(k, ne);
	check_net_joins_op(r);
	free(r);
}

/* NCCL runs grouped, ncclCommInitAll and non-blocking inits on threads of
 * its own: the plugin's communicator records still carry the hook's ids
 * (inits.c). Two grouped inits of the same rank and size cannot be told
 * apart: both keep NCCL's hash rather than a guessed id. */
static void test_profiler_join_on_nccl_threads(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char env_plugin[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	const char *env[] = { env_plugin, "PULSE_PROFILER_NET=0", NULL };
	const char *argv[] = { "inits", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
	assert_int_equal(r->open_rc, 0);
	const struct pulse_hook_record *hook[8], *prof[8];
	size_t nh = 0, np = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct pulse_hook_record *x = &r->rec[i];
		if (x->kind != PULSE_HOOK_COMM_INIT)
			continue;
		if (x->source == PULSE_HOOK_SRC_HOOK && nh < 8)
			hook[nh++] = x;
		else if (x->source == PULSE_HOOK_SRC_PROFILER && np < 8)
			prof[np++] = x;
	}
	assert_int_equal(nh, 6);
	assert_int_equal(np, 6);
	/* hook: grouped, InitAll 0 and 1, non-blocking, the two alike */
	assert_int_equal(hook[0]->u.comm.how, PULSE_HOOK_HOW_INIT_RANK);
	assert_int_equal(hook[1]->u.comm.how, PULSE_HOOK_HOW_INIT_ALL);
	assert_int_equal(hook[3]->u.comm.how, PULSE_HOOK_HOW_INIT_RANK_CONFIG);
	assert_int_equal(hook[3]->u.comm.result, 7); /* ncclInProgress, unchanged */
	static const int rank[6] = { 1, 0, 1, 3, 1, 1 }, nranks[6] = { 2, 2, 2, 4, 2, 2 };
	for (int k = 0; k < 6; k++) {
		assert_int_equal(prof[k]->u.comm.rank, rank[k]);
		assert_int_equal(prof[k]->u.comm.nranks, nranks[k]);
		assert_int_not_equal(prof[k]->tid, (uint32_t)r->pid); /* on NCCL's threads */
		if (k < 4) {
			assert_int_equal(prof[k]->flags, PULSE_HOOK_F_ANNOTATION);
			assert_int_equal(prof[k]->u.comm.comm_id, hook[k]->u.comm.comm_id);
		} else {
			assert_int_equal(prof[k]->flags, PULSE_HOOK_F_ANNOTATION | PULSE_HOOK_F_NCCL_HASH_ID);
			assert_int_equal(prof[k]->u.comm.comm_id, prof[k]->u.comm.nccl_hash);
		}
	}
	assert_int_equal(hook[1]->u.comm.comm_id, hook[2]->u.comm.comm_id);
	free(r);
}

/* NCCL's activation mask is one global: a communicator whose context
 * cannot be allocated must not turn profiling off for the others. The
 * plugin alone, its second context allocation (the split's) failing. */
static void test_profiler_alloc_failure_one_comm(void **state)
{
	(void)state;
	struct run *r = malloc(sizeof *r);
	assert_non_null(r);
	char env_plugin[4400], preload[4400];
	snprintf(env_plugin, sizeof env_plugin, "NCCL_PROFILER_PLUGIN=%s", g_plugin);
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s/libfailcalloc.so", g_dir);
	const char *env[] = { preload, env_plugin, "PULSE_PROFILER_NET=0",
		"FAILCALLOC_FROM=libpulse-nccl-profiler", "FAILCALLOC_NTH=2", NULL };
	const char *argv[] = { "train", "0", "2", "1", NULL };
	run(r, argv, env);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
	assert_int_equal(r->open_rc, 0);
	size_t inits = 0, ops = 0, destroys = 0;
	uint64_t world = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct pulse_hook_record *x = &r->rec[i];
		assert_int_equal(x->source, PULSE_HOOK_SRC_PROFILER);
		if (x->kind == PULSE_HOOK_COMM_INIT)
			inits++, world = x->u.comm.comm_id;
		if (x->kind == PULSE_HOOK_OP) {
			ops++;
			assert_int_equal(x->u.op.comm_id, world); /* the world's only */
		}
		destroys += x->kind == PULSE_HOOK_COMM_DESTROY;
	}
	assert_int_equal(inits, 1);
	assert_int_equal(destroys, 1);
	/* world: AllReduce, AllGather, Reduce, AlltoAll, 2 x (Send, Recv) */
	assert_int_equal(ops, 8);
	free(r);
}

int main(int argc, char **argv)
{
	(void)argc;
	/* Fixtures live next to the test binary's build tree. */
	char self[4000];
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (k <= 0)
		return 1;
	self[k] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0'; /* build/tests */
	snprintf(g_dir, sizeof g_dir, "%s/hook", self);
	snprintf(g_hook, sizeof g_hook, "%s/../lib/libpulse-hook.so", self);
	snprintf(g_plugin, sizeof g_plugin, "%s/../lib/libpulse-nccl-profiler.so", self);
	(void)argv;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_train_four_ranks),
		cmocka_unit_test(test_nccl_in_local_scope),
		cmocka_unit_test(test_other_job_other_id),
		cmocka_unit_test(test_no_reader_drops_counted),
		cmocka_unit_test(test_disabled_passes_through),
		cmocka_unit_test(test_other_entry_points_fork_and_direct_verbs),
		cmocka_unit_test(test_gpu_from_cuda_runtime),
		cmocka_unit_test(test_profiler_plugin_alone),
		cmocka_unit_test(test_profiler_plugin_with_hook),
		cmocka_unit_test(test_profiler_net_alone),
		cmocka_unit_test(test_profiler_net_bounded),
		cmocka_unit_test(test_profiler_net_with_hook),
		cmocka_unit_test(test_new_entry_points),
		cmocka_unit_test(test_profiler_join_on_nccl_threads),
		cmocka_unit_test(test_profiler_alloc_failure_one_comm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
