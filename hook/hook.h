/* libpulse-hook.so internals shared by its files. */
#ifndef PULSE_HOOK_INTERNAL_H
#define PULSE_HOOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pulse/hook_record.h"

#define PULSE_EXPORT __attribute__((visibility("default")))
#define PULSE_TLS __attribute__((tls_model("initial-exec"))) __thread

/* init.c: 1 when records can be written (initialises on first use). */
int pulse_hook_ready(void);
/* Fill the common header (version, source, pid, tid, time) and push. Never
 * blocks; a record that cannot be written is counted as dropped. */
void pulse_hook_emit(struct pulse_hook_record *rec, uint8_t kind);
uint64_t pulse_hook_now_ns(void);

/* real_sym.c: glibc's own dlsym/dlvsym, found without calling dlsym. */
void *pulse_real_dlsym(void *handle, const char *name);
void *pulse_real_dlvsym(void *handle, const char *name, const char *version);
/* The same functions as pointers (NULL if not found), for wrappers that
 * must tail-call them so that glibc sees their caller's return address. */
void *(*pulse_dlsym_ptr(void))(void *, const char *);
void *(*pulse_dlvsym_ptr(void))(void *, const char *, const char *);
/* strcmp(a, b) == 0 without calling libc. */
int pulse_str_eq(const char *a, const char *b);
/* The next definition of `name` after this library (RTLD_NEXT). */
void *pulse_next(const char *name);
/* find_loaded.c: `name` in a loaded library whose file name starts with
 * prefix ("libnccl.so"), also one outside the global scope (loaded by a
 * module dlopened with RTLD_LOCAL); NULL if none has it. */
void *pulse_loaded_sym(const char *prefix, const char *name);
/* pulse_next(name), else pulse_loaded_sym(prefix, name). */
void *pulse_next_or_loaded(const char *name, const char *prefix);

/* comm_id.c */
uint64_t pulse_comm_id_from_bytes(const void *bytes, size_t n);
uint64_t pulse_comm_id_split(uint64_t parent, uint64_t split_index, int color);
uint64_t pulse_comm_id_local(uint32_t pid, uint64_t call_index, int dev_index);

/* gpu.c: the calling thread's GPU. Cheap after the first call per thread. */
void pulse_hook_gpu_identify(struct pulse_hook_gpu *g);

/* verbs.c: the verbs entry points dlsym.c hands out instead of the real ones. */
enum { PULSE_W_MODIFY, PULSE_W_CREATE, PULSE_W_DESTROY, PULSE_W_MLX5_CREATE, PULSE_W_NONE };
void *pulse_verbs_swap_in(int which, void *real, const char *name);
/* The one symbol version each wrapper has the ABI of: "IBVERBS_1.1", or
 * "MLX5_1.3" for mlx5dv_create_qp. */
static inline const char *pulse_verbs_version(int which)
{
	return which == PULSE_W_MLX5_CREATE ? "MLX5_1.3" : "IBVERBS_1.1";
}

/* nccl.c: after fork, in the child. */
void pulse_hook_nccl_atfork_child(void);

#endif
