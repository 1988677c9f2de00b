/* What the files of bus/ share (include/pulse/bus.h is the interface). */
#ifndef PULSE_BUS_INT_H
#define PULSE_BUS_INT_H

#include <pthread.h>
#include <stdarg.h>

#include <nats/nats.h>

#include "pulse/bus.h"
#include "pulse/bus_msg.h"

/* a message waiting for the bus (publisher queue) */
struct bus_qmsg {
	char subj[2 * PULSE_BUS_TOKEN_LEN + 16];
	char id[PULSE_BUS_TOKEN_LEN + 48];
	char host[64];
	uint8_t *data;
	size_t len;
	uint32_t records;          /* or lines (a kind-2 message) */
	int lines;
	int diag;                  /* a diagnosis (counted in diags_published) */
	struct bus_qmsg *next;
};

/* a poll's JSON lines, '\n' after each, bounded by 4 * PULSE_BUS_MAX_RAW */
struct bus_lines {
	char *buf;
	size_t len, cap;
	uint32_t count;
};

struct pulse_bus {
	struct pulse_bus_cfg cfg;
	char job_tok[PULSE_BUS_TOKEN_LEN];
	char stream[PULSE_BUS_TOKEN_LEN + 8], state_stream[PULSE_BUS_TOKEN_LEN + 16],
		diag_stream[PULSE_BUS_TOKEN_LEN + 16];
	natsConnection *nc;
	jsCtx *js;
	pthread_mutex_t mu;
	int streams_ok;            /* the streams exist (made once the bus answers) */
	/* publisher */
	uint8_t *batch;            /* the current poll's OPS payload */
	size_t batch_len, batch_cap;
	uint32_t batch_records;
	struct bus_lines lines;    /* the current poll's other JSON lines ('\n' after each) */
	struct bus_lines after;    /* and those that close it (after its records) */
	struct bus_qmsg *qhead, *qtail;
	size_t qbytes;
	/* consumer */
	natsSubscription *sub, *state_sub, *diag_sub;
	uint64_t last_seq;         /* stream sequence of the last record message read (0: none) */
	uint64_t t_check;          /* the last check that our consumer still exists (monotonic ns) */
	uint8_t *scratch;
	size_t scratch_cap;
	struct pulse_op_record *rec;
	/* hosts whose MAP was read (hashes, open addressing, 0 = empty), and
	 * the re-reading of the MAPs when records come from a host not among
	 * them (bus_sub.c maps_reread) */
	uint64_t *map_hosts;
	size_t map_hosts_n, map_hosts_cap;
	uint64_t map_missing;      /* a host with records and no MAP read (its hash; 0 none) */
	uint64_t t_map_reread, map_reread_gap;
	struct pulse_bus_stats st;
	uint64_t nlog;
	/* job ownership (bus_lease.c) */
	kvStore *kv;
	uint64_t lease_rev;        /* the revision we hold (0: none) */
};

void bus_log(struct pulse_bus *b, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The job's streams, if not yet done; 0 or -1 (logged). Caller holds mu. */
int bus_ensure_streams(struct pulse_bus *b);
/* Publishes one message with its id; 0 sent (or a duplicate), -1 not. */
int bus_publish(struct pulse_bus *b, const char *subj, const char *id, const char *host,
		const void *data, size_t len, int *dup);
/* "<job>.<kind>.<host token>" subjects */
void bus_subject(const struct pulse_bus *b, const char *kind, const char *host, char *out, size_t cap);

#endif
