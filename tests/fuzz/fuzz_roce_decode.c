/* libFuzzer target for the RoCEv2 decoder (sim/roce_decode.c).
 *
 * Input: byte 0 picks the link type, bytes 1-2 (little-endian) are how many
 * bytes the "original" packet had beyond the captured ones (a snaplen cut),
 * the rest is the captured frame. The decoder must never read outside the
 * frame (ASan), never hit undefined behaviour (UBSan), and its results must
 * be self-consistent. Built by sim/sim.mk; run by tests/sim/fuzz_roce_decode.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	enum pulse_roce_link link = (enum pulse_roce_link)(data[0] % 5); /* 0 is invalid */
	uint32_t extra = (uint32_t)data[1] | (uint32_t)data[2] << 8;
	size -= 3;
	/* A private copy of exactly `size` bytes, so ASan catches any over-read. */
	uint8_t *frame = malloc(size ? size : 1);
	if (!frame)
		return 0;
	memcpy(frame, data + 3, size);
	struct pulse_roce_pkt p;
	uint32_t caplen = (uint32_t)size, wirelen = caplen + extra;
	enum pulse_roce_status s = pulse_roce_decode(frame, caplen, wirelen, link, &p);
	if ((unsigned)s >= PULSE_ROCE_STATUS_COUNT)
		abort();
	(void)pulse_roce_status_name(s);
	(void)pulse_roce_status_group(s);
	if (s == PULSE_ROCE_OK) {
		/* invariants of a decoded packet */
		if (p.dqpn > 0xFFFFFF || p.psn > 0xFFFFFF || p.pad > 3)
			abort();
		if (p.wire_len > wirelen + 20 || p.ip_len > p.wire_len)
			abort();
		if (p.udp_len < 8 + PULSE_ROCE_BTH_SIZE + PULSE_ROCE_ICRC_SIZE || p.udp_len > p.ip_len)
			abort();
		if (p.payload_len > p.udp_len)
			abort();
		if (p.ip_version != 4 && p.ip_version != 6)
			abort();
		if (strcmp(pulse_roce_opcode_name(p.opcode), "reserved") == 0)
			abort();
		char a[46];
		pulse_roce_addr_str(p.src, a);
		pulse_roce_addr_str(p.dst, a);
	}
	free(frame);
	return 0;
}
