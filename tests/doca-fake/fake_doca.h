/* A fake of the DOCA functions Pulse's DOCA glue calls, for x86 tests only.
 *
 * NOT the DOCA SDK and not a model of the NIC: it implements the
 * declarations in tests/doca-decls/ just well enough to drive
 * firmware/platform/doca_dpa/pulse_dpa.c and mailbox/transport_doca.c on a
 * host: a device list, a PCC context whose "mailbox send" calls the glue's
 * doca_pcc_dev_user_mailbox_handle() in-process (the real library crosses to
 * the DPA), settable timer and thread rank, and fault injection. What it
 * cannot show: that the real SDK behaves like this. */
#ifndef PULSE_FAKE_DOCA_H
#define PULSE_FAKE_DOCA_H

#include <stdint.h>

#include <doca_error.h>
#include <doca_pcc.h>

/* The event the fake getters read (the real layout is the NIC's). */
struct mlnx_cc_event_t {
	uint32_t ev_type;
	uint32_t port;
	uint32_t qpn;
	uint32_t sent_32b;
	uint32_t sent_pkts;
	uint32_t ts_ns;
};

struct fake_doca_dev {
	const char *name;
	int pcc_supported;
};

struct fake_doca {
	/* devices doca_devinfo_create_list returns */
	struct fake_doca_dev devs[4];
	int ndevs;
	/* injected failures */
	doca_error_t fail_set_mailbox;
	doca_error_t fail_start;
	doca_pcc_process_state_t state_after_start;
	/* observed */
	int user_init_calls;
	uint32_t disable_mask;      /* what doca_pcc_dev_user_init wrote */
	int metadata_calls;
	int slot_inits;
	int creates, starts, stops, destroys, dev_opens, dev_closes;
	uint32_t mailbox_req_cap, mailbox_resp_cap;
	int printf_calls;
	int internal_algo_calls;
};

extern struct fake_doca fake;

/* Resets the knobs and counters (not the glue's one-time DPA state). */
void fake_doca_reset(void);
/* The DPA timer in microseconds (doca_pcc_dev_get_timer). */
void fake_doca_set_timer_us(uint64_t us);
/* The rank doca_pcc_dev_thread_rank returns on the calling thread. */
void fake_doca_set_rank(unsigned int rank);
/* >0: mailbox sends sleep this long, then fail without calling the DPA
 * (a hung DPA handler). Atomic: the transport's worker reads it. */
void fake_doca_set_hang_ms(uint32_t ms);
/* >0: mailbox sends sleep this long, then answer normally (a slow DPA). */
void fake_doca_set_delay_ms(uint32_t ms);
/* Lets the test flip the process state of every live context. */
void fake_doca_set_state(doca_pcc_process_state_t s);

#endif
