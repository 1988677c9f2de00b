/* Diagnoses waiting to be published on the bus (analyzer/diag_outbox.c).
 *
 * Publishing a diagnosis fails while the job's diagnosis stream has no
 * leader (a NATS server killed: its election takes seconds) or the bus is
 * unreachable. A diagnosis is made once, at its data time, and a replay
 * would not make it again in this process: it waits here, in order, and is
 * published again at the next turn of the loop. Its key is the message id,
 * so a retry whose first try reached the server after all is not stored
 * twice. Bounded: past cap, a new diagnosis is dropped and counted (the
 * oldest, an episode's first verdict, are kept). One thread. */
#ifndef PULSE_DIAG_OUTBOX_H
#define PULSE_DIAG_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

struct diag_outbox;

struct diag_outbox_stats {
	uint64_t queued;     /* waiting now */
	uint64_t published;  /* published, at the first try or later */
	uint64_t retried;    /* published after waiting here */
	uint64_t failures;   /* tries that failed */
	uint64_t dropped;    /* not kept: the outbox was full, or out of memory */
};

/* Publishes one diagnosis: 0 on success. */
typedef int (*diag_outbox_put)(void *ctx, const char *key, const char *payload, size_t len);

/* cap: diagnoses kept at most (0: 1024). NULL on out of memory. */
struct diag_outbox *diag_outbox_new(uint32_t cap);
void diag_outbox_free(struct diag_outbox *o);
/* Publishes the diagnosis after those waiting (in order), or keeps it.
 * Returns 0 when it is published or kept, -1 when it was dropped. */
int diag_outbox_send(struct diag_outbox *o, const char *key, const char *payload, diag_outbox_put put, void *ctx);
/* Publishes what waits, oldest first, up to the first failure. Returns how
 * many were published. */
uint32_t diag_outbox_flush(struct diag_outbox *o, diag_outbox_put put, void *ctx);
void diag_outbox_get_stats(const struct diag_outbox *o, struct diag_outbox_stats *st);

#endif
