/* A library that is loaded but not in the global scope. Python loads a
 * framework's extension module with RTLD_LOCAL, and NCCL, libcudart or
 * libibverbs linked by that module load with it: their definitions are
 * outside the scope dlsym(RTLD_NEXT) searches, while the module's own calls
 * still bind to the hook's exports, which come first. PyTorch 2.11 (pip,
 * NCCL 2.28.9) loads NCCL this way: before this fallback every intercepted
 * call there returned ncclSystemError. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hook.h"

struct lib_query {
	const char *prefix;
	size_t prefix_len;
	unsigned skip;   /* matches to pass over */
	char path[4096]; /* the match, copied: dlopen is called outside the walk */
};

static int match_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct lib_query *q = arg;
	const char *name = info->dlpi_name;
	if (!name || !name[0])
		return 0;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, q->prefix, q->prefix_len) != 0)
		return 0;
	if (q->skip > 0) {
		q->skip--;
		return 0;
	}
	size_t n = strlen(name);
	if (n >= sizeof q->path)
		return 0;
	memcpy(q->path, name, n + 1);
	return 1;
}

/* A handle on the n-th loaded object whose file name starts with prefix
 * (RTLD_NOLOAD: it is never loaded here), or NULL. The handle is never
 * closed: the caller keeps pointers into the library. dl_iterate_phdr holds
 * the loader's lock, so a concurrent dlclose cannot free a name under us. */
static void *loaded_lib(const char *prefix, unsigned n)
{
	struct lib_query q = { prefix, strlen(prefix), n, { 0 } };
	if (!dl_iterate_phdr(match_lib, &q))
		return NULL;
	void *h = dlopen(q.path, RTLD_NOLOAD | RTLD_LAZY);
	return h ? h : (void *)-1; /* unloaded since: look at the next one */
}

void *pulse_loaded_sym(const char *prefix, const char *name)
{
	for (unsigned i = 0; i < 16; i++) {
		void *h = loaded_lib(prefix, i);
		if (!h)
			return NULL;
		if (h == (void *)-1)
			continue;
		void *f = pulse_real_dlsym(h, name);
		if (f)
			return f;
	}
	return NULL;
}

void *pulse_next_or_loaded(const char *name, const char *prefix)
{
	void *f = pulse_next(name);
	return f ? f : pulse_loaded_sym(prefix, name);
}
