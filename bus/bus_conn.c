/* The bus connection and the job's streams (include/pulse/bus.h). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"

void bus_log(struct pulse_bus *b, const char *level, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (b->cfg.log)
		b->cfg.log(b->cfg.ctx, level, msg);
	else
		fprintf(stderr, "pulse bus %s: %s\n", level, msg);
}

void bus_subject(const struct pulse_bus *b, const char *kind, const char *host, char *out, size_t cap)
{
	char ht[PULSE_BUS_TOKEN_LEN] = "";
	if (host && pulse_bus_token(host, ht, sizeof ht))
		ht[0] = 0;
	snprintf(out, cap, "pulse.%s.%s%s%s", b->job_tok, kind, host ? "." : "", ht);
}

static int add_stream(struct pulse_bus *b, const char *name, const char *subj, int64_t per_subject,
		      int64_t max_age_ns, int64_t max_bytes)
{
	jsStreamConfig sc;
	jsStreamConfig_Init(&sc);
	const char *subjects[1] = {subj};
	sc.Name = name;
	sc.Subjects = subjects;
	sc.SubjectsLen = 1;
	sc.Storage = js_FileStorage;
	sc.Replicas = b->cfg.replicas;
	sc.MaxAge = max_age_ns;
	sc.MaxBytes = max_bytes;
	sc.MaxMsgsPerSubject = per_subject;
	sc.Duplicates = 120LL * 1000000000LL; /* resends after a reconnect: dropped */
	jsStreamInfo *si = NULL;
	jsErrCode je = 0;
	natsStatus s = js_AddStream(&si, b->js, &sc, NULL, &je);
	if (s != NATS_OK && je == JSStreamNameExistErr) {
		je = 0;
		s = js_UpdateStream(&si, b->js, &sc, NULL, &je);
	}
	jsStreamInfo_Destroy(si);
	if (s != NATS_OK) {
		bus_log(b, "error", "stream %s: %s (JetStream error %d)", name, natsStatus_GetText(s), (int)je);
		return -1;
	}
	return 0;
}

int bus_ensure_streams(struct pulse_bus *b)
{
	if (b->streams_ok)
		return 0;
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	snprintf(subj, sizeof subj, "pulse.%s.ops.*", b->job_tok);
	int64_t age = b->cfg.max_age_s * 1000000000LL;
	if (add_stream(b, b->stream, subj, -1, age, b->cfg.max_bytes))
		return -1;
	snprintf(subj, sizeof subj, "pulse.%s.state.*", b->job_tok);
	if (add_stream(b, b->state_stream, subj, 1, 0, -1))
		return -1;
	snprintf(subj, sizeof subj, "pulse.%s.diag", b->job_tok);
	if (add_stream(b, b->diag_stream, subj, -1, age, -1))
		return -1;
	b->streams_ok = 1;
	bus_log(b, "info", "streams %s, %s, %s ready (replicas %d, kept %" PRId64 " s / %" PRId64 " bytes)",
		b->stream, b->state_stream, b->diag_stream, b->cfg.replicas, b->cfg.max_age_s,
		b->cfg.max_bytes);
	return 0;
}

int bus_publish(struct pulse_bus *b, const char *subj, const char *id, const char *host,
		const void *data, size_t len, int *dup)
{
	/* not connected: fail at once (the caller queues) rather than stall
	 * the agent's poll loop for the publish timeout */
	if (natsConnection_Status(b->nc) != NATS_CONN_STATUS_CONNECTED || bus_ensure_streams(b))
		return -1;
	natsMsg *m = NULL;
	natsStatus s = natsMsg_Create(&m, subj, NULL, data, (int)len);
	if (s == NATS_OK && host)
		s = natsMsgHeader_Set(m, "Pulse-Host", host);
	jsPubOptions po;
	jsPubOptions_Init(&po);
	po.MsgId = id && *id ? id : NULL;
	po.MaxWait = 1000;
	jsPubAck *pa = NULL;
	jsErrCode je = 0;
	if (s == NATS_OK)
		s = js_PublishMsg(&pa, b->js, m, &po, &je);
	if (dup)
		*dup = pa && pa->Duplicate;
	jsPubAck_Destroy(pa);
	natsMsg_Destroy(m);
	if (s != NATS_OK) {
		if (b->nlog++ < 20 || b->nlog % 1000 == 0)
			bus_log(b, "warn", "publish %s (%s): %s (JetStream error %d)", subj, id ? id : "-",
				natsStatus_GetText(s), (int)je);
		return -1;
	}
	return 0;
}

static int job_ok(const char *j)
{
	size_t n = j ? strlen(j) : 0;
	return n >= 1 && n <= 63 && strspn(j, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@+-") == n;
}

/* PULSE_BUS="replicas=3,max_age_s=172800,max_bytes=…,zstd_level=…,queue_cap=…":
 * the streams' limits for every program that talks to the bus, without
 * an option in each; an unknown key is an error. */
static int env_cfg(struct pulse_bus_cfg *c, char *err, size_t errlen)
{
	const char *e = getenv("PULSE_BUS");
	if (!e || !*e)
		return 0;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", e);
	char *save = NULL;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		char *end = NULL;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || !eq[1] || *end || v < 0) {
			snprintf(err, errlen, "PULSE_BUS: '%s' is not key=number", kv);
			return -1;
		}
		*eq = 0;
		if (!strcmp(kv, "replicas") && v >= 1 && v <= 5)
			c->replicas = (int)v;
		else if (!strcmp(kv, "max_age_s") && v >= 1)
			c->max_age_s = v;
		else if (!strcmp(kv, "max_bytes") && v >= 4096)
			c->max_bytes = v;
		else if (!strcmp(kv, "zstd_level") && v <= 19)
			c->zstd_level = (int)v;
		else if (!strcmp(kv, "queue_cap") && v >= 65536 && v <= (1LL << 31))
			c->queue_cap = (uint32_t)v;
		else {
			snprintf(err, errlen, "PULSE_BUS: unknown key or value out of range: %s=%lld "
				 "(keys: replicas 1-5, max_age_s, max_bytes, zstd_level 0-19, queue_cap)", kv, v);
			return -1;
		}
	}
	return 0;
}

struct pulse_bus *pulse_bus_open(const struct pulse_bus_cfg *cfg, char *err, size_t errlen)
{
	if (!cfg->url || strncmp(cfg->url, "nats://", 7)) {
		snprintf(err, errlen, "--bus %s: want nats://HOST:PORT[,nats://HOST:PORT...]",
			 cfg->url ? cfg->url : "(none)");
		return NULL;
	}
	if (!job_ok(cfg->job)) {
		snprintf(err, errlen, "--bus needs a job name (--job) of 1-63 characters of [A-Za-z0-9._:@+-], not '%s'",
			 cfg->job ? cfg->job : "");
		return NULL;
	}
	struct pulse_bus *b = calloc(1, sizeof *b);
	if (!b || !(b->rec = malloc(sizeof *b->rec))) {
		free(b);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->cfg = *cfg;
	if (env_cfg(&b->cfg, err, errlen)) {
		free(b->rec);
		free(b);
		return NULL;
	}
	if (b->cfg.replicas < 1)
		b->cfg.replicas = 1;
	if (b->cfg.max_age_s <= 0)
		b->cfg.max_age_s = 86400;
	if (b->cfg.max_bytes <= 0)
		b->cfg.max_bytes = 1LL << 30;
	if (!b->cfg.zstd_level)
		b->cfg.zstd_level = 3;
	if (!b->cfg.queue_cap)
		b->cfg.queue_cap = 64u << 20;
	pthread_mutex_init(&b->mu, NULL);
	pulse_bus_token(cfg->job, b->job_tok, sizeof b->job_tok);
	snprintf(b->stream, sizeof b->stream, "PULSE_%s", b->job_tok);
	snprintf(b->state_stream, sizeof b->state_stream, "PULSE_%s_STATE", b->job_tok);
	snprintf(b->diag_stream, sizeof b->diag_stream, "PULSE_%s_DIAG", b->job_tok);
	natsOptions *o = NULL;
	natsStatus s = natsOptions_Create(&o);
	/* libnats takes a server list as an array: one URL given as
	 * "a,b,c" is one server that never answers, and with retries on
	 * it the connect below never returns */
	char urls[1024], *list[16];
	int nurls = 0;
	snprintf(urls, sizeof urls, "%s", cfg->url);
	for (char *save = NULL, *u = strtok_r(urls, ",", &save); u && nurls < 16; u = strtok_r(NULL, ",", &save))
		if (*u)
			list[nurls++] = u;
	if (s == NATS_OK)
		s = nurls ? natsOptions_SetServers(o, (const char **)list, nurls) : NATS_INVALID_ARG;
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(o, -1); /* forever: the agent queues meanwhile */
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(o, 250);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(o, 2000);
	if (s == NATS_OK)
		s = natsOptions_SetRetryOnFailedConnect(o, true, NULL, NULL);
	if (s == NATS_OK)
		s = natsConnection_Connect(&b->nc, o);
	natsOptions_Destroy(o);
	if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
		snprintf(err, errlen, "--bus %s: %s", cfg->url, natsStatus_GetText(s));
		pulse_bus_close(b);
		return NULL;
	}
	jsOptions jo;
	jsOptions_Init(&jo);
	jo.Wait = cfg->request_ms ? cfg->request_ms : 5000;
	if (natsConnection_JetStream(&b->js, b->nc, &jo) != NATS_OK) {
		snprintf(err, errlen, "--bus %s: no JetStream context", cfg->url);
		pulse_bus_close(b);
		return NULL;
	}
	pthread_mutex_lock(&b->mu);
	bus_ensure_streams(b); /* a server not up yet: done at the first publish */
	pthread_mutex_unlock(&b->mu);
	return b;
}

void pulse_bus_get_stats(struct pulse_bus *b, struct pulse_bus_stats *st)
{
	pthread_mutex_lock(&b->mu);
	*st = b->st;
	st->connected = b->nc && natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED;
	pthread_mutex_unlock(&b->mu);
}

void pulse_bus_close(struct pulse_bus *b)
{
	if (!b)
		return;
	if (b->sub)
		natsSubscription_Destroy(b->sub);
	if (b->state_sub)
		natsSubscription_Destroy(b->state_sub);
	if (b->diag_sub)
		natsSubscription_Destroy(b->diag_sub);
	if (b->kv)
		kvStore_Destroy(b->kv);
	jsCtx_Destroy(b->js);
	if (b->nc) {
		natsConnection_Close(b->nc);
		natsConnection_Destroy(b->nc);
	}
	while (b->qhead) {
		struct bus_qmsg *q = b->qhead;
		b->qhead = q->next;
		free(q->data);
		free(q);
	}
	free(b->batch);
	free(b->lines.buf);
	free(b->after.buf);
	free(b->scratch);
	free(b->rec);
	free(b->map_hosts);
	pthread_mutex_destroy(&b->mu);
	free(b);
}
