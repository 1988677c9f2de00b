/* OpenMetrics text building (include/pulse/om.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "pulse/om.h"

void om_init(struct om_buf *b, size_t cap)
{
	b->len = 0;
	b->oom = 0;
	b->cap = cap ? cap : 4096;
	b->p = malloc(b->cap);
	if (!b->p)
		b->oom = 1;
	else
		b->p[0] = 0;
}

void om_printf(struct om_buf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n) * 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
}

void om_family(struct om_buf *b, const char *name, const char *type, const char *help)
{
	om_printf(b, "# TYPE %s %s\n# HELP %s %s\n", name, type, name, help);
}

void om_escape(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	for (; s && *s && o + 3 < cap; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	if (cap)
		out[o] = 0;
}

char *om_finish(struct om_buf *b, size_t *len)
{
	om_printf(b, "# EOF\n");
	if (b->oom) {
		free(b->p);
		b->p = NULL;
		return NULL;
	}
	*len = b->len;
	return b->p;
}
