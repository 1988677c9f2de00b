/* Stand-in libcudart.so.12: the two CUDA runtime calls the hook makes.
 * The current device is FAKE_CUDA_DEVICE (default 1); its PCI bus id is
 * "0000:3b:00.<device>". No GPU involved. */
#include <stdio.h>
#include <stdlib.h>

int cudaGetDevice(int *dev)
{
	const char *v = getenv("FAKE_CUDA_DEVICE");
	if (!dev)
		return 1; /* cudaErrorInvalidValue */
	*dev = v ? atoi(v) : 1;
	return 0;
}

int cudaDeviceGetPCIBusId(char *buf, int len, int dev)
{
	if (!buf || len < 13 || dev < 0 || dev > 9)
		return 1;
	snprintf(buf, (size_t)len, "0000:3b:00.%d", dev);
	return 0;
}
