/* pulse-analyzer: the per-QP µs series around a diagnosis, fetched from
 * the host agents (analyzer/direction.h; wire: include/pulse/qp_series_wire.h).
 *
 * Which hosts: the suspects' and every host that shares a communicator
 * with a suspect (the peers whose QPs send to it: a receiver-limited NIC
 * shows only in its senders' series). Which range: AN_CAUSE_PERIODS
 * iterations before the onset (the QPs' baseline) to as many after it, at
 * most to the report.
 *
 * Live, the service sends SERIES_REQ to each of those hosts still
 * connected (server_series.c) and hands the answers to an_series_answer;
 * the direction is decided when the last one is in, or at the end of the
 * run with what came. In replay, the same answer comes from
 * `pulse-host-agent --replay DIR --host H --series-query FROM:TO
 * --series-out FILE` (host-agent/series_query.c, the function the live
 * agent answers with), decoded by the same codec. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "an_internal.h"
#include "direction.h"
#include "pulse/analyzer_wire.h"

int an_direction_wanted(const struct an_diagnosis *d)
{
	return d->cls == AN_COMM_SLOW && d->level == AN_LEVEL_MACHINE && d->nsuspects &&
	       !strcmp(d->localizer, "pulse");
}

/* the GPU of a local QP: its mapping's communicator rank and that
 * member's node */
static int32_t gpu_of(void *ctx, const char *host, const char *dev, uint32_t qpn)
{
	struct an_state *s = ctx;
	int h = an_host_index(s, host, 0);
	for (uint32_t i = 0; h >= 0 && i < s->nqps; i++) {
		const struct an_qp *q = &s->qps[i];
		if (q->host != h || q->qpn != qpn || strcmp(q->dev, dev) || !q->comm || q->rank < 0)
			continue;
		const struct an_comm *c = an_comm_find(s, q->comm);
		if (c && q->rank < c->nranks && c->m[q->rank].node >= 0)
			return s->nodes[c->m[q->rank].node].gpu;
	}
	return -1;
}

static void add_host(struct an_series_set *ss, const char *h)
{
	for (uint32_t i = 0; i < ss->nhosts; i++)
		if (!strcmp(ss->hosts[i].host, h))
			return;
	if (ss->nhosts < AN_SERIES_HOSTS)
		snprintf(ss->hosts[ss->nhosts++].host, sizeof ss->hosts[0].host, "%s", h);
}

struct an_dir_entry *an_dir_begin(struct an_state *s, uint32_t i)
{
	if (s->ndirs >= AN_DIR_MAX) {
		an_log(s, "direction: %u diagnoses have their series already; this one gets none", AN_DIR_MAX);
		return NULL;
	}
	struct an_dir_entry *n = realloc(s->dirs, (s->ndirs + 1) * sizeof *n);
	if (!n)
		return NULL;
	s->dirs = n;
	struct an_dir_entry *e = &s->dirs[s->ndirs++];
	memset(e, 0, sizeof *e);
	e->diag = i;
	const struct an_diagnosis *d = &s->diags[i];
	struct an_series_set *ss = &e->ss;
	uint64_t period = an_period_ns(s);
	uint64_t back = period ? AN_CAUSE_PERIODS * period : 1000000000ull;
	/* before and after the slowdown's first evidence, where the rule
	 * knows it */
	uint64_t onset = d->slow_from_ns && d->slow_from_ns < d->onset_ns ? d->slow_from_ns : d->onset_ns;
	ss->onset_ns = onset;
	ss->from_ns = onset > back ? onset - back : 1;
	/* as long after the onset as before it, at most to the report: the
	 * answers stay small on a long run */
	ss->to_ns = d->report_ns > onset ? d->report_ns : onset + 1;
	if (ss->to_ns - onset > back)
		ss->to_ns = onset + back;
	for (uint32_t k = 0; k < d->nsuspects; k++)
		add_host(ss, d->suspects[k].host);
	/* the peers: every host with a member in a communicator of a suspect */
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		int has = 0;
		for (int32_t r = 0; r < c->nranks && !has; r++) {
			int nd = c->m[r].node;
			if (nd < 0)
				continue;
			for (uint32_t k = 0; k < d->nsuspects; k++)
				if (!strcmp(an_node_host(s, nd), d->suspects[k].host) &&
				    (d->suspects[k].gpu < 0 || s->nodes[nd].gpu == d->suspects[k].gpu))
					has = 1;
		}
		for (int32_t r = 0; has && r < c->nranks; r++)
			if (c->m[r].node >= 0)
				add_host(ss, an_node_host(s, c->m[r].node));
	}
	return e;
}

void an_dir_finish(struct an_state *s, struct an_dir_entry *e)
{
	const struct an_diagnosis *d = &s->diags[e->diag];
	e->pending = 0;
	an_direction_classify(&e->ss, d->suspects[0].host, d->suspects[0].gpu, &e->dir);
	an_log(s, "direction of %s GPU %d (%s): %s: %s", d->suspects[0].host, d->suspects[0].gpu,
	       e->ss.source ? e->ss.source : "?", an_dir_label_key(e->dir.label), e->dir.why);
}

const struct an_dir_entry *an_dir_of(const struct an_state *s, uint32_t i)
{
	for (uint32_t k = 0; k < s->ndirs; k++)
		if (s->dirs[k].diag == i)
			return &s->dirs[k];
	return NULL;
}

void an_dir_free_all(struct an_state *s)
{
	for (uint32_t k = 0; k < s->ndirs; k++)
		an_series_free(&s->dirs[k].ss);
	free(s->dirs);
	s->dirs = NULL;
	s->ndirs = 0;
}

/* an answer for host slot k of the entry */
static void take_answer(struct an_state *s, struct an_dir_entry *e, uint32_t k, const struct pulse_qps_resp *r)
{
	struct an_series_host *h = &e->ss.hosts[k];
	h->answered = 1;
	h->status = r->status;
	h->oldest_ns = r->oldest_ns;
	h->evicted = r->evicted;
	h->segs = r->nseg;
	h->left_out = r->segs_left_out;
	if (an_series_add(&e->ss, r, gpu_of, s))
		snprintf(h->err, sizeof h->err, "out of memory");
}

/* ---- live: the service asks, request by request (analyzer.h) ---- */

static struct an_dir_entry *by_id(const struct an_state *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->ndirs; i++)
		if (s->dirs[i].req_id == id && s->dirs[i].ss.source && !strcmp(s->dirs[i].ss.source, "live"))
			return &s->dirs[i];
	return NULL;
}

uint32_t an_series_open(struct an_state *s, uint32_t diag, uint32_t id, uint64_t now_mono)
{
	if (diag >= s->ndiags || !an_direction_wanted(&s->diags[diag]))
		return 0;
	struct an_dir_entry *e = an_dir_begin(s, diag);
	if (!e)
		return 0;
	e->ss.source = "live";
	e->req_id = id;
	e->asked_mono = now_mono;
	e->pending = 1;
	return e->ss.nhosts;
}

void an_series_range(const struct an_state *s, uint32_t id, uint64_t *from_ns, uint64_t *to_ns)
{
	const struct an_dir_entry *e = by_id(s, id);
	*from_ns = e ? e->ss.from_ns : 0;
	*to_ns = e ? e->ss.to_ns : 0;
}

const char *an_series_host(const struct an_state *s, uint32_t id, uint32_t k)
{
	const struct an_dir_entry *e = by_id(s, id);
	return e && k < e->ss.nhosts ? e->ss.hosts[k].host : NULL;
}

void an_series_host_failed(struct an_state *s, uint32_t id, uint32_t k, const char *why)
{
	struct an_dir_entry *e = by_id(s, id);
	if (e && k < e->ss.nhosts)
		snprintf(e->ss.hosts[k].err, sizeof e->ss.hosts[k].err, "%s", why);
}

void an_series_sent(struct an_state *s, uint32_t id, uint32_t sent)
{
	struct an_dir_entry *e = by_id(s, id);
	if (e && !sent)
		an_dir_finish(s, e);
}

int an_series_answer(struct an_state *s, const char *host, const uint8_t *p, size_t len, uint32_t *id,
		     int *decided, char *err, size_t errlen)
{
	struct pulse_qps_resp r;
	*decided = 0;
	if (pulse_qps_resp_decode(p, len, &r, err, errlen))
		return -1;
	*id = r.id;
	struct an_dir_entry *e = by_id(s, r.id);
	int rc = -1;
	if (strcmp(r.host, host))
		snprintf(err, errlen, "SERIES for host %s on %s's connection", r.host, host);
	else if (!e || !e->pending)
		snprintf(err, errlen, "SERIES for request %u, which is not open", r.id);
	else {
		rc = 0;
		int waiting = 0;
		for (uint32_t k = 0; k < e->ss.nhosts; k++) {
			if (!strcmp(e->ss.hosts[k].host, host) && !e->ss.hosts[k].answered)
				take_answer(s, e, k, &r);
			waiting += !e->ss.hosts[k].answered && !e->ss.hosts[k].err[0];
		}
		if (!waiting) {
			an_dir_finish(s, e);
			*decided = 1;
		}
	}
	pulse_qps_resp_free(&r);
	return rc;
}

uint32_t an_series_expire(struct an_state *s, uint64_t now_mono, uint64_t wait_ns, int all,
			  void (*decided)(void *ctx, uint32_t id), void *ctx)
{
	uint32_t lost = 0;
	for (uint32_t i = 0; i < s->ndirs; i++) {
		struct an_dir_entry *e = &s->dirs[i];
		if (!e->pending || (!all && now_mono - e->asked_mono < wait_ns))
			continue;
		for (uint32_t k = 0; k < e->ss.nhosts; k++)
			if (!e->ss.hosts[k].answered && !e->ss.hosts[k].err[0]) {
				snprintf(e->ss.hosts[k].err, sizeof e->ss.hosts[k].err, "no answer");
				lost++;
			}
		an_dir_finish(s, e);
		if (decided)
			decided(ctx, e->req_id);
	}
	return lost;
}

const char *an_series_result(const struct an_state *s, uint32_t id, char *buf, size_t n)
{
	const struct an_dir_entry *e = by_id(s, id);
	if (!e || e->pending)
		snprintf(buf, n, "%s", "");
	else
		snprintf(buf, n, "%s at %s GPU %d: %s", an_dir_label_key(e->dir.label), e->dir.host, e->dir.gpu,
			 e->dir.why);
	return buf;
}

/* ---- replay ---- */

static int run_query(const char *bin, const char *dir, const char *host, uint64_t from, uint64_t to,
		     const char *out, const char *log)
{
	char q[64];
	snprintf(q, sizeof q, "%" PRIu64 ":%" PRIu64, from, to);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		/* the whole recording stays retained (up to the agent's memory
		 * cap): the query is answered at its end */
		execlp(bin, bin, "--replay", dir, "--host", host, "--out", "/dev/null", "--retain", "86400s",
		       "--series-query", q, "--series-out", out, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static uint8_t *slurp_bin(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n == cap) {
			if (cap >= PULSE_AW_MAX_PAYLOAD)
				break; /* the answer's own bound: the rest is not read */
			cap = cap ? cap * 2 : 65536;
			uint8_t *b = realloc(buf, cap);
			if (!b)
				break;
			buf = b;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	*len = n;
	return buf;
}

void an_dir_fetch_replay(struct an_state *s, const struct an_replay_opts *o, const char *agent_bin,
			 const char *outdir)
{
	uint32_t nd = s->ndiags;
	for (uint32_t i = 0; i < nd; i++) {
		if (!an_direction_wanted(&s->diags[i]))
			continue;
		struct an_dir_entry *e = an_dir_begin(s, i);
		if (!e)
			return;
		e->ss.source = "replay";
		for (uint32_t k = 0; k < e->ss.nhosts; k++) {
			struct an_series_host *h = &e->ss.hosts[k];
			char out[PATH_MAX], log[PATH_MAX];
			snprintf(out, sizeof out, "%.*s/%s.series-%u", PATH_MAX - 96, outdir, h->host, i);
			snprintf(log, sizeof log, "%.*s/%s.series-%u.log", PATH_MAX - 96, outdir, h->host, i);
			int rc = run_query(agent_bin, o->dir, h->host, e->ss.from_ns, e->ss.to_ns, out, log);
			size_t len = 0;
			uint8_t *p = rc == 0 ? slurp_bin(out, &len) : NULL;
			unlink(out);
			struct pulse_qps_resp r;
			char err[200];
			if (!p)
				snprintf(h->err, sizeof h->err, "agent --series-query failed (status %d; log %.40s)",
					 rc, log);
			else if (pulse_qps_resp_decode(p, len, &r, err, sizeof err))
				snprintf(h->err, sizeof h->err, "%.95s", err);
			else {
				take_answer(s, e, k, &r);
				pulse_qps_resp_free(&r);
				unlink(log);
			}
			free(p);
			if (!o->quiet && h->err[0])
				fprintf(stderr, "pulse-analyzer: series of %s: %s\n", h->host, h->err);
		}
		an_dir_finish(s, e);
	}
}

/* ---- output ---- */

void *an_dir_json(const struct an_dir_entry *e, int with_epochs)
{
	const struct an_direction *d = &e->dir;
	const struct an_series_set *ss = &e->ss;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "label", e->pending ? "pending" : an_dir_label_key(d->label));
	cJSON_AddStringToObject(o, "host", d->host);
	cJSON_AddNumberToObject(o, "gpu", d->gpu);
	cJSON_AddStringToObject(o, "why", d->why);
	cJSON_AddNumberToObject(o, "sigma", d->sigma);
	cJSON_AddNumberToObject(o, "reference_shift", d->reference);
	cJSON_AddNumberToObject(o, "reference_pairs", d->n_rest);
	cJSON_AddNumberToObject(o, "out_pairs", d->out_pairs);
	cJSON_AddNumberToObject(o, "out_slow", d->out_slow);
	cJSON_AddNumberToObject(o, "in_pairs", d->in_pairs);
	cJSON_AddNumberToObject(o, "in_slow", d->in_slow);
	cJSON *pa = cJSON_AddArrayToObject(o, "pairs");
	for (uint32_t i = 0; i < d->npairs; i++) {
		const struct an_dir_pair *p = &d->pairs[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "from", p->host);
		cJSON_AddNumberToObject(x, "from_gpu", p->gpu);
		cJSON_AddStringToObject(x, "to", p->peer);
		cJSON_AddNumberToObject(x, "to_gpu", p->peer_gpu);
		cJSON_AddNumberToObject(x, "rate_ratio", exp(p->shift));
		cJSON_AddNumberToObject(x, "z", p->z);
		cJSON_AddBoolToObject(x, "slow", p->z > AN_DIR_Z);
		cJSON_AddNumberToObject(x, "qps", p->qps);
		cJSON_AddItemToArray(pa, x);
	}
	cJSON *so = cJSON_AddObjectToObject(o, "series");
	char b[32];
	cJSON_AddStringToObject(so, "source", ss->source ? ss->source : "");
	snprintf(b, sizeof b, "%" PRIu64, ss->from_ns);
	cJSON_AddStringToObject(so, "from_ns", b);
	snprintf(b, sizeof b, "%" PRIu64, ss->to_ns);
	cJSON_AddStringToObject(so, "to_ns", b);
	snprintf(b, sizeof b, "%" PRIu64, ss->onset_ns);
	cJSON_AddStringToObject(so, "onset_ns", b);
	cJSON *hs = cJSON_AddArrayToObject(so, "hosts");
	for (uint32_t k = 0; k < ss->nhosts; k++) {
		const struct an_series_host *h = &ss->hosts[k];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "host", h->host);
		cJSON_AddStringToObject(x, "status", h->answered ? pulse_qps_status_name(h->status)
							: h->err[0] ? "failed" : "no answer");
		if (h->err[0])
			cJSON_AddStringToObject(x, "error", h->err);
		cJSON_AddNumberToObject(x, "segments", h->segs);
		cJSON_AddNumberToObject(x, "segments_left_out", h->left_out);
		cJSON_AddNumberToObject(x, "agent_evicted_windows", (double)h->evicted);
		snprintf(b, sizeof b, "%" PRIu64, h->oldest_ns);
		cJSON_AddStringToObject(x, "oldest_retained_ns", b);
		cJSON_AddItemToArray(hs, x);
	}
	cJSON *qs = cJSON_AddArrayToObject(so, "qps");
	for (uint32_t i = 0; i < ss->nq; i++) {
		const struct an_qpseries *q = &ss->q[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "host", q->host);
		cJSON_AddStringToObject(x, "dev", q->dev);
		cJSON_AddNumberToObject(x, "qpn", q->qpn);
		cJSON_AddNumberToObject(x, "gpu", q->gpu);
		cJSON_AddStringToObject(x, "remote_host", q->remote_host);
		cJSON_AddNumberToObject(x, "remote_gpu", q->remote_gpu);
		cJSON_AddNumberToObject(x, "epoch_ns", q->epoch_ns);
		cJSON_AddNumberToObject(x, "epochs", q->n);
		if (with_epochs && q->n &&
		    (!strcmp(q->host, d->host) || !strcmp(q->remote_host, d->host))) {
			/* [epoch start - from_ns in ns, bytes] pairs */
			cJSON *ep = cJSON_AddArrayToObject(x, "series");
			for (uint32_t k = 0; k < q->n; k++) {
				cJSON *pr = cJSON_CreateArray();
				cJSON_AddItemToArray(pr, cJSON_CreateNumber((double)(q->t_ns[k] - ss->from_ns)));
				cJSON_AddItemToArray(pr, cJSON_CreateNumber((double)q->bytes[k]));
				cJSON_AddItemToArray(ep, pr);
			}
		}
		cJSON_AddItemToArray(qs, x);
	}
	return o;
}

void an_dir_print(const struct an_dir_entry *e, FILE *f)
{
	fprintf(f, "    direction: %s: %s\n", e->pending ? "pending (series not all in)" : an_dir_label_key(e->dir.label),
		e->dir.why);
	uint32_t answered = 0;
	for (uint32_t k = 0; k < e->ss.nhosts; k++)
		answered += e->ss.hosts[k].answered;
	fprintf(f, "               from the µs per-QP series of %u of %u hosts (%s), %u QPs\n", answered,
		e->ss.nhosts, e->ss.source ? e->ss.source : "?", e->ss.nq);
}
