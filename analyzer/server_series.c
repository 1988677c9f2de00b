/* pulse-analyzer --listen: the per-QP series around a diagnosis, asked of
 * the live agents (protocol version 3: SERIES_REQ, SERIES;
 * include/pulse/qp_series_wire.h, analyzer/PROTOCOL.md).
 *
 * When a diagnosis the direction applies to is made (an_direction_wanted),
 * every host of its set (series_fetch.c: the suspects' and their peers')
 * that is connected with protocol 3 gets one SERIES_REQ with the same id;
 * the answers go to an_dir_on_answer as they come (the direction is decided
 * when the last is in). A host that is not connected, speaks an older
 * protocol, or has not answered within SERIES_WAIT_NS is recorded as such,
 * and the direction is decided from the others (counted:
 * series_unanswered). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <string.h>

#include "an_internal.h"
#include "direction.h"
#include "pulse/clock_ns.h"
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
static void log_done(struct an_srv *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->state->ndirs; i++) {
		const struct an_dir_entry *e = &s->state->dirs[i];
		if (e->req_id == id && !e->pending)
			srv_log(s, "info", "diagnosis %u: direction %s: %s", e->diag, an_dir_label_key(e->dir.label),
				e->dir.why);
	}
}

void srv_series_request(struct an_srv *s, uint32_t diag)
{
	const struct an_diagnosis *d = &s->state->diags[diag];
	if (!an_direction_wanted(d))
		return;
	struct an_dir_entry *e = an_dir_begin(s->state, diag);
	if (!e)
		return;
	e->ss.source = "live";
	e->req_id = (uint32_t)++s->series_seq;
	e->asked_mono = pulse_mono_ns();
	struct pulse_qps_req q = {.id = e->req_id, .from_ns = e->ss.from_ns, .to_ns = e->ss.to_ns,
				  .max_bytes = s->cfg.max_payload};
	uint8_t b[PULSE_QPS_REQ_LEN];
	pulse_qps_req_encode(b, sizeof b, &q);
	uint32_t sent = 0;
	for (uint32_t k = 0; k < e->ss.nhosts; k++) {
		struct an_series_host *h = &e->ss.hosts[k];
		struct conn *c = conn_of(s, h->host);
		if (!c || c->state != C_READY)
			snprintf(h->err, sizeof h->err, "not connected");
		else if (c->version < pulse_aw_type_since(PULSE_AW_SERIES_REQ))
			snprintf(h->err, sizeof h->err, "agent speaks protocol %u (series from 3)", c->version);
		else if (srv_conn_send(s, c, PULSE_AW_SERIES_REQ, b, sizeof b))
			snprintf(h->err, sizeof h->err, "could not send SERIES_REQ");
		else {
			sent++;
			s->st.series_reqs++;
		}
		if (h->err[0])
			s->st.series_unanswered++;
	}
	srv_log(s, "info", "diagnosis %u: per-QP series asked of %u of %u hosts (request %" PRIu32 ")", diag,
		sent, e->ss.nhosts, e->req_id);
	e->pending = sent > 0;
	if (!sent) {
		an_dir_finish(s->state, e);
		log_done(s, e->req_id);
	}
}

void srv_series_answer(struct an_srv *s, struct conn *c, const struct pulse_aw_frame *f)
{
	struct pulse_qps_resp r;
	char err[256];
	if (pulse_qps_resp_decode(f->payload, f->h.length, &r, err, sizeof err)) {
		s->st.bad_payload++;
		s->st.series_bad++;
		srv_log(s, "warn", "agent %s: SERIES dropped: %s", c->host ? c->host->name : c->peer, err);
		return;
	}
	if (!c->host || strcmp(r.host, c->host->name)) {
		s->st.series_bad++;
		srv_log(s, "warn", "agent %s: SERIES for host %s; dropped", c->host ? c->host->name : c->peer,
			r.host);
	} else {
		s->st.series_answers++;
		an_dir_on_answer(s->state, c->host->name, &r);
		log_done(s, r.id);
	}
	pulse_qps_resp_free(&r);
}

void srv_series_expire(struct an_srv *s, int all)
{
	uint64_t now = pulse_mono_ns();
	for (uint32_t i = 0; i < s->state->ndirs; i++) {
		struct an_dir_entry *e = &s->state->dirs[i];
		if (!e->pending || (!all && now - e->asked_mono < SERIES_WAIT_NS))
			continue;
		for (uint32_t k = 0; k < e->ss.nhosts; k++)
			if (!e->ss.hosts[k].answered && !e->ss.hosts[k].err[0]) {
				snprintf(e->ss.hosts[k].err, sizeof e->ss.hosts[k].err, "no answer");
				s->st.series_unanswered++;
			}
		an_dir_finish(s->state, e);
		log_done(s, e->req_id);
	}
}
