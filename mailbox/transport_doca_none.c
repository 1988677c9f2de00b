/* The DOCA transport in a build without the DOCA SDK.
 *
 * firmware/doca.mk compiles this file instead of transport_doca.c when
 * pkg-config finds no doca-pcc or dpacc is missing. Every entry point exists
 * so the host agent links unchanged, and every attempt to reach a NIC fails
 * with a message that says why and what to do instead. Nothing is faked:
 * there is no device here. */
#include <stdio.h>
#include <string.h>

#include "pulse/transport_doca.h"

static const char pulse_doca_none_reason[] =
	"this program was built without the NVIDIA DOCA SDK (no pkg-config doca-pcc or no "
	"dpacc at build time), so --device cannot reach a BlueField; install DOCA and rebuild "
	"(docs/hardware.md), or run against the simulated NIC with --sim SOCKET "
	"(sim/run_trace --serve)";

static void set_err(char *err, size_t len)
{
	if (err != NULL && len > 0)
		snprintf(err, len, "%s", pulse_doca_none_reason);
}

int pulse_doca_available(void)
{
	return 0;
}

void pulse_doca_options_init(struct pulse_doca_options *o, const char *ibdev)
{
	memset(o, 0, sizeof(*o));
	o->ibdev = ibdev;
	o->response_cap = PULSE_DOCA_RESPONSE_CAP_DEFAULT;
	o->start_wait_ms = 2000;
	o->restart_interval_ms = 5000;
	o->close_grace_ms = 2000;
}

int pulse_doca_list_devices(char (*names)[64], int max, char *err, size_t err_len)
{
	(void)names;
	(void)max;
	set_err(err, err_len);
	return -1;
}

struct pulse_doca *pulse_doca_open(const struct pulse_doca_options *o, char *err, size_t err_len)
{
	(void)o;
	set_err(err, err_len);
	return NULL;
}

int pulse_doca_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms)
{
	(void)ctx;
	(void)req;
	(void)req_len;
	(void)resp;
	(void)resp_cap;
	(void)timeout_ms;
	if (resp_len != NULL)
		*resp_len = 0;
	return -1; /* unreachable in practice: open never succeeds */
}

uint32_t pulse_doca_response_cap(const struct pulse_doca *t)
{
	(void)t;
	return 0;
}

const char *pulse_doca_ibdev(const struct pulse_doca *t)
{
	(void)t;
	return "";
}

void pulse_doca_get_stats(struct pulse_doca *t, struct pulse_doca_stats *out)
{
	(void)t;
	memset(out, 0, sizeof(*out));
}

void pulse_doca_last_error(struct pulse_doca *t, char *buf, size_t len)
{
	(void)t;
	set_err(buf, len);
}

void pulse_doca_close(struct pulse_doca *t)
{
	(void)t;
}
