/* pulse-analyzer: Chrome trace-event export of the window around a
 * diagnosis (opens in https://ui.perfetto.dev and chrome://tracing).
 *
 *   pid = host (process_name metadata), tid = GPU (thread_name "GPU g")
 *   "X" slices: each rank's operators, from the call to the last byte (hung
 *       ones to the report time), args: communicator, rank, status, first
 *       byte, actual time, volumes;
 *   "C" counters, per GPU: the operator's actual transmit rate (actual
 *       bytes over actual time, held during the operator); per QP: its
 *       rate per epoch where the diagnosis fetched the QP's µs series (the
 *       QPs of and into the suspect, series_fetch.c), else the agent's
 *       poll-window mean rate over its active epochs (the window lines
 *       carry per-QP totals per poll: one step per poll window);
 *   "i" instant: the diagnosis, at the report time.
 * Times are µs from the window start; the absolute start is in otherData. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "an_internal.h"
#include "critical_path.h"
#include "answers.h"
#include "direction.h"

static double us(uint64_t t, uint64_t base)
{
	return t >= base ? (double)(t - base) / 1e3 : -(double)(base - t) / 1e3;
}

static void meta(cJSON *ev, const char *name, int pid, int tid, const char *value)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "ph", "M");
	cJSON_AddNumberToObject(o, "pid", pid);
	if (tid >= 0)
		cJSON_AddNumberToObject(o, "tid", tid);
	cJSON *a = cJSON_AddObjectToObject(o, "args");
	cJSON_AddStringToObject(a, "name", value);
	cJSON_AddItemToArray(ev, o);
}

static void counter(cJSON *ev, const char *name, int pid, double ts, const char *key, double v)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "ph", "C");
	cJSON_AddNumberToObject(o, "pid", pid);
	cJSON_AddNumberToObject(o, "ts", ts);
	cJSON *a = cJSON_AddObjectToObject(o, "args");
	cJSON_AddNumberToObject(a, key, v);
	cJSON_AddItemToArray(ev, o);
}

static int tid_of(const struct an_state *s, int node)
{
	return s->nodes[node].gpu >= 0 ? s->nodes[node].gpu : 1000 + node;
}

/* the QP is drawn per epoch from the fetched series */
static int per_epoch(const struct an_dir_entry *de, const char *host, uint32_t qpn)
{
	for (uint32_t i = 0; i < de->ss.nq; i++) {
		const struct an_qpseries *q = &de->ss.q[i];
		if (q->qpn == qpn && !strcmp(q->host, host) &&
		    (!strcmp(q->host, de->dir.host) || !strcmp(q->remote_host, de->dir.host)))
			return 1;
	}
	return 0;
}

int an_timeline_write(const struct an_state *s, const struct an_diagnosis *d, const char *path,
		      char *err, size_t errlen)
{
	uint64_t t1 = d ? d->report_ns : s->now_ns;
	uint64_t t0 = d && d->onset_ns && d->onset_ns < t1 ? d->onset_ns : t1;
	/* context: as much before the onset as the onset is before the report,
	 * at least 2 s, the whole window at most 60 s */
	uint64_t ctx = t1 - t0;
	if (ctx < 2000000000ull)
		ctx = 2000000000ull;
	t0 = t0 > ctx ? t0 - ctx : 0;
	if (t1 - t0 > 60000000000ull)
		t0 = t1 - 60000000000ull;
	uint64_t base = t0;

	cJSON *root = cJSON_CreateObject();
	cJSON *ev = cJSON_AddArrayToObject(root, "traceEvents");
	cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
	cJSON *od = cJSON_AddObjectToObject(root, "otherData");
	char buf[64];
	snprintf(buf, sizeof buf, "%" PRIu64, base);
	cJSON_AddStringToObject(od, "t0_realtime_ns", buf);
	cJSON_AddStringToObject(od, "producer", "pulse-analyzer");
	cJSON_AddStringToObject(od, "qp_counters", "per-QP mean rate over active epochs of each agent poll "
						  "window (the agent's window lines carry no per-epoch series)");
	if (d)
		cJSON_AddStringToObject(od, "diagnosis", d->why);
	if (d) {
		/* where in the iteration: the slowed part as its own slice */
		struct an_where w;
		an_where_find(s, d, &w);
		cJSON_AddItemToObject(od, "where", an_where_json(&w));
		int node = -1;
		for (uint32_t n = 0; w.found && n < s->nnodes; n++)
			if (s->nodes[n].gpu == w.gpu && !strcmp(s->hosts[s->nodes[n].host].name, w.host))
				node = (int)n;
		if (node >= 0 && w.t1_ns >= w.t0_ns && w.t0_ns >= base) {
			cJSON *o = cJSON_CreateObject();
			char nm[96];
			snprintf(nm, sizeof nm, "%s mb %d (%s)", w.kind, w.micro_batch,
				 w.critical ? "critical path" : "absorbed");
			cJSON_AddStringToObject(o, "name", nm);
			cJSON_AddStringToObject(o, "cat", "critical-path");
			cJSON_AddStringToObject(o, "ph", "X");
			cJSON_AddNumberToObject(o, "pid", s->nodes[node].host);
			cJSON_AddNumberToObject(o, "tid", tid_of(s, node));
			cJSON_AddNumberToObject(o, "ts", us(w.t0_ns, base));
			cJSON_AddNumberToObject(o, "dur", (double)(w.t1_ns - w.t0_ns) / 1e3);
			cJSON *g = cJSON_AddObjectToObject(o, "args");
			cJSON_AddNumberToObject(g, "excess_ms", w.excess_ms);
			cJSON_AddNumberToObject(g, "cost_ms", w.cost_ms);
			cJSON_AddItemToArray(ev, o);
		}
	}

	for (uint32_t h = 0; h < s->nhosts; h++)
		meta(ev, "process_name", (int)h, -1, s->hosts[h].name);
	for (uint32_t n = 0; n < s->nnodes; n++) {
		char name[48];
		if (s->nodes[n].gpu >= 0)
			snprintf(name, sizeof name, "GPU %d", s->nodes[n].gpu);
		else
			snprintf(name, sizeof name, "pid %u", s->nodes[n].pid);
		meta(ev, "thread_name", s->nodes[n].host, tid_of(s, (int)n), name);
	}

	uint64_t nslices = 0;
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		for (uint32_t k = 0; k < AN_HIST; k++) {
			const struct an_inst *in = &c->hist[k];
			if (!in->used)
				continue;
			for (int32_t r = 0; r < c->nranks; r++) {
				const struct an_rec *x = in->recs[r];
				if (!x)
					continue;
				uint64_t a = x->call ? x->call : x->start;
				uint64_t b = x->end ? x->end : t1;
				if (!a || b < t0 || a > t1)
					continue;
				if (b < a)
					b = a;
				int pid = s->nodes[x->node].host, tid = tid_of(s, x->node);
				cJSON *o = cJSON_CreateObject();
				snprintf(buf, sizeof buf, "%s #%" PRIu64, pulse_op_type_name(x->op), x->seq);
				cJSON_AddStringToObject(o, "name", buf);
				cJSON_AddStringToObject(o, "cat", pulse_op_par_name(x->par));
				cJSON_AddStringToObject(o, "ph", "X");
				cJSON_AddNumberToObject(o, "pid", pid);
				cJSON_AddNumberToObject(o, "tid", tid);
				cJSON_AddNumberToObject(o, "ts", us(a, base));
				cJSON_AddNumberToObject(o, "dur", (double)(b - a) / 1e3);
				cJSON *g = cJSON_AddObjectToObject(o, "args");
				snprintf(buf, sizeof buf, "0x%016" PRIx64, c->id);
				cJSON_AddStringToObject(g, "comm", buf);
				cJSON_AddNumberToObject(g, "rank", x->rank);
				cJSON_AddNumberToObject(g, "nranks", c->nranks);
				cJSON_AddStringToObject(g, "status", pulse_op_status_name(x->status));
				cJSON_AddStringToObject(g, "algo", pulse_op_algo_name(x->algo));
				if (x->start)
					cJSON_AddNumberToObject(g, "first_byte_after_call_us",
								x->call && x->start >= x->call ? (double)(x->start - x->call) / 1e3 : 0);
				cJSON_AddNumberToObject(g, "actual_time_us", (double)x->active / 1e3);
				cJSON_AddNumberToObject(g, "actual_bytes", (double)x->actual);
				cJSON_AddNumberToObject(g, "expected_bytes", (double)x->expected);
				if (x->rate_gbps > 0)
					cJSON_AddNumberToObject(g, "rank_rate_gbps", x->rate_gbps);
				cJSON_AddItemToArray(ev, o);
				nslices++;
				if (x->active && x->actual && x->start) {
					char cn[48];
					snprintf(cn, sizeof cn, "GPU %d tx Gb/s (actual)", s->nodes[x->node].gpu);
					double rate = (double)x->actual * 8 / (double)x->active;
					counter(ev, cn, pid, us(x->start, base), "gbps", rate);
					counter(ev, cn, pid, us(x->end ? x->end : b, base), "gbps", 0);
				}
			}
		}
	}
	/* the QPs whose µs series was fetched for this diagnosis (series_fetch.c):
	 * a counter per epoch instead of one per poll window */
	const struct an_dir_entry *de = d ? an_dir_of(s, (uint32_t)(d - s->diags)) : NULL;
	uint64_t nepochs = 0;
	for (uint32_t i = 0; de && i < de->ss.nq; i++) {
		const struct an_qpseries *q = &de->ss.q[i];
		int h = an_host_index((struct an_state *)s, q->host, 0);
		if (h < 0 || (strcmp(q->host, de->dir.host) && strcmp(q->remote_host, de->dir.host)))
			continue;
		char cn[160];
		snprintf(cn, sizeof cn, "qp %s/%u -> %s Gb/s (per epoch)", q->dev, q->qpn,
			 q->remote_host[0] ? q->remote_host : "?");
		for (uint32_t k = 0; k < q->n; k++) {
			if (q->t_ns[k] < t0 || q->t_ns[k] > t1)
				continue;
			counter(ev, cn, h, us(q->t_ns[k], base), "gbps",
				(double)q->bytes[k] * 8 / (double)q->epoch_ns);
			nepochs++;
			/* back to 0 where the next epoch is not the adjacent one */
			uint64_t end = q->t_ns[k] + q->epoch_ns;
			if (k + 1 == q->n || q->t_ns[k + 1] != end)
				counter(ev, cn, h, us(end, base), "gbps", 0);
		}
	}
	if (de) {
		cJSON_AddStringToObject(od, "qp_counters_per_epoch",
					"per-QP rate per epoch for the QPs of and into the suspect, from the "
					"µs series fetched for the diagnosis (its direction); the other QPs "
					"per poll window");
		cJSON_AddNumberToObject(od, "qp_epoch_points", (double)nepochs);
	}
	for (uint32_t i = 0; i < s->nqpw; i++) {
		const struct an_qpwin *q = &s->qpw[i];
		if (!q->start || q->end < t0 || q->start > t1)
			continue;
		if (de && per_epoch(de, s->hosts[q->host].name, q->qpn))
			continue;
		char cn[64];
		snprintf(cn, sizeof cn, "qp %s/%u Gb/s (poll-window mean)", q->nic, q->qpn);
		counter(ev, cn, q->host, us(q->start, base), "gbps", q->mean_gbps);
		counter(ev, cn, q->host, us(q->end, base), "gbps", 0);
	}
	if (d) {
		cJSON *o = cJSON_CreateObject();
		snprintf(buf, sizeof buf, "diagnosis: %s", an_class_name(d->cls));
		cJSON_AddStringToObject(o, "name", buf);
		cJSON_AddStringToObject(o, "ph", "i");
		cJSON_AddStringToObject(o, "s", "g");
		cJSON_AddNumberToObject(o, "pid", 0);
		cJSON_AddNumberToObject(o, "tid", 0);
		cJSON_AddNumberToObject(o, "ts", us(d->report_ns, base));
		cJSON *g = cJSON_AddObjectToObject(o, "args");
		cJSON_AddStringToObject(g, "why", d->why);
		if (d->nsuspects) {
			char sb[PULSE_OP_HOST_LEN + 24];
			snprintf(sb, sizeof sb, "%s GPU %d", d->suspects[0].host, d->suspects[0].gpu);
			cJSON_AddStringToObject(g, "suspect", sb);
		}
		cJSON_AddItemToArray(ev, o);
		an_answers_timeline(d, ev, base);
	}
	cJSON_AddNumberToObject(od, "operator_slices", (double)nslices);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(text);
		return -1;
	}
	int bad = fputs(text, f) < 0;
	bad |= fputc('\n', f) == EOF;
	bad |= fclose(f) != 0;
	free(text);
	if (bad) {
		snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}
