/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md).
 *
 * In the SDK the fences are macros over DPA intrinsics (dpaintrin.h) and the
 * timers are FORCE_INLINE functions over __dpa_thread_time(). Here they are
 * prototypes with the same call shape and types. Documented semantics
 * (DOCA 3.0): doca_pcc_dev_get_timer()/_lo() return elapsed time in
 * MICROseconds (64/32 bits); doca_pcc_dev_fence_memory() fences memory
 * reads and writes (__DPA_MEMORY, RW, RW). Keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_UTILS_H
#define PULSE_DECLS_DOCA_PCC_DEV_UTILS_H

#include <stdint.h>

#include "doca_pcc_dev_common.h"

/* In the SDK these are macros whose expansion (via dpaintrin.h's
 * __dpa_thread_fence) already ends in a semicolon, so
 * `if (c) doca_pcc_dev_fence_memory(); else ...` does not compile there.
 * Mirrored: the stand-in macros end in a semicolon too. */
void pulse_decls_dpa_thread_fence(int memory_space, int pred_op, int succ_op);
#define doca_pcc_dev_fence_all() pulse_decls_dpa_thread_fence(3, 3, 3);
#define doca_pcc_dev_fence_memory() pulse_decls_dpa_thread_fence(1, 3, 3);
DOCA_STABLE uint32_t doca_pcc_dev_get_timer_lo(void);
DOCA_STABLE uint64_t doca_pcc_dev_get_timer(void);

#endif
