/* OpenMetrics text over HTTP, shared by the daemons that serve /metrics
 * (pulse-host-agent --metrics-listen, pulse-analyzer --metrics-listen):
 *   om/om_text.c  building the text: a growing buffer, family headers,
 *                 label escaping;
 *   om/om_http.c  serving it with libmicrohttpd's internal thread: GET or
 *                 HEAD of /metrics (or /), 404 elsewhere, 405 for other
 *                 methods, Content-Type application/openmetrics-text.
 * The render callback runs on libmicrohttpd's thread: it must take its own
 * lock (the agent) or hand out a snapshot made by its owner (the analyzer). */
#ifndef PULSE_OM_H
#define PULSE_OM_H

#include <stddef.h>

struct om_buf {
	char *p;
	size_t len, cap;
	int oom; /* an allocation failed: the text is incomplete, discard it */
};
/* An empty buffer (cap bytes to start with); oom set when that fails. */
void om_init(struct om_buf *b, size_t cap);
void om_printf(struct om_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "# TYPE name type\n# HELP name help\n" */
void om_family(struct om_buf *b, const char *name, const char *type, const char *help);
/* A label value with backslash, quote and newline escaped, into out (cap bytes, truncated). */
void om_escape(const char *s, char *out, size_t cap);
/* Ends the text with "# EOF\n"; returns it (malloc'd, *len set), or NULL
 * (and frees it) when an allocation failed. */
char *om_finish(struct om_buf *b, size_t *len);

struct om_http;
/* Serves GET /metrics on listen ("IPV4:PORT"; port 0 picks one, see
 * om_http_port). render returns a malloc'd text (NULL: the request fails)
 * that the server frees. opt names the option in error messages
 * ("--metrics-listen"), who the program in the 404 text. */
struct om_http *om_http_start(const char *listen, const char *opt, const char *who,
			      char *(*render)(void *ctx, size_t *len), void *ctx, char *err,
			      size_t errlen);
int om_http_port(const struct om_http *h);
void om_http_stop(struct om_http *h); /* NULL: nothing */

#endif
