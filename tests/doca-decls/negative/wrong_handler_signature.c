/* MUST NOT COMPILE: the library calls doca_pcc_dev_user_algo with a const
 * attr pointer; a definition that drops the const conflicts with the
 * documented prototype. Proves the handler signatures are pinned. */
#include <doca_pcc_dev.h>
void doca_pcc_dev_user_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
			    doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results)
{
	(void)algo_ctxt;
	(void)event;
	(void)attr;
	results->rate = DOCA_PCC_DEV_MAX_RATE;
}
