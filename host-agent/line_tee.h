/* A FILE that copies what is written to it into another FILE and hands
 * each complete line to a callback: how the agent's --out lines also go to
 * the analyzer link (analyzer_link.c) and to the bus (bus_out.c). */
#ifndef PULSE_AGENT_LINE_TEE_H
#define PULSE_AGENT_LINE_TEE_H

#include <stddef.h>
#include <stdio.h>

struct line_tee_ops {
	/* one line, without its newline (never empty) */
	void (*line)(void *ctx, const char *line, size_t len);
	/* a line longer than max: not handed over (dropped up to its newline) */
	void (*oversize)(void *ctx);
};

/* Writes go to inner (if not NULL; flushed with each write) and, line by
 * line, to ops->line. fclose of the result closes inner only if
 * close_inner. NULL on out of memory. */
FILE *line_tee_open(FILE *inner, int close_inner, size_t max, const struct line_tee_ops *ops, void *ctx);

#endif
