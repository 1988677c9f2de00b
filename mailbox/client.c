/* Host side of the mailbox: see pulse/nic_client.h. */
#define _POSIX_C_SOURCE 200809L
#include "pulse/nic_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/le.h"

#define REQ_CAP 64u

static void set_error(struct pulse_nic_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
	va_end(ap);
}

int pulse_nic_client_init(struct pulse_nic_client *c, pulse_nic_exchange_fn fn, void *ctx,
			  uint32_t resp_cap, uint32_t timeout_ms)
{
	memset(c, 0, sizeof *c);
	if (resp_cap < PULSE_MB_MIN_RESPONSE)
		resp_cap = PULSE_MB_MIN_RESPONSE;
	if (resp_cap > PULSE_MB_MAX_MESSAGE)
		resp_cap = PULSE_MB_MAX_MESSAGE;
	c->exchange = fn;
	c->ctx = ctx;
	c->timeout_ms = timeout_ms;
	c->resp_cap = resp_cap;
	c->req = malloc(REQ_CAP);
	c->resp = malloc(resp_cap);
	if (!c->req || !c->resp) {
		pulse_nic_client_free(c);
		return PULSE_NIC_ENOMEM;
	}
	return PULSE_NIC_OK;
}

void pulse_nic_client_free(struct pulse_nic_client *c)
{
	free(c->req);
	free(c->resp);
	c->req = c->resp = NULL;
}

static const char *type_name(uint8_t type)
{
	static const char *const n[] = {"?", "HELLO", "CONFIGURE", "POLL", "READ_PAGE", "STATS", "RESET"};
	return type < sizeof n / sizeof n[0] ? n[type] : "?";
}

/* One request and its response; on success body and len give the response body. */
static int exchange(struct pulse_nic_client *c, uint8_t type, const uint8_t *req_body,
		    uint32_t req_len, const uint8_t **body, uint32_t *len)
{
	uint16_t seq = ++c->seq;
	uint32_t n = pulse_mb_build_request(c->req, REQ_CAP, type, seq, req_body, req_len);
	uint32_t got = 0;
	if (c->exchange(c->ctx, c->req, n, c->resp, c->resp_cap, &got, c->timeout_ms) != 0) {
		c->err_transport++;
		set_error(c, "%s: no response from the NIC agent (transport failed or timed out)",
			  type_name(type));
		return PULSE_NIC_ETRANSPORT;
	}
	struct pulse_mb_header h;
	enum pulse_mb_status st = pulse_mb_decode_header(c->resp, got, &h);
	if (st == PULSE_MB_E_VERSION) {
		c->err_version++;
		set_error(c, "%s: NIC agent answered with protocol version %u, this host speaks %u",
			  type_name(type), h.version, PULSE_MB_VERSION);
		return PULSE_NIC_EVERSION;
	}
	if (st != PULSE_MB_OK) {
		c->err_short++;
		set_error(c, "%s: malformed response (%s, %u bytes)", type_name(type),
			  pulse_mb_status_name(st), got);
		return PULSE_NIC_EPROTO;
	}
	if (h.type != (type | PULSE_MB_RESPONSE) || h.seq != seq) {
		c->err_short++;
		set_error(c, "%s: response to another request (type 0x%02x seq %u, expected seq %u)",
			  type_name(type), h.type, h.seq, seq);
		return PULSE_NIC_EPROTO;
	}
	*body = c->resp + PULSE_MB_HEADER_SIZE;
	*len = h.length - PULSE_MB_HEADER_SIZE;
	c->last_status = (enum pulse_mb_status)h.status;
	if (h.status != PULSE_MB_OK) {
		c->err_status++;
		set_error(c, "%s: NIC agent refused: %s", type_name(type),
			  pulse_mb_status_name((enum pulse_mb_status)h.status));
		return PULSE_NIC_ESTATUS;
	}
	return PULSE_NIC_OK;
}

static int take_hello(struct pulse_nic_client *c, const uint8_t *body, uint32_t len)
{
	if (len < PULSE_MB_HELLO_SIZE) {
		c->err_short++;
		set_error(c, "HELLO: short body (%u bytes)", len);
		return PULSE_NIC_EPROTO;
	}
	pulse_mb_decode_hello(body, &c->hello);
	if (c->hello.proto_min > PULSE_MB_VERSION || c->hello.proto_max < PULSE_MB_VERSION) {
		c->err_version++;
		set_error(c, "NIC agent speaks protocol %u..%u, this host %u", c->hello.proto_min,
			  c->hello.proto_max, PULSE_MB_VERSION);
		return PULSE_NIC_EVERSION;
	}
	return PULSE_NIC_OK;
}

int pulse_nic_hello(struct pulse_nic_client *c)
{
	const uint8_t *body;
	uint32_t len;
	int rc = exchange(c, PULSE_MB_HELLO, NULL, 0, &body, &len);
	return rc ? rc : take_hello(c, body, len);
}

int pulse_nic_configure(struct pulse_nic_client *c, const struct pulse_mb_config *cfg)
{
	uint8_t b[PULSE_MB_CONFIG_SIZE];
	const uint8_t *body;
	uint32_t len;
	pulse_mb_encode_config(b, cfg);
	int rc = exchange(c, PULSE_MB_CONFIGURE, b, sizeof b, &body, &len);
	return rc ? rc : take_hello(c, body, len);
}

int pulse_nic_reset(struct pulse_nic_client *c)
{
	const uint8_t *body;
	uint32_t len;
	return exchange(c, PULSE_MB_RESET, NULL, 0, &body, &len);
}

int pulse_nic_stats(struct pulse_nic_client *c, uint64_t *out, uint32_t max, uint32_t *count)
{
	const uint8_t *body;
	uint32_t len;
	int rc = exchange(c, PULSE_MB_STATS, NULL, 0, &body, &len);
	if (rc)
		return rc;
	uint32_t n = len >= PULSE_MB_STATS_HEADER_SIZE ? pulse_get_u16(body) : 0;
	if (len < PULSE_MB_STATS_HEADER_SIZE || len < PULSE_MB_STATS_HEADER_SIZE + 8u * n) {
		c->err_short++;
		set_error(c, "STATS: short body (%u bytes)", len);
		return PULSE_NIC_EPROTO;
	}
	*count = n < max ? n : max;
	for (uint32_t i = 0; i < *count; i++)
		out[i] = pulse_get_u64(body + PULSE_MB_STATS_HEADER_SIZE + 8u * i);
	return PULSE_NIC_OK;
}

/* --- windows ----------------------------------------------------------- */

void pulse_window_init(struct pulse_window *w)
{
	memset(w, 0, sizeof *w);
}

void pulse_window_free(struct pulse_window *w)
{
	for (uint32_t i = 0; i < w->flow_cap; i++) {
		free(w->flows[i].epoch);
		free(w->flows[i].bytes);
	}
	free(w->flows);
	pulse_window_init(w);
}

static void window_clear(struct pulse_window *w)
{
	struct pulse_qp_series *flows = w->flows;
	uint32_t cap = w->flow_cap;
	for (uint32_t i = 0; i < cap; i++) {
		flows[i].count = 0;
		flows[i].total_bytes = 0;
		flows[i].qpn = 0;
	}
	memset(w, 0, sizeof *w);
	w->flows = flows;
	w->flow_cap = cap;
}

static struct pulse_qp_series *series_new(struct pulse_window *w, uint32_t qpn)
{
	if (w->flow_count == w->flow_cap) {
		uint32_t cap = w->flow_cap ? 2u * w->flow_cap : 64u;
		struct pulse_qp_series *f = realloc(w->flows, cap * sizeof *f);
		if (!f)
			return NULL;
		memset(f + w->flow_cap, 0, (cap - w->flow_cap) * sizeof *f);
		w->flows = f;
		w->flow_cap = cap;
	}
	struct pulse_qp_series *s = &w->flows[w->flow_count++];
	s->qpn = qpn;
	s->count = 0;
	s->total_bytes = 0;
	return s;
}

static int series_add(struct pulse_qp_series *s, uint32_t epoch, uint64_t bytes)
{
	s->total_bytes += bytes;
	if (s->count && s->epoch[s->count - 1] == epoch) {
		s->bytes[s->count - 1] += bytes;
		return 0;
	}
	if (s->count == s->cap) {
		uint32_t cap = s->cap ? 2u * s->cap : 16u;
		uint32_t *e = realloc(s->epoch, cap * sizeof *e);
		if (!e)
			return -1;
		s->epoch = e;
		uint64_t *b = realloc(s->bytes, cap * sizeof *b);
		if (!b)
			return -1;
		s->bytes = b;
		s->cap = cap;
	}
	s->epoch[s->count] = epoch;
	s->bytes[s->count] = bytes;
	s->count++;
	return 0;
}

static int by_qpn(const void *a, const void *b)
{
	uint32_t x = ((const struct pulse_qp_series *)a)->qpn;
	uint32_t y = ((const struct pulse_qp_series *)b)->qpn;
	return x < y ? -1 : x > y;
}

/* A QP can appear twice in one upload when aging released its slot just as
 * it started sending again; fold the second series into the first. */
static int merge_duplicates(struct pulse_window *w)
{
	if (w->flow_count > 1)
		qsort(w->flows, w->flow_count, sizeof *w->flows, by_qpn);
	uint32_t out = 0;
	for (uint32_t i = 0; i < w->flow_count; i++) {
		if (out && w->flows[out - 1].qpn == w->flows[i].qpn) {
			struct pulse_qp_series *dst = &w->flows[out - 1], *src = &w->flows[i];
			struct pulse_qp_series m = {.qpn = dst->qpn};
			uint32_t a = 0, b = 0;
			while (a < dst->count || b < src->count) {
				int take_a = b >= src->count ||
					     (a < dst->count && dst->epoch[a] <= src->epoch[b]);
				uint32_t e = take_a ? dst->epoch[a] : src->epoch[b];
				uint64_t v = take_a ? dst->bytes[a++] : src->bytes[b++];
				if (series_add(&m, e, v))
					return -1;
			}
			free(dst->epoch);
			free(dst->bytes);
			dst->epoch = m.epoch;
			dst->bytes = m.bytes;
			dst->count = m.count;
			dst->cap = m.cap;
			dst->total_bytes = m.total_bytes;
			src->count = 0;
			src->total_bytes = 0;
			continue;
		}
		if (out != i) {
			struct pulse_qp_series t = w->flows[out];
			w->flows[out] = w->flows[i];
			w->flows[i] = t;
		}
		out++;
	}
	w->flow_count = out;
	return 0;
}

/* Decodes one page into w. Returns 0, or -1 with the cause counted. */
static int take_page(struct pulse_nic_client *c, struct pulse_window *w, uint16_t page,
		     const uint8_t *body, uint32_t len, struct pulse_qp_series **last)
{
	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;
	if (pulse_mb_page_open(body, len, &info, &it) != PULSE_MB_OK) {
		c->err_short++;
		set_error(c, "page %u of window %u: chunks run past the page (%u bytes)", page,
			  w->window_seq, len);
		return -1;
	}
	if (info.window_seq != w->window_seq) {
		c->err_window++;
		set_error(c, "page %u: belongs to window %u, expected %u", page, info.window_seq,
			  w->window_seq);
		return -1;
	}
	if (info.page_count != w->page_count) {
		c->err_count_changed++;
		set_error(c, "window %u: page count changed mid-upload (%u, was %u)", w->window_seq,
			  info.page_count, w->page_count);
		return -1;
	}
	if (info.page_seq != page) {
		c->err_repeat++;
		set_error(c, "window %u: got page %u when page %u was asked (repeated or lost page)",
			  w->window_seq, info.page_seq, page);
		return -1;
	}
	if ((page + 1u == w->page_count) != ((info.flags & PULSE_MB_PAGEF_LAST) != 0)) {
		c->err_count_changed++;
		set_error(c, "window %u: LAST flag on page %u disagrees with page count %u",
			  w->window_seq, page, w->page_count);
		return -1;
	}
	struct pulse_mb_chunk ch;
	while (pulse_mb_page_next(&it, &ch)) {
		struct pulse_qp_series *s;
		if (ch.flags & PULSE_MB_CHUNKF_CONT) {
			if (!*last || (*last)->qpn != ch.qpn) {
				c->err_short++;
				set_error(c, "window %u page %u: continuation of QPN 0x%06x follows no chunk of it",
					  w->window_seq, page, ch.qpn);
				return -1;
			}
			s = *last;
		} else {
			s = series_new(w, ch.qpn);
			if (!s)
				return -1;
		}
		struct pulse_mb_rec_iter ri;
		uint32_t e, units;
		pulse_mb_rec_begin(&ri, &ch);
		while (pulse_mb_rec_next(&ri, &e, &units))
			if (series_add(s, e, (uint64_t)units * 32u))
				return -1;
		*last = s; /* series_new may move the array; refresh every chunk */
	}
	return 0;
}

int pulse_nic_poll(struct pulse_nic_client *c, uint16_t flags, uint64_t (*host_ns_now)(void),
		   struct pulse_window *w)
{
	window_clear(w);
	uint8_t b[PULSE_MB_POLL_REQ_SIZE];
	struct pulse_mb_poll_req req = {.flags = flags};
	const uint8_t *body;
	uint32_t len;
	w->host_send_ns = req.host_ns = host_ns_now();
	pulse_mb_encode_poll_req(b, &req);
	int rc = exchange(c, PULSE_MB_POLL, b, sizeof b, &body, &len);
	if (rc == PULSE_NIC_ESTATUS && c->last_status == PULSE_MB_E_BUSY) {
		/* Our previous drain did not finish (its gap is already recorded):
		 * let the firmware drop that upload. */
		req.flags |= PULSE_MB_POLL_FORCE;
		w->host_send_ns = req.host_ns = host_ns_now();
		pulse_mb_encode_poll_req(b, &req);
		rc = exchange(c, PULSE_MB_POLL, b, sizeof b, &body, &len);
	}
	w->host_recv_ns = host_ns_now();
	if (rc)
		return rc;
	if (len < PULSE_MB_POLL_RESP_SIZE) {
		c->err_short++;
		set_error(c, "POLL: short body (%u bytes)", len);
		return PULSE_NIC_EPROTO;
	}
	struct pulse_mb_poll_resp p;
	pulse_mb_decode_poll_resp(body, &p);
	w->window_seq = p.window_seq;
	w->page_count = p.page_count;
	w->poll_flags = p.flags;
	w->nic_start_ns = p.window_start_ns;
	w->nic_end_ns = p.nic_ns;
	w->epoch_ns = p.epoch_ns;
	w->flows_aged = p.flows_aged;
	w->upload_exchanges = 1;

	struct pulse_qp_series *last = NULL;
	uint16_t page = 0;
	for (; page < w->page_count; page++) {
		uint8_t pb[PULSE_MB_PAGE_REQ_SIZE];
		struct pulse_mb_page_req pr = {.window_seq = w->window_seq, .page_seq = page};
		pulse_mb_encode_page_req(pb, &pr);
		rc = exchange(c, PULSE_MB_READ_PAGE, pb, sizeof pb, &body, &len);
		w->upload_exchanges++;
		if (rc == PULSE_NIC_ETRANSPORT) {
			/* The firmware serves the last page again, so one retry
			 * is safe whether the request or the answer was lost. */
			rc = exchange(c, PULSE_MB_READ_PAGE, pb, sizeof pb, &body, &len);
			w->upload_exchanges++;
		}
		if (rc || take_page(c, w, page, body, len, &last))
			break;
		w->upload_bytes += len;
	}
	w->pages_missing = (uint32_t)(w->page_count - page);
	w->complete = w->pages_missing == 0;
	if (merge_duplicates(w))
		return PULSE_NIC_ENOMEM;
	return PULSE_NIC_OK;
}

const struct pulse_qp_series *pulse_window_find(const struct pulse_window *w, uint32_t qpn)
{
	uint32_t lo = 0, hi = w->flow_count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (w->flows[mid].qpn < qpn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->flow_count && w->flows[lo].qpn == qpn ? &w->flows[lo] : NULL;
}
