/* Link state of the NICs' netdevs through rtnetlink (libnl-3, libnl-route-3):
 * a thread subscribed to RTNLGRP_LINK receives every RTM_NEWLINK/DELLINK,
 * parses it with libnl (nlmsg_parse with a policy: lengths and string
 * termination are checked before anything is read), and reports each change
 * of a watched netdev between up (IFF_UP and IFF_RUNNING: administratively
 * up with carrier) and down, with the host time it arrived: direct evidence
 * for "NIC down". The initial states come from the kernel's link cache. */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#include "link_watch.h"

static struct nla_policy link_policy[IFLA_MAX + 1] = {
	[IFLA_IFNAME] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
	[IFLA_OPERSTATE] = { .type = NLA_U8 },
	[IFLA_CARRIER] = { .type = NLA_U8 },
	[IFLA_MTU] = { .type = NLA_U32 },
};

int link_parse_msg(const struct nlmsghdr *nlh, size_t avail, struct link_ev *ev)
{
	memset(ev, 0, sizeof *ev);
	if (avail < sizeof *nlh || nlh->nlmsg_len < sizeof *nlh || nlh->nlmsg_len > avail)
		return -1;
	if (nlh->nlmsg_type != RTM_NEWLINK && nlh->nlmsg_type != RTM_DELLINK)
		return 1;
	struct nlattr *tb[IFLA_MAX + 1];
	/* libnl's parser takes a non-const header; it only reads it */
	struct nlmsghdr *h = (struct nlmsghdr *)nlh;
	if (!nlmsg_valid_hdr(h, sizeof(struct ifinfomsg)))
		return -1;
	if (nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, link_policy) < 0)
		return -1;
	const struct ifinfomsg *ifi = nlmsg_data(h);
	if (ifi->ifi_index <= 0)
		return -1;
	ev->ifindex = ifi->ifi_index;
	ev->flags = ifi->ifi_flags;
	ev->deleted = nlh->nlmsg_type == RTM_DELLINK;
	ev->operstate = -1;
	ev->carrier = -1;
	if (tb[IFLA_IFNAME]) {
		const char *n = nla_get_string(tb[IFLA_IFNAME]);
		size_t l = strnlen(n, (size_t)nla_len(tb[IFLA_IFNAME]));
		if (l == 0 || l >= sizeof ev->ifname || l == (size_t)nla_len(tb[IFLA_IFNAME]))
			return -1; /* empty, too long, or not terminated */
		memcpy(ev->ifname, n, l);
		ev->ifname[l] = '\0';
	}
	if (tb[IFLA_OPERSTATE])
		ev->operstate = nla_get_u8(tb[IFLA_OPERSTATE]);
	if (tb[IFLA_CARRIER])
		ev->carrier = nla_get_u8(tb[IFLA_CARRIER]);
	ev->up = !ev->deleted && (ev->flags & IFF_UP) && (ev->flags & IFF_RUNNING);
	return 0;
}

int link_parse_buf(const void *buf, size_t len, void (*cb)(void *ctx, const struct link_ev *ev),
		   void *ctx, uint64_t *bad)
{
	int n = 0;
	const uint8_t *p = buf;
	size_t left = len;
	while (left >= sizeof(struct nlmsghdr)) {
		const struct nlmsghdr *h = (const void *)p;
		if (h->nlmsg_len < sizeof *h || h->nlmsg_len > left) {
			if (bad)
				(*bad)++;
			return -1; /* the rest cannot be framed */
		}
		struct link_ev ev;
		int rc = link_parse_msg(h, left, &ev);
		if (rc == 0) {
			n++;
			if (cb)
				cb(ctx, &ev);
		} else if (rc < 0 && bad) {
			(*bad)++;
		}
		size_t step = NLMSG_ALIGN(h->nlmsg_len);
		if (step >= left)
			break;
		p += step;
		left -= step;
	}
	return n;
}

struct watched {
	char name[IFNAMSIZ];
	char dev[64];
	int ifindex; /* 0: not present */
	int known;   /* state known */
	int up;
};

struct link_watch {
	struct nl_sock *sk;
	int stop_pipe[2];
	pthread_t th;
	int started;
	struct watched w[LINK_WATCH_MAX];
	int nw;
	struct link_watch_cfg cfg;
	struct link_watch_stats st;
	pthread_mutex_t mu;
};

static struct watched *match(struct link_watch *lw, const struct link_ev *ev)
{
	for (int i = 0; i < lw->nw; i++)
		if ((ev->ifname[0] && !strcmp(lw->w[i].name, ev->ifname)) ||
		    (lw->w[i].ifindex && lw->w[i].ifindex == ev->ifindex))
			return &lw->w[i];
	return NULL;
}

static void on_msg(void *ctx, const struct link_ev *ev)
{
	struct link_watch *lw = ctx;
	uint64_t t = lw->cfg.now();
	pthread_mutex_lock(&lw->mu);
	lw->st.messages++;
	struct watched *w = match(lw, ev);
	if (!w) {
		pthread_mutex_unlock(&lw->mu);
		return;
	}
	int up = ev->up;
	int changed = !w->known || w->up != up || ev->deleted;
	w->known = 1;
	w->up = up;
	w->ifindex = ev->deleted ? 0 : ev->ifindex;
	if (changed)
		lw->st.events++;
	pthread_mutex_unlock(&lw->mu);
	if (changed && lw->cfg.on_event)
		lw->cfg.on_event(lw->cfg.ctx, w->name, w->dev, ev, t);
}

static void *run(void *arg)
{
	struct link_watch *lw = arg;
	struct pollfd pf[2] = { { nl_socket_get_fd(lw->sk), POLLIN, 0 }, { lw->stop_pipe[0], POLLIN, 0 } };
	for (;;) {
		int r = poll(pf, 2, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (pf[1].revents & (POLLIN | POLLHUP)))
			break;
		if (!(pf[0].revents & POLLIN))
			continue;
		struct sockaddr_nl from;
		unsigned char *buf = NULL;
		int n = nl_recv(lw->sk, &from, &buf, NULL);
		if (n <= 0) {
			free(buf);
			pthread_mutex_lock(&lw->mu);
			lw->st.recv_errors++; /* e.g. ENOBUFS: the kernel dropped events */
			pthread_mutex_unlock(&lw->mu);
			if (n == -NLE_BAD_SOCK)
				break;
			continue;
		}
		uint64_t bad = 0;
		link_parse_buf(buf, (size_t)n, on_msg, lw, &bad);
		free(buf);
		if (bad) {
			pthread_mutex_lock(&lw->mu);
			lw->st.malformed += bad;
			pthread_mutex_unlock(&lw->mu);
		}
	}
	return NULL;
}

/* The current state of every watched netdev, from the kernel's link cache. */
static void initial_states(struct link_watch *lw)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *cache = NULL;
	if (!sk || nl_connect(sk, NETLINK_ROUTE) < 0 || rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache) < 0) {
		if (sk)
			nl_socket_free(sk);
		return;
	}
	for (int i = 0; i < lw->nw; i++) {
		struct rtnl_link *l = rtnl_link_get_by_name(cache, lw->w[i].name);
		struct link_ev ev;
		memset(&ev, 0, sizeof ev);
		snprintf(ev.ifname, sizeof ev.ifname, "%s", lw->w[i].name);
		ev.operstate = ev.carrier = -1;
		if (l) {
			ev.ifindex = rtnl_link_get_ifindex(l);
			ev.flags = rtnl_link_get_flags(l);
			ev.operstate = rtnl_link_get_operstate(l);
			ev.carrier = rtnl_link_get_carrier(l);
			ev.up = (ev.flags & IFF_UP) && (ev.flags & IFF_RUNNING);
			lw->w[i].ifindex = ev.ifindex;
			lw->w[i].known = 1;
			lw->w[i].up = ev.up;
			rtnl_link_put(l);
		}
		if (lw->cfg.on_initial)
			lw->cfg.on_initial(lw->cfg.ctx, lw->w[i].name, lw->w[i].dev, l ? &ev : NULL);
	}
	nl_cache_free(cache);
	nl_socket_free(sk);
}

struct link_watch *link_watch_start(const struct link_watch_cfg *cfg, char *err, size_t errlen)
{
	struct link_watch *lw = calloc(1, sizeof *lw);
	if (!lw) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	lw->cfg = *cfg;
	lw->stop_pipe[0] = lw->stop_pipe[1] = -1;
	pthread_mutex_init(&lw->mu, NULL);
	for (int i = 0; i < cfg->n && lw->nw < LINK_WATCH_MAX; i++) {
		struct watched *w = &lw->w[lw->nw++];
		snprintf(w->name, sizeof w->name, "%.15s", cfg->names[i]);
		snprintf(w->dev, sizeof w->dev, "%.63s", cfg->devs && cfg->devs[i] ? cfg->devs[i] : "");
	}
	lw->cfg.names = lw->cfg.devs = NULL;
	int rc;
	lw->sk = nl_socket_alloc();
	if (!lw->sk) {
		snprintf(err, errlen, "nl_socket_alloc: out of memory");
		goto fail;
	}
	nl_socket_disable_seq_check(lw->sk);
	if ((rc = nl_connect(lw->sk, NETLINK_ROUTE)) < 0) {
		snprintf(err, errlen, "rtnetlink socket: %s", nl_geterror(rc));
		goto fail;
	}
	if ((rc = nl_socket_add_membership(lw->sk, RTNLGRP_LINK)) < 0) {
		snprintf(err, errlen, "rtnetlink link group: %s", nl_geterror(rc));
		goto fail;
	}
	/* events must not be lost while the agent is busy: a larger buffer */
	nl_socket_set_buffer_size(lw->sk, 1 << 20, 0);
	if (pipe(lw->stop_pipe)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	/* subscribed first, then the initial states: a change in between is
	 * seen as an event (never missed) */
	initial_states(lw);
	if (pthread_create(&lw->th, NULL, run, lw)) {
		snprintf(err, errlen, "cannot start the link thread");
		goto fail;
	}
	lw->started = 1;
	return lw;
fail:
	link_watch_stop(lw);
	return NULL;
}

void link_watch_get_stats(struct link_watch *lw, struct link_watch_stats *st)
{
	pthread_mutex_lock(&lw->mu);
	*st = lw->st;
	pthread_mutex_unlock(&lw->mu);
}

void link_watch_stop(struct link_watch *lw)
{
	if (!lw)
		return;
	if (lw->started) {
		if (write(lw->stop_pipe[1], "x", 1) < 0) {
			/* the pipe is ours and empty: cannot fail in practice */
		}
		pthread_join(lw->th, NULL);
	}
	if (lw->stop_pipe[0] >= 0)
		close(lw->stop_pipe[0]);
	if (lw->stop_pipe[1] >= 0)
		close(lw->stop_pipe[1]);
	if (lw->sk)
		nl_socket_free(lw->sk);
	pthread_mutex_destroy(&lw->mu);
	free(lw);
}
