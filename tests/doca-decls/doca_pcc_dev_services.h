/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). Prototypes as documented
 * for DOCA 3.0 doca_pcc_dev_services.h; keep in sync. */
#ifndef PULSE_DECLS_DOCA_PCC_DEV_SERVICES_H
#define PULSE_DECLS_DOCA_PCC_DEV_SERVICES_H

#include <stdint.h>

#include "doca_pcc_dev_common.h"

/* Optional user callback (weak in the SDK), run when the host calls
 * doca_pcc_mailbox_send(). */
DOCA_EXPERIMENTAL doca_pcc_dev_error_t doca_pcc_dev_user_mailbox_handle(void *request, uint32_t request_size,
									 uint32_t max_response_size,
									 void *response,
									 uint32_t *response_size)
	__attribute__((weak));
DOCA_STABLE void doca_pcc_dev_printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
DOCA_STABLE void doca_pcc_dev_trace_flush(void);
/* 0..N-1 where N is the number of threads the host requested for PCC. */
DOCA_EXPERIMENTAL unsigned int doca_pcc_dev_thread_rank(void);

#endif
