/* Benchmark workload: N calls of ncclAllReduce and of grouped ncclSend on
 * the stand-in NCCL, timed here (CLOCK_MONOTONIC), ns per call printed.
 * Run with and without LD_PRELOAD=libpulse-hook.so by bench_hook. Waits
 * PAUSE_MS after init so a reader can attach before the timed loops. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../../hook/nccl_abi.h"

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			   cudaStream_t);
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
	static float buf[16];
	ncclUniqueId id;
	ncclComm_t c;
	if (ncclGetUniqueId(&id) || ncclCommInitRank(&c, 2, id, 0))
		return 1;
	usleep((useconds_t)pause_ms * 1000);
	int bad = 0;
	double t0 = now();
	for (long i = 0; i < n; i++)
		bad |= ncclAllReduce(buf, buf, 16, 7, 0, c, NULL);
	double t1 = now();
	ncclGroupStart();
	for (long i = 0; i < n; i++)
		bad |= ncclSend(buf, 16, 7, 1, c, NULL);
	ncclGroupEnd();
	double t2 = now();
	ncclCommDestroy(c);
	printf("allreduce_ns %.1f send_ns %.1f\n", (t1 - t0) / n, (t2 - t1) / n);
	return bad;
}
