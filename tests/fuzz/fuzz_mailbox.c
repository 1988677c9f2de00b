/* libFuzzer target: the firmware's mailbox (pulse_fw_mailbox) and the page
 * decoder, driven by arbitrary bytes interleaved with TX events.
 *
 * The input is a little program of operations:
 *   op 0: a raw request (any bytes) with a chosen response capacity;
 *   op 1: a request with a valid header around fuzzed type and body, so the
 *         fuzzer gets past magic/version checks cheaply;
 *   op 2: a batch of TX events (fuzzed QPN, bytes, packets, time, thread),
 *         through pulse_fw_on_tx or pulse_fw_on_tx_burst;
 *   op 3: a well-formed POLL (maybe FORCE) and reads of its pages.
 * Every response must be well-formed: a valid header, length <= capacity,
 * status equal to the return value, and an OK page must decode. The raw
 * input is also fed to the host-side decoders directly.
 *
 * State: one core instance for the whole run; each input starts with a
 * CONFIGURE to the defaults (which resets all measurement state). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/le.h"
#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"
#include "pulse/tx_event.h"

#define CHECK(c)                                                                      \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "fuzz_mailbox: check failed: %s (line %d)\n", #c, \
				__LINE__);                                            \
			abort();                                                      \
		}                                                                     \
	} while (0)

#define MAX_THREADS 2u
#define MAX_FLOWS 64u
#define POOL_BLOCKS 128u

static struct pulse_fw *g_fw;
static uint8_t g_resp[65536 + 64];
static uint8_t g_req[65536];
static uint16_t g_seq;

struct in {
	const uint8_t *p;
	size_t n;
};

static int take(struct in *in, void *out, size_t n)
{
	if (in->n < n) {
		memset(out, 0, n);
		return 0;
	}
	memcpy(out, in->p, n);
	in->p += n;
	in->n -= n;
	return 1;
}

static uint8_t u8(struct in *in)
{
	uint8_t v;
	take(in, &v, 1);
	return v;
}

static uint16_t u16(struct in *in)
{
	uint8_t b[2];
	take(in, b, 2);
	return pulse_get_u16(b);
}

static uint32_t u32(struct in *in)
{
	uint8_t b[4];
	take(in, b, 4);
	return pulse_get_u32(b);
}

static const uint32_t caps[16] = {0,   1,   11,   12,   13,   59,   60,    67,
				  68,  220, 256,  300,  1024, 4096, 65535, 65536};

static void check_page(const uint8_t *body, uint32_t len)
{
	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;
	CHECK(pulse_mb_page_open(body, len, &info, &it) == PULSE_MB_OK);
	CHECK(info.page_seq < info.page_count);
	struct pulse_mb_chunk c;
	uint32_t chunks = 0;
	while (pulse_mb_page_next(&it, &c)) {
		CHECK(c.qpn != 0 && c.qpn < PULSE_QPN_RESERVED_HIGH);
		CHECK(c.records + 4u * c.record_count <= body + len);
		struct pulse_mb_rec_iter ri;
		pulse_mb_rec_begin(&ri, &c);
		uint32_t e, u, prev = c.base_epoch, n = 0;
		while (pulse_mb_rec_next(&ri, &e, &u)) {
			CHECK(e >= prev); /* epoch order */
			CHECK(u <= PULSE_MB_REC_MAX_UNITS);
			prev = e;
			CHECK(++n <= c.record_count);
		}
		chunks++;
	}
	CHECK(chunks == info.chunk_count);
}

/* One exchange; checks the response. Returns the status. */
static enum pulse_mb_status exchange(const uint8_t *req, uint32_t len, uint32_t cap, uint32_t now)
{
	memset(g_resp, 0xEE, cap + 64 <= sizeof(g_resp) ? cap + 64 : sizeof(g_resp));
	uint32_t rlen = 0xDEADBEEF;
	enum pulse_mb_status st = pulse_fw_mailbox(g_fw, req, len, g_resp, cap, &rlen, now);
	if (cap < PULSE_MB_HEADER_SIZE) {
		CHECK(rlen == 0);
		for (uint32_t i = 0; i < 64; i++)
			CHECK(g_resp[i] == 0xEE);
		return st;
	}
	CHECK(rlen >= PULSE_MB_HEADER_SIZE && rlen <= cap);
	/* nothing written past the capacity */
	for (uint32_t i = cap; i < cap + 64 && i < sizeof(g_resp); i++)
		CHECK(g_resp[i] == 0xEE);
	struct pulse_mb_header h;
	CHECK(pulse_mb_decode_header(g_resp, rlen, &h) == PULSE_MB_OK);
	CHECK(h.magic == PULSE_MB_MAGIC && h.version == PULSE_MB_VERSION);
	CHECK(h.type & PULSE_MB_RESPONSE);
	CHECK(h.length == rlen);
	CHECK(h.status == (uint16_t)st);
	CHECK(st <= PULSE_MB_E_TIMEOUT);
	const uint8_t *body = g_resp + PULSE_MB_HEADER_SIZE;
	uint32_t bl = rlen - PULSE_MB_HEADER_SIZE;
	if (st == PULSE_MB_OK) {
		switch (h.type & 0x7F) {
		case PULSE_MB_HELLO:
		case PULSE_MB_CONFIGURE:
			CHECK(bl == PULSE_MB_HELLO_SIZE);
			break;
		case PULSE_MB_POLL:
			CHECK(bl == PULSE_MB_POLL_RESP_SIZE);
			break;
		case PULSE_MB_READ_PAGE:
			check_page(body, bl);
			break;
		case PULSE_MB_STATS:
			CHECK(bl >= PULSE_MB_STATS_HEADER_SIZE);
			CHECK(pulse_get_u16(body) == PULSE_STAT_COUNT);
			CHECK(bl == PULSE_MB_STATS_HEADER_SIZE + 8u * PULSE_STAT_COUNT);
			break;
		case PULSE_MB_RESET:
			CHECK(bl == 0);
			break;
		default:
			CHECK(0 && "OK for an unknown type");
		}
	}
	return st;
}

static enum pulse_mb_status request(uint8_t type, const uint8_t *body, uint32_t bl, uint32_t cap,
				    uint32_t now)
{
	uint32_t n = pulse_mb_build_request(g_req, sizeof(g_req), type, ++g_seq, body, bl);
	CHECK(n == PULSE_MB_HEADER_SIZE + bl);
	enum pulse_mb_status st = exchange(g_req, n, cap, now);
	if (cap >= PULSE_MB_HEADER_SIZE) {
		struct pulse_mb_header h;
		CHECK(pulse_mb_decode_header(g_resp, pulse_get_u16(g_resp + 4), &h) == PULSE_MB_OK);
		CHECK(h.seq == g_seq);
		CHECK(h.type == (type | PULSE_MB_RESPONSE));
	}
	return st;
}

static void invariants(void)
{
	uint64_t v[PULSE_STAT_COUNT];
	pulse_fw_stats(g_fw, v);
	CHECK(v[PULSE_STAT_POOL_USED] <= v[PULSE_STAT_POOL_BLOCKS]);
	CHECK(v[PULSE_STAT_POOL_PEAK] <= v[PULSE_STAT_POOL_BLOCKS]);
	CHECK(v[PULSE_STAT_POOL_BLOCKS] <= POOL_BLOCKS);
	CHECK(v[PULSE_STAT_FLOWS_ACTIVE] <= MAX_FLOWS);
	size_t in_use = pulse_fw_memory_in_use(g_fw);
	struct pulse_fw_limits lim = {MAX_FLOWS, POOL_BLOCKS, MAX_THREADS, PULSE_PLATFORM_X86_SIM,
				      1, NULL};
	CHECK(in_use <= pulse_fw_memory_size(&lim));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_fw) {
		struct pulse_fw_limits lim = {MAX_FLOWS, POOL_BLOCKS, MAX_THREADS,
					      PULSE_PLATFORM_X86_SIM, 1, NULL};
		size_t need = pulse_fw_memory_size(&lim);
		void *mem = aligned_alloc(64, (need + 63) & ~(size_t)63);
		CHECK(mem);
		g_fw = pulse_fw_init(mem, need, &lim, 1000);
		CHECK(g_fw);
	}

	/* the host-side decoders on the raw bytes */
	{
		struct pulse_mb_header h;
		(void)pulse_mb_decode_header(data, (uint32_t)size, &h);
		struct pulse_mb_page_info info;
		struct pulse_mb_page_iter it;
		if (size <= 65535 && pulse_mb_page_open(data, (uint32_t)size, &info, &it) == PULSE_MB_OK) {
			struct pulse_mb_chunk c;
			while (pulse_mb_page_next(&it, &c)) {
				CHECK(c.records >= data && c.records + 4u * c.record_count <= data + size);
				struct pulse_mb_rec_iter ri;
				pulse_mb_rec_begin(&ri, &c);
				uint32_t e, u;
				while (pulse_mb_rec_next(&ri, &e, &u))
					;
			}
		}
	}

	uint32_t now = 1000;
	uint8_t cb[PULSE_MB_CONFIG_SIZE];
	struct pulse_mb_config dc = {PULSE_EPOCH_NS_DEFAULT, PULSE_WINDOW_NS_DEFAULT,
				     PULSE_PAGE_BYTES_DEFAULT, PULSE_CLIP_UNITS_PER_PKT_DEFAULT, 0, 0};
	pulse_mb_encode_config(cb, &dc);
	CHECK(request(PULSE_MB_CONFIGURE, cb, sizeof(cb), 65536, now) == PULSE_MB_OK);

	struct in in = {data, size};
	uint32_t ev_clock = now;
	struct pulse_mb_poll_resp last_poll;
	memset(&last_poll, 0, sizeof(last_poll));
	int ops = 0;
	while (in.n > 0 && ops++ < 256) {
		uint8_t op = u8(&in);
		switch (op & 3) {
		case 0: { /* raw request */
			uint16_t len = u16(&in) % 512;
			uint32_t cap = caps[u8(&in) & 15];
			uint8_t raw[512];
			size_t got = len <= in.n ? len : in.n;
			memcpy(raw, in.p, got);
			in.p += got;
			in.n -= got;
			exchange(raw, (uint32_t)got, cap, now += u16(&in));
			break;
		}
		case 1: { /* valid header, fuzzed type and body */
			uint8_t type = u8(&in);
			if (!(op & 0x80))
				type = (uint8_t)(1 + type % 6);
			uint16_t bl = u8(&in);
			uint32_t cap = caps[u8(&in) & 15];
			uint8_t body[256];
			size_t got = bl <= in.n ? bl : in.n;
			memcpy(body, in.p, got);
			in.p += got;
			in.n -= got;
			request(type, body, (uint32_t)got, cap, now += u16(&in));
			break;
		}
		case 2: { /* events */
			uint8_t n = u8(&in) % 32;
			struct pulse_tx_event evs[32];
			for (uint8_t i = 0; i < n; i++) {
				uint8_t flags = u8(&in);
				uint32_t q = u16(&in);
				if (flags & 1)
					q |= (uint32_t)u8(&in) << 16;
				if (flags & 2)
					q = u32(&in); /* anything */
				evs[i].qpn = q;
				evs[i].sent_32b = (flags & 4) ? PULSE_SENT_UNITS_CLIPPED : u16(&in);
				evs[i].sent_pkts = u16(&in);
				int16_t d = (int16_t)u16(&in);
				ev_clock += (flags & 8) ? (uint32_t)d * 1000u : (uint32_t)d;
				if (flags & 16)
					ev_clock = u32(&in);
				evs[i].ts_ns = ev_clock;
			}
			uint32_t thread = u8(&in) % (MAX_THREADS + 2u);
			if (op & 0x80)
				pulse_fw_on_tx_burst(g_fw, thread, evs, n);
			else
				for (uint8_t i = 0; i < n; i++)
					pulse_fw_on_tx(g_fw, thread, &evs[i]);
			break;
		}
		case 3: { /* POLL and pages */
			now += u32(&in) % 2000000000u;
			uint8_t pb[PULSE_MB_POLL_REQ_SIZE];
			struct pulse_mb_poll_req pr = {now, (uint16_t)((op >> 2) & 1)};
			pulse_mb_encode_poll_req(pb, &pr);
			if (request(PULSE_MB_POLL, pb, sizeof(pb), 65536, now) == PULSE_MB_OK)
				pulse_mb_decode_poll_resp(g_resp + PULSE_MB_HEADER_SIZE, &last_poll);
			uint8_t reads = u8(&in) % 8;
			for (uint8_t r = 0; r < reads; r++) {
				uint8_t sel = u8(&in);
				struct pulse_mb_page_req q = {last_poll.window_seq,
							      (uint16_t)(sel & 0x80 ? sel & 0x7F : r)};
				if (sel == 0xFF)
					q.window_seq ^= 1;
				uint8_t qb[PULSE_MB_PAGE_REQ_SIZE];
				pulse_mb_encode_page_req(qb, &q);
				uint32_t cap = caps[(sel >> 3) & 15] | 0x100u;
				request(PULSE_MB_READ_PAGE, qb, sizeof(qb), cap > 65536 ? 65536 : cap, now);
			}
			break;
		}
		}
		invariants();
	}
	return 0;
}
