/* The two host clocks Pulse's hosted programs read, in nanoseconds:
 * CLOCK_MONOTONIC for timeouts and rates, CLOCK_REALTIME for timestamps
 * that cross machines (records, clock sync). Hosted code only. */
#ifndef PULSE_CLOCK_NS_H
#define PULSE_CLOCK_NS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pulse_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t pulse_mono_ns(void)
{
	return pulse_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t pulse_real_ns(void)
{
	return pulse_clock_ns(CLOCK_REALTIME);
}

#endif
