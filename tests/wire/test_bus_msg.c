/* The bus's format (wire/bus_msg.c): names that stay distinct as tokens,
 * message ids, record messages round trip stored and compressed, and every
 * kind of bad message refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/analyzer_wire.h"
#include "pulse/bus_msg.h"
#include "pulse/le.h"

static struct pulse_op_record rec, got;
static uint8_t body[256 * 1024];

/* n records of one poll of one host, as an OPS payload */
static size_t records(uint32_t n)
{
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++) {
		memset(&rec, 0, sizeof rec);
		strcpy(rec.host, "host1");
		rec.comm_id = 0xaa;
		rec.rank = (int32_t)(i % 8);
		rec.nranks = 8;
		rec.seq = i / 8;
		rec.op = 1;
		rec.status = 1;
		rec.call_ns = 1700000000000000000ull + i * 1000000ull;
		rec.end_ns = rec.call_ns + 500000;
		rec.npeers = 1;
		rec.peers[0].rank = (rec.rank + 1) % 8;
		strcpy(rec.peers[0].host, "host1");
		len = pulse_aw_ops_put(body, len, sizeof body, &rec);
		assert_true(len > 0);
	}
	return len;
}

static void names(void **state)
{
	(void)state;
	char a[PULSE_BUS_TOKEN_LEN], b[PULSE_BUS_TOKEN_LEN];
	assert_int_equal(pulse_bus_token("job-1", a, sizeof a), 0);
	assert_string_equal(a, "job-1");
	assert_int_equal(pulse_bus_token("gpt.3:a@b+c_d", a, sizeof a), 0);
	assert_string_equal(a, "gpt_2e3_3aa_40b_2bc__d");
	assert_null(strpbrk(a, ".:@+*> "));
	/* distinct names, distinct tokens ("a.b" against "a_2eb") */
	assert_int_equal(pulse_bus_token("a.b", a, sizeof a), 0);
	assert_int_equal(pulse_bus_token("a_2eb", b, sizeof b), 0);
	assert_string_not_equal(a, b);
	char big[64];
	memset(big, '.', 63);
	big[63] = 0;
	assert_int_equal(pulse_bus_token(big, a, sizeof a), 0); /* the worst case fits */
	assert_int_equal(pulse_bus_token(big, a, 100), -1);
	char id[96];
	assert_int_equal(pulse_bus_msg_id("host7", 12345, 2, id, sizeof id), 0);
	assert_string_equal(id, "host7/12345/2");
	assert_int_equal(pulse_bus_msg_id("host7", 12345, 2, id, 8), -1);
	assert_int_equal(pulse_bus_lines_id("host7", 12345, 0, id, sizeof id), 0);
	assert_string_equal(id, "host7/12345/l0");
}

/* kind 2: the agent's other lines, in order, whole; a body whose lines do
 * not match the header is refused */
static void lines(void **state)
{
	(void)state;
	char err[160];
	uint8_t *scratch = NULL;
	size_t scap = 0, n = 0;
	const char *txt = "{\"type\":\"hook_op\",\"t_ns\":\"1\"}\n{\"type\":\"window\"}\n";
	struct pulse_bus_ops m = {.kind = PULSE_BUS_KIND_LINES, .seq = 9, .part = 0, .parts = 1, .records = 2,
				  .body = (const uint8_t *)txt, .len = strlen(txt)};
	uint8_t *msg = pulse_bus_ops_encode(&m, 3, &n, err, sizeof err);
	assert_non_null(msg);
	struct pulse_bus_ops d;
	assert_int_equal(pulse_bus_ops_decode(msg, n, &d, &scratch, &scap, err, sizeof err), 0);
	assert_int_equal(d.kind, PULSE_BUS_KIND_LINES);
	assert_int_equal(d.records, 2);
	assert_int_equal(d.len, strlen(txt));
	assert_memory_equal(d.body, txt, d.len);
	free(msg);
	struct {
		const char *body;
		uint32_t count;
		const char *want;
	} bad[] = {{"{}\n{}\n", 3, "2 lines in the body, header says 3"},
		   {"{}\n{}", 1, "final newline"},
		   {"{}\n\n", 2, "empty line"}};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		m.body = (const uint8_t *)bad[k].body;
		m.len = strlen(bad[k].body);
		m.records = bad[k].count;
		msg = pulse_bus_ops_encode(&m, 0, &n, err, sizeof err);
		assert_non_null(msg);
		err[0] = 0;
		assert_int_equal(pulse_bus_ops_decode(msg, n, &d, &scratch, &scap, err, sizeof err), -1);
		if (!strstr(err, bad[k].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", k, err, bad[k].want);
		free(msg);
	}
	free(scratch);
}

static void round_trip(void **state)
{
	(void)state;
	char err[160];
	uint8_t *scratch = NULL;
	size_t scap = 0;
	for (int level = 0; level <= 3; level += 3) {
		size_t len = records(500);
		struct pulse_bus_ops m = {.seq = 77, .part = 1, .parts = 3, .records = 500, .body = body, .len = len};
		size_t n = 0;
		uint8_t *msg = pulse_bus_ops_encode(&m, level, &n, err, sizeof err);
		assert_non_null(msg);
		if (level) /* a poll's records compress well: the same hosts, comms and times */
			assert_true(n * 3 < len);
		else
			assert_int_equal(n, PULSE_BUS_HDR_LEN + len);
		struct pulse_bus_ops d;
		assert_int_equal(pulse_bus_ops_decode(msg, n, &d, &scratch, &scap, err, sizeof err), 0);
		assert_int_equal(d.seq, 77);
		assert_int_equal(d.part, 1);
		assert_int_equal(d.parts, 3);
		assert_int_equal(d.records, 500);
		assert_int_equal(d.len, len);
		assert_memory_equal(d.body, body, len);
		size_t pos = 0, rl;
		const uint8_t *r;
		uint32_t k = 0;
		while (pulse_aw_ops_next(d.body, d.len, &pos, &r, &rl, NULL, 0) == 1) {
			assert_int_equal(pulse_op_record_from_bin(r, rl, &got, err, sizeof err), 0);
			assert_int_equal(got.seq, k / 8);
			k++;
		}
		assert_int_equal(k, 500);
		/* every truncation is refused */
		for (size_t cut = 0; cut < n; cut += 1 + cut / 16)
			assert_int_equal(pulse_bus_ops_decode(msg, cut, &d, &scratch, &scap, err, sizeof err), -1);
		free(msg);
	}
	free(scratch);
}

static void bad_messages(void **state)
{
	(void)state;
	char err[160];
	uint8_t *scratch = NULL;
	size_t scap = 0;
	size_t len = records(20);
	struct pulse_bus_ops m = {.seq = 1, .part = 0, .parts = 1, .records = 20, .body = body, .len = len};
	size_t n = 0;
	uint8_t *msg = pulse_bus_ops_encode(&m, 3, &n, err, sizeof err);
	assert_non_null(msg);
	uint8_t *x = malloc(n);
	struct pulse_bus_ops d;
	struct {
		size_t at;
		unsigned width;
		uint32_t value;
		const char *want;
	} cases[] = {
		{0, 1, 'X', "not a Pulse"},      {4, 1, 2, "version"},
		{5, 1, 9, "kind"},               {6, 2, 0x8001, "flags"},
		{8, 4, PULSE_BUS_MAX_RAW + 1, "bound"}, {8, 4, 5, "zstd"},
		{12, 4, 21, "records"},          {24, 2, 1, "part 1 of 1"},
		{n - 4, 4, 0xdeadbeef, "zstd"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		memcpy(x, msg, n);
		if (cases[k].width == 1)
			x[cases[k].at] = (uint8_t)cases[k].value;
		else if (cases[k].width == 2)
			pulse_put_u16(x + cases[k].at, (uint16_t)cases[k].value);
		else
			pulse_put_u32(x + cases[k].at, cases[k].value);
		err[0] = 0;
		assert_int_equal(pulse_bus_ops_decode(x, n, &d, &scratch, &scap, err, sizeof err), -1);
		if (!strstr(err, cases[k].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", k, err, cases[k].want);
	}
	/* stored (not compressed): a body whose framing is broken */
	free(msg);
	msg = pulse_bus_ops_encode(&m, 0, &n, err, sizeof err);
	msg[PULSE_BUS_HDR_LEN] = 0xff; /* the first record's length */
	msg[PULSE_BUS_HDR_LEN + 1] = 0xff;
	assert_int_equal(pulse_bus_ops_decode(msg, n, &d, &scratch, &scap, err, sizeof err), -1);
	assert_non_null(strstr(err, "OPS"));
	/* the encoder's bounds */
	m.part = 1;
	assert_null(pulse_bus_ops_encode(&m, 3, &n, err, sizeof err));
	m.part = 0;
	m.len = PULSE_BUS_MAX_RAW + 1;
	assert_null(pulse_bus_ops_encode(&m, 3, &n, err, sizeof err));
	free(msg);
	free(x);
	free(scratch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names),
		cmocka_unit_test(round_trip),
		cmocka_unit_test(lines),
		cmocka_unit_test(bad_messages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
