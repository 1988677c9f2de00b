/* host-agent/line_tee.h: a fopencookie stream that splits what it is given
 * into lines, for the outputs that take the agent's lines one by one. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "line_tee.h"

struct tee {
	const struct line_tee_ops *ops;
	void *ctx;
	FILE *inner;
	int close_inner;
	size_t max;
	char *buf;
	size_t len, cap;
	int skipping; /* a line over the bound: dropped up to its newline */
};

static ssize_t tee_write(void *cookie, const char *p, size_t n)
{
	struct tee *t = cookie;
	/* A failing file (a full disk) must not cut the analyzer off too: its
	 * error stays on the file's stream, where jsonl.c looks for it. */
	if (t->inner && fwrite(p, 1, n, t->inner) == n)
		fflush(t->inner);
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t k = nl ? (size_t)(nl - (p + i)) : n - i;
		if (!t->skipping) {
			if (t->len + k > t->max) {
				t->skipping = 1;
				t->len = 0;
				if (t->ops->oversize)
					t->ops->oversize(t->ctx);
			} else {
				if (t->len + k > t->cap) {
					size_t nc = t->cap ? t->cap : 4096;
					while (nc < t->len + k)
						nc *= 2;
					char *nb = realloc(t->buf, nc);
					if (!nb)
						return (ssize_t)n; /* the file got it; the copy loses this line */
					t->buf = nb;
					t->cap = nc;
				}
				memcpy(t->buf + t->len, p + i, k);
				t->len += k;
			}
		}
		i += k;
		if (nl) {
			if (!t->skipping && t->len)
				t->ops->line(t->ctx, t->buf, t->len);
			t->len = 0;
			t->skipping = 0;
			i++;
		}
	}
	return (ssize_t)n;
}

static int tee_close(void *cookie)
{
	struct tee *t = cookie;
	int rc = 0;
	if (t->inner && t->close_inner)
		rc = fclose(t->inner);
	else if (t->inner)
		fflush(t->inner);
	free(t->buf);
	free(t);
	return rc;
}

FILE *line_tee_open(FILE *inner, int close_inner, size_t max, const struct line_tee_ops *ops, void *ctx)
{
	struct tee *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->ops = ops;
	t->ctx = ctx;
	t->inner = inner;
	t->close_inner = close_inner;
	t->max = max;
	cookie_io_functions_t io = {.read = NULL, .write = tee_write, .seek = NULL, .close = tee_close};
	FILE *f = fopencookie(t, "w", io);
	if (!f)
		free(t);
	return f;
}
