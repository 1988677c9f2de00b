/* pulse-host-agent: wiring. Parses options, opens every NIC (lock file,
 * transport), starts the outputs, runs the scheduler until a signal, and
 * shuts down in order: outputs flushed, threads joined, locks released. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "replay_links.h"
#include "analyzer_link.h"
#include "pulse/bus.h"
#include "assoc.h"
#include "probe.h"
#include "rdma.h"

static struct agent agent; /* large; one per process */
static struct hooks hooks;
static struct agent_join join;

static void alink_log(void *ctx, const char *level, const char *msg)
{
	(void)ctx;
	agent_log(level, "analyzer: %s", msg);
}

static void set_host_name(struct agent *a)
{
	if (a->opt.host_name) {
		snprintf(a->host_name, sizeof a->host_name, "%s", a->opt.host_name);
		return;
	}
	if (gethostname(a->host_name, sizeof a->host_name - 1) != 0 || !a->host_name[0])
		snprintf(a->host_name, sizeof a->host_name, "unknown");
	a->host_name[sizeof a->host_name - 1] = '\0';
}

/* One replay: every host of the run, or one (--host), the latter
 * publishing to the bus with --bus. */
static int replay_one(struct agent *a)
{
	int per_host = a->opt.out_path && strstr(a->opt.out_path, "{host}");
	if (!per_host && !a->opt.replay_child && a->opt.out_path && strcmp(a->opt.out_path, "-")) {
		/* a replay is one run: a fresh file (live --out appends) */
		FILE *f = fopen(a->opt.out_path, "w");
		if (f)
			fclose(f);
	}
	if (a->opt.bus) {
		snprintf(a->host_name, sizeof a->host_name, "%s", a->opt.replay_host);
		if (agent_bus_open(a))
			return 2;
		jsonl_set_wrap(agent_out_wrap, a);
	}
	if (!per_host && jsonl_open(a->opt.out_path))
		return 1;
	int status = agent_replay(a);
	if (jsonl_close() && !status)
		status = 1; /* a replay whose output is incomplete did not happen */
	agent_bus_close(a, a->bus_seq + 1); /* the lines after the last poll */
	return status;
}

/* --replay DIR: no NIC, no daemon outputs; replay.c does the rest. */
static int replay_main(struct agent *a)
{
	agent_log_open(a->opt.log_path);
	pthread_mutex_init(&a->lock, NULL);
	a->start_realtime_ns = agent_realtime_ns();
	if (a->opt.metrics_listen || a->opt.control_path || a->opt.dump_path || a->opt.hook_dir)
		LOGW("--replay: --metrics-listen, --control, --dump-path and --hook-dir do not apply "
		     "to a replay and are ignored");
	agent_signals_install();
	if (!a->opt.bus || a->opt.replay_host)
		return replay_one(a);
	/* every host in a process of its own: their lines in one file would mix */
	if (a->opt.out_path && !strstr(a->opt.out_path, "{host}") && strcmp(a->opt.out_path, "/dev/null")) {
		LOGE("--replay with --bus replays every host in a process of its own: give --out with "
		     "{host} in it (one file per host), or --host H");
		return 2;
	}
	if (!a->opt.out_path)
		a->opt.out_path = "/dev/null"; /* the bus has the lines */
	return agent_replay_fork(a, replay_one);
}

static int no_nic_message(void)
{
	fprintf(stderr,
		"pulse-host-agent: no NIC to poll: give --device IBDEV for a BlueField-3 (DOCA PCC) or "
		"--sim SOCKET for a simulated NIC.\n");
	if (!pulse_doca_available())
		fprintf(stderr, "This build has no DOCA SDK support, so only --sim works here.\n");
	else
		fprintf(stderr, "No DOCA device with PCC support was found on this host.\n");
	fprintf(stderr,
		"To run against the simulator (no hardware needed):\n"
		"  sim/run_trace --serve /tmp/nic0.sock --loop tests/traces/ring.pcap &\n"
		"  pulse-host-agent --sim /tmp/nic0.sock --poll 1s\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct agent *a = &agent;
	int rc = agent_parse_options(&a->opt, argc, argv);
	if (rc == 1)
		return 0;
	if (rc)
		return 2;
	if (a->opt.replay_dir)
		return replay_main(a);
	if (a->opt.list_devices) {
		/* what this host (or --sysfs-root) has; problems on stderr */
		agent_log_open(NULL);
		static struct rdma_inventory inv;
		probe_discover(&inv, a->opt.sysfs_root, 1);
		static struct rdma_finding fs[64];
		int nf = rdma_findings_pcie(&inv, fs, 64);
		rdma_print_inventory(stdout, &inv, fs, nf);
		fputs("GPU pairing: from the hook's records while the agent runs (log line \"GPU pairing\", "
		      "\"config_finding\" lines)\n",
		      stdout);
		return 0;
	}
	set_host_name(a);
	static char devs[AGENT_MAX_NICS][64];
	if (a->opt.device_auto && !pulse_doca_available()) {
		fprintf(stderr, "pulse-host-agent: --device auto needs a build with the DOCA SDK (this one has "
				"none); use --sim SOCKET for a simulated NIC\n");
		return 1;
	}
	if (a->opt.nnics == 0 && (a->opt.device_auto || a->opt.nnetdevs == 0 || pulse_doca_available())) {
		/* No NIC named: every DOCA device with PCC, when there are any. */
		char err[200] = "";
		int n = pulse_doca_available() ? pulse_doca_list_devices(devs, AGENT_MAX_NICS, err, sizeof err)
					       : 0;
		if (n <= 0 && (a->opt.device_auto || a->opt.nnetdevs == 0))
			return no_nic_message();
		if (n < 0)
			n = 0;
		for (int i = 0; i < n && i < AGENT_MAX_NICS; i++) {
			a->opt.kind[i] = NIC_DOCA;
			a->opt.target[i] = devs[i];
			a->opt.dev[i] = devs[i];
		}
		a->opt.nnics = n < AGENT_MAX_NICS ? n : AGENT_MAX_NICS;
	}
	agent_log_open(a->opt.log_path);
	pthread_mutex_init(&a->lock, NULL);
	a->start_realtime_ns = agent_realtime_ns();
	if (retention_init(&a->ret, a->opt.retain_ns, a->opt.retain_mem)) {
		LOGE("out of memory");
		return 1;
	}
	/* Signals go to the main thread only: block them while the helper
	 * threads start (they inherit the mask), unblock after. */
	sigset_t sigs, old;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	agent_signals_install();

	int status = 0;
	char err[600];
	for (int i = 0; i < a->opt.nnics; i++) {
		for (int j = 0; j < a->nnics; j++)
			if (!strcmp(a->opt.target[i], a->nics[j].target)) {
				LOGE("%s is given twice", a->opt.target[i]);
				status = 2;
				goto out;
			}
		if (nic_open(a, &a->nics[a->nnics], a->opt.kind[i], a->opt.target[i], err, sizeof err)) {
			LOGE("%s", err);
			nic_close(&a->nics[a->nnics]);
			status = 1;
			goto out;
		}
		if (a->opt.dev[i])
			snprintf(a->nics[a->nnics].dev, sizeof a->nics[a->nnics].dev, "%s", a->opt.dev[i]);
		a->nnics++;
	}
	if (a->opt.analyzer) {
		struct alink_cfg lc = {.addr = a->opt.analyzer, .job = a->opt.job, .host = a->host_name,
				       .on_join = agent_on_join, .on_series = agent_on_series,
				       .log = alink_log, .ctx = a,
				       .records_direct = 1};
		a->alink = alink_new(&lc, err, sizeof err);
		if (!a->alink) {
			LOGE("--analyzer %s: %s", a->opt.analyzer, err);
			status = 2;
			goto out;
		}
		LOGI("analyzer: sending every line to %s (job %s, host %s)", a->opt.analyzer,
		     a->opt.job ? a->opt.job : "default", a->host_name);
	}
	if (a->opt.bus && agent_bus_open(a)) {
		status = 2;
		goto out;
	}
	if (a->alink || a->bus)
		jsonl_set_wrap(agent_out_wrap, a);
	if (jsonl_open(a->opt.out_path)) {
		status = 1;
		goto out;
	}
	static struct replay_links sim_links;
	if (a->opt.sim_links) {
		if (replay_links_load(&sim_links, a->opt.sim_links, a->host_name)) {
			status = 2;
			goto out;
		}
		a->sim_links = &sim_links;
		LOGI("--sim-links %s: %u link events of simulated host %s, given out on its clock%s",
		     a->opt.sim_links, sim_links.n, a->host_name,
		     sim_links.bad ? " (lines skipped: see above)" : "");
	}
	if (!a->opt.no_hooks) {
		if (hooks_init(&hooks, a->opt.hook_dir, err, sizeof err) == 0) {
			a->hooks = &hooks;
			if (a->bus) {
				hooks.map.on_line = agent_bus_map_line;
				hooks.map.on_line_ctx = a;
			}
			LOGI("interception rings: looking in %s every poll", hooks.dir);
		} else if (a->opt.hook_dir) {
			LOGE("%s", err);
			status = 2;
			goto out;
		} else {
			LOGW("%s: interception rings are not drained (--no-hooks silences this)", err);
		}
	}
	/* this host's RDMA devices, findings, links, the kernel's QPs */
	probe_start(a);
	if (a->nnics == 0)
		LOGI("no NIC to poll: only the links%s are watched",
		     a->opt.no_netlink ? "" : " (and the kernel's QP list, where there is one)");
	/* the association: this host's operators from its windows and calls */
	struct assoc_cfg acfg = {.host = a->host_name, .epoch_ns = a->opt.epoch_ns,
				 .hang_ns = a->opt.hang_ns,
				 .call_lag_ns = (uint64_t)((double)ASSOC_CALL_LAG_NS * a->opt.clock_rate)};
	a->join = &join;
	a->assoc = assoc_new(&acfg);
	if (!a->assoc)
		LOGE("the association could not start (out of memory): no \"op\" records");
	if (a->opt.metrics_listen && metrics_start(a, a->opt.metrics_listen, err, sizeof err)) {
		LOGE("%s", err);
		status = 1;
		goto out;
	}
	if (a->opt.control_path && control_start(a, a->opt.control_path, err, sizeof err)) {
		LOGE("%s", err);
		status = 1;
		goto out;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	LOGI("started: %d NIC(s), poll %.3f s, epoch %u ns, exchange timeout %u ms, retain %.1f s "
	     "within %llu bytes%s%s%s%s",
	     a->nnics, (double)a->opt.poll_ns / 1e9, a->opt.epoch_ns, a->opt.timeout_ms,
	     (double)a->opt.retain_ns / 1e9, (unsigned long long)a->opt.retain_mem,
	     a->opt.metrics_listen ? ", metrics on " : "",
	     a->opt.metrics_listen ? a->opt.metrics_listen : "",
	     a->opt.control_path ? ", control socket " : "",
	     a->opt.control_path ? a->opt.control_path : "");
	agent_run(a);
	LOGI("stopping%s: %llu cycles, %llu overruns, %u windows retained (%llu bytes, %llu dropped "
	     "at the cap)",
	     agent_sig_term ? " on signal" : "", (unsigned long long)a->cycles,
	     (unsigned long long)a->overruns, a->ret.count, (unsigned long long)a->ret.mem,
	     (unsigned long long)a->ret.dropped_cap);
	for (int i = 0; i < a->nnics; i++) {
		const struct agent_nic *n = &a->nics[i];
		LOGI("%s: %llu polls, %llu windows (%llu incomplete), %llu gaps, %llu upload bytes, "
		     "errors: transport %llu version %llu short %llu repeat %llu count_changed %llu "
		     "window %llu status %llu",
		     n->name, (unsigned long long)n->polls, (unsigned long long)n->windows,
		     (unsigned long long)n->windows_incomplete, (unsigned long long)n->gaps_total,
		     (unsigned long long)n->upload_bytes, (unsigned long long)n->errs[ERR_TRANSPORT],
		     (unsigned long long)n->errs[ERR_VERSION], (unsigned long long)n->errs[ERR_SHORT],
		     (unsigned long long)n->errs[ERR_REPEAT],
		     (unsigned long long)n->errs[ERR_COUNT_CHANGED],
		     (unsigned long long)n->errs[ERR_WINDOW], (unsigned long long)n->errs[ERR_STATUS]);
	}
	if (a->hooks)
		LOGI("hook rings: %llu attached, %llu detached, %llu records drained (%llu operators), "
		     "%llu dropped, %llu attach errors",
		     (unsigned long long)hooks.attached_total, (unsigned long long)hooks.detached_total,
		     (unsigned long long)hooks.records, (unsigned long long)hooks.ops,
		     (unsigned long long)hooks.dropped, (unsigned long long)hooks.attach_errors);
	struct assoc_stats ast = {0};
	assoc_get_stats(a->assoc, &ast);
	if (ast.late_calls)
		LOGI("interception: %llu call(s) reached the agent later than the association waited "
		     "for them (%.1f ms of host clock after they were made)",
		     (unsigned long long)ast.late_calls, (double)assoc_call_lag_ns(a->assoc) / 1e6);
	if (a->jwait.held)
		LOGI("analyzer JOIN: %llu windows waited for it, %llu handed over with a remote end still "
		     "unknown, %llu early (too many waiting), %llu not held (no memory)",
		     (unsigned long long)a->jwait.held, (unsigned long long)a->jwait.released_unknown,
		     (unsigned long long)a->jwait.released_cap, (unsigned long long)a->jwait.not_held);
out:
	control_stop();
	metrics_stop();
	probe_stop(a);
	if (a->hooks) {
		hooks_close(a, a->hooks);
		a->hooks = NULL;
	}
	join_wait_free(&a->jwait); /* windows still held go nowhere: the agent stops */
	if (a->assoc)
		assoc_free(a->assoc);
	a->assoc = NULL;
	agent_join_free(&join);
	a->join = NULL;
	jsonl_close();
	if (a->alink) {
		struct alink_stats ls;
		alink_get_stats(a->alink, &ls);
		LOGI("analyzer: %llu lines, %llu frames sent (%llu bytes), %llu dropped at the queue cap, "
		     "%llu joins received, %llu series requests (%llu answered, %llu refused), %llu connects, "
		     "%llu disconnects",
		     (unsigned long long)ls.lines, (unsigned long long)ls.frames_sent,
		     (unsigned long long)ls.bytes_sent, (unsigned long long)ls.queue_dropped,
		     (unsigned long long)ls.joins, (unsigned long long)ls.series_reqs,
		     (unsigned long long)ls.series_sent, (unsigned long long)ls.series_bad,
		     (unsigned long long)ls.connects, (unsigned long long)ls.disconnects);
		alink_close(a->alink, 1000); /* what is queued, and BYE, for at most 1 s */
		a->alink = NULL;
	}
	agent_bus_close(a, agent_realtime_ns());
	if (a->sim_links) {
		replay_links_free(a->sim_links);
		a->sim_links = NULL;
	}
	for (int i = 0; i < a->nnics; i++)
		nic_close(&a->nics[i]);
	retention_free(&a->ret);
	return status;
}
