/* pulse-analyzer --metrics-listen ADDR:PORT: the live service's health as
 * OpenMetrics text (GET /metrics), served by libmicrohttpd's thread through
 * om/ (shared with pulse-host-agent). The analyzer's state belongs to the
 * service loop's thread, so the loop renders a snapshot after each tick
 * (every tick_ms, 200 ms) and the HTTP thread hands out a copy of the
 * latest one under a mutex: a scrape never touches the state. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "pulse/bus.h"
#include "pulse/clock_ns.h"
#include "pulse/om.h"
#include "server_int.h"

struct srv_metrics {
	struct om_http *http;
	pthread_mutex_t mu;
	char *text; /* the latest snapshot */
	size_t len;
};

static char *serve(void *ctx, size_t *len)
{
	struct srv_metrics *m = ctx;
	pthread_mutex_lock(&m->mu);
	char *t = m->text ? malloc(m->len) : NULL;
	if (t) {
		memcpy(t, m->text, m->len);
		*len = m->len;
	}
	pthread_mutex_unlock(&m->mu);
	return t;
}

/* short label values for enum an_class (an_class_name is prose) */
static const char *const class_label[] = {"none", "comp_slow", "comp_stop", "comm_slow", "comm_stop"};
#define NCLASS (sizeof class_label / sizeof class_label[0])

static char *render(struct an_srv *s, size_t *len)
{
	struct om_buf b;
	om_init(&b, 4096);
	struct an_counters c;
	an_get_counters(s->state, &c);
	const struct an_srv_stats *st = &s->st;
	char job[2 * PULSE_AW_NAME_LEN];
	om_escape(s->job, job, sizeof job);

	om_family(&b, "pulse_analyzer_info", "gauge", "This analyzer: its job (empty until the first HELLO) and protocol versions");
	om_printf(&b, "pulse_analyzer_info{job=\"%s\",protocol_min=\"%d\",protocol_max=\"%d\"} 1\n", job,
		  PULSE_AW_VERSION_MIN, PULSE_AW_VERSION_MAX);
	om_family(&b, "pulse_analyzer_jobs_owned", "gauge", "Jobs this analyzer analyzes (--listen: one, once an agent said HELLO)");
	om_printf(&b, "pulse_analyzer_jobs_owned %d\n", s->bus ? s->owned : s->job[0] ? 1 : 0);
	if (s->bus) {
		om_family(&b, "pulse_analyzer_lease_revision", "gauge",
			  "Revision of the job's lease this analyzer holds (the fencing token; 0: a standby)");
		om_printf(&b, "pulse_analyzer_lease_revision %" PRIu64 "\n", s->owned ? s->lease_rev : 0);
	}
	om_family(&b, "pulse_analyzer_agents_connected", "gauge", "Host agents connected now");
	om_printf(&b, "pulse_analyzer_agents_connected %" PRIu64 "\n", st->agents_now);
	om_family(&b, "pulse_analyzer_records", "counter", "Operator records ingested (rate(): records/s)");
	om_printf(&b, "pulse_analyzer_records_total %" PRIu64 "\n", c.ops);
	om_family(&b, "pulse_analyzer_lines", "counter", "Agent lines and binary records received, by what the state made of them");
	om_printf(&b, "pulse_analyzer_lines_total{result=\"used\"} %" PRIu64 "\n", st->lines_used);
	om_printf(&b, "pulse_analyzer_lines_total{result=\"ignored\"} %" PRIu64 "\n", st->lines_ignored);
	om_printf(&b, "pulse_analyzer_lines_total{result=\"rejected\"} %" PRIu64 "\n", st->lines_rejected);
	om_family(&b, "pulse_analyzer_input_bytes", "counter", "Bytes received from host agents");
	om_printf(&b, "pulse_analyzer_input_bytes_total %" PRIu64 "\n", st->bytes_in);
	/* consumer lag: how far the newest data ingested is behind this
	 * machine's clock (an idle job's lag grows; agents that fall behind
	 * show here first) */
	uint64_t now = pulse_real_ns();
	om_family(&b, "pulse_analyzer_consumer_lag_seconds", "gauge",
		  "Wall clock minus the data time of the newest record ingested (NaN before the first)");
	if (c.data_ns)
		om_printf(&b, "pulse_analyzer_consumer_lag_seconds %.3f\n",
			  now > c.data_ns ? (double)(now - c.data_ns) / 1e9 : 0.0);
	else
		om_printf(&b, "pulse_analyzer_consumer_lag_seconds NaN\n");
	om_family(&b, "pulse_analyzer_diagnoses", "counter", "Diagnoses made, by class and localizer");
	uint64_t by[2][NCLASS] = {{0}};
	uint32_t nd = 0;
	const struct an_diagnosis *d = an_diagnoses(s->state, &nd);
	for (uint32_t i = 0; d && i < nd; i++)
		if (d[i].cls >= 0 && (size_t)d[i].cls < NCLASS)
			by[d[i].localizer && !strcmp(d[i].localizer, "op-level")][d[i].cls]++;
	for (int l = 0; l < 2; l++)
		for (size_t k = 1; k < NCLASS; k++)
			om_printf(&b, "pulse_analyzer_diagnoses_total{class=\"%s\",localizer=\"%s\"} %" PRIu64 "\n",
				  class_label[k], l ? "op-level" : "pulse", by[l][k]);
	om_family(&b, "pulse_analyzer_bad_input", "counter", "Agent input dropped, by kind (analyzer/PROTOCOL.md)");
	const struct {
		const char *k;
		uint64_t v;
	} bad[] = {{"bad_magic", st->bad_magic},       {"oversize", st->oversize},
		   {"bad_frames", st->bad_frames},     {"bad_payload", st->bad_payload},
		   {"protocol_errors", st->protocol_errors}, {"skew_dropped", st->skew_dropped},
		   {"mid_frame_disconnects", st->mid_frame_disconnects}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		om_printf(&b, "pulse_analyzer_bad_input_total{kind=\"%s\"} %" PRIu64 "\n", bad[i].k, bad[i].v);
	om_family(&b, "pulse_analyzer_agent_dropped_frames", "counter", "Frames the agents dropped on their side (their HEARTBEATs)");
	om_printf(&b, "pulse_analyzer_agent_dropped_frames_total %" PRIu64 "\n", st->agent_dropped);
	om_family(&b, "pulse_analyzer_flood_throttled", "counter", "Flood episodes (an agent over its frame rate)");
	om_printf(&b, "pulse_analyzer_flood_throttled_total %" PRIu64 "\n", st->flood_throttled);
	if (s->bus) {
		struct pulse_bus_stats bs;
		pulse_bus_get_stats(s->bus, &bs);
		om_family(&b, "pulse_analyzer_bus_pending_messages", "gauge",
			  "Consumer lag on the bus: record messages the job's stream holds that this analyzer has not read");
		om_printf(&b, "pulse_analyzer_bus_pending_messages %" PRIu64 "\n", bs.pending);
		om_family(&b, "pulse_analyzer_bus_messages", "counter", "Bus messages read, by result");
		om_printf(&b, "pulse_analyzer_bus_messages_total{result=\"used\"} %" PRIu64 "\n", bs.msgs_in - bs.msgs_bad);
		om_printf(&b, "pulse_analyzer_bus_messages_total{result=\"malformed\"} %" PRIu64 "\n", bs.msgs_bad);
		om_family(&b, "pulse_analyzer_bus_connected", "gauge", "1 while connected to a NATS server");
		om_printf(&b, "pulse_analyzer_bus_connected %d\n", bs.connected);
		om_family(&b, "pulse_analyzer_bus_consumers_remade", "counter",
			  "Consumers made again after their server lost them (on from the last message read)");
		om_printf(&b, "pulse_analyzer_bus_consumers_remade_total %" PRIu64 "\n", bs.resubscribed);
		om_family(&b, "pulse_analyzer_bus_maps_reread", "counter",
			  "MAPs read again because records came from a host whose MAP had not been read");
		om_printf(&b, "pulse_analyzer_bus_maps_reread_total %" PRIu64 "\n", bs.maps_reread);
		om_family(&b, "pulse_analyzer_bus_diagnoses_published", "counter",
			  "Diagnoses published on the bus (once each: a key said again is not counted)");
		om_printf(&b, "pulse_analyzer_bus_diagnoses_published_total %" PRIu64 "\n", bs.diags_published);
		om_family(&b, "pulse_analyzer_bus_queued_messages", "gauge",
			  "Messages (diagnoses) the bus refused, waiting to be published again in order");
		om_printf(&b, "pulse_analyzer_bus_queued_messages %u\n", bs.queued);
		om_family(&b, "pulse_analyzer_bus_queue_dropped", "counter", "Messages dropped: the bus queue at its cap");
		om_printf(&b, "pulse_analyzer_bus_queue_dropped_total %" PRIu64 "\n", bs.queue_dropped);
	}
	om_family(&b, "pulse_analyzer_ticks", "counter", "Analysis ticks run");
	om_printf(&b, "pulse_analyzer_ticks_total %" PRIu64 "\n", st->ticks);
	om_family(&b, "pulse_analyzer_hosts", "gauge", "Hosts, ranks' nodes and communicators known to the state");
	om_printf(&b, "pulse_analyzer_hosts %u\npulse_analyzer_nodes %u\npulse_analyzer_communicators %u\n",
		  c.hosts, c.nodes, c.comms);
	return om_finish(&b, len);
}

int srv_metrics_start(struct an_srv *s, const char *listen, char *err, size_t errlen)
{
	struct srv_metrics *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_init(&m->mu, NULL);
	s->metrics = m;
	srv_metrics_update(s); /* a first snapshot before anyone can ask */
	m->http = om_http_start(listen, "--metrics-listen", "pulse-analyzer", serve, m, err, errlen);
	if (!m->http) {
		srv_metrics_stop(s);
		return -1;
	}
	srv_log(s, "info", "metrics on http://%.*s:%d/metrics", (int)(strrchr(listen, ':') - listen),
		listen, om_http_port(m->http));
	return 0;
}

void srv_metrics_update(struct an_srv *s)
{
	struct srv_metrics *m = s->metrics;
	if (!m)
		return;
	size_t len = 0;
	char *t = render(s, &len);
	if (!t)
		return; /* out of memory: the last snapshot stays */
	pthread_mutex_lock(&m->mu);
	free(m->text);
	m->text = t;
	m->len = len;
	pthread_mutex_unlock(&m->mu);
}

void srv_metrics_stop(struct an_srv *s)
{
	struct srv_metrics *m = s->metrics;
	if (!m)
		return;
	om_http_stop(m->http); /* its thread is gone: no lock needed after this */
	free(m->text);
	pthread_mutex_destroy(&m->mu);
	free(m);
	s->metrics = NULL;
}

int an_srv_metrics_port(const struct an_srv *s)
{
	return s->metrics ? om_http_port(s->metrics->http) : -1;
}
