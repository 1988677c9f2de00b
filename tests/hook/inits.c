#define _POSIX_C_SOURCE 200809L
/* The three ways NCCL initializes a communicator on threads of its own
 * (group.cc): inits inside ncclGroupStart/End, ncclCommInitAll, and a
 * non-blocking communicator (ncclConfig_t.blocking = 0, polled with
 * ncclCommGetAsyncError). Plus two grouped inits of the same rank and size,
 * which nothing can tell apart by rank and size. Knows nothing about
 * Pulse; exit 0 when every call returned what NCCL returned. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../hook/nccl_abi.h"

/* The leading members of nccl.h's ncclConfig_t. */
struct ncclConfig {
	size_t size;
	unsigned int magic, version;
	int blocking;
};

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
ncclResult_t ncclCommInitAll(ncclComm_t *, int, const int *);
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

static int fails;
#define EXPECT(cond)                                                      \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "inits: %s failed\n", #cond);     \
			fails++;                                          \
		}                                                         \
	} while (0)

static void uid(ncclUniqueId *id, int v)
{
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "inits-%d", v);
}

int main(void)
{
	ncclUniqueId a, b, c, d;
	uid(&a, 1), uid(&b, 2), uid(&c, 3), uid(&d, 4);
	ncclComm_t grouped, all[2], nb, x, y;
	/* grouped: NCCL runs the init at ncclGroupEnd, on its own thread */
	EXPECT(ncclGroupStart() == ncclSuccess);
	EXPECT(ncclCommInitRank(&grouped, 2, a, 1) == ncclSuccess);
	EXPECT(ncclGroupEnd() == ncclSuccess);
	/* InitAll: one thread per device */
	EXPECT(ncclCommInitAll(all, 2, (const int[]){ 0, 1 }) == ncclSuccess);
	/* non-blocking */
	struct ncclConfig cfg = { sizeof cfg, 0xcafebeef, 0, 0 };
	ncclResult_t r = ncclCommInitRankConfig(&nb, 4, b, 3, &cfg);
	EXPECT(r == ncclInProgress || r == ncclSuccess);
	for (int i = 0; i < 5000 && r == ncclInProgress; i++) {
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		EXPECT(ncclCommGetAsyncError(nb, &r) == ncclSuccess);
	}
	EXPECT(r == ncclSuccess);
	/* two grouped inits, both rank 1 of 2 */
	EXPECT(ncclGroupStart() == ncclSuccess);
	EXPECT(ncclCommInitRank(&x, 2, c, 1) == ncclSuccess);
	EXPECT(ncclCommInitRank(&y, 2, d, 1) == ncclSuccess);
	EXPECT(ncclGroupEnd() == ncclSuccess);
	EXPECT(ncclCommDestroy(y) == ncclSuccess && ncclCommDestroy(x) == ncclSuccess);
	EXPECT(ncclCommDestroy(nb) == ncclSuccess);
	EXPECT(ncclCommDestroy(all[1]) == ncclSuccess && ncclCommDestroy(all[0]) == ncclSuccess);
	EXPECT(ncclCommDestroy(grouped) == ncclSuccess);
	printf("inits: %d failures\n", fails);
	return fails != 0;
}
