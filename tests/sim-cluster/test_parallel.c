/* Parallelism as deployed (sim/README.md, "Workloads"): tensor parallelism
 * across hosts (gpt.tp larger than the GPUs of a host) puts the TP
 * collectives on the NICs with Appendix B's ring volumes; sequence
 * parallelism (gpt.sequence_parallel) replaces each TP all-reduce with an
 * all-gather and a reduce-scatter of the same total volume; ZeRO-3
 * (gpt.zero3) all-gathers each region's parameters over DP before its
 * forward and backward and reduce-scatters its gradients after backward. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cJSON.h>

#include "cluster_testutil.h"

#define TP_BYTES (16ull << 20)

/* per operator type: calls, and RDMA bytes summed over ranks */
struct tpsum {
	int calls[4], nranks;
	uint64_t bytes[4];
};

/* the operators on communicators labelled comm (of global rank `rank`, -1:
 * every rank) by type: calls and RDMA bytes, and their size */
static void ops_of(const char *dir, const char *comm, int rank, struct tpsum *t)
{
	size_t len;
	char *text = read_run_file(dir, "truth-ops.jsonl", &len);
	memset(t, 0, sizeof *t);
	static const char *const ops[4] = { "", "allreduce", "allgather", "reducescatter" };
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(line);
		assert_non_null(o);
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(o, "comm")->valuestring, comm) &&
		    (rank < 0 || (int)cJSON_GetObjectItemCaseSensitive(o, "rank_global")->valuedouble == rank)) {
			const char *op = cJSON_GetObjectItemCaseSensitive(o, "op")->valuestring;
			t->nranks = (int)cJSON_GetObjectItemCaseSensitive(o, "nranks")->valuedouble;
			for (int k = 1; k < 4; k++)
				if (!strcmp(op, ops[k])) {
					t->calls[k]++;
					t->bytes[k] += (uint64_t)cJSON_GetObjectItemCaseSensitive(o, "bytes")->valuedouble;
				}
		}
		cJSON_Delete(o);
	}
	free(text);
}

/* 4 hosts x 2 GPUs, tp 4 (two hosts per TP group), dp 2: the ring of a TP
 * group crosses hosts twice, so of its 4 ranks' 2(n-1)/n x S each, two
 * ranks' go over RDMA: 3 S per all-reduce and group, 2 groups */
static void test_tp_across_hosts(void **state)
{
	(void)state;
	const char *base = "{\"seed\":31,\"iterations\":2,\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},"
			   "\"nccl\":{\"channels\":1},\"gpt\":{\"tp\":4,\"microbatches\":2%s}}";
	char json[512];
	snprintf(json, sizeof json, base, "");
	char *dir = run_json(json, NULL);
	struct tpsum a;
	ops_of(dir, "tp", -1, &a);
	done(dir);
	assert_int_equal(a.nranks, 4);
	/* 2 iterations x 2 micro-batches x (2 forward + 2 backward) x 8 ranks */
	assert_int_equal(a.calls[1], 2 * 2 * 4 * 8);
	int per_group_op = a.calls[1] / 8; /* all-reduces per rank */
	assert_int_equal(a.bytes[1], (uint64_t)per_group_op * 2 * 3 * TP_BYTES);
	assert_int_equal(a.calls[2] + a.calls[3], 0);

	/* sequence parallelism: an all-gather and a reduce-scatter of S / tp
	 * each instead, 1.5 S per group over RDMA each, the same total */
	snprintf(json, sizeof json, base, ",\"sequence_parallel\":true");
	dir = run_json(json, NULL);
	struct tpsum b;
	ops_of(dir, "tp", -1, &b);
	done(dir);
	assert_int_equal(b.calls[1], 0);
	assert_int_equal(b.calls[2], a.calls[1]);
	assert_int_equal(b.calls[3], a.calls[1]);
	assert_int_equal(b.bytes[2] + b.bytes[3], a.bytes[1]);

	/* tp within a host stays off the NICs */
	dir = run_json("{\"seed\":31,\"iterations\":2,\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},"
		       "\"gpt\":{\"microbatches\":2}}",
		       NULL);
	struct tpsum c;
	ops_of(dir, "tp", -1, &c);
	done(dir);
	assert_int_equal(c.nranks, 2);
	assert_true(c.calls[1] > 0);
	assert_int_equal(c.bytes[1], 0);
}

static void test_zero3(void **state)
{
	(void)state;
	/* 2 hosts x 1 GPU, dp 2, 2 micro-batches, one iteration, 256 MiB of
	 * gradients: per micro-batch 2 forward + 2 backward all-gathers and 2
	 * reduce-scatters of half the parameters, each rank sending its half of
	 * a half (64 MiB); then the loss and the gradient norm (8 bytes each) */
	char *dir = run_json("{\"seed\":5,\"iterations\":1,\"cluster\":{\"hosts\":2,\"gpus_per_host\":1},"
			     "\"gpt\":{\"microbatches\":2,\"zero3\":true}}",
			     NULL);
	struct tpsum z;
	ops_of(dir, "dp", 0, &z);
	done(dir);
	assert_int_equal(z.calls[2], 2 * 4);
	assert_int_equal(z.calls[3], 2 * 2);
	assert_int_equal(z.calls[1], 2);
	assert_int_equal(z.bytes[2], 8 * (64ull << 20));
	assert_int_equal(z.bytes[3], 4 * (64ull << 20));
	/* ZeRO-2: one reduce-scatter and one all-gather of the whole, per iteration */
	dir = run_json("{\"seed\":5,\"iterations\":1,\"cluster\":{\"hosts\":2,\"gpus_per_host\":1},"
		       "\"gpt\":{\"microbatches\":2}}",
		       NULL);
	struct tpsum z2;
	ops_of(dir, "dp", 0, &z2);
	done(dir);
	assert_int_equal(z2.calls[2], 1);
	assert_int_equal(z2.calls[3], 1);
	assert_int_equal(z2.bytes[3], 128ull << 20);
}

static void test_tp_errors(void **state)
{
	(void)state;
	bad("{\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"gpt\":{\"tp\":3}}", "gpt.tp (3) must divide");
	bad("{\"cluster\":{\"hosts\":4,\"gpus_per_host\":2},\"gpt\":{\"tp\":4,\"dp\":4}}",
	    "pp (1) x dp (4) x tp (4) must equal the GPUs");
	bad("{\"cluster\":{\"hosts\":2,\"gpus_per_host\":1},\"gpt\":{\"sequence_parallel\":true}}",
	    "gpt.sequence_parallel");
	bad("{\"gpt\":{\"tp\":0}}", "gpt.tp");
	bad("{\"gpt\":{\"sequence_parallel\":1}}", "gpt.sequence_parallel: expected true or false");
	bad("{\"gpt\":{\"zero3\":\"yes\"}}", "gpt.zero3: expected true or false");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tp_across_hosts),
		cmocka_unit_test(test_zero3),
		cmocka_unit_test(test_tp_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
