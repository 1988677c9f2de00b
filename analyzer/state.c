/* pulse-analyzer: per-job state, fed one agent JSON line at a time.
 *
 * What is kept, incrementally, so that localization needs no rescan:
 *   hosts   name, estimated clock skew against the other hosts;
 *   nodes   one training process (host, GPU): recent operator ends (for the
 *           compute time before each operator), latest call, hung records;
 *   comms   per communicator: members, the last AN_HIST operator instances
 *           (one record per rank each), running baselines per operator
 *           signature (span, period) and per member (compute time before the
 *           operator, call-to-end time, rank-level rates);
 *   windows per-QP summaries of the agents' poll windows (timeline only).
 * Bad input is counted and logged (rate-limited), never fatal. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "an_internal.h"
#include "direction.h"
#include "pulse/hex_id.h"
#include "pulse/hook_map.h"
#include "pulse/hook_record.h"

void an_cfg_default(struct an_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->hang_ns = 1000000000ull;
	c->slow_factor = 1.1;
	c->custom_k = 10;
	c->skew_bound_ns = 50ull * 1000000ull;
	c->settle_ns = 1200ull * 1000000ull;
	c->min_slow_ns = 500000ull;
}

const char *an_class_name(int c)
{
	switch (c) {
	case AN_COMP_SLOW: return "computation fail-slow";
	case AN_COMP_STOP: return "computation fail-stop";
	case AN_COMM_SLOW: return "communication fail-slow";
	case AN_COMM_STOP: return "communication fail-stop";
	default: return "none";
	}
}

void an_log(struct an_state *s, const char *fmt, ...)
{
	if (!s->log)
		return;
	s->log_lines++;
	if (s->log_lines > 200) {
		if (s->log_lines == 201)
			fprintf(s->log, "pulse-analyzer: more log lines suppressed (see the counters)\n");
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	fputs("pulse-analyzer: ", s->log);
	vfprintf(s->log, fmt, ap);
	fputc('\n', s->log);
	va_end(ap);
}

void an_set_log(struct an_state *s, FILE *f)
{
	s->log = f;
}

/* ---- rolling statistics ---- */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double an_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double an_binom_tail(int n, int k, double p)
{
	if (k <= 0)
		return 1;
	if (k > n || p <= 0)
		return 0;
	if (p >= 1)
		return 1;
	/* in logs: a few thousand trials underflow the plain product */
	double sum = 0, lp = log(p), lq = log1p(-p), lnf = lgamma(n + 1.0);
	for (int x = k; x <= n; x++)
		sum += exp(lnf - lgamma(x + 1.0) - lgamma(n - x + 1.0) + x * lp + (n - x) * lq);
	return sum < 1 ? sum : 1;
}

static double log_choose(int n, int k)
{
	return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
}

double an_fisher_tail(int c1, int n1, int c0, int n0)
{
	int n = n1 + n0, k = c1 + c0;
	if (c1 <= 0 || n1 <= 0 || c1 > n1 || c0 < 0 || c0 > n0)
		return 1;
	/* X hypergeometric: n1 drawn from n, k of them marked */
	int hi = n1 < k ? n1 : k;
	double sum = 0, lden = log_choose(n, n1);
	for (int x = c1; x <= hi; x++)
		if (n1 - x <= n - k)
			sum += exp(log_choose(k, x) + log_choose(n - k, n1 - x) - lden);
	return sum < 1 ? sum : 1;
}

void an_roll_add(struct an_roll *r, double v)
{
	an_roll_add_at(r, v, 0);
}

void an_roll_add_at(struct an_roll *r, double v, uint64_t t)
{
	uint8_t *o = r->by_value;
	uint32_t n = r->n;
	if (n == AN_BASE_N) { /* the oldest sample leaves the order */
		const uint8_t *at = memchr(o, (int)r->pos, n);
		size_t k = at ? (size_t)(at - o) : n - 1;
		memmove(o + k, o + k + 1, n - k - 1);
		n--;
	}
	r->t[r->pos] = t;
	r->v[r->pos] = v;
	size_t lo = 0, hi = n; /* the first slot whose value is above v */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->v[o[mid]] > v)
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(o + lo + 1, o + lo, n - lo);
	o[lo] = (uint8_t)r->pos;
	r->pos = (r->pos + 1) % AN_BASE_N;
	if (r->n < AN_BASE_N)
		r->n++;
}

double an_roll_max(const struct an_roll *r)
{
	double m = r->n ? r->v[r->by_value[r->n - 1]] : 0;
	return m > 0 ? m : 0; /* (never below 0, as before the kept order) */
}

double an_roll_min(const struct an_roll *r)
{
	double m = r->n ? r->v[r->by_value[0]] : 0;
	return m > 0 ? m : 0;
}

double an_roll_base(const struct an_roll *r, uint64_t before, int want_max, uint32_t *n)
{
	double t[AN_BASE_N];
	uint32_t k = 0;
	for (uint32_t i = 0; i < r->n; i++)
		if (!before || (r->t[i] && r->t[i] < before))
			t[k++] = r->v[i];
	*n = k;
	if (!k)
		return 0;
	if (!want_max)
		return an_median(t, k);
	double m = t[0];
	for (uint32_t i = 1; i < k; i++)
		if (t[i] > m)
			m = t[i];
	return m;
}

double an_rec_base(const struct an_state *s, const struct an_comm *c, const struct an_rec *r, int which,
		   uint32_t *nb)
{
	if (!s->base_before || r->rank < 0 || r->rank >= c->nranks || r->sig < 0) {
		switch (which) {
		case AN_BASE_DUR: *nb = r->dur_nb; return r->dur_max;
		case AN_BASE_WDUR: *nb = r->wdur_nb; return r->wdur_max;
		default: *nb = r->act_nb; return r->act_med;
		}
	}
	const struct an_member *m = &c->m[r->rank];
	const struct an_roll *roll = which == AN_BASE_DUR ? &m->dur[r->sig]
				     : which == AN_BASE_WDUR ? &m->wdur[r->sig] : &m->act[r->sig];
	uint64_t before = s->base_before < r->call || !r->call ? s->base_before : r->call;
	return an_roll_base(roll, before, which != AN_BASE_ACT, nb);
}

/* The k-th and (k+1)-th smallest of |v - m| over a roll's sorted samples:
 * the distances grow outwards from m on both sides, so a merge from the
 * middle finds them in k steps. */
static void kth_dev(const struct an_roll *r, double m, uint32_t k, double *dk, double *dk1)
{
	const uint8_t *o = r->by_value;
	long n = (long)r->n, lo = 0, hi = n; /* right: the first sample >= m */
	while (lo < hi) {
		long mid = (lo + hi) / 2;
		if (r->v[o[mid]] < m)
			lo = mid + 1;
		else
			hi = mid;
	}
	long right = lo, left = lo - 1;
	double d = 0;
	for (uint32_t step = 0; step <= k + 1 && (left >= 0 || right < n); step++) {
		double dl = left >= 0 ? fabs(r->v[o[left]] - m) : INFINITY;
		double dr = right < n ? fabs(r->v[o[right]] - m) : INFINITY;
		if (dl <= dr) {
			d = dl;
			left--;
		} else {
			d = dr;
			right++;
		}
		if (step == k)
			*dk = d;
		else if (step == k + 1)
			*dk1 = d;
	}
}

/* Median and MAD as an_median computes them (the same values: the middle
 * of the sorted samples), from the order kept by an_roll_add_at. */
int an_roll_stats(const struct an_roll *r, double *median, double *mad)
{
	if (!r->n)
		return -1;
	const uint8_t *o = r->by_value;
	uint32_t h = r->n / 2;
	double m = r->n % 2 ? r->v[o[h]] : (r->v[o[h - 1]] + r->v[o[h]]) / 2;
	if (median)
		*median = m;
	if (mad) {
		double a = 0, b = 0;
		kth_dev(r, m, r->n % 2 ? h : h - 1, &a, &b);
		*mad = r->n % 2 ? a : (a + b) / 2;
	}
	return 0;
}

/* ---- tables ---- */

static int grow(void **p, uint32_t *cap, uint32_t need, size_t size, uint32_t max)
{
	if (need <= *cap)
		return 0;
	if (need > max)
		return -1;
	uint32_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	if (n > max)
		n = max;
	void *q = realloc(*p, (size_t)n * size);
	if (!q)
		return -1;
	memset((char *)q + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

int an_grow(void **p, uint32_t *cap, uint32_t need, size_t size, uint32_t max)
{
	return grow(p, cap, need, size, max);
}

int an_host_index(struct an_state *s, const char *name, int create)
{
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, name))
			return (int)i;
	if (!create || strlen(name) >= PULSE_OP_HOST_LEN || !name[0])
		return -1;
	if (grow((void **)&s->hosts, &s->hosts_cap, s->nhosts + 1, sizeof *s->hosts, 65536))
		return -1;
	struct an_host *h = &s->hosts[s->nhosts];
	memset(h, 0, sizeof *h);
	strcpy(h->name, name);
	return (int)s->nhosts++;
}

void an_host_join_sent(struct an_state *s, const char *host)
{
	int h = an_host_index(s, host, 1);
	if (h >= 0)
		s->hosts[h].join_sent = 1;
}

int an_node_index(struct an_state *s, int host, int32_t gpu, uint32_t pid, int create)
{
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct an_node *n = &s->nodes[i];
		if (n->host != host)
			continue;
		if (gpu >= 0 && n->gpu == gpu)
			return (int)i;
		if (gpu < 0 && n->pid == pid)
			return (int)i;
	}
	if (!create)
		return -1;
	if (grow((void **)&s->nodes, &s->nodes_cap, s->nnodes + 1, sizeof *s->nodes, AN_MAX_NODES))
		return -1;
	struct an_node *n = &s->nodes[s->nnodes];
	memset(n, 0, sizeof *n);
	n->host = host;
	n->gpu = gpu;
	n->pid = pid;
	return (int)s->nnodes++;
}

const char *an_node_host(const struct an_state *s, int node)
{
	if (node < 0 || (uint32_t)node >= s->nnodes)
		return "?";
	return s->hosts[s->nodes[node].host].name;
}

int an_node_host_index(const struct an_state *s, int node)
{
	return node < 0 || (uint32_t)node >= s->nnodes ? -1 : s->nodes[node].host;
}

uint64_t an_clock_err_pair(const struct an_state *s, int node)
{
	if (node < 0 || (uint32_t)node >= s->nnodes)
		return 0;
	return s->hosts[s->nodes[node].host].clock_err_max + s->clock_err_any;
}

struct an_comm *an_comm_find(const struct an_state *s, uint64_t id)
{
	for (uint32_t i = 0; i < s->ncomms; i++)
		if (s->comms[i]->id == id)
			return s->comms[i];
	return NULL;
}

int an_comm_index_of(const struct an_state *s, const struct an_comm *c)
{
	for (uint32_t i = 0; i < s->ncomms; i++)
		if (s->comms[i] == c)
			return (int)i;
	return -1;
}

static struct an_comm *comm_get(struct an_state *s, uint64_t id, int32_t nranks)
{
	struct an_comm *c = an_comm_find(s, id);
	if (c)
		return c;
	if (nranks <= 0 || nranks > AN_MAX_RANKS)
		return NULL;
	if (grow((void **)&s->comms, &s->comms_cap, s->ncomms + 1, sizeof *s->comms, AN_MAX_COMMS))
		return NULL;
	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->m = calloc((size_t)nranks, sizeof *c->m);
	if (!c->m) {
		free(c);
		return NULL;
	}
	for (int32_t i = 0; i < nranks; i++)
		c->m[i].node = -1;
	c->id = id;
	c->nranks = nranks;
	c->born_ns = s->now_ns > s->last_tick ? s->now_ns : s->last_tick;
	s->comms[s->ncomms++] = c;
	return c;
}

static void rec_free(struct an_rec *r)
{
	if (r) {
		free(r->peers);
		free(r);
	}
}

static void inst_clear(struct an_comm *c, struct an_inst *in)
{
	if (in->recs) {
		for (int32_t i = 0; i < c->nranks; i++)
			rec_free(in->recs[i]);
		free(in->recs);
	}
	memset(in, 0, sizeof *in);
}

struct an_inst *an_inst_find(struct an_comm *c, uint64_t seq)
{
	struct an_inst *in = &c->hist[seq % AN_HIST];
	return in->used && in->seq == seq ? in : NULL;
}

static int sig_index(struct an_comm *c, uint8_t op, uint64_t count)
{
	for (uint32_t i = 0; i < c->nsigs; i++)
		if (c->sigs[i].op == op && c->sigs[i].count == count)
			return (int)i;
	if (c->nsigs < AN_SIG_MAX) {
		c->sigs[c->nsigs].peer_node = -1;
		c->sigs[c->nsigs].cap_node = -1;
		c->sigs[c->nsigs].op = op;
		c->sigs[c->nsigs].count = count;
		return (int)c->nsigs++;
	}
	/* too many distinct operators: share the last slot (baselines coarser) */
	return AN_SIG_MAX - 1;
}

struct an_state *an_state_new(const struct an_cfg *cfg)
{
	struct an_state *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	if (cfg)
		s->cfg = *cfg;
	else
		an_cfg_default(&s->cfg);
	struct an_cfg d;
	an_cfg_default(&d);
	if (!s->cfg.hang_ns)
		s->cfg.hang_ns = d.hang_ns;
	if (!(s->cfg.slow_factor > 1.0))
		s->cfg.slow_factor = d.slow_factor;
	if (!s->cfg.custom_k)
		s->cfg.custom_k = d.custom_k;
	if (!s->cfg.skew_bound_ns)
		s->cfg.skew_bound_ns = d.skew_bound_ns;
	if (!s->cfg.min_slow_ns)
		s->cfg.min_slow_ns = d.min_slow_ns;
	if (s->cfg.custom_k > AN_BASE_N)
		s->cfg.custom_k = AN_BASE_N;
	s->qpw = calloc(AN_QP_RING, sizeof *s->qpw);
	if (!s->qpw) {
		free(s);
		return NULL;
	}
	return s;
}

void an_state_free(struct an_state *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->ncomms; i++) {
		struct an_comm *c = s->comms[i];
		for (uint32_t k = 0; k < AN_HIST; k++)
			inst_clear(c, &c->hist[k]);
		free(c->m);
		free(c);
	}
	free(s->comms);
	free(s->hosts);
	free(s->nodes);
	free(s->diags);
	free(s->qpw);
	free(s->hmap);
	for (uint32_t i = 0; i < s->nprocs; i++) {
		free(s->procs[i].pairs);
		free(s->procs[i].runs);
	}
	free(s->procs);
	free(s->qps);
	an_dir_free_all(s);
	free(s);
}

const struct an_diagnosis *an_diagnoses(const struct an_state *s, uint32_t *n)
{
	*n = s->ndiags;
	return s->diags;
}

void an_get_counters(const struct an_state *s, struct an_counters *c)
{
	memset(c, 0, sizeof *c);
	c->lines = s->st.lines;
	c->used = s->st.used;
	c->ignored = s->st.ignored;
	c->malformed = s->st.malformed;
	c->ops = s->st.ops;
	c->op_unknown_comm = s->st.op_unknown_comm;
	c->op_bad_rank = s->st.op_bad_rank;
	c->op_skew = s->st.op_skew;
	c->op_dup = s->st.op_dup;
	c->hook_ops = s->st.hook_ops;
	c->hook_unknown_comm = s->st.hook_unknown_comm;
	c->maps = s->st.maps;
	c->windows = s->st.windows;
	c->triggers_slow = s->st.triggers_slow;
	c->triggers_hang = s->st.triggers_hang;
	c->localizations = s->st.localizations;
	c->confirmed = s->st.confirmed;
	c->unconfirmed = s->st.unconfirmed;
	c->hosts = s->nhosts;
	c->nodes = s->nnodes;
	c->comms = s->ncomms;
	for (uint32_t i = 0; i < s->nhosts; i++)
		c->skewed_hosts += s->hosts[i].skewed != 0;
	c->data_ns = s->now_ns;
}

/* ---- hook_map: which communicators each host's processes belong to ---- */

static const struct an_hmap *hmap_find(const struct an_state *s, int host, uint32_t pid,
				       uint64_t comm)
{
	for (uint32_t i = 0; i < s->nhmap; i++) {
		const struct an_hmap *h = &s->hmap[i];
		if (h->host == host && h->comm == comm && (!pid || h->pid == pid))
			return h;
	}
	return NULL;
}

static int host_has_map(const struct an_state *s, int host)
{
	for (uint32_t i = 0; i < s->nhmap; i++)
		if (s->hmap[i].host == host)
			return 1;
	return 0;
}

static int parse_id(const cJSON *v, uint64_t *out)
{
	return cJSON_IsString(v) ? pulse_hex_id_parse(v->valuestring, out) : -1;
}

static int num_of(const cJSON *o, const char *k, double lo, double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
		return -1;
	*out = v->valuedouble;
	return 0;
}

/* Times may be numbers (hook lines) or decimal strings (op records). */
static int time_of(const cJSON *o, const char *k, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1.9e19) {
		*out = (uint64_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsString(v) && v->valuestring && v->valuestring[0] >= '0' &&
	    v->valuestring[0] <= '9') {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(v->valuestring, &end, 10);
		if (!errno && !*end) {
			*out = x;
			return 0;
		}
	}
	return -1;
}

static struct an_qp *qp_get(struct an_state *s, int host, const char *dev, uint32_t qpn)
{
	const char *slash = strrchr(dev, '/');
	if (slash)
		dev = slash + 1; /* "replay:host0/mlx5_0" */
	for (uint32_t i = 0; i < s->nqps; i++) {
		struct an_qp *q = &s->qps[i];
		if (q->host == host && q->qpn == qpn && !strcmp(q->dev, dev))
			return q;
	}
	if (strlen(dev) >= sizeof s->qps->dev ||
	    grow((void **)&s->qps, &s->qps_cap, s->nqps + 1, sizeof *s->qps, 1u << 20))
		return NULL;
	struct an_qp *q = &s->qps[s->nqps++];
	memset(q, 0, sizeof *q);
	q->host = host;
	strcpy(q->dev, dev);
	q->qpn = qpn;
	q->rank = -1;
	return q;
}

uint64_t an_residual(const struct an_state *s, const struct an_comm *c, int32_t rank, uint64_t *last)
{
	uint64_t b = 0, l = 0;
	int node = c->m[rank].node;
	for (uint32_t i = 0; i < s->nqps; i++) {
		const struct an_qp *q = &s->qps[i];
		if (q->comm != c->id || q->rank != rank)
			continue;
		if (node >= 0 && q->host != s->nodes[node].host)
			continue;
		b += q->bytes;
		if (q->last > l)
			l = q->last;
	}
	if (last)
		*last = l;
	uint64_t r = c->m[rank].recorded_bytes;
	return b > r ? b - r : 0;
}

uint64_t an_hang_bound(const struct an_state *s)
{
	uint64_t b = s->cfg.hang_ns;
	/* a finished operator is reported at the agent's first poll after it
	 * ends: a poll interval and a few of the longest operators */
	uint64_t r = s->poll_ns + 4 * s->max_op_ns + 2000000;
	return r > b ? r : b;
}

/* A hook_map line, decoded by the one codec the QP join uses too
 * (wire/hook_map.c). */
static int ingest_map(struct an_state *s, int host, const char *line, size_t len, char *err,
		      size_t errlen)
{
	struct pulse_hook_map m;
	if (pulse_hook_map_from_json(line, len, &m, err, errlen))
		return -1;
	for (uint32_t i = 0; i < m.ncomms; i++) {
		const struct pulse_hook_map_comm *e = &m.comms[i];
		if (e->rank > AN_MAX_RANKS || e->nranks < 0 || e->nranks > AN_MAX_RANKS) {
			snprintf(err, errlen, "hook_map: malformed communicator entry");
			pulse_hook_map_free(&m);
			return -1;
		}
	}
	for (uint32_t i = 0; i < m.ncomms; i++) {
		const struct pulse_hook_map_comm *e = &m.comms[i];
		int32_t rank = e->rank, nranks = e->nranks, gpu = e->gpu.cuda_dev;
		if (hmap_find(s, host, e->pid, e->comm_id))
			continue;
		if (grow((void **)&s->hmap, &s->hmap_cap, s->nhmap + 1, sizeof *s->hmap, 1u << 20)) {
			snprintf(err, errlen, "hook_map: too many communicator entries");
			pulse_hook_map_free(&m);
			return -1;
		}
		struct an_hmap *h = &s->hmap[s->nhmap++];
		h->host = host;
		h->pid = e->pid;
		h->comm = e->comm_id;
		h->rank = rank;
		h->nranks = nranks;
		h->gpu = gpu;
		if (rank >= 0 && rank < nranks && nranks > 0) {
			struct an_comm *c = comm_get(s, e->comm_id, nranks);
			if (c && c->nranks == nranks) {
				int n = an_node_index(s, host, gpu, e->pid, 1);
				if (n >= 0 && c->m[rank].node < 0)
					c->m[rank].node = n;
			}
		}
	}
	for (uint32_t i = 0; i < m.nqps; i++) {
		const struct pulse_hook_map_qp *e = &m.qps[i];
		struct an_qp *q = qp_get(s, host, e->dev, e->qpn);
		if (q && e->has_comm && e->comm_id) {
			q->comm = e->comm_id;
			q->rank = e->rank <= AN_MAX_RANKS ? e->rank : -1;
		}
	}
	pulse_hook_map_free(&m);
	s->st.maps++;
	return 0;
}

static struct an_proc *proc_get(struct an_state *s, int host, uint32_t pid, uint64_t comm)
{
	for (uint32_t i = 0; i < s->nprocs; i++) {
		struct an_proc *p = &s->procs[i];
		if (p->host == host && p->pid == pid && p->comm == comm)
			return p;
	}
	if (grow((void **)&s->procs, &s->procs_cap, s->nprocs + 1, sizeof *s->procs, 1u << 16))
		return NULL;
	struct an_proc *p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof *p);
	p->host = host;
	p->pid = pid;
	p->comm = comm;
	return p;
}

/* The how-manieth send to (or receive from) this peer the call is: NCCL
 * pairs the n-th send from A to B with the n-th receive on B from A,
 * whatever each rank's seq (an all-to-one root receives from every peer
 * in one group: seven seqs for each sender's one). */
/* all processes' pair counters together: bad input naming thousands of
 * processes and peers gets no ordinals past this (the calls stay usable;
 * a receive is then judged by its record alone) */
#define AN_PAIRS_BUDGET (64u << 20)

static void key_run_add(struct an_key_runs *k, uint64_t x, uint64_t y)
{
	if (k->n) {
		struct an_key_run *r = &k->r[(k->pos + AN_KEY_RUNS - 1) % AN_KEY_RUNS];
		if (x == r->x0 + r->n) {
			if (r->n == 1) {
				r->dy = (int64_t)(y - r->y0);
				r->n = 2;
				return;
			}
			if (y == r->y0 + (uint64_t)r->dy * r->n) {
				r->n++;
				return;
			}
		}
	}
	k->r[k->pos] = (struct an_key_run){ .x0 = x, .y0 = y, .dy = 0, .n = 1 };
	k->pos = (k->pos + 1) % AN_KEY_RUNS;
	if (k->n < AN_KEY_RUNS)
		k->n++;
}

/* the group of pair ordinal x; 0 when no run kept holds it */
static int key_run_find(const struct an_key_runs *k, uint64_t x, uint64_t *y)
{
	for (uint32_t i = 0; i < k->n; i++) {
		const struct an_key_run *r = &k->r[(k->pos + AN_KEY_RUNS - 1 - i) % AN_KEY_RUNS];
		if (x >= r->x0 && x < r->x0 + r->n) {
			*y = r->y0 + (uint64_t)r->dy * (x - r->x0);
			return 1;
		}
	}
	return 0;
}

/* the first pair ordinal in group y; 0 when none kept */
static int key_run_first(const struct an_key_runs *k, uint64_t y, uint64_t *x)
{
	int found = 0;
	for (uint32_t i = 0; i < k->n; i++) {
		const struct an_key_run *r = &k->r[i];
		uint64_t at;
		if (r->dy == 0 || r->n == 1) {
			if (y != r->y0)
				continue;
			at = r->x0;
		} else {
			if (r->dy < 0 || y < r->y0 || (y - r->y0) % (uint64_t)r->dy)
				continue;
			uint64_t i2 = (y - r->y0) / (uint64_t)r->dy;
			if (i2 >= r->n)
				continue;
			at = r->x0 + i2;
		}
		if (!found || at < *x)
			*x = at;
		found = 1;
	}
	return found;
}

static uint32_t pair_next(struct an_state *s, struct an_proc *p, uint8_t op, int32_t peer, uint64_t key)
{
	if ((op != PULSE_HOOK_OP_SEND && op != PULSE_HOOK_OP_RECV) || peer < 0 || peer >= AN_MAX_RANKS)
		return UINT32_MAX;
	uint32_t need = 2 * ((uint32_t)peer + 1);
	if (need > p->npairs) {
		uint32_t cap = p->npairs ? p->npairs : 16;
		while (cap < need)
			cap *= 2;
		uint64_t each = sizeof *p->pairs + sizeof *p->runs;
		if (s->pairs_bytes + (uint64_t)(cap - p->npairs) * each > AN_PAIRS_BUDGET)
			return UINT32_MAX;
		uint32_t *x = realloc(p->pairs, cap * sizeof *x);
		if (!x)
			return UINT32_MAX;
		p->pairs = x;
		struct an_key_runs *kr = realloc(p->runs, cap * sizeof *kr);
		if (!kr)
			return UINT32_MAX;
		p->runs = kr;
		memset(x + p->npairs, 0, (cap - p->npairs) * sizeof *x);
		memset(kr + p->npairs, 0, (cap - p->npairs) * sizeof *kr);
		s->pairs_bytes += (uint64_t)(cap - p->npairs) * each;
		p->npairs = cap;
	}
	uint32_t i = 2 * (uint32_t)peer + (op == PULSE_HOOK_OP_RECV);
	key_run_add(&p->runs[i], p->pairs[i], key);
	return p->pairs[i]++;
}

static const struct an_proc *proc_find(const struct an_state *s, int host, uint32_t pid, uint64_t comm)
{
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (p->host == host && p->pid == pid && p->comm == comm)
			return p;
	}
	return NULL;
}

uint64_t an_call_key(const struct an_proc *p, const struct an_call *k)
{
	(void)p;
	return k->ikey_set ? k->ikey : k->key;
}

/* The instance of a receiving rank's group: one number on every rank of
 * it. A group's seq is its first call's on that rank, and the ranks count
 * differently: a one-to-all root calls a send per receiver where each
 * receiver calls one receive, so the root's groups are seq 0, 6, 12... and
 * the receivers' 0, 1, 2 (an all-to-one root the other way round). NCCL
 * pairs the n-th send from A to B with the n-th receive on B from A
 * (pair_next); the group of a rank that only ever receives on the
 * communicator takes the lowest seq of the groups that made its sends. A
 * rank that sends too keeps its own seqs (a pipeline stage's receives
 * renumbered by its neighbours' would collide with its own sends), as do
 * groups whose sends are not known (no hook lines, a sender not heard
 * from, a run no longer kept). The group's calls still kept take the
 * instance (an_call_key): the hang checks find its record by it. */
static uint64_t group_instance(struct an_state *s, const struct an_comm *c, int host, uint32_t pid, int32_t rank,
			       uint64_t seq)
{
	struct an_proc *p = (struct an_proc *)proc_find(s, host, pid, c->id);
	if (!p || !p->runs || rank < 0 || rank >= c->nranks)
		return seq;
	for (uint32_t i = 0; i < p->npairs; i += 2)
		if (p->pairs[i])
			return seq; /* it sends too: its seqs are its own schedule's */
	uint64_t best = UINT64_MAX;
	for (uint32_t peer = 0; 2 * peer + 1 < p->npairs && peer < (uint32_t)c->nranks; peer++) {
		uint64_t x = 0, y = 0;
		if (!key_run_first(&p->runs[2 * peer + 1], seq, &x))
			continue;
		if (c->m[peer].node < 0)
			return seq;
		const struct an_node *pn = &s->nodes[c->m[peer].node];
		const struct an_proc *q = proc_find(s, pn->host, pn->pid, c->id);
		if (!q || 2 * (uint32_t)rank >= q->npairs || !q->runs || !key_run_find(&q->runs[2 * rank], x, &y))
			return seq;
		best = y < best ? y : best;
	}
	if (best == UINT64_MAX || best == seq)
		return seq;
	for (uint32_t k = 0; k < p->n; k++)
		if (p->calls[k].key == seq) {
			p->calls[k].ikey = best;
			p->calls[k].ikey_set = 1;
		}
	return best;
}

const struct an_rec *an_call_record(const struct an_comm *c, int32_t rank, uint64_t key, int *gone)
{
	const struct an_inst *slot = &c->hist[key % AN_HIST];
	*gone = slot->used && slot->seq > key;
	return slot->used && slot->seq == key ? slot->recs[rank] : NULL;
}

int an_rec_finished(const struct an_rec *r)
{
	return r && (r->status == PULSE_OP_COMPLETE || r->status == PULSE_OP_NO_TRAFFIC);
}

/* The sender's process of x, a receive of `rank` in c that NCCL paired
 * (its n-th receive from that peer), or NULL. */
static const struct an_proc *recv_sender(const struct an_state *s, const struct an_comm *c, int32_t rank,
					 const struct an_call *x)
{
	if (x->op != PULSE_HOOK_OP_RECV || x->pair == UINT32_MAX || x->peer < 0 || x->peer >= c->nranks ||
	    x->peer == rank || c->m[x->peer].node < 0)
		return NULL;
	const struct an_node *pn = &s->nodes[c->m[x->peer].node];
	return proc_find(s, pn->host, pn->pid, c->id);
}

/* q, x's sender, never made the send x receives: its sends to rank so far
 * do not reach x's pair */
static int send_unmade(const struct an_proc *q, int32_t rank, const struct an_call *x)
{
	return (uint32_t)rank * 2 + 1 >= q->npairs || q->pairs[2 * (uint32_t)rank] <= x->pair;
}

/* A "no traffic" record r (a call of receives only) whose matching send
 * the sender never made: positive evidence that the call is still
 * waiting. A sender's record not in yet, or lost to a gap, is not: live
 * data has gaps. p is rank's process and k the index of one of the call's
 * calls in p->calls: the calls of one key (a group's) are next to each
 * other in the ring, so only those around k are read (reading every kept
 * call for every call checked made the hang check quadratic: 66% of a
 * 12-host replay's time). */
int an_call_send_unmade(const struct an_state *s, const struct an_comm *c, int32_t rank, const struct an_proc *p,
			uint32_t k, const struct an_rec *r)
{
	if (!r || r->status != PULSE_OP_NO_TRAFFIC || r->node < 0 || !p || k >= p->n)
		return 0;
	uint64_t key = an_call_key(p, &p->calls[k]);
	uint32_t n = p->n;
	/* the ring's oldest call is at pos once it is full, else at 0 */
	uint32_t oldest = n == AN_CALLS ? p->pos % n : 0, newest = (oldest + n - 1) % n;
	uint32_t j = k;
	while (j != oldest && an_call_key(p, &p->calls[(j + n - 1) % n]) == key)
		j = (j + n - 1) % n;
	for (;;) {
		const struct an_call *x = &p->calls[j];
		if (an_call_key(p, x) != key)
			break;
		const struct an_proc *q = recv_sender(s, c, rank, x);
		if (q && send_unmade(q, rank, x))
			return 1;
		if (j == newest)
			break;
		j = (j + 1) % n;
	}
	return 0;
}

/* Finished, for rank's record r of the instance key in c. A call of
 * receives only has nothing on its own NIC, so its record says "no
 * traffic" at the agent's next poll whether the data came or not: it is
 * over when the sends it receives are. While a peer has not made the
 * matching send (the n-th to this rank), or its send has not finished,
 * the rank is still inside the call (an all-to-one root waiting for a
 * sender that stopped): a link of a wait chain, not where it ends. A
 * matching send no longer in the calls kept is taken as finished. */
int an_rec_done(const struct an_state *s, struct an_comm *c, int32_t rank, uint64_t key, const struct an_rec *r)
{
	if (!an_rec_finished(r))
		return 0;
	if (r->status != PULSE_OP_NO_TRAFFIC || r->node < 0)
		return 1;
	const struct an_node *nd = &s->nodes[r->node];
	const struct an_proc *p = proc_find(s, nd->host, nd->pid, c->id);
	if (!p)
		return 1;
	for (uint32_t k = 0; k < p->n; k++) {
		const struct an_call *x = &p->calls[k];
		if (an_call_key(p, x) != key)
			continue;
		const struct an_proc *q = recv_sender(s, c, rank, x);
		if (!q)
			return 1;
		/* the sender never made the matching send: waiting for it */
		if (send_unmade(q, rank, x))
			return 0;
		for (uint32_t j = 0; j < q->n; j++) {
			const struct an_call *y = &q->calls[j];
			if (y->op != PULSE_HOOK_OP_SEND || y->peer != rank || y->pair != x->pair)
				continue;
			int gone;
			const struct an_rec *sr = an_call_record(c, x->peer, an_call_key(q, y), &gone);
			if (!gone && (!sr || sr->status != PULSE_OP_COMPLETE))
				return 0;
		}
	}
	return 1;
}

/* A transfer long enough for its peak epoch to be its path's capacity:
 * a MiB over eight active epochs or more. */
int an_peer_peak_measured(const struct an_rec *r, const struct an_peer *q)
{
	uint64_t ep = r->epoch_ns ? r->epoch_ns : 32000;
	return q->peak && q->actual >= (1u << 20) && q->active >= 8 * ep;
}

/* The median peak epoch of an instance's measured transfers; -1 with
 * fewer than three. */
int an_inst_peak_median(const struct an_inst *in, const struct an_comm *c, double *med)
{
	double pk[512];
	int n = 0;
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE)
			continue;
		for (uint32_t p = 0; p < r->npeers && n < 512; p++)
			if (an_peer_peak_measured(r, &r->peers[p]))
				pk[n++] = (double)r->peers[p].peak;
	}
	if (n < 3)
		return -1;
	*med = an_median(pk, (size_t)n);
	return 0;
}

/* A member whose NIC has nothing to show for this operator: it never
 * finished one of (op, count) while the others of its communicator
 * finished at least two. That is a receive-only role (the last rank of a
 * ring broadcast's chain, a reduce's root on some rings): its agent sees no
 * traffic, so no record or only "not started" ones, and its call stays
 * open for good. Such a call is no evidence of a hang; the members that
 * send are. (A job paused for a checkpoint left such a member as the only
 * one "called, never started": blamed as a stopped GPU.) */
int an_member_silent(const struct an_comm *c, int32_t rank, uint8_t op, uint64_t count)
{
	/* (a receive's record is its sender's: point-to-point calls are not
	 * judged by their own rank's records) */
	if (rank < 0 || rank >= c->nranks || !an_is_builtin(op))
		return 0;
	for (uint32_t g = 0; g < c->nsigs; g++) {
		if (c->sigs[g].op != op || c->sigs[g].count != count)
			continue;
		if (c->m[rank].dur[g].n)
			return 0;
		uint32_t finished = 0;
		for (int32_t q = 0; q < c->nranks; q++)
			if (q != rank && c->m[q].dur[g].n > finished)
				finished = c->m[q].dur[g].n;
		return finished >= 2;
	}
	return 0;
}

int32_t an_map_rank(const struct an_state *s, int host, uint32_t pid, uint64_t comm)
{
	const struct an_hmap *h = hmap_find(s, host, pid, comm);
	return h ? h->rank : -1;
}

static int ingest_hook_op(struct an_state *s, int host, const cJSON *o, char *err, size_t errlen)
{
	uint64_t t, comm, seq = 0, gid = 0;
	double pid, v;
	if (time_of(o, "t_ns", &t) || num_of(o, "pid", 0, 4294967295.0, &pid) ||
	    parse_id(cJSON_GetObjectItemCaseSensitive(o, "comm_id"), &comm) || time_of(o, "seq", &seq)) {
		snprintf(err, errlen, "hook_op: missing or malformed t_ns, pid, comm_id or seq");
		return -1;
	}
	time_of(o, "group_id", &gid);
	s->st.hook_ops++;
	struct an_proc *p = proc_get(s, host, (uint32_t)pid, comm);
	if (!p) {
		snprintf(err, errlen, "hook_op: too many processes");
		return -1;
	}
	/* a group member inherits the group's first seq from the previous call */
	uint64_t key = seq;
	int head = 1;
	if (gid && p->n) {
		const struct an_call *prev = &p->calls[(p->pos + AN_CALLS - 1) % AN_CALLS];
		if (prev->group_id == gid) {
			key = prev->key;
			head = 0;
		}
	}
	struct an_call *k = &p->calls[p->pos];
	p->pos = (p->pos + 1) % AN_CALLS;
	if (p->n < AN_CALLS)
		p->n++;
	memset(k, 0, sizeof *k);
	k->seq = seq;
	k->key = key;
	k->head = (uint8_t)head;
	k->t = t;
	k->group_id = gid;
	k->peer = -1;
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
	if (!cJSON_IsString(op) || pulse_op_type_parse(op->valuestring, &k->op))
		k->op = PULSE_HOOK_OP_OTHER;
	if (!num_of(o, "count", 0, 1.9e19, &v))
		k->count = (uint64_t)v;
	if (!num_of(o, "root_peer", -1, 1 << 24, &v))
		k->peer = (int32_t)v;
	k->pair = pair_next(s, p, k->op, k->peer, key);
	if (seq > p->max_seq || !p->any)
		p->max_seq = seq;
	p->any = 1;
	if (t > p->last_t)
		p->last_t = t;
	const struct an_hmap *h = hmap_find(s, host, (uint32_t)pid, comm);
	if (h) {
		int n = an_node_index(s, host, h->gpu, (uint32_t)pid, 1);
		if (n >= 0 && t > s->nodes[n].last_call)
			s->nodes[n].last_call = t;
	}
	if (t > s->now_ns)
		s->now_ns = t;
	return 0;
}

/* The end of a poll's lines: its agent has reported every operator that
 * ended before settled_ns (host-agent/op_feed.c). The smallest over the
 * hosts is how far every record is in (an_data_in). */
static int ingest_poll_end(struct an_state *s, int host, const cJSON *o, char *err, size_t errlen)
{
	uint64_t v;
	if (time_of(o, "settled_ns", &v)) {
		snprintf(err, errlen, "poll_end: missing settled_ns");
		return -1;
	}
	struct an_host *hh = &s->hosts[host];
	if (v <= hh->settled_ns)
		return 0;
	hh->settled_ns = v;
	uint64_t m = UINT64_MAX;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		const struct an_host *x = &s->hosts[i];
		/* a skewed host's records are dropped anyway; a host with no
		 * window has no traffic to report */
		if (x->skewed || !x->win_seen)
			continue;
		if (x->settled_ns < m)
			m = x->settled_ns;
	}
	if (m != UINT64_MAX && m > s->data_in_ns) {
		s->data_in_ns = m;
		s->settled_moved = 1;
	}
	return 0;
}

/* A poll whose operators wait for the analyzer's JOIN
 * (host-agent/join_wait.c): stalled calls wait with them (trigger.c). */
static int ingest_join_wait(struct an_state *s, int host, const cJSON *o, char *err, size_t errlen)
{
	uint64_t t;
	if (time_of(o, "t_ns", &t)) {
		snprintf(err, errlen, "join_wait: missing t_ns");
		return -1;
	}
	if (t > s->hosts[host].join_wait_ns)
		s->hosts[host].join_wait_ns = t;
	return 0;
}

int an_data_in(const struct an_state *s, uint64_t t)
{
	return t && s->data_in_ns && s->data_in_ns >= t + s->cfg.skew_bound_ns;
}

static int ingest_window(struct an_state *s, int host, const cJSON *o, char *err, size_t errlen)
{
	uint64_t hs, he;
	if (time_of(o, "host_start_ns", &hs) || time_of(o, "host_end_ns", &he)) {
		snprintf(err, errlen, "window: missing host_start_ns/host_end_ns");
		return -1;
	}
	double ep;
	if (!num_of(o, "epoch_ns", 1, 1e10, &ep) && !s->epoch_ns)
		s->epoch_ns = (uint32_t)ep;
	double cerr;
	if (num_of(o, "clock_err_ns", 0, 1e10, &cerr))
		cerr = 0; /* an older agent: no bound given */
	struct an_host *hh = &s->hosts[host];
	hh->win_seen = 1;
	/* a host not counted yet (its first window came after the others'
	 * poll_end) holds data_in back to what it has said */
	if (!hh->skewed && hh->settled_ns < s->data_in_ns)
		s->data_in_ns = hh->settled_ns;
	hh->clock_err[hh->clock_err_pos] = (uint64_t)cerr;
	hh->clock_err_pos = (hh->clock_err_pos + 1) % AN_CLOCK_ERRS;
	hh->clock_err_max = 0;
	for (uint32_t i = 0; i < AN_CLOCK_ERRS; i++)
		if (hh->clock_err[i] > hh->clock_err_max)
			hh->clock_err_max = hh->clock_err[i];
	/* once per window, not per comparison (the delayed start asks for
	 * every candidate) */
	s->clock_err_any = 0;
	for (uint32_t h = 0; h < s->nhosts; h++)
		if (s->hosts[h].clock_err_max > s->clock_err_any)
			s->clock_err_any = s->hosts[h].clock_err_max;
	const cJSON *nic = cJSON_GetObjectItemCaseSensitive(o, "nic");
	const cJSON *qps = cJSON_GetObjectItemCaseSensitive(o, "qps");
	const cJSON *q;
	if (cJSON_IsArray(qps))
		cJSON_ArrayForEach(q, qps)
		{
			double qpn, bytes, mean;
			uint64_t a, b;
			if (num_of(q, "qpn", 0, 16777215, &qpn) || num_of(q, "bytes", 0, 1e19, &bytes) ||
			    num_of(q, "mean_gbps", 0, 1e9, &mean) || time_of(q, "start_ns", &a) ||
			    time_of(q, "end_ns", &b))
				continue;
			if (cJSON_IsString(nic) && nic->valuestring) {
				struct an_qp *acc = qp_get(s, host, nic->valuestring, (uint32_t)qpn);
				if (acc) {
					acc->bytes += (uint64_t)bytes;
					if (!acc->first || (a && a < acc->first))
						acc->first = a;
					if (b > acc->last)
						acc->last = b;
				}
			}
			struct an_qpwin *w = &s->qpw[s->qpw_pos];
			s->qpw_pos = (s->qpw_pos + 1) % AN_QP_RING;
			if (s->nqpw < AN_QP_RING)
				s->nqpw++;
			memset(w, 0, sizeof *w);
			w->host = host;
			if (cJSON_IsString(nic) && nic->valuestring)
				snprintf(w->nic, sizeof w->nic, "%s", nic->valuestring);
			w->qpn = (uint32_t)qpn;
			w->start = a;
			w->end = b;
			w->bytes = (uint64_t)bytes;
			w->mean_gbps = mean;
		}
	s->st.windows++;
	if (he > hs && he - hs < 60000000000ull && he - hs > s->poll_ns)
		s->poll_ns = he - hs;
	if (he > s->now_ns && !s->hosts[host].skewed)
		s->now_ns = he;
	return 0;
}

/* ---- op records ---- */

int an_is_builtin(uint8_t op)
{
	return op >= PULSE_HOOK_OP_ALLREDUCE && op <= PULSE_HOOK_OP_REDUCE;
}

int an_is_p2p(uint8_t op)
{
	return op == PULSE_HOOK_OP_SEND || op == PULSE_HOOK_OP_RECV || op == PULSE_OP_GROUP ||
	       op == PULSE_HOOK_OP_ALLTOALL;
}

static void node_push_end(struct an_node *n, uint64_t end)
{
	n->ends[n->endpos] = end;
	n->endpos = (n->endpos + 1) % AN_NODE_ENDS;
	if (n->nends < AN_NODE_ENDS)
		n->nends++;
	if (end > n->last_end)
		n->last_end = end;
}

static int64_t node_pre_gap(const struct an_node *n, uint64_t call)
{
	uint64_t best = 0;
	for (uint32_t i = 0; i < n->nends; i++)
		if (n->ends[i] <= call && n->ends[i] > best)
			best = n->ends[i];
	return best && call ? (int64_t)(call - best) : -1;
}

/* One decoded operator record, whatever its wire form (JSON line or
 * binary, an_ingest / an_ingest_op). */
static int ingest_op_rec(struct an_state *s, int host, const struct pulse_op_record *r, char *err,
			 size_t errlen)
{
	int rc = -1;
	s->st.ops++;
	if (host >= 0 && strcmp(r->host, s->hosts[host].name)) {
		snprintf(err, errlen, "op record of host \"%s\" on host %s's stream", r->host,
			 s->hosts[host].name);
		goto out;
	}
	if (host < 0 && (host = an_host_index(s, r->host, 1)) < 0) {
		snprintf(err, errlen, "op record: bad host name");
		goto out;
	}
	if (s->hosts[host].skewed) {
		s->st.op_skew++;
		s->hosts[host].dropped_skew++;
		snprintf(err, errlen, "host %s: clock beyond the sync bound, record dropped", r->host);
		rc = 1;
		goto out;
	}
	if (!r->comm_id || r->nranks <= 0 || r->nranks > AN_MAX_RANKS) {
		s->st.op_unknown_comm++;
		snprintf(err, errlen, "op record: no communicator (comm_id 0x%016" PRIx64 ", nranks %d)",
			 r->comm_id, r->nranks);
		an_log(s, "host %s: %s; dropped", r->host, err);
		goto out;
	}
	if (host_has_map(s, host) && !hmap_find(s, host, 0, r->comm_id)) {
		s->st.op_unknown_comm++;
		snprintf(err, errlen, "op record for communicator 0x%016" PRIx64
				      " that host %s's mapping never listed", r->comm_id, r->host);
		an_log(s, "%s; dropped", err);
		goto out;
	}
	if (r->rank < 0 || r->rank >= r->nranks) {
		s->st.op_bad_rank++;
		snprintf(err, errlen, "op record: rank %d outside 0..%d", r->rank, r->nranks - 1);
		an_log(s, "host %s: %s; dropped", r->host, err);
		goto out;
	}
	struct an_comm *c = comm_get(s, r->comm_id, r->nranks);
	if (!c || c->nranks != r->nranks) {
		s->st.op_unknown_comm++;
		snprintf(err, errlen, "op record: communicator 0x%016" PRIx64 " has %d ranks, record says %d",
			 r->comm_id, c ? c->nranks : 0, r->nranks);
		an_log(s, "host %s: %s; dropped", r->host, err);
		goto out;
	}
	int node = an_node_index(s, host, r->gpu, r->pid, 1);
	if (node < 0) {
		snprintf(err, errlen, "op record: too many nodes");
		goto out;
	}
	struct an_member *m = &c->m[r->rank];
	if (m->node < 0)
		m->node = node;
	else if (m->node != node) {
		s->st.op_bad_rank++;
		snprintf(err, errlen, "op record: rank %d of 0x%016" PRIx64 " is %s GPU %d, record says %s GPU %d",
			 r->rank, r->comm_id, an_node_host(s, m->node), s->nodes[m->node].gpu, r->host, r->gpu);
		an_log(s, "%s; dropped", err);
		goto out;
	}
	if (r->parallelism)
		c->par = r->parallelism;
	if (an_is_builtin(r->op))
		c->builtin = 1;
	else if (an_is_p2p(r->op))
		c->custom = 1;

	/* the instance */
	uint64_t key = r->seq;
	if (r->op == PULSE_OP_GROUP || an_is_p2p(r->op))
		key = group_instance(s, c, host, r->pid, r->rank, r->seq);
	struct an_inst *in = &c->hist[key % AN_HIST];
	if (in->used && in->seq != key) {
		if (in->seq > key) {
			snprintf(err, errlen, "op record: seq %" PRIu64 " older than the history kept", key);
			s->st.op_dup++;
			goto out;
		}
		inst_clear(c, in);
		s->st.op_evicted++;
	}
	if (!in->used) {
		in->recs = calloc((size_t)c->nranks, sizeof *in->recs);
		if (!in->recs) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		in->used = 1;
		in->seq = key;
		in->op = r->op;
		in->sig = sig_index(c, r->op, r->count);
	}
	struct an_rec *old = in->recs[r->rank];
	if (old && !(old->status != PULSE_OP_COMPLETE && r->status == PULSE_OP_COMPLETE)) {
		s->st.op_dup++;
		snprintf(err, errlen, "op record: duplicate for rank %d seq %" PRIu64, r->rank, key);
		rc = 1;
		goto out;
	}
	struct an_rec *a = calloc(1, sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	a->node = node;
	a->rank = r->rank;
	a->op = r->op;
	a->status = r->status;
	a->par = r->parallelism;
	a->algo = r->algo;
	a->seq = key;
	a->group_id = r->group_id;
	a->count = r->count;
	a->call = r->call_ns;
	a->start = r->start_ns;
	a->end = r->end_ns;
	a->dur = r->duration_ns ? r->duration_ns
				: (r->end_ns > r->start_ns && r->start_ns ? r->end_ns - r->start_ns : 0);
	a->expected = r->expected_bytes;
	a->actual = r->actual_bytes;
	a->active = r->active_ns;
	a->rank_active = r->rank_active_ns ? r->rank_active_ns : r->active_ns;
	a->rate_gbps = r->rank_rate_gbps;
	a->epoch_ns = r->epoch_ns;
	a->sig = sig_index(c, r->op, r->count); /* per record: the ranks of one P2P pattern differ */
	if (a->sig >= 0 && a->rank >= 0 && a->rank < c->nranks && c->m[a->rank].nrecs[a->sig] < UINT32_MAX)
		c->m[a->rank].nrecs[a->sig]++;
	if (r->epoch_ns && !s->epoch_ns)
		s->epoch_ns = r->epoch_ns;
	if (r->npeers) {
		a->peers = calloc(r->npeers, sizeof *a->peers);
		if (!a->peers) {
			free(a);
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		a->npeers = r->npeers;
		for (uint32_t i = 0; i < r->npeers; i++) {
			const struct pulse_op_peer *p = &r->peers[i];
			struct an_peer *q = &a->peers[i];
			q->rank = p->rank;
			q->node = -1;
			if (p->rank >= 0 && p->rank < c->nranks && c->m[p->rank].node >= 0)
				q->node = c->m[p->rank].node;
			else if (p->host[0]) {
				int h = an_host_index(s, p->host, 1);
				if (h >= 0 && p->gpu >= 0)
					q->node = an_node_index(s, h, p->gpu, 0, 1);
				if (q->node >= 0 && p->rank >= 0 && p->rank < c->nranks &&
				    c->m[p->rank].node < 0)
					c->m[p->rank].node = q->node;
			}
			q->expected = p->expected_bytes;
			q->actual = p->actual_bytes;
			q->start = p->start_ns;
			q->end = p->end_ns;
			q->active = p->active_ns;
			q->peak = p->peak_epoch_bytes;
			q->complete = p->complete;
		}
	}
	struct an_node *nd = &s->nodes[node];
	a->pre_gap = node_pre_gap(nd, a->call);
	if (a->end && a->status == PULSE_OP_COMPLETE)
		node_push_end(nd, a->end);
	if (a->call > nd->last_call)
		nd->last_call = a->call;
	if (a->status == PULSE_OP_HUNG || a->status == PULSE_OP_NOT_STARTED) {
		nd->open_hung++;
		if (!nd->hung_since || a->call < nd->hung_since)
			nd->hung_since = a->call;
		in->hung = 1;
	}
	if (old) {
		m->recorded_bytes -= old->actual < m->recorded_bytes ? old->actual : m->recorded_bytes;
		rec_free(old);
		in->nrec--;
		if (nd->open_hung)
			nd->open_hung--;
	}
	in->recs[r->rank] = a;
	in->nrec++;
	m->recorded_bytes += a->actual;
	if (a->status == PULSE_OP_COMPLETE) {
		m->last_expected[a->sig] = a->expected;
		if (a->end > a->call && a->call && a->end - a->call > s->max_op_ns &&
		    a->end - a->call < 600000000000ull)
			s->max_op_ns = a->end - a->call;
	}
	if (a->call && (!in->first_call || a->call < in->first_call))
		in->first_call = a->call;
	if (a->end > in->last_end)
		in->last_end = a->end;
	c->records++;
	uint64_t t = a->end > a->call ? a->end : a->call;
	if (t > s->now_ns)
		s->now_ns = t;
	an_trigger_on_record(s, c, in, a);
	if (in->nrec == (uint32_t)c->nranks)
		an_trigger_on_instance(s, c, in);
	rc = 0;
out:
	return rc;
}

static int ingest_op(struct an_state *s, int host, const char *line, size_t len, char *err,
		     size_t errlen)
{
	struct pulse_op_record *r = malloc(sizeof *r);
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = pulse_op_record_from_json(line, len, r, err, errlen) ? -1
									: ingest_op_rec(s, host, r, err, errlen);
	free(r);
	return rc;
}

static int ingest_link(struct an_state *s, int host, const char *line, size_t len, char *err, size_t errlen)
{
	struct pulse_link_event e;
	if (pulse_link_event_from_json(line, len, &e, err, errlen))
		return -1;
	if (!strcmp(e.event, "initial") && !pulse_link_event_is_down(&e))
		return 0; /* the state at the agent's start, up: nothing happened */
	struct an_link *l = &s->links[s->links_pos];
	s->links_pos = (s->links_pos + 1) % AN_LINKS;
	if (s->nlinks < AN_LINKS)
		s->nlinks++;
	l->host = host;
	l->t = e.t_ns;
	l->down = pulse_link_event_is_down(&e);
	snprintf(l->netdev, sizeof l->netdev, "%s", e.netdev);
	an_log(s, "%s: link %s %s", s->hosts[host].name, e.netdev, e.state);
	return 0;
}

static int ingest_finding(struct an_state *s, const char *line, size_t len, char *err, size_t errlen)
{
	struct pulse_config_finding f;
	if (pulse_config_finding_from_json(line, len, &f, err, errlen))
		return -1;
	for (uint32_t i = 0; i < s->nfindings; i++)
		if (!strcmp(s->findings[i].host, f.host) && !strcmp(s->findings[i].kind, f.kind) &&
		    !strcmp(s->findings[i].nic, f.nic) && !strcmp(s->findings[i].gpu, f.gpu))
			return 0; /* said again (an agent restarted) */
	if (s->nfindings < AN_FINDINGS)
		s->findings[s->nfindings++] = f;
	return 0;
}

const struct an_link *an_link_down(const struct an_state *s, int h, uint64_t t)
{
	const struct an_link *last = NULL;
	for (uint32_t k = 0; k < s->nlinks; k++) {
		const struct an_link *l = &s->links[(s->links_pos + AN_LINKS - s->nlinks + k) % AN_LINKS];
		if (l->host != h || l->t > t)
			continue;
		if (l->down)
			last = l;
		else if (last && !strcmp(last->netdev, l->netdev))
			last = NULL; /* it came back */
	}
	return last;
}

/* The counting an_ingest and an_ingest_op share */
static int count_rc(struct an_state *s, const char *host, int rc, const char *err)
{
	if (rc < 0) {
		s->st.malformed++;
		an_log(s, "%s: %s; dropped", host ? host : "-", err);
	} else if (rc > 0) {
		s->st.ignored++;
	} else {
		s->st.used++;
	}
	return rc;
}

/* The start an_ingest and an_ingest_op share: err usable (dummy when the
 * caller gave none), the line counted */
#define INGEST_BEGIN(s, err, errlen)                                                               \
	char dummy_[8];                                                                            \
	if (!(err) || !(errlen)) {                                                                 \
		(err) = dummy_;                                                                    \
		(errlen) = sizeof dummy_;                                                          \
	}                                                                                          \
	(err)[0] = '\0';                                                                           \
	(s)->st.lines++

int an_ingest_op(struct an_state *s, const char *host, const struct pulse_op_record *r, char *err,
		 size_t errlen)
{
	INGEST_BEGIN(s, err, errlen);
	int h = -1;
	if (host && (h = an_host_index(s, host, 1)) < 0) {
		snprintf(err, errlen, "bad host name");
		s->st.malformed++;
		return -1;
	}
	return count_rc(s, host, ingest_op_rec(s, h, r, err, errlen), err);
}

int an_ingest(struct an_state *s, const char *host, const char *line, size_t len, char *err,
	      size_t errlen)
{
	INGEST_BEGIN(s, err, errlen);
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (!len) {
		snprintf(err, errlen, "empty line");
		s->st.malformed++;
		return -1;
	}
	if (len > (64u << 20)) {
		snprintf(err, errlen, "line of %zu bytes exceeds the 64 MiB limit", len);
		s->st.malformed++;
		an_log(s, "%s: %s; dropped", host ? host : "-", err);
		return -1;
	}
	int h = -1;
	if (host) {
		h = an_host_index(s, host, 1);
		if (h < 0) {
			snprintf(err, errlen, "bad host name");
			s->st.malformed++;
			return -1;
		}
	}
	cJSON *o = cJSON_ParseWithLength(line, len);
	if (!o || !cJSON_IsObject(o)) {
		snprintf(err, errlen, "not a JSON object");
		cJSON_Delete(o);
		s->st.malformed++;
		an_log(s, "%s: malformed line (%s); dropped", host ? host : "-", err);
		return -1;
	}
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
	int rc;
	if (!cJSON_IsString(type) || !type->valuestring) {
		snprintf(err, errlen, "no \"type\"");
		rc = -1;
	} else if (!strcmp(type->valuestring, "op")) {
		rc = ingest_op(s, h, line, len, err, errlen);
	} else if (h < 0) {
		/* lines other than op records carry no host name */
		snprintf(err, errlen, "\"%s\" line without a host", type->valuestring);
		rc = -1;
	} else if (!strcmp(type->valuestring, "hook_map")) {
		rc = ingest_map(s, h, line, len, err, errlen);
	} else if (!strcmp(type->valuestring, "hook_op")) {
		rc = ingest_hook_op(s, h, o, err, errlen);
	} else if (!strcmp(type->valuestring, "window")) {
		rc = ingest_window(s, h, o, err, errlen);
	} else if (!strcmp(type->valuestring, "poll_end")) {
		rc = ingest_poll_end(s, h, o, err, errlen);
	} else if (!strcmp(type->valuestring, "join_wait")) {
		rc = ingest_join_wait(s, h, o, err, errlen);
	} else if (!strcmp(type->valuestring, "link")) {
		rc = ingest_link(s, h, line, len, err, errlen);
	} else if (!strcmp(type->valuestring, "config_finding")) {
		rc = ingest_finding(s, line, len, err, errlen);
	} else {
		rc = 1; /* hook_group, event, ...: not used by the localizers */
	}
	cJSON_Delete(o);
	return count_rc(s, host, rc, err);
}
