/* Scenario files: JSON (libcjson), every field optional except where the
 * README says otherwise; unknown fields are errors (typos must not silently
 * fall back to defaults). The schema and defaults are in sim/README.md,
 * "run_cluster". */
#define _GNU_SOURCE
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "simai.h"
#include "../util.h"

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

int sc_fail_active(const struct sc_failure *f, int it)
{
	if (f->type == F_NONE || it < f->start_iteration)
		return 0;
	if (f->end_iteration && it >= f->end_iteration)
		return 0;
	if (f->on_iterations > 0)
		return (it - f->start_iteration) % (f->on_iterations + f->off_iterations) <
		       f->on_iterations;
	return 1;
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

static void failure_defaults(struct sc_failure *f)
{
	memset(f, 0, sizeof *f);
	f->type = F_NONE;
	f->host = -1;
	f->gpu = 0;
	f->start_iteration = 1;
	f->period_ns = 2e6;
	f->duration_ns = 5e5;
	f->micro_batch = -1;
}

static void defaults(struct sc_scenario *s)
{
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "unnamed");
	s->seed = 1;
	s->workload = WL_GPT;
	s->hosts = 2;
	s->gpus = 2;
	s->gpus_per_nic = 1;
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
	s->last_stage_compute = 1;
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
	s->simai_compute_scale = 1;
	s->simai_size_scale = 1;
	failure_defaults(&s->failure);
	s->pareto_alpha = 3;
	s->ev.ckpt_ns = 2e9;
	s->ev.eval_batches = 2;
	s->ev.eval_bytes = 64u << 10;
	s->ev.hiccup_ns = 5e6;
	s->ev.seqlen_start = 0.25;
	s->ev.seqlen_change = 2;
	s->ev.restart_ns = 20e9;
	s->ev.restart_clean = 1;
}

/* ---- the keys: one line each (sim/README.md documents them) ---- */

enum ktype {
	K_NUM,   /* double in [lo, hi] */
	K_INT,   /* int in [lo, hi] */
	K_U64,   /* uint64_t in [lo, hi] */
	K_BOOL,  /* true or false into an int (off < 0: checked, not kept) */
	K_ENUM,  /* one of names[] into an int: the index of the name */
	K_NAME,  /* the scenario's name: 1 to hi-1 of [A-Za-z0-9-_.] into a char[hi] */
	K_FAIL,  /* a failure type (sc_fail_table) into an int; required */
	K_PATH,  /* a file path: 1 to hi-1 printable characters into a char[hi] */
	K_DELAYS, /* an array of at most 64 numbers in [lo, hi] into a double[64] */
	K_OTHER, /* known here, read elsewhere (a section, a list), or not read at all */
};

struct key {
	const char *name;
	enum ktype type;
	double lo, hi;
	long off;                 /* destination: offset into the base, -1 none */
	const char *const *names; /* K_ENUM: accepted strings, by the value they set */
	int nnames;
	const char *expect;       /* K_ENUM, K_DELAYS: what is accepted, for the error */
};

#define SC_OFF(f) ((long)offsetof(struct sc_scenario, f))
#define NUM(k, f, lo, hi) { k, K_NUM, lo, hi, SC_OFF(f), NULL, 0, NULL }
#define INT(k, f, lo, hi) { k, K_INT, lo, hi, SC_OFF(f), NULL, 0, NULL }
#define U64(k, f, lo, hi) { k, K_U64, lo, hi, SC_OFF(f), NULL, 0, NULL }
#define BOOL(k, f) { k, K_BOOL, 0, 0, SC_OFF(f), NULL, 0, NULL }
#define ENUM(k, f, names, expect) \
	{ k, K_ENUM, 0, 0, SC_OFF(f), names, (int)(sizeof names / sizeof names[0]), expect }
#define OTHER(k) { k, K_OTHER, 0, 0, -1, NULL, 0, NULL }
#define END { NULL, K_OTHER, 0, 0, -1, NULL, 0, NULL }

static const char *const workload_names[] = { [WL_GPT] = "gpt", [WL_MOE] = "moe",
					       [WL_STANDALONE] = "standalone", [WL_SIMAI] = "simai" };
static const char *const algo_names[] = { [ALGO_RING] = "ring", [ALGO_TREE] = "tree" };
static const char *const proto_names[] = { [PROTO_SIMPLE] = "simple", [PROTO_AUTO] = "auto",
					   [PROTO_LL] = "ll", [PROTO_LL128] = "ll128" };
static const char *const pattern_names[] = { [PAT_NEIGHBOR] = "neighbor_exchange",
					     [PAT_ALL_TO_ONE] = "all_to_one",
					     [PAT_ONE_TO_ALL] = "one_to_all",
					     [PAT_COLLECTIVE] = "collective" };
static const char *const coll_names[] = {
	[PULSE_HOOK_OP_ALLREDUCE] = "allreduce", [PULSE_HOOK_OP_ALLGATHER] = "allgather",
	[PULSE_HOOK_OP_REDUCESCATTER] = "reducescatter", [PULSE_HOOK_OP_BROADCAST] = "broadcast",
	[PULSE_HOOK_OP_REDUCE] = "reduce",
};
static const char *const direction_names[] = { "egress", "ingress" };
static const char *const jitter_dist_names[] = { [JD_NORMAL] = "normal",
						 [JD_LOGNORMAL] = "lognormal",
						 [JD_PARETO] = "pareto" };

/* the top level: read before the workload's own defaults apply */
static const struct key top_keys[] = {
	{ "name", K_NAME, 0, SC_NAME_LEN, SC_OFF(name), NULL, 0, NULL },
	U64("seed", seed, 0, 9007199254740991.0),
	{ "quick", K_BOOL, 0, 0, -1, NULL, 0, NULL },
	ENUM("workload", workload, workload_names, "gpt, moe, standalone or simai"),
	END,
};
/* the top level: read after them */
static const struct key top_keys2[] = {
	INT("iterations", iterations, 1, 100000),
	NUM("poll_ns", poll_ns, 1e6, 2e9),
	NUM("epoch_ns", epoch_ns, 1000, 1e6),
	NUM("tail_ns", tail_ns, 0, 60e9),
	NUM("hang_tail_ns", hang_tail_ns, 0, 600e9),
	NUM("start_ns", start_ns, 1e5, 60e9),
	OTHER("description"),
	OTHER("cluster"), OTHER("nccl"), OTHER("compute"), OTHER("gpt"), OTHER("moe"),
	OTHER("standalone"), OTHER("fabric"), OTHER("failure"), OTHER("simai"),
	OTHER("events"), OTHER("failures"),
	END,
};
static const struct key cluster_keys[] = {
	INT("hosts", hosts, 1, SC_MAX_HOSTS),
	INT("gpus_per_host", gpus, 1, SC_MAX_GPUS),
	INT("gpus_per_nic", gpus_per_nic, 1, SC_MAX_GPUS_PER_NIC),
	NUM("nic_gbps", nic_gbps, 1, 3200),
	NUM("nvlink_gbps", nvlink_gbps, 1, 100000),
	NUM("clock_offset_ns", clock_offset_ns, 0, 1e10),
	NUM("clock_drift_ppm", clock_drift_ppm, 0, 500),
	NUM("nic_drift_ppm", nic_drift_ppm, 0, 500),
	U64("clock_base_ns", clock_base_ns, 1e17, 4e18),
	END,
};
static const struct key nccl_keys[] = {
	INT("channels", channels, 1, SC_MAX_CHANNELS),
	INT("p2p_channels", p2p_channels, 1, SC_MAX_CHANNELS),
	INT("slots", slots, 1, 64),
	INT("chunk_slices", chunk_slices, 1, 64),
	ENUM("algo", algo, algo_names, "ring or tree"),
	ENUM("protocol", protocol, proto_names, "auto, simple, ll or ll128"),
	U64("slice_bytes", slice_bytes, 4096, 16u << 20),
	NUM("proxy_ns", proxy_ns, 0, 1e8),
	NUM("launch_ns", launch_ns, 0, 1e8),
	NUM("call_ns", call_ns, 0, 1e8),
	NUM("net_latency_ns", net_latency_ns, 0, 1e8),
	INT("mtu", mtu, 256, 4096),
	U64("event_max_bytes", event_max_bytes, 4096, 2097120),
	NUM("event_max_ns", event_max_ns, 100, 1e6),
	END,
};
static const struct key compute_keys[] = {
	NUM("jitter", jitter, 0, 0.5),
	NUM("cpu_frac", cpu_frac, 0, 1),
	INT("gpu_queue", gpu_queue, 1, 1024),
	ENUM("jitter_dist", jitter_dist, jitter_dist_names, "normal, lognormal or pareto"),
	NUM("pareto_alpha", pareto_alpha, 1.5, 10),
	END,
};
static const struct key events_keys[] = {
	INT("checkpoint_every", ev.ckpt_every, 0, 100000),
	NUM("checkpoint_ns", ev.ckpt_ns, 1e6, 60e9),
	INT("eval_every", ev.eval_every, 0, 100000),
	INT("eval_batches", ev.eval_batches, 1, 64),
	U64("eval_bytes", ev.eval_bytes, 8, 1e9),
	NUM("hiccup_prob", ev.hiccup_prob, 0, 1),
	NUM("hiccup_ns", ev.hiccup_ns, 1e4, 1e9),
	INT("seqlen_warmup", ev.seqlen_warmup, 0, 100000),
	NUM("seqlen_start", ev.seqlen_start, 0.05, 1),
	INT("seqlen_change_at", ev.seqlen_change_at, 0, 100000),
	NUM("seqlen_change", ev.seqlen_change, 0.1, 8),
	INT("restart_after", ev.restart_after, 0, 100000),
	NUM("restart_ns", ev.restart_ns, 1e6, 600e9),
	BOOL("restart_clean", ev.restart_clean),
	END,
};
static const struct key gpt_keys[] = {
	INT("pp", pp, 1, SC_MAX_HOSTS),
	INT("dp", dp, 1, SC_MAX_HOSTS),
	INT("microbatches", microbatches, 1, 1024),
	NUM("fwd_ns", fwd_ns, 0, 1e10),
	NUM("bwd_ns", bwd_ns, 0, 1e10),
	NUM("optimizer_ns", optimizer_ns, 0, 1e10),
	NUM("last_stage_compute", last_stage_compute, 0.1, 100),
	U64("act_bytes", act_bytes, 0, 1e10),
	U64("grad_bytes", grad_bytes, 0, 1e11),
	U64("tp_bytes", tp_bytes, 0, 1e10),
	BOOL("zero", zero),
	INT("tp", tp, 1, SC_MAX_HOSTS * SC_MAX_GPUS),
	BOOL("sequence_parallel", seq_par),
	BOOL("zero3", zero3),
	END,
};
static const struct key moe_keys[] = {
	INT("ep", ep, 1, SC_MAX_HOSTS),
	INT("layers", moe_layers, 1, 1024),
	NUM("expert_ns", expert_ns, 0, 1e10),
	NUM("attn_ns", attn_ns, 0, 1e10),
	U64("tokens_bytes", tokens_bytes, 0, 1e10),
	NUM("routing_skew", routing_skew, 0, 0.95),
	END,
};
static const struct key standalone_keys[] = {
	ENUM("pattern", pattern, pattern_names,
	     "neighbor_exchange, all_to_one, one_to_all or collective"),
	ENUM("collective", collective_type, coll_names,
	     "allreduce, allgather, reducescatter, broadcast or reduce"),
	U64("msg_bytes", msg_bytes, 1, 1e11),
	NUM("gap_ns", gap_ns, 0, 1e10),
	{ "delay_ns", K_DELAYS, 0, 1e10, SC_OFF(delay_ns), NULL, 0, "a number in [0, 1e10]" },
	END,
};
/* workload "simai": a SimAI/AICB file (simai.h), checked by sc_scenario_load */
static const struct key simai_keys[] = {
	{ "file", K_PATH, 0, sizeof(((struct sc_scenario *)0)->simai_file), SC_OFF(simai_file), NULL, 0,
	  NULL },
	INT("gpus", simai_gpus, 1, 1000000),
	NUM("compute_scale", simai_compute_scale, 0, 1000),
	NUM("size_scale", simai_size_scale, 1e-6, 1000),
	NUM("compute_ns", simai_compute_ns, 0, 1e10),
	END,
};
static const struct key fabric_keys[] = {
	OTHER("paths"),
	END,
};
/* one entry of fabric.paths: offsets into s->paths[i] */
#define PATH_OFF(f) (SC_OFF(paths[0].f) - SC_OFF(paths[0]))
static const struct key path_keys[] = {
	{ "src_host", K_INT, 0, SC_MAX_HOSTS - 1, PATH_OFF(src_host), NULL, 0, NULL },
	{ "src_gpu", K_INT, 0, SC_MAX_GPUS - 1, PATH_OFF(src_gpu), NULL, 0, NULL },
	{ "dst_host", K_INT, 0, SC_MAX_HOSTS - 1, PATH_OFF(dst_host), NULL, 0, NULL },
	{ "dst_gpu", K_INT, 0, SC_MAX_GPUS - 1, PATH_OFF(dst_gpu), NULL, 0, NULL },
	{ "capacity", K_NUM, 0.01, 1, PATH_OFF(frac), NULL, 0, NULL },
	END,
};
/* a failure: offsets into its struct sc_failure */
#define FAIL_OFF(f) ((long)offsetof(struct sc_failure, f))
#define FINT(k, f, lo, hi) { k, K_INT, lo, hi, FAIL_OFF(f), NULL, 0, NULL }
#define FNUM(k, f, lo, hi) { k, K_NUM, lo, hi, FAIL_OFF(f), NULL, 0, NULL }
static const struct key failure_keys[] = {
	{ "type", K_FAIL, 0, 0, FAIL_OFF(type), NULL, 0, NULL },
	FINT("host", host, 0, SC_MAX_HOSTS - 1),
	FINT("gpu", gpu, 0, SC_MAX_GPUS - 1),
	FNUM("severity", severity, 0, 1000),
	FINT("start_iteration", start_iteration, 0, 100000),
	FNUM("period_ns", period_ns, 1e4, 1e10),
	FNUM("duration_ns", duration_ns, 1e3, 1e10),
	{ "direction", K_ENUM, 0, 0, FAIL_OFF(ingress), direction_names,
	  (int)(sizeof direction_names / sizeof direction_names[0]), "egress or ingress" },
	FINT("end_iteration", end_iteration, 0, 100000),
	FINT("on_iterations", on_iterations, 0, 100000),
	FINT("off_iterations", off_iterations, 0, 100000),
	FINT("micro_batch", micro_batch, -1, 100000),
	END,
};

static int has_key(const struct key *k, const char *name)
{
	for (; k && k->name; k++)
		if (!strcmp(k->name, name))
			return 1;
	return 0;
}

/* Every member of `obj` must be a key of one of the two tables. */
static void check_known(struct ctx *c, const cJSON *obj, const char *where, const struct key *a,
			const struct key *b)
{
	for (const cJSON *m = obj ? obj->child : NULL; m; m = m->next)
		if (!m->string || (!has_key(a, m->string) && !has_key(b, m->string)))
			fail(c, "%s: unknown field \"%s\"", where, m->string ? m->string : "?");
}

static void get_name(struct ctx *c, const cJSON *obj, const char *where, const struct key *k,
		     char *out)
{
	const char *name = get_str(c, obj, where, k->name);
	if (!name)
		return;
	size_t cap = (size_t)k->hi;
	if (!*name || strlen(name) >= cap)
		fail(c, "%s.%s: 1 to %zu characters", where, k->name, cap - 1);
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			fail(c, "%s.%s: only letters, digits, '-', '_', '.'", where, k->name);
	if (!c->failed)
		snprintf(out, cap, "%s", name);
}

static void get_delays(struct ctx *c, const cJSON *obj, const char *where, const struct key *k,
		       double *out)
{
	const cJSON *dl = obj ? cJSON_GetObjectItemCaseSensitive(obj, k->name) : NULL;
	if (!dl)
		return;
	if (!cJSON_IsArray(dl) || cJSON_GetArraySize(dl) > 64) {
		fail(c, "%s.%s: expected an array of at most 64 numbers", where, k->name);
		return;
	}
	int i = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, dl)
	{
		if (!cJSON_IsNumber(v) || !(v->valuedouble >= k->lo && v->valuedouble <= k->hi))
			fail(c, "%s.%s[%d]: expected %s", where, k->name, i, k->expect);
		else
			out[i] = v->valuedouble;
		i++;
	}
}

/* Reads every key of the table that obj has into base, in table order. */
static void read_keys(struct ctx *c, const cJSON *obj, const char *where, const struct key *keys,
		      void *base)
{
	for (const struct key *k = keys; k->name; k++) {
		void *dst = k->off >= 0 ? (char *)base + k->off : NULL;
		switch (k->type) {
		case K_NUM: get_num(c, obj, where, k->name, dst, k->lo, k->hi); break;
		case K_INT: get_int(c, obj, where, k->name, dst, (int)k->lo, (int)k->hi); break;
		case K_U64: get_u64(c, obj, where, k->name, dst, k->lo, k->hi); break;
		case K_BOOL: {
			const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, k->name) : NULL;
			if (v && !cJSON_IsBool(v))
				fail(c, "%s.%s: expected true or false", where, k->name);
			else if (v && dst)
				*(int *)dst = cJSON_IsTrue(v);
			break;
		}
		case K_ENUM: {
			const char *v = get_str(c, obj, where, k->name);
			if (!v)
				break;
			int i = 0;
			while (i < k->nnames && !(k->names[i] && !strcmp(k->names[i], v)))
				i++;
			if (i == k->nnames)
				fail(c, "%s.%s: \"%s\" is not %s", where, k->name, v, k->expect);
			else
				*(int *)dst = i;
			break;
		}
		case K_NAME: get_name(c, obj, where, k, dst); break;
		case K_PATH: {
			const char *v = get_str(c, obj, where, k->name);
			if (!v)
				break;
			size_t n = strlen(v);
			int ok = n > 0 && n < (size_t)k->hi;
			for (const char *p = v; ok && *p; p++)
				ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
			if (!ok)
				fail(c, "%s.%s: 1 to %d printable characters", where, k->name, (int)k->hi - 1);
			else
				memcpy(dst, v, n + 1);
			break;
		}
		case K_FAIL: {
			const char *t = get_str(c, obj, where, k->name);
			int ft;
			if (!t)
				fail(c, "%s.%s: required", where, k->name);
			else if ((ft = sc_fail_from_name(t)) < 0)
				fail(c, "%s.%s: unknown type \"%s\" (sim/README.md lists them)", where,
				     k->name, t);
			else
				*(int *)dst = ft;
			break;
		}
		case K_DELAYS: get_delays(c, obj, where, k, dst); break;
		case K_OTHER: break;
		}
	}
}

/* One section: an object (or absent or null), its keys, into the scenario. */
static const cJSON *section(struct ctx *c, const cJSON *root, const char *name,
			    const struct key *keys, struct sc_scenario *s)
{
	const cJSON *o = get_obj(c, root, name);
	check_known(c, o, name, keys, NULL);
	read_keys(c, o, name, keys, s);
	return o;
}

/* workload simai: the cluster is simai.gpus GPUs, gpus_per_host (8) to a
 * host; the file itself is checked by sc_scenario_load */
static int simai_shape(struct sc_scenario *s, char *err, size_t errlen)
{
	if (!s->simai_file[0] || !s->simai_gpus) {
		snprintf(err, errlen, "simai.%s: required with workload simai",
			 s->simai_file[0] ? "gpus" : "file");
		return -1;
	}
	int max = SC_MAX_HOSTS * s->gpus < 4096 ? SC_MAX_HOSTS * s->gpus : 4096;
	if (s->simai_gpus > max) {
		snprintf(err, errlen,
			 "simai.gpus: %d GPUs: run_cluster simulates at most %d (%d hosts x %d GPUs, 4096 "
			 "in all); run the file scaled down (a multiple of its TP x PP x EP) or check it "
			 "alone with pulse-run-cluster --check-simai FILE",
			 s->simai_gpus, max, SC_MAX_HOSTS, s->gpus);
		return -1;
	}
	if (s->simai_gpus % s->gpus) {
		snprintf(err, errlen, "simai.gpus: %d is not a multiple of cluster.gpus_per_host (%d)",
			 s->simai_gpus, s->gpus);
		return -1;
	}
	if (s->hosts && s->hosts * s->gpus != s->simai_gpus) {
		snprintf(err, errlen, "cluster.hosts: %d x %d GPUs is not simai.gpus (%d); leave it out",
			 s->hosts, s->gpus, s->simai_gpus);
		return -1;
	}
	s->hosts = s->simai_gpus / s->gpus;
	int t = s->failure.type;
	if (t == F_MOE_IMBALANCE || t == F_CCLD_NOT_ENTERED || t == F_CCLD_INCONSISTENT) {
		snprintf(err, errlen, "failure.type: %s does not apply to workload simai",
			 sc_fail_table[t].name);
		return -1;
	}
	return 0;
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
	check_known(&c, root, "scenario", top_keys, top_keys2);
	read_keys(&c, root, "scenario", top_keys, s);
	if (s->workload == WL_MOE) { /* defaults that differ by workload */
		s->hosts = 2;
		s->gpus = 2;
	} else if (s->workload == WL_SIMAI) {
		s->hosts = 0; /* simai.gpus / cluster.gpus_per_host */
		s->gpus = 8;
	} else if (s->workload == WL_STANDALONE) {
		s->hosts = 4;
		s->gpus = 1;
		s->iterations = 3;
	}
	read_keys(&c, root, "scenario", top_keys2, s);
	if (s->tail_ns < 0)
		s->tail_ns = s->poll_ns;

	section(&c, root, "cluster", cluster_keys, s);
	section(&c, root, "nccl", nccl_keys, s);
	section(&c, root, "compute", compute_keys, s);
	if (s->workload == WL_GPT) { /* defaults from the cluster */
		s->dp = s->hosts;
		s->pp = 1;
		s->tp = s->gpus;
	}
	const cJSON *gpt = section(&c, root, "gpt", gpt_keys, s);
	/* TP across hosts: dp follows from pp and tp unless given */
	if (s->workload == WL_GPT && s->tp != s->gpus && !cJSON_GetObjectItemCaseSensitive(gpt, "dp") &&
	    s->tp > 0 && s->pp > 0 && (s->hosts * s->gpus) % (s->pp * s->tp) == 0)
		s->dp = s->hosts * s->gpus / (s->pp * s->tp);
	if (s->workload == WL_MOE)
		s->ep = s->hosts;
	section(&c, root, "moe", moe_keys, s);
	section(&c, root, "standalone", standalone_keys, s);
	section(&c, root, "simai", simai_keys, s);
	section(&c, root, "events", events_keys, s);

	const cJSON *fab = section(&c, root, "fabric", fabric_keys, s);
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
			check_known(&c, p, "fabric.paths[]", path_keys, NULL);
			int i = s->npaths++;
			s->paths[i].frac = 1;
			read_keys(&c, p, "fabric.paths[]", path_keys, &s->paths[i]);
		}
	}

	const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "failure");
	const cJSON *fa = cJSON_GetObjectItemCaseSensitive(root, "failures");
	if (f && !cJSON_IsNull(f) && fa && !cJSON_IsNull(fa))
		fail(&c, "failure and failures: give one of them");
	if (f && !cJSON_IsNull(f)) {
		if (!cJSON_IsObject(f)) {
			fail(&c, "failure: expected an object or null");
		} else {
			check_known(&c, f, "failure", failure_keys, NULL);
			s->failure.host = 0; /* a failure is on host 0 unless it says */
			read_keys(&c, f, "failure", failure_keys, &s->failure);
			s->failures[0] = s->failure;
			s->nfailures = 1;
		}
	}
	if (fa && !cJSON_IsNull(fa)) {
		if (!cJSON_IsArray(fa) || cJSON_GetArraySize(fa) < 1 ||
		    cJSON_GetArraySize(fa) > SC_MAX_FAILURES)
			fail(&c, "failures: expected an array of 1 to %d objects", SC_MAX_FAILURES);
		const cJSON *x;
		cJSON_ArrayForEach(x, fa)
		{
			if (c.failed || s->nfailures >= SC_MAX_FAILURES)
				break;
			char where[32];
			snprintf(where, sizeof where, "failures[%d]", s->nfailures);
			if (!cJSON_IsObject(x)) {
				fail(&c, "%s: expected an object", where);
				break;
			}
			struct sc_failure *fi = &s->failures[s->nfailures++];
			failure_defaults(fi);
			fi->host = 0;
			check_known(&c, x, where, failure_keys, NULL);
			read_keys(&c, x, where, failure_keys, fi);
		}
	}
	/* "type":"none" entries are no failure */
	int nf = 0;
	for (int i = 0; i < s->nfailures; i++)
		if (s->failures[i].type != F_NONE)
			s->failures[nf++] = s->failures[i];
	s->nfailures = nf;
	if (nf)
		s->failure = s->failures[0];
	cJSON_Delete(root);
	if (c.failed)
		return -1;

	/* cross-field checks */
	if (s->workload == WL_SIMAI && simai_shape(s, err, errlen))
		return -1;
	if ((long)s->hosts * s->gpus > 4096) {
		snprintf(err, errlen, "cluster: at most 4096 GPUs");
		return -1;
	}
	if (s->gpus % s->gpus_per_nic) {
		snprintf(err, errlen, "cluster.gpus_per_nic (%d) must divide cluster.gpus_per_host (%d)",
			 s->gpus_per_nic, s->gpus);
		return -1;
	}
	if (s->workload == WL_GPT && s->tp == s->gpus && s->pp * s->dp != s->hosts) {
		snprintf(err, errlen, "gpt: pp (%d) x dp (%d) must equal cluster.hosts (%d)", s->pp,
			 s->dp, s->hosts);
		return -1;
	}
	if (s->workload == WL_GPT && s->tp != s->gpus) {
		if (s->gpus % s->tp && s->tp % s->gpus) {
			snprintf(err, errlen, "gpt.tp (%d) must divide cluster.gpus_per_host (%d) or be a multiple of it",
				 s->tp, s->gpus);
			return -1;
		}
		if ((long)s->pp * s->dp * s->tp != (long)s->hosts * s->gpus) {
			snprintf(err, errlen,
				 "gpt: pp (%d) x dp (%d) x tp (%d) must equal the GPUs, cluster.hosts x gpus_per_host (%d)",
				 s->pp, s->dp, s->tp, s->hosts * s->gpus);
			return -1;
		}
	}
	if (s->workload == WL_GPT && s->seq_par && s->tp < 2) {
		snprintf(err, errlen, "gpt.sequence_parallel: needs tp of at least 2");
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
	for (int i = 0; i < s->nfailures; i++) {
		const struct sc_failure *fi = &s->failures[i];
		char where[32];
		if (s->nfailures == 1 && !fa)
			snprintf(where, sizeof where, "failure");
		else
			snprintf(where, sizeof where, "failures[%d]", i);
		if (fi->host >= s->hosts || fi->gpu >= s->gpus) {
			snprintf(err, errlen, "%s: host %d gpu %d is not in the cluster (%d x %d)", where,
				 fi->host, fi->gpu, s->hosts, s->gpus);
			return -1;
		}
		if (fi->start_iteration >= s->iterations) {
			snprintf(err, errlen, "%s.start_iteration (%d) must be below iterations (%d)", where,
				 fi->start_iteration, s->iterations);
			return -1;
		}
		if (fi->end_iteration &&
		    (fi->end_iteration <= fi->start_iteration || fi->end_iteration > s->iterations)) {
			snprintf(err, errlen,
				 "%s.end_iteration (%d) must be above start_iteration (%d) and at most iterations (%d)",
				 where, fi->end_iteration, fi->start_iteration, s->iterations);
			return -1;
		}
		if (fi->micro_batch >= 0 &&
		    ((fi->type != F_VT_SLOW_FORWARD && fi->type != F_VT_SLOW_BACKWARD) || s->workload != WL_GPT ||
		     fi->micro_batch >= s->microbatches)) {
			snprintf(err, errlen,
				 "%s.micro_batch (%d) needs venus_slow_forward or venus_slow_backward on gpt, "
				 "below gpt.microbatches (%d)",
				 where, fi->micro_batch, s->microbatches);
			return -1;
		}
		if ((fi->on_iterations > 0) != (fi->off_iterations > 0)) {
			snprintf(err, errlen, "%s: an intermittent fault needs both on_iterations and off_iterations",
				 where);
			return -1;
		}
		if ((fi->end_iteration || fi->on_iterations) &&
		    strcmp(sc_fail_table[fi->type].mode, "fail-slow")) {
			snprintf(err, errlen, "%s: %s is a fail-stop: it cannot clear (end_iteration, on_iterations)",
				 where, sc_fail_table[fi->type].name);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (s->failures[j].host == fi->host &&
			    !strcmp(sc_fail_table[s->failures[j].type].klass, sc_fail_table[fi->type].klass)) {
				snprintf(err, errlen,
					 "%s: host %d already has a %s fault (failures[%d]): a machine's second fault "
					 "must be of the other class (a mixed fault)",
					 where, fi->host, sc_fail_table[fi->type].klass, j);
				return -1;
			}
	}
	if (s->ev.eval_every && s->workload == WL_STANDALONE) {
		snprintf(err, errlen, "events.eval_every: the standalone workload has no evaluation step");
		return -1;
	}
	if (s->ev.seqlen_change_at >= s->iterations) {
		snprintf(err, errlen, "events.seqlen_change_at (%d) must be below iterations (%d)",
			 s->ev.seqlen_change_at, s->iterations);
		return -1;
	}
	if (s->ev.restart_after && s->ev.restart_after >= s->iterations) {
		snprintf(err, errlen,
			 "events.restart_after (%d) must leave an iteration to run: below iterations (%d)",
			 s->ev.restart_after, s->iterations);
		return -1;
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
	size_t n;
	char *buf = sim_read_file(path, 16u << 20, &n, err, errlen);
	if (!buf)
		return -1;
	char inner[400];
	int r = sc_scenario_parse(buf, n, s, inner, sizeof inner);
	free(buf);
	if (!r && s->workload == WL_SIMAI) {
		/* the workload file must be readable and fit the GPUs now, so
		 * that --check and a run fail alike, before anything is written */
		struct simai_workload w;
		char e2[sizeof inner - 16];
		if (simai_load(s->simai_file, &w, e2, sizeof e2)) {
			snprintf(inner, sizeof inner, "simai.file: %s", e2);
			r = -1;
		} else {
			r = simai_check_gpus(&w, s->simai_gpus, inner, sizeof inner);
			simai_free(&w);
		}
	}
	if (r)
		snprintf(err, errlen, "%s: %s", path, inner);
	return r;
}
