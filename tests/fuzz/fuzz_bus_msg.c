/* libFuzzer target: the bus record message decoder (wire/bus_msg.c), which
 * an analyzer runs on every message of a job's stream, whoever published
 * it. Any bytes must be refused or decoded within PULSE_BUS_MAX_RAW; what
 * decodes must encode back (stored and compressed) to a message that
 * decodes to the same records (or lines: kind 2). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/bus_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *scratch, *scratch2;
	static size_t cap, cap2;
	char err[256];
	struct pulse_bus_ops m, d;
	if (pulse_bus_ops_decode(data, size, &m, &scratch, &cap, err, sizeof err))
		return 0;
	if (m.len > PULSE_BUS_MAX_RAW)
		abort();
	for (int level = 0; level <= 1; level++) {
		size_t n = 0;
		uint8_t *msg = pulse_bus_ops_encode(&m, level, &n, err, sizeof err);
		if (!msg)
			abort();
		if (pulse_bus_ops_decode(msg, n, &d, &scratch2, &cap2, err, sizeof err) || d.len != m.len || d.kind != m.kind ||
		    d.records != m.records || d.seq != m.seq || memcmp(d.body, m.body, m.len))
			abort();
		free(msg);
	}
	return 0;
}
