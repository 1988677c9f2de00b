/* The output directory of the cluster simulator (sim/run_cluster), which
 * is also the input of `pulse-host-agent --replay DIR` and
 * `pulse-analyzer --replay DIR`.
 *
 * The directory holds exactly what the real system would see on each
 * host, plus the ground truth in files that only evaluators read:
 *
 *   DIR/cluster.json            what a cluster operator knows (no failure):
 *     {"format":"pulse-cluster-run","version":1,
 *      "scenario":"<name>", "seed":N, "workload":"gpt"|"moe"|"standalone",
 *      "epoch_ns":32000, "poll_ns":1000000000,
 *      "hosts":[{"name":"host0","gpus":8,
 *                "nics":[{"dev":"mlx5_0","gpu":0,"gid":"fe80:...","gbps":400}]}]}
 *   DIR/hosts/<host>/<dev>.evs  one NIC's TX events and the agent's polls
 *                               (include/pulse/event_stream.h): NIC clock,
 *                               32-bit wrap; POLL records carry the host
 *                               CLOCK_REALTIME of that host when it polled.
 *   DIR/hosts/<host>/<dev>.pcap the same traffic as RoCEv2 packets (--pcap
 *                               only), for sim/run_trace.
 *   DIR/hosts/<host>/hook-<pid>.rec
 *                               one training process's interception
 *                               records, in time order, exactly what
 *                               libpulse-hook.so would have written to its
 *                               ring (format below). Times are that host's
 *                               CLOCK_REALTIME (offset and drift included).
 *   DIR/hosts/<host>/links.jsonl
 *                               what the host's rtnetlink reported of its
 *                               NICs' links, as the host agent's "link"
 *                               lines (include/pulse/host_event.h), in
 *                               time order, host clock; only when a link
 *                               changed (a NIC that went down). NIC
 *                               mlx5_K's netdev is named ethK.
 *   DIR/truth.json              ground truth: the failure (or null) with
 *                               host, GPU, class, type, severity, onset;
 *                               per-host clock parameters.
 *   DIR/truth-ops.jsonl         ground truth per operator and rank: call,
 *                               first and last byte on the wire, bytes per
 *                               peer, algorithm. Host clock of the rank.
 *
 * Nothing outside truth.json and truth-ops.jsonl may depend on the failure
 * except through its effect on traffic and timing, and what the host itself
 * observes of it (a NIC's link going down).
 *
 * Hook record file (".rec"), little-endian:
 *   header (32 bytes)
 *     0  char[8] magic "PULSEHKR"
 *     8  u16     version (PULSE_HKR_VERSION)
 *     10 u16     header_size (32; readers skip extra bytes)
 *     12 u16     record_size (sizeof(struct pulse_hook_record) = 120)
 *     14 u16     record_version (PULSE_HOOK_RECORD_VERSION)
 *     16 u32     pid
 *     20 u32     0
 *     24 u64     0
 *   records: struct pulse_hook_record images (host byte order, which is
 *   little-endian on every platform Pulse runs its host side on), in the
 *   order the process wrote them. A trailing partial record is a truncated
 *   file: readers report it and use the whole records before it. */
#ifndef PULSE_CLUSTER_RUN_H
#define PULSE_CLUSTER_RUN_H

#include <stdint.h>

#include "pulse/hook_record.h"
#include "pulse/le.h"

#define PULSE_CLUSTER_FORMAT "pulse-cluster-run"
#define PULSE_CLUSTER_VERSION 1
#define PULSE_TRUTH_FORMAT "pulse-truth"

#define PULSE_HKR_MAGIC "PULSEHKR"
#define PULSE_HKR_VERSION 1u
#define PULSE_HKR_HEADER_SIZE 32u

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hook record files are little-endian images of struct pulse_hook_record"
#endif

static inline void pulse_hkr_encode_header(uint8_t out[PULSE_HKR_HEADER_SIZE], uint32_t pid)
{
	static const char magic[8] = PULSE_HKR_MAGIC;
	for (unsigned i = 0; i < PULSE_HKR_HEADER_SIZE; i++)
		out[i] = 0;
	for (unsigned i = 0; i < 8; i++)
		out[i] = (uint8_t)magic[i];
	pulse_put_u16(out + 8, PULSE_HKR_VERSION);
	pulse_put_u16(out + 10, PULSE_HKR_HEADER_SIZE);
	pulse_put_u16(out + 12, (uint16_t)sizeof(struct pulse_hook_record));
	pulse_put_u16(out + 14, PULSE_HOOK_RECORD_VERSION);
	pulse_put_u32(out + 16, pid);
}

/* Returns 0 for a header this reader understands, else -1. */
static inline int pulse_hkr_check_header(const uint8_t *in, uint32_t len, uint16_t *header_size,
					 uint32_t *pid)
{
	static const char magic[8] = PULSE_HKR_MAGIC;
	if (len < PULSE_HKR_HEADER_SIZE)
		return -1;
	for (unsigned i = 0; i < 8; i++)
		if (in[i] != (uint8_t)magic[i])
			return -1;
	if (pulse_get_u16(in + 8) != PULSE_HKR_VERSION)
		return -1;
	*header_size = pulse_get_u16(in + 10);
	if (*header_size < PULSE_HKR_HEADER_SIZE)
		return -1;
	if (pulse_get_u16(in + 12) != sizeof(struct pulse_hook_record) ||
	    pulse_get_u16(in + 14) != PULSE_HOOK_RECORD_VERSION)
		return -1;
	*pid = pulse_get_u32(in + 16);
	return 0;
}

#endif
