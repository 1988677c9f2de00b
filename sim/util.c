/* Helpers of the simulators (sim/util.h): command-line value parsing shared
 * by run_trace and pulse-tracegen, allocation for run_cluster. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int sim_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int sim_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns)
{
	if (!s || !*s || *s == '-')
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	double unit = (double)default_unit_ns;
	if (*end) {
		if (!strcmp(end, "ns"))
			unit = 1;
		else if (!strcmp(end, "us") || !strcmp(end, "\xc2\xb5s"))
			unit = 1e3;
		else if (!strcmp(end, "ms"))
			unit = 1e6;
		else if (!strcmp(end, "s"))
			unit = 1e9;
		else
			return -1;
	}
	double ns = v * unit;
	if (ns > 1.8e19)
		return -1;
	*out_ns = (uint64_t)(ns + 0.5);
	return 0;
}

void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p) {
		fprintf(stderr, "run_cluster: out of memory\n");
		exit(1);
	}
	return p;
}

void *xrealloc(void *p, size_t sz)
{
	void *q = realloc(p, sz ? sz : 1);
	if (!q) {
		fprintf(stderr, "run_cluster: out of memory\n");
		exit(1);
	}
	return q;
}

char *sim_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			if (cap >= max) {
				snprintf(err, errlen, "%s: larger than %zu MiB", path, max >> 20);
				free(buf);
				buf = NULL;
				break;
			}
			cap *= 2;
			char *nb = realloc(buf, cap + 1);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	if (buf && ferror(f)) {
		snprintf(err, errlen, "%s: read error (a directory?)", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}
