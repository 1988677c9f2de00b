/* NIC emulation: the aggregation layer that turns transmitted packets into
 * DOCA-PCC-style TX events, the firmware core those events go to, and the
 * host side that polls it through the mailbox protocol (pulse_nic_client over
 * an in-process transport). See sim/README.md, "NIC event emulation". */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Simulated host CLOCK_REALTIME for pulse_nic_poll (which takes a plain
 * function): the capture time of the poll. */
static _Thread_local uint64_t host_now;
static uint64_t host_now_fn(void) { return host_now; }

int sim_emu_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
		     uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms)
{
	(void)timeout_ms; /* a function call: it cannot time out */
	struct sim_emu_nic *n = ctx;
	uint32_t now = sim_nic_clock(n->emu, n->nic_now_ns);
	n->mailbox_exchanges++;
	pulse_fw_mailbox(n->fw, req, req_len, resp, resp_cap, resp_len, now);
	return *resp_len ? 0 : -1;
}

#define SIM_RESP_CAP 4096u
#define SIM_PAGE_BYTES 4096u

static int nic_setup(struct sim_emu *e, struct sim_emu_nic *n, uint32_t nic, char *err,
		     size_t errlen)
{
	const struct sim_cfg *c = &e->t->cfg;
	memset(n, 0, sizeof *n);
	n->emu = e;
	n->nic = nic;
	n->nic_now_ns = e->t0;
	n->win_start_ns = e->t0;
	pulse_window_init(&n->win);
	struct pulse_fw_limits lim = {
		.max_flows = c->fw_flows,
		.pool_blocks = c->fw_pool_blocks,
		.max_threads = c->fw_threads,
		.platform = PULSE_PLATFORM_X86_SIM,
		.instance_id = 0x51A0000000000000ull ^ ((uint64_t)nic << 32) ^ e->t0,
		.spin_relax = NULL,
	};
	n->mem_size = pulse_fw_memory_size(&lim);
	if (!n->mem_size) {
		snprintf(err, errlen, "firmware limits refused (flows %u, pool blocks %u, threads %u)",
			 lim.max_flows, lim.pool_blocks, lim.max_threads);
		return -1;
	}
	n->mem = aligned_alloc(64, (n->mem_size + 63) & ~(size_t)63);
	if (!n->mem) {
		snprintf(err, errlen, "cannot allocate %zu bytes of firmware memory", n->mem_size);
		return -1;
	}
	n->fw = pulse_fw_init(n->mem, n->mem_size, &lim, sim_nic_clock(e, e->t0));
	if (!n->fw) {
		snprintf(err, errlen, "pulse_fw_init failed");
		return -1;
	}
	if (pulse_nic_client_init(&n->client, sim_emu_exchange, n, SIM_RESP_CAP, 1000) != 0) {
		snprintf(err, errlen, "mailbox client: out of memory");
		return -1;
	}
	if (pulse_nic_hello(&n->client) != PULSE_NIC_OK) {
		snprintf(err, errlen, "HELLO: %s", n->client.last_error);
		return -1;
	}
	struct pulse_mb_config cfg = {
		.epoch_ns = c->epoch_ns,
		.window_ns = (uint32_t)c->poll_ns,
		.page_bytes = SIM_PAGE_BYTES,
		.clip_units_per_pkt = 0,
		.flow_limit = 0,
		.pool_limit = 0,
	};
	if (pulse_nic_configure(&n->client, &cfg) != PULSE_NIC_OK) {
		snprintf(err, errlen, "CONFIGURE (epoch %u ns, window %u ns): %s", cfg.epoch_ns,
			 cfg.window_ns, n->client.last_error);
		return -1;
	}
	return 0;
}

int sim_emu_init(struct sim_emu *e, struct sim_trace *t, uint64_t t0, char *err, size_t errlen)
{
	memset(e, 0, sizeof *e);
	e->t = t;
	e->t0 = t0;
	e->next_poll_ns = t0 + t->cfg.poll_ns;
	e->nic_map = malloc(sizeof(uint32_t) * (t->nnics ? t->nnics : 1));
	uint32_t want = 0;
	for (uint32_t i = 0; i < t->nnics; i++)
		want += t->nics[i].emulated != 0;
	e->nics = calloc(want ? want : 1, sizeof *e->nics);
	if (!e->nic_map || !e->nics) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < t->nnics; i++) {
		e->nic_map[i] = SIM_NONE;
		if (!t->nics[i].emulated)
			continue;
		struct sim_emu_nic *n = &e->nics[e->nnics];
		int rc = nic_setup(e, n, i, err, errlen);
		e->nnics++;
		if (rc)
			return -1;
		e->nic_map[i] = e->nnics - 1;
	}
	return 0;
}

void sim_emu_free(struct sim_emu *e)
{
	for (uint32_t i = 0; i < e->nnics; i++) {
		struct sim_emu_nic *n = &e->nics[i];
		pulse_nic_client_free(&n->client);
		pulse_window_free(&n->win);
		free(n->mem);
		free(n->dirty);
	}
	free(e->nics);
	free(e->nic_map);
	memset(e, 0, sizeof *e);
}

/* One TX event with everything the QP sent since its previous event. The
 * sub-32-byte remainder stays for the next event, so the long-run byte count
 * is exact; bytes beyond the 16-bit counter are lost, as on the NIC (the
 * firmware then estimates from the packet count). */
static void emit(struct sim_emu *e, struct sim_emu_nic *n, struct sim_qp *q, uint64_t ts)
{
	uint64_t units = q->pend_bytes / PULSE_UNIT_BYTES;
	if (!q->pend_pkts || !units)
		return;
	struct pulse_tx_event ev = {
		.qpn = q->qpn,
		.sent_32b = units >= PULSE_SENT_UNITS_CLIPPED ? (uint16_t)PULSE_SENT_UNITS_CLIPPED
							     : (uint16_t)units,
		.sent_pkts = q->pend_pkts > 0xFFFFu ? (uint16_t)0xFFFFu : (uint16_t)q->pend_pkts,
		.ts_ns = sim_nic_clock(e, ts),
	};
	pulse_fw_on_tx(n->fw, q->qpn % e->t->cfg.fw_threads, &ev);
	q->events++;
	n->events++;
	n->event_units += ev.sent_32b;
	n->event_pkts += ev.sent_pkts;
	if (units >= PULSE_SENT_UNITS_CLIPPED)
		q->clipped_events++;
	q->pend_bytes %= PULSE_UNIT_BYTES;
	q->pend_pkts = 0;
}

void sim_emu_packet(struct sim_emu *e, uint32_t qi, uint32_t bytes, uint64_t ts)
{
	struct sim_qp *q = &e->t->qps[qi];
	struct sim_emu_nic *n = &e->nics[e->nic_map[q->nic]];
	const struct sim_cfg *c = &e->t->cfg;
	if (q->pend_pkts && c->burst_gap_ns && ts - q->pend_last_ns > c->burst_gap_ns)
		emit(e, n, q, q->pend_last_ns); /* the previous burst ended */
	if (!q->dirty) {
		if (n->ndirty == n->dirty_cap) {
			uint32_t cap = n->dirty_cap ? n->dirty_cap * 2 : 256;
			uint32_t *d = realloc(n->dirty, sizeof *d * cap);
			if (!d)
				return;
			n->dirty = d;
			n->dirty_cap = cap;
		}
		n->dirty[n->ndirty++] = qi;
		q->dirty = 1;
	}
	q->pend_bytes += bytes;
	q->pend_pkts++;
	q->pend_last_ns = ts;
	if (q->pend_bytes >= c->event_bytes)
		emit(e, n, q, ts);
}

void sim_emu_flush(struct sim_emu *e, struct sim_emu_nic *n)
{
	for (uint32_t i = 0; i < n->ndirty; i++) {
		struct sim_qp *q = &e->t->qps[n->dirty[i]];
		emit(e, n, q, q->pend_last_ns);
		q->dirty = 0;
	}
	n->ndirty = 0;
}

int sim_emu_poll(struct sim_emu *e, struct sim_emu_nic *n, uint64_t ts)
{
	struct sim_trace *t = e->t;
	n->nic_now_ns = ts;
	host_now = ts;
	int rc = pulse_nic_poll(&n->client, 0, host_now_fn, &n->win);
	if (rc != PULSE_NIC_OK) {
		n->poll_errors++;
		snprintf(n->last_error, sizeof n->last_error, "%s", n->client.last_error);
		return -1;
	}
	struct pulse_window *w = &n->win;
	n->polls++;
	n->upload_bytes += w->upload_bytes;
	if (!w->complete) {
		n->windows_incomplete++;
		n->pages_missing += w->pages_missing;
	}
	/* The firmware's 64-bit NIC time started at the 32-bit clock value of t0. */
	uint64_t want_start = (uint64_t)t->cfg.nic_clock_start + (n->win_start_ns - e->t0);
	uint64_t want_end = (uint64_t)t->cfg.nic_clock_start + (ts - e->t0);
	if (w->nic_start_ns != want_start || w->nic_end_ns != want_end)
		n->clock_mismatches++;
	uint64_t cap_start = n->win_start_ns + e->shift_ns; /* capture time */
	for (uint32_t i = 0; i < w->flow_count; i++) {
		const struct pulse_qp_series *s = &w->flows[i];
		uint32_t qi = sim_trace_find_qp(t, n->nic, s->qpn);
		if (qi == SIM_NONE) {
			n->unknown_qpns++;
			continue;
		}
		struct sim_qp *q = &t->qps[qi];
		for (uint32_t k = 0; k < s->count; k++) {
			uint64_t et = cap_start + (uint64_t)s->epoch[k] * w->epoch_ns;
			uint64_t b = s->bytes[k];
			q->meas_bytes += b;
			if (b > q->peak_epoch_bytes) {
				q->peak_epoch_bytes = b;
				q->peak_epoch_ns = et;
			}
			if (!q->active_epochs++)
				q->first_epoch_ns = et;
			q->last_epoch_ns = et;
		}
	}
	int cb = 0;
	if (e->on_window)
		cb = e->on_window(e->on_window_ctx, t, n, w, cap_start);
	n->win_start_ns = ts;
	return cb;
}

int sim_emu_stats(struct sim_emu *e, struct sim_emu_nic *n)
{
	(void)e;
	uint32_t cnt = 0;
	int rc = pulse_nic_stats(&n->client, n->fw_stats, PULSE_STAT_COUNT, &cnt);
	if (rc != PULSE_NIC_OK) {
		snprintf(n->last_error, sizeof n->last_error, "%s", n->client.last_error);
		return -1;
	}
	n->fw_stat_count = cnt;
	return 0;
}

/* Polls every NIC at every poll boundary up to capture time ts. */
static int polls_until(struct sim_emu *e, uint64_t ts, char *err, size_t errlen)
{
	while (ts >= e->next_poll_ns) {
		for (uint32_t i = 0; i < e->nnics; i++) {
			sim_emu_flush(e, &e->nics[i]);
			if (sim_emu_poll(e, &e->nics[i], e->next_poll_ns)) {
				snprintf(err, errlen, "poll failed: %s", e->nics[i].last_error);
				return -1;
			}
		}
		e->next_poll_ns += e->t->cfg.poll_ns;
	}
	return 0;
}

/* A record at capture time ts after one at prev: the NIC's time for it.
 * Across a jump (more than SIM_JUMP_POLLS polls of silence) the window
 * with the data before it is polled, and the replay's time moves on by
 * whole poll periods so that ts lands in the next window: no empty window
 * in between is polled or stored, whatever the jump's size. */
static int nic_time(struct sim_emu *e, uint64_t ts, uint64_t prev, uint64_t *out, char *err, size_t errlen)
{
	uint64_t p = e->t->cfg.poll_ns;
	if (ts > prev && ts - prev > SIM_JUMP_POLLS * p && ts - e->shift_ns >= e->next_poll_ns + p) {
		if (polls_until(e, e->next_poll_ns, err, errlen)) /* the window before the jump */
			return -1;
		uint64_t open = e->next_poll_ns - p; /* the window now open starts here */
		uint64_t k = (ts - e->shift_ns - open) / p;
		e->shift_ns += k * p;
		e->windows_skipped += k;
	}
	*out = ts - e->shift_ns;
	return 0;
}

/* One counted packet of flow fi at ts. */
static void replay_packet(struct sim_emu *e, uint32_t fi, uint32_t b, uint64_t ts)
{
	struct sim_trace *t = e->t;
	uint32_t q = t->flows[fi].qp;
	if (q == SIM_NONE)
		return;
	if (e->nic_map[t->qps[q].nic] == SIM_NONE) {
		t->cnt.other_nic_pkts++;
		return;
	}
	sim_emu_packet(e, q, b, ts);
}

/* The end: flush the remainders and close the last window at the next
 * regular poll, as the host agent would. */
static int replay_finish(struct sim_emu *e, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < e->nnics; i++) {
		sim_emu_flush(e, &e->nics[i]);
		if (sim_emu_poll(e, &e->nics[i], e->next_poll_ns) ||
		    sim_emu_stats(e, &e->nics[i])) {
			snprintf(err, errlen, "final poll failed: %s", e->nics[i].last_error);
			return -1;
		}
	}
	return 0;
}

int sim_replay(struct sim_emu *e, const char *path, char *err, size_t errlen)
{
	struct sim_trace *t = e->t;
	if (t->log && !t->log_overflow) {
		/* Pass 2 from pass 1's log: the same packets, times and order as
		 * re-reading the file, and polls up to the file's last record. */
		uint64_t prev = e->t0, nt = 0;
		for (uint64_t i = 0; i < t->nlog; i++) {
			const struct sim_pkt_rec *r = &t->log[i];
			if (nic_time(e, r->ts, prev, &nt, err, errlen) || polls_until(e, nt, err, errlen))
				return SIM_EXIT_RUNTIME;
			prev = r->ts;
			replay_packet(e, r->flow, r->bytes, nt);
		}
		if (nic_time(e, t->last_ns, prev, &nt, err, errlen) || polls_until(e, nt, err, errlen) ||
		    replay_finish(e, err, errlen))
			return SIM_EXIT_RUNTIME;
		if (t->truncated) {
			snprintf(err, errlen, "%s", t->trunc_msg);
			return SIM_EXIT_TRUNCATED;
		}
		return SIM_EXIT_OK;
	}
	struct sim_pcap in;
	int rc = sim_pcap_open(&in, path);
	if (rc != SIM_EXIT_OK) {
		snprintf(err, errlen, "%s", in.err);
		return rc;
	}
	const uint8_t *d;
	uint32_t cap, wire;
	uint64_t ts, prev = e->t0, prev_rep = e->t0, nt = 0;
	struct pulse_roce_pkt k;
	int result = SIM_EXIT_OK;
	/* As from the log: the replay's time (polls, jumps) moves with the
	 * packets it replays, then up to the file's last record. */
	for (;;) {
		int r = sim_pcap_next(&in, &d, &cap, &wire, &ts);
		if (r == 0)
			break;
		if (r < 0) {
			result = SIM_EXIT_TRUNCATED;
			snprintf(err, errlen, "%s", in.err);
			break;
		}
		if (ts < prev)
			ts = prev;
		prev = ts;
		if (pulse_roce_decode(d, cap, wire, in.link, &k) != PULSE_ROCE_OK || sim_is_ctl(&k))
			continue;
		uint32_t b = sim_counted_bytes(&t->cfg, &k);
		if (!b)
			continue;
		uint32_t fi = sim_trace_find_flow(t, &k);
		if (fi == SIM_NONE)
			continue; /* counted as untracked in pass 1 */
		if (nic_time(e, ts, prev_rep, &nt, err, errlen) || polls_until(e, nt, err, errlen)) {
			sim_pcap_close(&in);
			return SIM_EXIT_RUNTIME;
		}
		prev_rep = ts;
		replay_packet(e, fi, b, nt);
	}
	if (nic_time(e, prev, prev_rep, &nt, err, errlen) || polls_until(e, nt, err, errlen)) {
		sim_pcap_close(&in);
		return SIM_EXIT_RUNTIME;
	}
	sim_pcap_close(&in);
	if (replay_finish(e, err, errlen))
		return SIM_EXIT_RUNTIME;
	return result;
}
