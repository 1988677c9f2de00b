/* TEST DOUBLE of the analyzer state (analyzer/analyzer.h: an_ingest,
 * an_ingest_op, an_tick, an_get_counters, an_diag_json, an_diag_json_answers, an_diagnoses,
 * an_host_join_sent) for the server's unit test: it records the lines
 * the server hands over, so that the test can check what got through. It
 * is not shipped and does no analysis. Lines containing "reject" are
 * refused (-1, as the real state does for a record of an unknown
 * communicator), lines of type "window" are ignored (1). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "analyzer.h"
#include "fake_state.h"

struct an_state fake_state;

void fake_reset(void)
{
	for (uint32_t i = 0; i < fake_state.n; i++)
		free(fake_state.lines[i]);
	free(fake_state.lines);
	memset(&fake_state, 0, sizeof fake_state);
}

uint32_t fake_count(const char *host, const char *needle)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < fake_state.n; i++)
		if ((!host || !strcmp(fake_state.hosts[i], host)) &&
		    (!needle || strstr(fake_state.lines[i], needle)))
			n++;
	return n;
}

int an_ingest(struct an_state *s, const char *host, const char *line, size_t len, char *err,
	      size_t errlen)
{
	s->calls++;
	if (memmem(line, len, "reject", 6)) {
		snprintf(err, errlen, "test double: record for an unknown communicator");
		return -1;
	}
	if (s->n < FAKE_MAX_LINES) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 256;
			s->lines = realloc(s->lines, s->cap * sizeof *s->lines);
		}
		s->lines[s->n] = strndup(line, len);
		snprintf(s->hosts[s->n], sizeof s->hosts[s->n], "%s", host);
		s->n++;
	}
	return memmem(line, len, "\"window\"", 8) ? 1 : 0;
}

/* A binary record is kept as its JSON line, so that the test counts
 * records the same way whichever form the link sent. */
int an_ingest_op(struct an_state *s, const char *host, const struct pulse_op_record *r, char *err,
		 size_t errlen)
{
	char *line = pulse_op_record_to_json(r);
	if (!line) {
		snprintf(err, errlen, "test double: out of memory");
		return -1;
	}
	int rc = an_ingest(s, host, line, strlen(line), err, errlen);
	free(line);
	return rc;
}

int an_tick(struct an_state *s, uint64_t now_ns)
{
	s->ticks++;
	s->last_tick = now_ns;
	return 0;
}

int an_tick_if_settled(struct an_state *s)
{
	(void)s;
	return 0; /* the double localizes nothing */
}

/* For /metrics: the records handed over so far, as the real state counts its ops */
void an_get_counters(const struct an_state *s, struct an_counters *c)
{
	memset(c, 0, sizeof *c);
	c->lines = s->calls;
	c->ops = fake_count(NULL, "\"type\":\"op\"");
}

/* For the bus's diagnosis messages (server_bus.c); the double makes none */
void *an_diag_json(const struct an_diagnosis *d)
{
	(void)d;
	return cJSON_CreateObject();
}

void *an_diag_json_answers(const struct an_state *s, const struct an_diagnosis *d)
{
	(void)s;
	return an_diag_json(d);
}

/* The JOIN sent to a host (server_join.c): counted, as the real state
 * notes it for its hang bound */
void an_host_join_sent(struct an_state *s, const char *host)
{
	(void)host;
	s->joins_sent++;
}

const struct an_diagnosis *an_diagnoses(const struct an_state *s, uint32_t *n)
{
	(void)s;
	*n = 0;
	return NULL;
}

/* The direction's series (analyzer.h, an_series_*): the test double makes
 * no diagnoses, so nothing is ever asked. */
uint32_t an_series_open(struct an_state *s, uint32_t diag, uint32_t id, uint64_t now_mono)
{
	(void)s, (void)diag, (void)id, (void)now_mono;
	return 0;
}

void an_series_range(const struct an_state *s, uint32_t id, uint64_t *from_ns, uint64_t *to_ns)
{
	(void)s, (void)id;
	*from_ns = *to_ns = 0;
}

const char *an_series_host(const struct an_state *s, uint32_t id, uint32_t k)
{
	(void)s, (void)id, (void)k;
	return NULL;
}

void an_series_host_failed(struct an_state *s, uint32_t id, uint32_t k, const char *why)
{
	(void)s, (void)id, (void)k, (void)why;
}

void an_series_sent(struct an_state *s, uint32_t id, uint32_t sent)
{
	(void)s, (void)id, (void)sent;
}

int an_series_answer(struct an_state *s, const char *host, const uint8_t *p, size_t len, uint32_t *id,
		     int *decided, char *err, size_t errlen)
{
	(void)s, (void)host, (void)p, (void)len, (void)id;
	*decided = 0;
	snprintf(err, errlen, "no request open (test double)");
	return -1;
}

uint32_t an_series_expire(struct an_state *s, uint64_t now_mono, uint64_t wait_ns, int all,
			  void (*decided)(void *ctx, uint32_t id), void *ctx)
{
	(void)s, (void)now_mono, (void)wait_ns, (void)all, (void)decided, (void)ctx;
	return 0;
}

const char *an_series_result(const struct an_state *s, uint32_t id, char *buf, size_t n)
{
	(void)s, (void)id;
	snprintf(buf, n, "%s", "");
	return buf;
}
