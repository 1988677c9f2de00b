/* Configuration findings from the inventory: a PCIe link trained below its
 * capability ("PCIe downgrade") and a NIC on another NUMA node than the GPU
 * whose traffic it carries ("NIC-GPU cross NUMA binding"), both faults of
 * the paper that cost bandwidth from the first step; and --list-devices. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/host_event.h"

#include "rdma.h"

const char *const rdma_finding_names[FIND_KINDS] = { "pcie_width", "pcie_speed", "cross_numa" };

int rdma_findings_pcie(const struct rdma_inventory *inv, struct rdma_finding *out, int max)
{
	int n = 0;
	for (int i = 0; i < inv->ndevs && n < max; i++) {
		const struct rdma_dev *d = &inv->devs[i];
		if (d->cur_width && d->max_width && d->cur_width < d->max_width && n < max) {
			struct rdma_finding *f = &out[n++];
			memset(f, 0, sizeof *f);
			f->kind = FIND_PCIE_WIDTH;
			rdma_copy(f->nic, sizeof f->nic, d->name);
			f->nic_numa = d->numa;
			f->gpu_numa = -1;
			snprintf(f->detail, sizeof f->detail,
				 "%s (%s): PCIe link x%d of x%d: %.0f%% of its lanes", d->name, d->pci,
				 d->cur_width, d->max_width, 100.0 * d->cur_width / d->max_width);
		}
		if (d->cur_gts > 0 && d->max_gts > 0 && d->cur_gts < d->max_gts && n < max) {
			struct rdma_finding *f = &out[n++];
			memset(f, 0, sizeof *f);
			f->kind = FIND_PCIE_SPEED;
			rdma_copy(f->nic, sizeof f->nic, d->name);
			f->nic_numa = d->numa;
			f->gpu_numa = -1;
			snprintf(f->detail, sizeof f->detail,
				 "%s (%s): PCIe link at %.1f GT/s of %.1f GT/s", d->name, d->pci, d->cur_gts,
				 d->max_gts);
		}
	}
	return n;
}

/* The path components of a resolved sysfs device directory, from
 * ".../devices/" on: "pci0000:00", "0000:00:01.0", ... */
static int components(const char *path, const char *c[], int max)
{
	const char *p = strstr(path, "/devices/");
	if (!p)
		return -1;
	p += strlen("/devices/");
	int n = 0;
	while (*p && n < max) {
		c[n++] = p;
		const char *s = strchr(p, '/');
		if (!s)
			break;
		p = s + 1;
	}
	return n;
}

static size_t comp_len(const char *c)
{
	const char *s = strchr(c, '/');
	return s ? (size_t)(s - c) : strlen(c);
}

int rdma_pcie_hops(const char *a, const char *b)
{
	const char *ca[64], *cb[64];
	int na = components(a, ca, 64), nb = components(b, cb, 64);
	if (na < 1 || nb < 1)
		return -1;
	int common = 0;
	while (common < na && common < nb && comp_len(ca[common]) == comp_len(cb[common]) &&
	       !strncmp(ca[common], cb[common], comp_len(ca[common])))
		common++;
	if (common == 0)
		return -1; /* different root complexes: through the CPUs' interconnect */
	return (na - common) + (nb - common);
}

int rdma_pair_gpu(const struct rdma_inventory *inv, const char *gpu_bus_id, const char *nic,
		  struct rdma_finding *f, char *detail, size_t detaillen)
{
	const struct rdma_dev *d = rdma_find_dev(inv, nic);
	if (!d) {
		snprintf(detail, detaillen, "%s is not an RDMA device found on this host", nic);
		return -1;
	}
	char gpu[16], gpath[512] = "";
	if (rdma_parse_pci_addr(gpu_bus_id, gpu)) {
		snprintf(detail, detaillen, "GPU bus id \"%.20s\" is not a PCI address", gpu_bus_id);
		return 0;
	}
	int gnuma = rdma_sysfs_pci_numa(inv->sysfs, gpu, gpath, sizeof gpath);
	char dist[700];
	int hops = gpath[0] && d->pci_path[0] ? rdma_pcie_hops(gpath, d->pci_path) : -2;
	if (hops >= 0)
		snprintf(dist, sizeof dist, "%d PCIe hops apart", hops);
	else if (hops == -1)
		snprintf(dist, sizeof dist, "under different PCIe root complexes");
	else
		snprintf(dist, sizeof dist, "PCIe distance unknown (%s not in %.500s/bus/pci/devices)",
			 gpath[0] ? d->name : gpu, inv->sysfs);
	snprintf(detail, detaillen, "GPU %s (NUMA %d) uses %s (%s, NUMA %d): %.200s", gpu, gnuma, d->name,
		 d->pci[0] ? d->pci : "PCI unknown", d->numa, dist);
	if (gnuma < 0 || d->numa < 0 || gnuma == d->numa)
		return 0;
	memset(f, 0, sizeof *f);
	f->kind = FIND_CROSS_NUMA;
	rdma_copy(f->nic, sizeof f->nic, d->name);
	rdma_copy(f->gpu, sizeof f->gpu, gpu);
	f->nic_numa = d->numa;
	f->gpu_numa = gnuma;
	snprintf(f->detail, sizeof f->detail, "NIC on another NUMA node than its GPU: %.200s", detail);
	return 1;
}

void rdma_finding_json(FILE *f, const struct rdma_finding *x, const char *host, uint64_t t_ns)
{
	struct pulse_config_finding c;
	memset(&c, 0, sizeof c);
	c.t_ns = t_ns;
	snprintf(c.host, sizeof c.host, "%s", host ? host : "");
	snprintf(c.kind, sizeof c.kind, "%s", rdma_finding_names[x->kind]);
	snprintf(c.nic, sizeof c.nic, "%s", x->nic);
	snprintf(c.gpu, sizeof c.gpu, "%s", x->gpu);
	c.nic_numa = x->nic_numa;
	c.gpu_numa = x->gpu_numa;
	snprintf(c.detail, sizeof c.detail, "%s", x->detail);
	char *s = pulse_config_finding_to_json(&c);
	if (s) {
		fputs(s, f);
		fputc('\n', f);
		free(s);
	}
}

void rdma_print_inventory(FILE *f, const struct rdma_inventory *inv, const struct rdma_finding *fs,
			  int nf)
{
	fprintf(f, "RDMA devices under %s: %d", inv->sysfs, inv->ndevs);
	if (inv->verbs_ran)
		fprintf(f, " (libibverbs lists %d%s%s)", inv->verbs_ndevs, inv->verbs_err[0] ? ": " : "",
			inv->verbs_err);
	else
		fputs(" (libibverbs not asked: not the running system's /sys)", f);
	fputc('\n', f);
	for (int i = 0; i < inv->ndevs; i++) {
		const struct rdma_dev *d = &inv->devs[i];
		fprintf(f, "%s: netdev %s, PCI %s, NUMA %d, PCIe ", d->name, d->netdev[0] ? d->netdev : "-",
			d->pci[0] ? d->pci : "-", d->numa);
		if (d->cur_width && d->max_width)
			fprintf(f, "x%d/x%d", d->cur_width, d->max_width);
		else
			fputs("width ?", f);
		if (d->cur_gts > 0 && d->max_gts > 0)
			fprintf(f, " %.1f/%.1f GT/s", d->cur_gts, d->max_gts);
		else
			fputs(" speed ?", f);
		fprintf(f, "%s\n", d->from_verbs ? "" : inv->verbs_ran ? " (not listed by libibverbs)" : "");
		for (int k = 0; k < d->nports; k++) {
			const struct rdma_port *p = &d->ports[k];
			fprintf(f, "  port %u: %s (%d), %s, %s, netdev %s\n", p->num,
				p->state_name[0] ? p->state_name : "?", p->state,
				p->link_layer[0] ? p->link_layer : "link layer ?", p->rate[0] ? p->rate : "rate ?",
				p->netdev[0] ? p->netdev : "-");
			for (int g = 0; g < p->ngids; g++) {
				const struct rdma_gid *x = &p->gids[g];
				fprintf(f, "    gid %u: ", x->index);
				for (int b = 0; b < 16; b += 2)
					fprintf(f, "%s%02x%02x", b ? ":" : "", x->raw[b], x->raw[b + 1]);
				fprintf(f, " %s%s%s\n", x->type[0] ? x->type : "type ?", x->netdev[0] ? " " : "",
					x->netdev);
			}
		}
	}
	for (int i = 0; i < nf; i++)
		fprintf(f, "finding %s: %s\n", rdma_finding_names[fs[i].kind], fs[i].detail);
}
