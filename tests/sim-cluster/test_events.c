/* Benign events and fault shapes of the cluster simulator (sim/README.md,
 * "Benign events", "Faults as they happen"): each must be visible in what
 * the hosts see (the NICs' .evs streams, the processes' hook records) and
 * in truth.json, where the analyzer's scorer reads it:
 *  - a checkpoint silences every NIC for its pause, between two iterations;
 *  - an evaluation step is forward-only: P2P and a small DP all-reduce, no
 *    gradient reduce-scatter;
 *  - hiccups stall the ranks they name, for the time truth says;
 *  - lognormal and Pareto jitter keep the mean and have heavier tails;
 *  - the sequence length scales compute and activation bytes;
 *  - a restart: old processes destroy their communicators, new pids create
 *    new communicators over new QPs, the NICs are silent in between;
 *  - transient and intermittent faults slow exactly the iterations of their
 *    episodes, which truth lists; concurrent and mixed faults all act;
 *  - events switched off change nothing; bad values are errors. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cJSON.h>
#include <glob.h>

#include "../../sim/cluster/internal.h"
#include "cluster_testutil.h"
#include "pulse/cluster_run.h"

static cJSON *truth(const char *dir)
{
	return read_run_json(dir, "truth.json");
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* true duration of iteration i */
static double iter_ns(const cJSON *t, int i)
{
	const cJSON *its = cJSON_GetObjectItemCaseSensitive(t, "iterations");
	const cJSON *it = cJSON_GetArrayItem(its, i);
	assert_non_null(it);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "complete")));
	return num(it, "end_ns") - num(it, "start_ns");
}

static const cJSON *events_of(const cJSON *t, const char *type, int n)
{
	const cJSON *e, *hit = NULL;
	int k = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "events"))
	{
		const cJSON *ty = cJSON_GetObjectItemCaseSensitive(e, "type");
		if (cJSON_IsString(ty) && !strcmp(ty->valuestring, type) && k++ == n)
			hit = e;
	}
	return hit;
}

static int count_events(const cJSON *t, const char *type)
{
	int n = 0;
	while (events_of(t, type, n))
		n++;
	return n;
}

/* the largest gap between two TX events of a NIC, and where it starts */
static double max_gap(const struct stream *s, uint64_t *at)
{
	double g = 0;
	for (size_t i = 1; i < s->n; i++)
		if ((double)(s->ev[i].t - s->ev[i - 1].t) > g) {
			g = (double)(s->ev[i].t - s->ev[i - 1].t);
			*at = s->ev[i - 1].t;
		}
	return g;
}

/* every hook record of every process of a host, by file */
struct recfile {
	uint32_t pid;
	struct pulse_hook_record *r;
	size_t n;
};

static int load_recs(const char *dir, int host, struct recfile *out, int max)
{
	char pat[512];
	snprintf(pat, sizeof pat, "%s/hosts/host%d/hook-*.rec", dir, host);
	glob_t g;
	assert_int_equal(glob(pat, 0, NULL, &g), 0);
	int n = 0;
	for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
		size_t len;
		char *b = read_file(g.gl_pathv[i], &len);
		assert_non_null(b);
		assert_true(len >= PULSE_HKR_HEADER_SIZE);
		assert_int_equal((len - PULSE_HKR_HEADER_SIZE) % sizeof(struct pulse_hook_record), 0);
		out[n].n = (len - PULSE_HKR_HEADER_SIZE) / sizeof(struct pulse_hook_record);
		out[n].r = malloc(out[n].n * sizeof *out[n].r + 1);
		memcpy(out[n].r, b + PULSE_HKR_HEADER_SIZE, out[n].n * sizeof *out[n].r);
		out[n].pid = (uint32_t)strtoul(strrchr(g.gl_pathv[i], '-') + 1, NULL, 10);
		free(b);
		n++;
	}
	globfree(&g);
	return n;
}

static void free_recs(struct recfile *f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i].r);
}

/* ---------- checkpoints ---------- */
#define CKPT_GPT                                                                              \
	"{\"seed\":5,\"iterations\":4,\"cluster\":{\"hosts\":2,\"gpus_per_host\":1}," \
	"\"events\":{\"checkpoint_every\":2,\"checkpoint_ns\":1e9}}"

static void test_checkpoint(void **state)
{
	(void)state;
	char *dir = run_json(CKPT_GPT, NULL);
	cJSON *t = truth(dir);
	/* one save, after iteration 1 (none after the last) */
	assert_int_equal(count_events(t, "checkpoint"), 1);
	const cJSON *c = events_of(t, "checkpoint", 0);
	assert_int_equal((int)num(c, "after_iteration"), 1);
	assert_int_equal((int)num(c, "ranks"), 2);
	double pause = num(c, "end_ns") - num(c, "start_ns");
	assert_true(pause >= 0.9e9 && pause <= 1.15e9);
	/* between iterations 1 and 2, never inside one */
	const cJSON *its = cJSON_GetObjectItemCaseSensitive(t, "iterations");
	assert_true(num(c, "start_ns") >= num(cJSON_GetArrayItem(its, 1), "end_ns") - 1e6);
	assert_true(num(c, "end_ns") <= num(cJSON_GetArrayItem(its, 2), "start_ns") + 1e6);
	/* every NIC is silent for the pause (NIC clock: drift of ppm) */
	for (int h = 0; h < 2; h++) {
		struct stream s;
		load_evs(dir, h, 0, &s);
		uint64_t at = 0;
		double g = max_gap(&s, &at);
		assert_true(g >= 0.9e9 && g <= 1.2e9);
		free_stream(&s);
	}
	/* and every process is silent too: no hook record in the pause */
	struct recfile rf[4];
	int nf = load_recs(dir, 0, rf, 4);
	assert_int_equal(nf, 1);
	double gmax = 0;
	for (size_t i = 1; i < rf[0].n; i++)
		if ((double)(rf[0].r[i].time_ns - rf[0].r[i - 1].time_ns) > gmax)
			gmax = (double)(rf[0].r[i].time_ns - rf[0].r[i - 1].time_ns);
	assert_true(gmax >= 0.9e9);
	free_recs(rf, nf);
	cJSON_Delete(t);
	done(dir);

	/* the same job without it: no gap near a second */
	dir = run_json("{\"seed\":5,\"iterations\":4,\"cluster\":{\"hosts\":2,\"gpus_per_host\":1}}", NULL);
	struct stream s;
	load_evs(dir, 0, 0, &s);
	uint64_t at;
	assert_true(max_gap(&s, &at) < 50e6);
	free_stream(&s);
	done(dir);
}

/* ---------- evaluation steps ---------- */
static void test_eval(void **state)
{
	(void)state;
	/* pp 2 x dp 2: stage 1 (hosts 2, 3) is the last */
	char *dir = run_json("{\"seed\":6,\"iterations\":6,\"cluster\":{\"hosts\":4,\"gpus_per_host\":1},"
			     "\"gpt\":{\"pp\":2,\"dp\":2},\"events\":{\"eval_every\":2,\"eval_batches\":3,"
			     "\"eval_bytes\":65536}}",
			     NULL);
	cJSON *t = truth(dir);
	assert_int_equal(count_events(t, "evaluation"), 2); /* after 1 and 3, not after 5 */
	for (int host = 0; host < 4; host++) {
		struct recfile rf[2];
		int nf = load_recs(dir, host, rf, 2);
		assert_int_equal(nf, 1);
		int small_ar = 0, rs = 0, sends = 0;
		for (size_t i = 0; i < rf[0].n; i++) {
			const struct pulse_hook_record *r = &rf[0].r[i];
			if (r->kind != PULSE_HOOK_OP)
				continue;
			small_ar += r->u.op.type == PULSE_HOOK_OP_ALLREDUCE && r->u.op.count == 65536 / 4;
			rs += r->u.op.type == PULSE_HOOK_OP_REDUCESCATTER;
			sends += r->u.op.type == PULSE_HOOK_OP_SEND;
		}
		/* the last stage reduces the eval loss; nobody reduces gradients
		 * more than once per training iteration */
		assert_int_equal(small_ar, host >= 2 ? 2 : 0);
		assert_int_equal(rs, 6);
		/* stage 0 sends activations forward: 4 per iteration, 3 per evaluation */
		if (host < 2)
			assert_int_equal(sends, 6 * 4 + 2 * 3);
		free_recs(rf, nf);
	}
	cJSON_Delete(t);
	done(dir);
	bad("{\"workload\":\"standalone\",\"events\":{\"eval_every\":2}}", "events.eval_every");
}

/* ---------- data-loader hiccups ---------- */
static void test_hiccup(void **state)
{
	(void)state;
	const char *base = "{\"seed\":8,\"iterations\":5,\"cluster\":{\"hosts\":2,\"gpus_per_host\":2},"
			   "\"compute\":{\"jitter\":0}";
	char json[512];
	snprintf(json, sizeof json, "%s,\"events\":{\"hiccup_prob\":1,\"hiccup_ns\":20e6}}", base);
	char *dir = run_json(json, NULL);
	cJSON *t = truth(dir);
	/* every rank, every iteration */
	assert_int_equal(count_events(t, "data_loader_hiccup"), 4 * 5);
	for (int k = 0; k < 20; k++) {
		const cJSON *e = events_of(t, "data_loader_hiccup", k);
		double d = num(e, "end_ns") - num(e, "start_ns");
		assert_true(d >= 2e6 - 1 && d <= 20e6 + 1);
	}
	snprintf(json, sizeof json, "%s}", base);
	char *dir0 = run_json(json, NULL);
	cJSON *t0 = truth(dir0);
	/* the job waits for its slowest rank's stall */
	double sum = 0, sum0 = 0;
	for (int i = 0; i < 5; i++) {
		sum += iter_ns(t, i);
		sum0 += iter_ns(t0, i);
	}
	assert_true(sum > sum0 + 5 * 2e6);
	assert_null(cJSON_GetObjectItemCaseSensitive(t0, "events"));
	cJSON_Delete(t);
	cJSON_Delete(t0);
	done(dir);
	done(dir0);
}

/* ---------- heavy-tailed jitter ---------- */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* mean and the 99.9th percentile of n draws of sim_jitter around 1 */
static void jitter_stats(int dist, double j, double *mean, double *p999)
{
	struct sc_scenario s;
	char err[256];
	assert_int_equal(sc_scenario_parse("{}", 2, &s, err, sizeof err), 0);
	s.jitter = j;
	s.jitter_dist = dist;
	s.pareto_alpha = 2.5;
	struct sim sm;
	memset(&sm, 0, sizeof sm);
	sm.s = &s;
	sc_rng_seed(&sm.rng, 42);
	enum { N = 200000 };
	double *v = malloc(N * sizeof *v);
	double sum = 0;
	for (int i = 0; i < N; i++) {
		v[i] = sim_jitter(&sm, 1.0);
		assert_true(v[i] >= 0.2 && v[i] <= 20);
		sum += v[i];
	}
	qsort(v, N, sizeof *v, cmp_d);
	*mean = sum / N;
	*p999 = v[N - N / 1000];
	free(v);
}

static void test_jitter_tails(void **state)
{
	(void)state;
	double mn, pn, ml, pl, mp, pp;
	jitter_stats(JD_NORMAL, 0.1, &mn, &pn);
	jitter_stats(JD_LOGNORMAL, 0.1, &ml, &pl);
	jitter_stats(JD_PARETO, 0.1, &mp, &pp);
	/* every law keeps the mean */
	assert_true(mn > 0.99 && mn < 1.01);
	assert_true(ml > 0.99 && ml < 1.01);
	assert_true(mp > 0.98 && mp < 1.02);
	/* and the heavy ones have longer tails: Pareto (alpha 2.5) far longer */
	assert_true(pl > pn);
	assert_true(pp > pn + 0.3);
	bad("{\"compute\":{\"jitter_dist\":\"cauchy\"}}", "compute.jitter_dist");
	bad("{\"compute\":{\"pareto_alpha\":1}}", "compute.pareto_alpha");
}

/* ---------- sequence length ---------- */
static void test_seqlen(void **state)
{
	(void)state;
	char *dir = run_json("{\"seed\":9,\"iterations\":8,\"cluster\":{\"hosts\":2,\"gpus_per_host\":1},"
			     "\"gpt\":{\"pp\":2,\"dp\":1},\"compute\":{\"jitter\":0},"
			     "\"events\":{\"seqlen_warmup\":4,\"seqlen_start\":0.25,"
			     "\"seqlen_change_at\":6,\"seqlen_change\":2}}",
			     NULL);
	cJSON *t = truth(dir);
	double full = iter_ns(t, 4);
	assert_true(iter_ns(t, 0) < 0.5 * full);
	assert_true(iter_ns(t, 2) < iter_ns(t, 3));
	assert_true(iter_ns(t, 6) > 1.6 * full);
	assert_int_equal(count_events(t, "seqlen"), 6); /* 0.25, 0.4375, 0.625, 0.8125, 1 (at 4), 2 (at 6) */
	/* activations scale: the first send carries a quarter of 8 MiB (bf16) */
	struct recfile rf[2];
	int nf = load_recs(dir, 0, rf, 2);
	uint64_t first = 0, later = 0;
	for (size_t i = 0; i < rf[0].n; i++) {
		const struct pulse_hook_record *r = &rf[0].r[i];
		if (r->kind == PULSE_HOOK_OP && r->u.op.type == PULSE_HOOK_OP_SEND) {
			if (!first)
				first = r->u.op.count;
			later = r->u.op.count;
		}
	}
	assert_int_equal(first, (8u << 20) / 4 / 2);
	assert_int_equal(later, (8u << 20) * 2 / 2);
	free_recs(rf, nf);
	cJSON_Delete(t);
	done(dir);
	bad("{\"iterations\":3,\"events\":{\"seqlen_change_at\":3}}", "events.seqlen_change_at");
}

/* ---------- a job restart ---------- */
static void restart_case(int clean)
{
	char json[512];
	snprintf(json, sizeof json,
		 "{\"seed\":12,\"iterations\":5,\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"gpt\":{\"pp\":2,\"dp\":2},"
		 "\"events\":{\"restart_after\":2,\"restart_ns\":3e9,\"restart_clean\":%s}}",
		 clean ? "true" : "false");
	char *dir = run_json(json, NULL);
	cJSON *t = truth(dir);
	assert_int_equal(count_events(t, "restart"), 1);
	const cJSON *e = events_of(t, "restart", 0);
	assert_int_equal((int)num(e, "after_iteration"), 1);
	assert_true(num(e, "end_ns") - num(e, "start_ns") >= 3e9);
	for (int i = 0; i < 5; i++)
		iter_ns(t, i); /* every iteration completes, before and after */
	const cJSON *its = cJSON_GetObjectItemCaseSensitive(t, "iterations");
	assert_true(num(cJSON_GetArrayItem(its, 2), "start_ns") >= num(e, "end_ns") - 1e6);
	/* two processes per GPU: the old one's records end, the new one's begin */
	struct recfile rf[8];
	int nf = load_recs(dir, 1, rf, 8);
	assert_int_equal(nf, 4);
	const cJSON *p;
	int matched = 0;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(e, "processes"))
	{
		uint32_t op = (uint32_t)num(p, "old_pid"), np = (uint32_t)num(p, "new_pid");
		const struct recfile *o = NULL, *n = NULL;
		for (int i = 0; i < nf; i++) {
			if (rf[i].pid == op)
				o = &rf[i];
			if (rf[i].pid == np)
				n = &rf[i];
		}
		if (!o || !n)
			continue; /* another host's */
		matched++;
		assert_true(o->n > 0 && n->n > 0);
		/* the new process starts after the old one ended, with its own
		 * communicators over QPs of new numbers */
		assert_true(n->r[0].time_ns > o->r[o->n - 1].time_ns + 2900000000ull);
		int destroys = 0, old_ops = 0, new_inits = 0;
		for (size_t i = 0; i < o->n; i++) {
			destroys += o->r[i].kind == PULSE_HOOK_COMM_DESTROY || o->r[i].kind == PULSE_HOOK_QP_DESTROY;
			old_ops += o->r[i].kind == PULSE_HOOK_OP;
		}
		assert_true(old_ops > 0);
		assert_int_equal(destroys > 0, clean);
		if (clean)
			assert_int_equal(o->r[o->n - 1].kind, PULSE_HOOK_COMM_DESTROY);
		for (size_t i = 0; i < n->n; i++) {
			const struct pulse_hook_record *r = &n->r[i];
			assert_int_equal(r->pid, np);
			if (r->kind == PULSE_HOOK_COMM_INIT) {
				new_inits++;
				for (size_t k = 0; k < o->n; k++)
					if (o->r[k].kind == PULSE_HOOK_COMM_INIT)
						assert_true(o->r[k].u.comm.comm_id != r->u.comm.comm_id);
			}
			if (r->kind == PULSE_HOOK_QP_CREATE)
				for (size_t k = 0; k < o->n; k++)
					if (o->r[k].kind == PULSE_HOOK_QP_CREATE &&
					    !strcmp(o->r[k].u.qp.dev, r->u.qp.dev))
						assert_true(o->r[k].u.qp.qpn != r->u.qp.qpn);
		}
		assert_true(new_inits > 0);
		/* seq restarts at 0 on the new communicators */
		size_t k = 0;
		while (k < n->n && n->r[k].kind != PULSE_HOOK_OP)
			k++;
		assert_true(k < n->n);
		assert_int_equal(n->r[k].u.op.seq, 0);
		/* and group ids from 1, like any new process */
		k = 0;
		while (k < n->n && n->r[k].kind != PULSE_HOOK_GROUP_START)
			k++;
		assert_true(k < n->n);
		assert_int_equal(n->r[k].u.group.group_id, 1);
	}
	assert_int_equal(matched, 2);
	free_recs(rf, nf);
	/* nothing is sent while no process runs */
	struct stream s;
	load_evs(dir, 1, 0, &s);
	uint64_t at;
	assert_true(max_gap(&s, &at) >= 3e9);
	free_stream(&s);
	/* cluster.json lists both processes of each GPU */
	cJSON *c = read_run_json(dir, "cluster.json");
	const cJSON *h1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "hosts"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h1, "processes")), 4);
	cJSON_Delete(c);
	cJSON_Delete(t);
	done(dir);
}

static void test_restart(void **state)
{
	(void)state;
	restart_case(1);
	restart_case(0);
	bad("{\"iterations\":3,\"events\":{\"restart_after\":3}}", "events.restart_after");
	bad("{\"events\":{\"restart_ns\":0}}", "events.restart_ns");
}

/* ---------- transient, intermittent, concurrent, mixed faults ---------- */
/* iteration i's episode: the fault's truth episodes, by iteration start */
static int in_episode(const cJSON *f, const cJSON *t, int i)
{
	const cJSON *its = cJSON_GetObjectItemCaseSensitive(t, "iterations");
	double s = num(cJSON_GetArrayItem(its, i), "start_ns");
	double e = num(cJSON_GetArrayItem(its, i), "end_ns");
	const cJSON *ep;
	cJSON_ArrayForEach(ep, cJSON_GetObjectItemCaseSensitive(f, "episodes"))
	{
		double a = num(ep, "start_ns"), b = num(ep, "end_ns");
		if (a < e && (b == 0 || b > s + (e - s) / 2))
			return 1;
	}
	return 0;
}

static const char *FAULT_BASE =
	"{\"seed\":21,\"iterations\":8,\"cluster\":{\"hosts\":4,\"gpus_per_host\":1},"
	"\"compute\":{\"jitter\":0.01},";

/* FAULT_BASE with this failure object: the run, its truth and the fault */
static const cJSON *fault_run(const char *failure, char **dir, cJSON **t)
{
	char json[512];
	snprintf(json, sizeof json, "%s\"failure\":%s}", FAULT_BASE, failure);
	*dir = run_json(json, NULL);
	*t = truth(*dir);
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(*t, "failures"), 0);
}

static void test_transient(void **state)
{
	(void)state;
	char *dir;
	cJSON *t;
	const cJSON *f = fault_run("{\"type\":\"pcie_downgrade\",\"host\":1,\"severity\":0.3,"
				   "\"start_iteration\":2,\"end_iteration\":5}",
				   &dir, &t);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "episodes")), 1);
	assert_true(num(f, "end_ns") > num(f, "start_ns"));
	/* the slow iterations are exactly the episode's */
	double healthy = iter_ns(t, 0);
	for (int i = 0; i < 8; i++) {
		int slow = iter_ns(t, i) > 1.3 * healthy;
		assert_int_equal(slow, i >= 2 && i < 5);
		assert_int_equal(in_episode(f, t, i), i >= 2 && i < 5);
	}
	/* the first failure is also "failure", as before */
	const cJSON *f0 = cJSON_GetObjectItemCaseSensitive(t, "failure");
	assert_true(num(f0, "start_ns") == num(f, "start_ns"));
	cJSON_Delete(t);
	done(dir);
}

static void test_intermittent(void **state)
{
	(void)state;
	char *dir;
	cJSON *t;
	const cJSON *f = fault_run("{\"type\":\"gpu_throttling\",\"host\":2,\"severity\":200,"
				   "\"start_iteration\":1,\"on_iterations\":1,\"off_iterations\":1}",
				   &dir, &t);
	/* on in 1, 3, 5, 7 (the last still on at the end) */
	const cJSON *eps = cJSON_GetObjectItemCaseSensitive(f, "episodes");
	assert_int_equal(cJSON_GetArraySize(eps), 4);
	assert_true(num(cJSON_GetArrayItem(eps, 3), "end_ns") == 0);
	assert_true(num(f, "end_ns") == 0);
	double healthy = iter_ns(t, 0);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(iter_ns(t, i) > 1.3 * healthy, i % 2 == 1);
		assert_int_equal(in_episode(f, t, i), i % 2 == 1);
	}
	cJSON_Delete(t);
	done(dir);
}

static void test_concurrent_and_mixed(void **state)
{
	(void)state;
	char json[768];
	/* two machines: a PCIe downgrade and GPU throttling, both act */
	snprintf(json, sizeof json,
		 "%s\"failures\":[{\"type\":\"pcie_downgrade\",\"host\":1,\"severity\":0.3,"
		 "\"start_iteration\":2},{\"type\":\"gpu_throttling\",\"host\":3,\"severity\":200,"
		 "\"start_iteration\":5}]}",
		 FAULT_BASE);
	char *dir = run_json(json, NULL);
	cJSON *t = truth(dir);
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(t, "failures");
	assert_int_equal(cJSON_GetArraySize(fs), 2);
	const cJSON *f;
	cJSON_ArrayForEach(f, fs)
		assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "activated")));
	/* the second fault adds to the first from iteration 5 on */
	double h = iter_ns(t, 0), one = iter_ns(t, 3), both = iter_ns(t, 6);
	assert_true(one > 1.3 * h);
	assert_true(both > one * 1.1);
	cJSON_Delete(t);
	done(dir);

	/* one machine, one fault of each class: a mixed fault */
	snprintf(json, sizeof json,
		 "%s\"failures\":[{\"type\":\"gpu_throttling\",\"host\":2,\"severity\":250,"
		 "\"start_iteration\":2},{\"type\":\"pcie_downgrade\",\"host\":2,\"severity\":0.3,"
		 "\"start_iteration\":4}]}",
		 FAULT_BASE);
	dir = run_json(json, NULL);
	t = truth(dir);
	fs = cJSON_GetObjectItemCaseSensitive(t, "failures");
	assert_int_equal(cJSON_GetArraySize(fs), 2);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fs, 0), "class")->valuestring,
			    "computation");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fs, 1), "class")->valuestring,
			    "communication");
	assert_true(iter_ns(t, 5) > iter_ns(t, 3) * 1.1);
	cJSON_Delete(t);
	done(dir);
}

/* ---------- nothing changes when events are off ---------- */
static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = read_file(a, &la), *y = read_file(b, &lb);
	int same = x && y && la == lb && !memcmp(x, y, la);
	free(x);
	free(y);
	return same;
}

static void test_off_is_unchanged(void **state)
{
	(void)state;
	const char *plain = "{\"seed\":3,\"iterations\":3,\"cluster\":{\"hosts\":2,\"gpus_per_host\":2}}";
	const char *zeros = "{\"seed\":3,\"iterations\":3,\"cluster\":{\"hosts\":2,\"gpus_per_host\":2},"
			    "\"compute\":{\"jitter_dist\":\"normal\"},"
			    "\"events\":{\"checkpoint_every\":0,\"eval_every\":0,\"hiccup_prob\":0,"
			    "\"seqlen_warmup\":0,\"restart_after\":0}}";
	char *a = run_json(plain, NULL), *b = run_json(zeros, NULL);
	const char *files[] = { "truth.json", "cluster.json", "hosts/host0/mlx5_0.evs",
				"hosts/host1/mlx5_1.evs", "truth-ops.jsonl" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char pa[512], pb[512];
		snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
		snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
		assert_true(same_file(pa, pb));
	}
	done(a);
	done(b);
}

/* ---------- scenario errors ---------- */
static void test_bad_shapes(void **state)
{
	(void)state;
	bad("{\"events\":{\"hiccup_prob\":1.5}}", "events.hiccup_prob: 1.5 is out of range");
	bad("{\"events\":{\"checkpoint_ns\":100}}", "events.checkpoint_ns");
	bad("{\"events\":{\"checkpoint_every\":-1}}", "events.checkpoint_every");
	bad("{\"events\":{\"eval_batches\":0}}", "events.eval_batches");
	bad("{\"events\":{\"seqlen_start\":2}}", "events.seqlen_start");
	bad("{\"events\":{\"restart_clean\":1}}", "events.restart_clean: expected true or false");
	bad("{\"events\":{\"checkpoints\":2}}", "events: unknown field \"checkpoints\"");
	bad("{\"events\":[1]}", "events: expected an object");
	bad("{\"iterations\":6,\"failure\":{\"type\":\"gpu_throttling\",\"start_iteration\":3,"
	    "\"end_iteration\":3}}",
	    "failure.end_iteration");
	bad("{\"iterations\":6,\"failure\":{\"type\":\"gpu_throttling\",\"on_iterations\":2}}",
	    "both on_iterations and off_iterations");
	bad("{\"iterations\":6,\"failure\":{\"type\":\"nic_down\",\"end_iteration\":4}}",
	    "nic_down is a fail-stop");
	bad("{\"failure\":{\"type\":\"nic_down\"},\"failures\":[{\"type\":\"nic_down\"}]}",
	    "failure and failures");
	bad("{\"failures\":[]}", "failures: expected an array of 1 to 4");
	bad("{\"failures\":[{\"type\":\"nic_down\"},{\"type\":\"nic_down\",\"host\":1},"
	    "{\"type\":\"nic_down\",\"host\":1},{\"type\":\"nic_down\"},{\"type\":\"nic_down\"}]}",
	    "failures: expected an array of 1 to 4");
	bad("{\"failures\":[1]}", "failures[0]: expected an object");
	bad("{\"failures\":[{\"type\":\"gpu_throttling\",\"severity\":300},{\"tipe\":\"x\"}]}",
	    "failures[1]: unknown field \"tipe\"");
	bad("{\"failures\":[{\"type\":\"pcie_downgrade\",\"host\":1},{\"type\":\"nic_down\",\"host\":1}]}",
	    "failures[1]: host 1 already has a communication fault");
	bad("{\"failures\":[{\"type\":\"pcie_downgrade\"},{\"type\":\"gpu_throttling\",\"host\":7}]}",
	    "failures[1]: host 7 gpu 0 is not in the cluster");
	bad("{\"iterations\":4,\"failures\":[{\"type\":\"pcie_downgrade\",\"start_iteration\":4}]}",
	    "failures[0].start_iteration");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint),	 cmocka_unit_test(test_eval),
		cmocka_unit_test(test_hiccup),		 cmocka_unit_test(test_jitter_tails),
		cmocka_unit_test(test_seqlen),		 cmocka_unit_test(test_restart),
		cmocka_unit_test(test_transient),	 cmocka_unit_test(test_intermittent),
		cmocka_unit_test(test_concurrent_and_mixed), cmocka_unit_test(test_off_is_unchanged),
		cmocka_unit_test(test_bad_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
