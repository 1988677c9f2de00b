/* rtnetlink link events for the NICs' netdevs (link_watch.c). */
#ifndef PULSE_HOST_AGENT_LINK_WATCH_H
#define PULSE_HOST_AGENT_LINK_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#define LINK_WATCH_MAX 64

/* One RTM_NEWLINK/RTM_DELLINK message. */
struct link_ev {
	int ifindex;
	char ifname[16];  /* "" when the message has no IFLA_IFNAME */
	unsigned flags;   /* ifi_flags: IFF_UP, IFF_RUNNING, ... */
	int operstate;    /* IFLA_OPERSTATE (RFC 2863: 6 up, 2 down), -1 absent */
	int carrier;      /* IFLA_CARRIER, -1 absent */
	int deleted;      /* RTM_DELLINK: the netdev is gone */
	int up;           /* IFF_UP and IFF_RUNNING, not deleted */
};

/* Parses one message of at most avail bytes through libnl: 0 a link
 * message (*ev filled), 1 another message type, -1 malformed. */
int link_parse_msg(const struct nlmsghdr *nlh, size_t avail, struct link_ev *ev);
/* Every message of a datagram: cb for each link message; malformed ones
 * counted in *bad. Returns the number of link messages, -1 when the
 * framing broke (the rest is dropped). */
int link_parse_buf(const void *buf, size_t len, void (*cb)(void *ctx, const struct link_ev *ev),
		   void *ctx, uint64_t *bad);

struct link_watch_stats {
	uint64_t messages;    /* link messages received */
	uint64_t events;      /* state changes of watched netdevs reported */
	uint64_t malformed;   /* messages that failed to parse */
	uint64_t recv_errors; /* receive errors (ENOBUFS: the kernel dropped some) */
};

struct link_watch_cfg {
	const char *const *names; /* netdevs to watch */
	const char *const *devs;  /* their RDMA device ("" none), same order */
	int n;
	/* a watched netdev changed state (called on the watcher's thread) */
	void (*on_event)(void *ctx, const char *ifname, const char *dev, const struct link_ev *ev,
			 uint64_t t_ns);
	/* its state at start (ev NULL: no such netdev now), on the caller's thread */
	void (*on_initial)(void *ctx, const char *ifname, const char *dev, const struct link_ev *ev);
	void *ctx;
	uint64_t (*now)(void);    /* host time of an event (CLOCK_REALTIME ns) */
};

struct link_watch;
/* Subscribes to RTNLGRP_LINK, reports the initial states, starts the
 * thread. NULL with err (e.g. no permission, no rtnetlink) on failure. */
struct link_watch *link_watch_start(const struct link_watch_cfg *cfg, char *err, size_t errlen);
void link_watch_get_stats(struct link_watch *lw, struct link_watch_stats *st);
/* Stops the thread and frees everything. NULL is fine. */
void link_watch_stop(struct link_watch *lw);

#endif
