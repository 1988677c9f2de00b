#define _GNU_SOURCE
/* The interception mapping's JSON codec (wire/hook_map.c) and the one
 * hex-id reader (wire/hex_id.c): round trip, the agent's exact line, what
 * the analyzer's two readers used to disagree on, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/hex_id.h"
#include "pulse/hook_map.h"

static struct pulse_hook_map_comm comms[2];
static struct pulse_hook_map_qp qps[3];

static void sample(struct pulse_hook_map *m)
{
	memset(comms, 0, sizeof comms);
	memset(qps, 0, sizeof qps);
	comms[0] = (struct pulse_hook_map_comm){ .pid = 4242, .comm_id = 0xfedcba9876543210ull,
						 .parent_id = 0, .rank = 3, .nranks = 8,
						 .how = PULSE_HOOK_HOW_INIT_RANK,
						 .source = PULSE_HOOK_SRC_HOOK, .nccl_hash = 0x1234,
						 .nnodes = 4, .t_ns = 1700000000123ull };
	comms[0].gpu.cuda_dev = 1;
	comms[0].gpu.source = PULSE_HOOK_GPU_CUDART;
	strcpy(comms[0].gpu.pci_bus_id, "0000:3b:00.0");
	strcpy(comms[0].gpu.visible, "2,3");
	comms[1] = (struct pulse_hook_map_comm){ .pid = 4243, .comm_id = 0xabc, .parent_id = 0xfedc,
						 .rank = -1, .nranks = -1,
						 .how = PULSE_HOOK_HOW_SPLIT,
						 .source = PULSE_HOOK_SRC_PROFILER, .destroyed = 1 };
	comms[1].gpu.cuda_dev = -1;
	/* all 16 bytes used: no NUL in the record's field */
	memcpy(comms[1].gpu.visible, "0123456789abcdef", 16);

	strcpy(qps[0].dev, "mlx5_0");
	qps[0].port = 1;
	qps[0].qpn = 0x1234;
	qps[0].state = PULSE_HOOK_MAP_QP_RTR;
	qps[0].pid = 4242;
	qps[0].tid = 4250;
	qps[0].has_comm = 1;
	qps[0].comm_from = PULSE_HOOK_MAP_FROM_INIT;
	qps[0].comm_id = 0xfedcba9876543210ull;
	qps[0].rank = 3;
	qps[0].remote_qpn_known = 1;
	qps[0].remote_qpn = 0xffffff;
	qps[0].gid_valid = 1;
	for (int i = 0; i < 16; i++)
		qps[0].remote_gid[i] = (uint8_t)(0xf0 + i);
	qps[0].gpu.cuda_dev = 1;
	strcpy(qps[1].dev, "dev\"with\\odd\tname");
	qps[1].qpn = 7;
	qps[1].state = PULSE_HOOK_MAP_QP_NET;
	qps[1].pid = 1;
	qps[1].has_comm = 1;
	qps[1].comm_from = PULSE_HOOK_MAP_FROM_NET;
	qps[1].comm_id = 0xabc;
	qps[1].rank = 0;
	qps[1].gpu.cuda_dev = -1;
	strcpy(qps[2].dev, "12345678901234567890"); /* the longest name */
	qps[2].qpn = 9;
	qps[2].state = PULSE_HOOK_MAP_QP_DESTROYED;
	qps[2].pid = 2;
	qps[2].rank = -1;
	qps[2].gpu.cuda_dev = 0;

	memset(m, 0, sizeof *m);
	m->t_ns = 1700000000999ull;
	m->version = 12;
	m->ncomms = 2;
	m->comms = comms;
	m->nqps = 3;
	m->qps = qps;
}

static void assert_same(const struct pulse_hook_map *a, const struct pulse_hook_map *b)
{
	assert_int_equal(a->t_ns, b->t_ns);
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->ncomms, b->ncomms);
	assert_int_equal(a->nqps, b->nqps);
	for (uint32_t i = 0; i < a->ncomms; i++) {
		const struct pulse_hook_map_comm *x = &a->comms[i], *y = &b->comms[i];
		assert_int_equal(x->pid, y->pid);
		assert_int_equal(x->comm_id, y->comm_id);
		assert_int_equal(x->parent_id, y->parent_id);
		assert_int_equal(x->rank, y->rank);
		assert_int_equal(x->nranks, y->nranks);
		assert_int_equal(x->how, y->how);
		assert_int_equal(x->source, y->source);
		assert_int_equal(x->destroyed, y->destroyed);
		assert_int_equal(x->nccl_hash, y->nccl_hash);
		assert_int_equal(x->nnodes, y->nnodes);
		assert_int_equal(x->t_ns, y->t_ns);
		assert_memory_equal(&x->gpu, &y->gpu, sizeof x->gpu);
	}
	for (uint32_t i = 0; i < a->nqps; i++)
		assert_memory_equal(&a->qps[i], &b->qps[i], sizeof a->qps[i]);
}

static void test_round_trip(void **st)
{
	(void)st;
	struct pulse_hook_map m, d;
	sample(&m);
	char *s = pulse_hook_map_to_json(&m);
	assert_non_null(s);
	assert_null(strchr(s, '\n'));
	char err[256];
	assert_int_equal(pulse_hook_map_from_json(s, strlen(s), &d, err, sizeof err), 0);
	assert_same(&m, &d);
	/* and again: the same bytes */
	char *s2 = pulse_hook_map_to_json(&d);
	assert_string_equal(s, s2);
	free(s);
	free(s2);
	pulse_hook_map_free(&d);
	/* an empty map */
	memset(&m, 0, sizeof m);
	s = pulse_hook_map_to_json(&m);
	assert_string_equal(s, "{\"type\":\"hook_map\",\"t_ns\":0,\"version\":0,\"comms\":[],\"qps\":[]}");
	assert_int_equal(pulse_hook_map_from_json(s, strlen(s), &d, err, sizeof err), 0);
	assert_int_equal(d.ncomms + d.nqps, 0);
	pulse_hook_map_free(&d);
	free(s);
}

/* The line the agent wrote before the codec existed, byte for byte. */
static void test_agent_line(void **st)
{
	(void)st;
	struct pulse_hook_map m;
	sample(&m);
	m.ncomms = 1;
	m.nqps = 1;
	char *s = pulse_hook_map_to_json(&m);
	assert_string_equal(
		s, "{\"type\":\"hook_map\",\"t_ns\":1700000000999,\"version\":12,\"comms\":[{\"pid\":4242,"
		   "\"comm_id\":\"0xfedcba9876543210\",\"parent_id\":null,\"rank\":3,\"nranks\":8,"
		   "\"how\":\"init_rank\",\"source\":\"hook\",\"destroyed\":false,\"nccl_hash\":"
		   "\"0x0000000000001234\",\"nnodes\":4,\"t_ns\":1700000000123,\"gpu\":{\"cuda_dev\":1,"
		   "\"pci_bus_id\":\"0000:3b:00.0\",\"visible\":\"2,3\",\"source\":\"cudart\"}}],\"qps\":"
		   "[{\"dev\":\"mlx5_0\",\"port\":1,\"qpn\":4660,\"state\":\"rtr\",\"pid\":4242,\"tid\":4250,"
		   "\"comm_id\":\"0xfedcba9876543210\",\"rank\":3,\"remote_qpn\":16777215,\"remote_gid\":"
		   "\"f0f1:f2f3:f4f5:f6f7:f8f9:fafb:fcfd:feff\",\"gpu\":{\"cuda_dev\":1,\"pci_bus_id\":\"\","
		   "\"visible\":\"\",\"source\":\"unknown\"},\"comm_from\":\"init\"}]}");
	free(s);
	/* pulse_hook_map_write gives the same with the newline */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(pulse_hook_map_write(f, &m), 0);
	fclose(f);
	assert_true(len > 0 && buf[len - 1] == '\n');
	free(buf);
}

/* The analyzer had two readers: the server's took a bare number for "gpu",
 * state.c only {"cuda_dev"}. Both now call this one decoder: both forms,
 * and the forms the tests and older agents write (no "state", no "tid", no
 * "how"), give the same decoded map. */
static void test_one_decoder_both_inputs(void **st)
{
	(void)st;
	const char *obj = "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[{\"pid\":10,"
			  "\"comm_id\":\"0x00000000000000aa\",\"rank\":0,\"nranks\":2,\"gpu\":"
			  "{\"cuda_dev\":3}}],\"qps\":[{\"dev\":\"mlx5_0\",\"qpn\":100,\"pid\":10,"
			  "\"comm_id\":\"0x00000000000000aa\",\"rank\":0,\"gpu\":{\"cuda_dev\":3}}]}";
	const char *bare = "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[{\"pid\":10,"
			   "\"comm_id\":\"0xaa\",\"rank\":0,\"nranks\":2,\"gpu\":3}],\"qps\":[{\"dev\":"
			   "\"mlx5_0\",\"qpn\":100,\"pid\":10,\"comm_id\":\"0xAA\",\"rank\":0,\"gpu\":3}]}";
	struct pulse_hook_map a, b;
	char err[256];
	assert_int_equal(pulse_hook_map_from_json(obj, strlen(obj), &a, err, sizeof err), 0);
	assert_int_equal(pulse_hook_map_from_json(bare, strlen(bare), &b, err, sizeof err), 0);
	assert_same(&a, &b);
	assert_int_equal(a.comms[0].gpu.cuda_dev, 3);
	assert_int_equal(a.qps[0].gpu.cuda_dev, 3);
	assert_int_equal(a.qps[0].state, PULSE_HOOK_MAP_QP_CREATED);
	assert_int_equal(a.qps[0].comm_id, 0xaa);
	pulse_hook_map_free(&a);
	pulse_hook_map_free(&b);
	/* a GPU nobody knows: -1 either way, and the map is still taken */
	const char *unk[] = {
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"gpu\":1e9}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"gpu\":{\"cuda_dev\":-7}}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"gpu\":null}],\"qps\":[]}",
	};
	for (size_t i = 0; i < sizeof unk / sizeof unk[0]; i++) {
		assert_int_equal(pulse_hook_map_from_json(unk[i], strlen(unk[i]), &a, err, sizeof err), 0);
		assert_int_equal(a.comms[0].gpu.cuda_dev, -1);
		pulse_hook_map_free(&a);
	}
}

static void test_bad_input(void **st)
{
	(void)st;
	static const char *bad[] = {
		"",
		"not json",
		"[1,2]",
		"{\"type\":\"hook_map\",\"qps\":7}",
		"{\"type\":\"hook_map\",\"comms\":5}",
		"{\"type\":\"hook_map\",\"comms\":[],\"qps\":{}}",
		"{\"type\":\"op\",\"comms\":[],\"qps\":[]}",
		"{\"type\":\"hook_map\",\"comms\":[{\"comm_id\":\"zz\"}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"zz\",\"rank\":0,\"nranks\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":null,\"rank\":0,\"nranks\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":-1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":-2,\"nranks\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"how\":\"what\"}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"destroyed\":1}],\"qps\":[]}",
		"{\"comms\":[{\"pid\":1,\"comm_id\":\"0x1\",\"rank\":0,\"nranks\":1,\"gpu\":\"3\"}],\"qps\":[]}",
		"{\"comms\":[7],\"qps\":[]}",
		"{\"comms\":[],\"qps\":[{\"qpn\":1,\"pid\":1}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"123456789012345678901\",\"qpn\":1,\"pid\":1}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":16777216,\"pid\":1}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":1}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":1,\"pid\":1,\"state\":\"gone\"}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":1,\"pid\":1,\"comm_id\":\"0x-1\"}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":1,\"pid\":1,\"remote_gid\":\"xyz\"}]}",
		"{\"comms\":[],\"qps\":[{\"dev\":\"d\",\"qpn\":1,\"pid\":1,\"remote_qpn\":\"1\"}]}",
		"{\"t_ns\":\"1\",\"comms\":[],\"qps\":[]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct pulse_hook_map m;
		char err[256] = "";
		assert_int_equal(pulse_hook_map_from_json(bad[i], strlen(bad[i]), &m, err, sizeof err), -1);
		assert_true(err[0] != '\0');
		assert_null(m.comms);
		assert_null(m.qps);
	}
	/* never reads past len */
	const char *ok = "{\"comms\":[],\"qps\":[]}";
	struct pulse_hook_map m;
	char err[256];
	assert_int_equal(pulse_hook_map_from_json(ok, strlen(ok) - 1, &m, err, sizeof err), -1);
}

static void test_hex_id(void **st)
{
	(void)st;
	uint64_t v = 7;
	assert_int_equal(pulse_hex_id_parse("0x0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(pulse_hex_id_parse("0xFEDCBA9876543210", &v), 0);
	assert_int_equal(v, 0xfedcba9876543210ull);
	assert_int_equal(pulse_hex_id_parse("0x0000000000000000ffffffffffffffff", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	v = 7;
	static const char *bad[] = { NULL, "", "0", "0x", "0X1", "x1", "1", "0x-1", "0x+1", "0x 1",
				     "0x1 ", "0x1g", "0x0x1", "0x10000000000000000" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(pulse_hex_id_parse(bad[i], &v), -1);
	assert_int_equal(v, 7);
	char buf[PULSE_HEX_ID_LEN];
	assert_string_equal(pulse_hex_id_format(buf, 0xabc), "0x0000000000000abc");
	assert_string_equal(pulse_hex_id_format(buf, UINT64_MAX), "0xffffffffffffffff");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_agent_line),
		cmocka_unit_test(test_one_decoder_both_inputs),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_hex_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
