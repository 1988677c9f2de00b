/* pulse-analyzer: building, comparing and keeping diagnoses, shared by
 * every localization method and both localizers. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "answers.h"
#include "localizer.h"
#include "pulse/hook_record.h"

/* ---- diagnoses ---- */

void an_diag_init(struct an_state *s, struct an_diagnosis *d, const char *localizer,
		  const struct an_trigger *t)
{
	memset(d, 0, sizeof *d);
	d->localizer = localizer;
	d->report_ns = s->report_ns ? s->report_ns : s->now_ns;
	d->onset_ns = t->onset_ns;
	snprintf(d->trigger, sizeof d->trigger, "%s", t->why);
}

void an_diag_suspect(const struct an_state *s, struct an_diagnosis *d, int node, int32_t rank)
{
	if (node < 0 || d->nsuspects >= AN_MAX_SUSPECTS)
		return;
	const struct an_node *n = &s->nodes[node];
	for (uint32_t i = 0; i < d->nsuspects; i++)
		if (!strcmp(d->suspects[i].host, s->hosts[n->host].name) && d->suspects[i].gpu == n->gpu)
			return;
	struct an_suspect *x = &d->suspects[d->nsuspects++];
	snprintf(x->host, sizeof x->host, "%s", s->hosts[n->host].name);
	x->gpu = n->gpu;
	x->rank = rank;
}

void an_diag_members(const struct an_state *s, struct an_diagnosis *d, const struct an_comm *c)
{
	d->nmembers = 0;
	for (int32_t i = 0; i < c->nranks && d->nmembers < AN_MAX_MEMBERS; i++) {
		struct an_suspect *x = &d->members[d->nmembers++];
		int node = c->m[i].node;
		if (node >= 0) {
			snprintf(x->host, sizeof x->host, "%s", s->hosts[s->nodes[node].host].name);
			x->gpu = s->nodes[node].gpu;
		} else {
			snprintf(x->host, sizeof x->host, "?");
			x->gpu = -1;
		}
		x->rank = i;
	}
}

void an_diag_margin(struct an_diagnosis *d, double value, double baseline, double threshold)
{
	double m = threshold != baseline ? (value - baseline) / (threshold - baseline) : 0;
	d->margin = isfinite(m) && m > 0 ? m : 0;
	d->score = d->margin / (1.0 + d->margin);
}

const char *an_hang_kind_key(int k)
{
	switch (k) {
	case AN_HANG_NOT_ENTERED: return "not_entered";
	case AN_HANG_INCONSISTENT: return "inconsistent";
	case AN_HANG_STOPPED_IN_COMM: return "stopped_in_comm";
	default: return "";
	}
}

void an_diag_step(struct an_diagnosis *d, const char *fmt, ...)
{
	size_t l = strlen(d->steps);
	if (l + 4 >= sizeof d->steps)
		return;
	if (l) {
		strcat(d->steps, "; ");
		l += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->steps + l, sizeof d->steps - l, fmt, ap);
	va_end(ap);
}

/* The same verdict: localizer, class, level, and the same machine (host:
 * the GPUs of one host wait for each other through TP) or the same group.
 * Used to merge repeated diagnoses and to confirm a fail-slow candidate
 * (trigger.c). */
int an_same_verdict(const struct an_diagnosis *a, const struct an_diagnosis *b)
{
	if (strcmp(a->localizer, b->localizer) || a->cls != b->cls || a->level != b->level)
		return 0;
	if (a->level == AN_LEVEL_MACHINE)
		return a->nsuspects && b->nsuspects && !strcmp(a->suspects[0].host, b->suspects[0].host);
	return a->comm_id == b->comm_id;
}

/* A diagnosis seen again: the same episode, now lasting until d. */
void an_diag_seen_again(struct an_state *s, struct an_diagnosis *e, const struct an_diagnosis *d)
{
	s->st.diag_dups++;
	uint64_t t = d->report_ns ? d->report_ns : s->now_ns;
	if (t > e->last_seen_ns)
		e->last_seen_ns = t;
	if (e->times_seen < UINT32_MAX)
		e->times_seen++;
}

int an_diag_commit(struct an_state *s, const struct an_diagnosis *d)
{
	if (s->tentative) {
		/* a verdict to be confirmed (trigger.c), not a diagnosis yet */
		if (s->ntent < sizeof s->tent / sizeof *s->tent)
			s->tent[s->ntent++] = *d;
		return 0;
	}
	for (uint32_t i = 0; i < s->ndiags; i++)
		if (an_same_verdict(&s->diags[i], d)) {
			if (getenv("PULSE_ANALYZER_DEBUG"))
				fprintf(stderr, "seen again: %s %s %s: %s\n", d->localizer, an_class_name(d->cls),
					d->nsuspects ? d->suspects[0].host : "group", d->why);
			an_diag_seen_again(s, &s->diags[i], d);
			return 0;
		}
	if (s->ndiags >= AN_MAX_DIAG)
		return 0;
	if (s->ndiags == s->diags_cap) {
		uint32_t n = s->diags_cap ? s->diags_cap * 2 : 8;
		struct an_diagnosis *p = realloc(s->diags, n * sizeof *p);
		if (!p)
			return 0;
		s->diags = p;
		s->diags_cap = n;
	}
	struct an_diagnosis *e = &s->diags[s->ndiags++];
	*e = *d;
	e->first_seen_ns = e->last_seen_ns = d->report_ns ? d->report_ns : s->now_ns;
	e->times_seen = 1;
	an_answers_fill(s, e); /* issue 16: reads the state, names nothing */
	an_log(s, "diagnosis (%s): %s, %s", d->localizer, an_class_name(d->cls),
	       d->level == AN_LEVEL_MACHINE ? "machine level" : "group level");
	return 1;
}

const char *an_par_label(uint8_t p)
{
	switch (p) {
	case PULSE_PAR_DP: return "DP";
	case PULSE_PAR_TP: return "TP";
	case PULSE_PAR_PP: return "PP";
	case PULSE_PAR_EP: return "EP";
	case PULSE_PAR_NONE: return "small-volume";
	default: return "unlabelled";
	}
}

void an_diag_evidence(struct an_diagnosis *d, const struct an_comm *c, const struct an_rec *r,
		     const char *metric, double value, double median, uint32_t nranks)
{
	d->comm_id = c->id;
	d->seq = r ? r->seq : 0;
	d->op = r ? r->op : 0;
	snprintf(d->metric, sizeof d->metric, "%s", metric);
	d->value = value;
	d->median = median;
	d->evidence_ranks = nranks;
}
