/* pulse-host-agent on a real host: what the machine itself says about its
 * RDMA NICs (issue 14). One file per source:
 *   rdma_sysfs.c  devices, ports, GIDs, netdevs, PCI, NUMA, PCIe link from
 *                 sysfs under a root path (tests give a fixture tree)
 *   rdma_verbs.c  the same devices through libibverbs (ports, state, GIDs with
 *                 their type, link layer, speed): on the real /sys only
 *   rdma_find.c   configuration findings: PCIe link below capability, a NIC
 *                 on another NUMA node than its GPU; --list-devices
 *   link_watch.c  rtnetlink link events (libnl-route-3) for the NICs' netdevs
 *   rdma_res.c    the kernel's RDMA netlink QP dump (libnl-3): QP -> process
 *                 for every QP on the host, checked against the hook's map
 * Every piece that is missing (no device, no RDMA netlink, no permission)
 * is said in one log line, with what it costs, and the agent carries on. */
#ifndef PULSE_HOST_AGENT_RDMA_H
#define PULSE_HOST_AGENT_RDMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RDMA_MAX_DEVS 32
#define RDMA_MAX_PORTS 4
#define RDMA_MAX_GIDS 16 /* non-zero GIDs kept per port */
#define RDMA_NAME_MAX 64
#define RDMA_IF_MAX 16   /* IFNAMSIZ */

struct rdma_gid {
	uint16_t index;
	uint8_t raw[16];
	char type[16];            /* "RoCE v2", "IB/RoCE v1", "IB", "" unknown */
	char netdev[RDMA_IF_MAX]; /* the GID's netdev (RoCE), "" none */
};

struct rdma_port {
	uint32_t num;
	int state;                /* 4 ACTIVE (ibv_port_state numbering), -1 unknown */
	char state_name[16];
	char link_layer[16];      /* "Ethernet", "InfiniBand", "" unknown */
	char rate[48];            /* sysfs text, e.g. "100 Gb/sec (4X EDR)" */
	double gbps;              /* 0 unknown */
	char netdev[RDMA_IF_MAX];
	int ngids;
	struct rdma_gid gids[RDMA_MAX_GIDS];
};

struct rdma_dev {
	char name[RDMA_NAME_MAX];
	char pci[16];             /* "0000:3b:00.0", "" unknown */
	char pci_path[512];       /* resolved device directory (PCIe topology) */
	int numa;                 /* -1 unknown or none */
	char netdev[RDMA_IF_MAX]; /* first port's netdev */
	int cur_width, max_width; /* lanes, 0 unknown */
	double cur_gts, max_gts;  /* GT/s, 0 unknown */
	int from_verbs;           /* libibverbs listed it */
	int nports;
	struct rdma_port ports[RDMA_MAX_PORTS];
};

struct rdma_inventory {
	char sysfs[512];          /* the sysfs root ("/sys", or a fixture) */
	int ndevs;
	struct rdma_dev devs[RDMA_MAX_DEVS];
	uint64_t errors;          /* unreadable or malformed sysfs entries (logged) */
	int verbs_ran;            /* libibverbs was asked */
	int verbs_ndevs;
	char verbs_err[160];
};

/* ---- parsers of sysfs values (fuzzed: tests/fuzz/fuzz_rdma_parse.c) ---- */
/* "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s": GT/s, or -1. */
double rdma_parse_gts(const char *s);
/* "100 Gb/sec (4X EDR)", "25 Gb/sec (1X EDR)": Gb/s, or -1. */
double rdma_parse_rate(const char *s);
/* "4: ACTIVE": 4 and name "ACTIVE"; -1 when malformed. */
int rdma_parse_port_state(const char *s, char *name, size_t namelen);
/* "fe80:0000:0000:0000:0202:c9ff:fe00:0001" -> 16 bytes; 0, or -1. */
int rdma_parse_gid(const char *s, uint8_t out[16]);
/* "0000:3b:00.0" (also "00000000:3b:00.0", upper case): normalised to
 * "0000:3b:00.0"; 0, or -1. */
int rdma_parse_pci_addr(const char *s, char out[16]);

/* ---- rdma_sysfs.c ---- */
/* Copies src into dst (len bytes), cut short if need be; always terminated. */
void rdma_copy(char *dst, size_t len, const char *src);
/* s as a JSON string (quoted, escaped). */
/* log: one line per problem (level "warn"/"info"); NULL: silent. */
typedef void (*rdma_log_fn)(const char *level, const char *msg);
/* Fills inv from ROOT/class/infiniband (ROOT: "/sys" or a fixture tree):
 * ports, GIDs and types, netdevs (the GID's netdev, else the netdev whose
 * `device` link is the same PCI function), PCI address, NUMA node, PCIe
 * link. Returns the number of devices; unreadable files are logged and
 * counted in inv->errors, never fatal. */
int rdma_sysfs_scan(const char *root, struct rdma_inventory *inv, rdma_log_fn log);
/* NUMA node of a PCI function (ROOT/bus/pci/devices/ADDR/numa_node), -1
 * unknown; its resolved directory into path (may be NULL). */
int rdma_sysfs_pci_numa(const char *root, const char *pci, char *path, size_t pathlen);
const struct rdma_dev *rdma_find_dev(const struct rdma_inventory *inv, const char *name);
const struct rdma_dev *rdma_find_netdev(const struct rdma_inventory *inv, const char *ifname);

/* ---- rdma_verbs.c ---- */
/* Lists devices through libibverbs and merges ports, state, GIDs (with
 * ibv_query_gid_ex's type), link layer and speed into inv (adding devices
 * sysfs did not show). Returns the number libibverbs listed, -1 when it
 * could not (inv->verbs_err says why). */
int rdma_verbs_scan(struct rdma_inventory *inv, rdma_log_fn log);

/* ---- rdma_find.c ---- */
enum rdma_finding_kind { FIND_PCIE_WIDTH, FIND_PCIE_SPEED, FIND_CROSS_NUMA, FIND_KINDS };
extern const char *const rdma_finding_names[FIND_KINDS];
struct rdma_finding {
	enum rdma_finding_kind kind;
	char nic[RDMA_NAME_MAX];
	char gpu[16];             /* cross_numa: the GPU's PCI bus id */
	int nic_numa, gpu_numa;
	char detail[256];
};
/* PCIe link below capability (width, speed) for every device: appends to
 * out (at most max); returns how many were added. */
int rdma_findings_pcie(const struct rdma_inventory *inv, struct rdma_finding *out, int max);
/* The pairing of a GPU (PCI bus id, as the hook's COMM_INIT gives it) with
 * the NIC its QPs use: NUMA nodes and PCIe distance in detail; returns 1
 * with *f filled when the two are on different NUMA nodes, 0 when not (or
 * unknown: detail says which), -1 when the NIC is not in the inventory. */
int rdma_pair_gpu(const struct rdma_inventory *inv, const char *gpu_bus_id, const char *nic,
		  struct rdma_finding *f, char *detail, size_t detaillen);
/* PCIe hops between two resolved device directories (through their
 * deepest common bridge), -1 when they hang off different root complexes. */
int rdma_pcie_hops(const char *a, const char *b);
/* --list-devices: what was found, one block per device. */
void rdma_print_inventory(FILE *f, const struct rdma_inventory *inv, const struct rdma_finding *fs,
			  int nf);
/* One finding as a "config_finding" JSON line (host: --host-name). */
void rdma_finding_json(FILE *f, const struct rdma_finding *x, const char *host, uint64_t t_ns);

#endif
