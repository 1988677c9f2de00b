/* The bus consumer (include/pulse/bus.h): each host's latest MAP (the
 * state stream, last message per subject), then the job's record messages
 * in stream order through a durable pull consumer, acknowledged once the
 * sink has them. A message that does not decode is counted, logged (rate
 * limited) and acknowledged: never retried, never fatal. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"
#include "pulse/analyzer_wire.h"
#include "pulse/clock_ns.h"

/* how often an idle consumer asks whether it still exists */
#define CONSUMER_CHECK_NS 2000000000ull
/* the MAPs read again at most this often at first, then twice as far
 * apart each time up to the most (a host that never publishes one) */
#define MAP_REREAD_FIRST_NS 1000000000ull
#define MAP_REREAD_MOST_NS 64000000000ull

static int subscribe(struct pulse_bus *b)
{
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	jsErrCode je = 0;
	natsStatus s = NATS_OK;
	if (!b->state_sub) {
		jsSubOptions so;
		jsSubOptions_Init(&so);
		so.Stream = b->state_stream;
		so.Config.DeliverPolicy = js_DeliverLastPerSubject;
		so.Config.AckPolicy = js_AckNone;
		snprintf(subj, sizeof subj, "pulse.%s.state.*", b->job_tok);
		s = js_PullSubscribe(&b->state_sub, b->js, subj, NULL, NULL, &so, &je);
		b->t_map_reread = pulse_mono_ns(); /* its first MAPs may still be on the way */
		if (!b->map_reread_gap)
			b->map_reread_gap = MAP_REREAD_FIRST_NS;
	}
	if (s == NATS_OK && !b->sub) {
		jsSubOptions so;
		jsSubOptions_Init(&so);
		so.Stream = b->stream;
		so.Config.DeliverPolicy = js_DeliverAll;
		if (!b->cfg.durable && b->last_seq) {
			/* made again (consumer_lost): on from what we read */
			so.Config.DeliverPolicy = js_DeliverByStartSequence;
			so.Config.OptStartSeq = b->last_seq + 1;
		}
		so.Config.AckPolicy = js_AckExplicit;
		so.Config.AckWait = 30LL * 1000000000LL;
		snprintf(subj, sizeof subj, "pulse.%s.ops.*", b->job_tok);
		s = js_PullSubscribe(&b->sub, b->js, subj, b->cfg.durable, NULL, &so, &je);
		if (s == NATS_OK && b->last_seq && !b->cfg.durable)
			bus_log(b, "info", "reading %s from sequence %" PRIu64, b->stream, b->last_seq + 1);
		else if (s == NATS_OK)
			bus_log(b, "info", "reading %s from %s", b->stream,
				b->cfg.durable ? "the durable consumer's position" : "its start");
		b->t_check = pulse_mono_ns();
	}
	if (s != NATS_OK) {
		if (b->nlog++ < 20 || b->nlog % 1000 == 0)
			bus_log(b, "warn", "subscribe to job %s: %s (JetStream error %d)", b->cfg.job,
				natsStatus_GetText(s), (int)je);
		return -1;
	}
	return 0;
}

/* An ephemeral consumer lives on one server: when that server dies, its
 * fetches only time out, and the analyzer read nothing more (bus_cluster.sh:
 * job B's owner ingested 0 of 7520 records). An idle consumer asks, every
 * CONSUMER_CHECK_NS, whether it still exists; when the answer is an error
 * it is made again, from the stream sequence after the last record message
 * read, so nothing is read twice or skipped. (The MAP consumer delivers each
 * host's last MAP: made again from there, a MAP read twice changes nothing.)
 * A durable consumer is replicated with its stream. */
static void consumer_lost(struct pulse_bus *b)
{
	uint64_t now = pulse_mono_ns();
	if (b->cfg.durable || now - b->t_check < CONSUMER_CHECK_NS)
		return;
	b->t_check = now;
	natsSubscription **subs[2] = {&b->sub, &b->state_sub};
	for (int i = 0; i < 2; i++) {
		if (!*subs[i])
			continue;
		jsConsumerInfo *ci = NULL;
		jsErrCode je = 0;
		natsStatus s = natsSubscription_GetConsumerInfo(&ci, *subs[i], NULL, &je);
		if (s == NATS_OK) {
			jsConsumerInfo_Destroy(ci);
			continue;
		}
		bus_log(b, "warn", "%s consumer of job %s lost (%s, JetStream error %d): made again%s",
			i ? "MAP" : "record", b->cfg.job, natsStatus_GetText(s), (int)je,
			i ? "" : " after the last message read");
		natsSubscription_Destroy(*subs[i]);
		*subs[i] = NULL;
		b->st.resubscribed++;
	}
}

static uint64_t host_hash(const char *h)
{
	uint64_t x = 1469598103934665603ull; /* FNV-1a */
	for (; *h; h++)
		x = (x ^ (unsigned char)*h) * 1099511628211ull;
	return x ? x : 1;
}

static int map_hash_known(const struct pulse_bus *b, uint64_t x)
{
	if (!b->map_hosts_cap)
		return 0;
	for (size_t i = x & (b->map_hosts_cap - 1);; i = (i + 1) & (b->map_hosts_cap - 1)) {
		if (b->map_hosts[i] == x)
			return 1;
		if (!b->map_hosts[i])
			return 0;
	}
}

static int map_host_known(const struct pulse_bus *b, const char *host)
{
	return map_hash_known(b, host_hash(host));
}

/* 1: a host not known before, now known. Out of memory it stays unknown
 * (0): its records then make the MAPs be read again, ever more slowly. */
static int map_host_add(struct pulse_bus *b, const char *host)
{
	if (map_host_known(b, host))
		return 0;
	if (2 * (b->map_hosts_n + 1) > b->map_hosts_cap) {
		size_t nc = b->map_hosts_cap ? 2 * b->map_hosts_cap : 64;
		uint64_t *nt = calloc(nc, sizeof *nt);
		if (!nt)
			return 0;
		for (size_t j = 0; j < b->map_hosts_cap; j++) {
			uint64_t x = b->map_hosts[j];
			if (!x)
				continue;
			size_t i = x & (nc - 1);
			while (nt[i])
				i = (i + 1) & (nc - 1);
			nt[i] = x;
		}
		free(b->map_hosts);
		b->map_hosts = nt;
		b->map_hosts_cap = nc;
	}
	uint64_t x = host_hash(host);
	size_t i = x & (b->map_hosts_cap - 1);
	while (b->map_hosts[i])
		i = (i + 1) & (b->map_hosts_cap - 1);
	b->map_hosts[i] = x;
	b->map_hosts_n++;
	return 1;
}

/* Records of a host whose MAP was never read: the MAP consumer missed it
 * (a CI run on a loaded machine read one of two hosts' MAPs from a
 * last-per-subject consumer, nats-server 2.9.10, cause not pinned down; a
 * consumer lost with its server is another way). A new MAP consumer
 * delivers every host's last MAP again; read twice, a MAP changes nothing.
 * Paced: the first time a second after the consumer was made (its MAPs may
 * still be on the way), then twice as far apart each time up to a minute,
 * back to the start once a re-read brings a host not seen before. Caller
 * holds mu. */
static void maps_reread(struct pulse_bus *b)
{
	uint64_t now = pulse_mono_ns();
	if (b->map_missing && map_hash_known(b, b->map_missing))
		b->map_missing = 0; /* it came meanwhile (a later fetch); another host sets it again */
	if (!b->map_missing || !b->state_sub || now - b->t_map_reread < b->map_reread_gap)
		return;
	b->map_missing = 0;
	b->map_reread_gap = b->map_reread_gap * 2 < MAP_REREAD_MOST_NS ? b->map_reread_gap * 2 : MAP_REREAD_MOST_NS;
	if (b->st.maps_reread < 3 || b->st.maps_reread % 100 == 0)
		bus_log(b, "info", "records of a host whose MAP was not read: the MAPs of job %s read again (%" PRIu64
			" time(s) so far)", b->cfg.job, b->st.maps_reread + 1);
	natsSubscription_Destroy(b->state_sub);
	b->state_sub = NULL; /* made again by the next subscribe */
	b->st.maps_reread++;
}

static const char *host_of(natsMsg *m)
{
	const char *h = NULL;
	if (natsMsgHeader_Get(m, "Pulse-Host", &h) != NATS_OK || !h || !*h || strlen(h) > 63)
		return NULL;
	return h;
}

static void bad(struct pulse_bus *b, natsMsg *m, const char *why)
{
	b->st.msgs_bad++;
	if (b->st.msgs_bad <= 20 || b->st.msgs_bad % 1000 == 0)
		bus_log(b, "warn", "message on %s dropped (%" PRIu64 " so far): %s", natsMsg_GetSubject(m),
			b->st.msgs_bad, why);
}

static void one_record_msg(struct pulse_bus *b, natsMsg *m, const struct pulse_bus_sink *k)
{
	char err[256];
	const char *host = host_of(m);
	struct pulse_bus_ops d;
	if (!host) {
		bad(b, m, "no Pulse-Host header");
		return;
	}
	if (pulse_bus_ops_decode((const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), &d,
				 &b->scratch, &b->scratch_cap, err, sizeof err)) {
		bad(b, m, err);
		return;
	}
	if (d.kind == PULSE_BUS_KIND_LINES) {
		const char *t = (const char *)d.body, *end = t + d.len;
		while (t < end) {
			const char *nl = memchr(t, '\n', (size_t)(end - t)); /* decode checked there is one */
			if (k->line(k->ctx, host, t, (size_t)(nl - t)) < 0)
				b->st.records_bad++;
			else
				b->st.lines_in++;
			t = nl + 1;
		}
		return;
	}
	if (!b->map_missing && !map_host_known(b, host))
		b->map_missing = host_hash(host);
	size_t pos = 0, rl;
	const uint8_t *rec;
	while (pulse_aw_ops_next(d.body, d.len, &pos, &rec, &rl, NULL, 0) == 1) {
		if (pulse_op_record_from_bin(rec, rl, b->rec, err, sizeof err) ||
		    k->record(k->ctx, host, b->rec) < 0)
			b->st.records_bad++;
		else
			b->st.records_in++;
	}
}

int pulse_bus_consume(struct pulse_bus *b, const struct pulse_bus_sink *k, int max, int timeout_ms)
{
	pthread_mutex_lock(&b->mu);
	if (bus_ensure_streams(b) || subscribe(b)) {
		pthread_mutex_unlock(&b->mu);
		return -1;
	}
	int handled = 0;
	natsMsgList list;
	jsErrCode je = 0;
	/* MAPs first: a record of a host whose MAP is not in yet is still
	 * taken (the state checks what it can) */
	while (natsSubscription_Fetch(&list, b->state_sub, 64, 1, &je) == NATS_OK && list.Count) {
		for (int i = 0; i < list.Count; i++) {
			natsMsg *m = list.Msgs[i];
			const char *host = host_of(m);
			b->st.msgs_in++;
			if (!host)
				bad(b, m, "no Pulse-Host header");
			else if (k->line(k->ctx, host, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m)) < 0)
				bad(b, m, "MAP line refused by the analyzer");
			else {
				b->st.maps_in++;
				if (map_host_add(b, host))
					b->map_reread_gap = MAP_REREAD_FIRST_NS;
			}
			handled++;
		}
		natsMsgList_Destroy(&list);
	}
	natsStatus s = natsSubscription_Fetch(&list, b->sub, max > 0 ? max : 64,
					       timeout_ms > 0 ? timeout_ms : 1, &je);
	if (s == NATS_OK) {
		for (int i = 0; i < list.Count; i++) {
			natsMsg *m = list.Msgs[i];
			b->st.msgs_in++;
			one_record_msg(b, m, k);
			jsMsgMetaData *meta = NULL;
			if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
				b->st.pending = meta->NumPending;
				if (meta->Sequence.Stream > b->last_seq)
					b->last_seq = meta->Sequence.Stream;
				jsMsgMetaData_Destroy(meta);
			}
			natsMsg_Ack(m, NULL);
			handled++;
		}
		if (list.Count)
			b->t_check = pulse_mono_ns(); /* it delivers: it exists */
		natsMsgList_Destroy(&list);
	} else if (s != NATS_TIMEOUT) {
		if (b->nlog++ < 20 || b->nlog % 1000 == 0)
			bus_log(b, "warn", "fetch from %s: %s (JetStream error %d)", b->stream, natsStatus_GetText(s),
				(int)je);
		consumer_lost(b);
		pthread_mutex_unlock(&b->mu);
		return -1;
	} else {
		consumer_lost(b);
	}
	maps_reread(b);
	pthread_mutex_unlock(&b->mu);
	return handled;
}

int pulse_bus_consume_diags(struct pulse_bus *b, int (*fn)(void *ctx, const char *json, size_t len),
			    void *ctx, int max, int timeout_ms)
{
	pthread_mutex_lock(&b->mu);
	int done = -1;
	jsErrCode je = 0;
	natsStatus s = NATS_OK;
	if (!b->cfg.durable || bus_ensure_streams(b))
		goto out;
	if (!b->diag_sub) {
		jsSubOptions so;
		jsSubOptions_Init(&so);
		so.Stream = b->diag_stream;
		so.Config.DeliverPolicy = js_DeliverAll;
		so.Config.AckPolicy = js_AckExplicit;
		so.Config.AckWait = 10LL * 1000000000LL;
		char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
		bus_subject(b, "diag", NULL, subj, sizeof subj);
		s = js_PullSubscribe(&b->diag_sub, b->js, subj, b->cfg.durable, NULL, &so, &je);
		if (s != NATS_OK) {
			bus_log(b, "warn", "subscribe to %s: %s (JetStream error %d)", b->diag_stream,
				natsStatus_GetText(s), (int)je);
			goto out;
		}
	}
	natsMsgList list;
	s = natsSubscription_Fetch(&list, b->diag_sub, max > 0 ? max : 64, timeout_ms > 0 ? timeout_ms : 1, &je);
	if (s == NATS_TIMEOUT) {
		done = 0;
		goto out;
	}
	if (s != NATS_OK)
		goto out;
	done = 0;
	for (int i = 0; i < list.Count; i++) {
		natsMsg *m = list.Msgs[i];
		b->st.msgs_in++;
		if (fn(ctx, natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m)) == 0) {
			natsMsg_Ack(m, NULL);
			done++;
		} else {
			natsMsg_NakWithDelay(m, 1000, NULL); /* again in 1 s: the sink's store is away */
		}
	}
	natsMsgList_Destroy(&list);
out:
	pthread_mutex_unlock(&b->mu);
	return done;
}
