/* RDMA devices from sysfs, under a root path (the kernel's layout, as
 * Documentation/ABI/stable/sysfs-class-infiniband and sysfs-bus-pci
 * describe it):
 *   ROOT/class/infiniband/DEV/device          -> the PCI function
 *   ROOT/class/infiniband/DEV/ports/N/{state,rate,link_layer}
 *   ROOT/class/infiniband/DEV/ports/N/gids/I, gid_attrs/{types,ndevs}/I
 *   PCI function: numa_node, {current,max}_link_{width,speed}, net/IF
 *   ROOT/class/net/IF/device                  -> the PCI function
 * and the value parsers, which the fuzz target runs on arbitrary text. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rdma.h"

/* ---- parsers ---- */

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A decimal number with an optional fraction: no sign, no exponent, no
 * hex (strtod takes all of those). */
static int parse_decimal(const char *s, double *v, const char **end)
{
	const char *p = s;
	double x = 0;
	int digits = 0;
	while (isdigit((unsigned char)*p) && digits < 12) {
		x = x * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || isdigit((unsigned char)*p))
		return -1;
	if (*p == '.') {
		p++;
		double scale = 0.1;
		int fd = 0;
		while (isdigit((unsigned char)*p) && fd < 9) {
			x += (*p++ - '0') * scale;
			scale /= 10;
			fd++;
		}
		if (!fd || isdigit((unsigned char)*p))
			return -1;
	}
	*v = x;
	*end = p;
	return 0;
}

double rdma_parse_gts(const char *s)
{
	double v;
	const char *p;
	if (!s || parse_decimal(skip_ws(s), &v, &p))
		return -1;
	p = skip_ws(p);
	if (strncmp(p, "GT/s", 4))
		return -1;
	p = skip_ws(p + 4);
	if (*p && strncmp(p, "PCIe", 4) && *p != '\n')
		return -1;
	return v > 0 ? v : -1;
}

double rdma_parse_rate(const char *s)
{
	double v;
	const char *p;
	if (!s || parse_decimal(skip_ws(s), &v, &p))
		return -1;
	p = skip_ws(p);
	if (strncmp(p, "Gb/sec", 6))
		return -1;
	return v;
}

int rdma_parse_port_state(const char *s, char *name, size_t namelen)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	int v = 0;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (*s++ - '0');
		if (v > 255)
			return -1;
	}
	if (*s++ != ':')
		return -1;
	s = skip_ws(s);
	size_t n = 0;
	while (s[n] && s[n] != '\n' && (isalnum((unsigned char)s[n]) || s[n] == '_'))
		n++;
	if (!n || (s[n] && s[n] != '\n'))
		return -1;
	if (name && namelen) {
		if (n >= namelen)
			n = namelen - 1;
		memcpy(name, s, n);
		name[n] = '\0';
	}
	return v;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rdma_parse_gid(const char *s, uint8_t out[16])
{
	if (!s)
		return -1;
	for (int g = 0; g < 8; g++) {
		if (g && *s++ != ':')
			return -1;
		for (int k = 0; k < 4; k++) {
			int h = hexval((unsigned char)s[k]);
			if (h < 0)
				return -1;
			if (k % 2 == 0)
				out[g * 2 + k / 2] = (uint8_t)(h << 4);
			else
				out[g * 2 + k / 2] |= (uint8_t)h;
		}
		s += 4;
	}
	return *s == '\0' || (*s == '\n' && s[1] == '\0') ? 0 : -1;
}

int rdma_parse_pci_addr(const char *s, char out[16])
{
	if (!s)
		return -1;
	/* domain: 4 or 8 hex digits (NVML prints 8), bus 2, device 2, function 1 */
	size_t d = 0;
	while (hexval((unsigned char)s[d]) >= 0)
		d++;
	if ((d != 4 && d != 8) || s[d] != ':')
		return -1;
	const char *b = s + d + 1;
	if (hexval((unsigned char)b[0]) < 0 || hexval((unsigned char)b[1]) < 0 || b[2] != ':' ||
	    hexval((unsigned char)b[3]) < 0 || hexval((unsigned char)b[4]) < 0 || b[5] != '.' ||
	    b[6] < '0' || b[6] > '7' || (b[7] && b[7] != '\n'))
		return -1;
	if (d == 8 && strncmp(s, "0000", 4))
		return -1; /* a domain over 16 bits: not one sysfs names */
	const char *dom = s + d - 4;
	for (int i = 0; i < 4; i++)
		out[i] = (char)tolower((unsigned char)dom[i]);
	out[4] = ':';
	for (int i = 0; i < 7; i++)
		out[5 + i] = (char)tolower((unsigned char)b[i]);
	out[12] = '\0';
	return 0;
}

/* ---- sysfs reading ---- */

void rdma_copy(char *dst, size_t len, const char *src)
{
	if (!len)
		return;
	size_t n = strnlen(src, len - 1);
	memmove(dst, src, n);
	dst[n] = '\0';
}

static void logf_(rdma_log_fn log, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void logf_(rdma_log_fn log, const char *level, const char *fmt, ...)
{
	if (!log)
		return;
	char b[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	log(level, b);
}

/* One line of a sysfs file, without its newline: 0, or -1 (errno). */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		int e = ferror(f) ? errno : ENODATA;
		fclose(f);
		errno = e ? e : ENODATA;
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int read_int(const char *path, long *v)
{
	char b[64], *end;
	if (read_line(path, b, sizeof b))
		return -1;
	errno = 0;
	long x = strtol(b, &end, 10);
	if (end == b || *end || errno) {
		errno = EINVAL;
		return -1;
	}
	*v = x;
	return 0;
}

#define PATHF(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf)

/* A file that a device must have: logged and counted when it cannot be read. */
static int need_line(struct rdma_inventory *inv, rdma_log_fn log, const char *dev, const char *path,
		     char *buf, size_t len)
{
	if (read_line(path, buf, len) == 0)
		return 0;
	inv->errors++;
	logf_(log, "warn", "%s: cannot read %s (%s); left unknown", dev, path, strerror(errno));
	return -1;
}

int rdma_sysfs_pci_numa(const char *root, const char *pci, char *path, size_t pathlen)
{
	char p[1024], rp[PATH_MAX];
	if (!PATHF(p, "%s/bus/pci/devices/%s", root, pci) || !realpath(p, rp))
		return -1;
	if (path && pathlen)
		snprintf(path, pathlen, "%s", rp);
	long v;
	if (!PATHF(p, "%s/numa_node", rp) || read_int(p, &v) || v < 0 || v > 4096)
		return -1;
	return (int)v;
}

static void scan_pci(struct rdma_inventory *inv, struct rdma_dev *d, const char *devdir, rdma_log_fn log)
{
	char p[1024], rp[PATH_MAX], b[128];
	d->numa = -1;
	if (!PATHF(p, "%s/device", devdir) || !realpath(p, rp)) {
		inv->errors++;
		logf_(log, "warn", "%s: no PCI device link (%s/device); PCI address, NUMA node and PCIe "
				   "link unknown",
		      d->name, devdir);
		return;
	}
	rdma_copy(d->pci_path, sizeof d->pci_path, rp);
	const char *base = strrchr(rp, '/');
	if (!base || rdma_parse_pci_addr(base + 1, d->pci)) {
		inv->errors++;
		logf_(log, "warn", "%s: device link %s is not a PCI function", d->name, rp);
		d->pci[0] = '\0';
		return;
	}
	long v;
	if (PATHF(p, "%s/numa_node", rp) && read_int(p, &v) == 0)
		d->numa = v >= 0 && v < 4096 ? (int)v : -1;
	else {
		inv->errors++;
		logf_(log, "warn", "%s: cannot read %s/numa_node; NUMA node unknown", d->name, rp);
	}
	/* PCIe link: all four, or what there is (a VF has none) */
	if (PATHF(p, "%s/current_link_width", rp) && read_int(p, &v) == 0 && v > 0 && v <= 32)
		d->cur_width = (int)v;
	if (PATHF(p, "%s/max_link_width", rp) && read_int(p, &v) == 0 && v > 0 && v <= 32)
		d->max_width = (int)v;
	if (PATHF(p, "%s/current_link_speed", rp) && read_line(p, b, sizeof b) == 0) {
		double g = rdma_parse_gts(b);
		d->cur_gts = g > 0 ? g : 0;
	}
	if (PATHF(p, "%s/max_link_speed", rp) && read_line(p, b, sizeof b) == 0) {
		double g = rdma_parse_gts(b);
		d->max_gts = g > 0 ? g : 0;
	}
	if (!d->cur_width || !d->max_width || !d->cur_gts || !d->max_gts) {
		inv->errors++;
		logf_(log, "warn", "%s (%s): PCIe link width/speed not all readable in %s; the PCIe "
				   "downgrade check is skipped for it",
		      d->name, d->pci, rp);
	}
}

/* The netdev of a PCI function: the one under ROOT/class/net whose device
 * link resolves to it. */
static void netdev_of_pci(const char *root, const char *pci_path, char *out, size_t outlen)
{
	char p[1024], rp[PATH_MAX];
	if (!PATHF(p, "%s/class/net", root))
		return;
	DIR *dir = opendir(p);
	if (!dir)
		return;
	struct dirent *e;
	char best[RDMA_IF_MAX] = "";
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= RDMA_IF_MAX)
			continue;
		char q[1100];
		if (!PATHF(q, "%s/%s/device", p, e->d_name) || !realpath(q, rp))
			continue;
		/* several (e.g. a representor): the smallest name, for a stable answer */
		if (!strcmp(rp, pci_path) && (!best[0] || strcmp(e->d_name, best) < 0))
			rdma_copy(best, sizeof best, e->d_name);
	}
	closedir(dir);
	snprintf(out, outlen, "%s", best);
}

static void scan_port(struct rdma_inventory *inv, struct rdma_dev *d, struct rdma_port *pt,
		      const char *pdir, rdma_log_fn log)
{
	char p[1100], b[128];
	pt->state = -1;
	if (PATHF(p, "%s/state", pdir) && need_line(inv, log, d->name, p, b, sizeof b) == 0) {
		pt->state = rdma_parse_port_state(b, pt->state_name, sizeof pt->state_name);
		if (pt->state < 0) {
			inv->errors++;
			logf_(log, "warn", "%s port %u: malformed state \"%.40s\"", d->name, pt->num, b);
		}
	}
	if (PATHF(p, "%s/link_layer", pdir) && need_line(inv, log, d->name, p, b, sizeof b) == 0)
		rdma_copy(pt->link_layer, sizeof pt->link_layer, b);
	if (PATHF(p, "%s/rate", pdir) && need_line(inv, log, d->name, p, b, sizeof b) == 0) {
		rdma_copy(pt->rate, sizeof pt->rate, b);
		double g = rdma_parse_rate(b);
		pt->gbps = g > 0 ? g : 0;
	}
	/* GIDs: the table has a fixed size; empty entries read as zero */
	if (!PATHF(p, "%s/gids", pdir))
		return;
	DIR *dir = opendir(p);
	if (!dir)
		return;
	struct dirent *e;
	int idx[256], n = 0;
	while ((e = readdir(dir)) && n < 256) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && !*end && v >= 0 && v < 65536)
			idx[n++] = (int)v;
	}
	closedir(dir);
	for (int i = 1; i < n; i++) /* sort: the directory's order is arbitrary */
		for (int j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
			int t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	static const uint8_t zero[16];
	for (int i = 0; i < n && pt->ngids < RDMA_MAX_GIDS; i++) {
		struct rdma_gid *g = &pt->gids[pt->ngids];
		memset(g, 0, sizeof *g);
		if (!PATHF(p, "%s/gids/%d", pdir, idx[i]) || read_line(p, b, sizeof b))
			continue;
		if (rdma_parse_gid(b, g->raw)) {
			inv->errors++;
			logf_(log, "warn", "%s port %u: malformed GID %d \"%.48s\"", d->name, pt->num, idx[i], b);
			continue;
		}
		if (!memcmp(g->raw, zero, 16))
			continue;
		g->index = (uint16_t)idx[i];
		/* the kernel answers EINVAL for an unused entry's type */
		if (PATHF(p, "%s/gid_attrs/types/%d", pdir, idx[i]) && read_line(p, b, sizeof b) == 0)
			rdma_copy(g->type, sizeof g->type, b);
		if (PATHF(p, "%s/gid_attrs/ndevs/%d", pdir, idx[i]) && read_line(p, b, sizeof b) == 0 &&
		    strlen(b) < RDMA_IF_MAX)
			rdma_copy(g->netdev, sizeof g->netdev, b);
		if (g->netdev[0] && !pt->netdev[0])
			rdma_copy(pt->netdev, sizeof pt->netdev, g->netdev);
		pt->ngids++;
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rdma_sysfs_scan(const char *root, struct rdma_inventory *inv, rdma_log_fn log)
{
	char r0[sizeof inv->sysfs];
	rdma_copy(r0, sizeof r0, root && *root ? root : "/sys");
	memset(inv, 0, sizeof *inv);
	memcpy(inv->sysfs, r0, sizeof r0);
	root = inv->sysfs;
	char p[1024];
	if (!PATHF(p, "%s/class/infiniband", root))
		return 0;
	DIR *dir = opendir(p);
	if (!dir) {
		if (errno != ENOENT) {
			inv->errors++;
			logf_(log, "warn", "cannot list %s: %s", p, strerror(errno));
		}
		return 0;
	}
	char *names[RDMA_MAX_DEVS];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= RDMA_NAME_MAX)
			continue;
		if (n == RDMA_MAX_DEVS) {
			logf_(log, "warn", "more than %d RDMA devices under %s: the rest are not watched",
			      RDMA_MAX_DEVS, p);
			break;
		}
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(dir);
	qsort(names, (size_t)n, sizeof names[0], cmp_name);
	for (int i = 0; i < n; i++) {
		struct rdma_dev *d = &inv->devs[inv->ndevs];
		memset(d, 0, sizeof *d);
		rdma_copy(d->name, sizeof d->name, names[i]);
		free(names[i]);
		char devdir[1100];
		struct stat st;
		if (!PATHF(devdir, "%s/%s", p, d->name) || stat(devdir, &st) || !S_ISDIR(st.st_mode)) {
			/* gone between the listing and now (hot unplug), or a dangling link */
			inv->errors++;
			logf_(log, "warn", "%s: listed in %s but not readable (%s); skipped", d->name, p,
			      strerror(errno ? errno : ENOTDIR));
			continue;
		}
		scan_pci(inv, d, devdir, log);
		char pd[1200];
		DIR *ports = PATHF(pd, "%s/ports", devdir) ? opendir(pd) : NULL;
		if (!ports) {
			inv->errors++;
			logf_(log, "warn", "%s: no ports directory (%s); ports unknown", d->name, pd);
		} else {
			uint32_t nums[RDMA_MAX_PORTS];
			int np = 0;
			while ((e = readdir(ports)) && np < RDMA_MAX_PORTS) {
				char *end;
				unsigned long v = strtoul(e->d_name, &end, 10);
				if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && !*end && v < 256)
					nums[np++] = (uint32_t)v;
			}
			closedir(ports);
			for (int a = 1; a < np; a++)
				for (int b = a; b > 0 && nums[b - 1] > nums[b]; b--) {
					uint32_t t = nums[b];
					nums[b] = nums[b - 1];
					nums[b - 1] = t;
				}
			for (int k = 0; k < np; k++) {
				struct rdma_port *pt = &d->ports[d->nports++];
				pt->num = nums[k];
				char pdir[1300];
				if (PATHF(pdir, "%s/%u", pd, nums[k]))
					scan_port(inv, d, pt, pdir, log);
			}
		}
		if (d->pci_path[0]) {
			char nd[RDMA_IF_MAX] = "";
			netdev_of_pci(root, d->pci_path, nd, sizeof nd);
			for (int k = 0; k < d->nports; k++)
				if (!d->ports[k].netdev[0] && nd[0])
					rdma_copy(d->ports[k].netdev, sizeof d->ports[k].netdev, nd);
			if (nd[0])
				rdma_copy(d->netdev, sizeof d->netdev, nd);
		}
		if (!d->netdev[0] && d->nports && d->ports[0].netdev[0])
			rdma_copy(d->netdev, sizeof d->netdev, d->ports[0].netdev);
		inv->ndevs++;
	}
	return inv->ndevs;
}

const struct rdma_dev *rdma_find_dev(const struct rdma_inventory *inv, const char *name)
{
	for (int i = 0; inv && name && i < inv->ndevs; i++)
		if (!strcmp(inv->devs[i].name, name))
			return &inv->devs[i];
	return NULL;
}

const struct rdma_dev *rdma_find_netdev(const struct rdma_inventory *inv, const char *ifname)
{
	for (int i = 0; inv && ifname && i < inv->ndevs; i++) {
		if (!strcmp(inv->devs[i].netdev, ifname))
			return &inv->devs[i];
		for (int k = 0; k < inv->devs[i].nports; k++)
			if (!strcmp(inv->devs[i].ports[k].netdev, ifname))
				return &inv->devs[i];
	}
	return NULL;
}
