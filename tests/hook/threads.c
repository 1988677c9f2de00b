/* A multi-threaded NCCL user, knowing nothing about Pulse: THREADS threads,
 * each with its own communicator (as one process per GPU-thread would),
 * each making CALLS ncclAllReduce calls and, every 100 calls, a group of
 * one ncclSend and one ncclRecv. Usage: threads THREADS CALLS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hook/nccl_abi.h"

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			   cudaStream_t);
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);

static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_calls;

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	ncclUniqueId id;
	ncclComm_t c;
	float buf[4];
	int bad = 0;
	/* The stand-in NCCL's setup is not thread-safe; NCCL's init is called
	 * once per communicator anyway. */
	pthread_mutex_lock(&g_init_lock);
	ncclGetUniqueId(&id);
	id.internal[0] = (char)t; /* one job per thread */
	bad |= ncclCommInitRank(&c, 2, id, 0);
	pthread_mutex_unlock(&g_init_lock);
	if (bad)
		return (void *)1;
	for (long i = 0; i < g_calls; i++) {
		bad |= ncclAllReduce(buf, buf, (size_t)t + 1, 7, 0, c, (cudaStream_t)(uintptr_t)(t + 1));
		if (i % 100 == 99) {
			bad |= ncclGroupStart();
			bad |= ncclSend(buf, 1, 7, 1, c, NULL);
			bad |= ncclRecv(buf, 1, 7, 1, c, NULL);
			bad |= ncclGroupEnd();
		}
	}
	pthread_mutex_lock(&g_init_lock);
	bad |= ncclCommDestroy(c);
	pthread_mutex_unlock(&g_init_lock);
	return (void *)(intptr_t)bad;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	g_calls = argc > 2 ? atol(argv[2]) : 1000;
	if (n < 1 || n > 64)
		return 2;
	pthread_t th[64];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		void *r;
		pthread_join(th[i], &r);
		bad |= r != NULL;
	}
	printf("threads: %s\n", bad ? "failed" : "done");
	return bad;
}
