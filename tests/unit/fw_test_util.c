/* Test helpers for the NIC agent core; see fw_test_util.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"
#include "pulse/le.h"

/* ---- cell maps --------------------------------------------------------- */

void ft_map_init(struct ft_map *m)
{
	m->v = NULL;
	m->n = m->cap = 0;
}

void ft_map_free(struct ft_map *m)
{
	free(m->v);
	ft_map_init(m);
}

void ft_map_clear(struct ft_map *m) { m->n = 0; }

void ft_map_add(struct ft_map *m, uint32_t qpn, uint32_t epoch, uint64_t units)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct ft_cell *v = realloc(m->v, cap * sizeof(*v));
		assert_non_null(v);
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = (struct ft_cell){qpn, epoch, units};
}

static int cell_cmp(const void *a, const void *b)
{
	const struct ft_cell *x = a, *y = b;
	if (x->qpn != y->qpn)
		return x->qpn < y->qpn ? -1 : 1;
	if (x->epoch != y->epoch)
		return x->epoch < y->epoch ? -1 : 1;
	return 0;
}

void ft_map_normalize(struct ft_map *m)
{
	if (m->n == 0)
		return;
	qsort(m->v, m->n, sizeof(*m->v), cell_cmp);
	size_t w = 0;
	for (size_t r = 0; r < m->n; r++) {
		if (w > 0 && m->v[w - 1].qpn == m->v[r].qpn && m->v[w - 1].epoch == m->v[r].epoch)
			m->v[w - 1].units += m->v[r].units;
		else
			m->v[w++] = m->v[r];
	}
	size_t z = 0;
	for (size_t r = 0; r < w; r++)
		if (m->v[r].units != 0)
			m->v[z++] = m->v[r];
	m->n = z;
}

uint64_t ft_map_total(const struct ft_map *m)
{
	uint64_t s = 0;
	for (size_t i = 0; i < m->n; i++)
		s += m->v[i].units;
	return s;
}

uint64_t ft_map_get(const struct ft_map *m, uint32_t qpn, uint32_t epoch)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].qpn == qpn && m->v[i].epoch == epoch)
			return m->v[i].units;
	return 0;
}

uint64_t ft_map_qpn_total(const struct ft_map *m, uint32_t qpn)
{
	uint64_t s = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].qpn == qpn)
			s += m->v[i].units;
	return s;
}

size_t ft_map_qpn_count(const struct ft_map *m)
{
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++)
		if (i == 0 || m->v[i].qpn != m->v[i - 1].qpn)
			k++;
	return k;
}

size_t ft_map_diff(const struct ft_map *got, const struct ft_map *want, const char *what)
{
	size_t i = 0, j = 0, bad = 0;
	while (i < got->n || j < want->n) {
		int c;
		if (i == got->n)
			c = 1;
		else if (j == want->n)
			c = -1;
		else
			c = cell_cmp(&got->v[i], &want->v[j]);
		const struct ft_cell *g = c <= 0 ? &got->v[i] : NULL;
		const struct ft_cell *w = c >= 0 ? &want->v[j] : NULL;
		if (!g || !w || g->units != w->units) {
			if (bad < 12)
				print_message("%s: qpn 0x%06x epoch %u: got %llu, want %llu units\n", what,
					      g ? g->qpn : w->qpn, g ? g->epoch : w->epoch,
					      (unsigned long long)(g ? g->units : 0),
					      (unsigned long long)(w ? w->units : 0));
			bad++;
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	if (bad)
		print_message("%s: %zu cells differ (got %zu cells / %llu units, want %zu / %llu)\n",
			      what, bad, got->n, (unsigned long long)ft_map_total(got), want->n,
			      (unsigned long long)ft_map_total(want));
	return bad;
}

/* ---- firmware instances ------------------------------------------------ */

struct pulse_fw_limits ft_limits(uint32_t max_flows, uint32_t pool_blocks, uint32_t max_threads)
{
	struct pulse_fw_limits l;
	memset(&l, 0, sizeof(l));
	l.max_flows = max_flows;
	l.pool_blocks = pool_blocks;
	l.max_threads = max_threads;
	l.platform = PULSE_PLATFORM_X86_SIM;
	l.instance_id = 0x1122334455667788ull;
	l.spin_relax = NULL;
	return l;
}

struct ft_fw *ft_fw_new(const struct pulse_fw_limits *lim, uint32_t now_ns)
{
	struct ft_fw *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->lim = *lim;
	f->size = pulse_fw_memory_size(lim);
	assert_true(f->size > 0);
	size_t alloc = (f->size + 63) & ~(size_t)63;
	f->mem = aligned_alloc(64, alloc);
	assert_non_null(f->mem);
	memset(f->mem, 0xA5, alloc);
	f->fw = pulse_fw_init(f->mem, f->size, lim, now_ns);
	f->nic_clock = now_ns;
	assert_non_null(f->fw);
	f->page_bytes = PULSE_PAGE_BYTES_DEFAULT;
	f->epoch_ns = PULSE_EPOCH_NS_DEFAULT;
	return f;
}

void ft_fw_free(struct ft_fw *f)
{
	if (!f)
		return;
	free(f->mem);
	free(f);
}

void ft_ev_thr(struct ft_fw *f, uint32_t thread, uint32_t qpn, uint16_t units, uint16_t pkts,
	       uint32_t ts)
{
	struct pulse_tx_event ev = {.qpn = qpn, .sent_32b = units, .sent_pkts = pkts, .ts_ns = ts};
	pulse_fw_on_tx(f->fw, thread, &ev);
}

void ft_ev(struct ft_fw *f, uint32_t qpn, uint16_t units, uint16_t pkts, uint32_t ts)
{
	ft_ev_thr(f, 0, qpn, units, pkts, ts);
}

/* ---- mailbox ----------------------------------------------------------- */

enum pulse_mb_status ft_raw(struct ft_fw *f, const uint8_t *req, uint32_t len, uint32_t cap,
			    uint32_t now)
{
	assert_true(cap <= sizeof(f->resp));
	/* poison the response so stale bytes cannot pass for an answer */
	memset(f->resp, 0xEE, sizeof(f->resp));
	uint32_t rlen = 0xDEADBEEF;
	enum pulse_mb_status st = pulse_fw_mailbox(f->fw, req, len, f->resp, cap, &rlen, now);
	f->last_resp_len = rlen;
	/* the firmware's rule: up to 100 ms back is noise and the clock stands
	 * still; any other step is time passing */
	if (now - f->nic_clock < 0u - 100000000u)
		f->nic_clock = now;
	if (cap < PULSE_MB_HEADER_SIZE) {
		assert_int_equal(rlen, 0);
		return st;
	}
	assert_true(rlen >= PULSE_MB_HEADER_SIZE);
	assert_true(rlen <= cap);
	struct pulse_mb_header h;
	assert_int_equal(pulse_mb_decode_header(f->resp, rlen, &h), PULSE_MB_OK);
	assert_int_equal(h.magic, PULSE_MB_MAGIC);
	assert_int_equal(h.version, PULSE_MB_VERSION);
	assert_true(h.type & PULSE_MB_RESPONSE);
	assert_int_equal(h.length, rlen);
	assert_int_equal(h.status, st);
	assert_int_equal(pulse_get_u16(f->resp + 10), 0); /* reserved */
	/* nothing written past the response */
	for (uint32_t i = rlen; i < cap && i < rlen + 64; i++)
		assert_int_equal(f->resp[i], 0xEE);
	return st;
}

enum pulse_mb_status ft_req(struct ft_fw *f, uint8_t type, const uint8_t *body, uint32_t body_len,
			    uint32_t cap, uint32_t now)
{
	uint16_t seq = ++f->seq;
	uint32_t len = pulse_mb_build_request(f->req, sizeof(f->req), type, seq, body, body_len);
	assert_int_equal(len, PULSE_MB_HEADER_SIZE + body_len);
	enum pulse_mb_status st = ft_raw(f, f->req, len, cap, now);
	if (cap >= PULSE_MB_HEADER_SIZE) {
		struct pulse_mb_header h = ft_resp_header(f);
		assert_int_equal(h.seq, seq);
		assert_int_equal(h.type, type | PULSE_MB_RESPONSE);
	}
	return st;
}

struct pulse_mb_header ft_resp_header(const struct ft_fw *f)
{
	struct pulse_mb_header h;
	assert_int_equal(pulse_mb_decode_header(f->resp, f->last_resp_len, &h), PULSE_MB_OK);
	return h;
}

const uint8_t *ft_resp_body(const struct ft_fw *f) { return f->resp + PULSE_MB_HEADER_SIZE; }

uint32_t ft_resp_body_len(const struct ft_fw *f) { return f->last_resp_len - PULSE_MB_HEADER_SIZE; }

enum pulse_mb_status ft_hello(struct ft_fw *f, uint32_t now, struct pulse_mb_hello *out)
{
	enum pulse_mb_status st = ft_req(f, PULSE_MB_HELLO, NULL, 0, FT_RESP_CAP, now);
	if (st == PULSE_MB_OK) {
		assert_int_equal(ft_resp_body_len(f), PULSE_MB_HELLO_SIZE);
		if (out)
			pulse_mb_decode_hello(ft_resp_body(f), out);
	}
	return st;
}

enum pulse_mb_status ft_configure(struct ft_fw *f, uint32_t now, const struct pulse_mb_config *c,
				  struct pulse_mb_hello *out)
{
	uint8_t body[PULSE_MB_CONFIG_SIZE];
	pulse_mb_encode_config(body, c);
	enum pulse_mb_status st = ft_req(f, PULSE_MB_CONFIGURE, body, sizeof(body), FT_RESP_CAP, now);
	if (st == PULSE_MB_OK) {
		assert_int_equal(ft_resp_body_len(f), PULSE_MB_HELLO_SIZE);
		struct pulse_mb_hello h;
		pulse_mb_decode_hello(ft_resp_body(f), &h);
		f->page_bytes = h.page_bytes;
		f->epoch_ns = h.epoch_ns;
		if (out)
			*out = h;
	}
	return st;
}

enum pulse_mb_status ft_poll(struct ft_fw *f, uint32_t now, uint16_t flags, uint64_t host_ns,
			     struct pulse_mb_poll_resp *out)
{
	uint8_t body[PULSE_MB_POLL_REQ_SIZE];
	struct pulse_mb_poll_req r = {.host_ns = host_ns, .flags = flags};
	pulse_mb_encode_poll_req(body, &r);
	enum pulse_mb_status st = ft_req(f, PULSE_MB_POLL, body, sizeof(body), FT_RESP_CAP, now);
	if (st == PULSE_MB_OK) {
		assert_int_equal(ft_resp_body_len(f), PULSE_MB_POLL_RESP_SIZE);
		struct pulse_mb_poll_resp p;
		pulse_mb_decode_poll_resp(ft_resp_body(f), &p);
		assert_int_equal(p.host_ns, host_ns);
		/* the NIC time of the poll; a clock passed in earlier than the
		 * last request's stands still */
		assert_int_equal((uint32_t)p.nic_ns, f->nic_clock);
		assert_int_equal(p.epoch_ns, f->epoch_ns);
		assert_true(p.nic_ns >= p.window_start_ns);
		if (out)
			*out = p;
	}
	return st;
}

enum pulse_mb_status ft_read_page(struct ft_fw *f, uint32_t now, uint32_t window_seq,
				  uint16_t page_seq, uint32_t cap)
{
	uint8_t body[PULSE_MB_PAGE_REQ_SIZE];
	struct pulse_mb_page_req r = {.window_seq = window_seq, .page_seq = page_seq};
	pulse_mb_encode_page_req(body, &r);
	return ft_req(f, PULSE_MB_READ_PAGE, body, sizeof(body), cap, now);
}

enum pulse_mb_status ft_reset(struct ft_fw *f, uint32_t now)
{
	enum pulse_mb_status st = ft_req(f, PULSE_MB_RESET, NULL, 0, FT_RESP_CAP, now);
	if (st == PULSE_MB_OK)
		assert_int_equal(ft_resp_body_len(f), 0);
	return st;
}

void ft_stats(struct ft_fw *f, uint32_t now, uint64_t out[PULSE_STAT_COUNT])
{
	assert_int_equal(ft_req(f, PULSE_MB_STATS, NULL, 0, FT_RESP_CAP, now), PULSE_MB_OK);
	const uint8_t *b = ft_resp_body(f);
	uint32_t bl = ft_resp_body_len(f);
	assert_true(bl >= PULSE_MB_STATS_HEADER_SIZE);
	uint16_t count = pulse_get_u16(b);
	assert_int_equal(count, PULSE_STAT_COUNT);
	assert_int_equal(bl, PULSE_MB_STATS_HEADER_SIZE + 8u * count);
	uint64_t direct[PULSE_STAT_COUNT];
	pulse_fw_stats(f->fw, direct);
	for (unsigned i = 0; i < PULSE_STAT_COUNT; i++) {
		out[i] = pulse_get_u64(b + PULSE_MB_STATS_HEADER_SIZE + 8u * i);
		/* STATS itself may bump request counters between the two reads,
		 * but never the measurement counters */
		if (i != PULSE_STAT_BAD_REQUESTS && i != PULSE_STAT_PAGES_SERVED &&
		    i != PULSE_STAT_POLLS)
			if (out[i] != direct[i]) {
				print_message("STATS %s: mailbox %llu, pulse_fw_stats %llu\n",
					      pulse_stat_name((enum pulse_stat)i),
					      (unsigned long long)out[i],
					      (unsigned long long)direct[i]);
				fail();
			}
	}
}

uint64_t ft_stat(struct ft_fw *f, enum pulse_stat s)
{
	uint64_t v[PULSE_STAT_COUNT];
	pulse_fw_stats(f->fw, v);
	return v[s];
}

void ft_dump_stats(struct ft_fw *f)
{
	uint64_t v[PULSE_STAT_COUNT];
	pulse_fw_stats(f->fw, v);
	for (unsigned i = 0; i < PULSE_STAT_COUNT; i++)
		if (v[i])
			print_message("  %s = %llu\n", pulse_stat_name((enum pulse_stat)i),
				      (unsigned long long)v[i]);
}

/* ---- uploads ----------------------------------------------------------- */

struct pulse_mb_page_info ft_decode_page(const uint8_t *body, uint32_t len, struct ft_map *map,
					 uint32_t *prev_last_qpn, uint32_t *records,
					 uint32_t *nonskip_records, uint32_t *flow_starts)
{
	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;
	assert_int_equal(pulse_mb_page_open(body, len, &info, &it), PULSE_MB_OK);
	struct pulse_mb_chunk c;
	uint16_t chunks = 0;
	uint32_t last_qpn = *prev_last_qpn;
	while (pulse_mb_page_next(&it, &c)) {
		assert_true(c.qpn != 0 && c.qpn <= PULSE_QPN_MASK && c.qpn != PULSE_QPN_RESERVED_HIGH);
		assert_true(c.records >= body && c.records + 4u * c.record_count <= body + len);
		if (c.flags & PULSE_MB_CHUNKF_CONT) {
			/* a continuation is the first chunk of a page and carries on
			 * the previous page's last flow */
			assert_int_equal(chunks, 0);
			assert_true(info.page_seq > 0);
			assert_int_equal(c.qpn, last_qpn);
		} else {
			*flow_starts += 1;
		}
		/* decode the raw records independently of the iterator */
		uint32_t e = c.base_epoch;
		uint32_t *want_e = malloc(sizeof(uint32_t) * (c.record_count + 1u));
		uint32_t *want_u = malloc(sizeof(uint32_t) * (c.record_count + 1u));
		assert_non_null(want_e);
		assert_non_null(want_u);
		unsigned nw = 0;
		for (uint16_t r = 0; r < c.record_count; r++) {
			uint32_t rec = pulse_get_u32(c.records + 4u * r);
			*records += 1;
			if ((rec & 0xFFu) == PULSE_MB_REC_SKIP) {
				e += rec >> 8;
				continue;
			}
			*nonskip_records += 1;
			e += rec & 0xFFu;
			if ((rec >> 8) != 0) {
				want_e[nw] = e;
				want_u[nw] = rec >> 8;
				nw++;
			}
		}
		struct pulse_mb_rec_iter ri;
		pulse_mb_rec_begin(&ri, &c);
		uint32_t ep, un;
		unsigned ng = 0;
		uint32_t prev_ep = 0;
		int first = 1;
		while (pulse_mb_rec_next(&ri, &ep, &un)) {
			if (un == 0)
				continue;
			assert_true(ng < nw);
			assert_int_equal(ep, want_e[ng]);
			assert_int_equal(un, want_u[ng]);
			/* records are in epoch order */
			if (!first)
				assert_true(ep >= prev_ep);
			first = 0;
			prev_ep = ep;
			ft_map_add(map, c.qpn, ep, un);
			ng++;
		}
		assert_int_equal(ng, nw);
		free(want_e);
		free(want_u);
		last_qpn = c.qpn;
		chunks++;
	}
	assert_int_equal(chunks, info.chunk_count);
	*prev_last_qpn = last_qpn;
	return info;
}

void ft_upload_free(struct ft_upload *u) { ft_map_free(&u->map); }

void ft_read_upload(struct ft_fw *f, uint32_t now, struct ft_upload *u)
{
	uint32_t prev_qpn = 0;
	uint32_t page_bytes = f->page_bytes;
	for (uint32_t p = 0; p < u->poll.page_count; p++) {
		assert_int_equal(ft_read_page(f, now, u->poll.window_seq, (uint16_t)p, FT_RESP_CAP),
				 PULSE_MB_OK);
		assert_true(f->last_resp_len <= page_bytes + PULSE_MB_HEADER_SIZE);
		uint32_t before = u->records;
		struct pulse_mb_page_info info =
			ft_decode_page(ft_resp_body(f), ft_resp_body_len(f), &u->map, &prev_qpn,
				       &u->records, &u->nonskip_records, &u->flow_starts);
		(void)before;
		assert_int_equal(info.window_seq, u->poll.window_seq);
		assert_int_equal(info.page_seq, p);
		assert_int_equal(info.page_count, u->poll.page_count);
		assert_int_equal(!!(info.flags & PULSE_MB_PAGEF_LAST), p + 1 == u->poll.page_count);
		u->chunks += info.chunk_count;
		u->body_bytes += ft_resp_body_len(f);
		u->msg_bytes += f->last_resp_len;
		u->pages_read++;
	}
	ft_map_normalize(&u->map);
	/* the POLL's summary agrees with what the pages hold. A QP may appear
	 * as two flows in one upload (an aged flow's last racing event, and the
	 * QP's new flow), so flows counts flows, not distinct QPNs. */
	if (u->poll.flows != u->flow_starts)
		print_message("poll says %u flows, pages start %u flows (%zu QPNs)\n", u->poll.flows,
			      u->flow_starts, ft_map_qpn_count(&u->map));
	assert_int_equal(u->poll.flows, u->flow_starts);
	assert_true(ft_map_qpn_count(&u->map) <= u->flow_starts);
	if (u->poll.records != u->records && u->poll.records != u->nonskip_records)
		print_message("poll says %u records, pages hold %u (%u not skips)\n",
			      u->poll.records, u->records, u->nonskip_records);
	assert_true(u->poll.records == u->records || u->poll.records == u->nonskip_records);
	if (u->poll.upload_bytes != u->body_bytes && u->poll.upload_bytes != u->msg_bytes)
		print_message("poll says %u upload bytes, pages: %u body / %u message bytes\n",
			      u->poll.upload_bytes, u->body_bytes, u->msg_bytes);
	assert_true(u->poll.upload_bytes == u->body_bytes || u->poll.upload_bytes == u->msg_bytes);
}

void ft_poll_upload(struct ft_fw *f, uint32_t now, uint16_t flags, struct ft_upload *u)
{
	memset(u, 0, sizeof(*u));
	ft_map_init(&u->map);
	assert_int_equal(ft_poll(f, now, flags, 0x0123456789abcdefull, &u->poll), PULSE_MB_OK);
	ft_read_upload(f, now, u);
}

struct pulse_mb_config ft_config(uint32_t epoch_ns, uint32_t window_ns, uint16_t page_bytes)
{
	struct pulse_mb_config c = {.epoch_ns = epoch_ns,
				    .window_ns = window_ns,
				    .page_bytes = page_bytes,
				    .clip_units_per_pkt = 0,
				    .flow_limit = 0,
				    .pool_limit = 0};
	return c;
}
