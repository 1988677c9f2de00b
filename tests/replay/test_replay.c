/* pulse-host-agent --replay: end to end on a generated run directory
 * (gen_run.c), through the ASan+UBSan build of the agent.
 *
 *   - every window of every NIC equals what the generator wrote: bytes,
 *     active epochs, first and last active epoch per QP, window bounds in
 *     the host's clock (with its own offset; the NIC clock wraps mid-run);
 *   - --host selects one host, no --host replays all of them;
 *   - hook records become hook_op lines and the mapping; the QP join pairs
 *     every QP, with the GIDs of cluster.json or learned without them;
 *   - bad inputs: missing directory, malformed cluster.json, unknown host,
 *     truncated or foreign event streams and record files, unknown record
 *     kinds: a clear message and the right exit status, never a crash;
 *   - it runs faster than real time. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <cJSON.h>

#include "gen_run.h"
#include "pulse/cluster_run.h"
#include "pulse/event_stream.h"

static char agent[4200];
static char tmp[4096];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	if (b) {
		b[n] = '\0';
		if (len)
			*len = (size_t)n;
	}
	return b;
}

struct run_result {
	int status;
	char *out, *log;
	double wall_s;
};

/* Runs the agent with "--out OUT --log LOG" and then the arguments (which
 * may override them). */
static void run_agent(struct run_result *r, const char *fmt, ...)
{
	char args[2048], cmd[24576], out[4200], log[4200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(out, sizeof out, "%s/out.jsonl", tmp);
	snprintf(log, sizeof log, "%s/agent.log", tmp);
	unlink(out);
	unlink(log);
	snprintf(cmd, sizeof cmd, "'%s' --out '%s' --log '%s' %s </dev/null >/dev/null 2>>'%s'", agent,
		 out, log, args, log);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int st = system(cmd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->out = slurp(out, NULL);
	r->log = slurp(log, NULL);
	if (!r->out)
		r->out = strdup("");
	if (!r->log)
		r->log = strdup("");
	if (getenv("REPLAY_TEST_VERBOSE"))
		fprintf(stderr, "$ %s\n--- exit %d, log:\n%s", cmd, r->status, r->log);
}

static void run_free(struct run_result *r)
{
	free(r->out);
	free(r->log);
}

static void expect_log(const struct run_result *r, const char *needle)
{
	if (!strstr(r->log, needle)) {
		fprintf(stderr, "log lacks \"%s\"; log:\n%s\n", needle, r->log);
		fail();
	}
}

/* Calls fn for every output line of the given type (with its raw text). */
static const char *cur_line; /* the raw line being checked */
static size_t cur_len;
typedef void (*line_fn)(const cJSON *o, void *ctx);
static int each_line(const char *out, const char *type, line_fn fn, void *ctx)
{
	int n = 0;
	const char *p = out;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		cJSON *o = cJSON_ParseWithLength(p, len);
		assert_non_null(o); /* every line is one JSON object */
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
		assert_true(cJSON_IsString(t));
		if (!strcmp(t->valuestring, type)) {
			cur_line = p;
			cur_len = len;
			if (fn)
				fn(o, ctx);
			n++;
		}
		cJSON_Delete(o);
		p = e ? e + 1 : p + len;
	}
	return n;
}

static uint64_t num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	assert_true(cJSON_IsNumber(v));
	return (uint64_t)v->valuedouble;
}

/* JSON numbers above 2^53 lose precision in a double: host times are read
 * from the raw text of the line, the first "key": at or after `from`. */
static uint64_t num_exact_at(const char *from, const char *k, const char **after)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", k);
	const char *end = cur_line + cur_len;
	const char *p = from;
	size_t pl = strlen(pat);
	while (p + pl <= end && memcmp(p, pat, pl))
		p++;
	assert_true(p + pl <= end);
	char *e;
	uint64_t v = strtoull(p + pl, &e, 10);
	assert_true(e > p + pl);
	if (after)
		*after = e;
	return v;
}
static uint64_t num_exact(const cJSON *o, const char *k)
{
	(void)o;
	return num_exact_at(cur_line, k, NULL);
}

static struct gen_run gen;
static char dir[4200];

static void make_run(void)
{
	char cmd[8400];
	snprintf(dir, sizeof dir, "%s/run", tmp);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(gen_run_write(dir, &gen), 0);
}

struct win_check {
	int host;
	int seen[GEN_HOSTS][GEN_NICS];
	uint32_t last_seq[GEN_HOSTS][GEN_NICS];
};

static void check_window(const cJSON *o, void *ctx)
{
	struct win_check *wc = ctx;
	const cJSON *nic = cJSON_GetObjectItemCaseSensitive(o, "nic");
	assert_true(cJSON_IsString(nic));
	int h = -1, n = -1;
	for (int i = 0; i < GEN_HOSTS; i++)
		for (int j = 0; j < GEN_NICS; j++) {
			char name[64];
			snprintf(name, sizeof name, "replay:%s/%s", gen.hosts[i], gen.nic[i][j].dev);
			if (!strcmp(nic->valuestring, name))
				h = i, n = j;
		}
	assert_true(h >= 0);
	if (wc->host >= 0)
		assert_int_equal(h, wc->host);
	const struct gen_nic *gn = &gen.nic[h][n];
	int k = wc->seen[h][n]++;
	assert_true(k < GEN_POLLS);
	uint32_t seq = (uint32_t)num(o, "window_seq");
	if (k)
		assert_int_equal(seq, wc->last_seq[h][n] + 1);
	wc->last_seq[h][n] = seq;
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "complete")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "gap")), 0);
	assert_int_equal(num(o, "epoch_ns"), GEN_EPOCH_NS);
	uint64_t hs = num_exact(o, "host_start_ns"), he = num_exact(o, "host_end_ns");
	assert_int_equal(hs, gn->win_host_start[k]);
	assert_int_equal(he, gn->win_host_end[k]);
	assert_int_equal(num(o, "clock_err_ns"), 0);
	const cJSON *qps = cJSON_GetObjectItemCaseSensitive(o, "qps");
	assert_int_equal(cJSON_GetArraySize(qps), gn->nqps);
	assert_int_equal(num(o, "flows"), gn->nqps);
	const cJSON *q;
	int matched = 0;
	const char *qtext = strstr(cur_line, "\"qps\":[");
	assert_non_null(qtext);
	cJSON_ArrayForEach(q, qps)
	{
		uint32_t qpn = (uint32_t)num(q, "qpn");
		/* this QP's raw text: its "qpn" in the qps array, in the same order */
		assert_int_equal(num_exact_at(qtext, "qpn", &qtext), qpn);
		uint64_t start_ns = num_exact_at(qtext, "start_ns", NULL);
		uint64_t end_ns = num_exact_at(qtext, "end_ns", NULL);
		for (int i = 0; i < gn->nqps; i++) {
			if (gn->qp[i].qpn != qpn)
				continue;
			const struct gen_qp_win *w = &gn->qp[i].win[k];
			assert_int_equal(num(q, "bytes"), w->bytes);
			assert_int_equal(num(q, "active_epochs"), w->active_epochs);
			assert_int_equal(start_ns,
					 gn->win_host_start[k] + (uint64_t)w->first_epoch * GEN_EPOCH_NS);
			assert_int_equal(end_ns,
					 gn->win_host_start[k] + ((uint64_t)w->last_epoch + 1) * GEN_EPOCH_NS);
			matched++;
		}
	}
	assert_int_equal(matched, gn->nqps);
}

static void count_up(const cJSON *o, void *ctx)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "event");
	*(int *)ctx += cJSON_IsString(e) && !strcmp(e->valuestring, "up");
}

static void test_one_host_windows(void **state)
{
	(void)state;
	make_run();
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	struct win_check wc = {.host = 0};
	int n = each_line(r.out, "window", check_window, &wc);
	assert_int_equal(n, GEN_NICS * GEN_POLLS);
	for (int j = 0; j < GEN_NICS; j++)
		assert_int_equal(wc.seen[0][j], GEN_POLLS);
	assert_int_equal(wc.seen[1][0] + wc.seen[1][1], 0);
	/* one "up" per NIC (the handshake), no gap, restart or down */
	int ups = 0;
	assert_int_equal(each_line(r.out, "event", count_up, &ups), GEN_NICS);
	assert_int_equal(ups, GEN_NICS);
	expect_log(&r, "host hostA: replayed");
	run_free(&r);
}

static void test_all_hosts(void **state)
{
	(void)state;
	make_run();
	struct run_result r;
	run_agent(&r, "--replay '%s'", dir);
	assert_int_equal(r.status, 0);
	struct win_check wc = {.host = -1};
	int n = each_line(r.out, "window", check_window, &wc);
	assert_int_equal(n, GEN_HOSTS * GEN_NICS * GEN_POLLS);
	for (int i = 0; i < GEN_HOSTS; i++)
		for (int j = 0; j < GEN_NICS; j++)
			assert_int_equal(wc.seen[i][j], GEN_POLLS);
	expect_log(&r, "host hostA: replayed");
	expect_log(&r, "host hostB: replayed");
	run_free(&r);
}

static void test_out_per_host(void **state)
{
	(void)state;
	make_run();
	char out[4300];
	snprintf(out, sizeof out, "%s/per-{host}.jsonl", tmp);
	struct run_result r;
	/* the later --out wins over the helper's */
	run_agent(&r, "--replay '%s' --out '%s'", dir, out);
	assert_int_equal(r.status, 0);
	for (int h = 0; h < GEN_HOSTS; h++) {
		char p[4300];
		snprintf(p, sizeof p, "%s/per-%s.jsonl", tmp, gen.hosts[h]);
		char *text = slurp(p, NULL);
		assert_non_null(text);
		struct win_check wc = {.host = h};
		assert_int_equal(each_line(text, "window", check_window, &wc), GEN_NICS * GEN_POLLS);
		free(text);
		unlink(p);
	}
	run_free(&r);
}

struct hook_check {
	int ops, maps;
	int last_qps, last_comms, qps_with_comm;
};

static void check_op(const cJSON *o, void *ctx)
{
	struct hook_check *hc = ctx;
	hc->ops++;
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
	assert_string_equal(op->valuestring, "allreduce");
}

static void check_map(const cJSON *o, void *ctx)
{
	struct hook_check *hc = ctx;
	hc->maps++;
	const cJSON *qps = cJSON_GetObjectItemCaseSensitive(o, "qps");
	const cJSON *comms = cJSON_GetObjectItemCaseSensitive(o, "comms");
	hc->last_qps = cJSON_GetArraySize(qps);
	hc->last_comms = cJSON_GetArraySize(comms);
	hc->qps_with_comm = 0;
	const cJSON *q;
	cJSON_ArrayForEach(q, qps)
		hc->qps_with_comm += cJSON_IsString(cJSON_GetObjectItemCaseSensitive(q, "comm_id"));
}

static void test_hooks_and_join(void **state)
{
	(void)state;
	make_run();
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostB", dir);
	assert_int_equal(r.status, 0);
	struct hook_check hc = {0};
	each_line(r.out, "hook_op", check_op, &hc);
	each_line(r.out, "hook_map", check_map, &hc);
	assert_int_equal(hc.ops, GEN_NICS * (gen.ops_per_process + gen.ops_after_last));
	assert_true(hc.maps >= 1);
	assert_int_equal(hc.last_qps, 4);
	assert_int_equal(hc.last_comms, 2);
	assert_int_equal(hc.qps_with_comm, 4);
	expect_log(&r, "QP join: 8 QPs on 4 devices (4 GIDs given, 0 learned), 8 paired, 0 without a "
		       "partner, 0 ambiguous, 0 never connected");
	expect_log(&r, "hook records after the last poll applied");
	run_free(&r);

	/* without the GIDs in cluster.json: learned from the pairs */
	char p[4300], cmd[9000];
	snprintf(p, sizeof p, "%s/cluster.json", dir);
	snprintf(cmd, sizeof cmd, "sed -i 's/,\"gid\":\"[0-9a-f:]*\"//g' '%s'", p);
	assert_int_equal(system(cmd), 0);
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	expect_log(&r, "QP join: 8 QPs on 4 devices (0 GIDs given, 4 learned), 8 paired");
	run_free(&r);
}

static void test_bad_dir_and_host(void **state)
{
	(void)state;
	make_run();
	struct run_result r;
	run_agent(&r, "--replay '%s/nonexistent'", tmp);
	assert_int_equal(r.status, 2);
	expect_log(&r, "not a directory");
	run_free(&r);

	run_agent(&r, "--replay '%s' --host hostZ", dir);
	assert_int_equal(r.status, 2);
	expect_log(&r, "--host hostZ: no such host");
	expect_log(&r, "hosts: hostA, hostB");
	run_free(&r);

	run_agent(&r, "--host hostA");
	assert_int_equal(r.status, 2);
	run_free(&r);

	run_agent(&r, "--replay '%s' --out '/nonexistent/{host}.jsonl'", dir);
	assert_int_equal(r.status, 1);
	expect_log(&r, "--out /nonexistent/hostA.jsonl: cannot open");
	run_free(&r);

	/* cluster.json: missing, not JSON, wrong format */
	char p[4300], cmd[9000];
	snprintf(p, sizeof p, "%s/cluster.json", dir);
	snprintf(cmd, sizeof cmd, "printf '{\"format\":\"pulse-cluster-run\",\"version\":1,' >'%s'", p);
	assert_int_equal(system(cmd), 0);
	run_agent(&r, "--replay '%s'", dir);
	assert_int_equal(r.status, 2);
	expect_log(&r, "cluster.json: not valid JSON");
	run_free(&r);
	snprintf(cmd, sizeof cmd, "echo '{\"format\":\"other\",\"hosts\":[]}' >'%s'", p);
	assert_int_equal(system(cmd), 0);
	run_agent(&r, "--replay '%s'", dir);
	assert_int_equal(r.status, 2);
	expect_log(&r, "not a pulse-cluster-run file");
	run_free(&r);
	unlink(p);
	run_agent(&r, "--replay '%s'", dir);
	assert_int_equal(r.status, 2);
	expect_log(&r, "cluster.json: cannot open");
	run_free(&r);
}

static void truncate_to(const char *path, long size)
{
	assert_int_equal(truncate(path, size), 0);
}

static void test_truncated_and_foreign_streams(void **state)
{
	(void)state;
	make_run();
	char p[4300];
	struct stat st;
	/* hostA mlx5_0: cut 7 bytes into a record in the middle of window 5 */
	snprintf(p, sizeof p, "%s/hosts/hostA/mlx5_0.evs", dir);
	assert_int_equal(stat(p, &st), 0);
	long per_win = (long)(st.st_size - 32) / GEN_POLLS;
	truncate_to(p, 32 + per_win * 5 + 16 * 10 + 7);
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	expect_log(&r, "mlx5_0.evs: truncated: ends 7 bytes into a record");
	expect_log(&r, "events after the last POLL record were never polled");
	struct win_check wc = {.host = 0};
	each_line(r.out, "window", check_window, &wc);
	assert_int_equal(wc.seen[0][0], 5);
	assert_int_equal(wc.seen[0][1], GEN_POLLS);
	run_free(&r);

	/* a foreign file: reported, the other NIC still replayed, exit 1 */
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fputs("NOTPULSE", f);
	fclose(f);
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 1);
	expect_log(&r, "mlx5_0.evs: not a Pulse event stream");
	memset(&wc, 0, sizeof wc);
	each_line(r.out, "window", check_window, &wc);
	assert_int_equal(wc.seen[0][0], 0);
	assert_int_equal(wc.seen[0][1], GEN_POLLS);
	run_free(&r);

	/* a missing stream and an empty one */
	unlink(p);
	snprintf(p, sizeof p, "%s/hosts/hostA/mlx5_1.evs", dir);
	truncate_to(p, 0);
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 1);
	expect_log(&r, "mlx5_0.evs: cannot open");
	expect_log(&r, "mlx5_1.evs: not a Pulse event stream");
	expect_log(&r, "host hostA: no event stream to replay");
	run_free(&r);
}

static void test_unknown_record_kinds(void **state)
{
	(void)state;
	make_run();
	char p[4300];
	snprintf(p, sizeof p, "%s/hosts/hostB/mlx5_1.evs", dir);
	/* the first record of window 2 becomes an unknown kind */
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	long per_win = (long)(st.st_size - 32) / GEN_POLLS;
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fseek(f, 32 + per_win * 2, SEEK_SET);
	fputc(0x77, f);
	fclose(f);
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostB", dir);
	assert_int_equal(r.status, 0);
	expect_log(&r, "mlx5_1.evs: 1 records of an unknown kind dropped");
	run_free(&r);
}

/* A host's recorded link events (hosts/H/links.jsonl) come out as the live
 * link watcher's "link" lines; bad lines are refused with their number, and
 * make the replay exit 1 as other bad files do. */
static void test_link_events(void **state)
{
	(void)state;
	make_run();
	char p[4300];
	snprintf(p, sizeof p, "%s/hosts/hostA/links.jsonl", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("{\"type\":\"link\",\"t_ns\":5,\"host\":\"hostA\",\"netdev\":\"eth1\",\"dev\":\"mlx5_1\","
	      "\"event\":\"change\",\"state\":\"down\",\"ifindex\":3,\"admin_up\":true,\"running\":false,"
	      "\"operstate\":2,\"carrier\":0}\n"
	      "not json\n"
	      "{\"type\":\"link\",\"t_ns\":6,\"host\":\"hostB\",\"netdev\":\"eth0\",\"dev\":null,"
	      "\"event\":\"change\",\"state\":\"down\",\"ifindex\":2,\"admin_up\":true,\"running\":false,"
	      "\"operstate\":2,\"carrier\":0}\n",
	      f);
	fclose(f);
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 1);
	expect_log(&r, "links.jsonl:2: not a link event");
	expect_log(&r, "links.jsonl:3: a link event of host hostB in host hostA's file");
	expect_log(&r, "link eth1 (mlx5_1): down");
	const char *l = strstr(r.out, "\"type\":\"link\"");
	assert_non_null(l);
	assert_null(strstr(l + 1, "\"type\":\"link\"")); /* hostB's line is not given out */
	assert_non_null(strstr(r.out, "\"netdev\":\"eth1\",\"dev\":\"mlx5_1\""));
	run_free(&r);
	/* hostB has no file: nothing, and no complaint */
	run_agent(&r, "--replay '%s' --host hostB", dir);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "\"type\":\"link\""));
	run_free(&r);
}

static void test_bad_record_files(void **state)
{
	(void)state;
	make_run();
	char p[4300];
	snprintf(p, sizeof p, "%s/hosts/hostA/hook-%u.rec", dir, gen.nic[0][0].pid);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	truncate_to(p, st.st_size - 50);
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	expect_log(&r, "truncated: ends 70 bytes into a record");
	struct hook_check hc = {0};
	each_line(r.out, "hook_op", check_op, &hc);
	assert_int_equal(hc.ops, GEN_NICS * (gen.ops_per_process + gen.ops_after_last) - 1);
	run_free(&r);

	/* a record file of another format: left out, exit 1; a header only: fine */
	FILE *f = fopen(p, "r+b");
	assert_non_null(f);
	fputs("PULSEXXX", f);
	fclose(f);
	snprintf(p, sizeof p, "%s/hosts/hostA/hook-%u.rec", dir, gen.nic[0][1].pid);
	truncate_to(p, 32);
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 1);
	expect_log(&r, "not a Pulse hook record file");
	struct win_check wc = {.host = 0};
	assert_int_equal(each_line(r.out, "window", check_window, &wc), GEN_NICS * GEN_POLLS);
	run_free(&r);
}

struct clean_check {
	struct win_check wc;
	int n;
};

static void count_clean_nic(const cJSON *o, void *ctx)
{
	struct clean_check *cc = ctx;
	const cJSON *nic = cJSON_GetObjectItemCaseSensitive(o, "nic");
	if (strcmp(nic->valuestring, "replay:hostA/mlx5_0"))
		return;
	check_window(o, &cc->wc);
	cc->n++;
}

/* Garbage that passes the headers: random record bodies of every kind in a
 * process's record file, random TX records (any QPN, any time, any thread)
 * in a stream, POLL records with host times going backwards. The agent
 * (ASan+UBSan) must finish, exit 0 and count or absorb all of it. */
static void test_random_records(void **state)
{
	(void)state;
	make_run();
	srand(12345);
	char p[4300];
	snprintf(p, sizeof p, "%s/hosts/hostA/hook-%u.rec", dir, gen.nic[0][0].pid);
	FILE *f = fopen(p, "ab");
	assert_non_null(f);
	for (int i = 0; i < 3000; i++) {
		struct pulse_hook_record r;
		uint8_t *b = (uint8_t *)&r;
		for (size_t k = 0; k < sizeof r; k++)
			b[k] = (uint8_t)rand();
		r.version = i % 50 ? PULSE_HOOK_RECORD_VERSION : (uint16_t)rand();
		r.kind = (uint8_t)(i % 11);
		r.pid = gen.nic[0][0].pid;
		/* times around the run, some far outside it */
		r.time_ns = gen.nic[0][0].win_host_start[0] + (uint64_t)(rand() % 2000) * 1000000u -
			    (i % 7 == 0 ? 500000000u : 0);
		if (i % 97 == 0)
			r.time_ns = (uint64_t)rand() << 33;
		fwrite(&r, sizeof r, 1, f);
	}
	fclose(f);
	snprintf(p, sizeof p, "%s/hosts/hostA/mlx5_1.evs", dir);
	f = fopen(p, "ab");
	assert_non_null(f);
	uint64_t host = gen.nic[0][1].win_host_end[GEN_POLLS - 1];
	for (int i = 0; i < 20000; i++) {
		uint8_t rec[PULSE_EVS_RECORD_SIZE];
		struct pulse_evs_record r = {.kind = i % 2000 == 1999 ? PULSE_EVS_POLL : PULSE_EVS_TX,
					     .thread = (uint8_t)rand()};
		r.ev.qpn = (uint32_t)rand() & (i % 3 ? 0xFFFFFFu : 0xFFFFFFFFu);
		r.ev.sent_32b = (uint16_t)rand();
		r.ev.sent_pkts = (uint16_t)rand();
		r.ev.ts_ns = (uint32_t)rand() * 2u;
		host += (uint64_t)(rand() % 3) * 100000000u - 100000000u; /* sometimes backwards */
		r.host_ns = host;
		pulse_evs_encode_record(rec, &r);
		fwrite(rec, 1, sizeof rec, f);
	}
	fclose(f);
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	expect_log(&r, "hook records of an unknown kind or version ignored");
	expect_log(&r, "host hostA: replayed");
	assert_null(strstr(r.log, "AddressSanitizer"));
	assert_null(strstr(r.log, "runtime error"));
	/* the untouched NIC's windows are exactly as before */
	struct clean_check cc = {.wc = {.host = 0}};
	each_line(r.out, "window", count_clean_nic, &cc);
	assert_int_equal(cc.n, GEN_POLLS);
	/* and the garbage-fed one went on polling (10 more POLL records) */
	assert_true(each_line(r.out, "window", NULL, NULL) >= 2 * GEN_POLLS + 5);
	run_free(&r);
}

static void test_faster_than_real_time(void **state)
{
	(void)state;
	make_run();
	struct run_result r;
	run_agent(&r, "--replay '%s' --host hostA", dir);
	assert_int_equal(r.status, 0);
	double span_s = (double)(GEN_POLLS * GEN_POLL_NS) / 1e9;
	const char *m = strstr(r.log, "host hostA: replayed ");
	assert_non_null(m);
	double host_s = 0, wall_s = 0, ratio = 0;
	assert_int_equal(sscanf(m, "host hostA: replayed %lf s of host time in %lf s (%lfx", &host_s,
				&wall_s, &ratio),
			 3);
	fprintf(stderr, "replay of %.3f s of host time (2 NICs, ASan build): %.3f s in the agent, %.3f s "
			"for the whole process, %.1fx real time\n",
		host_s, wall_s, r.wall_s, ratio);
	assert_true(host_s > span_s * 0.99 && host_s < span_s * 1.01);
	assert_true(ratio > 1.0);
	assert_true(r.wall_s < span_s); /* the whole process, start-up included */
	run_free(&r);
}

int main(int argc, char **argv)
{
	(void)argc;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(agent, sizeof agent, "%s/pulse-host-agent-asan", self);
	if (getenv("PULSE_AGENT"))
		snprintf(agent, sizeof agent, "%s", getenv("PULSE_AGENT"));
	snprintf(tmp, sizeof tmp, "/tmp/pulse-replay-test.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	(void)argv;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_host_windows),
		cmocka_unit_test(test_all_hosts),
		cmocka_unit_test(test_out_per_host),
		cmocka_unit_test(test_hooks_and_join),
		cmocka_unit_test(test_bad_dir_and_host),
		cmocka_unit_test(test_truncated_and_foreign_streams),
		cmocka_unit_test(test_unknown_record_kinds),
		cmocka_unit_test(test_link_events),
		cmocka_unit_test(test_bad_record_files),
		cmocka_unit_test(test_random_records),
		cmocka_unit_test(test_faster_than_real_time),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return rc;
}
