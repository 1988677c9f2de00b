/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md).
 *
 * The real header selects a per-chip little-endian layout with -mcpu
 * (doca_pcc_dev_data_structure_le_bf3.h on BlueField-3). Only the types and
 * fields Pulse names are declared here, with the documented BF3 bit widths.
 * The event itself stays an incomplete type on purpose: the DOCA docs say to
 * read events only through the getters in doca_pcc_dev_event.h, and an
 * incomplete type makes any direct field access a compile error. Keep in
 * sync with the SDK's typedef names. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_DATA_STRUCTURES_H
#define PULSE_DECLS_DOCA_PCC_DEV_DATA_STRUCTURES_H

#include <stdint.h>

struct mlnx_cc_event_general_attr_t {
	uint32_t ev_type : 8;
	uint32_t ev_subtype : 8;
	uint32_t port_num : 8;
	uint32_t flags : 8;
};

struct mlnx_cc_roce_tx_cntrs_t {
	uint32_t sent_32bytes : 16;
	uint32_t sent_pkts : 16;
};

struct mlnx_cc_algo_ctxt_t {
	uint32_t data[12];
};

struct mlnx_cc_attr_t {
	uint32_t algo_slot : 4;
	uint32_t overload : 1;
	uint32_t reserved_at_0 : 27;
};

struct mlnx_cc_event_t; /* opaque: use the getters */

typedef struct mlnx_cc_algo_ctxt_t doca_pcc_dev_algo_ctxt_t;
typedef struct mlnx_cc_attr_t doca_pcc_dev_attr_t;
typedef struct mlnx_cc_event_t doca_pcc_dev_event_t;
typedef struct mlnx_cc_event_general_attr_t doca_pcc_dev_event_general_attr_t;
typedef struct mlnx_cc_roce_tx_cntrs_t doca_pcc_dev_roce_tx_cntrs_t;

#endif
