/* The SimAI workload (sim/cluster/simai_parse.c, simai.c; sim/README.md,
 * "SimAI workloads"):
 *   - the real AICB files of ../shared/workloads/simai (read in place,
 *     skipped when that directory is absent) parse to the jobs their
 *     ATTRIBUTION.md describes, the 9216-GPU one included;
 *   - damaged input (truncated, a bad number, an unknown type, extra lines,
 *     a NUL byte, a header without all_gpus) is an error naming the line;
 *   - a run of a small MoE + PP file written here gives every rank the
 *     calls the file says, on the groups it says, with Megatron's layout
 *     (TP fastest, then DP, then PP; EP groups of consecutive DP ranks). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <ftw.h>
#include <unistd.h>

#include "../../sim/cluster/cluster.h"
#include "../../sim/cluster/simai.h"

#ifndef SIMAI_DIR
#define SIMAI_DIR "../shared/workloads/simai"
#endif

static int have_shared(void)
{
	return access(SIMAI_DIR "/workload_gpt13b_128g.txt", R_OK) == 0;
}

static void test_real_files(void **state)
{
	(void)state;
	if (!have_shared())
		skip();
	struct simai_workload w;
	char err[512];
	assert_int_equal(simai_load(SIMAI_DIR "/workload_gpt13b_128g.txt", &w, err, sizeof err), 0);
	assert_int_equal(w.nlayers, 1338);
	assert_int_equal(w.tp, 8);
	assert_int_equal(w.pp, 2);
	assert_int_equal(w.ep, 1);
	assert_int_equal(w.ga, 16);
	assert_int_equal(w.all_gpus, 128);
	assert_int_equal(w.pp_comm, 2621440);
	/* line 3: grad_norm, forward ALLGATHER (TP), weight-gradient
	 * REDUCESCATTER (DP) */
	assert_string_equal(w.layers[0].name, "grad_norm");
	assert_int_equal(w.layers[0].line, 3);
	assert_int_equal(w.layers[0].comm[SP_FWD].op, SA_ALLGATHER);
	assert_int_equal(w.layers[0].comm[SP_FWD].group, SG_TP);
	assert_int_equal(w.layers[0].comm[SP_WG].op, SA_REDUCESCATTER);
	assert_int_equal(w.layers[0].comm[SP_WG].group, SG_DP);
	assert_int_equal(w.layers[0].comm[SP_WG].bytes, 3142615040ull);
	assert_int_equal(w.layers[1].comm[SP_WG].group, SG_DP_EP);
	assert_int_equal(simai_check_gpus(&w, 128, err, sizeof err), 0);
	assert_int_equal(simai_check_gpus(&w, 512, err, sizeof err), 0);
	assert_int_equal(simai_check_gpus(&w, 120, err, sizeof err), -1);
	assert_non_null(strstr(err, "TP x PP"));
	simai_free(&w);

	assert_int_equal(simai_load(SIMAI_DIR "/workload_ep_test.txt", &w, err, sizeof err), 0);
	assert_int_equal(w.tp, 4);
	assert_int_equal(w.ep, 4);
	int ep_a2a = 0, tp_a2a = 0;
	for (int i = 0; i < w.nlayers; i++) {
		ep_a2a += w.layers[i].comm[SP_FWD].op == SA_ALLTOALL &&
			  w.layers[i].comm[SP_FWD].group == SG_EP;
		tp_a2a += w.layers[i].comm[SP_FWD].op == SA_ALLTOALL &&
			  w.layers[i].comm[SP_FWD].group == SG_TP;
	}
	assert_int_equal(ep_a2a, 8);
	assert_int_equal(tp_a2a, 8);
	simai_free(&w);

	/* the 9216-GPU MoE: "pp_comm" without its colon, as AICB wrote it */
	assert_int_equal(simai_load(SIMAI_DIR "/workload_analytical_9216g.txt", &w, err, sizeof err), 0);
	assert_int_equal(w.nlayers, 1789);
	assert_int_equal(w.all_gpus, 9216);
	assert_int_equal(w.pp, 12);
	assert_int_equal(w.ep, 16);
	assert_int_equal(w.pp_comm, 50331648);
	assert_int_equal(simai_check_gpus(&w, 9216, err, sizeof err), 0);
	assert_int_equal(simai_check_gpus(&w, 384, err, sizeof err), 0);
	assert_int_equal(simai_check_gpus(&w, 192, err, sizeof err), -1);
	assert_non_null(strstr(err, "EP"));
	simai_free(&w);

	/* and a scenario asking for all of its GPUs says why it cannot */
	struct sc_scenario s;
	const char *j9216 = "{\"workload\":\"simai\",\"simai\":{\"file\":\"" SIMAI_DIR
			    "/workload_analytical_9216g.txt\",\"gpus\":9216}}";
	assert_int_equal(sc_scenario_parse(j9216, strlen(j9216), &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "run_cluster simulates at most"));
	assert_non_null(strstr(err, "--check-simai"));
}

static const char hdr[] = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 2 pp: 2 "
			  "vpp: 1 ga: 2 all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0 "
			  "pp_comm: 65536\n";
/* two micro-batches (embedding_layer lines), an EP all-to-all in each, a
 * DP gradient reduce-scatter and an expert-DP all-gather */
static const char body[] =
	"5\n"
	"grad_norm\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tREDUCESCATTER\t1048576\t100\n"
	"embedding_layer\t-1\t100000\tALLREDUCE\t1048576\t1\tNONE\t0\t1\tNONE\t0\t100\n"
	"mlp_moelayer\t-1\t200000\tALLTOALL_EP\t524288\t300000\tALLTOALL_EP\t524288\t1\tALLGATHER_DP_EP\t262144\t100\n"
	"embedding_layer\t-1\t100000\tALLREDUCE\t1048576\t1\tNONE\t0\t1\tNONE\t0\t100\n"
	"mlp_moelayer\t-1\t200000\tALLTOALL_EP\t524288\t300000\tALLTOALL_EP\t524288\t1\tNONE\t0\t100\n";

static void bad(const char *text, const char *needle)
{
	struct simai_workload w;
	char err[512];
	err[0] = 0;
	assert_int_equal(simai_parse(text, strlen(text), &w, err, sizeof err), -1);
	if (!strstr(err, needle))
		fail_msg("error \"%s\" lacks \"%s\"", err, needle);
	assert_null(w.layers);
}

static void test_errors(void **state)
{
	(void)state;
	char buf[4096];
	struct simai_workload w;
	char err[512];
	snprintf(buf, sizeof buf, "%s%s", hdr, body);
	assert_int_equal(simai_parse(buf, strlen(buf), &w, err, sizeof err), 0);
	assert_int_equal(w.nlayers, 5);
	simai_free(&w);

	/* cut in the middle of line 6 (the 4th layer) */
	size_t cut = strlen(hdr) + (size_t)(strstr(body, "embedding_layer\t-1\t100000\tALLREDUCE\t1048576\t1\tNONE\t0\t1\tNONE\t0\t100\nmlp_moelayer\t-1\t200000\tALLTOALL_EP\t524288\t300000\tALLTOALL_EP\t524288\t1\tNONE") - body) + 30;
	snprintf(buf, sizeof buf, "%s%s", hdr, body);
	buf[cut] = 0;
	bad(buf, "line 6: ");
	/* whole lines missing */
	snprintf(buf, sizeof buf, "%s%s", hdr, "7\ngrad_norm\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t100\n");
	bad(buf, "truncated: line 2 announces 7 layer lines, the file ends after 1");
	/* more lines than announced */
	snprintf(buf, sizeof buf, "%s1\na -1 1 NONE 0 1 NONE 0 1 NONE 0 1\nb -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n", hdr);
	bad(buf, "line 4: more layer lines than the 1");
	/* a bad number, an unknown type, a bad size */
	snprintf(buf, sizeof buf, "%s1\na -1 1x NONE 0 1 NONE 0 1 NONE 0 1\n", hdr);
	bad(buf, "line 3: field 3 (forward compute time)");
	snprintf(buf, sizeof buf, "%s1\na -1 1 ALLREDUCE_TP 5 1 NONE 0 1 NONE 0 1\n", hdr);
	bad(buf, "line 3: field 4 (forward communication): \"ALLREDUCE_TP\"");
	snprintf(buf, sizeof buf, "%s1\na -1 1 NONE 0 1 NONE -5 1 NONE 0 1\n", hdr);
	bad(buf, "line 3: field 8 (input-gradient communication size)");
	/* header problems */
	bad("DATA all_gpus: 8\n1\n", "line 1: policy \"DATA\" is not supported");
	bad("HYBRID_TRANSFORMER ep: 2\n1\n", "line 1: all_gpus: missing");
	bad("HYBRID_TRANSFORMER all_gpus: 8 ep: 0\n1\n", "line 1: ep: expects an integer");
	bad("HYBRID_TRANSFORMER all_gpus: 8 color: 3\n1\n", "line 1: unknown parameter \"color:\"");
	bad("HYBRID_TRANSFORMER all_gpus: 8\n", "truncated: the number of layer lines is missing");
	bad("HYBRID_TRANSFORMER all_gpus: 8\nmany\n", "line 2: expected the number of layer lines");
	bad("", "empty file");
	static const char nul[] = "HYBRID_TRANSFORMER all_gpus: 8\n1\na -1 1 NONE 0 1 \0NONE 0 1 NONE 0 1\n";
	assert_int_equal(simai_parse(nul, sizeof nul - 1, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "line 3: a control or NUL byte"));
	/* a pipeline without a message size cannot be simulated */
	const char *nopp = "HYBRID_TRANSFORMER all_gpus: 8 pp: 2\n1\na -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n";
	assert_int_equal(simai_parse(nopp, strlen(nopp), &w, err, sizeof err), 0);
	assert_int_equal(simai_check_gpus(&w, 8, err, sizeof err), -1);
	assert_non_null(strstr(err, "pp_comm is 0"));
	simai_free(&w);
}

static int rm_cb(const char *p, const struct stat *sb, int f, struct FTW *ftw)
{
	(void)sb;
	(void)f;
	(void)ftw;
	return remove(p);
}

/* count truth-ops lines of one rank matching comm and op */
struct tally {
	int n;
	uint64_t count_bytes;
};

/* the line's own rank (the first "rank_global": the peers list theirs) */
static int line_rank(const char *line)
{
	const char *p = strstr(line, "\"rank_global\":");
	return p ? atoi(p + 14) : -1;
}

static void tally(const char *dir, int rank, const char *comm, const char *op, struct tally *t)
{
	char path[600], want_comm[48], want_op[48];
	snprintf(path, sizeof path, "%s/truth-ops.jsonl", dir);
	snprintf(want_comm, sizeof want_comm, "\"comm\":\"%s\"", comm);
	snprintf(want_op, sizeof want_op, "\"op\":\"%s\"", op);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	memset(t, 0, sizeof *t);
	while (getline(&line, &cap, f) > 0) {
		if (line_rank(line) != rank || !strstr(line, want_comm) || !strstr(line, want_op))
			continue;
		t->n++;
		const char *cb = strstr(line, "\"count_bytes\":");
		assert_non_null(cb);
		t->count_bytes = strtoull(cb + 14, NULL, 10);
	}
	free(line);
	fclose(f);
}

static void test_run_small(void **state)
{
	(void)state;
	char dir[] = "/tmp/pulse-simai-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char file[600], json[1200], err[8400];
	snprintf(file, sizeof file, "%s/job.txt", dir);
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs(hdr, f);
	fputs(body, f);
	fclose(f);
	/* 16 GPUs, 2 a host: TP 2 = a host, DP 4 (EP 2 x expert-DP 2), PP 2 */
	snprintf(json, sizeof json,
		 "{\"name\":\"t\",\"seed\":3,\"workload\":\"simai\",\"iterations\":2,"
		 "\"cluster\":{\"gpus_per_host\":2},\"simai\":{\"file\":\"%s\",\"gpus\":16}}",
		 file);
	struct sc_scenario s;
	assert_int_equal(sc_scenario_parse(json, strlen(json), &s, err, sizeof err), 0);
	assert_int_equal(s.hosts, 8);
	char out[700];
	snprintf(out, sizeof out, "%s/run", dir);
	struct sc_stats st;
	memset(&st, 0, sizeof st);
	if (sc_run(&s, out, 0, &st, err, sizeof err))
		fail_msg("sc_run: %s", err);
	assert_int_equal(st.hung, 0);
	struct tally t;
	/* rank 5: t 1, d 2, stage 0; its EP group is DP ranks {2, 3}
	 * (global 5, 7), its expert-DP group DP ranks {0, 2} */
	/* the embedding all-reduce: forward, TP, twice an iteration */
	tally(out, 5, "tp", "allreduce", &t);
	assert_int_equal(t.n, 2 * 2);
	assert_int_equal(t.count_bytes, 1048576);
	/* the EP all-to-all: forward and input gradient of both micro-batches,
	 * one send and one receive to the one other EP rank each, half of the
	 * 524288-byte buffer (2 ranks) */
	tally(out, 5, "ep", "send", &t);
	assert_int_equal(t.n, 4 * 2);
	assert_int_equal(t.count_bytes, 262144);
	tally(out, 5, "ep", "recv", &t);
	assert_int_equal(t.n, 4 * 2);
	/* DP reduce-scatter (the file's size is the whole buffer: a quarter
	 * for each of the 4 DP ranks), expert-DP all-gather (a half) */
	tally(out, 5, "dp", "reducescatter", &t);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.count_bytes, 1048576 / 4);
	tally(out, 5, "dp", "allgather", &t);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.count_bytes, 262144 / 2);
	/* stage 0 sends each micro-batch's activations on and receives its
	 * gradients: 2 of each an iteration; the last stage the reverse */
	tally(out, 5, "pp", "send", &t);
	assert_int_equal(t.n, 2 * 2);
	assert_int_equal(t.count_bytes, 65536);
	tally(out, 5, "pp", "recv", &t);
	assert_int_equal(t.n, 2 * 2);
	tally(out, 13, "pp", "send", &t);
	assert_int_equal(t.n, 2 * 2);
	/* the EP group's other member is global rank 7 (t 1, d 3) */
	char path[800];
	snprintf(path, sizeof path, "%s/truth-ops.jsonl", out);
	f = fopen(path, "r");
	assert_non_null(f);
	char *line = NULL;
	size_t cap = 0;
	int seen = 0;
	while (getline(&line, &cap, f) > 0)
		if (line_rank(line) == 5 && strstr(line, "\"comm\":\"ep\"") &&
		    strstr(line, "\"op\":\"send\"")) {
			assert_non_null(strstr(line, "\"rank_global\":7,"));
			seen++;
		}
	free(line);
	fclose(f);
	assert_true(seen > 0);
	/* a file that no longer fits is a run error naming simai.gpus */
	s.simai_gpus = 12;
	s.hosts = 6;
	assert_int_not_equal(sc_run(&s, out, 0, &st, err, sizeof err), 0);
	assert_non_null(strstr(err, "simai.gpus"));
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_scenario_keys(void **state)
{
	(void)state;
	struct sc_scenario s;
	char err[512];
	const char *cases[][2] = {
		{ "{\"workload\":\"simai\",\"simai\":{\"gpus\":16}}", "simai.file: required" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"x\"}}", "simai.gpus: required" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"x\",\"gpus\":12}}",
		  "simai.gpus: 12 is not a multiple of cluster.gpus_per_host (8)" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"x\",\"gpus\":16,\"size_scale\":0}}",
		  "simai.size_scale: 0 is out of range" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"x\",\"gpus\":16,\"colour\":1}}",
		  "simai: unknown field \"colour\"" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"\",\"gpus\":16}}", "simai.file: 1 to" },
		{ "{\"workload\":\"simai\",\"cluster\":{\"hosts\":3},\"simai\":{\"file\":\"x\",\"gpus\":16}}",
		  "cluster.hosts: 3 x 8 GPUs is not simai.gpus (16)" },
		{ "{\"workload\":\"simai\",\"simai\":{\"file\":\"x\",\"gpus\":16},"
		  "\"failure\":{\"type\":\"moe_expert_imbalance\"}}",
		  "failure.type: moe_expert_imbalance does not apply to workload simai" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err[0] = 0;
		assert_int_equal(sc_scenario_parse(cases[i][0], strlen(cases[i][0]), &s, err, sizeof err), -1);
		if (!strstr(err, cases[i][1]))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i][1]);
	}
	/* sc_scenario_load reads the file: a missing one is its error */
	char path[] = "/tmp/pulse-simai-scen-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *j = "{\"workload\":\"simai\",\"simai\":{\"file\":\"/nonexistent/x.txt\",\"gpus\":16}}";
	assert_int_equal(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	assert_int_equal(sc_scenario_load(path, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "simai.file: /nonexistent/x.txt: No such file"));
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_files),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_scenario_keys),
		cmocka_unit_test(test_run_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
