/* assoc_accuracy TRUTH-OPS.jsonl AGENT-OUT.jsonl [--epoch-ns N] [--delta-ns N]
 *
 * Compares the host agent's "op" records (pulse-host-agent --replay) with
 * the simulator's ground truth (DIR/truth-ops.jsonl, one line per operator
 * and rank):
 *   - every operator of every rank has a record (groups of send/recv: one
 *     record per group, matched by group id);
 *   - an operator that sent RDMA bytes is "complete", with start and end
 *     within one epoch + δ of the truth's first and last byte;
 *   - one that sent none is "no_traffic" or "complete";
 *   - the algorithm of a collective with RDMA traffic is the truth's (ring
 *     or tree), for collectives that sent at least 4 KiB (one NIC TX
 *     event; a few bytes have no rate curve to infer from: the association
 *     reuses the last answer or says "unknown");
 *   - the parallelism label is the communicator's ("dp", "tp", "pp", "ep"),
 *     or "none" for collectives under 64 KiB (pulse.txt §5.2: small-volume
 *     operators); the standalone "world" communicator has no label to check.
 * Prints a summary and the first mismatches; exit 0 when everything
 * matches, 1 otherwise, 2 on bad input. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "pulse/op_record.h"

#define SMALL_BYTES (64u * 1024u)
#define TINY_BYTES 4096u

struct truth {
	char host[64], comm[16], op[16], algo[8];
	uint32_t pid;
	uint64_t comm_id, seq, group_id, count_bytes, call, start, end, bytes;
	int completed;
	int done; /* group: handled */
};

static uint64_t jstr_u64(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsString(v))
		return strtoull(v->valuestring, NULL, 0);
	if (cJSON_IsNumber(v))
		return (uint64_t)v->valuedouble;
	return 0;
}

static void jstr(const cJSON *o, const char *k, char *out, size_t n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	snprintf(out, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static char *slurp_line(FILE *f, size_t *len)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	if (n < 0) {
		free(line);
		return NULL;
	}
	*len = (size_t)n;
	return line;
}

static int failures, checked;
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	failures++;
	if (failures > 25)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Lookups by (host, pid, communicator, group or seq) through sorted
 * indexes: a 512-GPU run has over a million operators, too many for a
 * linear search per operator. */
static const struct pulse_op_record *g_r;
static const struct truth *g_t;

static int cmp3(const char *ha, uint32_t pa, uint64_t ca, const char *hb, uint32_t pb, uint64_t cb)
{
	int c = strcmp(ha, hb);
	if (c)
		return c;
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return 0;
}

static uint64_t rec_key(const struct pulse_op_record *c, int *grp)
{
	*grp = c->op == PULSE_OP_GROUP;
	return *grp ? c->group_id : c->seq;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct pulse_op_record *x = &g_r[*(const size_t *)a], *y = &g_r[*(const size_t *)b];
	int c = cmp3(x->host, x->pid, x->comm_id, y->host, y->pid, y->comm_id);
	if (c)
		return c;
	int gx, gy;
	uint64_t kx = rec_key(x, &gx), ky = rec_key(y, &gy);
	if (gx != gy)
		return gx - gy;
	return kx < ky ? -1 : kx > ky;
}

static const struct pulse_op_record *find_rec(const size_t *idx, size_t nr, const struct truth *x,
					      int grp)
{
	uint64_t key = grp ? x->group_id : x->seq;
	size_t lo = 0, hi = nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct pulse_op_record *c = &g_r[idx[mid]];
		int d = cmp3(c->host, c->pid, c->comm_id, x->host, x->pid, x->comm_id);
		if (!d) {
			int g;
			uint64_t k = rec_key(c, &g);
			d = g != grp ? g - grp : (k < key ? -1 : k > key);
		}
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nr) {
		const struct pulse_op_record *c = &g_r[idx[lo]];
		int g;
		uint64_t k = rec_key(c, &g);
		if (!cmp3(c->host, c->pid, c->comm_id, x->host, x->pid, x->comm_id) && g == grp && k == key)
			return c;
	}
	return NULL;
}

/* truth lines of one group, in file order */
static int cmp_grp(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct truth *x = &g_t[i], *y = &g_t[j];
	int c = cmp3(x->host, x->pid, x->comm_id, y->host, y->pid, y->comm_id);
	if (c)
		return c;
	if (x->group_id != y->group_id)
		return x->group_id < y->group_id ? -1 : 1;
	return i < j ? -1 : i > j;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

int main(int argc, char **argv)
{
	uint64_t epoch = 32000, delta = 2000000;
	const char *tpath = NULL, *rpath = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--epoch-ns") && i + 1 < argc)
			epoch = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--delta-ns") && i + 1 < argc)
			delta = strtoull(argv[++i], NULL, 10);
		else if (!tpath)
			tpath = argv[i];
		else if (!rpath)
			rpath = argv[i];
	}
	if (!tpath || !rpath) {
		fprintf(stderr, "usage: assoc_accuracy TRUTH-OPS.jsonl AGENT-OUT.jsonl [--epoch-ns N] [--delta-ns N]\n");
		return 2;
	}
	FILE *tf = fopen(tpath, "r"), *rf = fopen(rpath, "r");
	if (!tf || !rf) {
		fprintf(stderr, "assoc_accuracy: cannot open %s\n", !tf ? tpath : rpath);
		return 2;
	}
	struct truth *t = NULL;
	size_t nt = 0, ct = 0;
	char *line;
	size_t len;
	while ((line = slurp_line(tf, &len))) {
		cJSON *o = cJSON_ParseWithLength(line, len);
		free(line);
		if (!o)
			continue;
		if (nt == ct) {
			ct = ct ? ct * 2 : 1024;
			t = realloc(t, ct * sizeof *t);
			if (!t)
				return 2;
		}
		struct truth *x = &t[nt++];
		memset(x, 0, sizeof *x);
		jstr(o, "host", x->host, sizeof x->host);
		jstr(o, "comm", x->comm, sizeof x->comm);
		jstr(o, "op", x->op, sizeof x->op);
		jstr(o, "algo", x->algo, sizeof x->algo);
		x->pid = (uint32_t)jstr_u64(o, "pid");
		x->comm_id = jstr_u64(o, "comm_id");
		x->seq = jstr_u64(o, "seq");
		x->group_id = jstr_u64(o, "group_id");
		x->count_bytes = jstr_u64(o, "count_bytes");
		x->call = jstr_u64(o, "call_ns");
		x->start = jstr_u64(o, "start_ns");
		x->end = jstr_u64(o, "end_ns");
		x->bytes = jstr_u64(o, "bytes");
		x->completed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "completed"));
		cJSON_Delete(o);
	}
	fclose(tf);
	struct pulse_op_record *r = NULL;
	size_t nr = 0, cr = 0;
	uint64_t bad_lines = 0;
	while ((line = slurp_line(rf, &len))) {
		if (!strstr(line, "\"type\":\"op\"")) {
			free(line);
			continue;
		}
		if (nr == cr) {
			cr = cr ? cr * 2 : 1024;
			r = realloc(r, cr * sizeof *r);
			if (!r)
				return 2;
		}
		char err[160];
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (pulse_op_record_from_json(line, len, &r[nr], err, sizeof err) == 0)
			nr++;
		else
			bad_lines++;
		free(line);
	}
	fclose(rf);
	if (bad_lines)
		fail("%" PRIu64 " op lines the codec rejects", bad_lines);
	g_r = r;
	g_t = t;
	size_t *ridx = malloc((nr ? nr : 1) * sizeof *ridx);
	size_t *tidx = malloc((nt ? nt : 1) * sizeof *tidx);
	size_t *gnext = malloc((nt ? nt : 1) * sizeof *gnext);
	if (!ridx || !tidx || !gnext)
		return 2;
	for (size_t i = 0; i < nr; i++)
		ridx[i] = i;
	qsort(ridx, nr, sizeof *ridx, cmp_rec);
	for (size_t i = 0; i < nt; i++) {
		tidx[i] = i;
		gnext[i] = SIZE_MAX;
	}
	qsort(tidx, nt, sizeof *tidx, cmp_grp);
	for (size_t i = 0; i + 1 < nt; i++) {
		const struct truth *x = &t[tidx[i]], *y = &t[tidx[i + 1]];
		if (x->group_id && !cmp3(x->host, x->pid, x->comm_id, y->host, y->pid, y->comm_id) &&
		    x->group_id == y->group_id)
			gnext[tidx[i]] = tidx[i + 1];
	}
	uint64_t tol = epoch + delta;
	uint64_t n_net = 0, n_local = 0, n_groups = 0, n_algo = 0, n_label = 0;
	uint64_t max_start = 0, max_end = 0;
	for (size_t i = 0; i < nt; i++) {
		struct truth *x = &t[i];
		if (x->done)
			continue;
		/* a group: all parts of (host, pid, comm, group id) */
		uint64_t start = x->start, end = x->end, bytes = x->bytes;
		int is_group = x->group_id != 0;
		if (is_group) {
			start = UINT64_MAX;
			end = 0;
			bytes = 0;
			for (size_t j = i; j != SIZE_MAX; j = gnext[j]) {
				struct truth *y = &t[j];
				y->done = 1;
				if (y->bytes) {
					bytes += y->bytes;
					start = y->start < start ? y->start : start;
					end = y->end > end ? y->end : end;
				}
			}
			n_groups++;
		}
		checked++;
		const struct pulse_op_record *m = find_rec(ridx, nr, x, is_group);
		if (!m) {
			fail("missing: %s pid %u comm %s 0x%016" PRIx64 " seq %" PRIu64 " %s%s (truth bytes %" PRIu64 ")",
			     x->host, x->pid, x->comm, x->comm_id, x->seq, x->op, is_group ? " group" : "", bytes);
			continue;
		}
		if (!is_group && strcmp(pulse_op_type_name(m->op), x->op))
			fail("type: %s seq %" PRIu64 ": record %s, truth %s", x->host, x->seq,
			     pulse_op_type_name(m->op), x->op);
		if (bytes) {
			n_net++;
			if (m->status != PULSE_OP_COMPLETE) {
				fail("status: %s pid %u %s seq %" PRIu64 " %s: %s (truth: %" PRIu64 " bytes, completed %d)",
				     x->host, x->pid, x->comm, x->seq, x->op, pulse_op_status_name(m->status), bytes,
				     x->completed);
				continue;
			}
			uint64_t ds = absdiff(m->start_ns, start), de = absdiff(m->end_ns, end);
			max_start = ds > max_start ? ds : max_start;
			max_end = de > max_end ? de : max_end;
			if (ds > tol || de > tol)
				fail("time: %s pid %u %s seq %" PRIu64 " %s: start %+" PRId64 " ns, end %+" PRId64
				     " ns off the truth (bound %" PRIu64 ")",
				     x->host, x->pid, x->comm, x->seq, x->op, (int64_t)(m->start_ns - start),
				     (int64_t)(m->end_ns - end), tol);
			if (!is_group && (!strcmp(x->algo, "ring") || !strcmp(x->algo, "tree")) &&
			    strcmp(x->op, "send") && strcmp(x->op, "recv") && x->bytes >= TINY_BYTES) {
				n_algo++;
				if (strcmp(pulse_op_algo_name(m->algo), x->algo))
					fail("algo: %s pid %u %s seq %" PRIu64 " %s: %s, truth %s", x->host, x->pid,
					     x->comm, x->seq, x->op, pulse_op_algo_name(m->algo), x->algo);
			}
		} else {
			n_local++;
			if (m->status != PULSE_OP_NO_TRAFFIC && m->status != PULSE_OP_COMPLETE)
				fail("status: %s pid %u %s seq %" PRIu64 " %s: %s (truth: no RDMA bytes)", x->host,
				     x->pid, x->comm, x->seq, x->op, pulse_op_status_name(m->status));
		}
		if (strcmp(x->comm, "world")) {
			const char *want = x->comm;
			int coll = strcmp(x->op, "send") && strcmp(x->op, "recv") && !is_group;
			if (coll && x->count_bytes < SMALL_BYTES)
				want = "none";
			n_label++;
			if (strcmp(pulse_op_par_name(m->parallelism), want))
				fail("label: %s pid %u comm %s seq %" PRIu64 " %s: %s, expected %s", x->host, x->pid,
				     x->comm, x->seq, x->op, pulse_op_par_name(m->parallelism), want);
		}
	}
	printf("assoc_accuracy: %d operators (%" PRIu64 " with RDMA traffic, %" PRIu64 " without, %" PRIu64
	       " groups), %zu records; algorithm checked on %" PRIu64 ", labels on %" PRIu64
	       "; max start error %" PRIu64 " ns, max end error %" PRIu64 " ns (bound %" PRIu64 "); %d mismatches\n",
	       checked, n_net, n_local, n_groups, nr, n_algo, n_label, max_start, max_end, tol, failures);
	free(ridx);
	free(tidx);
	free(gnext);
	free(t);
	free(r);
	return failures ? 1 : 0;
}
