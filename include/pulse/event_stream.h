/* The Pulse event-stream file: what a NIC's aggregation layer produced,
 * recorded so that the firmware core can be fed the same input on any
 * platform (x86 simulator, RISC-V under qemu, tests).
 *
 * Written by the tests, the trace generator and the cluster simulator; read by
 * the firmware replay harnesses. All fields are little-endian.
 *
 * File layout:
 *   header (32 bytes)
 *     0  char[8]  magic "PULSEEVS"
 *     8  u16      version (PULSE_EVS_VERSION)
 *     10 u16      header_size (32; readers skip any extra bytes)
 *     12 u16      record_size (16)
 *     14 u16      flags (0)
 *     16 char[16] NIC name, NUL-padded (informational)
 *   records (record_size bytes each), in the order the NIC produced them
 *
 * Record kinds (byte 0):
 *   PULSE_EVS_TX   a TX event
 *     1  u8   DPA thread that handled it (used by concurrent replays)
 *     2  u16  sent_pkts
 *     4  u32  qpn (24-bit)
 *     8  u32  ts_ns (NIC clock, wraps)
 *     12 u16  sent_32b
 *     14 u16  0
 *   PULSE_EVS_POLL the host agent polled the NIC here
 *     1  u8   0
 *     2  u16  0
 *     4  u32  ts_ns: NIC clock when the poll was handled (wraps)
 *     8  u64  host_ns: host CLOCK_REALTIME when the poll was sent
 *
 * A file that ends in the middle of a record is truncated: readers report it. */
#ifndef PULSE_EVENT_STREAM_H
#define PULSE_EVENT_STREAM_H

#include <stdint.h>

#include "pulse/le.h"
#include "pulse/tx_event.h"

#define PULSE_EVS_MAGIC "PULSEEVS"
#define PULSE_EVS_VERSION 1u
#define PULSE_EVS_HEADER_SIZE 32u
#define PULSE_EVS_RECORD_SIZE 16u
#define PULSE_EVS_NIC_NAME_LEN 16u

enum pulse_evs_kind {
	PULSE_EVS_TX = 1,
	PULSE_EVS_POLL = 2,
};

struct pulse_evs_record {
	uint8_t kind;   /* enum pulse_evs_kind */
	uint8_t thread; /* TX only */
	struct pulse_tx_event ev; /* TX: the event; POLL: only ev.ts_ns is used */
	uint64_t host_ns;         /* POLL only */
};

static inline void pulse_evs_encode_header(uint8_t out[PULSE_EVS_HEADER_SIZE],
					   const char *nic_name)
{
	static const char magic[8] = PULSE_EVS_MAGIC;
	for (unsigned i = 0; i < PULSE_EVS_HEADER_SIZE; i++)
		out[i] = 0;
	for (unsigned i = 0; i < 8; i++)
		out[i] = (uint8_t)magic[i];
	pulse_put_u16(out + 8, PULSE_EVS_VERSION);
	pulse_put_u16(out + 10, PULSE_EVS_HEADER_SIZE);
	pulse_put_u16(out + 12, PULSE_EVS_RECORD_SIZE);
	for (unsigned i = 0; nic_name && nic_name[i] && i < PULSE_EVS_NIC_NAME_LEN - 1; i++)
		out[16 + i] = (uint8_t)nic_name[i];
}

/* Returns 0 when the header is one this reader understands, else -1. */
static inline int pulse_evs_check_header(const uint8_t *in, uint32_t len,
					 uint16_t *header_size, uint16_t *record_size)
{
	static const char magic[8] = PULSE_EVS_MAGIC;
	if (len < PULSE_EVS_HEADER_SIZE)
		return -1;
	for (unsigned i = 0; i < 8; i++)
		if (in[i] != (uint8_t)magic[i])
			return -1;
	if (pulse_get_u16(in + 8) != PULSE_EVS_VERSION)
		return -1;
	*header_size = pulse_get_u16(in + 10);
	*record_size = pulse_get_u16(in + 12);
	if (*header_size < PULSE_EVS_HEADER_SIZE || *record_size < PULSE_EVS_RECORD_SIZE)
		return -1;
	return 0;
}

static inline void pulse_evs_encode_record(uint8_t out[PULSE_EVS_RECORD_SIZE],
					   const struct pulse_evs_record *r)
{
	pulse_put_u8(out, r->kind);
	if (r->kind == PULSE_EVS_POLL) {
		pulse_put_u8(out + 1, 0);
		pulse_put_u16(out + 2, 0);
		pulse_put_u32(out + 4, r->ev.ts_ns);
		pulse_put_u64(out + 8, r->host_ns);
		return;
	}
	pulse_put_u8(out + 1, r->thread);
	pulse_put_u16(out + 2, r->ev.sent_pkts);
	pulse_put_u32(out + 4, r->ev.qpn);
	pulse_put_u32(out + 8, r->ev.ts_ns);
	pulse_put_u16(out + 12, r->ev.sent_32b);
	pulse_put_u16(out + 14, 0);
}

/* Returns 0 on a known record kind, -1 otherwise (the caller counts it). */
static inline int pulse_evs_decode_record(const uint8_t in[PULSE_EVS_RECORD_SIZE],
					  struct pulse_evs_record *r)
{
	r->kind = pulse_get_u8(in);
	r->thread = 0;
	r->host_ns = 0;
	r->ev.qpn = 0;
	r->ev.sent_32b = 0;
	r->ev.sent_pkts = 0;
	if (r->kind == PULSE_EVS_POLL) {
		r->ev.ts_ns = pulse_get_u32(in + 4);
		r->host_ns = pulse_get_u64(in + 8);
		return 0;
	}
	if (r->kind != PULSE_EVS_TX)
		return -1;
	r->thread = pulse_get_u8(in + 1);
	r->ev.sent_pkts = pulse_get_u16(in + 2);
	r->ev.qpn = pulse_get_u32(in + 4);
	r->ev.ts_ns = pulse_get_u32(in + 8);
	r->ev.sent_32b = pulse_get_u16(in + 12);
	return 0;
}

#endif
