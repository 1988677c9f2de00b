/* The DOCA PCC mailbox transport: the host agent's link to the Pulse NIC
 * agent running on a BlueField-3 DPA (--device mlx5_0).
 *
 * pulse_doca_open() finds the IB device, creates a DOCA PCC context with the
 * Pulse DPA application (linked into the host program by dpacc, see
 * firmware/doca.mk), sizes the mailbox and starts the PCC process: that is
 * what loads the NIC agent onto the DPA. pulse_doca_exchange() is a
 * pulse_nic_exchange_fn (pulse/nic_client.h): one request into the DOCA
 * request buffer, one synchronous doca_pcc_mailbox_send(), the response out.
 * pulse_doca_close() stops and destroys the context, which unloads it.
 *
 * Two implementations share this header: mailbox/transport_doca.c when the
 * DOCA SDK is installed, mailbox/transport_doca_none.c otherwise. The latter
 * fails every open with a message saying the program was built without the
 * SDK, so callers need no #ifdef; pulse_doca_available() tells them up front.
 *
 * Threading: one exchange at a time per transport (exchanges serialise on an
 * internal lock). doca_pcc_mailbox_send() has no timeout of its own, so each
 * transport runs the DOCA calls on a private worker thread and the caller
 * waits at most timeout_ms; see transport_doca.c for what a hung DPA does. */
#ifndef PULSE_TRANSPORT_DOCA_H
#define PULSE_TRANSPORT_DOCA_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/nic_client.h"

/* dpacc --app-name of the DPA image; the host declares
 * `extern struct doca_pcc_app *pulse_dpa_app;`. Keep in sync with doca.mk. */
#define PULSE_DOCA_APP_NAME "pulse_dpa_app"

/* Mailbox sizes passed to doca_pcc_set_mailbox(). The largest Pulse request
 * is 32 bytes (CONFIGURE); 256 leaves room for later versions. Responses are
 * pages of an upload: 4096 bytes takes an upload in ~4x fewer exchanges than
 * the 1024-byte default page and is still a single page of host memory. No
 * DOCA document states a maximum; if doca_pcc_set_mailbox rejects it, open
 * says so and a smaller response_cap can be given. */
#define PULSE_DOCA_REQUEST_CAP 256u
#define PULSE_DOCA_RESPONSE_CAP_DEFAULT 4096u
#define PULSE_DOCA_TIMEOUT_MS_DEFAULT 1000u

struct pulse_doca;

struct pulse_doca_options {
	const char *ibdev;          /* IB device name, e.g. "mlx5_0" (required) */
	uint32_t response_cap;      /* mailbox response bytes; 0: default */
	uint32_t num_threads;       /* 0: DOCA's default thread set */
	const uint32_t *thread_affinity; /* num_threads DPA execution-unit ids */
	const char *coredump_file;  /* NULL: /tmp/pulse-dpa-<ibdev>.core; "": none */
	uint32_t start_wait_ms;     /* wait for the process to become ACTIVE (2000) */
	uint32_t restart_interval_ms; /* min gap between automatic restarts after the
				       * NIC deactivated the process; 0: never (5000) */
	uint32_t close_grace_ms;    /* how long close waits for a stuck send (2000) */
	/* One line per call, no newline. NULL: "pulse-doca[<ibdev>]: ..." on
	 * stderr. May be called from the transport's worker thread. */
	void (*log)(void *log_ctx, const char *line);
	void *log_ctx;
};

struct pulse_doca_stats {
	uint64_t exchanges;       /* pulse_doca_exchange calls */
	uint64_t ok;              /* ... that returned a response */
	uint64_t timeouts;        /* the DPA did not answer within timeout_ms */
	uint64_t busy;            /* refused: an earlier send is still blocked */
	uint64_t send_errors;     /* doca_pcc_mailbox_send or buffer calls failed */
	uint64_t device_failures; /* the DPA callback returned failure */
	uint64_t not_active;      /* refused: the PCC process is not ACTIVE */
	uint64_t restarts;        /* the PCC context was rebuilt */
	uint64_t late_responses;  /* a timed-out send finished later (discarded) */
};

/* 1 when built against the DOCA SDK, 0 otherwise. */
int pulse_doca_available(void);

/* Defaults for everything but the device name. */
void pulse_doca_options_init(struct pulse_doca_options *o, const char *ibdev);

/* Lists the IB names of DOCA devices that support PCC reaction point, one
 * per row of names (each DOCA_DEVINFO_IBDEV_NAME_SIZE = 64 bytes). Returns
 * how many exist (may exceed max; only max are written), or -1 with a
 * one-line reason in err. */
int pulse_doca_list_devices(char (*names)[64], int max, char *err, size_t err_len);

/* Opens the device and starts the Pulse DPA application on it. Returns NULL
 * with a one-line reason in err (naming the failing DOCA call and
 * doca_error_get_descr) on failure. */
struct pulse_doca *pulse_doca_open(const struct pulse_doca_options *o, char *err, size_t err_len);

/* pulse_nic_exchange_fn; ctx is the struct pulse_doca. timeout_ms 0 means
 * PULSE_DOCA_TIMEOUT_MS_DEFAULT. Returns 0 and the response, or -1 after
 * logging why. */
int pulse_doca_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms);

/* The mailbox response capacity: give it to pulse_nic_client_init. */
uint32_t pulse_doca_response_cap(const struct pulse_doca *t);
const char *pulse_doca_ibdev(const struct pulse_doca *t);
void pulse_doca_get_stats(struct pulse_doca *t, struct pulse_doca_stats *out);
/* The last error line (empty if none). Copied into buf. */
void pulse_doca_last_error(struct pulse_doca *t, char *buf, size_t len);

/* Stops and destroys the PCC context (the DPA application unloads) and
 * closes the device. NULL is ignored. */
void pulse_doca_close(struct pulse_doca *t);

#endif
