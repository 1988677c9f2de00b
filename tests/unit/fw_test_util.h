/* Test helpers for the NIC agent core and the mailbox protocol.
 *
 * Written from the interface (include/pulse/nic_agent.h, mailbox_proto.h),
 * not from the implementation: requests are built with pulse_mb_build_request,
 * uploads are read with POLL + READ_PAGE and decoded with the public page and
 * record iterators into a flat, sorted list of (qpn, epoch, units) cells. */
#ifndef PULSE_FW_TEST_UTIL_H
#define PULSE_FW_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"
#include "pulse/tx_event.h"

/* Response buffers are this big unless a test says otherwise. */
#define FT_RESP_CAP 65536u

/* One (qpn, epoch) cell of an upload, or of an expectation. */
struct ft_cell {
	uint32_t qpn;
	uint32_t epoch;
	uint64_t units;
};

/* A growable, sortable set of cells: the per-QP map epoch -> units. */
struct ft_map {
	struct ft_cell *v;
	size_t n, cap;
};

void ft_map_init(struct ft_map *m);
void ft_map_free(struct ft_map *m);
void ft_map_clear(struct ft_map *m);
void ft_map_add(struct ft_map *m, uint32_t qpn, uint32_t epoch, uint64_t units);
/* Sorts by (qpn, epoch) and merges equal cells, dropping zero cells. */
void ft_map_normalize(struct ft_map *m);
uint64_t ft_map_total(const struct ft_map *m);
uint64_t ft_map_get(const struct ft_map *m, uint32_t qpn, uint32_t epoch); /* normalized */
uint64_t ft_map_qpn_total(const struct ft_map *m, uint32_t qpn);
size_t ft_map_qpn_count(const struct ft_map *m); /* distinct QPNs, normalized */
/* Compares two normalized maps; prints the first differences and returns the
 * number of differing cells (0: equal). */
size_t ft_map_diff(const struct ft_map *got, const struct ft_map *want, const char *what);

/* A firmware instance in heap memory (64-byte aligned). */
struct ft_fw {
	void *mem;
	size_t size;
	struct pulse_fw *fw;
	struct pulse_fw_limits lim;
	uint16_t seq;
	uint32_t page_bytes; /* as the last CONFIGURE answered (default before) */
	uint32_t epoch_ns;
	uint32_t last_resp_len;
	uint32_t nic_clock; /* the firmware's clock as it must be: it never steps back */
	uint8_t resp[FT_RESP_CAP];
	uint8_t req[1024];
};

/* Limits for small, fast tests. */
struct pulse_fw_limits ft_limits(uint32_t max_flows, uint32_t pool_blocks, uint32_t max_threads);
/* A CONFIGURE body with these three settings and defaults for the rest. */
struct pulse_mb_config ft_config(uint32_t epoch_ns, uint32_t window_ns, uint16_t page_bytes);
/* Allocates and initialises; fails the test on error. The memory is filled
 * with garbage first, so init must lay everything out itself. */
struct ft_fw *ft_fw_new(const struct pulse_fw_limits *lim, uint32_t now_ns);
void ft_fw_free(struct ft_fw *f);

/* One event on thread 0 (or `thread`). */
void ft_ev(struct ft_fw *f, uint32_t qpn, uint16_t units, uint16_t pkts, uint32_t ts);
void ft_ev_thr(struct ft_fw *f, uint32_t thread, uint32_t qpn, uint16_t units, uint16_t pkts,
	       uint32_t ts);

/* Sends a raw request; checks that the response is well-formed (header
 * decodes, magic, version, RESPONSE bit, length == resp_len <= cap, status
 * equals the return value). Returns the status. The response is in f->resp,
 * its length in f->last_resp_len. */
enum pulse_mb_status ft_raw(struct ft_fw *f, const uint8_t *req, uint32_t len, uint32_t cap,
			    uint32_t now);
/* Builds a request of `type` with body and sends it. */
enum pulse_mb_status ft_req(struct ft_fw *f, uint8_t type, const uint8_t *body, uint32_t body_len,
			    uint32_t cap, uint32_t now);
/* Response header of the last exchange. */
struct pulse_mb_header ft_resp_header(const struct ft_fw *f);
const uint8_t *ft_resp_body(const struct ft_fw *f);
uint32_t ft_resp_body_len(const struct ft_fw *f);

enum pulse_mb_status ft_hello(struct ft_fw *f, uint32_t now, struct pulse_mb_hello *out);
enum pulse_mb_status ft_configure(struct ft_fw *f, uint32_t now, const struct pulse_mb_config *c,
				  struct pulse_mb_hello *out);
enum pulse_mb_status ft_poll(struct ft_fw *f, uint32_t now, uint16_t flags, uint64_t host_ns,
			     struct pulse_mb_poll_resp *out);
enum pulse_mb_status ft_read_page(struct ft_fw *f, uint32_t now, uint32_t window_seq,
				  uint16_t page_seq, uint32_t cap);
enum pulse_mb_status ft_reset(struct ft_fw *f, uint32_t now);
/* STATS through the mailbox; also checks that it equals pulse_fw_stats when
 * no events run concurrently (check_direct). */
void ft_stats(struct ft_fw *f, uint32_t now, uint64_t out[PULSE_STAT_COUNT]);
uint64_t ft_stat(struct ft_fw *f, enum pulse_stat s); /* pulse_fw_stats, one counter */
/* Prints every non-zero counter (for failure diagnostics). */
void ft_dump_stats(struct ft_fw *f);

/* Decodes one page body into map (adds), checking the page's own structure.
 * Returns the page info. prev_last_qpn: QPN of the previous page's last chunk
 * (0 for none), updated. */
struct pulse_mb_page_info ft_decode_page(const uint8_t *body, uint32_t len, struct ft_map *map,
					 uint32_t *prev_last_qpn, uint32_t *records,
					 uint32_t *nonskip_records, uint32_t *flow_starts);

/* A full upload: POLL (must return OK) then every page in order. */
struct ft_upload {
	struct pulse_mb_poll_resp poll;
	struct ft_map map;   /* normalized */
	uint32_t pages_read;
	uint32_t body_bytes; /* sum of page body lengths */
	uint32_t msg_bytes;  /* sum of page message lengths */
	uint32_t records, nonskip_records, chunks;
	uint32_t flow_starts; /* chunks without CONT: one per flow in the upload */
};
void ft_upload_free(struct ft_upload *u);
/* Polls at `now` and reads all pages (checked: sequence, count, LAST flag,
 * sizes <= page_bytes + header, poll counts against the decoded pages). */
void ft_poll_upload(struct ft_fw *f, uint32_t now, uint16_t flags, struct ft_upload *u);
/* Reads all pages of an already-answered POLL. */
void ft_read_upload(struct ft_fw *f, uint32_t now, struct ft_upload *u);

/* Expected epoch of an event: (t - start) mod 2^32 / epoch_ns. */
static inline uint32_t ft_epoch_of(uint32_t t, uint32_t start, uint32_t epoch_ns)
{
	return (uint32_t)(t - start) / epoch_ns;
}

/* Deterministic PRNG for tests. */
static inline uint64_t ft_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

#endif
