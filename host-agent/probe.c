/* pulse-host-agent: what the host itself says about its RDMA NICs, wired
 * into the agent (rdma.h, link_watch.h, rdma_res.h):
 *   at start-up  devices from sysfs and libibverbs, the PCIe findings, the
 *                link watcher for their netdevs (and --netdev ones), the
 *                RDMA netlink socket; every missing piece is one log line
 *                saying what cannot be done, and the agent goes on;
 *   each cycle   the GPU <-> NIC pairings the hook's map shows (a NIC on
 *                another NUMA node than its GPU is a finding), the kernel's
 *                QP dump against the hook's map;
 *   outputs      log lines, "config_finding", "link" and "rdma_qps" JSON
 *                lines (so the analyzer gets them through --analyzer), and
 *                metrics. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <net/if.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/host_event.h"

#include "agent.h"
#include "link_watch.h"
#include "probe.h"
#include "rdma.h"
#include "rdma_res.h"

#define PROBE_MAX_FINDINGS 64
#define PROBE_MAX_PAIRS 256
#define PROBE_RESCAN_NS 2000000000ull /* devices looked for again every 2 s */

struct probe {
	struct rdma_inventory inv;
	struct rdma_finding find[PROBE_MAX_FINDINGS];
	int nfind;
	int nemitted;                /* findings logged and written so far */
	struct { char gpu[16]; char nic[64]; } pairs[PROBE_MAX_PAIRS];
	int npairs;
	struct link_watch *lw;
	char nd_name[LINK_WATCH_MAX][16];
	char nd_dev[LINK_WATCH_MAX][64];
	int nd_up[LINK_WATCH_MAX];   /* -1 unknown (absent) */
	uint64_t nd_down_events[LINK_WATCH_MAX], nd_up_events[LINK_WATCH_MAX];
	int nnd;
	struct rdma_res *res;
	int res_ok;                  /* last dump worked */
	int res_logged;              /* its failure was logged */
	uint64_t res_dumps, res_failures, res_malformed;
	struct rdma_res_summary sum;
	int have_sum;
	const char *sysfs_root;      /* --sysfs-root */
	uint64_t next_rescan_ns;     /* monotonic */
	uint64_t devices_lost, devices_found; /* between rescans */
	pthread_mutex_t mu;          /* link state (watcher thread) vs metrics */
	const char *host;
};

static struct probe g_probe;

static void plog(const char *level, const char *msg)
{
	agent_log(level, "%s", msg);
}

static void emit_finding(struct probe *p, const struct rdma_finding *f)
{
	LOGW("configuration finding %s: %s", rdma_finding_names[f->kind], f->detail);
	FILE *o = jsonl_begin();
	if (o) {
		rdma_finding_json(o, f, p->host, agent_realtime_ns());
		jsonl_end();
	}
}

static int nd_index(struct probe *p, const char *ifname)
{
	for (int i = 0; i < p->nnd; i++)
		if (!strcmp(p->nd_name[i], ifname))
			return i;
	return -1;
}

static void link_line(struct probe *p, const char *ifname, const char *dev, const struct link_ev *ev,
		      uint64_t t_ns, const char *what)
{
	struct pulse_link_event e;
	memset(&e, 0, sizeof e);
	e.t_ns = t_ns;
	snprintf(e.host, sizeof e.host, "%s", p->host);
	snprintf(e.netdev, sizeof e.netdev, "%s", ifname);
	snprintf(e.dev, sizeof e.dev, "%s", dev);
	snprintf(e.event, sizeof e.event, "%s", what);
	snprintf(e.state, sizeof e.state, "%s", !ev ? "absent" : ev->deleted ? "gone" : ev->up ? "up" : "down");
	e.ifindex = ev ? ev->ifindex : 0;
	e.admin_up = ev && (ev->flags & IFF_UP);
	e.running = ev && (ev->flags & IFF_RUNNING);
	e.operstate = ev ? ev->operstate : -1;
	e.carrier = ev ? ev->carrier : -1;
	agent_link_line(&e);
}

void agent_link_line(const struct pulse_link_event *e)
{
	char *s = pulse_link_event_to_json(e);
	if (!s) {
		LOGE("out of memory: a link line lost");
		return;
	}
	FILE *o = jsonl_begin();
	if (o) {
		fputs(s, o);
		fputc('\n', o);
		jsonl_end();
	}
	free(s);
}

static void on_link_event(void *ctx, const char *ifname, const char *dev, const struct link_ev *ev,
			  uint64_t t_ns)
{
	struct probe *p = ctx;
	pthread_mutex_lock(&p->mu);
	int i = nd_index(p, ifname);
	if (i >= 0) {
		p->nd_up[i] = ev->deleted ? -1 : ev->up;
		if (ev->up)
			p->nd_up_events[i]++;
		else
			p->nd_down_events[i]++;
	}
	pthread_mutex_unlock(&p->mu);
	if (ev->up)
		LOGI("link %s%s%s%s: up", ifname, dev[0] ? " (" : "", dev, dev[0] ? ")" : "");
	else if (ev->deleted)
		LOGW("link %s%s%s%s: gone (netdev removed)", ifname, dev[0] ? " (" : "", dev, dev[0] ? ")" : "");
	else
		LOGW("link %s%s%s%s: down (admin %s, %s)", ifname, dev[0] ? " (" : "", dev, dev[0] ? ")" : "",
		     (ev->flags & IFF_UP) ? "up" : "down", (ev->flags & IFF_RUNNING) ? "running" : "no carrier");
	link_line(p, ifname, dev, ev, t_ns, "change");
}

static void on_link_initial(void *ctx, const char *ifname, const char *dev, const struct link_ev *ev)
{
	struct probe *p = ctx;
	pthread_mutex_lock(&p->mu);
	int i = nd_index(p, ifname);
	if (i >= 0)
		p->nd_up[i] = ev ? ev->up : -1;
	pthread_mutex_unlock(&p->mu);
	if (!ev)
		LOGW("link %s%s%s%s: no such netdev now; watched in case it appears", ifname,
		     dev[0] ? " (" : "", dev, dev[0] ? ")" : "");
	else
		LOGI("link %s%s%s%s: watching, now %s", ifname, dev[0] ? " (" : "", dev, dev[0] ? ")" : "",
		     ev->up ? "up" : "down");
	link_line(p, ifname, dev, ev, agent_realtime_ns(), "initial");
}

void probe_discover(struct rdma_inventory *inv, const char *sysfs_root, int log_each)
{
	const char *root = sysfs_root ? sysfs_root : "/sys";
	rdma_sysfs_scan(root, inv, log_each ? plog : NULL);
	/* libibverbs reads the running kernel's devices: only with the real /sys */
	if (!sysfs_root || !strcmp(sysfs_root, "/sys")) {
		if (rdma_verbs_scan(inv, log_each ? plog : NULL) < 0 && log_each && inv->ndevs)
			LOGW("libibverbs: %s: ports and GIDs from sysfs only", inv->verbs_err);
	}
}

void probe_start(struct agent *a)
{
	struct probe *p = &g_probe;
	memset(p, 0, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	p->host = a->host_name;
	a->probe = p;
	p->sysfs_root = a->opt.sysfs_root;
	probe_discover(&p->inv, a->opt.sysfs_root, 1);
	p->next_rescan_ns = agent_mono_ns() + PROBE_RESCAN_NS;
	if (p->inv.ndevs == 0) {
		LOGW("no RDMA device found (%s/class/infiniband is empty%s%s): NICs cannot be mapped to "
		     "netdevs, PCI or NUMA, no link state or PCIe check for them; QPs are tied to NICs by the "
		     "--device/--sim names only",
		     p->inv.sysfs, p->inv.verbs_ran ? "; libibverbs: " : "",
		     !p->inv.verbs_ran ? "" : p->inv.verbs_err[0] ? p->inv.verbs_err : "no device");
	} else {
		for (int i = 0; i < p->inv.ndevs; i++) {
			const struct rdma_dev *d = &p->inv.devs[i];
			int roce2 = 0;
			for (int k = 0; k < d->nports; k++)
				for (int g = 0; g < d->ports[k].ngids; g++)
					roce2 += !strcmp(d->ports[k].gids[g].type, "RoCE v2");
			LOGI("RDMA device %s: netdev %s, PCI %s, NUMA %d, PCIe x%d/x%d %.1f/%.1f GT/s, %d port(s), "
			     "port 1 %s %s %.0f Gb/s, %d RoCE v2 GID(s)",
			     d->name, d->netdev[0] ? d->netdev : "-", d->pci[0] ? d->pci : "-", d->numa,
			     d->cur_width, d->max_width, d->cur_gts, d->max_gts, d->nports,
			     d->nports ? d->ports[0].state_name : "-", d->nports ? d->ports[0].link_layer : "-",
			     d->nports ? d->ports[0].gbps : 0, roce2);
		}
	}
	p->nfind = rdma_findings_pcie(&p->inv, p->find, PROBE_MAX_FINDINGS);
	for (int i = 0; i < p->nfind; i++)
		emit_finding(p, &p->find[i]);
	p->nemitted = p->nfind;

	/* link state: the devices' netdevs, then --netdev ones */
	const char *names[LINK_WATCH_MAX], *devs[LINK_WATCH_MAX];
	for (int i = 0; i < p->inv.ndevs && p->nnd < LINK_WATCH_MAX; i++) {
		const struct rdma_dev *d = &p->inv.devs[i];
		if (!d->netdev[0] || nd_index(p, d->netdev) >= 0)
			continue;
		rdma_copy(p->nd_name[p->nnd], sizeof p->nd_name[0], d->netdev);
		rdma_copy(p->nd_dev[p->nnd], sizeof p->nd_dev[0], d->name);
		p->nnd++;
	}
	for (int i = 0; i < a->opt.nnetdevs && p->nnd < LINK_WATCH_MAX; i++) {
		if (nd_index(p, a->opt.netdevs[i]) >= 0)
			continue;
		rdma_copy(p->nd_name[p->nnd], sizeof p->nd_name[0], a->opt.netdevs[i]);
		const struct rdma_dev *d = rdma_find_netdev(&p->inv, a->opt.netdevs[i]);
		rdma_copy(p->nd_dev[p->nnd], sizeof p->nd_dev[0], d ? d->name : "");
		p->nnd++;
	}
	for (int i = 0; i < p->nnd; i++) {
		names[i] = p->nd_name[i];
		devs[i] = p->nd_dev[i];
		p->nd_up[i] = -1;
	}
	char err[300];
	if (a->opt.no_netlink) {
		LOGI("--no-netlink: link state and the kernel's QP list are not watched");
	} else {
		if (p->nnd == 0) {
			LOGI("no netdev to watch (no RDMA device with a netdev, no --netdev): no link events");
		} else {
			struct link_watch_cfg lc = {.names = names, .devs = devs, .n = p->nnd,
						    .on_event = on_link_event, .on_initial = on_link_initial,
						    .ctx = p, .now = agent_realtime_ns};
			p->lw = link_watch_start(&lc, err, sizeof err);
			if (!p->lw)
				LOGW("%s: link up/down of the NICs' netdevs is not reported", err);
		}
		p->res = rdma_res_open(err, sizeof err);
		if (!p->res && a->opt.no_hooks)
			LOGW("%s: the host's QPs (QPN -> process) are not listed", err);
		else if (!p->res)
			LOGW("%s: cannot see QPs the interception missed (processes libpulse-hook.so was not "
			     "loaded into, QPs made past verbs); the interception map is not checked",
			     err);
	}
}

/* GPU <-> NIC pairs as the interception records show them: each QP record
 * carries the device it was made on and its process's GPU (the PCI bus id
 * the hook also puts in COMM_INIT). Checked as the records arrive, so a
 * process that has already exited is paired all the same. */
void probe_note_qp(struct agent *a, const char *devf, size_t devlen, const char *busf, size_t buslen)
{
	struct probe *p = a->probe;
	if (!p)
		return;
	char dev[64], bus[32];
	size_t dl = strnlen(devf, devlen < sizeof dev ? devlen : sizeof dev - 1);
	size_t bl = strnlen(busf, buslen < sizeof bus ? buslen : sizeof bus - 1);
	memcpy(dev, devf, dl);
	dev[dl] = '\0';
	memcpy(bus, busf, bl);
	bus[bl] = '\0';
	if (!dev[0] || !bus[0])
		return;
	for (int k = 0; k < p->npairs; k++)
		if (!strcmp(p->pairs[k].gpu, bus) && !strcmp(p->pairs[k].nic, dev))
			return;
	if (p->npairs == PROBE_MAX_PAIRS)
		return;
	rdma_copy(p->pairs[p->npairs].gpu, sizeof p->pairs[0].gpu, bus);
	rdma_copy(p->pairs[p->npairs].nic, sizeof p->pairs[0].nic, dev);
	p->npairs++;
	struct rdma_finding f;
	char detail[400];
	int rc = rdma_pair_gpu(&p->inv, bus, dev, &f, detail, sizeof detail);
	if (rc < 0) {
		LOGI("GPU %s uses %s: %s; no NUMA check", bus, dev, detail);
		return;
	}
	LOGI("GPU pairing: %s", detail);
	if (rc == 1) {
		/* logged and written at the next probe_cycle: the caller
		 * (hooks_apply) may hold the output stream */
		pthread_mutex_lock(&p->mu);
		if (p->nfind < PROBE_MAX_FINDINGS)
			p->find[p->nfind++] = f;
		pthread_mutex_unlock(&p->mu);
	}
}

/* Devices that went away (hot unplug, driver unbound, VF removed) or came
 * since the last scan: one line each, counted; a new one gets its PCIe
 * check. The inventory is replaced (pairings of a lost device stay known). */
static void rescan(struct probe *p)
{
	struct rdma_inventory *n = malloc(sizeof *n);
	if (!n)
		return;
	probe_discover(n, p->sysfs_root, 0);
	for (int i = 0; i < p->inv.ndevs; i++) {
		const struct rdma_dev *d = &p->inv.devs[i];
		if (rdma_find_dev(n, d->name))
			continue;
		p->devices_lost++;
		LOGW("RDMA device %s (PCI %s, netdev %s) is gone: its link and QPs are no longer reported",
		     d->name, d->pci[0] ? d->pci : "-", d->netdev[0] ? d->netdev : "-");
	}
	struct rdma_finding f[8];
	for (int i = 0; i < n->ndevs; i++) {
		const struct rdma_dev *d = &n->devs[i];
		if (rdma_find_dev(&p->inv, d->name))
			continue;
		p->devices_found++;
		LOGI("RDMA device %s appeared: PCI %s, NUMA %d, netdev %s", d->name, d->pci[0] ? d->pci : "-",
		     d->numa, d->netdev[0] ? d->netdev : "-");
		struct rdma_inventory *one = calloc(1, sizeof *one);
		if (!one)
			continue;
		one->ndevs = 1;
		one->devs[0] = *d;
		int nf = rdma_findings_pcie(one, f, 8);
		free(one);
		pthread_mutex_lock(&p->mu);
		for (int k = 0; k < nf && p->nfind < PROBE_MAX_FINDINGS; k++) {
			int dup = 0; /* a device that comes back: its findings are known */
			for (int j = 0; j < p->nfind && !dup; j++)
				dup = p->find[j].kind == f[k].kind && !strcmp(p->find[j].nic, f[k].nic) &&
				      !strcmp(p->find[j].gpu, f[k].gpu);
			if (!dup)
				p->find[p->nfind++] = f[k];
		}
		pthread_mutex_unlock(&p->mu);
	}
	pthread_mutex_lock(&p->mu);
	uint64_t errs = p->inv.errors;
	p->inv = *n;
	p->inv.errors += errs;
	pthread_mutex_unlock(&p->mu);
	free(n);
}

void probe_cycle(struct agent *a)
{
	struct probe *p = a->probe;
	if (!p)
		return;
	uint64_t now = agent_mono_ns();
	if (now >= p->next_rescan_ns) {
		p->next_rescan_ns = now + PROBE_RESCAN_NS;
		rescan(p);
	}
	while (p->nemitted < p->nfind) /* pairing findings since the last cycle */
		emit_finding(p, &p->find[p->nemitted++]);
	if (!p->res)
		return;
	struct rdma_qp_ent *e = NULL;
	uint32_t n = 0;
	char err[300];
	uint64_t bad = 0;
	int rc = rdma_res_dump(p->res, &e, &n, &bad, err, sizeof err);
	pthread_mutex_lock(&p->mu);
	p->res_dumps++;
	p->res_malformed += bad;
	if (rc)
		p->res_failures++;
	pthread_mutex_unlock(&p->mu);
	if (bad)
		LOGW("RDMA netlink: %llu malformed message(s) or entries in the QP dump; skipped",
		     (unsigned long long)bad);
	if (rc) {
		if (!p->res_logged)
			LOGW("%s: the interception map is not checked against the kernel's QPs (logged once; "
			     "retried every cycle)",
			     err);
		p->res_logged = 1;
		p->res_ok = 0;
		return;
	}
	if (p->res_logged)
		LOGI("RDMA netlink QP dump works again");
	p->res_logged = 0;
	p->res_ok = 1;
	struct rdma_res_summary s;
	struct qp_map *map = a->hooks ? &a->hooks->map : NULL;
	rdma_res_reconcile(e, n, map, &s, NULL, 0);
	if (!p->have_sum || memcmp(&s, &p->sum, sizeof s)) {
		if (s.missed > (p->have_sum ? p->sum.missed : 0))
			LOGW("the kernel lists %u QP(s) of processes the hook did not report (of %u user QPs)",
			     s.missed, s.kernel_qps - s.kernel_owned);
		FILE *o = jsonl_begin();
		if (o) {
			rdma_res_reconcile(e, n, map, &s, o, agent_realtime_ns());
			jsonl_end();
		}
		pthread_mutex_lock(&p->mu);
		p->sum = s;
		p->have_sum = 1;
		pthread_mutex_unlock(&p->mu);
	}
	free(e);
}

void probe_stop(struct agent *a)
{
	struct probe *p = a->probe;
	if (!p)
		return;
	if (p->lw) {
		struct link_watch_stats st;
		link_watch_get_stats(p->lw, &st);
		LOGI("links: %llu messages, %llu state changes reported, %llu malformed, %llu receive errors",
		     (unsigned long long)st.messages, (unsigned long long)st.events,
		     (unsigned long long)st.malformed, (unsigned long long)st.recv_errors);
		link_watch_stop(p->lw);
		p->lw = NULL;
	}
	rdma_res_close(p->res);
	p->res = NULL;
	pthread_mutex_lock(&a->lock);
	a->probe = NULL;
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_destroy(&p->mu);
}

static void mput(char **b, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void mput(char **b, size_t *len, size_t *cap, const char *fmt, ...)
{
	if (!*b)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(*b + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return;
		}
		size_t nc = (*cap + (size_t)n) * 2;
		char *q = realloc(*b, nc);
		if (!q) {
			free(*b);
			*b = NULL;
			return;
		}
		*b = q;
		*cap = nc;
	}
}

/* Label values here are device and netdev names and PCI addresses:
 * [A-Za-z0-9_.:-], nothing to escape; anything else is replaced. */
static const char *lv(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	for (; *s && o + 1 < cap; s++)
		out[o++] = (*s == '"' || *s == '\\' || *s == '\n') ? '_' : *s;
	out[o] = '\0';
	return out;
}

char *probe_metrics(struct agent *a)
{
	struct probe *p = a->probe;
	size_t cap = 2048, len = 0;
	char *b = malloc(cap);
	if (!b)
		return NULL;
	b[0] = '\0';
	if (!p)
		return b;
	char l1[80], l2[80];
	pthread_mutex_lock(&p->mu);
#define PFAM(name, type, help) mput(&b, &len, &cap, "# TYPE %s %s\n# HELP %s %s\n", name, type, name, help)
	PFAM("pulse_agent_rdma_devices", "gauge", "RDMA devices found (sysfs and libibverbs)");
	mput(&b, &len, &cap, "pulse_agent_rdma_devices %d\n", p->inv.ndevs);
	PFAM("pulse_agent_rdma_device_numa_node", "gauge", "NUMA node of each RDMA device (-1 unknown)");
	for (int i = 0; i < p->inv.ndevs; i++)
		mput(&b, &len, &cap, "pulse_agent_rdma_device_numa_node{dev=\"%s\",pci=\"%s\"} %d\n",
		     lv(p->inv.devs[i].name, l1, sizeof l1), lv(p->inv.devs[i].pci, l2, sizeof l2),
		     p->inv.devs[i].numa);
	PFAM("pulse_agent_rdma_devices_lost", "counter", "RDMA devices that went away while the agent ran");
	mput(&b, &len, &cap, "pulse_agent_rdma_devices_lost_total %llu\n", (unsigned long long)p->devices_lost);
	PFAM("pulse_agent_rdma_devices_found", "counter", "RDMA devices that appeared while the agent ran");
	mput(&b, &len, &cap, "pulse_agent_rdma_devices_found_total %llu\n", (unsigned long long)p->devices_found);
	PFAM("pulse_agent_rdma_discovery_errors", "counter", "sysfs/libibverbs entries that could not be read");
	mput(&b, &len, &cap, "pulse_agent_rdma_discovery_errors_total %llu\n", (unsigned long long)p->inv.errors);
	PFAM("pulse_agent_config_finding", "gauge",
	     "Configuration findings at start-up and from the GPU pairing: PCIe link below capability, "
	     "a NIC on another NUMA node than its GPU");
	for (int i = 0; i < p->nfind; i++) {
		const struct rdma_finding *f = &p->find[i];
		mput(&b, &len, &cap, "pulse_agent_config_finding{kind=\"%s\",nic=\"%s\",gpu=\"%s\"} 1\n",
		     rdma_finding_names[f->kind], lv(f->nic, l1, sizeof l1), lv(f->gpu, l2, sizeof l2));
	}
	PFAM("pulse_agent_netdev_up", "gauge", "1 when the watched netdev is up and running, 0 down, -1 absent");
	for (int i = 0; i < p->nnd; i++)
		mput(&b, &len, &cap, "pulse_agent_netdev_up{netdev=\"%s\",dev=\"%s\"} %d\n",
		     lv(p->nd_name[i], l1, sizeof l1), lv(p->nd_dev[i], l2, sizeof l2), p->nd_up[i]);
	PFAM("pulse_agent_link_events", "counter", "Link state changes of watched netdevs");
	for (int i = 0; i < p->nnd; i++) {
		mput(&b, &len, &cap, "pulse_agent_link_events_total{netdev=\"%s\",state=\"down\"} %llu\n",
		     lv(p->nd_name[i], l1, sizeof l1), (unsigned long long)p->nd_down_events[i]);
		mput(&b, &len, &cap, "pulse_agent_link_events_total{netdev=\"%s\",state=\"up\"} %llu\n",
		     l1, (unsigned long long)p->nd_up_events[i]);
	}
	if (p->lw) {
		struct link_watch_stats st;
		link_watch_get_stats(p->lw, &st);
		PFAM("pulse_agent_link_messages_malformed", "counter", "rtnetlink messages that failed to parse");
		mput(&b, &len, &cap, "pulse_agent_link_messages_malformed_total %llu\n",
		     (unsigned long long)st.malformed);
	}
	PFAM("pulse_agent_rdma_netlink_up", "gauge", "1 when the last RDMA netlink QP dump worked");
	mput(&b, &len, &cap, "pulse_agent_rdma_netlink_up %d\n", p->res && p->res_ok);
	PFAM("pulse_agent_rdma_netlink_dump_failures", "counter", "RDMA netlink QP dumps that failed");
	mput(&b, &len, &cap, "pulse_agent_rdma_netlink_dump_failures_total %llu\n",
	     (unsigned long long)p->res_failures);
	PFAM("pulse_agent_rdma_netlink_malformed", "counter", "RDMA netlink messages or entries that failed to parse");
	mput(&b, &len, &cap, "pulse_agent_rdma_netlink_malformed_total %llu\n",
	     (unsigned long long)p->res_malformed);
	if (p->have_sum) {
		PFAM("pulse_agent_kernel_qps", "gauge", "QPs the kernel lists (RDMA netlink)");
		mput(&b, &len, &cap, "pulse_agent_kernel_qps %u\n", p->sum.kernel_qps);
		PFAM("pulse_agent_kernel_qps_hook_missed", "gauge", "Processes' QPs the hook did not report");
		mput(&b, &len, &cap, "pulse_agent_kernel_qps_hook_missed %u\n", p->sum.missed);
		PFAM("pulse_agent_kernel_qps_pid_mismatch", "gauge", "QPs the hook reported under another pid");
		mput(&b, &len, &cap, "pulse_agent_kernel_qps_pid_mismatch %u\n", p->sum.pid_mismatch);
	}
#undef PFAM
	pthread_mutex_unlock(&p->mu);
	return b;
}
