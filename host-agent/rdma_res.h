/* The kernel's RDMA netlink resource dump of QPs (rdma_res.c): what
 * `rdma resource show qp` prints, for every QP on the host, parsed through
 * libnl, and checked against the hook's QP map. */
#ifndef PULSE_HOST_AGENT_RDMA_RES_H
#define PULSE_HOST_AGENT_RDMA_RES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rdma_qp_ent {
	char dev[64];
	uint32_t dev_index;
	uint32_t port;      /* 0 when the kernel gave none */
	uint32_t lqpn;
	uint32_t rqpn;      /* RC/UC peer; valid if has_rqpn */
	uint8_t has_rqpn;
	uint8_t type;       /* enum ib_qp_type: 2 RC, 3 UC, 4 UD, ... 0xff unknown */
	uint8_t state;      /* enum ib_qp_state: 0 RESET 1 INIT 2 RTR 3 RTS ..., 0xff unknown */
	uint8_t has_pid;
	uint32_t pid;       /* the owning process (user QP) */
	char kern[32];      /* the owning kernel module (kernel QP), "" */
};

/* What one netlink datagram of a dump said. */
struct rdma_nl_sink {
	void (*on_qp)(void *ctx, const struct rdma_qp_ent *q);
	void (*on_dev)(void *ctx, uint32_t index, const char *name); /* RDMA_NLDEV_CMD_GET */
	void *ctx;
	int done;           /* NLMSG_DONE seen */
	int error;          /* NLMSG_ERROR: the kernel's -errno (0 none, or an ACK) */
	uint64_t malformed; /* messages or entries that failed to parse */
};
/* Parses every message of a datagram through libnl (nlmsg_parse and
 * nla_parse_nested with the uapi attribute types as policy). Returns the
 * number of QP entries and devices delivered, -1 when the framing broke. */
int rdma_nl_parse_buf(const void *buf, size_t len, struct rdma_nl_sink *sink);

struct rdma_res;
/* Opens the RDMA netlink socket. NULL with a one-line reason in err when
 * it cannot (no RDMA netlink in the kernel, no permission). */
struct rdma_res *rdma_res_open(char *err, size_t errlen);
void rdma_res_close(struct rdma_res *r);
/* Dumps every device's QPs: the entries (malloc'd, *n of them; caller
 * frees). 0, or -1 with err. */
int rdma_res_dump(struct rdma_res *r, struct rdma_qp_ent **out, uint32_t *n, uint64_t *malformed,
		  char *err, size_t errlen);

/* The kernel's QPs against the hook's map (agent.h's struct qp_map). */
struct rdma_res_summary {
	uint32_t kernel_qps;   /* every QP the kernel listed */
	uint32_t kernel_owned; /* owned by a kernel module (no process) */
	uint32_t confirmed;    /* in the hook's map, same process */
	uint32_t missed;       /* a process's QP the hook never reported */
	uint32_t pid_mismatch; /* in the map under another pid (PID namespaces?) */
	uint32_t completed;    /* map entries given the kernel's remote QPN */
	uint32_t hook_only;    /* live in the map, unknown to the kernel */
};
struct qp_map;
/* Compares, fills missing remote QPNs into the map (marking it changed),
 * and writes a "rdma_qps" JSON line with the counts and the missed QPs to
 * f (when not NULL). map may be NULL (no hook rings drained). */
void rdma_res_reconcile(const struct rdma_qp_ent *e, uint32_t n, struct qp_map *map,
			struct rdma_res_summary *out, FILE *f, uint64_t t_ns);

#endif
