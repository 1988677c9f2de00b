/* pulse-host-agent benchmark: CPU time per poll and resident memory with
 * 30 s of retention, for 2000 active flows at 32 us epochs.
 *
 * A child process runs the real firmware core behind the Unix-socket mailbox
 * (like run_trace --serve); before answering each POLL it feeds one 1 s
 * window of TX events (2000 QPs, each active in K epochs of the window's
 * 31250, one 4 KiB event per active epoch) and closes the window 1 s of NIC
 * time later. The parent is the agent alone: its nic_cycle() (POLL, drain
 * every page, decode, clock sync, retention ring, JSON line to /dev/null,
 * STATS) is timed with the process CPU clock, so the firmware's work is not
 * counted. 30 polls fill a 30-window ring = 30 s of retention at --poll 1s
 * (timed as "filling": every window's memory is new), then 30 more run in
 * steady state (each poll frees the oldest window); the parent's
 * VmRSS/VmHWM are read at the end.
 *
 *   bench_host_agent [K...]   (default: 16 128 1024) */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../host-agent/agent.h"
#include "pulse/nic_agent.h"

#define FLOWS 2000u
#define EPOCH_NS 32000u
#define WINDOW_NS 1000000000u
#define EPOCHS (WINDOW_NS / EPOCH_NS)
#define POLLS 30 /* fill the ring, then as many again in steady state */

struct srv {
	struct pulse_fw *fw;
	uint64_t nic_now; /* NIC time, 64-bit; the firmware sees the low 32 bits */
	uint32_t k;
	struct pulse_tx_event *ev;
};

static int handle(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp, uint32_t cap,
		  uint32_t *resp_len)
{
	struct srv *s = ctx;
	if (req_len >= PULSE_MB_HEADER_SIZE && req[3] == PULSE_MB_POLL) {
		/* one window of traffic: each flow active in k epochs spread over the window */
		uint64_t w0 = s->nic_now;
		uint32_t stride = EPOCHS / s->k;
		uint32_t n = 0;
		for (uint32_t e = 0; e < s->k; e++) {
			for (uint32_t f = 0; f < FLOWS; f++) {
				uint32_t ep = e * stride + (f % stride);
				s->ev[n++] = (struct pulse_tx_event){
					.qpn = 0x1000 + f * 7, .sent_32b = 128, .sent_pkts = 1,
					.ts_ns = (uint32_t)(w0 + (uint64_t)ep * EPOCH_NS + 1000)};
			}
		}
		/* events of one epoch are in flow order, epochs ascending */
		for (uint32_t i = 0; i < n; i += 4096)
			pulse_fw_on_tx_burst(s->fw, 0, s->ev + i, n - i < 4096 ? n - i : 4096);
		s->nic_now += WINDOW_NS;
	}
	pulse_fw_mailbox(s->fw, req, req_len, resp, cap, resp_len, (uint32_t)s->nic_now);
	return *resp_len ? 0 : -1;
}

static void child(const char *path, uint32_t k)
{
	struct pulse_fw_limits lim = {.max_flows = 4096, .pool_blocks = 1u << 17, .max_threads = 1,
				      .platform = PULSE_PLATFORM_X86_SIM, .instance_id = 42};
	size_t sz = pulse_fw_memory_size(&lim);
	void *mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	struct srv s = {.k = k};
	s.fw = mem ? pulse_fw_init(mem, sz, &lim, 0) : NULL;
	s.ev = malloc((size_t)FLOWS * k * sizeof *s.ev);
	struct pulse_unix_server u;
	if (!s.fw || !s.ev || pulse_unix_server_open(&u, path, PULSE_MB_MAX_MESSAGE)) {
		fprintf(stderr, "bench: server setup failed\n");
		_exit(1);
	}
	for (;;)
		if (pulse_unix_server_step(&u, 100, handle, &s) < 0)
			_exit(1);
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key) + 1);
	if (f)
		fclose(f);
	return v;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double sys_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static struct agent ag;

static int run(uint32_t k)
{
	char dir[] = "/tmp/pulse-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char path[64];
	snprintf(path, sizeof path, "%s/nic.sock", dir);
	pid_t pid = fork();
	if (pid == 0)
		child(path, k);
	for (int i = 0; i < 200 && access(path, F_OK); i++)
		usleep(10000);
	memset(&ag, 0, sizeof ag);
	pthread_mutex_init(&ag.lock, NULL);
	ag.opt.poll_ns = WINDOW_NS;
	ag.opt.epoch_ns = EPOCH_NS;
	ag.opt.page_bytes = 65535 - PULSE_MB_HEADER_SIZE;
	ag.opt.timeout_ms = 20000; /* the child feeds a whole window before answering */
	ag.opt.lock_dir = dir;
	retention_init(&ag.ret, 30ull * 1000000000u, 256ull << 20);
	char err[300];
	if (nic_open(&ag, &ag.nics[0], NIC_SIM, path, err, sizeof err)) {
		fprintf(stderr, "bench: %s\n", err);
		return 1;
	}
	ag.nnics = 1;
	jsonl_open("/dev/null");
	nic_cycle(&ag, &ag.nics[0]); /* handshake + CONFIGURE */
	double fill = 0, sum = 0, max = 0, sys0 = 0;
	uint64_t up0 = 0;
	int n = 0;
	for (int p = 0; p < 2 * POLLS; p++) {
		if (p == POLLS) {
			/* 30 windows held = 30 s at --poll 1s. From here on each
			 * poll frees the oldest window as it adds one, as expiry
			 * by age does in a daemon that has run 30 s: the cap is
			 * set to what the ring holds now, plus one window. */
			ag.ret.cap_bytes = ag.ret.mem + ag.ret.mem / ag.ret.count;
			up0 = ag.nics[0].upload_bytes;
			sys0 = sys_s();
		}
		double c0 = cpu_s();
		nic_cycle(&ag, &ag.nics[0]);
		double c = cpu_s() - c0;
		if (p == 0)
			continue; /* the first window started at CONFIGURE: not a full one */
		if (p < POLLS) {
			fill += c;
			continue;
		}
		sum += c;
		if (c > max)
			max = c;
		n++;
	}
	double sys = (sys_s() - sys0) / n;
	struct agent_nic *nic = &ag.nics[0];
	uint64_t up = (nic->upload_bytes - up0) / (uint64_t)n;
	printf("| %u | %u | %.0f | %.2f | %.2f (%.2f in the kernel) | %.2f | %.2f | %u | %.2f | %.1f | %ld | %ld |\n", FLOWS, k,
	       (double)FLOWS * k, fill / (POLLS - 1) * 1e3, sum / n * 1e3, sys * 1e3, max * 1e3, sum / n * 100.0,
	       nic->last_flows, (double)up / 1e6, (double)ag.ret.mem / 1048576.0,
	       status_kb("VmRSS:") / 1024, status_kb("VmHWM:") / 1024);
	if (nic->windows != 2 * POLLS || nic->windows_incomplete || nic->gaps_total > 0 ||
	    nic->last_flows != FLOWS) {
		fprintf(stderr, "bench: windows %llu incomplete %llu gaps %llu flows %u: not a clean run\n",
			(unsigned long long)nic->windows, (unsigned long long)nic->windows_incomplete,
			(unsigned long long)nic->gaps_total, nic->last_flows);
		return 1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	nic_close(nic);
	retention_free(&ag.ret);
	jsonl_close();
	unlink(path);
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf %s", dir);
	return system(rm) ? 1 : 0;
}

int main(int argc, char **argv)
{
	agent_log_open("/dev/null");
	uint32_t ks[8] = {16, 128, 1024};
	int nk = 3;
	if (argc > 1) {
		nk = 0;
		for (int i = 1; i < argc && nk < 8; i++)
			ks[nk++] = (uint32_t)atoi(argv[i]);
	}
	printf("pulse-host-agent, one NIC, --poll 1s --epoch 32us, %d polls (first excluded), "
	       "30 s retention (30 windows in the ring)\n\n",
	       POLLS);
	printf("| flows | active epochs per flow per window | records per window | CPU ms per poll, "
	       "ring filling | CPU ms per poll, steady (mean) | steady max | %% of a core | QPs in window "
	       "| upload MB per poll | ring MiB | VmRSS MiB | VmHWM MiB |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	int rc = 0;
	for (int i = 0; i < nk; i++) {
		if (ks[i] == 0 || ks[i] > EPOCHS) {
			fprintf(stderr, "bench: K must be 1..%u\n", EPOCHS);
			return 2;
		}
		fflush(stdout);
		rc |= run(ks[i]);
	}
	return rc;
}
