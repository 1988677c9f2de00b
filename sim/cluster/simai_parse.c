/* The SimAI/AICB workload reader (simai.h). Written from the format as
 * AICB writes it and SimAI's astra-sim reads it (Workload::initialize_workload):
 * whitespace-separated tokens, one layer per line. Stricter than SimAI's
 * stream reader on purpose: a layer must be on one line with its 12 fields,
 * the count on line 2 must match the layer lines, every number must be a
 * number, so that a damaged or truncated file is an error naming its line
 * instead of a silently different job. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simai.h"
#include "../util.h"

#define MAX_TOKENS 64
#define MAX_COMPUTE_NS 1000000000000ull /* 1000 s: a phase longer is a damaged file */
#define MAX_BYTES (1ull << 50)

struct line {
	const char *tok[MAX_TOKENS];
	size_t toklen[MAX_TOKENS];
	int ntok;
	int too_many;
};

static void errf(char *err, size_t errlen, int line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(err, errlen, "line %d: %s", line, msg);
	else
		snprintf(err, errlen, "%s", msg);
}

/* Splits [p, end) on blanks; a NUL or another control byte is refused. */
static int split(const char *p, const char *end, struct line *l)
{
	l->ntok = 0;
	l->too_many = 0;
	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p == end)
			break;
		const char *s = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r') {
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -1;
			p++;
		}
		if (l->ntok == MAX_TOKENS) {
			l->too_many = 1;
			continue;
		}
		l->tok[l->ntok] = s;
		l->toklen[l->ntok] = (size_t)(p - s);
		l->ntok++;
	}
	return 0;
}

static int tok_is(const struct line *l, int i, const char *s)
{
	return i < l->ntok && l->toklen[i] == strlen(s) && !memcmp(l->tok[i], s, l->toklen[i]);
}

/* a decimal integer in [lo, hi] (a leading '-' only when lo < 0) */
static int tok_int(const struct line *l, int i, long long lo, unsigned long long hi,
		   long long *out)
{
	if (i >= l->ntok || l->toklen[i] == 0 || l->toklen[i] > 24)
		return -1;
	char buf[32];
	memcpy(buf, l->tok[i], l->toklen[i]);
	buf[l->toklen[i]] = 0;
	const char *p = buf;
	int neg = 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (!*p)
		return -1;
	unsigned long long v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (hi + 1ull) / 10 + 1)
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (neg) {
		if (lo >= 0 || v > (unsigned long long)(-(lo + 1)) + 1ull)
			return -1;
		*out = -(long long)v;
		return 0;
	}
	if (v > hi || (lo > 0 && v < (unsigned long long)lo))
		return -1;
	*out = (long long)v;
	return 0;
}

static void tok_str(const struct line *l, int i, char *out, size_t cap)
{
	size_t n = l->toklen[i] < cap - 1 ? l->toklen[i] : cap - 1;
	memcpy(out, l->tok[i], n);
	out[n] = 0;
}

const char *simai_op_name(int op)
{
	switch (op) {
	case SA_ALLREDUCE: return "ALLREDUCE";
	case SA_ALLGATHER: return "ALLGATHER";
	case SA_REDUCESCATTER: return "REDUCESCATTER";
	case SA_ALLTOALL: return "ALLTOALL";
	default: return "NONE";
	}
}

const char *simai_group_name(int group)
{
	switch (group) {
	case SG_TP: return "TP";
	case SG_DP: return "DP";
	case SG_EP: return "EP";
	case SG_DP_EP: return "DP_EP";
	default: return "none";
	}
}

/* A communication type: NONE, or ALLREDUCE / ALLGATHER / REDUCESCATTER /
 * ALLTOALL with no suffix (TP in the forward and input-gradient phases, DP
 * in the weight-gradient phase), "_EP" or "_DP_EP". */
static int parse_comm(const struct line *l, int i, int phase, struct simai_comm *c)
{
	static const char *const ops[] = { "NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER",
					   "ALLTOALL" };
	char t[48];
	if (l->toklen[i] >= sizeof t)
		return -1;
	tok_str(l, i, t, sizeof t);
	c->op = SA_NONE;
	c->group = SG_NONE;
	if (!strcmp(t, "NONE"))
		return 0;
	for (int k = 1; k < 5; k++) {
		size_t n = strlen(ops[k]);
		if (strncmp(t, ops[k], n))
			continue;
		const char *suf = t + n;
		int g;
		if (!*suf)
			g = phase == SP_WG ? SG_DP : SG_TP;
		else if (!strcmp(suf, "_EP"))
			g = SG_EP;
		else if (!strcmp(suf, "_DP_EP"))
			g = SG_DP_EP;
		else
			continue;
		c->op = (uint8_t)k;
		c->group = (uint8_t)g;
		return 0;
	}
	return -1;
}

static const char *const phase_names[SP_COUNT] = { "forward", "input-gradient",
						   "weight-gradient" };

/* line 1: the policy and its "key: value" pairs */
static int parse_header(const struct line *l, struct simai_workload *w, char *err, size_t errlen)
{
	if (l->ntok == 0) {
		errf(err, errlen, 1, "empty: expected the parallelism policy and its parameters");
		return -1;
	}
	if (l->too_many) {
		errf(err, errlen, 1, "more than %d fields", MAX_TOKENS);
		return -1;
	}
	if (!tok_is(l, 0, "HYBRID_TRANSFORMER_FWD_IN_BCKWD") && !tok_is(l, 0, "HYBRID_TRANSFORMER")) {
		char p[40];
		tok_str(l, 0, p, sizeof p);
		errf(err, errlen, 1,
		     "policy \"%s\" is not supported (HYBRID_TRANSFORMER or "
		     "HYBRID_TRANSFORMER_FWD_IN_BCKWD)",
		     p);
		return -1;
	}
	tok_str(l, 0, w->policy, sizeof w->policy);
	w->tp = w->ep = w->pp = w->vpp = w->ga = 1;
	w->all_gpus = 0;
	static const struct {
		const char *key;
		size_t off;
		long long lo, hi;
	} keys[] = {
		{ "model_parallel_NPU_group:", offsetof(struct simai_workload, tp), 1, 65536 },
		{ "ep:", offsetof(struct simai_workload, ep), 1, 65536 },
		{ "pp:", offsetof(struct simai_workload, pp), 1, 65536 },
		{ "vpp:", offsetof(struct simai_workload, vpp), 1, 65536 },
		{ "ga:", offsetof(struct simai_workload, ga), 1, 1000000 },
		{ "all_gpus:", offsetof(struct simai_workload, all_gpus), 1, 1000000 },
	};
	for (int i = 1; i < l->ntok;) {
		char k[48];
		tok_str(l, i, k, sizeof k);
		long long v;
		int found = 0;
		for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
			if (!tok_is(l, i, keys[j].key))
				continue;
			found = 1;
			if (tok_int(l, i + 1, keys[j].lo, (unsigned long long)keys[j].hi, &v)) {
				errf(err, errlen, 1, "%s expects an integer in [%lld, %lld]", k, keys[j].lo,
				     keys[j].hi);
				return -1;
			}
			*(int *)((char *)w + keys[j].off) = (int)v;
			i += 2;
		}
		if (found)
			continue;
		/* AICB writes "pp_comm:" or, in some versions, "pp_comm" */
		if (tok_is(l, i, "pp_comm:") || tok_is(l, i, "pp_comm")) {
			if (tok_int(l, i + 1, 0, MAX_BYTES, &v)) {
				errf(err, errlen, 1, "%s expects a byte count", k);
				return -1;
			}
			w->pp_comm = (uint64_t)v;
			i += 2;
			continue;
		}
		/* "checkpoints: N l1 .. lN" and "checkpoint_initiates: N ..."
		 * (activation recomputation): read and checked, not simulated */
		if (tok_is(l, i, "checkpoints:") || tok_is(l, i, "checkpoint_initiates:")) {
			if (tok_int(l, i + 1, 0, SIMAI_MAX_LAYERS, &v) || i + 2 + v > l->ntok) {
				errf(err, errlen, 1, "%s expects a count and that many layer numbers", k);
				return -1;
			}
			for (long long j = 0; j < v; j++) {
				long long x;
				if (tok_int(l, i + 2 + (int)j, 0, SIMAI_MAX_LAYERS, &x)) {
					errf(err, errlen, 1, "%s: layer number %lld is not a number", k, j + 1);
					return -1;
				}
			}
			i += 2 + (int)v;
			continue;
		}
		errf(err, errlen, 1, "unknown parameter \"%s\"", k);
		return -1;
	}
	if (!w->all_gpus) {
		errf(err, errlen, 1, "all_gpus: missing");
		return -1;
	}
	return 0;
}

static int parse_layer(const struct line *l, int lineno, struct simai_layer *y, char *err,
		       size_t errlen)
{
	if (l->ntok != 12 || l->too_many) {
		errf(err, errlen, lineno,
		     "%d fields, expected 12 (name, dependency, then compute time, communication "
		     "type and size for the forward, input-gradient and weight-gradient phases, "
		     "then the update time)",
		     l->too_many ? MAX_TOKENS : l->ntok);
		return -1;
	}
	memset(y, 0, sizeof *y);
	y->line = lineno;
	if (l->toklen[0] >= sizeof y->name) {
		errf(err, errlen, lineno, "layer name longer than %zu characters", sizeof y->name - 1);
		return -1;
	}
	tok_str(l, 0, y->name, sizeof y->name);
	long long v;
	if (tok_int(l, 1, -1, SIMAI_MAX_LAYERS, &v)) {
		errf(err, errlen, lineno, "field 2 (dependency): expected -1 or a layer number");
		return -1;
	}
	y->dep = (int)v;
	for (int ph = 0; ph < SP_COUNT; ph++) {
		int f = 2 + 3 * ph;
		if (tok_int(l, f, 0, MAX_COMPUTE_NS, &v)) {
			errf(err, errlen, lineno, "field %d (%s compute time): expected 0 to %llu ns", f + 1,
			     phase_names[ph], MAX_COMPUTE_NS);
			return -1;
		}
		y->compute_ns[ph] = (uint64_t)v;
		if (parse_comm(l, f + 1, ph, &y->comm[ph])) {
			char t[48];
			tok_str(l, f + 1, t, sizeof t);
			errf(err, errlen, lineno,
			     "field %d (%s communication): \"%s\" is not NONE or ALLREDUCE, ALLGATHER, "
			     "REDUCESCATTER, ALLTOALL (optionally _EP or _DP_EP)",
			     f + 2, phase_names[ph], t);
			return -1;
		}
		if (tok_int(l, f + 2, 0, MAX_BYTES, &v)) {
			errf(err, errlen, lineno, "field %d (%s communication size): expected 0 to 2^50 bytes",
			     f + 3, phase_names[ph]);
			return -1;
		}
		y->comm[ph].bytes = (uint64_t)v;
	}
	if (tok_int(l, 11, 0, MAX_COMPUTE_NS, &v)) {
		errf(err, errlen, lineno, "field 12 (update time): expected 0 to %llu ns", MAX_COMPUTE_NS);
		return -1;
	}
	y->update_ns = (uint64_t)v;
	return 0;
}

int simai_parse(const char *text, size_t len, struct simai_workload *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	const char *p = text, *end = text + len;
	int lineno = 0, want = -1, got = 0, cap = 0;
	struct line l;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		lineno++;
		if (split(p, le, &l)) {
			errf(err, errlen, lineno, "a control or NUL byte (not a text file?)");
			goto bad;
		}
		p = nl ? nl + 1 : end;
		if (lineno == 1) {
			if (parse_header(&l, w, err, errlen))
				goto bad;
			continue;
		}
		if (lineno == 2) {
			long long v;
			if (l.ntok != 1 || tok_int(&l, 0, 1, SIMAI_MAX_LAYERS, &v)) {
				errf(err, errlen, 2, "expected the number of layer lines (1 to %d)",
				     SIMAI_MAX_LAYERS);
				goto bad;
			}
			want = (int)v;
			continue;
		}
		if (l.ntok == 0)
			continue; /* blank lines (a trailing newline or two) */
		if (got == want) {
			errf(err, errlen, lineno, "more layer lines than the %d that line 2 announces", want);
			goto bad;
		}
		if (got == cap) {
			/* grow by doubling, never beyond what line 2 announced */
			int nc = cap ? cap * 2 : 64;
			if (nc > want)
				nc = want;
			struct simai_layer *ny = realloc(w->layers, (size_t)nc * sizeof *ny);
			if (!ny) {
				errf(err, errlen, lineno, "out of memory");
				goto bad;
			}
			w->layers = ny;
			cap = nc;
		}
		if (parse_layer(&l, lineno, &w->layers[got], err, errlen))
			goto bad;
		got++;
	}
	if (lineno < 1) {
		errf(err, errlen, 0, "empty file");
		goto bad;
	}
	if (want < 0) {
		errf(err, errlen, lineno + 1, "truncated: the number of layer lines is missing");
		goto bad;
	}
	if (got < want) {
		errf(err, errlen, lineno + 1, "truncated: line 2 announces %d layer lines, the file ends after %d",
		     want, got);
		goto bad;
	}
	w->nlayers = got;
	return 0;
bad:
	simai_free(w);
	return -1;
}

int simai_load(const char *path, struct simai_workload *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	size_t n;
	char *buf = sim_read_file(path, SIMAI_MAX_FILE, &n, err, errlen);
	if (!buf)
		return -1;
	char inner[320];
	int rc = simai_parse(buf, n, w, inner, sizeof inner);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, inner);
	free(buf);
	return rc;
}

void simai_free(struct simai_workload *w)
{
	free(w->layers);
	w->layers = NULL;
	w->nlayers = 0;
}

int simai_check_gpus(const struct simai_workload *w, int gpus, char *err, size_t errlen)
{
	long mp = (long)w->tp * w->pp;
	if (gpus % mp) {
		snprintf(err, errlen, "simai.gpus: %d is not a multiple of TP x PP = %d x %d", gpus, w->tp,
			 w->pp);
		return -1;
	}
	long dp = gpus / mp;
	if (dp % w->ep) {
		snprintf(err, errlen,
			 "simai.gpus: %d GPUs leave a data-parallel size of %ld, not a multiple of EP %d "
			 "(use a multiple of TP x PP x EP = %ld)",
			 gpus, dp, w->ep, mp * w->ep);
		return -1;
	}
	if (w->pp > 1 && w->pp_comm == 0) {
		snprintf(err, errlen, "simai.file: pp is %d but pp_comm is 0 (no pipeline message size)",
			 w->pp);
		return -1;
	}
	return 0;
}

void simai_describe(FILE *f, const char *path, const struct simai_workload *w)
{
	long mp = (long)w->tp * w->pp;
	fprintf(f, "%s: ok: %s, %d layer lines, %d GPUs: TP %d, PP %d, EP %d, DP %ld, GA %d, VPP %d, "
		   "pp_comm %llu bytes\n",
		path, w->policy, w->nlayers, w->all_gpus, w->tp, w->pp, w->ep,
		w->all_gpus % mp ? -1L : w->all_gpus / mp, w->ga, w->vpp, (unsigned long long)w->pp_comm);
	uint64_t n[SA_ALLTOALL + 1][SG_COUNT] = { { 0 } }, b[SA_ALLTOALL + 1][SG_COUNT] = { { 0 } };
	uint64_t comp = 0;
	for (int i = 0; i < w->nlayers; i++) {
		for (int ph = 0; ph < SP_COUNT; ph++) {
			const struct simai_comm *c = &w->layers[i].comm[ph];
			comp += w->layers[i].compute_ns[ph];
			if (c->op == SA_NONE || !c->bytes)
				continue;
			n[c->op][c->group]++;
			b[c->op][c->group] += c->bytes;
		}
		comp += w->layers[i].update_ns;
	}
	fprintf(f, "per rank and iteration: compute %.3f ms", (double)comp / 1e6);
	for (int o = 1; o <= SA_ALLTOALL; o++)
		for (int g = 1; g < SG_COUNT; g++)
			if (n[o][g])
				fprintf(f, "; %s on %s x%llu (%.1f MB)", simai_op_name(o), simai_group_name(g),
					(unsigned long long)n[o][g], (double)b[o][g] / 1e6);
	fprintf(f, "\n");
}
