/* Where in the iteration: VenusTrace's critical path (venustrace.txt §3.3,
 * Algorithm 2) from what the agents measure, without the model's
 * configuration. A pipeline's PP communicator gives each rank's batched
 * P2P groups in call order; a send to the next stage carries forward
 * activations, one to the previous stage backward gradients, so the
 * string of send directions is the stage's 1F1B signature, periodic in
 * the iteration, and its period gives the micro-batch count. The groups'
 * measured first and last bytes (and the sender's last byte for what a
 * group receives) bound the compute runs between them; runs, transfers and
 * group completions form one iteration's DAG, whose longest path is the
 * critical path. A slowed part (against the sibling pipelines, else the
 * pipeline's own iterations before the onset) costs the iteration what
 * the DAG loses when it is given back its expected time: nothing when
 * slack absorbed it. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "an_internal.h"
#include "critical_path.h"

/* ---------------- the 1F1B schedule ---------------- */

static int push(struct an_pp_item *out, int *n, int max, struct an_pp_item it)
{
	if (*n >= max)
		return -1;
	out[(*n)++] = it;
	return 0;
}

static int group(struct an_pp_item *out, int *n, int max, int sd, int smb, int rd, int rmb)
{
	if (!sd && !rd)
		return 0;
	struct an_pp_item it = { AN_PP_GROUP, -1, (int8_t)sd, (int8_t)rd, (int16_t)smb, (int16_t)rmb };
	return push(out, n, max, it);
}

static int comp(struct an_pp_item *out, int *n, int max, int kind, int mb)
{
	struct an_pp_item it = { (uint8_t)kind, (int16_t)mb, 0, 0, -1, -1 };
	return push(out, n, max, it);
}

int an_pp_1f1b(int P, int s, int M, struct an_pp_item *out, int max)
{
	if (P < 2 || P > AN_PP_MAX_STAGES || s < 0 || s >= P || M < 1 || M > AN_PP_MAX_MB || !out)
		return -1;
	int n = 0, e = 0;
	int prev = s > 0 ? -1 : 0, next = s < P - 1 ? 1 : 0;
	int warm = P - s - 1 < M ? P - s - 1 : M, rem = M - warm;
	for (int i = 0; i < warm; i++) {
		e |= group(out, &n, max, 0, -1, prev, i);
		e |= comp(out, &n, max, AN_PP_FWD, i);
		e |= group(out, &n, max, next, i, 0, -1);
	}
	if (rem > 0)
		e |= group(out, &n, max, 0, -1, prev, warm);
	for (int i = 0; i < rem; i++) {
		e |= comp(out, &n, max, AN_PP_FWD, warm + i);
		e |= group(out, &n, max, next, warm + i, next, i);
		e |= comp(out, &n, max, AN_PP_BWD, i);
		if (i == rem - 1)
			e |= group(out, &n, max, prev, i, 0, -1);
		else
			e |= group(out, &n, max, prev, i, prev, warm + i + 1);
	}
	for (int i = 0; i < warm; i++) {
		e |= group(out, &n, max, 0, -1, next, rem + i);
		e |= comp(out, &n, max, AN_PP_BWD, rem + i);
		e |= group(out, &n, max, prev, rem + i, 0, -1);
	}
	return e ? -1 : n;
}

static char group_char(const struct an_pp_item *g)
{
	return g->send_dir > 0 ? 'f' : g->send_dir < 0 ? 'b' : '-';
}

int an_pp_signature(int P, int s, int M, char *out, int max)
{
	struct an_pp_item it[AN_PP_MAX_ITEMS];
	int n = an_pp_1f1b(P, s, M, it, AN_PP_MAX_ITEMS);
	if (n < 0 || !out)
		return -1;
	int k = 0;
	for (int i = 0; i < n; i++)
		if (it[i].kind == AN_PP_GROUP) {
			if (k >= max)
				return -1;
			out[k++] = group_char(&it[i]);
		}
	return k;
}

int an_pp_infer(const char *obs, int n, int P, int s, int *phase)
{
	int found = 0, fp = -1;
	char sig[AN_PP_MAX_ITEMS];
	for (int M = 1; M <= AN_PP_MAX_MB; M++) {
		int L = an_pp_signature(P, s, M, sig, (int)sizeof sig);
		if (L <= 0 || L > n)
			continue;
		for (int o = 0; o < L; o++) {
			/* o: the first record that starts an iteration; at least
			 * one whole iteration must lie in the string */
			if (o + L > n)
				break;
			int ok = 1;
			for (int i = 0; i < n && ok; i++)
				ok = obs[i] == sig[((i - o) % L + L) % L];
			if (ok) {
				if (found && found != M)
					return 0; /* two micro-batch counts explain it */
				if (!found || o < fp)
					fp = o;
				found = M;
			}
		}
	}
	if (found && phase)
		*phase = fp;
	return found;
}

/* ---------------- critical path ---------------- */

double an_cp_solve(struct an_cp_vertex *v, int n)
{
	/* vertices in any order: relax until nothing moves (a DAG settles
	 * within n passes) */
	for (int i = 0; i < n; i++) {
		v[i].es = v[i].release;
		v[i].ef = v[i].es + v[i].dur;
	}
	for (int pass = 0; pass <= n; pass++) {
		int moved = 0;
		for (int i = 0; i < n; i++) {
			double es = v[i].release;
			for (int k = 0; k < 4; k++) {
				int p = v[i].pred[k];
				if (p >= 0 && p < n && v[p].ef > es)
					es = v[p].ef;
			}
			if (es != v[i].es) {
				v[i].es = es;
				v[i].ef = es + v[i].dur;
				moved = 1;
			}
		}
		if (!moved)
			break;
	}
	double span = 0;
	for (int i = 0; i < n; i++)
		if (v[i].ef > span)
			span = v[i].ef;
	for (int i = 0; i < n; i++)
		v[i].lf = span;
	for (int pass = 0; pass <= n; pass++) {
		int moved = 0;
		for (int i = 0; i < n; i++) {
			double ls = v[i].lf - v[i].dur;
			for (int k = 0; k < 4; k++) {
				int p = v[i].pred[k];
				if (p >= 0 && p < n && ls < v[p].lf) {
					v[p].lf = ls;
					moved = 1;
				}
			}
		}
		if (!moved)
			break;
	}
	for (int i = 0; i < n; i++)
		v[i].slack = v[i].lf - v[i].ef;
	return span;
}

/* ---------------- one pipeline, from the analyzer's records ---------------- */

enum { V_RUN = 1, V_XFER = 2, V_GRP = 3 };

/* one vertex of an iteration's DAG with what was measured */
struct cpv {
	int type;
	int rank;                /* stage */
	int kind;                /* run: AN_PP_FWD, AN_PP_BWD, or both (3); xfer: its dir */
	int mb, mb2;             /* run: its items' micro-batches (mb2: the second, -1) */
	int kind2;
	int measured;
	double t0, t1;           /* measured start and end (common clock) */
	double split;            /* run of two items: the first one's share, NAN unknown */
	double splitt;           /* the time that splits them (common clock), 0 unknown */
	double skew;
	int to;                  /* xfer: the receiving stage */
	uint64_t h0, h1;         /* host-clock start, end (timeline) */
};

struct cp_rank {
	const struct an_rec **r; /* its records on the PP communicator, in seq order */
	int n;
	int M, phase, L;         /* micro-batches, first iteration start, groups per iteration */
	int off;                 /* local iteration = pipeline iteration + off */
	int64_t skew;
	uint64_t *tp;            /* call times of its TP-communicator records, ascending */
	int ntp;
};

struct cp_pipe {
	const struct an_comm *c;
	int P, M;
	struct cp_rank *rk;
	int niter;               /* pipeline iterations with every rank complete */
	int first;               /* the first such pipeline iteration */
};

static int cmp_rec(const void *a, const void *b)
{
	const struct an_rec *x = *(const struct an_rec *const *)a, *y = *(const struct an_rec *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static char rec_char(const struct an_rec *r)
{
	for (uint32_t i = 0; i < r->npeers; i++) {
		if (!r->peers[i].expected && !r->peers[i].actual)
			continue;
		if (r->peers[i].rank == r->rank + 1)
			return 'f';
		if (r->peers[i].rank == r->rank - 1)
			return 'b';
	}
	return '-';
}

static const struct an_peer *rec_peer(const struct an_rec *r, int32_t rank)
{
	for (uint32_t i = 0; r && i < r->npeers; i++)
		if (r->peers[i].rank == rank)
			return &r->peers[i];
	return NULL;
}

/* the TP communicator's record call times of node (ascending) */
static int tp_calls(const struct an_state *s, int node, uint64_t **out)
{
	*out = NULL;
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		if (c->par != PULSE_PAR_TP)
			continue;
		int32_t k = -1;
		for (int32_t m = 0; m < c->nranks; m++)
			if (c->m[m].node == node)
				k = m;
		if (k < 0)
			continue;
		uint64_t *v = malloc(AN_HIST * sizeof *v);
		if (!v)
			return 0;
		int n = 0;
		for (int i = 0; i < AN_HIST; i++) {
			const struct an_inst *in = &c->hist[i];
			if (in->used && in->recs && in->recs[k] && in->recs[k]->call)
				v[n++] = in->recs[k]->call;
		}
		qsort(v, (size_t)n, sizeof *v, cmp_u64);
		*out = v;
		return n;
	}
	return 0;
}

static void pipe_free(struct cp_pipe *p)
{
	if (!p->rk)
		return;
	for (int i = 0; i < p->P; i++) {
		free(p->rk[i].r);
		free(p->rk[i].tp);
	}
	free(p->rk);
	p->rk = NULL;
}

static double ctime(const struct cp_rank *k, uint64_t t)
{
	return (double)((int64_t)t - k->skew);
}

static const struct an_rec *grp_rec(const struct cp_pipe *p, int s, int it, int g)
{
	const struct cp_rank *k = &p->rk[s];
	long i = (long)k->phase + (long)(it + k->off) * k->L + g;
	return i >= 0 && i < k->n ? k->r[i] : NULL;
}

/* the first send's first byte of a rank's pipeline iteration (common clock), 0 none */
static double iter_anchor(const struct cp_pipe *p, int s, int local)
{
	const struct cp_rank *k = &p->rk[s];
	for (int g = 0; g < k->L; g++) {
		long i = (long)k->phase + (long)local * k->L + g;
		if (i < 0 || i >= k->n)
			return 0;
		const struct an_rec *r = k->r[i];
		if (r->start && rec_char(r) != '-')
			return ctime(k, r->start);
	}
	return 0;
}

/* a pipeline: every rank's records, its schedule, iterations aligned */
static int pipe_build(const struct an_state *s, const struct an_comm *c, struct cp_pipe *p)
{
	memset(p, 0, sizeof *p);
	p->c = c;
	p->P = c->nranks;
	if (p->P < 2 || p->P > AN_PP_MAX_STAGES)
		return -1;
	p->rk = calloc((size_t)p->P, sizeof *p->rk);
	if (!p->rk)
		return -1;
	for (int k = 0; k < p->P; k++) {
		struct cp_rank *q = &p->rk[k];
		q->r = malloc(AN_HIST * sizeof *q->r);
		if (!q->r)
			return -1;
		for (int i = 0; i < AN_HIST; i++) {
			const struct an_inst *in = &c->hist[i];
			if (in->used && in->recs && in->recs[k])
				q->r[q->n++] = in->recs[k];
		}
		if (!q->n)
			return -1;
		qsort(q->r, (size_t)q->n, sizeof *q->r, cmp_rec);
		int node = q->r[0]->node;
		q->skew = s->hosts[s->nodes[node].host].skew_ns;
		q->ntp = tp_calls(s, node, &q->tp);
		char *sig = malloc((size_t)q->n + 1);
		if (!sig)
			return -1;
		for (int i = 0; i < q->n; i++)
			sig[i] = rec_char(q->r[i]);
		q->M = an_pp_infer(sig, q->n, p->P, k, &q->phase);
		free(sig);
		if (!q->M || (k && q->M != p->rk[0].M))
			return -1;
		char tmp[AN_PP_MAX_ITEMS];
		q->L = an_pp_signature(p->P, k, q->M, tmp, (int)sizeof tmp);
	}
	p->M = p->rk[0].M;
	/* align: stage k's first iteration whose first send follows the
	 * arrival of micro-batch 0's activations from stage k-1 */
	for (int k = 1; k < p->P; k++) {
		const struct cp_rank *a = &p->rk[k - 1];
		struct cp_rank *b = &p->rk[k];
		int it = -a->off < 0 ? 0 : -a->off, done = 0;
		for (; !done && (long)a->phase + (long)(it + a->off + 1) * a->L <= a->n; it++) {
			/* the group of stage k-1 that sends mb 0 forward */
			struct an_pp_item items[AN_PP_MAX_ITEMS];
			int ni = an_pp_1f1b(p->P, k - 1, p->M, items, AN_PP_MAX_ITEMS), g = 0;
			const struct an_rec *r = NULL;
			for (int i = 0; i < ni; i++)
				if (items[i].kind == AN_PP_GROUP) {
					if (items[i].send_dir > 0 && items[i].send_mb == 0)
						r = grp_rec(p, k - 1, it, g);
					g++;
				}
			const struct an_peer *q = rec_peer(r, k);
			if (!q || !q->end)
				continue;
			double arr = ctime(a, q->end);
			for (int j = 0; (long)b->phase + (long)(j + 1) * b->L <= b->n; j++) {
				double t = iter_anchor(p, k, j);
				if (t > arr) {
					b->off = j - it;
					done = 1;
					break;
				}
			}
		}
		if (!done)
			return -1;
	}
	int lo = -1000000, hi = 1000000;
	for (int k = 0; k < p->P; k++) {
		const struct cp_rank *q = &p->rk[k];
		int whole = (q->n - q->phase) / q->L;
		if (-q->off > lo)
			lo = -q->off;
		if (whole - q->off < hi)
			hi = whole - q->off;
	}
	p->first = lo;
	p->niter = hi > lo ? hi - lo : 0;
	return p->niter > 0 ? 0 : -1;
}

/* a new vertex of type on stage rank after prev (-1 none) */
static int vertex_new(struct an_cp_vertex *v, struct cpv *m, int *n, int type, int rank, int prev)
{
	int i = (*n)++;
	memset(&v[i], 0, sizeof v[i]);
	memset(&m[i], 0, sizeof m[i]);
	for (int k = 0; k < 4; k++)
		v[i].pred[k] = -1;
	v[i].pred[0] = prev;
	m[i].type = type;
	m[i].rank = rank;
	m[i].mb2 = -1;
	m[i].split = NAN;
	return i;
}

/* The DAG of pipeline iteration it: vertices v (graph) and m (what was
 * measured). Returns the vertex count, -1 when a record is missing. */
#define CP_MAXV (AN_PP_MAX_STAGES * 4 * AN_PP_MAX_MB)
static int dag_build(const struct cp_pipe *p, int it, struct an_cp_vertex *v, struct cpv *m, int maxv)
{
	int n = 0;
	/* xfer vertex per (sender stage, dir, mb) */
	int xf[AN_PP_MAX_STAGES][2][AN_PP_MAX_MB];
	int grp_recv[CP_MAXV][3]; /* group vertex: receives (from stage, dir, mb) */
	memset(xf, -1, sizeof xf);
	for (int s = 0; s < p->P; s++) {
		struct an_pp_item items[AN_PP_MAX_ITEMS];
		int ni = an_pp_1f1b(p->P, s, p->M, items, AN_PP_MAX_ITEMS);
		const struct cp_rank *q = &p->rk[s];
		int prev = -1, g = 0, run = -1;
		const struct an_rec *prev_rec = NULL;
		for (int i = 0; i < ni; i++) {
			if (n + 3 > maxv)
				return -1;
			if (items[i].kind != AN_PP_GROUP) {
				if (run < 0) {
					run = vertex_new(v, m, &n, V_RUN, s, prev);
					m[run].kind = items[i].kind;
					m[run].mb = items[i].mb;
					m[run].skew = (double)q->skew;
					prev = run;
				} else {
					m[run].kind2 = items[i].kind;
					m[run].mb2 = items[i].mb;
				}
				continue;
			}
			const struct an_rec *r = grp_rec(p, s, it, g++);
			if (!r)
				return -1;
			int gv = vertex_new(v, m, &n, V_GRP, s, prev);
			grp_recv[gv][0] = -1;
			if (items[i].recv_dir) {
				grp_recv[gv][0] = s + items[i].recv_dir; /* the sender */
				grp_recv[gv][1] = -items[i].recv_dir;
				grp_recv[gv][2] = items[i].recv_mb;
			}
			double own_end = 0, own_start = 0;
			if (items[i].send_dir) {
				int xv = vertex_new(v, m, &n, V_XFER, s, prev);
				m[xv].to = s + items[i].send_dir;
				m[xv].kind = items[i].send_dir;
				m[xv].mb = items[i].send_mb;
				const struct an_peer *pe = rec_peer(r, s + items[i].send_dir);
				if (pe && pe->start && pe->end >= pe->start) {
					m[xv].measured = 1;
					m[xv].t0 = own_start = ctime(q, pe->start);
					m[xv].t1 = own_end = ctime(q, pe->end);
					m[xv].h0 = pe->start;
					m[xv].h1 = pe->end;
					v[xv].dur = m[xv].t1 - m[xv].t0;
				}
				v[gv].pred[1] = xv;
				if (items[i].send_mb >= 0 && items[i].send_mb < AN_PP_MAX_MB)
					xf[s][items[i].send_dir > 0][items[i].send_mb] = xv;
			}
			m[gv].t0 = own_start;
			m[gv].t1 = own_end; /* the receive's arrival is added below */
			/* the run before this group ends where its send starts */
			if (run >= 0 && own_start > 0) {
				m[run].t1 = own_start;
				/* two items: the TP collectives between the two
				 * groups' calls split it, half of them each (a
				 * forward and a backward pass have as many), the
				 * second half's first call marking its start */
				if (m[run].kind2 && prev_rec && q->ntp) {
					uint64_t a = prev_rec->call, b = r->call;
					int lo = 0, cnt = 0;
					while (lo < q->ntp && q->tp[lo] <= a)
						lo++;
					while (lo + cnt < q->ntp && q->tp[lo + cnt] < b)
						cnt++;
					if (cnt >= 2 && cnt % 2 == 0)
						m[run].splitt = ctime(q, q->tp[lo + cnt / 2]);
				}
			}
			prev = gv;
			prev_rec = r;
			run = -1;
		}
		/* a trailing run (stage 0's last backward) has no send to end it */
	}
	/* receives: the group waits for the peer's transfer */
	for (int i = 0; i < n; i++) {
		if (m[i].type != V_GRP || grp_recv[i][0] < 0)
			continue;
		int from = grp_recv[i][0], dir = grp_recv[i][1], mb = grp_recv[i][2];
		if (from < 0 || from >= p->P || mb < 0 || mb >= AN_PP_MAX_MB)
			continue;
		int xv = xf[from][dir > 0][mb];
		if (xv < 0)
			continue;
		v[i].pred[2] = xv;
		if (m[xv].measured && m[xv].t1 > m[i].t1)
			m[i].t1 = m[xv].t1;
	}
	/* runs start when the group before them completed; the first run of
	 * stage 0 starts at its release, unknown here: not measured */
	for (int i = 0; i < n; i++) {
		if (m[i].type != V_RUN)
			continue;
		int pg = v[i].pred[0];
		if (pg < 0) {
			m[i].measured = 0;
			v[i].dur = 0;
			continue;
		}
		double t0 = m[pg].t1;
		if (t0 > 0 && m[i].t1 > 0 && m[i].t1 >= t0) {
			m[i].t0 = t0;
			m[i].measured = 1;
			v[i].dur = m[i].t1 - t0;
			m[i].h0 = (uint64_t)(m[i].t0 + m[i].skew);
			m[i].h1 = (uint64_t)(m[i].t1 + m[i].skew);
			if (m[i].splitt > 0 && v[i].dur > 0) {
				double f = (m[i].splitt - t0) / v[i].dur;
				m[i].split = f < 0 ? 0 : f > 1 ? 1 : f;
			}
		} else {
			m[i].measured = 0;
			v[i].dur = 0;
		}
	}
	/* release: a vertex with no predecessor (stage 0's first run, whose
	 * start lies in the previous iteration's tail) starts where it was
	 * measured to end, with no duration */
	for (int i = 0; i < n; i++)
		if (v[i].pred[0] < 0 && v[i].pred[1] < 0 && v[i].pred[2] < 0)
			v[i].release = m[i].t1 > 0 ? m[i].t1 : m[i].t0;
	/* earliest release: the DAG's times relative to it */
	double t0 = 0;
	for (int i = 0; i < n; i++)
		if (m[i].measured && m[i].t0 > 0 && (t0 == 0 || m[i].t0 < t0))
			t0 = m[i].t0;
	for (int i = 0; i < n; i++)
		if (v[i].release > 0)
			v[i].release -= t0;
	/* an unreleased first vertex (no measurement) starts at the origin */
	return n;
}

/* the parts whose time is compared: a run (or, split, each of its two
 * items) and every transfer */
struct cp_part {
	int v;                   /* vertex */
	int half;                /* 0 whole, 1 first item, 2 second */
	int kind;                /* 1 fwd, 2 bwd, 3 fwd+bwd, 4 transmission */
	int mb;
	double t;                /* measured ns */
};

static int parts_of(const struct cpv *m, const struct an_cp_vertex *v, int n, int stage, struct cp_part *out,
		    int max)
{
	int k = 0;
	for (int i = 0; i < n && k + 2 <= max; i++) {
		if (!m[i].measured)
			continue;
		if (m[i].type == V_XFER && (m[i].rank == stage || m[i].to == stage)) {
			out[k++] = (struct cp_part){ i, 0, 4, m[i].mb, v[i].dur };
		} else if (m[i].type == V_RUN && m[i].rank == stage) {
			if (!m[i].kind2 || m[i].kind2 == m[i].kind) {
				out[k++] = (struct cp_part){ i, 0, m[i].kind, m[i].mb, v[i].dur };
			} else if (!isnan(m[i].split)) {
				out[k++] = (struct cp_part){ i, 1, m[i].kind, m[i].mb, v[i].dur * m[i].split };
				out[k++] = (struct cp_part){ i, 2, m[i].kind2, m[i].mb2, v[i].dur * (1 - m[i].split) };
			} else {
				out[k++] = (struct cp_part){ i, 0, 3, m[i].kind == AN_PP_FWD ? m[i].mb : m[i].mb2,
							     v[i].dur };
			}
		}
	}
	return k;
}

static const char *kind_name(int k)
{
	return k == 1 ? "forward" : k == 2 ? "backward" : k == 3 ? "forward+backward" : "transmission";
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *x, int n)
{
	if (n <= 0)
		return NAN;
	qsort(x, (size_t)n, sizeof *x, cmp_dbl);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

struct cp_work {
	struct an_cp_vertex v[CP_MAXV];
	struct cpv m[CP_MAXV];
	struct an_cp_vertex v2[CP_MAXV];
	struct cpv m2[CP_MAXV];
	struct cp_part parts[CP_MAXV];
	struct cp_part p2[CP_MAXV];
	double samples[CP_MAXV][8];
	int nsamples[CP_MAXV];
	/* per vertex: the baselines' durations (the DAG of one schedule has
	 * the same vertices in the same order in every pipeline) */
	double vsamples[CP_MAXV][8];
	int nvsamples[CP_MAXV];
	double e[CP_MAXV];
	/* the pipeline's measured 1F1B span in the baselines */
	double spans[8];
	int nspans;
};

/* the measured span of an iteration's DAG: its first measured start to its
 * last measured end (a group's end: its last arrival) */
static double measured_span(const struct cpv *m, int n)
{
	double a = 0, b = 0;
	for (int i = 0; i < n; i++) {
		if (m[i].type != V_GRP && !m[i].measured)
			continue;
		if (m[i].t0 > 0 && (a == 0 || m[i].t0 < a))
			a = m[i].t0;
		if (m[i].t1 > b)
			b = m[i].t1;
	}
	return a > 0 && b > a ? b - a : 0;
}

/* expected time of each part: the median over the baselines' same part;
 * of each vertex: the median over the baselines' same vertex */
static void add_samples(struct cp_work *w, int n, int n2, int np, const struct cp_part *base, int nb)
{
	for (int i = 0; n2 == n && i < n; i++)
		if (w->m2[i].measured && w->m2[i].type == w->m[i].type && w->nvsamples[i] < 8)
			w->vsamples[i][w->nvsamples[i]++] = w->v2[i].dur;
	double sp = measured_span(w->m2, n2);
	if (n2 == n && sp > 0 && w->nspans < 8)
		w->spans[w->nspans++] = sp;
	for (int i = 0; i < np; i++) {
		const struct cp_part *a = &w->parts[i];
		for (int j = 0; j < nb; j++) {
			const struct cp_part *b = &base[j];
			if (b->kind == a->kind && b->mb == a->mb && b->half == a->half &&
			    w->m2[b->v].type == w->m[a->v].type && w->m2[b->v].rank == w->m[a->v].rank &&
			    w->m2[b->v].to == w->m[a->v].to && w->nsamples[i] < 8) {
				w->samples[i][w->nsamples[i]++] = b->t;
				break;
			}
		}
	}
}

static int find_pp(const struct an_state *s, int node, int32_t *rank)
{
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		if (c->par != PULSE_PAR_PP || !c->custom || c->nranks < 2)
			continue;
		for (int32_t k = 0; k < c->nranks; k++)
			if (c->m[k].node == node) {
				*rank = k;
				return (int)ci;
			}
	}
	return -1;
}

static int suspect_node(const struct an_state *s, const struct an_suspect *x)
{
	int h = -1;
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, x->host))
			h = (int)i;
	if (h < 0)
		return -1;
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].host == h && s->nodes[i].gpu == x->gpu)
			return (int)i;
	return -1;
}

/* analysis of one pipeline iteration against its expected part times */
struct cp_eval {
	int kind, mb, critical, nslow, part;
	double excess, cost, slack, span, rel, purity, grew;
	uint64_t h0, h1;
};

static int evaluate(struct cp_work *w, int n, int np, struct cp_eval *e)
{
	double exc[5] = { 0 }, exp_[5] = { 0 }, relsum[5] = { 0 };
	int nrel[5] = { 0 };
	double ex[CP_MAXV];
	for (int i = 0; i < np; i++) {
		ex[i] = NAN;
		if (w->nsamples[i] < 1)
			continue;
		double med = median_of(w->samples[i], w->nsamples[i]);
		ex[i] = w->parts[i].t - med;
		exc[w->parts[i].kind] += ex[i];
		exp_[w->parts[i].kind] += med;
		if (med > 0) {
			relsum[w->parts[i].kind] += ex[i] / med;
			nrel[w->parts[i].kind]++;
		}
	}
	int best = 0;
	double brel = 0.10; /* at least 10% slower than expected over the iteration */
	for (int k = 1; k <= 4; k++) {
		if (exp_[k] <= 0 || exc[k] < 20e3)
			continue;
		/* the kind's excess over its expected time, or the mean of its
		 * parts' relative excess, whichever is larger: a run whose send
		 * waited for its receiver holds a long expected time, and a
		 * slowdown before it shortens that wait (it comes out faster),
		 * which would hide the slowed parts in the sum */
		double rel = exc[k] / exp_[k];
		if (nrel[k] && relsum[k] / nrel[k] > rel)
			rel = relsum[k] / nrel[k];
		if (rel > brel) {
			brel = rel;
			best = k;
		}
	}
	if (!best)
		return 0;
	double all = 0;
	for (int k = 1; k <= 4; k++)
		if (exc[k] > 0)
			all += exc[k];
	e->purity = all > 0 ? exc[best] / all : 0;
	/* The what-if on the expected schedule: every vertex at its
	 * baselines' median (the measured one where none), then the slowed
	 * parts of that kind at their measured time. Measured times of the
	 * other vertices would count the waits the slowdown itself caused
	 * (a send waits for its receiver) as their own work. */
	for (int i = 0; i < n; i++) {
		w->e[i] = w->nvsamples[i] ? median_of(w->vsamples[i], w->nvsamples[i]) : w->v[i].dur;
		w->v[i].dur = w->e[i];
	}
	memcpy(w->v2, w->v, (size_t)n * sizeof *w->v);
	double sum = 0;
	int ns = 0, top = -1;
	for (int i = 0; i < np; i++) {
		if (w->parts[i].kind != best || isnan(ex[i]) || ex[i] <= 0.05 * (w->parts[i].t - ex[i]) ||
		    ex[i] < 10e3)
			continue;
		w->v2[w->parts[i].v].dur += ex[i];
		sum += ex[i];
		ns++;
	}
	if (!ns)
		return 0;
	double base = an_cp_solve(w->v, n);
	double span = an_cp_solve(w->v2, n);
	double cost = span - base;
	/* The DAG knows no receiver gating (a send starts when its receiver
	 * has posted its buffers, which the records do not show apart from the
	 * sender's compute), so its cost can fall short; what the pipeline's
	 * measured span grew by over its baselines is the other witness.
	 * Absorbed only when both say the slowdown cost (nearly) nothing. */
	double grew = NAN;
	if (w->nspans) {
		double sp = measured_span(w->m, n);
		grew = sp - median_of(w->spans, w->nspans);
	}
	double worst = isnan(grew) || grew < cost ? cost : grew;
	int critical = worst >= 0.2 * sum && worst > 5e3;
	e->grew = grew;
	/* the part named: the most slowed on the critical path (absorbed: the
	 * most slowed) */
	double bx = 0;
	for (int i = 0; i < np; i++) {
		if (w->parts[i].kind != best || isnan(ex[i]) || ex[i] <= 0)
			continue;
		int on = w->v2[w->parts[i].v].slack < 1e3;
		if (critical && !on)
			continue;
		if (ex[i] > bx) {
			bx = ex[i];
			top = i;
		}
	}
	if (top < 0)
		return 0;
	e->kind = best;
	e->mb = w->parts[top].mb;
	e->critical = critical;
	e->nslow = ns;
	e->excess = sum;
	e->cost = cost;
	e->slack = w->v[w->parts[top].v].slack; /* before it was slowed */
	e->span = span;
	e->rel = brel;
	e->part = top;
	const struct cpv *tv = &w->m[w->parts[top].v];
	e->h0 = tv->h0;
	e->h1 = tv->h1;
	if (w->parts[top].half && !isnan(tv->split)) { /* the named pass of a split run */
		uint64_t cut = tv->h0 + (uint64_t)(tv->split * (double)(tv->h1 - tv->h0));
		if (w->parts[top].half == 1)
			e->h1 = cut;
		else
			e->h0 = cut;
	}
	return 1;
}

static int where_one(const struct an_state *s, const struct an_diagnosis *d, uint32_t si, struct an_where *w,
		     double *purity)
{
	memset(w, 0, sizeof *w);
	w->micro_batch = -1;
	int node = suspect_node(s, &d->suspects[si]);
	int32_t stage = -1;
	int ci = node >= 0 ? find_pp(s, node, &stage) : -1;
	if (ci < 0) {
		snprintf(w->note, sizeof w->note, "%s GPU %d is in no pipeline (PP) communicator",
			 d->suspects[si].host, d->suspects[si].gpu);
		return 0;
	}
	const struct an_comm *c = s->comms[ci];
	snprintf(w->host, sizeof w->host, "%s", d->suspects[si].host);
	w->gpu = d->suspects[si].gpu;
	w->comm_id = c->id;
	w->stage = stage;
	w->nstages = c->nranks;
	struct cp_pipe p;
	if (pipe_build(s, c, &p) < 0) {
		pipe_free(&p);
		snprintf(w->note, sizeof w->note, "its pipeline's P2P calls match no 1F1B schedule");
		return 0;
	}
	w->nmicro = p.M;
	/* sibling pipelines: other PP communicators of the same shape and schedule */
	struct cp_pipe *sib = calloc(8, sizeof *sib);
	int nsib = 0;
	for (uint32_t i = 0; sib && i < s->ncomms && nsib < 8; i++) {
		const struct an_comm *x = s->comms[i];
		if ((int)i == ci || x->par != PULSE_PAR_PP || !x->custom || x->nranks != c->nranks)
			continue;
		if (pipe_build(s, x, &sib[nsib]) == 0 && sib[nsib].M == p.M)
			nsib++;
		else
			pipe_free(&sib[nsib]);
	}
	struct cp_work *wk = malloc(sizeof *wk);
	struct cp_eval best = { 0 };
	int have = 0, best_sib = 0;
	uint64_t onset = d->onset_ns;
	for (int it = p.first; wk && it < p.first + p.niter; it++) {
		int n = dag_build(&p, it, wk->v, wk->m, CP_MAXV);
		if (n <= 0)
			continue;
		double anchor = iter_anchor(&p, 0, it + p.rk[0].off);
		if (onset && anchor + (double)p.rk[0].skew < (double)onset && it + 1 < p.first + p.niter) {
			/* an iteration that ended before the onset is no evidence */
			double nxt = iter_anchor(&p, 0, it + 1 + p.rk[0].off);
			if (nxt > 0 && nxt + (double)p.rk[0].skew < (double)onset)
				continue;
		}
		int np = parts_of(wk->m, wk->v, n, stage, wk->parts, CP_MAXV);
		memset(wk->nsamples, 0, sizeof wk->nsamples);
		memset(wk->nvsamples, 0, sizeof wk->nvsamples);
		wk->nspans = 0;
		/* The baseline: the pipeline's own earlier iterations when two lie
		 * before the onset (a query: two earlier ones), else the sibling
		 * pipelines. Its own history cancels the clock offsets between its
		 * hosts (the analyzer estimates them from collectives of three ranks
		 * or more only); siblings serve a fault present from the start. */
		int own = 0, all_before = it - p.first;
		for (int j = p.first; j < it; j++) {
			double a = iter_anchor(&p, 0, j + 1 + p.rk[0].off);
			own += onset && a > 0 && a + (double)p.rk[0].skew < (double)onset;
		}
		int use_sib = onset ? own < 2 && nsib >= 2 : all_before < 2 && nsib >= 2;
		if (!use_sib && !(onset ? own : all_before) && nsib)
			use_sib = 1;
		if (use_sib) {
			for (int k = 0; k < nsib; k++) {
				/* the sibling's iteration that starts nearest this one */
				int bi = -1;
				double bd = 0;
				for (int j = sib[k].first; j < sib[k].first + sib[k].niter; j++) {
					double a = iter_anchor(&sib[k], 0, j + sib[k].rk[0].off);
					double dd = fabs(a - anchor);
					if (a > 0 && (bi < 0 || dd < bd)) {
						bi = j;
						bd = dd;
					}
				}
				if (bi < 0)
					continue;
				int n2 = dag_build(&sib[k], bi, wk->v2, wk->m2, CP_MAXV);
				if (n2 <= 0)
					continue;
				int nb = parts_of(wk->m2, wk->v2, n2, stage, wk->p2, CP_MAXV);
				add_samples(wk, n, n2, np, wk->p2, nb);
			}
		} else {
			/* the pipeline's own earlier iterations: those before the
			 * onset, else (a fault from the start, or a query) all
			 * earlier ones: their median holds while fewer than half
			 * of them are slowed */
			int before = own;
			for (int j = it - 1; j >= p.first && wk->nvsamples[0] < 8; j--) {
				double a = iter_anchor(&p, 0, j + 1 + p.rk[0].off);
				if (before && (a <= 0 || a + (double)p.rk[0].skew >= (double)onset))
					continue;
				int n2 = dag_build(&p, j, wk->v2, wk->m2, CP_MAXV);
				if (n2 <= 0)
					continue;
				int nb = parts_of(wk->m2, wk->v2, n2, stage, wk->p2, CP_MAXV);
				add_samples(wk, n, n2, np, wk->p2, nb);
			}
		}
		struct cp_eval e = { 0 };
		if (evaluate(wk, n, np, &e) && (!have || e.excess > best.excess)) {
			best_sib = use_sib;
			best = e;
			have = 1;
		}
	}
	free(wk);
	for (int k = 0; k < nsib; k++)
		pipe_free(&sib[k]);
	free(sib);
	pipe_free(&p);
	snprintf(w->baseline, sizeof w->baseline, "%s", best_sib ? "sibling pipelines" : "earlier iterations");
	if (!have) {
		snprintf(w->note, sizeof w->note,
			 "no part of stage %d is 10%% slower than in the %s", stage, w->baseline);
		return 0;
	}
	w->found = 1;
	*purity = best.purity;
	snprintf(w->kind, sizeof w->kind, "%s", kind_name(best.kind));
	w->micro_batch = best.mb;
	w->critical = best.critical;
	w->nslow = (uint32_t)best.nslow;
	w->excess_ms = best.excess / 1e6;
	w->cost_ms = best.cost / 1e6;
	w->grew_ms = isnan(best.grew) ? NAN : best.grew / 1e6;
	w->slack_ms = best.slack / 1e6;
	w->iter_ms = best.span / 1e6;
	w->t0_ns = best.h0;
	w->t1_ns = best.h1;
	snprintf(w->note, sizeof w->note, "1F1B rebuilt from the P2P calls: %d stages, %d micro-batches",
		 w->nstages, w->nmicro);
	return 1;
}

int an_where_find(const struct an_state *s, const struct an_diagnosis *d, struct an_where *w)
{
	memset(w, 0, sizeof *w);
	w->micro_batch = -1;
	if (d->cls != AN_COMP_SLOW && d->cls != AN_COMM_SLOW) {
		snprintf(w->note, sizeof w->note, "only for fail-slow verdicts");
		return 0;
	}
	if (d->level != AN_LEVEL_MACHINE || !d->nsuspects) {
		snprintf(w->note, sizeof w->note, "needs a machine-level verdict");
		return 0;
	}
	/* Several suspects (the GPUs of one host that TP keeps in step): a
	 * TP partner waits inside its own passes for the slow GPU, so its
	 * excess can spread over both pass kinds, while the slowed GPU's own
	 * is of one kind. The suspect whose excess is purest is named (the
	 * first listed within 0.05), the others of its host placed alike
	 * listed with it: often the data cannot tell TP partners apart. */
	double bp = -1;
	struct an_where *x = calloc(AN_MAX_SUSPECTS, sizeof *x);
	double pur[AN_MAX_SUSPECTS];
	int ok[AN_MAX_SUSPECTS] = { 0 };
	uint32_t ns = d->nsuspects < AN_MAX_SUSPECTS ? d->nsuspects : AN_MAX_SUSPECTS;
	int bi = -1;
	for (uint32_t i = 0; x && i < ns; i++) {
		pur[i] = 0;
		ok[i] = where_one(s, d, i, &x[i], &pur[i]);
		if (ok[i] && pur[i] > bp + 0.05) {
			bp = pur[i];
			bi = (int)i;
		}
	}
	if (bi >= 0) {
		*w = x[bi];
		/* the others of that host with the same kind: listed alike */
		for (uint32_t i = 0; i < ns; i++)
			if ((int)i != bi && ok[i] && !strcmp(x[i].host, w->host) && !strcmp(x[i].kind, w->kind) &&
			    w->nalike < sizeof w->alike / sizeof w->alike[0])
				w->alike[w->nalike++] = x[i].gpu;
	} else if (x && ns) {
		*w = x[0];
	}
	free(x);
	return w->found;
}

int an_where_query(const struct an_state *s, const char *host_gpu, struct an_where *w, char *err, size_t errlen)
{
	const char *colon = host_gpu ? strrchr(host_gpu, ':') : NULL;
	char *end = NULL;
	long gpu = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == host_gpu || (size_t)(colon - host_gpu) >= PULSE_OP_HOST_LEN || !end || *end ||
	    end == colon + 1 || gpu < 0 || gpu > 4095) {
		snprintf(err, errlen, "expected HOST:GPU (e.g. host3:1), got \"%s\"", host_gpu ? host_gpu : "");
		return -1;
	}
	struct an_diagnosis *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	d->cls = AN_COMP_SLOW;
	d->level = AN_LEVEL_MACHINE;
	d->nsuspects = 1;
	memcpy(d->suspects[0].host, host_gpu, (size_t)(colon - host_gpu));
	d->suspects[0].gpu = (int32_t)gpu;
	d->suspects[0].rank = -1;
	an_where_find(s, d, w);
	free(d);
	return 0;
}

void an_where_format(const struct an_where *w, char *buf, size_t n)
{
	if (!w->found) {
		snprintf(buf, n, "not placed: %s", w->note);
		return;
	}
	snprintf(buf, n,
		 "%s of micro-batch %d on stage %d of %d (%s GPU %d): %s; %u slowed part%s, +%.2f ms over the "
		 "%s; in the 1F1B DAG they cost the iteration %.2f ms (the part's slack before: %.2f ms), "
		 "the pipeline's measured span grew %.2f ms",
		 w->kind, w->micro_batch, w->stage, w->nstages, w->host, w->gpu,
		 w->critical ? "on the critical path" : "absorbed by slack, it cost nothing", w->nslow,
		 w->nslow == 1 ? "" : "s", w->excess_ms, w->baseline, w->cost_ms, w->slack_ms,
		 isnan(w->grew_ms) ? 0.0 : w->grew_ms);
	for (uint32_t i = 0; i < w->nalike; i++) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "%s%d%s", i ? ", " : "; GPU ", w->alike[i],
			 i + 1 == w->nalike ? " alike (TP keeps them in step)" : "");
	}
}

void *an_where_json(const struct an_where *w)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "found", w->found);
	if (!w->found) {
		cJSON_AddStringToObject(o, "note", w->note);
		return o;
	}
	char buf[32];
	cJSON_AddStringToObject(o, "stage_kind", w->kind);
	cJSON_AddNumberToObject(o, "micro_batch", w->micro_batch);
	cJSON_AddNumberToObject(o, "micro_batches", w->nmicro);
	cJSON_AddNumberToObject(o, "stage", w->stage);
	cJSON_AddNumberToObject(o, "stages", w->nstages);
	cJSON_AddStringToObject(o, "host", w->host);
	cJSON_AddNumberToObject(o, "gpu", w->gpu);
	cJSON_AddStringToObject(o, "critical_path", w->critical ? "critical" : "absorbed");
	cJSON_AddNumberToObject(o, "slowed_parts", w->nslow);
	cJSON_AddNumberToObject(o, "excess_ms", w->excess_ms);
	cJSON_AddNumberToObject(o, "cost_ms", w->cost_ms);
	cJSON_AddNumberToObject(o, "slack_ms", w->slack_ms);
	if (isnan(w->grew_ms))
		cJSON_AddNullToObject(o, "span_grew_ms");
	else
		cJSON_AddNumberToObject(o, "span_grew_ms", w->grew_ms);
	cJSON_AddNumberToObject(o, "iteration_ms", w->iter_ms);
	cJSON_AddStringToObject(o, "baseline", w->baseline);
	snprintf(buf, sizeof buf, "0x%016" PRIx64, w->comm_id);
	cJSON_AddStringToObject(o, "pp_comm_id", buf);
	snprintf(buf, sizeof buf, "%" PRIu64, w->t0_ns);
	cJSON_AddStringToObject(o, "start_ns", buf);
	snprintf(buf, sizeof buf, "%" PRIu64, w->t1_ns);
	cJSON_AddStringToObject(o, "end_ns", buf);
	cJSON *a = cJSON_AddArrayToObject(o, "alike_gpus");
	for (uint32_t i = 0; a && i < w->nalike; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(w->alike[i]));
	cJSON_AddStringToObject(o, "note", w->note);
	return o;
}
