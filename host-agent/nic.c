/* pulse-host-agent: one NIC. Transport, handshake (HELLO version check,
 * CONFIGURE), the poll of one period (POLL + drain every page), sequence and
 * restart checks that turn lost data into recorded gaps, clock sync, STATS,
 * and the hand-off to the outputs. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

const char *const agent_err_names[ERR_COUNT] = {
	"transport", "version", "short", "repeat", "count_changed", "window", "status",
};

const char *const agent_gap_names[GAP_KINDS] = {"pages", "seq", "restart", "down", "abandoned",
						  "long"};
#define gap_names agent_gap_names

int nic_open(struct agent *a, struct agent_nic *n, enum nic_kind kind, const char *target,
	     char *err, size_t errlen)
{
	memset(n, 0, sizeof *n);
	n->lock_fd = -1;
	n->uc.fd = -1;
	n->kind = kind;
	n->target = target;
	pulse_window_init(&n->w);
	uint32_t resp_cap;
	if (kind == NIC_SIM) {
		char *abs = realpath(target, NULL);
		snprintf(n->name, sizeof n->name, "sim:%s", abs ? abs : target);
		free(abs);
		if (pulse_unix_client_init(&n->uc, target)) {
			snprintf(err, errlen, "--sim %s: path too long for a Unix socket", target);
			return -1;
		}
		resp_cap = PULSE_MB_MAX_MESSAGE;
	} else {
		snprintf(n->name, sizeof n->name, "%s", target);
	}
	n->lock_fd = agent_lock_nic(a->opt.lock_dir, n->name, err, errlen);
	if (n->lock_fd < 0)
		return -1;
	if (kind == NIC_DOCA) {
		if (!pulse_doca_available()) {
			snprintf(err, errlen,
				 "--device %s: this pulse-host-agent was built without the DOCA SDK, so "
				 "it cannot talk to a BlueField (see docs/hardware.md); to run against "
				 "the simulated NIC use: sim/run_trace --serve /tmp/nic0.sock --loop "
				 "tests/traces/ring.pcap & pulse-host-agent --sim /tmp/nic0.sock",
				 target);
			return -1;
		}
		struct pulse_doca_options o;
		pulse_doca_options_init(&o, target);
		n->doca = pulse_doca_open(&o, err, errlen);
		if (!n->doca)
			return -1;
		resp_cap = pulse_doca_response_cap(n->doca);
	}
	if (pulse_nic_client_init(&n->cl, kind == NIC_SIM ? pulse_unix_exchange : pulse_doca_exchange,
				  kind == NIC_SIM ? (void *)&n->uc : (void *)n->doca, resp_cap,
				  a->opt.timeout_ms)) {
		snprintf(err, errlen, "%s: out of memory", n->name);
		return -1;
	}
	n->client_ok = 1;
	return 0;
}

void nic_close(struct agent_nic *n)
{
	if (n->client_ok)
		pulse_nic_client_free(&n->cl);
	n->client_ok = 0;
	pulse_window_free(&n->w);
	if (n->kind == NIC_SIM)
		pulse_unix_client_close(&n->uc);
	pulse_doca_close(n->doca);
	n->doca = NULL;
	if (n->lock_fd >= 0)
		close(n->lock_fd);
	n->lock_fd = -1;
}

/* Copies the client's per-cause error counters (the client counts; we keep
 * the totals across client resets). */
static void sync_errors(struct agent_nic *n)
{
	const struct pulse_nic_client *c = &n->cl;
	n->errs[ERR_TRANSPORT] = c->err_transport;
	n->errs[ERR_VERSION] = c->err_version;
	n->errs[ERR_SHORT] = c->err_short;
	n->errs[ERR_REPEAT] = c->err_repeat;
	n->errs[ERR_COUNT_CHANGED] = c->err_count_changed;
	n->errs[ERR_WINDOW] = c->err_window;
	n->errs[ERR_STATUS] = c->err_status;
}

static void gap_count(struct agent_nic *n, unsigned flags)
{
	if (!flags)
		return;
	n->gaps_total++;
	for (int i = 0; i < GAP_KINDS; i++)
		if (flags & (1u << i))
			n->gaps[i]++;
}

static void gap_str(unsigned flags, char *buf, size_t len)
{
	buf[0] = 0;
	size_t o = 0;
	for (int i = 0; i < GAP_KINDS; i++)
		if (flags & (1u << i))
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s", o ? "," : "",
					      gap_names[i]);
}

/* The NIC stopped answering or answered nonsense: forget the session, so the
 * next period starts with a fresh HELLO; the data until then is a gap. */
static void mark_down(struct agent *a, struct agent_nic *n, const char *what)
{
	(void)a;
	if (n->up || !n->down_attempts) {
		LOGW("%s: %s: %s; will re-handshake every poll period", n->name, what,
		     n->cl.last_error[0] ? n->cl.last_error : "no detail");
		jsonl_event(n, "down", n->cl.last_error);
	} else if (n->down_attempts % 60 == 0) {
		LOGW("%s: still failing after %llu attempts: %s", n->name,
		     (unsigned long long)n->down_attempts, n->cl.last_error);
	}
	if (n->up || n->ever_up)
		n->pending_gap |= GAP_DOWN;
	n->up = 0;
	n->down_attempts++;
}

static int handshake(struct agent *a, struct agent_nic *n)
{
	/* Called with the agent lock held; the exchanges run without it, so
	 * a NIC that times out never holds up a metrics scrape or a dump.
	 * n->cl belongs to the poll thread alone. */
	pthread_mutex_unlock(&a->lock);
	int rc = pulse_nic_hello(&n->cl);
	pthread_mutex_lock(&a->lock);
	n->handshakes++;
	if (rc != PULSE_NIC_OK) {
		sync_errors(n);
		mark_down(a, n, rc == PULSE_NIC_EVERSION ? "protocol version mismatch" : "HELLO failed");
		return -1;
	}
	struct pulse_mb_hello h = n->cl.hello;
	int restarted = n->have_instance && h.instance_id != n->instance_id;
	if (restarted) {
		LOGW("%s: NIC agent restarted (instance %016llx -> %016llx); its unread data is lost "
		     "and recorded as a gap",
		     n->name, (unsigned long long)n->instance_id, (unsigned long long)h.instance_id);
		jsonl_event(n, "restarted", "instance_id changed");
		n->restarts++;
		n->pending_gap |= GAP_RESTART;
		n->have_seq = 0;
	}
	uint32_t page = a->opt.page_bytes;
	if (page > n->cl.resp_cap - PULSE_MB_HEADER_SIZE)
		page = n->cl.resp_cap - PULSE_MB_HEADER_SIZE;
	int same = h.epoch_ns == a->opt.epoch_ns && h.window_ns == (uint32_t)a->opt.poll_ns &&
		   h.page_bytes >= PULSE_PAGE_BYTES_MIN &&
		   h.page_bytes <= n->cl.resp_cap - PULSE_MB_HEADER_SIZE;
	if (!same || (n->have_instance && !restarted && !n->up)) {
		/* Reconfiguring resets the NIC's measurement state: only when the
		 * settings differ, or when we come back to the same instance after
		 * losing track of its windows. A NIC already configured as asked
		 * keeps its open window, so attaching loses nothing. */
		struct pulse_mb_config cfg = {.epoch_ns = a->opt.epoch_ns,
					      .window_ns = (uint32_t)a->opt.poll_ns,
					      .page_bytes = (uint16_t)page};
		pthread_mutex_unlock(&a->lock);
		rc = pulse_nic_configure(&n->cl, &cfg);
		pthread_mutex_lock(&a->lock);
		if (rc != PULSE_NIC_OK) {
			sync_errors(n);
			mark_down(a, n, "CONFIGURE failed");
			return -1;
		}
		h = n->cl.hello;
		n->expect_restart = 1;
		n->have_seq = 0;
		if (n->ever_up)
			n->pending_gap |= GAP_RESTART;
	}
	n->hello = h;
	n->instance_id = h.instance_id;
	n->have_instance = 1;
	if (!n->up)
		LOGI("%s: connected: protocol %u..%u, firmware %u.%u.%u, platform %u, instance %016llx, "
		     "epoch %u ns, window %u ns, page %u B, %u flow slots, %u pool blocks%s",
		     n->name, h.proto_min, h.proto_max, h.fw_version >> 16, (h.fw_version >> 8) & 0xff,
		     h.fw_version & 0xff, h.platform, (unsigned long long)h.instance_id, h.epoch_ns,
		     h.window_ns, h.page_bytes, h.flow_limit, h.pool_blocks,
		     n->expect_restart ? " (configured)" : " (already configured as asked)");
	if (!n->up)
		jsonl_event(n, "up", NULL);
	n->up = 1;
	n->ever_up = 1;
	n->down_attempts = 0;
	return 0;
}

/* NIC time of a window's end as the next window's start, for continuity. */
static unsigned check_window(struct agent_nic *n, const struct pulse_window *w)
{
	unsigned gap = n->pending_gap;
	n->pending_gap = 0;
	if (w->poll_flags & PULSE_MB_POLLF_RESTARTED) {
		if (!n->expect_restart && n->have_seq) {
			LOGW("%s: window %u says the NIC agent restarted or was reset by someone else; "
			     "data before it is lost (gap); re-handshaking next period",
			     n->name, w->window_seq);
			gap |= GAP_RESTART;
			n->restarts++;
			n->up = 0; /* HELLO and CONFIGURE again: our settings may be gone */
		}
	} else if (n->have_seq && w->window_seq != n->last_seq + 1) {
		uint32_t lost = w->window_seq - n->last_seq - 1;
		LOGW("%s: window sequence jumped %u -> %u: %u window(s) lost (gap)", n->name, n->last_seq,
		     w->window_seq, lost);
		n->windows_missed += lost;
		gap |= GAP_SEQ;
	}
	n->expect_restart = 0;
	if (w->poll_flags & PULSE_MB_POLLF_ABANDONED)
		gap |= GAP_ABANDONED;
	if (n->hello.window_ns && w->nic_end_ns - w->nic_start_ns > 2ull * n->hello.window_ns) {
		LOGW("%s: window %u lasted %.3f s, over twice the configured %.3f s (the NIC went "
		     "unpolled): events past the firmware's range are lost (gap)", n->name,
		     w->window_seq, (double)(w->nic_end_ns - w->nic_start_ns) / 1e9,
		     (double)n->hello.window_ns / 1e9);
		gap |= GAP_LONG;
	}
	if (!w->complete) {
		LOGW("%s: window %u incomplete: %u of %u pages missing (%s); recorded as a gap", n->name,
		     w->window_seq, w->pages_missing, w->page_count, n->cl.last_error);
		gap |= GAP_PAGES;
		n->windows_incomplete++;
	}
	n->have_seq = 1;
	n->last_seq = w->window_seq;
	return gap;
}

void nic_cycle(struct agent *a, struct agent_nic *n)
{
	uint64_t t0 = agent_mono_ns();
	if (!n->up) {
		pthread_mutex_lock(&a->lock);
		int rc = handshake(a, n);
		pthread_mutex_unlock(&a->lock);
		/* Either way the first poll comes one period later: a freshly
		 * configured window needs a period of data, and a NIC found
		 * already configured keeps the window it has open. */
		(void)rc;
		n->last_poll_s = (double)(agent_mono_ns() - t0) / 1e9;
		return;
	}
	uint64_t before[ERR_COUNT];
	memcpy(before, n->errs, sizeof before);
	uint64_t u0 = agent_mono_ns();
	int rc = pulse_nic_poll(&n->cl, 0, agent_realtime_ns, &n->w);
	uint64_t u1 = agent_mono_ns();
	pthread_mutex_lock(&a->lock);
	n->polls++;
	sync_errors(n);
	if (rc != PULSE_NIC_OK) {
		n->poll_failures++;
		mark_down(a, n, rc == PULSE_NIC_EVERSION ? "protocol version mismatch" : "POLL failed");
		pthread_mutex_unlock(&a->lock);
		return;
	}
	struct pulse_window *w = &n->w;
	if (w->window_seq == n->last_seq && n->have_seq && !(w->poll_flags & PULSE_MB_POLLF_RESTARTED)) {
		/* The same window twice: a misbehaving NIC; count as a repeat. */
		n->cl.err_repeat++;
		sync_errors(n);
		snprintf(n->cl.last_error, sizeof n->cl.last_error,
			 "POLL: window %u served twice", w->window_seq);
		LOGW("%s: %s; ignored", n->name, n->cl.last_error);
		pthread_mutex_unlock(&a->lock);
		return;
	}
	unsigned gap = check_window(n, w);
	for (int i = 0; i < ERR_COUNT; i++)
		if (n->errs[i] != before[i] && i != ERR_TRANSPORT && w->complete)
			LOGW("%s: window %u: %s error: %s", n->name, w->window_seq, agent_err_names[i],
			     n->cl.last_error);
	clock_sync_update(&n->cs, w->host_send_ns, w->host_recv_ns, w->nic_end_ns);
	n->windows++;
	n->upload_bytes += w->upload_bytes;
	n->upload_exchanges += w->upload_exchanges;
	n->last_upload_s = (double)(u1 - u0) / 1e9;
	if (u1 - u0 > a->opt.poll_ns / 4) {
		n->slow_uploads++;
		LOGW("%s: slow upload: window %u took %.1f ms (%u pages, %u exchanges), over a quarter "
		     "of the poll period", n->name, w->window_seq, (double)(u1 - u0) / 1e6,
		     w->page_count, w->upload_exchanges);
	}
	n->last_flows = w->flow_count;
	if (gap) {
		char g[64];
		gap_str(gap, g, sizeof g);
		jsonl_event(n, "gap", g);
	}
	gap_count(n, gap);
	uint64_t cap0 = a->ret.dropped_cap, big0 = a->ret.dropped_oversize;
	retention_add(&a->ret, (uint16_t)(n - a->nics), w, &n->cs, gap, agent_realtime_ns());
	if (a->ret.dropped_oversize != big0)
		LOGW("%s: window %u alone exceeds --retain-mem (%llu bytes): not retained", n->name,
		     w->window_seq, (unsigned long long)a->ret.cap_bytes);
	else if (a->ret.dropped_cap != cap0 && (cap0 == 0 || a->ret.dropped_cap / 1000 != cap0 / 1000))
		LOGW("retention: --retain-mem (%llu bytes) full before --retain elapsed: dropping the "
		     "oldest windows (%llu so far; logged every 1000)",
		     (unsigned long long)a->ret.cap_bytes, (unsigned long long)a->ret.dropped_cap);
	pthread_mutex_unlock(&a->lock);

	/* Firmware counters for the metrics: events, drops, pool use. */
	uint64_t st[PULSE_STAT_COUNT];
	uint32_t cnt = 0;
	int src = pulse_nic_stats(&n->cl, st, PULSE_STAT_COUNT, &cnt);
	uint64_t t1 = agent_mono_ns();
	pthread_mutex_lock(&a->lock);
	if (src == PULSE_NIC_OK) {
		memset(n->fw_stats, 0, sizeof n->fw_stats);
		memcpy(n->fw_stats, st, cnt * sizeof st[0]);
		n->have_fw_stats = 1;
	} else {
		sync_errors(n);
		LOGW("%s: STATS failed: %s", n->name, n->cl.last_error);
	}
	n->last_poll_s = (double)(t1 - t0) / 1e9;
	n->poll_s_sum += n->last_poll_s;
	if (n->last_poll_s > n->max_poll_s)
		n->max_poll_s = n->last_poll_s;
	pthread_mutex_unlock(&a->lock);
	if (!a->opt.quiet_windows)
		jsonl_window(n, w, gap, n->last_poll_s);
	agent_window_done(a, n, w, gap); /* the association (op_feed.c) */
	if (src == PULSE_NIC_ETRANSPORT) {
		pthread_mutex_lock(&a->lock);
		mark_down(a, n, "STATS failed");
		pthread_mutex_unlock(&a->lock);
	}
}
