/* pulse-host-agent: the retention ring. The most recent --retain seconds of
 * decoded windows, all NICs interleaved in poll order, each window one
 * allocation (header, flow table and epoch arrays together), under a hard
 * memory cap: adding a window first evicts windows older than the retention
 * time, then the oldest windows until the new one fits (counted as
 * dropped_cap). A window larger than the whole cap is not kept (counted). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int retention_init(struct retention *r, uint64_t retain_ns, uint64_t cap_bytes)
{
	memset(r, 0, sizeof *r);
	/* Windows are allocated and freed at the poll rate and can be megabytes
	 * each: keep them on the heap instead of fresh mmaps, so that a steady
	 * state reuses pages instead of faulting new ones in every poll (that
	 * was half the agent's CPU time at 2000 flows). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
	r->retain_ns = retain_ns;
	r->cap_bytes = cap_bytes;
	r->cap = 64;
	r->ring = calloc(r->cap, sizeof *r->ring);
	return r->ring ? 0 : -1;
}

static void pop_oldest(struct retention *r)
{
	struct ret_window *w = r->ring[r->head];
	r->ring[r->head] = NULL;
	r->head = (r->head + 1) % r->cap;
	r->count--;
	r->mem -= w->mem;
	free(w);
}

void retention_free(struct retention *r)
{
	while (r->count)
		pop_oldest(r);
	free(r->ring);
	r->ring = NULL;
}

void retention_expire(struct retention *r, uint64_t now_ns)
{
	while (r->count) {
		const struct ret_window *w = r->ring[r->head];
		if (now_ns < r->retain_ns || w->host_end_ns >= now_ns - r->retain_ns)
			break;
		pop_oldest(r);
		r->expired++;
	}
}

static int grow(struct retention *r)
{
	uint32_t cap = r->cap * 2;
	struct ret_window **n = calloc(cap, sizeof *n);
	if (!n)
		return -1;
	for (uint32_t i = 0; i < r->count; i++)
		n[i] = r->ring[(r->head + i) % r->cap];
	free(r->ring);
	r->ring = n;
	r->head = 0;
	r->cap = cap;
	return 0;
}

int retention_add(struct retention *r, uint16_t nic, const struct pulse_window *w,
		  const struct clock_sync *cs, uint32_t gap, uint64_t now_ns)
{
	retention_expire(r, now_ns);
	size_t epochs = 0;
	for (uint32_t i = 0; i < w->flow_count; i++)
		epochs += w->flows[i].count;
	size_t need = sizeof(struct ret_window) + w->flow_count * sizeof(struct ret_flow) +
		      epochs * (sizeof(uint64_t) + sizeof(uint32_t));
	if (need > r->cap_bytes) {
		r->dropped_oversize++;
		return -1;
	}
	while (r->count && r->mem + need > r->cap_bytes) {
		pop_oldest(r);
		r->dropped_cap++;
	}
	if (r->count == r->cap && grow(r))
		return -1;
	struct ret_window *x = malloc(need);
	if (!x) {
		r->dropped_oversize++;
		return -1;
	}
	memset(x, 0, sizeof *x);
	x->nic = nic;
	x->poll_flags = w->poll_flags;
	x->window_seq = w->window_seq;
	x->epoch_ns = w->epoch_ns;
	x->pages_missing = w->pages_missing;
	x->flows_aged = w->flows_aged;
	x->gap = gap;
	x->complete = w->complete;
	x->nic_start_ns = w->nic_start_ns;
	x->nic_end_ns = w->nic_end_ns;
	x->host_send_ns = w->host_send_ns;
	x->host_recv_ns = w->host_recv_ns;
	x->host_start_ns = clock_sync_to_host(cs, w->nic_start_ns);
	x->host_end_ns = clock_sync_to_host(cs, w->nic_end_ns);
	x->clock_err_ns = cs->err_ns;
	x->nflows = w->flow_count;
	x->mem = need;
	x->flows = (struct ret_flow *)(x + 1);
	/* u64 arrays first (alignment), then u32 */
	uint64_t *b = (uint64_t *)(x->flows + w->flow_count);
	uint32_t *e = (uint32_t *)(b + epochs);
	for (uint32_t i = 0; i < w->flow_count; i++) {
		const struct pulse_qp_series *s = &w->flows[i];
		struct ret_flow *f = &x->flows[i];
		f->qpn = s->qpn;
		f->count = s->count;
		f->total_bytes = s->total_bytes;
		f->bytes = b;
		f->epoch = e;
		if (s->count) {
			memcpy(b, s->bytes, s->count * sizeof *b);
			memcpy(e, s->epoch, s->count * sizeof *e);
		}
		b += s->count;
		e += s->count;
	}
	r->ring[(r->head + r->count) % r->cap] = x;
	r->count++;
	r->mem += need;
	r->stored++;
	return 0;
}

const struct ret_window *retention_get(const struct retention *r, uint32_t i)
{
	return i < r->count ? r->ring[(r->head + i) % r->cap] : NULL;
}
