/* Stand-in libmlx5.so.1 for the interception tests: mlx5dv_create_qp with
 * rdma-core's symbol version (MLX5_1.3, fake_mlx5.map), as NCCL reaches it
 * with NCCL_IB_OOO_RQ=1. It makes a QP on the stand-in verbs' context; QPNs
 * start at 0x800 so that a test can tell them from ibv_create_qp's. No RDMA
 * device is involved. */
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

static uint32_t g_next_qpn = 0x800;

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				struct mlx5dv_qp_init_attr *dv)
{
	(void)dv;
	if (!ctx || !attr || !attr->pd)
		return NULL;
	struct ibv_qp *qp = calloc(1, sizeof *qp);
	if (!qp)
		return NULL;
	qp->context = ctx;
	qp->qp_context = attr->qp_context;
	qp->pd = attr->pd;
	qp->qp_type = attr->qp_type;
	qp->qp_num = __atomic_fetch_add(&g_next_qpn, 1, __ATOMIC_RELAXED);
	return qp;
}
