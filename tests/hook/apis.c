/* The NCCL entry points the training loop does not use, verbs called
 * directly (linked, not dlopened), fork, and what dlsym(RTLD_NEXT) returns
 * to a program when an interposer is loaded. Knows nothing about Pulse.
 * Prints "child pid N" for the forked child; exit 0 when every call
 * returned what NCCL/verbs returned. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "../../hook/nccl_abi.h"

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t ncclCommInitAll(ncclComm_t *, int, const int *);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *);
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
ncclResult_t ncclCommDestroy(ncclComm_t);
ncclResult_t ncclCommAbort(ncclComm_t);
ncclResult_t ncclBcast(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
			   cudaStream_t);

static int fails;
#define EXPECT(cond)                                                      \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "apis: %s failed\n", #cond);      \
			fails++;                                          \
		}                                                         \
	} while (0)

int main(void)
{
	static char buf[256];
	cudaStream_t s = (cudaStream_t)(uintptr_t)0x7000;
	/* From the main program, RTLD_NEXT means "the first object after me". */
	void *next = dlsym(RTLD_NEXT, "ncclAllReduce");
	void *dflt = dlsym(RTLD_DEFAULT, "ncclAllReduce");
	EXPECT(next != NULL && next == dflt);

	ncclUniqueId ids[2];
	EXPECT(ncclGetUniqueId(&ids[0]) == ncclSuccess);
	memset(&ids[1], 0x42, sizeof ids[1]);
	ncclComm_t a, all[2], sc, none = (ncclComm_t)&buf;
	EXPECT(ncclCommInitRank(&a, 2, ids[0], 1) == ncclSuccess);
	EXPECT(ncclBcast(buf, 4, 2, 1, a, s) == ncclSuccess);
	EXPECT(ncclBcast(buf, 4, 2, 5, a, s) == ncclInvalidArgument); /* bad root: NCCL's error */
	EXPECT(ncclCommSplit(a, -1, 0, &none, NULL) == ncclSuccess && none == NULL);
	EXPECT(ncclCommInitAll(all, 2, (const int[]){ 3, 5 }) == ncclSuccess);
	EXPECT(ncclCommInitRankScalable(&sc, 4, 2, 2, ids, NULL) == ncclSuccess);
	EXPECT(ncclCommAbort(sc) == ncclSuccess);
	EXPECT(ncclCommDestroy(all[0]) == ncclSuccess && ncclCommDestroy(all[1]) == ncclSuccess);

	/* Verbs linked directly. */
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_pd *pd = ibv_alloc_pd(ibv_open_device(l[0]));
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof init);
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	EXPECT(qp != NULL);
	struct ibv_qp_attr at;
	memset(&at, 0, sizeof at);
	at.qp_state = IBV_QPS_RTR;
	at.dest_qp_num = 0xabcde;
	at.ah_attr.port_num = 2;
	EXPECT(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_AV) == 0);
	EXPECT(qp->state == IBV_QPS_RTR);
	printf("apis: direct qpn=%u\n", qp->qp_num);
	EXPECT(ibv_destroy_qp(qp) == 0);

	/* dlvsym of the old ABI's ibv_modify_qp gives the 1.0 function (the
	 * stand-in's refuses with ENOSYS); a 1.1 lookup after it still gives a
	 * 1.1 function that works. */
	void *h = dlopen("libibverbs.so.1", RTLD_NOW);
	EXPECT(h != NULL);
	if (h) {
		int (*m10)(struct ibv_qp *, struct ibv_qp_attr *, int);
		int (*m11)(struct ibv_qp *, struct ibv_qp_attr *, int);
		int (*cr)(struct ibv_pd *, struct ibv_qp_init_attr *);
		*(void **)&m10 = dlvsym(h, "ibv_modify_qp", "IBVERBS_1.0");
		*(void **)&m11 = dlvsym(h, "ibv_modify_qp", "IBVERBS_1.1");
		*(void **)&cr = dlvsym(h, "ibv_create_qp", "IBVERBS_1.1");
		EXPECT(m10 && m11 && cr && (void *)m10 != (void *)m11);
		qp = ibv_create_qp(pd, &init);
		EXPECT(qp != NULL);
		if (m10 && m11 && qp) {
			at.dest_qp_num = 0x1234;
			int mask = IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_AV;
			EXPECT(m10(qp, &at, mask) == 38 /* ENOSYS: the 1.0 function */);
			EXPECT(m11(qp, &at, mask) == 0);
			printf("apis: dlvsym qpn=%u\n", qp->qp_num);
			if ((void *)m10 != (void *)m11)
				printf("apis: dlvsym 1.0 passed through\n");
			EXPECT(ibv_destroy_qp(qp) == 0);
		}
		(void)cr;
	}

	/* mlx5dv_create_qp (NCCL_IB_OOO_RQ=1): linked directly, and through
	 * dlvsym of its one version as NCCL looks it up; a lookup of another
	 * version is not the hook's business and finds nothing here. */
	struct ibv_qp_init_attr_ex ix;
	memset(&ix, 0, sizeof ix);
	ix.pd = pd;
	ix.qp_type = IBV_QPT_RC;
	struct mlx5dv_qp_init_attr dv;
	memset(&dv, 0, sizeof dv);
	qp = mlx5dv_create_qp(ibv_open_device(l[0]), &ix, &dv);
	EXPECT(qp != NULL);
	if (qp) {
		printf("apis: mlx5dv direct qpn=%u\n", qp->qp_num);
		EXPECT(ibv_destroy_qp(qp) == 0);
	}
	void *h5 = dlopen("libmlx5.so.1", RTLD_NOW);
	EXPECT(h5 != NULL);
	if (h5) {
		struct ibv_qp *(*dvc)(struct ibv_context *, struct ibv_qp_init_attr_ex *,
				      struct mlx5dv_qp_init_attr *);
		*(void **)&dvc = dlvsym(h5, "mlx5dv_create_qp", "MLX5_1.3");
		EXPECT(dvc != NULL && (void *)dvc == dlsym(h5, "mlx5dv_create_qp"));
		EXPECT(dlvsym(h5, "mlx5dv_create_qp", "MLX5_1.0") == NULL);
		qp = dvc ? dvc(ibv_open_device(l[0]), &ix, &dv) : NULL;
		EXPECT(qp != NULL);
		if (qp) {
			printf("apis: mlx5dv dlvsym qpn=%u\n", qp->qp_num);
			EXPECT(ibv_destroy_qp(qp) == 0);
		}
	}

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int bad = ncclAllReduce(buf, buf, 7, 7, 0, a, s) != ncclSuccess;
		_exit(bad);
	}
	printf("child pid %d\n", (int)pid);
	int st = 0;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT(ncclAllReduce(buf, buf, 9, 7, 0, a, s) == ncclSuccess);
	EXPECT(ncclCommDestroy(a) == ncclSuccess);
	printf("apis: %d failures\n", fails);
	return fails != 0;
}
