/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). The subset of DOCA 3.0
 * doca_log.h that Pulse calls, with the documented signatures; keep in sync. */
#ifndef PULSE_DECLS_DOCA_LOG_H
#define PULSE_DECLS_DOCA_LOG_H

#include <stdint.h>
#include <stdio.h>

#include "doca_compat.h"
#include "doca_error.h"

enum doca_log_level {
	DOCA_LOG_LEVEL_DISABLE = 10,
	DOCA_LOG_LEVEL_CRIT = 20,
	DOCA_LOG_LEVEL_ERROR = 30,
	DOCA_LOG_LEVEL_WARNING = 40,
	DOCA_LOG_LEVEL_INFO = 50,
	DOCA_LOG_LEVEL_DEBUG = 60,
	DOCA_LOG_LEVEL_TRACE = 70,
};

struct doca_log_backend;

DOCA_STABLE doca_error_t doca_log_backend_create_with_file_sdk(FILE *fptr, struct doca_log_backend **backend);
DOCA_STABLE doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend *backend, uint32_t level);

#endif
