/* Communicator ids that are equal on every rank without any communication.
 *
 *  - ncclCommInitRank/InitRankConfig: every rank passes the same ncclUniqueId,
 *    so id = H("uid", its 128 bytes). InitRankScalable: H over all nId ids.
 *  - ncclCommSplit: collective over the parent, so every member knows the
 *    parent's id and how many splits of that parent came before (the k-th
 *    split is the k-th on every rank); members with the same color land in
 *    the same child: id = H("split", parent id, k, color).
 *  - ncclCommInitAll: all ranks live in this one process; the id only has
 *    to be unique: H("all", pid, call number, device index).
 * H is 64-bit FNV-1a with a final avalanche (splitmix64); 0 is never returned
 * (0 means "unknown" in records). Not NCCL's commHash, which changes between
 * NCCL versions; the profiler plugin reports that one next to ours. */
#include <string.h>

#include "hook.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t finish(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x ? x : 1;
}

#define FNV_INIT 0xcbf29ce484222325ull

uint64_t pulse_comm_id_from_bytes(const void *bytes, size_t n)
{
	uint64_t h = fnv(FNV_INIT, "uid", 3);
	return finish(fnv(h, bytes, n));
}

uint64_t pulse_comm_id_split(uint64_t parent, uint64_t split_index, int color)
{
	uint64_t h = fnv(FNV_INIT, "split", 5);
	h = fnv(h, &parent, sizeof parent);
	h = fnv(h, &split_index, sizeof split_index);
	int64_t c = color;
	return finish(fnv(h, &c, sizeof c));
}

uint64_t pulse_comm_id_local(uint32_t pid, uint64_t call_index, int dev_index)
{
	uint64_t h = fnv(FNV_INIT, "all", 3);
	h = fnv(h, &pid, sizeof pid);
	h = fnv(h, &call_index, sizeof call_index);
	int64_t d = dev_index;
	return finish(fnv(h, &d, sizeof d));
}
