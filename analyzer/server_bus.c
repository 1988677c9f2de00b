/* pulse-analyzer --bus nats://… --job J: the job's records from NATS
 * JetStream (bus/, include/pulse/bus.h) into the same state entry points
 * the TCP service uses (an_ingest_op for records, an_ingest for MAP lines),
 * through the same data-time watermark (include/pulse/watermark.h) and
 * counted in the same line counters; the same tick (server_conn.c do_tick)
 * analyzes both. Each new diagnosis goes to the job's diagnosis subject
 * with its key as the message id, so a replay by another analyzer
 * publishes nothing twice, and the lease revision as its fencing token.
 * Several analyzers may be started for one job: the one holding the job's
 * lease (bus/bus_lease.c) reads the stream from its start and publishes;
 * the others stand by and take over when the lease expires. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "analyzer.h"
#include "pulse/bus.h"
#include "pulse/clock_ns.h"
#include "pulse/hex_id.h"
#include "pulse/op_record.h"
#include "pulse/watermark.h"
#include "server_int.h"

/* Records and lines from the bus go through the same data-time watermark
 * as the TCP service's (server_conn.c: wm_deliver, wm_deliver_rec count
 * them when released), so that the bus, TCP and --replay decide on one
 * clock. A held item that cannot be stored is counted as rejected. */
static int held(struct an_srv *s, int rc)
{
	s->st.lines++;
	if (rc)
		s->st.lines_rejected++;
	return rc;
}

static int on_record(void *ctx, const char *host, const struct pulse_op_record *r)
{
	struct an_srv *s = ctx;
	uint8_t buf[PULSE_OP_BIN_MAX];
	size_t n = pulse_op_record_to_bin(r, buf, sizeof buf);
	if (!n)
		return held(s, -1);
	uint64_t key = r->end_ns > r->call_ns ? r->end_ns : r->call_ns;
	return held(s, pulse_wm_push_rec(s->wm, host, buf, n, key, pulse_mono_ns()));
}

static int on_line(void *ctx, const char *host, const char *line, size_t len)
{
	struct an_srv *s = ctx;
	return held(s, pulse_wm_push(s->wm, host, line, len, pulse_mono_ns()));
}

static void blog(void *ctx, const char *level, const char *msg)
{
	srv_log(ctx, level, "bus: %s", msg);
}

int srv_bus_start(struct an_srv *s, char *err, size_t errlen)
{
	/* Its requests give up after a renewal period: with the cluster losing
	 * a server, the library's 5 s made a standby that had just taken the
	 * job sit in its subscribe past its own lease, and a take wait out an
	 * entry that had expired meanwhile (bus_cluster.sh: job A's lease moved
	 * in 3.6-8.9 s with a 1.5 s expiry). A request that gives up is made
	 * again at the next turn. */
	uint32_t req_ms = s->cfg.lease_ms / 3 < 100 ? 100 : s->cfg.lease_ms / 3;
	struct pulse_bus_cfg c = {.url = s->cfg.bus, .job = s->cfg.job, .log = blog, .ctx = s,
				  .durable = s->cfg.bus_durable, .request_ms = req_ms};
	s->bus = pulse_bus_open(&c, err, errlen);
	if (!s->bus)
		return -1;
	snprintf(s->job, sizeof s->job, "%s", s->cfg.job);
	if (s->cfg.owner) {
		snprintf(s->owner, sizeof s->owner, "%s", s->cfg.owner);
	} else {
		char h[64] = "analyzer";
		gethostname(h, sizeof h - 1);
		h[sizeof h - 1] = 0;
		snprintf(s->owner, sizeof s->owner, "%s-%d", h, (int)getpid());
	}
	srv_log(s, "info", "job %s on %s: analyzing it while this analyzer (%s) holds its lease "
		"(expiry %" PRIu32 " ms)", s->cfg.job, s->cfg.bus, s->owner, s->cfg.lease_ms);
	return 0;
}

/* Every diagnosis made so far, published again under its key once a
 * lapsed lease is ours again: those made while it lapsed were published by
 * no one (JetStream's duplicate window and the sink's key drop the rest). */
static void republish_all(struct an_srv *s)
{
	uint32_t n = 0;
	const struct an_diagnosis *d = an_diagnoses(s->state, &n);
	for (uint32_t i = 0; d && i < n; i++)
		srv_bus_diagnosis(s, &d[i]);
	if (n)
		srv_log(s, "info", "job %s: its %u diagnoses published again (those made while the lease "
			"lapsed had gone nowhere)", s->job, n);
}

/* Takes or renews the job's lease every third of its expiry. Losing it to
 * another analyzer (it took the job: we were cut off past the expiry) ends
 * this analyzer: its diagnoses are the other's now, and a supervisor that
 * restarts it gets a standby that replays if it is chosen again. An owner
 * that cannot reach the lease past its expiry (the lease bucket's stream
 * electing a leader after a server died: no one can take it meanwhile)
 * does not know yet: it reads on and publishes nothing (lease_lapsed)
 * until the lease is ours again, or stops once it sees it taken. Its state
 * is whole either way: it is built from the job's stream, not from the
 * lease. Returns 1 while we own the job. */
static int lease(struct an_srv *s)
{
	uint64_t now = pulse_mono_ns(), period = (uint64_t)s->cfg.lease_ms * 1000000u / 3;
	if (s->t_lease && now - s->t_lease < period)
		return s->owned;
	s->t_lease = now;
	char who[96];
	uint64_t rev = 0;
	int rc = pulse_bus_lease(s->bus, s->owner, s->cfg.lease_ms, &rev, who, sizeof who);
	/* the call waits on the bus for up to three requests: whether the
	 * lease expired is judged when it answered, not when it was asked
	 * (analyzer_lease.sh under load: one call asked 0.5 s after the last
	 * renewal, answered "Timeout" 3 s later, and the owner never lapsed
	 * though it had been cut off past its expiry); a renewal counts from
	 * when it was asked, before the bus wrote it */
	uint64_t asked = now;
	now = pulse_mono_ns();
	if (rc == 1) {
		if (s->lease_lapsed)
			srv_log(s, "info", "job %s is ours again (lease revision %" PRIu64 ")", s->job, rev);
		else if (!s->owned)
			srv_log(s, "info", "job %s is ours (lease revision %" PRIu64 "): reading its stream",
				s->job, rev);
		s->owned = 1;
		s->lease_rev = rev;
		s->lease_ok_at = asked;
		if (s->lease_lapsed) {
			s->lease_lapsed = 0;
			republish_all(s);
		}
	} else if ((s->owned || s->lease_lapsed) && rc == 0) {
		srv_log(s, "error", "job %s: lease lost to %s; stopping (its diagnoses are another's now)",
			s->job, who);
		s->owned = 0;
		s->lease_lapsed = 0;
		s->lease_lost = 1;
		s->stop = 1;
	} else if (s->owned && now - s->lease_ok_at > (uint64_t)s->cfg.lease_ms * 1000000u) {
		srv_log(s, "warn", "job %s: lease lapsed (the bus unreachable past its expiry); reading on, "
			"publishing nothing until it is ours again", s->job);
		s->owned = 0;
		s->lease_lapsed = 1;
	} else if (!s->owned && !s->lease_lapsed && rc == 0 && s->st.ticks % 50 == 0) {
		srv_log(s, "info", "job %s is held by %s; standing by", s->job, who);
	}
	return s->owned;
}

int srv_bus_poll(struct an_srv *s, int timeout_ms)
{
	if (!lease(s) && !s->lease_lapsed)
		return -1; /* a standby: poll() does the waiting */
	/* diagnoses the bus refused wait in its queue (pulse_bus_put_diag),
	 * published while we hold the lease */
	struct pulse_bus_stats bs;
	pulse_bus_get_stats(s->bus, &bs);
	if (s->owned && bs.queued && !pulse_bus_flush(s->bus))
		srv_log(s, "info", "what waited for the bus is published");
	struct pulse_bus_sink k = {.record = on_record, .line = on_line, .ctx = s};
	int got = pulse_bus_consume(s->bus, &k, 256, timeout_ms);
	/* behind the stream, or cut off from it: the hosts' lines may all be
	 * in what is still to read, so none is silent yet (an analyzer stalled
	 * by the cluster losing a server took the hosts it read last for
	 * silent, released past them, and named another machine than the
	 * replay: bus_cluster.sh job B, host1 instead of host3) */
	pulse_bus_get_stats(s->bus, &bs);
	if (got < 0 || bs.pending > 0)
		pulse_wm_touch(s->wm, pulse_mono_ns());
	return got;
}

/* The key of a diagnosis: what it is and the evidence it rests on, all
 * from the data, so that any analyzer that replays the job's stream to
 * the same verdict names it the same */
static void diag_key(const struct an_diagnosis *d, char *out, size_t cap)
{
	char id[PULSE_HEX_ID_LEN];
	snprintf(out, cap, "%s/%d/%s/%" PRIu64 "/%s/%d", d->localizer ? d->localizer : "-", d->cls,
		 pulse_hex_id_format(id, d->comm_id), d->seq, d->nsuspects ? d->suspects[0].host : "group",
		 d->nsuspects ? d->suspects[0].gpu : -1);
}

void srv_bus_diagnosis(struct an_srv *s, const struct an_diagnosis *d)
{
	if (!s->bus || !s->owned)
		return;
	char key[256];
	diag_key(d, key, sizeof key);
	cJSON *o = an_diag_json_answers(s->state, d); /* stored whole (pulse-sink's evidence) */
	if (o) {
		cJSON_AddStringToObject(o, "job", s->job);
		cJSON_AddStringToObject(o, "key", key);
		cJSON_AddNumberToObject(o, "lease_revision", (double)s->lease_rev); /* the fencing token */
		cJSON_AddStringToObject(o, "analyzer", s->owner);
	}
	char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!txt)
		srv_log(s, "error", "diagnosis %s dropped: out of memory", key);
	else if (pulse_bus_put_diag(s->bus, key, txt, strlen(txt)))
		srv_log(s, "warn", "diagnosis %s not published yet (the bus refused it): it waits in the bus "
			"queue, published again at each turn", key);
	free(txt);
}

void srv_bus_stop(struct an_srv *s)
{
	if (s->bus) {
		struct pulse_bus_stats bs;
		pulse_bus_get_stats(s->bus, &bs);
		if (bs.queued)
			srv_log(s, "warn", "%u messages never reached the bus (diagnoses among them: the job's next "
				"owner replays its stream and publishes them under the same keys)", bs.queued);
	}
	if (s->bus && s->owned)
		pulse_bus_lease_release(s->bus);
	pulse_bus_close(s->bus);
	s->bus = NULL;
}
