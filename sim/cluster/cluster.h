/* pulse-run-cluster: the cluster testbed simulator (sim/README.md,
 * "run_cluster"). A discrete-event simulation, at NCCL slice granularity,
 * of N hosts x G GPUs training a model, with one RDMA NIC per GPU, a
 * fluid fair-share fabric, NCCL's ring/tree/P2P protocols with buffer slots,
 * proxy latency and kernel launch, and injected failures. It writes what
 * each host would see (include/pulse/cluster_run.h): per-NIC TX event
 * streams with polls, per-process hook records, plus the ground truth. */
#ifndef PULSE_SIM_CLUSTER_H
#define PULSE_SIM_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/hook_record.h"
#include "pulse/rng.h"

#define SC_MAX_HOSTS 256
#define SC_MAX_GPUS 16
#define SC_MAX_CHANNELS 16
#define SC_MAX_GPUS_PER_NIC 8
#define SC_NAME_LEN 64

enum sc_workload { WL_GPT = 1, WL_MOE = 2, WL_STANDALONE = 3, WL_SIMAI = 4 };
enum sc_pattern { PAT_NEIGHBOR = 1, PAT_ALL_TO_ONE = 2, PAT_ONE_TO_ALL = 3, PAT_COLLECTIVE = 4 };
enum sc_algo { ALGO_RING = 0, ALGO_TREE = 1, ALGO_P2P = 2 };
/* NCCL's protocols (nccl.protocol). SIMPLE is 0: a scenario without the key
 * runs as before the others existed; AUTO picks one per operator by size
 * as NCCL's tuner does (proto.c). */
enum sc_proto { PROTO_SIMPLE = 0, PROTO_AUTO = 1, PROTO_LL = 2, PROTO_LL128 = 3 };

/* Failure types (truth.json "type"). */
enum sc_fail {
	F_NONE = 0,
	F_NET_CONGESTION,
	F_CPU_CONTENTION,
	F_NIC_DOWN,
	F_MOE_IMBALANCE,
	F_PCIE_CONTENTION,
	F_GPU_THROTTLING,
	F_GPU_EXEC_ERROR,
	F_CUDA_EXEC_ERROR,
	F_CPU_THROTTLING,
	F_PCIE_DOWNGRADE,
	F_CROSS_NUMA,
	F_MEM_MISALIGN,
	/* peer systems' failure types */
	F_CCLD_NOT_ENTERED,
	F_CCLD_INCONSISTENT,
	F_VT_SLOW_FORWARD,
	F_VT_SLOW_BACKWARD,
	F_VT_SLOW_TRANSMISSION,
	F_HOLMES_SPIKE,
	F_HOLMES_FLUCTUATION,
	F_HOLMES_PERSISTENT,
	F_VED_BACKGROUND,
	F_VED_INCAST,
	F_COUNT
};

struct sc_fail_info {
	const char *name;
	const char *klass; /* "computation" | "communication" */
	const char *mode;  /* "fail-slow" | "fail-stop" */
};
extern const struct sc_fail_info sc_fail_table[F_COUNT];

struct sc_failure {
	int type; /* enum sc_fail */
	int host, gpu;
	double severity; /* meaning per type: sim/README.md */
	int start_iteration;
	double period_ns;   /* fluctuation / spike period */
	double duration_ns; /* spike length */
	int ingress;        /* congestion: paths into the NIC instead of out of it */
	/* a fail-slow that clears (sim/README.md, "Faults as they happen"):
	 * active in iterations [start_iteration, end_iteration) (0: to the
	 * end), and within them on for on_iterations, off for off_iterations,
	 * repeating (0: always on) */
	int end_iteration, on_iterations, off_iterations;
	/* venus_slow_forward / _backward: only this micro-batch's pass of each
	 * iteration (-1: all), so that a slowdown can sit where the schedule
	 * has slack (sim/README.md) */
	int micro_batch;
};

#define SC_MAX_FAILURES 4

/* Heavy-tailed compute jitter (compute.jitter_dist). */
enum sc_jitter_dist { JD_NORMAL = 0, JD_LOGNORMAL = 1, JD_PARETO = 2 };

/* Benign events (scenario "events"; sim/README.md, "Benign events"): what
 * a healthy production job does that the analyzer must not report. 0 in a
 * count or an interval switches the event off. */
struct sc_events {
	int ckpt_every;       /* checkpoint after every N-th iteration */
	double ckpt_ns;       /* its pause on every rank */
	int eval_every;       /* evaluation step after every N-th iteration */
	int eval_batches;     /* forward-only micro-batches per evaluation */
	uint64_t eval_bytes;  /* its DP all-reduce (loss and metrics) */
	double hiccup_prob;   /* per rank and iteration: the data loader stalls */
	double hiccup_ns;     /* the stall, uniform in [hiccup_ns / 10, hiccup_ns] */
	int seqlen_warmup;    /* iterations of sequence-length warm-up */
	double seqlen_start;  /* the first iteration's share of the full length */
	int seqlen_change_at; /* from this iteration on (0: never) ... */
	double seqlen_change; /* ... the length is this multiple of the full one */
	int restart_after;    /* the job restarts after this many iterations (0: never) */
	double restart_ns;    /* processes gone, before the new ones start */
	int restart_clean;    /* the processes destroy their communicators */
};

/* The scenario, with every default filled in (sim/README.md). */
struct sc_scenario {
	char name[SC_NAME_LEN];
	uint64_t seed;
	int workload;
	int hosts, gpus;
	int gpus_per_nic; /* GPUs whose traffic leaves through one NIC (1: a NIC per GPU) */
	double nic_gbps, nvlink_gbps;
	double clock_offset_ns, clock_drift_ppm, nic_drift_ppm;
	uint64_t clock_base_ns;
	double poll_ns, epoch_ns, tail_ns, start_ns;
	double hang_tail_ns; /* quiet polls after a hang (a hung job stays hung) */
	int iterations;
	/* NCCL */
	int channels, p2p_channels, slots, algo, chunk_slices; /* algo: ring|tree for all-reduce */
	int protocol; /* enum sc_proto */
	uint64_t slice_bytes;
	double proxy_ns, launch_ns, call_ns, net_latency_ns;
	double cpu_frac; /* CPU time to launch a compute phase, as a fraction of it */
	int gpu_queue;   /* stream items the CPU may run ahead by */
	int mtu;
	uint64_t event_max_bytes;
	double event_max_ns;
	/* compute */
	double jitter; /* relative sigma of compute durations */
	int jitter_dist; /* enum sc_jitter_dist */
	double pareto_alpha;
	/* GPT */
	int pp, dp, microbatches;
	double fwd_ns, bwd_ns, optimizer_ns;
	double last_stage_compute; /* the last stage's forward and backward x this (its loss and output layer) */
	uint64_t act_bytes, grad_bytes, tp_bytes;
	int zero; /* 1: reduce-scatter + all-gather; 0: all-reduce */
	int tp;      /* tensor-parallel size (default: the GPUs of a host; more spans hosts) */
	int seq_par; /* sequence parallelism: TP all-gather + reduce-scatter, not all-reduce */
	int zero3;   /* ZeRO-3: per-region parameter all-gathers and gradient reduce-scatters */
	/* MoE */
	int ep, moe_layers;
	double expert_ns, attn_ns;
	uint64_t tokens_bytes;
	double routing_skew;
	/* standalone */
	int pattern;
	int collective_type; /* PAT_COLLECTIVE: a PULSE_HOOK_OP_* */
	uint64_t msg_bytes;
	double gap_ns;
	double delay_ns[64]; /* per rank: extra GPU time before each round */
	/* SimAI/AICB workload file (simai.h) */
	char simai_file[256];
	int simai_gpus;
	double simai_compute_scale, simai_size_scale;
	double simai_compute_ns; /* for phases the file gives as <= 1 ns (not profiled); 0: as given */
	/* fabric: extra paths with reduced capacity (background traffic) */
	int npaths;
	struct { int src_host, src_gpu, dst_host, dst_gpu; double frac; } paths[16];
	struct sc_failure failure; /* the first of failures[] (or none) */
	/* "failures": concurrent faults; "failure" is the one-fault form */
	struct sc_failure failures[SC_MAX_FAILURES];
	int nfailures;
	struct sc_events ev;
};

/* scenario.c */
int sc_scenario_parse(const char *text, size_t len, struct sc_scenario *s, char *err,
		      size_t errlen);
int sc_scenario_load(const char *path, struct sc_scenario *s, char *err, size_t errlen);
int sc_fail_from_name(const char *name);
/* Is failure f active in iteration it (start, end, on/off)? */
int sc_fail_active(const struct sc_failure *f, int it);

/* run.c */
struct sc_stats {
	uint64_t tx_events, polls, hook_records, ops, sim_events, flows, pcap_packets;
	double sim_ns, wall_s;
	long peak_rss_kb;
	int hung;
};
int sc_run(const struct sc_scenario *s, const char *outdir, int pcap, struct sc_stats *st,
	   char *err, size_t errlen);

/* Deterministic random numbers (include/pulse/rng.h). */
static inline uint64_t sc_splitmix(uint64_t *x)
{
	return pulse_splitmix64(x);
}
static inline void sc_rng_seed(struct pulse_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = sc_splitmix(&seed);
}
static inline uint64_t sc_rng_next(struct pulse_rng *r)
{
	return pulse_rng_next(r);
}
/* uniform in [0, 1) */
static inline double sc_rng_unit(struct pulse_rng *r)
{
	return (double)(sc_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline double sc_rng_range(struct pulse_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * sc_rng_unit(r);
}

#endif
