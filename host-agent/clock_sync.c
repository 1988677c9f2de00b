/* pulse-host-agent: NIC clock -> host CLOCK_REALTIME.
 *
 * Every POLL carries the host's CLOCK_REALTIME at sending (the firmware echoes
 * it) and its response carries the NIC time at which the firmware closed the
 * window. The host cannot know where in the round trip the NIC read its
 * clock, so it takes the midpoint of send and receive; the true instant lies
 * in [send, recv], so the error of the mapping is at most half the round trip
 * (plus the host clock's own error against NTP, which the host reports
 * elsewhere). Each poll refreshes the offset, so NIC clock drift (ppm) never
 * accumulates past one poll period. */
#include "agent.h"

void clock_sync_update(struct clock_sync *cs, uint64_t host_send_ns, uint64_t host_recv_ns,
		       uint64_t nic_ns)
{
	if (host_recv_ns < host_send_ns) /* the realtime clock stepped back mid-poll */
		host_recv_ns = host_send_ns;
	uint64_t half = (host_recv_ns - host_send_ns) / 2;
	uint64_t mid = host_send_ns + half;
	cs->offset_ns = (int64_t)(mid - nic_ns);
	cs->err_ns = half + ((host_recv_ns - host_send_ns) & 1);
	if (cs->err_ns > cs->max_err_ns)
		cs->max_err_ns = cs->err_ns;
	cs->valid = 1;
	cs->samples++;
}

uint64_t clock_sync_to_host(const struct clock_sync *cs, uint64_t nic_ns)
{
	return (uint64_t)((int64_t)nic_ns + cs->offset_ns);
}
