/* RoCEv2 packet decoder. See include/pulse/roce.h. */
#define _DEFAULT_SOURCE
#include "pulse/roce.h"

#include <arpa/inet.h>
#include <string.h>

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* Extension header sizes. */
#define XRCETH_SIZE 4u
#define DETH_SIZE 8u
#define RETH_SIZE 16u
#define ATOMICETH_SIZE 28u
#define AETH_SIZE 4u
#define ATOMICACKETH_SIZE 8u
#define IMM_SIZE 4u
#define FETH_SIZE 4u
#define CNP_RSVD_SIZE 16u

struct opinfo {
	uint8_t kind;      /* 0: reserved */
	uint8_t position;  /* PULSE_ROCE_P_* */
	uint8_t nopayload; /* the opcode carries no data payload */
	uint16_t headers;  /* PULSE_ROCE_H_* (before transport-specific ones) */
	const char *name;  /* without the transport prefix */
};

#define F PULSE_ROCE_P_FIRST
#define L PULSE_ROCE_P_LAST
/* Opcodes 0x00-0x1F relative to the transport base (RC, UC, XRC). */
static const struct opinfo rc_ops[32] = {
	[0x00] = {PULSE_ROCE_K_SEND, F, 0, 0, "SEND_FIRST"},
	[0x01] = {PULSE_ROCE_K_SEND, 0, 0, 0, "SEND_MIDDLE"},
	[0x02] = {PULSE_ROCE_K_SEND, L, 0, 0, "SEND_LAST"},
	[0x03] = {PULSE_ROCE_K_SEND, L, 0, PULSE_ROCE_H_IMM, "SEND_LAST_WITH_IMMEDIATE"},
	[0x04] = {PULSE_ROCE_K_SEND, F | L, 0, 0, "SEND_ONLY"},
	[0x05] = {PULSE_ROCE_K_SEND, F | L, 0, PULSE_ROCE_H_IMM, "SEND_ONLY_WITH_IMMEDIATE"},
	[0x06] = {PULSE_ROCE_K_WRITE, F, 0, PULSE_ROCE_H_RETH, "RDMA_WRITE_FIRST"},
	[0x07] = {PULSE_ROCE_K_WRITE, 0, 0, 0, "RDMA_WRITE_MIDDLE"},
	[0x08] = {PULSE_ROCE_K_WRITE, L, 0, 0, "RDMA_WRITE_LAST"},
	[0x09] = {PULSE_ROCE_K_WRITE, L, 0, PULSE_ROCE_H_IMM, "RDMA_WRITE_LAST_WITH_IMMEDIATE"},
	[0x0A] = {PULSE_ROCE_K_WRITE, F | L, 0, PULSE_ROCE_H_RETH, "RDMA_WRITE_ONLY"},
	[0x0B] = {PULSE_ROCE_K_WRITE, F | L, 0, PULSE_ROCE_H_RETH | PULSE_ROCE_H_IMM,
		  "RDMA_WRITE_ONLY_WITH_IMMEDIATE"},
	[0x0C] = {PULSE_ROCE_K_READ_REQ, F | L, 1, PULSE_ROCE_H_RETH, "RDMA_READ_REQUEST"},
	[0x0D] = {PULSE_ROCE_K_READ_RESP, F, 0, PULSE_ROCE_H_AETH, "RDMA_READ_RESPONSE_FIRST"},
	[0x0E] = {PULSE_ROCE_K_READ_RESP, 0, 0, 0, "RDMA_READ_RESPONSE_MIDDLE"},
	[0x0F] = {PULSE_ROCE_K_READ_RESP, L, 0, PULSE_ROCE_H_AETH, "RDMA_READ_RESPONSE_LAST"},
	[0x10] = {PULSE_ROCE_K_READ_RESP, F | L, 0, PULSE_ROCE_H_AETH, "RDMA_READ_RESPONSE_ONLY"},
	[0x11] = {PULSE_ROCE_K_ACK, F | L, 1, PULSE_ROCE_H_AETH, "ACKNOWLEDGE"},
	[0x12] = {PULSE_ROCE_K_ATOMIC_ACK, F | L, 1, PULSE_ROCE_H_AETH | PULSE_ROCE_H_ATOMIC_ACK,
		  "ATOMIC_ACKNOWLEDGE"},
	[0x13] = {PULSE_ROCE_K_ATOMIC, F | L, 1, PULSE_ROCE_H_ATOMIC, "COMPARE_SWAP"},
	[0x14] = {PULSE_ROCE_K_ATOMIC, F | L, 1, PULSE_ROCE_H_ATOMIC, "FETCH_ADD"},
	[0x16] = {PULSE_ROCE_K_SEND, L, 0, PULSE_ROCE_H_IETH, "SEND_LAST_WITH_INVALIDATE"},
	[0x17] = {PULSE_ROCE_K_SEND, F | L, 0, PULSE_ROCE_H_IETH, "SEND_ONLY_WITH_INVALIDATE"},
	[0x1C] = {PULSE_ROCE_K_FLUSH, F | L, 1, PULSE_ROCE_H_FETH | PULSE_ROCE_H_RETH, "FLUSH"},
	[0x1D] = {PULSE_ROCE_K_ATOMIC, F | L, 0, PULSE_ROCE_H_RETH, "ATOMIC_WRITE"},
};
static const struct opinfo ud_send_only = {PULSE_ROCE_K_SEND, F | L, 0, PULSE_ROCE_H_DETH,
					   "SEND_ONLY"};
static const struct opinfo ud_send_only_imm = {PULSE_ROCE_K_SEND, F | L, 0,
					       PULSE_ROCE_H_DETH | PULSE_ROCE_H_IMM,
					       "SEND_ONLY_WITH_IMMEDIATE"};
static const struct opinfo cnp_info = {PULSE_ROCE_K_CNP, F | L, 1, 0, "CNP"};
#undef F
#undef L

/* Returns the opcode's description, or NULL when it is reserved or belongs
 * to a transport this decoder does not handle (RD, vendor-specific). */
static const struct opinfo *opcode_info(uint8_t op)
{
	uint8_t t = op >> 5, o = op & 0x1F;
	switch (t) {
	case PULSE_ROCE_RC:
	case PULSE_ROCE_XRC:
		return rc_ops[o].kind ? &rc_ops[o] : NULL;
	case PULSE_ROCE_UC:
		return o <= 0x0B ? &rc_ops[o] : NULL; /* UC: SEND and WRITE only */
	case PULSE_ROCE_UD:
		if (o == 0x04)
			return &ud_send_only;
		if (o == 0x05)
			return &ud_send_only_imm;
		return NULL;
	case PULSE_ROCE_CNP:
		return o == 0x01 ? &cnp_info : NULL;
	default:
		return NULL; /* RD (0x40-0x5F) and manufacturer-specific (0xC0-0xFF) */
	}
}

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

enum pulse_roce_status pulse_roce_decode(const uint8_t *frame, uint32_t caplen, uint32_t wirelen,
					 enum pulse_roce_link link, struct pulse_roce_pkt *p)
{
	uint32_t off = 0, l2len, ethertype;

	if (wirelen < caplen)
		wirelen = caplen;
	p->vlan_count = 0;
	p->headers = 0;
	p->ip_version = 0;

	/* ---- link ---- */
	switch (link) {
	case PULSE_ROCE_LINK_ETHERNET:
		if (caplen < 14)
			return wirelen < 14 ? PULSE_ROCE_E_LINK : PULSE_ROCE_E_SNAPLEN;
		ethertype = be16(frame + 12);
		off = 14;
		while (ethertype == 0x8100 || ethertype == 0x88A8 || ethertype == 0x9100) {
			if (p->vlan_count >= PULSE_ROCE_MAX_VLANS)
				return PULSE_ROCE_E_LINK;
			if (caplen < off + 4)
				return wirelen < off + 4 ? PULSE_ROCE_E_LINK : PULSE_ROCE_E_SNAPLEN;
			p->vlan_id[p->vlan_count++] = be16(frame + off) & 0x0FFF;
			ethertype = be16(frame + off + 2);
			off += 4;
		}
		l2len = off;
		break;
	case PULSE_ROCE_LINK_SLL:
		if (caplen < 16)
			return wirelen < 16 ? PULSE_ROCE_E_LINK : PULSE_ROCE_E_SNAPLEN;
		ethertype = be16(frame + 14);
		off = 16;
		l2len = 14;
		break;
	case PULSE_ROCE_LINK_SLL2:
		if (caplen < 20)
			return wirelen < 20 ? PULSE_ROCE_E_LINK : PULSE_ROCE_E_SNAPLEN;
		ethertype = be16(frame);
		off = 20;
		l2len = 14;
		break;
	case PULSE_ROCE_LINK_RAW:
		if (caplen < 1)
			return wirelen < 1 ? PULSE_ROCE_E_LINK : PULSE_ROCE_E_SNAPLEN;
		ethertype = (frame[0] >> 4) == 6 ? 0x86DD : (frame[0] >> 4) == 4 ? 0x0800 : 0;
		if (!ethertype)
			return PULSE_ROCE_E_IP;
		off = 0;
		l2len = 14;
		break;
	default:
		return PULSE_ROCE_E_LINK;
	}
	if (ethertype == 0x8915)
		return PULSE_ROCE_ROCEV1;
	if (ethertype != 0x0800 && ethertype != 0x86DD)
		return PULSE_ROCE_NOT_IP;

	/* ---- IP ---- */
	uint32_t ip = off, l4, l4end, proto;
	if (ethertype == 0x0800) {
		if (caplen < ip + 20)
			return wirelen < ip + 20 ? PULSE_ROCE_E_IP_LENGTH : PULSE_ROCE_E_SNAPLEN;
		const uint8_t *h = frame + ip;
		uint32_t ihl = (uint32_t)(h[0] & 0x0F) * 4;
		if ((h[0] >> 4) != 4 || ihl < 20)
			return PULSE_ROCE_E_IP;
		uint32_t tot = be16(h + 2);
		if (tot < ihl)
			return PULSE_ROCE_E_IP;
		if (ip + tot > wirelen)
			return PULSE_ROCE_E_IP_LENGTH;
		if (caplen < ip + ihl)
			return PULSE_ROCE_E_SNAPLEN;
		p->ip_version = 4;
		p->tclass = h[1];
		memcpy(p->src, v4mapped_prefix, 12);
		memcpy(p->src + 12, h + 12, 4);
		memcpy(p->dst, v4mapped_prefix, 12);
		memcpy(p->dst + 12, h + 16, 4);
		p->ip_len = tot;
		proto = h[9];
		uint16_t frag = be16(h + 6);
		if (frag & 0x3FFF) /* MF set or a non-zero offset */
			return PULSE_ROCE_IP_FRAGMENT;
		l4 = ip + ihl;
		l4end = ip + tot;
	} else {
		if (caplen < ip + 40)
			return wirelen < ip + 40 ? PULSE_ROCE_E_IP_LENGTH : PULSE_ROCE_E_SNAPLEN;
		const uint8_t *h = frame + ip;
		if ((h[0] >> 4) != 6)
			return PULSE_ROCE_E_IP;
		uint32_t plen = be16(h + 4);
		if (plen == 0)
			return PULSE_ROCE_E_IP; /* jumbogram or bogus: not supported */
		if (ip + 40 + plen > wirelen)
			return PULSE_ROCE_E_IP_LENGTH;
		p->ip_version = 6;
		p->tclass = (uint8_t)((h[0] & 0x0F) << 4 | h[1] >> 4);
		memcpy(p->src, h + 8, 16);
		memcpy(p->dst, h + 24, 16);
		p->ip_len = 40 + plen;
		l4end = ip + 40 + plen;
		proto = h[6];
		l4 = ip + 40;
		/* Extension headers before UDP. Each is at least 8 bytes; the
		 * loop is bounded by the packet length. */
		for (;;) {
			if (proto == 44)
				return PULSE_ROCE_IP_FRAGMENT;
			if (proto != 0 && proto != 43 && proto != 60)
				break;
			if (l4 + 8 > l4end)
				return PULSE_ROCE_E_IP;
			if (caplen < l4 + 8)
				return PULSE_ROCE_E_SNAPLEN;
			uint32_t elen = ((uint32_t)frame[l4 + 1] + 1) * 8;
			proto = frame[l4];
			l4 += elen;
			if (l4 > l4end)
				return PULSE_ROCE_E_IP;
		}
	}
	p->wire_len = l2len + p->ip_len;

	/* ---- UDP ---- */
	if (proto != 17)
		return PULSE_ROCE_NOT_UDP;
	if (l4 + 8 > l4end)
		return PULSE_ROCE_E_UDP_LENGTH;
	if (caplen < l4 + 8)
		return PULSE_ROCE_E_SNAPLEN;
	const uint8_t *u = frame + l4;
	p->udp_sport = be16(u);
	if (be16(u + 2) != PULSE_ROCE_UDP_PORT)
		return PULSE_ROCE_NOT_ROCE_PORT;
	uint32_t ulen = be16(u + 4);
	if (ulen < 8 || l4 + ulen > l4end)
		return PULSE_ROCE_E_UDP_LENGTH;
	p->udp_len = ulen;

	/* ---- BTH ---- */
	uint32_t ib = l4 + 8, iblen = ulen - 8; /* BTH .. ICRC */
	if (iblen < PULSE_ROCE_BTH_SIZE + PULSE_ROCE_ICRC_SIZE || (iblen & 3))
		return PULSE_ROCE_E_NOT_ROCE;
	if (caplen < ib + PULSE_ROCE_BTH_SIZE)
		return PULSE_ROCE_E_SNAPLEN;
	const uint8_t *b = frame + ib;
	if ((b[1] & 0x0F) != 0) /* transport header version */
		return PULSE_ROCE_E_NOT_ROCE;
	p->opcode = b[0];
	p->transport = b[0] >> 5;
	p->solicited = b[1] >> 7;
	p->migreq = (b[1] >> 6) & 1;
	p->pad = (b[1] >> 4) & 3;
	p->pkey = be16(b + 2);
	p->fecn = b[4] >> 7;
	p->becn = (b[4] >> 6) & 1;
	p->dqpn = be24(b + 5);
	p->ackreq = b[8] >> 7;
	p->psn = be24(b + 9);
	const struct opinfo *oi = opcode_info(p->opcode);
	if (!oi)
		return PULSE_ROCE_E_OPCODE;
	p->kind = oi->kind;
	p->position = oi->position;

	/* ---- extension headers, in wire order ---- */
	uint32_t h = ib + PULSE_ROCE_BTH_SIZE;
	uint32_t hend = ib + iblen - PULSE_ROCE_ICRC_SIZE; /* end of payload + pad */
	uint16_t want = oi->headers;
	if (p->transport == PULSE_ROCE_XRC)
		want |= PULSE_ROCE_H_XRCETH;
	uint32_t need = 0;
	if (want & PULSE_ROCE_H_XRCETH)
		need += XRCETH_SIZE;
	if (want & PULSE_ROCE_H_DETH)
		need += DETH_SIZE;
	if (want & PULSE_ROCE_H_FETH)
		need += FETH_SIZE;
	if (want & PULSE_ROCE_H_RETH)
		need += RETH_SIZE;
	if (want & PULSE_ROCE_H_ATOMIC)
		need += ATOMICETH_SIZE;
	if (want & PULSE_ROCE_H_AETH)
		need += AETH_SIZE;
	if (want & PULSE_ROCE_H_ATOMIC_ACK)
		need += ATOMICACKETH_SIZE;
	if (want & (PULSE_ROCE_H_IMM | PULSE_ROCE_H_IETH))
		need += IMM_SIZE;
	if (oi->kind == PULSE_ROCE_K_CNP)
		need += CNP_RSVD_SIZE;
	if (h + need + p->pad > hend)
		return PULSE_ROCE_E_SHORT;
	if (caplen < h + need)
		return PULSE_ROCE_E_SNAPLEN;
	if (want & PULSE_ROCE_H_XRCETH) {
		p->xrc_srqn = be24(frame + h + 1);
		h += XRCETH_SIZE;
	}
	if (want & PULSE_ROCE_H_DETH) {
		p->deth_qkey = be32(frame + h);
		p->deth_sqpn = be24(frame + h + 5);
		h += DETH_SIZE;
	}
	if (want & PULSE_ROCE_H_FETH)
		h += FETH_SIZE;
	if (want & PULSE_ROCE_H_RETH) {
		p->reth_va = be64(frame + h);
		p->reth_rkey = be32(frame + h + 8);
		p->reth_dmalen = be32(frame + h + 12);
		h += RETH_SIZE;
	}
	if (want & PULSE_ROCE_H_ATOMIC) {
		p->reth_va = be64(frame + h); /* AtomicETH starts with VA and R_Key too */
		p->reth_rkey = be32(frame + h + 8);
		h += ATOMICETH_SIZE;
	}
	if (want & PULSE_ROCE_H_AETH) {
		p->aeth_syndrome = frame[h];
		p->aeth_msn = be24(frame + h + 1);
		h += AETH_SIZE;
	}
	if (want & PULSE_ROCE_H_ATOMIC_ACK)
		h += ATOMICACKETH_SIZE;
	if (want & (PULSE_ROCE_H_IMM | PULSE_ROCE_H_IETH)) {
		p->imm = be32(frame + h);
		h += IMM_SIZE;
	}
	if (oi->kind == PULSE_ROCE_K_CNP)
		h += CNP_RSVD_SIZE;
	p->headers = want;
	p->payload_len = hend - h - p->pad;
	return PULSE_ROCE_OK;
}

enum pulse_roce_group pulse_roce_status_group(enum pulse_roce_status s)
{
	switch (s) {
	case PULSE_ROCE_OK:
		return PULSE_ROCE_GROUP_ROCE;
	case PULSE_ROCE_NOT_IP:
	case PULSE_ROCE_ROCEV1:
	case PULSE_ROCE_NOT_UDP:
	case PULSE_ROCE_NOT_ROCE_PORT:
		return PULSE_ROCE_GROUP_NOT_ROCE;
	case PULSE_ROCE_IP_FRAGMENT:
	case PULSE_ROCE_E_SNAPLEN:
		return PULSE_ROCE_GROUP_SKIPPED;
	default:
		return PULSE_ROCE_GROUP_MALFORMED;
	}
}

static const char *const status_names[PULSE_ROCE_STATUS_COUNT] = {
	[PULSE_ROCE_OK] = "roce",
	[PULSE_ROCE_NOT_IP] = "not_ip",
	[PULSE_ROCE_ROCEV1] = "rocev1",
	[PULSE_ROCE_NOT_UDP] = "not_udp",
	[PULSE_ROCE_NOT_ROCE_PORT] = "not_port_4791",
	[PULSE_ROCE_IP_FRAGMENT] = "ip_fragment",
	[PULSE_ROCE_E_SNAPLEN] = "cut_by_snaplen",
	[PULSE_ROCE_E_LINK] = "bad_link_header",
	[PULSE_ROCE_E_IP] = "bad_ip_header",
	[PULSE_ROCE_E_IP_LENGTH] = "ip_length_beyond_frame",
	[PULSE_ROCE_E_UDP_LENGTH] = "bad_udp_length",
	[PULSE_ROCE_E_NOT_ROCE] = "udp4791_not_roce",
	[PULSE_ROCE_E_OPCODE] = "reserved_opcode",
	[PULSE_ROCE_E_SHORT] = "short_for_opcode",
};

static const char *const status_texts[PULSE_ROCE_STATUS_COUNT] = {
	[PULSE_ROCE_OK] = "RoCEv2 packet",
	[PULSE_ROCE_NOT_IP] = "not IPv4/IPv6 (ARP, LLDP, ...)",
	[PULSE_ROCE_ROCEV1] = "RoCE v1 (ethertype 0x8915), not RoCEv2",
	[PULSE_ROCE_NOT_UDP] = "IP but not UDP",
	[PULSE_ROCE_NOT_ROCE_PORT] = "UDP to a port other than 4791",
	[PULSE_ROCE_IP_FRAGMENT] = "IP fragment (RoCEv2 is never fragmented; not decoded)",
	[PULSE_ROCE_E_SNAPLEN] = "capture snaplen cut the packet inside its headers",
	[PULSE_ROCE_E_LINK] = "link-layer header truncated or more than 2 VLAN tags",
	[PULSE_ROCE_E_IP] = "bad IP header (version, header length or total length)",
	[PULSE_ROCE_E_IP_LENGTH] = "packet shorter than its IP header says",
	[PULSE_ROCE_E_UDP_LENGTH] = "UDP length below 8 or beyond the IP payload",
	[PULSE_ROCE_E_NOT_ROCE] =
		"UDP 4791 but not RoCE (too short for BTH+ICRC, BTH version != 0, or not 4-byte aligned)",
	[PULSE_ROCE_E_OPCODE] = "reserved or unsupported BTH opcode (RD, vendor-specific)",
	[PULSE_ROCE_E_SHORT] = "too short for the extension headers its opcode needs",
};

const char *pulse_roce_status_name(enum pulse_roce_status s)
{
	return (unsigned)s < PULSE_ROCE_STATUS_COUNT ? status_names[s] : "unknown";
}

const char *pulse_roce_status_text(enum pulse_roce_status s)
{
	return (unsigned)s < PULSE_ROCE_STATUS_COUNT ? status_texts[s] : "unknown status";
}

const char *pulse_roce_transport_name(uint8_t t)
{
	static const char *const n[8] = {"RC", "UC", "RD", "UD", "CNP", "XRC", "VENDOR", "VENDOR"};
	return n[t & 7];
}

const char *pulse_roce_opcode_name(uint8_t op)
{
	/* One static string per valid opcode, built on first use would need
	 * state; instead return the transport-free name: callers print the
	 * transport next to it. */
	const struct opinfo *oi = opcode_info(op);
	return oi ? oi->name : "reserved";
}

char *pulse_roce_addr_str(const uint8_t addr[16], char *buf)
{
	if (memcmp(addr, v4mapped_prefix, 12) == 0)
		inet_ntop(AF_INET, addr + 12, buf, 46);
	else
		inet_ntop(AF_INET6, addr, buf, 46);
	return buf;
}

int pulse_roce_addr_parse(const char *s, uint8_t addr[16])
{
	uint8_t v4[4];
	if (inet_pton(AF_INET, s, v4) == 1) {
		memcpy(addr, v4mapped_prefix, 12);
		memcpy(addr + 12, v4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, addr) == 1 ? 0 : -1;
}
