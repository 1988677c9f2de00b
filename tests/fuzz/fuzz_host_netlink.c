/* libFuzzer target for the host agent's parsers of what the kernel says
 * (issue 14): rtnetlink link messages (host-agent/link_watch.c), RDMA
 * netlink device and QP dumps and their check against an interception map
 * (host-agent/rdma_res.c), and sysfs values (host-agent/rdma_sysfs.c).
 *
 * Input: byte 0 picks the parser (mod 3); the rest is a netlink datagram,
 * or, for sysfs, text split at '\n' into one value per parser. Every
 * parser must stay inside its input (ASan), have no undefined behaviour
 * (UBSan), and its results must be self-consistent (checked below, abort
 * otherwise). Built by host-agent/host-agent.mk; run by
 * tests/host-agent/fuzz_host_netlink.sh. */
#define _GNU_SOURCE
#include <math.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../host-agent/agent.h"
#include "../../host-agent/link_watch.h"
#include "../../host-agent/rdma.h"
#include "../../host-agent/rdma_res.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n_cb;
static void on_link(void *ctx, const struct link_ev *ev)
{
	(void)ctx;
	n_cb++;
	if (strnlen(ev->ifname, sizeof ev->ifname) >= sizeof ev->ifname || ev->ifindex <= 0)
		abort();
	if (ev->up && (ev->deleted || !(ev->flags & IFF_UP) || !(ev->flags & IFF_RUNNING)))
		abort();
	if (ev->operstate < -1 || ev->operstate > 255 || ev->carrier < -1 || ev->carrier > 255)
		abort();
}

static struct rdma_qp_ent ents[256];
static uint32_t n_ent;
static void on_qp(void *ctx, const struct rdma_qp_ent *q)
{
	(void)ctx;
	n_cb++;
	if (q->lqpn > 0xffffff || q->rqpn > 0xffffff || strnlen(q->dev, sizeof q->dev) >= sizeof q->dev ||
	    strnlen(q->kern, sizeof q->kern) >= sizeof q->kern)
		abort();
	if (n_ent < 256)
		ents[n_ent++] = *q;
}
static void on_dev(void *ctx, uint32_t index, const char *name)
{
	(void)ctx;
	(void)index;
	n_cb++;
	if (!name[0] || strlen(name) >= 64)
		abort();
}

static void fuzz_sysfs(const char *text)
{
	char line[256];
	const char *p = text;
	for (int k = 0; *p || k == 0; k++) {
		size_t n = strcspn(p, "\n");
		if (n >= sizeof line)
			n = sizeof line - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p += strcspn(p, "\n");
		if (*p)
			p++;
		double g = rdma_parse_gts(line);
		if (!(g == -1 || (g > 0 && isfinite(g))))
			abort();
		double r = rdma_parse_rate(line);
		if (!(r == -1 || (r >= 0 && isfinite(r))))
			abort();
		char name[16];
		int st = rdma_parse_port_state(line, name, sizeof name);
		if (st < -1 || st > 255 || (st >= 0 && !name[0]))
			abort();
		uint8_t gid[16];
		if (rdma_parse_gid(line, gid) == 0) {
			char back[40];
			size_t o = 0;
			for (int b = 0; b < 16; b += 2)
				o += (size_t)snprintf(back + o, sizeof back - o, "%s%02x%02x", b ? ":" : "",
						      gid[b], gid[b + 1]);
			if (strncasecmp(back, line, 39))
				abort(); /* what it read is what the text says */
		}
		char pci[16];
		if (rdma_parse_pci_addr(line, pci) == 0 &&
		    (strlen(pci) != 12 || pci[4] != ':' || pci[7] != ':' || pci[10] != '.'))
			abort();
		if (!*p)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int which = data[0] % 3;
	size--;
	/* an exact-size copy, aligned as a receive buffer is, so that ASan
	 * sees any read past the datagram */
	uint8_t *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size);
	buf[size] = '\0';
	n_cb = 0;
	if (which == 0) {
		uint64_t bad = 0;
		int n = link_parse_buf(buf, size, on_link, NULL, &bad);
		if (n >= 0 && n != n_cb)
			abort();
	} else if (which == 1) {
		n_ent = 0;
		struct rdma_nl_sink s = { .on_qp = on_qp, .on_dev = on_dev };
		int n = rdma_nl_parse_buf(buf, size, &s);
		if (n >= 0 && n != n_cb)
			abort();
		/* the entries against a map that knows every other one (some
		 * under another pid, some with a remote QPN already) */
		struct qp_map map;
		memset(&map, 0, sizeof map);
		map.qps = calloc(n_ent / 2 + 1, sizeof *map.qps);
		if (!map.qps)
			abort();
		for (uint32_t i = 0; i < n_ent; i += 2) {
			struct map_qp *q = &map.qps[map.nqps++];
			memcpy(q->dev, ents[i].dev, sizeof q->dev - 1);
			q->qpn = ents[i].lqpn;
			q->pid = ents[i].pid + (i % 4 == 2);
			q->state = (uint8_t)(1 + i % 3);
			q->dest_qpn = i % 8 == 4 ? 5 : 0;
		}
		struct rdma_res_summary sum;
		FILE *f = fopen("/dev/null", "w");
		rdma_res_reconcile(ents, n_ent, &map, &sum, f, 1);
		if (f)
			fclose(f);
		if (sum.kernel_owned + sum.confirmed + sum.missed + sum.pid_mismatch != sum.kernel_qps ||
		    sum.completed > sum.confirmed)
			abort();
		free(map.qps);
	} else {
		fuzz_sysfs((const char *)buf);
	}
	free(buf);
	return 0;
}
