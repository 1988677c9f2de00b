/* cmocka: the SERIES_REQ/SERIES codec (wire/qp_series.c) and the direction
 * classifier (analyzer/direction.c) on hand-made series. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "direction.h"
#include "pulse/qp_series_wire.h"

static void test_req_roundtrip(void **st)
{
	(void)st;
	struct pulse_qps_req q = {.id = 9, .from_ns = 100, .to_ns = 200, .max_bytes = 4096}, r;
	uint8_t b[PULSE_QPS_REQ_LEN];
	char err[200];
	assert_int_equal(pulse_qps_req_encode(b, sizeof b, &q), PULSE_QPS_REQ_LEN);
	assert_int_equal(pulse_qps_req_decode(b, sizeof b, &r, err, sizeof err), 0);
	assert_int_equal(r.id, 9);
	assert_int_equal(r.from_ns, 100);
	assert_int_equal(r.to_ns, 200);
	assert_int_equal(r.max_bytes, 4096);
	assert_int_not_equal(pulse_qps_req_decode(b, sizeof b - 1, &r, err, sizeof err), 0);
	q.to_ns = 100; /* empty range */
	pulse_qps_req_encode(b, sizeof b, &q);
	assert_int_not_equal(pulse_qps_req_decode(b, sizeof b, &r, err, sizeof err), 0);
	assert_non_null(strstr(err, "empty range"));
}

static uint8_t *answer(size_t max, size_t *len, uint32_t *left)
{
	struct pulse_qps_resp h = {.id = 5, .status = PULSE_QPS_OK, .from_ns = 1000, .to_ns = 9000000,
				   .oldest_ns = 500, .evicted = 3};
	strcpy(h.host, "host3");
	struct pulse_qps_builder b;
	assert_int_equal(pulse_qps_build_begin(&b, &h, max), 0);
	uint32_t ep[3] = {0, 7, 300};
	uint64_t by[3] = {65536, 1, 1ull << 40};
	for (int k = 0; k < 3; k++) {
		struct pulse_qps_seg s = {.qpn = 100u + (uint32_t)k, .remote_gpu = k - 1, .t0_ns = 1000,
					  .epoch_ns = 32000, .n = 3, .epoch = ep, .bytes = by};
		strcpy(s.dev, "mlx5_1");
		if (k)
			strcpy(s.remote_host, "host4");
		assert_true(pulse_qps_build_seg(&b, &s) >= 0);
	}
	*left = b.left_out;
	*len = pulse_qps_build_end(&b);
	return b.buf;
}

static void test_resp_roundtrip(void **st)
{
	(void)st;
	size_t len;
	uint32_t left;
	uint8_t *p = answer(1 << 20, &len, &left);
	assert_int_equal(left, 0);
	struct pulse_qps_resp r;
	char err[200];
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_string_equal(r.host, "host3");
	assert_int_equal(r.id, 5);
	assert_int_equal(r.evicted, 3);
	assert_int_equal(r.nseg, 3);
	assert_string_equal(r.segs[0].remote_host, "");
	assert_int_equal(r.segs[0].remote_gpu, -1);
	assert_string_equal(r.segs[2].remote_host, "host4");
	assert_int_equal(r.segs[2].remote_gpu, 1);
	assert_int_equal(r.segs[1].epoch[2], 300);
	assert_int_equal(r.segs[1].bytes[2], 1ull << 40);
	pulse_qps_resp_free(&r);
	/* every truncation is refused with a reason, never read past */
	for (size_t n = 0; n < len; n++) {
		uint8_t *c = malloc(n ? n : 1);
		memcpy(c, p, n);
		err[0] = '\0';
		assert_int_not_equal(pulse_qps_resp_decode(c, n, &r, err, sizeof err), 0);
		assert_true(err[0] != '\0');
		free(c);
	}
	/* a byte more is refused too */
	uint8_t *c = malloc(len + 1);
	memcpy(c, p, len);
	c[len] = 0;
	assert_int_not_equal(pulse_qps_resp_decode(c, len + 1, &r, err, sizeof err), 0);
	free(c);
	free(p);
	/* a bound that holds one segment: the others are counted, status truncated */
	p = answer(PULSE_QPS_HDR_LEN + 5 + 60, &len, &left);
	assert_int_equal(left, 2);
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_int_equal(r.status, PULSE_QPS_TRUNCATED);
	assert_int_equal(r.nseg, 1);
	assert_int_equal(r.segs_left_out, 2);
	pulse_qps_resp_free(&r);
	free(p);
}

/* ---- the classifier ---- */

/* one QP host/gpu -> peer/peer_gpu with 200 epochs before t=1e9 at `before`
 * bytes and 200 after at `after` (with a little jitter) */
static void add_qp(struct an_series_set *ss, const char *h, int g, const char *p, int pg, double before,
		   double after, unsigned *seed)
{
	struct an_qpseries *q = &ss->q[ss->nq++];
	memset(q, 0, sizeof *q);
	snprintf(q->host, sizeof q->host, "%s", h);
	snprintf(q->dev, sizeof q->dev, "mlx5_%d", g);
	snprintf(q->remote_host, sizeof q->remote_host, "%s", p);
	q->qpn = ss->nq;
	q->gpu = g;
	q->remote_gpu = pg;
	q->epoch_ns = 32000;
	q->n = 400;
	q->t_ns = malloc(400 * sizeof *q->t_ns);
	q->bytes = malloc(400 * sizeof *q->bytes);
	for (uint32_t i = 0; i < 400; i++) {
		q->t_ns[i] = (i < 200 ? 500000000ull : 1000000000ull) + (i % 200) * 32000ull;
		double base = i < 200 ? before : after;
		*seed = *seed * 1103515245u + 12345u;
		double jit = 1 + 0.02 * (((*seed >> 16) % 1000) / 500.0 - 1);
		/* every third epoch is a partial one (a burst's edge) */
		q->bytes[i] = (uint64_t)(base * jit * (i % 3 ? 1 : 0.3));
	}
}

/* A cluster of hosts a,b,c,d (GPU 0): the suspect is a. Each host sends
 * to the next two; the factors slow the given pairs. */
static int classify(double a_out, double a_in, int one_path_only, double rest_noise)
{
	struct an_series_set ss = {.onset_ns = 1000000000ull, .source = "test"};
	ss.q = calloc(64, sizeof *ss.q);
	unsigned seed = 7;
	const char *h[4] = {"a", "b", "c", "d"};
	for (int i = 0; i < 4; i++)
		for (int k = 1; k <= 2; k++) {
			const char *to = h[(i + k) % 4];
			double f = 1;
			if (i == 0)
				f = one_path_only && k == 2 ? 1 : a_out;
			else if (!strcmp(to, "a"))
				f = a_in;
			else
				f = 1 + rest_noise * ((i + k) % 3 - 1);
			add_qp(&ss, h[i], 0, to, 0, 800000, 800000 * f, &seed);
		}
	struct an_direction d;
	int label = an_direction_classify(&ss, "a", 0, &d);
	print_message("a_out %.2f a_in %.2f: %s (%s), sigma %.3f\n", a_out, a_in, an_dir_label_key(label),
		      d.why, d.sigma);
	an_series_free(&ss);
	return label;
}

static void test_classify(void **st)
{
	(void)st;
	assert_int_equal(classify(0.5, 0.8, 0, 0), AN_DIR_SENDER);   /* PCIe: both ways, sends more */
	assert_int_equal(classify(0.5, 1.0, 0, 0), AN_DIR_EGRESS);   /* congestion out of it */
	assert_int_equal(classify(1.0, 0.5, 0, 0), AN_DIR_RECEIVER); /* incast */
	assert_int_equal(classify(0.8, 0.5, 0, 0), AN_DIR_RECEIVER); /* both ways, receives more */
	assert_int_equal(classify(0.5, 1.0, 1, 0), AN_DIR_PATH);     /* one of its two pairs */
	assert_int_equal(classify(1.0, 1.0, 0, 0), AN_DIR_UNCLEAR);  /* nothing moved */
	/* the same 10% drop is a slowdown where the other pairs hold still,
	 * and noise where they move by 20% */
	assert_int_equal(classify(0.9, 1.0, 0, 0), AN_DIR_EGRESS);
	assert_int_equal(classify(0.9, 1.0, 0, 0.2), AN_DIR_UNCLEAR);
}

/* The suspect's only sender is slow towards everyone: the direction names
 * that sender (the localization's verdict is not changed). */
static void test_other_end(void **st)
{
	(void)st;
	struct an_series_set ss = {.onset_ns = 1000000000ull, .source = "test"};
	ss.q = calloc(64, sizeof *ss.q);
	unsigned seed = 3;
	static const char *const pairs[][2] = {{"b", "a"}, {"b", "c"}, {"a", "d"}, {"c", "d"}, {"d", "e"},
					       {"e", "c"}, {"c", "e"}, {"d", "c"}, {"e", "d"}};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
		add_qp(&ss, pairs[i][0], 0, pairs[i][1], 0, 800000,
		       800000 * (!strcmp(pairs[i][0], "b") ? 0.5 : 1), &seed);
	struct an_direction d;
	assert_int_equal(an_direction_classify(&ss, "a", 0, &d), AN_DIR_SENDER);
	assert_string_equal(d.host, "b");
	print_message("%s\n", d.why);
	/* with b's other pair normal, a itself is the receiver-limited end */
	an_series_free(&ss);
	ss.q = calloc(64, sizeof *ss.q);
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
		add_qp(&ss, pairs[i][0], 0, pairs[i][1], 0, 800000,
		       800000 * (!strcmp(pairs[i][1], "a") ? 0.5 : 1), &seed);
	assert_int_equal(an_direction_classify(&ss, "a", 0, &d), AN_DIR_RECEIVER);
	assert_string_equal(d.host, "a");
	an_series_free(&ss);
}

static void test_classify_empty(void **st)
{
	(void)st;
	struct an_series_set ss = {.onset_ns = 5};
	struct an_direction d;
	assert_int_equal(an_direction_classify(&ss, "a", -1, &d), AN_DIR_UNCLEAR);
	assert_non_null(strstr(d.why, "no QP"));
}

/* answers merge per QP across windows, an epoch held twice counted once */
static void test_series_add(void **st)
{
	(void)st;
	uint32_t ep[2] = {1, 2};
	uint64_t by[2] = {10, 20};
	struct pulse_qps_seg s = {.qpn = 4, .remote_gpu = 0, .t0_ns = 1000, .epoch_ns = 100, .n = 2,
				  .epoch = ep, .bytes = by};
	strcpy(s.dev, "mlx5_0");
	strcpy(s.remote_host, "b");
	struct pulse_qps_resp r = {.nseg = 1, .segs = &s};
	strcpy(r.host, "a");
	struct an_series_set ss = {0};
	assert_int_equal(an_series_add(&ss, &r, NULL, NULL), 0);
	s.t0_ns = 1100; /* the next window overlaps by one epoch */
	assert_int_equal(an_series_add(&ss, &r, NULL, NULL), 0);
	assert_int_equal(ss.nq, 1);
	assert_int_equal(ss.q[0].n, 3);
	assert_int_equal(ss.q[0].t_ns[2], 1300);
	an_series_free(&ss);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_req_roundtrip),
		cmocka_unit_test(test_resp_roundtrip),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_other_end),
		cmocka_unit_test(test_classify_empty),
		cmocka_unit_test(test_series_add),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
