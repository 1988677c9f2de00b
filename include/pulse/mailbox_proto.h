/* Pulse mailbox protocol: host agent <-> NIC agent.
 *
 * The host and the NIC are different machines (x86 and the DPA's RISC-V), so
 * every message is little-endian with explicit sizes, and the protocol is
 * versioned. DOCA PCC mailboxes are small and synchronous: one request, one
 * response. The upload of a poll window is therefore split into pages of at
 * most `page_bytes`, each carrying its window and page sequence numbers so the
 * host detects a lost or repeated page.
 *
 * Every message starts with a 12-byte header:
 *   0  u16 magic   PULSE_MB_MAGIC
 *   2  u8  version PULSE_MB_VERSION
 *   3  u8  type    request type; responses set PULSE_MB_RESPONSE
 *   4  u16 length  total message length, header included
 *   6  u16 seq     request id, echoed in the response
 *   8  u16 status  enum pulse_mb_status (0 in requests)
 *   10 u16 reserved, 0
 *
 * Bodies are described next to each type below. Offsets are from the end of
 * the header. Encoders and decoders live in mailbox/proto.c and are
 * freestanding, so the firmware and the host share them. */
#ifndef PULSE_MAILBOX_PROTO_H
#define PULSE_MAILBOX_PROTO_H

#include <stdint.h>

#define PULSE_MB_MAGIC 0x4C50u /* "PL" on the wire */
#define PULSE_MB_VERSION 1u
#define PULSE_MB_HEADER_SIZE 12u
#define PULSE_MB_RESPONSE 0x80u

/* The smallest response buffer a transport may offer: a header plus the
 * largest fixed-size body. Pages need more; see page_bytes. */
#define PULSE_MB_MIN_RESPONSE 256u
#define PULSE_MB_MAX_MESSAGE 65535u

enum pulse_mb_type {
	PULSE_MB_HELLO = 1,     /* body: none.          response: pulse_mb_hello */
	PULSE_MB_CONFIGURE = 2, /* body: pulse_mb_config. response: pulse_mb_hello */
	PULSE_MB_POLL = 3,      /* body: pulse_mb_poll_req. response: pulse_mb_poll_resp */
	PULSE_MB_READ_PAGE = 4, /* body: pulse_mb_page_req. response: a page */
	PULSE_MB_STATS = 5,     /* body: none.          response: counters */
	PULSE_MB_RESET = 6,     /* body: none.          response: none */
};

enum pulse_mb_status {
	PULSE_MB_OK = 0,
	PULSE_MB_E_MAGIC = 1,      /* not a Pulse message */
	PULSE_MB_E_VERSION = 2,    /* protocol version not supported */
	PULSE_MB_E_TRUNCATED = 3,  /* length field and received bytes disagree, or body short */
	PULSE_MB_E_TYPE = 4,       /* unknown request type */
	PULSE_MB_E_RANGE = 5,      /* a parameter or page number out of range */
	PULSE_MB_E_BUSY = 6,       /* an upload is unfinished; poll again with FORCE or read it */
	PULSE_MB_E_NO_UPLOAD = 7,  /* page read with no upload open */
	PULSE_MB_E_WINDOW = 8,     /* page read names another window */
	PULSE_MB_E_NOSPACE = 9,    /* response buffer too small for the answer */
	PULSE_MB_E_TIMEOUT = 10,   /* the firmware could not quiesce its event threads */
};

enum pulse_mb_platform {
	PULSE_PLATFORM_X86_SIM = 1,   /* the firmware core linked into a host program */
	PULSE_PLATFORM_RV64_EMU = 2,  /* the rv64imac image under qemu-system-riscv64 */
	PULSE_PLATFORM_DOCA_DPA = 3,  /* BlueField-3 DPA through DOCA PCC */
};

struct pulse_mb_header {
	uint16_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t length;
	uint16_t seq;
	uint16_t status;
};

/* HELLO response and CONFIGURE response, 48 bytes:
 *  0 u16 proto_min  2 u16 proto_max  4 u32 fw_version  8 u32 platform
 * 12 u32 max_flows 16 u32 pool_blocks 20 u16 records_per_block
 * 22 u16 max_threads 24 u32 epoch_ns 28 u32 window_ns 32 u16 page_bytes
 * 34 u16 clip_units_per_pkt 36 u32 flow_limit 40 u64 instance_id */
#define PULSE_MB_HELLO_SIZE 48u
struct pulse_mb_hello {
	uint16_t proto_min, proto_max;
	uint32_t fw_version;
	uint32_t platform;
	uint32_t max_flows;   /* flow slots the image was built/initialised with */
	uint32_t pool_blocks; /* epoch-pool blocks available */
	uint16_t records_per_block;
	uint16_t max_threads;
	uint32_t epoch_ns;
	uint32_t window_ns;
	uint16_t page_bytes;
	uint16_t clip_units_per_pkt;
	uint32_t flow_limit;  /* configured limit (<= max_flows) */
	uint64_t instance_id; /* changes when the NIC agent restarts */
};

/* CONFIGURE request, 20 bytes. Applying it resets all measurement state.
 *  0 u32 epoch_ns (8000..1024000)  4 u32 window_ns (1 ms..2 s)
 *  8 u16 page_bytes (256..response capacity)  10 u16 clip_units_per_pkt (0: keep)
 * 12 u32 flow_limit (0: all)  16 u32 pool_limit (0: all blocks) */
#define PULSE_MB_CONFIG_SIZE 20u
struct pulse_mb_config {
	uint32_t epoch_ns;
	uint32_t window_ns;
	uint16_t page_bytes;
	uint16_t clip_units_per_pkt;
	uint32_t flow_limit;
	uint32_t pool_limit;
};

#define PULSE_EPOCH_NS_MIN 8000u
#define PULSE_EPOCH_NS_MAX 1024000u
#define PULSE_EPOCH_NS_DEFAULT 32000u
#define PULSE_WINDOW_NS_MIN 1000000u
#define PULSE_WINDOW_NS_MAX 2000000000u
#define PULSE_WINDOW_NS_DEFAULT 1000000000u
#define PULSE_PAGE_BYTES_MIN 256u
#define PULSE_PAGE_BYTES_DEFAULT 1024u
/* 4096-byte MTU payload plus RoCEv2 headers, rounded up to 32-byte units */
#define PULSE_CLIP_UNITS_PER_PKT_DEFAULT 130u

/* POLL request, 12 bytes: 0 u64 host_ns (sender's CLOCK_REALTIME) 8 u16 flags 10 u16 0 */
#define PULSE_MB_POLL_REQ_SIZE 12u
#define PULSE_MB_POLL_FORCE 0x1u /* abandon an unfinished upload instead of failing BUSY */
struct pulse_mb_poll_req {
	uint64_t host_ns;
	uint16_t flags;
};

/* POLL response, 56 bytes:
 *  0 u32 window_seq  4 u16 page_count  6 u16 flags  8 u64 host_ns (echo)
 * 16 u64 nic_ns (NIC time at the poll = window end)  24 u64 window_start_ns
 * 32 u32 epoch_ns  36 u32 flows  40 u32 records  44 u32 upload_bytes
 * 48 u32 flows_aged 52 u32 0 */
#define PULSE_MB_POLL_RESP_SIZE 56u
#define PULSE_MB_POLLF_ABANDONED 0x1u /* the previous upload was not fully read */
#define PULSE_MB_POLLF_RESTARTED 0x2u /* first window after init/configure/reset */
struct pulse_mb_poll_resp {
	uint32_t window_seq;
	uint16_t page_count;
	uint16_t flags;
	uint64_t host_ns;
	uint64_t nic_ns;
	uint64_t window_start_ns;
	uint32_t epoch_ns;
	uint32_t flows;
	uint32_t records;
	uint32_t upload_bytes;
	uint32_t flows_aged;
};

/* READ_PAGE request, 8 bytes: 0 u32 window_seq 4 u16 page_seq 6 u16 0.
 * Pages are read in order; the page just served may be read again (the
 * response may have been lost), anything else is E_RANGE. */
#define PULSE_MB_PAGE_REQ_SIZE 8u
struct pulse_mb_page_req {
	uint32_t window_seq;
	uint16_t page_seq;
};

/* A page (READ_PAGE response body):
 *  0 u32 window_seq  4 u16 page_seq  6 u16 page_count  8 u16 chunk_count
 * 10 u16 flags (PULSE_MB_PAGEF_LAST)
 * 12 chunks, each:
 *     0 u32 qpn (bits 0-23) | chunk flags << 24
 *     4 u32 base_epoch
 *     8 u16 record_count  10 u16 0
 *    12 record_count x u32 records
 *
 * Records are sparse: one per non-zero epoch of the flow, in epoch order.
 * A record's epoch is the previous record's epoch (base_epoch for the first
 * of a chunk) plus its advance. Epoch e covers NIC time
 * [window_start_ns + e*epoch_ns, +epoch_ns).
 *   bits 0-7 != 0xFF : advance (0..254), bits 8-31: 32-byte units sent
 *   bits 0-7 == 0xFF : skip, bits 8-31: advance only, no bytes
 * Two records may name the same epoch (advance 0); their units add. */
#define PULSE_MB_PAGE_HEADER_SIZE 12u
#define PULSE_MB_CHUNK_HEADER_SIZE 12u
#define PULSE_MB_PAGEF_LAST 0x1u
#define PULSE_MB_CHUNKF_CONT 0x1u /* continues this flow from the previous page */
#define PULSE_MB_REC_SKIP 0xFFu
#define PULSE_MB_REC_MAX_ADVANCE 254u
#define PULSE_MB_REC_MAX_UNITS 0xFFFFFFu

struct pulse_mb_page_info {
	uint32_t window_seq;
	uint16_t page_seq;
	uint16_t page_count;
	uint16_t chunk_count;
	uint16_t flags;
};

struct pulse_mb_chunk {
	uint32_t qpn;
	uint8_t flags;
	uint32_t base_epoch;
	uint16_t record_count;
	const uint8_t *records; /* record_count x u32, little-endian */
};

static inline uint32_t pulse_mb_rec_make(uint32_t advance, uint32_t units)
{
	return units << 8 | advance;
}

/* STATS response: 0 u16 count 2 u16 0 4 u32 0, then count x u64 in the order
 * of enum pulse_stat. A host reading an older firmware sees fewer counters. */
enum pulse_stat {
	PULSE_STAT_EVENTS,            /* TX events accepted */
	PULSE_STAT_UNITS,             /* 32-byte units accepted */
	PULSE_STAT_PKTS,              /* packets accepted */
	PULSE_STAT_FLOWS_CREATED,
	PULSE_STAT_FLOWS_ACTIVE,      /* gauge: flows holding a slot */
	PULSE_STAT_FLOWS_AGED,        /* released by aging at a poll */
	PULSE_STAT_POOL_BLOCKS,       /* gauge: blocks the pool may hand out */
	PULSE_STAT_POOL_USED,         /* gauge: blocks held by flows */
	PULSE_STAT_POOL_PEAK,         /* high-water mark of POOL_USED */
	PULSE_STAT_DROP_BAD_QPN,      /* QPN 0, 0xFFFFFF, or above 24 bits */
	PULSE_STAT_DROP_NO_SLOT,      /* no flow slot free */
	PULSE_STAT_DROP_NO_POOL,      /* epoch records lost: pool exhausted */
	PULSE_STAT_DROP_NO_POOL_UNITS,
	PULSE_STAT_DROP_TS_RANGE,     /* timestamp jumped out of the window's range */
	PULSE_STAT_LATE_EVENTS,       /* stamped before the open window: counted in its epoch 0 */
	PULSE_STAT_REORDERED_EVENTS,  /* stamped before the flow's last epoch: counted in that epoch */
	PULSE_STAT_ZERO_EVENTS,       /* zero bytes: ignored */
	PULSE_STAT_CLIPPED_EVENTS,    /* 16-bit byte counter clipped: bytes estimated from packets */
	PULSE_STAT_POLLS,
	PULSE_STAT_POLLS_BUSY,        /* refused: upload unfinished */
	PULSE_STAT_UPLOADS_ABANDONED, /* FORCE poll over an unfinished upload */
	PULSE_STAT_PAGES_SERVED,
	PULSE_STAT_PAGE_REPEATS,
	PULSE_STAT_BAD_REQUESTS,
	PULSE_STAT_QUIESCE_TIMEOUTS,
	PULSE_STAT_DROP_BAD_THREAD,   /* platform passed a thread number >= max_threads */
	PULSE_STAT_DROP_PAUSED,       /* arrived while a reset/configure held the gate shut */
	PULSE_STAT_COUNT
};
#define PULSE_MB_STATS_HEADER_SIZE 8u

/* --- encoders and decoders (mailbox/proto.c) ---------------------------- */

/* Decodes and validates a header against the received byte count.
 * Returns PULSE_MB_OK or the status to answer with. */
enum pulse_mb_status pulse_mb_decode_header(const uint8_t *buf, uint32_t len,
					    struct pulse_mb_header *h);
void pulse_mb_encode_header(uint8_t *buf, const struct pulse_mb_header *h);

/* Builds a complete request (header + body) in buf; returns its length, or 0
 * when cap is too small. body may be NULL when body_len is 0. */
uint32_t pulse_mb_build_request(uint8_t *buf, uint32_t cap, uint8_t type, uint16_t seq,
				const uint8_t *body, uint32_t body_len);

void pulse_mb_encode_hello(uint8_t *out, const struct pulse_mb_hello *m);
void pulse_mb_decode_hello(const uint8_t *in, struct pulse_mb_hello *m);
void pulse_mb_encode_config(uint8_t *out, const struct pulse_mb_config *m);
void pulse_mb_decode_config(const uint8_t *in, struct pulse_mb_config *m);
void pulse_mb_encode_poll_req(uint8_t *out, const struct pulse_mb_poll_req *m);
void pulse_mb_decode_poll_req(const uint8_t *in, struct pulse_mb_poll_req *m);
void pulse_mb_encode_poll_resp(uint8_t *out, const struct pulse_mb_poll_resp *m);
void pulse_mb_decode_poll_resp(const uint8_t *in, struct pulse_mb_poll_resp *m);
void pulse_mb_encode_page_req(uint8_t *out, const struct pulse_mb_page_req *m);
void pulse_mb_decode_page_req(const uint8_t *in, struct pulse_mb_page_req *m);

/* Page reading for the host. pulse_mb_page_open checks the page header and
 * that every chunk lies inside the page; it returns PULSE_MB_OK or
 * PULSE_MB_E_TRUNCATED, and on success the iterator yields each chunk. */
struct pulse_mb_page_iter {
	const uint8_t *next;
	const uint8_t *end;
	uint16_t chunks_left;
};
enum pulse_mb_status pulse_mb_page_open(const uint8_t *body, uint32_t len,
					struct pulse_mb_page_info *info,
					struct pulse_mb_page_iter *it);
/* Returns 1 and fills c while chunks remain, else 0. */
int pulse_mb_page_next(struct pulse_mb_page_iter *it, struct pulse_mb_chunk *c);

/* Walks a chunk's records, giving each non-zero epoch's absolute index and
 * units. Returns 1 while records remain. state starts at c->base_epoch. */
struct pulse_mb_rec_iter {
	const uint8_t *next;
	uint16_t left;
	uint32_t epoch;
};
void pulse_mb_rec_begin(struct pulse_mb_rec_iter *it, const struct pulse_mb_chunk *c);
int pulse_mb_rec_next(struct pulse_mb_rec_iter *it, uint32_t *epoch, uint32_t *units);

const char *pulse_mb_status_name(enum pulse_mb_status s);
const char *pulse_stat_name(enum pulse_stat s);

#endif
