/* RoCEv2 packet decoder: one captured frame in, its headers out.
 *
 * A pure function over a byte buffer: no allocation, no global state, no
 * reads outside [frame, frame + caplen). Used by sim/run_trace, the trace
 * generator's tests and the fuzz target (tests/fuzz/fuzz_roce_decode.c).
 *
 * Layers understood:
 *   link:  Ethernet II with up to PULSE_ROCE_MAX_VLANS 802.1Q/802.1ad tags
 *          (0x8100, 0x88A8, 0x9100), Linux cooked capture v1 and v2, raw IP
 *   IP:    IPv4 (options allowed; fragments reported, not decoded), IPv6
 *          (hop-by-hop, routing and destination-options headers skipped;
 *          fragments reported)
 *   UDP:   destination port 4791 (RoCEv2)
 *   IB:    BTH, then by opcode RETH, AETH, AtomicETH, AtomicAckETH, ImmDt,
 *          IETH, DETH, XRCETH, FETH; payload; pad; ICRC (4 bytes, not checked)
 *
 * Sizes come from the IP and UDP length fields, not from the captured
 * length, so captures made with a small snaplen (headers only, the usual way
 * to capture RoCE at line rate) decode fully. The captured bytes must cover
 * the headers; if they do not, the result is PULSE_ROCE_E_SNAPLEN. */
#ifndef PULSE_ROCE_H
#define PULSE_ROCE_H

#include <stdint.h>

#define PULSE_ROCE_UDP_PORT 4791u
#define PULSE_ROCE_BTH_SIZE 12u
#define PULSE_ROCE_ICRC_SIZE 4u
#define PULSE_ROCE_MAX_VLANS 2u

/* Link layers of the frames handed to the decoder (pcap DLT values differ;
 * sim/pcap_in.c maps them). */
enum pulse_roce_link {
	PULSE_ROCE_LINK_ETHERNET = 1,
	PULSE_ROCE_LINK_SLL = 2,  /* Linux cooked v1, 16-byte header */
	PULSE_ROCE_LINK_SLL2 = 3, /* Linux cooked v2, 20-byte header */
	PULSE_ROCE_LINK_RAW = 4,  /* no link header: IPv4 or IPv6 */
};

/* Decode results. OK is a RoCEv2 packet; the rest say why not. The groups
 * (not RoCE / skipped / malformed) are what run_trace reports. */
enum pulse_roce_status {
	PULSE_ROCE_OK = 0,
	/* not RoCEv2 at all: counted as "not RoCE" */
	PULSE_ROCE_NOT_IP,          /* ethertype other than IPv4/IPv6 (ARP, LLDP, ...) */
	PULSE_ROCE_ROCEV1,          /* ethertype 0x8915: RoCE v1, not routable RoCEv2 */
	PULSE_ROCE_NOT_UDP,         /* IP, but not UDP */
	PULSE_ROCE_NOT_ROCE_PORT,   /* UDP, but destination port is not 4791 */
	/* RoCE-looking but not decodable as such: counted as "skipped" */
	PULSE_ROCE_IP_FRAGMENT,     /* an IPv4 or IPv6 fragment: UDP/BTH not in this packet */
	PULSE_ROCE_E_SNAPLEN,       /* the capture stopped before the headers ended */
	/* broken: counted as "malformed" */
	PULSE_ROCE_E_LINK,          /* link header shorter than its type needs, or too many tags */
	PULSE_ROCE_E_IP,            /* bad IP version/header length, or total length too small */
	PULSE_ROCE_E_IP_LENGTH,     /* IP length larger than the frame: shorter than its headers say */
	PULSE_ROCE_E_UDP_LENGTH,    /* UDP length < 8 or beyond the IP payload */
	PULSE_ROCE_E_NOT_ROCE,      /* UDP 4791 but not RoCE: too short for BTH+ICRC, BTH version, alignment */
	PULSE_ROCE_E_OPCODE,        /* a reserved or unsupported BTH opcode */
	PULSE_ROCE_E_SHORT,         /* too short for the extension headers/pad its opcode needs */
	PULSE_ROCE_STATUS_COUNT
};

enum pulse_roce_group {
	PULSE_ROCE_GROUP_ROCE = 0,
	PULSE_ROCE_GROUP_NOT_ROCE = 1,
	PULSE_ROCE_GROUP_SKIPPED = 2,
	PULSE_ROCE_GROUP_MALFORMED = 3,
};

/* Transport bits (opcode >> 5). */
enum pulse_roce_transport {
	PULSE_ROCE_RC = 0,
	PULSE_ROCE_UC = 1,
	PULSE_ROCE_RD = 2,
	PULSE_ROCE_UD = 3,
	PULSE_ROCE_CNP = 4,
	PULSE_ROCE_XRC = 5,
};

/* Opcode classes (transport-independent). */
enum pulse_roce_kind {
	PULSE_ROCE_K_SEND = 1,
	PULSE_ROCE_K_WRITE,
	PULSE_ROCE_K_READ_REQ,
	PULSE_ROCE_K_READ_RESP,
	PULSE_ROCE_K_ACK,        /* ACK / NAK (AETH syndrome says which) */
	PULSE_ROCE_K_ATOMIC,     /* compare-swap, fetch-add, atomic write */
	PULSE_ROCE_K_ATOMIC_ACK,
	PULSE_ROCE_K_FLUSH,
	PULSE_ROCE_K_CNP,
};

/* Which extension headers the packet carried. */
#define PULSE_ROCE_H_RETH 0x01u
#define PULSE_ROCE_H_AETH 0x02u
#define PULSE_ROCE_H_IMM 0x04u
#define PULSE_ROCE_H_IETH 0x08u
#define PULSE_ROCE_H_DETH 0x10u
#define PULSE_ROCE_H_ATOMIC 0x20u     /* AtomicETH */
#define PULSE_ROCE_H_ATOMIC_ACK 0x40u /* AtomicAckETH */
#define PULSE_ROCE_H_XRCETH 0x80u
#define PULSE_ROCE_H_FETH 0x100u

/* Packet position in its message. */
#define PULSE_ROCE_P_FIRST 0x1u
#define PULSE_ROCE_P_LAST 0x2u /* ONLY = FIRST | LAST */

struct pulse_roce_pkt {
	/* link */
	uint8_t vlan_count;
	uint16_t vlan_id[PULSE_ROCE_MAX_VLANS]; /* outermost first, 12-bit VIDs */
	/* network: IPv4 addresses are stored as IPv4-mapped IPv6 (::ffff:a.b.c.d),
	 * which is also how the RoCEv2 GID of an IPv4 address is formed */
	uint8_t ip_version; /* 4 or 6 */
	uint8_t tclass;     /* DSCP << 2 | ECN */
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t udp_sport;
	/* BTH */
	uint8_t opcode;
	uint8_t transport; /* enum pulse_roce_transport */
	uint8_t kind;      /* enum pulse_roce_kind */
	uint8_t position;  /* PULSE_ROCE_P_* */
	uint8_t solicited, migreq, pad, ackreq, fecn, becn;
	uint16_t pkey;
	uint32_t dqpn; /* 24-bit destination QPN */
	uint32_t psn;  /* 24-bit */
	/* extension headers, valid when the bit is in `headers` */
	uint16_t headers;
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_dmalen;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint32_t imm;      /* ImmDt or IETH (invalidated rkey), as on the wire */
	uint32_t deth_qkey;
	uint32_t deth_sqpn; /* UD: the SOURCE QPN is on the wire */
	uint32_t xrc_srqn;
	/* sizes, bytes */
	uint32_t payload_len; /* IB payload: excludes headers, pad and ICRC */
	uint32_t udp_len;     /* UDP length field: UDP header + BTH ... ICRC */
	uint32_t ip_len;      /* IP packet as sent (IPv4 total length; IPv6 40 + payload length) */
	uint32_t wire_len;    /* Ethernet frame as the NIC sent it, FCS excluded:
			       * 14 + 4 per VLAN tag + ip_len (cooked/raw captures
			       * are counted as untagged Ethernet) */
};

/* Decodes one frame. caplen bytes are readable at frame; wirelen is the
 * original length from the capture record (>= caplen; used only to tell a
 * snaplen cut from a packet that is shorter than its headers say).
 * On any status other than OK, *p is partially filled (whatever was decoded
 * before the failure). */
enum pulse_roce_status pulse_roce_decode(const uint8_t *frame, uint32_t caplen, uint32_t wirelen,
					 enum pulse_roce_link link, struct pulse_roce_pkt *p);

enum pulse_roce_group pulse_roce_status_group(enum pulse_roce_status s);
const char *pulse_roce_status_name(enum pulse_roce_status s);
/* A short human-readable explanation of a status. */
const char *pulse_roce_status_text(enum pulse_roce_status s);
/* "RC_RDMA_WRITE_FIRST" and so on; "reserved" for opcodes the decoder rejects. */
const char *pulse_roce_opcode_name(uint8_t opcode);
const char *pulse_roce_transport_name(uint8_t transport);
/* Formats an address from a decoded packet: dotted quad for IPv4-mapped,
 * RFC 5952 text for IPv6. buf must hold 46 bytes. Returns buf. */
char *pulse_roce_addr_str(const uint8_t addr[16], char *buf);
/* Parses an IPv4 or IPv6 address into the same 16-byte form. Returns 0 on success. */
int pulse_roce_addr_parse(const char *s, uint8_t addr[16]);

#endif
