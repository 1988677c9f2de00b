/* pulse-host-agent unit tests: option parsing, clock sync, the retention
 * ring (age, hard cap, oversize), the dump format, the metrics text,
 * the interception mapping (qp_map.c) with its JSON line and metrics, and
 * windows waiting for the analyzer's JOIN (join_wait.c). */
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

#include "pulse/analyzer_wire.h"
#include "pulse/qp_series_wire.h"
#include "../../host-agent/agent.h"
#include "../../host-agent/assoc.h"

static void test_durations(void **st)
{
	(void)st;
	uint64_t v;
	assert_int_equal(agent_parse_duration("500ms", 1, &v), 0);
	assert_int_equal(v, 500000000ull);
	assert_int_equal(agent_parse_duration("2s", 1, &v), 0);
	assert_int_equal(v, 2000000000ull);
	assert_int_equal(agent_parse_duration("32us", 1, &v), 0);
	assert_int_equal(v, 32000);
	assert_int_equal(agent_parse_duration("1.5s", 1, &v), 0);
	assert_int_equal(v, 1500000000ull);
	assert_int_equal(agent_parse_duration("200", 1000000, &v), 0);
	assert_int_equal(v, 200000000ull);
	assert_int_equal(agent_parse_duration("5 parsecs", 1, &v), -1);
	assert_int_equal(agent_parse_duration("", 1, &v), -1);
	assert_int_equal(agent_parse_duration("-1s", 1, &v), -1);
	assert_int_equal(agent_parse_size("256M", &v), 0);
	assert_int_equal(v, 256ull << 20);
	assert_int_equal(agent_parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(agent_parse_size("1GiB", &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(agent_parse_size("12Q", &v), -1);
}

static void test_options(void **st)
{
	(void)st;
	struct agent_opts o;
	char *a1[] = {"x", "--sim", "/tmp/a", "--sim", "/tmp/b", "--poll", "500ms", "--epoch", "16us",
		      "--retain", "10s", "--retain-mem", "1M", NULL};
	assert_int_equal(agent_parse_options(&o, 13, a1), 0);
	assert_int_equal(o.nnics, 2);
	assert_int_equal(o.kind[1], NIC_SIM);
	assert_string_equal(o.target[1], "/tmp/b");
	assert_int_equal(o.poll_ns, 500000000ull);
	assert_int_equal(o.epoch_ns, 16000);
	assert_int_equal(o.retain_ns, 10000000000ull);
	assert_int_equal(o.retain_mem, 1u << 20);
	assert_int_equal(o.timeout_ms, 125); /* a quarter of the period */
	char *a2[] = {"x", "--device", "mlx5_0", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a2), 0);
	assert_int_equal(o.kind[0], NIC_DOCA);
	assert_int_equal(o.poll_ns, 1000000000ull);
	assert_int_equal(o.timeout_ms, 250);
	char *a3[] = {"x", "--poll", "3s", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a3), 2);
	char *a4[] = {"x", "--poll", "0.5ms", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a4), 2);
	char *a5[] = {"x", "stray", NULL};
	assert_int_equal(agent_parse_options(&o, 2, a5), 2);
}

static void test_clock_sync(void **st)
{
	(void)st;
	struct clock_sync cs = {0};
	/* sent at 1000, answered at 1400, NIC said 50: NIC 50 ~ host 1200 +- 200 */
	clock_sync_update(&cs, 1000, 1400, 50);
	assert_true(cs.valid);
	assert_int_equal(cs.err_ns, 200);
	assert_int_equal(clock_sync_to_host(&cs, 50), 1200);
	assert_int_equal(clock_sync_to_host(&cs, 150), 1300);
	/* NIC clock ahead of the host */
	clock_sync_update(&cs, 1000, 1010, 1000000);
	assert_int_equal(cs.err_ns, 5);
	assert_int_equal(clock_sync_to_host(&cs, 1000000), 1005);
	assert_int_equal(clock_sync_to_host(&cs, 999000), 5);
	assert_int_equal(cs.max_err_ns, 200);
	/* receive before send (realtime stepped back): error 0, no wrap */
	clock_sync_update(&cs, 5000, 4000, 10);
	assert_int_equal(cs.err_ns, 0);
	assert_int_equal(clock_sync_to_host(&cs, 10), 5000);

	/* a slow poll a second later (a busy host: 400 us round trip, its
	 * midpoint 1 us off) keeps the fast poll's offset, charged 50 ppm of
	 * drift for its 1 s of age */
	struct clock_sync f = {0};
	clock_sync_update(&f, 1000000000, 1000000010, 1000);        /* off 999999005, err 5 */
	clock_sync_update(&f, 2000000000, 2000400000, 1000250000); /* off 1000000000: 995 off */
	assert_int_equal(f.offset_ns, 999999005);
	assert_int_equal(f.err_ns, 5 + 1000 * 50);
	/* a fast one excludes it: the offset moves to the nearest one every
	 * sample allows ([1000000000, 1000000002], the fast one's) */
	clock_sync_update(&f, 3000000000, 3000000002, 2000000000);
	assert_int_equal(f.offset_ns, 1000000000);
	assert_int_equal(f.err_ns, 2);
	/* the NIC restarted with another clock: the history starts again */
	clock_sync_update(&f, 4000000000, 4000400000, 7);
	assert_int_equal(f.offset_ns, 4000199993);
	assert_int_equal(f.err_ns, 200000);

	/* a busy host: every poll 7 ms long, its midpoint 3 ms off the true
	 * offset (0) one way or the other. The first puts it at 3 ms, the
	 * second allows only [-0.5, 0.5] ms with it: the offset moves to
	 * 0.5 ms and stays, since every later sample allows it (the least
	 * error alone, all equal, took the newest: 6 ms back and forth between
	 * windows, and a window's first bytes landed before the previous one's
	 * last; live at 4x, live_cluster.sh comp_stop) */
	struct clock_sync b = {0};
	for (int k = 0; k < 12; k++) {
		uint64_t send = 1000000000ull * (uint64_t)(k + 1);
		int64_t skew = k % 2 ? -3000000 : 3000000;
		clock_sync_update(&b, send, send + 7000000, (uint64_t)((int64_t)send + 3500000 - skew));
		assert_int_equal(b.offset_ns, k ? 500000 : 3000000);
		assert_true(b.err_ns <= 3500000u + 4 * 50000u);
	}
	/* a fast poll narrows it: the offset moves to the edge it allows */
	clock_sync_update(&b, 13000000000ull, 13000000020ull, 13000000010ull);
	assert_int_equal(b.offset_ns, 10);
	assert_int_equal(b.err_ns, 20);
}

/* A window with nflows flows of n epochs each. */
static void make_window(struct pulse_window *w, uint32_t seq, uint32_t nflows, uint32_t n)
{
	pulse_window_free(w);
	w->window_seq = seq;
	w->epoch_ns = 32000;
	w->complete = 1;
	w->nic_start_ns = (uint64_t)seq * 1000000;
	w->nic_end_ns = w->nic_start_ns + 1000000;
	w->flows = calloc(nflows, sizeof *w->flows);
	w->flow_count = w->flow_cap = nflows;
	for (uint32_t i = 0; i < nflows; i++) {
		struct pulse_qp_series *s = &w->flows[i];
		s->qpn = 100 + i;
		s->count = s->cap = n;
		s->epoch = calloc(n ? n : 1, sizeof *s->epoch);
		s->bytes = calloc(n ? n : 1, sizeof *s->bytes);
		for (uint32_t k = 0; k < n; k++) {
			s->epoch[k] = 2 * k;
			s->bytes[k] = 32ull * (k + 1) + i;
			s->total_bytes += s->bytes[k];
		}
	}
}

static void test_retention(void **st)
{
	(void)st;
	struct retention r;
	struct pulse_window w;
	pulse_window_init(&w);
	struct clock_sync cs = {.valid = 1, .offset_ns = 1000000000};
	make_window(&w, 1, 4, 10);
	size_t one = sizeof(struct ret_window) + 4 * sizeof(struct ret_flow) + 40 * 12;
	assert_int_equal(retention_init(&r, 5000000000ull, 3 * one), 0);
	/* three fit, the fourth evicts the oldest (counted) */
	for (uint32_t s = 1; s <= 4; s++) {
		make_window(&w, s, 4, 10);
		assert_int_equal(retention_add(&r, 0, &w, &cs, 0, 2000000000ull), 0);
	}
	assert_int_equal(r.count, 3);
	assert_true(r.mem <= 3 * one);
	assert_int_equal(r.dropped_cap, 1);
	assert_int_equal(retention_get(&r, 0)->window_seq, 2);
	const struct ret_window *x = retention_get(&r, 2);
	assert_int_equal(x->window_seq, 4);
	assert_int_equal(x->host_start_ns, 4000000 + 1000000000ull);
	assert_int_equal(x->flows[3].qpn, 103);
	assert_int_equal(x->flows[3].epoch[9], 18);
	assert_int_equal(x->flows[3].bytes[9], 320 + 3);
	assert_null(retention_get(&r, 3));
	/* bigger than the whole cap: not kept, counted, the ring untouched */
	make_window(&w, 5, 40, 10);
	assert_int_equal(retention_add(&r, 0, &w, &cs, 0, 2000000000ull), -1);
	assert_int_equal(r.dropped_oversize, 1);
	assert_int_equal(r.count, 3);
	/* age: everything ends near host 1.005 s; at 7 s with 5 s retention all expire */
	retention_expire(&r, 7000000000ull);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.mem, 0);
	assert_int_equal(r.expired, 3);
	/* growth past the initial ring array */
	retention_free(&r);
	assert_int_equal(retention_init(&r, 5000000000ull, 1ull << 30), 0);
	make_window(&w, 1, 1, 1);
	for (uint32_t s = 0; s < 200; s++)
		assert_int_equal(retention_add(&r, (uint16_t)(s % 2), &w, &cs, 0, 2000000000ull), 0);
	assert_int_equal(r.count, 200);
	assert_int_equal(retention_get(&r, 199)->nic, 1);
	retention_free(&r);
	pulse_window_free(&w);
}

static struct agent ag;

static void setup_agent(uint32_t windows)
{
	memset(&ag, 0, sizeof ag);
	pthread_mutex_init(&ag.lock, NULL);
	ag.opt.epoch_ns = 32000;
	ag.nnics = 2;
	snprintf(ag.nics[0].name, sizeof ag.nics[0].name, "sim:/tmp/a,b\"c");
	snprintf(ag.nics[1].name, sizeof ag.nics[1].name, "mlx5_1");
	ag.nics[0].hello.platform = PULSE_PLATFORM_X86_SIM;
	ag.nics[1].hello.platform = PULSE_PLATFORM_DOCA_DPA;
	assert_int_equal(retention_init(&ag.ret, 60000000000ull, 1ull << 20), 0);
	struct pulse_window w;
	pulse_window_init(&w);
	struct clock_sync cs = {.valid = 1, .offset_ns = 500, .err_ns = 7};
	for (uint32_t s = 1; s <= windows; s++) {
		make_window(&w, s, 2, 3);
		assert_int_equal(retention_add(&ag.ret, (uint16_t)(s % 2), &w, &cs, s == 2 ? GAP_SEQ : 0, 0), 0);
	}
	pulse_window_free(&w);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* the analyzer's SERIES_REQ answered from the ring (series_query.c) */
static void test_series_answer(void **st)
{
	(void)st;
	setup_agent(3); /* windows 1..3 at host 1.0005, 2.0005, 3.0005 ms; epochs 0, 2, 4 */
	snprintf(ag.host_name, sizeof ag.host_name, "hostA");
	snprintf(ag.nics[1].dev, sizeof ag.nics[1].dev, "mlx5_1");
	char err[200];
	struct pulse_qps_req q = {.id = 4, .from_ns = 2000500, .to_ns = 3000500};
	size_t len;
	uint8_t *p = agent_series_answer(&ag, &q, 1 << 20, &len);
	assert_non_null(p);
	struct pulse_qps_resp r;
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_int_equal(r.id, 4);
	assert_int_equal(r.status, PULSE_QPS_OK);
	assert_string_equal(r.host, "hostA");
	assert_int_equal(r.oldest_ns, 1000500);
	assert_int_equal(r.nseg, 2); /* window 2 only (NIC 0, not named: the agent's name) */
	assert_string_equal(r.segs[0].dev, "sim:/tmp/a,b\"c");
	assert_int_equal(r.segs[1].qpn, 101);
	assert_int_equal(r.segs[1].n, 3);
	assert_int_equal(r.segs[1].epoch[2], 4);
	assert_int_equal(r.segs[1].bytes[2], 97);
	assert_int_equal(r.segs[1].t0_ns, 2000500);
	assert_string_equal(r.segs[1].remote_host, ""); /* no mapping: unknown, not guessed */
	assert_int_equal(r.segs[1].gap, GAP_SEQ);
	pulse_qps_resp_free(&r);
	free(p);
	/* a range inside window 3 (NIC 1): only the epoch that starts in it */
	q.from_ns = 3000500 + 64000;
	q.to_ns = q.from_ns + 1;
	p = agent_series_answer(&ag, &q, 1 << 20, &len);
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_int_equal(r.nseg, 2);
	assert_string_equal(r.segs[0].dev, "mlx5_1");
	assert_int_equal(r.segs[0].n, 1);
	assert_int_equal(r.segs[0].epoch[0], 2);
	pulse_qps_resp_free(&r);
	free(p);
	/* nothing there; and an answer bound that holds one segment */
	q.from_ns = 9000000000ull;
	q.to_ns = q.from_ns + 5;
	p = agent_series_answer(&ag, &q, 1 << 20, &len);
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_int_equal(r.status, PULSE_QPS_NONE);
	assert_int_equal(r.nseg, 0);
	free(p);
	q.from_ns = 0;
	q.to_ns = 9000000000ull;
	p = agent_series_answer(&ag, &q, PULSE_QPS_HDR_LEN + 5 + 60, &len);
	assert_int_equal(pulse_qps_resp_decode(p, len, &r, err, sizeof err), 0);
	assert_int_equal(r.status, PULSE_QPS_TRUNCATED);
	assert_int_equal(r.nseg, 1);
	assert_int_equal(r.segs_left_out, 5);
	pulse_qps_resp_free(&r);
	free(p);
	retention_free(&ag.ret);
}

static void test_dump(void **st)
{
	(void)st;
	setup_agent(3);
	char dir[] = "/tmp/pulse-agent-dump-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char err[300];
	assert_int_equal(agent_dump(&ag, dir, err, sizeof err), 3);
	char p[400];
	snprintf(p, sizeof p, "%s/epochs.csv", dir);
	char *csv = slurp(p);
	assert_true(!strncmp(csv, "nic,qpn,synthetic,window_seq,epoch,epoch_ns,t_ns,nic_ns,bytes\n", 62));
	/* NIC 0 holds window 2 only (s % 2); its name is quoted for the comma */
	assert_non_null(strstr(csv, "\"sim:/tmp/a,b\"\"c\",100,0,2,2,32000,2064500,2064000,64\n"));
	assert_non_null(strstr(csv, "mlx5_1,101,0,3,4,32000,3128500,3128000,97\n"));
	int rows = 0;
	for (char *c = csv; *c; c++)
		rows += *c == '\n';
	assert_int_equal(rows, 1 + 3 * 2 * 3);
	snprintf(p, sizeof p, "%s/epochs.json", dir);
	char *js = slurp(p);
	assert_non_null(strstr(js, "\"schema\": \"pulse.epochs.v1\""));
	assert_non_null(strstr(js, "\"nic\": \"sim:/tmp/a,b\\\"c\", \"platform\": \"x86-sim\""));
	assert_non_null(strstr(js, "\"platform\": \"doca-dpa\""));
	assert_non_null(strstr(js, "\"window_seq\": 2, \"nic_start_ns\": 2000000, \"nic_end_ns\": 3000000"));
	assert_non_null(strstr(js, "\"clock_err_ns\": 7, \"gap\": 2"));
	assert_non_null(strstr(js, "\"epochs\": [0, 2, 4], \"bytes\": [33, 65, 97]"));
	/* an empty ring still writes valid, empty files */
	retention_free(&ag.ret);
	assert_int_equal(retention_init(&ag.ret, 1, 4096), 0);
	assert_int_equal(agent_dump(&ag, dir, err, sizeof err), 0);
	js = slurp(p);
	assert_non_null(strstr(js, "\"windows\": []"));
	/* unwritable */
	assert_int_equal(agent_dump(&ag, "/proc/nope/dir", err, sizeof err), -1);
	assert_non_null(strstr(err, "/proc/nope/dir"));
	retention_free(&ag.ret);
	snprintf(p, sizeof p, "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

static void test_metrics_text(void **st)
{
	(void)st;
	setup_agent(2);
	ag.nics[0].polls = 12;
	ag.nics[0].gaps[1] = 3;
	ag.nics[1].cs.err_ns = 1500;
	ag.nics[1].fw_stats[PULSE_STAT_DROP_NO_POOL] = 9;
	ag.nics[1].errs[ERR_REPEAT] = 4;
	size_t len;
	char *t = metrics_render(&ag, &len);
	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	assert_non_null(strstr(t, "# TYPE pulse_agent_polls counter\n"));
	assert_non_null(strstr(t, "pulse_agent_polls_total{nic=\"sim:/tmp/a,b\\\"c\"} 12\n"));
	assert_non_null(strstr(t, "pulse_agent_gaps_total{nic=\"sim:/tmp/a,b\\\"c\",reason=\"seq\"} 3\n"));
	assert_non_null(strstr(t, "pulse_agent_clock_sync_error_seconds{nic=\"mlx5_1\"} 0.000001500\n"));
	assert_non_null(strstr(t, "pulse_agent_nic_drops_total{nic=\"mlx5_1\",cause=\""));
	assert_non_null(strstr(t, "} 9\n"));
	assert_non_null(strstr(t, "pulse_agent_protocol_errors_total{nic=\"mlx5_1\",cause=\"repeat\"} 4\n"));
	assert_non_null(strstr(t, "pulse_agent_retention_windows 2\n"));
	assert_true(len > 6 && !strcmp(t + len - 6, "# EOF\n"));
	free(t);
	retention_free(&ag.ret);
}

static struct pulse_hook_record hrec(uint8_t kind, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.source = PULSE_HOOK_SRC_HOOK;
	r.version = PULSE_HOOK_RECORD_VERSION;
	r.pid = pid;
	r.tid = tid;
	r.time_ns = t;
	return r;
}

static void hqp(struct qp_map *m, uint8_t kind, uint32_t pid, uint32_t tid, uint64_t t, uint32_t qpn,
		uint32_t dest, uint8_t gid0, int result)
{
	struct pulse_hook_record r = hrec(kind, pid, tid, t);
	strcpy(r.u.qp.dev, "mlx5_0");
	r.u.qp.qpn = qpn;
	r.u.qp.dest_qpn = dest;
	r.u.qp.port = 1;
	r.u.qp.is_global = kind == PULSE_HOOK_QP_RTR;
	r.u.qp.remote_gid[0] = 0xfe;
	r.u.qp.remote_gid[1] = 0x80;
	r.u.qp.remote_gid[15] = gid0;
	r.u.qp.result = result;
	r.u.qp.gpu.cuda_dev = 3;
	qp_map_apply(m, &r);
}

static void hcomm(struct qp_map *m, uint8_t kind, uint32_t flags, uint32_t pid, uint64_t t, uint64_t id,
		  int rank, int nranks, uint64_t hash)
{
	struct pulse_hook_record r = hrec(kind, pid, pid, t);
	r.flags = flags;
	r.u.comm.comm_id = id;
	r.u.comm.rank = rank;
	r.u.comm.nranks = nranks;
	r.u.comm.nccl_hash = hash;
	r.u.comm.how = PULSE_HOOK_HOW_INIT_RANK;
	qp_map_apply(m, &r);
}

static void test_hook_map(void **st)
{
	(void)st;
	char path[] = "/tmp/pulse-hookmap-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(jsonl_open(path), 0);
	struct qp_map m;
	qp_map_init(&m);
	/* QP 7 created and connected inside comm A's init (started at t=100),
	 * by another thread (NCCL's proxy); QP 8 connected after the init, so no
	 * communicator; a failed RTR changes nothing; another process's QP 7. */
	hqp(&m, PULSE_HOOK_QP_CREATE, 10, 11, 150, 7, 0, 0, 0);
	hqp(&m, PULSE_HOOK_QP_RTR, 10, 11, 160, 7, 0x99, 0x42, 0);
	hqp(&m, PULSE_HOOK_QP_RTR, 10, 11, 170, 7, 0, 0, -1);
	hqp(&m, PULSE_HOOK_QP_CREATE, 20, 20, 180, 7, 0, 0, 0);
	hcomm(&m, PULSE_HOOK_COMM_INIT, 0, 10, 100, 0xabcdef0123456789ull, 3, 8, 0);
	hqp(&m, PULSE_HOOK_QP_CREATE, 10, 10, 300, 8, 0, 0, 0);
	hqp(&m, PULSE_HOOK_QP_RTR, 10, 10, 310, 8, 0x77, 0x43, 0);
	/* the profiler's annotation adds NCCL's hash, no second communicator */
	hcomm(&m, PULSE_HOOK_COMM_INIT, PULSE_HOOK_F_ANNOTATION, 10, 120, 0xabcdef0123456789ull, 3, 8,
	      0x5555);
	assert_int_equal(m.ncomms, 1);
	assert_int_equal(m.nqps, 3);
	assert_true(m.dirty);
	qp_map_emit(&m);
	assert_false(m.dirty);
	qp_map_emit(&m); /* unchanged: no second line */
	const char *t = slurp(path);
	assert_non_null(strstr(t, "{\"type\":\"hook_map\","));
	assert_null(strstr(strstr(t, "\n") + 1, "hook_map"));
	assert_non_null(strstr(t, "\"comm_id\":\"0xabcdef0123456789\",\"parent_id\":null,\"rank\":3,"
				  "\"nranks\":8,\"how\":\"init_rank\""));
	assert_non_null(strstr(t, "\"nccl_hash\":\"0x0000000000005555\""));
	assert_non_null(strstr(t, "{\"dev\":\"mlx5_0\",\"port\":1,\"qpn\":7,\"state\":\"rtr\",\"pid\":10,"
				  "\"tid\":11,\"comm_id\":\"0xabcdef0123456789\",\"rank\":3,\"remote_qpn\":153,"
				  "\"remote_gid\":\"fe80:0000:0000:0000:0000:0000:0000:0042\",\"gpu\":{\"cuda_dev\":3"));
	assert_non_null(strstr(t, "\"qpn\":8,\"state\":\"rtr\",\"pid\":10,\"tid\":10,\"comm_id\":null,"
				  "\"rank\":-1,\"remote_qpn\":119"));
	assert_non_null(strstr(t, "\"qpn\":7,\"state\":\"created\",\"pid\":20,"));
	/* destroy: kept, marked; the process exits: gone */
	hqp(&m, PULSE_HOOK_QP_DESTROY, 10, 10, 400, 8, 0, 0, 0);
	hcomm(&m, PULSE_HOOK_COMM_DESTROY, 0, 10, 410, 0xabcdef0123456789ull, 3, 8, 0);
	assert_int_equal(m.nqps, 3);
	assert_true(m.comms[0].destroyed);
	qp_map_drop_pid(&m, 10);
	assert_int_equal(m.nqps, 1);
	assert_int_equal(m.ncomms, 0);
	qp_map_emit(&m);
	t = slurp(path);
	assert_non_null(strstr(t, "\"version\":2,\"comms\":[],\"qps\":[{\"dev\":\"mlx5_0\",\"port\":0,"
				  "\"qpn\":7,\"state\":\"created\",\"pid\":20"));
	qp_map_free(&m);
	jsonl_close();
	unlink(path);

	/* the hook metrics */
	struct hooks h;
	memset(&h, 0, sizeof h);
	h.attached_total = 4;
	h.records = 1000;
	h.dropped = 7;
	h.attach_errors = 2;
	setup_agent(1);
	ag.hooks = &h;
	size_t len;
	char *x = metrics_render(&ag, &len);
	ag.hooks = NULL;
	assert_non_null(x);
	assert_non_null(strstr(x, "pulse_agent_hook_rings 0\n"));
	assert_non_null(strstr(x, "pulse_agent_hook_rings_attached_total 4\n"));
	assert_non_null(strstr(x, "pulse_agent_hook_records_total 1000\n"));
	assert_non_null(strstr(x, "pulse_agent_hook_records_dropped_total 7\n"));
	assert_non_null(strstr(x, "pulse_agent_hook_attach_errors_total 2\n"));
	free(x);
	retention_free(&ag.ret);
}

/* join_wait.c: a window with bytes on a QP whose remote end is not known
 * yet waits for the analyzer's JOIN, with every window after it, in order,
 * as a copy; the JOIN (the waiting list rebuilt empty) or the end of the
 * wait hands them to the association. */
static void one_flow_window(struct pulse_window *w, struct pulse_qp_series *f, uint32_t *ep, uint64_t *by,
			    uint32_t seq, uint32_t qpn, uint64_t bytes)
{
	memset(w, 0, sizeof *w);
	memset(f, 0, sizeof *f);
	w->window_seq = seq;
	w->complete = 1;
	w->epoch_ns = 32000;
	w->nic_start_ns = (uint64_t)seq * 1000000000ull;
	w->nic_end_ns = w->nic_start_ns + 1000000000ull;
	*ep = 10;
	*by = bytes;
	f->qpn = qpn;
	f->count = 1;
	f->epoch = ep;
	f->bytes = by;
	f->total_bytes = bytes;
	w->flows = f;
	w->flow_count = 1;
}

static void test_join_wait(void **st)
{
	(void)st;
	struct assoc_cfg cfg = {.host = "h0", .epoch_ns = 32000};
	struct assoc *as = assoc_new(&cfg);
	assert_non_null(as);
	/* QP 40 of a communicator, remote end unknown; QP 41 of none */
	struct assoc_qp q = {.nic = 0, .qpn = 40, .pid = 7, .comm_id = 0xc0, .rank = 0,
			     .remote_rank = -1, .remote_gpu = -1};
	assoc_qp(as, &q);
	const uint64_t S = 1000000000ull, T0 = 1000 * S;
	struct join_wait jw;
	memset(&jw, 0, sizeof jw);
	join_wait_reset(&jw);
	/* the wait: PULSE_AW_JOIN_WAIT_POLLS polls, and 5 s of wall at least
	 * (a 4x host clock: 20 s of it, 5 polls of 1 s too few) */
	assert_int_equal(agent_join_wait_ns(S, 1), PULSE_AW_JOIN_WAIT_POLLS * S);
	assert_int_equal(agent_join_wait_ns(S, 4), 20 * S);
	assert_int_equal(agent_join_wait_ns(S / 4, 1), 5 * S);
	const uint64_t W = agent_join_wait_ns(S, 1);
	assert_int_equal(join_wait_add(&jw, 0, 40, T0, W), 0); /* made at T0 */
	join_wait_sort(&jw);

	struct pulse_window w;
	struct pulse_qp_series f;
	uint32_t ep;
	uint64_t by;
	struct assoc_stats sa;
	one_flow_window(&w, &f, &ep, &by, 1, 40, 1000);
	assert_int_equal(join_wait_window(&jw, as, 0, &w, 0, 0, T0 + S), 1);
	/* a window on another QP waits behind it: the association takes a
	 * NIC's windows in time order */
	one_flow_window(&w, &f, &ep, &by, 2, 41, 500);
	assert_int_equal(join_wait_window(&jw, as, 0, &w, 0, 0, T0 + 2 * S), 1);
	by = 777777; /* the caller's buffer is reused: the held window is a copy */
	assoc_get_stats(as, &sa);
	assert_int_equal(sa.windows, 0);
	assert_int_equal(join_wait_release(&jw, as, T0 + 2 * S, 0), 0); /* no JOIN yet */

	/* the JOIN: QP 40 goes to rank 1, nothing waits any more */
	q.remote_rank = 1;
	q.remote_host = "h1";
	q.remote_gpu = 0;
	assoc_qp(as, &q);
	join_wait_reset(&jw);
	join_wait_sort(&jw);
	assert_int_equal(join_wait_release(&jw, as, T0 + 2 * S, 0), 2);
	assoc_get_stats(as, &sa);
	assert_int_equal(sa.windows, 2);
	assert_int_equal(sa.unknown_qp_bytes, 500); /* QP 41's, as held; QP 40's went to rank 1 */
	assert_int_equal(jw.released_unknown, 0);

	/* a QP the JOIN never names: its window goes over when the wait ends */
	assert_int_equal(join_wait_add(&jw, 0, 42, T0 + 10 * S, W), 0);
	join_wait_sort(&jw);
	one_flow_window(&w, &f, &ep, &by, 3, 42, 300);
	assert_int_equal(join_wait_window(&jw, as, 0, &w, 0, 0, T0 + 11 * S), 1);
	const uint64_t end = T0 + 10 * S + W;
	assert_true(join_wait_pending(&jw, end - 1));
	assert_int_equal(join_wait_release(&jw, as, end - 1, 0), 0);
	assert_int_equal(join_wait_release(&jw, as, end, 0), 1);
	assert_int_equal(jw.released_unknown, 1);
	assert_false(join_wait_pending(&jw, end));
	/* a window with no waiting QP's bytes and nothing held goes straight on */
	one_flow_window(&w, &f, &ep, &by, 4, 41, 100);
	assert_int_equal(join_wait_window(&jw, as, 0, &w, 0, 0, end), 0);
	assoc_get_stats(as, &sa);
	assert_int_equal(sa.windows, 4);
	assert_int_equal(jw.held, 3);
	join_wait_free(&jw);
	assoc_free(as);
}

int main(void)
{
	agent_log_open(NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),    cmocka_unit_test(test_options),
		cmocka_unit_test(test_clock_sync),   cmocka_unit_test(test_retention),
		cmocka_unit_test(test_dump),         cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_hook_map),     cmocka_unit_test(test_series_answer),
		cmocka_unit_test(test_join_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
