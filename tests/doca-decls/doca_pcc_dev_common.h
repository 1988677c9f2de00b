/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). Mirrors the parts of the
 * documented DOCA 3.0 doca_pcc_dev_common.h that Pulse uses; keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_COMMON_H
#define PULSE_DECLS_DOCA_PCC_DEV_COMMON_H

#define DOCA_DPA_DEVICE

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"

#define ALWAYS_INLINE __attribute__((always_inline))
#define FORCE_INLINE static inline ALWAYS_INLINE

typedef enum {
	DOCA_PCC_DEV_STATUS_OK = 0,
	DOCA_PCC_DEV_STATUS_FAIL = 1,
} doca_pcc_dev_error_t;

/* Real header: (__NV_DPA >= __NV_DPA_CX8 ? 8 : 4). BlueField-3 value. */
#define DOCA_PCC_DEV_MAX_NUM_PORTS 4

#endif
