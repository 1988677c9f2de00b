/* TEST DOUBLE of the analyzer state: see fake_state.c. */
#ifndef PULSE_TEST_FAKE_STATE_H
#define PULSE_TEST_FAKE_STATE_H

#include <stdint.h>
#include <stdio.h>

#define FAKE_MAX_LINES 200000

struct an_state {
	char **lines;
	char hosts[FAKE_MAX_LINES][16];
	uint32_t n, cap;
	uint64_t calls, ticks, last_tick;
	uint64_t joins_sent; /* an_host_join_sent */
};
extern struct an_state fake_state;
void fake_reset(void);
/* lines from host (NULL: any) containing needle (NULL: any) */
uint32_t fake_count(const char *host, const char *needle);

#endif
