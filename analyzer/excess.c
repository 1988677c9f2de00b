/* pulse-analyzer: the implicated host's operator instances, each split
 * three ways and judged against its own history or its peers
 * (analyzer/answers.h). Read-only on the state. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answers.h"

#define HIST_K 16     /* earlier instances a unit is judged against */
#define HIST_MIN 2    /* fewer: judged against its peers (a fault from the third iteration on
                       * still has two before it) */
#define MAD_SD 1.4826 /* MAD to a normal standard deviation */
#define NOISE_SD 3.0  /* standard deviations that are not noise */

struct comps {
	double launch, active, gaps;
	double peak;             /* the slowest transfer's most bytes in one epoch (0: not measured) */
	int sent;                /* the slowest transfer is one the selected nodes sent */
	int have_launch, have_xfer;
	uint64_t t0, t1;
};

/* The nodes a unit is about, and each one's operator ends in order (to
 * find what a first byte waited for). */
struct sel {
	const int *nodes;
	uint32_t n;
	uint64_t **ends;
	uint32_t *nends;
};

static int sel_index(const struct sel *q, int node)
{
	for (uint32_t i = 0; node >= 0 && i < q->n; i++)
		if (q->nodes[i] == node)
			return (int)i;
	return -1;
}

/* the last end of node k's operators at or before t (0: none) */
static uint64_t prev_end(const struct sel *q, int k, uint64_t t)
{
	const uint64_t *e = q->ends[k];
	uint32_t lo = 0, hi = q->nends[k];
	while (lo < hi) {
		uint32_t m = (lo + hi) / 2;
		if (e[m] <= t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo ? e[lo - 1] : 0;
}

static void take_xfer(struct comps *k, const struct an_rec *r, const struct an_peer *p, int sent)
{
	if (!p->actual || !p->start || p->end <= p->start)
		return;
	double wire = (double)(p->end - p->start), act = (double)p->active;
	if (act > wire)
		act = wire;
	/* the slowest transfer bounds the operator */
	if (!k->have_xfer || wire > k->active + k->gaps) {
		k->active = act;
		k->gaps = wire - act;
		k->peak = an_peer_peak_measured(r, p) ? (double)p->peak : 0;
		k->sent = sent;
	}
	k->have_xfer = 1;
	if (!k->t0 || p->start < k->t0)
		k->t0 = p->start;
	if (p->end > k->t1)
		k->t1 = p->end;
}

/* What the selected nodes did in instance in: their longest start delay
 * (first byte after the later of the call and the node's previous
 * operator's end: what the GPU computed before it, not what it queued
 * behind), and the slowest transfer they sent or received. q NULL: node
 * `only`, the start delay from its call. */
static void comps_of(const struct an_state *s, const struct an_comm *c, const struct an_inst *in,
		     const struct sel *q, int only, struct comps *k)
{
	(void)s;
	memset(k, 0, sizeof *k);
	for (int32_t r = 0; r < c->nranks; r++) {
		const struct an_rec *x = in->recs[r];
		if (!x)
			continue;
		int ki = q ? sel_index(q, x->node) : -1;
		int mine = q ? ki >= 0 : x->node == only;
		if (mine && x->call && x->start >= x->call && x->actual) {
			uint64_t from = x->call;
			if (q) {
				/* from the later of the call and the node's previous
				 * operator's end: the compute before this one, not the
				 * queue of operators it waited behind (the CPU calls
				 * ahead of the GPU) */
				uint64_t pe = prev_end(q, ki, x->start);
				if (pe > from && pe <= x->start)
					from = pe;
			}
			double l = (double)(x->start - from);
			if (!k->have_launch || l > k->launch)
				k->launch = l;
			k->have_launch = 1;
			if (!k->t0 || x->call < k->t0)
				k->t0 = x->call;
		}
		for (uint32_t j = 0; j < x->npeers; j++)
			if (mine || (q ? sel_index(q, x->peers[j].node) >= 0 : x->peers[j].node == only))
				take_xfer(k, x, &x->peers[j], mine);
	}
}

void an_med_mad(const double *v, size_t n, double *med, double *mad)
{
	double t[64], *w = n <= 64 ? t : malloc(n * sizeof *w);
	*med = *mad = 0;
	if (!n || !w)
		return;
	memcpy(w, v, n * sizeof *w);
	*med = an_median(w, n);
	for (size_t i = 0; i < n; i++)
		w[i] = fabs(v[i] - *med);
	*mad = an_median(w, n);
	if (w != t)
		free(w);
}

#define NCOMP 4 /* launch, active, gaps, peak */
struct base {
	double med[NCOMP], mad[NCOMP];
	int ok, peak_ok;
};

static void base_from(double (*v)[NCOMP], size_t n, struct base *b)
{
	double t[HIST_K > 64 ? HIST_K : 64];
	b->ok = n >= HIST_MIN;
	b->peak_ok = 0;
	if (!b->ok)
		return;
	for (int c = 0; c < NCOMP; c++) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (c < 3 || v[i][c] > 0) /* a peak that was measured */
				t[m++] = v[i][c];
		if (c == 3 && (b->peak_ok = m >= HIST_MIN) == 0)
			break;
		an_med_mad(t, m, &b->med[c], &b->mad[c]);
	}
}

/* The instance's other ranks (not on host): the same components, median
 * and MAD over them. */
static void peer_base(const struct an_state *s, const struct an_comm *c, const struct an_inst *in,
		      const struct sel *q, struct base *b)
{
	double v[64][NCOMP];
	size_t n = 0;
	for (int32_t r = 0; r < c->nranks && n < 64; r++) {
		const struct an_rec *x = in->recs[r];
		if (!x || x->node < 0 || sel_index(q, x->node) >= 0)
			continue;
		struct comps k;
		comps_of(s, c, in, NULL, x->node, &k);
		if (!k.have_xfer && !k.have_launch)
			continue;
		v[n][0] = k.launch;
		v[n][1] = k.active;
		v[n][2] = k.gaps;
		v[n][3] = k.peak;
		n++;
	}
	base_from(v, n, b);
}

static double excess(double x, double med, double mad, double floor_ns)
{
	double d = x - med;
	return d > NOISE_SD * MAD_SD * mad + floor_ns ? d : 0;
}

static int cmp_t0(const void *a, const void *b)
{
	const struct an_unit *x = a, *y = b;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int push(struct an_units *o, const struct an_unit *u)
{
	if (an_grow((void **)&o->u, &o->cap, o->n + 1, sizeof *o->u, UINT32_MAX / 2))
		return -1;
	o->u[o->n++] = *u;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint32_t an_iteration_ends(const struct an_state *s, uint64_t *ends, uint32_t cap)
{
	const struct an_comm *bc = NULL;
	int bs = -1;
	an_iteration_sig(s, &bc, &bs);
	if (!bc)
		return 0;
	uint32_t n = 0;
	for (uint32_t h = 0; h < AN_HIST && n < cap; h++)
		if (bc->hist[h].used && bc->hist[h].sig == bs && bc->hist[h].last_end)
			ends[n++] = bc->hist[h].last_end;
	if (n)
		qsort(ends, n, sizeof *ends, cmp_u64);
	return n;
}

/* the iteration of time t: i when ends[i-1] < t <= ends[i] */
static uint32_t iter_of(const uint64_t *ends, uint32_t n, uint64_t t)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t m = (lo + hi) / 2;
		if (ends[m] < t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

static void sel_free(struct sel *q)
{
	for (uint32_t i = 0; q->ends && i < q->n; i++)
		free(q->ends[i]);
	free(q->ends);
	free(q->nends);
}

static int sel_init(const struct an_state *s, const int *nodes, uint32_t n, struct sel *q)
{
	q->nodes = nodes;
	q->n = n;
	q->ends = calloc(n ? n : 1, sizeof *q->ends);
	q->nends = calloc(n ? n : 1, sizeof *q->nends);
	uint32_t *cap = calloc(n ? n : 1, sizeof *cap);
	int rc = q->ends && q->nends && cap ? 0 : -1;
	for (uint32_t ci = 0; !rc && ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		for (uint32_t h = 0; !rc && h < AN_HIST; h++) {
			const struct an_inst *in = &c->hist[h];
			for (int32_t r = 0; in->used && in->recs && r < c->nranks && !rc; r++) {
				const struct an_rec *x = in->recs[r];
				int k = x && x->end ? sel_index(q, x->node) : -1;
				if (k < 0)
					continue;
				if (an_grow((void **)&q->ends[k], &cap[k], q->nends[k] + 1, sizeof *q->ends[k],
					    UINT32_MAX / 2)) {
					rc = -1;
					break;
				}
				q->ends[k][q->nends[k]++] = x->end;
			}
		}
	}
	for (uint32_t k = 0; !rc && k < n; k++)
		if (q->nends[k])
			qsort(q->ends[k], q->nends[k], sizeof *q->ends[k], cmp_u64);
	free(cap);
	return rc;
}

int an_units_build(const struct an_state *s, const int *nodes, uint32_t nnodes, uint64_t before,
		   struct an_units *out)
{
	memset(out, 0, sizeof *out);
	struct sel q = { 0 };
	uint32_t ne = 0;
	uint64_t *ends = malloc(AN_HIST * sizeof *ends);
	if (!ends || sel_init(s, nodes, nnodes, &q)) {
		free(ends);
		sel_free(&q);
		return -1;
	}
	ne = an_iteration_ends(s, ends, AN_HIST);
	double floor_ns = s->epoch_ns ? (double)s->epoch_ns : 0;
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		const struct an_comm *c = s->comms[ci];
		uint32_t first = out->n;
		for (uint32_t h = 0; h < AN_HIST; h++) {
			const struct an_inst *in = &c->hist[h];
			if (!in->used || !in->recs)
				continue;
			struct comps k;
			comps_of(s, c, in, &q, -1, &k);
			if (!k.have_xfer && !k.have_launch)
				continue;
			struct an_unit u = { .t0 = k.t0, .t1 = k.t1 > k.t0 ? k.t1 : k.t0, .comm = c->id, .seq = in->seq,
					     .sig = in->sig, .launch = k.launch, .active = k.active, .gaps = k.gaps,
					     .peak = k.peak, .sent = k.sent };
			if (push(out, &u)) {
				free(ends);
				sel_free(&q);
				return -1;
			}
		}
		uint32_t n = out->n - first;
		if (!n)
			continue;
		struct an_unit *v = out->u + first;
		qsort(v, n, sizeof *v, cmp_t0);
		/* the place of each instance in its iteration: one operator
		 * signature plays several parts (a pipeline's forward and
		 * backward sends have one size), each with its own timing */
		for (uint32_t i = 0; i < n; i++) {
			v[i].iter = iter_of(ends, ne, v[i].t0);
			v[i].ord = 0;
			for (uint32_t j = i; j-- > 0;) {
				if (v[j].iter != v[i].iter)
					break;
				if (v[j].sig == v[i].sig)
					v[i].ord++;
			}
		}
		for (uint32_t i = 0; i < n; i++) {
			double hv[HIST_K][NCOMP];
			size_t nh = 0;
			uint64_t lim = v[i].t0 < before || !before ? v[i].t0 : before;
			/* the earliest: a slowdown that began before its first
			 * evidence is not in them (the job's first iterations are
			 * its healthy reference) */
			for (uint32_t j = 0; j < i && nh < HIST_K; j++)
				if (v[j].sig == v[i].sig && v[j].ord == v[i].ord && v[j].t1 < lim) {
					hv[nh][0] = v[j].launch;
					hv[nh][1] = v[j].active;
					hv[nh][2] = v[j].gaps;
					hv[nh][3] = v[j].peak;
					nh++;
				}
			struct base b;
			base_from(hv, nh, &b);
			v[i].base = b.ok ? 1 : 0;
			if (!b.ok) {
				const struct an_inst *in = an_inst_find((struct an_comm *)c, v[i].seq);
				if (in)
					peer_base(s, c, in, &q, &b);
				v[i].base = b.ok ? 2 : 0;
			}
			if (!b.ok)
				continue;
			v[i].x_launch = excess(v[i].launch, b.med[0], b.mad[0], floor_ns);
			v[i].x_active = excess(v[i].active, b.med[1], b.mad[1], floor_ns);
			v[i].x_gaps = excess(v[i].gaps, b.med[2], b.mad[2], floor_ns);
			/* the path's peak epoch fell with its mean: its capacity was
			 * lower the whole time, not now and then (the resolution:
			 * one 32-byte unit of the NIC's counter) */
			v[i].capped = b.peak_ok && v[i].peak > 0 && v[i].x_active > 0 &&
				      excess(b.med[3], v[i].peak, b.mad[3], 32) > 0;
		}
	}
	free(ends);
	sel_free(&q);
	if (out->n)
		qsort(out->u, out->n, sizeof *out->u, cmp_t0);
	return 0;
}

void an_units_free(struct an_units *u)
{
	free(u->u);
	memset(u, 0, sizeof *u);
}

int an_unit_touched(const struct an_unit *u)
{
	return u->x_launch > 0 || u->x_active > 0 || u->x_gaps > 0;
}
