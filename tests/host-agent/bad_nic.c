/* A misbehaving simulated NIC for the host agent's tests: speaks the mailbox
 * protocol on a Unix socket (the transport_unix server helper) without a
 * firmware core, answering every even-numbered window with one specific
 * fault, and odd windows correctly, so the agent must both detect the fault
 * and carry on.
 *
 *   bad_nic SOCKET MODE SECONDS
 *   MODE: good     every window correct
 *         version  every response's header says protocol version 9
 *         short    page 1 of even windows claims more records than it has
 *         repeat   page 1 of even windows is page 0 again
 *         count    page 1 of even windows says the window has 4 pages, not 3
 *         long     even windows say they lasted 5 s (the NIC went unpolled)
 * Each window has 3 pages; page p holds QPN 100+p with one record of
 * 10 units (320 bytes) in epoch p. On exit it prints the requests it served
 * by type, so a test can check the agent did not spin. */
#define _GNU_SOURCE
#include <signal.h>
#include "pulse/clock_ns.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pulse/le.h"
#include "pulse/mailbox_proto.h"
#include "pulse/transport_unix.h"

enum mode { M_GOOD, M_VERSION, M_SHORT, M_REPEAT, M_COUNT, M_LONG };
static enum mode mode;
static uint32_t window_seq;
static uint64_t by_type[8];
static volatile sig_atomic_t stop;

static void on_sig(int s)
{
	(void)s;
	stop = 1;
}

static uint32_t finish(uint8_t *resp, const struct pulse_mb_header *rq, uint32_t body_len,
		       uint16_t status)
{
	struct pulse_mb_header h = {.magic = PULSE_MB_MAGIC,
				    .version = mode == M_VERSION ? 9 : PULSE_MB_VERSION,
				    .type = (uint8_t)(rq->type | PULSE_MB_RESPONSE),
				    .length = (uint16_t)(PULSE_MB_HEADER_SIZE + body_len),
				    .seq = rq->seq,
				    .status = status};
	pulse_mb_encode_header(resp, &h);
	return PULSE_MB_HEADER_SIZE + body_len;
}

static uint32_t page(uint8_t *b, uint32_t win, uint16_t seq, uint16_t count, int short_records)
{
	pulse_put_u32(b, win);
	pulse_put_u16(b + 4, seq);
	pulse_put_u16(b + 6, count);
	pulse_put_u16(b + 8, 1);
	pulse_put_u16(b + 10, seq + 1u == count ? PULSE_MB_PAGEF_LAST : 0);
	uint8_t *c = b + PULSE_MB_PAGE_HEADER_SIZE;
	pulse_put_u32(c, 100u + seq);
	pulse_put_u32(c + 4, seq);
	pulse_put_u16(c + 8, short_records ? 50 : 1);
	pulse_put_u16(c + 10, 0);
	pulse_put_u32(c + 12, pulse_mb_rec_make(0, 10));
	return PULSE_MB_PAGE_HEADER_SIZE + PULSE_MB_CHUNK_HEADER_SIZE + 4;
}

static int handle(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp, uint32_t cap,
		  uint32_t *resp_len)
{
	(void)ctx;
	(void)cap;
	struct pulse_mb_header h;
	if (pulse_mb_decode_header(req, req_len, &h) != PULSE_MB_OK)
		return -1;
	by_type[h.type & 7]++;
	uint8_t *body = resp + PULSE_MB_HEADER_SIZE;
	static uint64_t nic0;
	if (!nic0)
		nic0 = pulse_mono_ns();
	uint64_t nic = pulse_mono_ns() - nic0;
	switch (h.type) {
	case PULSE_MB_HELLO:
	case PULSE_MB_CONFIGURE: {
		struct pulse_mb_hello m = {.proto_min = 1, .proto_max = 1, .fw_version = 0x000100,
					   .platform = PULSE_PLATFORM_X86_SIM, .max_flows = 16,
					   .pool_blocks = 16, .records_per_block = 31, .max_threads = 1,
					   .epoch_ns = 32000, .window_ns = 200000000, .page_bytes = 1024,
					   .flow_limit = 16, .instance_id = 0xBAD};
		if (h.type == PULSE_MB_CONFIGURE && req_len >= PULSE_MB_HEADER_SIZE + PULSE_MB_CONFIG_SIZE) {
			struct pulse_mb_config c;
			pulse_mb_decode_config(req + PULSE_MB_HEADER_SIZE, &c);
			m.epoch_ns = c.epoch_ns;
			m.window_ns = c.window_ns;
			m.page_bytes = c.page_bytes;
		}
		pulse_mb_encode_hello(body, &m);
		*resp_len = finish(resp, &h, PULSE_MB_HELLO_SIZE, 0);
		return 0;
	}
	case PULSE_MB_POLL: {
		static uint64_t last_end;
		window_seq++;
		struct pulse_mb_poll_resp p = {.window_seq = window_seq, .page_count = 3,
					       .flags = window_seq == 1 ? PULSE_MB_POLLF_RESTARTED : 0,
					       .nic_ns = nic, .window_start_ns = last_end,
					       .epoch_ns = 32000, .flows = 3, .records = 3,
					       .upload_bytes = 3 * 28};
		if (req_len >= PULSE_MB_HEADER_SIZE + PULSE_MB_POLL_REQ_SIZE)
			p.host_ns = pulse_get_u64(req + PULSE_MB_HEADER_SIZE);
		if (mode == M_LONG && window_seq % 2 == 0) {
			p.window_start_ns = nic;
			p.nic_ns = nic + 5000000000ull;
		}
		last_end = nic;
		pulse_mb_encode_poll_resp(body, &p);
		*resp_len = finish(resp, &h, PULSE_MB_POLL_RESP_SIZE, 0);
		return 0;
	}
	case PULSE_MB_READ_PAGE: {
		struct pulse_mb_page_req pr = {0};
		if (req_len >= PULSE_MB_HEADER_SIZE + PULSE_MB_PAGE_REQ_SIZE)
			pulse_mb_decode_page_req(req + PULSE_MB_HEADER_SIZE, &pr);
		int bad = (window_seq % 2 == 0) && pr.page_seq == 1;
		uint16_t seq = pr.page_seq, count = 3;
		int shortr = 0;
		if (bad && mode == M_REPEAT)
			seq = 0;
		if (bad && mode == M_COUNT)
			count = 4;
		if (bad && mode == M_SHORT)
			shortr = 1;
		uint32_t n = page(body, pr.window_seq, seq, count, shortr);
		if (seq == 0 && bad && mode == M_REPEAT)
			pulse_put_u16(body + 10, 0);
		*resp_len = finish(resp, &h, n, 0);
		return 0;
	}
	case PULSE_MB_STATS:
		pulse_put_u16(body, 0);
		pulse_put_u16(body + 2, 0);
		pulse_put_u32(body + 4, 0);
		*resp_len = finish(resp, &h, PULSE_MB_STATS_HEADER_SIZE, 0);
		return 0;
	default:
		*resp_len = finish(resp, &h, 0, PULSE_MB_E_TYPE);
		return 0;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: bad_nic SOCKET good|version|short|repeat|count|long SECONDS\n");
		return 2;
	}
	static const char *const names[] = {"good", "version", "short", "repeat", "count", "long"};
	int m = -1;
	for (int i = 0; i < 6; i++)
		if (!strcmp(argv[2], names[i]))
			m = i;
	if (m < 0) {
		fprintf(stderr, "bad_nic: unknown mode %s\n", argv[2]);
		return 2;
	}
	mode = (enum mode)m;
	double secs = atof(argv[3]);
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	signal(SIGPIPE, SIG_IGN);
	struct pulse_unix_server s;
	if (pulse_unix_server_open(&s, argv[1], 4096)) {
		fprintf(stderr, "bad_nic: %s\n", s.last_error);
		return 1;
	}
	uint64_t end = pulse_mono_ns() + (uint64_t)(secs * 1e9);
	while (!stop && pulse_mono_ns() < end)
		if (pulse_unix_server_step(&s, 50, handle, NULL) < 0)
			break;
	printf("bad_nic: mode %s: hello %llu configure %llu poll %llu read_page %llu stats %llu\n",
	       argv[2], (unsigned long long)by_type[1], (unsigned long long)by_type[2],
	       (unsigned long long)by_type[3], (unsigned long long)by_type[4],
	       (unsigned long long)by_type[5]);
	pulse_unix_server_close(&s);
	return 0;
}
