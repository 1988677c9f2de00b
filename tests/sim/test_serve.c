/* The Unix-socket mailbox transport (mailbox/transport_unix.c) and
 * `run_trace --serve`: a separate process serves the firmware; this test
 * polls it over the socket with pulse_nic_client, as the host agent will,
 * and checks the epochs against the capture. */
#include "sim_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "../../tools/tracegen/tracegen.h"
#include "pulse/le.h"
#include "pulse/transport_unix.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t fake_now;
static uint64_t fake_clock(void) { return fake_now; }

/* ---- transport, both ends in this process ---- */
struct srv_thread {
	struct pulse_unix_server srv;
	struct pulse_fw *fw;
	void *mem;
	volatile int stop;
	volatile int mute; /* accept, read, never answer */
	uint32_t now;
	pthread_t th;
};

static int fw_handler(void *ctx, const uint8_t *req, uint32_t len, uint8_t *resp, uint32_t cap,
		      uint32_t *rlen)
{
	struct srv_thread *s = ctx;
	s->now += 1000000; /* 1 ms of NIC time per request */
	pulse_fw_mailbox(s->fw, req, len, resp, cap, rlen, s->now);
	return 0;
}

static void *srv_main(void *arg)
{
	struct srv_thread *s = arg;
	while (!s->stop) {
		if (s->mute) {
			sleep_ms(5);
			continue;
		}
		pulse_unix_server_step(&s->srv, 10, fw_handler, s);
	}
	return NULL;
}

static void srv_start(struct srv_thread *s, const char *path)
{
	memset(s, 0, sizeof *s);
	struct pulse_fw_limits lim = {.max_flows = 64, .pool_blocks = 256, .max_threads = 1,
				      .platform = PULSE_PLATFORM_X86_SIM, .instance_id = 7};
	size_t n = pulse_fw_memory_size(&lim);
	s->mem = aligned_alloc(64, (n + 63) & ~(size_t)63);
	assert_non_null(s->mem);
	s->fw = pulse_fw_init(s->mem, n, &lim, 0);
	assert_non_null(s->fw);
	assert_int_equal(pulse_unix_server_open(&s->srv, path, 4096), 0);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv_thread *s)
{
	s->stop = 1;
	pthread_join(s->th, NULL);
	pulse_unix_server_close(&s->srv);
	free(s->mem);
}

static int raw_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_transport_roundtrip(void **st)
{
	(void)st;
	char *dir = tmpdir_make();
	char path[600];
	snprintf(path, sizeof path, "%s/nic.sock", dir);
	struct srv_thread s;
	srv_start(&s, path);
	struct pulse_unix_client uc;
	assert_int_equal(pulse_unix_client_init(&uc, path), 0);
	struct pulse_nic_client c;
	assert_int_equal(pulse_nic_client_init(&c, pulse_unix_exchange, &uc, 4096, 1000), 0);
	assert_int_equal(pulse_nic_hello(&c), PULSE_NIC_OK);
	assert_int_equal(c.hello.instance_id, 7);
	assert_int_equal(c.hello.platform, PULSE_PLATFORM_X86_SIM);
	struct pulse_mb_config cfg = {.epoch_ns = 16000, .window_ns = 50000000, .page_bytes = 4096};
	assert_int_equal(pulse_nic_configure(&c, &cfg), PULSE_NIC_OK);
	assert_int_equal(c.hello.epoch_ns, 16000);
	/* events straight into the core, read back over the socket */
	struct pulse_tx_event ev = {.qpn = 0x123, .sent_32b = 128, .sent_pkts = 1};
	for (int i = 0; i < 10; i++) {
		ev.ts_ns = s.now + 100000u * (uint32_t)i;
		pulse_fw_on_tx(s.fw, 0, &ev);
	}
	struct pulse_window w;
	pulse_window_init(&w);
	fake_now = 42;
	assert_int_equal(pulse_nic_poll(&c, 0, fake_clock, &w), PULSE_NIC_OK);
	assert_true(w.complete);
	const struct pulse_qp_series *q = pulse_window_find(&w, 0x123);
	assert_non_null(q);
	assert_int_equal(q->total_bytes, 10 * 128 * 32);
	assert_int_equal(w.host_send_ns, 42);
	uint64_t stats[PULSE_STAT_COUNT];
	uint32_t cnt = 0;
	assert_int_equal(pulse_nic_stats(&c, stats, PULSE_STAT_COUNT, &cnt), PULSE_NIC_OK);
	assert_int_equal(stats[PULSE_STAT_EVENTS], 10);
	assert_int_equal(uc.connects, 1);

	/* a frame whose length is below the header: E_TRUNCATED, then hung up */
	int fd = raw_connect(path);
	uint8_t bad[12] = {0x50, 0x4C, 1, 1, 4, 0, 9, 0, 0, 0, 0, 0};
	pulse_unix_client_close(&uc); /* one client at a time: let the raw one in */
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bad, sizeof bad), 12);
	uint8_t resp[64];
	ssize_t n = read(fd, resp, sizeof resp);
	assert_int_equal(n, 12);
	assert_int_equal(pulse_get_u16(resp + 8), PULSE_MB_E_TRUNCATED);
	assert_int_equal(resp[3], 1 | PULSE_MB_RESPONSE);
	assert_int_equal(pulse_get_u16(resp + 6), 9);
	assert_int_equal(read(fd, resp, sizeof resp), 0); /* closed */
	close(fd);
	/* wrong magic: E_MAGIC */
	fd = raw_connect(path);
	bad[0] = 0x12;
	bad[4] = 12;
	assert_int_equal(write(fd, bad, sizeof bad), 12);
	assert_int_equal(read(fd, resp, sizeof resp), 12);
	assert_int_equal(pulse_get_u16(resp + 8), PULSE_MB_E_MAGIC);
	close(fd);
	/* a request in two pieces is reassembled */
	fd = raw_connect(path);
	uint8_t hello[12];
	assert_int_equal(pulse_mb_build_request(hello, sizeof hello, PULSE_MB_HELLO, 77, NULL, 0), 12);
	assert_int_equal(write(fd, hello, 5), 5);
	sleep_ms(30);
	assert_int_equal(write(fd, hello + 5, 7), 7);
	assert_true(read(fd, resp, sizeof resp) >= 12);
	assert_int_equal(pulse_get_u16(resp + 6), 77);
	assert_int_equal(pulse_get_u16(resp + 8), PULSE_MB_OK);
	close(fd);
	sleep_ms(30);
	/* the client reconnects by itself after its connection was dropped */
	assert_int_equal(pulse_nic_hello(&c), PULSE_NIC_OK);
	assert_int_equal(uc.connects, 2);
	assert_true(s.srv.bad_frames >= 2);

	/* a NIC that stops answering: the exchange times out, within its budget */
	s.mute = 1;
	sleep_ms(20);
	uint64_t t0 = mono_ms();
	c.timeout_ms = 150;
	assert_int_equal(pulse_nic_hello(&c), PULSE_NIC_ETRANSPORT);
	uint64_t took = mono_ms() - t0;
	assert_true(took >= 140 && took < 1000);
	assert_true(uc.failures >= 1);
	s.mute = 0;
	c.timeout_ms = 1000;
	sleep_ms(20);
	assert_int_equal(pulse_nic_hello(&c), PULSE_NIC_OK);

	pulse_window_free(&w);
	pulse_nic_client_free(&c);
	pulse_unix_client_close(&uc);
	srv_stop(&s);
	/* nobody listening: a clear failure after the timeout */
	assert_int_equal(pulse_unix_client_init(&uc, path), 0);
	uint32_t rl;
	t0 = mono_ms();
	assert_int_equal(pulse_unix_exchange(&uc, hello, 12, resp, sizeof resp, &rl, 100), -1);
	assert_true(mono_ms() - t0 >= 90);
	assert_non_null(strstr(uc.last_error, "connect"));
	/* a path too long for a Unix socket */
	char longp[200];
	memset(longp, 'x', sizeof longp - 1);
	longp[sizeof longp - 1] = 0;
	assert_int_equal(pulse_unix_client_init(&uc, longp), -1);
	struct pulse_unix_server srv;
	assert_int_equal(pulse_unix_server_open(&srv, longp, 4096), -1);
	/* never replaces a file that is not a socket */
	char reg[600];
	snprintf(reg, sizeof reg, "%s/regular", dir);
	fclose(fopen(reg, "w"));
	assert_int_equal(pulse_unix_server_open(&srv, reg, 4096), -1);
	assert_non_null(strstr(srv.last_error, "not a socket"));
	tmpdir_remove(dir);
}

/* ---- run_trace --serve in its own process ---- */
static const char *bin_path(void)
{
	static char p[512];
	const char *b = getenv("BUILD");
	snprintf(p, sizeof p, "%s/bin/pulse-run-trace", b && *b ? b : "build");
	return p;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* 40 ms of one QP writing at 10 Gb/s, whole 4096-byte packets only, so
 * that every packet is its own TX event and lands in its own epoch */
static void write_capture(const char *cap, struct tg_result *res)
{
	struct tg_cfg g;
	tg_cfg_default(&g);
	g.pattern = TG_WRITE;
	g.channels = 1;
	g.gbps = 10;
	g.duration_ns = 40000000;
	g.msg = 64u << 10;
	g.snaplen = 128;
	char err[256];
	assert_int_equal(tg_generate(&g, cap, res, err, sizeof err), 0);
}

/* Starts run_trace --serve (argv) and says HELLO to it on sock. */
static pid_t serve_and_hello(char **argv, const char *sock, struct pulse_unix_client *uc,
			     struct pulse_nic_client *nc)
{
	pid_t pid = spawn(argv);
	assert_true(pid > 0);
	assert_int_equal(pulse_unix_client_init(uc, sock), 0);
	assert_int_equal(pulse_nic_client_init(nc, pulse_unix_exchange, uc, 4096, 3000), 0);
	if (pulse_nic_hello(nc) != PULSE_NIC_OK)
		fail_msg("HELLO to run_trace --serve: %s / %s", nc->last_error, uc->last_error);
	return pid;
}

static void test_serve_epochs(void **st)
{
	(void)st;
	if (!have_file(bin_path())) {
		print_message("%s not built: skipped\n", bin_path());
		skip();
	}
	char *dir = tmpdir_make();
	char cap[600], sock[600];
	snprintf(cap, sizeof cap, "%s/w.pcap", dir);
	snprintf(sock, sizeof sock, "%s/nic.sock", dir);
	struct tg_result res;
	char err[256];
	write_capture(cap, &res);
	/* what the capture says, per packet: NIC time (the served NIC's clock
	 * is 0 at the capture's first packet) and wire bytes */
	struct sim_cfg c;
	sim_cfg_default(&c);
	struct sim_trace t;
	sim_trace_init(&t, &c);
	assert_int_equal(sim_trace_scan(&t, cap, err, sizeof err), SIM_EXIT_OK);
	uint32_t npk = 0;
	uint64_t *pt = malloc(sizeof(uint64_t) * 20000), *pb = malloc(sizeof(uint64_t) * 20000);
	struct sim_pcap in;
	assert_int_equal(sim_pcap_open(&in, cap), SIM_EXIT_OK);
	const uint8_t *d;
	uint32_t cl, wl;
	uint64_t ts, total = 0;
	struct pulse_roce_pkt k;
	while (sim_pcap_next(&in, &d, &cl, &wl, &ts) == 1) {
		assert_int_equal(pulse_roce_decode(d, cl, wl, in.link, &k), PULSE_ROCE_OK);
		if (sim_is_ctl(&k))
			continue;
		assert_true(k.wire_len >= 4096 && npk < 20000);
		pt[npk] = ts - t.first_ns;
		pb[npk] = k.wire_len;
		total += k.wire_len;
		npk++;
	}
	sim_pcap_close(&in);
	sim_trace_free(&t);

	char *argv[] = {(char *)bin_path(), "--serve", sock, "--speed", "0.5", "--exit-after", "30s",
			cap, NULL};
	struct pulse_unix_client uc;
	struct pulse_nic_client nc;
	pid_t pid = serve_and_hello(argv, sock, &uc, &nc);
	assert_int_equal(nc.hello.platform, PULSE_PLATFORM_X86_SIM);
	struct pulse_mb_config mc = {.epoch_ns = 32000, .window_ns = 200000000, .page_bytes = 4096};
	assert_int_equal(pulse_nic_configure(&nc, &mc), PULSE_NIC_OK);

	/* poll every ~5 ms until the 80 ms of wall time the capture lasts have gone */
	struct { uint64_t nic_ns, bytes, wstart, wend; } *got = calloc(200000, sizeof *got);
	uint32_t ngot = 0, windows = 0;
	uint64_t first_start = 0, prev_end = 0, prev_seq = 0, measured = 0;
	struct pulse_window w;
	pulse_window_init(&w);
	uint64_t t_end = mono_ms() + 5000;
	while (mono_ms() < t_end) {
		sleep_ms(5);
		fake_now = mono_ms();
		if (pulse_nic_poll(&nc, 0, fake_clock, &w) != PULSE_NIC_OK)
			fail_msg("POLL: %s", nc.last_error);
		assert_true(w.complete);
		if (windows == 0) {
			first_start = w.nic_start_ns;
			assert_true(w.poll_flags & PULSE_MB_POLLF_RESTARTED);
		} else {
			/* windows tile NIC time, in sequence */
			assert_int_equal(w.nic_start_ns, prev_end);
			assert_int_equal(w.window_seq, prev_seq + 1);
		}
		prev_end = w.nic_end_ns;
		prev_seq = w.window_seq;
		windows++;
		assert_true(w.flow_count <= 1);
		for (uint32_t i = 0; i < w.flow_count; i++) {
			assert_int_equal(w.flows[i].qpn, res.conns[0].src_qpn);
			for (uint32_t e = 0; e < w.flows[i].count && ngot < 200000; e++) {
				got[ngot].nic_ns = w.nic_start_ns + (uint64_t)w.flows[i].epoch[e] * w.epoch_ns;
				got[ngot].bytes = w.flows[i].bytes[e];
				got[ngot].wstart = w.nic_start_ns;
				got[ngot].wend = w.nic_end_ns;
				measured += got[ngot].bytes;
				ngot++;
			}
		}
		if (w.nic_start_ns > pt[npk - 1] + 1000000)
			break; /* a window wholly after the last packet */
	}
	assert_true(windows >= 5);
	/* Every measured epoch holds exactly the bytes of the packets sent in
	 * it (within the 32-byte counter remainder), packets before the
	 * CONFIGURE excepted. */
	uint32_t p = 0;
	uint64_t expected = 0;
	while (p < npk && pt[p] <= first_start)
		p++;
	for (uint32_t i = p; i < npk; i++)
		expected += pb[i];
	assert_true(expected > total / 2); /* most of the capture came after CONFIGURE */
	for (uint32_t i = 0; i < ngot; i++) {
		/* epochs are relative to their window, which starts at the poll
		 * time; a window's last epoch is cut short by the next poll, and a
		 * packet sent at the very instant of a poll belongs to the window
		 * that the poll closes */
		uint64_t lo = got[i].nic_ns, hi = lo + 32000, sum = 0;
		if (hi > got[i].wend)
			hi = got[i].wend;
		for (uint32_t j = p; j < npk; j++) {
			int in = pt[j] >= lo && pt[j] < hi;
			if (hi == got[i].wend && pt[j] == hi)
				in = 1;
			if (lo == got[i].wstart && pt[j] == lo && i > 0)
				in = 0;
			if (in)
				sum += pb[j];
		}
		uint64_t diff = sum > got[i].bytes ? sum - got[i].bytes : got[i].bytes - sum;
		if (diff >= 32 && !(i == 0 && diff <= 4200))
			fail_msg("epoch at NIC %llu ns: measured %llu bytes, capture %llu",
				 (unsigned long long)lo, (unsigned long long)got[i].bytes,
				 (unsigned long long)sum);
	}
	print_message("serve: %u windows, %u non-zero epochs, %llu bytes measured over the "
		      "socket, %llu in the capture after CONFIGURE\n", windows, ngot,
		      (unsigned long long)measured, (unsigned long long)expected);
	assert_true(ngot > 500);
	uint64_t diff = expected > measured ? expected - measured : measured - expected;
	if (diff > 4200)
		fail_msg("measured %llu bytes over the socket, capture %llu after CONFIGURE",
			 (unsigned long long)measured, (unsigned long long)expected);
	uint64_t stats[PULSE_STAT_COUNT];
	uint32_t cnt;
	assert_int_equal(pulse_nic_stats(&nc, stats, PULSE_STAT_COUNT, &cnt), PULSE_NIC_OK);
	assert_int_equal(stats[PULSE_STAT_DROP_TS_RANGE], 0);
	assert_int_equal(stats[PULSE_STAT_DROP_NO_SLOT], 0);

	/* SIGTERM: a clean exit that removes the socket */
	kill(pid, SIGTERM);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	struct stat sb;
	assert_int_not_equal(stat(sock, &sb), 0);

	pulse_window_free(&w);
	pulse_nic_client_free(&nc);
	pulse_unix_client_close(&uc);
	free(got);
	free(pt);
	free(pb);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

/* A corrupt timestamp (+194 days in the middle of the capture) is served
 * as one poll of silence, not waited out in real time: the packets after
 * it reach the poller within seconds. */
static void test_serve_jump(void **st)
{
	(void)st;
	if (!have_file(bin_path())) {
		print_message("%s not built: skipped\n", bin_path());
		skip();
	}
	char *dir = tmpdir_make();
	char cap[600], jumped[600], sock[600];
	snprintf(cap, sizeof cap, "%s/w.pcap", dir);
	snprintf(jumped, sizeof jumped, "%s/jump.pcap", dir);
	snprintf(sock, sizeof sock, "%s/nic.sock", dir);
	struct tg_result res;
	write_capture(cap, &res);
	/* the same records, the second half 194 days later */
	struct sim_pcap in;
	assert_int_equal(sim_pcap_open(&in, cap), SIM_EXIT_OK);
	const uint8_t *d;
	uint32_t cl, wl, nrec = 0;
	uint64_t ts;
	while (sim_pcap_next(&in, &d, &cl, &wl, &ts) == 1)
		nrec++;
	sim_pcap_close(&in);
	assert_int_equal(sim_pcap_open(&in, cap), SIM_EXIT_OK);
	struct tpcap w;
	assert_int_equal(tpcap_open(&w, jumped, 0xA1B23C4Du, 65535, in.link), 0);
	uint32_t i = 0;
	uint64_t after = 0; /* data bytes after the jump */
	struct pulse_roce_pkt k;
	while (sim_pcap_next(&in, &d, &cl, &wl, &ts) == 1) {
		uint64_t jump = i++ >= nrec / 2 ? 194ull * 86400 * 1000000000ull : 0;
		tpcap_rec(&w, ts + jump, d, cl, wl);
		if (jump && pulse_roce_decode(d, cl, wl, in.link, &k) == PULSE_ROCE_OK && !sim_is_ctl(&k))
			after += k.wire_len;
	}
	tpcap_close(&w);
	sim_pcap_close(&in);

	char *argv[] = {(char *)bin_path(), "--serve", sock, "--exit-after", "30s", jumped, NULL};
	struct pulse_unix_client uc;
	struct pulse_nic_client nc;
	pid_t pid = serve_and_hello(argv, sock, &uc, &nc);
	struct pulse_mb_config mc = {.epoch_ns = 32000, .window_ns = 200000000, .page_bytes = 4096};
	assert_int_equal(pulse_nic_configure(&nc, &mc), PULSE_NIC_OK);
	struct pulse_window win;
	pulse_window_init(&win);
	/* the bytes the NIC counted half a second or more after the first
	 * window opened: the capture before the jump lasts 20 ms, so they are
	 * the ones after it (what came before CONFIGURE does not matter) */
	uint64_t measured = 0, first = 0, t_end = mono_ms() + 4000;
	int started = 0;
	while (mono_ms() < t_end && measured * 100 < after * 99) {
		sleep_ms(5);
		fake_now = mono_ms();
		if (pulse_nic_poll(&nc, 0, fake_clock, &win) != PULSE_NIC_OK)
			fail_msg("POLL: %s", nc.last_error);
		if (!started) {
			first = win.nic_start_ns;
			started = 1;
		}
		for (uint32_t f = 0; f < win.flow_count; f++)
			for (uint32_t e = 0; e < win.flows[f].count; e++)
				if (win.nic_start_ns + (uint64_t)win.flows[f].epoch[e] * win.epoch_ns >= first + 500000000ull)
					measured += win.flows[f].bytes[e];
	}
	print_message("serve with a 194-day jump: %llu of the %llu bytes after it within 4 s\n",
		      (unsigned long long)measured, (unsigned long long)after);
	/* all of them (without the cut: none before 194 days) */
	assert_true(after > 0 && measured * 100 >= after * 99);
	kill(pid, SIGTERM);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	pulse_window_free(&win);
	pulse_nic_client_free(&nc);
	pulse_unix_client_close(&uc);
	tg_result_free(&res);
	tmpdir_remove(dir);
}

/* --serve refuses what it cannot serve, with the usual exit codes. */
static void test_serve_errors(void **st)
{
	(void)st;
	if (!have_file(bin_path()))
		skip();
	char *dir = tmpdir_make();
	char sock[600], empty[600], reg[600];
	snprintf(sock, sizeof sock, "%s/s.sock", dir);
	snprintf(empty, sizeof empty, "%s/acks-only.pcap", dir);
	snprintf(reg, sizeof reg, "%s/regular", dir);
	/* a capture without any RoCE data: nothing to serve */
	struct tpcap w;
	struct tframe f;
	tpcap_open(&w, empty, 0xA1B23C4Du, 65535, 1);
	tf_roce(&f, 1, 2, 4791, 0x11, 5, 1, 4, 0, 0, 5);
	tpcap_rec(&w, 1000, f.b, f.n, f.n);
	tpcap_close(&w);
	char *a1[] = {(char *)bin_path(), "--serve", sock, empty, NULL};
	int status;
	pid_t pid = spawn(a1);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), SIM_EXIT_USAGE);
	/* a socket path that is a regular file */
	fclose(fopen(reg, "w"));
	char *a2[] = {(char *)bin_path(), "--serve", reg, "tests/traces/ring.pcap", NULL};
	pid = spawn(a2);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), SIM_EXIT_RUNTIME);
	/* a bad capture */
	char *a3[] = {(char *)bin_path(), "--serve", sock, reg, NULL};
	pid = spawn(a3);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), SIM_EXIT_BAD_FILE);
	/* --exit-after ends a server nobody talks to */
	char *a4[] = {(char *)bin_path(), "--serve", sock, "--exit-after", "200ms", "--loop",
		      "tests/traces/ring.pcap", NULL};
	uint64_t t0 = mono_ms();
	pid = spawn(a4);
	waitpid(pid, &status, 0);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(mono_ms() - t0 < 5000);
	tmpdir_remove(dir);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transport_roundtrip),
		cmocka_unit_test(test_serve_epochs),
		cmocka_unit_test(test_serve_jump),
		cmocka_unit_test(test_serve_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
