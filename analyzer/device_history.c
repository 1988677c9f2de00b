/* pulse-analyzer: per-device history across jobs with a prior (Holmes
 * §4.4, appendix D), kept in a local file (--device-history FILE) until
 * the PostgreSQL history holds it (analyzer/answers.h).
 *
 * File (text, one record a line, '#' comments):
 *   pulse-device-history 1
 *   host NAME JOBS JOBS_IMPLICATED EPISODES WEIGHT
 * JOBS: jobs whose analysis saw the host; JOBS_IMPLICATED: those with a
 * machine-level Pulse diagnosis naming it; EPISODES: such diagnoses;
 * WEIGHT: the sum over jobs of 1 - Π(1 - score) of its diagnoses in the
 * job (each job adds at most 1, more the more often and the more surely it
 * was named). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "answers.h"

#define HIST_MAGIC "pulse-device-history"
#define HIST_VERSION 1
#define HIST_MAX_HOSTS 65536
/* Holmes's Beta prior: a = α p, b = α (1 - p); p: how often a device is
 * implicated in a job without anything known of it (one in a hundred), α:
 * how many jobs of evidence the prior weighs */
#define PRIOR_P 0.01
#define PRIOR_ALPHA 10.0

void an_devhist_init(struct an_devhist *h)
{
	memset(h, 0, sizeof *h);
}

void an_devhist_free(struct an_devhist *h)
{
	free(h->h);
	memset(h, 0, sizeof *h);
}

static struct an_devhost *find(struct an_devhist *h, const char *name, int create)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (!strcmp(h->h[i].name, name))
			return &h->h[i];
	if (!create || h->n >= HIST_MAX_HOSTS || strlen(name) >= sizeof h->h->name)
		return NULL;
	if (h->n == h->cap) {
		uint32_t n = h->cap ? h->cap * 2 : 64;
		struct an_devhost *p = realloc(h->h, n * sizeof *p);
		if (!p)
			return NULL;
		h->h = p;
		h->cap = n;
	}
	struct an_devhost *x = &h->h[h->n++];
	memset(x, 0, sizeof *x);
	snprintf(x->name, sizeof x->name, "%s", name);
	return x;
}

static int host_line(struct an_devhist *h, const char *line)
{
	char name[PULSE_OP_HOST_LEN + 1], extra;
	unsigned long long jobs, hits, eps;
	double w;
	/* %64s: one more than a name may hold, so that a longer one is seen */
	if (sscanf(line, "host %64s %llu %llu %llu %lf %c", name, &jobs, &hits, &eps, &w, &extra) != 5)
		return -1;
	if (strlen(name) >= PULSE_OP_HOST_LEN || hits > jobs || jobs > UINT32_MAX || eps > UINT32_MAX ||
	    !isfinite(w) || w < 0 || w > (double)hits || find(h, name, 0))
		return -1;
	struct an_devhost *x = find(h, name, 1);
	if (!x)
		return -1;
	x->jobs = (uint32_t)jobs;
	x->hits = (uint32_t)hits;
	x->episodes = (uint32_t)eps;
	x->weight = w;
	return 0;
}

int an_devhist_parse(struct an_devhist *h, const char *text, size_t len, char *err, size_t errlen)
{
	size_t pos = 0;
	int header = 0;
	char line[512];
	while (pos < len) {
		const char *start = text + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - start) : len - pos;
		pos += l + (nl != NULL);
		if (l && start[l - 1] == '\r')
			l--;
		/* a line too long or with a NUL in it is not one of ours */
		int bad = l >= sizeof line || memchr(start, 0, l) != NULL;
		size_t c = bad ? 0 : l;
		memcpy(line, start, c);
		line[c] = 0;
		if (!bad && (!c || line[0] == '#'))
			continue;
		if (!header) {
			int v;
			char extra;
			if (bad || sscanf(line, HIST_MAGIC " %d %c", &v, &extra) != 1 || v != HIST_VERSION) {
				snprintf(err, errlen, "not a device history (version %d) file: it must begin with \"%s %d\"",
					 HIST_VERSION, HIST_MAGIC, HIST_VERSION);
				return -1;
			}
			header = 1;
			continue;
		}
		if (bad || host_line(h, line))
			h->bad_lines++;
	}
	if (!header && len) {
		snprintf(err, errlen, "not a device history file: no \"%s %d\" line", HIST_MAGIC, HIST_VERSION);
		return -1;
	}
	return 0;
}

int an_devhist_load(struct an_devhist *h, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		if (errno == ENOENT)
			return 0; /* the first job: an empty history */
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (n == cap) {
			if (cap >= (64u << 20)) {
				snprintf(err, errlen, "%s: larger than 64 MiB", path);
				rc = -1;
				break;
			}
			cap = cap ? cap * 2 : 65536;
			char *p = realloc(buf, cap);
			if (!p) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
				break;
			}
			buf = p;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		rc = -1;
	}
	fclose(f);
	if (!rc) {
		rc = an_devhist_parse(h, buf ? buf : "", n, err, errlen);
		if (rc && strlen(err) + strlen(path) + 3 < errlen) {
			char tmp[512];
			snprintf(tmp, sizeof tmp, "%s: %s", path, err);
			snprintf(err, errlen, "%s", tmp);
		}
	}
	free(buf);
	return rc;
}

double an_devhist_posterior(const struct an_devhost *x)
{
	double a = PRIOR_ALPHA * PRIOR_P, b = PRIOR_ALPHA * (1 - PRIOR_P);
	return (x->weight + a) / ((double)x->jobs + a + b);
}

void an_devhist_add_job(struct an_devhist *h, struct an_state *s)
{
	h->jobs_added++;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		struct an_devhost *x = find(h, s->hosts[i].name, 1);
		if (!x)
			continue;
		double miss = 1;
		uint32_t eps = 0;
		for (uint32_t k = 0; k < s->ndiags; k++) {
			const struct an_diagnosis *d = &s->diags[k];
			if (strcmp(d->localizer, "pulse") || d->level != AN_LEVEL_MACHINE || !d->nsuspects ||
			    strcmp(d->suspects[0].host, x->name))
				continue;
			eps++;
			double sc = d->score > 0 && d->score < 1 ? d->score : d->score >= 1 ? 1 : 0.5;
			miss *= 1 - sc;
		}
		uint32_t pj = x->jobs, ph = x->hits;
		if (x->jobs < UINT32_MAX)
			x->jobs++;
		if (eps) {
			if (x->hits < UINT32_MAX)
				x->hits++;
			x->episodes = x->episodes > UINT32_MAX - eps ? UINT32_MAX : x->episodes + eps;
			x->weight += 1 - miss;
		}
		double post = an_devhist_posterior(x);
		for (uint32_t k = 0; k < s->ndiags; k++) {
			struct an_diagnosis *d = &s->diags[k];
			if (d->level == AN_LEVEL_MACHINE && d->nsuspects && !strcmp(d->suspects[0].host, x->name)) {
				d->ep.prior = post;
				d->ep.prior_jobs = pj;
				d->ep.prior_hits = ph;
			}
		}
	}
}

int an_devhist_save(const struct an_devhist *h, const char *path, char *err, size_t errlen)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "%s %d\n# host NAME JOBS JOBS_IMPLICATED EPISODES WEIGHT (pulse-analyzer --device-history)\n",
		HIST_MAGIC, HIST_VERSION);
	for (uint32_t i = 0; i < h->n; i++) {
		const struct an_devhost *x = &h->h[i];
		fprintf(f, "host %s %" PRIu32 " %" PRIu32 " %" PRIu32 " %.6f\n", x->name, x->jobs, x->hits, x->episodes,
			x->weight);
	}
	int bad = ferror(f) != 0;
	bad |= fclose(f) != 0;
	/* rename: a reader sees the old file or the new one, never half */
	if (bad || rename(tmp, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		remove(tmp);
		return -1;
	}
	return 0;
}

static int by_posterior(const void *a, const void *b)
{
	double x = an_devhist_posterior(a), y = an_devhist_posterior(b);
	return x > y ? -1 : x < y;
}

void an_devhist_rank(struct an_devhist *h)
{
	if (h->n)
		qsort(h->h, h->n, sizeof *h->h, by_posterior);
}

void an_devhist_print(const struct an_devhist *h, FILE *f, uint32_t top)
{
	uint32_t shown = 0;
	for (uint32_t i = 0; i < h->n && shown < top; i++) {
		const struct an_devhost *x = &h->h[i];
		if (!x->hits)
			continue;
		if (!shown++)
			fprintf(f, "\nDevice history (Holmes §4.4: a Beta prior, one device in %.0f implicated per job):\n",
				1 / PRIOR_P);
		fprintf(f, "  %-20s posterior %.3f: implicated in %u of %u jobs, %u diagnoses\n", x->name,
			an_devhist_posterior(x), x->hits, x->jobs, x->episodes);
	}
	if (h->bad_lines)
		fprintf(f, "  (%" PRIu64 " lines of the history file were not understood and are dropped)\n",
			h->bad_lines);
}

void *an_devhist_json(const struct an_devhist *h, uint32_t top)
{
	cJSON *a = cJSON_CreateArray();
	uint32_t shown = 0;
	for (uint32_t i = 0; a && i < h->n && shown < top; i++) {
		const struct an_devhost *x = &h->h[i];
		if (!x->hits)
			continue;
		shown++;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "host", x->name);
		cJSON_AddNumberToObject(o, "posterior", an_devhist_posterior(x));
		cJSON_AddNumberToObject(o, "jobs", x->jobs);
		cJSON_AddNumberToObject(o, "jobs_implicated", x->hits);
		cJSON_AddNumberToObject(o, "diagnoses", x->episodes);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}
