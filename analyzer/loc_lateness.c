/* pulse-analyzer: computation fail-slow by a persistent shift of lateness.
 *
 * A rank that computes a little slower arrives a little later at each of
 * its group's operators: in any one instance the delay stays inside the
 * instance's noise (no delayed start), but the rank's lateness has moved,
 * every time. The ranks of one instance are each other's baseline, as for
 * the delayed start; the rank's own lateness before the trigger's onset is
 * the baseline of the shift, and its measured spread the noise:
 *
 *   lateness  a rank's arrival against the median arrival of the others in
 *             the same instance: its call in a built-in collective (a
 *             ring's first bytes wait for the ring), its first byte in an
 *             all-to-all of P2Ps (each rank's transfers start with its own
 *             kernel), as loc_comp_slow.c;
 *   shift     median lateness since the onset minus median before it,
 *             per group and rank;
 *   z         shift over the standard error of that median: 1.2533 (a
 *             median's efficiency) x 1.4826 MAD of the lateness before,
 *             over the square root of the instances since.
 *
 * The largest z names its rank's host when it passes LATE_Z and no rank of
 * another host comes within half of it (a cascade or a shared cause moves
 * several hosts alike: not one machine). A shift must also exceed two
 * epochs, the resolution of a first byte. Runs last in Pulse's table: it
 * adds verdicts where the per-instance rules see nothing. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "localizer.h"
#include "pulse/hook_record.h"

#define LATE_Z 6.0          /* robust standard errors, as DELAY_SDS is robust SDs */
#define LATE_MIN_BEFORE 8   /* instances before the onset: a spread to measure */
#define LATE_MIN_AFTER 4    /* and after it: a median, not one instance */
#define LATE_MAX 64         /* the most recent of each kept */
#define LATE_MAX_RANKS 512

struct late_cand {
	double z, shift, base;
	int node;
	int32_t rank;
	const struct an_comm *c;
	uint64_t seq, onset;
	uint8_t op;
	uint32_t n_after;
};

/* every rank of the instance took part and finished: comparable arrivals */
static int peer_instance(const struct an_comm *c, const struct an_inst *in, int *by_call)
{
	if (c->nranks < 3 || c->nranks > LATE_MAX_RANKS || in->hung || in->nrec != (uint32_t)c->nranks)
		return 0;
	if (c->builtin && an_is_builtin(in->op)) {
		*by_call = 1;
	} else if (c->custom && in->op == PULSE_OP_GROUP) {
		*by_call = 0;
		for (int32_t k = 0; k < c->nranks; k++) {
			const struct an_rec *r = in->recs[k];
			if (r && 2 * (int32_t)r->npeers < c->nranks - 1)
				return 0; /* not an all-to-all: a rank's place in it is its schedule */
		}
	} else {
		return 0;
	}
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE || !(*by_call ? r->call : r->start))
			return 0;
	}
	return 1;
}

static uint64_t arrival(const struct an_rec *r, int by_call)
{
	return by_call ? r->call : r->start;
}

/* lateness of every rank of the instance into out[nranks] */
static void instance_lateness(const struct an_comm *c, const struct an_inst *in, int by_call, double *out)
{
	double t[LATE_MAX_RANKS], o[LATE_MAX_RANKS];
	for (int32_t k = 0; k < c->nranks; k++)
		t[k] = (double)arrival(in->recs[k], by_call);
	for (int32_t k = 0; k < c->nranks; k++) {
		int n = 0;
		for (int32_t j = 0; j < c->nranks; j++)
			if (j != k)
				o[n++] = t[j];
		out[k] = t[k] - an_median(o, (size_t)n);
	}
}

struct late_inst {
	const struct an_inst *in;
	uint64_t t;
	int after;
};

static int by_seq(const void *a, const void *b)
{
	const struct late_inst *x = a, *y = b;
	return x->in->seq < y->in->seq ? -1 : x->in->seq > y->in->seq;
}

/* The group's instances, oldest first, before and after the onset;
 * the most recent LATE_MAX of each. Every operator of the group together:
 * a rank's arrival against the others' does not depend on the operator
 * (an MoE layer's all-to-all sizes differ every time), and the spread
 * before measures what does. */
static uint32_t collect(const struct an_comm *c, const struct an_window *w, uint64_t now,
			struct late_inst *v, int *by_call, uint32_t *nbefore, uint32_t *nafter)
{
	uint32_t n = 0;
	*nbefore = *nafter = 0;
	for (uint32_t i = 0; i < AN_HIST; i++) {
		const struct an_inst *in = &c->hist[i];
		int bc;
		if (!in->used || !peer_instance(c, in, &bc))
			continue;
		uint64_t t = in->first_call ? in->first_call : in->last_end;
		if (t > now)
			continue;
		if (w->excl.b && ((t >= w->excl.a && t <= w->excl.b) ||
				  (c->id == w->excl.comm && in->seq == w->excl.seq)))
			continue; /* left out to confirm a verdict */
		*by_call = bc;
		v[n].in = in;
		v[n].t = t;
		v[n].after = t >= w->onset;
		n++;
	}
	qsort(v, n, sizeof *v, by_seq);
	/* keep the last LATE_MAX of each side */
	uint32_t kb = 0, ka = 0, m = 0;
	for (uint32_t i = n; i-- > 0;) {
		if (v[i].after ? ka++ >= LATE_MAX : kb++ >= LATE_MAX)
			v[i].in = NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		if (v[i].in)
			v[m++] = v[i];
	for (uint32_t i = 0; i < m; i++) {
		if (v[i].after)
			(*nafter)++;
		else
			(*nbefore)++;
	}
	return m;
}

/* one group and signature: each rank's shift into the per-host bests */
static void judge_group(const struct an_state *s, const struct an_comm *c, const struct an_window *w,
			struct late_inst *v, struct late_cand *host_best)
{
	int by_call = 1;
	uint32_t nb, na;
	uint32_t n = collect(c, w, s->now_ns, v, &by_call, &nb, &na);
	if (getenv("PULSE_ANALYZER_DEBUG2"))
		fprintf(stderr, "  lateness group %016" PRIx64 ": %u before, %u after (by %s) onset %.3f t %.3f..%.3f\n", c->id, nb, na,
			by_call ? "call" : "first byte", (double)(w->onset % 1000000000000ull) / 1e9,
			n ? (double)(v[0].t % 1000000000000ull) / 1e9 : 0, n ? (double)(v[n - 1].t % 1000000000000ull) / 1e9 : 0);
	if (nb < LATE_MIN_BEFORE || na < LATE_MIN_AFTER)
		return;
	double *lat = malloc((size_t)n * (size_t)c->nranks * sizeof *lat);
	if (!lat)
		return;
	/* lat[i * nranks + k]: rank k's lateness in instance i */
	for (uint32_t i = 0; i < n; i++)
		instance_lateness(c, v[i].in, by_call, lat + (size_t)i * (size_t)c->nranks);
	double ep = s->epoch_ns ? (double)s->epoch_ns : 32000.0;
	double b[2 * LATE_MAX], a[2 * LATE_MAX], dev[2 * LATE_MAX];
	for (int32_t k = 0; k < c->nranks; k++) {
		uint32_t x = 0, y = 0;
		for (uint32_t i = 0; i < n; i++) {
			double l = lat[(size_t)i * (size_t)c->nranks + (size_t)k];
			if (v[i].after)
				a[y++] = l;
			else
				b[x++] = l;
		}
		double mb = an_median(b, x);
		for (uint32_t i = 0; i < x; i++)
			dev[i] = fabs(b[i] - mb);
		double sd = 1.4826 * an_median(dev, x);
		double ma = an_median(a, y);
		double shift = ma - mb;
		if (shift <= 2 * ep)
			continue; /* within the resolution of a first byte */
		double se = 1.2533 * sd / sqrt((double)y);
		if (se < ep / sqrt((double)y))
			se = ep / sqrt((double)y); /* no spread measured finer than an epoch */
		double z = shift / se;
		const struct an_rec *r = NULL;
		uint64_t onset = 0, seq = 0;
		uint8_t op = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (!v[i].after)
				continue;
			const struct an_rec *q = v[i].in->recs[k];
			if (!r) {
				r = q;
				seq = v[i].in->seq;
				op = v[i].in->op;
			}
			if (!onset && lat[(size_t)i * (size_t)c->nranks + (size_t)k] - mb > 3 * sd) {
				onset = arrival(q, by_call);
				r = q;
				seq = v[i].in->seq;
				op = v[i].in->op;
			}
		}
		if (!r || r->node < 0)
			continue;
		int host = s->nodes[r->node].host;
		if (host < 0 || (uint32_t)host >= s->nhosts)
			continue;
		struct late_cand *hb = &host_best[host];
		if (z > hb->z) {
			hb->z = z;
			hb->shift = shift;
			hb->base = mb;
			hb->node = r->node;
			hb->rank = k;
			hb->c = c;
			hb->seq = seq;
			hb->op = op;
			hb->onset = onset ? onset : arrival(r, by_call);
			hb->n_after = y;
		}
	}
	free(lat);
}

int an_comp_slow_lateness(struct an_state *s, const struct an_window *w, struct an_diagnosis *d)
{
	if (!s->nhosts || !w->n)
		return 0;
	struct late_cand *host_best = calloc(s->nhosts, sizeof *host_best);
	uint8_t *seen = calloc(s->ncomms ? s->ncomms : 1, 1);
	struct late_inst *v = malloc(AN_HIST * sizeof *v);
	int found = 0;
	if (!host_best || !seen || !v)
		goto out;
	for (uint32_t i = 0; i < w->n; i++) {
		int ci = w->comm[i];
		if (seen[ci])
			continue;
		seen[ci] = 1;
		const struct an_comm *c = s->comms[ci];
		if (c->nranks < 3 || c->nranks > LATE_MAX_RANKS || c->retired)
			continue;
		judge_group(s, c, w, v, host_best);
	}
	int best = -1;
	for (uint32_t h = 0; h < s->nhosts; h++)
		if (host_best[h].z > 0 && (best < 0 || host_best[h].z > host_best[best].z))
			best = (int)h;
	if (getenv("PULSE_ANALYZER_DEBUG2") && best >= 0)
		fprintf(stderr, "  lateness best %s z %.1f shift %.3f ms n %u\n", s->hosts[best].name,
			host_best[best].z, host_best[best].shift / 1e6, host_best[best].n_after);
	if (best < 0 || host_best[best].z < LATE_Z)
		goto out;
	const struct late_cand *b = &host_best[best];
	double second = 0;
	for (uint32_t h = 0; h < s->nhosts; h++)
		if ((int)h != best && host_best[h].z > second)
			second = host_best[h].z;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "lateness: %s GPU %d comm %016" PRIx64 " shift %.3f ms z %.1f (next host z %.1f)\n",
			an_node_host(s, b->node), s->nodes[b->node].gpu, b->c->id, b->shift / 1e6, b->z, second);
	if (second * 2 > b->z)
		goto out; /* another host moved alike */
	d->cls = AN_COMP_SLOW;
	d->level = AN_LEVEL_MACHINE;
	an_diag_suspect(s, d, b->node, b->rank);
	d->comm_id = b->c->id;
	d->seq = b->seq;
	d->op = b->op;
	snprintf(d->metric, sizeof d->metric, "lateness_shift_ns");
	d->value = b->shift;
	d->median = b->base;
	an_diag_margin(d, b->z, 0, LATE_Z);
	d->evidence_ranks = (uint32_t)b->c->nranks;
	d->onset_ns = b->onset;
	snprintf(d->why, sizeof d->why,
		 "rank %d of the %s group 0x%016" PRIx64 " arrives %.2f ms later than the other ranks, "
		 "relative to its own lateness before, over the last %u instances (%.1f standard errors; "
		 "no other host's rank past half of that): the machine computes slowly",
		 b->rank, an_par_label(b->c->par), b->c->id, b->shift / 1e6, b->n_after, b->z);
	an_diag_step(d, "no per-instance outlier; per group and rank: the median lateness against the "
			"other ranks since the onset, against its own before");
	found = 1;
out:
	free(host_best);
	free(seen);
	free(v);
	return found;
}
