/* A fake training loop, written against NCCL's API only: it knows nothing
 * about Pulse. Usage: train RANK NRANKS STEPS. Links the stand-in NCCL
 * (or a real one: the calls are NCCL's). Per step: the collectives of a
 * data/tensor-parallel step and an all-to-all built from grouped Send/Recv,
 * as PyTorch does. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../hook/nccl_abi.h"

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
				    ncclConfig_t *config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			   cudaStream_t);
ncclResult_t ncclAllGather(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
ncclResult_t ncclReduceScatter(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			       cudaStream_t);
ncclResult_t ncclBroadcast(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
			cudaStream_t);
ncclResult_t ncclAlltoAll(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

enum { I8 = 0, U8 = 1, I32 = 2, F32 = 7, F64 = 8, BF16 = 9 };
enum { SUM = 0, MAX = 2, MIN = 3 };

#define CHECK(call)                                                                   \
	do {                                                                          \
		ncclResult_t r_ = (call);                                             \
		if (r_ != ncclSuccess) {                                              \
			fprintf(stderr, "train: %s failed: %d\n", #call, r_);         \
			return 1;                                                     \
		}                                                                     \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: train RANK NRANKS STEPS\n");
		return 2;
	}
	int rank = atoi(argv[1]), nranks = atoi(argv[2]), steps = atoi(argv[3]);
	static float sb[4096], rb[4096];
	cudaStream_t s = (cudaStream_t)(uintptr_t)0x5000;
	ncclUniqueId id;
	ncclComm_t world, half;
	CHECK(ncclGetUniqueId(&id));
	CHECK(ncclCommInitRankConfig(&world, nranks, id, rank, NULL));
	CHECK(ncclCommSplit(world, rank % 2, rank, &half, NULL));
	for (int step = 0; step < steps; step++) {
		CHECK(ncclAllReduce(sb, rb, 1024, F32, SUM, world, s));
		CHECK(ncclAllGather(sb, rb, 256, BF16, world, s));
		CHECK(ncclReduceScatter(sb, rb, 128, F32, MAX, half, s));
		CHECK(ncclBroadcast(sb, rb, 64, I32, 0, half, s));
		CHECK(ncclReduce(sb, rb, 32, F64, MIN, 1, world, s));
		CHECK(ncclAlltoAll(sb, rb, 16, I8, world, s));
		CHECK(ncclGroupStart());
		for (int p = 0; p < nranks; p++) {
			CHECK(ncclSend(sb, 8, U8, p, world, s));
			CHECK(ncclRecv(rb, 8, U8, p, world, s));
		}
		CHECK(ncclGroupEnd());
	}
	CHECK(ncclCommDestroy(half));
	CHECK(ncclCommDestroy(world));
	printf("train: rank %d done\n", rank);
	return 0;
}
