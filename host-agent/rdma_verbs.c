/* RDMA devices through libibverbs: the device list, and per port its state,
 * link layer, speed and GID table with each GID's type (ibv_query_gid_ex:
 * RoCE v2 or not) and netdev. Merged into what sysfs showed (rdma_sysfs.c),
 * which adds what verbs does not say: PCI address, NUMA node, PCIe link.
 * Only on the real /sys: libibverbs reads the running kernel's devices. */
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "rdma.h"

/* Gb/s per lane of ibv_port_attr.active_speed, and lanes of active_width
 * (the IBTA encodings verbs.h documents with ibv_rate). */
static double lane_gbps(uint8_t speed)
{
	switch (speed) {
	case 1: return 2.5;   /* SDR */
	case 2: return 5;     /* DDR */
	case 4: return 10;    /* QDR */
	case 8: return 10;    /* FDR10 */
	case 16: return 14;   /* FDR */
	case 32: return 25;   /* EDR */
	case 64: return 50;   /* HDR */
	case 128: return 100; /* NDR */
	default: return 0;
	}
}

static int lanes(uint8_t width)
{
	switch (width) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

static const char *gid_type_name(enum ibv_gid_type t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "";
	}
}

static void say(rdma_log_fn log, const char *level, const char *msg)
{
	if (log)
		log(level, msg);
}

static void merge_port(struct rdma_inventory *inv, struct rdma_port *pt, struct ibv_context *ctx,
		       uint8_t num, const char *dev, rdma_log_fn log)
{
	struct ibv_port_attr pa;
	char m[300];
	memset(&pa, 0, sizeof pa);
	if (ibv_query_port(ctx, num, &pa)) {
		inv->errors++;
		snprintf(m, sizeof m, "%s port %u: ibv_query_port: %s", dev, num, strerror(errno));
		say(log, "warn", m);
		return;
	}
	pt->num = num;
	pt->state = (int)pa.state;
	rdma_copy(pt->state_name, sizeof pt->state_name, ibv_port_state_str(pa.state));
	snprintf(pt->link_layer, sizeof pt->link_layer, "%s",
		 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	double g = lane_gbps(pa.active_speed) * lanes(pa.active_width);
	if (g > 0) {
		pt->gbps = g;
		snprintf(pt->rate, sizeof pt->rate, "%g Gb/sec (%dX)", g, lanes(pa.active_width));
	}
	static const uint8_t zero[16];
	int ng = 0;
	for (int i = 0; i < pa.gid_tbl_len && ng < RDMA_MAX_GIDS; i++) {
		struct ibv_gid_entry ge;
		memset(&ge, 0, sizeof ge);
		if (ibv_query_gid_ex(ctx, num, (uint32_t)i, &ge, 0))
			continue; /* an unused entry: ENODATA */
		if (!memcmp(ge.gid.raw, zero, 16))
			continue;
		struct rdma_gid *x = &pt->gids[ng++];
		memset(x, 0, sizeof *x);
		x->index = (uint16_t)i;
		memcpy(x->raw, ge.gid.raw, 16);
		rdma_copy(x->type, sizeof x->type, gid_type_name(ge.gid_type));
		char ifn[IF_NAMESIZE];
		if (ge.ndev_ifindex && if_indextoname(ge.ndev_ifindex, ifn))
			rdma_copy(x->netdev, sizeof x->netdev, ifn);
		if (x->netdev[0] && !pt->netdev[0])
			rdma_copy(pt->netdev, sizeof pt->netdev, x->netdev);
	}
	pt->ngids = ng;
}

int rdma_verbs_scan(struct rdma_inventory *inv, rdma_log_fn log)
{
	inv->verbs_ran = 1;
	int n = 0;
	errno = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list) {
		int e = errno ? errno : ENOSYS;
		/* rdma-core answers ENOSYS when the kernel has no verbs device at all */
		snprintf(inv->verbs_err, sizeof inv->verbs_err, "ibv_get_device_list: %s%s", strerror(e),
			 e == ENOSYS ? " (no verbs device in this kernel)" : "");
		return -1;
	}
	char m[300];
	for (int i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		if (!name)
			continue;
		struct rdma_dev *d = (struct rdma_dev *)rdma_find_dev(inv, name);
		if (!d) {
			if (inv->ndevs == RDMA_MAX_DEVS)
				break;
			d = &inv->devs[inv->ndevs++];
			memset(d, 0, sizeof *d);
			rdma_copy(d->name, sizeof d->name, name);
			d->numa = -1;
		}
		d->from_verbs = 1;
		struct ibv_context *ctx = ibv_open_device(list[i]);
		if (!ctx) {
			inv->errors++;
			snprintf(m, sizeof m, "%s: ibv_open_device: %s (no permission on /dev/infiniband?); "
					      "ports and GIDs from sysfs only",
				 name, strerror(errno));
			say(log, "warn", m);
			continue;
		}
		struct ibv_device_attr da;
		if (ibv_query_device(ctx, &da) == 0) {
			for (int p = 1; p <= da.phys_port_cnt && p <= RDMA_MAX_PORTS; p++) {
				struct rdma_port *pt = NULL;
				for (int k = 0; k < d->nports; k++)
					if (d->ports[k].num == (uint32_t)p)
						pt = &d->ports[k];
				if (!pt) {
					if (d->nports == RDMA_MAX_PORTS)
						break;
					pt = &d->ports[d->nports++];
					memset(pt, 0, sizeof *pt);
				}
				char keep[RDMA_IF_MAX];
				rdma_copy(keep, sizeof keep, pt->netdev);
				merge_port(inv, pt, ctx, (uint8_t)p, name, log);
				if (!pt->netdev[0])
					rdma_copy(pt->netdev, sizeof pt->netdev, keep);
			}
		} else {
			inv->errors++;
			snprintf(m, sizeof m, "%s: ibv_query_device: %s", name, strerror(errno));
			say(log, "warn", m);
		}
		ibv_close_device(ctx);
		if (!d->netdev[0] && d->nports && d->ports[0].netdev[0])
			rdma_copy(d->netdev, sizeof d->netdev, d->ports[0].netdev);
	}
	ibv_free_device_list(list);
	inv->verbs_ndevs = n;
	return n;
}
