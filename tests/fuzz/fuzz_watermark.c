/* libFuzzer target: the data-time watermark (analyzer/watermark.c), which
 * holds the agents' lines from the wire until every host has delivered up to
 * their data time. Any bytes must give lines delivered once each, in key
 * order except those counted late, with the clock never going back; never a
 * crash, a leak or a line lost.
 *
 * Input: lines separated by '\n'. The first byte of each line picks one of
 * four hosts and an action (a line, its BYE, a wall-clock jump past the
 * silent bound), the rest is the line, whose own key (pulse_wm_line_key) is
 * parsed from whatever it holds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/watermark.h"

struct chk {
	uint64_t clock, delivered, last_key;
	int bad;
};

static void tick(void *ctx, uint64_t now)
{
	struct chk *c = ctx;
	if (now <= c->clock)
		c->bad = 1; /* the clock went back or stood still on a tick */
	c->clock = now;
}

static void deliver(void *ctx, const char *host, const char *line, size_t len)
{
	struct chk *c = ctx;
	if (!host || !line || line[len] != 0) /* held lines are NUL-terminated copies */
		c->bad = 1;
	c->delivered++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = { "host0", "host1", "host2", "host3" };
	static const struct pulse_wm_ops ops = { .tick = tick, .deliver = deliver };
	struct chk c = { 0 };
	struct pulse_wm *w = pulse_wm_new(&ops, &c, 5000000000ull);
	if (!w)
		return 0;
	uint64_t wall = 1, pushed = 0;
	size_t i = 0;
	while (i < size) {
		size_t j = i;
		while (j < size && data[j] != '\n')
			j++;
		if (j > i) {
			uint8_t sel = data[i];
			const char *h = hosts[sel & 3];
			switch ((sel >> 2) & 3) {
			case 0:
			case 1:
				if (pulse_wm_push(w, h, (const char *)data + i + 1, j - i - 1, wall) == 0)
					pushed++;
				break;
			case 2: pulse_wm_end(w, h); break;
			default: wall += 6000000000ull; break; /* past the silent bound */
			}
			pulse_wm_advance(w, wall);
		}
		i = j + 1;
	}
	pulse_wm_flush(w);
	struct pulse_wm_stats st;
	pulse_wm_stats(w, &st);
	if (c.bad || c.delivered != pushed || st.delivered != pushed || st.held != 0 ||
	    st.mark_ns != c.clock)
		abort();
	pulse_wm_free(w);
	return 0;
}
