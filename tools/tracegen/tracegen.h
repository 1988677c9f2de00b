/* pulse-tracegen: deterministic RoCEv2 traffic, written as a pcap.
 *
 * The traffic of N nodes, each with one NIC (line rate, MAC, IPv4 or IPv6
 * address), exchanging RDMA WRITEs over RC connections (a QP pair each):
 * WRITE FIRST (RETH) / MIDDLE / LAST_WITH_IMMEDIATE (or ONLY_WITH_IMMEDIATE)
 * per message, as NCCL's IB transport sends them, with MTU-sized packets;
 * the responder's ACKs; and, for NCCL patterns, the receiver's clear-to-send
 * (a 64-byte WRITE_ONLY on the same connection) that lets each message go.
 *
 * A discrete-event model places every packet: each NIC serialises its data
 * packets at its line rate (round robin over its QPs with a message ready),
 * a packet arrives after its serialisation plus a propagation delay, and a
 * message is ready when the data it forwards has arrived (ring and tree
 * steps) and its clear-to-send has come back. ACKs and clear-to-sends are
 * small and take no link time in the model. Everything is a function of
 * the configuration and the seed (QPNs, PSNs). See tools/tracegen/README.md.
 *
 * tg_generate keeps its working state in static storage: one call at a time
 * per process. */
#ifndef PULSE_TRACEGEN_H
#define PULSE_TRACEGEN_H

#include <stddef.h>
#include <stdint.h>

enum tg_pattern {
	TG_RING = 1,   /* ring all-reduce: reduce-scatter then all-gather */
	TG_TREE,       /* double binary tree all-reduce: reduce up, broadcast down */
	TG_SENDRECV,   /* node 0 sends to node 1 */
	TG_WRITE,      /* node 0 writes to node 1 (perftest-like: no clear-to-send) */
	TG_QPS,        /* node 0 sends one small WRITE_ONLY to each of many QPNs of node 1 */
};

#define TG_MAX_NODES 256u
#define TG_MAX_CHANNELS 32u
#define TG_CTS_PAYLOAD 64u
#define TG_CTS_WINDOW 8u /* NCCL_STEPS: slices in flight per connection */

struct tg_cfg {
	enum tg_pattern pattern;
	uint32_t nodes;
	uint32_t channels;
	uint64_t bytes;       /* ring/tree: count per rank; sendrecv/write: bytes sent */
	uint64_t duration_ns; /* write: send for this long instead (0: use bytes) */
	uint32_t mtu;         /* IB payload per packet: 256..4096 */
	uint32_t slice;       /* ring/tree/sendrecv: largest message, <= 1 MiB */
	uint32_t msg;         /* write: message size */
	double gbps;          /* line rate of every NIC */
	int32_t straggler;    /* node whose link runs at gbps/slowdown; -1: none */
	double slowdown;
	uint32_t iters;       /* collectives, one after the other */
	uint64_t gap_ns;      /* idle time between them */
	uint64_t prop_ns;     /* propagation delay */
	uint32_t ack_every;   /* the responder ACKs every this many packets and each message end */
	int cts;              /* clear-to-send writes (ring/tree/sendrecv) */
	int ipv6;
	int vlan;             /* 802.1Q VID, -1: untagged */
	uint32_t snaplen;     /* bytes of each frame written */
	int usec;             /* microsecond pcap instead of nanosecond */
	uint64_t seed;
	uint64_t start_ns;    /* UNIX time of the first packet */
	uint64_t qps;         /* TG_QPS: distinct destination QPNs */
};

void tg_cfg_default(struct tg_cfg *c);

/* One RC connection: the sending QP on src, the receiving QP on dst. */
struct tg_conn_info {
	uint32_t src, dst;
	uint32_t src_qpn, dst_qpn;
	uint64_t data_bytes;  /* payload of the data messages src sent on it */
	uint64_t data_msgs;
	uint32_t tree;        /* TG_TREE: 0 or 1; else 0 */
	uint32_t channel;
};

struct tg_result {
	uint64_t packets, data_packets, ctl_packets;
	uint64_t bytes_written;
	uint64_t first_ns, last_ns;
	struct tg_conn_info *conns;
	uint32_t nconns;
};

/* Writes the capture. Returns 0, or -1 with err set. */
int tg_generate(const struct tg_cfg *c, const char *path, struct tg_result *res, char *err,
		size_t errlen);
void tg_result_free(struct tg_result *r);
/* Node addresses, as the generator assigns them (10.0.0.i+1 or fd00::i+1). */
void tg_node_addr(const struct tg_cfg *c, uint32_t node, uint8_t addr16[16]);

#endif
