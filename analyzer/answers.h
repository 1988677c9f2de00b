/* pulse-analyzer: the answers an operator asks for after "which machine"
 * (issue 16), computed from the analyzer state for a diagnosis already
 * made. None of them changes which machine is named or raises a verdict:
 * they only fill d->share and d->ep.
 *
 *   excess.c          the implicated node's operator instances, each with
 *                     its time split three ways (start delay, active
 *                     transmission, proxy gaps) and its excess over its own
 *                     history or, without one, its instance's peers
 *   slow_ratio.c      CCL-D's slow ratio from those: computation's share
 *   episode.c         Holmes's episodes: start, end, pattern, iterations
 *                     touched, training time lost
 *   device_history.c  Holmes §4.4's per-device prior across jobs (a file) */
#ifndef PULSE_ANALYZER_ANSWERS_H
#define PULSE_ANALYZER_ANSWERS_H

#include <stdint.h>
#include <stdio.h>

#include "an_internal.h"

/* One operator instance as the implicated node lived it. */
struct an_unit {
	uint64_t t0, t1;         /* its call (or first byte) .. its last byte, data time */
	uint64_t comm, seq;
	int sig;
	uint32_t iter, ord;      /* its iteration, and its place among its signature's instances there */
	double launch;           /* the later of the call and the node's previous operator's end, to
	                          * the first byte: the computation before it (ns) */
	double active;           /* the slowest of its transfers (sent or received): active epochs (ns) */
	double gaps;             /* that transfer's wire time minus its active epochs (ns) */
	double peak;             /* that transfer's most bytes in one epoch (0: not measured) */
	int capped;              /* slowed, and its peak epoch fell below its baseline's too */
	int sent;                /* that transfer is one the node sent (else one it received) */
	/* excess over the baseline, 0 when within the noise threshold */
	double x_launch, x_active, x_gaps;
	int base;                /* 1: own history, 2: the instance's peers, 0: none */
};

struct an_units {
	struct an_unit *u;       /* sorted by t0 */
	uint32_t n, cap;
};

/* The instances of the given nodes (the suspects of one host) in every
 * communicator, each judged against the first 16 instances of the same
 * operator at the same place in their iterations that ended before min(its start, before) (a fault that
 * persists does not become its own baseline, nor one that began before its
 * first evidence), else against the median of
 * the same instance's other ranks. A component counts as excess when it
 * lies more than three robust standard deviations (1.4826 MAD) and one
 * epoch (the measurement's resolution) above the baseline's median.
 * Returns 0, -1 out of memory. */
int an_units_build(const struct an_state *s, const int *nodes, uint32_t nnodes, uint64_t before,
		   struct an_units *out);
void an_units_free(struct an_units *u);
/* median and median absolute deviation of v[0..n) (0, 0 when empty) */
void an_med_mad(const double *v, size_t n, double *med, double *mad);
/* a unit with any excess */
int an_unit_touched(const struct an_unit *u);

/* ---- slow_ratio.c: CCL-D's slow ratio ---- */

/* The excess split three ways and computation's share of it. Proxy gaps
 * come in two kinds: `gaps_host`, in transfers the implicated GPU sent
 * whose peak epoch still reached its usual one (the path could carry them
 * at full rate: its own CPU or proxy did not feed it), are the host's,
 * computation; `gaps_shared`, in transfers it received or whose path was
 * capped, follow the evidence of the GPU's own ends: the host's in the
 * proportion its start delay plus its host gaps bear to those plus the
 * extra active time (all when none moved). A sent transfer on such a path that stopped more than it slowed
 * (its extra gaps at least its extra active time) was starved by its host:
 * its extra active time counts with its gaps (a proxy that stalls
 * mid-epoch stretches the active epochs too). CCL-D's ratio, which sees
 * only operator times, calls CPU starvation communication. */
void an_share_split(double delay, double active, double gaps_host, double gaps_shared, struct an_share *out);
/* CCL-D's bounds α = 0.4, β = 0.6: "computation", "communication", "mixed";
 * "" when there was no excess to split */
const char *an_share_label(const struct an_share *sh);
/* Fills d->share from the units within [t0, t1]. */
void an_share_from_units(const struct an_units *u, uint64_t t0, uint64_t t1, struct an_share *out);

/* ---- episode.c: Holmes's episodes ---- */

/* The pattern of an episode, from the implicated GPUs' excess per
 * iteration (its irregularity: 1.4826 MAD / median over the episode's
 * iterations, those without excess as 0) and, within the operators, from
 * the transfers slowed in their active time: the tail of their slowdowns
 * (90th percentile of the relative extra active time over its median),
 * how many were slowed (`xfer_slowed`) and how many of them had their peak
 * epoch fall below its usual too (`capped`):
 *   spike:       irregular from one iteration to the next (> 1/2), or
 *                within them: a few transfers slowed four times as much
 *                as the typical slowed one (it strikes hard now and then;
 *                Holmes's abnormal spike);
 *   persistent:  otherwise, when the slowdown held through whole transfers
 *                (at least one in five slowed transfers capped at their
 *                peak), or no transfer slowed (computation);
 *   fluctuation: the rest: steady from one iteration to the next, yet the
 *                rate kept coming back to its usual peak within the
 *                transfers: it comes and goes faster than an operator.
 * NONE when irregularity is NAN (nothing to judge). */
int an_pattern_of(double irregularity, double tail, uint32_t xfer_slowed, uint32_t capped);
const char *an_pattern_name(int p);   /* "spike", "fluctuation", "persistent", "" */

/* Iteration times: the ends of the signature with the longest median
 * period (it comes once per iteration). ends[] sorted; returns the count
 * (at most cap). */
uint32_t an_iteration_ends(const struct an_state *s, uint64_t *ends, uint32_t cap);
/* Touched iterations and cost over [t0, t1] of the series ends[0..n):
 * iteration i spans (ends[i-1], ends[i]]; its excess is its length minus the
 * baseline (median of the iterations before t0, else of those outside
 * [t0, t1]; at least two); touched when above three robust standard deviations and
 * `floor_ns`. Fills ep's iteration fields. */
void an_episode_iterations(const uint64_t *ends, uint32_t n, uint64_t t0, uint64_t t1, double floor_ns,
			   struct an_episode *ep);
/* Fills d->ep from the units (already built for d's host). */
void an_episode_from_units(const struct an_state *s, const struct an_units *u, const struct an_diagnosis *d,
			   struct an_episode *ep);

/* ---- the whole: both answers for one diagnosis, or all of them ---- */

/* d must be a fail-slow machine-level diagnosis of s; others are left
 * unchanged (share.valid = ep.valid = 0). */
void an_answers_fill(const struct an_state *s, struct an_diagnosis *d);
/* Every diagnosis again over all the data (end of a replay or a live run). */
void an_answers_update(struct an_state *s);

/* ---- device_history.c: Holmes §4.4's per-device prior across jobs ---- */

struct an_devhost {
	char name[PULSE_OP_HOST_LEN];
	uint32_t jobs;           /* jobs whose analysis saw it */
	uint32_t hits;           /* of those, jobs with a machine-level Pulse diagnosis naming it */
	uint32_t episodes;       /* such diagnoses */
	double weight;           /* Σ over jobs of 1 - Π(1 - score) of its diagnoses there */
};
struct an_devhist {
	struct an_devhost *h;
	uint32_t n, cap;
	uint64_t bad_lines;      /* lines of the file that were dropped */
	uint32_t jobs_added;
};
void an_devhist_init(struct an_devhist *h);
void an_devhist_free(struct an_devhist *h);
/* The file's text (format: device_history.c). A bad header is an error
 * (-1, err set): a file that is not a history is not overwritten; a bad
 * record line is dropped and counted (bad_lines). */
int an_devhist_parse(struct an_devhist *h, const char *text, size_t len, char *err, size_t errlen);
/* Reads path (absent: an empty history). */
int an_devhist_load(struct an_devhist *h, const char *path, char *err, size_t errlen);
/* Folds this job in (every host the analyzer saw; the machine-level Pulse
 * diagnoses naming each) and sets each diagnosis's ep.prior (the posterior
 * after it), prior_jobs and prior_hits (the earlier jobs). */
void an_devhist_add_job(struct an_devhist *h, struct an_state *s);
/* The posterior of a Beta(α p, α (1 - p)) prior with the host's weight
 * over its jobs: (weight + α p) / (jobs + α) */
double an_devhist_posterior(const struct an_devhost *x);
/* Sorts by posterior, highest first. */
void an_devhist_rank(struct an_devhist *h);
/* Writes path through a temporary file and a rename. */
int an_devhist_save(const struct an_devhist *h, const char *path, char *err, size_t errlen);
/* The top implicated hosts as text, and as a cJSON array (void *). */
void an_devhist_print(const struct an_devhist *h, FILE *f, uint32_t top);
void *an_devhist_json(const struct an_devhist *h, uint32_t top);

/* ---- answers_report.c: how the reports show them ---- */

/* "share:" and "episode:" lines of the text report (nothing when invalid) */
void an_answers_print(const struct an_diagnosis *d, FILE *f);
/* "slow_ratio" into the diagnosis object o, the episode's fields into its
 * "episode" object ep (both cJSON *) */
void an_answers_json(const struct an_diagnosis *d, void *o, void *ep);
/* the episode as a Chrome trace-event async span ("b" .. "e"), with the
 * slow ratio in its args, into the array ev (cJSON *); base: the trace's
 * time origin */
void an_answers_timeline(const struct an_diagnosis *d, void *ev, uint64_t base);

#endif
