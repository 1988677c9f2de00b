/* libFuzzer target: the link event and configuration finding decoders
 * (wire/host_event.c), which the analyzer runs on every such line from any
 * agent. Any bytes must be rejected or decoded, never crash or leak; what
 * decodes must encode to a line that decodes to the same struct (t_ns to
 * within what a JSON double holds). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/host_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct pulse_link_event e, e2;
	if (!pulse_link_event_from_json((const char *)data, size, &e, err, sizeof err)) {
		char *s = pulse_link_event_to_json(&e);
		if (s && pulse_link_event_from_json(s, strlen(s), &e2, err, sizeof err))
			abort(); /* the encoder wrote what the decoder rejects */
		if (s && (strcmp(e.host, e2.host) || strcmp(e.state, e2.state) || e.carrier != e2.carrier))
			abort();
		free(s);
	}
	struct pulse_config_finding f, f2;
	if (!pulse_config_finding_from_json((const char *)data, size, &f, err, sizeof err)) {
		char *s = pulse_config_finding_to_json(&f);
		if (s && pulse_config_finding_from_json(s, strlen(s), &f2, err, sizeof err))
			abort();
		if (s && (strcmp(f.detail, f2.detail) || strcmp(f.gpu, f2.gpu) || f.nic_numa != f2.nic_numa))
			abort();
		free(s);
	}
	return 0;
}
