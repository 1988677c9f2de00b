/* Encoders and decoders of the mailbox protocol (pulse/mailbox_proto.h).
 * Freestanding: the firmware and the host link the same code. */
#include "pulse/mailbox_proto.h"

#include <stddef.h>

#include "pulse/le.h"

enum pulse_mb_status pulse_mb_decode_header(const uint8_t *buf, uint32_t len,
					    struct pulse_mb_header *h)
{
	h->magic = 0;
	h->version = 0;
	h->type = 0;
	h->length = 0;
	h->seq = 0;
	h->status = 0;
	if (len < PULSE_MB_HEADER_SIZE)
		return PULSE_MB_E_TRUNCATED;
	h->magic = pulse_get_u16(buf);
	h->version = buf[2];
	h->type = buf[3];
	h->length = pulse_get_u16(buf + 4);
	h->seq = pulse_get_u16(buf + 6);
	h->status = pulse_get_u16(buf + 8);
	if (h->magic != PULSE_MB_MAGIC)
		return PULSE_MB_E_MAGIC;
	if (h->version != PULSE_MB_VERSION)
		return PULSE_MB_E_VERSION;
	/* Transports deliver whole messages, so any disagreement between the
	 * length field and the bytes received is a framing error. */
	if (h->length < PULSE_MB_HEADER_SIZE || h->length != len)
		return PULSE_MB_E_TRUNCATED;
	return PULSE_MB_OK;
}

void pulse_mb_encode_header(uint8_t *buf, const struct pulse_mb_header *h)
{
	pulse_put_u16(buf, h->magic);
	buf[2] = h->version;
	buf[3] = h->type;
	pulse_put_u16(buf + 4, h->length);
	pulse_put_u16(buf + 6, h->seq);
	pulse_put_u16(buf + 8, h->status);
	pulse_put_u16(buf + 10, 0);
}

uint32_t pulse_mb_build_request(uint8_t *buf, uint32_t cap, uint8_t type, uint16_t seq,
				const uint8_t *body, uint32_t body_len)
{
	uint32_t len = PULSE_MB_HEADER_SIZE + body_len;
	if (len > cap || len > PULSE_MB_MAX_MESSAGE)
		return 0;
	struct pulse_mb_header h = {
		.magic = PULSE_MB_MAGIC,
		.version = PULSE_MB_VERSION,
		.type = type,
		.length = (uint16_t)len,
		.seq = seq,
		.status = 0,
	};
	pulse_mb_encode_header(buf, &h);
	for (uint32_t i = 0; i < body_len; i++)
		buf[PULSE_MB_HEADER_SIZE + i] = body[i];
	return len;
}

void pulse_mb_encode_hello(uint8_t *o, const struct pulse_mb_hello *m)
{
	pulse_put_u16(o, m->proto_min);
	pulse_put_u16(o + 2, m->proto_max);
	pulse_put_u32(o + 4, m->fw_version);
	pulse_put_u32(o + 8, m->platform);
	pulse_put_u32(o + 12, m->max_flows);
	pulse_put_u32(o + 16, m->pool_blocks);
	pulse_put_u16(o + 20, m->records_per_block);
	pulse_put_u16(o + 22, m->max_threads);
	pulse_put_u32(o + 24, m->epoch_ns);
	pulse_put_u32(o + 28, m->window_ns);
	pulse_put_u16(o + 32, m->page_bytes);
	pulse_put_u16(o + 34, m->clip_units_per_pkt);
	pulse_put_u32(o + 36, m->flow_limit);
	pulse_put_u64(o + 40, m->instance_id);
}

void pulse_mb_decode_hello(const uint8_t *i, struct pulse_mb_hello *m)
{
	m->proto_min = pulse_get_u16(i);
	m->proto_max = pulse_get_u16(i + 2);
	m->fw_version = pulse_get_u32(i + 4);
	m->platform = pulse_get_u32(i + 8);
	m->max_flows = pulse_get_u32(i + 12);
	m->pool_blocks = pulse_get_u32(i + 16);
	m->records_per_block = pulse_get_u16(i + 20);
	m->max_threads = pulse_get_u16(i + 22);
	m->epoch_ns = pulse_get_u32(i + 24);
	m->window_ns = pulse_get_u32(i + 28);
	m->page_bytes = pulse_get_u16(i + 32);
	m->clip_units_per_pkt = pulse_get_u16(i + 34);
	m->flow_limit = pulse_get_u32(i + 36);
	m->instance_id = pulse_get_u64(i + 40);
}

void pulse_mb_encode_config(uint8_t *o, const struct pulse_mb_config *m)
{
	pulse_put_u32(o, m->epoch_ns);
	pulse_put_u32(o + 4, m->window_ns);
	pulse_put_u16(o + 8, m->page_bytes);
	pulse_put_u16(o + 10, m->clip_units_per_pkt);
	pulse_put_u32(o + 12, m->flow_limit);
	pulse_put_u32(o + 16, m->pool_limit);
}

void pulse_mb_decode_config(const uint8_t *i, struct pulse_mb_config *m)
{
	m->epoch_ns = pulse_get_u32(i);
	m->window_ns = pulse_get_u32(i + 4);
	m->page_bytes = pulse_get_u16(i + 8);
	m->clip_units_per_pkt = pulse_get_u16(i + 10);
	m->flow_limit = pulse_get_u32(i + 12);
	m->pool_limit = pulse_get_u32(i + 16);
}

void pulse_mb_encode_poll_req(uint8_t *o, const struct pulse_mb_poll_req *m)
{
	pulse_put_u64(o, m->host_ns);
	pulse_put_u16(o + 8, m->flags);
	pulse_put_u16(o + 10, 0);
}

void pulse_mb_decode_poll_req(const uint8_t *i, struct pulse_mb_poll_req *m)
{
	m->host_ns = pulse_get_u64(i);
	m->flags = pulse_get_u16(i + 8);
}

void pulse_mb_encode_poll_resp(uint8_t *o, const struct pulse_mb_poll_resp *m)
{
	pulse_put_u32(o, m->window_seq);
	pulse_put_u16(o + 4, m->page_count);
	pulse_put_u16(o + 6, m->flags);
	pulse_put_u64(o + 8, m->host_ns);
	pulse_put_u64(o + 16, m->nic_ns);
	pulse_put_u64(o + 24, m->window_start_ns);
	pulse_put_u32(o + 32, m->epoch_ns);
	pulse_put_u32(o + 36, m->flows);
	pulse_put_u32(o + 40, m->records);
	pulse_put_u32(o + 44, m->upload_bytes);
	pulse_put_u32(o + 48, m->flows_aged);
	pulse_put_u32(o + 52, 0);
}

void pulse_mb_decode_poll_resp(const uint8_t *i, struct pulse_mb_poll_resp *m)
{
	m->window_seq = pulse_get_u32(i);
	m->page_count = pulse_get_u16(i + 4);
	m->flags = pulse_get_u16(i + 6);
	m->host_ns = pulse_get_u64(i + 8);
	m->nic_ns = pulse_get_u64(i + 16);
	m->window_start_ns = pulse_get_u64(i + 24);
	m->epoch_ns = pulse_get_u32(i + 32);
	m->flows = pulse_get_u32(i + 36);
	m->records = pulse_get_u32(i + 40);
	m->upload_bytes = pulse_get_u32(i + 44);
	m->flows_aged = pulse_get_u32(i + 48);
}

void pulse_mb_encode_page_req(uint8_t *o, const struct pulse_mb_page_req *m)
{
	pulse_put_u32(o, m->window_seq);
	pulse_put_u16(o + 4, m->page_seq);
	pulse_put_u16(o + 6, 0);
}

void pulse_mb_decode_page_req(const uint8_t *i, struct pulse_mb_page_req *m)
{
	m->window_seq = pulse_get_u32(i);
	m->page_seq = pulse_get_u16(i + 4);
}

enum pulse_mb_status pulse_mb_page_open(const uint8_t *body, uint32_t len,
					struct pulse_mb_page_info *info,
					struct pulse_mb_page_iter *it)
{
	if (len < PULSE_MB_PAGE_HEADER_SIZE)
		return PULSE_MB_E_TRUNCATED;
	info->window_seq = pulse_get_u32(body);
	info->page_seq = pulse_get_u16(body + 4);
	info->page_count = pulse_get_u16(body + 6);
	info->chunk_count = pulse_get_u16(body + 8);
	info->flags = pulse_get_u16(body + 10);
	/* Validate every chunk up front so iteration cannot run off the page. */
	const uint8_t *p = body + PULSE_MB_PAGE_HEADER_SIZE, *end = body + len;
	for (uint32_t c = 0; c < info->chunk_count; c++) {
		if ((size_t)(end - p) < PULSE_MB_CHUNK_HEADER_SIZE)
			return PULSE_MB_E_TRUNCATED;
		size_t recs = (size_t)pulse_get_u16(p + 8) * 4u;
		p += PULSE_MB_CHUNK_HEADER_SIZE;
		if ((size_t)(end - p) < recs)
			return PULSE_MB_E_TRUNCATED;
		p += recs;
	}
	it->next = body + PULSE_MB_PAGE_HEADER_SIZE;
	it->end = p;
	it->chunks_left = info->chunk_count;
	return PULSE_MB_OK;
}

int pulse_mb_page_next(struct pulse_mb_page_iter *it, struct pulse_mb_chunk *c)
{
	if (it->chunks_left == 0)
		return 0;
	uint32_t w = pulse_get_u32(it->next);
	c->qpn = w & 0xFFFFFFu;
	c->flags = (uint8_t)(w >> 24);
	c->base_epoch = pulse_get_u32(it->next + 4);
	c->record_count = pulse_get_u16(it->next + 8);
	c->records = it->next + PULSE_MB_CHUNK_HEADER_SIZE;
	it->next = c->records + (size_t)c->record_count * 4u;
	it->chunks_left--;
	return 1;
}

void pulse_mb_rec_begin(struct pulse_mb_rec_iter *it, const struct pulse_mb_chunk *c)
{
	it->next = c->records;
	it->left = c->record_count;
	it->epoch = c->base_epoch;
}

int pulse_mb_rec_next(struct pulse_mb_rec_iter *it, uint32_t *epoch, uint32_t *units)
{
	while (it->left) {
		uint32_t rec = pulse_get_u32(it->next);
		it->next += 4;
		it->left--;
		if ((rec & 0xFFu) == PULSE_MB_REC_SKIP) {
			it->epoch += rec >> 8;
			continue;
		}
		it->epoch += rec & 0xFFu;
		*epoch = it->epoch;
		*units = rec >> 8;
		return 1;
	}
	return 0;
}

const char *pulse_mb_status_name(enum pulse_mb_status s)
{
	switch (s) {
	case PULSE_MB_OK: return "ok";
	case PULSE_MB_E_MAGIC: return "bad magic";
	case PULSE_MB_E_VERSION: return "unsupported protocol version";
	case PULSE_MB_E_TRUNCATED: return "truncated message";
	case PULSE_MB_E_TYPE: return "unknown request type";
	case PULSE_MB_E_RANGE: return "parameter out of range";
	case PULSE_MB_E_BUSY: return "upload unfinished";
	case PULSE_MB_E_NO_UPLOAD: return "no upload open";
	case PULSE_MB_E_WINDOW: return "wrong window";
	case PULSE_MB_E_NOSPACE: return "response buffer too small";
	case PULSE_MB_E_TIMEOUT: return "event threads did not quiesce";
	}
	return "unknown status";
}

const char *pulse_stat_name(enum pulse_stat s)
{
	static const char *const names[PULSE_STAT_COUNT] = {
		[PULSE_STAT_EVENTS] = "events",
		[PULSE_STAT_UNITS] = "units_32b",
		[PULSE_STAT_PKTS] = "packets",
		[PULSE_STAT_FLOWS_CREATED] = "flows_created",
		[PULSE_STAT_FLOWS_ACTIVE] = "flows_active",
		[PULSE_STAT_FLOWS_AGED] = "flows_aged",
		[PULSE_STAT_POOL_BLOCKS] = "pool_blocks",
		[PULSE_STAT_POOL_USED] = "pool_used",
		[PULSE_STAT_POOL_PEAK] = "pool_peak",
		[PULSE_STAT_DROP_BAD_QPN] = "drop_bad_qpn",
		[PULSE_STAT_DROP_NO_SLOT] = "drop_no_slot",
		[PULSE_STAT_DROP_NO_POOL] = "drop_no_pool",
		[PULSE_STAT_DROP_NO_POOL_UNITS] = "drop_no_pool_units",
		[PULSE_STAT_DROP_TS_RANGE] = "drop_ts_range",
		[PULSE_STAT_LATE_EVENTS] = "late_events",
		[PULSE_STAT_REORDERED_EVENTS] = "reordered_events",
		[PULSE_STAT_ZERO_EVENTS] = "zero_events",
		[PULSE_STAT_CLIPPED_EVENTS] = "clipped_events",
		[PULSE_STAT_POLLS] = "polls",
		[PULSE_STAT_POLLS_BUSY] = "polls_busy",
		[PULSE_STAT_UPLOADS_ABANDONED] = "uploads_abandoned",
		[PULSE_STAT_PAGES_SERVED] = "pages_served",
		[PULSE_STAT_PAGE_REPEATS] = "page_repeats",
		[PULSE_STAT_BAD_REQUESTS] = "bad_requests",
		[PULSE_STAT_QUIESCE_TIMEOUTS] = "quiesce_timeouts",
		[PULSE_STAT_DROP_BAD_THREAD] = "drop_bad_thread",
		[PULSE_STAT_DROP_PAUSED] = "drop_paused",
	};
	return (unsigned)s < PULSE_STAT_COUNT ? names[s] : "unknown";
}
