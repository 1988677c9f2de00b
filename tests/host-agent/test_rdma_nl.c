/* The netlink parsers of the host agent (link_watch.c, rdma_res.c) on
 * messages built with libnl from the kernel's uapi definitions
 * (<linux/rtnetlink.h>, <rdma/rdma_netlink.h>), as the kernel's nldev.c and
 * rtnetlink.c lay them out; and the check of the kernel's QPs against the
 * hook's map. Run from test_rdma.c's group. */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "../../host-agent/agent.h"
#include "../../host-agent/link_watch.h"
#include "../../host-agent/rdma_res.h"

/* A datagram: messages appended, each aligned as the kernel sends them. */
struct dgram {
	uint8_t b[16384];
	size_t len;
};

static void add(struct dgram *d, struct nl_msg *m)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	assert_true(d->len + NLMSG_ALIGN(h->nlmsg_len) <= sizeof d->b);
	memcpy(d->b + d->len, h, h->nlmsg_len);
	d->len += NLMSG_ALIGN(h->nlmsg_len);
	nlmsg_free(m);
}

static struct nl_msg *link_msg(int type, int index, unsigned flags, const char *name)
{
	struct nl_msg *m = nlmsg_alloc_simple(type, 0);
	assert_non_null(m);
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = flags };
	assert_int_equal(nlmsg_append(m, &ifi, sizeof ifi, NLMSG_ALIGNTO), 0);
	if (name)
		assert_int_equal(nla_put_string(m, IFLA_IFNAME, name), 0);
	return m;
}

static struct link_ev g_evs[8];
static int g_nev;
static void take_ev(void *ctx, const struct link_ev *ev)
{
	(void)ctx;
	if (g_nev < 8)
		g_evs[g_nev++] = *ev;
}

void test_rtnl_link_parse(void **state)
{
	(void)state;
	struct dgram *d = calloc(1, sizeof *d);
	assert_non_null(d);
	struct nl_msg *m = link_msg(RTM_NEWLINK, 7, IFF_UP | IFF_RUNNING | 0x10000 /* IFF_LOWER_UP */, "ens1f0np0");
	nla_put_u8(m, IFLA_OPERSTATE, 6);
	nla_put_u8(m, IFLA_CARRIER, 1);
	add(d, m);
	add(d, link_msg(RTM_NEWLINK, 7, IFF_UP, "ens1f0np0")); /* carrier lost */
	/* an IFLA_IFNAME without its NUL: refused, counted, the next one read */
	m = link_msg(RTM_NEWLINK, 8, IFF_UP, NULL);
	nla_put(m, IFLA_IFNAME, 4, "eth9");
	add(d, m);
	/* IFLA_OPERSTATE of the wrong size (u32 instead of u8 is fine for
	 * libnl's minimum-length check; an empty one is not) */
	m = link_msg(RTM_NEWLINK, 9, IFF_UP, "x0");
	nla_put(m, IFLA_OPERSTATE, 0, NULL);
	add(d, m);
	/* another message type: skipped, not an error */
	struct nl_msg *a = nlmsg_alloc_simple(RTM_NEWADDR, 0);
	struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_index = 7 };
	nlmsg_append(a, &ifa, sizeof ifa, NLMSG_ALIGNTO);
	add(d, a);
	add(d, link_msg(RTM_DELLINK, 7, 0, "ens1f0np0"));
	uint64_t bad = 0;
	g_nev = 0;
	assert_int_equal(link_parse_buf(d->b, d->len, take_ev, NULL, &bad), 3);
	assert_int_equal(bad, 2);
	assert_int_equal(g_nev, 3);
	assert_string_equal(g_evs[0].ifname, "ens1f0np0");
	assert_int_equal(g_evs[0].ifindex, 7);
	assert_int_equal(g_evs[0].up, 1);
	assert_int_equal(g_evs[0].operstate, 6);
	assert_int_equal(g_evs[0].carrier, 1);
	assert_int_equal(g_evs[1].up, 0); /* IFF_UP without IFF_RUNNING: down */
	assert_int_equal(g_evs[1].operstate, -1);
	assert_int_equal(g_evs[2].deleted, 1);
	assert_int_equal(g_evs[2].up, 0);

	/* framing: a length past the datagram stops the walk, counted */
	struct nlmsghdr *h = (struct nlmsghdr *)d->b;
	h->nlmsg_len = (uint32_t)d->len + 64;
	bad = 0;
	assert_int_equal(link_parse_buf(d->b, d->len, take_ev, NULL, &bad), -1);
	assert_int_equal(bad, 1);
	/* a header shorter than ifinfomsg */
	struct link_ev ev;
	h->nlmsg_len = NLMSG_LENGTH(4);
	assert_int_equal(link_parse_msg(h, d->len, &ev), -1);
	/* ifindex 0 is no netdev */
	struct dgram *z = calloc(1, sizeof *z);
	add(z, link_msg(RTM_NEWLINK, 0, IFF_UP, "a"));
	assert_int_equal(link_parse_msg((struct nlmsghdr *)z->b, z->len, &ev), -1);
	assert_int_equal(link_parse_buf(z->b, 3, take_ev, NULL, NULL), 0); /* shorter than a header */
	free(z);
	free(d);
}

/* ---- RDMA netlink ---- */

#define QP_TYPE RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)
#define DEV_TYPE RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)

static struct nl_msg *dev_msg(uint32_t index, const char *name)
{
	struct nl_msg *m = nlmsg_alloc_simple(DEV_TYPE, NLM_F_MULTI);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name);
	return m;
}

struct qspec {
	uint32_t lqpn, rqpn, pid, port;
	int has_rqpn, has_pid;
	uint8_t type, state;
	const char *kern;
};

/* What the kernel's res_get_common_dumpit writes for one device: the
 * device's handle, then a RES_QP table of RES_QP_ENTRY nests. */
static struct nl_msg *qp_msg(uint32_t index, const char *name, const struct qspec *q, int n)
{
	struct nl_msg *m = nlmsg_alloc_simple(QP_TYPE, NLM_F_MULTI);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name);
	struct nlattr *t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP);
	for (int i = 0; i < n; i++) {
		struct nlattr *e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
		if (q[i].port)
			nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, q[i].port);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, q[i].lqpn);
		if (q[i].has_rqpn)
			nla_put_u32(m, RDMA_NLDEV_ATTR_RES_RQPN, q[i].rqpn);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_SQ_PSN, 77);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, q[i].type);
		nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, q[i].state);
		nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, 3);
		if (q[i].has_pid)
			nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, q[i].pid);
		if (q[i].kern)
			nla_put_string(m, RDMA_NLDEV_ATTR_RES_KERN_NAME, q[i].kern);
		nla_nest_end(m, e);
	}
	nla_nest_end(m, t);
	return m;
}

static struct nl_msg *done_msg(void)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
	int zero = 0;
	nlmsg_append(m, &zero, sizeof zero, NLMSG_ALIGNTO);
	return m;
}

static struct rdma_qp_ent g_q[16];
static int g_nq;
static uint32_t g_dev_idx[4];
static char g_dev_name[4][64];
static int g_ndev;
static void take_qp(void *ctx, const struct rdma_qp_ent *q)
{
	(void)ctx;
	if (g_nq < 16)
		g_q[g_nq++] = *q;
}
static void take_dev(void *ctx, uint32_t index, const char *name)
{
	(void)ctx;
	if (g_ndev < 4) {
		g_dev_idx[g_ndev] = index;
		snprintf(g_dev_name[g_ndev++], 64, "%s", name);
	}
}

static const struct qspec k_qps[] = {
	{ .lqpn = 0x1a2b, .rqpn = 0x3c4d, .has_rqpn = 1, .pid = 4242, .has_pid = 1, .port = 1, .type = 2,
	  .state = 3 },
	{ .lqpn = 1, .type = 1, .state = 3, .port = 1, .kern = "ib_core" },
	{ .lqpn = 0x77, .pid = 4242, .has_pid = 1, .type = 4, .state = 3 },
};

void test_rdma_res_parse(void **state)
{
	(void)state;
	struct dgram *d = calloc(1, sizeof *d);
	add(d, dev_msg(0, "mlx5_0"));
	add(d, dev_msg(3, "mlx5_1"));
	add(d, done_msg());
	struct rdma_nl_sink s = { .on_qp = take_qp, .on_dev = take_dev };
	g_nq = g_ndev = 0;
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 2);
	assert_int_equal(s.done, 1);
	assert_int_equal(g_ndev, 2);
	assert_int_equal(g_dev_idx[1], 3);
	assert_string_equal(g_dev_name[1], "mlx5_1");

	d->len = 0;
	add(d, qp_msg(3, "mlx5_1", k_qps, 3));
	add(d, qp_msg(0, "mlx5_0", NULL, 0)); /* a device with an empty table */
	add(d, done_msg());
	memset(&s, 0, sizeof s);
	s.on_qp = take_qp;
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 3);
	assert_int_equal(s.malformed, 0);
	assert_int_equal(s.done, 1);
	assert_int_equal(g_nq, 3);
	assert_string_equal(g_q[0].dev, "mlx5_1");
	assert_int_equal(g_q[0].dev_index, 3);
	assert_int_equal(g_q[0].lqpn, 0x1a2b);
	assert_int_equal(g_q[0].has_rqpn, 1);
	assert_int_equal(g_q[0].rqpn, 0x3c4d);
	assert_int_equal(g_q[0].pid, 4242);
	assert_int_equal(g_q[0].port, 1);
	assert_int_equal(g_q[0].type, 2);
	assert_int_equal(g_q[0].state, 3);
	assert_int_equal(g_q[1].has_pid, 0);
	assert_string_equal(g_q[1].kern, "ib_core");
	assert_int_equal(g_q[2].has_rqpn, 0);
	assert_int_equal(g_q[2].port, 0);
	free(d);
}

void test_rdma_res_malformed(void **state)
{
	(void)state;
	struct dgram *d = calloc(1, sizeof *d);
	struct rdma_nl_sink s = { .on_qp = take_qp };
	/* an entry without LQPN, an LQPN of 2 bytes, an LQPN over 24 bits,
	 * then a good one: three counted, the good one delivered */
	struct nl_msg *m = nlmsg_alloc_simple(QP_TYPE, NLM_F_MULTI);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	struct nlattr *t = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP);
	struct nlattr *e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, 5);
	nla_nest_end(m, e);
	e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	nla_put_u16(m, RDMA_NLDEV_ATTR_RES_LQPN, 9);
	nla_nest_end(m, e);
	e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 0x1000000);
	nla_nest_end(m, e);
	e = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
	nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 0x42);
	nla_nest_end(m, e);
	nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, 0x43); /* not an entry nest */
	nla_nest_end(m, t);
	add(d, m);
	g_nq = 0;
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 1);
	assert_int_equal(s.malformed, 4);
	assert_int_equal(g_nq, 1);
	assert_int_equal(g_q[0].lqpn, 0x42);
	assert_int_equal(g_q[0].has_pid, 0);

	/* a device name without its NUL; no DEV_INDEX */
	d->len = 0;
	m = nlmsg_alloc_simple(QP_TYPE, NLM_F_MULTI);
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	nla_put(m, RDMA_NLDEV_ATTR_DEV_NAME, 6, "mlx5_0");
	add(d, m);
	m = nlmsg_alloc_simple(QP_TYPE, NLM_F_MULTI);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0");
	add(d, m);
	add(d, dev_msg(1, "")); /* an empty device name */
	memset(&s, 0, sizeof s);
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 0);
	assert_int_equal(s.malformed, 3);

	/* the kernel refuses: NLMSG_ERROR with -EPERM ends the dump */
	d->len = 0;
	m = nlmsg_alloc_simple(NLMSG_ERROR, 0);
	struct nlmsgerr ne = { .error = -EPERM };
	nlmsg_append(m, &ne, sizeof ne, NLMSG_ALIGNTO);
	add(d, m);
	memset(&s, 0, sizeof s);
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 0);
	assert_int_equal(s.done, 1);
	assert_int_equal(s.error, -EPERM);
	/* a truncated error message, a reply of an unknown type */
	d->len = 0;
	m = nlmsg_alloc_simple(NLMSG_ERROR, 0);
	add(d, m);
	add(d, nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_CQ_GET), 0));
	memset(&s, 0, sizeof s);
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), 0);
	assert_int_equal(s.malformed, 2);
	/* broken framing */
	d->len = 0;
	add(d, qp_msg(3, "mlx5_1", k_qps, 3));
	((struct nlmsghdr *)d->b)->nlmsg_len = 8;
	memset(&s, 0, sizeof s);
	assert_int_equal(rdma_nl_parse_buf(d->b, d->len, &s), -1);
	assert_int_equal(s.malformed, 1);
	free(d);
}

static void hook_qp(struct qp_map *m, uint8_t kind, uint32_t pid, const char *dev, uint32_t qpn,
		    uint32_t dest)
{
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.kind = kind;
	r.source = PULSE_HOOK_SRC_HOOK;
	r.version = PULSE_HOOK_RECORD_VERSION;
	r.pid = pid;
	r.tid = pid;
	r.time_ns = 1000;
	snprintf(r.u.qp.dev, sizeof r.u.qp.dev, "%s", dev);
	r.u.qp.qpn = qpn;
	r.u.qp.dest_qpn = dest;
	r.u.qp.port = 1;
	r.u.qp.attr_mask = 1u | (1u << 20);
	qp_map_apply(m, &r);
}

void test_rdma_res_reconcile(void **state)
{
	(void)state;
	struct qp_map map;
	qp_map_init(&map);
	hook_qp(&map, PULSE_HOOK_QP_CREATE, 4242, "mlx5_1", 0x1a2b, 0); /* created, RTR never seen */
	hook_qp(&map, PULSE_HOOK_QP_CREATE, 999, "mlx5_1", 0x77, 0);    /* kernel says pid 4242 */
	hook_qp(&map, PULSE_HOOK_QP_CREATE, 4242, "mlx5_1", 0x500, 0);  /* gone from the kernel */
	hook_qp(&map, PULSE_HOOK_QP_RTR, 4242, "mlx5_1", 0x500, 0x600);
	struct rdma_qp_ent e[4];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 3; i++) {
		snprintf(e[i].dev, sizeof e[i].dev, "mlx5_1");
		e[i].lqpn = k_qps[i].lqpn;
		e[i].rqpn = k_qps[i].rqpn;
		e[i].has_rqpn = (uint8_t)k_qps[i].has_rqpn;
		e[i].pid = k_qps[i].pid;
		e[i].has_pid = (uint8_t)k_qps[i].has_pid;
		e[i].type = k_qps[i].type;
		e[i].state = k_qps[i].state;
	}
	/* a QP of a process the hook never loaded into */
	snprintf(e[3].dev, sizeof e[3].dev, "mlx5_0");
	e[3].lqpn = 0x999;
	e[3].pid = 777;
	e[3].has_pid = 1;
	e[3].type = 2;
	e[3].state = 2;
	e[3].rqpn = 0x888;
	e[3].has_rqpn = 1;
	map.dirty = 0;
	struct rdma_res_summary sum;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	rdma_res_reconcile(e, 4, &map, &sum, f, 55);
	fclose(f);
	assert_int_equal(sum.kernel_qps, 4);
	assert_int_equal(sum.kernel_owned, 1);
	assert_int_equal(sum.confirmed, 1);
	assert_int_equal(sum.completed, 1);
	assert_int_equal(sum.pid_mismatch, 1);
	assert_int_equal(sum.missed, 1);
	assert_int_equal(sum.hook_only, 1);
	assert_int_equal(map.dirty, 1);
	assert_int_equal(map.qps[0].dest_qpn, 0x3c4d); /* completed from the kernel */
	assert_string_equal(buf, "{\"type\":\"rdma_qps\",\"t_ns\":55,\"kernel_qps\":4,\"kernel_owned\":1,"
				 "\"confirmed\":1,\"missed\":1,\"pid_mismatch\":1,\"completed\":1,\"hook_only\":1,"
				 "\"missed_qps\":[{\"dev\":\"mlx5_0\",\"port\":0,\"qpn\":2457,\"pid\":777,"
				 "\"type\":\"RC\",\"state\":\"RTR\",\"remote_qpn\":2184}]}\n");
	free(buf);
	/* no hook map at all: every process's QP is missed */
	rdma_res_reconcile(e, 4, NULL, &sum, NULL, 0);
	assert_int_equal(sum.missed, 3);
	assert_int_equal(sum.confirmed, 0);
	qp_map_free(&map);
}
