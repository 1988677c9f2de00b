/* run_trace --serve: the simulated NIC. One firmware core instance, fed from
 * a capture paced in (scaled) real time, answers the mailbox protocol on a
 * Unix socket, so that a separate host agent process can poll it as if it
 * were a NIC. The loop (sim_serve_nics) serves any number of such NICs,
 * each from its own source (a table of functions): the capture here, a
 * cluster run's event streams in pulse-cluster-serve (sim/cluster_serve.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include "pulse/clock_ns.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pulse/transport_unix.h"
#include "serve.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct serve_ctx {
	struct sim_emu e;
	struct sim_emu_nic *n;
	struct sim_trace *t;
	const struct sim_serve_opts *o;
	struct sim_pcap in;
	int in_open;
	/* the next counted packet of the served NIC */
	int have_pkt;
	uint32_t pkt_qp, pkt_bytes;
	uint64_t pkt_ts;
	uint64_t prev_ts;      /* monotonic clamp within one pass over the file */
	uint64_t loop_offset;  /* added to file timestamps on later passes */
	/* Forward jumps longer than SIM_JUMP_POLLS polls (a corrupt timestamp)
	 * are served as one poll of silence, not waited out in real time: the
	 * rest of the capture comes jump_cut earlier. */
	uint64_t jump_cut, jumps, jump_max;
	int started;
	uint64_t w0;           /* wall (monotonic) time of the first request */
	uint64_t fed, passes, read_errors;
	char err[1200];
};

volatile sig_atomic_t *sim_serve_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return &stop_flag;
}

static uint64_t cap_now(const struct serve_ctx *c)
{
	if (!c->started)
		return c->e.t0;
	double dt = (double)(pulse_mono_ns() - c->w0) * c->o->speed;
	return c->e.t0 + (uint64_t)dt;
}

static int reopen(struct serve_ctx *c)
{
	if (c->in_open)
		sim_pcap_close(&c->in);
	c->in_open = 0;
	if (sim_pcap_open(&c->in, c->o->capture) != SIM_EXIT_OK) {
		snprintf(c->err, sizeof c->err, "%s", c->in.err);
		return -1;
	}
	c->in_open = 1;
	c->prev_ts = 0;
	c->passes++;
	return 0;
}

/* A jump is served as one poll of silence: in real time, even the
 * SIM_JUMP_POLLS polls that make it a jump would be a minute's wait. */
static uint64_t serve_jump_keep(const struct sim_trace *t)
{
	return t->cfg.poll_ns ? t->cfg.poll_ns : 1000000000ull;
}

/* Reads ahead to the next packet this NIC counts. */
static void next_pkt(struct serve_ctx *c)
{
	struct sim_trace *t = c->t;
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts;
	struct pulse_roce_pkt k;
	c->have_pkt = 0;
	while (c->in_open) {
		int r = sim_pcap_next(&c->in, &d, &cap, &wire, &ts);
		if (r <= 0) {
			if (r < 0 && !c->read_errors++)
				fprintf(stderr, "run_trace: serve: %s (treated as the end)\n", c->in.err);
			if (!c->o->loop) {
				sim_pcap_close(&c->in);
				c->in_open = 0;
				return;
			}
			c->loop_offset += (t->last_ns - t->first_ns) + 1000;
			if (reopen(c))
				return;
			continue;
		}
		if (ts < c->prev_ts)
			ts = c->prev_ts;
		if (c->prev_ts && ts - c->prev_ts > SIM_JUMP_POLLS * t->cfg.poll_ns) {
			uint64_t gap = ts - c->prev_ts, keep = serve_jump_keep(t);
			c->jump_cut += gap - keep;
			if (gap > c->jump_max)
				c->jump_max = gap;
			if (!c->jumps++)
				fprintf(stderr, "run_trace: serve: warning: timestamps jump forward by %.3f s (corrupt "
						"capture?); served as %.3f s of silence\n",
					(double)gap / 1e9, (double)keep / 1e9);
		}
		c->prev_ts = ts;
		if (pulse_roce_decode(d, cap, wire, c->in.link, &k) != PULSE_ROCE_OK || sim_is_ctl(&k))
			continue;
		uint32_t b = sim_counted_bytes(&t->cfg, &k);
		uint32_t fi = b ? sim_trace_find_flow(t, &k) : SIM_NONE;
		if (fi == SIM_NONE || t->flows[fi].qp == SIM_NONE ||
		    t->qps[t->flows[fi].qp].nic != c->n->nic)
			continue;
		c->pkt_qp = t->flows[fi].qp;
		c->pkt_bytes = b;
		c->pkt_ts = ts + c->loop_offset - c->jump_cut;
		c->have_pkt = 1;
		return;
	}
}

/* Feeds the packets due by capture time now, at most a bounded batch per
 * call: with --loop and a capture that the emulation cannot keep up with,
 * packets are always due, and the serve loop must still answer requests and
 * see SIGTERM. */
#define FEED_BATCH 65536u
static void feed(struct serve_ctx *c, uint64_t now)
{
	for (unsigned n = 0; n < FEED_BATCH && !stop_flag && c->have_pkt && c->pkt_ts <= now; n++) {
		sim_emu_packet(&c->e, c->pkt_qp, c->pkt_bytes, c->pkt_ts);
		c->fed++;
		next_pkt(c);
	}
}

static uint64_t pcap_feed(void *ctx, uint64_t wall_ns)
{
	struct serve_ctx *c = ctx;
	(void)wall_ns; /* the capture's clock is cap_now(): it starts with the first request */
	if (!c->started)
		return UINT64_MAX;
	uint64_t now = cap_now(c);
	feed(c, now);
	if (!c->have_pkt)
		return UINT64_MAX;
	return pulse_mono_ns() + (uint64_t)((double)(c->pkt_ts - now) / c->o->speed);
}

static int pcap_answer(void *ctx, uint64_t wall_ns, const uint8_t *req, uint32_t req_len,
		       uint8_t *resp, uint32_t resp_cap, uint32_t *resp_len)
{
	struct serve_ctx *c = ctx;
	(void)wall_ns;
	if (!c->started) {
		/* The capture's clock starts with the first request, so that
		 * nothing is sent before anyone can poll. */
		c->started = 1;
		c->w0 = pulse_mono_ns();
	}
	uint64_t now = cap_now(c);
	feed(c, now);
	c->n->nic_now_ns = now;
	if (req_len >= PULSE_MB_HEADER_SIZE && req[3] == PULSE_MB_POLL)
		sim_emu_flush(&c->e, c->n); /* the NIC's last bursts end before the poll */
	c->n->mailbox_exchanges++;
	pulse_fw_mailbox(c->n->fw, req, req_len, resp, resp_cap, resp_len,
			 sim_nic_clock(&c->e, now));
	return *resp_len ? 0 : -1;
}

static const struct sim_nic_src_ops pcap_ops = {.feed = pcap_feed, .answer = pcap_answer};

/* ---- the loop ---- */

static int served_handle(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			 uint32_t resp_cap, uint32_t *resp_len)
{
	struct sim_served_nic *n = ctx;
	return n->ops->answer(n->ctx, pulse_mono_ns(), req, req_len, resp, resp_cap, resp_len);
}

int sim_served_nic_open(struct sim_served_nic *n, const char *path, const struct sim_nic_src_ops *ops,
			void *ctx, char *err, size_t errlen)
{
	n->ops = ops;
	n->ctx = ctx;
	n->open = 0;
	if (pulse_unix_server_open(&n->srv, path, PULSE_MB_MAX_MESSAGE)) {
		snprintf(err, errlen, "%s", n->srv.last_error);
		return -1;
	}
	n->open = 1;
	return 0;
}

void sim_served_nic_close(struct sim_served_nic *n)
{
	if (n->open)
		pulse_unix_server_close(&n->srv);
	n->open = 0;
}

int sim_serve_nics(struct sim_served_nic *nics, unsigned n, volatile sig_atomic_t *stop,
		   uint64_t exit_after_ns, int (*done)(void *ctx, uint64_t wall_ns), void *done_ctx,
		   char *err, size_t errlen)
{
	struct pollfd *pfd = calloc(2 * (size_t)n + 1, sizeof *pfd);
	if (!pfd) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t start = pulse_mono_ns();
	int rc = 0;
	while (!*stop) {
		uint64_t now = pulse_mono_ns(), next = now + 50000000u;
		for (unsigned i = 0; i < n; i++) {
			uint64_t due = nics[i].ops->feed(nics[i].ctx, now);
			if (due < next)
				next = due;
		}
		/* every listening and connected socket of every NIC */
		unsigned np = 0;
		for (unsigned i = 0; i < n; i++) {
			pfd[np++] = (struct pollfd){.fd = nics[i].srv.listen_fd, .events = POLLIN};
			pfd[np++] = (struct pollfd){.fd = nics[i].srv.conn_fd, .events = POLLIN};
		}
		int wait = next <= now ? 0 : (int)((next - now + 999999u) / 1000000u);
		if (poll(pfd, np, wait) < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			rc = -1;
			break;
		}
		for (unsigned i = 0; i < n && !*stop; i++) {
			if (!(pfd[2 * i].revents | pfd[2 * i + 1].revents))
				continue;
			if (pulse_unix_server_step(&nics[i].srv, 0, served_handle, &nics[i]) < 0) {
				snprintf(err, errlen, "socket: %s",
					 nics[i].srv.last_error[0] ? nics[i].srv.last_error : "poll failed");
				rc = -1;
				break;
			}
		}
		if (rc)
			break;
		now = pulse_mono_ns();
		if (exit_after_ns && now - start >= exit_after_ns)
			break;
		if (done && done(done_ctx, now))
			break;
	}
	free(pfd);
	return rc;
}

int sim_serve(struct sim_trace *t, const struct sim_serve_opts *o, char *err, size_t errlen)
{
	/* One NIC: the --nic one, else the busiest sender. */
	uint32_t pick = SIM_NONE;
	for (uint32_t i = 0; i < t->nnics; i++) {
		if (!t->nics[i].emulated)
			continue;
		if (pick == SIM_NONE || t->nics[i].tx_bytes > t->nics[pick].tx_bytes)
			pick = i;
	}
	if (pick == SIM_NONE) {
		snprintf(err, errlen, "%s: no NIC in the capture sends RoCE data to serve", o->capture);
		return SIM_EXIT_USAGE;
	}
	for (uint32_t i = 0; i < t->nnics; i++)
		t->nics[i].emulated = i == pick;

	static struct serve_ctx c; /* large; one per process */
	memset(&c, 0, sizeof c);
	c.t = t;
	c.o = o;
	if (sim_emu_init(&c.e, t, t->first_ns, err, errlen)) {
		sim_emu_free(&c.e);
		return SIM_EXIT_RUNTIME;
	}
	c.n = &c.e.nics[0];
	if (reopen(&c)) {
		snprintf(err, errlen, "%s", c.err);
		sim_emu_free(&c.e);
		return SIM_EXIT_BAD_FILE;
	}
	next_pkt(&c);

	struct sim_served_nic srv;
	if (sim_served_nic_open(&srv, o->socket_path, &pcap_ops, &c, err, errlen)) {
		sim_emu_free(&c.e);
		if (c.in_open)
			sim_pcap_close(&c.in);
		return SIM_EXIT_RUNTIME;
	}
	sim_serve_signals();

	char a[46];
	struct sim_nic *nic = &t->nics[pick];
	fprintf(stderr, "run_trace: serving NIC %s (%u sending QPs, %llu packets) on %s at %gx "
			"real time%s; the replay starts with the first request\n",
		pulse_roce_addr_str(t->hosts[nic->host].addr, a), nic->nqps,
		(unsigned long long)nic->tx_pkts, o->socket_path, o->speed,
		o->loop ? ", looping" : "");
	int rc = SIM_EXIT_OK;
	if (sim_serve_nics(&srv, 1, &stop_flag, o->exit_after_ns, NULL, NULL, err, errlen))
		rc = SIM_EXIT_RUNTIME;
	if (c.jumps)
		fprintf(stderr, "run_trace: serve: %llu forward timestamp jumps, the longest %.3f s, each served as "
				"%.3f s of silence\n",
			(unsigned long long)c.jumps, (double)c.jump_max / 1e9, (double)serve_jump_keep(t) / 1e9);
	fprintf(stderr, "run_trace: serve: stopping: %llu requests from %llu connections (%llu bad "
			"frames, %llu dropped), %llu packets fed as %llu TX events over %llu passes\n",
		(unsigned long long)srv.srv.requests, (unsigned long long)srv.srv.accepted,
		(unsigned long long)srv.srv.bad_frames, (unsigned long long)srv.srv.dropped,
		(unsigned long long)c.fed, (unsigned long long)c.n->events,
		(unsigned long long)c.passes);
	sim_served_nic_close(&srv);
	if (c.in_open)
		sim_pcap_close(&c.in);
	sim_emu_free(&c.e);
	return rc;
}
