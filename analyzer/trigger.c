/* pulse-analyzer: when to localize (pulse.txt §6.2; Holmes' "irregular
 * iteration"; CCL-D's hang detection).
 *
 * Slow: every completed record is compared with its rank's running baseline
 * for the same operator signature (op, count) on the same communicator:
 *   - call-to-end time (an operator that waits or transmits longer), and
 *   - compute time before it (the rank's previous operator end to this call);
 * and every complete operator instance (all ranks) with the communicator's
 * running baseline of its span (first call to last end) and of its period
 * (one iteration, for operators issued once per iteration).
 * Anything slow_factor above its longest (and a floor scaled to its spread,
 * thr_of) fires.
 *
 * Hang: a record the agent reported hung or not started (the agent applies
 * its own bound), or a rank whose call has been outstanding for hang_ns with
 * no record while others wait.
 *
 * A fired trigger waits until the other hosts' records of the same
 * operators are in: a slow one until every agent's poll_end says so past
 * its evidence (an_data_in), else, and a hang always, settle_ns of data
 * time (they come at the agents' next poll); then both localizers run. The per-communicator state is kept incrementally at
 * ingest, so localization only reads it. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "an_internal.h"
#include "pulse/analyzer_wire.h"
#include "pulse/hook_record.h"

static void fire(struct an_state *s, int kind, const struct an_comm *c, uint64_t seq, uint64_t onset,
		 uint64_t due, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* due: the last data time of the evidence (the operator's last byte, or
 * the call of a hang) */
static void fire(struct an_state *s, int kind, const struct an_comm *c, uint64_t seq, uint64_t onset,
		 uint64_t due, const char *fmt, ...)
{
	if (s->hang_open_ns)
		return; /* the job is stopped: what waits now is the hang diagnosed */
	/* One pending trigger per kind and episode. A poll delivers a second
	 * of records at once, out of time order: a fire far from the pending
	 * trigger's is another episode with its own onset (merged, an early
	 * warm-up fire moved the onset of a later fault back to the start of
	 * the run, and the fault's own fires were lost). */
	uint64_t horizon = AN_CAUSE_PERIODS * an_period_ns(s);
	for (uint32_t i = 0; i < s->ntrig; i++)
		if (s->trig[i].kind == kind) {
			struct an_trigger *p = &s->trig[i];
			if (horizon && onset && p->first_onset_ns &&
			    (onset + horizon < p->first_onset_ns || onset > p->first_onset_ns + horizon))
				continue;
			if (onset && onset < p->onset_ns)
				p->onset_ns = onset;
			if (due > p->due_ns)
				p->due_ns = due;
			return;
		}
	if (kind == AN_TRIG_SLOW && (s->now_ns < s->slow_rearm || (due && due <= s->slow_seen)))
		return;
	if (s->ntrig >= AN_TRIG_MAX)
		return;
	struct an_trigger *t = &s->trig[s->ntrig++];
	memset(t, 0, sizeof *t);
	t->kind = kind;
	t->comm = c ? an_comm_index_of(s, c) : -1;
	t->seq = seq;
	t->fired_ns = s->now_ns;
	t->due_ns = due;
	t->onset_ns = onset;
	t->first_onset_ns = onset;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof t->why, fmt, ap);
	va_end(ap);
	if (kind != AN_TRIG_HANG)
		s->st.triggers_slow++;
	else
		s->st.triggers_hang++;
	an_log(s, "trigger: %s", t->why);
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "fire %d at %.4f s, onset %.4f s, due %.4f s: %s\n", kind,
			(double)(s->now_ns % 1000000000000ull) / 1e9, (double)(onset % 1000000000000ull) / 1e9,
			(double)(due % 1000000000000ull) / 1e9, t->why);
}

/* How much longer than the longest of a baseline's samples fires: the
 * slow factor of it, and a floor scaled to the baseline's own noise. The
 * floor is twice the samples' range (an operator whose durations spread
 * over its schedule places or its waits gets the whole min_slow_ns), and
 * never under a quarter of min_slow_ns: an operator of a few ms that never
 * varied by more than a few epochs, slowed by 0.4 ms, is slow, where a
 * fixed 0.5 ms floor hid a 30% slowdown of it. */
static double thr_of(const struct an_state *s, const struct an_roll *r)
{
	double max = an_roll_max(r), lo = (double)s->cfg.min_slow_ns / 4;
	double floor = 2.0 * (max - an_roll_min(r));
	if (floor < lo)
		floor = lo;
	if (floor > (double)s->cfg.min_slow_ns)
		floor = (double)s->cfg.min_slow_ns;
	double t = (s->cfg.slow_factor - 1.0) * max;
	return t > floor ? t : floor;
}

/* The hung communicator completed a later operator: what was diagnosed as
 * a hang was a stall. Its verdicts become fail-slow, with the stall's
 * length (a rank whose operators complete later is never fail-stop). */
static void stall_ended(struct an_state *s, uint64_t end)
{
	for (uint32_t i = 0; i < s->ndiags; i++) {
		struct an_diagnosis *d = &s->diags[i];
		if (d->comm_id != s->hang_comm || d->seq != s->hang_seq || d->stall_ns ||
		    (d->cls != AN_COMP_STOP && d->cls != AN_COMM_STOP))
			continue;
		uint64_t from = d->onset_ns && d->onset_ns < end ? d->onset_ns : d->report_ns;
		d->stall_ns = end > from ? end - from : 0;
		d->cls = d->cls == AN_COMP_STOP ? AN_COMP_SLOW : AN_COMM_SLOW;
		size_t l = strlen(d->why);
		snprintf(d->why + l, sizeof d->why - l, "; then it went on after %.2f s: a stall, not a hang",
			 (double)d->stall_ns / 1e9);
		an_log(s, "the hang on communicator 0x%016" PRIx64 " ended after %.2f s: a stall, reported as %s",
		       d->comm_id, (double)d->stall_ns / 1e9, an_class_name(d->cls));
	}
}

/* The job runs again after a hang: an operator completed on the hung
 * communicator after the hung one, or on a communicator born after the
 * diagnosis (a restarted job). A restart leaves the old job's
 * communicators behind with their open calls: retired, they are no
 * evidence of a new hang. */
static void hang_close(struct an_state *s, struct an_comm *c, const struct an_rec *r)
{
	an_log(s, "the job runs again (%s #%" PRIu64 " on communicator 0x%016" PRIx64
		  " completed after the hang): watching for new anomalies",
	       pulse_op_type_name(r->op), r->seq, c->id);
	if (c->id == s->hang_comm)
		stall_ended(s, r->end);
	if (c->born_ns > s->hang_open_ns)
		for (uint32_t i = 0; i < s->ncomms; i++) {
			struct an_comm *x = s->comms[i];
			if (x->born_ns <= s->hang_open_ns && x->done_ns <= s->hang_open_ns)
				x->retired = 1;
		}
	s->hang_open_ns = 0;
}

void an_trigger_on_record(struct an_state *s, struct an_comm *c, struct an_inst *in,
			  struct an_rec *r)
{
	if (in && r->npeers) {
		uint64_t due = in->last_end + s->cfg.settle_ns;
		if (!c->xpending || due < c->xdue)
			c->xdue = due;
		in->xdirty = 1;
		if (!c->xpending || in->seq < c->xlo)
			c->xlo = in->seq;
		if (!c->xpending || in->seq > c->xhi)
			c->xhi = in->seq;
		c->xpending = 1;
	}
	struct an_member *m = &c->m[r->rank];
	if (r->status == PULSE_OP_COMPLETE && r->end > c->done_ns)
		c->done_ns = r->end;
	if (s->hang_open_ns && r->status == PULSE_OP_COMPLETE && r->end > s->hang_open_ns &&
	    ((c->id == s->hang_comm && r->seq > s->hang_seq) || c->born_ns > s->hang_open_ns))
		hang_close(s, c, r);
	if (r->status == PULSE_OP_HUNG || r->status == PULSE_OP_NOT_STARTED) {
		fire(s, AN_TRIG_HANG, c, r->seq, r->call, r->call,
		     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 " rank %d %s (called, not complete)",
		     pulse_op_type_name(r->op), r->seq, c->id, r->rank,
		     r->status == PULSE_OP_HUNG ? "hung" : "not started");
		return;
	}
	if (r->status != PULSE_OP_COMPLETE && r->status != PULSE_OP_NO_TRAFFIC)
		return; /* gap: unknown, never used as a measurement */
	int sig = r->sig;
	/* baselines as they were before this record */
	if (an_roll_stats(&m->gap[sig], &r->gap_med, &r->gap_mad) == 0)
		r->gap_nb = m->gap[sig].n;
	if (an_roll_stats(&m->dur[sig], &r->dur_med, &r->dur_mad) == 0) {
		r->dur_nb = m->dur[sig].n;
		r->dur_max = an_roll_max(&m->dur[sig]);
	}
	if (an_roll_stats(&m->act[sig], &r->act_med, NULL) == 0)
		r->act_nb = m->act[sig].n;
	if (m->wdur[sig].n) {
		r->wdur_nb = m->wdur[sig].n;
		r->wdur_max = an_roll_max(&m->wdur[sig]);
	}
	uint64_t d = r->end > r->call && r->call ? r->end - r->call : 0;
	/* (the compute time before an operator varies with its place in the
	 * schedule; it is not a trigger by itself: a slower compute shows as
	 * its peers' longer waits and a longer iteration) */
	/* against the longest of the last AN_BASE_N: an operator's place in the
	 * schedule (1F1B warm-up, steady state, the iteration's first one)
	 * changes its duration, and every place recurs each iteration */
	if (r->dur_nb >= 3 && d && r->status == PULSE_OP_COMPLETE) {
		double thr = thr_of(s, &m->dur[sig]);
		if ((double)d > r->dur_max + thr)
			fire(s, AN_TRIG_SLOW, c, r->seq, r->call, r->end,
			     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 " took %.1f ms on rank %d, at most %.1f ms before",
			     pulse_op_type_name(r->op), r->seq, c->id, (double)d / 1e6, r->rank, r->dur_max / 1e6);
	}
	if (r->pre_gap >= 0)
		an_roll_add(&m->gap[sig], (double)r->pre_gap);
	if (d && r->status == PULSE_OP_COMPLETE)
		an_roll_add_at(&m->dur[sig], (double)d, r->call);
	if (r->active && r->status == PULSE_OP_COMPLETE)
		an_roll_add_at(&m->act[sig], (double)r->active, r->call);
	if (r->start && r->end > r->start && r->status == PULSE_OP_COMPLETE)
		an_roll_add_at(&m->wdur[sig], (double)(r->end - r->start), r->call);
	if (an_is_p2p(r->op) && r->status == PULSE_OP_COMPLETE && r->actual > 0) {
		if (r->rate_gbps > 0)
			an_roll_add(&m->rate, r->rate_gbps);
		uint64_t od = r->end > r->start && r->start ? r->end - r->start : r->dur;
		if (od && r->expected)
			an_roll_add(&m->orate, (double)r->expected * 8 / (double)od);
	}
}

/* Host clock skew: the ranks of one collective end within microseconds to
 * a few milliseconds of each other; a host whose ends sit consistently
 * further than the sync bound from the others' is skewed. */
static void skew_update(struct an_state *s, struct an_comm *c, struct an_inst *in)
{
	if (!in->recs || c->nranks < 3 || in->op > PULSE_HOOK_OP_REDUCE)
		return;
	double ends[AN_MAX_RANKS > 64 ? 64 : AN_MAX_RANKS];
	int n = 0;
	for (int32_t i = 0; i < c->nranks && n < 64; i++) {
		struct an_rec *r = in->recs[i];
		if (!r || r->status != PULSE_OP_COMPLETE || !r->end)
			return;
		ends[n++] = (double)r->end;
	}
	if (n < 3)
		return;
	double t[64];
	memcpy(t, ends, (size_t)n * sizeof *t);
	double med = an_median(t, (size_t)n);
	for (int32_t i = 0; i < c->nranks && i < 64; i++) {
		struct an_rec *r = in->recs[i];
		struct an_host *h = &s->hosts[s->nodes[r->node].host];
		double dev = (double)r->end - med;
		if (h->skew_samples == 0)
			h->skew_ns = (int64_t)dev;
		else
			h->skew_ns = (int64_t)(0.8 * (double)h->skew_ns + 0.2 * dev);
		h->skew_samples++;
		if (!h->skewed && h->skew_samples >= 5 &&
		    (uint64_t)llabs(h->skew_ns) > s->cfg.skew_bound_ns) {
			h->skewed = 1;
			an_log(s, "host %s: its clock is %.1f ms off the other hosts' (bound %.1f ms); "
				  "its records are dropped from now on (counted)",
			       h->name, (double)h->skew_ns / 1e6, (double)s->cfg.skew_bound_ns / 1e6);
		}
	}
}

/* The iteration: the signature whose instances are furthest apart (once
 * per iteration, e.g. the gradient all-reduce or the loss all-reduce). */
static int is_iteration_sig(const struct an_state *s, const struct an_sig *g)
{
	double mine, best = 0;
	if (an_roll_stats(&g->period, &mine, NULL))
		return 0;
	for (uint32_t i = 0; i < s->ncomms; i++)
		for (uint32_t k = 0; k < s->comms[i]->nsigs; k++) {
			double m;
			const struct an_sig *x = &s->comms[i]->sigs[k];
			if (x->period.n >= 1 && an_roll_stats(&x->period, &m, NULL) == 0 && m > best)
				best = m;
		}
	return mine >= 0.9 * best;
}

/* The node at one end of every transfer of an instance whose peak epoch
 * stayed AN_ACTIVE_OUTLIER below the instance's median peak, -1 when none
 * or no one node. A capped NIC or PCIe link caps what it sends and, less,
 * what it receives, so its capped transfers can run both ways; where one
 * transfer alone is capped, its sender. */
static int capped_node(const struct an_state *s, const struct an_comm *c, const struct an_inst *in)
{
	double med;
	if (an_inst_peak_median(in, c, &med))
		return -1;
	int a = -1, b = -1, n = 0; /* the ends every capped transfer so far shares */
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE)
			continue;
		for (uint32_t p = 0; p < r->npeers; p++) {
			const struct an_peer *q = &r->peers[p];
			if (!an_peer_peak_measured(r, q) || (double)q->peak * AN_ACTIVE_OUTLIER >= med)
				continue;
			if (r->node < 0 || q->node < 0)
				return -1; /* an end not known: no one node */
			if (n++ == 0) {
				a = r->node;
				b = q->node;
				continue;
			}
			if (a != r->node && a != q->node)
				a = -1;
			if (b != r->node && b != q->node)
				b = -1;
			if (a < 0 && b < 0)
				return -1;
		}
	}
	if (getenv("PULSE_ANALYZER_DEBUG2") && n)
		fprintf(stderr, "capped: %016" PRIx64 " #%" PRIu64 " %d capped transfers, common end %s\n", c->id,
			in->seq, n, a >= 0 ? an_node_host(s, a) : b >= 0 ? an_node_host(s, b) : "-");
	return a >= 0 ? a : b;
}

/* Peers before history: the ranks of a built-in collective move the same
 * volume, so a rank whose actual transmission time stands out of its own
 * instance's (AN_ACTIVE_OUTLIER over the median, and two epochs: the
 * localizer's criterion) needs no baseline, and a fault present from the
 * first iteration is seen. The same holds for a transfer's peak epoch in
 * any instance (capped_node). It fires when the same node stands out in
 * two consecutive instances of the signature (once is jitter). */
static void peer_check(struct an_state *s, struct an_comm *c, struct an_inst *in)
{
	if (in->sig < 0)
		return;
	struct an_sig *g = &c->sigs[in->sig];
	int cap = capped_node(s, c, in);
	int cap_again = cap >= 0 && g->cap_node == cap && in->seq > g->cap_seq;
	g->cap_node = cap;
	g->cap_seq = in->seq;
	if (cap_again) {
		fire(s, AN_TRIG_SLOW, c, in->seq, in->first_call, in->last_end,
		     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 ": the transfers of %s GPU %d peaked "
		     "below their peers' in one epoch, as in the previous one",
		     pulse_op_type_name(in->op), in->seq, c->id, an_node_host(s, cap), s->nodes[cap].gpu);
		return;
	}
	if (!an_is_builtin(in->op) || c->nranks < 3)
		return;
	double v[256], t[256];
	int32_t rk[256];
	int n = 0;
	for (int32_t k = 0; k < c->nranks && n < 256; k++) {
		const struct an_rec *r = in->recs[k];
		if (r->status != PULSE_OP_COMPLETE || !r->actual || !r->active)
			continue;
		v[n] = (double)r->active;
		rk[n++] = k;
	}
	int node = -1, hi = 0;
	double med = 0;
	if (n >= 3) {
		memcpy(t, v, (size_t)n * sizeof *t);
		med = an_median(t, (size_t)n);
		for (int j = 1; j < n; j++)
			if (v[j] > v[hi])
				hi = j;
		double ep = s->epoch_ns ? (double)s->epoch_ns : 32000.0;
		if (v[hi] > AN_ACTIVE_OUTLIER * med && v[hi] - med > 2.0 * ep)
			node = in->recs[rk[hi]]->node;
	}
	if (getenv("PULSE_ANALYZER_DEBUG2"))
		fprintf(stderr, "peer: %016" PRIx64 " #%" PRIu64 " %s n %d max %.3f (rank %d) med %.3f node %d\n", c->id,
			in->seq, pulse_op_type_name(in->op), n, n ? v[hi] / 1e6 : 0, n ? rk[hi] : -1, med / 1e6, node);
	int again = node >= 0 && g->peer_node == node && in->seq > g->peer_seq;
	g->peer_node = node;
	g->peer_seq = in->seq;
	if (again)
		fire(s, AN_TRIG_SLOW, c, in->seq, in->first_call, in->last_end,
		     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 ": rank %d transmitted for %.2f ms against "
		     "a median of %.2f ms over its %d peers, as in the previous one",
		     pulse_op_type_name(in->op), in->seq, c->id, rk[hi], v[hi] / 1e6, med / 1e6, n);
}

/* The rank every other rank waited for, in AN_LAST_K of the group's
 * AN_LAST_N most recent collectives over AN_LAST_PERIODS iterations
 * (an_last_caller): a straggler whose delay may stay below every duration
 * threshold. Fires when that becomes true. */
#define LAST_RUN_MIN 4
#define LAST_RUN_ALPHA 0.001
static void last_caller_check(struct an_state *s, struct an_comm *c, const struct an_inst *in)
{
	if ((!c->builtin && !c->custom) || c->nranks < 3)
		return;
	double mine = 0, others = 0;
	int32_t k = an_last_caller(s, c, in, &mine, &others);
	c->last_t[c->nlast % AN_LAST_N] = in->first_call;
	c->last_callers[c->nlast++ % AN_LAST_N] = k + 1;
	int was = c->last_fired;
	c->last_fired = 0;
	if (k < 0)
		return;
	int n = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	for (int i = 0; i < AN_LAST_N; i++)
		if (c->last_callers[i] == k + 1) {
			n++;
			t0 = c->last_t[i] < t0 ? c->last_t[i] : t0;
			t1 = c->last_t[i] > t1 ? c->last_t[i] : t1;
		}
	/* A late onset leaves fewer than AN_LAST_N instances to the run's end:
	 * the same rank in every one of the most recent m (or most of them)
	 * is as unlikely by chance, binomial with 1 in nranks each, under
	 * LAST_RUN_ALPHA over the AN_LAST_N - 3 windows tried (seed 1151
	 * #150, a throttled CPU from iteration 10 of 16 in a 5-rank neighbour
	 * exchange: the last caller in the final 6 of 6, nothing fired) */
	int run = 0;
	uint64_t r0 = UINT64_MAX;
	if (n < AN_LAST_K) {
		int cnt = 0;
		uint32_t have = c->nlast < AN_LAST_N ? c->nlast : AN_LAST_N;
		for (uint32_t i = 0; i < have; i++) {
			uint32_t slot = (c->nlast - 1 - i) % AN_LAST_N;
			if (c->last_callers[slot] != k + 1)
				continue;
			cnt++;
			if (i + 1 < LAST_RUN_MIN)
				continue;
			double p = an_binom_tail((int)(i + 1), cnt, 1.0 / c->nranks) * (AN_LAST_N - LAST_RUN_MIN + 1);
			if (p < LAST_RUN_ALPHA) {
				run = cnt;
				r0 = c->last_t[slot];
			}
		}
	}
	c->last_fired = (n >= AN_LAST_K && (!c->custom || t1 - t0 >= AN_LAST_PERIODS * an_period_ns(s))) ||
			(run && (!c->custom || t1 - r0 >= AN_LAST_PERIODS * an_period_ns(s)));
	uint64_t onset = in->first_call;
	if (run && n < AN_LAST_K) {
		n = run;
		onset = r0; /* the localizer counts from the run's first */
	}
	if (getenv("PULSE_ANALYZER_DEBUG2"))
		fprintf(stderr, "last caller: %016" PRIx64 " #%" PRIu64 " rank %d, %d of the last %d over %.1f ms (period %.1f ms)\n",
			c->id, in->seq, k, n, AN_LAST_N, (double)(t1 - t0) / 1e6, (double)an_period_ns(s) / 1e6);
	if (c->last_fired && !was && an_inst_fan_out_root(c, in) >= 0)
		fire(s, AN_TRIG_STRAGGLER, c, in->seq, onset, in->last_end,
		     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 ": the transfer to rank %d began %.2f ms "
		     "after the sender's first (the others %.2f ms), in %d of the last %d",
		     pulse_op_type_name(in->op), in->seq, c->id, k, mine / 1e6, others / 1e6, n, AN_LAST_N);
	else if (c->last_fired && !was)
		fire(s, AN_TRIG_STRAGGLER, c, in->seq, onset, in->last_end,
		     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 ": every rank waited for rank %d's call "
		     "(%.2f ms from its call to its first byte, the others %.2f ms), in %d of the last %d",
		     pulse_op_type_name(in->op), in->seq, c->id, k, mine / 1e6, others / 1e6, n, AN_LAST_N);
}

/* A slowdown just under thr_of's floor in its first iteration raises the
 * baseline's longest, and the iterations after it are measured against
 * that (seed 1138 #040, a throttled CPU in a 6-host neighbour exchange:
 * periods 5.02-5.22 ms, then 5.68, 5.52, 5.41 ms, each under the longest
 * before it plus the floor; nothing fired). So the last m periods (this
 * one and the m - 1 before it, m up to STREAK_MAX) are held against the
 * longest of the n before them: when c of them lie above it, the chance
 * of that with exchangeable periods (noise alone) is C(m, c) / C(n + m, c)
 * (the c longest of all n + m are among the last m); below STREAK_ALPHA,
 * with c three at least and this period one of them, the iterations are
 * slow. Counted, not required in a row: a period just under the longest
 * amid slow ones broke the row, and the slow one before it became the
 * longest (seed 1138 #037, a throttled CPU from iteration 22 of 28 in a
 * neighbour exchange: 3.71-3.81 ms before, then 3.87, 4.26, 3.94, 4.06,
 * 4.16, 3.97 ms; nothing fired). Each must be above by thr_of's least
 * floor as well: a steady state creeps up by tens of microseconds and
 * sets a new longest by that much (seed 1138 #065, a slow backward pass
 * from iteration 4 of 26: an allreduce's last three spans 10.07-10.12 ms
 * against the longest 10.06 ms of the 23 before). Periods only: an
 * instance's span is not stationary where each PP rank numbers its own
 * P2P calls (rand-gpt-pp4-ingress-group-starts-late: a PP group's span
 * grew to 406 ms over the run, a new longest every instance, and the
 * fire moved the window off the fault). */
#define STREAK_ALPHA 0.01
#define STREAK_MIN_BASE 6
#define STREAK_MIN_RUN 3 /* it is tested at every instance: two from a long baseline happen by chance */
#define STREAK_MAX 8

struct streak {
	uint32_t m, c, n;
	double before_max;
	uint64_t onset; /* the start of the first period above it */
};

/* the slot of r's i-th most recent sample (0: the newest) */
static uint32_t recent_slot(const struct an_roll *r, uint32_t i)
{
	return (r->pos + AN_BASE_N - 1 - i) % AN_BASE_N;
}

static int streak_above(const struct an_state *s, const struct an_roll *r, double v, struct streak *out)
{
	double margin = (double)s->cfg.min_slow_ns / 4;
	for (uint32_t m = STREAK_MIN_RUN; m <= STREAK_MAX && r->n >= m - 1 + STREAK_MIN_BASE; m++) {
		uint32_t n = r->n - (m - 1);
		double bmax = -INFINITY;
		for (uint32_t i = m - 1; i < r->n; i++)
			bmax = fmax(bmax, r->v[recent_slot(r, i)]);
		if (!(v > bmax + margin))
			continue;
		uint32_t c = 1;
		uint64_t onset = 0;
		for (uint32_t i = 0; i < m - 1; i++)
			if (r->v[recent_slot(r, i)] > bmax + margin) {
				c++;
				onset = r->t[recent_slot(r, i)];
			}
		if (c < STREAK_MIN_RUN)
			continue;
		double p = 1;
		for (uint32_t i = 0; i < c; i++)
			p *= (double)(m - i) / (double)(n + m - i);
		if (p < STREAK_ALPHA) {
			*out = (struct streak){ m, c, n, bmax, onset };
			return 1;
		}
	}
	return 0;
}

/* A fault from the second or third iteration leaves the period rule above
 * one or two periods to compare with, and it wants three (their spread is
 * the floor's measure); the streak below wants six. So a step is tested
 * as such: the last m periods (this one among them, m >= 3) each above the
 * longest of the one or two before by thr_of's margin for those, and that
 * step (the shortest of the m less the longest before) wider than the m
 * periods' own spread, the only measure of noise there is: a drift, or
 * noise, spreads the periods after as widely as it lifts them (seed 1142
 * #139, a throttled GPU from iteration 2 of 6: periods 52.9 ms, then 74.5,
 * 74.7, 75.3, 74.9 ms; nothing fired). */
#define SHIFT_MAX_BASE 2

static int shift_above(const struct an_state *s, const struct an_roll *r, double v, struct streak *out)
{
	for (uint32_t m = STREAK_MIN_RUN; m <= STREAK_MAX && m - 1 < r->n; m++) {
		uint32_t n = r->n - (m - 1);
		if (n > SHIFT_MAX_BASE)
			continue;
		struct an_roll base = { .n = 0 };
		for (uint32_t i = m - 1; i < r->n; i++)
			an_roll_add(&base, r->v[recent_slot(r, i)]);
		double bmax = an_roll_max(&base), lo = v, hi = v;
		for (uint32_t i = 0; i < m - 1; i++) {
			lo = fmin(lo, r->v[recent_slot(r, i)]);
			hi = fmax(hi, r->v[recent_slot(r, i)]);
		}
		if (lo > bmax + thr_of(s, &base) && lo - bmax > hi - lo) {
			*out = (struct streak){ m, m, n, bmax, r->t[recent_slot(r, m - 2)] };
			return 1;
		}
	}
	return 0;
}

void an_trigger_on_instance(struct an_state *s, struct an_comm *c, struct an_inst *in)
{
	if (in->evaluated)
		return;
	in->evaluated = 1;
	for (int32_t i = 0; i < c->nranks; i++)
		if (in->recs[i]->status != PULSE_OP_COMPLETE && in->recs[i]->status != PULSE_OP_NO_TRAFFIC)
			return;
	skew_update(s, c, in);
	peer_check(s, c, in);
	last_caller_check(s, c, in);
	struct an_sig *g = &c->sigs[in->sig];
	uint64_t span = in->last_end > in->first_call && in->first_call ? in->last_end - in->first_call : 0;
	if (span && g->span.n >= 3) {
		double med = an_roll_max(&g->span);
		if ((double)span > med + thr_of(s, &g->span))
			fire(s, AN_TRIG_SLOW, c, in->seq, in->first_call, in->last_end,
			     "%s #%" PRIu64 " on communicator 0x%016" PRIx64
			     " took %.1f ms from first call to last byte, at most %.1f ms before",
			     pulse_op_type_name(in->op), in->seq, c->id, (double)span / 1e6, med / 1e6);
	}
	if (span)
		an_roll_add(&g->span, (double)span);
	if (g->last_end && in->last_end > g->last_end) {
		uint64_t period = in->last_end - g->last_end;
		double pmax = an_roll_max(&g->period);
		struct streak k;
		if (g->period.n >= 3 && is_iteration_sig(s, g) && (double)period > pmax + thr_of(s, &g->period))
			fire(s, AN_TRIG_SLOW, c, in->seq, g->last_end, in->last_end,
			     "iteration slower: %s on communicator 0x%016" PRIx64
			     " came %.1f ms after the previous one, at most %.1f ms before",
			     pulse_op_type_name(in->op), c->id, (double)period / 1e6, pmax / 1e6);
		else if (is_iteration_sig(s, g) && streak_above(s, &g->period, (double)period, &k))
			fire(s, AN_TRIG_SLOW, c, in->seq, k.onset ? k.onset : g->last_end, in->last_end,
			     "iteration slower: %s on communicator 0x%016" PRIx64 " came later after the previous "
			     "one than the longest of the %u periods before, in %u of the last %u (now %.1f ms, at "
			     "most %.1f ms before)",
			     pulse_op_type_name(in->op), c->id, k.n, k.c, k.m, (double)period / 1e6,
			     k.before_max / 1e6);
		else if (is_iteration_sig(s, g) && shift_above(s, &g->period, (double)period, &k))
			fire(s, AN_TRIG_SLOW, c, in->seq, k.onset, in->last_end,
			     "iteration slower: %s on communicator 0x%016" PRIx64 " came later after the previous "
			     "one in each of the last %u periods than in the %u before, a step (now %.1f ms, at most "
			     "%.1f ms before)",
			     pulse_op_type_name(in->op), c->id, k.m, k.n, (double)period / 1e6, k.before_max / 1e6);
		an_roll_add_at(&g->period, (double)period, g->last_end);
	}
	if (in->last_end > g->last_end)
		g->last_end = in->last_end;
}

/* ---- per-transfer rates inside one operator (Pulse's µs data) ----
 * Operator-level triggers compare whole operators with their history; a
 * transfer that slows down a little (a congested path, a downgraded PCIe
 * link feeding one peer) may lengthen its operator by less than the
 * trigger's floor, yet it stands out among the transfers of the same
 * operator instance, against its own usual place among them. */
double an_xfer_rate(const struct an_rec *r, const struct an_peer *p)
{
	uint64_t ep = r->epoch_ns ? r->epoch_ns : 32000;
	if (!p->complete || !p->actual || p->active < AN_XFER_MIN_EPOCHS * ep)
		return 0;
	return (double)p->actual * 8 / (double)p->active;
}

double an_inst_xfer_median(struct an_comm *c, struct an_inst *in)
{
	(void)c;
	if (in->xmed_nrec == in->nrec && in->nrec)
		return in->xmed;
	double v[4096];
	uint32_t n = 0;
	for (int32_t k = 0; k < c->nranks && n < 4096; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE)
			continue;
		for (uint32_t i = 0; i < r->npeers && n < 4096; i++) {
			double x = an_xfer_rate(r, &r->peers[i]);
			if (x > 0)
				v[n++] = x;
		}
	}
	in->xmed = n >= 3 ? an_median(v, n) : 0;
	in->xmed_n = n;
	in->xmed_nrec = in->nrec;
	return in->xmed;
}

struct an_inst *an_xfer_prev(struct an_comm *c, const struct an_inst *in, int32_t k)
{
	const struct an_rec *r = in->recs[k];
	if (!r)
		return NULL;
	for (uint64_t back = 1; back <= AN_HIST && back <= in->seq; back++) {
		struct an_inst *y = an_inst_find(c, in->seq - back);
		if (y && y->recs[k] && y->recs[k]->op == r->op && y->recs[k]->count == r->count &&
		    y->recs[k]->status == PULSE_OP_COMPLETE)
			return y;
	}
	return NULL;
}

static double xfer_ratio(struct an_comm *c, struct an_inst *in, const struct an_rec *r, int32_t peer)
{
	for (uint32_t i = 0; i < r->npeers; i++) {
		if (r->peers[i].rank != peer)
			continue;
		double x = an_xfer_rate(r, &r->peers[i]);
		double med = an_inst_xfer_median(c, in);
		return x > 0 && med > 0 ? x / med : NAN;
	}
	return NAN;
}

double an_xfer_shift(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr)
{
	return an_xfer_shift_before(c, in, k, pi, thr, 0);
}

double an_xfer_shift_before(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr,
			    uint64_t before)
{
	/* against the usual from before a slowdown, a handful of instances
	 * is no noise estimate (seed 1128 #110: fewer than six, transfers 6%
	 * below named a host in a run without a failure) */
	return an_xfer_shift_min(c, in, k, pi, thr, before, before ? AN_XFER_BEFORE_MIN : AN_XFER_ROLL_MIN);
}

double an_xfer_shift_min(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr,
			 uint64_t before, int min_n)
{
	const struct an_rec *r = in->recs[k];
	if (!r || r->status != PULSE_OP_COMPLETE || pi >= r->npeers)
		return NAN;
	const struct an_peer *p = &r->peers[pi];
	double cur = xfer_ratio(c, in, r, p->rank);
	if (isnan(cur))
		return NAN;
	double v[16];
	int nv = 0;
	const struct an_inst *y = in;
	while (nv < 16) {
		struct an_inst *prev = an_xfer_prev(c, y, k);
		if (!prev)
			break;
		double x = xfer_ratio(c, prev, prev->recs[k], p->rank);
		if (!isnan(x) && (!before || prev->first_call < before))
			v[nv++] = x;
		y = prev;
	}
	if (nv < min_n || nv < 1)
		return NAN;
	double t[16];
	memcpy(t, v, (size_t)nv * sizeof *t);
	double usual = an_median(t, (size_t)nv);
	for (int i = 0; i < nv; i++)
		t[i] = fabs(v[i] - usual);
	double mad = an_median(t, (size_t)nv);
	if (!(usual > 0))
		return NAN;
	uint64_t ep = r->epoch_ns ? r->epoch_ns : 32000;
	double res = 4.0 * (double)ep / (double)p->active;
	double noise = 4.0 * 1.4826 * mad / usual;
	if (thr)
		*thr = res > noise ? res : noise;
	return cur / usual;
}

/* an_xfer_shift, or with AN_XFER_EARLY_MIN earlier instances where the
 * run has no more: then a transfer not below the instance's median is
 * not slow (1.0) */
static double xfer_shift_early(struct an_comm *c, struct an_inst *in, int32_t k, uint32_t pi, double *thr)
{
	double sh = an_xfer_shift(c, in, k, pi, thr);
	if (!isnan(sh))
		return sh;
	sh = an_xfer_shift_min(c, in, k, pi, thr, 0, AN_XFER_EARLY_MIN);
	if (isnan(sh))
		return NAN;
	const struct an_rec *r = in->recs[k];
	double x = xfer_ratio(c, in, r, r->peers[pi].rank);
	return x < 1.0 - *thr ? sh : 1.0;
}

/* An instance whose records are all in (settle_ns after its last byte):
 * a transfer slower than its usual place among the instance's transfers
 * (an_xfer_shift), in this instance and in the previous one of the same
 * rank (a fail-slow persists; one slow instance is noise), fires. */
static void xfer_check(struct an_state *s, struct an_comm *c, struct an_inst *in)
{
	if (an_inst_xfer_median(c, in) <= 0)
		return;
	for (int32_t k = 0; k < c->nranks; k++) {
		const struct an_rec *r = in->recs[k];
		if (!r || r->status != PULSE_OP_COMPLETE)
			continue;
		for (uint32_t i = 0; i < r->npeers; i++) {
			double thr = 0, thr2 = 0;
			double sh = xfer_shift_early(c, in, k, i, &thr);
			if (isnan(sh) || sh >= 1.0 - thr)
				continue;
			struct an_inst *pv = an_xfer_prev(c, in, k);
			if (!pv)
				continue;
			const struct an_rec *pr = pv->recs[k];
			uint32_t pj = 0;
			while (pj < pr->npeers && pr->peers[pj].rank != r->peers[i].rank)
				pj++;
			double sh2 = pj < pr->npeers ? xfer_shift_early(c, pv, k, pj, &thr2) : NAN;
			if (isnan(sh2) || sh2 >= 1.0 - thr2)
				continue;
			fire(s, AN_TRIG_SLOW, c, in->seq, pr->call, in->last_end,
			     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 ": transfer rank %d -> %d at %.0f Gb/s, "
			     "%.0f%% below its usual share of the operator's median (%.0f Gb/s), twice in a row",
			     pulse_op_type_name(r->op), r->seq, c->id, k, r->peers[i].rank,
			     an_xfer_rate(r, &r->peers[i]), 100.0 * (1.0 - sh), in->xmed);
			return;
		}
	}
}

static void xfer_checks(struct an_state *s, uint64_t now)
{
	for (uint32_t ci = 0; ci < s->ncomms; ci++) {
		struct an_comm *c = s->comms[ci];
		/* (the analyzer ticks at every new data time: without xdue every
		 * tick walked the instances still within their settle time) */
		if (!c->xpending || (!s->finishing && now < c->xdue && !an_data_in(s, c->xdue - s->cfg.settle_ns)))
			continue;
		c->xpending = 0;
		/* only the seqs that were marked (the ring holds AN_HIST of them) */
		uint64_t lo = c->xhi >= AN_HIST && c->xlo <= c->xhi - AN_HIST ? c->xhi - AN_HIST + 1 : c->xlo;
		uint64_t hi = c->xhi, next_lo = 0;
		for (uint64_t q = lo; q <= hi; q++) {
			struct an_inst *in = &c->hist[q % AN_HIST];
			if (!in->used || in->seq != q || !in->xdirty || in->hung)
				continue;
			if (!s->finishing && in->last_end + s->cfg.settle_ns > now && !an_data_in(s, in->last_end)) {
				if (!c->xpending || in->last_end + s->cfg.settle_ns < c->xdue)
					c->xdue = in->last_end + s->cfg.settle_ns;
				if (!c->xpending)
					next_lo = q;
				c->xpending = 1;
				continue;
			}
			in->xdirty = 0;
			xfer_check(s, c, in);
		}
		if (c->xpending)
			c->xlo = next_lo;
	}
}

/* A call with no record for longer than the hang bound (an_hang_bound:
 * cfg.hang_ns, at least two agent polls and four times the longest
 * operator seen): the agent reports a finished operator at its next poll,
 * so a call without one is an operator that did not finish. Live, a call
 * before its host's agent got the JOIN is counted from the JOIN, or from
 * the end of the agent's wait when it says it waited: its windows waited
 * for it (host-agent/join_wait.c). */
static void stalled_calls(struct an_state *s, uint64_t now)
{
	uint64_t bound = an_hang_bound(s);
	for (uint32_t h = 0; h < s->nhosts; h++)
		if (s->hosts[h].join_sent && now) {
			s->hosts[h].join_ns = now;
			s->hosts[h].join_sent = 0;
		}
	for (uint32_t i = 0; i < s->nprocs; i++) {
		const struct an_proc *p = &s->procs[i];
		if (s->hosts[p->host].skewed || !p->n)
			continue;
		int32_t rank = an_map_rank(s, p->host, p->pid, p->comm);
		if (rank < 0)
			continue;
		struct an_comm *c = an_comm_find(s, p->comm);
		if (c && (rank >= c->nranks || c->retired))
			continue;
		for (uint32_t k = 0; k < p->n; k++) {
			const struct an_call *x = &p->calls[k];
			/* join_ns is the watermark's data time, which trails
			 * the agents' by up to a poll; the agent takes the JOIN
			 * in at the end of a poll, and its waiting windows'
			 * records go out at the end of the next (the poll not
			 * known yet: the agent's default, 1 s). Only for calls
			 * the agent could still hold: a window waits
			 * PULSE_AW_JOIN_WAIT_POLLS at most, so a JOIN sent again
			 * later (a new communicator, a process gone) does not
			 * put off an older hang */
			uint64_t poll = s->poll_ns ? s->poll_ns : 1000000000ull;
			uint64_t jn = s->hosts[p->host].join_ns;
			uint64_t joined = jn && x->t + PULSE_AW_JOIN_WAIT_POLLS * poll >= jn ? jn + 2 * poll : 0;
			/* an agent that says its operators waited (its
			 * join_wait lines) puts out their records at the end
			 * of the poll after its last such poll, whatever the
			 * wait's length: 5 polls or more of data time */
			uint64_t jw = s->hosts[p->host].join_wait_ns;
			if (jw && jw + 2 * poll > joined)
				joined = jw + 2 * poll;
			uint64_t from = x->t > joined ? x->t : joined;
			if (from + bound >= now)
				continue;
			uint64_t key = an_call_key(p, x);
			int gone = 0;
			const struct an_rec *r = c ? an_call_record(c, rank, key, &gone) : NULL;
			/* a call of receives only is recorded "no traffic" at the
			 * agent's next poll whether its data came or not: it still
			 * waits when its sender never made the matching send (a
			 * one-to-all root that never called its sends); a sender's
			 * record not in, or lost to a gap live, is no such evidence */
			if (an_call_send_unmade(s, c, rank, p, k, r))
				r = NULL;
			if (c && (r || gone || an_member_silent(c, rank, x->op, x->count)))
				continue; /* recorded (complete, or hung: handled there), or long ago, or a
					   * member with nothing to show for it */
			if (getenv("PULSE_ANALYZER_DEBUG"))
				fprintf(stderr, "stalled call: t %.3f join %.3f now %.3f bound %.3f poll %.3f\n",
					(double)(x->t % 1000000000000ull) / 1e9,
					(double)(s->hosts[p->host].join_ns % 1000000000000ull) / 1e9,
					(double)(now % 1000000000000ull) / 1e9, (double)bound / 1e9, (double)s->poll_ns / 1e9);
			fire(s, AN_TRIG_HANG, c, key, x->t, x->t,
			     "%s #%" PRIu64 " on communicator 0x%016" PRIx64 " called by %s pid %u %.1f s ago, "
			     "never reported finished",
			     pulse_op_type_name(x->op), key, p->comm, s->hosts[p->host].name, p->pid,
			     (double)(now - x->t) / 1e9);
			return;
		}
	}
}

static int is_stop(const struct an_diagnosis *d)
{
	return d->cls == AN_COMP_STOP || d->cls == AN_COMM_STOP;
}

/* A fail-stop verdict: the job is stopped. No new trigger until it runs
 * again (a hang localized with nothing found is tried again instead). */
static void hang_open(struct an_state *s, uint64_t comm, uint64_t seq, uint64_t now)
{
	s->hang_open_ns = now > s->now_ns ? now : s->now_ns;
	if (getenv("PULSE_ANALYZER_DEBUG"))
		fprintf(stderr, "hang open at %.3f s: comm %016" PRIx64 " #%" PRIu64 "\n",
			(double)(s->hang_open_ns % 1000000000000ull) / 1e9, comm, seq);
	s->hang_comm = comm;
	s->hang_seq = seq;
}

static void pending_chain(struct an_state *s, struct an_pending *p, const struct an_diagnosis *d, uint64_t now);

/* A localization run before a settle time has passed since (data_in let
 * it go early): a call counts as hung only past the hang bound a settle
 * time back, as a hang trigger's localization would (s->hang_cut). */
static uint64_t hang_cut_at(const struct an_state *s, int early, uint64_t now)
{
	return early && !s->finishing && now > s->cfg.settle_ns ? now - s->cfg.settle_ns : 0;
}

/* Runs one localizer into s->tent (not into the diagnoses). */
static void localize_tentative(struct an_state *s, const struct an_trigger *t, int oplevel)
{
	/* a confirmation judges records against the baselines before the
	 * evidence's iteration: a fail-slow that persists has entered them */
	s->base_before = t->excl.b ? t->excl.a : 0;
	s->tentative = 1;
	s->ntent = 0;
	if (oplevel)
		an_localize_oplevel(s, t);
	else
		an_localize_pulse(s, t);
	s->tentative = 0;
	s->base_before = 0;
}

static void pending_arm(struct an_state *s, struct an_pending *p, const struct an_diagnosis *d, uint64_t onset,
			uint64_t now);

/* a few iterations and polls past the evidence's iteration (ending at b) */
static uint64_t pending_deadline(const struct an_state *s, uint64_t b, uint64_t now)
{
	uint64_t period = an_period_ns(s);
	if (!period)
		period = 2000000ull;
	uint64_t wait = 3 * period;
	uint64_t poll = s->poll_ns ? s->poll_ns : 1000000000ull;
	if (wait < 2 * poll)
		wait = 2 * poll;
	return (b > now ? b : now) + wait + s->cfg.settle_ns;
}

/* The chain turned back: p's verdict, with its own iteration left out,
 * names the verdict it replaced, which named p's with its own left out.
 * Each rests on the other's iteration, so both are left out now (their
 * baselines from before the earlier) and the rest of the data decides:
 * either verdict confirms, a third replaces them, none drops them. (The
 * two took turns until the chain gave up: on seeds 1128-1131, in nine
 * runs that reported nothing one of the two was right.) */
static void pending_cycle(struct an_state *s, struct an_pending *p, uint64_t now)
{
	struct an_excl mine = p->excl, theirs = p->prev_excl;
	const struct an_excl *early = theirs.a <= mine.a ? &theirs : &mine;
	const struct an_excl *late = early == &theirs ? &mine : &theirs;
	struct an_excl x = *early;
	x.also.a = late->a;
	x.also.b = late->b;
	x.also.comm = late->comm;
	x.also.seq = late->seq;
	p->excl = x;
	p->cycle = 1;
	p->next_try = now;
	p->give_up = pending_deadline(s, late->b, now);
	an_log(s, "%s verdicts name each other in turn, both of their iterations left out now: %s",
	       p->d.localizer, p->d.why);
}

/* A fail-slow verdict is confirmed by the same localizer reaching the same
 * verdict on the same window with the evidence's iteration left out, its
 * records judged against their baselines from before that iteration (the
 * data may be in already, or arrive with the next polls). Another verdict
 * becomes the candidate in its place; none for a few iterations and polls
 * drops it (counted, logged). */
static int pending_confirm(struct an_state *s, uint64_t now)
{
	int added = 0;
	for (uint32_t i = 0; i < s->npend;) {
		struct an_pending *p = &s->pend[i];
		if (now < p->next_try && !s->finishing) {
			i++;
			continue;
		}
		struct an_trigger t;
		memset(&t, 0, sizeof t);
		t.kind = AN_TRIG_SLOW;
		t.comm = -1;
		t.fired_ns = now;
		t.onset_ns = p->onset;
		t.excl = p->excl;
		snprintf(t.why, sizeof t.why, "%s", p->d.trigger);
		s->hang_cut = hang_cut_at(s, p->early && now < p->armed_now + s->cfg.settle_ns, now);
		localize_tentative(s, &t, !strcmp(p->d.localizer, "op-level"));
		s->hang_cut = 0;
		if (getenv("PULSE_ANALYZER_DEBUG")) {
			fprintf(stderr, "confirm %s %s %s (excl %.3f..%.3f s):", p->d.localizer,
				an_class_name(p->d.cls), p->d.nsuspects ? p->d.suspects[0].host : "group",
				(double)(p->excl.a % 1000000000000ull) / 1e9, (double)(p->excl.b % 1000000000000ull) / 1e9);
			for (uint32_t k = 0; k < s->ntent; k++)
				fprintf(stderr, " [%s %s]", an_class_name(s->tent[k].cls),
					s->tent[k].nsuspects ? s->tent[k].suspects[0].host : "group");
			fprintf(stderr, "\n");
		}
		/* the same verdict (an_same_verdict). Across levels, never:
		 * "somewhere in this group" does not confirm a machine, and a
		 * machine seen once does not refine a group; two different groups
		 * that share members (every EP group spans all hosts) are two
		 * verdicts. A hang seen meanwhile supersedes it. */
		int ok = 0;
		const struct an_diagnosis *held = &p->d;
		for (uint32_t k = 0; k < s->ntent && !ok; k++) {
			ok = an_same_verdict(&p->d, &s->tent[k]) || is_stop(&s->tent[k]);
			if (!ok && p->cycle && an_same_verdict(&p->prev, &s->tent[k])) {
				ok = 1;
				held = &p->prev;
			}
		}
		if (!ok && s->ntent && p->chain < 8 && !p->cycle && p->has_prev &&
		    an_same_verdict(&p->prev, &s->tent[0])) {
			pending_cycle(s, p, now);
			continue; /* tried again at once, on what is left */
		}
		if (!ok && s->ntent && p->chain < 8) {
			/* the later operators name another host: that verdict now
			 * waits for its own confirmation, with its own iteration left
			 * out (the first was noise). (Leaving every iteration of the
			 * chain out, and confirming a verdict the chain named twice,
			 * was tried: seeds 60601/70707 gained 1-2 runs and 70707 two
			 * false alarms.) */
			s->st.unconfirmed++;
			an_log(s, "%s verdict not confirmed, the next iterations name another (now pending): %s",
			       p->d.localizer, p->d.why);
			p->chain++;
			p->prev = p->d;
			p->prev_excl = p->excl;
			p->has_prev = 1;
			p->cycle = 0;
			pending_chain(s, p, &s->tent[0], now);
			if (!s->finishing)
				i++; /* at the end of the data: try it on what is there */
			continue;
		}
		if (ok || s->finishing || now >= p->give_up) {
			if (ok) {
				struct an_diagnosis d = *held;
				for (uint32_t k = 0; k < s->ntent; k++)
					if (is_stop(&s->tent[k]))
						d = s->tent[k]; /* a hang became visible meanwhile */
				/* reported now, or with the localization that armed it
				 * when it is confirmed in the same tick */
				d.report_ns = now == p->armed_now && p->armed_report ? p->armed_report
						      : s->finishing || now < s->now_ns ? s->now_ns : now;
				if (!is_stop(&d))
					an_diag_step(&d, "confirmed on the operators after the evidence");
				else
					hang_open(s, d.comm_id, d.seq, now);
				added += an_diag_commit(s, &d);
				s->st.confirmed++;
			} else {
				s->st.unconfirmed++;
				an_log(s, "%s verdict not confirmed on the next iterations (dropped): %s",
				       p->d.localizer, p->d.why);
			}
			memmove(p, p + 1, (s->npend - i - 1) * sizeof *p);
			s->npend--;
			continue;
		}
		p->next_try = now + (s->poll_ns ? s->poll_ns / 2 : 500000000ull);
		i++;
	}
	return added;
}

/* d becomes the candidate; its evidence's iteration (the instances first
 * called within half a period of it) is the one left out. */
static void pending_chain(struct an_state *s, struct an_pending *p, const struct an_diagnosis *d, uint64_t now)
{
	p->d = *d;
	p->armed_now = now;
	p->armed_report = s->report_ns;
	uint64_t period = an_period_ns(s);
	if (!period)
		period = 2000000ull;
	uint64_t ev = d->onset_ns ? d->onset_ns : now;
	struct an_excl *x = &p->excl;
	x->a = ev > period / 2 ? ev - period / 2 : 0;
	x->b = ev + period / 2;
	x->comm = d->comm_id;
	x->seq = d->seq;
	memset(&x->also, 0, sizeof x->also);
	p->next_try = now; /* the rest of the window may show it already */
	p->give_up = pending_deadline(s, x->b, now);
}

static void pending_arm(struct an_state *s, struct an_pending *p, const struct an_diagnosis *d, uint64_t onset,
			uint64_t now)
{
	p->early = s->hang_cut != 0;
	p->chain = 0;
	p->has_prev = 0;
	p->cycle = 0;
	p->onset = onset;
	pending_chain(s, p, d, now);
}

static void pending_add(struct an_state *s, const struct an_diagnosis *d, uint64_t onset, uint64_t now)
{
	for (uint32_t i = 0; i < s->npend; i++)
		if (an_same_verdict(&s->pend[i].d, d))
			return; /* already waiting */
	for (uint32_t i = 0; i < s->ndiags; i++)
		if (an_same_verdict(&s->diags[i], d)) {
			an_diag_seen_again(s, &s->diags[i], d);
			return; /* already reported: the same episode */
		}
	if (s->npend >= AN_PENDING_MAX)
		return;
	pending_arm(s, &s->pend[s->npend++], d, onset, now);
}

int an_trigger_tick(struct an_state *s, uint64_t now)
{
	stalled_calls(s, now);
	xfer_checks(s, now);
	int added = 0;
	for (uint32_t i = 0; i < s->ntrig;) {
		struct an_trigger *t = &s->trig[i];
		/* a stalled call's hang waits too: live, a loaded agent's record
		 * can come a poll past the hang bound (localized at once, the
		 * live test's slow NIC became a fail-stop 4 times in 4). A slow
		 * trigger's evidence is complete: it goes once every host's
		 * records are in past it (the agents' poll_end), which is the
		 * poll that brought it when the other hosts' come with theirs */
		int data_in = t->kind != AN_TRIG_HANG && an_data_in(s, t->due_ns);
		if (t->fired_ns + s->cfg.settle_ns > now && !s->finishing && !data_in) {
			i++;
			continue;
		}
		struct an_trigger copy = *t;
		/* released by its data before the settle time: a hang seen now
		 * has not waited as a hang trigger would (a loaded agent's
		 * record a poll late), so it counts from a settle time back */
		s->hang_cut = hang_cut_at(s, data_in && t->fired_ns + s->cfg.settle_ns > now, now);
		memmove(&s->trig[i], &s->trig[i + 1], (s->ntrig - i - 1) * sizeof *t);
		s->ntrig--;
		s->st.localizations++;
		if (getenv("PULSE_ANALYZER_DEBUG"))
			fprintf(stderr, "localize at %.4f s (fired %.4f s, data in %.4f s)\n",
				(double)(now % 1000000000000ull) / 1e9, (double)(copy.fired_ns % 1000000000000ull) / 1e9,
				(double)(s->data_in_ns % 1000000000000ull) / 1e9);
		s->report_ns = now < s->now_ns ? s->now_ns : now;
		if (s->finishing && s->report_ns > copy.fired_ns + s->cfg.settle_ns)
			s->report_ns = s->now_ns;
		int stopped = 0;
		uint64_t stop_comm = 0, stop_seq = 0;
		for (int oplevel = 0; oplevel <= 1; oplevel++) {
			localize_tentative(s, &copy, oplevel);
			for (uint32_t k = 0; k < s->ntent; k++) {
				if (is_stop(&s->tent[k]) || s->tent[k].persistent)
					added += an_diag_commit(s, &s->tent[k]);
				else
					pending_add(s, &s->tent[k], copy.onset_ns ? copy.onset_ns : copy.fired_ns, now);
				if (!oplevel && is_stop(&s->tent[k]) && !stopped) {
					stopped = 1;
					stop_comm = s->tent[k].comm_id;
					stop_seq = s->tent[k].seq;
				}
			}
		}
		s->hang_cut = 0;
		if (stopped)
			hang_open(s, stop_comm, stop_seq, now);
		/* the slow triggers on what this localization saw are spent: a
		 * settle time of data, or, localized with every record in, the
		 * evidence up to where they were */
		if (copy.kind != AN_TRIG_HANG && data_in) {
			uint64_t seen = s->data_in_ns - s->cfg.skew_bound_ns;
			if (seen > s->slow_seen)
				s->slow_seen = seen;
		} else if (copy.kind != AN_TRIG_HANG) {
			s->slow_rearm = s->now_ns + s->cfg.settle_ns;
		}
	}
	added += pending_confirm(s, now);
	return added;
}

int an_tick(struct an_state *s, uint64_t now_ns)
{
	if (now_ns > s->last_tick)
		s->last_tick = now_ns;
	s->settled_moved = 0;
	return an_trigger_tick(s, now_ns);
}

int an_tick_if_settled(struct an_state *s)
{
	if (!s->settled_moved)
		return 0;
	s->settled_moved = 0;
	int waiting = s->ntrig > 0 || s->npend > 0;
	for (uint32_t i = 0; i < s->ncomms && !waiting; i++)
		waiting = s->comms[i]->xpending;
	if (!waiting)
		return 0;
	/* the clock stays: the lines up to it are in, and this poll's too */
	uint64_t now = s->last_tick > s->now_ns ? s->last_tick : s->now_ns;
	s->last_tick = now;
	return an_trigger_tick(s, now);
}

int an_finish(struct an_state *s)
{
	s->finishing = 1;
	uint64_t now = s->now_ns > s->last_tick ? s->now_ns : s->last_tick;
	int n = an_trigger_tick(s, now);
	s->finishing = 0;
	return n;
}
