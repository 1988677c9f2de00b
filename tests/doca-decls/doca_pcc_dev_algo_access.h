/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). Prototypes as documented
 * for DOCA 3.0 doca_pcc_dev_algo_access.h; keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_ALGO_ACCESS_H
#define PULSE_DECLS_DOCA_PCC_DEV_ALGO_ACCESS_H

#include "doca_pcc_dev.h"

struct doca_pcc_dev_algo_meta_data {
	uint32_t algo_id;
	uint32_t algo_major_version;
	uint32_t algo_minor_version;
	uint32_t algo_desc_size;
	uint64_t algo_desc_addr;
};

DOCA_STABLE doca_pcc_dev_error_t doca_pcc_dev_algo_init_metadata(uint32_t algo_idx,
								 const struct doca_pcc_dev_algo_meta_data *user_def,
								 uint32_t param_num, uint32_t counter_num);
DOCA_STABLE doca_pcc_dev_error_t doca_pcc_dev_init_algo_slot(uint32_t portid, uint32_t algo_slot,
							     uint32_t algo_idx, uint32_t algo_en);
DOCA_STABLE uint32_t doca_pcc_dev_get_algo_index(uint32_t port_num, uint32_t algo_slot);

#endif
