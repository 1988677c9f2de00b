/* pulse-analyzer: issue 16's answers in the text report, the JSON report
 * (and so on the bus and in PostgreSQL, which store the JSON object
 * whole) and the timeline (answers.h). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include <cJSON.h>

#include "answers.h"

void an_answers_print(const struct an_diagnosis *d, FILE *f)
{
	const struct an_share *h = &d->share;
	if (h->valid)
		fprintf(f,
			"    share:    %s, computation %.2f of the excess (%u slowed instances of the host: start "
			"delay %.3f ms, extra active transmission %.3f ms, proxy gaps %.3f ms of which %.3f ms "
			"the host's)\n",
			an_share_label(h), h->comp_share, h->instances, h->delay_ns / 1e6, h->active_ns / 1e6,
			h->gap_ns / 1e6, h->gap_comp_ns / 1e6);
	const struct an_episode *e = &d->ep;
	if (!e->valid)
		return;
	fprintf(f,
		"    pattern:  %s from %.3f s to %.3f s: %u of %u of the GPU's operator instances slowed, its excess "
		"per iteration varied by %.2f of its median, its transfers' worst slowdowns %.1fx their median one, "
		"%u of %u slowed transfers capped at the peak",
		an_pattern_name(e->pattern), (double)e->start_ns / 1e9, (double)e->end_ns / 1e9, e->touched, e->units,
		e->irregularity, e->tail, e->capped, e->xfer_slowed);
	if (e->it_base_ns > 0)
		fprintf(f, "; %u iterations touched (%u..%u, baseline %.3f ms), %.3f ms of training time lost",
			e->it_touched, e->it_first, e->it_last, e->it_base_ns / 1e6, e->cost_ns / 1e6);
	fputc('\n', f);
	if (e->prior >= 0)
		fprintf(f, "    history:  posterior %.3f (implicated in %u of %u earlier jobs, --device-history)\n",
			e->prior, e->prior_hits, e->prior_jobs);
}

static void put_ns(cJSON *o, const char *k, uint64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "%" PRIu64, v);
	cJSON_AddStringToObject(o, k, b);
}

void an_answers_json(const struct an_diagnosis *d, void *obj, void *epobj)
{
	cJSON *o = obj, *ep = epobj;
	const struct an_share *h = &d->share;
	if (h->valid) {
		cJSON *r = cJSON_AddObjectToObject(o, "slow_ratio");
		cJSON_AddNumberToObject(r, "computation_share", h->comp_share);
		cJSON_AddStringToObject(r, "label", an_share_label(h));
		cJSON_AddNumberToObject(r, "start_delay_s", h->delay_ns / 1e9);
		cJSON_AddNumberToObject(r, "active_transmission_s", h->active_ns / 1e9);
		cJSON_AddNumberToObject(r, "proxy_gaps_s", h->gap_ns / 1e9);
		cJSON_AddNumberToObject(r, "proxy_gaps_host_s", h->gap_comp_ns / 1e9);
		cJSON_AddNumberToObject(r, "instances", h->instances);
	} else {
		cJSON_AddNullToObject(o, "slow_ratio");
	}
	const struct an_episode *e = &d->ep;
	if (!e->valid || !ep)
		return;
	put_ns(ep, "start_ns", e->start_ns);
	put_ns(ep, "end_ns", e->end_ns);
	cJSON_AddStringToObject(ep, "pattern", an_pattern_name(e->pattern));
	cJSON_AddNumberToObject(ep, "instances", e->units);
	cJSON_AddNumberToObject(ep, "instances_slowed", e->touched);
	cJSON_AddNumberToObject(ep, "instances_transfer_slowed", e->xfer_slowed);
	cJSON_AddNumberToObject(ep, "instances_peak_capped", e->capped);
	cJSON_AddNumberToObject(ep, "tail", e->tail);
	if (isfinite(e->irregularity))
		cJSON_AddNumberToObject(ep, "irregularity", e->irregularity);
	else
		cJSON_AddNullToObject(ep, "irregularity");
	if (e->it_base_ns > 0) {
		cJSON *it = cJSON_AddObjectToObject(ep, "iterations");
		cJSON_AddNumberToObject(it, "first", e->it_first);
		cJSON_AddNumberToObject(it, "last", e->it_last);
		cJSON_AddNumberToObject(it, "touched", e->it_touched);
		cJSON_AddNumberToObject(it, "baseline_s", e->it_base_ns / 1e9);
		cJSON_AddNumberToObject(ep, "cost_s", e->cost_ns / 1e9);
	} else {
		cJSON_AddNullToObject(ep, "iterations");
		cJSON_AddNullToObject(ep, "cost_s");
	}
	if (e->prior >= 0) {
		cJSON *p = cJSON_AddObjectToObject(ep, "device_history");
		cJSON_AddNumberToObject(p, "posterior", e->prior);
		cJSON_AddNumberToObject(p, "jobs", e->prior_jobs);
		cJSON_AddNumberToObject(p, "jobs_implicated", e->prior_hits);
	}
}

/* the episode as an async span ("b" .. "e", its own track in Perfetto),
 * beside the operators' "X" slices */
void an_answers_timeline(const struct an_diagnosis *d, void *evs, uint64_t base)
{
	const struct an_episode *e = &d->ep;
	if (!e->valid)
		return;
	char b[64];
	snprintf(b, sizeof b, "episode: %s", an_pattern_name(e->pattern));
	for (int end = 0; end < 2; end++) {
		uint64_t t = end ? (e->end_ns > e->start_ns ? e->end_ns : e->start_ns) : e->start_ns;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", b);
		cJSON_AddStringToObject(o, "cat", "diagnosis");
		cJSON_AddStringToObject(o, "ph", end ? "e" : "b");
		cJSON_AddNumberToObject(o, "id", 1);
		cJSON_AddNumberToObject(o, "pid", 0);
		cJSON_AddNumberToObject(o, "tid", 0);
		cJSON_AddNumberToObject(o, "ts", t >= base ? (double)(t - base) / 1e3 : -(double)(base - t) / 1e3);
		if (!end) {
			cJSON *a = cJSON_AddObjectToObject(o, "args");
			an_answers_json(d, a, a);
		}
		cJSON_AddItemToArray(evs, o);
	}
}
