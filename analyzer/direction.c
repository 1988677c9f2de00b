/* pulse-analyzer: the direction of a network slowdown from the hosts' µs
 * per-QP series (analyzer/direction.h).
 *
 * Each QP's measure is the mean of the upper half of its bytes per active
 * epoch: what the QP reaches when its path lets it, so pacing gaps (a ring
 * waiting for its slowest link, a proxy between slices) do not count, only
 * the capacity the path gives it. Its shift is ln(after /
 * before) around the diagnosis' onset: every QP is its own baseline, so
 * workloads whose QPs run at different rates (a ring, an all-to-one whose
 * root shares its link) need no model. QPs of one (sender, receiver) pair
 * are one pair (the median of their shifts).
 *
 * Noise: the pairs that touch neither end of the suspect are the reference
 * (their median shift) and the noise scale (1.4826 x their MAD, a robust
 * standard deviation), floored by the series' own resolution: the median
 * over QPs of how far the measure of one half of the before epochs (odd
 * ones) lies from the other half's, and 1%. A pair is
 * slow when its shift lies AN_DIR_Z scales below the reference.
 *
 * Then, for the suspect (its NIC: the GPU's QPs), "all" meaning every
 * pair on that side is slow (the "towards every peer"):
 *   sender-limited   all it sends is slow, and all it receives too but
 *                    less (or it receives nothing): the limit is on the
 *                    host's side (NIC, PCIe), which carries both ways;
 *   egress           all it sends is slow, not all it receives: the paths
 *                    out of its NIC (a TX-only fault of the NIC looks the
 *                    same from the hosts' series);
 *   receiver-limited all it receives is slow, not all it sends (or less):
 *                    incast into its NIC;
 *   path             some pairs slow, others of the suspect normal;
 *   unclear          no pair stands out of the noise.
 * None of this changes the machine the localizers named. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "direction.h"

const char *an_dir_label_key(int label)
{
	switch (label) {
	case AN_DIR_SENDER: return "sender-limited";
	case AN_DIR_RECEIVER: return "receiver-limited";
	case AN_DIR_EGRESS: return "egress";
	case AN_DIR_PATH: return "path";
	case AN_DIR_UNCLEAR: return "unclear";
	default: return "";
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The QP's bytes per epoch while its path lets it run: the mean of its
 * upper half of active epochs in [lo, hi) (every step-th from first). The
 * lower half holds the epochs a burst only partly covers; a mean over many
 * epochs resolves rates finer than the NIC's event granularity (a TX event
 * covers up to 64 KiB: one event more or less per epoch is several percent).
 * 0 with fewer than AN_XFER_MIN_EPOCHS active epochs. */
static double upper_mean(const struct an_qpseries *q, uint64_t lo, uint64_t hi, uint32_t first,
			 uint32_t step, uint64_t *tmp)
{
	uint32_t n = 0, k = 0;
	for (uint32_t i = 0; i < q->n; i++) {
		if (q->t_ns[i] < lo || q->t_ns[i] >= hi || !q->bytes[i])
			continue;
		if (k++ % step == first)
			tmp[n++] = q->bytes[i];
	}
	if (n < AN_XFER_MIN_EPOCHS)
		return 0;
	qsort(tmp, n, sizeof *tmp, cmp_u64);
	double sum = 0;
	for (uint32_t i = n / 2; i < n; i++)
		sum += (double)tmp[i];
	return sum / (double)(n - n / 2);
}

static double med_mad(double *v, uint32_t n, double *mad)
{
	double m = an_median(v, n);
	double *d = malloc(n * sizeof *d);
	if (!d) {
		*mad = 0;
		return m;
	}
	for (uint32_t i = 0; i < n; i++)
		d[i] = fabs(v[i] - m);
	*mad = an_median(d, n);
	free(d);
	return m;
}

struct pairacc {
	struct an_dir_pair p;
	double *shifts;
	uint32_t n;
};

static int suspect_end(const char *h, int32_t g, const char *host, int32_t gpu)
{
	return !strcmp(h, host) && (gpu < 0 || g < 0 || g == gpu);
}

/* One end's pairs other than those with (xh, xg): how many it sends
 * (out) or receives on, and how many of those are slow. */
static void end_pairs(const struct pairacc *pa, uint32_t npa, const char *h, int32_t g, const char *xh,
		      int32_t xg, int out, const struct an_direction *d, uint32_t *n, uint32_t *slow)
{
	*n = *slow = 0;
	for (uint32_t k = 0; k < npa; k++) {
		const struct an_dir_pair *p = &pa[k].p;
		const char *me = out ? p->host : p->peer, *other = out ? p->peer : p->host;
		int32_t mg = out ? p->gpu : p->peer_gpu, og = out ? p->peer_gpu : p->gpu;
		if (strcmp(me, h) || mg != g || (!strcmp(other, xh) && og == xg))
			continue;
		(*n)++;
		*slow += (d->reference - p->shift) / d->sigma > AN_DIR_Z;
	}
}

/* The suspect's slow side leads to one other end only (a ring's single
 * predecessor or successor, a pair of hosts): the limit may sit there
 * instead. If that end is slow on its other pairs of the same side too,
 * the direction is about it: a sender every one of whose receivers sees
 * it slow is sender-limited (egress if what it receives is not slowed),
 * a receiver that every sender finds slow is receiver-limited. The
 * localization's verdict stays as it was; the direction names the end. */
static void other_end(const struct pairacc *pa, uint32_t npa, struct an_direction *d)
{
	int in_side = d->label == AN_DIR_RECEIVER;
	const struct an_dir_pair *x = NULL;
	for (uint32_t k = 0; k < d->npairs; k++) {
		const struct an_dir_pair *p = &d->pairs[k];
		if (p->out == in_side || p->z <= AN_DIR_Z)
			continue;
		if (x && (strcmp(x->peer, p->peer) || x->peer_gpu != p->peer_gpu || strcmp(x->host, p->host) ||
			  x->gpu != p->gpu))
			return; /* more than one: the suspect is the common end */
		x = p;
	}
	if (!x)
		return;
	const char *xh = in_side ? x->host : x->peer;
	int32_t xg = in_side ? x->gpu : x->peer_gpu;
	uint32_t n, slow, n2, slow2;
	end_pairs(pa, npa, xh, xg, d->host, d->gpu, in_side, d, &n, &slow);
	if (!n || slow != n)
		return;
	end_pairs(pa, npa, xh, xg, d->host, d->gpu, !in_side, d, &n2, &slow2);
	char was[PULSE_OP_HOST_LEN + 16];
	snprintf(was, sizeof was, "%s GPU %d", d->host, d->gpu);
	snprintf(d->host, sizeof d->host, "%s", xh);
	d->gpu = xg;
	if (in_side) {
		d->label = slow2 || !n2 ? AN_DIR_SENDER : AN_DIR_EGRESS;
		snprintf(d->why, sizeof d->why,
			 "the only peer sending to %.40s is slow, and slow towards all %u other peers it sends "
			 "to as well%s: the limit is at %.40s GPU %d, %s",
			 was, n, slow2 ? ", and what it receives too" : "", xh, xg,
			 d->label == AN_DIR_SENDER ? "its host's side (NIC, PCIe)" : "the paths out of its NIC");
	} else {
		d->label = AN_DIR_RECEIVER;
		snprintf(d->why, sizeof d->why,
			 "%.40s sends slowly only to %.40s GPU %d, which every one of its %u other senders finds "
			 "slow too: receiver-limited at %.40s GPU %d (incast into its NIC)",
			 was, xh, xg, n, xh, xg);
	}
}

int an_direction_classify(const struct an_series_set *ss, const char *host, int32_t gpu,
			  struct an_direction *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->host, sizeof out->host, "%s", host);
	out->gpu = gpu;
	size_t maxn = 0;
	for (uint32_t i = 0; i < ss->nq; i++)
		if (ss->q[i].n > maxn)
			maxn = ss->q[i].n;
	uint64_t *tmp = malloc((maxn ? maxn : 1) * sizeof *tmp);
	struct pairacc *pa = calloc(ss->nq ? ss->nq : 1, sizeof *pa);
	double *shift = calloc(ss->nq ? ss->nq : 1, sizeof *shift);
	double *noise = calloc(ss->nq ? ss->nq : 1, sizeof *noise);
	uint32_t npa = 0, nnoise = 0;
	if (!tmp || !pa || !shift || !noise) {
		snprintf(out->why, sizeof out->why, "out of memory");
		goto done;
	}
	/* per QP: shift and split-half resolution */
	for (uint32_t i = 0; i < ss->nq; i++) {
		const struct an_qpseries *q = &ss->q[i];
		shift[i] = NAN;
		if (!q->remote_host[0])
			continue; /* a QP whose other end nobody knows tells no direction */
		double b = upper_mean(q, 0, ss->onset_ns, 0, 1, tmp);
		double a = upper_mean(q, ss->onset_ns, UINT64_MAX, 0, 1, tmp);
		if (b <= 0 || a <= 0)
			continue;
		shift[i] = log(a / b);
		double h0 = upper_mean(q, 0, ss->onset_ns, 0, 2, tmp), h1 = upper_mean(q, 0, ss->onset_ns, 1, 2, tmp);
		if (h0 > 0 && h1 > 0)
			noise[nnoise++] = fabs(log(h0 / h1));
		/* its pair */
		uint32_t k;
		for (k = 0; k < npa; k++)
			if (!strcmp(pa[k].p.host, q->host) && pa[k].p.gpu == q->gpu &&
			    !strcmp(pa[k].p.peer, q->remote_host) && pa[k].p.peer_gpu == q->remote_gpu)
				break;
		if (k == npa) {
			snprintf(pa[k].p.host, sizeof pa[k].p.host, "%s", q->host);
			snprintf(pa[k].p.peer, sizeof pa[k].p.peer, "%s", q->remote_host);
			pa[k].p.gpu = q->gpu;
			pa[k].p.peer_gpu = q->remote_gpu;
			pa[k].shifts = calloc(ss->nq, sizeof *pa[k].shifts);
			if (!pa[k].shifts)
				continue;
			npa++;
		}
		pa[k].shifts[pa[k].n++] = shift[i];
	}
	/* pair shifts; the reference pairs touch neither end of the suspect */
	double *rest = calloc(npa ? npa : 1, sizeof *rest);
	if (!rest)
		goto done;
	for (uint32_t k = 0; k < npa; k++) {
		pa[k].p.shift = an_median(pa[k].shifts, pa[k].n);
		pa[k].p.qps = pa[k].n;
		int from = suspect_end(pa[k].p.host, pa[k].p.gpu, host, gpu);
		int to = suspect_end(pa[k].p.peer, pa[k].p.peer_gpu, host, gpu);
		if (from && to)
			continue; /* a loop on the suspect itself */
		if (!from && !to)
			rest[out->n_rest++] = pa[k].p.shift;
	}
	double mad = 0;
	out->reference = out->n_rest ? med_mad(rest, out->n_rest, &mad) : 0;
	double res = nnoise ? an_median(noise, nnoise) : 0;
	out->sigma = 1.4826 * mad;
	if (out->sigma < res)
		out->sigma = res;
	if (out->sigma < 0.01)
		out->sigma = 0.01;
	free(rest);
	for (uint32_t k = 0; k < npa; k++) {
		int from = suspect_end(pa[k].p.host, pa[k].p.gpu, host, gpu);
		int to = suspect_end(pa[k].p.peer, pa[k].p.peer_gpu, host, gpu);
		if (from == to)
			continue;
		pa[k].p.out = from;
		pa[k].p.z = (out->reference - pa[k].p.shift) / out->sigma;
		int slow = pa[k].p.z > AN_DIR_Z;
		if (from) {
			out->out_pairs++;
			out->out_slow += slow;
		} else {
			out->in_pairs++;
			out->in_slow += slow;
		}
		/* keep the suspect's pairs, slowest first */
		uint32_t at;
		if (out->npairs < AN_DIR_PAIRS)
			at = out->npairs++;
		else if (out->pairs[AN_DIR_PAIRS - 1].z < pa[k].p.z)
			at = AN_DIR_PAIRS - 1;
		else
			continue;
		while (at > 0 && out->pairs[at - 1].z < pa[k].p.z) {
			out->pairs[at] = out->pairs[at - 1];
			at--;
		}
		out->pairs[at] = pa[k].p;
	}
	/* the typical shift of each side: with both sides slow everywhere, the
	 * stronger one is where the limit sits */
	double side[2][AN_DIR_PAIRS];
	uint32_t nside[2] = {0, 0};
	for (uint32_t k = 0; k < out->npairs; k++) {
		int o = out->pairs[k].out ? 0 : 1;
		side[o][nside[o]++] = out->pairs[k].shift;
	}
	double out_med = nside[0] ? an_median(side[0], nside[0]) : 0;
	double in_med = nside[1] ? an_median(side[1], nside[1]) : 0;
	int out_all = out->out_pairs && out->out_slow == out->out_pairs;
	int in_all = out->in_pairs && out->in_slow == out->in_pairs;
	char gpus[24] = "";
	if (gpu >= 0)
		snprintf(gpus, sizeof gpus, " GPU %d", gpu);
	if (!out->out_pairs && !out->in_pairs) {
		out->label = AN_DIR_UNCLEAR;
		snprintf(out->why, sizeof out->why,
			 "no QP of %s%s with epochs before and after the onset in the fetched series", host, gpus);
	} else if ((out_all && !out->in_pairs) || (out_all && in_all && out_med <= in_med)) {
		out->label = AN_DIR_SENDER;
		snprintf(out->why, sizeof out->why,
			 "%s%s is slow towards all %u peers it sends to%s: the limit is on its host's side "
			 "(NIC, PCIe), not on a path",
			 host, gpus, out->out_pairs,
			 out->in_pairs ? ", and all it receives is slowed too, less" : "");
	} else if (out_all && !in_all) {
		out->label = AN_DIR_EGRESS;
		snprintf(out->why, sizeof out->why,
			 "%s%s is slow towards all %u peers it sends to while %u of the %u sending to it are "
			 "not: the paths out of its NIC (egress)",
			 host, gpus, out->out_pairs, out->in_pairs - out->in_slow, out->in_pairs);
	} else if (in_all) {
		out->label = AN_DIR_RECEIVER;
		snprintf(out->why, sizeof out->why,
			 "every one of the %u peers sending to %s%s is slow%s: receiver-limited (incast into "
			 "its NIC)",
			 out->in_pairs, host, gpus,
			 out_all ? ", more than its own sends" : out->out_pairs ? " while its own sends are not" : "");
	} else if (out->out_slow || out->in_slow) {
		out->label = AN_DIR_PATH;
		const struct an_dir_pair *w = &out->pairs[0];
		snprintf(out->why, sizeof out->why,
			 "%u of %u pairs out of and %u of %u into %s%s are slow, the others normal: a path; "
			 "the slowest %s GPU %d -> %s GPU %d (%.0f%% of its rate before)",
			 out->out_slow, out->out_pairs, out->in_slow, out->in_pairs, host, gpus, w->host, w->gpu,
			 w->peer, w->peer_gpu, 100 * exp(w->shift));
	} else {
		out->label = AN_DIR_UNCLEAR;
		snprintf(out->why, sizeof out->why,
			 "none of the %u pairs of %s%s is slower than the noise of the %u other pairs allows",
			 out->out_pairs + out->in_pairs, host, gpus, out->n_rest);
	}
	if (out->label == AN_DIR_SENDER || out->label == AN_DIR_EGRESS || out->label == AN_DIR_RECEIVER)
		other_end(pa, npa, out);
done:
	for (uint32_t k = 0; k < npa; k++)
		free(pa[k].shifts);
	free(pa);
	free(tmp);
	free(shift);
	free(noise);
	return out->label;
}

/* ---- the set ---- */

static struct an_qpseries *qp_get(struct an_series_set *ss, const char *host, const struct pulse_qps_seg *g)
{
	for (uint32_t i = 0; i < ss->nq; i++) {
		struct an_qpseries *q = &ss->q[i];
		if (q->qpn == g->qpn && !strcmp(q->dev, g->dev) && !strcmp(q->host, host))
			return q;
	}
	if (ss->nq == ss->capq) {
		uint32_t c = ss->capq ? ss->capq * 2 : 64;
		struct an_qpseries *n = realloc(ss->q, c * sizeof *n);
		if (!n)
			return NULL;
		ss->q = n;
		ss->capq = c;
	}
	struct an_qpseries *q = &ss->q[ss->nq++];
	memset(q, 0, sizeof *q);
	snprintf(q->host, sizeof q->host, "%s", host);
	snprintf(q->dev, sizeof q->dev, "%s", g->dev);
	snprintf(q->remote_host, sizeof q->remote_host, "%s", g->remote_host);
	q->qpn = g->qpn;
	q->gpu = -1;
	q->remote_gpu = g->remote_gpu;
	q->epoch_ns = g->epoch_ns;
	return q;
}

int an_series_add(struct an_series_set *ss, const struct pulse_qps_resp *r,
		  int32_t (*gpu_of)(void *ctx, const char *host, const char *dev, uint32_t qpn),
		  void *ctx)
{
	for (uint32_t i = 0; i < r->nseg; i++) {
		const struct pulse_qps_seg *g = &r->segs[i];
		struct an_qpseries *q = qp_get(ss, r->host, g);
		if (!q)
			return -1;
		if (q->gpu < 0 && gpu_of)
			q->gpu = gpu_of(ctx, r->host, g->dev, g->qpn);
		if (!q->remote_host[0] && g->remote_host[0]) {
			snprintf(q->remote_host, sizeof q->remote_host, "%s", g->remote_host);
			q->remote_gpu = g->remote_gpu;
		}
		if (q->n + g->n > q->cap) {
			uint32_t c = q->cap ? q->cap : 256;
			while (c < q->n + g->n)
				c *= 2;
			uint64_t *t = realloc(q->t_ns, c * sizeof *t);
			if (t)
				q->t_ns = t;
			uint64_t *b = realloc(q->bytes, c * sizeof *b);
			if (b)
				q->bytes = b;
			if (!t || !b)
				return -1;
			q->cap = c;
		}
		for (uint32_t k = 0; k < g->n; k++) {
			uint64_t t = g->t0_ns + (uint64_t)g->epoch[k] * g->epoch_ns;
			/* windows come oldest first; an epoch already held (an
			 * overlap of two windows) is not counted twice */
			if (q->n && t <= q->t_ns[q->n - 1])
				continue;
			q->t_ns[q->n] = t;
			q->bytes[q->n++] = g->bytes[k];
		}
	}
	return 0;
}

void an_series_free(struct an_series_set *ss)
{
	for (uint32_t i = 0; i < ss->nq; i++) {
		free(ss->q[i].t_ns);
		free(ss->q[i].bytes);
	}
	free(ss->q);
	ss->q = NULL;
	ss->nq = ss->capq = 0;
}
