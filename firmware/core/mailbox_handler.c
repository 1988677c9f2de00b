/* The firmware end of the mailbox: decode, dispatch, answer. Every request,
 * however malformed, gets a well-formed response with a status. */
#include "fw_internal.h"
#include "pulse/le.h"

void pulse_fw_stats(struct pulse_fw *fw, uint64_t out[PULSE_STAT_COUNT])
{
	for (uint32_t k = 0; k < PULSE_STAT_COUNT; k++)
		out[k] = 0;
	for (uint32_t i = 0; i <= fw->lim.max_threads; i++)
		for (uint32_t k = 0; k < PULSE_STAT_COUNT; k++)
			out[k] += atomic_load_explicit(&fw->threads[i].ctr[k], memory_order_relaxed);
	/* The open window's traffic is still in its flows; closed windows' was
	 * folded into the mailbox thread's totals at their polls. */
	uint32_t side = FW_GEN_SIDE(atomic_load_explicit(&fw->gen, memory_order_relaxed));
	for (uint32_t i = 0; i < fw->cfg.flow_limit; i++) {
		struct fw_flow *f = &fw->flows[i];
		if (atomic_load_explicit(&f->state, memory_order_acquire) == FLOW_FREE)
			continue;
		struct fw_side *s = &f->side[side];
		uint64_t ep = atomic_load_explicit(&s->ev_pkts, memory_order_relaxed);
		out[PULSE_STAT_EVENTS] += (uint32_t)ep;
		out[PULSE_STAT_PKTS] += ep >> 32;
		out[PULSE_STAT_UNITS] += atomic_load_explicit(&s->units, memory_order_relaxed) +
					 atomic_load_explicit(&s->open_units, memory_order_relaxed);
	}
	out[PULSE_STAT_FLOWS_ACTIVE] = out[PULSE_STAT_FLOWS_CREATED] - fw->flows_unpublished;
	out[PULSE_STAT_POOL_BLOCKS] = fw->cfg.pool_limit;
	out[PULSE_STAT_POOL_USED] = atomic_load_explicit(&fw->blocks_in_use, memory_order_relaxed);
	out[PULSE_STAT_POOL_PEAK] = atomic_load_explicit(&fw->blocks_peak, memory_order_relaxed);
	out[PULSE_STAT_DROP_BAD_THREAD] = atomic_load_explicit(&fw->drops_bad_thread, memory_order_relaxed);
	out[PULSE_STAT_DROP_PAUSED] = atomic_load_explicit(&fw->drops_paused, memory_order_relaxed);
}

static uint32_t encode_stats(struct pulse_fw *fw, uint8_t *body)
{
	uint64_t v[PULSE_STAT_COUNT];
	pulse_fw_stats(fw, v);
	pulse_put_u16(body, PULSE_STAT_COUNT);
	pulse_put_u16(body + 2, 0);
	pulse_put_u32(body + 4, 0);
	for (uint32_t k = 0; k < PULSE_STAT_COUNT; k++)
		pulse_put_u64(body + PULSE_MB_STATS_HEADER_SIZE + 8u * k, v[k]);
	return PULSE_MB_STATS_HEADER_SIZE + 8u * PULSE_STAT_COUNT;
}

/* Handles a decoded request; writes the body into `body` (cap bytes). */
static enum pulse_mb_status dispatch(struct pulse_fw *fw, const struct pulse_mb_header *h,
				     const uint8_t *in, uint32_t in_len, uint8_t *body,
				     uint32_t cap, uint32_t *len, uint32_t resp_cap)
{
	struct pulse_mb_hello hello;
	switch (h->type) {
	case PULSE_MB_HELLO:
		if (cap < PULSE_MB_HELLO_SIZE)
			return PULSE_MB_E_NOSPACE;
		fw_hello(fw, &hello);
		pulse_mb_encode_hello(body, &hello);
		*len = PULSE_MB_HELLO_SIZE;
		return PULSE_MB_OK;
	case PULSE_MB_CONFIGURE: {
		if (in_len < PULSE_MB_CONFIG_SIZE)
			return PULSE_MB_E_TRUNCATED;
		if (cap < PULSE_MB_HELLO_SIZE)
			return PULSE_MB_E_NOSPACE;
		struct pulse_mb_config cfg;
		pulse_mb_decode_config(in, &cfg);
		enum pulse_mb_status st = fw_config_apply(fw, &cfg, resp_cap);
		fw_hello(fw, &hello);
		pulse_mb_encode_hello(body, &hello);
		*len = PULSE_MB_HELLO_SIZE;
		return st;
	}
	case PULSE_MB_POLL: {
		if (in_len < PULSE_MB_POLL_REQ_SIZE)
			return PULSE_MB_E_TRUNCATED;
		if (cap < PULSE_MB_POLL_RESP_SIZE)
			return PULSE_MB_E_NOSPACE;
		struct pulse_mb_poll_req req;
		struct pulse_mb_poll_resp resp;
		pulse_mb_decode_poll_req(in, &req);
		enum pulse_mb_status st = fw_poll(fw, &req, &resp);
		if (st == PULSE_MB_OK) {
			pulse_mb_encode_poll_resp(body, &resp);
			*len = PULSE_MB_POLL_RESP_SIZE;
		}
		return st;
	}
	case PULSE_MB_READ_PAGE: {
		if (in_len < PULSE_MB_PAGE_REQ_SIZE)
			return PULSE_MB_E_TRUNCATED;
		struct pulse_mb_page_req req;
		pulse_mb_decode_page_req(in, &req);
		return fw_read_page(fw, &req, body, cap, len);
	}
	case PULSE_MB_STATS:
		if (cap < PULSE_MB_STATS_HEADER_SIZE + 8u * PULSE_STAT_COUNT)
			return PULSE_MB_E_NOSPACE;
		*len = encode_stats(fw, body);
		return PULSE_MB_OK;
	case PULSE_MB_RESET:
		return fw_reset(fw, 0);
	default:
		return PULSE_MB_E_TYPE;
	}
}

enum pulse_mb_status pulse_fw_mailbox(struct pulse_fw *fw, const uint8_t *req, uint32_t req_len,
				      uint8_t *resp, uint32_t resp_cap, uint32_t *resp_len,
				      uint32_t now_ns)
{
	*resp_len = 0;
	if (resp_cap < PULSE_MB_HEADER_SIZE)
		return PULSE_MB_E_NOSPACE;
	uint32_t cap = resp_cap > PULSE_MB_MAX_MESSAGE ? PULSE_MB_MAX_MESSAGE : resp_cap;
	fw_clock_tick(fw, now_ns);

	struct pulse_mb_header h;
	uint32_t body_len = 0;
	enum pulse_mb_status st = pulse_mb_decode_header(req, req_len, &h);
	if (st == PULSE_MB_OK) {
		st = dispatch(fw, &h, req + PULSE_MB_HEADER_SIZE, h.length - PULSE_MB_HEADER_SIZE,
			      resp + PULSE_MB_HEADER_SIZE, cap - PULSE_MB_HEADER_SIZE, &body_len, cap);
	} else {
		/* Answer what we can read of the header so the host can match it. */
		h.type = req_len >= 4 ? req[3] : 0;
		h.seq = req_len >= 8 ? pulse_get_u16(req + 6) : 0;
		if (st == PULSE_MB_E_VERSION && cap - PULSE_MB_HEADER_SIZE >= PULSE_MB_HELLO_SIZE) {
			/* Tell a host of another version which versions we speak. */
			struct pulse_mb_hello hello;
			fw_hello(fw, &hello);
			pulse_mb_encode_hello(resp + PULSE_MB_HEADER_SIZE, &hello);
			body_len = PULSE_MB_HELLO_SIZE;
		}
	}
	if (st != PULSE_MB_OK && st != PULSE_MB_E_BUSY && st != PULSE_MB_E_TIMEOUT)
		fw_ctr_add(&fw->mb->ctr[PULSE_STAT_BAD_REQUESTS], 1);
	if (st != PULSE_MB_OK && !(st == PULSE_MB_E_VERSION || h.type == PULSE_MB_CONFIGURE))
		body_len = 0;
	struct pulse_mb_header out = {
		.magic = PULSE_MB_MAGIC,
		.version = PULSE_MB_VERSION,
		.type = (uint8_t)(h.type | PULSE_MB_RESPONSE),
		.length = (uint16_t)(PULSE_MB_HEADER_SIZE + body_len),
		.seq = h.seq,
		.status = (uint16_t)st,
	};
	pulse_mb_encode_header(resp, &out);
	*resp_len = PULSE_MB_HEADER_SIZE + body_len;
	return st;
}
