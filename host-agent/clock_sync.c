/* pulse-host-agent: NIC clock -> host CLOCK_REALTIME.
 *
 * Every POLL carries the host's CLOCK_REALTIME at sending (the firmware echoes
 * it) and its response carries the NIC time at which the firmware closed the
 * window. The host cannot know where in the round trip the NIC read its
 * clock, so it takes the midpoint of send and receive; the true instant lies
 * in [send, recv], so the error of the mapping is at most half the round trip
 * (plus the host clock's own error against NTP, which the host reports
 * elsewhere). A poll whose round trip was long (the host or the NIC busy)
 * has a wide bound. Each of the last few samples allows an interval of
 * offsets (its own, +- its bound widened by its age at DRIFT_PPM: NIC and
 * host clocks drift apart by a few ppm); the true offset lies in all of
 * them. The offset kept moves only when that intersection excludes it, and
 * then only to the intersection's nearer edge: a busy host's polls, each
 * a few ms off in its own direction, would otherwise move the mapping back
 * and forth by ms from one window to the next, and the traffic at a
 * window's start would land before the previous window's end (operators
 * segmented on host time take a neighbour's bytes; seen live at 4x on a
 * busy 2-core machine). A sample that disagrees with the kept offset by
 * more than both bounds means the NIC clock itself jumped (a restarted
 * NIC): the history restarts from it. Samples that admit no common offset
 * (drift faster than DRIFT_PPM) fall back to the one with the least
 * charged error. */
#include <string.h>

#include "agent.h"

#define DRIFT_PPM 50u /* ns of drift charged per ms of a sample's age */

void clock_sync_update(struct clock_sync *cs, uint64_t host_send_ns, uint64_t host_recv_ns,
		       uint64_t nic_ns)
{
	if (host_recv_ns < host_send_ns) /* the realtime clock stepped back mid-poll */
		host_recv_ns = host_send_ns;
	uint64_t half = (host_recv_ns - host_send_ns) / 2;
	uint64_t mid = host_send_ns + half;
	int64_t off = (int64_t)(mid - nic_ns);
	uint64_t err = half + ((host_recv_ns - host_send_ns) & 1);
	if (cs->valid) {
		uint64_t d = off > cs->offset_ns ? (uint64_t)(off - cs->offset_ns)
						 : (uint64_t)(cs->offset_ns - off);
		if (d > err + cs->err_ns + 1000000u)
			cs->nhist = 0; /* the NIC clock jumped */
	}
	if (cs->nhist == CLOCK_SYNC_HIST) {
		memmove(cs->hist, cs->hist + 1, sizeof cs->hist[0] * (CLOCK_SYNC_HIST - 1));
		cs->nhist--;
	}
	cs->hist[cs->nhist].offset_ns = off;
	cs->hist[cs->nhist].err_ns = err;
	cs->hist[cs->nhist].mid_ns = mid;
	cs->nhist++;
	int keep = cs->valid && cs->nhist > 1;
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	uint64_t best = UINT64_MAX;
	int64_t best_off = off;
	for (uint32_t i = 0; i < cs->nhist; i++) {
		uint64_t age = mid > cs->hist[i].mid_ns ? mid - cs->hist[i].mid_ns : 0;
		uint64_t e = cs->hist[i].err_ns + age / 1000000u * DRIFT_PPM;
		if (e > (uint64_t)INT64_MAX / 4)
			e = (uint64_t)INT64_MAX / 4;
		if (e < best) {
			best = e;
			best_off = cs->hist[i].offset_ns;
		}
		int64_t l = cs->hist[i].offset_ns - (int64_t)e, h = cs->hist[i].offset_ns + (int64_t)e;
		lo = l > lo ? l : lo;
		hi = h < hi ? h : hi;
	}
	if (lo > hi) {
		cs->offset_ns = best_off;
		cs->err_ns = best;
	} else {
		if (!keep)
			cs->offset_ns = best_off;
		if (cs->offset_ns < lo)
			cs->offset_ns = lo;
		else if (cs->offset_ns > hi)
			cs->offset_ns = hi;
		uint64_t below = (uint64_t)(cs->offset_ns - lo), above = (uint64_t)(hi - cs->offset_ns);
		cs->err_ns = below > above ? below : above;
	}
	if (cs->err_ns > cs->max_err_ns)
		cs->max_err_ns = cs->err_ns;
	cs->valid = 1;
	cs->samples++;
}

uint64_t clock_sync_to_host(const struct clock_sync *cs, uint64_t nic_ns)
{
	return (uint64_t)((int64_t)nic_ns + cs->offset_ns);
}
