/* MUST NOT COMPILE: doca_pcc_mailbox_send takes uint32_t *response_size.
 * Proves the stand-in prototype is real, not a K&R-style catch-all. */
#define DOCA_ALLOW_EXPERIMENTAL_API
#include <doca_pcc.h>
int f(struct doca_pcc *pcc)
{
	unsigned long long resp_size = 0;
	uint32_t cb = 0;
	return (int)doca_pcc_mailbox_send(pcc, 12, &resp_size, &cb);
}
