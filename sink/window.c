/* A diagnosis's evidence window (sink/evidence.h): from its onset less N
 * seconds to its report plus N, so that the rows show the ranks before the
 * problem, while the analyzer gathered its evidence, and after. The
 * diagnosis comes from the bus, whoever published it: every field is
 * checked, and one that does not make sense is refused, never guessed. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "evidence.h"
#include "pulse/hex_id.h"

#define MAX_NS 9223372036854775807ull /* bigint in the database */

/* a time in ns: a decimal string (the analyzer's form: ns exceed a JSON
 * number's exact range) or a number; 0 when absent */
static int ns_of(const cJSON *o, const char *k, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v)) {
		if (!(v->valuedouble >= 0) || v->valuedouble > 9.2e18)
			return -1;
		*out = (uint64_t)v->valuedouble;
		return 0;
	}
	if (!cJSON_IsString(v) || !*v->valuestring)
		return -1;
	const char *s = v->valuestring;
	uint64_t x = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || x > (MAX_NS - (uint64_t)(*s - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*out = x;
	return 0;
}

int sink_window_of(const char *json, size_t len, uint64_t half_ns, struct sink_window *w, char *err,
		   size_t errlen)
{
	memset(w, 0, sizeof *w);
	cJSON *o = cJSON_ParseWithLength(json, len);
	int rc = -1;
	if (!cJSON_IsObject(o)) {
		snprintf(err, errlen, "not a JSON object");
		goto out;
	}
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "key");
	if (!cJSON_IsString(key) || !*key->valuestring || strlen(key->valuestring) >= sizeof w->key) {
		snprintf(err, errlen, "no key, or one over %zu bytes", sizeof w->key - 1);
		goto out;
	}
	uint64_t onset, report;
	if (ns_of(o, "report_ns", &report) || !report || ns_of(o, "onset_ns", &onset)) {
		snprintf(err, errlen, "report_ns or onset_ns not a time in ns");
		goto out;
	}
	if (!onset || onset > report)
		onset = report; /* no first evidence told: around the report */
	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "evidence");
	const cJSON *comm = cJSON_IsObject(ev) ? cJSON_GetObjectItemCaseSensitive(ev, "comm_id") : NULL;
	if (!comm || cJSON_IsNull(comm)) {
		rc = 1; /* nothing to look at: no window */
		goto out;
	}
	if (!cJSON_IsString(comm) || pulse_hex_id_parse(comm->valuestring, &w->comm_id)) {
		snprintf(err, errlen, "evidence.comm_id not a 0x… id");
		goto out;
	}
	if (!w->comm_id) {
		rc = 1; /* the analyzer's "no communicator" */
		goto out;
	}
	snprintf(w->key, sizeof w->key, "%s", key->valuestring);
	sink_day_of_ns(report, w->day);
	w->from_ns = onset > half_ns ? onset - half_ns : 0;
	w->to_ns = report > MAX_NS - half_ns ? MAX_NS : report + half_ns;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

void sink_day_of_ns(uint64_t ns, char day[16])
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(day, 16, "%Y-%m-%d", &tm);
}

uint64_t sink_record_time(const struct pulse_op_record *r)
{
	return r->end_ns ? r->end_ns : r->start_ns ? r->start_ns : r->call_ns;
}

int sink_window_has(const struct sink_window *w, const struct pulse_op_record *r)
{
	if (r->comm_id != w->comm_id)
		return 0;
	uint64_t from = r->call_ns ? r->call_ns : r->start_ns, to = sink_record_time(r);
	if (to < from)
		to = from;
	return from <= w->to_ns && to >= w->from_ns;
}
