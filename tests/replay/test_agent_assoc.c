/* The agent's association wiring (host-agent/loop.c) and the replay
 * options (host-agent/options.c), in process:
 *   - --replay/--host/--host-name/--sim DEV=SOCKET parse, and their errors;
 *   - a cycle hands the local QPs on polled NICs to the association with
 *     their remote end, and a QP on a device the agent does not poll is not
 *     handed over (its bytes stay on an unknown QP);
 *   - the analyzer's JOIN (agent_on_join) gives a remote host the local
 *     join cannot know, and it reaches the op record;
 *   - op records come out as "op" JSON lines that the codec reads back. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "assoc.h"
#include "pulse/op_record.h"

static int parse(struct agent_opts *o, int argc, char **argv)
{
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int rc = agent_parse_options(o, argc, argv);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void test_options(void **state)
{
	(void)state;
	struct agent_opts o;
	char *a1[] = {"x", "--replay", "/tmp/run", "--host", "host3", "--host-name", "me", NULL};
	assert_int_equal(parse(&o, 7, a1), 0);
	assert_string_equal(o.replay_dir, "/tmp/run");
	assert_string_equal(o.replay_host, "host3");
	assert_string_equal(o.host_name, "me");
	assert_int_equal(o.epoch_set, 0);
	assert_int_equal(o.poll_set, 0);

	char *a2[] = {"x", "--sim", "mlx5_1=/tmp/n.sock", "--sim", "/tmp/a=b/c.sock", "--device", "mlx5_7",
		      "--epoch", "16us", "--poll", "200ms", NULL};
	assert_int_equal(parse(&o, 11, a2), 0);
	assert_int_equal(o.nnics, 3);
	assert_string_equal(o.dev[0], "mlx5_1");
	assert_string_equal(o.target[0], "/tmp/n.sock");
	assert_null(o.dev[1]); /* a '/' before the '=': all of it is the path */
	assert_string_equal(o.target[1], "/tmp/a=b/c.sock");
	assert_string_equal(o.dev[2], "mlx5_7");
	assert_int_equal(o.epoch_set, 1);
	assert_int_equal(o.poll_set, 1);

	char *a3[] = {"x", "--replay", "/r", "--hang", "1.5s", NULL};
	assert_int_equal(parse(&o, 5, a3), 0);
	assert_int_equal(o.hang_ns, 1500000000ull);
	char *b0[] = {"x", "--replay", "/r", "--hang", "0s", NULL};
	assert_int_equal(parse(&o, 5, b0), 2);

	char *b1[] = {"x", "--host", "h", NULL}; /* --host needs --replay */
	assert_int_equal(parse(&o, 3, b1), 2);
	char *b2[] = {"x", "--replay", "/tmp/run", "--sim", "/tmp/s", NULL};
	assert_int_equal(parse(&o, 5, b2), 2);
	char *b3[] = {"x", "--sim", "mlx5_0=", NULL};
	assert_int_equal(parse(&o, 3, b3), 2);
	char *b4[] = {"x", "--replay", "", NULL};
	assert_int_equal(parse(&o, 3, b4), 2);
	char *b5[] = {"x", "--replay", "/r", "--host", "a/b", NULL};
	assert_int_equal(parse(&o, 5, b5), 2);
	char name[80];
	memset(name, 'n', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	char *b6[] = {"x", "--host-name", name, NULL};
	assert_int_equal(parse(&o, 3, b6), 2);
}

/* ---- the wiring ---- */

static struct agent ag;
static struct hooks hk;
static struct agent_join jn;
static char out_path[64];

#define COMM 0xC0FFEEull
#define PID 4242u
#define T0 1700000000000000000ull

static void rec(struct pulse_hook_record *r, uint8_t kind, uint64_t t)
{
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->source = PULSE_HOOK_SRC_HOOK;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->pid = PID;
	r->tid = PID;
	r->time_ns = t;
}

static void apply(const struct pulse_hook_record *r)
{
	uint64_t bad = 0;
	FILE *f = jsonl_begin();
	hooks_apply(&ag, &hk, f, r, &bad);
	if (f)
		jsonl_end();
	assert_int_equal(bad, 0);
}

static void qp_records(const char *dev, uint32_t qpn, uint32_t dest, uint64_t t)
{
	struct pulse_hook_record r;
	rec(&r, PULSE_HOOK_QP_CREATE, t);
	memcpy(r.u.qp.dev, dev, strlen(dev));
	r.u.qp.qpn = qpn;
	r.u.qp.gpu.cuda_dev = 0;
	apply(&r);
	rec(&r, PULSE_HOOK_QP_RTR, t + 1);
	memcpy(r.u.qp.dev, dev, strlen(dev));
	r.u.qp.qpn = qpn;
	r.u.qp.dest_qpn = dest;
	r.u.qp.is_global = 1;
	r.u.qp.remote_gid[0] = 0xfe;
	r.u.qp.gpu.cuda_dev = 0;
	apply(&r);
}

static int setup(void **state)
{
	(void)state;
	memset(&ag, 0, sizeof ag);
	memset(&jn, 0, sizeof jn);
	pthread_mutex_init(&ag.lock, NULL);
	snprintf(out_path, sizeof out_path, "/tmp/pulse-agent-assoc.%d.jsonl", (int)getpid());
	unlink(out_path);
	assert_int_equal(jsonl_open(out_path), 0);
	snprintf(ag.host_name, sizeof ag.host_name, "hostA");
	ag.opt.epoch_ns = 32000;
	ag.opt.poll_ns = 1000000000ull;
	ag.nnics = 1;
	snprintf(ag.nics[0].dev, sizeof ag.nics[0].dev, "mlx5_0");
	snprintf(ag.nics[0].name, sizeof ag.nics[0].name, "test:mlx5_0");
	hooks_init_records(&hk);
	ag.hooks = &hk;
	ag.join = &jn;
	struct assoc_cfg cfg = {.host = ag.host_name, .epoch_ns = 32000};
	ag.assoc = assoc_new(&cfg);
	assert_non_null(ag.assoc);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assoc_free(ag.assoc);
	ag.assoc = NULL;
	qp_map_free(&hk.map);
	agent_join_free(&jn);
	jsonl_close();
	unlink(out_path);
	return 0;
}

/* A window of NIC 0 from T0 (NIC time 0 = host T0) with `bytes` per epoch
 * on each QP in qpns over epochs [e0, e1). */
static void window(const uint32_t *qpns, int n, uint32_t e0, uint32_t e1, uint64_t bytes, uint32_t seq)
{
	struct pulse_window w;
	pulse_window_init(&w);
	w.window_seq = seq;
	w.complete = 1;
	w.epoch_ns = 32000;
	w.nic_start_ns = (uint64_t)seq * 1000000000ull;
	w.nic_end_ns = w.nic_start_ns + 1000000000ull;
	w.flows = calloc((size_t)n, sizeof *w.flows);
	w.flow_cap = (uint32_t)n;
	w.flow_count = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		struct pulse_qp_series *s = &w.flows[i];
		s->qpn = qpns[i];
		s->cap = e1 - e0;
		s->epoch = malloc(sizeof *s->epoch * s->cap);
		s->bytes = malloc(sizeof *s->bytes * s->cap);
		for (uint32_t e = e0; e < e1; e++) {
			s->epoch[s->count] = e;
			s->bytes[s->count++] = bytes;
			s->total_bytes += bytes;
		}
	}
	assoc_window(ag.assoc, 0, &w, (int64_t)T0, 0);
	pulse_window_free(&w);
}

static void test_qps_to_polled_nics_only(void **state)
{
	(void)state;
	struct pulse_hook_record r;
	qp_records("mlx5_0", 0x100, 0x200, T0 + 1000);
	qp_records("mlx5_9", 0x101, 0x201, T0 + 1000); /* a device this agent does not poll */
	rec(&r, PULSE_HOOK_COMM_INIT, T0 + 500);
	r.u.comm.comm_id = COMM;
	r.u.comm.rank = 0;
	r.u.comm.nranks = 2;
	r.u.comm.how = PULSE_HOOK_HOW_INIT_RANK;
	apply(&r);
	qp_map_emit(&hk.map);
	agent_cycle_begin(&ag, T0 + 2000);
	assert_true(jn.ran);
	/* the local join knows this host only: no partner for either QP */
	assert_int_equal(jn.st.qps, 2);
	assert_int_equal(jn.st.no_partner, 2);
	const uint32_t q[2] = {0x100, 0x101};
	window(q, 2, 10, 20, 4096, 0);
	struct assoc_stats st;
	assoc_get_stats(ag.assoc, &st);
	/* no remote end known yet: neither QP's bytes can be attributed */
	assert_int_equal(st.unknown_qp_bytes, 2 * 10 * 4096);

	/* the analyzer knows both remote ends; the mlx5_9 QP is still on no
	 * polled NIC, so only its bytes stay unknown */
	struct pulse_aw_join_qp jq[2];
	memset(jq, 0, sizeof jq);
	for (int i = 0; i < 2; i++) {
		snprintf(jq[i].dev, sizeof jq[i].dev, "%s", i ? "mlx5_9" : "mlx5_0");
		jq[i].qpn = q[i];
		jq[i].pid = PID;
		jq[i].comm_id = COMM;
		jq[i].rank = 0;
		snprintf(jq[i].remote_host, sizeof jq[i].remote_host, "hostZ");
		jq[i].remote_gpu = 1;
		jq[i].remote_rank = 1;
		jq[i].remote_qpn = 0x200u + (uint32_t)i;
	}
	struct pulse_aw_join j = {.nqps = 2, .qps = jq};
	agent_on_join(&ag, &j);
	agent_cycle_begin(&ag, T0 + 1000000000ull);
	window(q, 2, 10, 20, 4096, 1);
	assoc_get_stats(ag.assoc, &st);
	assert_int_equal(st.unknown_qp_bytes, 3 * 10 * 4096);
}

static int count_ops(const char *host, uint32_t *complete, char *peer_host, size_t plen)
{
	FILE *f = fopen(out_path, "r");
	assert_non_null(f);
	char line[65536];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		if (!strstr(line, "\"type\":\"op\""))
			continue;
		struct pulse_op_record r;
		char err[200];
		assert_int_equal(pulse_op_record_from_json(line, strlen(line), &r, err, sizeof err), 0);
		assert_string_equal(r.host, host);
		n++;
		if (r.status == PULSE_OP_COMPLETE)
			(*complete)++;
		if (r.npeers && peer_host)
			snprintf(peer_host, plen, "%s", r.peers[0].host);
	}
	fclose(f);
	return n;
}

static void test_analyzer_join_reaches_op_records(void **state)
{
	(void)state;
	struct pulse_hook_record r;
	qp_records("mlx5_0", 0x100, 0x200, T0 + 1000);
	rec(&r, PULSE_HOOK_COMM_INIT, T0 + 500);
	r.u.comm.comm_id = COMM;
	r.u.comm.rank = 0;
	r.u.comm.nranks = 2;
	r.u.comm.how = PULSE_HOOK_HOW_INIT_RANK;
	apply(&r);
	qp_map_emit(&hk.map);
	agent_cycle_begin(&ag, T0 + 2000);

	/* the analyzer: QP 0x100 goes to rank 1 on hostZ, GPU 3 */
	struct pulse_aw_join_qp jq;
	memset(&jq, 0, sizeof jq);
	snprintf(jq.dev, sizeof jq.dev, "mlx5_0");
	jq.qpn = 0x100;
	jq.pid = PID;
	jq.comm_id = COMM;
	jq.rank = 0;
	snprintf(jq.remote_host, sizeof jq.remote_host, "hostZ");
	jq.remote_gpu = 3;
	jq.remote_rank = 1;
	jq.remote_qpn = 0x200;
	struct pulse_aw_join_member m[2];
	memset(m, 0, sizeof m);
	for (int i = 0; i < 2; i++) {
		m[i].comm_id = COMM;
		m[i].rank = i;
		m[i].nranks = 2;
		snprintf(m[i].host, sizeof m[i].host, "%s", i ? "hostZ" : "hostA");
		m[i].gpu = i ? 3 : 0;
		m[i].pid = i ? 77 : PID;
	}
	struct pulse_aw_join j = {.nqps = 1, .nmembers = 2, .qps = &jq, .members = m};
	snprintf(j.host, sizeof j.host, "hostA");
	agent_on_join(&ag, &j);
	assert_int_equal(jn.nremote, 1);
	agent_cycle_begin(&ag, T0 + 3000);

	/* a send of 1 MiB to rank 1, and its bytes on the QP */
	rec(&r, PULSE_HOOK_OP, T0 + 10000);
	r.u.op.comm_id = COMM;
	r.u.op.seq = 0;
	r.u.op.count = 1 << 20;
	r.u.op.datatype = 0; /* int8 */
	r.u.op.root_peer = 1;
	r.u.op.redop = 0xff;
	r.u.op.type = PULSE_HOOK_OP_SEND;
	apply(&r);
	const uint32_t q[1] = {0x100};
	window(q, 1, 1, 1 + 64, 16384, 0); /* 64 epochs x 16 KiB = 1 MiB */
	agent_cycle_end(&ag, T0 + 1000000000ull);
	window(q, 1, 0, 0, 0, 1); /* the next window: quiet */
	agent_cycle_end(&ag, T0 + 2000000000ull);
	uint32_t complete = 0;
	char peer[64] = "";
	int n = count_ops("hostA", &complete, peer, sizeof peer);
	assert_int_equal(n, 1);
	assert_int_equal(complete, 1);
	assert_string_equal(peer, "hostZ");
	assert_int_equal(ag.op_records, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test_setup_teardown(test_qps_to_polled_nics_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_analyzer_join_reaches_op_records, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
