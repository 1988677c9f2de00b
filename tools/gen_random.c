/* pulse-gen-scenarios: a randomized scenario matrix for sim/run_cluster, so
 * that accuracy is judged on scenarios nobody tuned the analyzer on
 * (make eval's second part, tools/eval/run-eval.sh).
 *
 *   pulse-gen-scenarios --random SEED --count N --out DIR
 *                       [--max-gpus G] [--max-iterations I] [--no-failure-share F]
 *                       [--draws 1|2]
 *
 * Writes DIR/rand-SEED-NNN.json (N scenarios) and DIR/list.txt (their file
 * names, one a line). Everything is drawn from SEED with a private PRNG
 * (splitmix64 seeding xoshiro256**) and written with integer arithmetic
 * only, so the same options give byte-identical files on every machine.
 * Scenario k has its own PRNG stream (SEED, k): the first 60 of --count 200
 * are the files of --count 60. The draw (shapes, NCCL settings, failure
 * types per workload, severities, onsets, the cost cap) is documented in
 * sim/README.md, "Randomized scenarios"; every file is accepted by
 * sim/run_cluster --check (tests/analyzer/gen_random.sh). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "pulse/rng.h"

/* GPUs x iterations above which a scenario gets fewer iterations (cost). */
#define COST_BUDGET 2000
/* failure-free runs are spread evenly: per block of this many scenarios,
 * share x BLOCK of them (rounded by a draw) have "failure": null */
#define NULL_BLOCK 20
#define MAX_COUNT 100000

/* ---------- PRNG: splitmix64 seeds xoshiro256** ---------- */
/* One independent stream per (seed, tag, index). */
enum { TAG_SCENARIO = 1, TAG_NULLS = 2, TAG_EVENTS = 3, TAG_SHAPES = 4, TAG_PARALLEL = 5, TAG_SIMAI = 6,
       TAG_NCCL = 7 };

static void rng_init(struct pulse_rng *r, uint64_t seed, uint64_t tag, uint64_t index)
{
	uint64_t x = seed;
	uint64_t a = pulse_splitmix64(&x);
	x = a ^ (tag * 0xD1B54A32D192ED03ull) ^ (index * 0xA0761D6478BD642Full);
	for (int i = 0; i < 4; i++)
		r->s[i] = pulse_splitmix64(&x);
}

/* uniform integer in [lo, hi] */
static int uni(struct pulse_rng *r, int lo, int hi)
{
	uint64_t n = (uint64_t)(hi - lo) + 1;
	/* rejection: no modulo bias */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n;
	uint64_t v;
	do
		v = pulse_rng_next(r);
	while (v >= lim);
	return lo + (int)(v % n);
}

/* true with probability permille / 1000 */
static int chance(struct pulse_rng *r, int permille)
{
	return uni(r, 0, 999) < permille;
}

/* ---------- the failure types (sim/README.md's table) ---------- */
enum { WG = 1, WM = 2, WS = 4 }; /* workloads that the type takes effect in */
enum sev_kind { SEV_NONE, SEV_INT, SEV_CENT }; /* none, integer, hundredths */

/* what the faulty NIC must do for the type to show: send (the model slows
 * or loads its TX only), receive (RX only), either (TX and RX, or the GPU or
 * CPU), and for congestion: the direction decides (egress: send, ingress:
 * receive). Only standalone's rooted patterns have ranks that do not both
 * send and receive over RDMA. */
enum need { N_ANY, N_TX, N_RX, N_DIR };

struct ftype {
	const char *name;
	unsigned wl;
	enum sev_kind kind;
	int lo, hi; /* severity range, in units of `kind` */
	int needs_dp; /* GPT: acts on the DP collective (needs dp > 1) */
	enum need need;
	int comp, stop; /* class computation (else communication); fail-stop (sim/README.md) */
};

/* Severity ranges: the table's documented range, or around its documented
 * value for the single-valued types. Workloads: where the model has an effect
 * (standalone has no forward/backward/expert kernel, MoE's forward is
 * attention (not PH_FWD), the expert imbalance is MoE's routing). */
static const struct ftype ftypes[] = {
	{ "network_congestion", WG | WM | WS, SEV_CENT, 50, 80, 0, N_DIR, 0, 0 },
	{ "pcie_contention", WG | WM | WS, SEV_CENT, 50, 80, 0, N_ANY, 0, 0 },
	{ "pcie_downgrade", WG | WM | WS, SEV_CENT, 20, 50, 0, N_ANY, 0, 0 },
	{ "memory_misalignment", WG | WM | WS, SEV_CENT, 50, 70, 0, N_TX, 0, 0 },
	{ "nic_gpu_cross_numa", WG | WM | WS, SEV_CENT, 20, 40, 0, N_TX, 0, 0 },
	{ "nic_down", WG | WM | WS, SEV_NONE, 0, 0, 0, N_ANY, 0, 1 },
	{ "cpu_contention", WG | WM | WS, SEV_CENT, 90, 100, 0, N_ANY, 1, 0 },
	{ "cpu_throttling", WG | WM | WS, SEV_NONE, 0, 0, 0, N_ANY, 1, 0 },
	{ "gpu_throttling", WG | WM | WS, SEV_INT, 200, 350, 0, N_ANY, 1, 0 },
	{ "gpu_execution_error", WG | WM, SEV_NONE, 0, 0, 0, N_ANY, 1, 1 },
	{ "cuda_execution_error", WG | WM | WS, SEV_NONE, 0, 0, 0, N_ANY, 1, 1 },
	{ "moe_expert_imbalance", WM, SEV_CENT, 80, 150, 0, N_ANY, 1, 0 },
	{ "ccld_not_entered", WG | WM | WS, SEV_NONE, 0, 0, 1, N_ANY, 1, 1 },
	{ "ccld_inconsistent", WG | WM | WS, SEV_NONE, 0, 0, 1, N_ANY, 1, 1 },
	{ "venus_slow_forward", WG, SEV_CENT, 130, 200, 0, N_ANY, 1, 0 },
	{ "venus_slow_backward", WG | WM, SEV_CENT, 130, 200, 0, N_ANY, 1, 0 },
	{ "venus_slow_transmission", WG | WM | WS, SEV_CENT, 40, 60, 0, N_TX, 0, 0 },
	{ "holmes_spike", WG | WM | WS, SEV_CENT, 5, 20, 0, N_TX, 0, 0 },
	{ "holmes_fluctuation", WG | WM | WS, SEV_CENT, 30, 50, 0, N_TX, 0, 0 },
	{ "holmes_persistent", WG | WM | WS, SEV_CENT, 60, 80, 0, N_TX, 0, 0 },
	{ "vedrfolnir_background", WG | WM | WS, SEV_CENT, 50, 70, 0, N_TX, 0, 0 },
	{ "vedrfolnir_incast", WG | WM | WS, SEV_CENT, 40, 60, 0, N_RX, 0, 0 },
};
#define NFTYPES (int)(sizeof ftypes / sizeof ftypes[0])

/* ---------- one scenario ---------- */
enum wl { GPT, MOE, STANDALONE, SIMAI };
static const char *const wl_name[] = { "gpt", "moe", "standalone", "simai" };
/* --simai-share: real AICB workload files (../shared/workloads/simai), at
 * the GPU counts they were generated for */
static const struct {
	const char *file, *what;
	int gpus;
} simai_jobs[] = {
	{ "workload_gpt7b_64g.txt", "GPT-7B (TP 8, DP 8, GA 8)", 64 },
	{ "workload_gpt13b_128g.txt", "GPT-13B (TP 8, PP 2, DP 8, GA 16)", 128 },
	{ "workload_ep_test.txt", "MoE EP test (TP 4, EP 4, DP 8)", 32 },
};
#define NSIMAI (int)(sizeof simai_jobs / sizeof simai_jobs[0])
static const char *const patterns[] = { "neighbor_exchange", "all_to_one", "one_to_all",
					"collective" };
static const char *const collectives[] = { "allreduce", "allgather", "reducescatter",
					   "broadcast", "reduce" };
static const int slice_kib[] = { 256, 512, 1024, 2048 };

struct opts {
	uint64_t seed;
	int count;
	const char *out;
	int max_gpus;
	int max_iters;
	int null_permille;
	int simai_permille;    /* --simai-share: 0 keeps the matrix as it was */
	const char *simai_dir; /* --simai-dir */
	int draws; /* 1: the matrix before benign events and fault shapes; 2: with them */
};

/* draws 2: benign events (every run) and fault shapes (failure runs), from
 * streams of their own, so that a scenario's draws-1 part is unchanged */
struct extra {
	int ckpt_every, ckpt_ds;          /* checkpoint: interval, pause in 0.1 s */
	int eval_every, eval_batches, eval_kib;
	int hic_permille, hic_ms;         /* data-loader hiccups */
	int jdist, alpha_dec;             /* jitter law (0 normal, 1 lognormal, 2 pareto), shape x 10 */
	int warmup, start_cent;           /* sequence-length warm-up */
	int change_at, change_cent;       /* sequence-length change */
	int restart_after, restart_s, restart_clean;
	int shape;                        /* SH_* */
	int end_it, on_it, off_it;        /* transient, intermittent */
	int f2, f2host, f2gpu, f2sev, f2start, f2ingress; /* a second fault (concurrent, mixed) */
	int tp, seq_par;                  /* GPT: tensor parallelism across hosts, sequence parallelism */
	int proto_auto, gpus_per_nic;     /* NCCL as deployed: protocols by size, shared NICs */
};
enum { SH_STEADY, SH_TRANSIENT, SH_INTERMITTENT, SH_CONCURRENT, SH_MIXED };
static const char *const shape_name[] = { "steady", "transient", "intermittent", "concurrent",
					  "mixed" };

struct scen {
	enum wl wl;
	int hosts, gpus;
	int pp, dp, microbatches, zero; /* gpt */
	int ep, skew_cent; /* moe */
	int pattern, collective; /* standalone */
	int tree, channels, p2p_channels, slice_kib, jitter_milli;
	int iterations;
	uint64_t sim_seed;
	int failure; /* index into ftypes, -1: none */
	int fhost, fgpu, sev, start, ingress;
	const char *shape_note; /* "paper 64-GPU GPT", ... or NULL */
	int simai_job, simai_compute_us, simai_size_cent; /* SIMAI */
	int draws;
	struct extra x;
};

static void draw_shape(struct pulse_rng *r, const struct opts *o, struct scen *s)
{
	s->shape_note = NULL;
	/* the shape's draws are made whatever --max-gpus is, so that a smaller
	 * limit changes only the shapes that exceed it */
	for (int tries = 0; tries < 64; tries++) {
		switch (s->wl) {
		case GPT: {
			int big = chance(r, 40), paper = chance(r, 200);
			if (big && o->max_gpus >= 256) {
				s->hosts = 32;
				s->gpus = 8;
				s->pp = chance(r, 500) ? 4 : 2;
				s->dp = 32 / s->pp;
				s->shape_note = "256-GPU GPT";
				return;
			}
			if (paper && o->max_gpus >= 64) {
				s->hosts = 8;
				s->gpus = 8;
				s->pp = 2;
				s->dp = 4;
				s->shape_note = "the paper's 64-GPU GPT";
				return;
			}
			{
				static const int pps[] = { 1, 2, 4 };
				s->pp = pps[uni(r, 0, 2)];
				/* hosts = pp x dp in 2..16 */
				s->dp = uni(r, s->pp == 1 ? 2 : 1, 16 / s->pp);
				s->hosts = s->pp * s->dp;
				s->gpus = uni(r, 1, 8);
			}
			break;
		}
		case MOE:
			if (chance(r, 250) && o->max_gpus >= 32) {
				s->hosts = 4;
				s->gpus = 8;
				s->ep = 4;
				s->shape_note = "the paper's 32-GPU Mixtral";
				return;
			}
			s->hosts = uni(r, 2, 8);
			{
				int div[8], nd = 0;
				for (int d = 2; d <= s->hosts; d++)
					if (s->hosts % d == 0)
						div[nd++] = d;
				s->ep = div[uni(r, 0, nd - 1)];
			}
			s->gpus = uni(r, 1, 8);
			break;
		case STANDALONE:
			s->hosts = chance(r, 750) ? uni(r, 6, 9) : uni(r, 4, 5);
			s->gpus = 1;
			break;
		case SIMAI: /* draw_simai() chooses it afterwards */
			break;
		}
		if (s->hosts * s->gpus > o->max_gpus)
			s->gpus = o->max_gpus / s->hosts;
		if (s->gpus >= 1)
			return;
	}
	/* --max-gpus below every draw: the smallest cluster of the workload */
	s->hosts = 2;
	s->gpus = 1;
	s->pp = 1;
	s->dp = 2;
	s->ep = 2;
}

/* Does the faulty rank send / receive over RDMA? Everyone does in GPT
 * (DP ring or PP stages) and MoE (all-to-all); in standalone, the rooted
 * patterns (root 0) have ranks that only send or only receive: all_to_one's
 * root receives, one_to_all's sends, broadcast's chain 0 -> ... -> n-1 and
 * reduce's 1 -> ... -> n-1 -> 0 (sim/cluster/nccl.c, build_chain). */
static void rank_role(const struct scen *s, int rank, int *tx, int *rx)
{
	*tx = *rx = 1;
	if (s->wl != STANDALONE)
		return;
	int n = s->hosts * s->gpus, root = rank == 0;
	switch (s->pattern) {
	case 1: /* all_to_one */
		*tx = !root;
		*rx = root;
		break;
	case 2: /* one_to_all */
		*tx = root;
		*rx = !root;
		break;
	case 3:
		if (s->collective == 3) { /* broadcast */
			*tx = rank != n - 1;
			*rx = !root;
		} else if (s->collective == 4) { /* reduce */
			*tx = !root;
			*rx = rank != 1;
		}
		break;
	default:
		break;
	}
}

static int type_fits(const struct ftype *t, const struct scen *s, int tx, int rx)
{
	if (s->wl == SIMAI) /* every rank computes, sends and receives; no routing, no CCL-D hook */
		return strcmp(t->name, "moe_expert_imbalance") && strncmp(t->name, "ccld_", 5);
	unsigned bit = s->wl == GPT ? WG : s->wl == MOE ? WM : WS;
	if (!(t->wl & bit))
		return 0;
	if (t->needs_dp && s->wl == GPT && s->dp < 2)
		return 0; /* CCL-D acts on the DP collective: none with dp 1 */
	if ((t->need == N_TX && !tx) || (t->need == N_RX && !rx))
		return 0; /* it would not show */
	return 1;
}

static void draw(struct pulse_rng *r, const struct opts *o, int is_null, struct scen *s)
{
	memset(s, 0, sizeof *s);
	int w = uni(r, 0, 999);
	s->wl = w < 500 ? GPT : w < 750 ? MOE : STANDALONE;
	draw_shape(r, o, s);
	if (s->wl == GPT) {
		s->microbatches = uni(r, 2, 8);
	} else if (s->wl == MOE) {
		s->skew_cent = uni(r, 0, 50);
	} else {
		s->pattern = uni(r, 0, 3);
		s->collective = uni(r, 0, 4);
	}
	s->tree = chance(r, 300);
	s->zero = 1;
	if (s->wl == GPT)
		s->zero = !chance(r, s->tree ? 500 : 150);
	s->channels = uni(r, 2, 8);
	s->p2p_channels = uni(r, 1, 4);
	s->slice_kib = slice_kib[uni(r, 0, 3)];
	s->jitter_milli = uni(r, 10, 80);

	/* iterations: 5..40 within --max-iterations; big clusters get fewer */
	int lo = o->max_iters < 5 ? o->max_iters : 5;
	s->iterations = uni(r, lo, 40 < o->max_iters ? 40 : o->max_iters);
	int ngpu = s->hosts * s->gpus;
	if (ngpu * s->iterations > COST_BUDGET) {
		s->iterations = COST_BUDGET / ngpu;
		if (s->iterations < lo)
			s->iterations = lo;
	}
	s->sim_seed = pulse_rng_next(r) >> 34; /* < 2^30: readable, inside JSON's exact range */

	s->failure = -1;
	/* the failure's draws are made for every scenario, so a null run differs
	 * from a failure run only in its failure */
	s->fhost = uni(r, 0, s->hosts - 1);
	s->fgpu = uni(r, 0, s->gpus - 1);
	int tx, rx;
	rank_role(s, s->fhost * s->gpus + s->fgpu, &tx, &rx);
	int fits[NFTYPES], nf = 0;
	for (int i = 0; i < NFTYPES; i++)
		if (type_fits(&ftypes[i], s, tx, rx))
			fits[nf++] = i;
	int type = fits[uni(r, 0, nf - 1)];
	const struct ftype *t = &ftypes[type];
	s->sev = t->kind == SEV_NONE ? 0 : uni(r, t->lo, t->hi);
	s->start = uni(r, 0, s->iterations - 2 > 0 ? s->iterations - 2 : 0);
	if (t->need == N_DIR) /* congestion: egress, or ingress 30% of the time */
		s->ingress = !tx || (rx && chance(r, 300));
	if (!is_null)
		s->failure = type;
}

/* A share of the scenarios runs a real AICB workload instead. Drawn from
 * its own stream (SEED, k), after the draw above, so that --simai-share 0
 * writes the matrix as it was and the others keep their draws. */
static void draw_simai(const struct opts *o, int k, int is_null, struct scen *s)
{
	struct pulse_rng r;
	rng_init(&r, o->seed, TAG_SIMAI, (uint64_t)k);
	if (!chance(&r, o->simai_permille))
		return;
	int fit[NSIMAI], nfit = 0;
	for (int i = 0; i < NSIMAI; i++)
		if (simai_jobs[i].gpus <= o->max_gpus)
			fit[nfit++] = i;
	if (!nfit)
		return;
	s->wl = SIMAI;
	s->shape_note = NULL;
	s->simai_job = fit[uni(&r, 0, nfit - 1)];
	s->gpus = 8;
	s->hosts = simai_jobs[s->simai_job].gpus / 8;
	s->simai_compute_us = uni(&r, 10, 50);
	static const int size_cent[] = { 5, 10, 20 };
	s->simai_size_cent = size_cent[uni(&r, 0, 2)];
	int lo = o->max_iters < 4 ? o->max_iters : 4;
	s->iterations = uni(&r, lo, 10 < o->max_iters ? 10 : o->max_iters);
	s->sim_seed = pulse_rng_next(&r) >> 34;
	s->failure = -1;
	s->ingress = 0;
	s->fhost = uni(&r, 0, s->hosts - 1);
	s->fgpu = uni(&r, 0, s->gpus - 1);
	int fits[NFTYPES], nf = 0;
	for (int i = 0; i < NFTYPES; i++)
		if (type_fits(&ftypes[i], s, 1, 1))
			fits[nf++] = i;
	int type = fits[uni(&r, 0, nf - 1)];
	const struct ftype *t = &ftypes[type];
	s->sev = t->kind == SEV_NONE ? 0 : uni(&r, t->lo, t->hi);
	s->start = uni(&r, 0, s->iterations - 2 > 0 ? s->iterations - 2 : 0);
	if (t->need == N_DIR)
		s->ingress = chance(&r, 300);
	if (!is_null)
		s->failure = type;
}

/* Benign events (sim/README.md, "Benign events"), for failure and
 * no-failure runs alike. */
static void draw_events(struct pulse_rng *r, struct scen *s)
{
	struct extra *x = &s->x;
	int it = s->iterations;
	if (chance(r, 300)) {
		x->ckpt_every = uni(r, 2, it / 2 > 2 ? it / 2 : 2);
		x->ckpt_ds = uni(r, 5, 50);
	}
	if (s->wl != STANDALONE && chance(r, 250)) {
		x->eval_every = uni(r, 2, it / 3 > 2 ? it / 3 : 2);
		x->eval_batches = uni(r, 1, 4);
		x->eval_kib = 4 << uni(r, 0, 8); /* 4 KiB .. 1 MiB */
	}
	if (chance(r, 350)) {
		x->hic_permille = uni(r, 20, 200);
		x->hic_ms = uni(r, 1, 10);
	}
	if (chance(r, 400)) {
		x->jdist = uni(r, 1, 2);
		x->alpha_dec = uni(r, 20, 40);
	}
	if (chance(r, 200)) {
		x->warmup = uni(r, 2, it / 2 > 2 ? it / 2 : 2);
		x->start_cent = uni(r, 25, 75);
	}
	if (chance(r, 100)) {
		x->change_at = uni(r, 1, it - 1);
		x->change_cent = uni(r, 50, 200);
	}
	if (chance(r, 100)) {
		x->restart_after = uni(r, 1, it - 1);
		x->restart_s = uni(r, 2, 30);
		x->restart_clean = chance(r, 700);
	}
}

/* GPT's parallelism as deployed: TP over two hosts 15% (when dp stays at
 * least 2, so that every failure type still acts), sequence parallelism in
 * 30% of runs with TP (within or across hosts). */
static void draw_parallel(struct pulse_rng *r, struct scen *s)
{
	struct extra *x = &s->x;
	if (s->wl != GPT)
		return;
	if (chance(r, 150) && s->dp % 2 == 0 && s->dp >= 4) {
		x->tp = 2 * s->gpus;
		s->dp /= 2;
	}
	int tp = x->tp ? x->tp : s->gpus;
	if (tp >= 2 && chance(r, 300))
		x->seq_par = 1;
}

/* NCCL as deployed (sim/README.md, "NCCL protocols", "NICs shared by
 * GPUs"): NCCL's default protocol choice by size in half of the runs (the
 * rest keep Simple everywhere, as the matrix did); two GPUs per NIC in 15%
 * of the runs with an even number of GPUs per host. */
static void draw_nccl(struct pulse_rng *r, struct scen *s)
{
	struct extra *x = &s->x;
	x->proto_auto = chance(r, 500);
	x->gpus_per_nic = s->gpus % 2 == 0 && chance(r, 150) ? 2 : 0;
}

/* The fault's shape (sim/README.md, "Faults as they happen"): steady 55%,
 * transient 15%, intermittent 10% (fail-slow only; a fail-stop stays
 * steady), a concurrent fail-slow on another machine 10%, a mixed fault
 * (a fail-slow of the other class on the same machine) 10%. */
static void draw_shape_fault(struct pulse_rng *r, struct scen *s)
{
	struct extra *x = &s->x;
	const struct ftype *t = &ftypes[s->failure];
	int it = s->iterations, p = uni(r, 0, 999);
	x->f2 = -1;
	x->shape = p < 550 ? SH_STEADY : p < 700 ? SH_TRANSIENT : p < 800 ? SH_INTERMITTENT
		 : p < 900 ? SH_CONCURRENT : SH_MIXED;
	if ((x->shape == SH_TRANSIENT || x->shape == SH_INTERMITTENT) && (t->stop || s->start > it - 2))
		x->shape = SH_STEADY;
	if (x->shape == SH_CONCURRENT && s->hosts < 2)
		x->shape = SH_STEADY;
	if (x->shape == SH_TRANSIENT) {
		int room = it - 1 - s->start; /* at least one iteration after it cleared */
		x->end_it = s->start + uni(r, 1, room / 2 > 1 ? room / 2 : 1);
	} else if (x->shape == SH_INTERMITTENT) {
		x->on_it = uni(r, 1, 3);
		x->off_it = uni(r, 1, 3);
	} else if (x->shape == SH_CONCURRENT || x->shape == SH_MIXED) {
		if (x->shape == SH_MIXED) {
			x->f2host = s->fhost;
		} else {
			x->f2host = uni(r, 0, s->hosts - 2);
			if (x->f2host >= s->fhost)
				x->f2host++;
		}
		x->f2gpu = uni(r, 0, s->gpus - 1);
		int tx, rx;
		rank_role(s, x->f2host * s->gpus + x->f2gpu, &tx, &rx);
		int fits[NFTYPES], nf = 0;
		for (int i = 0; i < NFTYPES; i++)
			if (type_fits(&ftypes[i], s, tx, rx) && !ftypes[i].stop &&
			    (x->shape == SH_CONCURRENT || ftypes[i].comp != t->comp) &&
			    (ftypes[i].need != N_DIR || tx)) /* congestion here: egress */
				fits[nf++] = i;
		if (!nf) {
			x->shape = SH_STEADY;
			return;
		}
		x->f2 = fits[uni(r, 0, nf - 1)];
		const struct ftype *t2 = &ftypes[x->f2];
		x->f2sev = t2->kind == SEV_NONE ? 0 : uni(r, t2->lo, t2->hi);
		x->f2start = uni(r, 0, it - 2 > 0 ? it - 2 : 0);
		x->f2ingress = 0;
	}
}

static void sev_of(const struct ftype *t, int sev, char *buf, size_t len)
{
	if (t->kind == SEV_INT)
		snprintf(buf, len, "%d", sev);
	else
		snprintf(buf, len, "%d.%02d", sev / 100, sev % 100);
}

static void sev_str(const struct scen *s, char *buf, size_t len)
{
	sev_of(&ftypes[s->failure], s->sev, buf, len);
}

static void write_events(FILE *f, const struct extra *x)
{
	char buf[512];
	int m = 0;
	buf[0] = '\0';
	if (x->ckpt_every)
		m += snprintf(buf + m, sizeof buf - m, ",\"checkpoint_every\":%d,\"checkpoint_ns\":%de8",
			      x->ckpt_every, x->ckpt_ds);
	if (x->eval_every)
		m += snprintf(buf + m, sizeof buf - m,
			      ",\"eval_every\":%d,\"eval_batches\":%d,\"eval_bytes\":%d", x->eval_every,
			      x->eval_batches, x->eval_kib * 1024);
	if (x->hic_permille)
		m += snprintf(buf + m, sizeof buf - m, ",\"hiccup_prob\":0.%03d,\"hiccup_ns\":%de6",
			      x->hic_permille, x->hic_ms);
	if (x->warmup)
		m += snprintf(buf + m, sizeof buf - m, ",\"seqlen_warmup\":%d,\"seqlen_start\":0.%02d",
			      x->warmup, x->start_cent);
	if (x->change_at)
		m += snprintf(buf + m, sizeof buf - m, ",\"seqlen_change_at\":%d,\"seqlen_change\":%d.%02d",
			      x->change_at, x->change_cent / 100, x->change_cent % 100);
	if (x->restart_after)
		m += snprintf(buf + m, sizeof buf - m,
			      ",\"restart_after\":%d,\"restart_ns\":%de9,\"restart_clean\":%s",
			      x->restart_after, x->restart_s, x->restart_clean ? "true" : "false");
	if (m)
		fprintf(f, " \"events\":{%s},\n", buf + 1);
}

static int write_scenario(FILE *f, const struct opts *o, int k, const char *name,
			  const struct scen *s)
{
	char desc[1024], fdesc[200], sev[32] = "";
	int n = 0;
	n += snprintf(desc + n, sizeof desc - n, "random matrix seed %" PRIu64 " #%d: %s, %d hosts x %d GPU%s",
		      o->seed, k, wl_name[s->wl], s->hosts, s->gpus, s->gpus > 1 ? "s" : "");
	if (s->wl == GPT)
		n += snprintf(desc + n, sizeof desc - n, " (pp %d, dp %d, %d micro-batches%s)", s->pp,
			      s->dp, s->microbatches, s->zero ? "" : ", no ZeRO");
	else if (s->wl == MOE)
		n += snprintf(desc + n, sizeof desc - n, " (ep %d, routing skew %d.%02d)", s->ep,
			      s->skew_cent / 100, s->skew_cent % 100);
	else if (s->wl == SIMAI)
		n += snprintf(desc + n, sizeof desc - n, " (AICB %s, %s, sizes x0.%02d, %d us unprofiled phases)",
			      simai_jobs[s->simai_job].file, simai_jobs[s->simai_job].what,
			      s->simai_size_cent, s->simai_compute_us);
	else
		n += snprintf(desc + n, sizeof desc - n, " (%s%s%s)", patterns[s->pattern],
			      s->pattern == 3 ? " " : "", s->pattern == 3 ? collectives[s->collective] : "");
	if (s->shape_note)
		n += snprintf(desc + n, sizeof desc - n, ", %s", s->shape_note);
	n += snprintf(desc + n, sizeof desc - n, ", %s, %d channels, %d iterations",
		      s->tree ? "tree" : "ring", s->channels, s->iterations);
	if (s->failure < 0) {
		snprintf(fdesc, sizeof fdesc, "no failure");
	} else {
		const struct ftype *t = &ftypes[s->failure];
		if (t->kind != SEV_NONE)
			sev_str(s, sev, sizeof sev);
		snprintf(fdesc, sizeof fdesc, "%s%s%s%s on host%d gpu%d from iteration %d", t->name,
			 t->kind != SEV_NONE ? " " : "", sev, s->ingress ? " (ingress)" : "", s->fhost,
			 s->fgpu, s->start);
	}
	n += snprintf(desc + n, sizeof desc - n, "; %s%s", s->failure < 0 ? "" : "failure: ", fdesc);
	const struct extra *x = &s->x;
	if (s->failure >= 0 && x->shape != SH_STEADY && n < (int)sizeof desc) {
		n += snprintf(desc + n, sizeof desc - n, " (%s", shape_name[x->shape]);
		if (x->shape == SH_TRANSIENT && n < (int)sizeof desc)
			n += snprintf(desc + n, sizeof desc - n, " until iteration %d", x->end_it);
		else if (x->shape == SH_INTERMITTENT && n < (int)sizeof desc)
			n += snprintf(desc + n, sizeof desc - n, ", %d on / %d off", x->on_it, x->off_it);
		else if (x->f2 >= 0 && n < (int)sizeof desc) {
			char sev2[32] = "";
			if (ftypes[x->f2].kind != SEV_NONE)
				sev_of(&ftypes[x->f2], x->f2sev, sev2, sizeof sev2);
			n += snprintf(desc + n, sizeof desc - n, ": %s%s%s on host%d gpu%d from iteration %d",
				      ftypes[x->f2].name, sev2[0] ? " " : "", sev2, x->f2host, x->f2gpu,
				      x->f2start);
		}
		if (n < (int)sizeof desc)
			n += snprintf(desc + n, sizeof desc - n, ")");
	}
	if ((x->tp || x->seq_par) && n < (int)sizeof desc) {
		if (x->tp)
			n += snprintf(desc + n, sizeof desc - n, "; TP %d across hosts", x->tp);
		if (x->seq_par && n < (int)sizeof desc)
			n += snprintf(desc + n, sizeof desc - n, "; sequence parallelism");
	}
	if (x->proto_auto && n < (int)sizeof desc)
		n += snprintf(desc + n, sizeof desc - n, "; NCCL protocols by size");
	if (x->gpus_per_nic && n < (int)sizeof desc)
		n += snprintf(desc + n, sizeof desc - n, "; %d GPUs per NIC", x->gpus_per_nic);
	if (s->draws >= 2 && n < (int)sizeof desc) {
		char ev[200];
		int m = 0;
		ev[0] = '\0';
		if (x->ckpt_every)
			m += snprintf(ev + m, sizeof ev - m, ", checkpoints");
		if (x->eval_every && m < (int)sizeof ev)
			m += snprintf(ev + m, sizeof ev - m, ", evaluation steps");
		if (x->hic_permille && m < (int)sizeof ev)
			m += snprintf(ev + m, sizeof ev - m, ", data-loader hiccups");
		if (x->jdist && m < (int)sizeof ev)
			m += snprintf(ev + m, sizeof ev - m, ", %s jitter", x->jdist == 1 ? "lognormal" : "pareto");
		if ((x->warmup || x->change_at) && m < (int)sizeof ev)
			m += snprintf(ev + m, sizeof ev - m, ", sequence-length changes");
		if (x->restart_after && m < (int)sizeof ev)
			m += snprintf(ev + m, sizeof ev - m, ", a job restart");
		if (m)
			snprintf(desc + n, sizeof desc - n, "; benign events: %s", ev + 2);
	}

	fprintf(f, "{\"name\":\"%s\",\"seed\":%" PRIu64 ",\"workload\":\"%s\",\"iterations\":%d,\n",
		name, s->sim_seed, wl_name[s->wl], s->iterations);
	fprintf(f, " \"description\":\"%s\",\n", desc);
	if (s->wl == SIMAI) /* hosts follow from simai.gpus */
		fprintf(f, " \"cluster\":{\"gpus_per_host\":%d},\n", s->gpus);
	else if (x->gpus_per_nic)
		fprintf(f, " \"cluster\":{\"hosts\":%d,\"gpus_per_host\":%d,\"gpus_per_nic\":%d},\n",
			s->hosts, s->gpus, x->gpus_per_nic);
	else
		fprintf(f, " \"cluster\":{\"hosts\":%d,\"gpus_per_host\":%d},\n", s->hosts, s->gpus);
	fprintf(f,
		" \"nccl\":{\"algo\":\"%s\",\"channels\":%d,\"p2p_channels\":%d,\"slice_bytes\":%d%s},"
		"\"compute\":{\"jitter\":0.%03d",
		s->tree ? "tree" : "ring", s->channels, s->p2p_channels, s->slice_kib * 1024,
		x->proto_auto ? ",\"protocol\":\"auto\"" : "", s->jitter_milli);
	if (x->jdist)
		fprintf(f, ",\"jitter_dist\":\"%s\",\"pareto_alpha\":%d.%d",
			x->jdist == 1 ? "lognormal" : "pareto", x->alpha_dec / 10, x->alpha_dec % 10);
	fprintf(f, "},\n");
	if (s->draws >= 2)
		write_events(f, x);
	if (s->wl == GPT) {
		fprintf(f, " \"gpt\":{\"pp\":%d,\"dp\":%d,\"microbatches\":%d,\"zero\":%s", s->pp,
			s->dp, s->microbatches, s->zero ? "true" : "false");
		if (x->tp)
			fprintf(f, ",\"tp\":%d", x->tp);
		if (x->seq_par)
			fprintf(f, ",\"sequence_parallel\":true");
		fprintf(f, "},\n");
	}
	else if (s->wl == MOE)
		fprintf(f, " \"moe\":{\"ep\":%d,\"routing_skew\":%d.%02d},\n", s->ep,
			s->skew_cent / 100, s->skew_cent % 100);
	else if (s->wl == SIMAI)
		fprintf(f,
			" \"simai\":{\"file\":\"%s/%s\",\"gpus\":%d,\"compute_ns\":%d,"
			"\"size_scale\":0.%02d},\n",
			o->simai_dir, simai_jobs[s->simai_job].file, s->hosts * s->gpus,
			s->simai_compute_us * 1000, s->simai_size_cent);
	else if (s->pattern == 3)
		fprintf(f, " \"standalone\":{\"pattern\":\"%s\",\"collective\":\"%s\"},\n",
			patterns[s->pattern], collectives[s->collective]);
	else
		fprintf(f, " \"standalone\":{\"pattern\":\"%s\"},\n", patterns[s->pattern]);
	if (s->failure < 0) {
		fprintf(f, " \"failure\":null}\n");
	} else if (x->f2 < 0) {
		const struct ftype *t = &ftypes[s->failure];
		fprintf(f, " \"failure\":{\"type\":\"%s\",\"host\":%d,\"gpu\":%d,", t->name, s->fhost,
			s->fgpu);
		if (t->kind != SEV_NONE)
			fprintf(f, "\"severity\":%s,", sev);
		fprintf(f, "\"start_iteration\":%d%s", s->start,
			s->ingress ? ",\"direction\":\"ingress\"" : "");
		if (x->shape == SH_TRANSIENT)
			fprintf(f, ",\"end_iteration\":%d", x->end_it);
		else if (x->shape == SH_INTERMITTENT)
			fprintf(f, ",\"on_iterations\":%d,\"off_iterations\":%d", x->on_it, x->off_it);
		fprintf(f, "}}\n");
	} else {
		const struct ftype *t = &ftypes[s->failure], *t2 = &ftypes[x->f2];
		fprintf(f, " \"failures\":[{\"type\":\"%s\",\"host\":%d,\"gpu\":%d,", t->name, s->fhost,
			s->fgpu);
		if (t->kind != SEV_NONE)
			fprintf(f, "\"severity\":%s,", sev);
		fprintf(f, "\"start_iteration\":%d%s},\n  ", s->start,
			s->ingress ? ",\"direction\":\"ingress\"" : "");
		char sev2[32];
		fprintf(f, "{\"type\":\"%s\",\"host\":%d,\"gpu\":%d,", t2->name, x->f2host, x->f2gpu);
		if (t2->kind != SEV_NONE) {
			sev_of(t2, x->f2sev, sev2, sizeof sev2);
			fprintf(f, "\"severity\":%s,", sev2);
		}
		fprintf(f, "\"start_iteration\":%d}]}\n", x->f2start);
	}
	return ferror(f) ? -1 : 0;
}

/* Which scenarios of the block of NULL_BLOCK starting at b * NULL_BLOCK have
 * no failure: share x NULL_BLOCK of them (the fraction rounded by a draw), at
 * positions drawn from (seed, block). */
static void null_block(const struct opts *o, int b, int is_null[NULL_BLOCK])
{
	struct pulse_rng r;
	rng_init(&r, o->seed, TAG_NULLS, (uint64_t)b);
	int units = o->null_permille * NULL_BLOCK; /* in thousandths of a scenario */
	int nn = units / 1000 + (uni(&r, 0, 999) < units % 1000);
	int perm[NULL_BLOCK];
	for (int i = 0; i < NULL_BLOCK; i++)
		perm[i] = i;
	for (int i = NULL_BLOCK - 1; i > 0; i--) {
		int j = uni(&r, 0, i);
		int x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	for (int i = 0; i < NULL_BLOCK; i++)
		is_null[perm[i]] = i < nn;
}

/* ---------- command line ---------- */
static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pulse-gen-scenarios --random SEED --count N --out DIR [options]\n"
		"Writes N random scenarios for sim/run_cluster, DIR/rand-SEED-NNN.json, and\n"
		"DIR/list.txt (their file names). The same options give the same bytes on\n"
		"every machine; scenario k depends only on SEED, k and the options.\n"
		"\n"
		"  --random SEED             the matrix's seed (0 .. 2^64-1)\n"
		"  --count N                 scenarios, 1..%d\n"
		"  --out DIR                 output directory (created, parents too)\n"
		"  --max-gpus G              largest cluster in GPUs, 2..4096 (default 256;\n"
		"                            the 256-GPU shape needs 256, the paper's 64 needs 64)\n"
		"  --max-iterations I        most iterations per run, 2..100000 (default 40)\n"
		"  --no-failure-share F      share of runs with \"failure\": null, 0..1 (default 0.3)\n"
		"  --simai-share F           share of runs that simulate a real SimAI/AICB\n"
		"                            workload file instead, 0..1 (default 0: none)\n"
		"  --simai-dir DIR           where the files are, as run_cluster will see it\n"
		"                            (default ../shared/workloads/simai)\n"
		"  --draws 1|2               2 (default): benign events in every run, transient,\n"
		"                            intermittent, concurrent and mixed faults, NCCL protocols\n"
		"                            by size and NICs shared by two GPUs; 1: the matrix\n"
		"                            without them (byte-identical to older versions)\n"
		"  -h, --help                this text\n"
		"\n"
		"The draw is described in sim/README.md (\"Randomized scenarios\").\n"
		"Exit status: 0 done, 1 cannot write DIR, 2 usage.\n",
		MAX_COUNT);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "pulse-gen-scenarios: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(pulse-gen-scenarios --help for usage)\n");
	return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	uint64_t v;
	if (parse_u64(s, &v) || v < (uint64_t)lo || v > (uint64_t)hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* a share in [0, 1], as thousandths: "0.3", "0.25", "1", ".5" */
static int parse_share(const char *s, int *permille)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v >= 0 && v <= 1))
		return -1;
	*permille = (int)(v * 1000 + 0.5);
	return 0;
}

static int mkdirs(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == '\0') {
			char c = buf[i];
			buf[i] = '\0';
			if (mkdir(buf, 0777) && errno != EEXIST)
				return -1;
			buf[i] = c;
		}
	}
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o = { 0, 0, NULL, 256, 40, 300, 0, "../shared/workloads/simai", 2 };
	int have_seed = 0;
	for (int i = 1; i < argc; i += 2) { /* every option takes a value */
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--random")) {
			if (parse_u64(v, &o.seed))
				return bad_usage("--random: expected a seed 0..2^64-1, got \"%s\"",
						 v ? v : "");
			have_seed = 1;
		} else if (!strcmp(a, "--count")) {
			if (parse_int(v, 1, MAX_COUNT, &o.count))
				return bad_usage("--count: expected 1..100000, got \"%s\"", v ? v : "");
		} else if (!strcmp(a, "--out")) {
			if (!v || !*v)
				return bad_usage("--out: expected a directory%s", "");
			o.out = v;
		} else if (!strcmp(a, "--max-gpus")) {
			if (parse_int(v, 2, 4096, &o.max_gpus))
				return bad_usage("--max-gpus: expected 2..4096, got \"%s\"", v ? v : "");
		} else if (!strcmp(a, "--max-iterations")) {
			if (parse_int(v, 2, 100000, &o.max_iters))
				return bad_usage("--max-iterations: expected 2..100000, got \"%s\"",
						 v ? v : "");
		} else if (!strcmp(a, "--draws")) {
			if (parse_int(v, 1, 2, &o.draws))
				return bad_usage("--draws: expected 1 or 2, got \"%s\"", v ? v : "");
		} else if (!strcmp(a, "--no-failure-share")) {
			if (parse_share(v, &o.null_permille))
				return bad_usage("--no-failure-share: expected a number in [0, 1], got "
						 "\"%s\"", v ? v : "");
		} else if (!strcmp(a, "--simai-share")) {
			if (parse_share(v, &o.simai_permille))
				return bad_usage("--simai-share: expected a number in [0, 1], got \"%s\"",
						 v ? v : "");
		} else if (!strcmp(a, "--simai-dir")) {
			if (!v || !*v || strlen(v) > 200 || strpbrk(v, "\"\\"))
				return bad_usage("--simai-dir: expected a directory (at most 200 characters, "
						 "no quotes or backslashes)%s", "");
			o.simai_dir = v;
		} else {
			return bad_usage("unknown argument \"%s\"", a);
		}
	}
	if (!have_seed)
		return bad_usage("--random SEED is required%s", "");
	if (!o.count)
		return bad_usage("--count N is required%s", "");
	if (!o.out)
		return bad_usage("--out DIR is required%s", "");
	if (mkdirs(o.out)) {
		fprintf(stderr, "pulse-gen-scenarios: cannot create %s: %s\n", o.out, strerror(errno));
		return 1;
	}

	int width = 3;
	for (int c = o.count - 1; c >= 1000; c /= 10)
		width++;
	char path[4200], listpath[4200];
	snprintf(listpath, sizeof listpath, "%s/list.txt", o.out);
	FILE *list = fopen(listpath, "w");
	if (!list) {
		fprintf(stderr, "pulse-gen-scenarios: %s: %s\n", listpath, strerror(errno));
		return 1;
	}
	int is_null[NULL_BLOCK], nnull = 0;
	for (int k = 0; k < o.count; k++) {
		if (k % NULL_BLOCK == 0)
			null_block(&o, k / NULL_BLOCK, is_null);
		struct pulse_rng r;
		rng_init(&r, o.seed, TAG_SCENARIO, (uint64_t)k);
		struct scen s;
		draw(&r, &o, is_null[k % NULL_BLOCK], &s);
		draw_simai(&o, k, is_null[k % NULL_BLOCK], &s);
		s.draws = o.draws;
		s.x.f2 = -1;
		/* (a SimAI run keeps its file's schedule: no benign events or
		 * fault shapes drawn for it) */
		if (o.draws >= 2 && s.wl != SIMAI) {
			struct pulse_rng re;
			rng_init(&re, o.seed, TAG_EVENTS, (uint64_t)k);
			draw_events(&re, &s);
			rng_init(&re, o.seed, TAG_PARALLEL, (uint64_t)k);
			draw_parallel(&re, &s);
			rng_init(&re, o.seed, TAG_NCCL, (uint64_t)k);
			draw_nccl(&re, &s);
			if (s.failure >= 0) {
				rng_init(&re, o.seed, TAG_SHAPES, (uint64_t)k);
				draw_shape_fault(&re, &s);
			}
		}
		nnull += s.failure < 0;
		char name[64], idx[16];
		for (int d = 0, v = k; d < width; d++, v /= 10) /* k, zero-padded to width */
			idx[width - 1 - d] = (char)('0' + v % 10);
		idx[width] = '\0';
		snprintf(name, sizeof name, "rand-%" PRIu64 "-%s", o.seed, idx);
		snprintf(path, sizeof path, "%s/%s.json", o.out, name);
		FILE *f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "pulse-gen-scenarios: %s: %s\n", path, strerror(errno));
			fclose(list);
			return 1;
		}
		int bad = write_scenario(f, &o, k, name, &s);
		if (fclose(f) || bad) {
			fprintf(stderr, "pulse-gen-scenarios: %s: write error\n", path);
			fclose(list);
			return 1;
		}
		fprintf(list, "%s.json\n", name);
	}
	if (fclose(list)) {
		fprintf(stderr, "pulse-gen-scenarios: %s: write error\n", listpath);
		return 1;
	}
	printf("pulse-gen-scenarios: %d scenarios (seed %" PRIu64 ", %d without a failure) in %s\n",
	       o.count, o.seed, nnull, o.out);
	return 0;
}
