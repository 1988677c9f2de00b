/* Fake DOCA functions for tests/doca-fake (see fake_doca.h). Test code only. */
#define _POSIX_C_SOURCE 200809L
#define DOCA_ALLOW_EXPERIMENTAL_API

#include "fake_doca.h"

#include <doca_dev.h>
#include <doca_log.h>
#include <doca_pcc.h>
#include <doca_pcc_dev.h>
#include <doca_pcc_dev_algo_access.h>
#include <doca_pcc_dev_event.h>

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fake_doca fake;

static _Atomic uint64_t fake_timer_us;
static _Thread_local unsigned int fake_rank;
static _Atomic int fake_state = DOCA_PCC_PS_ACTIVE;
static _Atomic uint32_t fake_hang_ms;
static _Atomic uint32_t fake_delay_ms;

void fake_doca_set_delay_ms(uint32_t ms)
{
	atomic_store(&fake_delay_ms, ms);
}

void fake_doca_set_hang_ms(uint32_t ms)
{
	atomic_store(&fake_hang_ms, ms);
}

void fake_doca_reset(void)
{
	memset(&fake, 0, sizeof(fake));
	fake.devs[0] = (struct fake_doca_dev){"mlx5_0", 1};
	fake.devs[1] = (struct fake_doca_dev){"mlx5_1", 0};
	fake.ndevs = 2;
	fake.state_after_start = DOCA_PCC_PS_ACTIVE;
	atomic_store(&fake_state, DOCA_PCC_PS_ACTIVE);
}

void fake_doca_set_timer_us(uint64_t us)
{
	atomic_store(&fake_timer_us, us);
}

void fake_doca_set_rank(unsigned int rank)
{
	fake_rank = rank;
}

void fake_doca_set_state(doca_pcc_process_state_t s)
{
	atomic_store(&fake_state, (int)s);
}

/* ---- device side ---------------------------------------------------- */

doca_pcc_dev_event_general_attr_t doca_pcc_dev_get_ev_attr(doca_pcc_dev_event_t *event)
{
	doca_pcc_dev_event_general_attr_t a = {0};
	a.ev_type = event->ev_type & 0xFFu;
	a.port_num = event->port & 0xFFu;
	return a;
}

uint32_t doca_pcc_dev_get_flowtag(doca_pcc_dev_event_t *event)
{
	return event->qpn;
}

uint32_t doca_pcc_dev_get_sn(doca_pcc_dev_event_t *event)
{
	(void)event;
	return 0;
}

uint32_t doca_pcc_dev_get_timestamp(doca_pcc_dev_event_t *event)
{
	return event->ts_ns;
}

uint32_t doca_pcc_dev_get_flow_qpn(doca_pcc_dev_event_t *event)
{
	return event->qpn & 0xFFFFFFu; /* a 24-bit field on the NIC */
}

uint32_t doca_pcc_dev_get_roce_first_timestamp(doca_pcc_dev_event_t *event)
{
	return event->ts_ns;
}

doca_pcc_dev_roce_tx_cntrs_t doca_pcc_dev_get_roce_tx_cntrs(doca_pcc_dev_event_t *event)
{
	doca_pcc_dev_roce_tx_cntrs_t c = {0};
	c.sent_32bytes = event->sent_32b & 0xFFFFu;
	c.sent_pkts = event->sent_pkts & 0xFFFFu;
	return c;
}

unsigned int doca_pcc_dev_thread_rank(void)
{
	return fake_rank;
}

uint32_t doca_pcc_dev_get_timer_lo(void)
{
	return (uint32_t)atomic_load(&fake_timer_us);
}

uint64_t doca_pcc_dev_get_timer(void)
{
	return atomic_load(&fake_timer_us);
}

void pulse_decls_dpa_thread_fence(int memory_space, int pred_op, int succ_op)
{
	(void)memory_space;
	(void)pred_op;
	(void)succ_op;
	atomic_thread_fence(memory_order_seq_cst);
}

void doca_pcc_dev_printf(const char *format, ...)
{
	va_list ap;
	fake.printf_calls++;
	fputs("[dpa] ", stdout);
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
}

void doca_pcc_dev_trace_flush(void)
{
}

void doca_pcc_dev_default_internal_algo(doca_pcc_dev_algo_ctxt_t *algo_ctxt, doca_pcc_dev_event_t *event,
					const doca_pcc_dev_attr_t *attr, doca_pcc_dev_results_t *results)
{
	(void)algo_ctxt;
	(void)event;
	(void)attr;
	fake.internal_algo_calls++;
	results->rate = 1;
}

doca_pcc_dev_error_t doca_pcc_dev_algo_init_metadata(uint32_t algo_idx,
						     const struct doca_pcc_dev_algo_meta_data *user_def,
						     uint32_t param_num, uint32_t counter_num)
{
	(void)param_num;
	(void)counter_num;
	if (algo_idx >= DOCA_PCC_DEV_MAX_NUM_ALGOS || user_def == NULL || user_def->algo_desc_addr == 0)
		return DOCA_PCC_DEV_STATUS_FAIL;
	fake.metadata_calls++;
	return DOCA_PCC_DEV_STATUS_OK;
}

doca_pcc_dev_error_t doca_pcc_dev_init_algo_slot(uint32_t portid, uint32_t algo_slot, uint32_t algo_idx,
						 uint32_t algo_en)
{
	if (portid >= DOCA_PCC_DEV_MAX_NUM_PORTS || algo_slot >= DOCA_PCC_DEV_MAX_NUM_USER_SLOTS ||
	    algo_idx >= DOCA_PCC_DEV_MAX_NUM_ALGOS || algo_en != 1)
		return DOCA_PCC_DEV_STATUS_FAIL;
	fake.slot_inits++;
	return DOCA_PCC_DEV_STATUS_OK;
}

uint32_t doca_pcc_dev_get_algo_index(uint32_t port_num, uint32_t algo_slot)
{
	(void)port_num;
	(void)algo_slot;
	return 0;
}

/* ---- host side ------------------------------------------------------- */

const char *doca_error_get_name(doca_error_t error)
{
	switch (error) {
	case DOCA_SUCCESS:
		return "DOCA_SUCCESS";
	case DOCA_ERROR_NOT_FOUND:
		return "DOCA_ERROR_NOT_FOUND";
	case DOCA_ERROR_NOT_SUPPORTED:
		return "DOCA_ERROR_NOT_SUPPORTED";
	case DOCA_ERROR_INVALID_VALUE:
		return "DOCA_ERROR_INVALID_VALUE";
	case DOCA_ERROR_DRIVER:
		return "DOCA_ERROR_DRIVER";
	case DOCA_ERROR_BAD_STATE:
		return "DOCA_ERROR_BAD_STATE";
	default:
		return "DOCA_ERROR_OTHER";
	}
}

const char *doca_error_get_descr(doca_error_t error)
{
	switch (error) {
	case DOCA_SUCCESS:
		return "fake: success";
	case DOCA_ERROR_NOT_SUPPORTED:
		return "fake: operation not supported";
	case DOCA_ERROR_INVALID_VALUE:
		return "fake: invalid input";
	case DOCA_ERROR_DRIVER:
		return "fake: driver call failed";
	case DOCA_ERROR_BAD_STATE:
		return "fake: bad state";
	default:
		return "fake: other error";
	}
}

struct doca_devinfo {
	int idx;
};
struct doca_dev {
	int idx;
};
static struct doca_devinfo fake_infos[4];
static struct doca_devinfo *fake_list[5];

doca_error_t doca_devinfo_create_list(struct doca_devinfo ***dev_list, uint32_t *nb_devs)
{
	for (int i = 0; i < fake.ndevs; i++) {
		fake_infos[i].idx = i;
		fake_list[i] = &fake_infos[i];
	}
	fake_list[fake.ndevs] = NULL;
	*dev_list = fake_list;
	*nb_devs = (uint32_t)fake.ndevs;
	return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_destroy_list(struct doca_devinfo **dev_list)
{
	return dev_list == fake_list ? DOCA_SUCCESS : DOCA_ERROR_INVALID_VALUE;
}

doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo *devinfo, char *ibdev_name, uint32_t size)
{
	if (size < DOCA_DEVINFO_IBDEV_NAME_SIZE)
		return DOCA_ERROR_INVALID_VALUE;
	snprintf(ibdev_name, size, "%s", fake.devs[devinfo->idx].name);
	return DOCA_SUCCESS;
}

doca_error_t doca_devinfo_get_is_pcc_supported(const struct doca_devinfo *devinfo)
{
	return fake.devs[devinfo->idx].pcc_supported ? DOCA_SUCCESS : DOCA_ERROR_NOT_SUPPORTED;
}

doca_error_t doca_dev_open(struct doca_devinfo *devinfo, struct doca_dev **dev)
{
	struct doca_dev *d = malloc(sizeof(*d));
	if (d == NULL)
		return DOCA_ERROR_NO_MEMORY;
	d->idx = devinfo->idx;
	*dev = d;
	fake.dev_opens++;
	return DOCA_SUCCESS;
}

doca_error_t doca_dev_close(struct doca_dev *dev)
{
	if (dev == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	free(dev);
	fake.dev_closes++;
	return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_create_with_file_sdk(FILE *fptr, struct doca_log_backend **backend)
{
	(void)fptr;
	*backend = NULL;
	return DOCA_SUCCESS;
}

doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend *backend, uint32_t level)
{
	(void)backend;
	(void)level;
	return DOCA_SUCCESS;
}

static char fake_app_image;
/* dpacc generates this symbol from --app-name=pulse_dpa_app. */
struct doca_pcc_app *pulse_dpa_app = (struct doca_pcc_app *)(void *)&fake_app_image;

struct doca_pcc {
	struct doca_dev *dev;
	struct doca_pcc_app *app;
	uint32_t req_cap, resp_cap;
	int started;
	uint8_t *req_buf, *resp_buf;
};

doca_error_t doca_pcc_create(struct doca_dev *doca_dev, struct doca_pcc **pcc)
{
	struct doca_pcc *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return DOCA_ERROR_NO_MEMORY;
	p->dev = doca_dev;
	*pcc = p;
	fake.creates++;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_destroy(struct doca_pcc *pcc)
{
	if (pcc == NULL)
		return DOCA_ERROR_INVALID_VALUE;
	free(pcc->req_buf);
	free(pcc->resp_buf);
	free(pcc);
	fake.destroys++;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_start(struct doca_pcc *pcc)
{
	if (pcc->app != pulse_dpa_app)
		return DOCA_ERROR_BAD_STATE;
	if (fake.fail_start != DOCA_SUCCESS)
		return fake.fail_start;
	if (pcc->req_cap) {
		pcc->req_buf = calloc(1, pcc->req_cap);
		pcc->resp_buf = calloc(1, pcc->resp_cap);
	}
	/* Starting loads the DPA process: the library calls user_init. */
	uint32_t mask = 0xDEADBEEFu;
	doca_pcc_dev_user_init(&mask);
	fake.user_init_calls++;
	fake.disable_mask = mask;
	pcc->started = 1;
	fake.starts++;
	atomic_store(&fake_state, (int)fake.state_after_start);
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_stop(struct doca_pcc *pcc)
{
	if (pcc == NULL || !pcc->started)
		return DOCA_ERROR_BAD_STATE;
	pcc->started = 0;
	fake.stops++;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_get_min_num_threads(struct doca_pcc *pcc, uint32_t *min_num_threads)
{
	(void)pcc;
	*min_num_threads = 1;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_get_max_num_threads(struct doca_pcc *pcc, uint32_t *max_num_threads)
{
	(void)pcc;
	*max_num_threads = 64;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_set_app(struct doca_pcc *pcc, struct doca_pcc_app *app)
{
	if (pcc->started || app == NULL)
		return pcc->started ? DOCA_ERROR_BAD_STATE : DOCA_ERROR_INVALID_VALUE;
	pcc->app = app;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_set_thread_affinity(struct doca_pcc *pcc, uint32_t num_threads, uint32_t *affinity_configs)
{
	if (pcc->started || affinity_configs == NULL || num_threads == 0)
		return DOCA_ERROR_INVALID_VALUE;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_set_print_buffer_size(struct doca_pcc *pcc, size_t buffer_size)
{
	(void)pcc;
	(void)buffer_size;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_set_dev_coredump_file(struct doca_pcc *pcc, const char *file_name)
{
	return pcc->started || file_name == NULL ? DOCA_ERROR_INVALID_VALUE : DOCA_SUCCESS;
}

doca_error_t doca_pcc_set_mailbox(struct doca_pcc *pcc, uint32_t max_request_size, uint32_t max_response_size)
{
	if (fake.fail_set_mailbox != DOCA_SUCCESS)
		return fake.fail_set_mailbox;
	if (pcc->started)
		return DOCA_ERROR_BAD_STATE;
	pcc->req_cap = max_request_size;
	pcc->resp_cap = max_response_size;
	fake.mailbox_req_cap = max_request_size;
	fake.mailbox_resp_cap = max_response_size;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_mailbox_get_request_buffer(struct doca_pcc *pcc, void **request_buffer)
{
	if (!pcc->started)
		return DOCA_ERROR_BAD_STATE;
	if (pcc->req_buf == NULL)
		return DOCA_ERROR_INITIALIZATION;
	*request_buffer = pcc->req_buf;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_mailbox_get_response_buffer(struct doca_pcc *pcc, void **response_buffer)
{
	if (!pcc->started)
		return DOCA_ERROR_BAD_STATE;
	if (pcc->resp_buf == NULL)
		return DOCA_ERROR_INITIALIZATION;
	*response_buffer = pcc->resp_buf;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_mailbox_send(struct doca_pcc *pcc, uint32_t request_size, uint32_t *response_size,
				   uint32_t *cb_ret_val)
{
	if (!pcc->started)
		return DOCA_ERROR_BAD_STATE;
	if (request_size > pcc->req_cap)
		return DOCA_ERROR_INVALID_VALUE;
	int st = atomic_load(&fake_state);
	if (st == DOCA_PCC_PS_DEACTIVATED || st == DOCA_PCC_PS_ERROR)
		return DOCA_ERROR_BAD_STATE; /* assumed: a dead process answers nothing */
	uint32_t hang = atomic_load(&fake_hang_ms);
	if (hang) {
		struct timespec ts = {.tv_sec = hang / 1000u, .tv_nsec = (long)(hang % 1000u) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
		}
		return DOCA_ERROR_DRIVER;
	}
	uint32_t delay = atomic_load(&fake_delay_ms);
	if (delay) {
		struct timespec ts = {.tv_sec = delay / 1000u, .tv_nsec = (long)(delay % 1000u) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
		}
	}
	uint32_t rs = 0;
	doca_pcc_dev_error_t r =
		doca_pcc_dev_user_mailbox_handle(pcc->req_buf, request_size, pcc->resp_cap, pcc->resp_buf, &rs);
	*cb_ret_val = (uint32_t)r;
	*response_size = rs;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_wait(struct doca_pcc *pcc, int wait_time)
{
	(void)pcc;
	(void)wait_time;
	return DOCA_SUCCESS;
}

doca_error_t doca_pcc_get_process_state(const struct doca_pcc *pcc, doca_pcc_process_state_t *process_state)
{
	if (!pcc->started)
		return DOCA_ERROR_BAD_STATE;
	*process_state = (doca_pcc_process_state_t)atomic_load(&fake_state);
	return DOCA_SUCCESS;
}
