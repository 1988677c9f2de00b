/* pulse-host-agent: NIC clock -> host CLOCK_REALTIME.
 *
 * Every POLL carries the host's CLOCK_REALTIME at sending (the firmware echoes
 * it) and its response carries the NIC time at which the firmware closed the
 * window. The host cannot know where in the round trip the NIC read its
 * clock, so it takes the midpoint of send and receive; the true instant lies
 * in [send, recv], so the error of the mapping is at most half the round trip
 * (plus the host clock's own error against NTP, which the host reports
 * elsewhere). A poll whose round trip was long (the host or the NIC busy)
 * has a wide bound; the offset kept is the best of the last few samples,
 * each charged for its age at DRIFT_PPM (NIC and host clocks drift apart by
 * a few ppm), so the mapping follows the fastest recent exchange and drift
 * never accumulates past a few poll periods. A sample that disagrees with
 * the kept offset by more than both bounds means the NIC clock itself jumped
 * (a restarted NIC): the history restarts from it. */
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
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < cs->nhist; i++) {
		uint64_t age = mid > cs->hist[i].mid_ns ? mid - cs->hist[i].mid_ns : 0;
		uint64_t e = cs->hist[i].err_ns + age / 1000000u * DRIFT_PPM;
		if (e < best) {
			best = e;
			cs->offset_ns = cs->hist[i].offset_ns;
		}
	}
	cs->err_ns = best;
	if (cs->err_ns > cs->max_err_ns)
		cs->max_err_ns = cs->err_ns;
	cs->valid = 1;
	cs->samples++;
}

uint64_t clock_sync_to_host(const struct clock_sync *cs, uint64_t nic_ns)
{
	return (uint64_t)((int64_t)nic_ns + cs->offset_ns);
}
