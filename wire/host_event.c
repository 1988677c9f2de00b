#define _GNU_SOURCE
/* The JSON forms of struct pulse_link_event and struct
 * pulse_config_finding (include/pulse/host_event.h): the host agent writes
 * them, the analyzer reads them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "json_dec.h"
#include "pulse/host_event.h"

static int add_time(cJSON *o, const char *k, uint64_t t)
{
	char b[24];
	snprintf(b, sizeof b, "%" PRIu64, t);
	return cJSON_AddRawToObject(o, k, b) ? 0 : -1;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v[0])
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static char *finish(cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	return s;
}

char *pulse_link_event_to_json(const struct pulse_link_event *e)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", "link");
	add_time(o, "t_ns", e->t_ns);
	cJSON_AddStringToObject(o, "host", e->host);
	cJSON_AddStringToObject(o, "netdev", e->netdev);
	add_str_or_null(o, "dev", e->dev);
	cJSON_AddStringToObject(o, "event", e->event);
	cJSON_AddStringToObject(o, "state", e->state);
	cJSON_AddNumberToObject(o, "ifindex", e->ifindex);
	cJSON_AddBoolToObject(o, "admin_up", e->admin_up);
	cJSON_AddBoolToObject(o, "running", e->running);
	cJSON_AddNumberToObject(o, "operstate", e->operstate);
	cJSON_AddNumberToObject(o, "carrier", e->carrier);
	return finish(o);
}

char *pulse_config_finding_to_json(const struct pulse_config_finding *f)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", "config_finding");
	add_time(o, "t_ns", f->t_ns);
	cJSON_AddStringToObject(o, "host", f->host);
	cJSON_AddStringToObject(o, "kind", f->kind);
	cJSON_AddStringToObject(o, "nic", f->nic);
	add_str_or_null(o, "gpu", f->gpu);
	cJSON_AddNumberToObject(o, "nic_numa", f->nic_numa);
	cJSON_AddNumberToObject(o, "gpu_numa", f->gpu_numa);
	cJSON_AddStringToObject(o, "detail", f->detail);
	return finish(o);
}

/* ---- decoding: every field checked ---- */

static void get_str(struct wire_dec *d, const cJSON *o, const char *k, char *out, size_t cap, int nullable)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	out[0] = 0;
	if (nullable && cJSON_IsNull(v))
		return;
	if (!cJSON_IsString(v) || !v->valuestring) {
		wire_dec_fail(d, "missing or non-string", k);
		return;
	}
	if (strlen(v->valuestring) >= cap) {
		wire_dec_fail(d, "too long", k);
		return;
	}
	memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
}

static int get_bool(struct wire_dec *d, const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsBool(v))
		wire_dec_fail(d, "missing or non-boolean", k);
	return cJSON_IsTrue(v);
}

static cJSON *open_obj(struct wire_dec *d, const char *s, size_t len, const char *type)
{
	cJSON *o = cJSON_ParseWithLength(s, len);
	if (!cJSON_IsObject(o)) {
		wire_dec_fail(d, "not a JSON object:", type);
		cJSON_Delete(o);
		return NULL;
	}
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!cJSON_IsString(t) || strcmp(t->valuestring, type)) {
		wire_dec_fail(d, "not a line of type", type);
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int pulse_link_event_from_json(const char *s, size_t len, struct pulse_link_event *e, char *err,
			       size_t errlen)
{
	struct wire_dec d = { err, errlen, NULL, 0 };
	memset(e, 0, sizeof *e);
	cJSON *o = open_obj(&d, s, len, "link");
	if (!o)
		return -1;
	e->t_ns = (uint64_t)wire_dec_num(&d, o, "t_ns", 0, 1.8e19);
	get_str(&d, o, "host", e->host, sizeof e->host, 0);
	get_str(&d, o, "netdev", e->netdev, sizeof e->netdev, 0);
	get_str(&d, o, "dev", e->dev, sizeof e->dev, 1);
	get_str(&d, o, "event", e->event, sizeof e->event, 0);
	get_str(&d, o, "state", e->state, sizeof e->state, 0);
	e->ifindex = (int32_t)wire_dec_num(&d, o, "ifindex", -1, 2147483647.0);
	e->admin_up = (uint8_t)get_bool(&d, o, "admin_up");
	e->running = (uint8_t)get_bool(&d, o, "running");
	e->operstate = (int32_t)wire_dec_num(&d, o, "operstate", -1, 255);
	e->carrier = (int32_t)wire_dec_num(&d, o, "carrier", -1, 1);
	if (!d.bad && strcmp(e->state, "up") && strcmp(e->state, "down") && strcmp(e->state, "gone") &&
	    strcmp(e->state, "absent"))
		wire_dec_fail(&d, "unknown value of", "state");
	cJSON_Delete(o);
	return d.bad ? -1 : 0;
}

int pulse_config_finding_from_json(const char *s, size_t len, struct pulse_config_finding *f, char *err,
				   size_t errlen)
{
	struct wire_dec d = { err, errlen, NULL, 0 };
	memset(f, 0, sizeof *f);
	cJSON *o = open_obj(&d, s, len, "config_finding");
	if (!o)
		return -1;
	f->t_ns = (uint64_t)wire_dec_num(&d, o, "t_ns", 0, 1.8e19);
	get_str(&d, o, "host", f->host, sizeof f->host, 0);
	get_str(&d, o, "kind", f->kind, sizeof f->kind, 0);
	get_str(&d, o, "nic", f->nic, sizeof f->nic, 0);
	get_str(&d, o, "gpu", f->gpu, sizeof f->gpu, 1);
	f->nic_numa = (int32_t)wire_dec_num(&d, o, "nic_numa", -1, 65535);
	f->gpu_numa = (int32_t)wire_dec_num(&d, o, "gpu_numa", -1, 65535);
	get_str(&d, o, "detail", f->detail, sizeof f->detail, 0);
	cJSON_Delete(o);
	return d.bad ? -1 : 0;
}

int pulse_link_event_is_down(const struct pulse_link_event *e)
{
	return !strcmp(e->state, "down") || !strcmp(e->state, "gone");
}

int pulse_link_events_read(FILE *f, int (*on_event)(void *ctx, const struct pulse_link_event *e, unsigned lineno),
			   int (*on_bad)(void *ctx, unsigned lineno, const char *why), void *ctx)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	unsigned lineno = 0;
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len)
			continue;
		struct pulse_link_event e;
		char why[160];
		int stop = pulse_link_event_from_json(line, (size_t)len, &e, why, sizeof why)
				   ? on_bad(ctx, lineno, why)
				   : on_event(ctx, &e, lineno);
		if (stop)
			break;
	}
	free(line);
	if (ferror(f)) {
		errno = errno ? errno : EIO;
		return -1;
	}
	return 0;
}
