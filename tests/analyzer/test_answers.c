/* Issue 16's answers (analyzer/answers.h): the slow ratio's split and
 * labels, the episode patterns and iterations, and both on synthetic jobs
 * (synth.c) through the real analyzer, in the JSON report. */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <cJSON.h>

#include "answers.h"
#include "synth.h"

static void test_share_labels(void **state)
{
	(void)state;
	struct an_share sh;
	an_share_split(10e6, 0, 0, 0, &sh); /* only start delay: compute */
	assert_true(sh.valid);
	assert_true(fabs(sh.comp_share - 1) < 1e-9);
	assert_string_equal(an_share_label(&sh), "computation");
	an_share_split(0, 10e6, 0, 0, &sh); /* only active time: the path */
	assert_true(fabs(sh.comp_share) < 1e-9);
	assert_string_equal(an_share_label(&sh), "communication");
	an_share_split(5e6, 5e6, 0, 0, &sh);
	assert_string_equal(an_share_label(&sh), "mixed");
	/* CCL-D's bounds are strict: 0.6 and 0.4 themselves are mixed */
	an_share_split(6e6, 4e6, 0, 0, &sh);
	assert_string_equal(an_share_label(&sh), "mixed");
	an_share_split(4e6, 6e6, 0, 0, &sh);
	assert_string_equal(an_share_label(&sh), "mixed");
	an_share_split(6.1e6, 3.9e6, 0, 0, &sh);
	assert_string_equal(an_share_label(&sh), "computation");
	/* nothing to split */
	an_share_split(0, 0, 0, 0, &sh);
	assert_false(sh.valid);
	assert_string_equal(an_share_label(&sh), "");
	/* negative inputs are no excess */
	an_share_split(-5, 10e6, -1, 0, &sh);
	assert_true(sh.delay_ns == 0 && sh.gap_ns == 0);
	assert_string_equal(an_share_label(&sh), "communication");
}

/* CPU starvation: gaps in the GPU's own sends on a path that reached its
 * peak are the host's, however little start delay there is; gaps in what
 * it received follow the evidence of its own ends */
static void test_share_gaps(void **state)
{
	(void)state;
	struct an_share sh;
	an_share_split(0, 0, 20e6, 0, &sh);
	assert_true(fabs(sh.comp_share - 1) < 1e-9);
	assert_true(fabs(sh.gap_comp_ns - 20e6) < 1);
	/* shared gaps with nothing else: the path was idle-capable: host */
	an_share_split(0, 0, 0, 20e6, &sh);
	assert_string_equal(an_share_label(&sh), "computation");
	/* shared gaps beside a slowed path: the path's */
	an_share_split(0, 10e6, 0, 30e6, &sh);
	assert_true(sh.gap_comp_ns < 1);
	assert_string_equal(an_share_label(&sh), "communication");
	/* in proportion: host 1 (delay) + 1 (own gaps) against path 2 */
	an_share_split(1e6, 2e6, 1e6, 4e6, &sh);
	assert_true(fabs(sh.gap_comp_ns - (1e6 + 4e6 * 2.0 / 4.0)) < 1);
	assert_true(fabs(sh.comp_share - (1e6 + 3e6) / 8e6) < 1e-9);
	assert_string_equal(an_share_label(&sh), "mixed");
}

static void test_pattern_rules(void **state)
{
	(void)state;
	assert_int_equal(an_pattern_of(NAN, 0, 0, 0), AN_PATTERN_NONE);
	/* irregular from iteration to iteration */
	assert_int_equal(an_pattern_of(0.9, 1.2, 40, 0), AN_PATTERN_SPIKE);
	/* regular, but a few transfers struck far harder than the rest */
	assert_int_equal(an_pattern_of(0.1, 6, 40, 0), AN_PATTERN_SPIKE);
	/* regular, the peak capped in a fifth of the slowed transfers */
	assert_int_equal(an_pattern_of(0.1, 1.3, 40, 8), AN_PATTERN_PERSISTENT);
	assert_int_equal(an_pattern_of(0.1, 1.3, 40, 7), AN_PATTERN_FLUCTUATION);
	/* no transfer slowed: a steady computation slowdown */
	assert_int_equal(an_pattern_of(0.2, 0, 0, 0), AN_PATTERN_PERSISTENT);
	assert_string_equal(an_pattern_name(AN_PATTERN_SPIKE), "spike");
	assert_string_equal(an_pattern_name(AN_PATTERN_FLUCTUATION), "fluctuation");
	assert_string_equal(an_pattern_name(AN_PATTERN_PERSISTENT), "persistent");
	assert_string_equal(an_pattern_name(AN_PATTERN_NONE), "");
}

/* 20 iterations of 100 ms (+-0.5 ms), iterations 8..12 take 110 ms */
static void test_episode_iterations(void **state)
{
	(void)state;
	uint64_t ends[21];
	uint64_t t = 1000000000ull;
	ends[0] = t;
	for (uint32_t i = 1; i <= 20; i++) {
		t += (i >= 8 && i <= 12 ? 110000000ull : 100000000ull) + (i % 2 ? 500000ull : 0);
		ends[i] = t;
	}
	struct an_episode ep;
	memset(&ep, 0, sizeof ep);
	an_episode_iterations(ends, 21, ends[7], ends[12], 32000, &ep);
	assert_int_equal(ep.it_touched, 5);
	assert_int_equal(ep.it_first, 8);
	assert_int_equal(ep.it_last, 12);
	assert_true(fabs(ep.it_base_ns - 100250000.0) < 300000);
	/* five iterations, about 10 ms each over the baseline */
	assert_true(fabs(ep.cost_ns - 5 * 9.75e6) < 1.5e6);
	/* an episode over healthy iterations touches none */
	an_episode_iterations(ends, 21, ends[14], ends[19], 32000, &ep);
	assert_int_equal(ep.it_touched, 0);
	assert_true(ep.cost_ns == 0);
	/* too short a series: no baseline */
	an_episode_iterations(ends, 2, ends[0], ends[1], 32000, &ep);
	assert_true(ep.it_base_ns == 0);
}

static const struct an_diagnosis *pulse_machine(const struct an_state *st, int cls, const char *host)
{
	uint32_t n;
	const struct an_diagnosis *d = an_diagnoses(st, &n);
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(d[i].localizer, "pulse") && d[i].cls == cls && d[i].level == AN_LEVEL_MACHINE &&
		    !strcmp(d[i].suspects[0].host, host))
			return &d[i];
	return NULL;
}

/* GPU throttling on host2 (its compute 60 ms longer): computation, and the
 * episode begins with the failure's iteration */
static void test_synth_computation(void **state)
{
	(void)state;
	struct syn s;
	syn_default(&s);
	s.ncomms = 3;
	s.extra_compute_ms[2] = 60;
	struct an_state *st = syn_run(&s, NULL);
	an_answers_update(st);
	const struct an_diagnosis *d = pulse_machine(st, AN_COMP_SLOW, "host2");
	assert_non_null(d);
	assert_true(d->share.valid);
	assert_string_equal(an_share_label(&d->share), "computation");
	/* the synthetic rank calls late and starts at once: its lateness shows
	 * as its own sends' gaps, the host's (CPU, GPU), not the path's */
	assert_true(d->share.delay_ns + d->share.gap_comp_ns > 50e6 * 4);
	assert_true(d->share.active_ns < 1e6);
	assert_true(d->ep.valid);
	/* the failure begins at iteration 8 of 200 ms */
	uint64_t fail = SYN_T0 + (uint64_t)s.fail_iter * 200000000ull;
	assert_true(d->ep.start_ns + 200000000ull >= fail);
	assert_true(d->ep.start_ns <= fail + 400000000ull);
	assert_int_equal(d->ep.pattern, AN_PATTERN_PERSISTENT);
	an_state_free(st);
}

/* congestion on host2's path (half its link rate): communication */
static void test_synth_communication(void **state)
{
	(void)state;
	struct syn s;
	syn_default(&s);
	s.slow_rate[2] = 200;
	struct an_state *st = syn_run(&s, NULL);
	an_answers_update(st);
	const struct an_diagnosis *d = pulse_machine(st, AN_COMM_SLOW, "host2");
	assert_non_null(d);
	assert_true(d->share.valid);
	assert_string_equal(an_share_label(&d->share), "communication");
	assert_true(d->share.active_ns > d->share.delay_ns);
	/* the answers are in the report entry the bus and the database store */
	cJSON *o = an_diag_json(d);
	const cJSON *sr = cJSON_GetObjectItemCaseSensitive(o, "slow_ratio");
	assert_true(cJSON_IsObject(sr));
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(sr, "label")->valuestring, "communication");
	const cJSON *ep = cJSON_GetObjectItemCaseSensitive(o, "episode");
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ep, "pattern")));
	assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(ep, "start_ns")));
	cJSON_Delete(o);
	/* and in the timeline: the episode as an async span with the ratio */
	char path[] = "/tmp/test_answers_tl_XXXXXX", err[256];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(an_timeline_write(st, d, path, err, sizeof err), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char text[1 << 22];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	unlink(path);
	text[n] = 0;
	cJSON *tl = cJSON_Parse(text);
	assert_non_null(tl);
	int b = 0, e = 0;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(tl, "traceEvents"))
	{
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
		if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "diagnosis"))
			continue;
		const char *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph")->valuestring;
		if (!strcmp(ph, "b")) {
			b++;
			const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
			assert_true(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(args, "slow_ratio")));
		}
		e += !strcmp(ph, "e");
	}
	assert_int_equal(b, 1);
	assert_int_equal(e, 1);
	cJSON_Delete(tl);
	an_state_free(st);
}

/* no failure: no diagnosis, nothing to answer; a group-level verdict gets
 * no answers either */
static void test_synth_none(void **state)
{
	(void)state;
	struct syn s;
	syn_default(&s);
	s.cpu_delay_ms[1] = 4; /* group level (test_analyzer's test_comp_slow_cpu) */
	struct an_state *st = syn_run(&s, NULL);
	an_answers_update(st);
	uint32_t n;
	const struct an_diagnosis *d = an_diagnoses(st, &n);
	for (uint32_t i = 0; i < n; i++)
		if (d[i].level != AN_LEVEL_MACHINE) {
			assert_false(d[i].share.valid);
			assert_false(d[i].ep.valid);
			cJSON *o = an_diag_json(&d[i]);
			assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "slow_ratio")));
			cJSON_Delete(o);
		}
	an_state_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_labels),      cmocka_unit_test(test_share_gaps),
		cmocka_unit_test(test_pattern_rules),     cmocka_unit_test(test_episode_iterations),
		cmocka_unit_test(test_synth_computation), cmocka_unit_test(test_synth_communication),
		cmocka_unit_test(test_synth_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
