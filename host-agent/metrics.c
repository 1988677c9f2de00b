/* pulse-host-agent: the agent's own health as OpenMetrics text on
 * --metrics-listen ADDR:PORT (GET /metrics), served by libmicrohttpd's
 * internal thread. Every per-NIC family carries a nic label. Values are read
 * under the agent lock, so one scrape is one consistent snapshot. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agent.h"
#include "probe.h"

struct buf {
	char *p;
	size_t len, cap;
	int oom;
};

static void bput(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(struct buf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n) * 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
}

/* Label values: escape backslash, quote and newline. */
static void esc(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	for (; *s && o + 3 < cap; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = 0;
}

#define FAM(name, type, help) bput(&b, "# TYPE %s %s\n# HELP %s %s\n", name, type, name, help)

static const enum pulse_stat drop_stats[] = {
	PULSE_STAT_DROP_BAD_QPN, PULSE_STAT_DROP_NO_SLOT, PULSE_STAT_DROP_NO_POOL,
	PULSE_STAT_DROP_TS_RANGE, PULSE_STAT_DROP_BAD_THREAD, PULSE_STAT_DROP_PAUSED,
};
#define gap_names agent_gap_names

char *metrics_render(struct agent *a, size_t *len)
{
	struct buf b = {.cap = 8192};
	b.p = malloc(b.cap);
	if (!b.p)
		return NULL;
	b.p[0] = 0;
	char lbl[AGENT_MAX_NICS][AGENT_NAME_MAX * 2];
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < a->nnics; i++)
		esc(a->nics[i].name, lbl[i], sizeof lbl[i]);
#define PER_NIC(fmt_value, expr)                                                        \
	for (int i = 0; i < a->nnics; i++) {                                            \
		const struct agent_nic *n = &a->nics[i];                               \
		(void)n;                                                                \
		bput(&b, "%s{nic=\"%s\"} " fmt_value "\n", cur, lbl[i], expr);         \
	}
	const char *cur;

	FAM("pulse_agent_nic_up", "gauge", "1 when the NIC agent answered the last exchange");
	cur = "pulse_agent_nic_up";
	PER_NIC("%d", n->up);
	FAM("pulse_agent_polls", "counter", "Poll attempts (POLL requests)");
	cur = "pulse_agent_polls_total";
	PER_NIC("%llu", (unsigned long long)n->polls);
	FAM("pulse_agent_poll_failures", "counter", "Polls that got no window (NIC down or refused)");
	cur = "pulse_agent_poll_failures_total";
	PER_NIC("%llu", (unsigned long long)n->poll_failures);
	FAM("pulse_agent_windows", "counter", "Windows received and decoded");
	cur = "pulse_agent_windows_total";
	PER_NIC("%llu", (unsigned long long)n->windows);
	FAM("pulse_agent_poll_duration_seconds", "gauge",
	    "Duration of the last poll cycle of the NIC (POLL, pages, STATS)");
	cur = "pulse_agent_poll_duration_seconds";
	PER_NIC("%.9f", n->last_poll_s);
	FAM("pulse_agent_poll_duration_max_seconds", "gauge", "Longest poll cycle so far");
	cur = "pulse_agent_poll_duration_max_seconds";
	PER_NIC("%.9f", n->max_poll_s);
	FAM("pulse_agent_upload_duration_seconds", "gauge", "Duration of the last upload (POLL and pages)");
	cur = "pulse_agent_upload_duration_seconds";
	PER_NIC("%.9f", n->last_upload_s);
	FAM("pulse_agent_slow_uploads", "counter", "Uploads that took over a quarter of the poll period");
	cur = "pulse_agent_slow_uploads_total";
	PER_NIC("%llu", (unsigned long long)n->slow_uploads);
	FAM("pulse_agent_upload_bytes", "counter", "Upload page payload bytes received");
	cur = "pulse_agent_upload_bytes_total";
	PER_NIC("%llu", (unsigned long long)n->upload_bytes);
	FAM("pulse_agent_upload_exchanges", "counter", "Mailbox exchanges spent on uploads");
	cur = "pulse_agent_upload_exchanges_total";
	PER_NIC("%llu", (unsigned long long)n->upload_exchanges);
	FAM("pulse_agent_flows_tracked", "gauge", "Flows holding a firmware slot (STATS FLOWS_ACTIVE)");
	cur = "pulse_agent_flows_tracked";
	PER_NIC("%llu", (unsigned long long)n->fw_stats[PULSE_STAT_FLOWS_ACTIVE]);
	FAM("pulse_agent_window_flows", "gauge", "QPs in the last window");
	cur = "pulse_agent_window_flows";
	PER_NIC("%u", n->last_flows);
	FAM("pulse_agent_nic_events", "counter", "TX events the firmware accepted (STATS EVENTS)");
	cur = "pulse_agent_nic_events_total";
	PER_NIC("%llu", (unsigned long long)n->fw_stats[PULSE_STAT_EVENTS]);
	FAM("pulse_agent_nic_pool_used_blocks", "gauge", "Epoch-pool blocks held by flows");
	cur = "pulse_agent_nic_pool_used_blocks";
	PER_NIC("%llu", (unsigned long long)n->fw_stats[PULSE_STAT_POOL_USED]);
	FAM("pulse_agent_nic_pool_blocks", "gauge", "Epoch-pool blocks available");
	cur = "pulse_agent_nic_pool_blocks";
	PER_NIC("%llu", (unsigned long long)n->fw_stats[PULSE_STAT_POOL_BLOCKS]);
	FAM("pulse_agent_nic_drops", "counter", "Events or records the firmware dropped, by cause");
	for (int i = 0; i < a->nnics; i++)
		for (size_t d = 0; d < sizeof drop_stats / sizeof drop_stats[0]; d++)
			bput(&b, "pulse_agent_nic_drops_total{nic=\"%s\",cause=\"%s\"} %llu\n", lbl[i],
			     pulse_stat_name(drop_stats[d]),
			     (unsigned long long)a->nics[i].fw_stats[drop_stats[d]]);
	FAM("pulse_agent_gaps", "counter", "Windows with data missing before or inside them, by reason");
	for (int i = 0; i < a->nnics; i++)
		for (int g = 0; g < GAP_KINDS; g++)
			bput(&b, "pulse_agent_gaps_total{nic=\"%s\",reason=\"%s\"} %llu\n", lbl[i],
			     gap_names[g], (unsigned long long)a->nics[i].gaps[g]);
	FAM("pulse_agent_windows_missed", "counter", "Windows lost to sequence gaps");
	cur = "pulse_agent_windows_missed_total";
	PER_NIC("%llu", (unsigned long long)n->windows_missed);
	FAM("pulse_agent_protocol_errors", "counter", "Mailbox errors, by cause");
	for (int i = 0; i < a->nnics; i++)
		for (int e = 0; e < ERR_COUNT; e++)
			bput(&b, "pulse_agent_protocol_errors_total{nic=\"%s\",cause=\"%s\"} %llu\n", lbl[i],
			     agent_err_names[e], (unsigned long long)a->nics[i].errs[e]);
	FAM("pulse_agent_nic_restarts", "counter", "NIC agent restarts seen");
	cur = "pulse_agent_nic_restarts_total";
	PER_NIC("%llu", (unsigned long long)n->restarts);
	FAM("pulse_agent_clock_sync_error_seconds", "gauge",
	    "Error bound of the NIC-to-host clock mapping (half the POLL round trip)");
	cur = "pulse_agent_clock_sync_error_seconds";
	PER_NIC("%.9f", (double)n->cs.err_ns / 1e9);
	FAM("pulse_agent_clock_sync_error_max_seconds", "gauge", "Largest clock-sync error bound seen");
	cur = "pulse_agent_clock_sync_error_max_seconds";
	PER_NIC("%.9f", (double)n->cs.max_err_ns / 1e9);

	FAM("pulse_agent_cycles", "counter", "Poll cycles run");
	bput(&b, "pulse_agent_cycles_total %llu\n", (unsigned long long)a->cycles);
	FAM("pulse_agent_poll_overruns", "counter", "Poll periods skipped because a cycle overran");
	bput(&b, "pulse_agent_poll_overruns_total %llu\n", (unsigned long long)a->overruns);
	FAM("pulse_agent_retention_windows", "gauge", "Windows held by the retention ring");
	bput(&b, "pulse_agent_retention_windows %u\n", a->ret.count);
	FAM("pulse_agent_retention_bytes", "gauge", "Bytes held by the retention ring");
	bput(&b, "pulse_agent_retention_bytes %llu\n", (unsigned long long)a->ret.mem);
	FAM("pulse_agent_retention_cap_bytes", "gauge", "The ring's hard cap (--retain-mem)");
	bput(&b, "pulse_agent_retention_cap_bytes %llu\n", (unsigned long long)a->ret.cap_bytes);
	FAM("pulse_agent_retention_dropped", "counter",
	    "Windows dropped before their time: cap (oldest evicted) or oversize (bigger than the cap)");
	bput(&b, "pulse_agent_retention_dropped_total{reason=\"cap\"} %llu\n",
	     (unsigned long long)a->ret.dropped_cap);
	bput(&b, "pulse_agent_retention_dropped_total{reason=\"oversize\"} %llu\n",
	     (unsigned long long)a->ret.dropped_oversize);
	if (a->hooks) {
		const struct hooks *h = a->hooks;
		FAM("pulse_agent_hook_rings", "gauge", "Interception rings attached now");
		bput(&b, "pulse_agent_hook_rings %u\n", h->nrings);
		FAM("pulse_agent_hook_rings_attached", "counter", "Interception rings attached");
		bput(&b, "pulse_agent_hook_rings_attached_total %llu\n",
		     (unsigned long long)h->attached_total);
		FAM("pulse_agent_hook_records", "counter", "Interception records drained");
		bput(&b, "pulse_agent_hook_records_total %llu\n", (unsigned long long)h->records);
		FAM("pulse_agent_hook_records_dropped", "counter",
		    "Interception records lost: ring full (reported by the ring), unknown kind, or mapping full");
		bput(&b, "pulse_agent_hook_records_dropped_total %llu\n", (unsigned long long)h->dropped);
		FAM("pulse_agent_hook_attach_errors", "counter",
		    "Ring entries that could not be attached (corrupt, busy, missing)");
		bput(&b, "pulse_agent_hook_attach_errors_total %llu\n",
		     (unsigned long long)h->attach_errors);
		FAM("pulse_agent_hook_map_qps", "gauge", "QPs in the host's interception mapping");
		bput(&b, "pulse_agent_hook_map_qps %u\n", h->map.nqps);
		FAM("pulse_agent_hook_map_comms", "gauge", "Communicators in the host's interception mapping");
		bput(&b, "pulse_agent_hook_map_comms %u\n", h->map.ncomms);
	}
	FAM("pulse_agent_dumps", "counter", "Dumps of the retention ring written");
	bput(&b, "pulse_agent_dumps_total %llu\n", (unsigned long long)a->dumps);
	char *pm = probe_metrics(a); /* RDMA devices, findings, links, kernel QPs */
	if (pm)
		bput(&b, "%s", pm);
	else
		b.oom = 1;
	free(pm);
	pthread_mutex_unlock(&a->lock);
	bput(&b, "# EOF\n");
#undef PER_NIC
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

static struct MHD_Daemon *mhd;

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	(void)version;
	(void)upload_data;
	(void)con_cls;
	struct agent *a = cls;
	if (*upload_data_size)
		return MHD_NO;
	struct MHD_Response *r;
	unsigned code;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char m[] = "only GET\n";
		r = MHD_create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		static const char m[] = "pulse-host-agent: metrics are at /metrics\n";
		r = MHD_create_response_from_buffer(sizeof m - 1, (void *)m, MHD_RESPMEM_PERSISTENT);
		code = MHD_HTTP_NOT_FOUND;
	} else {
		size_t len = 0;
		char *text = metrics_render(a, &len);
		if (!text)
			return MHD_NO;
		r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
		if (r)
			MHD_add_response_header(r, "Content-Type",
						"application/openmetrics-text; version=1.0.0; charset=utf-8");
		else
			free(text);
		code = MHD_HTTP_OK;
	}
	if (!r)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

int metrics_start(struct agent *a, const char *listen, char *err, size_t errlen)
{
	char host[64];
	const char *colon = strrchr(listen, ':');
	if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host) {
		snprintf(err, errlen, "--metrics-listen %s: expected ADDR:PORT, e.g. 127.0.0.1:9464", listen);
		return -1;
	}
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = 0;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535) {
		snprintf(err, errlen, "--metrics-listen %s: bad port", listen);
		return -1;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "--metrics-listen %s: '%s' is not an IPv4 address", listen, host);
		return -1;
	}
	mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
			       NULL, NULL, handler, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			       MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!mhd) {
		snprintf(err, errlen, "--metrics-listen %s: cannot listen (address in use or not local?)",
			 listen);
		return -1;
	}
	return 0;
}

void metrics_stop(void)
{
	if (mhd)
		MHD_stop_daemon(mhd);
	mhd = NULL;
}
