/* MUST NOT COMPILE: doca_pcc_dev_fence_memory() expands to a statement that
 * already ends in ';' in the SDK, so it cannot be the body of an if with an
 * else. Keeps the glue from writing code that only compiles here. */
#include <doca_pcc_dev.h>
void f(int c, volatile int *x)
{
	if (c)
		doca_pcc_dev_fence_memory();
	else
		*x = 1;
}
