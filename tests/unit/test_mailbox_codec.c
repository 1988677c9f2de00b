/* Mailbox codec (mailbox/proto.c), from the wire layout documented in
 * include/pulse/mailbox_proto.h: every message struct round-trips, and every
 * field sits at its documented offset, little-endian (a round trip alone would
 * hide a layout shared wrongly by both sides). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fw_test_util.h"
#include "pulse/le.h"
#include "pulse/mailbox_proto.h"

static void test_header_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_header h = {.magic = PULSE_MB_MAGIC,
				    .version = PULSE_MB_VERSION,
				    .type = PULSE_MB_POLL | PULSE_MB_RESPONSE,
				    .length = 0x1234,
				    .seq = 0xBEEF,
				    .status = PULSE_MB_E_BUSY};
	uint8_t buf[0x1234];
	memset(buf, 0x77, sizeof(buf));
	pulse_mb_encode_header(buf, &h);
	/* "PL" on the wire */
	assert_int_equal(buf[0], 'P');
	assert_int_equal(buf[1], 'L');
	assert_int_equal(buf[2], PULSE_MB_VERSION);
	assert_int_equal(buf[3], PULSE_MB_POLL | PULSE_MB_RESPONSE);
	assert_int_equal(buf[4], 0x34);
	assert_int_equal(buf[5], 0x12);
	assert_int_equal(buf[6], 0xEF);
	assert_int_equal(buf[7], 0xBE);
	assert_int_equal(pulse_get_u16(buf + 8), PULSE_MB_E_BUSY);
	assert_int_equal(pulse_get_u16(buf + 10), 0);
	assert_int_equal(buf[12], 0x77); /* nothing past the header */

	struct pulse_mb_header d;
	memset(&d, 0xFF, sizeof(d));
	assert_int_equal(pulse_mb_decode_header(buf, 0x1234, &d), PULSE_MB_OK);
	assert_int_equal(d.magic, h.magic);
	assert_int_equal(d.version, h.version);
	assert_int_equal(d.type, h.type);
	assert_int_equal(d.length, h.length);
	assert_int_equal(d.seq, h.seq);
	assert_int_equal(d.status, h.status);
}

static void put_hdr(uint8_t *b, uint16_t magic, uint8_t ver, uint8_t type, uint16_t len)
{
	pulse_put_u16(b, magic);
	pulse_put_u8(b + 2, ver);
	pulse_put_u8(b + 3, type);
	pulse_put_u16(b + 4, len);
	pulse_put_u16(b + 6, 7);
	pulse_put_u16(b + 8, 0);
	pulse_put_u16(b + 10, 0);
}

static void test_header_decode_errors(void **state)
{
	(void)state;
	uint8_t b[64];
	struct pulse_mb_header h;
	memset(b, 0, sizeof(b));

	put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_OK);
	/* byte-swapped magic is not ours */
	put_hdr(b, 0x504C, PULSE_MB_VERSION, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_MAGIC);
	put_hdr(b, 0, 0, 0, 0);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_MAGIC);
	/* versions other than 1 */
	put_hdr(b, PULSE_MB_MAGIC, 0, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_VERSION);
	put_hdr(b, PULSE_MB_MAGIC, 2, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_VERSION);
	put_hdr(b, PULSE_MB_MAGIC, 0xFF, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_VERSION);
	/* fewer bytes than a header */
	put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_HELLO, 12);
	for (uint32_t n = 0; n < PULSE_MB_HEADER_SIZE; n++)
		assert_int_equal(pulse_mb_decode_header(b, n, &h), PULSE_MB_E_TRUNCATED);
	/* length field larger than the bytes received */
	put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_POLL, 24);
	assert_int_equal(pulse_mb_decode_header(b, 23, &h), PULSE_MB_E_TRUNCATED);
	assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_TRUNCATED);
	assert_int_equal(pulse_mb_decode_header(b, 24, &h), PULSE_MB_OK);
	/* length field smaller than a header */
	for (uint16_t l = 0; l < PULSE_MB_HEADER_SIZE; l++) {
		put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_HELLO, l);
		assert_int_equal(pulse_mb_decode_header(b, 12, &h), PULSE_MB_E_TRUNCATED);
	}
	/* length field smaller than the bytes received: they disagree */
	put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_HELLO, 12);
	assert_int_equal(pulse_mb_decode_header(b, 20, &h), PULSE_MB_E_TRUNCATED);
	/* 0xFFFF length with few bytes */
	put_hdr(b, PULSE_MB_MAGIC, PULSE_MB_VERSION, PULSE_MB_HELLO, 0xFFFF);
	assert_int_equal(pulse_mb_decode_header(b, 64, &h), PULSE_MB_E_TRUNCATED);
}

static void test_build_request(void **state)
{
	(void)state;
	uint8_t body[20];
	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(0xA0 + i);
	uint8_t buf[64];
	memset(buf, 0x55, sizeof(buf));
	uint32_t n = pulse_mb_build_request(buf, sizeof(buf), PULSE_MB_CONFIGURE, 0x4242, body, 20);
	assert_int_equal(n, 32);
	struct pulse_mb_header h;
	assert_int_equal(pulse_mb_decode_header(buf, n, &h), PULSE_MB_OK);
	assert_int_equal(h.magic, PULSE_MB_MAGIC);
	assert_int_equal(h.version, PULSE_MB_VERSION);
	assert_int_equal(h.type, PULSE_MB_CONFIGURE);
	assert_int_equal(h.length, 32);
	assert_int_equal(h.seq, 0x4242);
	assert_int_equal(h.status, 0);
	assert_int_equal(pulse_get_u16(buf + 10), 0);
	assert_memory_equal(buf + 12, body, 20);
	assert_int_equal(buf[32], 0x55);

	/* no body */
	n = pulse_mb_build_request(buf, sizeof(buf), PULSE_MB_HELLO, 1, NULL, 0);
	assert_int_equal(n, 12);
	assert_int_equal(pulse_get_u16(buf + 4), 12);

	/* exact fit, and one byte short */
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(pulse_mb_build_request(buf, 32, PULSE_MB_CONFIGURE, 1, body, 20), 32);
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(pulse_mb_build_request(buf, 31, PULSE_MB_CONFIGURE, 1, body, 20), 0);
	assert_int_equal(buf[31], 0x55);
	assert_int_equal(pulse_mb_build_request(buf, 11, PULSE_MB_HELLO, 1, NULL, 0), 0);
	assert_int_equal(pulse_mb_build_request(buf, 0, PULSE_MB_HELLO, 1, NULL, 0), 0);
	/* a body that cannot be described by the 16-bit length field */
	static uint8_t big[70000];
	static uint8_t bigbody[70000];
	assert_int_equal(pulse_mb_build_request(big, sizeof(big), PULSE_MB_CONFIGURE, 1, bigbody,
						PULSE_MB_MAX_MESSAGE - PULSE_MB_HEADER_SIZE + 1),
			 0);
	assert_int_equal(pulse_mb_build_request(big, sizeof(big), PULSE_MB_CONFIGURE, 1, bigbody,
						PULSE_MB_MAX_MESSAGE - PULSE_MB_HEADER_SIZE),
			 PULSE_MB_MAX_MESSAGE);
}

static void test_hello_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_hello m = {.proto_min = 0x0102,
				   .proto_max = 0x0304,
				   .fw_version = 0x05060708,
				   .platform = 0x090A0B0C,
				   .max_flows = 0x0D0E0F10,
				   .pool_blocks = 0x11121314,
				   .records_per_block = 0x1516,
				   .max_threads = 0x1718,
				   .epoch_ns = 0x191A1B1C,
				   .window_ns = 0x1D1E1F20,
				   .page_bytes = 0x2122,
				   .clip_units_per_pkt = 0x2324,
				   .flow_limit = 0x25262728,
				   .instance_id = 0x292A2B2C2D2E2F30ull};
	uint8_t b[PULSE_MB_HELLO_SIZE + 8];
	memset(b, 0xCC, sizeof(b));
	pulse_mb_encode_hello(b, &m);
	assert_int_equal(pulse_get_u16(b + 0), m.proto_min);
	assert_int_equal(pulse_get_u16(b + 2), m.proto_max);
	assert_int_equal(pulse_get_u32(b + 4), m.fw_version);
	assert_int_equal(pulse_get_u32(b + 8), m.platform);
	assert_int_equal(pulse_get_u32(b + 12), m.max_flows);
	assert_int_equal(pulse_get_u32(b + 16), m.pool_blocks);
	assert_int_equal(pulse_get_u16(b + 20), m.records_per_block);
	assert_int_equal(pulse_get_u16(b + 22), m.max_threads);
	assert_int_equal(pulse_get_u32(b + 24), m.epoch_ns);
	assert_int_equal(pulse_get_u32(b + 28), m.window_ns);
	assert_int_equal(pulse_get_u16(b + 32), m.page_bytes);
	assert_int_equal(pulse_get_u16(b + 34), m.clip_units_per_pkt);
	assert_int_equal(pulse_get_u32(b + 36), m.flow_limit);
	assert_true(pulse_get_u64(b + 40) == m.instance_id);
	for (unsigned i = PULSE_MB_HELLO_SIZE; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xCC);
	struct pulse_mb_hello d;
	memset(&d, 0, sizeof(d));
	pulse_mb_decode_hello(b, &d);
	assert_int_equal(d.proto_min, m.proto_min);
	assert_int_equal(d.proto_max, m.proto_max);
	assert_int_equal(d.fw_version, m.fw_version);
	assert_int_equal(d.platform, m.platform);
	assert_int_equal(d.max_flows, m.max_flows);
	assert_int_equal(d.pool_blocks, m.pool_blocks);
	assert_int_equal(d.records_per_block, m.records_per_block);
	assert_int_equal(d.max_threads, m.max_threads);
	assert_int_equal(d.epoch_ns, m.epoch_ns);
	assert_int_equal(d.window_ns, m.window_ns);
	assert_int_equal(d.page_bytes, m.page_bytes);
	assert_int_equal(d.clip_units_per_pkt, m.clip_units_per_pkt);
	assert_int_equal(d.flow_limit, m.flow_limit);
	assert_true(d.instance_id == m.instance_id);
}

static void test_config_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_config m = {.epoch_ns = 0x01020304,
				    .window_ns = 0x05060708,
				    .page_bytes = 0x090A,
				    .clip_units_per_pkt = 0x0B0C,
				    .flow_limit = 0x0D0E0F10,
				    .pool_limit = 0x11121314};
	uint8_t b[PULSE_MB_CONFIG_SIZE + 4];
	memset(b, 0xCC, sizeof(b));
	pulse_mb_encode_config(b, &m);
	assert_int_equal(pulse_get_u32(b + 0), m.epoch_ns);
	assert_int_equal(pulse_get_u32(b + 4), m.window_ns);
	assert_int_equal(pulse_get_u16(b + 8), m.page_bytes);
	assert_int_equal(pulse_get_u16(b + 10), m.clip_units_per_pkt);
	assert_int_equal(pulse_get_u32(b + 12), m.flow_limit);
	assert_int_equal(pulse_get_u32(b + 16), m.pool_limit);
	for (unsigned i = PULSE_MB_CONFIG_SIZE; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xCC);
	struct pulse_mb_config d;
	memset(&d, 0, sizeof(d));
	pulse_mb_decode_config(b, &d);
	assert_memory_equal(&d, &m, sizeof(m)); /* no padding in this struct */
}

static void test_poll_req_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_poll_req m = {.host_ns = 0x0102030405060708ull, .flags = 0x090A};
	uint8_t b[PULSE_MB_POLL_REQ_SIZE + 4];
	memset(b, 0xCC, sizeof(b));
	pulse_mb_encode_poll_req(b, &m);
	assert_true(pulse_get_u64(b) == m.host_ns);
	assert_int_equal(pulse_get_u16(b + 8), m.flags);
	assert_int_equal(pulse_get_u16(b + 10), 0);
	for (unsigned i = PULSE_MB_POLL_REQ_SIZE; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xCC);
	struct pulse_mb_poll_req d = {0, 0};
	pulse_mb_decode_poll_req(b, &d);
	assert_true(d.host_ns == m.host_ns);
	assert_int_equal(d.flags, m.flags);
}

static void test_poll_resp_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_poll_resp m = {.window_seq = 0x01020304,
				       .page_count = 0x0506,
				       .flags = 0x0708,
				       .host_ns = 0x090A0B0C0D0E0F10ull,
				       .nic_ns = 0x1112131415161718ull,
				       .window_start_ns = 0x191A1B1C1D1E1F20ull,
				       .epoch_ns = 0x21222324,
				       .flows = 0x25262728,
				       .records = 0x292A2B2C,
				       .upload_bytes = 0x2D2E2F30,
				       .flows_aged = 0x31323334};
	uint8_t b[PULSE_MB_POLL_RESP_SIZE + 4];
	memset(b, 0xCC, sizeof(b));
	pulse_mb_encode_poll_resp(b, &m);
	assert_int_equal(pulse_get_u32(b + 0), m.window_seq);
	assert_int_equal(pulse_get_u16(b + 4), m.page_count);
	assert_int_equal(pulse_get_u16(b + 6), m.flags);
	assert_true(pulse_get_u64(b + 8) == m.host_ns);
	assert_true(pulse_get_u64(b + 16) == m.nic_ns);
	assert_true(pulse_get_u64(b + 24) == m.window_start_ns);
	assert_int_equal(pulse_get_u32(b + 32), m.epoch_ns);
	assert_int_equal(pulse_get_u32(b + 36), m.flows);
	assert_int_equal(pulse_get_u32(b + 40), m.records);
	assert_int_equal(pulse_get_u32(b + 44), m.upload_bytes);
	assert_int_equal(pulse_get_u32(b + 48), m.flows_aged);
	assert_int_equal(pulse_get_u32(b + 52), 0);
	for (unsigned i = PULSE_MB_POLL_RESP_SIZE; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xCC);
	struct pulse_mb_poll_resp d;
	memset(&d, 0, sizeof(d));
	pulse_mb_decode_poll_resp(b, &d);
	assert_int_equal(d.window_seq, m.window_seq);
	assert_int_equal(d.page_count, m.page_count);
	assert_int_equal(d.flags, m.flags);
	assert_true(d.host_ns == m.host_ns);
	assert_true(d.nic_ns == m.nic_ns);
	assert_true(d.window_start_ns == m.window_start_ns);
	assert_int_equal(d.epoch_ns, m.epoch_ns);
	assert_int_equal(d.flows, m.flows);
	assert_int_equal(d.records, m.records);
	assert_int_equal(d.upload_bytes, m.upload_bytes);
	assert_int_equal(d.flows_aged, m.flows_aged);
}

static void test_page_req_roundtrip_and_layout(void **state)
{
	(void)state;
	struct pulse_mb_page_req m = {.window_seq = 0xA1B2C3D4, .page_seq = 0xE5F6};
	uint8_t b[PULSE_MB_PAGE_REQ_SIZE + 4];
	memset(b, 0xCC, sizeof(b));
	pulse_mb_encode_page_req(b, &m);
	assert_int_equal(pulse_get_u32(b), m.window_seq);
	assert_int_equal(pulse_get_u16(b + 4), m.page_seq);
	assert_int_equal(pulse_get_u16(b + 6), 0);
	for (unsigned i = PULSE_MB_PAGE_REQ_SIZE; i < sizeof(b); i++)
		assert_int_equal(b[i], 0xCC);
	struct pulse_mb_page_req d = {0, 0};
	pulse_mb_decode_page_req(b, &d);
	assert_int_equal(d.window_seq, m.window_seq);
	assert_int_equal(d.page_seq, m.page_seq);
}

/* Builds a page by hand from the documented layout. */
static uint32_t put_page_header(uint8_t *b, uint32_t wseq, uint16_t pseq, uint16_t pcount,
				uint16_t chunks, uint16_t flags)
{
	pulse_put_u32(b, wseq);
	pulse_put_u16(b + 4, pseq);
	pulse_put_u16(b + 6, pcount);
	pulse_put_u16(b + 8, chunks);
	pulse_put_u16(b + 10, flags);
	return PULSE_MB_PAGE_HEADER_SIZE;
}

static uint32_t put_chunk(uint8_t *b, uint32_t qpn, uint8_t flags, uint32_t base, uint16_t n,
			  const uint32_t *recs)
{
	pulse_put_u32(b, qpn | (uint32_t)flags << 24);
	pulse_put_u32(b + 4, base);
	pulse_put_u16(b + 8, n);
	pulse_put_u16(b + 10, 0);
	for (uint16_t i = 0; i < n; i++)
		pulse_put_u32(b + 12 + 4u * i, recs[i]);
	return PULSE_MB_CHUNK_HEADER_SIZE + 4u * n;
}

static void test_page_iterators(void **state)
{
	(void)state;
	uint8_t b[512];
	uint32_t r1[] = {
		pulse_mb_rec_make(3, 10),                             /* epoch base+3 */
		pulse_mb_rec_make(PULSE_MB_REC_SKIP, 300),             /* skip 300 */
		pulse_mb_rec_make(2, 5),                              /* base+305 */
		pulse_mb_rec_make(0, 7),                              /* base+305 again */
		pulse_mb_rec_make(PULSE_MB_REC_MAX_ADVANCE, PULSE_MB_REC_MAX_UNITS), /* +254 */
	};
	uint32_t r2[] = {pulse_mb_rec_make(0, 1)};
	uint32_t n = put_page_header(b, 77, 3, 9, 3, PULSE_MB_PAGEF_LAST);
	n += put_chunk(b + n, 0x123456, PULSE_MB_CHUNKF_CONT, 1000, 5, r1);
	n += put_chunk(b + n, 0xFFFFFE, 0, 0xFFFFFFF0u, 1, r2);
	n += put_chunk(b + n, 0x000001, 0, 5, 0, NULL);

	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_OK);
	assert_int_equal(info.window_seq, 77);
	assert_int_equal(info.page_seq, 3);
	assert_int_equal(info.page_count, 9);
	assert_int_equal(info.chunk_count, 3);
	assert_int_equal(info.flags, PULSE_MB_PAGEF_LAST);

	struct pulse_mb_chunk c;
	assert_int_equal(pulse_mb_page_next(&it, &c), 1);
	assert_int_equal(c.qpn, 0x123456);
	assert_int_equal(c.flags, PULSE_MB_CHUNKF_CONT);
	assert_int_equal(c.base_epoch, 1000);
	assert_int_equal(c.record_count, 5);
	struct pulse_mb_rec_iter ri;
	pulse_mb_rec_begin(&ri, &c);
	uint32_t e, u;
	uint32_t want_e[] = {1003, 1305, 1305, 1559};
	uint32_t want_u[] = {10, 5, 7, PULSE_MB_REC_MAX_UNITS};
	unsigned k = 0;
	while (pulse_mb_rec_next(&ri, &e, &u)) {
		if (u == 0)
			continue; /* a skip may or may not be reported; it has no bytes */
		assert_true(k < 4);
		assert_int_equal(e, want_e[k]);
		assert_int_equal(u, want_u[k]);
		k++;
	}
	assert_int_equal(k, 4);

	assert_int_equal(pulse_mb_page_next(&it, &c), 1);
	assert_int_equal(c.qpn, 0xFFFFFE);
	assert_int_equal(c.flags, 0);
	pulse_mb_rec_begin(&ri, &c);
	assert_int_equal(pulse_mb_rec_next(&ri, &e, &u), 1);
	assert_int_equal(e, 0xFFFFFFF0u);
	assert_int_equal(u, 1);
	assert_int_equal(pulse_mb_rec_next(&ri, &e, &u), 0);

	assert_int_equal(pulse_mb_page_next(&it, &c), 1);
	assert_int_equal(c.qpn, 1);
	assert_int_equal(c.record_count, 0);
	pulse_mb_rec_begin(&ri, &c);
	assert_int_equal(pulse_mb_rec_next(&ri, &e, &u), 0);

	assert_int_equal(pulse_mb_page_next(&it, &c), 0);
	assert_int_equal(pulse_mb_page_next(&it, &c), 0);
}

static void test_page_open_rejects_bad_pages(void **state)
{
	(void)state;
	uint8_t b[256];
	uint32_t recs[4] = {pulse_mb_rec_make(0, 1), pulse_mb_rec_make(1, 2),
			    pulse_mb_rec_make(1, 3), pulse_mb_rec_make(1, 4)};
	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;

	/* shorter than a page header */
	put_page_header(b, 1, 0, 1, 0, PULSE_MB_PAGEF_LAST);
	for (uint32_t n = 0; n < PULSE_MB_PAGE_HEADER_SIZE; n++)
		assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_E_TRUNCATED);
	/* an empty page is fine */
	assert_int_equal(pulse_mb_page_open(b, PULSE_MB_PAGE_HEADER_SIZE, &info, &it), PULSE_MB_OK);

	/* one chunk of 4 records; every shorter length is truncated */
	uint32_t n = put_page_header(b, 1, 0, 1, 1, PULSE_MB_PAGEF_LAST);
	n += put_chunk(b + n, 42, 0, 0, 4, recs);
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_OK);
	for (uint32_t m = PULSE_MB_PAGE_HEADER_SIZE; m < n; m++)
		assert_int_equal(pulse_mb_page_open(b, m, &info, &it), PULSE_MB_E_TRUNCATED);

	/* chunk_count larger than the chunks present */
	put_page_header(b, 1, 0, 1, 2, PULSE_MB_PAGEF_LAST);
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_E_TRUNCATED);
	put_page_header(b, 1, 0, 1, 0xFFFF, PULSE_MB_PAGEF_LAST);
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_E_TRUNCATED);

	/* record_count running past the end */
	put_page_header(b, 1, 0, 1, 1, PULSE_MB_PAGEF_LAST);
	pulse_put_u16(b + PULSE_MB_PAGE_HEADER_SIZE + 8, 5);
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_E_TRUNCATED);
	pulse_put_u16(b + PULSE_MB_PAGE_HEADER_SIZE + 8, 0xFFFF);
	assert_int_equal(pulse_mb_page_open(b, n, &info, &it), PULSE_MB_E_TRUNCATED);

	/* a page whose chunks do not fill it is ambiguous: not asserted */
}

static void test_names(void **state)
{
	(void)state;
	for (int s = PULSE_MB_OK; s <= PULSE_MB_E_TIMEOUT; s++) {
		const char *n = pulse_mb_status_name((enum pulse_mb_status)s);
		assert_non_null(n);
		assert_true(n[0] != 0);
		for (int t = PULSE_MB_OK; t < s; t++)
			assert_string_not_equal(n, pulse_mb_status_name((enum pulse_mb_status)t));
	}
	/* values from a newer peer must not crash the logger */
	assert_non_null(pulse_mb_status_name((enum pulse_mb_status)999));
	assert_non_null(pulse_mb_status_name((enum pulse_mb_status)0xFFFF));
	for (int s = 0; s < PULSE_STAT_COUNT; s++) {
		const char *n = pulse_stat_name((enum pulse_stat)s);
		assert_non_null(n);
		assert_true(n[0] != 0);
		for (int t = 0; t < s; t++)
			assert_string_not_equal(n, pulse_stat_name((enum pulse_stat)t));
	}
	assert_non_null(pulse_stat_name(PULSE_STAT_COUNT));
	assert_non_null(pulse_stat_name((enum pulse_stat)100000));
}

static void test_rec_make(void **state)
{
	(void)state;
	assert_int_equal(pulse_mb_rec_make(0, 0), 0);
	assert_int_equal(pulse_mb_rec_make(254, 0xFFFFFF), 0xFFFFFFFEu);
	assert_int_equal(pulse_mb_rec_make(PULSE_MB_REC_SKIP, 1), 0x1FFu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_roundtrip_and_layout),
		cmocka_unit_test(test_header_decode_errors),
		cmocka_unit_test(test_build_request),
		cmocka_unit_test(test_hello_roundtrip_and_layout),
		cmocka_unit_test(test_config_roundtrip_and_layout),
		cmocka_unit_test(test_poll_req_roundtrip_and_layout),
		cmocka_unit_test(test_poll_resp_roundtrip_and_layout),
		cmocka_unit_test(test_page_req_roundtrip_and_layout),
		cmocka_unit_test(test_page_iterators),
		cmocka_unit_test(test_page_open_rejects_bad_pages),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rec_make),
	};
	return cmocka_run_group_tests_name("mailbox codec", tests, NULL, NULL);
}
