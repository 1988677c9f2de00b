/* pulse-host-agent: the agent's own health as OpenMetrics text on
 * --metrics-listen ADDR:PORT (GET /metrics), served by libmicrohttpd's
 * internal thread (om/, shared with pulse-analyzer). Every per-NIC family
 * carries a nic label. Values are read under the agent lock, so one scrape
 * is one consistent snapshot. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pulse/om.h"
#include "probe.h"

#define FAM(name, type, help) om_family(&b, name, type, help)

static const enum pulse_stat drop_stats[] = {
	PULSE_STAT_DROP_BAD_QPN, PULSE_STAT_DROP_NO_SLOT, PULSE_STAT_DROP_NO_POOL,
	PULSE_STAT_DROP_TS_RANGE, PULSE_STAT_DROP_BAD_THREAD, PULSE_STAT_DROP_PAUSED,
};
#define gap_names agent_gap_names

char *metrics_render(struct agent *a, size_t *len)
{
	struct om_buf b;
	om_init(&b, 8192);
	if (b.oom)
		return NULL;
	char lbl[AGENT_MAX_NICS][AGENT_NAME_MAX * 2];
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < a->nnics; i++)
		om_escape(a->nics[i].name, lbl[i], sizeof lbl[i]);
#define PER_NIC(fmt_value, expr)                                                        \
	for (int i = 0; i < a->nnics; i++) {                                            \
		const struct agent_nic *n = &a->nics[i];                               \
		(void)n;                                                                \
		om_printf(&b, "%s{nic=\"%s\"} " fmt_value "\n", cur, lbl[i], expr);         \
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
			om_printf(&b, "pulse_agent_nic_drops_total{nic=\"%s\",cause=\"%s\"} %llu\n", lbl[i],
			     pulse_stat_name(drop_stats[d]),
			     (unsigned long long)a->nics[i].fw_stats[drop_stats[d]]);
	FAM("pulse_agent_gaps", "counter", "Windows with data missing before or inside them, by reason");
	for (int i = 0; i < a->nnics; i++)
		for (int g = 0; g < GAP_KINDS; g++)
			om_printf(&b, "pulse_agent_gaps_total{nic=\"%s\",reason=\"%s\"} %llu\n", lbl[i],
			     gap_names[g], (unsigned long long)a->nics[i].gaps[g]);
	FAM("pulse_agent_windows_missed", "counter", "Windows lost to sequence gaps");
	cur = "pulse_agent_windows_missed_total";
	PER_NIC("%llu", (unsigned long long)n->windows_missed);
	FAM("pulse_agent_protocol_errors", "counter", "Mailbox errors, by cause");
	for (int i = 0; i < a->nnics; i++)
		for (int e = 0; e < ERR_COUNT; e++)
			om_printf(&b, "pulse_agent_protocol_errors_total{nic=\"%s\",cause=\"%s\"} %llu\n", lbl[i],
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
	om_printf(&b, "pulse_agent_cycles_total %llu\n", (unsigned long long)a->cycles);
	FAM("pulse_agent_poll_overruns", "counter", "Poll periods skipped because a cycle overran");
	om_printf(&b, "pulse_agent_poll_overruns_total %llu\n", (unsigned long long)a->overruns);
	FAM("pulse_agent_retention_windows", "gauge", "Windows held by the retention ring");
	om_printf(&b, "pulse_agent_retention_windows %u\n", a->ret.count);
	FAM("pulse_agent_retention_bytes", "gauge", "Bytes held by the retention ring");
	om_printf(&b, "pulse_agent_retention_bytes %llu\n", (unsigned long long)a->ret.mem);
	FAM("pulse_agent_retention_cap_bytes", "gauge", "The ring's hard cap (--retain-mem)");
	om_printf(&b, "pulse_agent_retention_cap_bytes %llu\n", (unsigned long long)a->ret.cap_bytes);
	FAM("pulse_agent_retention_dropped", "counter",
	    "Windows dropped before their time: cap (oldest evicted) or oversize (bigger than the cap)");
	om_printf(&b, "pulse_agent_retention_dropped_total{reason=\"cap\"} %llu\n",
	     (unsigned long long)a->ret.dropped_cap);
	om_printf(&b, "pulse_agent_retention_dropped_total{reason=\"oversize\"} %llu\n",
	     (unsigned long long)a->ret.dropped_oversize);
	if (a->hooks) {
		const struct hooks *h = a->hooks;
		FAM("pulse_agent_hook_rings", "gauge", "Interception rings attached now");
		om_printf(&b, "pulse_agent_hook_rings %u\n", h->nrings);
		FAM("pulse_agent_hook_rings_attached", "counter", "Interception rings attached");
		om_printf(&b, "pulse_agent_hook_rings_attached_total %llu\n",
		     (unsigned long long)h->attached_total);
		FAM("pulse_agent_hook_records", "counter", "Interception records drained");
		om_printf(&b, "pulse_agent_hook_records_total %llu\n", (unsigned long long)h->records);
		FAM("pulse_agent_hook_records_dropped", "counter",
		    "Interception records lost: ring full (reported by the ring), unknown kind, or mapping full");
		om_printf(&b, "pulse_agent_hook_records_dropped_total %llu\n", (unsigned long long)h->dropped);
		FAM("pulse_agent_hook_attach_errors", "counter",
		    "Ring entries that could not be attached (corrupt, busy, missing)");
		om_printf(&b, "pulse_agent_hook_attach_errors_total %llu\n",
		     (unsigned long long)h->attach_errors);
		FAM("pulse_agent_hook_map_qps", "gauge", "QPs in the host's interception mapping");
		om_printf(&b, "pulse_agent_hook_map_qps %u\n", h->map.nqps);
		FAM("pulse_agent_hook_map_comms", "gauge", "Communicators in the host's interception mapping");
		om_printf(&b, "pulse_agent_hook_map_comms %u\n", h->map.ncomms);
	}
	FAM("pulse_agent_dumps", "counter", "Dumps of the retention ring written");
	om_printf(&b, "pulse_agent_dumps_total %llu\n", (unsigned long long)a->dumps);
	char *pm = probe_metrics(a); /* RDMA devices, findings, links, kernel QPs */
	if (pm)
		om_printf(&b, "%s", pm);
	else
		b.oom = 1;
	free(pm);
	pthread_mutex_unlock(&a->lock);
#undef PER_NIC
	return om_finish(&b, len);
}

static struct om_http *http;

static char *render(void *ctx, size_t *len)
{
	return metrics_render(ctx, len);
}

int metrics_start(struct agent *a, const char *listen, char *err, size_t errlen)
{
	http = om_http_start(listen, "--metrics-listen", "pulse-host-agent", render, a, err, errlen);
	return http ? 0 : -1;
}

void metrics_stop(void)
{
	om_http_stop(http);
	http = NULL;
}
