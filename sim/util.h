/* Small helpers of the simulators (sim/util.c): command-line values for
 * run_trace and pulse-tracegen, allocation for run_cluster. */
#ifndef PULSE_SIM_UTIL_H
#define PULSE_SIM_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* ---- durations and sizes on the command line ---- */
/* "32us", "1.5ms", "2s", "100ns"; a bare number is in default_unit_ns. */
int sim_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns);
int sim_parse_u64(const char *s, uint64_t *out);

/* ---- allocation that cannot fail: out of memory ends the program ---- */
/* calloc (a zero count or size is taken as 1: never NULL) */
void *xcalloc(size_t n, size_t sz);
/* realloc (a zero size is taken as 1) */
void *xrealloc(void *p, size_t sz);

/* ---- files ---- */
/* The whole of PATH (at most max bytes), NUL-terminated, its length in
 * *len; NULL with "PATH: reason" in err. The caller frees it. */
char *sim_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen);

#endif
