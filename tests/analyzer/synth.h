/* Synthetic operator records for the analyzer's unit tests: a small job of
 * n ranks (one per host) that alternates compute and one communication
 * operator per iteration, with the effects the paper describes for each
 * failure (pulse.txt §6.1, §6.2, §7.2), written as agent JSON lines through
 * the real codec (pulse_op_record_to_json) and fed to an_ingest. */
#ifndef PULSE_TEST_ANALYZER_SYNTH_H
#define PULSE_TEST_ANALYZER_SYNTH_H

#include <stdint.h>

#include "analyzer.h"

#define SYN_MAX 8
#define SYN_MAX_HOSTS 32

enum syn_hang { SYN_HANG_NONE = 0, SYN_HANG_COMM = 1, SYN_HANG_COMP = 2 };

struct syn {
	int n;                       /* ranks (one host each: host0..) */
	int custom;                  /* 1: all-to-all as a group of P2Ps (EP); 0: ring all-reduce (DP) */
	int iters;
	int fail_iter;               /* the failure's effects start at this iteration */
	double period_ms;            /* iteration length before any failure */
	double compute_ms;           /* compute before the operator */
	uint64_t bytes;              /* per rank */
	double rate_gbps;            /* link rate */
	/* failure effects, from fail_iter on, per rank */
	double slow_rate[SYN_MAX];   /* 0: normal; else this rank's link rate (Gb/s) */
	double extra_compute_ms[SYN_MAX];
	double cpu_delay_ms[SYN_MAX];/* proxy thread: extends the operator, delays first bytes */
	double gap_ms[SYN_MAX];      /* custom: receiver-induced gaps (not the rank's fault), all iterations */
	double xfer_slow[SYN_MAX];   /* custom: every transfer to or from this rank this fraction slower
				      * (its path), from fail_iter on */
	int xfer_slow_cycle;         /* 0: every iteration; c: the first two of every c iterations from
				      * fail_iter on only (a fault that comes and goes) */
	double recv_post_ms[SYN_MAX];/* custom: this rank's proxy posts its receive buffers late: the
				      * other ranks' transfers to it start (and end) this much after
				      * their first byte, from fail_iter on */
	double peak_cap[SYN_MAX];    /* this rank's NIC peaks at this fraction of its line rate in an
				      * epoch, from fail_iter on (0: full), while its averages stay
				      * paced like its peers' (a ring is as fast as its slowest link) */
	int hang;                    /* enum syn_hang, at fail_iter */
	int hang_rank;
	double jitter_ms;            /* deterministic compute jitter amplitude */
	int skew_host;               /* -1 none; else that host's clock is off by skew_ms */
	double skew_ms;
	uint64_t comm_id;
	int emit_map;                /* emit hook_map lines first */
	int ncomms;                  /* sibling groups (same schedule, other hosts); failures hit group 0 */
	double clock_err_ms;         /* every host's agent maps its NIC clock to within this (a window
				      * line per host first; 0: none sent) */
};

/* 1: syn_run hands the records to an_ingest_op through the binary codec
 * (the live wire's path) instead of JSON lines to an_ingest */
extern int syn_binary;

void syn_default(struct syn *s);
/* Runs the job through a fresh analyzer (cfg NULL: defaults); the caller
 * frees it. */
struct an_state *syn_run(const struct syn *s, const struct an_cfg *cfg);
/* Writes the job as a run directory: DIR/cluster.json and the agents'
 * output DIR/agent/host<r>.jsonl (for --replay). Returns 0 or -1. */
int syn_write_dir(const struct syn *s, const char *dir);
/* The first diagnosis of a localizer ("pulse" / "op-level"), or NULL. */
const struct an_diagnosis *syn_first(const struct an_state *st, const char *localizer);

#define SYN_T0 1700000000000000000ull

#endif
