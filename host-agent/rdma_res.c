/* QP ownership from the kernel: the RDMA netlink resource dump
 * (RDMA_NLDEV_CMD_RES_QP_GET, per device from RDMA_NLDEV_CMD_GET), as
 * `rdma resource show qp` reads it: QPN, process, state, type and the peer
 * QPN of RC QPs, for every QP on the host, including those of processes the
 * hook never loaded into. Messages are parsed through libnl with the uapi
 * attribute types (<rdma/rdma_netlink.h>) as policy. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>

#include "pulse/json_put.h"
#include "agent.h"
#include "rdma.h"
#include "rdma_res.h"

#define NLDEV_MAX (RDMA_NLDEV_ATTR_MAX - 1)
#define RDMA_DEVS_MAX_DUMP 64

static struct nla_policy nldev_policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_DEV_NAME] = { .type = NLA_STRING, .maxlen = 64 },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_QP] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_QP_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_LQPN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_RQPN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_TYPE] = { .type = NLA_U8 },
	[RDMA_NLDEV_ATTR_RES_STATE] = { .type = NLA_U8 },
	[RDMA_NLDEV_ATTR_RES_PID] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_KERN_NAME] = { .type = NLA_STRING, .maxlen = 64 },
};

/* A string attribute: terminated within its length, not empty. */
static int get_str(struct nlattr *a, char *out, size_t outlen)
{
	int l = nla_len(a);
	if (l <= 0)
		return -1;
	const char *s = nla_data(a);
	size_t n = strnlen(s, (size_t)l);
	if (n == (size_t)l || n == 0)
		return -1;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static void parse_qp_msg(struct nlmsghdr *h, struct rdma_nl_sink *s, int *count)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	if (nlmsg_parse(h, 0, tb, NLDEV_MAX, nldev_policy) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
		s->malformed++;
		return;
	}
	struct rdma_qp_ent base;
	memset(&base, 0, sizeof base);
	base.dev_index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_DEV_NAME] && get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], base.dev, sizeof base.dev)) {
		s->malformed++;
		return;
	}
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		base.port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (!tb[RDMA_NLDEV_ATTR_RES_QP])
		return; /* a device with no QP */
	struct nlattr *ent;
	int rem;
	nla_for_each_nested(ent, tb[RDMA_NLDEV_ATTR_RES_QP], rem)
	{
		if (nla_type(ent) != RDMA_NLDEV_ATTR_RES_QP_ENTRY) {
			s->malformed++;
			continue;
		}
		struct nlattr *e[RDMA_NLDEV_ATTR_MAX];
		if (nla_parse_nested(e, NLDEV_MAX, ent, nldev_policy) < 0 || !e[RDMA_NLDEV_ATTR_RES_LQPN]) {
			s->malformed++;
			continue;
		}
		struct rdma_qp_ent q = base;
		q.lqpn = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_LQPN]);
		if (q.lqpn > 0xffffff) {
			s->malformed++;
			continue;
		}
		if (e[RDMA_NLDEV_ATTR_PORT_INDEX])
			q.port = nla_get_u32(e[RDMA_NLDEV_ATTR_PORT_INDEX]);
		if (e[RDMA_NLDEV_ATTR_RES_RQPN]) {
			q.rqpn = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_RQPN]) & 0xffffff;
			q.has_rqpn = 1;
		}
		q.type = e[RDMA_NLDEV_ATTR_RES_TYPE] ? nla_get_u8(e[RDMA_NLDEV_ATTR_RES_TYPE]) : 0xff;
		q.state = e[RDMA_NLDEV_ATTR_RES_STATE] ? nla_get_u8(e[RDMA_NLDEV_ATTR_RES_STATE]) : 0xff;
		if (e[RDMA_NLDEV_ATTR_RES_PID]) {
			q.pid = nla_get_u32(e[RDMA_NLDEV_ATTR_RES_PID]);
			q.has_pid = 1;
		}
		if (e[RDMA_NLDEV_ATTR_RES_KERN_NAME] &&
		    get_str(e[RDMA_NLDEV_ATTR_RES_KERN_NAME], q.kern, sizeof q.kern)) {
			s->malformed++;
			continue;
		}
		(*count)++;
		if (s->on_qp)
			s->on_qp(s->ctx, &q);
	}
}

static void parse_dev_msg(struct nlmsghdr *h, struct rdma_nl_sink *s, int *count)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	char name[64];
	if (nlmsg_parse(h, 0, tb, NLDEV_MAX, nldev_policy) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !tb[RDMA_NLDEV_ATTR_DEV_NAME] || get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], name, sizeof name)) {
		s->malformed++;
		return;
	}
	(*count)++;
	if (s->on_dev)
		s->on_dev(s->ctx, nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), name);
}

int rdma_nl_parse_buf(const void *buf, size_t len, struct rdma_nl_sink *s)
{
	int count = 0;
	const uint8_t *p = buf;
	size_t left = len;
	while (left >= sizeof(struct nlmsghdr)) {
		struct nlmsghdr *h = (struct nlmsghdr *)p;
		if (h->nlmsg_len < sizeof *h || h->nlmsg_len > left) {
			s->malformed++;
			return -1;
		}
		if (h->nlmsg_type == NLMSG_DONE) {
			s->done = 1;
		} else if (h->nlmsg_type == NLMSG_ERROR) {
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				s->error = e->error;
			} else {
				s->malformed++;
			}
			s->done = 1;
		} else if (h->nlmsg_type == RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET)) {
			parse_qp_msg(h, s, &count);
		} else if (h->nlmsg_type == RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)) {
			parse_dev_msg(h, s, &count);
		} else if (h->nlmsg_type >= NLMSG_MIN_TYPE) {
			s->malformed++; /* not a reply to what we ask */
		}
		size_t step = NLMSG_ALIGN(h->nlmsg_len);
		if (step >= left)
			break;
		p += step;
		left -= step;
	}
	return count;
}

/* ---- the dump ---- */

struct rdma_res {
	struct nl_sock *sk;
};

struct rdma_res *rdma_res_open(char *err, size_t errlen)
{
	/* a plain socket first: its errno names what is missing */
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0) {
		int e = errno;
		if (e == EPROTONOSUPPORT)
			snprintf(err, errlen, "no RDMA netlink in this kernel (socket: %s)", strerror(e));
		else if (e == EACCES || e == EPERM)
			snprintf(err, errlen, "no permission for RDMA netlink (socket: %s)", strerror(e));
		else
			snprintf(err, errlen, "RDMA netlink socket: %s", strerror(e));
		return NULL;
	}
	close(fd);
	struct rdma_res *r = calloc(1, sizeof *r);
	if (!r || !(r->sk = nl_socket_alloc())) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nl_socket_disable_seq_check(r->sk);
	int rc = nl_connect(r->sk, NETLINK_RDMA);
	if (rc < 0) {
		snprintf(err, errlen, "RDMA netlink: %s", nl_geterror(rc));
		rdma_res_close(r);
		return NULL;
	}
	return r;
}

void rdma_res_close(struct rdma_res *r)
{
	if (!r)
		return;
	if (r->sk)
		nl_socket_free(r->sk);
	free(r);
}

/* One dump request and its replies, every datagram through the parser.
 * Bounded: a kernel that never ends the dump is cut off after 2 s. */
static int dump_one(struct rdma_res *r, int cmd, int dev_index, struct rdma_nl_sink *s, char *err,
		    size_t errlen)
{
	struct nl_msg *m = nlmsg_alloc_simple((int)RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd),
					      NLM_F_REQUEST | NLM_F_DUMP);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (dev_index >= 0 && nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)dev_index) < 0) {
		nlmsg_free(m);
		snprintf(err, errlen, "cannot build the request");
		return -1;
	}
	int rc = nl_send_auto(r->sk, m);
	nlmsg_free(m);
	if (rc < 0) {
		snprintf(err, errlen, "RDMA netlink send: %s", nl_geterror(rc));
		return -1;
	}
	s->done = 0;
	s->error = 0;
	uint64_t end = agent_mono_ns() + 2000000000ull;
	while (!s->done) {
		uint64_t now = agent_mono_ns();
		if (now >= end) {
			snprintf(err, errlen, "RDMA netlink dump did not end within 2 s");
			return -1;
		}
		struct pollfd pf = { nl_socket_get_fd(r->sk), POLLIN, 0 };
		int pr = poll(&pf, 1, (int)((end - now) / 1000000u) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		struct sockaddr_nl from;
		unsigned char *buf = NULL;
		int n = nl_recv(r->sk, &from, &buf, NULL);
		if (n <= 0) {
			free(buf);
			snprintf(err, errlen, "RDMA netlink receive: %s", n < 0 ? nl_geterror(n) : "closed");
			return -1;
		}
		int pc = rdma_nl_parse_buf(buf, (size_t)n, s);
		free(buf);
		if (pc < 0) {
			snprintf(err, errlen, "RDMA netlink: malformed reply (framing)");
			return -1;
		}
	}
	if (s->error < 0) {
		snprintf(err, errlen, "RDMA netlink %s: %s%s", cmd == RDMA_NLDEV_CMD_GET ? "device list" : "QP dump",
			 strerror(-s->error),
			 s->error == -EPERM || s->error == -EACCES ? " (needs CAP_NET_ADMIN to see other "
								     "processes' QPs)"
								   : "");
		return -1;
	}
	return 0;
}

struct collect {
	struct rdma_qp_ent *v;
	uint32_t n, cap;
	uint32_t devs[RDMA_DEVS_MAX_DUMP];
	int ndevs;
	int oom;
};

static void on_dev(void *ctx, uint32_t index, const char *name)
{
	(void)name;
	struct collect *c = ctx;
	if (c->ndevs < RDMA_DEVS_MAX_DUMP)
		c->devs[c->ndevs++] = index;
}

static void on_qp(void *ctx, const struct rdma_qp_ent *q)
{
	struct collect *c = ctx;
	if (c->n == c->cap) {
		uint32_t nc = c->cap ? c->cap * 2 : 64;
		if (nc > (1u << 22)) {
			c->oom = 1;
			return;
		}
		struct rdma_qp_ent *nv = realloc(c->v, (size_t)nc * sizeof *nv);
		if (!nv) {
			c->oom = 1;
			return;
		}
		c->v = nv;
		c->cap = nc;
	}
	c->v[c->n++] = *q;
}

int rdma_res_dump(struct rdma_res *r, struct rdma_qp_ent **out, uint32_t *n, uint64_t *malformed,
		  char *err, size_t errlen)
{
	struct collect c;
	memset(&c, 0, sizeof c);
	struct rdma_nl_sink s = { .on_qp = on_qp, .on_dev = on_dev, .ctx = &c };
	*out = NULL;
	*n = 0;
	int rc = dump_one(r, RDMA_NLDEV_CMD_GET, -1, &s, err, errlen);
	for (int i = 0; rc == 0 && i < c.ndevs; i++)
		rc = dump_one(r, RDMA_NLDEV_CMD_RES_QP_GET, (int)c.devs[i], &s, err, errlen);
	if (malformed)
		*malformed += s.malformed;
	if (rc == 0 && c.oom) {
		snprintf(err, errlen, "out of memory for the QP list");
		rc = -1;
	}
	if (rc) {
		free(c.v);
		return -1;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}

/* ---- the kernel's QPs against the hook's ---- */

static const char *qp_type_name(uint8_t t)
{
	switch (t) {
	case 0: return "SMI";
	case 1: return "GSI";
	case 2: return "RC";
	case 3: return "UC";
	case 4: return "UD";
	case 5: return "RAW_IPV6";
	case 6: return "RAW_ETHERTYPE";
	case 8: return "RAW_PACKET";
	case 9: return "XRC_INI";
	case 10: return "XRC_TGT";
	default: return "unknown";
	}
}

static const char *qp_state_name(uint8_t s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	return s < 7 ? n[s] : "unknown";
}

void rdma_res_reconcile(const struct rdma_qp_ent *e, uint32_t n, struct qp_map *map,
			struct rdma_res_summary *out, FILE *f, uint64_t t_ns)
{
	memset(out, 0, sizeof *out);
	out->kernel_qps = n;
	uint8_t *seen = map && map->nqps ? calloc(map->nqps, 1) : NULL;
	uint8_t *missed = n ? calloc(n, 1) : NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct rdma_qp_ent *q = &e[i];
		if (!q->has_pid) {
			out->kernel_owned++;
			continue;
		}
		struct map_qp *hit = NULL, *other = NULL;
		for (uint32_t k = 0; map && k < map->nqps; k++) {
			struct map_qp *m = &map->qps[k];
			if (m->qpn != q->lqpn || m->state == 3 || strcmp(m->dev, q->dev))
				continue;
			if (m->pid == q->pid) {
				hit = m;
				if (seen)
					seen[k] = 1;
				break;
			}
			other = m;
			if (seen)
				seen[k] = 1;
		}
		if (hit) {
			out->confirmed++;
			if (q->has_rqpn && q->rqpn && !hit->dest_qpn && !hit->gid_valid) {
				hit->dest_qpn = q->rqpn; /* the hook missed the RTR: the kernel knows */
				map->dirty = 1;
				out->completed++;
			}
		} else if (other) {
			out->pid_mismatch++;
		} else {
			out->missed++;
			if (missed)
				missed[i] = 1;
		}
	}
	for (uint32_t k = 0; map && k < map->nqps; k++) {
		const struct map_qp *m = &map->qps[k];
		if (seen && !seen[k] && (m->state == 1 || m->state == 2) && m->dev[0])
			out->hook_only++;
	}
	if (f) {
		fprintf(f,
			"{\"type\":\"rdma_qps\",\"t_ns\":%" PRIu64 ",\"kernel_qps\":%u,\"kernel_owned\":%u,"
			"\"confirmed\":%u,\"missed\":%u,\"pid_mismatch\":%u,\"completed\":%u,\"hook_only\":%u,"
			"\"missed_qps\":[",
			t_ns, out->kernel_qps, out->kernel_owned, out->confirmed, out->missed, out->pid_mismatch,
			out->completed, out->hook_only);
		int first = 1;
		for (uint32_t i = 0; missed && i < n; i++) {
			if (!missed[i])
				continue;
			const struct rdma_qp_ent *q = &e[i];
			fputs(first ? "{\"dev\":" : ",{\"dev\":", f);
			first = 0;
			pulse_json_put_str(f, q->dev);
			fprintf(f, ",\"port\":%u,\"qpn\":%u,\"pid\":%u,\"type\":\"%s\",\"state\":\"%s\"", q->port,
				q->lqpn, q->pid, qp_type_name(q->type), qp_state_name(q->state));
			if (q->has_rqpn)
				fprintf(f, ",\"remote_qpn\":%u}", q->rqpn);
			else
				fputs(",\"remote_qpn\":null}", f);
		}
		fputs("]}\n", f);
	}
	free(seen);
	free(missed);
}
