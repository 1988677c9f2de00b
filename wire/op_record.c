/* The JSON form of struct pulse_op_record (include/pulse/op_record.h):
 * the host agent writes it, the analyzer reads it, from files or from the
 * wire protocol. One codec so the two sides cannot drift apart. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "json_dec.h"
#include "pulse/hex_id.h"
#include "pulse/hook_record.h"
#include "pulse/op_record.h"

static const char *const type_names[] = {
	[PULSE_HOOK_OP_ALLREDUCE] = "allreduce", [PULSE_HOOK_OP_ALLGATHER] = "allgather",
	[PULSE_HOOK_OP_REDUCESCATTER] = "reducescatter", [PULSE_HOOK_OP_BROADCAST] = "broadcast",
	[PULSE_HOOK_OP_REDUCE] = "reduce", [PULSE_HOOK_OP_ALLTOALL] = "alltoall",
	[PULSE_HOOK_OP_SEND] = "send", [PULSE_HOOK_OP_RECV] = "recv",
	[PULSE_HOOK_OP_GATHER] = "gather", [PULSE_HOOK_OP_SCATTER] = "scatter",
	[PULSE_HOOK_OP_PUT_SIGNAL] = "put_signal", [PULSE_HOOK_OP_SIGNAL] = "signal",
	[PULSE_HOOK_OP_WAIT_SIGNAL] = "wait_signal", [PULSE_HOOK_OP_OTHER] = "other", [PULSE_OP_GROUP] = "group",
};
static const char *const algo_names[] = { "unknown", "ring", "tree", "p2p" };
static const char *const algo_source_names[] = { "none", "inferred", "reused", "profiler",
						 "conflict", "args" };
static const char *const par_names[] = { "unknown", "dp", "tp", "pp", "ep", "none" };
static const char *const status_names[] = { "unknown", "complete", "hung", "not_started", "gap",
					    "no_traffic" };

#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

static const char *name_of(const char *const *names, size_t n, unsigned v)
{
	return v < n && names[v] ? names[v] : NULL;
}

static int parse_name(const char *const *names, size_t n, const char *s, uint8_t *out)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s)) {
			*out = (uint8_t)i;
			return 0;
		}
	return -1;
}

const char *pulse_op_type_name(uint8_t op)
{
	const char *s = name_of(type_names, NAMES(type_names), op);
	return s ? s : "other";
}

int pulse_op_type_parse(const char *s, uint8_t *op)
{
	return parse_name(type_names, NAMES(type_names), s, op);
}

const char *pulse_op_algo_name(uint8_t a)
{
	const char *s = name_of(algo_names, NAMES(algo_names), a);
	return s ? s : "unknown";
}

const char *pulse_op_algo_source_name(uint8_t a)
{
	const char *s = name_of(algo_source_names, NAMES(algo_source_names), a);
	return s ? s : "none";
}

const char *pulse_op_par_name(uint8_t p)
{
	const char *s = name_of(par_names, NAMES(par_names), p);
	return s ? s : "unknown";
}

const char *pulse_op_status_name(uint8_t st)
{
	const char *s = name_of(status_names, NAMES(status_names), st);
	return s ? s : "unknown";
}

/* 64-bit values exceed a JSON number's exact range in most readers, so
 * ids go as hex strings and counters as numbers only below 2^53. */
static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	cJSON_AddNumberToObject(o, k, (double)v);
}

/* Absolute times (CLOCK_REALTIME ns, ~2^60) go as decimal strings: exact. */
static void add_time(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	cJSON_AddStringToObject(o, k, buf);
}

static void add_id(cJSON *o, const char *k, uint64_t v)
{
	char buf[PULSE_HEX_ID_LEN];
	cJSON_AddStringToObject(o, k, pulse_hex_id_format(buf, v));
}

char *pulse_op_record_to_json(const struct pulse_op_record *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", "op");
	cJSON_AddNumberToObject(o, "v", PULSE_OP_RECORD_VERSION);
	cJSON_AddStringToObject(o, "host", r->host);
	cJSON_AddNumberToObject(o, "gpu", r->gpu);
	cJSON_AddNumberToObject(o, "pid", r->pid);
	add_id(o, "comm_id", r->comm_id);
	cJSON_AddNumberToObject(o, "rank", r->rank);
	cJSON_AddNumberToObject(o, "nranks", r->nranks);
	add_u64(o, "seq", r->seq);
	add_u64(o, "group_id", r->group_id);
	cJSON_AddStringToObject(o, "op", pulse_op_type_name(r->op));
	add_u64(o, "count", r->count);
	cJSON_AddNumberToObject(o, "datatype", r->datatype);
	cJSON_AddNumberToObject(o, "root_peer", r->root_peer);
	cJSON_AddStringToObject(o, "algo", pulse_op_algo_name(r->algo));
	cJSON_AddStringToObject(o, "algo_source", pulse_op_algo_source_name(r->algo_source));
	cJSON_AddStringToObject(o, "parallelism", pulse_op_par_name(r->parallelism));
	cJSON_AddStringToObject(o, "status", pulse_op_status_name(r->status));
	cJSON_AddNumberToObject(o, "epoch_ns", r->epoch_ns);
	add_time(o, "call_ns", r->call_ns);
	add_time(o, "start_ns", r->start_ns);
	add_time(o, "end_ns", r->end_ns);
	add_u64(o, "duration_ns", r->duration_ns);
	add_u64(o, "expected_bytes", r->expected_bytes);
	add_u64(o, "actual_bytes", r->actual_bytes);
	add_u64(o, "active_ns", r->active_ns);
	add_u64(o, "rank_active_ns", r->rank_active_ns);
	cJSON_AddNumberToObject(o, "rank_rate_gbps", r->rank_rate_gbps);
	cJSON *peers = cJSON_AddArrayToObject(o, "peers");
	for (uint32_t i = 0; peers && i < r->npeers && i < PULSE_OP_MAX_PEERS; i++) {
		const struct pulse_op_peer *p = &r->peers[i];
		cJSON *q = cJSON_CreateObject();
		if (!q)
			break;
		cJSON_AddNumberToObject(q, "rank", p->rank);
		cJSON_AddStringToObject(q, "host", p->host);
		cJSON_AddNumberToObject(q, "gpu", p->gpu);
		add_u64(q, "expected_bytes", p->expected_bytes);
		add_u64(q, "actual_bytes", p->actual_bytes);
		add_time(q, "start_ns", p->start_ns);
		add_time(q, "end_ns", p->end_ns);
		add_u64(q, "active_ns", p->active_ns);
		add_u64(q, "peak_epoch_bytes", p->peak_epoch_bytes);
		cJSON_AddBoolToObject(q, "complete", p->complete);
		cJSON_AddItemToArray(peers, q);
	}
	char *s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* ---- decoding: every field checked, nothing trusted ---- */

#define U53 9007199254740992.0

static uint64_t get_u64(struct wire_dec *d, const cJSON *o, const char *k)
{
	return (uint64_t)wire_dec_num(d, o, k, 0, U53);
}

static int32_t get_i32(struct wire_dec *d, const cJSON *o, const char *k, int32_t lo, int32_t hi)
{
	return (int32_t)wire_dec_num(d, o, k, lo, hi);
}

static const char *get_str(struct wire_dec *d, const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsString(v) || !v->valuestring) {
		wire_dec_fail(d, "missing or non-string", k);
		return "";
	}
	return v->valuestring;
}

static void get_host(struct wire_dec *d, const cJSON *o, const char *k, char out[PULSE_OP_HOST_LEN])
{
	const char *s = get_str(d, o, k);
	if (strlen(s) >= PULSE_OP_HOST_LEN)
		wire_dec_fail(d, "too long", k);
	else
		memcpy(out, s, strlen(s) + 1);
}

static uint64_t get_id(struct wire_dec *d, const cJSON *o, const char *k)
{
	const char *s = get_str(d, o, k);
	uint64_t v = 0;
	if (!d->bad && pulse_hex_id_parse(s, &v))
		wire_dec_fail(d, "malformed id", k);
	return d->bad ? 0 : v;
}

static uint64_t get_time(struct wire_dec *d, const cJSON *o, const char *k)
{
	const char *s = get_str(d, o, k);
	if (d->bad)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || errno || *end) {
		wire_dec_fail(d, "malformed time", k);
		return 0;
	}
	return v;
}

static uint8_t get_enum(struct wire_dec *d, const cJSON *o, const char *k, const char *const *names,
			size_t n)
{
	uint8_t v = 0;
	const char *s = get_str(d, o, k);
	if (!d->bad && parse_name(names, n, s, &v))
		wire_dec_fail(d, "unknown value of", k);
	return v;
}

int pulse_op_record_from_json(const char *text, size_t len, struct pulse_op_record *r, char *err,
			      size_t errlen)
{
	struct wire_dec d = { err, errlen, "op record: ", 0 };
	memset(r, 0, sizeof *r);
	cJSON *o = cJSON_ParseWithLength(text, len);
	if (!o || !cJSON_IsObject(o)) {
		snprintf(err, errlen, "op record: not a JSON object");
		cJSON_Delete(o);
		return -1;
	}
	if (strcmp(get_str(&d, o, "type"), "op"))
		wire_dec_fail(&d, "not an op record:", "type");
	if (!d.bad && get_i32(&d, o, "v", 0, 1000) != PULSE_OP_RECORD_VERSION)
		wire_dec_fail(&d, "unsupported version in", "v");
	get_host(&d, o, "host", r->host);
	r->gpu = get_i32(&d, o, "gpu", -1, 1 << 20);
	r->pid = (uint32_t)wire_dec_num(&d, o, "pid", 0, 4294967295.0);
	r->comm_id = get_id(&d, o, "comm_id");
	r->rank = get_i32(&d, o, "rank", -1, 1 << 24);
	r->nranks = get_i32(&d, o, "nranks", 0, 1 << 24);
	r->seq = get_u64(&d, o, "seq");
	r->group_id = get_u64(&d, o, "group_id");
	r->op = get_enum(&d, o, "op", type_names, NAMES(type_names));
	r->count = get_u64(&d, o, "count");
	r->datatype = (uint8_t)get_i32(&d, o, "datatype", 0, 255);
	r->root_peer = get_i32(&d, o, "root_peer", -1, 1 << 24);
	r->algo = get_enum(&d, o, "algo", algo_names, NAMES(algo_names));
	r->algo_source = get_enum(&d, o, "algo_source", algo_source_names, NAMES(algo_source_names));
	r->parallelism = get_enum(&d, o, "parallelism", par_names, NAMES(par_names));
	r->status = get_enum(&d, o, "status", status_names, NAMES(status_names));
	r->epoch_ns = (uint32_t)wire_dec_num(&d, o, "epoch_ns", 0, 4294967295.0);
	r->call_ns = get_time(&d, o, "call_ns");
	r->start_ns = get_time(&d, o, "start_ns");
	r->end_ns = get_time(&d, o, "end_ns");
	r->duration_ns = get_u64(&d, o, "duration_ns");
	r->expected_bytes = get_u64(&d, o, "expected_bytes");
	r->actual_bytes = get_u64(&d, o, "actual_bytes");
	r->active_ns = get_u64(&d, o, "active_ns");
	r->rank_active_ns = get_u64(&d, o, "rank_active_ns");
	r->rank_rate_gbps = wire_dec_num(&d, o, "rank_rate_gbps", 0, 1e9);
	const cJSON *peers = cJSON_GetObjectItemCaseSensitive(o, "peers");
	if (!cJSON_IsArray(peers))
		wire_dec_fail(&d, "missing or non-array", "peers");
	else if (cJSON_GetArraySize(peers) > PULSE_OP_MAX_PEERS)
		wire_dec_fail(&d, "too many entries in", "peers");
	const cJSON *q;
	cJSON_ArrayForEach(q, peers)
	{
		if (d.bad)
			break;
		struct pulse_op_peer *p = &r->peers[r->npeers++];
		if (!cJSON_IsObject(q)) {
			wire_dec_fail(&d, "non-object entry in", "peers");
			break;
		}
		p->rank = get_i32(&d, q, "rank", -1, 1 << 24);
		get_host(&d, q, "host", p->host);
		p->gpu = get_i32(&d, q, "gpu", -1, 1 << 20);
		p->expected_bytes = get_u64(&d, q, "expected_bytes");
		p->actual_bytes = get_u64(&d, q, "actual_bytes");
		p->start_ns = get_time(&d, q, "start_ns");
		p->end_ns = get_time(&d, q, "end_ns");
		p->active_ns = get_u64(&d, q, "active_ns");
		/* (added later: absent from older agents' lines, then 0) */
		if (cJSON_GetObjectItemCaseSensitive(q, "peak_epoch_bytes"))
			p->peak_epoch_bytes = get_u64(&d, q, "peak_epoch_bytes");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(q, "complete");
		if (!cJSON_IsBool(c))
			wire_dec_fail(&d, "missing or non-boolean", "complete");
		p->complete = cJSON_IsTrue(c);
	}
	cJSON_Delete(o);
	return d.bad ? -1 : 0;
}
