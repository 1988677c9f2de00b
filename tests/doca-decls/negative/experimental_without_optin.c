/* MUST NOT COMPILE under -Werror: mailbox calls are DOCA_EXPERIMENTAL and
 * deprecated-marked unless DOCA_ALLOW_EXPERIMENTAL_API is defined first.
 * Proves the opt-in in pulse_dpa.c/transport_doca.c is load-bearing. */
#include <doca_pcc.h>
int f(struct doca_pcc *pcc)
{
	void *buf;
	return (int)doca_pcc_mailbox_get_request_buffer(pcc, &buf);
}
