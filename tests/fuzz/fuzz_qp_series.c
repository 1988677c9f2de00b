/* libFuzzer target for the SERIES_REQ and SERIES decoders
 * (wire/qp_series.c, include/pulse/qp_series_wire.h): arbitrary bytes must
 * decode or be refused with a reason, never crash or read out of bounds;
 * what decodes re-encodes to the same bytes (the format has one encoding
 * per answer) and decodes again to the same answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/qp_series_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct pulse_qps_req q;
	if (!pulse_qps_req_decode(data, size, &q, err, sizeof err)) {
		uint8_t b[PULSE_QPS_REQ_LEN];
		if (pulse_qps_req_encode(b, sizeof b, &q) != PULSE_QPS_REQ_LEN ||
		    memcmp(b, data, sizeof b))
			abort();
	} else if (!err[0])
		abort();
	struct pulse_qps_resp r;
	err[0] = '\0';
	if (pulse_qps_resp_decode(data, size, &r, err, sizeof err)) {
		if (!err[0])
			abort();
		return 0;
	}
	struct pulse_qps_builder b;
	uint8_t st = r.status;
	if (pulse_qps_build_begin(&b, &r, size))
		abort();
	for (uint32_t i = 0; i < r.nseg; i++)
		if (pulse_qps_build_seg(&b, &r.segs[i]) != 0)
			abort();
	b.left_out = r.segs_left_out;
	size_t n = pulse_qps_build_end(&b);
	/* build_end marks a partial answer truncated; the decoder took the
	 * status as sent */
	if (r.segs_left_out && st == PULSE_QPS_OK)
		b.buf[4] = PULSE_QPS_OK;
	if (n != size || memcmp(b.buf, data, size))
		abort();
	struct pulse_qps_resp r2;
	if (pulse_qps_resp_decode(b.buf, n, &r2, err, sizeof err) || r2.nseg != r.nseg)
		abort();
	pulse_qps_resp_free(&r2);
	free(b.buf);
	pulse_qps_resp_free(&r);
	return 0;
}
