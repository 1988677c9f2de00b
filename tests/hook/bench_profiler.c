/* Profiler plugin benchmark (make bench-profiler -> build/bench/profiler.md):
 * the cost NCCL pays in libpulse-nccl-profiler.so per event, through the
 * ABI (v6), with net profiling on and off (PULSE_PROFILER_NET=0) side by
 * side, in alternating child processes, a reader thread draining the
 * plugin's ring as the agent would:
 *   - a collective task event (startEvent + stopEvent: the OP record);
 *   - a net event (startEvent + stopEvent of one posted work request);
 *   - a proxy step (startEvent + stopEvent);
 *   - a proxy op (startEvent + stopEvent: the NET_QP record of its QP).
 * With net profiling off NCCL starts none of the last three (the plugin
 * does not ask for them); they are measured off only to show the early
 * return. Usage: bench_profiler PLUGIN.so [reps] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../profiler/nccl_profiler_abi.h"
#include "pulse/hook_ring.h"

#define TASKS 200000L
#define OPS 20000L
#define STEPS 8
#define WRS 8

static const pulse_nccl_profiler_v6_t *g_p;
static void *g_ctx;
static _Atomic int g_stop;
static _Atomic unsigned long g_drained;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *start(uint64_t type, void *parent, const void *u, size_t n)
{
	pulse_nccl_prof_descr_v6_t d;
	memset(&d, 0, sizeof d);
	d.type = type;
	d.parent_obj = parent;
	memcpy(&d.coll, u, n);
	void *h = NULL;
	g_p->start_event(g_ctx, &h, &d);
	return h;
}

static void *reader(void *arg)
{
	struct pulse_hook_ring *r = arg;
	static struct pulse_hook_record buf[4096];
	while (!atomic_load(&g_stop)) {
		size_t n = pulse_hook_ring_drain(r, buf, 4096);
		atomic_fetch_add(&g_drained, n);
		if (!n)
			usleep(100);
	}
	size_t n;
	while ((n = pulse_hook_ring_drain(r, buf, 4096)) > 0)
		atomic_fetch_add(&g_drained, n);
	return NULL;
}

/* The harness alone: a plugin whose functions do nothing. */
static ncclResult_t e_init(void **c, uint64_t id, int *m, const char *n, int nn, int nr, int r,
			   pulse_nccl_logger_t l)
{
	(void)id, (void)n, (void)nn, (void)nr, (void)r, (void)l;
	*c = (void *)1;
	*m = 0;
	return ncclSuccess;
}
static ncclResult_t e_start(void *c, void **h, pulse_nccl_prof_descr_v6_t *d)
{
	(void)c, (void)d;
	*h = NULL;
	return ncclSuccess;
}
static ncclResult_t e_stop(void *h) { (void)h; return ncclSuccess; }
static ncclResult_t e_state(void *h, pulse_nccl_prof_state_t s, pulse_nccl_prof_state_args_t *a)
{
	(void)h, (void)s, (void)a;
	return ncclSuccess;
}
static ncclResult_t e_fini(void *c) { (void)c; return ncclSuccess; }
static const pulse_nccl_profiler_v6_t g_empty = { "empty", e_init, e_start, e_stop, e_state, e_fini };

/* Child: prints "task net step op drained dropped" in ns per event. */
static int child(const char *plugin)
{
	void *lib = NULL;
	if (!strcmp(plugin, "empty")) {
		g_p = &g_empty;
	} else if (!(lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL)) || !(g_p = dlsym(lib, "ncclProfiler_v6"))) {
		fprintf(stderr, "bench_profiler: %s: %s\n", plugin, lib ? "no ncclProfiler_v6" : dlerror());
		return 1;
	}
	int mask = 0;
	if (g_p->init(&g_ctx, 0x7700000000000001ull, &mask, "bench", 1, 2, 0, NULL) != 0)
		return 1;
	struct pulse_hook_ring *ring = NULL;
	if (lib && pulse_hook_ring_open(getpid(), &ring) != 0)
		return 1;
	pthread_t th;
	if (ring)
		pthread_create(&th, NULL, reader, ring);
	struct pulse_nccl_prof_coll cd = { .func = "AllReduce", .count = 1024, .datatype = "ncclFloat32",
		.n_channels = 2, .algo = "Ring", .proto = "Simple" };
	double t0 = now();
	void *task = NULL;
	for (long i = 0; i < TASKS; i++) {
		cd.seq_number = (uint64_t)i;
		task = start(PULSE_NCCL_PROF_COLL, NULL, &cd, sizeof cd);
		g_p->stop_event(task);
	}
	double t_task = (now() - t0) / TASKS;
	struct pulse_nccl_net_ib_v1 ib;
	memset(&ib, 0, sizeof ib);
	ib.type = PULSE_NCCL_NET_IB_QP;
	ib.qp.qp_num = 0x123;
	ib.qp.length = 65536;
	struct pulse_nccl_prof_net ne = { .id = (int64_t)(PULSE_NCCL_NET_TYPE_IB | PULSE_NCCL_NET_IB_VER),
		.data = &ib };
	struct pulse_nccl_prof_proxy_op po = { .pid = getpid(), .channel_id = 1, .peer = 1, .n_steps = STEPS,
		.is_send = 1 };
	struct pulse_nccl_prof_proxy_step ps = { .step = 0 };
	double t_net = 0, t_step = 0, t_op = 0;
	for (long i = 0; i < OPS; i++) {
		double a = now();
		void *op = start(PULSE_NCCL_PROF_PROXY_OP, task, &po, sizeof po);
		double b = now();
		t_op += b - a;
		for (int s = 0; s < STEPS; s++) {
			a = now();
			void *st = start(PULSE_NCCL_PROF_PROXY_STEP, op, &ps, sizeof ps);
			b = now();
			t_step += b - a;
			for (int w = 0; w < WRS; w++) {
				ib.qp.wr_id = (uint64_t)w;
				g_p->stop_event(start(PULSE_NCCL_PROF_NET_PLUGIN, st, &ne, sizeof ne));
			}
			a = now();
			t_net += a - b;
			g_p->stop_event(st);
			t_step += now() - a;
		}
		a = now();
		g_p->stop_event(op);
		t_op += now() - a;
	}
	atomic_store(&g_stop, 1);
	struct pulse_hook_ring_stats st;
	memset(&st, 0, sizeof st);
	if (ring) {
		pthread_join(th, NULL);
		pulse_hook_ring_stats(ring, &st);
	}
	printf("%.1f %.1f %.1f %.1f %lu %llu\n", t_task, t_net / (OPS * STEPS * WRS), t_step / (OPS * STEPS),
	       t_op / OPS, atomic_load(&g_drained), (unsigned long long)(st.dropped_full + st.dropped_no_reader));
	g_p->finalize(g_ctx);
	pulse_hook_ring_close(ring, 1);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--child"))
		return child(argv[2]);
	if (argc < 2) {
		fprintf(stderr, "usage: bench_profiler PLUGIN.so [reps]\n");
		return 2;
	}
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	if (reps < 1 || reps > 99)
		reps = 7;
	double v[3][4][99];
	unsigned long drained[3] = { 0 }, dropped[3] = { 0 };
	for (int r = 0; r < reps; r++)
		for (int on = 0; on < 3; on++) { /* 0 off, 1 on, 2 the harness alone */
			int pfd[2];
			if (pipe(pfd))
				return 1;
			pid_t pid = fork();
			if (pid == 0) {
				dup2(pfd[1], 1);
				close(pfd[0]);
				setenv("PULSE_PROFILER_NET", on ? "1" : "0", 1);
				setenv("PULSE_HOOK_RING_RECORDS", "65536", 1);
				execl("/proc/self/exe", argv[0], "--child", on == 2 ? "empty" : argv[1], (char *)NULL);
				_exit(127);
			}
			close(pfd[1]);
			char out[256] = "";
			ssize_t k = read(pfd[0], out, sizeof out - 1);
			close(pfd[0]);
			int status;
			waitpid(pid, &status, 0);
			if (k <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
			    sscanf(out, "%lf %lf %lf %lf %lu %lu", &v[on][0][r], &v[on][1][r], &v[on][2][r],
				   &v[on][3][r], &drained[on], &dropped[on]) != 6) {
				fprintf(stderr, "bench_profiler: child failed (%s)\n", out);
				return 1;
			}
		}
	for (int on = 0; on < 3; on++)
		for (int m = 0; m < 4; m++)
			qsort(v[on][m], (size_t)reps, sizeof(double), cmp);
	printf("| plugin | Coll task event ns | net event (1 work request) ns | proxy step ns | "
	       "proxy op ns (its NET_QP record) | records drained / dropped (last run) |\n"
	       "|---|---|---|---|---|---|\n");
	static const char *const names[] = { "net profiling off (PULSE_PROFILER_NET=0)", "net profiling on",
		"harness only (empty plugin functions)" };
	for (int on = 0; on < 3; on++)
		printf("| %s | %.1f | %.1f | %.1f | %.1f | %lu / %lu |\n", names[on], v[on][0][reps / 2],
		       v[on][1][reps / 2], v[on][2][reps / 2], v[on][3][reps / 2], drained[on], dropped[on]);
	printf("\nMedians of %d alternating runs; %ld task events, %ld proxy ops x %d steps x %d work "
	       "requests per run, one QP. Timing brackets and the\ndescriptor fill are in every column: subtract the harness row for the plugin's own cost.\nOff, NCCL never calls the net, step or proxy-op entry points "
	       "(the plugin does not ask for them): their column is the early return only.\n",
	       reps, TASKS, OPS, STEPS, WRS);
	return 0;
}
