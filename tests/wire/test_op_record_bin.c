#define _GNU_SOURCE
/* The operator record's binary codec (wire/op_record_bin.c) and the OPS
 * batch framing (wire/frame.c): exact round trip against the JSON form,
 * every truncation and every out-of-range field rejected with a reason,
 * the same acceptance as the JSON decoder, the worst case within
 * PULSE_OP_BIN_MAX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/analyzer_wire.h"
#include "pulse/hook_record.h"
#include "pulse/op_record.h"

static struct pulse_op_record rec, got; /* large: not on the stack */
static uint8_t buf[2 * PULSE_OP_BIN_MAX];

/* A group record from a JSON line (the form the agent writes), then
 * npeers peers with the awkward values: unknown ranks, times before the
 * call and at the top of the range, repeated hosts (back references). */
static void sample(struct pulse_op_record *r, uint32_t npeers)
{
	static const char line[] =
		"{\"type\":\"op\",\"v\":1,\"host\":\"host3\",\"gpu\":2,\"pid\":4242,"
		"\"comm_id\":\"0xfedcba9876543210\",\"rank\":5,\"nranks\":8,\"seq\":17,\"group_id\":9,"
		"\"op\":\"group\",\"count\":1048576,\"datatype\":7,\"root_peer\":-1,\"algo\":\"p2p\","
		"\"algo_source\":\"args\",\"parallelism\":\"ep\",\"status\":\"hung\",\"epoch_ns\":32000,"
		"\"call_ns\":\"1700000000123456789\",\"start_ns\":\"1700000000123457789\",\"end_ns\":\"0\","
		"\"duration_ns\":5000000,\"expected_bytes\":3221225472,\"actual_bytes\":3221213127,"
		"\"active_ns\":4000000,\"rank_active_ns\":4500000,\"rank_rate_gbps\":123.5,\"peers\":[]}";
	char err[128];
	assert_int_equal(pulse_op_record_from_json(line, strlen(line), r, err, sizeof err), 0);
	r->npeers = npeers;
	for (uint32_t i = 0; i < npeers; i++) {
		struct pulse_op_peer *p = &r->peers[i];
		*p = (struct pulse_op_peer){.rank = (int32_t)i - 1, .gpu = (int32_t)(i % 8),
					    .expected_bytes = 1u << 30, .actual_bytes = (1u << 30) - i,
					    .start_ns = r->start_ns - i,
					    .end_ns = i == 2 ? UINT64_MAX : r->call_ns + 9000000 + i,
					    .active_ns = 1000u * (i + 1), .peak_epoch_bytes = 589824u - i,
					    .complete = (uint8_t)(i & 1)};
		snprintf(p->host, sizeof p->host, "host%u", i % 3 ? i : 3);
	}
}

/* Same fields, compared through the JSON form (which lists them all) and
 * the times the JSON line holds as strings. */
static void assert_same(const struct pulse_op_record *a, const struct pulse_op_record *b)
{
	char *ja = pulse_op_record_to_json(a), *jb = pulse_op_record_to_json(b);
	assert_non_null(ja);
	assert_non_null(jb);
	assert_string_equal(ja, jb);
	free(ja);
	free(jb);
	assert_int_equal(a->call_ns, b->call_ns);
	assert_int_equal(a->end_ns, b->end_ns);
	for (uint32_t i = 0; i < a->npeers; i++)
		assert_int_equal(a->peers[i].end_ns, b->peers[i].end_ns);
}

static void round_trip(void **state)
{
	(void)state;
	char err[160];
	uint32_t counts[] = {0, 1, 3, PULSE_OP_MAX_PEERS};
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
		sample(&rec, counts[k]);
		size_t n = pulse_op_record_to_bin(&rec, buf, sizeof buf);
		assert_true(n > 0);
		assert_int_equal(pulse_op_record_from_bin(buf, n, &got, err, sizeof err), 0);
		assert_same(&rec, &got);
		/* and much smaller than the JSON line */
		char *j = pulse_op_record_to_json(&rec);
		assert_true(n * 3 < strlen(j));
		free(j);
	}
}

/* The largest record there can be: every peer with a new 63-byte host and
 * every number at its widest. */
static void worst_case_fits(void **state)
{
	(void)state;
	sample(&rec, PULSE_OP_MAX_PEERS);
	memset(rec.host, 'h', PULSE_OP_HOST_LEN - 1);
	rec.host[PULSE_OP_HOST_LEN - 1] = 0;
	rec.gpu = -1;
	rec.pid = UINT32_MAX;
	rec.seq = rec.group_id = rec.count = rec.duration_ns = 1ull << 53;
	rec.call_ns = UINT64_MAX;
	rec.start_ns = 1;
	for (uint32_t i = 0; i < PULSE_OP_MAX_PEERS; i++) {
		struct pulse_op_peer *p = &rec.peers[i];
		memset(p->host, 'a' + (char)(i % 26), PULSE_OP_HOST_LEN - 1);
		p->host[0] = (char)('0' + i / 26);
		p->host[PULSE_OP_HOST_LEN - 1] = 0;
		p->rank = -(1 << 24);
		p->expected_bytes = p->actual_bytes = p->active_ns = p->peak_epoch_bytes = 1ull << 53;
		p->start_ns = 1ull << 63;
	}
	size_t n = pulse_op_record_to_bin(&rec, buf, sizeof buf);
	assert_true(n > 0);
	assert_true(n <= PULSE_OP_BIN_MAX);
	/* a buffer one byte short: 0, never a partial record */
	assert_int_equal(pulse_op_record_to_bin(&rec, buf, n - 1), 0);
}

static void truncations_rejected(void **state)
{
	(void)state;
	char err[160];
	sample(&rec, 3);
	size_t n = pulse_op_record_to_bin(&rec, buf, sizeof buf);
	for (size_t cut = 0; cut < n; cut++) {
		err[0] = 0;
		assert_int_equal(pulse_op_record_from_bin(buf, cut, &got, err, sizeof err), -1);
		assert_true(strncmp(err, "op record (binary): ", 20) == 0);
	}
	/* a trailing byte is an error too: a record is exactly its bytes */
	buf[n] = 0;
	assert_int_equal(pulse_op_record_from_bin(buf, n + 1, &got, err, sizeof err), -1);
	assert_non_null(strstr(err, "trailing"));
	/* err may be NULL */
	assert_int_equal(pulse_op_record_from_bin(buf, 3, &got, NULL, 0), -1);
}

/* Each field outside the JSON decoder's range: both decoders refuse it. */
static void same_ranges_as_json(void **state)
{
	(void)state;
	char err[160];
	for (int k = 0; k < 10; k++) {
		sample(&rec, 2);
		const char *want = NULL;
		switch (k) {
		case 0: rec.gpu = 1 << 21; want = "gpu"; break;
		case 1: rec.rank = -2; want = "rank"; break;
		case 2: rec.nranks = (1 << 24) + 1; want = "nranks"; break;
		case 3: rec.seq = 1ull << 54; want = "seq"; break;
		case 4: rec.op = 14; want = "op type"; break;
		case 5: rec.algo = 4; want = "algo"; break;
		case 6: rec.status = 9; want = "status"; break;
		case 7: rec.rank_rate_gbps = -1; want = "rank_rate_gbps"; break;
		case 8: rec.peers[1].actual_bytes = 1ull << 60; want = "peer actual_bytes"; break;
		case 9: rec.parallelism = 6; want = "parallelism"; break;
		}
		size_t n = pulse_op_record_to_bin(&rec, buf, sizeof buf);
		assert_true(n > 0);
		err[0] = 0;
		assert_int_equal(pulse_op_record_from_bin(buf, n, &got, err, sizeof err), -1);
		assert_non_null(strstr(err, want));
		char *j = pulse_op_record_to_json(&rec);
		/* numbers: the JSON codec refuses them as well (its encoder writes an
		 * unknown enum as "other"/"unknown", which is valid there) */
		int is_enum = k == 4 || k == 5 || k == 6 || k == 9;
		if (j && !is_enum)
			assert_int_equal(pulse_op_record_from_json(j, strlen(j), &got, err, sizeof err), -1);
		free(j);
	}
	/* a broken varint (11 continuation bytes) and a bad back reference */
	sample(&rec, 1);
	size_t n = pulse_op_record_to_bin(&rec, buf, sizeof buf);
	uint8_t bad[64];
	bad[0] = PULSE_OP_BIN_VERSION;
	bad[1] = 0x85; /* host: the 5th host seen, none yet */
	assert_int_equal(pulse_op_record_from_bin(bad, 2, &got, err, sizeof err), -1);
	assert_non_null(strstr(err, "host"));
	bad[1] = 1;
	bad[2] = 'h';
	memset(bad + 3, 0xff, 11);
	assert_int_equal(pulse_op_record_from_bin(bad, 14, &got, err, sizeof err), -1);
	assert_non_null(strstr(err, "gpu"));
	buf[0] = PULSE_OP_BIN_VERSION + 1;
	assert_int_equal(pulse_op_record_from_bin(buf, n, &got, err, sizeof err), -1);
	assert_non_null(strstr(err, "version"));
}

static void ops_batch(void **state)
{
	(void)state;
	char err[160];
	static uint8_t pl[64 * 1024];
	size_t len = 0, cnt = 0;
	for (;;) {
		sample(&rec, 1 + (uint32_t)cnt % 5);
		rec.seq = cnt;
		size_t nl = pulse_aw_ops_put(pl, len, sizeof pl, &rec);
		if (!nl)
			break;
		assert_true(nl > len);
		len = nl;
		cnt++;
	}
	assert_true(cnt > 100);
	size_t pos = 0, rl, seen = 0;
	const uint8_t *r;
	int rc;
	while ((rc = pulse_aw_ops_next(pl, len, &pos, &r, &rl, err, sizeof err)) == 1) {
		assert_int_equal(pulse_op_record_from_bin(r, rl, &got, err, sizeof err), 0);
		assert_int_equal(got.seq, seen);
		seen++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(seen, cnt);
	/* broken framing: a length past the end, a zero length, a stray byte */
	pos = 0;
	assert_int_equal(pulse_aw_ops_next(pl, 10, &pos, &r, &rl, err, sizeof err), -1);
	assert_non_null(strstr(err, "length"));
	uint8_t z[3] = {0, 0, 1};
	pos = 0;
	assert_int_equal(pulse_aw_ops_next(z, 3, &pos, &r, &rl, err, sizeof err), -1);
	pos = 0;
	assert_int_equal(pulse_aw_ops_next(z, 1, &pos, &r, &rl, err, sizeof err), -1);
	assert_non_null(strstr(err, "stray"));
	assert_string_equal(pulse_aw_type_name(PULSE_AW_OPS), "OPS");
	assert_int_equal(pulse_aw_type_since(PULSE_AW_OPS), 2);
	assert_int_equal(pulse_aw_type_since(PULSE_AW_OP), 1);
	assert_int_equal(pulse_aw_type_since(99), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(worst_case_fits),
		cmocka_unit_test(truncations_rejected),
		cmocka_unit_test(same_ranges_as_json),
		cmocka_unit_test(ops_batch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
