/* TEST AID, NOT THE DOCA SDK: declaration-only stand-in written for Pulse's
 * syntax check (see tests/doca-decls/README.md). Mirrors the documented
 * DOCA 3.0 doca_compat.h visibility/stability markers; keep in sync. */
#ifndef PULSE_DECLS_DOCA_COMPAT_H
#define PULSE_DECLS_DOCA_COMPAT_H

#define DOCA_USED __attribute__((used))
#define DOCA_STABLE __attribute__((visibility("default"))) DOCA_USED

/* Documented behaviour: without DOCA_ALLOW_EXPERIMENTAL_API every
 * experimental symbol carries a deprecation attribute, so -Werror builds fail
 * unless the user opts in. Mirrored here so the check catches a missing
 * opt-in. */
#ifndef DOCA_ALLOW_EXPERIMENTAL_API
#define DOCA_EXPERIMENTAL \
	__attribute__((deprecated("Symbol is defined as experimental"))) DOCA_STABLE
#else
#define DOCA_EXPERIMENTAL DOCA_STABLE
#endif

#endif
