/* The JSON form of a host's interception mapping (include/pulse/hook_map.h):
 * the host agent writes it (host-agent/qp_map.c), the analyzer reads it
 * (analyzer/server_join.c for the QP join, analyzer/state.c for ranks and
 * GPUs). One codec so the two readers cannot disagree. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "pulse/hex_id.h"
#include "pulse/hook_map.h"
#include "pulse/json_put.h"
#include "pulse/qp_join.h"

static const char *const how_names[] = { "unknown", "init_rank", "init_rank_config", "init_all",
					 "split", "init_rank_scalable", "destroy", "abort",
					 "profiler", "shrink", "grow", "finalize", "revoke",
					 "suspend", "resume" };
static const char *const state_names[] = { NULL, "created", "rtr", "destroyed", "net" };
static const char *const gpu_src_names[] = { "unknown", "cudart", "cuda_visible_devices" };
static const char *const comm_from_names[] = { NULL, "init", "net" };
#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

const char *pulse_hook_map_how_name(uint8_t how)
{
	return how < NAMES(how_names) ? how_names[how] : "unknown";
}

const char *pulse_hook_map_state_name(uint8_t st)
{
	return st < NAMES(state_names) && state_names[st] ? state_names[st] : "created";
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return (int)i;
	return -1;
}

/* ---- encoding ---- */


/* a fixed-size field that may fill its array without a NUL */
static void put_fixed(FILE *f, const char *s, size_t n)
{
	char buf[64];
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	pulse_json_put_str(f, buf);
}

static void put_id(FILE *f, const char *key, uint64_t v, int known)
{
	char buf[PULSE_HEX_ID_LEN];
	if (known)
		fprintf(f, ",\"%s\":\"%s\"", key, pulse_hex_id_format(buf, v));
	else
		fprintf(f, ",\"%s\":null", key);
}

static void put_gpu(FILE *f, const struct pulse_hook_gpu *g)
{
	fprintf(f, ",\"gpu\":{\"cuda_dev\":%d,\"pci_bus_id\":", g->cuda_dev);
	put_fixed(f, g->pci_bus_id, sizeof g->pci_bus_id);
	fputs(",\"visible\":", f);
	put_fixed(f, g->visible, sizeof g->visible);
	fprintf(f, ",\"source\":\"%s\"}",
		g->source < NAMES(gpu_src_names) ? gpu_src_names[g->source] : "unknown");
}

int pulse_hook_map_write(FILE *f, const struct pulse_hook_map *m)
{
	fprintf(f, "{\"type\":\"hook_map\",\"t_ns\":%" PRIu64 ",\"version\":%" PRIu64 ",\"comms\":[",
		m->t_ns, m->version);
	for (uint32_t i = 0; i < m->ncomms; i++) {
		const struct pulse_hook_map_comm *c = &m->comms[i];
		fputs(i ? ",{" : "{", f);
		fprintf(f, "\"pid\":%u", c->pid);
		put_id(f, "comm_id", c->comm_id, 1);
		put_id(f, "parent_id", c->parent_id, c->parent_id != 0);
		fprintf(f, ",\"rank\":%d,\"nranks\":%d,\"how\":\"%s\",\"source\":\"%s\",\"destroyed\":%s",
			c->rank, c->nranks, pulse_hook_map_how_name(c->how),
			c->source == PULSE_HOOK_SRC_PROFILER ? "profiler" : "hook",
			c->destroyed ? "true" : "false");
		put_id(f, "nccl_hash", c->nccl_hash, c->nccl_hash != 0);
		fprintf(f, ",\"nnodes\":%u,\"t_ns\":%" PRIu64, c->nnodes, c->t_ns);
		put_gpu(f, &c->gpu);
		fputc('}', f);
	}
	fputs("],\"qps\":[", f);
	for (uint32_t i = 0; i < m->nqps; i++) {
		const struct pulse_hook_map_qp *q = &m->qps[i];
		char dev[PULSE_HOOK_MAP_DEV_LEN];
		memcpy(dev, q->dev, sizeof dev);
		dev[sizeof dev - 1] = '\0';
		fputs(i ? ",{\"dev\":" : "{\"dev\":", f);
		pulse_json_put_str(f, dev);
		fprintf(f, ",\"port\":%u,\"qpn\":%u,\"state\":\"%s\",\"pid\":%u,\"tid\":%u", q->port, q->qpn,
			pulse_hook_map_state_name(q->state), q->pid, q->tid);
		put_id(f, "comm_id", q->comm_id, q->has_comm);
		fprintf(f, ",\"rank\":%d", q->rank);
		if (q->remote_qpn_known)
			fprintf(f, ",\"remote_qpn\":%u", q->remote_qpn);
		else
			fputs(",\"remote_qpn\":null", f);
		if (q->gid_valid) {
			fputs(",\"remote_gid\":\"", f);
			for (int k = 0; k < 16; k += 2)
				fprintf(f, "%s%02x%02x", k ? ":" : "", q->remote_gid[k], q->remote_gid[k + 1]);
			fputc('"', f);
		} else {
			fputs(",\"remote_gid\":null", f);
		}
		put_gpu(f, &q->gpu);
		if (q->comm_from && q->comm_from < NAMES(comm_from_names))
			fprintf(f, ",\"comm_from\":\"%s\"}", comm_from_names[q->comm_from]);
		else
			fputs(",\"comm_from\":null}", f);
	}
	fputs("]}\n", f);
	return ferror(f) ? -1 : 0;
}

char *pulse_hook_map_to_json(const struct pulse_hook_map *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	int rc = pulse_hook_map_write(f, m);
	if (fclose(f) || rc) {
		free(buf);
		return NULL;
	}
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}

/* ---- decoding: every key that is there is checked ---- */

struct dec {
	char *err;
	size_t errlen;
	int bad;
};

static void fail(struct dec *d, const char *what, const char *where, uint32_t i, const char *key)
{
	if (!d->bad && d->err && d->errlen)
		snprintf(d->err, d->errlen, "hook_map: %s entry %u: %s \"%s\"", where, i, what, key);
	d->bad = 1;
}

/* a number in [lo, hi]: 0 with *v set, 1 absent or null (v untouched), -1 anything else */
static int num(const cJSON *o, const char *k, double lo, double hi, double *v)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!x || cJSON_IsNull(x))
		return 1;
	if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo && x->valuedouble <= hi))
		return -1;
	*v = x->valuedouble;
	return 0;
}

/* an id: 0 with *v set, 1 absent or null, -1 anything else */
static int id(const cJSON *o, const char *k, uint64_t *v)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!x || cJSON_IsNull(x))
		return 1;
	return cJSON_IsString(x) && !pulse_hex_id_parse(x->valuestring, v) ? 0 : -1;
}

/* a string: its text, "" absent or null, NULL anything else */
static const char *str(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!x || cJSON_IsNull(x))
		return "";
	return cJSON_IsString(x) && x->valuestring ? x->valuestring : NULL;
}

/* an enumerated name: its index, def when absent or null, -1 anything else */
static int name_of(const cJSON *o, const char *k, const char *const *names, size_t n, int def)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!x || cJSON_IsNull(x))
		return def;
	return cJSON_IsString(x) && x->valuestring ? name_index(names, n, x->valuestring) : -1;
}

static void copy_fixed(char *dst, size_t n, const char *s)
{
	size_t l = strlen(s);
	memset(dst, 0, n);
	memcpy(dst, s, l < n ? l : n);
}

/* "gpu": the object the agent writes, or a bare CUDA ordinal. A cuda_dev
 * that is not a number in range reads as unknown (-1). */
static int get_gpu(const cJSON *e, struct pulse_hook_gpu *g)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "gpu");
	memset(g, 0, sizeof *g);
	g->cuda_dev = -1;
	double d;
	if (cJSON_IsNumber(x)) {
		if (x->valuedouble >= -1 && x->valuedouble < 1 << 20)
			g->cuda_dev = (int32_t)x->valuedouble;
		return 0;
	}
	if (!cJSON_IsObject(x))
		return !x || cJSON_IsNull(x) ? 0 : -1;
	if (!num(x, "cuda_dev", -1, (1 << 20) - 1, &d))
		g->cuda_dev = (int32_t)d;
	const char *bus = str(x, "pci_bus_id"), *vis = str(x, "visible");
	int src = name_of(x, "source", gpu_src_names, NAMES(gpu_src_names), 0);
	if (!bus || !vis || src < 0)
		return -1;
	copy_fixed(g->pci_bus_id, sizeof g->pci_bus_id, bus);
	copy_fixed(g->visible, sizeof g->visible, vis);
	g->source = (uint8_t)src;
	return 0;
}

#define BAD(what, where, key)                  \
	do {                                   \
		fail(d, what, where, i, key); \
		return;                        \
	} while (0)

static void get_comm(struct dec *d, const cJSON *e, uint32_t i, struct pulse_hook_map_comm *c)
{
	double v;
	c->rank = c->nranks = -1;
	if (!cJSON_IsObject(e)) {
		fail(d, "not an object", "communicator", i, "comms");
		return;
	}
	if (num(e, "pid", 0, 4294967295.0, &v))
		BAD("missing or malformed", "communicator", "pid");
	c->pid = (uint32_t)v;
	if (id(e, "comm_id", &c->comm_id))
		BAD("missing or malformed", "communicator", "comm_id");
	if (num(e, "rank", -1, 1 << 24, &v))
		BAD("missing or malformed", "communicator", "rank");
	c->rank = (int32_t)v;
	if (num(e, "nranks", -1, 1 << 24, &v))
		BAD("missing or malformed", "communicator", "nranks");
	c->nranks = (int32_t)v;
	if (id(e, "parent_id", &c->parent_id) < 0)
		BAD("malformed", "communicator", "parent_id");
	if (id(e, "nccl_hash", &c->nccl_hash) < 0)
		BAD("malformed", "communicator", "nccl_hash");
	int how = name_of(e, "how", how_names, NAMES(how_names), 0);
	if (how < 0)
		BAD("unknown value of", "communicator", "how");
	c->how = (uint8_t)how;
	static const char *const src_names[] = { NULL, "hook", "profiler" };
	int src = name_of(e, "source", src_names, NAMES(src_names), 0);
	if (src < 0)
		BAD("unknown value of", "communicator", "source");
	c->source = (uint8_t)src;
	const cJSON *des = cJSON_GetObjectItemCaseSensitive(e, "destroyed");
	if (des && !cJSON_IsNull(des) && !cJSON_IsBool(des))
		BAD("non-boolean", "communicator", "destroyed");
	c->destroyed = cJSON_IsTrue(des);
	v = 0;
	if (num(e, "nnodes", 0, 4294967295.0, &v) < 0)
		BAD("malformed", "communicator", "nnodes");
	c->nnodes = (uint32_t)v;
	v = 0;
	if (num(e, "t_ns", 0, 1.8e19, &v) < 0)
		BAD("malformed", "communicator", "t_ns");
	c->t_ns = (uint64_t)v;
	if (get_gpu(e, &c->gpu))
		BAD("malformed", "communicator", "gpu");
}

static void get_qp(struct dec *d, const cJSON *e, uint32_t i, struct pulse_hook_map_qp *q)
{
	double v;
	q->rank = -1;
	if (!cJSON_IsObject(e)) {
		fail(d, "not an object", "QP", i, "qps");
		return;
	}
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(e, "dev");
	if (!cJSON_IsString(dev) || !dev->valuestring || strlen(dev->valuestring) >= sizeof q->dev)
		BAD("missing or malformed", "QP", "dev");
	strcpy(q->dev, dev->valuestring);
	if (num(e, "qpn", 0, 0xffffff, &v))
		BAD("missing or malformed", "QP", "qpn");
	q->qpn = (uint32_t)v;
	if (num(e, "pid", 0, 4294967295.0, &v))
		BAD("missing or malformed", "QP", "pid");
	q->pid = (uint32_t)v;
	v = 0;
	if (num(e, "tid", 0, 4294967295.0, &v) < 0)
		BAD("malformed", "QP", "tid");
	q->tid = (uint32_t)v;
	v = 0;
	if (num(e, "port", 0, 255, &v) < 0)
		BAD("malformed", "QP", "port");
	q->port = (uint32_t)v;
	int st = name_of(e, "state", state_names, NAMES(state_names), PULSE_HOOK_MAP_QP_CREATED);
	if (st < 0)
		BAD("unknown value of", "QP", "state");
	q->state = (uint8_t)st;
	int r = id(e, "comm_id", &q->comm_id);
	if (r < 0)
		BAD("malformed", "QP", "comm_id");
	q->has_comm = r == 0;
	int from = name_of(e, "comm_from", comm_from_names, NAMES(comm_from_names), 0);
	if (from < 0)
		BAD("unknown value of", "QP", "comm_from");
	q->comm_from = (uint8_t)from;
	if ((r = num(e, "rank", -1, 1 << 24, &v)) < 0)
		BAD("malformed", "QP", "rank");
	if (!r)
		q->rank = (int32_t)v;
	if ((r = num(e, "remote_qpn", 0, 0xffffff, &v)) < 0)
		BAD("malformed", "QP", "remote_qpn");
	if (!r) {
		q->remote_qpn_known = 1;
		q->remote_qpn = (uint32_t)v;
	}
	const char *gid = str(e, "remote_gid");
	if (!gid || (*gid && pulse_join_parse_gid(gid, q->remote_gid)))
		BAD("malformed", "QP", "remote_gid");
	q->gid_valid = *gid != '\0';
	if (get_gpu(e, &q->gpu))
		BAD("malformed", "QP", "gpu");
}

void pulse_hook_map_free(struct pulse_hook_map *m)
{
	free(m->comms);
	free(m->qps);
	memset(m, 0, sizeof *m);
}

int pulse_hook_map_from_json(const char *text, size_t len, struct pulse_hook_map *m, char *err,
			     size_t errlen)
{
	struct dec d = { err, errlen, 0 };
	memset(m, 0, sizeof *m);
	if (err && errlen)
		err[0] = '\0';
	cJSON *o = cJSON_ParseWithLength(text, len);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
	const cJSON *ca = cJSON_GetObjectItemCaseSensitive(o, "comms");
	const cJSON *qa = cJSON_GetObjectItemCaseSensitive(o, "qps");
	if (!cJSON_IsObject(o) || !cJSON_IsArray(ca) || !cJSON_IsArray(qa)) {
		snprintf(err, errlen, "hook_map: not an object with \"comms\" and \"qps\" arrays");
		cJSON_Delete(o);
		return -1;
	}
	if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "hook_map"))) {
		snprintf(err, errlen, "hook_map: \"type\" is not \"hook_map\"");
		cJSON_Delete(o);
		return -1;
	}
	int nc = cJSON_GetArraySize(ca), nq = cJSON_GetArraySize(qa);
	if (nc > PULSE_HOOK_MAP_MAX || nq > PULSE_HOOK_MAP_MAX) {
		snprintf(err, errlen, "hook_map: %d QPs / %d communicators, too many", nq, nc);
		cJSON_Delete(o);
		return -1;
	}
	double v;
	int r = num(o, "t_ns", 0, 1.8e19, &v);
	if (r < 0) {
		snprintf(err, errlen, "hook_map: malformed \"t_ns\"");
		d.bad = 1;
	} else if (!r) {
		m->t_ns = (uint64_t)v;
	}
	r = num(o, "version", 0, 1.8e19, &v);
	if (r < 0 && !d.bad) {
		snprintf(err, errlen, "hook_map: malformed \"version\"");
		d.bad = 1;
	} else if (!r) {
		m->version = (uint64_t)v;
	}
	m->comms = calloc((size_t)nc + 1, sizeof *m->comms);
	m->qps = calloc((size_t)nq + 1, sizeof *m->qps);
	if (!m->comms || !m->qps) {
		snprintf(err, errlen, "hook_map: out of memory");
		d.bad = 1;
	}
	const cJSON *e;
	cJSON_ArrayForEach(e, ca)
	{
		if (d.bad)
			break;
		get_comm(&d, e, m->ncomms, &m->comms[m->ncomms]);
		m->ncomms++;
	}
	cJSON_ArrayForEach(e, qa)
	{
		if (d.bad)
			break;
		get_qp(&d, e, m->nqps, &m->qps[m->nqps]);
		m->nqps++;
	}
	cJSON_Delete(o);
	if (d.bad) {
		pulse_hook_map_free(m);
		return -1;
	}
	return 0;
}
