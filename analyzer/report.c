/* pulse-analyzer: the diagnosis as text (for a cluster operator) and as
 * JSON (--json, libcjson). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "an_internal.h"
#include "critical_path.h"
#include "answers.h"
#include "direction.h"

static const char *level_name(int l)
{
	return l == AN_LEVEL_MACHINE ? "machine" : l == AN_LEVEL_GROUP ? "group" : "none";
}

static const char *class_key(int c)
{
	switch (c) {
	case AN_COMP_SLOW: return "comp-slow";
	case AN_COMP_STOP: return "comp-stop";
	case AN_COMM_SLOW: return "comm-slow";
	case AN_COMM_STOP: return "comm-stop";
	default: return "none";
	}
}

static void print_where(const struct an_diagnosis *d, FILE *f)
{
	if (d->level == AN_LEVEL_MACHINE) {
		for (uint32_t i = 0; i < d->nsuspects; i++) {
			const struct an_suspect *x = &d->suspects[i];
			fprintf(f, "%s%s", i ? (i + 1 == d->nsuspects ? " or " : ", ") : "", x->host);
			if (x->gpu >= 0)
				fprintf(f, " GPU %d", x->gpu);
		}
	} else {
		fprintf(f, "one of %u ranks: ", d->nmembers);
		for (uint32_t i = 0; i < d->nmembers && i < 16; i++) {
			const struct an_suspect *x = &d->members[i];
			fprintf(f, "%s%s", i ? ", " : "", x->host);
			if (x->gpu >= 0)
				fprintf(f, " GPU %d", x->gpu);
		}
		if (d->nmembers > 16)
			fprintf(f, ", ...");
	}
}

static void fmt_value(char *buf, size_t n, const char *metric, double v)
{
	if (strstr(metric, "_ns"))
		snprintf(buf, n, "%.3f ms", v / 1e6);
	else if (strstr(metric, "bytes"))
		snprintf(buf, n, "%.1f MB", v / 1e6);
	else if (strstr(metric, "gbps"))
		snprintf(buf, n, "%.1f Gb/s", v);
	else
		snprintf(buf, n, "%.3g", v);
}

void an_diag_print(const struct an_diagnosis *d, FILE *f)
{
	fprintf(f, "%s at %s level: ", an_class_name(d->cls), level_name(d->level));
	print_where(d, f);
	fputc('\n', f);
	if (d->why[0])
		fprintf(f, "    why:      %s\n", d->why);
	if (!strcmp(d->metric, "status") || !strcmp(d->metric, "call")) {
		fprintf(f, "    evidence: %s #%" PRIu64 " on communicator 0x%016" PRIx64 " (%s)\n",
			pulse_op_type_name(d->op), d->seq, d->comm_id,
			!strcmp(d->metric, "call") ? "calls compared across its ranks"
						  : "every rank started it, none finished");
	} else if (d->metric[0] && (!strcmp(d->metric, "extended_groups") || !strcmp(d->metric, "late_first_byte_votes") || !strcmp(d->metric, "incomplete_p2p"))) {
		fprintf(f, "    evidence: %s #%" PRIu64 " on communicator 0x%016" PRIx64 ", %s: %.0f of %.0f\n",
			pulse_op_type_name(d->op), d->seq, d->comm_id, d->metric, d->value, d->median);
	} else if (d->metric[0]) {
		char a[48], b[48];
		fmt_value(a, sizeof a, d->metric, d->value);
		fmt_value(b, sizeof b, d->metric, d->median);
		fprintf(f, "    evidence: %s #%" PRIu64 " on communicator 0x%016" PRIx64 ", %s = %s (group median / "
			   "usual: %s)\n",
			pulse_op_type_name(d->op), d->seq, d->comm_id, d->metric, a, b);
	}
	if (d->hang_kind)
		fprintf(f, "    hang:     %s%s\n", an_hang_kind_key(d->hang_kind),
			d->stall_ns ? " (it ended: a stall)" : "");
	if (d->stall_ns)
		fprintf(f, "    stall:    %.3f s\n", (double)d->stall_ns / 1e9);
	if (d->margin > 0)
		fprintf(f, "    score:    %.2f (evidence %.2fx as far from the baseline as the rule's threshold)\n",
			d->score, d->margin);
	if (d->times_seen > 1)
		fprintf(f, "    episode:  seen %u times over %.2f s of data\n", d->times_seen,
			(double)(d->last_seen_ns - d->first_seen_ns) / 1e9);
	an_answers_print(d, f);
	if (d->steps[0])
		fprintf(f, "    steps:    %s\n", d->steps);
	if (d->trigger[0])
		fprintf(f, "    trigger:  %s\n", d->trigger);
	if (d->onset_ns && d->report_ns >= d->onset_ns)
		fprintf(f, "    latency:  reported %.2f s after the first evidence of the anomaly\n",
			(double)(d->report_ns - d->onset_ns) / 1e9);
}

static const struct an_diagnosis *first_of(const struct an_state *s, const char *loc)
{
	for (uint32_t i = 0; i < s->ndiags; i++)
		if (!strcmp(s->diags[i].localizer, loc))
			return &s->diags[i];
	return NULL;
}

void an_report_text(const struct an_state *s, FILE *f)
{
	const struct an_diagnosis *p = first_of(s, "pulse"), *o = first_of(s, "op-level");
	fprintf(f, "== Diagnosis\n\n");
	fprintf(f, "Pulse (µs-level NIC measurements + operator data):\n  ");
	if (p) {
		an_diag_print(p, f);
		struct an_where w;
		if (an_where_find(s, p, &w)) {
			char line[400];
			an_where_format(&w, line, sizeof line);
			fprintf(f, "    where:    %s\n", line);
		}
		const struct an_dir_entry *de = an_dir_of(s, (uint32_t)(p - s->diags));
		if (de)
			an_dir_print(de, f);
	} else
		fprintf(f, "no anomaly localized\n");
	fprintf(f, "\nOP-level baseline (operator start, end, duration, volume/duration only):\n  ");
	if (o)
		an_diag_print(o, f);
	else
		fprintf(f, "no anomaly localized\n");
	uint32_t more = 0;
	for (uint32_t i = 0; i < s->ndiags; i++)
		more += &s->diags[i] != p && &s->diags[i] != o;
	if (more) {
		fprintf(f, "\nLater diagnoses (%u):\n", more);
		for (uint32_t i = 0; i < s->ndiags; i++) {
			if (&s->diags[i] == p || &s->diags[i] == o)
				continue;
			fprintf(f, "  [%s] ", s->diags[i].localizer);
			an_diag_print(&s->diags[i], f);
		}
	}
	struct an_counters c;
	an_get_counters(s, &c);
	fprintf(f, "\nInput: %" PRIu64 " lines (%" PRIu64 " used, %" PRIu64 " ignored, %" PRIu64
		   " malformed), %" PRIu64 " operator records from %u hosts, %u GPUs, %u communicators; "
		   "triggers: %" PRIu64 " slow, %" PRIu64 " hang; fail-slow candidates: %" PRIu64 " confirmed, %" PRIu64
		   " not confirmed\n",
		c.lines, c.used, c.ignored, c.malformed, c.ops, c.hosts, c.nodes, c.comms, c.triggers_slow,
		c.triggers_hang, c.confirmed, c.unconfirmed);
	if (c.op_unknown_comm || c.op_bad_rank || c.op_skew || c.op_dup)
		fprintf(f, "Dropped records: %" PRIu64 " unknown communicator, %" PRIu64 " bad rank, %" PRIu64
			   " clock skew, %" PRIu64 " duplicate\n",
			c.op_unknown_comm, c.op_bad_rank, c.op_skew, c.op_dup);
	if (s->nfindings)
		fprintf(f, "Configuration findings from the agents (found before anything went wrong):\n");
	for (uint32_t i = 0; i < s->nfindings; i++) {
		const struct pulse_config_finding *x = &s->findings[i];
		fprintf(f, "  %s: %s on %s%s%s: %s\n", x->host, x->kind, x->nic, x->gpu[0] ? ", GPU " : "", x->gpu,
			x->detail);
	}
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (s->hosts[i].skewed)
			fprintf(f, "Host %s: clock %.1f ms off the others (bound %.1f ms); %" PRIu64
				   " of its records dropped\n",
				s->hosts[i].name, (double)s->hosts[i].skew_ns / 1e6,
				(double)s->cfg.skew_bound_ns / 1e6, s->hosts[i].dropped_skew);
}

static cJSON *suspect_json(const struct an_suspect *x)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "host", x->host);
	cJSON_AddNumberToObject(o, "gpu", x->gpu);
	cJSON_AddNumberToObject(o, "rank", x->rank);
	return o;
}

static cJSON *diag_json(const struct an_diagnosis *d);

void *an_diag_json(const struct an_diagnosis *d)
{
	return diag_json(d);
}

/* A diagnosis with where in the iteration it lies (VenusTrace's stage and
 * critical path, an_where_find): as the report lists every diagnosis, and
 * as the bus publishes it for the store (issue 16: each answer goes in the
 * stored diagnosis too). */
static cJSON *diag_json_where(const struct an_state *s, const struct an_diagnosis *d)
{
	cJSON *o = diag_json(d);
	struct an_where w;
	an_where_find(s, d, &w);
	if (o)
		cJSON_AddItemToObject(o, "where", an_where_json(&w));
	return o;
}

void *an_diag_json_answers(const struct an_state *s, const struct an_diagnosis *d)
{
	return diag_json_where(s, d);
}

static cJSON *diag_json(const struct an_diagnosis *d)
{
	cJSON *o = cJSON_CreateObject();
	char buf[32];
	cJSON_AddStringToObject(o, "localizer", d->localizer);
	cJSON_AddStringToObject(o, "class", class_key(d->cls));
	cJSON_AddStringToObject(o, "class_name", an_class_name(d->cls));
	cJSON_AddStringToObject(o, "level", level_name(d->level));
	cJSON *a = cJSON_AddArrayToObject(o, "suspects");
	for (uint32_t i = 0; i < d->nsuspects; i++)
		cJSON_AddItemToArray(a, suspect_json(&d->suspects[i]));
	cJSON *m = cJSON_AddArrayToObject(o, "members");
	for (uint32_t i = 0; i < d->nmembers; i++)
		cJSON_AddItemToArray(m, suspect_json(&d->members[i]));
	cJSON *e = cJSON_AddObjectToObject(o, "evidence");
	snprintf(buf, sizeof buf, "0x%016" PRIx64, d->comm_id);
	cJSON_AddStringToObject(e, "comm_id", buf);
	cJSON_AddNumberToObject(e, "seq", (double)d->seq);
	cJSON_AddStringToObject(e, "op", pulse_op_type_name(d->op));
	cJSON_AddStringToObject(e, "metric", d->metric);
	cJSON_AddNumberToObject(e, "value", d->value);
	cJSON_AddNumberToObject(e, "median", d->median);
	cJSON_AddNumberToObject(e, "ranks_compared", d->evidence_ranks);
	if (d->hang_kind)
		cJSON_AddStringToObject(o, "hang_kind", an_hang_kind_key(d->hang_kind));
	else
		cJSON_AddNullToObject(o, "hang_kind");
	if (d->stall_ns)
		cJSON_AddNumberToObject(o, "stall_s", (double)d->stall_ns / 1e9);
	else
		cJSON_AddNullToObject(o, "stall_s");
	cJSON_AddNumberToObject(o, "score", d->score);
	cJSON_AddNumberToObject(o, "margin", d->margin);
	cJSON *ep = cJSON_AddObjectToObject(o, "episode");
	snprintf(buf, sizeof buf, "%" PRIu64, d->first_seen_ns);
	cJSON_AddStringToObject(ep, "first_seen_ns", buf);
	snprintf(buf, sizeof buf, "%" PRIu64, d->last_seen_ns);
	cJSON_AddStringToObject(ep, "last_seen_ns", buf);
	cJSON_AddNumberToObject(ep, "times_seen", d->times_seen);
	an_answers_json(d, o, ep);
	cJSON_AddStringToObject(o, "why", d->why);
	cJSON_AddStringToObject(o, "steps", d->steps);
	cJSON_AddStringToObject(o, "trigger", d->trigger);
	snprintf(buf, sizeof buf, "%" PRIu64, d->onset_ns);
	cJSON_AddStringToObject(o, "onset_ns", buf);
	snprintf(buf, sizeof buf, "%" PRIu64, d->report_ns);
	cJSON_AddStringToObject(o, "report_ns", buf);
	if (d->onset_ns && d->report_ns >= d->onset_ns)
		cJSON_AddNumberToObject(o, "latency_s", (double)(d->report_ns - d->onset_ns) / 1e9);
	else
		cJSON_AddNullToObject(o, "latency_s");
	return o;
}

/* the direction and the series fetched for it (series_fetch.c), if any */
static cJSON *with_direction(const struct an_state *s, const struct an_diagnosis *d, cJSON *o, int epochs)
{
	const struct an_dir_entry *e = an_dir_of(s, (uint32_t)(d - s->diags));
	if (e)
		cJSON_AddItemToObject(o, "direction", an_dir_json(e, epochs));
	return o;
}

void *an_report_json(const struct an_state *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "format", "pulse-analyzer-report");
	cJSON_AddNumberToObject(o, "version", 1);
	const struct an_diagnosis *p = first_of(s, "pulse"), *q = first_of(s, "op-level");
	if (p) {
		cJSON_AddItemToObject(o, "pulse", with_direction(s, p, diag_json_where(s, p), 0));
	} else
		cJSON_AddNullToObject(o, "pulse");
	if (q)
		cJSON_AddItemToObject(o, "op_level", diag_json(q));
	else
		cJSON_AddNullToObject(o, "op_level");
	cJSON *all = cJSON_AddArrayToObject(o, "diagnoses");
	for (uint32_t i = 0; i < s->ndiags; i++)
		cJSON_AddItemToArray(all, with_direction(s, &s->diags[i], diag_json_where(s, &s->diags[i]), 1));
	struct an_counters c;
	an_get_counters(s, &c);
	cJSON *st = cJSON_AddObjectToObject(o, "input");
	cJSON_AddNumberToObject(st, "lines", (double)c.lines);
	cJSON_AddNumberToObject(st, "used", (double)c.used);
	cJSON_AddNumberToObject(st, "ignored", (double)c.ignored);
	cJSON_AddNumberToObject(st, "malformed", (double)c.malformed);
	cJSON_AddNumberToObject(st, "op_records", (double)c.ops);
	cJSON_AddNumberToObject(st, "dropped_unknown_comm", (double)c.op_unknown_comm);
	cJSON_AddNumberToObject(st, "dropped_bad_rank", (double)c.op_bad_rank);
	cJSON_AddNumberToObject(st, "dropped_clock_skew", (double)c.op_skew);
	cJSON_AddNumberToObject(st, "dropped_duplicate", (double)c.op_dup);
	cJSON_AddNumberToObject(st, "hosts", c.hosts);
	cJSON_AddNumberToObject(st, "gpus", c.nodes);
	cJSON_AddNumberToObject(st, "communicators", c.comms);
	cJSON_AddNumberToObject(st, "triggers_slow", (double)c.triggers_slow);
	cJSON_AddNumberToObject(st, "triggers_hang", (double)c.triggers_hang);
	cJSON_AddNumberToObject(st, "candidates_confirmed", (double)c.confirmed);
	cJSON_AddNumberToObject(st, "candidates_unconfirmed", (double)c.unconfirmed);
	cJSON *cf = cJSON_AddArrayToObject(o, "config_findings");
	for (uint32_t i = 0; i < s->nfindings; i++) {
		const struct pulse_config_finding *x = &s->findings[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "host", x->host);
		cJSON_AddStringToObject(e, "kind", x->kind);
		cJSON_AddStringToObject(e, "nic", x->nic);
		if (x->gpu[0])
			cJSON_AddStringToObject(e, "gpu", x->gpu);
		else
			cJSON_AddNullToObject(e, "gpu");
		cJSON_AddStringToObject(e, "detail", x->detail);
		cJSON_AddItemToArray(cf, e);
	}
	cJSON *sk = cJSON_AddArrayToObject(st, "skewed_hosts");
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (s->hosts[i].skewed)
			cJSON_AddItemToArray(sk, cJSON_CreateString(s->hosts[i].name));
	return o;
}
