#define _GNU_SOURCE
/* The operator record's JSON codec: round trip, and rejection of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/hook_record.h"
#include "pulse/op_record.h"

static void sample(struct pulse_op_record *r)
{
	memset(r, 0, sizeof *r);
	strcpy(r->host, "host3");
	r->gpu = 2;
	r->pid = 4242;
	r->comm_id = 0xfedcba9876543210ull;
	r->rank = 5;
	r->nranks = 8;
	r->seq = 17;
	r->op = PULSE_OP_GROUP;
	r->group_id = 9;
	r->count = 1u << 20;
	r->datatype = 7;
	r->root_peer = -1;
	r->algo = PULSE_ALGO_P2P;
	r->algo_source = PULSE_ALGO_SRC_ARGS;
	r->parallelism = PULSE_PAR_EP;
	r->status = PULSE_OP_HUNG;
	r->epoch_ns = 32000;
	r->call_ns = 1700000000123456789ull;
	r->start_ns = r->call_ns + 1000;
	r->end_ns = r->start_ns + 5000000;
	r->duration_ns = 5000000;
	r->expected_bytes = 3ull << 30;
	r->actual_bytes = (3ull << 30) - 12345;
	r->active_ns = 4000000;
	r->rank_active_ns = 4500000;
	r->rank_rate_gbps = 123.5;
	r->npeers = 2;
	for (int i = 0; i < 2; i++) {
		struct pulse_op_peer *p = &r->peers[i];
		p->rank = i;
		p->gpu = i + 4;
		strcpy(p->host, i ? "host1" : "host0");
		p->expected_bytes = 1u << 30;
		p->actual_bytes = (1u << 30) - (uint64_t)i;
		p->start_ns = r->start_ns + (uint64_t)i;
		p->end_ns = r->end_ns - (uint64_t)i;
		p->active_ns = 1000u * (uint64_t)(i + 1);
		p->peak_epoch_bytes = 589824u - (uint64_t)i;
		p->complete = (uint8_t)!i;
	}
}

static void round_trip(void **state)
{
	(void)state;
	struct pulse_op_record a, b;
	sample(&a);
	char *s = pulse_op_record_to_json(&a);
	assert_non_null(s);
	char err[160] = "";
	assert_int_equal(pulse_op_record_from_json(s, strlen(s), &b, err, sizeof err), 0);
	assert_memory_equal(&a, &b, sizeof a);
	/* an older agent's line has no peak_epoch_bytes: still a record, peak 0 */
	char *k = strstr(s, "\"peak_epoch_bytes\":589824,");
	assert_non_null(k);
	memmove(k, k + strlen("\"peak_epoch_bytes\":589824,"), strlen(k + strlen("\"peak_epoch_bytes\":589824,")) + 1);
	assert_int_equal(pulse_op_record_from_json(s, strlen(s), &b, err, sizeof err), 0);
	assert_int_equal(b.peers[0].peak_epoch_bytes, 0);
	assert_int_equal(b.peers[1].peak_epoch_bytes, 589823);
	free(s);
}

static void rejects_bad(void **state)
{
	(void)state;
	struct pulse_op_record a, b;
	sample(&a);
	char *s = pulse_op_record_to_json(&a);
	char err[160];
	/* every truncation is rejected, never read past */
	for (size_t n = 0; n < strlen(s); n++) {
		char *t = malloc(n ? n : 1);
		memcpy(t, s, n);
		assert_int_equal(pulse_op_record_from_json(t, n, &b, err, sizeof err), -1);
		free(t);
	}
	const char *bad[] = {
		"[]", "{\"type\":\"op\",\"v\":2}", "{\"type\":\"hook_op\"}",
		"{\"type\":\"op\",\"v\":1,\"host\":7}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_int_equal(pulse_op_record_from_json(bad[i], strlen(bad[i]), &b, err, sizeof err), -1);
		assert_true(strlen(err) > 0);
	}
	/* an unknown status and an out-of-range rank are refused, with the key named */
	char *t = strdup(s);
	char *p = strstr(t, "\"hung\"");
	memcpy(p, "\"hang\"", 6);
	assert_int_equal(pulse_op_record_from_json(t, strlen(t), &b, err, sizeof err), -1);
	assert_non_null(strstr(err, "status"));
	free(t);
	t = strdup(s);
	p = strstr(t, "\"call_ns\":\"");
	p[11] = 'x';
	assert_int_equal(pulse_op_record_from_json(t, strlen(t), &b, err, sizeof err), -1);
	assert_non_null(strstr(err, "call_ns"));
	free(t);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(rejects_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
