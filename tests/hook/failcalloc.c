/* LD_PRELOAD shim for the profiler test: the FAILCALLOC_NTH-th calloc of
 * one object (nmemb 1) called from code in a library whose path contains
 * FAILCALLOC_FROM returns NULL (ENOMEM); every other call is glibc's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_calloc(size_t, size_t);

static int g_seen;

void *calloc(size_t n, size_t size)
{
	if (n == 1) {
		const char *from = getenv("FAILCALLOC_FROM"), *nth = getenv("FAILCALLOC_NTH");
		Dl_info info;
		if (from && nth && dladdr(__builtin_return_address(0), &info) && info.dli_fname &&
		    strstr(info.dli_fname, from) && ++g_seen == atoi(nth)) {
			errno = ENOMEM;
			return NULL;
		}
	}
	return __libc_calloc(n, size);
}
