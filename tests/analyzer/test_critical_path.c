/* analyzer/critical_path.c: the 1F1B schedule rebuilt from P2P send
 * directions, and the critical path and slack of a DAG, on synthetic
 * inputs whose answers are worked out by hand here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "critical_path.h"

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

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_signature),
		cmocka_unit_test(test_schedule_items),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_critical_path),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
