/* glibc's own dlsym and dlvsym. The hook exports dlsym/dlvsym itself, and
 * any reference it makes to "dlsym" (versioned or not) binds back to its own
 * definition, so the real ones are found by reading libc.so.6's dynamic
 * symbol table (GNU hash), found through the loader's object list. No
 * allocation, no dlsym, no call that another interposer may own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static _Atomic(dlsym_fn) g_dlsym;
static _Atomic(dlvsym_fn) g_dlvsym;

/* No libc string functions on this path: a sanitizer runtime may call dlsym
 * before its own interceptors of strcmp and friends are ready. */
int pulse_str_eq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static const char *base_name(const char *path)
{
	const char *b = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			b = p + 1;
	return b;
}

static int is_libc(const char *name)
{
	static const char want[] = "libc.so";
	for (int i = 0; want[i]; i++)
		if (name[i] != want[i])
			return 0;
	return 1;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

struct want {
	const char *name[2];
	void *found[2];
};

static ElfW(Addr) fix(ElfW(Addr) base, ElfW(Addr) p)
{
	/* glibc relocates these d_ptr entries in place on most targets; if not, add the base. */
	return p < base ? p + base : p;
}

static void *lookup(ElfW(Addr) base, const ElfW(Sym) *symtab, const char *strtab,
		    const uint32_t *gh, const char *name)
{
	uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
	if (nbuckets == 0)
		return NULL;
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(gh + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = gnu_hash(name);
	uint32_t idx = buckets[h % nbuckets];
	if (idx < symoffset)
		return NULL;
	for (;; idx++) {
		uint32_t h2 = chain[idx - symoffset];
		if ((h | 1) == (h2 | 1)) {
			const ElfW(Sym) *s = &symtab[idx];
			if (s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
			    ELF64_ST_TYPE(s->st_info) == STT_FUNC &&
			    pulse_str_eq(strtab + s->st_name, name))
				return (void *)(base + s->st_value);
		}
		if (h2 & 1)
			return NULL;
	}
}

/* Walk the loader's own list of objects (_r_debug) rather than calling
 * dl_iterate_phdr: sanitizer runtimes call dlsym from their own start-up,
 * before their dl_iterate_phdr interceptor works. */
static int find_in_libc(struct want *w)
{
	for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
		if (!m->l_name || !is_libc(base_name(m->l_name)) || !m->l_ld)
			continue;
		const ElfW(Sym) *symtab = NULL;
		const char *strtab = NULL;
		const uint32_t *gh = NULL;
		for (const ElfW(Dyn) *dyn = m->l_ld; dyn->d_tag != DT_NULL; dyn++) {
			if (dyn->d_tag == DT_SYMTAB)
				symtab = (const ElfW(Sym) *)fix(m->l_addr, dyn->d_un.d_ptr);
			else if (dyn->d_tag == DT_STRTAB)
				strtab = (const char *)fix(m->l_addr, dyn->d_un.d_ptr);
			else if (dyn->d_tag == DT_GNU_HASH)
				gh = (const uint32_t *)fix(m->l_addr, dyn->d_un.d_ptr);
		}
		if (!symtab || !strtab || !gh)
			continue;
		for (int i = 0; i < 2; i++)
			w->found[i] = lookup(m->l_addr, symtab, strtab, gh, w->name[i]);
		return 1;
	}
	return 0;
}

static void resolve(void)
{
	struct want w = { { "dlsym", "dlvsym" }, { NULL, NULL } };
	find_in_libc(&w);
	if (!w.found[0] || !w.found[1]) {
		static const char msg[] = "pulse-hook: cannot find glibc's dlsym/dlvsym in libc.so; "
			"dlsym lookups through the hook will fail\n";
		ssize_t r = write(2, msg, sizeof msg - 1);
		(void)r;
		return;
	}
	atomic_store(&g_dlsym, (dlsym_fn)w.found[0]);
	atomic_store(&g_dlvsym, (dlvsym_fn)w.found[1]);
}

void *pulse_real_dlsym(void *handle, const char *name)
{
	dlsym_fn f = atomic_load_explicit(&g_dlsym, memory_order_acquire);
	if (!f) {
		resolve();
		f = atomic_load(&g_dlsym);
		if (!f)
			return NULL;
	}
	if (!name)
		return NULL; /* resolve only */
	return f(handle, name);
}

void *pulse_real_dlvsym(void *handle, const char *name, const char *version)
{
	dlvsym_fn f = atomic_load_explicit(&g_dlvsym, memory_order_acquire);
	if (!f) {
		resolve();
		f = atomic_load(&g_dlvsym);
		if (!f)
			return NULL;
	}
	return f(handle, name, version);
}

void *(*pulse_dlsym_ptr(void))(void *, const char *)
{
	dlsym_fn f = atomic_load_explicit(&g_dlsym, memory_order_acquire);
	if (!f) {
		resolve();
		f = atomic_load(&g_dlsym);
	}
	return f;
}

void *(*pulse_dlvsym_ptr(void))(void *, const char *, const char *)
{
	dlvsym_fn f = atomic_load_explicit(&g_dlvsym, memory_order_acquire);
	if (!f) {
		resolve();
		f = atomic_load(&g_dlvsym);
	}
	return f;
}

void *pulse_next(const char *name)
{
	/* Called from this library, so RTLD_NEXT means "after libpulse-hook.so". */
	return pulse_real_dlsym(RTLD_NEXT, name);
}
