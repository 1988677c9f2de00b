/* pulse-host-agent: the answer to the analyzer's SERIES_REQ (protocol
 * version 3, include/pulse/qp_series_wire.h) from the retention ring
 * (retention.c). One function for both paths: the analyzer link calls it
 * live (analyzer_link.c's on_series), `--replay DIR --series-query` at the
 * end of a replayed host (replay.c), so a replayed diagnosis gets the
 * series the live agent would have sent. */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pulse/qp_series_wire.h"

uint8_t *agent_series_answer(struct agent *a, const struct pulse_qps_req *q, size_t max_bytes,
			     size_t *len)
{
	pthread_mutex_lock(&a->lock);
	struct retention *r = &a->ret;
	struct pulse_qps_resp h = {.id = q->id, .from_ns = q->from_ns, .to_ns = q->to_ns,
				   .evicted = r->expired + r->dropped_cap + r->dropped_oversize};
	snprintf(h.host, sizeof h.host, "%s", a->host_name[0] ? a->host_name : "unknown");
	const struct ret_window *first = retention_get(r, 0);
	h.oldest_ns = first ? first->host_start_ns : 0;
	h.status = r->cap_bytes ? PULSE_QPS_NONE : PULSE_QPS_OFF;
	struct pulse_qps_builder b;
	uint32_t *ep = NULL;
	uint64_t *by = NULL;
	uint32_t epcap = 0;
	if (pulse_qps_build_begin(&b, &h, max_bytes))
		goto fail;
	for (uint32_t i = 0; i < r->count; i++) {
		const struct ret_window *w = retention_get(r, i);
		if (!w->epoch_ns || w->host_end_ns <= q->from_ns || w->host_start_ns >= q->to_ns)
			continue;
		const struct agent_nic *nic = w->nic < a->nnics ? &a->nics[w->nic] : NULL;
		for (uint32_t k = 0; k < w->nflows; k++) {
			const struct ret_flow *f = &w->flows[k];
			if (f->count > epcap) {
				uint32_t c = f->count;
				uint32_t *e2 = realloc(ep, c * sizeof *ep);
				if (e2)
					ep = e2;
				uint64_t *b2 = realloc(by, c * sizeof *by);
				if (b2)
					by = b2;
				if (!e2 || !b2)
					goto fail;
				epcap = c;
			}
			uint32_t n = 0;
			for (uint32_t e = 0; e < f->count; e++) {
				uint64_t t = w->host_start_ns + (uint64_t)f->epoch[e] * w->epoch_ns;
				if (t < q->from_ns || t >= q->to_ns || (n && f->epoch[e] <= ep[n - 1]))
					continue;
				ep[n] = f->epoch[e];
				by[n++] = f->bytes[e];
			}
			if (!n)
				continue;
			struct pulse_qps_seg s = {.qpn = f->qpn, .t0_ns = w->host_start_ns,
						  .epoch_ns = w->epoch_ns, .gap = (uint8_t)w->gap, .n = n,
						  .epoch = ep, .bytes = by};
			/* the mapping's device name; a NIC without one goes by its agent name */
			snprintf(s.dev, sizeof s.dev, "%.23s",
				 nic && nic->dev[0] ? nic->dev : nic ? nic->name : "nic?");
			agent_qp_remote(a, s.dev, s.qpn, s.remote_host, sizeof s.remote_host,
					&s.remote_gpu);
			if (pulse_qps_build_seg(&b, &s) < 0)
				goto fail;
		}
	}
	if (b.nseg || b.left_out)
		b.buf[4] = PULSE_QPS_OK;
	pthread_mutex_unlock(&a->lock);
	free(ep);
	free(by);
	*len = pulse_qps_build_end(&b);
	return b.buf;
fail:
	pthread_mutex_unlock(&a->lock);
	free(ep);
	free(by);
	free(b.buf);
	*len = 0;
	return NULL;
}

uint8_t *agent_on_series(void *ctx, const struct pulse_qps_req *q, size_t max_bytes, size_t *len)
{
	return agent_series_answer(ctx, q, max_bytes, len);
}
