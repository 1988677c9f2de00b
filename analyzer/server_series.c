/* pulse-analyzer --listen: the per-QP series around a diagnosis, asked of
 * the live agents (protocol version 3: SERIES_REQ, SERIES;
 * include/pulse/qp_series_wire.h, analyzer/PROTOCOL.md).
 *
 * When a diagnosis the direction applies to is made, every host the state
 * names for it (series_fetch.c, an_series_open: the suspects' and their
 * peers') that is connected with protocol 3 gets one SERIES_REQ with the
 * same id; the answers go to an_series_answer as they come (the direction
 * is decided when the last is in). A host that is not connected, speaks an
 * older protocol, or has not answered within SERIES_WAIT_NS is recorded as
 * such, and the direction is decided from the others (counted:
 * series_unanswered). Only the state's functions are used here, so that the
 * service's unit test can run against its test double of the state. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <string.h>

#include "analyzer.h"
#include "pulse/clock_ns.h"
#include "pulse/qp_series_wire.h"
#include "server_int.h"

/* an agent answers at its next poll cycle: a few poll periods at most */
#define SERIES_WAIT_NS 10000000000ull

static struct conn *conn_of(struct an_srv *s, const char *host)
{
	for (uint32_t i = 0; i < s->nhosts; i++)
		if (!strcmp(s->hosts[i].name, host))
			return s->hosts[i].conn;
	return NULL;
}

/* the operator's log line once a request's direction is decided */
static void log_done(void *ctx, uint32_t id)
{
	struct an_srv *s = ctx;
	char b[512];
	an_series_result(s->state, id, b, sizeof b);
	if (b[0])
		srv_log(s, "info", "series request %" PRIu32 ": direction %s", id, b);
}

void srv_series_request(struct an_srv *s, uint32_t diag)
{
	uint32_t id = (uint32_t)++s->series_seq;
	uint32_t n = an_series_open(s->state, diag, id, pulse_mono_ns());
	if (!n)
		return;
	struct pulse_qps_req q = {.id = id, .max_bytes = s->cfg.max_payload};
	an_series_range(s->state, id, &q.from_ns, &q.to_ns);
	uint8_t b[PULSE_QPS_REQ_LEN];
	pulse_qps_req_encode(b, sizeof b, &q);
	uint32_t sent = 0;
	for (uint32_t k = 0; k < n; k++) {
		const char *h = an_series_host(s->state, id, k);
		struct conn *c = h ? conn_of(s, h) : NULL;
		char why[64] = "";
		if (!c || c->state != C_READY)
			snprintf(why, sizeof why, "not connected");
		else if (c->version < pulse_aw_type_since(PULSE_AW_SERIES_REQ))
			snprintf(why, sizeof why, "agent speaks protocol %u (series from 3)", c->version);
		else if (srv_conn_send(s, c, PULSE_AW_SERIES_REQ, b, sizeof b))
			snprintf(why, sizeof why, "could not send SERIES_REQ");
		if (why[0]) {
			an_series_host_failed(s->state, id, k, why);
			s->st.series_unanswered++;
		} else {
			sent++;
			s->st.series_reqs++;
		}
	}
	srv_log(s, "info", "diagnosis %u: per-QP series asked of %u of %u hosts (request %" PRIu32 ")", diag,
		sent, n, id);
	an_series_sent(s->state, id, sent);
	if (!sent)
		log_done(s, id);
}

void srv_series_answer(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	char err[256];
	uint32_t id = 0;
	int decided = 0;
	const char *host = c->host ? c->host->name : c->peer;
	if (an_series_answer(s->state, host, f->payload, f->h.length, &id, &decided, err, sizeof err)) {
		s->st.bad_payload++;
		s->st.series_bad++;
		srv_log(s, "warn", "agent %s: SERIES dropped: %s", host, err);
		return;
	}
	s->st.series_answers++;
	if (decided)
		log_done(s, id);
}

void srv_series_expire(struct an_srv *s, int all)
{
	s->st.series_unanswered += an_series_expire(s->state, pulse_mono_ns(), SERIES_WAIT_NS, all, log_done, s);
}
