/* See wire/json_dec.h. */
#include <stdarg.h>
#include <stdio.h>

#include "json_dec.h"

void wire_dec_fail(struct wire_dec *d, const char *what, const char *key)
{
	if (!d->bad)
		snprintf(d->err, d->errlen, "%s%s \"%s\"", d->prefix ? d->prefix : "", what, key);
	d->bad = 1;
}

double wire_dec_num(struct wire_dec *d, const cJSON *o, const char *k, double lo, double hi)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v)) {
		wire_dec_fail(d, "missing or non-numeric", k);
		return 0;
	}
	if (!(v->valuedouble >= lo && v->valuedouble <= hi)) {
		wire_dec_fail(d, "out-of-range", k);
		return 0;
	}
	return v->valuedouble;
}

void wire_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
