/* Which GPU the calling thread drives. With the CUDA runtime loaded (never
 * loaded by us): cudaGetDevice and cudaDeviceGetPCIBusId, looked up in the
 * libcudart object itself, found in the loader's list, so that a process
 * without it sees no failed dlsym (which would overwrite its dlerror()).
 * Otherwise CUDA_VISIBLE_DEVICES (first entry), else unknown. The PCI bus
 * id is cached per thread and device. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

typedef int (*get_device_fn)(int *);
typedef int (*bus_id_fn)(char *, int, int);

static PULSE_TLS int t_cached_dev = -2;
static PULSE_TLS char t_cached_bus[16];

static _Atomic(get_device_fn) g_get;
static _Atomic(bus_id_fn) g_bus;

/* libcudart only once it is loaded: the hook never loads it itself. */
static get_device_fn cudart(bus_id_fn *bus)
{
	get_device_fn get = atomic_load_explicit(&g_get, memory_order_acquire);
	if (get) {
		*bus = atomic_load(&g_bus);
		return get;
	}
	*bus = (bus_id_fn)pulse_loaded_sym("libcudart.so", "cudaDeviceGetPCIBusId");
	get = (get_device_fn)pulse_loaded_sym("libcudart.so", "cudaGetDevice");
	if (get) {
		atomic_store(&g_bus, *bus);
		atomic_store_explicit(&g_get, get, memory_order_release);
	}
	return get;
}

void pulse_hook_gpu_identify(struct pulse_hook_gpu *g)
{
	memset(g, 0, sizeof *g);
	g->cuda_dev = -1;
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (vis) {
		size_t n = strcspn(vis, ",");
		if (n >= sizeof g->visible)
			n = sizeof g->visible - 1;
		memcpy(g->visible, vis, n);
	}
	bus_id_fn bus = NULL;
	get_device_fn get = cudart(&bus);
	int dev = -1;
	if (get && get(&dev) == 0 && dev >= 0) {
		g->cuda_dev = dev;
		g->source = PULSE_HOOK_GPU_CUDART;
		if (t_cached_dev != dev) {
			memset(t_cached_bus, 0, sizeof t_cached_bus);
			if (bus && bus(t_cached_bus, (int)sizeof t_cached_bus, dev) != 0)
				memset(t_cached_bus, 0, sizeof t_cached_bus);
			t_cached_bus[sizeof t_cached_bus - 1] = '\0';
			t_cached_dev = dev;
		}
		memcpy(g->pci_bus_id, t_cached_bus, sizeof g->pci_bus_id);
		return;
	}
	if (g->visible[0]) {
		g->source = PULSE_HOOK_GPU_VISIBLE_DEVS;
		char *end;
		long v = strtol(g->visible, &end, 10);
		if (*end == '\0' && v >= 0 && v < 4096)
			g->cuda_dev = (int32_t)v; /* a physical index; UUIDs stay in `visible` */
	}
}
