/* The part of NCCL's public C API (nccl.h) that the hook and the profiler
 * plugin use, declared here so that nothing needs NCCL at build time. Only
 * what we pass through or read; the layouts are those of NCCL's nccl.h. */
#ifndef PULSE_NCCL_ABI_H
#define PULSE_NCCL_ABI_H

#include <stddef.h>

typedef struct ncclComm *ncclComm_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef int ncclResult_t; /* enum: ncclSuccess = 0 */
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct ncclConfig ncclConfig_t; /* only passed through */
typedef void *cudaStream_t;

#define ncclSuccess 0
#define ncclSystemError 2
#define ncclInvalidArgument 4
#define ncclInProgress 7 /* non-blocking communicator: init or call still running */

typedef void *ncclWindow_t;                             /* only passed through */
typedef struct ncclWaitSignalDesc ncclWaitSignalDesc_t; /* only passed through */
typedef struct ncclSimInfo ncclSimInfo_t;               /* only passed through */

#endif
