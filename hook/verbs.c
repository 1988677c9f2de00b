/* Verbs interposition. NCCL dlopens libibverbs and resolves its entry points
 * with dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1"), so a plain LD_PRELOAD
 * definition of ibv_modify_qp is never called on that path. The hook
 * therefore also exports dlsym and dlvsym: a lookup of ibv_modify_qp,
 * ibv_create_qp or ibv_destroy_qp in a real handle returns the wrapper below
 * (after remembering what the real lookup found); every other lookup is a
 * tail call into glibc, so glibc still sees the original caller (RTLD_NEXT
 * keeps its meaning). Programs that link libibverbs directly reach the same
 * wrappers through ordinary symbol interposition.
 *
 * On a transition to RTR the wrapper records the device, port, local QPN,
 * destination QPN, remote GID, and the process and GPU; the real function's
 * result is returned unchanged. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "hook.h"

/* The members the hook reads, at the offsets of libibverbs' ABI (stable since
 * IBVERBS_1.1): a libibverbs-dev whose header moved them would make records
 * of a running libibverbs wrong, so the build stops instead. */
_Static_assert(offsetof(struct ibv_qp_attr, dest_qp_num) == 28, "verbs ABI");
_Static_assert(offsetof(struct ibv_qp_attr, ah_attr) == 56, "verbs ABI");
_Static_assert(sizeof(struct ibv_ah_attr) == 32, "verbs ABI");
_Static_assert(offsetof(struct ibv_qp, qp_num) == 52, "verbs ABI");
_Static_assert(offsetof(struct ibv_qp, context) == 0, "verbs ABI");
_Static_assert(offsetof(struct ibv_context, device) == 0, "verbs ABI");
_Static_assert(offsetof(struct ibv_device, name) == 24, "verbs ABI");
_Static_assert(IBV_QP_STATE == (1 << 0) && IBV_QP_AV == (1 << 7) && IBV_QP_DEST_QPN == (1 << 20) &&
		       IBV_QPS_RTR == 2,
	       "verbs ABI");

/* The dlsym/dlvsym entry points are in dlsym.c. */

typedef int (*modify_fn)(struct ibv_qp *, struct ibv_qp_attr *, int);
typedef struct ibv_qp *(*create_fn)(struct ibv_pd *, struct ibv_qp_init_attr *);
typedef int (*destroy_fn)(struct ibv_qp *);
typedef struct ibv_qp *(*dv_create_fn)(struct ibv_context *, struct ibv_qp_init_attr_ex *,
				       struct mlx5dv_qp_init_attr *);

static _Atomic(modify_fn) real_modify;
static _Atomic(create_fn) real_create;
static _Atomic(destroy_fn) real_destroy;
static _Atomic(dv_create_fn) real_dv_create;

PULSE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
PULSE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init);
PULSE_EXPORT int ibv_destroy_qp(struct ibv_qp *qp);
PULSE_EXPORT struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
					     struct mlx5dv_qp_init_attr *dv_attr);

static void *wrapper_of(int w)
{
	switch (w) {
	case PULSE_W_MODIFY: return (void *)ibv_modify_qp;
	case PULSE_W_CREATE: return (void *)ibv_create_qp;
	case PULSE_W_MLX5_CREATE: return (void *)mlx5dv_create_qp;
	default: return (void *)ibv_destroy_qp;
	}
}

/* `real` is what the lookup found. Remember it and hand out the wrapper. */
void *pulse_verbs_swap_in(int w, void *real, const char *name)
{
	if (!real)
		return NULL;
	if (real == wrapper_of(w)) {
		/* RTLD_DEFAULT found our own export: the real one is the next. */
		real = pulse_next(name);
		if (!real)
			return wrapper_of(w);
	}
	if (!pulse_hook_ready())
		return real; /* disabled: hand out the real function */
	switch (w) {
	case PULSE_W_MODIFY: atomic_store(&real_modify, (modify_fn)real); break;
	case PULSE_W_CREATE: atomic_store(&real_create, (create_fn)real); break;
	case PULSE_W_MLX5_CREATE: atomic_store(&real_dv_create, (dv_create_fn)real); break;
	default: atomic_store(&real_destroy, (destroy_fn)real); break;
	}
	return wrapper_of(w);
}

/* Direct linking: the first call finds the next definition. */
static void *resolve_next(int w)
{
	static const char *const names[] = { "ibv_modify_qp", "ibv_create_qp", "ibv_destroy_qp",
					     "mlx5dv_create_qp" };
	void *f = pulse_real_dlvsym(RTLD_NEXT, names[w], pulse_verbs_version(w));
	if (!f)
		f = pulse_next(names[w]);
	if (!f) /* linked by a module dlopened with RTLD_LOCAL (find_loaded.c) */
		f = pulse_loaded_sym(w == PULSE_W_MLX5_CREATE ? "libmlx5.so" : "libibverbs.so", names[w]);
	return f == wrapper_of(w) ? NULL : f;
}

static void qp_common(struct pulse_hook_record *r, const struct ibv_qp *qp)
{
	if (!qp)
		return;
	r->u.qp.qpn = qp->qp_num;
	const struct ibv_context *ctx = qp->context;
	if (ctx && ctx->device) {
		const char *n = ctx->device->name;
		size_t len = strnlen(n, sizeof r->u.qp.dev - 1);
		memcpy(r->u.qp.dev, n, len);
		r->u.qp.dev[len] = '\0';
	}
}

PULSE_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	modify_fn f = atomic_load_explicit(&real_modify, memory_order_acquire);
	if (!f) {
		f = (modify_fn)resolve_next(PULSE_W_MODIFY);
		if (!f)
			return 95; /* EOPNOTSUPP: no libibverbs behind us */
		atomic_store(&real_modify, f);
	}
	int rtr = attr && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR;
	if (!rtr || !pulse_hook_ready())
		return f(qp, attr, attr_mask);
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_hook_now_ns();
	int res = f(qp, attr, attr_mask);
	qp_common(&r, qp);
	r.u.qp.attr_mask = (uint32_t)attr_mask;
	r.u.qp.result = res;
	if (attr_mask & IBV_QP_DEST_QPN)
		r.u.qp.dest_qpn = attr->dest_qp_num;
	if (attr_mask & IBV_QP_AV) {
		r.u.qp.port = attr->ah_attr.port_num;
		r.u.qp.is_global = attr->ah_attr.is_global;
		r.u.qp.sgid_index = attr->ah_attr.grh.sgid_index;
		if (attr->ah_attr.is_global)
			memcpy(r.u.qp.remote_gid, attr->ah_attr.grh.dgid.raw, 16);
	}
	pulse_hook_gpu_identify(&r.u.qp.gpu);
	pulse_hook_emit(&r, PULSE_HOOK_QP_RTR);
	return res;
}

PULSE_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	create_fn f = atomic_load_explicit(&real_create, memory_order_acquire);
	if (!f) {
		f = (create_fn)resolve_next(PULSE_W_CREATE);
		if (!f)
			return NULL;
		atomic_store(&real_create, f);
	}
	if (!pulse_hook_ready())
		return f(pd, init);
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_hook_now_ns();
	struct ibv_qp *qp = f(pd, init);
	qp_common(&r, qp);
	r.u.qp.result = qp ? 0 : -1;
	pulse_hook_gpu_identify(&r.u.qp.gpu);
	pulse_hook_emit(&r, PULSE_HOOK_QP_CREATE);
	return qp;
}

PULSE_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	destroy_fn f = atomic_load_explicit(&real_destroy, memory_order_acquire);
	if (!f) {
		f = (destroy_fn)resolve_next(PULSE_W_DESTROY);
		if (!f)
			return 95;
		atomic_store(&real_destroy, f);
	}
	if (!pulse_hook_ready())
		return f(qp);
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_hook_now_ns();
	qp_common(&r, qp); /* before: the QP is freed by the call */
	int res = f(qp);
	r.u.qp.result = res;
	r.u.qp.gpu.cuda_dev = -1;
	pulse_hook_emit(&r, PULSE_HOOK_QP_DESTROY);
	return res;
}

/* mlx5dv_create_qp (libmlx5, MLX5_1.3): NCCL creates its QPs with it when
 * NCCL_IB_OOO_RQ=1, past ibv_create_qp. Recorded as a QP_CREATE with
 * PULSE_HOOK_F_MLX5DV; its RTR still goes through ibv_modify_qp. */
PULSE_EXPORT struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
					     struct mlx5dv_qp_init_attr *dv_attr)
{
	dv_create_fn f = atomic_load_explicit(&real_dv_create, memory_order_acquire);
	if (!f) {
		f = (dv_create_fn)resolve_next(PULSE_W_MLX5_CREATE);
		if (!f)
			return NULL;
		atomic_store(&real_dv_create, f);
	}
	if (!pulse_hook_ready())
		return f(ctx, attr, dv_attr);
	struct pulse_hook_record r;
	memset(&r, 0, sizeof r);
	r.time_ns = pulse_hook_now_ns();
	struct ibv_qp *qp = f(ctx, attr, dv_attr);
	qp_common(&r, qp);
	r.flags |= PULSE_HOOK_F_MLX5DV;
	r.u.qp.result = qp ? 0 : -1;
	pulse_hook_gpu_identify(&r.u.qp.gpu);
	pulse_hook_emit(&r, PULSE_HOOK_QP_CREATE);
	return qp;
}
