/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). Types, constants and
 * prototypes as documented for DOCA 3.0 doca_pcc_dev.h; keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_H
#define PULSE_DECLS_DOCA_PCC_DEV_H

#define DOCA_DPA_DEVICE

#include "doca_pcc_dev_common.h"
#include "doca_pcc_dev_data_structures.h"
#include "doca_pcc_dev_services.h"
#include "doca_pcc_dev_utils.h"

typedef enum {
	DOCA_PCC_DEV_EVNT_NULL = 0,
	DOCA_PCC_DEV_EVNT_FW = 1,
	DOCA_PCC_DEV_EVNT_ROCE_CNP = 2,
	DOCA_PCC_DEV_EVNT_ROCE_TX = 3,
	DOCA_PCC_DEV_EVNT_ROCE_ACK = 4,
	DOCA_PCC_DEV_EVNT_ROCE_NACK = 5,
	DOCA_PCC_DEV_EVNT_RTT = 6,
	DOCA_PCC_DEV_EVNT_ROCE_TX_FOR_ACK_NACK = 31,
} doca_pcc_dev_event_type_enum;

typedef struct doca_pcc_dev_results {
	uint32_t rate; /* 20-bit fixed point in (0, 1] of line rate */
	union {
		uint32_t rtt_req;
		uint32_t probe_req;
	};
	uint32_t probe_type_slot;
	uint32_t credits;
	uint32_t reload_credits;
} doca_pcc_dev_results_t;

/* Real header: 1 when __NV_DPA >= __NV_DPA_CX8. BlueField-3 value. */
#define DOCA_PCC_DEV_ACK_NACK_TX_EVENT_DISABLED_SUPPORTED (0)

#define DOCA_PCC_DEV_LOG_MAX_RATE (20)
#define DOCA_PCC_DEV_MAX_RATE (1U << DOCA_PCC_DEV_LOG_MAX_RATE)
#define DOCA_PCC_DEV_MAX_NUM_USER_SLOTS (8)
#define DOCA_PCC_DEV_MAX_NUM_ALGOS (8)
#define DOCA_PCC_DEV_ALGO_SLOT_INTERNAL (0xF)

DOCA_STABLE void doca_pcc_dev_default_internal_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt,
						    doca_pcc_dev_event_t *event,
						    const doca_pcc_dev_attr_t *attr,
						    doca_pcc_dev_results_t *results);
/* Implemented by the user (Pulse): */
DOCA_STABLE void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
					const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results);
DOCA_STABLE void doca_pcc_dev_user_init(uint32_t *disable_event_bitmask);
DOCA_STABLE doca_pcc_dev_error_t doca_pcc_dev_user_set_algo_params(uint32_t port_num, uint32_t algo_slot,
								   uint32_t param_id_base, uint32_t param_num,
								   const uint32_t *new_param_values,
								   uint32_t *params);

#endif
