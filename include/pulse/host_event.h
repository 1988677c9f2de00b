/* What a host agent learns about its host besides traffic (host-agent/
 * probe.c, link_watch.c, rdma_find.c), as lines on its output (--out, and
 * so to the analyzer with --analyzer): link changes of its NICs' netdevs
 * and configuration findings. Written and read by wire/host_event.c only,
 * so the agent and the analyzer cannot drift.
 *
 * Wire forms, one JSON object on one line:
 *   {"type":"link","t_ns":T,"host":H,"netdev":N,"dev":D|null,
 *    "event":"initial"|"change","state":"up"|"down"|"gone"|"absent",
 *    "ifindex":I,"admin_up":B,"running":B,"operstate":O,"carrier":C}
 *   {"type":"config_finding","t_ns":T,"host":H,"kind":K,"nic":N,
 *    "gpu":G|null,"nic_numa":A,"gpu_numa":B,"detail":S}
 * t_ns is the host's CLOCK_REALTIME in ns, a JSON number written exactly
 * (read back to within a µs: JSON numbers are doubles). */
#ifndef PULSE_HOST_EVENT_H
#define PULSE_HOST_EVENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PULSE_HOST_EVENT_NAME_LEN 64

struct pulse_link_event {
	uint64_t t_ns;
	char host[PULSE_HOST_EVENT_NAME_LEN];
	char netdev[PULSE_HOST_EVENT_NAME_LEN];
	char dev[PULSE_HOST_EVENT_NAME_LEN]; /* "" when none (null) */
	char event[16];                      /* "initial" or "change" */
	char state[8];                       /* "up", "down", "gone", "absent" */
	int32_t ifindex;
	uint8_t admin_up, running;
	int32_t operstate, carrier;          /* -1 unknown */
};

struct pulse_config_finding {
	uint64_t t_ns;
	char host[PULSE_HOST_EVENT_NAME_LEN];
	char kind[32];                       /* "pcie_width", "pcie_speed", "cross_numa", ... */
	char nic[PULSE_HOST_EVENT_NAME_LEN];
	char gpu[PULSE_HOST_EVENT_NAME_LEN]; /* "" when none (null) */
	int32_t nic_numa, gpu_numa;          /* -1 unknown */
	char detail[256];
};

/* The line without its newline, malloc'd (NULL: out of memory). */
char *pulse_link_event_to_json(const struct pulse_link_event *e);
char *pulse_config_finding_to_json(const struct pulse_config_finding *f);
/* 0, or -1 with err set: not that type, a key missing or of the wrong
 * type, a string too long, a number out of range. */
int pulse_link_event_from_json(const char *s, size_t len, struct pulse_link_event *e, char *err,
			       size_t errlen);
int pulse_config_finding_from_json(const char *s, size_t len, struct pulse_config_finding *f, char *err,
				   size_t errlen);
/* A file of link lines (links.jsonl: one per line, blank lines skipped),
 * read once for both its writers and readers. on_event gets each event,
 * on_bad each line that is not one (why: the decoder's error); either
 * returns nonzero to stop. Returns 0, or -1 on a read error (errno). */
int pulse_link_events_read(FILE *f, int (*on_event)(void *ctx, const struct pulse_link_event *e, unsigned lineno),
			   int (*on_bad)(void *ctx, unsigned lineno, const char *why), void *ctx);
/* A link event that means the NIC cannot send: down, or its netdev gone. */
int pulse_link_event_is_down(const struct pulse_link_event *e);

#endif
