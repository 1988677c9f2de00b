/* NCCL as deployed (sim/README.md, "NCCL protocols" and "NICs shared by
 * GPUs"): LL and LL128 put their flags on the wire (2x and 128/120 of the
 * data), are chosen by size under nccl.protocol "auto", and trade link
 * rate for per-step latency; with cluster.gpus_per_nic 2 one NIC's event
 * stream carries two ranks' QPs. The association's side of both is
 * tests/assoc/accuracy.sh (acc-*proto*, acc-*-ll*, acc-*shared-nic*). */
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

/* RDMA bytes over all operators and ranks of a run (of one host: host >= 0),
 * and the protocols seen (bit per "simple", "ll", "ll128") */
static uint64_t truth_bytes(const char *dir, int host, unsigned *protos)
{
	size_t len;
	char *text = read_run_file(dir, "truth-ops.jsonl", &len);
	uint64_t sum = 0;
	char want[16];
	snprintf(want, sizeof want, "host%d", host);
	if (protos)
		*protos = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(line);
		assert_non_null(o);
		if (host < 0 || !strcmp(cJSON_GetObjectItemCaseSensitive(o, "host")->valuestring, want))
			sum += (uint64_t)cJSON_GetObjectItemCaseSensitive(o, "bytes")->valuedouble;
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "proto");
		if (protos && cJSON_IsString(p))
			*protos |= !strcmp(p->valuestring, "simple") ? 1u : !strcmp(p->valuestring, "ll") ? 2u : 4u;
		cJSON_Delete(o);
	}
	free(text);
	return sum;
}

static char *run_coll(const char *proto, const char *algo, uint64_t bytes, int hosts, struct sc_stats *st)
{
	char json[512];
	snprintf(json, sizeof json,
		 "{\"name\":\"proto\",\"seed\":3,\"workload\":\"standalone\",\"iterations\":3,"
		 "\"cluster\":{\"hosts\":%d,\"gpus_per_host\":1},\"nccl\":{\"protocol\":\"%s\",\"algo\":\"%s\"},"
		 "\"standalone\":{\"pattern\":\"collective\",\"collective\":\"allreduce\",\"msg_bytes\":%llu,"
		 "\"gap_ns\":100000}}",
		 hosts, proto, algo, (unsigned long long)bytes);
	return run_json(json, st);
}

/* The wire volume: LL twice the data, LL128 128 bytes per 120 (both
 * rounded up to whole lines per slice), Simple the data. */
static void test_wire_volume(void **state)
{
	(void)state;
	uint64_t b[3];
	static const char *const p[3] = { "simple", "ll", "ll128" };
	for (int i = 0; i < 3; i++) {
		char *dir = run_coll(p[i], "ring", 3u << 20, 4, NULL);
		unsigned seen;
		b[i] = truth_bytes(dir, -1, &seen);
		assert_int_equal(seen, i == 0 ? 0u : i == 1 ? 2u : 4u); /* "simple": truth as before, no "proto" */
		done(dir);
	}
	assert_true(b[0] > 0);
	assert_true(b[1] >= 2 * b[0] && b[1] <= 2 * b[0] + b[0] / 1000);
	assert_true(b[2] * 120 >= b[0] * 128 && b[2] * 120 <= b[0] * 128 + b[0] / 10);
}

/* auto: LL for small operators, LL128 for medium ones, Simple for large
 * ones, as NCCL's tuning model ranks them on 8 nodes */
static void test_auto_by_size(void **state)
{
	(void)state;
	static const struct {
		const char *algo;
		uint64_t bytes;
		unsigned want;
	} c[] = { { "ring", 4096, 2 }, { "ring", 1u << 20, 4 }, { "ring", 64u << 20, 1 },
		  { "tree", 8192, 2 }, { "tree", 1u << 20, 4 }, { "tree", 64u << 20, 1 } };
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char *dir = run_coll("auto", c[i].algo, c[i].bytes, 8, NULL);
		unsigned seen;
		truth_bytes(dir, -1, &seen);
		if (seen != c[i].want)
			fprintf(stderr, "%s %llu: protocols 0x%x, want 0x%x\n", c[i].algo,
				(unsigned long long)c[i].bytes, seen, c[i].want);
		assert_int_equal(seen, c[i].want);
		done(dir);
	}
}

/* Pacing: a small operator finishes sooner under LL (lower per-step
 * latency), a large one later (LL's GPU-paced rate, half the link in data
 * at most, through twice the bytes). */
static void test_pacing(void **state)
{
	(void)state;
	struct sc_stats s_small, l_small, s_big, l_big;
	done(run_coll("simple", "ring", 16384, 4, &s_small));
	done(run_coll("ll", "ring", 16384, 4, &l_small));
	done(run_coll("simple", "ring", 32u << 20, 4, &s_big));
	done(run_coll("ll", "ring", 32u << 20, 4, &l_big));
	assert_true(l_small.sim_ns < s_small.sim_ns);
	assert_true(l_big.sim_ns > s_big.sim_ns * 1.5);
}

/* "simple" is what a scenario without the key runs: the same bytes */
static void test_simple_is_default(void **state)
{
	(void)state;
	const char *a = "{\"name\":\"d\",\"seed\":9,\"cluster\":{\"hosts\":2,\"gpus_per_host\":2}}";
	const char *b = "{\"name\":\"d\",\"seed\":9,\"cluster\":{\"hosts\":2,\"gpus_per_host\":2,\"gpus_per_nic\":1},"
			"\"nccl\":{\"protocol\":\"simple\"}}";
	char *da = run_json(a, NULL), *db = run_json(b, NULL);
	static const char *const files[] = { "cluster.json", "truth.json", "truth-ops.jsonl",
					     "hosts/host0/mlx5_0.evs", "hosts/host1/mlx5_1.evs" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		size_t la, lb;
		char *x = read_run_file(da, files[i], &la), *y = read_run_file(db, files[i], &lb);
		assert_int_equal(la, lb);
		assert_memory_equal(x, y, la);
		free(x);
		free(y);
	}
	done(da);
	done(db);
}

/* Two GPUs per NIC: cluster.json lists one NIC per pair (with its first
 * GPU), the second GPU's device file does not exist, and the shared
 * NIC's stream carries exactly both ranks' RDMA bytes on the QPs of both. */
static void test_shared_nic(void **state)
{
	(void)state;
	char *dir = run_json("{\"name\":\"s\",\"seed\":4,\"workload\":\"gpt\",\"iterations\":2,"
			     "\"cluster\":{\"hosts\":2,\"gpus_per_host\":2,\"gpus_per_nic\":2}}",
			     NULL);
	cJSON *cl = read_run_json(dir, "cluster.json");
	const cJSON *h;
	cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(cl, "hosts"))
	{
		const cJSON *nics = cJSON_GetObjectItemCaseSensitive(h, "nics");
		assert_int_equal(cJSON_GetArraySize(nics), 1);
		assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(nics, 0), "dev")->valuestring,
				    "mlx5_0");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h, "processes")), 2);
	}
	cJSON_Delete(cl);
	char path[512];
	snprintf(path, sizeof path, "%s/hosts/host0/mlx5_1.evs", dir);
	size_t len;
	char *none = read_file(path, &len);
	assert_null(none);
	for (int host = 0; host < 2; host++) {
		struct stream s;
		load_evs(dir, host, 0, &s);
		uint64_t t = truth_bytes(dir, host, NULL);
		assert_true(t > 0);
		/* the stream's units are 32 bytes, rounded per event */
		assert_true(s.bytes + s.n * 16 >= t && s.bytes <= t + s.n * 16);
		free_stream(&s);
	}
	/* both ranks of host0 sent over it, each on its own QPs */
	size_t tl;
	char *text = read_run_file(dir, "truth-ops.jsonl", &tl);
	uint64_t per_gpu[2] = { 0, 0 };
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *o = cJSON_Parse(line);
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(o, "host")->valuestring, "host0")) {
			int g = (int)cJSON_GetObjectItemCaseSensitive(o, "gpu")->valuedouble;
			assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "nic")->valuestring, "mlx5_0");
			per_gpu[g] += (uint64_t)cJSON_GetObjectItemCaseSensitive(o, "bytes")->valuedouble;
		}
		cJSON_Delete(o);
	}
	free(text);
	assert_true(per_gpu[0] > 0 && per_gpu[1] > 0);
	done(dir);
}

static void test_errors(void **state)
{
	(void)state;
	bad("{\"nccl\":{\"protocol\":\"fast\"}}", "nccl.protocol");
	bad("{\"nccl\":{\"protocol\":2}}", "nccl.protocol");
	bad("{\"cluster\":{\"gpus_per_nic\":0}}", "cluster.gpus_per_nic");
	bad("{\"cluster\":{\"gpus_per_nic\":9}}", "cluster.gpus_per_nic");
	bad("{\"cluster\":{\"gpus_per_host\":4,\"gpus_per_nic\":3}}", "cluster.gpus_per_nic (3) must divide");
	bad("{\"cluster\":{\"gpus_per_nic\":true}}", "cluster.gpus_per_nic");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_volume),   cmocka_unit_test(test_auto_by_size),
		cmocka_unit_test(test_pacing),        cmocka_unit_test(test_simple_is_default),
		cmocka_unit_test(test_shared_nic),    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
