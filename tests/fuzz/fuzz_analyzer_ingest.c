/* libFuzzer target: the analyzer's input parser (an_ingest), which takes
 * the host agents' JSON lines ("op", "hook_op", "hook_group", "hook_map",
 * "window", "poll_end", ...) from files or from the wire. Any bytes must give a counted
 * drop, never a crash, a leak or unbounded memory; then the triggers, both
 * localizers and both reports run on whatever was accepted.
 *
 * Input: lines separated by '\n'. The first byte of each line picks one of
 * three hosts (so cross-host joins and skew checks get exercised); the rest
 * is the line. Data time advances with the lines' own times, and an_tick
 * runs every 16 lines. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "analyzer.h"
#include "critical_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = { "host0", "host1", "host2" };
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	struct an_cfg cfg;
	an_cfg_default(&cfg);
	struct an_state *s = an_state_new(&cfg);
	if (!s)
		return 0;
	char err[256];
	uint64_t now = 1700000000000000000ull;
	size_t i = 0;
	unsigned n = 0;
	while (i < size) {
		size_t j = i;
		while (j < size && data[j] != '\n')
			j++;
		if (j > i) {
			const char *host = hosts[data[i] % 3];
			an_ingest(s, host, (const char *)data + i + 1, j - i - 1, err, sizeof err);
			an_tick_if_settled(s); /* a poll_end may release a trigger */
			if (++n % 16 == 0) {
				now += 500000000ull;
				an_tick(s, now);
			}
		}
		i = j + 1;
	}
	an_finish(s);
	an_report_text(s, sink);
	cJSON *o = an_report_json(s);
	cJSON_Delete(o);
	/* where in the iteration, verdict or not (analyzer/critical_path.c) */
	for (int h = 0; h < 3; h++) {
		char q[16];
		struct an_where w;
		snprintf(q, sizeof q, "%s:%d", hosts[h], h % 2);
		an_where_query(s, q, &w, err, sizeof err);
	}
	an_state_free(s);
	return 0;
}
