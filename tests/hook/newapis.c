/* NCCL 2.22-2.29 entry points, called the way a program written for
 * them would: Gather/Scatter (2.28), the one-sided PutSignal/Signal/
 * WaitSignal (2.29), a reduction with an ncclRedOpCreatePreMulSum-sized
 * handle, a group closed by ncclGroupSimulateEnd (2.22) then a real one,
 * CommShrink (2.27), CommGrow (2.29), Finalize/Revoke/Suspend/Resume.
 * Knows nothing about Pulse; exit 0 when every call returned what NCCL
 * returned. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../hook/nccl_abi.h"

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclCommFinalize(ncclComm_t);
ncclResult_t ncclCommRevoke(ncclComm_t, int);
ncclResult_t ncclCommSuspend(ncclComm_t, int);
ncclResult_t ncclCommResume(ncclComm_t);
ncclResult_t ncclCommShrink(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);
ncclResult_t ncclCommGrow(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, ncclConfig_t *);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			   cudaStream_t);
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclGather(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclScatter(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclPutSignal(const void *, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
			   unsigned int, ncclComm_t, cudaStream_t);
ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t, cudaStream_t);
ncclResult_t ncclWaitSignal(int, ncclWaitSignalDesc_t *, ncclComm_t, cudaStream_t);

static int fails;
#define EXPECT(cond)                                                      \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "newapis: %s failed\n", #cond);   \
			fails++;                                          \
		}                                                         \
	} while (0)

int main(void)
{
	static char buf[1024], win[64], descs[64];
	cudaStream_t s = (cudaStream_t)(uintptr_t)0x5000;
	ncclUniqueId id, gid;
	ncclComm_t c, shrunk, grown;
	EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
	EXPECT(ncclCommInitRank(&c, 4, id, 1) == ncclSuccess);
	EXPECT(ncclGather(buf, buf, 16, 7, 2, c, s) == ncclSuccess);
	EXPECT(ncclScatter(buf, buf, 32, 7, 0, c, s) == ncclSuccess);
	EXPECT(ncclPutSignal(buf, 64, 1, 3, (ncclWindow_t)win, 128, 0, 0, 0, c, s) == ncclSuccess);
	EXPECT(ncclSignal(2, 0, 0, 0, c, s) == ncclSuccess);
	EXPECT(ncclWaitSignal(3, (ncclWaitSignalDesc_t *)descs, c, s) == ncclSuccess);
	/* a PreMulSum handle: ncclNumOps (5) and up, here past 8 bits */
	EXPECT(ncclAllReduce(buf, buf, 8, 7, 0x105, c, s) == ncclSuccess);
	/* simulated: NCCL launches none of these */
	EXPECT(ncclGroupStart() == ncclSuccess);
	EXPECT(ncclAllReduce(buf, buf, 100, 7, 0, c, s) == ncclSuccess);
	EXPECT(ncclSend(buf, 200, 7, 0, c, s) == ncclSuccess);
	EXPECT(ncclGroupSimulateEnd(NULL) == ncclSuccess);
	/* then the real group */
	EXPECT(ncclGroupStart() == ncclSuccess);
	EXPECT(ncclAllReduce(buf, buf, 300, 7, 0, c, s) == ncclSuccess);
	EXPECT(ncclSend(buf, 400, 7, 0, c, s) == ncclSuccess);
	EXPECT(ncclGroupEnd() == ncclSuccess);
	int excl[1] = { 3 };
	EXPECT(ncclCommShrink(c, excl, 1, &shrunk, NULL, 0) == ncclSuccess);
	EXPECT(ncclAllReduce(buf, buf, 5, 7, 0, shrunk, s) == ncclSuccess);
	memset(&gid, 0x33, sizeof gid);
	EXPECT(ncclCommGrow(c, 6, &gid, 1, &grown, NULL) == ncclSuccess);
	EXPECT(ncclAllReduce(buf, buf, 6, 7, 0, grown, s) == ncclSuccess);
	EXPECT(ncclCommSuspend(c, 1) == ncclSuccess);
	EXPECT(ncclCommResume(c) == ncclSuccess);
	EXPECT(ncclCommRevoke(shrunk, 0) == ncclSuccess);
	EXPECT(ncclCommFinalize(c) == ncclSuccess);
	EXPECT(ncclCommDestroy(grown) == ncclSuccess);
	EXPECT(ncclCommDestroy(shrunk) == ncclSuccess);
	EXPECT(ncclCommDestroy(c) == ncclSuccess);
	printf("newapis: %d failures\n", fails);
	return fails != 0;
}
