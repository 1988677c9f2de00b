/* libFuzzer target: the interception mapping's decoder (wire/hook_map.c),
 * which the analyzer runs on every MAP frame and hook_map line from any
 * agent. Any bytes must be rejected or decoded, never crash or leak; what
 * decodes must encode to a line that decodes again to the same line (the
 * encoder is the agent's). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/hook_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pulse_hook_map m, m2;
	char err[256];
	if (pulse_hook_map_from_json((const char *)data, size, &m, err, sizeof err))
		return 0;
	char *s = pulse_hook_map_to_json(&m);
	pulse_hook_map_free(&m);
	if (!s)
		return 0;
	if (pulse_hook_map_from_json(s, strlen(s), &m2, err, sizeof err))
		abort(); /* the encoder wrote what the decoder rejects */
	char *s2 = pulse_hook_map_to_json(&m2);
	pulse_hook_map_free(&m2);
	if (!s2 || strcmp(s, s2))
		abort(); /* not a fixed point */
	free(s);
	free(s2);
	return 0;
}
