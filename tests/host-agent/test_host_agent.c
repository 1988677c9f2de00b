/* pulse-host-agent unit tests: option parsing, clock sync, the retention
 * ring (age, hard cap, oversize), the dump format and the metrics text. */
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

#include "../../host-agent/agent.h"

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

int main(void)
{
	agent_log_open(NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),    cmocka_unit_test(test_options),
		cmocka_unit_test(test_clock_sync),   cmocka_unit_test(test_retention),
		cmocka_unit_test(test_dump),         cmocka_unit_test(test_metrics_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
