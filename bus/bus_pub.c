/* The bus publisher (include/pulse/bus.h): a poll's records per host,
 * batched into parts of at most PULSE_BUS_MAX_RAW, compressed, published
 * with the ids <host>/<poll seq>/<part> (JetStream drops a resend within
 * its duplicate window), each host's MAP, and the analyzer's diagnoses
 * under their keys; while the bus is unreachable (or a stream elects its
 * leader) the messages wait in one bounded queue, oldest first, and what
 * exceeds it is dropped and counted. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"
#include "pulse/analyzer_wire.h"

int pulse_bus_put_op(struct pulse_bus *b, const struct pulse_op_record *r)
{
	pthread_mutex_lock(&b->mu);
	if (b->batch_cap - b->batch_len < 2 + PULSE_OP_BIN_MAX) {
		size_t nc = b->batch_cap ? b->batch_cap * 2 : 64 * 1024;
		uint8_t *nb = nc <= 4 * PULSE_BUS_MAX_RAW ? realloc(b->batch, nc) : NULL;
		if (!nb) {
			b->st.queue_dropped++;
			pthread_mutex_unlock(&b->mu);
			return -1;
		}
		b->batch = nb;
		b->batch_cap = nc;
	}
	size_t n = pulse_aw_ops_put(b->batch, b->batch_len, b->batch_cap, r);
	if (n)
		b->batch_len = n, b->batch_records++;
	pthread_mutex_unlock(&b->mu);
	return n ? 0 : -1;
}

static int lines_put(struct pulse_bus *b, struct bus_lines *l, const char *line, size_t len)
{
	pthread_mutex_lock(&b->mu);
	int rc = -1;
	if (len && len < PULSE_BUS_MAX_RAW && l->len + len + 1 <= 4 * (size_t)PULSE_BUS_MAX_RAW) {
		if (l->cap - l->len < len + 1) {
			size_t nc = l->cap ? l->cap : 64 * 1024;
			while (nc - l->len < len + 1)
				nc *= 2;
			char *nb = realloc(l->buf, nc);
			if (nb)
				l->buf = nb, l->cap = nc;
		}
		if (l->cap - l->len >= len + 1) {
			memcpy(l->buf + l->len, line, len);
			l->len += len;
			l->buf[l->len++] = '\n';
			l->count++;
			rc = 0;
		}
	}
	if (rc)
		b->st.queue_dropped++;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int pulse_bus_put_line(struct pulse_bus *b, const char *line, size_t len)
{
	return lines_put(b, &b->lines, line, len);
}

int pulse_bus_put_line_after(struct pulse_bus *b, const char *line, size_t len)
{
	return lines_put(b, &b->after, line, len);
}

static void enqueue(struct pulse_bus *b, const char *subj, const char *id, const char *host,
		    uint8_t *data, size_t len, uint32_t records, int lines, int diag)
{
	struct bus_qmsg *q = calloc(1, sizeof *q);
	/* an id cut short would dedupe against another message's */
	if (!q || b->qbytes + len > b->cfg.queue_cap || strlen(id) >= sizeof q->id) {
		if (!b->st.queue_dropped++ || b->st.queue_dropped % 1000 == 0)
			bus_log(b, "warn", "queue for the bus full (%zu bytes, cap %" PRIu32 "): %" PRIu64
				" message(s) dropped so far", b->qbytes, b->cfg.queue_cap, b->st.queue_dropped);
		free(q);
		free(data);
		return;
	}
	snprintf(q->subj, sizeof q->subj, "%s", subj);
	snprintf(q->id, sizeof q->id, "%s", id);
	snprintf(q->host, sizeof q->host, "%s", host);
	q->data = data;
	q->len = len;
	q->records = records;
	q->lines = lines;
	q->diag = diag;
	if (b->qtail)
		b->qtail->next = q;
	else
		b->qhead = q;
	b->qtail = q;
	b->qbytes += len;
	b->st.queued++;
}

/* Sends the queue in order until one fails (the bus is away: the rest waits). */
static int drain(struct pulse_bus *b)
{
	while (b->qhead) {
		struct bus_qmsg *q = b->qhead;
		int dup = 0;
		if (bus_publish(b, q->subj, q->id, q->host[0] ? q->host : NULL, q->data, q->len, &dup)) {
			b->st.publish_failures++;
			return -1;
		}
		b->st.msgs_published++;
		b->st.msgs_duplicate += (uint64_t)dup;
		if (q->diag && !dup)
			b->st.diags_published++;
		if (q->lines)
			b->st.lines_published += q->records;
		else
			b->st.records_published += q->records;
		b->st.bytes_sent += q->len;
		b->qhead = q->next;
		if (!b->qhead)
			b->qtail = NULL;
		b->qbytes -= q->len;
		b->st.queued--;
		free(q->data);
		free(q);
	}
	return 0;
}

/* A poll's parts (body[starts[p]..starts[p+1]), counts[p] records or
 * lines each) as messages of kind into the queue, their ids' part numbers
 * from id_base. Caller holds mu. */
static void parts_out(struct pulse_bus *b, const char *subj, const char *host, uint64_t poll_seq,
		      uint8_t kind, const uint8_t *body, const size_t *starts, const uint32_t *counts,
		      size_t nparts, uint16_t id_base)
{
	char id[PULSE_BUS_TOKEN_LEN + 48], err[160];
	for (size_t p = 0; p < nparts; p++) {
		struct pulse_bus_ops m = {.kind = kind, .seq = poll_seq, .part = (uint16_t)p,
					  .parts = (uint16_t)nparts, .records = counts[p], .body = body + starts[p],
					  .len = starts[p + 1] - starts[p]};
		size_t len = 0;
		uint8_t *msg = pulse_bus_ops_encode(&m, b->cfg.zstd_level, &len, err, sizeof err);
		if (!msg) {
			b->st.queue_dropped++;
			bus_log(b, "error", "%s", err);
			continue;
		}
		if (kind == PULSE_BUS_KIND_LINES)
			pulse_bus_lines_id(host, poll_seq, (uint16_t)(id_base + p), id, sizeof id);
		else
			pulse_bus_msg_id(host, poll_seq, (uint16_t)(id_base + p), id, sizeof id);
		b->st.bytes_raw += m.len;
		enqueue(b, subj, id, host, msg, len, m.records, kind == PULSE_BUS_KIND_LINES, 0);
	}
}

/* A poll's lines as kind-2 messages, split at line ends within
 * PULSE_BUS_MAX_RAW (at most 4 of them: lines_put), their ids' parts from
 * id_base. Caller holds mu. */
enum { LINES_MAXP = 8 };
static void lines_out(struct pulse_bus *b, struct bus_lines *l, const char *subj, const char *host,
		      uint64_t poll_seq, uint16_t id_base)
{
	size_t starts[LINES_MAXP + 1], nparts = 0, last = 0;
	uint32_t counts[LINES_MAXP] = {0};
	for (size_t i = 0; i < l->len; i++) {
		if (l->buf[i] != '\n')
			continue;
		if (!nparts || (i + 1 - starts[nparts - 1] > PULSE_BUS_MAX_RAW && nparts < LINES_MAXP))
			starts[nparts++] = last;
		counts[nparts - 1]++;
		last = i + 1;
	}
	starts[nparts] = l->len;
	parts_out(b, subj, host, poll_seq, PULSE_BUS_KIND_LINES, (const uint8_t *)l->buf, starts, counts, nparts,
		  id_base);
	l->len = 0;
	l->count = 0;
}

int pulse_bus_end_poll(struct pulse_bus *b, const char *host, uint64_t poll_seq)
{
	pthread_mutex_lock(&b->mu);
	/* parts: whole records, each part's raw body within PULSE_BUS_MAX_RAW
	 * (the batch is at most 4 of them: pulse_bus_put_op) */
	enum { MAXP = 8 };
	size_t starts[MAXP + 1], nparts = 0, pos = 0, rl;
	uint32_t counts[MAXP] = {0};
	const uint8_t *rec;
	while (pulse_aw_ops_next(b->batch, b->batch_len, &pos, &rec, &rl, NULL, 0) == 1) {
		if (!nparts || (pos - starts[nparts - 1] > PULSE_BUS_MAX_RAW && nparts < MAXP))
			starts[nparts++] = pos - rl - 2;
		counts[nparts - 1]++;
	}
	starts[nparts] = b->batch_len;
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	bus_subject(b, "ops", host, subj, sizeof subj);
	lines_out(b, &b->lines, subj, host, poll_seq, 0);
	parts_out(b, subj, host, poll_seq, PULSE_BUS_KIND_OPS, b->batch, starts, counts, nparts, 0);
	/* the lines that close the poll: after its records, their ids past
	 * the first lines' parts */
	lines_out(b, &b->after, subj, host, poll_seq, LINES_MAXP);
	b->batch_len = 0;
	b->batch_records = 0;
	int rc = drain(b);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

/* one message copied into the queue, then the queue sent. Caller holds mu. */
static int put_copy(struct pulse_bus *b, const char *subj, const char *id, const char *host, const void *data,
		    size_t len, int diag)
{
	uint8_t *copy = malloc(len ? len : 1);
	if (copy) {
		memcpy(copy, data, len);
		enqueue(b, subj, id, host, copy, len, 0, 0, diag);
	} else {
		b->st.queue_dropped++;
	}
	return drain(b);
}

int pulse_bus_put_map(struct pulse_bus *b, const char *host, const char *line, size_t len)
{
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	pthread_mutex_lock(&b->mu);
	bus_subject(b, "state", host, subj, sizeof subj);
	/* no id: the state stream keeps the latest per host anyway */
	int rc = put_copy(b, subj, "", host, line, len, 0);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int pulse_bus_put_diag(struct pulse_bus *b, const char *key, const char *json, size_t len)
{
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	pthread_mutex_lock(&b->mu);
	bus_subject(b, "diag", NULL, subj, sizeof subj);
	/* after what waits: a job's diagnoses in the order they were made */
	int rc = put_copy(b, subj, key, "", json, len, 1);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int pulse_bus_flush(struct pulse_bus *b)
{
	pthread_mutex_lock(&b->mu);
	int rc = drain(b);
	pthread_mutex_unlock(&b->mu);
	return rc;
}
