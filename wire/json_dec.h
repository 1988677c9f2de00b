/* The checked reading of a JSON line's fields that the codecs of wire/
 * share (op_record.c, host_event.c): the first failure is kept in err
 * ("<prefix>what \"key\""), later reads go on harmlessly. And
 * wire_seterr, for the binary codecs. Internal to wire/. */
#ifndef PULSE_WIRE_JSON_DEC_H
#define PULSE_WIRE_JSON_DEC_H

#include <stddef.h>

#include <cJSON.h>

struct wire_dec {
	char *err;
	size_t errlen;
	const char *prefix; /* e.g. "op record: " */
	int bad;
};

void wire_dec_fail(struct wire_dec *d, const char *what, const char *key);
/* o[k], a number within [lo, hi]; 0 (and the failure noted) otherwise */
double wire_dec_num(struct wire_dec *d, const cJSON *o, const char *k, double lo, double hi);

/* A one-line reason into err (NULL or errlen 0: none wanted): the binary
 * codecs' (frame.c, bus_msg.c) way of saying why */
void wire_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
