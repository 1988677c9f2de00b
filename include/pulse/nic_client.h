/* The host side of the mailbox: drives HELLO/CONFIGURE/POLL/READ_PAGE/STATS
 * over any transport and decodes uploads into per-QP epoch series.
 *
 * One client per NIC. Shared by the host agent (DOCA or socket transports),
 * sim/run_trace (an in-process transport straight into the firmware core) and
 * the tests, so every consumer sees uploads decoded the same way.
 * Hosted C (uses malloc); not for the firmware. */
#ifndef PULSE_NIC_CLIENT_H
#define PULSE_NIC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/mailbox_proto.h"

/* A transport sends one request and waits for one response.
 * Returns 0 on success, -1 on a transport failure or timeout (errno-style
 * detail is the transport's business; it should log it). */
typedef int (*pulse_nic_exchange_fn)(void *ctx, const uint8_t *req, uint32_t req_len,
				     uint8_t *resp, uint32_t resp_cap, uint32_t *resp_len,
				     uint32_t timeout_ms);

/* One flow's data in one window: its non-zero epochs, ascending. */
struct pulse_qp_series {
	uint32_t qpn;
	uint32_t count;      /* non-zero epochs */
	uint32_t *epoch;     /* epoch index within the window */
	uint64_t *bytes;     /* bytes sent in that epoch */
	uint64_t total_bytes;
	uint32_t cap;
};

/* One closed poll window of one NIC. */
struct pulse_window {
	uint32_t window_seq;
	uint16_t page_count;
	uint16_t poll_flags;     /* PULSE_MB_POLLF_* */
	int complete;            /* every page arrived and decoded */
	uint32_t pages_missing;  /* pages that never arrived: a gap, not zeros */
	uint64_t nic_start_ns;   /* NIC clock, extended to 64 bits */
	uint64_t nic_end_ns;
	uint32_t epoch_ns;
	uint64_t host_send_ns;   /* host CLOCK_REALTIME just before the POLL */
	uint64_t host_recv_ns;   /* and just after its response */
	uint32_t upload_bytes;   /* page payload bytes received */
	uint32_t upload_exchanges;
	uint32_t flows_aged;
	uint32_t flow_count;
	struct pulse_qp_series *flows; /* sorted by qpn, one entry per QP */
	uint32_t flow_cap;
};

enum pulse_nic_err {
	PULSE_NIC_OK = 0,
	PULSE_NIC_ETRANSPORT = -1, /* exchange failed or timed out */
	PULSE_NIC_EPROTO = -2,     /* a malformed or unexpected response */
	PULSE_NIC_ESTATUS = -3,    /* the firmware answered with an error status */
	PULSE_NIC_EVERSION = -4,   /* no protocol version in common */
	PULSE_NIC_ENOMEM = -5,
};

struct pulse_nic_client {
	pulse_nic_exchange_fn exchange;
	void *ctx;
	uint32_t timeout_ms;
	uint16_t seq;
	uint8_t *req;
	uint8_t *resp;
	uint32_t resp_cap;
	struct pulse_mb_hello hello;
	enum pulse_mb_status last_status; /* for PULSE_NIC_ESTATUS */
	char last_error[160];             /* one line, for logs */
	/* protocol-error counters, by cause */
	uint64_t err_transport, err_version, err_short, err_repeat, err_count_changed,
		err_window, err_status;
};

int pulse_nic_client_init(struct pulse_nic_client *c, pulse_nic_exchange_fn fn, void *ctx,
			  uint32_t resp_cap, uint32_t timeout_ms);
void pulse_nic_client_free(struct pulse_nic_client *c);

/* HELLO; checks the version range and stores the answer in c->hello. */
int pulse_nic_hello(struct pulse_nic_client *c);
/* CONFIGURE; updates c->hello with the effective configuration. */
int pulse_nic_configure(struct pulse_nic_client *c, const struct pulse_mb_config *cfg);
/* POLL, then READ_PAGE until the upload is drained, decoding into w (which
 * is reset first). host_ns_now supplies CLOCK_REALTIME (tests may fake it).
 * Pages that cannot be read are recorded in w->pages_missing and the window
 * is marked incomplete; the call still returns PULSE_NIC_OK if the POLL did. */
int pulse_nic_poll(struct pulse_nic_client *c, uint16_t flags, uint64_t (*host_ns_now)(void),
		   struct pulse_window *w);
int pulse_nic_stats(struct pulse_nic_client *c, uint64_t *out, uint32_t max, uint32_t *count);
int pulse_nic_reset(struct pulse_nic_client *c);

void pulse_window_init(struct pulse_window *w);
void pulse_window_free(struct pulse_window *w);
/* Finds a QP's series in a decoded window, or NULL. */
const struct pulse_qp_series *pulse_window_find(const struct pulse_window *w, uint32_t qpn);

#endif
