/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md).
 *
 * The SDK defines these getters as FORCE_INLINE functions that byte-swap the
 * big-endian event fields. Documented semantics (DOCA 3.0):
 *   doca_pcc_dev_get_timestamp: event timestamp, 32 bits, 1 ns granularity;
 *   doca_pcc_dev_get_flow_qpn:  flow QPN (CX8+: all events; BF3: TX events
 *                               only); not marked DOCA_STABLE;
 *   doca_pcc_dev_get_roce_tx_cntrs: TX events only, bytes in 32-byte units
 *                               and packets since the flow's previous event.
 * Keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_EVENT_H
#define PULSE_DECLS_DOCA_PCC_DEV_EVENT_H

#include "doca_pcc_dev.h"

DOCA_STABLE doca_pcc_dev_event_general_attr_t doca_pcc_dev_get_ev_attr(doca_pcc_dev_event_t *event);
DOCA_STABLE uint32_t doca_pcc_dev_get_flowtag(doca_pcc_dev_event_t *event);
DOCA_STABLE uint32_t doca_pcc_dev_get_sn(doca_pcc_dev_event_t *event);
DOCA_STABLE uint32_t doca_pcc_dev_get_timestamp(doca_pcc_dev_event_t *event);
uint32_t doca_pcc_dev_get_flow_qpn(doca_pcc_dev_event_t *event);
DOCA_STABLE uint32_t doca_pcc_dev_get_roce_first_timestamp(doca_pcc_dev_event_t *event);
DOCA_STABLE doca_pcc_dev_roce_tx_cntrs_t doca_pcc_dev_get_roce_tx_cntrs(doca_pcc_dev_event_t *event);

#endif
