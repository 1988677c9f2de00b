/* --pcap: the traffic of one NIC as RoCEv2 packets, as a sniffer on its
 * port would capture it: the RDMA WRITEs its QPs send (one message per
 * NCCL slice: WRITE_FIRST (RETH), MIDDLE..., LAST, or WRITE_ONLY; MTU-sized
 * payloads) and the ACKs its peers return for them (AETH, carrying the PSN
 * they acknowledge, so sim/run_trace can recover each sending QP's number
 * from the pairing). Headers only (snaplen 128); lengths are the real ones.
 * Packets are spread at line rate before their TX event's time; times are
 * the host's CLOCK_REALTIME in ns (pcap nanosecond format). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pulse/le.h"

#define SNAP 128u

struct qpstate {
	uint32_t qpn, dest_qpn, psn;
	int dst_nic;
	uint64_t msg_left; /* bytes left in the current message, 0: next is new */
};

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void mac_of(const struct nic *n, uint8_t *m)
{
	m[0] = 0x02;
	m[1] = 0x50;
	m[2] = 0x4c;
	m[3] = (uint8_t)n->host;
	m[4] = (uint8_t)(n->host >> 8);
	m[5] = (uint8_t)n->gpu;
}

/* one packet record; `ext`: 1 RETH, 2 AETH */
static int write_pkt(FILE *f, uint64_t ts, const struct nic *src, const struct nic *dst,
		     uint8_t opcode, uint32_t dest_qpn, uint32_t psn, int ack_req, int ext,
		     uint32_t payload, uint32_t srcport, uint64_t vaddr, uint32_t dmalen)
{
	uint8_t b[SNAP];
	memset(b, 0, sizeof b);
	mac_of(dst, b);
	mac_of(src, b + 6);
	put_be16(b + 12, 0x0800);
	uint8_t *ip = b + 14;
	uint32_t ext_len = ext == 1 ? 16 : ext == 2 ? 4 : 0;
	uint32_t iplen = 20 + 8 + 12 + ext_len + payload + 4;
	ip[0] = 0x45;
	ip[1] = 0x02; /* ECT(0) */
	put_be16(ip + 2, (uint16_t)iplen);
	put_be16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, src->gid + 12, 4);
	memcpy(ip + 16, dst->gid + 12, 4);
	put_be16(ip + 10, ip_csum(ip));
	uint8_t *udp = ip + 20;
	put_be16(udp, (uint16_t)srcport);
	put_be16(udp + 2, 4791);
	put_be16(udp + 4, (uint16_t)(iplen - 20));
	uint8_t *bth = udp + 8;
	bth[0] = opcode;
	bth[1] = 0; /* SE 0, M 0, pad 0, tver 0 */
	put_be16(bth + 2, 0xffff);
	put_be32(bth + 4, dest_qpn & 0xffffff);
	put_be32(bth + 8, (psn & 0xffffff) | (ack_req ? 0x80000000u : 0));
	uint8_t *x = bth + 12;
	if (ext == 1) {
		for (int i = 0; i < 8; i++)
			x[i] = (uint8_t)(vaddr >> (56 - 8 * i));
		put_be32(x + 8, 0x1234);
		put_be32(x + 12, dmalen);
	} else if (ext == 2) {
		put_be32(x, (0x1fu << 24) | (psn & 0xffffff)); /* syndrome: ACK, credits; MSN */
	}
	uint32_t frame = 14 + iplen;
	uint32_t incl = frame < SNAP ? frame : SNAP;
	uint8_t rh[16];
	pulse_put_u32(rh, (uint32_t)(ts / 1000000000ull));
	pulse_put_u32(rh + 4, (uint32_t)(ts % 1000000000ull));
	pulse_put_u32(rh + 8, incl);
	pulse_put_u32(rh + 12, frame);
	if (fwrite(rh, 1, 16, f) != 16 || fwrite(b, 1, incl, f) != incl)
		return -1;
	return 0;
}

struct ack {
	double t;
	uint32_t dest_qpn, psn, srcport;
	int from;
};

int pcap_write_nic(struct sim *sm, const char *path, int nic, uint64_t *npkts)
{
	struct nic *n = &sm->nics[nic];
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	uint8_t gh[24];
	pulse_put_u32(gh, 0xa1b23c4d); /* nanosecond pcap */
	pulse_put_u16(gh + 4, 2);
	pulse_put_u16(gh + 6, 4);
	pulse_put_u32(gh + 8, 0);
	pulse_put_u32(gh + 12, 0);
	pulse_put_u32(gh + 16, SNAP);
	pulse_put_u32(gh + 20, 1); /* Ethernet */
	fwrite(gh, 1, sizeof gh, f);
	/* this NIC's sending QPs */
	struct qpstate *qs = NULL;
	size_t nq = 0;
	for (int i = 0; i < sm->nqpcs; i++) {
		const struct qpc *q = &sm->qpcs[i];
		if (!q->inter || q->src_nic != nic)
			continue;
		qs = xrealloc(qs, (nq + 1) * sizeof *qs);
		qs[nq].qpn = q->sqpn;
		qs[nq].dest_qpn = q->rqpn;
		qs[nq].dst_nic = q->dst_nic;
		uint64_t x = q->sqpn * 0x9e3779b97f4a7c15ull + sm->s->seed;
		qs[nq].psn = (uint32_t)(sc_splitmix(&x) & 0xffffff);
		qs[nq].msg_left = 0;
		nq++;
	}
	struct ack *acks = NULL;
	size_t na = 0, ah = 0, acap = 0;
	const double mtu = sm->s->mtu;
	const double pkt_ns = (mtu + 82) / n->cap; /* a full frame at line rate */
	double prev = -1e300;
	int err = 0;
	for (size_t e = 0; e < n->nev && !err; e++) {
		const struct txrec *ev = &n->ev[e];
		struct qpstate *q = NULL;
		for (size_t k = 0; k < nq; k++)
			if (qs[k].qpn == ev->qpn)
				q = &qs[k];
		if (!q)
			continue;
		uint32_t bytes = ev->bytes & 0x7fffffffu;
		int last_of_msg = (ev->bytes >> 31) != 0;
		uint32_t pk = (bytes + (uint32_t)mtu - 1) / (uint32_t)mtu;
		if (!pk)
			pk = 1;
		double t0 = ev->t - (pk - 1) * pkt_ns;
		if (t0 <= prev)
			t0 = prev + 1;
		double step = pk > 1 ? (ev->t - t0) / (pk - 1) : 0;
		if (step < 0)
			step = 0;
		const struct nic *d = &sm->nics[q->dst_nic];
		uint32_t port = 49152 + (q->qpn & 0x3fff);
		uint32_t left = bytes;
		for (uint32_t i = 0; i < pk; i++) {
			double t = i + 1 == pk ? ev->t : t0 + step * i;
			if (t < prev)
				t = prev;
			/* ACKs due before this packet */
			while (ah < na && acks[ah].t <= t) {
				const struct ack *a = &acks[ah++];
				if (write_pkt(f, host_clock(sm, n->host, a->t), &sm->nics[a->from], n, 0x11,
					      a->dest_qpn, a->psn, 0, 2, 0, a->srcport, 0, 0))
					err = 1;
				(*npkts)++;
			}
			uint32_t pay = left > (uint32_t)mtu ? (uint32_t)mtu : left;
			left -= pay;
			int first = q->msg_left == 0;
			int end = (left == 0 && last_of_msg);
			uint8_t op;
			if (first && end)
				op = 0x0a; /* WRITE_ONLY */
			else if (first)
				op = 0x06; /* WRITE_FIRST */
			else if (end)
				op = 0x08; /* WRITE_LAST */
			else
				op = 0x07; /* WRITE_MIDDLE */
			if (first)
				q->msg_left = 1;
			if (end)
				q->msg_left = 0;
			if (write_pkt(f, host_clock(sm, n->host, t), n, d, op, q->dest_qpn, q->psn, end,
				      first ? 1 : 0, pay, port, 0x7f0000000000ull, bytes))
				err = 1;
			(*npkts)++;
			if (i + 1 == pk) {
				/* the receiver acknowledges the event's last packet */
				if (na == acap) {
					acap = acap ? acap * 2 : 1024;
					acks = xrealloc(acks, acap * sizeof *acks);
				}
				acks[na++] = (struct ack){ t + 2 * sm->s->net_latency_ns, q->qpn, q->psn,
							   49152 + (q->dest_qpn & 0x3fff), q->dst_nic };
			}
			q->psn = (q->psn + 1) & 0xffffff;
			prev = t;
		}
		/* keep the ACK queue small */
		if (ah > 4096 && ah * 2 > na) {
			memmove(acks, acks + ah, (na - ah) * sizeof *acks);
			na -= ah;
			ah = 0;
		}
	}
	while (!err && ah < na) {
		const struct ack *a = &acks[ah++];
		if (write_pkt(f, host_clock(sm, n->host, a->t), &sm->nics[a->from], n, 0x11, a->dest_qpn,
			      a->psn, 0, 2, 0, a->srcport, 0, 0))
			err = 1;
		(*npkts)++;
	}
	free(acks);
	free(qs);
	if (fclose(f) || err) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}
