/* NCCL's three protocols (sim/README.md, "NCCL protocols"): which one an
 * operator runs with, and what that changes on the wire.
 *
 * Facts from NVIDIA/nccl (read, not copied):
 *  - src/include/device.h: an LL line (union ncclLLFifoLine) is 16 bytes,
 *    two 4-byte data words each followed by a 4-byte flag, so the receiver
 *    can poll the data itself: twice the bytes on the wire. An LL128 line is
 *    NCCL_LL128_LINESIZE = 128 bytes of which NCCL_LL128_DATAELEMS = 15 of
 *    its 16 8-byte elements carry data: 120 of 128 bytes (6.7% more).
 *  - The per-connection buffers hold NCCL_STEPS = 8 steps. One LL step is
 *    NCCL_LL_LINES_PER_THREAD (8) x NCCL_LL_MAX_NTHREADS (512) lines of
 *    8 data bytes: 32 KiB of data. One LL128 step is
 *    NCCL_LL128_ELEMS_PER_THREAD (120) x NCCL_LL128_MAX_NTHREADS (640)
 *    8-byte elements, 15/16 of them data: 576000 bytes. A step is one
 *    network send; Simple sends slices of 2 steps (the scenario's
 *    slice_bytes and slots, unchanged).
 *  - src/graph/tuning.cc: NCCL picks, per call, the (algorithm, protocol)
 *    with the least modelled time lat + bytes / bw. Per inter-node step
 *    the latency (hwLat, NET, ring) is 2.7 us for LL, 4.0 for LL128 and 9.6
 *    for Simple (Simple's receiver must flush the GPU-direct write and
 *    signal the GPU through the proxy; LL's and LL128's flags travel with
 *    the data); base latencies ring 3.6 / 10.0 / 8.4, tree 4.4 / 4.4 / 0.
 *    The bus bandwidth of LL on a multi-node ring is a quarter of
 *    Simple's (the GPU polls and stores 8-byte words), of LL on a tree
 *    1/3.8; LL128 gets 0.92 (ring) or 0.915 (tree) of it, at most its
 *    per-channel cap (ll128MaxBwPerCh).
 *  - src/enqueue.cc: send/receive use LL when the message is at most
 *    NCCL_P2P_LL_THRESHOLD (16384) bytes, else Simple; P2P has no LL128
 *    (ncclDevWorkP2p carries only a protoLL bit).
 */
#include <math.h>

#include "internal.h"

#define LL_STEP_DATA (8u * 512u * 8u)
#define LL128_STEP_DATA (120u * 640u * 8u / 16u * 15u)
#define NCCL_STEPS 8
#define P2P_LL_THRESHOLD 16384u

/* tuning.cc's per-step network latencies (us) of the ring, by protocol */
static const double net_lat_ring[4] = { [PROTO_SIMPLE] = 9.6, [PROTO_LL] = 2.7,
					[PROTO_LL128] = 4.0 };
static const double net_lat_tree[4] = { [PROTO_SIMPLE] = 50, [PROTO_LL] = 5.0,
					[PROTO_LL128] = 8.5 };
static const double nvl_lat_ring[4] = { [PROTO_SIMPLE] = 3.4, [PROTO_LL] = 0.47,
					[PROTO_LL128] = 1.9 };
static const double nvl_lat_tree[4] = { [PROTO_SIMPLE] = 28, [PROTO_LL] = 0.52,
					[PROTO_LL128] = 1.2 };
static const double base_lat_ring[4] = { [PROTO_SIMPLE] = 8.4, [PROTO_LL] = 3.6,
					 [PROTO_LL128] = 10.0 };
static const double base_lat_tree[4] = { [PROTO_SIMPLE] = 0, [PROTO_LL] = 4.4,
					 [PROTO_LL128] = 4.4 };

uint64_t proto_wire(int proto, uint64_t data)
{
	if (proto == PROTO_LL)
		return (data + 7) / 8 * 16;
	if (proto == PROTO_LL128)
		return (data + 119) / 120 * 128;
	return data;
}

uint64_t proto_slice(const struct sim *sm, int proto)
{
	if (proto == PROTO_LL)
		return LL_STEP_DATA;
	if (proto == PROTO_LL128)
		return LL128_STEP_DATA;
	return sm->s->slice_bytes;
}

int proto_chunk_slices(const struct sim *sm, int proto)
{
	return proto == PROTO_SIMPLE ? sm->s->chunk_slices : 1;
}

int proto_slots(const struct sim *sm, int proto)
{
	return proto == PROTO_SIMPLE ? sm->s->slots : NCCL_STEPS;
}

double proto_latency_factor(int proto)
{
	return proto == PROTO_SIMPLE ? 1 : net_lat_ring[proto] / net_lat_ring[PROTO_SIMPLE];
}

/* The LL protocols are paced by the GPU threads of a channel, not by the
 * link: a connection's wire rate is at most its channel's share of the
 * link times tuning.cc's bandwidth factor, times the wire overhead (the
 * factor is stated in data). */
double proto_max_rate(const struct sim *sm, int proto, int nchannels, double nic_cap)
{
	if (proto == PROTO_SIMPLE || nchannels < 1)
		return 0;
	double share = nic_cap / nchannels;
	if (proto == PROTO_LL)
		return share * 0.25 * 2;
	(void)sm;
	return share * 0.92 * 128.0 / 120.0;
}

static int comm_nodes(const struct sim *sm, const struct comm *c)
{
	int n = 0;
	for (int i = 0; i < c->n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = sm->ranks[c->ranks[j]].host == sm->ranks[c->ranks[i]].host;
		n += !seen;
	}
	return n;
}

/* tuning.cc's model time (us) of one collective with one protocol */
static double model_time(const struct sim *sm, const struct opinst *op, int tree, int p, int nodes)
{
	const struct sc_scenario *s = sm->s;
	int n = op->n;
	double nbytes = (double)op->bytes;
	if (op->type == PULSE_HOOK_OP_ALLGATHER || op->type == PULSE_HOOK_OP_REDUCESCATTER)
		nbytes *= n;
	double bus = s->nic_gbps / 8.0; /* GB/s: the channels together fill the NIC */
	int C = s->channels;
	/* ll128MaxBwPerCh: broadcast, reduce, all-gather, reduce-scatter, all-reduce */
	double ll128_cap = op->type == PULSE_HOOK_OP_BROADCAST       ? 18.8
			   : op->type == PULSE_HOOK_OP_REDUCE        ? 12.0
			   : op->type == PULSE_HOOK_OP_ALLGATHER     ? 18.3
			   : op->type == PULSE_HOOK_OP_REDUCESCATTER ? 15.2
								     : 16.7;
	double ppn = (double)n / nodes;
	double bw, lat;
	if (!tree) {
		int steps = op->type == PULSE_HOOK_OP_ALLREDUCE ? 2 * (n - 1)
			    : op->type == PULSE_HOOK_OP_ALLGATHER || op->type == PULSE_HOOK_OP_REDUCESCATTER
				    ? n - 1
				    : n;
		int inter = op->type == PULSE_HOOK_OP_ALLREDUCE ? 2 * (nodes - 1)
			    : op->type == PULSE_HOOK_OP_ALLGATHER || op->type == PULSE_HOOK_OP_REDUCESCATTER
				    ? nodes - 1
				    : nodes;
		bw = bus;
		if (p == PROTO_LL)
			bw *= 0.25;
		if (p == PROTO_LL128)
			bw = fmin(bw * (ppn < 2 ? 0.7 : 0.92), ll128_cap * C);
		bw *= (double)n / steps;
		double intra = nvl_lat_ring[p] * (p == PROTO_LL ? 1.8 : 1);
		lat = base_lat_ring[p] + (steps - inter) * intra + inter * net_lat_ring[p];
		if (p == PROTO_SIMPLE && op->type == PULSE_HOOK_OP_ALLREDUCE && nbytes >= n / 16.0 * 65536)
			lat *= 1.9; /* tuning.cc: the ring's plateau */
	} else {
		bw = fmin(bus * 0.9, nodes > 2 ? 80.0 : 110.0);
		if (p == PROTO_LL)
			bw /= 3.8;
		if (p == PROTO_LL128)
			bw = fmin(bw * 0.915, ll128_cap * C * 7.0 / 9.0);
		bw *= 0.5;
		double intra = nvl_lat_tree[p] * (p == PROTO_LL ? 1.8 : 1);
		lat = base_lat_tree[p] + 2 * ((ppn - 1) * intra + log2((double)nodes) * net_lat_tree[p]);
	}
	return lat + nbytes / (1000 * bw);
}

int proto_pick(const struct sim *sm, const struct opinst *op)
{
	int want = sm->s->protocol;
	if (want == PROTO_SIMPLE)
		return PROTO_SIMPLE;
	if (op->kind == OPK_P2P)
		return want != PROTO_LL128 && op->bytes <= P2P_LL_THRESHOLD ? PROTO_LL : PROTO_SIMPLE;
	if (want != PROTO_AUTO)
		return want;
	int nodes = comm_nodes(sm, op->cm), best = PROTO_SIMPLE;
	double tbest = 0;
	static const int order[3] = { PROTO_LL, PROTO_LL128, PROTO_SIMPLE };
	for (int k = 0; k < 3; k++) {
		double t = model_time(sm, op, op->kind == OPK_TREE, order[k], nodes);
		if (k == 0 || t < tbest) {
			tbest = t;
			best = order[k];
		}
	}
	return best;
}

const char *proto_name(int proto)
{
	return proto == PROTO_LL ? "ll" : proto == PROTO_LL128 ? "ll128" : "simple";
}
