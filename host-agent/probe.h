/* pulse-host-agent: the host's RDMA devices, links and kernel QP list,
 * wired into the agent (probe.c). */
#ifndef PULSE_HOST_AGENT_PROBE_H
#define PULSE_HOST_AGENT_PROBE_H

struct agent;
struct rdma_inventory;

/* Devices from sysfs (root: NULL or "/sys" for this host, else a fixture)
 * and, on this host's /sys, libibverbs. log_each: log every problem. */
void probe_discover(struct rdma_inventory *inv, const char *sysfs_root, int log_each);
/* Start-up: discovery and its log lines, PCIe findings (log, JSON line),
 * link watcher, RDMA netlink socket. Never fails: a missing piece is a log
 * line. Call after --out is open. */
void probe_start(struct agent *a);
/* Each cycle, after the hook rings: GPU pairing findings, QP dump check. */
void probe_cycle(struct agent *a);
void probe_stop(struct agent *a);
/* A QP record the interception gave: its device and its process's GPU
 * (fixed-size fields, not necessarily terminated). The first time a
 * (GPU, device) pair is seen it is checked: log line, and a cross_numa
 * finding when the two are on different NUMA nodes. No-op without a probe. */
void probe_note_qp(struct agent *a, const char *dev, size_t devlen, const char *bus, size_t buslen);
/* Metrics text (malloc'd; "" when the probe is not running). Called with
 * the agent lock held. */
char *probe_metrics(struct agent *a);

#endif
