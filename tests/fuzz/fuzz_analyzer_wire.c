/* libFuzzer target: the agent <-> analyzer wire decoder (wire/frame.c).
 *
 * Input: byte 0 seeds the chunking, the rest is the TCP byte stream. The
 * stream is fed to the streaming decoder in chunks of varying size (as
 * reads would deliver it); every frame that comes out goes through the
 * payload decoder of its type, as the analyzer and the agent do. Checks:
 * no crash, no read past a buffer (ASan), decoded payloads re-encode to
 * something that decodes to the same values, and the decoder's counters
 * add up. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/analyzer_wire.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			__builtin_trap();                                                          \
	} while (0)

static void payload(const struct pulse_aw_frame *f)
{
	char err[256];
	const uint8_t *p = f->payload;
	size_t n = f->h.length;
	switch (f->h.type) {
	case PULSE_AW_HELLO: {
		struct pulse_aw_hello h, g;
		if (pulse_aw_hello_decode(p, n, &h, err, sizeof err) == 0) {
			uint8_t b[600];
			size_t m = pulse_aw_hello_encode(b, sizeof b, &h);
			CHECK(m == n && memcmp(b, p, n) == 0);
			CHECK(pulse_aw_hello_decode(b, m, &g, err, sizeof err) == 0);
		}
		break;
	}
	case PULSE_AW_HELLO_ACK: {
		struct pulse_aw_hello_ack a;
		if (pulse_aw_hello_ack_decode(p, n, &a, err, sizeof err) == 0) {
			uint8_t b[64];
			CHECK(pulse_aw_hello_ack_encode(b, sizeof b, &a) == n && !memcmp(b, p, n));
		}
		break;
	}
	case PULSE_AW_HEARTBEAT: {
		struct pulse_aw_heartbeat hb;
		(void)pulse_aw_heartbeat_decode(p, n, &hb, err, sizeof err);
		break;
	}
	case PULSE_AW_BYE:
	case PULSE_AW_ERROR: {
		struct pulse_aw_status s;
		if (pulse_aw_status_decode(p, n, &s, err, sizeof err) == 0) {
			uint8_t b[300];
			CHECK(pulse_aw_status_encode(b, sizeof b, &s) == n && !memcmp(b, p, n));
		}
		break;
	}
	case PULSE_AW_OP:
	case PULSE_AW_CALLS:
	case PULSE_AW_MAP:
	case PULSE_AW_LINES: {
		int k = pulse_aw_lines_check(f->h.type, p, n, err, sizeof err);
		if (k > 0) {
			size_t pos = 0, ll;
			const char *line;
			int seen = 0;
			while (pulse_aw_lines_next(p, n, &pos, &line, &ll)) {
				char t[32];
				CHECK(ll > 0 && line[0] == '{');
				(void)pulse_aw_line_type(line, ll, t, sizeof t);
				if (f->h.type == PULSE_AW_OP) {
					struct pulse_op_record *r = malloc(sizeof *r);
					if (r) {
						(void)pulse_op_record_from_json(line, ll, r, err, sizeof err);
						free(r);
					}
				}
				seen++;
			}
			CHECK(seen == k);
		}
		break;
	}
	case PULSE_AW_JOIN: {
		struct pulse_aw_join j;
		if (pulse_aw_join_from_json((const char *)p, n, &j, err, sizeof err) == 0) {
			char *s = pulse_aw_join_to_json(&j);
			if (s) {
				struct pulse_aw_join g;
				CHECK(pulse_aw_join_from_json(s, strlen(s), &g, err, sizeof err) == 0);
				CHECK(g.nqps == j.nqps && g.nmembers == j.nmembers && g.version == j.version);
				pulse_aw_join_free(&g);
				free(s);
			}
			pulse_aw_join_free(&j);
		}
		break;
	}
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned seed = data[0];
	data++;
	size--;
	struct pulse_aw_decoder d;
	/* a small bound half of the time, so that oversize paths are reached */
	if (pulse_aw_dec_init(&d, (seed & 1) ? 4096 : 0))
		return 0;
	size_t pos = 0;
	uint64_t frames = 0, bad = 0;
	int fatal = 0;
	while (!fatal) {
		size_t chunk = (seed >> 1) ? (seed >> 1) : 1;
		seed = seed * 37 + 11;
		seed &= 0xff;
		if (chunk > size - pos)
			chunk = size - pos;
		size_t took = pulse_aw_dec_feed(&d, data + pos, chunk);
		CHECK(took <= chunk);
		pos += took;
		struct pulse_aw_frame f;
		char err[256];
		int rc;
		while ((rc = pulse_aw_dec_next(&d, &f, err, sizeof err)) != PULSE_AW_DEC_MORE) {
			if (rc == PULSE_AW_DEC_FATAL) {
				fatal = 1;
				break;
			}
			frames++;
			if (rc == PULSE_AW_DEC_BAD) {
				CHECK(f.payload == NULL);
				bad++;
				continue;
			}
			CHECK(rc == PULSE_AW_DEC_FRAME);
			CHECK(f.h.length <= d.max_payload);
			payload(&f);
		}
		if (pos == size)
			break;
		if (!fatal && took == 0)
			__builtin_trap(); /* decoder stalled with frames taken out */
	}
	CHECK(d.frames == frames && d.bad_frames == bad);
	if (!fatal)
		CHECK(d.bytes == size && pulse_aw_dec_pending(&d) <= size);
	pulse_aw_dec_free(&d);
	return 0;
}
