/* 64-bit ids (communicator ids, NCCL hashes) on the wire: "0x" and hex
 * digits, since JSON numbers do not carry 64 bits exactly. One reader and
 * one writer for every codec (wire/hex_id.c). */
#ifndef PULSE_HEX_ID_H
#define PULSE_HEX_ID_H

#include <stdint.h>

#define PULSE_HEX_ID_LEN 19 /* "0x" + 16 digits + NUL */

/* "0x" followed by one or more hex digits (either case) and nothing else,
 * the value fitting 64 bits. No sign, no spaces, no "0X". Returns 0 and
 * sets *out, or -1 and leaves *out alone. s may be NULL (-1). */
int pulse_hex_id_parse(const char *s, uint64_t *out);

/* "0x%016" PRIx64 into buf; returns buf. */
char *pulse_hex_id_format(char buf[PULSE_HEX_ID_LEN], uint64_t v);

#endif
