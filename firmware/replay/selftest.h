/* Built-in self-test of the NIC agent core, through the mailbox only.
 *
 * It drives a fixed event sequence (wrapping 32-bit clock, several flows and
 * epochs, bad QPNs, zero-byte, clipped, late, reordered and out-of-range
 * events, slot and pool exhaustion, bad requests), reads the uploads page by
 * page, decodes them with the host-side codec and compares per-flow,
 * per-epoch bytes and the counters with totals the test computes on its own
 * from the same sequence. Prints one "PASS name" or "FAIL name: ..." line per
 * check and a summary line. Portable (stdio only): the rv64 image runs it on
 * qemu (make flash-firmware without a NIC), the x86 build in make test. */
#ifndef PULSE_FW_SELFTEST_H
#define PULSE_FW_SELFTEST_H

#include <stddef.h>
#include <stdint.h>

/* mem: 64-byte aligned region for the core. Returns the number of failed
 * checks; 0 means every check passed. */
int pulse_selftest_run(void *mem, size_t size, uint32_t platform);

#endif
