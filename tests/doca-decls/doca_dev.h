/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). The subset of DOCA 3.0
 * doca_dev.h that Pulse calls, with the documented signatures; keep in sync. */
#ifndef PULSE_DECLS_DOCA_DEV_H
#define PULSE_DECLS_DOCA_DEV_H

#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"

struct doca_devinfo;
struct doca_dev;

#define DOCA_DEVINFO_IBDEV_NAME_SIZE 64

DOCA_STABLE doca_error_t doca_devinfo_create_list(struct doca_devinfo ***dev_list, uint32_t *nb_devs);
DOCA_STABLE doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **dev_list);
DOCA_STABLE doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo *devinfo, char *ibdev_name,
						     uint32_t size);
DOCA_STABLE doca_error_t doca_dev_open(struct doca_devinfo *devinfo, struct doca_dev **dev);
DOCA_STABLE doca_error_t doca_dev_close(struct doca_dev *dev);

#endif
