/* The one reader and writer of 64-bit hex ids (include/pulse/hex_id.h). */
#include <inttypes.h>
#include <stdio.h>

#include "pulse/hex_id.h"

int pulse_hex_id_parse(const char *s, uint64_t *out)
{
	if (!s || s[0] != '0' || s[1] != 'x' || !s[2])
		return -1;
	uint64_t v = 0;
	for (const char *p = s + 2; *p; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return -1;
		if (v >> 60)
			return -1; /* would not fit 64 bits */
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

char *pulse_hex_id_format(char buf[PULSE_HEX_ID_LEN], uint64_t v)
{
	snprintf(buf, PULSE_HEX_ID_LEN, "0x%016" PRIx64, v);
	return buf;
}
