/* How Python loads a training framework: the interpreter links no NCCL; it
 * dlopens an extension module with RTLD_LOCAL, and that module links NCCL.
 * NCCL is then outside the global scope, so dlsym(RTLD_NEXT) from a
 * preloaded library cannot find it, while the module's calls still bind to
 * the preloaded exports. PyTorch 2.11 with NCCL 2.28.9 (pip wheels) loads
 * NCCL exactly this way.
 * Usage: load_local MODULE.so ARGS...: calls the module's train_main(ARGS). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: load_local MODULE.so ARGS...\n");
		return 2;
	}
	void *m = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!m) {
		fprintf(stderr, "load_local: %s\n", dlerror());
		return 2;
	}
	int (*entry)(int, char **);
	*(void **)&entry = dlsym(m, "train_main");
	if (!entry) {
		fprintf(stderr, "load_local: %s\n", dlerror());
		return 2;
	}
	argv[1] = "train";
	return entry(argc - 1, argv + 1);
}
