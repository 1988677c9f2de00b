/* --replay and --sim-links: a recorded host's link events
 * (DIR/hosts/H/links.jsonl, include/pulse/cluster_run.h), given out at their
 * time as the live agent's link watcher gives them (probe.c): a "link" line
 * and a log line. */
#ifndef PULSE_HOST_AGENT_REPLAY_LINKS_H
#define PULSE_HOST_AGENT_REPLAY_LINKS_H

#include <stdint.h>

#include "pulse/host_event.h"

struct replay_links {
	struct pulse_link_event *ev; /* time order */
	uint32_t n, next;
	uint64_t bad; /* lines refused (logged with their number) */
};

/* Reads the link events of host `host` from `path` (a run's
 * hosts/H/links.jsonl, or pulse-cluster-serve's for --sim-links; no file:
 * no events). 0, or -1 when the file cannot be read or memory runs out
 * (logged). */
int replay_links_load(struct replay_links *l, const char *path, const char *host);
/* Writes the events at or before host time `until` that are not out yet. */
void replay_links_emit(struct replay_links *l, uint64_t until);
void replay_links_free(struct replay_links *l);

#endif
