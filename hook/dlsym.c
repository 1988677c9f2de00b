/* The hook's dlsym and dlvsym. NCCL dlopens libibverbs and resolves its
 * entry points with dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1"), so a
 * plain LD_PRELOAD definition of ibv_modify_qp is never called on that
 * path. A lookup of ibv_modify_qp, ibv_create_qp, ibv_destroy_qp or
 * mlx5dv_create_qp in a
 * real handle returns the wrapper in verbs.c (which remembers what the real
 * lookup found; dlvsym only for version NULL or "IBVERBS_1.1"); every other lookup is a sibling call into glibc, so glibc
 * still sees the original caller and RTLD_NEXT keeps its meaning.
 *
 * Sanitizer runtimes and profilers call dlsym while they start, before
 * anything else works: this file and real_sym.c call nothing from libc on
 * that path and are never sanitizer-instrumented (hook.mk). */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "hook.h"

static int which(const char *name)
{
	if (!name)
		return PULSE_W_NONE;
	if (name[0] == 'm' && pulse_str_eq(name, "mlx5dv_create_qp"))
		return PULSE_W_MLX5_CREATE;
	if (name[0] != 'i' || name[1] != 'b' || name[2] != 'v' || name[3] != '_')
		return PULSE_W_NONE;
	if (pulse_str_eq(name + 4, "modify_qp"))
		return PULSE_W_MODIFY;
	if (pulse_str_eq(name + 4, "create_qp"))
		return PULSE_W_CREATE;
	if (pulse_str_eq(name + 4, "destroy_qp"))
		return PULSE_W_DESTROY;
	return PULSE_W_NONE;
}

PULSE_EXPORT void *dlsym(void *handle, const char *name)
{
	int w = handle == RTLD_NEXT ? PULSE_W_NONE : which(name);
	if (w != PULSE_W_NONE)
		return pulse_verbs_swap_in(w, pulse_real_dlsym(handle, name), name);
	void *(*f)(void *, const char *) = pulse_dlsym_ptr();
	if (!f)
		return NULL;
	return f(handle, name); /* a sibling call: glibc sees our caller */
}

/* Only the version NCCL asks for (or none) is wrapped: the wrappers have
 * the IBVERBS_1.1 ABI (mlx5dv_create_qp: MLX5_1.3, its only version) and keep one real pointer per function, so handing
 * one out for "IBVERBS_1.0" would return a function of the wrong ABI and
 * point later 1.1 calls at the 1.0 one. Other versions pass through. */
PULSE_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
	/* glibc declares version nonnull, callers pass NULL all the same:
	 * keep the compiler from dropping the test */
	const char *v = version;
	__asm__("" : "+r"(v));
	int w = handle == RTLD_NEXT ? PULSE_W_NONE : which(name);
	if (w != PULSE_W_NONE && v && !pulse_str_eq(v, pulse_verbs_version(w)))
		w = PULSE_W_NONE;
	if (w != PULSE_W_NONE)
		return pulse_verbs_swap_in(w, pulse_real_dlvsym(handle, name, version), name);
	void *(*f)(void *, const char *, const char *) = pulse_dlvsym_ptr();
	if (!f)
		return NULL;
	return f(handle, name, version);
}
