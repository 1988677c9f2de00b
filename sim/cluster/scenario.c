/* Scenario files: JSON (libcjson), every field optional except where the
 * README says otherwise; unknown fields are errors (typos must not silently
 * fall back to defaults). The schema and defaults are in sim/README.md,
 * "run_cluster". */
#define _GNU_SOURCE
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

const struct sc_fail_info sc_fail_table[F_COUNT] = {
	[F_NONE] = { "none", "", "" },
	[F_NET_CONGESTION] = { "network_congestion", "communication", "fail-slow" },
	[F_CPU_CONTENTION] = { "cpu_contention", "computation", "fail-slow" },
	[F_NIC_DOWN] = { "nic_down", "communication", "fail-stop" },
	[F_MOE_IMBALANCE] = { "moe_expert_imbalance", "computation", "fail-slow" },
	[F_PCIE_CONTENTION] = { "pcie_contention", "communication", "fail-slow" },
	[F_GPU_THROTTLING] = { "gpu_throttling", "computation", "fail-slow" },
	[F_GPU_EXEC_ERROR] = { "gpu_execution_error", "computation", "fail-stop" },
	[F_CUDA_EXEC_ERROR] = { "cuda_execution_error", "computation", "fail-stop" },
	[F_CPU_THROTTLING] = { "cpu_throttling", "computation", "fail-slow" },
	[F_PCIE_DOWNGRADE] = { "pcie_downgrade", "communication", "fail-slow" },
	[F_CROSS_NUMA] = { "nic_gpu_cross_numa", "communication", "fail-slow" },
	[F_MEM_MISALIGN] = { "memory_misalignment", "communication", "fail-slow" },
	[F_CCLD_NOT_ENTERED] = { "ccld_not_entered", "computation", "fail-stop" },
	[F_CCLD_INCONSISTENT] = { "ccld_inconsistent", "computation", "fail-stop" },
	[F_VT_SLOW_FORWARD] = { "venus_slow_forward", "computation", "fail-slow" },
	[F_VT_SLOW_BACKWARD] = { "venus_slow_backward", "computation", "fail-slow" },
	[F_VT_SLOW_TRANSMISSION] = { "venus_slow_transmission", "communication", "fail-slow" },
	[F_HOLMES_SPIKE] = { "holmes_spike", "communication", "fail-slow" },
	[F_HOLMES_FLUCTUATION] = { "holmes_fluctuation", "communication", "fail-slow" },
	[F_HOLMES_PERSISTENT] = { "holmes_persistent", "communication", "fail-slow" },
	[F_VED_BACKGROUND] = { "vedrfolnir_background", "communication", "fail-slow" },
	[F_VED_INCAST] = { "vedrfolnir_incast", "communication", "fail-slow" },
};

int sc_fail_from_name(const char *name)
{
	for (int i = 0; i < F_COUNT; i++)
		if (!strcmp(sc_fail_table[i].name, name))
			return i;
	return -1;
}

struct ctx {
	char *err;
	size_t errlen;
	int failed;
};

static void fail(struct ctx *c, const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
}

/* Every member of `obj` must be in `known` (NULL-terminated). */
static void check_known(struct ctx *c, const cJSON *obj, const char *where,
			const char *const *known)
{
	for (const cJSON *m = obj ? obj->child : NULL; m; m = m->next) {
		int ok = 0;
		for (int i = 0; known[i]; i++)
			if (m->string && !strcmp(m->string, known[i]))
				ok = 1;
		if (!ok)
			fail(c, "%s: unknown field \"%s\"", where, m->string ? m->string : "?");
	}
}

static void get_num(struct ctx *c, const cJSON *obj, const char *where, const char *key,
		    double *out, double lo, double hi)
{
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	if (!v)
		return;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		fail(c, "%s.%s: expected a number", where, key);
		return;
	}
	if (v->valuedouble < lo || v->valuedouble > hi) {
		fail(c, "%s.%s: %g is out of range [%g, %g]", where, key, v->valuedouble, lo, hi);
		return;
	}
	*out = v->valuedouble;
}

static void get_int(struct ctx *c, const cJSON *obj, const char *where, const char *key, int *out,
		    int lo, int hi)
{
	double d = *out;
	get_num(c, obj, where, key, &d, lo, hi);
	if (d != floor(d))
		fail(c, "%s.%s: expected an integer", where, key);
	*out = (int)d;
}

static void get_u64(struct ctx *c, const cJSON *obj, const char *where, const char *key,
		    uint64_t *out, double lo, double hi)
{
	double d = (double)*out;
	get_num(c, obj, where, key, &d, lo, hi);
	if (d != floor(d))
		fail(c, "%s.%s: expected an integer", where, key);
	*out = (uint64_t)d;
}

static const char *get_str(struct ctx *c, const cJSON *obj, const char *where, const char *key)
{
	const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	if (!v)
		return NULL;
	if (!cJSON_IsString(v) || !v->valuestring) {
		fail(c, "%s.%s: expected a string", where, key);
		return NULL;
	}
	return v->valuestring;
}

static const cJSON *get_obj(struct ctx *c, const cJSON *root, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsObject(v)) {
		fail(c, "%s: expected an object", key);
		return NULL;
	}
	return v;
}

static void defaults(struct sc_scenario *s)
{
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "unnamed");
	s->seed = 1;
	s->workload = WL_GPT;
	s->hosts = 2;
	s->gpus = 2;
	s->nic_gbps = 400;
	s->nvlink_gbps = 2400;
	s->clock_offset_ns = 1e6;
	s->clock_drift_ppm = 20;
	s->nic_drift_ppm = 5;
	s->clock_base_ns = 1700000000000000000ull;
	s->poll_ns = 1e9;
	s->epoch_ns = 32000;
	s->tail_ns = -1; /* default: poll_ns */
	s->hang_tail_ns = 12e9;
	s->start_ns = 2e6;
	s->iterations = 3;
	s->channels = 2;
	s->p2p_channels = 2;
	s->slots = 4;
	s->chunk_slices = 2;
	s->algo = ALGO_RING;
	s->slice_bytes = 1u << 20;
	s->proxy_ns = 2000;
	s->launch_ns = 6000;
	s->call_ns = 1500;
	s->net_latency_ns = 2000;
	s->mtu = 4096;
	s->event_max_bytes = 65536;
	s->event_max_ns = 8000;
	s->jitter = 0.02;
	s->cpu_frac = 0.25;
	s->gpu_queue = 1;
	s->pp = 1;
	s->dp = 2;
	s->microbatches = 4;
	s->fwd_ns = 2e6;
	s->bwd_ns = 4e6;
	s->optimizer_ns = 1e6;
	s->act_bytes = 8u << 20;
	s->grad_bytes = 256u << 20;
	s->tp_bytes = 16u << 20;
	s->zero = 1;
	s->ep = 2;
	s->moe_layers = 2;
	s->expert_ns = 1.5e6;
	s->attn_ns = 1e6;
	s->tokens_bytes = 16u << 20;
	s->routing_skew = 0.3;
	s->pattern = PAT_NEIGHBOR;
	s->collective_type = PULSE_HOOK_OP_ALLREDUCE;
	s->msg_bytes = 64u << 20;
	s->gap_ns = 1e6;
	s->failure.type = F_NONE;
	s->failure.host = -1;
	s->failure.gpu = 0;
	s->failure.severity = 0;
	s->failure.start_iteration = 1;
	s->failure.period_ns = 2e6;
	s->failure.duration_ns = 5e5;
}

static int op_from_name(const char *n)
{
	static const char *const names[] = { "", "allreduce", "allgather", "reducescatter",
					     "broadcast", "reduce", "alltoall" };
	for (int i = 1; i < 7; i++)
		if (!strcmp(n, names[i]))
			return i;
	return -1;
}

int sc_scenario_parse(const char *text, size_t len, struct sc_scenario *s, char *err,
		      size_t errlen)
{
	struct ctx c = { err, errlen, 0 };
	defaults(s);
	cJSON *root = cJSON_ParseWithLength(text, len);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;
		snprintf(err, errlen, "not valid JSON (near byte %zu)", off);
		return -1;
	}
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "the scenario must be a JSON object");
		cJSON_Delete(root);
		return -1;
	}
	static const char *const top[] = { "name", "seed", "workload", "description", "quick",
					   "iterations", "poll_ns", "epoch_ns", "tail_ns", "hang_tail_ns",
					   "start_ns", "cluster", "nccl", "compute", "gpt", "moe",
					   "standalone", "fabric", "failure", NULL };
	check_known(&c, root, "scenario", top);
	const char *name = get_str(&c, root, "scenario", "name");
	if (name) {
		if (!*name || strlen(name) >= sizeof s->name)
			fail(&c, "scenario.name: 1 to %zu characters", sizeof s->name - 1);
		for (const char *p = name; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
				fail(&c, "scenario.name: only letters, digits, '-', '_', '.'");
		if (!c.failed)
			snprintf(s->name, sizeof s->name, "%s", name);
	}
	get_u64(&c, root, "scenario", "seed", &s->seed, 0, 9007199254740991.0);
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quick");
	if (q && !cJSON_IsBool(q))
		fail(&c, "scenario.quick: expected true or false");
	const char *wl = get_str(&c, root, "scenario", "workload");
	if (wl) {
		if (!strcmp(wl, "gpt"))
			s->workload = WL_GPT;
		else if (!strcmp(wl, "moe"))
			s->workload = WL_MOE;
		else if (!strcmp(wl, "standalone"))
			s->workload = WL_STANDALONE;
		else
			fail(&c, "scenario.workload: \"%s\" is not gpt, moe or standalone", wl);
	}
	if (s->workload == WL_MOE) { /* defaults that differ by workload */
		s->hosts = 2;
		s->gpus = 2;
	} else if (s->workload == WL_STANDALONE) {
		s->hosts = 4;
		s->gpus = 1;
		s->iterations = 3;
	}
	get_int(&c, root, "scenario", "iterations", &s->iterations, 1, 100000);
	get_num(&c, root, "scenario", "poll_ns", &s->poll_ns, 1e6, 2e9);
	get_num(&c, root, "scenario", "epoch_ns", &s->epoch_ns, 1000, 1e6);
	get_num(&c, root, "scenario", "tail_ns", &s->tail_ns, 0, 60e9);
	get_num(&c, root, "scenario", "hang_tail_ns", &s->hang_tail_ns, 0, 600e9);
	get_num(&c, root, "scenario", "start_ns", &s->start_ns, 1e5, 60e9);
	if (s->tail_ns < 0)
		s->tail_ns = s->poll_ns;

	const cJSON *cl = get_obj(&c, root, "cluster");
	static const char *const clk[] = { "hosts", "gpus_per_host", "nic_gbps", "nvlink_gbps",
					   "clock_offset_ns", "clock_drift_ppm", "nic_drift_ppm",
					   "clock_base_ns", NULL };
	check_known(&c, cl, "cluster", clk);
	get_int(&c, cl, "cluster", "hosts", &s->hosts, 1, SC_MAX_HOSTS);
	get_int(&c, cl, "cluster", "gpus_per_host", &s->gpus, 1, SC_MAX_GPUS);
	get_num(&c, cl, "cluster", "nic_gbps", &s->nic_gbps, 1, 3200);
	get_num(&c, cl, "cluster", "nvlink_gbps", &s->nvlink_gbps, 1, 100000);
	get_num(&c, cl, "cluster", "clock_offset_ns", &s->clock_offset_ns, 0, 1e10);
	get_num(&c, cl, "cluster", "clock_drift_ppm", &s->clock_drift_ppm, 0, 500);
	get_num(&c, cl, "cluster", "nic_drift_ppm", &s->nic_drift_ppm, 0, 500);
	get_u64(&c, cl, "cluster", "clock_base_ns", &s->clock_base_ns, 1e17, 4e18);

	const cJSON *nc = get_obj(&c, root, "nccl");
	static const char *const nck[] = { "channels", "p2p_channels", "slots", "chunk_slices", "algo",
					   "slice_bytes", "proxy_ns", "launch_ns", "call_ns",
					   "net_latency_ns", "mtu", "event_max_bytes",
					   "event_max_ns", NULL };
	check_known(&c, nc, "nccl", nck);
	get_int(&c, nc, "nccl", "channels", &s->channels, 1, SC_MAX_CHANNELS);
	get_int(&c, nc, "nccl", "p2p_channels", &s->p2p_channels, 1, SC_MAX_CHANNELS);
	get_int(&c, nc, "nccl", "slots", &s->slots, 1, 64);
	get_int(&c, nc, "nccl", "chunk_slices", &s->chunk_slices, 1, 64);
	const char *algo = get_str(&c, nc, "nccl", "algo");
	if (algo) {
		if (!strcmp(algo, "ring"))
			s->algo = ALGO_RING;
		else if (!strcmp(algo, "tree"))
			s->algo = ALGO_TREE;
		else
			fail(&c, "nccl.algo: \"%s\" is not ring or tree", algo);
	}
	get_u64(&c, nc, "nccl", "slice_bytes", &s->slice_bytes, 4096, 16u << 20);
	get_num(&c, nc, "nccl", "proxy_ns", &s->proxy_ns, 0, 1e8);
	get_num(&c, nc, "nccl", "launch_ns", &s->launch_ns, 0, 1e8);
	get_num(&c, nc, "nccl", "call_ns", &s->call_ns, 0, 1e8);
	get_num(&c, nc, "nccl", "net_latency_ns", &s->net_latency_ns, 0, 1e8);
	get_int(&c, nc, "nccl", "mtu", &s->mtu, 256, 4096);
	get_u64(&c, nc, "nccl", "event_max_bytes", &s->event_max_bytes, 4096, 2097120);
	get_num(&c, nc, "nccl", "event_max_ns", &s->event_max_ns, 100, 1e6);

	const cJSON *co = get_obj(&c, root, "compute");
	static const char *const cok[] = { "jitter", "cpu_frac", "gpu_queue", NULL };
	check_known(&c, co, "compute", cok);
	get_num(&c, co, "compute", "jitter", &s->jitter, 0, 0.5);
	get_num(&c, co, "compute", "cpu_frac", &s->cpu_frac, 0, 1);
	get_int(&c, co, "compute", "gpu_queue", &s->gpu_queue, 1, 1024);

	const cJSON *g = get_obj(&c, root, "gpt");
	static const char *const gk[] = { "pp", "dp", "microbatches", "fwd_ns", "bwd_ns",
					  "optimizer_ns", "act_bytes", "grad_bytes", "tp_bytes",
					  "zero", NULL };
	check_known(&c, g, "gpt", gk);
	if (s->workload == WL_GPT) {
		s->dp = s->hosts;
		s->pp = 1;
	}
	get_int(&c, g, "gpt", "pp", &s->pp, 1, SC_MAX_HOSTS);
	get_int(&c, g, "gpt", "dp", &s->dp, 1, SC_MAX_HOSTS);
	get_int(&c, g, "gpt", "microbatches", &s->microbatches, 1, 1024);
	get_num(&c, g, "gpt", "fwd_ns", &s->fwd_ns, 0, 1e10);
	get_num(&c, g, "gpt", "bwd_ns", &s->bwd_ns, 0, 1e10);
	get_num(&c, g, "gpt", "optimizer_ns", &s->optimizer_ns, 0, 1e10);
	get_u64(&c, g, "gpt", "act_bytes", &s->act_bytes, 0, 1e10);
	get_u64(&c, g, "gpt", "grad_bytes", &s->grad_bytes, 0, 1e11);
	get_u64(&c, g, "gpt", "tp_bytes", &s->tp_bytes, 0, 1e10);
	const cJSON *z = g ? cJSON_GetObjectItemCaseSensitive(g, "zero") : NULL;
	if (z) {
		if (!cJSON_IsBool(z))
			fail(&c, "gpt.zero: expected true or false");
		else
			s->zero = cJSON_IsTrue(z);
	}

	const cJSON *m = get_obj(&c, root, "moe");
	static const char *const mk[] = { "ep", "layers", "expert_ns", "attn_ns", "tokens_bytes",
					  "routing_skew", NULL };
	check_known(&c, m, "moe", mk);
	if (s->workload == WL_MOE)
		s->ep = s->hosts;
	get_int(&c, m, "moe", "ep", &s->ep, 1, SC_MAX_HOSTS);
	get_int(&c, m, "moe", "layers", &s->moe_layers, 1, 1024);
	get_num(&c, m, "moe", "expert_ns", &s->expert_ns, 0, 1e10);
	get_num(&c, m, "moe", "attn_ns", &s->attn_ns, 0, 1e10);
	get_u64(&c, m, "moe", "tokens_bytes", &s->tokens_bytes, 0, 1e10);
	get_num(&c, m, "moe", "routing_skew", &s->routing_skew, 0, 0.95);

	const cJSON *st = get_obj(&c, root, "standalone");
	static const char *const sk[] = { "pattern", "collective", "msg_bytes", "gap_ns", "delay_ns",
					  NULL };
	check_known(&c, st, "standalone", sk);
	const char *pat = get_str(&c, st, "standalone", "pattern");
	if (pat) {
		if (!strcmp(pat, "neighbor_exchange"))
			s->pattern = PAT_NEIGHBOR;
		else if (!strcmp(pat, "all_to_one"))
			s->pattern = PAT_ALL_TO_ONE;
		else if (!strcmp(pat, "one_to_all"))
			s->pattern = PAT_ONE_TO_ALL;
		else if (!strcmp(pat, "collective"))
			s->pattern = PAT_COLLECTIVE;
		else
			fail(&c, "standalone.pattern: \"%s\" is not neighbor_exchange, all_to_one, "
				 "one_to_all or collective", pat);
	}
	const char *coll = get_str(&c, st, "standalone", "collective");
	if (coll) {
		int t = op_from_name(coll);
		if (t < 0 || t == PULSE_HOOK_OP_ALLTOALL)
			fail(&c, "standalone.collective: \"%s\" is not allreduce, allgather, "
				 "reducescatter, broadcast or reduce", coll);
		else
			s->collective_type = t;
	}
	get_u64(&c, st, "standalone", "msg_bytes", &s->msg_bytes, 1, 1e11);
	get_num(&c, st, "standalone", "gap_ns", &s->gap_ns, 0, 1e10);
	const cJSON *dl = st ? cJSON_GetObjectItemCaseSensitive(st, "delay_ns") : NULL;
	if (dl) {
		if (!cJSON_IsArray(dl) || cJSON_GetArraySize(dl) > 64) {
			fail(&c, "standalone.delay_ns: expected an array of at most 64 numbers");
		} else {
			int i = 0;
			const cJSON *v;
			cJSON_ArrayForEach(v, dl)
			{
				if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e10))
					fail(&c, "standalone.delay_ns[%d]: expected a number in [0, 1e10]", i);
				else
					s->delay_ns[i] = v->valuedouble;
				i++;
			}
		}
	}

	const cJSON *fab = get_obj(&c, root, "fabric");
	static const char *const fk[] = { "paths", NULL };
	check_known(&c, fab, "fabric", fk);
	const cJSON *paths = fab ? cJSON_GetObjectItemCaseSensitive(fab, "paths") : NULL;
	if (paths) {
		if (!cJSON_IsArray(paths))
			fail(&c, "fabric.paths: expected an array");
		const cJSON *p;
		cJSON_ArrayForEach(p, paths)
		{
			if (s->npaths >= 16) {
				fail(&c, "fabric.paths: at most 16");
				break;
			}
			if (!cJSON_IsObject(p)) {
				fail(&c, "fabric.paths[]: expected objects");
				break;
			}
			static const char *const pk[] = { "src_host", "src_gpu", "dst_host",
							  "dst_gpu", "capacity", NULL };
			check_known(&c, p, "fabric.paths[]", pk);
			int i = s->npaths++;
			s->paths[i].frac = 1;
			get_int(&c, p, "fabric.paths[]", "src_host", &s->paths[i].src_host, 0,
				SC_MAX_HOSTS - 1);
			get_int(&c, p, "fabric.paths[]", "src_gpu", &s->paths[i].src_gpu, 0,
				SC_MAX_GPUS - 1);
			get_int(&c, p, "fabric.paths[]", "dst_host", &s->paths[i].dst_host, 0,
				SC_MAX_HOSTS - 1);
			get_int(&c, p, "fabric.paths[]", "dst_gpu", &s->paths[i].dst_gpu, 0,
				SC_MAX_GPUS - 1);
			get_num(&c, p, "fabric.paths[]", "capacity", &s->paths[i].frac, 0.01, 1);
		}
	}

	const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "failure");
	if (f && !cJSON_IsNull(f)) {
		if (!cJSON_IsObject(f)) {
			fail(&c, "failure: expected an object or null");
		} else {
			static const char *const fk2[] = { "type", "host", "gpu", "severity",
							   "start_iteration", "period_ns",
							   "duration_ns", "direction", NULL };
			check_known(&c, f, "failure", fk2);
			const char *t = get_str(&c, f, "failure", "type");
			if (!t) {
				fail(&c, "failure.type: required");
			} else {
				int ft = sc_fail_from_name(t);
				if (ft < 0)
					fail(&c, "failure.type: unknown type \"%s\" (sim/README.md "
						 "lists them)", t);
				else
					s->failure.type = ft;
			}
			s->failure.host = 0;
			get_int(&c, f, "failure", "host", &s->failure.host, 0, SC_MAX_HOSTS - 1);
			get_int(&c, f, "failure", "gpu", &s->failure.gpu, 0, SC_MAX_GPUS - 1);
			get_num(&c, f, "failure", "severity", &s->failure.severity, 0, 1000);
			get_int(&c, f, "failure", "start_iteration", &s->failure.start_iteration, 0,
				100000);
			get_num(&c, f, "failure", "period_ns", &s->failure.period_ns, 1e4, 1e10);
			get_num(&c, f, "failure", "duration_ns", &s->failure.duration_ns, 1e3, 1e10);
			const char *dir = get_str(&c, f, "failure", "direction");
			if (dir) {
				if (!strcmp(dir, "ingress"))
					s->failure.ingress = 1;
				else if (strcmp(dir, "egress"))
					fail(&c, "failure.direction: \"%s\" is not egress or ingress", dir);
			}
		}
	}
	cJSON_Delete(root);
	if (c.failed)
		return -1;

	/* cross-field checks */
	if ((long)s->hosts * s->gpus > 4096) {
		snprintf(err, errlen, "cluster: at most 4096 GPUs");
		return -1;
	}
	if (s->workload == WL_GPT && s->pp * s->dp != s->hosts) {
		snprintf(err, errlen, "gpt: pp (%d) x dp (%d) must equal cluster.hosts (%d)", s->pp,
			 s->dp, s->hosts);
		return -1;
	}
	if (s->workload == WL_MOE && (s->ep < 1 || s->hosts % s->ep != 0)) {
		snprintf(err, errlen, "moe: ep (%d) must divide cluster.hosts (%d)", s->ep,
			 s->hosts);
		return -1;
	}
	if (s->workload == WL_STANDALONE && s->hosts * s->gpus < 2) {
		snprintf(err, errlen, "standalone: needs at least 2 GPUs");
		return -1;
	}
	if (s->failure.type != F_NONE) {
		if (s->failure.host >= s->hosts || s->failure.gpu >= s->gpus) {
			snprintf(err, errlen, "failure: host %d gpu %d is not in the cluster (%d x %d)",
				 s->failure.host, s->failure.gpu, s->hosts, s->gpus);
			return -1;
		}
		if (s->failure.start_iteration >= s->iterations) {
			snprintf(err, errlen, "failure.start_iteration (%d) must be below iterations (%d)",
				 s->failure.start_iteration, s->iterations);
			return -1;
		}
	}
	for (int i = 0; i < s->npaths; i++)
		if (s->paths[i].src_host >= s->hosts || s->paths[i].dst_host >= s->hosts ||
		    s->paths[i].src_gpu >= s->gpus || s->paths[i].dst_gpu >= s->gpus) {
			snprintf(err, errlen, "fabric.paths[%d]: endpoint not in the cluster", i);
			return -1;
		}
	return 0;
}

int sc_scenario_load(const char *path, struct sc_scenario *s, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			fclose(f);
			snprintf(err, errlen, "%s: out of memory", path);
			return -1;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			if (cap >= (16u << 20)) {
				free(buf);
				fclose(f);
				snprintf(err, errlen, "%s: larger than 16 MiB", path);
				return -1;
			}
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	int rerr = ferror(f);
	fclose(f);
	if (rerr) {
		free(buf);
		snprintf(err, errlen, "%s: read error", path);
		return -1;
	}
	char inner[400];
	int r = sc_scenario_parse(buf, n, s, inner, sizeof inner);
	free(buf);
	if (r)
		snprintf(err, errlen, "%s: %s", path, inner);
	return r;
}
