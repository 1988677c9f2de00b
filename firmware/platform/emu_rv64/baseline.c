/* Baseline flow table for the instruction-count benchmark (see baseline.h). */
#include "baseline.h"

#include <string.h>

static uint32_t slots_for(uint32_t max_flows)
{
	uint32_t n = 1;
	while (n < 2u * max_flows) /* load factor <= 0.5 */
		n <<= 1;
	return n;
}

size_t bl_memory_size(uint32_t max_flows, uint32_t window_ns, uint32_t epoch_ns)
{
	uint32_t epochs = window_ns / epoch_ns;
	return (size_t)slots_for(max_flows) * sizeof(struct bl_slot) +
	       (size_t)max_flows * epochs * sizeof(uint32_t);
}

void bl_init(struct bl_table *t, void *mem, uint32_t max_flows, uint32_t window_ns,
	     uint32_t epoch_ns, uint32_t now_ns)
{
	uint32_t n = slots_for(max_flows);
	memset(t, 0, sizeof *t);
	t->slots = mem;
	t->mask = n - 1u;
	t->epochs = window_ns / epoch_ns;
	t->counters = (uint32_t *)(void *)(t->slots + n);
	t->max_flows = max_flows;
	t->epoch_ns = epoch_ns;
	t->window_ns = window_ns;
	t->win_start = now_ns;
	memset(mem, 0, bl_memory_size(max_flows, window_ns, epoch_ns));
}

void bl_on_tx(struct bl_table *t, const struct pulse_tx_event *ev)
{
	uint32_t qpn = ev->qpn;
	if (qpn == PULSE_QPN_RESERVED_LOW || qpn >= PULSE_QPN_RESERVED_HIGH || ev->sent_32b == 0) {
		t->drops++;
		return;
	}
	uint32_t delta = ev->ts_ns - t->win_start;
	if (delta >= t->window_ns) {
		t->drops++;
		return;
	}
	uint32_t epoch = delta / t->epoch_ns;

	uint32_t h = (qpn * 0x9E3779B1u) >> 8 & t->mask;
	uint32_t flow;
	for (;;) {
		struct bl_slot *s = &t->slots[h];
		if (s->qpn == qpn) {
			flow = s->flow;
			break;
		}
		if (s->qpn == 0) {
			if (t->flows == t->max_flows) {
				t->drops++;
				return;
			}
			s->qpn = qpn;
			s->flow = flow = t->flows++;
			break;
		}
		h = (h + 1u) & t->mask;
	}
	t->counters[(size_t)flow * t->epochs + epoch] += ev->sent_32b;
	t->events++;
	t->units += ev->sent_32b;
}
