/* Shared by the cluster simulator's tests (test_cluster.c, test_events.c):
 * run a scenario in-process and read its run directory back as the host
 * agent would. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cJSON.h>
#include <ftw.h>

#include "cluster_testutil.h"
#include "pulse/event_stream.h"

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return b;
}

char *read_run_file(const char *dir, const char *name, size_t *len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	char *t = read_file(path, len);
	assert_non_null(t);
	return t;
}

cJSON *read_run_json(const char *dir, const char *name)
{
	size_t len;
	char *t = read_run_file(dir, name, &len);
	cJSON *j = cJSON_Parse(t);
	free(t);
	assert_non_null(j);
	return j;
}

void load_evs(const char *dir, int host, int gpu, struct stream *s)
{
	char path[512];
	snprintf(path, sizeof path, "%s/hosts/host%d/mlx5_%d.evs", dir, host, gpu);
	size_t len;
	uint8_t *b = (uint8_t *)read_file(path, &len);
	assert_non_null(b);
	uint16_t hs, rs;
	assert_int_equal(pulse_evs_check_header(b, (uint32_t)len, &hs, &rs), 0);
	memset(s, 0, sizeof *s);
	size_t n = (len - hs) / rs;
	assert_int_equal((len - hs) % rs, 0);
	s->ev = calloc(n + 1, sizeof *s->ev);
	s->poll_host = calloc(n + 1, sizeof *s->poll_host);
	s->poll_nic = calloc(n + 1, sizeof *s->poll_nic);
	uint64_t hi = 0;
	uint32_t last = 0;
	int have = 0;
	uint64_t last_host = 0;
	for (size_t i = 0; i < n; i++) {
		struct pulse_evs_record r;
		assert_int_equal(pulse_evs_decode_record(b + hs + i * rs, &r), 0);
		if (have && r.ev.ts_ns < last)
			hi += 1ull << 32;
		have = 1;
		last = r.ev.ts_ns;
		if (r.kind == PULSE_EVS_POLL) {
			assert_true(r.host_ns >= last_host); /* host clock moves forward */
			last_host = r.host_ns;
			s->poll_host[s->polls] = r.host_ns;
			s->poll_nic[s->polls] = hi + r.ev.ts_ns;
			s->polls++;
			continue;
		}
		assert_true(r.ev.qpn != 0 && r.ev.qpn < 0xffffff);
		assert_int_equal(r.thread, r.ev.qpn % 16);
		assert_true(r.ev.sent_pkts >= 1);
		s->ev[s->n].t = hi + r.ev.ts_ns;
		s->ev[s->n].qpn = r.ev.qpn;
		s->ev[s->n].bytes = (uint32_t)r.ev.sent_32b * 32;
		s->bytes += s->ev[s->n].bytes;
		s->n++;
	}
	/* the stream ends with a POLL after the last traffic */
	struct pulse_evs_record r;
	pulse_evs_decode_record(b + hs + (n - 1) * rs, &r);
	assert_int_equal(r.kind, PULSE_EVS_POLL);
	free(b);
}

static int rm_cb(const char *p, const struct stat *sb, int f, struct FTW *ftw)
{
	(void)sb;
	(void)f;
	(void)ftw;
	return remove(p);
}

void free_stream(struct stream *s)
{
	free(s->ev);
	free(s->poll_host);
	free(s->poll_nic);
}

uint64_t nic_of_host(const struct stream *s, uint64_t h)
{
	assert_true(s->polls >= 2);
	size_t i = 1;
	while (i + 1 < s->polls && s->poll_host[i] < h)
		i++;
	double a = (double)s->poll_host[i - 1], b = (double)s->poll_host[i];
	double na = (double)s->poll_nic[i - 1], nb = (double)s->poll_nic[i];
	return (uint64_t)(na + ((double)h - a) * (nb - na) / (b - a));
}

void rm_rf(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs a scenario given as JSON text into a fresh directory. */
char *run_json(const char *json, struct sc_stats *st_out)
{
	struct sc_scenario s;
	char err[512];
	int rc = sc_scenario_parse(json, strlen(json), &s, err, sizeof err);
	if (rc)
		fprintf(stderr, "scenario: %s\n", err);
	assert_int_equal(rc, 0);
	char *dir = strdup("/tmp/pulse-cluster-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	struct sc_stats st;
	memset(&st, 0, sizeof st);
	rc = sc_run(&s, dir, 0, &st, err, sizeof err);
	if (rc)
		fprintf(stderr, "run: %s\n", err);
	assert_int_equal(rc, 0);
	if (st_out)
		*st_out = st;
	return dir;
}

void done(char *dir)
{
	rm_rf(dir);
	free(dir);
}

void bad(const char *json, const char *needle)
{
	struct sc_scenario s;
	char err[512];
	assert_int_equal(sc_scenario_parse(json, strlen(json), &s, err, sizeof err), -1);
	if (!strstr(err, needle)) {
		fprintf(stderr, "error \"%s\" lacks \"%s\"\n", err, needle);
		fail();
	}
}

