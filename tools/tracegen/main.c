/* pulse-tracegen: command line. See tools/tracegen/README.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracegen.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: pulse-tracegen [options] -o FILE.pcap\n"
"\n"
"Writes deterministic RoCEv2 traffic (RC RDMA WRITE with RETH, ACKs, NCCL-style\n"
"clear-to-send writes) as a nanosecond pcap. Same options and seed, same bytes.\n"
"\n"
"  --pattern P      ring (all-reduce, default), tree (double binary tree\n"
"                   all-reduce), sendrecv (node 0 -> node 1), write (perftest-like\n"
"                   node 0 -> node 1, no clear-to-send), qps (one small write to\n"
"                   each of --qps QPNs, one way)\n"
"  --nodes N        nodes, one NIC each (default 4)\n"
"  --channels C     channels, one QP per connection each (default 2)\n"
"  --bytes SIZE     ring/tree: count per rank; sendrecv/write: bytes sent\n"
"                   (default 16M; K, M, G are binary multiples)\n"
"  --duration DUR   write: send at line rate for this long instead (e.g. 1s)\n"
"  --mtu N          IB payload per packet, 256..4096 (default 4096)\n"
"  --slice SIZE     largest message of a collective step, mtu..1M (default 512K)\n"
"  --msg SIZE       write: message size (default 1M)\n"
"  --gbps R         NIC line rate in Gb/s (default 400)\n"
"  --straggler N    node N's link runs at 1/--slowdown of the line rate\n"
"  --slowdown P     (default 1)\n"
"  --iters K        collectives one after the other (default 1), --gap apart\n"
"  --gap DUR        (default 100us)\n"
"  --prop DUR       propagation delay (default 1us)\n"
"  --ack-every N    the responder ACKs every N packets and each message (default 16)\n"
"  --no-cts         no clear-to-send writes from receivers\n"
"  --ipv6           fd00::N+1 addresses instead of 10.0.0.N+1\n"
"  --vlan VID       tag every frame with 802.1Q VID\n"
"  --snaplen N      bytes of each frame written (default 65535; 128 keeps headers)\n"
"  --usec           microsecond timestamps instead of nanosecond\n"
"  --seed S         QPNs, PSNs and keys come from this (default 1)\n"
"  --start NS       UNIX time of the first packet in ns (default 1700000000 s)\n"
"  --qps M          qps pattern: destination QPNs (default 1000)\n"
"  --expect         print every connection (QPNs, data bytes) and the volume\n"
"                   expected by Appendix B of the Pulse paper\n"
"  -o FILE          output pcap\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	uint64_t m = 1;
	if (*end == 'K' || *end == 'k')
		m = 1024, end++;
	else if (*end == 'M')
		m = 1024 * 1024, end++;
	else if (*end == 'G')
		m = 1024ull * 1024 * 1024, end++;
	if (*end)
		return -1;
	if (v > UINT64_MAX / m)
		return -1;
	*out = v * m;
	return 0;
}

static int parse_dur(const char *s, uint64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	double u = 1e9;
	if (!strcmp(end, "ns"))
		u = 1;
	else if (!strcmp(end, "us"))
		u = 1e3;
	else if (!strcmp(end, "ms"))
		u = 1e6;
	else if (!strcmp(end, "s") || !*end)
		u = 1e9;
	else
		return -1;
	*ns = (uint64_t)(v * u + 0.5);
	return 0;
}

enum {
	O_PATTERN = 256, O_NODES, O_CHANNELS, O_BYTES, O_DURATION, O_MTU, O_SLICE, O_MSG, O_GBPS,
	O_STRAGGLER, O_SLOWDOWN, O_ITERS, O_GAP, O_PROP, O_ACK_EVERY, O_NO_CTS, O_IPV6, O_VLAN,
	O_SNAPLEN, O_USEC, O_SEED, O_START, O_QPS, O_EXPECT,
};

static int bad(const char *o, const char *v)
{
	fprintf(stderr, "pulse-tracegen: bad value for %s: %s (see --help)\n", o, v ? v : "");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pattern", 1, 0, O_PATTERN}, {"nodes", 1, 0, O_NODES}, {"channels", 1, 0, O_CHANNELS},
		{"bytes", 1, 0, O_BYTES}, {"duration", 1, 0, O_DURATION}, {"mtu", 1, 0, O_MTU},
		{"slice", 1, 0, O_SLICE}, {"msg", 1, 0, O_MSG}, {"gbps", 1, 0, O_GBPS},
		{"straggler", 1, 0, O_STRAGGLER}, {"slowdown", 1, 0, O_SLOWDOWN},
		{"iters", 1, 0, O_ITERS}, {"gap", 1, 0, O_GAP}, {"prop", 1, 0, O_PROP},
		{"ack-every", 1, 0, O_ACK_EVERY}, {"no-cts", 0, 0, O_NO_CTS}, {"ipv6", 0, 0, O_IPV6},
		{"vlan", 1, 0, O_VLAN}, {"snaplen", 1, 0, O_SNAPLEN}, {"usec", 0, 0, O_USEC},
		{"seed", 1, 0, O_SEED}, {"start", 1, 0, O_START}, {"qps", 1, 0, O_QPS},
		{"expect", 0, 0, O_EXPECT}, {"help", 0, 0, 'h'}, {0, 0, 0, 0},
	};
	struct tg_cfg c;
	tg_cfg_default(&c);
	const char *out = NULL;
	int expect = 0, ch;
	uint64_t v;
	char *end;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		const char *o = argv[optind - 1];
		switch (ch) {
		case O_PATTERN:
			if (!strcmp(optarg, "ring")) c.pattern = TG_RING;
			else if (!strcmp(optarg, "tree")) c.pattern = TG_TREE;
			else if (!strcmp(optarg, "sendrecv")) c.pattern = TG_SENDRECV;
			else if (!strcmp(optarg, "write")) c.pattern = TG_WRITE;
			else if (!strcmp(optarg, "qps")) c.pattern = TG_QPS;
			else return bad(o, optarg);
			break;
		case O_NODES:
			if (parse_size(optarg, &v) || v < 2 || v > TG_MAX_NODES) return bad(o, optarg);
			c.nodes = (uint32_t)v;
			break;
		case O_CHANNELS:
			if (parse_size(optarg, &v) || v < 1 || v > TG_MAX_CHANNELS) return bad(o, optarg);
			c.channels = (uint32_t)v;
			break;
		case O_BYTES:
			if (parse_size(optarg, &c.bytes) || !c.bytes) return bad(o, optarg);
			break;
		case O_DURATION:
			if (parse_dur(optarg, &c.duration_ns) || !c.duration_ns) return bad(o, optarg);
			break;
		case O_MTU:
			if (parse_size(optarg, &v) || v < 256 || v > 4096) return bad(o, optarg);
			c.mtu = (uint32_t)v;
			break;
		case O_SLICE:
			if (parse_size(optarg, &v) || v > (1u << 20) || v < 1) return bad(o, optarg);
			c.slice = (uint32_t)v;
			break;
		case O_MSG:
			if (parse_size(optarg, &v) || v < 1 || v > (1u << 30)) return bad(o, optarg);
			c.msg = (uint32_t)v;
			break;
		case O_GBPS:
			c.gbps = strtod(optarg, &end);
			if (*end || !(c.gbps > 0) || c.gbps > 100000) return bad(o, optarg);
			break;
		case O_STRAGGLER:
			if (parse_size(optarg, &v) || v >= TG_MAX_NODES) return bad(o, optarg);
			c.straggler = (int32_t)v;
			break;
		case O_SLOWDOWN:
			c.slowdown = strtod(optarg, &end);
			if (*end || !(c.slowdown >= 1) || c.slowdown > 1e6) return bad(o, optarg);
			break;
		case O_ITERS:
			if (parse_size(optarg, &v) || v < 1 || v > 100000) return bad(o, optarg);
			c.iters = (uint32_t)v;
			break;
		case O_GAP:
			if (parse_dur(optarg, &c.gap_ns)) return bad(o, optarg);
			break;
		case O_PROP:
			if (parse_dur(optarg, &c.prop_ns) || c.prop_ns > 1000000000ull) return bad(o, optarg);
			break;
		case O_ACK_EVERY:
			if (parse_size(optarg, &v) || v < 1 || v > 1000000) return bad(o, optarg);
			c.ack_every = (uint32_t)v;
			break;
		case O_NO_CTS: c.cts = 0; break;
		case O_IPV6: c.ipv6 = 1; break;
		case O_VLAN:
			if (parse_size(optarg, &v) || v > 4094) return bad(o, optarg);
			c.vlan = (int)v;
			break;
		case O_SNAPLEN:
			if (parse_size(optarg, &v) || v < 64 || v > 262144) return bad(o, optarg);
			c.snaplen = (uint32_t)v;
			break;
		case O_USEC: c.usec = 1; break;
		case O_SEED:
			if (parse_size(optarg, &c.seed)) return bad(o, optarg);
			break;
		case O_START:
			if (parse_size(optarg, &c.start_ns)) return bad(o, optarg);
			break;
		case O_QPS:
			if (parse_size(optarg, &c.qps) || !c.qps || c.qps > 100000000ull) return bad(o, optarg);
			break;
		case O_EXPECT: expect = 1; break;
		case 'o': out = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return bad(argv[optind - 1], "unknown option or missing value");
		}
	}
	if (!out || optind != argc) {
		fprintf(stderr, "pulse-tracegen: need -o FILE and no other arguments (see --help)\n");
		return 2;
	}
	if (c.straggler >= (int32_t)c.nodes) {
		fprintf(stderr, "pulse-tracegen: --straggler %d: only %u nodes\n", c.straggler, c.nodes);
		return 2;
	}
	struct tg_result r;
	char err[512];
	if (tg_generate(&c, out, &r, err, sizeof err)) {
		fprintf(stderr, "pulse-tracegen: %s\n", err);
		return 1;
	}
	fprintf(stderr, "pulse-tracegen: %s: %" PRIu64 " packets (%" PRIu64 " data, %" PRIu64
			" ACK/CTS), %" PRIu64 " bytes, %.6f s of traffic\n",
		out, r.packets, r.data_packets, r.ctl_packets, r.bytes_written,
		(double)(r.last_ns - r.first_ns) / 1e9);
	if (expect) {
		printf("# connection: src -> dst, sending QPN -> receiving QPN, data payload bytes, messages\n");
		for (uint32_t k = 0; k < r.nconns; k++) {
			const struct tg_conn_info *ci = &r.conns[k];
			uint8_t a[16], b[16];
			tg_node_addr(&c, ci->src, a);
			tg_node_addr(&c, ci->dst, b);
			printf("conn %u: node %u -> node %u, QPN %u -> %u, %" PRIu64 " bytes, %" PRIu64
			       " messages, channel %u%s\n",
			       k, ci->src, ci->dst, ci->src_qpn, ci->dst_qpn, ci->data_bytes, ci->data_msgs,
			       ci->channel, c.pattern == TG_TREE ? (ci->tree ? ", tree 1" : ", tree 0") : "");
		}
		uint64_t s = c.nodes;
		if (c.pattern == TG_RING)
			printf("# Appendix B, ring all-reduce: each rank sends 2*count*(s-1)/s = %.1f bytes "
			       "(count %" PRIu64 ", s %" PRIu64 ")\n",
			       2.0 * (double)c.bytes * (double)(s - 1) / (double)s, c.bytes, s);
		else if (c.pattern == TG_TREE)
			printf("# Appendix B, tree all-reduce: count = %" PRIu64 " bytes per tree link and "
			       "direction, split evenly over the two trees\n", c.bytes);
	}
	tg_result_free(&r);
	return 0;
}
