/* The benchmark's baseline: the straightforward way to count per-QP bytes per
 * epoch. An open-addressing hash table (linear probing) keyed by QPN, and per
 * flow a fixed array with one u32 counter for every epoch of the window.
 * Single-threaded, no atomics, no aging, no upload: only what an event costs.
 * It exists so the instruction counts of the core have something to stand
 * beside; nothing else uses it. */
#ifndef PULSE_EMU_RV64_BASELINE_H
#define PULSE_EMU_RV64_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/tx_event.h"

struct bl_slot {
	uint32_t qpn; /* 0: empty */
	uint32_t flow;
};

struct bl_table {
	struct bl_slot *slots;
	uint32_t mask;      /* slots - 1, a power of two minus one */
	uint32_t *counters; /* max_flows x epochs */
	uint32_t epochs;
	uint32_t max_flows, flows;
	uint32_t epoch_ns, window_ns;
	uint32_t win_start;
	uint64_t events, units, drops;
};

/* Bytes of memory for these sizes. */
size_t bl_memory_size(uint32_t max_flows, uint32_t window_ns, uint32_t epoch_ns);
/* Lays the table out in mem (zeroed here). */
void bl_init(struct bl_table *t, void *mem, uint32_t max_flows, uint32_t window_ns,
	     uint32_t epoch_ns, uint32_t now_ns);
void bl_on_tx(struct bl_table *t, const struct pulse_tx_event *ev);

#endif
