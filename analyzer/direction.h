/* pulse-analyzer: which direction in the network (issue 16, part 3;
 * Vedrfolnir's question, answered from the hosts' µs per-QP series instead
 * of switch telemetry).
 *
 *   series_fetch.c  fetches the retained per-QP epoch series of the
 *                   suspect's host and its peers around a diagnosis (live:
 *                   SERIES_REQ frames; replay: the agent's --series-query,
 *                   the same answer and codec) and keeps it with the
 *                   diagnosis (an_state.dirs)
 *   direction.c     decides the direction from the series: sender-limited,
 *                   receiver-limited, egress or path */
#ifndef PULSE_ANALYZER_DIRECTION_H
#define PULSE_ANALYZER_DIRECTION_H

#include <stdint.h>
#include <stdio.h>

#include "pulse/op_record.h"
#include "pulse/qp_series_wire.h"

/* One QP's epochs in the fetched range, its windows merged. */
struct an_qpseries {
	char host[PULSE_OP_HOST_LEN];        /* the sending host (whose agent answered) */
	char dev[PULSE_QPS_DEV_LEN];
	uint32_t qpn;
	int32_t gpu;                         /* the sending GPU (analyzer's mapping), -1 unknown */
	char remote_host[PULSE_OP_HOST_LEN]; /* "" unknown */
	int32_t remote_gpu;
	uint32_t epoch_ns;
	uint32_t n, cap;
	uint64_t *t_ns;                      /* epoch starts, host time, increasing */
	uint64_t *bytes;
};

/* Bounds on what a diagnosis fetches: hosts asked (the suspects first),
 * and diagnoses that get series at all (each answer is at most the payload
 * bound, 4 MiB: 32 x 4 MiB per diagnosis at worst). */
#define AN_SERIES_HOSTS 32
#define AN_DIR_MAX 16
struct an_series_host {
	char host[PULSE_OP_HOST_LEN];
	int answered;                        /* 0: no answer (not connected, failed) */
	uint8_t status;                      /* enum pulse_qps_status */
	uint64_t oldest_ns, evicted;
	uint32_t segs, left_out;
	char err[96];
};

struct an_series_set {
	uint64_t from_ns, to_ns, onset_ns;
	const char *source;                  /* "replay" (agent --series-query) or "live" (SERIES) */
	uint32_t nhosts;
	struct an_series_host hosts[AN_SERIES_HOSTS];
	uint32_t nq, capq;
	struct an_qpseries *q;
};

enum an_dir_label {
	AN_DIR_NONE = 0,     /* not analyzed (no series) */
	AN_DIR_SENDER = 1,   /* the suspect's QPs slow towards every peer, and into it too: its host side */
	AN_DIR_RECEIVER = 2, /* every sender's QPs towards the suspect slow, its own sends normal: incast */
	AN_DIR_EGRESS = 3,   /* the suspect's QPs slow towards every peer, what it receives normal */
	AN_DIR_PATH = 4,     /* some pairs slow, the suspect's other pairs normal */
	AN_DIR_UNCLEAR = 5,  /* series present, no pair stands out of the noise */
};
const char *an_dir_label_key(int label); /* "sender-limited", ... "" */

struct an_dir_pair {
	char host[PULSE_OP_HOST_LEN], peer[PULSE_OP_HOST_LEN];
	int32_t gpu, peer_gpu;
	int out;             /* 1: the suspect sends on it, 0: it receives */
	double shift;        /* ln(after/before) of the pair's high-quantile epoch bytes */
	double z;            /* (reference - shift) / sigma: > AN_DIR_Z is slow */
	uint32_t qps;
};

#define AN_DIR_PAIRS 32
struct an_direction {
	int label;
	char host[PULSE_OP_HOST_LEN];
	int32_t gpu;
	double sigma, reference;  /* noise scale and median shift of the pairs not touching the suspect */
	uint32_t n_rest;          /* those pairs */
	uint32_t out_pairs, out_slow, in_pairs, in_slow;
	uint32_t npairs;
	struct an_dir_pair pairs[AN_DIR_PAIRS]; /* the suspect's, slowest first */
	char why[320];
};

/* A pair is slow when its shift lies this many noise scales below the
 * reference: three robust standard deviations, the usual outlier bound. */
#define AN_DIR_Z 3.0

/* Decides the direction around the suspect (host, gpu; gpu -1: the whole
 * host) from the series: each QP's high-quantile epoch bytes after the
 * onset against before it. Returns the label (also in out->label). */
int an_direction_classify(const struct an_series_set *ss, const char *host, int32_t gpu,
			  struct an_direction *out);

/* Adds a decoded SERIES answer to the set (merging each QP's windows).
 * gpu_of maps a local QP to its GPU (NULL or -1: unknown). 0, or -1 out of
 * memory. */
int an_series_add(struct an_series_set *ss, const struct pulse_qps_resp *r,
		  int32_t (*gpu_of)(void *ctx, const char *host, const char *dev, uint32_t qpn),
		  void *ctx);
void an_series_free(struct an_series_set *ss);

/* One diagnosis' series and direction, kept in the analyzer state. */
struct an_dir_entry {
	uint32_t diag;            /* index into an_state.diags */
	int pending;              /* live: answers still expected */
	uint32_t req_id;
	uint64_t asked_mono;      /* live: when SERIES_REQ went out (monotonic ns) */
	struct an_series_set ss;
	struct an_direction dir;
};

struct an_state;
struct an_diagnosis;
struct an_replay_opts;
/* The diagnoses the direction applies to: communication fail-slow. */
int an_direction_wanted(const struct an_diagnosis *d);
/* The range and the hosts to fetch for diagnosis i (its suspects' hosts and
 * every host sharing a communicator with them). Creates the entry. */
struct an_dir_entry *an_dir_begin(struct an_state *s, uint32_t i);
/* Classifies the entry from what it has (also when some hosts never answered). */
void an_dir_finish(struct an_state *s, struct an_dir_entry *e);
/* The entry of diagnosis i, or NULL. */
const struct an_dir_entry *an_dir_of(const struct an_state *s, uint32_t i);
void an_dir_free_all(struct an_state *s);
/* Replay: every wanted diagnosis gets its series from
 * `pulse-host-agent --replay DIR --host H --series-query ...`. */
void an_dir_fetch_replay(struct an_state *s, const struct an_replay_opts *o, const char *agent_bin,
			 const char *outdir);
/* Live: analyzer.h's an_series_* (the service's side of the fetch). */

/* JSON (cJSON *, as void *): {"label", "host", "gpu", "why", "pairs", "series": {...}} */
void *an_dir_json(const struct an_dir_entry *e, int with_epochs);
void an_dir_print(const struct an_dir_entry *e, FILE *f);

#endif
