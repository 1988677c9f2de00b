/* The event queue and the fabric: a fluid model in which every active
 * slice transfer (a "flow") gets the smallest fair share of the resources it
 * crosses (sender NIC TX, receiver NIC RX, and the path between them when
 * the scenario gives it its own capacity). Shares are recomputed only for
 * the flows that share a resource with a flow that starts or ends, so the
 * sum of rates on any resource never exceeds its capacity. Each flow's
 * progress is turned into the NIC's coalesced TX events as it goes. A
 * finished flow is reported through sm->on_flow_end: the fabric knows
 * nothing of what its flows carry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------- binary heap, ordered by (t, seq) ---------- */
static int ev_less(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void heap_push(struct heap *h, double t, uint8_t kind, void *p, uint32_t a, uint32_t ver)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 1024;
		h->v = xrealloc(h->v, h->cap * sizeof *h->v);
	}
	struct ev e = { t, h->seq++, p, a, ver, kind };
	size_t i = h->n++;
	while (i > 0) {
		size_t pa = (i - 1) / 2;
		if (!ev_less(&e, &h->v[pa]))
			break;
		h->v[i] = h->v[pa];
		i = pa;
	}
	h->v[i] = e;
}

int heap_pop(struct heap *h, struct ev *out)
{
	if (!h->n)
		return 0;
	*out = h->v[0];
	struct ev last = h->v[--h->n];
	size_t i = 0, n = h->n;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct ev *best = &last;
		if (l < n && ev_less(&h->v[l], best)) {
			m = l;
			best = &h->v[l];
		}
		if (r < n && ev_less(&h->v[r], best))
			m = r;
		if (m == i)
			break;
		h->v[i] = h->v[m];
		i = m;
	}
	if (n)
		h->v[i] = last;
	return 1;
}

/* a standard normal draw (Box-Muller): the heavy-tailed laws need real tails */
static double normal01(struct pulse_rng *r)
{
	double u = sc_rng_unit(r), v = sc_rng_unit(r);
	return sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
}

/* A compute phase's duration. "normal" (the default): base x (1 + jitter
 * z), z approximately normal. The heavy-tailed laws keep the mean at base
 * and put the rest in rare long phases, as measured on production GPUs
 * (kernel times are right-skewed with long tails: Jeon et al., "Analysis
 * of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
 * ATC 2019; stragglers in Wu et al., "FALCON", 2024):
 *   lognormal: base x exp(sigma z - sigma^2 / 2), sigma = jitter;
 *   pareto:    base x ((1 - jitter) + jitter x X (a - 1) / a), X Pareto
 *              with shape a = pareto_alpha and scale 1 (mean a / (a - 1)).
 * Capped at 20 x base: a phase that long is a failure, not jitter. */
double sim_jitter(struct sim *sm, double base)
{
	const struct sc_scenario *s = sm->s;
	double j = s->jitter;
	if (j <= 0 || base <= 0)
		return base;
	double v;
	if (s->jitter_dist == JD_LOGNORMAL) {
		v = base * exp(j * normal01(&sm->rng) - j * j / 2);
	} else if (s->jitter_dist == JD_PARETO) {
		double a = s->pareto_alpha;
		double x = pow(1 - sc_rng_unit(&sm->rng), -1 / a);
		v = base * ((1 - j) + j * x * (a - 1) / a);
	} else {
		/* approximately normal: sum of 4 uniforms, sd 1 */
		double z = 0;
		for (int i = 0; i < 4; i++)
			z += sc_rng_unit(&sm->rng);
		z = (z - 2.0) * 1.7320508;
		v = base * (1 + j * z);
	}
	if (v > base * 20)
		v = base * 20;
	return v < base * 0.2 ? base * 0.2 : v;
}

uint64_t host_clock(const struct sim *sm, int host, double t)
{
	const struct host *h = &sm->hosts[host];
	double v = h->off + t * (1 + h->drift_ppm * 1e-6);
	return sm->s->clock_base_ns + (uint64_t)llround(v);
}

/* ---------- NIC TX events ---------- */
/* bytes | 1 << 31: the event ends the QP's message (one slice) */
static void nic_emit(struct sim *sm, int nic, double t, uint32_t qpn, uint64_t bytes, int last)
{
	if (last)
		bytes |= 1ull << 31;
	struct nic *n = &sm->nics[nic];
	if (n->nev == n->evcap) {
		n->evcap = n->evcap ? n->evcap * 2 : 4096;
		n->ev = xrealloc(n->ev, n->evcap * sizeof *n->ev);
	}
	n->ev[n->nev++] = (struct txrec){ t, qpn, (uint32_t)bytes };
	sm->stat_events++;
}

/* Brings a flow's progress to `now`, emitting the coalesced TX events it
 * crossed: one event when max_bytes accumulated (at a packet boundary) or
 * when max_ns passed since the flow's last event with bytes pending. */
static void flow_advance(struct sim *sm, struct flow *f, double now)
{
	const struct sc_scenario *s = sm->s;
	double r = f->rate, t0 = f->t_last, p0 = f->prog;
	double mtu = s->mtu, chunk = (double)((s->event_max_bytes / (uint64_t)s->mtu) * (uint64_t)s->mtu);
	if (r > 0) {
		for (;;) {
			double tc = t0 + ((double)f->emitted + chunk - p0) / r;
			double tt = f->last_ev + s->event_max_ns;
			double te = tc < tt ? tc : tt;
			if (te > now)
				break;
			if (te < t0)
				te = t0;
			double pe = p0 + r * (te - t0);
			if (pe > f->total)
				pe = f->total;
			uint64_t q;
			if (te == tc) /* by definition the chunk is complete here */
				q = f->emitted + (uint64_t)chunk;
			else
				q = (uint64_t)(pe / mtu) * (uint64_t)mtu;
			if ((double)q > f->total)
				q = (uint64_t)f->total;
			if (q > f->emitted) {
				nic_emit(sm, f->src, te, f->qpn, q - f->emitted, (double)q >= f->total);
				f->emitted = q;
			}
			f->last_ev = te;
		}
		f->prog = p0 + r * (now - t0);
		if (f->prog > f->total)
			f->prog = f->total;
	} else {
		f->last_ev = now;
	}
	f->t_last = now;
}

static double flow_rate(struct sim *sm, const struct flow *f)
{
	const struct nic *a = &sm->nics[f->src], *b = &sm->nics[f->dst];
	double r = a->cap * a->txf / (a->ntx ? a->ntx : 1);
	double rx = b->cap * b->rxf / (b->nrx ? b->nrx : 1);
	if (rx < r)
		r = rx;
	if (f->path >= 0) {
		const struct path *p = &sm->paths[f->path];
		double pr = p->cap / (p->n ? p->n : 1);
		if (pr < r)
			r = pr;
		r *= p->factor;
	}
	if (f->max_rate > 0 && r > f->max_rate)
		r = f->max_rate;
	return r;
}

static void flow_reschedule(struct sim *sm, struct flow *f)
{
	flow_advance(sm, f, sm->now);
	f->rate = flow_rate(sm, f);
	f->ver++;
	if (f->rate > 0) {
		double left = f->total - f->prog;
		heap_push(&sm->q, sm->now + (left > 0 ? left / f->rate : 0), EV_FLOW_DONE, f, 0,
			  f->ver);
	}
}

static void refresh_list_tx(struct sim *sm, struct flow *l)
{
	for (struct flow *f = l; f; f = f->tx_next)
		flow_reschedule(sm, f);
}
static void refresh_list_rx(struct sim *sm, struct flow *l)
{
	for (struct flow *f = l; f; f = f->rx_next)
		flow_reschedule(sm, f);
}
static void refresh_list_p(struct sim *sm, struct flow *l)
{
	for (struct flow *f = l; f; f = f->p_next)
		flow_reschedule(sm, f);
}

/* The flows whose share may have changed: everything on the resources of
 * (src, dst, path). A flow on two of them is rescheduled twice, harmlessly. */
static void refresh_around(struct sim *sm, int src, int dst, int path)
{
	refresh_list_tx(sm, sm->nics[src].txl);
	refresh_list_rx(sm, sm->nics[dst].rxl);
	if (path >= 0)
		refresh_list_p(sm, sm->paths[path].l);
}

void net_refresh_nic(struct sim *sm, int nic)
{
	refresh_list_tx(sm, sm->nics[nic].txl);
	refresh_list_rx(sm, sm->nics[nic].rxl);
}

static int find_path(struct sim *sm, int src, int dst)
{
	for (int i = 0; i < sm->npaths; i++)
		if (sm->paths[i].src == src && sm->paths[i].dst == dst)
			return i;
	return -1;
}

void net_start_flow(struct sim *sm, void *owner, int item, uint64_t bytes, int src, int dst,
		    uint32_t qpn, double max_rate)
{
	struct flow *f = sm->flow_free;
	if (f)
		sm->flow_free = f->free_next;
	else
		f = xcalloc(1, sizeof *f);
	uint32_t ver = f->ver;
	memset(f, 0, sizeof *f);
	f->ver = ver + 1;
	f->owner = owner;
	f->item = item;
	f->src = src;
	f->dst = dst;
	f->qpn = qpn;
	f->max_rate = max_rate;
	f->total = (double)bytes;
	f->t_last = f->last_ev = f->t_start = sm->now;
	f->path = find_path(sm, src, dst);
	struct nic *a = &sm->nics[src], *b = &sm->nics[dst];
	f->tx_next = a->txl;
	if (a->txl)
		a->txl->tx_prev = f;
	a->txl = f;
	a->ntx++;
	f->rx_next = b->rxl;
	if (b->rxl)
		b->rxl->rx_prev = f;
	b->rxl = f;
	b->nrx++;
	if (f->path >= 0) {
		struct path *p = &sm->paths[f->path];
		f->p_next = p->l;
		if (p->l)
			p->l->p_prev = f;
		p->l = f;
		p->n++;
	}
	sm->stat_flows++;
	/* the new flow itself is on the TX list: it gets its rate there */
	refresh_around(sm, src, dst, f->path);
	/* NIC down: it stops in the middle of this slice, which it sends or,
	 * on a NIC that has sent nothing (a one-to-all's or broadcast's leaf,
	 * which only receives), receives */
	int down = a->arm_down && !a->down ? src : b->arm_down && !b->down && !b->nev ? dst : -1;
	if (down >= 0 && bytes >= 65536) {
		sm->nics[down].arm_down = 0;
		double t = f->rate > 0 ? f->total / f->rate : 1000;
		heap_push(&sm->q, sm->now + t * sc_rng_range(&sm->rng, 0.2, 0.8), EV_NIC_DOWN, NULL,
			  (uint32_t)down, 0);
	}
}

void net_flow_done(struct sim *sm, struct flow *f)
{
	flow_advance(sm, f, sm->now);
	if ((double)f->emitted < f->total)
		nic_emit(sm, f->src, sm->now, f->qpn, (uint64_t)f->total - f->emitted, 1);
	struct nic *a = &sm->nics[f->src], *b = &sm->nics[f->dst];
	if (f->tx_prev)
		f->tx_prev->tx_next = f->tx_next;
	else
		a->txl = f->tx_next;
	if (f->tx_next)
		f->tx_next->tx_prev = f->tx_prev;
	a->ntx--;
	if (f->rx_prev)
		f->rx_prev->rx_next = f->rx_next;
	else
		b->rxl = f->rx_next;
	if (f->rx_next)
		f->rx_next->rx_prev = f->rx_prev;
	b->nrx--;
	if (f->path >= 0) {
		struct path *p = &sm->paths[f->path];
		if (f->p_prev)
			f->p_prev->p_next = f->p_next;
		else
			p->l = f->p_next;
		if (f->p_next)
			f->p_next->p_prev = f->p_prev;
		p->n--;
	}
	f->ver++; /* stale completion events are ignored */
	void *owner = f->owner;
	int item = f->item;
	double t0 = f->t_start;
	int src = f->src, dst = f->dst, path = f->path;
	f->free_next = sm->flow_free;
	sm->flow_free = f;
	refresh_around(sm, src, dst, path);
	sm->on_flow_end(sm, owner, item, t0);
}
