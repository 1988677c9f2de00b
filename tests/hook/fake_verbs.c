/* Stand-in libibverbs.so.1 for the interception tests: the handful of entry
 * points NCCL uses, exported with the IBVERBS_1.0/1.1 symbol versions (see
 * fake_verbs.map), over rdma-core's own structs (<infiniband/verbs.h>). Its
 * one device is "mlx5_fake0", or FAKE_VERBS_DEV.
 * No RDMA device is involved. ibv_modify_qp applies the
 * state, and refuses (EINVAL) an RTR transition with dest_qp_num 0, so a
 * caller can see that results come back unchanged. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

static struct ibv_device g_dev = { .name = "mlx5_fake0" };
static struct ibv_device *g_list[2] = { &g_dev, NULL };
static struct ibv_context g_ctx = { .device = &g_dev };
static struct ibv_pd g_pd = { .context = &g_ctx };
static uint32_t g_next_qpn = 0x100;

/* verbs.h wraps ibv_get_device_list in a macro: the parentheses define the function */
struct ibv_device **(ibv_get_device_list)(int *n)
{
	/* FAKE_VERBS_DEV names the device (tests of the agent's GPU pairing) */
	const char *name = getenv("FAKE_VERBS_DEV");
	if (name && *name)
		snprintf(g_dev.name, sizeof g_dev.name, "%s", name);
	if (n)
		*n = 1;
	return g_list;
}

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	return dev == &g_dev ? &g_ctx : NULL;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	return ctx == &g_ctx ? &g_pd : NULL;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	if (!pd || !init)
		return NULL;
	struct ibv_qp *qp = calloc(1, sizeof *qp);
	if (!qp)
		return NULL;
	qp->context = pd->context;
	qp->qp_context = init->qp_context;
	qp->pd = pd;
	qp->qp_num = __atomic_fetch_add(&g_next_qpn, 1, __ATOMIC_RELAXED);
	return qp;
}

/* The default version, as rdma-core exports it (the 1.0 one is below). */
__attribute__((symver("ibv_modify_qp@@IBVERBS_1.1"))) int ibv_modify_qp_1_1(struct ibv_qp *qp,
									   struct ibv_qp_attr *attr, int mask);
int ibv_modify_qp_1_1(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (!qp || !attr)
		return EINVAL;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR &&
	    (!(mask & IBV_QP_DEST_QPN) || attr->dest_qp_num == 0))
		return EINVAL;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!qp)
		return EINVAL;
	free(qp);
	return 0;
}

/* rdma-core keeps ibv_modify_qp@IBVERBS_1.0 for binaries built against the
 * old ABI (a different struct layout). This one refuses everything with
 * ENOSYS, so a caller handed it instead of the 1.1 function notices. */
__attribute__((symver("ibv_modify_qp@IBVERBS_1.0"))) int ibv_modify_qp_1_0(struct ibv_qp *qp,
									  struct ibv_qp_attr *attr, int mask);
int ibv_modify_qp_1_0(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	(void)attr;
	(void)mask;
	return ENOSYS;
}
