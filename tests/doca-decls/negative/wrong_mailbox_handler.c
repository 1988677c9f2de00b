/* MUST NOT COMPILE: doca_pcc_dev_user_mailbox_handle's response size is a
 * uint32_t pointer in the documented API. */
#define DOCA_ALLOW_EXPERIMENTAL_API
#include <doca_pcc_dev.h>
doca_pcc_dev_error_t doca_pcc_dev_user_mailbox_handle(void *request, uint32_t request_size,
						      uint32_t max_response_size, void *response,
						      size_t *response_size)
{
	(void)request;
	(void)request_size;
	(void)max_response_size;
	(void)response;
	*response_size = 0;
	return DOCA_PCC_DEV_STATUS_OK;
}
