/* analyzer/critical_path.c: the 1F1B schedule rebuilt from P2P send
 * directions, and the critical path and slack of a DAG, on synthetic
 * inputs whose answers are worked out by hand here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analyzer.h"
#include "critical_path.h"
#include "pulse/hook_record.h"

static void test_signature(void **st)
{
	(void)st;
	char sig[AN_PP_MAX_ITEMS + 1];
	/* 2 stages, 4 micro-batches: stage 0 sends four activations, then
	 * waits for the last gradient; stage 1 receives the first
	 * activations, then sends four gradients */
	int n = an_pp_signature(2, 0, 4, sig, AN_PP_MAX_ITEMS);
	sig[n] = 0;
	assert_string_equal(sig, "ffff-");
	n = an_pp_signature(2, 1, 4, sig, AN_PP_MAX_ITEMS);
	sig[n] = 0;
	assert_string_equal(sig, "-bbbb");
	/* a middle stage of 4 sends both ways, warm-up of 2 forwards */
	n = an_pp_signature(4, 1, 4, sig, AN_PP_MAX_ITEMS);
	sig[n] = 0;
	assert_string_equal(sig, "-f-f-fbfb-b-b");
	assert_int_equal(an_pp_signature(1, 0, 4, sig, AN_PP_MAX_ITEMS), -1);
	assert_int_equal(an_pp_signature(2, 2, 4, sig, AN_PP_MAX_ITEMS), -1);
}

static void test_schedule_items(void **st)
{
	(void)st;
	struct an_pp_item it[AN_PP_MAX_ITEMS];
	/* the last stage of 2: recv F0, F0, B0, send B0 + recv F1, ... */
	int n = an_pp_1f1b(2, 1, 2, it, AN_PP_MAX_ITEMS);
	assert_int_equal(n, 7);
	assert_int_equal(it[0].kind, AN_PP_GROUP);
	assert_int_equal(it[0].recv_dir, -1);
	assert_int_equal(it[0].recv_mb, 0);
	assert_int_equal(it[1].kind, AN_PP_FWD);
	assert_int_equal(it[1].mb, 0);
	assert_int_equal(it[2].kind, AN_PP_BWD);
	assert_int_equal(it[2].mb, 0);
	assert_int_equal(it[3].send_dir, -1);
	assert_int_equal(it[3].send_mb, 0);
	assert_int_equal(it[3].recv_mb, 1);
	assert_int_equal(it[6].send_mb, 1);
	assert_int_equal(it[6].recv_dir, 0);
}

static void test_infer(void **st)
{
	(void)st;
	int phase = -1;
	/* stage 0 of 2 with 3 micro-batches, records kept from the middle
	 * of an iteration: "f-" then two whole iterations then "ff" */
	const char *o = "f-fff-fff-ff";
	assert_int_equal(an_pp_infer(o, (int)strlen(o), 2, 0, &phase), 3);
	assert_int_equal(phase, 2);
	/* the last stage of 2 with 4 */
	o = "-bbbb-bbbb-bbbb";
	assert_int_equal(an_pp_infer(o, (int)strlen(o), 2, 1, &phase), 4);
	assert_int_equal(phase, 0);
	/* an evaluation's forward-only sends break the period: no answer */
	o = "ffff-ff-ffff-";
	assert_int_equal(an_pp_infer(o, (int)strlen(o), 2, 0, &phase), 0);
	/* not a whole iteration */
	o = "ff";
	assert_int_equal(an_pp_infer(o, (int)strlen(o), 2, 0, &phase), 0);
}

static void vtx(struct an_cp_vertex *v, double dur, int p0, int p1)
{
	memset(v, 0, sizeof *v);
	v->dur = dur;
	v->pred[0] = p0;
	v->pred[1] = p1;
	v->pred[2] = v->pred[3] = -1;
}

/* Two chains joined at the end: a (3) -> c (1), b (1) -> c. b has slack 2:
 * slowing b by 1.5 costs nothing (absorbed), by 3 costs 1; slowing a by 1
 * costs 1 (critical). Vertices listed out of topological order. */
static void test_critical_path(void **st)
{
	(void)st;
	struct an_cp_vertex v[3];
	vtx(&v[0], 1, 1, 2); /* c */
	vtx(&v[1], 3, -1, -1); /* a */
	vtx(&v[2], 1, -1, -1); /* b */
	double span = an_cp_solve(v, 3);
	assert_true(span == 4);
	assert_true(v[1].slack == 0 && v[0].slack == 0);
	assert_true(v[2].slack == 2);
	v[2].dur = 2.5;
	assert_true(an_cp_solve(v, 3) == 4); /* absorbed */
	v[2].dur = 4;
	assert_true(an_cp_solve(v, 3) == 5); /* past its slack: costs 1 */
	v[2].dur = 1;
	v[1].dur = 4;
	assert_true(an_cp_solve(v, 3) == 5); /* on the critical path */
	/* a release time delays a chain's start */
	v[1].dur = 3;
	v[2].release = 10;
	assert_true(an_cp_solve(v, 3) == 12);
	assert_true(v[1].slack == 8);
}


/* ---- synthetic pipelines: 1F1B played out, records fed to the analyzer ----
 * NPIPE pipelines of P stages, stage s of pipeline q on host "h<s*NPIPE+q>"
 * GPU 0; each compute item takes its time, each send XFER_MS; a group
 * completes when its send is done and what it receives has arrived;
 * iterations are separated by a 3 ms optimizer step. Every compute pass
 * calls two TP collectives (at its start and half-way), as Megatron's
 * attention and MLP do. No clock skew, no jitter: every answer is exact. */
#define NPIPE 4
#define NITER 6
#define MS 1000000.0

struct synp {
	int P, M;
	double fwd_ms, bwd_ms, xfer_ms;
	double last_stage_f;      /* the last stage's passes x this */
	/* the slowdown, from iteration FAIL_IT on, pipeline 0, stage `stage` */
	int stage, kind;          /* 1 forward, 2 backward, 4 its sends; 0 none */
	int mb;                   /* -1 all */
	double f;
};
#define FAIL_IT 3

static uint64_t T0 = 1700000000000000000ull;

static void feed_group(struct an_state *st, int q, int s, int P, uint64_t *seq, uint64_t call, int send_to,
		       uint64_t a, uint64_t b, int nops)
{
	struct pulse_op_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.host, sizeof r.host, "h%d", s * NPIPE + q);
	r.gpu = 0;
	r.pid = (uint32_t)(100 + s * NPIPE + q);
	r.comm_id = 0x1000 + (uint64_t)q;
	r.rank = s;
	r.nranks = P;
	r.seq = *seq;
	*seq += (uint64_t)nops;
	r.group_id = r.seq + 1;
	r.op = PULSE_OP_GROUP;
	r.algo = PULSE_ALGO_P2P;
	r.parallelism = PULSE_PAR_PP;
	r.call_ns = call;
	r.epoch_ns = 32000;
	r.root_peer = -1;
	if (send_to >= 0) {
		r.status = PULSE_OP_COMPLETE;
		r.count = 4194304;
		r.start_ns = a;
		r.end_ns = b;
		r.duration_ns = b - a;
		r.expected_bytes = r.actual_bytes = 8388608;
		r.active_ns = r.rank_active_ns = b - a;
		r.rank_rate_gbps = 8388608.0 * 8 / (double)(b - a);
		r.npeers = 1;
		r.peers[0].rank = send_to;
		r.peers[0].gpu = 0;
		snprintf(r.peers[0].host, sizeof r.peers[0].host, "h%d", send_to * NPIPE + q);
		r.peers[0].expected_bytes = r.peers[0].actual_bytes = 8388608;
		r.peers[0].start_ns = a;
		r.peers[0].end_ns = b;
		r.peers[0].active_ns = b - a;
		r.peers[0].complete = 1;
	} else {
		r.status = PULSE_OP_NO_TRAFFIC;
	}
	char err[256];
	assert_int_equal(an_ingest_op(st, r.host, &r, err, sizeof err), 0);
}

static void feed_tp(struct an_state *st, int q, int s, uint64_t *seq, uint64_t call)
{
	struct pulse_op_record r;
	memset(&r, 0, sizeof r);
	snprintf(r.host, sizeof r.host, "h%d", s * NPIPE + q);
	r.gpu = 0;
	r.pid = (uint32_t)(100 + s * NPIPE + q);
	r.comm_id = 0x2000 + (uint64_t)(s * NPIPE + q);
	r.rank = 0;
	r.nranks = 2;
	r.seq = (*seq)++;
	r.op = PULSE_HOOK_OP_ALLREDUCE;
	r.algo = PULSE_ALGO_RING;
	r.parallelism = PULSE_PAR_TP;
	r.status = PULSE_OP_NO_TRAFFIC;
	r.count = 1024;
	r.call_ns = call;
	r.epoch_ns = 32000;
	r.root_peer = -1;
	char err[256];
	assert_int_equal(an_ingest_op(st, r.host, &r, err, sizeof err), 0);
}

static struct an_state *syn_pipelines(const struct synp *c)
{
	struct an_state *st = an_state_new(NULL);
	assert_non_null(st);
	int P = c->P, M = c->M;
	struct an_pp_item items[AN_PP_MAX_STAGES][AN_PP_MAX_ITEMS];
	int ni[AN_PP_MAX_STAGES];
	for (int s = 0; s < P; s++)
		ni[s] = an_pp_1f1b(P, s, M, items[s], AN_PP_MAX_ITEMS);
	for (int q = 0; q < NPIPE; q++) {
		uint64_t seq[AN_PP_MAX_STAGES] = { 0 }, tseq[AN_PP_MAX_STAGES] = { 0 };
		double start = 1 * MS;
		for (int it = 0; it < NITER; it++) {
			double t[AN_PP_MAX_STAGES];
			double arr[AN_PP_MAX_STAGES][2][AN_PP_MAX_MB];
			int idx[AN_PP_MAX_STAGES] = { 0 }, sent[AN_PP_MAX_STAGES] = { 0 };
			double send_end[AN_PP_MAX_STAGES] = { 0 };
			for (int s = 0; s < P; s++) {
				t[s] = start;
				for (int m = 0; m < AN_PP_MAX_MB; m++)
					arr[s][0][m] = arr[s][1][m] = -1;
			}
			int slow = q == 0 && it >= FAIL_IT;
			for (int moved = 1; moved;) {
				moved = 0;
				for (int s = 0; s < P; s++) {
					while (idx[s] < ni[s]) {
						const struct an_pp_item *x = &items[s][idx[s]];
						if (x->kind != AN_PP_GROUP) {
							double d = x->kind == AN_PP_FWD ? c->fwd_ms : c->bwd_ms;
							if (s == P - 1)
								d *= c->last_stage_f;
							if (slow && s == c->stage && c->kind == x->kind &&
							    (c->mb < 0 || c->mb == x->mb))
								d *= c->f;
							feed_tp(st, q, s, &tseq[s], T0 + (uint64_t)(t[s] * MS));
							feed_tp(st, q, s, &tseq[s], T0 + (uint64_t)((t[s] + d / 2) * MS));
							t[s] += d;
							idx[s]++;
							moved = 1;
							continue;
						}
						/* a group's send goes out at once, its
						 * receive may wait (both ends of a
						 * batched exchange proceed together) */
						if (x->send_dir && !sent[s]) {
							double xs = c->xfer_ms * (slow && s == c->stage && c->kind == 4 ? c->f : 1);
							double a = t[s], b = t[s] + xs;
							arr[s][x->send_dir > 0][x->send_mb] = b;
							send_end[s] = b;
							sent[s] = 1;
							feed_group(st, q, s, P, &seq[s], T0 + (uint64_t)((t[s] - 0.5) * MS),
								   s + x->send_dir, T0 + (uint64_t)(a * MS),
								   T0 + (uint64_t)(b * MS), x->recv_dir ? 2 : 1);
							moved = 1;
						}
						double done = t[s];
						if (x->recv_dir) {
							double a = arr[s + x->recv_dir][-x->recv_dir > 0][x->recv_mb];
							if (a < 0)
								break; /* not sent yet */
							if (a > done)
								done = a;
						}
						if (x->send_dir) {
							if (send_end[s] > done)
								done = send_end[s];
						} else {
							feed_group(st, q, s, P, &seq[s], T0 + (uint64_t)((t[s] - 0.5) * MS), -1, 0,
								   0, 1);
						}
						sent[s] = 0;
						t[s] = done;
						idx[s]++;
						moved = 1;
					}
				}
			}
			double end = 0;
			for (int s = 0; s < P; s++) {
				assert_int_equal(idx[s], ni[s]); /* the schedule played out */
				if (t[s] > end)
					end = t[s];
			}
			start = end + 3;
		}
	}
	return st;
}

static void syn_where(const struct synp *c, const char *at, struct an_where *w)
{
	struct an_state *st = syn_pipelines(c);
	char err[128];
	assert_int_equal(an_where_query(st, at, w, err, sizeof err), 0);
	an_state_free(st);
}

static const struct synp SYN_BASE = { 2, 4, 2, 4, 0.2, 1, 0, 0, -1, 1 };

/* stage 1 (the last) of pipeline 0 is host h4 */
static void test_records_forward(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	c.stage = 1, c.kind = 1, c.f = 1.5;
	struct an_where w;
	syn_where(&c, "h4:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "forward");
	assert_int_equal(w.stage, 1);
	assert_int_equal(w.nstages, 2);
	assert_int_equal(w.nmicro, 4);
	assert_true(w.critical);
	assert_true(w.excess_ms > 3.5 && w.excess_ms < 4.5); /* four forwards, +1 ms each */
	/* the sibling pipelines' same stage: nothing slowed there */
	syn_where(&c, "h5:0", &w);
	assert_false(w.found);
}

static void test_records_backward(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	c.stage = 0, c.kind = 2, c.f = 1.5;
	struct an_where w;
	syn_where(&c, "h0:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "backward");
	assert_int_equal(w.stage, 0);
	assert_true(w.critical);
}

static void test_records_transmission(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	c.stage = 0, c.kind = 4, c.f = 3;
	struct an_where w;
	syn_where(&c, "h0:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "transmission");
	assert_true(w.critical);
}

/* One micro-batch's backward on stage 0: on the critical path when the
 * stages are equal; absorbed (it cost nothing) when a heavier last stage
 * bounds the iteration and stage 0 waits for it anyway. */
static void test_records_absorbed(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	c.stage = 0, c.kind = 2, c.f = 1.5, c.mb = 0;
	struct an_where w;
	syn_where(&c, "h0:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "backward");
	assert_int_equal(w.micro_batch, 0);
	assert_true(w.critical);
	assert_true(w.cost_ms > 1.5);
	c.last_stage_f = 1.6;
	syn_where(&c, "h0:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "backward");
	assert_int_equal(w.micro_batch, 0);
	assert_false(w.critical);
	assert_true(w.cost_ms < 0.1);
	assert_true(w.slack_ms >= 2); /* it had at least its 2 ms of slack */
}

/* four stages: a middle stage's own forward */
static void test_records_pp4(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	c.P = 4, c.M = 6, c.stage = 2, c.kind = 1, c.f = 1.5;
	struct an_where w;
	syn_where(&c, "h8:0", &w);
	assert_true(w.found);
	assert_string_equal(w.kind, "forward");
	assert_int_equal(w.stage, 2);
	assert_int_equal(w.nstages, 4);
	assert_int_equal(w.nmicro, 6);
}

static void test_query_errors(void **st)
{
	(void)st;
	struct synp c = SYN_BASE;
	struct an_state *s = syn_pipelines(&c);
	struct an_where w;
	char err[128];
	assert_int_equal(an_where_query(s, "h0", &w, err, sizeof err), -1);
	assert_int_equal(an_where_query(s, ":1", &w, err, sizeof err), -1);
	assert_int_equal(an_where_query(s, "h0:x", &w, err, sizeof err), -1);
	assert_int_equal(an_where_query(s, "nohost:0", &w, err, sizeof err), 0);
	assert_false(w.found);
	assert_true(strstr(w.note, "no pipeline") != NULL);
	an_state_free(s);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_signature),
		cmocka_unit_test(test_schedule_items),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_critical_path),
		cmocka_unit_test(test_records_forward),
		cmocka_unit_test(test_records_backward),
		cmocka_unit_test(test_records_transmission),
		cmocka_unit_test(test_records_absorbed),
		cmocka_unit_test(test_records_pp4),
		cmocka_unit_test(test_query_errors),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
