/* pulse-eval-score: scores pulse-analyzer reports against the simulator's
 * ground truth (make eval, tools/eval/run-eval.sh).
 *
 *   pulse-eval-score [--out REPORT.json] [--expect FILE] RUN...
 *       RUN is a directory with truth.json (sim/run_cluster) and
 *       analyzer.json (pulse-analyzer --json); a RUN whose analyzer.json is
 *       missing, not JSON or not an analyzer report is a pipeline failure:
 *       counted as missed and listed. Prints the paper's Table 3 for Pulse
 *       and the OP-level baseline, precision / recall / false-positive rate
 *       per anomaly class (pulse.txt §8.1, lenient and strict), the strict
 *       run-level verdicts with 95% intervals and the diagnosis latency;
 *       the last lines are one strict summary per localizer.
 *       --expect FILE: lines "SCENARIO SYMBOL" (SYMBOL one of M G H X, for
 *       machine, group, half (computation judged communication), missed;
 *       N for a run without a failure: nothing may be reported);
 *       exits 1 if a run's Pulse symbol is worse than expected (make test).
 *   pulse-eval-score --set-epoch IN.json OUT.json NS
 *       copies a scenario with its epoch length set (the ablation).
 *
 * A node is a host. The hosts a diagnosis names: the suspects of a
 * machine-level diagnosis, the members of a group-level one. Classes:
 * computation/communication x fail-slow/fail-stop, from the truth's
 * failure class and mode (a hung job's failure is a fail-stop; the
 * analyzer writes the class as "class": comp-slow ... comm-stop and
 * "class_name": computation fail-slow ...).
 *
 * Table 3 symbol of a run (the paper's table): the localizer's first
 * diagnosis: ● machine level naming the faulty host alone (one host; its
 * GPUs do not matter) with the right class; ○ naming the faulty host with
 * the right class together with other hosts, or at group level; ◐ a
 * computation failure reported as communication on the faulty host; ✗
 * anything else or nothing. --expect compares this symbol.
 *
 * Strict scoring (the "strict" section and key): every diagnosis of a run
 * is scored. A diagnosis is a false positive when the run has no failure,
 * when it names a host other than the faulty one (or none), when its class
 * is wrong, or when it was reported before the failure's onset (its
 * report_ns earlier than the truth's start_host_ns by more than the hosts'
 * clock offsets + 10 ms: nothing was wrong yet). Run verdicts:
 *   strict                      the first diagnosis is machine level, names
 *                               the faulty host alone with the right class,
 *                               after the onset, and no diagnosis of the run
 *                               is a false positive
 *   machine_with_false_positive the first diagnosis is right as above but
 *                               another one is a false positive
 *   group                       the first diagnosis names the faulty host
 *                               with the right class among other hosts
 *   wrong                       the first diagnosis names other hosts only,
 *                               a wrong class, or came before the onset
 *   missed                      nothing reported, or the pipeline failed
 *   clean / false_alarm         runs without a failure: no diagnosis / any
 * Rates come with 95% Wilson score intervals. Strict host-level counts, per
 * class one-vs-rest (cells are run x host; the positive of class c is the
 * faulty host of a run whose failure is of class c): TP = the faulty host
 * named alone at machine level with its class by a diagnosis after the
 * onset; FP = every other cell named with class c, in any run (runs
 * without a failure included), plus one when the faulty host was named with
 * its class before the onset; TN = the other cells not named with class c.
 * Overall: TP as above; FP = the normal hosts named by any diagnosis, plus
 * the faulty host when named with a wrong class or before the onset; TN =
 * the normal hosts never named. precision = TP/(TP+FP), recall = TP/runs,
 * FPR = FP/(FP+TN). A run whose pipeline failed adds its positive (a miss)
 * and no negatives.
 *
 * Runs with several faults (truth.json "failures" with more than one:
 * concurrent faults on different machines, or a mixed fault on one) are
 * scored by score_multi: strict means every faulty machine named alone at
 * machine level with the class of one of its faults, after that fault's
 * onset, and no other diagnosis; the run's type is the faults' types joined
 * by "+". truth.json without "failures" (older runs) is read as before.
 *
 * Lenient (§8.1, the earlier definitions, kept for comparison): the
 * reported hosts are all hosts named by any diagnosis; TP: the faulty host
 * reported with the right class (any level); FP: every other reported host
 * plus the faulty host when reported only with a wrong class; TN: the
 * normal hosts not reported; rows per class of the injected failure, runs
 * without a failure listed apart. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	if (!b) {
		fclose(f);
		return NULL;
	}
	for (;;) {
		if (n + 4096 > cap) {
			cap *= 2;
			char *nb = realloc(b, cap);
			if (!nb) {
				free(b);
				fclose(f);
				return NULL;
			}
			b = nb;
		}
		size_t k = fread(b + n, 1, cap - n - 1, f);
		if (!k)
			break;
		n += k;
	}
	fclose(f);
	b[n] = '\0';
	return b;
}

static cJSON *load(const char *path)
{
	char *t = slurp(path);
	if (!t)
		return NULL;
	cJSON *o = cJSON_Parse(t);
	free(t);
	return o;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* the paper's Table 3 cases, in its order */
static const struct {
	const char *type, *label;
} cases[] = {
	{ "network_congestion", "Network congestion" },
	{ "cpu_contention", "CPU contention" },
	{ "nic_down", "NIC down" },
	{ "moe_expert_imbalance", "MoE expert imbalance" },
	{ "pcie_contention", "PCIe contention" },
	{ "gpu_throttling", "GPU throttling" },
	{ "gpu_execution_error", "GPU execution error" },
	{ "cuda_execution_error", "CUDA execution error" },
	{ "cpu_throttling", "CPU throttling" },
	{ "pcie_downgrade", "PCIe downgrade" },
	{ "nic_gpu_cross_numa", "NIC-GPU cross NUMA binding" },
	{ "memory_misalignment", "Memory alignment" },
};
#define NCASES (sizeof cases / sizeof cases[0])

enum { C_COMP_SLOW, C_COMP_STOP, C_COMM_SLOW, C_COMM_STOP, NCLS };
static const char *cls_key[NCLS] = { "comp-slow", "comp-stop", "comm-slow", "comm-stop" };
static const char *cls_label[NCLS] = { "computation fail-slow", "computation fail-stop",
				       "communication fail-slow", "communication fail-stop" };

/* a diagnosis's class: its "class" key, else its "class_name"; -1 for
 * anything else ("none") */
static int cls_of_diag(const cJSON *d)
{
	const char *k = str(d, "class"), *n = str(d, "class_name");
	for (int i = 0; i < NCLS; i++)
		if (!strcmp(k, cls_key[i]))
			return i;
	for (int i = 0; i < NCLS; i++)
		if (!strcmp(n, cls_label[i]))
			return i;
	return -1;
}

enum { SYM_MACHINE, SYM_GROUP, SYM_HALF, SYM_MISS };
static const char *sym_utf[] = { "●", "○", "◐", "✗" };
static const char sym_ch[] = { 'M', 'G', 'H', 'X' };

/* strict run verdicts */
enum { SV_STRICT, SV_MACHINE_FP, SV_GROUP, SV_WRONG, SV_MISSED, SV_CLEAN, SV_ALARM, SV_NOREPORT, NSV };
static const char *sv_key[NSV] = { "strict", "machine_with_false_positive", "group", "wrong", "missed",
				   "clean", "false_alarm", "pipeline_failed" };

struct loc_score {
	int sym;
	int tp, fp, tn;   /* lenient, host level */
	double latency_s; /* first correct diagnosis, -1 none */
	int gpu_right;    /* machine level with the faulty GPU among the suspects */
	char verdict[256];
	/* strict */
	int ndiag, nfp_diag, npre;
	int sv;
	int s_tp;                         /* the faulty host named alone at machine level, right class */
	int s_fp[NCLS], s_tn[NCLS];       /* one-vs-rest per class */
	int s_fp_all, s_tn_all;           /* class-agnostic */
	char why[512];                    /* the strict verdict in words */
};

#define MAXFAULTS 8
struct run {
	char name[128];
	char dir[1024];
	char type[64];
	char workload[32];
	double severity;
	int cls;          /* -1: no failure */
	char host[64];
	int gpu;
	int nhosts;
	int hung;
	uint64_t onset;   /* start_host_ns, 0 unknown */
	uint64_t tol_ns;  /* clock tolerance of the before-onset test */
	/* truth "failures" (concurrent and mixed faults): with more than one,
	 * score_multi scores the run; host, cls, onset above are the first's */
	int multi, nf; /* multi: truth lists several faults; nf: those that acted */
	struct fault {
		char host[64];
		int cls;
		uint64_t onset, end; /* start_host_ns, end_host_ns (0: none) */
	} f[MAXFAULTS];
	int ok;           /* analyzer.json present and a report */
	char perr[96];    /* why not */
	struct loc_score L[2];
};

static const char *loc_key[2] = { "pulse", "op-level" };
static const char *loc_label[2] = { "Pulse", "OP-level" };
static const char *loc_json[2] = { "pulse", "op_level" };

static void copy64(char *dst, const char *src)
{
	size_t l = strnlen(src, 63);
	memcpy(dst, src, l);
	dst[l] = '\0';
}

static int in_list(const cJSON *arr, const char *host, int *gpu_match, int gpu)
{
	const cJSON *x;
	int hit = 0;
	cJSON_ArrayForEach(x, arr)
	{
		if (!strcmp(str(x, "host"), host)) {
			hit = 1;
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(x, "gpu");
			if (gpu_match && cJSON_IsNumber(g) && (int)g->valuedouble == gpu)
				*gpu_match = 1;
		}
	}
	return hit;
}

static int add_host(char names[][64], int n, int max, const char *h)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], h))
			return n;
	if (n < max)
		copy64(names[n++], h);
	return n;
}

/* the distinct hosts a diagnosis names: suspects at machine level, members
 * at group level, both otherwise */
#define MAXNAMES 256
static int named_hosts(const cJSON *d, char names[][64])
{
	const char *lv = str(d, "level");
	int machine = !strcmp(lv, "machine"), group = !strcmp(lv, "group");
	int n = 0;
	const cJSON *x;
	if (!group)
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(d, "suspects"))
			n = add_host(names, n, MAXNAMES, str(x, "host"));
	if (!machine)
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(d, "members"))
			n = add_host(names, n, MAXNAMES, str(x, "host"));
	return n;
}

static uint64_t u64_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (cJSON_IsString(v))
		return strtoull(v->valuestring, NULL, 10);
	if (cJSON_IsNumber(v) && v->valuedouble > 0)
		return (uint64_t)v->valuedouble;
	return 0;
}

static void describe(char *buf, size_t n, const cJSON *d, char names[][64], int nn)
{
	if (nn > 1)
		snprintf(buf, n, "%s, %s level: %s +%d", str(d, "class"), str(d, "level"), names[0], nn - 1);
	else
		snprintf(buf, n, "%s, %s level: %s", str(d, "class"), str(d, "level"), nn ? names[0] : "no host");
}

/* what the scorer reads of one diagnosis */
struct dview {
	int cls, machine, nn;
	uint64_t rep_ns;
	char names[MAXNAMES][64];
};

static void dview_of(const cJSON *d, struct dview *v)
{
	v->cls = cls_of_diag(d);
	v->machine = !strcmp(str(d, "level"), "machine");
	v->nn = named_hosts(d, v->names);
	v->rep_ns = u64_of(d, "report_ns");
}

/* the run's first false positive, in words, for its verdict */
static void note_fp(char *first_fp, size_t n, const cJSON *d, char names[][64], int nn, int idx,
		    int pre)
{
	if (first_fp[0])
		return;
	char dsc[120];
	describe(dsc, sizeof dsc, d, names, nn);
	snprintf(first_fp, n, "diagnosis %d (%s)%s", idx, dsc, pre ? " before the onset" : "");
}

/* per-host bookkeeping of the strict counts */
struct hrec {
	char h[64];
	unsigned mask;     /* bit c: named with class c; bit NCLS: with no known class */
	int pre_right;     /* the faulty host named with its class before the onset */
};

static void score_loc(struct run *r, const cJSON *rep, int li)
{
	struct loc_score *s = &r->L[li];
	memset(s, 0, sizeof *s);
	s->sym = SYM_MISS;
	s->latency_s = -1;
	s->sv = r->cls < 0 ? SV_CLEAN : SV_MISSED;
	snprintf(s->verdict, sizeof s->verdict, "nothing reported");
	snprintf(s->why, sizeof s->why, "nothing reported");
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(rep, "diagnoses");
	static char reported[4096][64];
	static struct hrec hr[4096];
	int nrep = 0, nhr = 0, right_class_on_host = 0, wrong_class_on_host = 0;
	int first_machine_alone = 0, first_has = 0, first_pre = 0, first_cls = -2;
	char first_fp[200] = "", fdesc[160] = "";
	const cJSON *d;
	cJSON_ArrayForEach(d, all)
	{
		if (strcmp(str(d, "localizer"), loc_key[li]))
			continue;
		int idx = ++s->ndiag;
		int cls = cls_of_diag(d);
		int machine = !strcmp(str(d, "level"), "machine");
		char names[MAXNAMES][64];
		int nn = named_hosts(d, names);
		uint64_t rep_ns = u64_of(d, "report_ns");
		int pre = r->cls >= 0 && r->onset && rep_ns && rep_ns + r->tol_ns < r->onset;
		/* lenient: every host named, once */
		for (int i = 0; i < nn; i++)
			nrep = add_host(reported, nrep, 4096, names[i]);
		int gpu_hit = 0, has = 0;
		if (r->cls >= 0) {
			for (int i = 0; i < nn; i++)
				has |= !strcmp(names[i], r->host);
			if (machine)
				in_list(cJSON_GetObjectItemCaseSensitive(d, "suspects"), r->host, &gpu_hit, r->gpu);
		}
		int alone = has && nn == 1;
		if (has && cls == r->cls) {
			if (!right_class_on_host && r->onset && rep_ns >= r->onset)
				s->latency_s = (double)(rep_ns - r->onset) / 1e9;
			right_class_on_host = 1;
		} else if (has) {
			wrong_class_on_host = 1;
		}
		/* strict: per host and class */
		for (int i = 0; i < nn; i++) {
			int k = 0;
			while (k < nhr && strcmp(hr[k].h, names[i]))
				k++;
			if (k == nhr) {
				if (nhr == 4096)
					continue;
				memset(&hr[nhr], 0, sizeof hr[nhr]);
				copy64(hr[nhr++].h, names[i]);
			}
			hr[k].mask |= 1u << (cls >= 0 ? cls : NCLS);
			if (pre && r->cls >= 0 && cls == r->cls && !strcmp(names[i], r->host))
				hr[k].pre_right = 1;
		}
		int right = r->cls >= 0 && !pre && cls == r->cls && has;
		if (right && machine && alone)
			s->s_tp = 1;
		int fp = r->cls < 0 || pre || cls != r->cls || !alone;
		if (fp) {
			s->nfp_diag++;
			note_fp(first_fp, sizeof first_fp, d, names, nn, idx, pre);
		}
		s->npre += pre;
		if (idx == 1) {
			describe(fdesc, sizeof fdesc, d, names, nn);
			snprintf(s->verdict, sizeof s->verdict, "%s", fdesc);
			first_machine_alone = machine && alone && cls == r->cls;
			first_has = has && cls == r->cls;
			first_pre = pre;
			first_cls = cls;
			if (r->cls < 0)
				s->sym = SYM_MISS;
			else if (first_machine_alone) {
				s->sym = SYM_MACHINE;
				s->gpu_right = gpu_hit;
			} else if (first_has)
				s->sym = SYM_GROUP;
			else if ((r->cls == C_COMP_SLOW || r->cls == C_COMP_STOP) &&
				 (cls == C_COMM_SLOW || cls == C_COMM_STOP) && has)
				s->sym = SYM_HALF;
		}
	}
	/* strict verdict */
	if (r->cls < 0) {
		s->sv = s->ndiag ? SV_ALARM : SV_CLEAN;
		if (s->ndiag)
			snprintf(s->why, sizeof s->why, "%d diagnosis(es) in a run without a failure, first: %s",
				 s->ndiag, fdesc);
		else
			snprintf(s->why, sizeof s->why, "nothing reported");
	} else if (s->ndiag) {
		if (first_machine_alone && !first_pre)
			s->sv = s->nfp_diag ? SV_MACHINE_FP : SV_STRICT;
		else if (first_has && !first_pre)
			s->sv = SV_GROUP;
		else
			s->sv = SV_WRONG;
		const char *what = s->sv == SV_STRICT	    ? "machine level, the faulty host alone"
				   : s->sv == SV_MACHINE_FP ? "first right, then a false positive"
				   : s->sv == SV_GROUP	    ? "the faulty host among others"
				   : first_pre		    ? "first diagnosis before the onset"
				   : first_cls != r->cls    ? "wrong class"
							    : "wrong host";
		snprintf(s->why, sizeof s->why, "%s: first %s%s%s", what, fdesc,
			 s->nfp_diag && s->sv != SV_WRONG ? "; false positive: " : "",
			 s->nfp_diag && s->sv != SV_WRONG ? first_fp : "");
	}
	/* strict host-level counts */
	int normal_named = 0, faulty_extra = 0;
	int negcells[NCLS] = { 0 };
	for (int k = 0; k < nhr; k++) {
		int faulty = r->cls >= 0 && !strcmp(hr[k].h, r->host);
		for (int c = 0; c < NCLS; c++)
			if ((hr[k].mask & (1u << c)) && !(faulty && c == r->cls))
				negcells[c]++;
		if (faulty) {
			if (hr[k].pre_right)
				s->s_fp[r->cls]++; /* a false alarm on a host that was fine then */
			faulty_extra = (hr[k].mask & ~(1u << r->cls)) || hr[k].pre_right;
		} else {
			normal_named++;
		}
	}
	for (int c = 0; c < NCLS; c++) {
		s->s_fp[c] += negcells[c];
		int neg = r->nhosts - (c == r->cls);
		s->s_tn[c] = neg - negcells[c] > 0 ? neg - negcells[c] : 0;
	}
	int negall = r->nhosts - (r->cls >= 0);
	s->s_fp_all = normal_named + faulty_extra;
	s->s_tn_all = negall - normal_named > 0 ? negall - normal_named : 0;
	/* lenient */
	if (r->cls < 0) {
		s->fp = nrep;
		s->tn = r->nhosts - nrep;
		if (s->tn < 0)
			s->tn = 0;
		return;
	}
	s->tp = right_class_on_host;
	int others = 0;
	for (int k = 0; k < nrep; k++)
		others += strcmp(reported[k], r->host) != 0;
	s->fp = others + (wrong_class_on_host && !right_class_on_host);
	s->tn = r->nhosts - 1 - others;
	if (s->tn < 0)
		s->tn = 0;
}

/* a truth failure's class: computation/communication x fail-slow/stop (a
 * hung job's fail-slow is scored as a fail-stop) */
static int truth_cls(const struct run *r, const cJSON *f, int warn)
{
	const char *fc = str(f, "class"), *fm = str(f, "mode");
	int comp = !strcmp(fc, "computation");
	if (warn && !comp && strcmp(fc, "communication"))
		fprintf(stderr, "pulse-eval-score: %s: failure class \"%s\" unknown; scored as communication\n",
			r->name, fc);
	int stop = !strcmp(fm, "fail-stop") || (strcmp(fm, "fail-slow") && r->hung);
	if (warn && r->hung != stop)
		fprintf(stderr, "pulse-eval-score: %s: truth says %s but the job %s; scored as %s\n", r->name,
			fm[0] ? fm : "no mode", r->hung ? "hung" : "did not hang",
			stop ? "fail-stop" : "fail-slow");
	return comp ? (stop ? C_COMP_STOP : C_COMP_SLOW) : (stop ? C_COMM_STOP : C_COMM_SLOW);
}

/* A run with several faults (truth "failures", sim/README.md "Faults as
 * they happen"). A diagnosis is right when it names, at machine level, one
 * host alone that has a fault of the diagnosis's class, reported after
 * that fault's onset; any other diagnosis is a false positive. strict:
 * every faulty host named by a right diagnosis (a machine with a mixed
 * fault: once, either class) and no false positive; machine_with_false_
 * positive: all named, and a false positive; group: some of them named
 * (or named among other hosts with a right class); wrong / missed as for
 * one fault. Host-level counts: the positives are the faulty hosts (a mixed
 * machine once per class), the rest as for one fault. */
static void score_multi(struct run *r, const cJSON *rep, int li)
{
	struct loc_score *s = &r->L[li];
	char hosts[MAXFAULTS][64];
	int nh = 0, named[MAXFAULTS] = { 0 };
	for (int k = 0; k < r->nf; k++)
		nh = add_host(hosts, nh, MAXFAULTS, r->f[k].host);
	static char reported[4096][64];
	static struct hrec hr[4096];
	int nrep = 0, nhr = 0, first_right = 0, first_has = 0, first_half = 0;
	char first_fp[200] = "", fdesc[160] = "";
	const cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(rep, "diagnoses"))
	{
		if (strcmp(str(d, "localizer"), loc_key[li]))
			continue;
		int idx = ++s->ndiag;
		static struct dview v;
		dview_of(d, &v);
		int cls = v.cls, machine = v.machine, nn = v.nn;
		char(*names)[64] = v.names;
		uint64_t rep_ns = v.rep_ns;
		int has_right = 0, has_other = 0, pre = 0, half = 0;
		for (int i = 0; i < nn; i++) {
			nrep = add_host(reported, nrep, 4096, names[i]);
			int ok = 0, pre_here = 0;
			for (int k = 0; k < r->nf; k++) {
				if (strcmp(names[i], r->f[k].host))
					continue;
				if (cls == r->f[k].cls) {
					if (r->f[k].onset && rep_ns && rep_ns + r->tol_ns < r->f[k].onset)
						pre = pre_here = 1;
					else
						ok = 1;
				} else if ((r->f[k].cls == C_COMP_SLOW || r->f[k].cls == C_COMP_STOP) &&
					   (cls == C_COMM_SLOW || cls == C_COMM_STOP)) {
					half = 1;
				}
			}
			has_right |= ok;
			has_other |= !ok;
			int k = 0;
			while (k < nhr && strcmp(hr[k].h, names[i]))
				k++;
			if (k == nhr && nhr < 4096) {
				memset(&hr[nhr], 0, sizeof hr[nhr]);
				copy64(hr[nhr++].h, names[i]);
			}
			if (k < nhr) {
				hr[k].mask |= 1u << (cls >= 0 ? cls : NCLS);
				hr[k].pre_right |= pre_here && !ok;
			}
		}
		int right = machine && nn == 1 && has_right;
		if (right) {
			for (int h = 0; h < nh; h++)
				if (!strcmp(hosts[h], names[0]) && !named[h]) {
					named[h] = 1;
					for (int k = 0; k < r->nf; k++)
						if (!strcmp(r->f[k].host, names[0]) && r->f[k].cls == cls && r->f[k].onset &&
						    rep_ns >= r->f[k].onset &&
						    (s->latency_s < 0 || (double)(rep_ns - r->f[k].onset) / 1e9 < s->latency_s))
							s->latency_s = (double)(rep_ns - r->f[k].onset) / 1e9;
				}
		} else {
			s->nfp_diag++;
			note_fp(first_fp, sizeof first_fp, d, names, nn, idx, pre);
		}
		s->npre += pre;
		if (idx == 1) {
			describe(fdesc, sizeof fdesc, d, names, nn);
			snprintf(s->verdict, sizeof s->verdict, "%s", fdesc);
			first_right = right;
			first_has = has_right;
			first_half = half && !has_right;
			s->sym = right ? SYM_MACHINE : has_right ? SYM_GROUP : first_half ? SYM_HALF : SYM_MISS;
		}
		(void)has_other;
	}
	int nnamed = 0;
	for (int h = 0; h < nh; h++)
		nnamed += named[h];
	if (!s->ndiag) {
		s->sv = SV_MISSED;
	} else if (nnamed == nh) {
		s->sv = s->nfp_diag ? SV_MACHINE_FP : SV_STRICT;
	} else if (nnamed || first_has) {
		s->sv = SV_GROUP;
	} else {
		s->sv = SV_WRONG;
	}
	if (s->ndiag)
		snprintf(s->why, sizeof s->why, "%d fault(s) on %d host(s), %d named alone at machine level; first %s%s%s",
			 r->nf, nh, nnamed, fdesc, s->nfp_diag ? "; false positive: " : "",
			 s->nfp_diag ? first_fp : "");
	s->s_tp = nnamed == nh;
	/* host-level counts */
	int normal_named = 0, faulty_extra = 0, negcells[NCLS] = { 0 }, pos[NCLS] = { 0 };
	for (int k = 0; k < r->nf; k++) {
		int dup = 0;
		for (int j = 0; j < k; j++)
			dup |= !strcmp(r->f[j].host, r->f[k].host) && r->f[j].cls == r->f[k].cls;
		pos[r->f[k].cls] += !dup;
	}
	for (int k = 0; k < nhr; k++) {
		unsigned own = 0;
		for (int j = 0; j < r->nf; j++)
			if (!strcmp(hr[k].h, r->f[j].host))
				own |= 1u << r->f[j].cls;
		for (int c = 0; c < NCLS; c++)
			if ((hr[k].mask & (1u << c)) && !(own & (1u << c)))
				negcells[c]++;
		if (!own)
			normal_named++;
		else if ((hr[k].mask & ~own) || hr[k].pre_right)
			faulty_extra++; /* a wrong class, or named before its fault began */
		if (own && hr[k].pre_right)
			for (int c = 0; c < NCLS; c++)
				if (hr[k].mask & own & (1u << c))
					negcells[c]++;
	}
	for (int c = 0; c < NCLS; c++) {
		s->s_fp[c] = negcells[c];
		int neg = r->nhosts - pos[c];
		s->s_tn[c] = neg - negcells[c] > 0 ? neg - negcells[c] : 0;
	}
	s->s_fp_all = normal_named + faulty_extra;
	s->s_tn_all = r->nhosts - nh - normal_named > 0 ? r->nhosts - nh - normal_named : 0;
	/* lenient */
	int others = 0;
	for (int k = 0; k < nrep; k++) {
		int f = 0;
		for (int h = 0; h < nh; h++)
			f |= !strcmp(reported[k], hosts[h]);
		others += !f;
	}
	s->tp = nnamed > 0 || first_has;
	s->fp = others;
	s->tn = r->nhosts - nh - others > 0 ? r->nhosts - nh - others : 0;
	(void)first_right;
}

static int load_run(struct run *r, const char *dir)
{
	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	char path[1200];
	snprintf(path, sizeof path, "%s/truth.json", dir);
	cJSON *t = load(path);
	if (!t) {
		fprintf(stderr, "pulse-eval-score: %s: missing or not JSON\n", path);
		return -1;
	}
	snprintf(r->name, sizeof r->name, "%s", str(t, "scenario"));
	if (!r->name[0]) {
		const char *b = strrchr(dir, '/');
		snprintf(r->name, sizeof r->name, "%s", b && b[1] ? b + 1 : dir);
	}
	snprintf(r->workload, sizeof r->workload, "%s", str(t, "workload"));
	r->hung = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "hung"));
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "failure");
	r->cls = -1;
	r->gpu = -1;
	double off_faulty = 0, off_max = 0;
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(t, "hosts");
	r->nhosts = cJSON_IsArray(hosts) ? cJSON_GetArraySize(hosts) : 0;
	if (cJSON_IsObject(f)) {
		snprintf(r->type, sizeof r->type, "%s", str(f, "type"));
		snprintf(r->host, sizeof r->host, "%s", str(f, "host"));
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(f, "gpu");
		r->gpu = cJSON_IsNumber(g) ? (int)g->valuedouble : -1;
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(f, "severity");
		r->severity = cJSON_IsNumber(sv) ? sv->valuedouble : 0;
		r->cls = truth_cls(r, f, 1);
		r->onset = u64_of(f, "start_host_ns");
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(f, "activated");
		if (cJSON_IsFalse(act))
			fprintf(stderr, "pulse-eval-score: %s: the failure never activated in the simulation\n",
				r->name);
		const cJSON *h;
		cJSON_ArrayForEach(h, hosts)
		{
			const cJSON *o = cJSON_GetObjectItemCaseSensitive(h, "clock_offset_ns");
			if (cJSON_IsNumber(o) && !strcmp(str(h, "name"), r->host))
				off_faulty = o->valuedouble;
		}
		cJSON_ArrayForEach(h, hosts)
		{
			const cJSON *o = cJSON_GetObjectItemCaseSensitive(h, "clock_offset_ns");
			if (cJSON_IsNumber(o) && fabs(o->valuedouble - off_faulty) > off_max)
				off_max = fabs(o->valuedouble - off_faulty);
		}
		/* several faults: every one of them (sim/README.md "Faults as they happen") */
		const cJSON *fs = cJSON_GetObjectItemCaseSensitive(t, "failures"), *x;
		if (cJSON_IsArray(fs) && cJSON_GetArraySize(fs) > 1) {
			r->type[0] = '\0';
			r->multi = 1;
			/* a fault that never acted (a fail-stop hung the job before its
			 * onset) is not to be found; unless none acted */
			int nact = 0;
			cJSON_ArrayForEach(x, fs)
				nact += !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(x, "activated"));
			cJSON_ArrayForEach(x, fs)
			{
				if (r->nf == MAXFAULTS)
					break;
				size_t l = strlen(r->type);
				snprintf(r->type + l, sizeof r->type - l, "%s%s", l ? "+" : "", str(x, "type"));
				if (nact && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(x, "activated")))
					continue;
				struct fault *fk = &r->f[r->nf++];
				copy64(fk->host, str(x, "host"));
				fk->cls = truth_cls(r, x, 0);
				fk->onset = u64_of(x, "start_host_ns");
				fk->end = u64_of(x, "end_host_ns");
				cJSON_ArrayForEach(h, hosts)
				{
					const cJSON *o = cJSON_GetObjectItemCaseSensitive(h, "clock_offset_ns");
					if (cJSON_IsNumber(o) && !strcmp(str(h, "name"), fk->host))
						off_faulty = o->valuedouble;
				}
			}
			/* the clock tolerance: the largest offset between any two hosts */
			double lo = 0, hi = 0;
			int first = 1;
			cJSON_ArrayForEach(h, hosts)
			{
				const cJSON *o = cJSON_GetObjectItemCaseSensitive(h, "clock_offset_ns");
				if (!cJSON_IsNumber(o))
					continue;
				if (first || o->valuedouble < lo)
					lo = o->valuedouble;
				if (first || o->valuedouble > hi)
					hi = o->valuedouble;
				first = 0;
			}
			off_max = hi - lo;
		}
	} else {
		snprintf(r->type, sizeof r->type, "none");
	}
	/* report_ns is the analyzer's data time, on the hosts' clocks */
	r->tol_ns = (uint64_t)off_max + 10000000ull;
	cJSON_Delete(t);
	snprintf(path, sizeof path, "%s/analyzer.json", dir);
	cJSON *rep = NULL;
	char *text = slurp(path);
	if (!text)
		snprintf(r->perr, sizeof r->perr, "no analyzer.json");
	else if (!(rep = cJSON_Parse(text)))
		snprintf(r->perr, sizeof r->perr, "analyzer.json is not JSON");
	else if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(rep, "diagnoses")))
		snprintf(r->perr, sizeof r->perr, "analyzer.json has no \"diagnoses\" array");
	free(text);
	r->ok = !r->perr[0];
	for (int li = 0; li < 2; li++) {
		if (r->ok && r->multi) {
			memset(&r->L[li], 0, sizeof r->L[li]);
			r->L[li].latency_s = -1;
			r->L[li].sym = SYM_MISS;
			snprintf(r->L[li].verdict, sizeof r->L[li].verdict, "nothing reported");
			snprintf(r->L[li].why, sizeof r->L[li].why, "nothing reported");
			score_multi(r, rep, li);
		} else if (r->ok)
			score_loc(r, rep, li);
		else {
			memset(&r->L[li], 0, sizeof r->L[li]);
			r->L[li].sym = SYM_MISS;
			r->L[li].latency_s = -1;
			r->L[li].sv = r->cls >= 0 ? SV_MISSED : SV_NOREPORT;
			snprintf(r->L[li].verdict, sizeof r->L[li].verdict, "pipeline failed (%s)", r->perr);
			snprintf(r->L[li].why, sizeof r->L[li].why, "pipeline failed (%s)", r->perr);
			if (r->cls >= 0)
				r->L[li].tn = r->nhosts - 1;
		}
	}
	cJSON_Delete(rep);
	return 0;
}

static int set_epoch(const char *in, const char *out, const char *ns)
{
	cJSON *o = load(in);
	if (!o) {
		fprintf(stderr, "pulse-eval-score: %s: missing or not JSON\n", in);
		return 1;
	}
	char *end;
	double v = strtod(ns, &end);
	if (*end || !(v >= 1000)) {
		fprintf(stderr, "pulse-eval-score: --set-epoch: bad epoch \"%s\"\n", ns);
		cJSON_Delete(o);
		return 2;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, "epoch_ns");
	cJSON_AddNumberToObject(o, "epoch_ns", v);
	const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
	if (cJSON_IsString(nm)) {
		char name[256];
		snprintf(name, sizeof name, "%s-epoch%.0fus", nm->valuestring, v / 1000);
		cJSON_DeleteItemFromObjectCaseSensitive(o, "name");
		cJSON_AddStringToObject(o, "name", name);
	}
	char *text = cJSON_Print(o);
	cJSON_Delete(o);
	FILE *f = fopen(out, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		fprintf(stderr, "pulse-eval-score: %s: %s\n", out, strerror(errno));
		free(text);
		return 1;
	}
	free(text);
	return 0;
}

static int sym_from_ch(char c)
{
	for (int i = 0; i < 4; i++)
		if (sym_ch[i] == c)
			return i;
	return -1;
}

/* --ablation RUN...: the Pulse evidence per epoch length */
static int ablation(int argc, char **argv)
{
	printf("\n%-44s %-10s %-34s %-14s %-14s %s\n", "run", "epoch", "Pulse verdict", "culprit",
	       "group median", "ratio");
	for (int i = 0; i < argc; i++) {
		struct run r;
		if (load_run(&r, argv[i]))
			continue;
		char path[1200];
		snprintf(path, sizeof path, "%s/analyzer.json", argv[i]);
		cJSON *rep = load(path);
		const cJSON *p = rep ? cJSON_GetObjectItemCaseSensitive(rep, "pulse") : NULL;
		const cJSON *ev = cJSON_IsObject(p) ? cJSON_GetObjectItemCaseSensitive(p, "evidence") : NULL;
		const char *ep = strstr(r.name, "-epoch");
		char epoch[32];
		snprintf(epoch, sizeof epoch, "%s", ep ? ep + 6 : "?");
		if (!ev) {
			printf("%-44s %-10s %-34s\n", r.name, epoch, r.ok ? "nothing reported" : "pipeline failed");
			cJSON_Delete(rep);
			continue;
		}
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, "value");
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(ev, "median");
		double vv = cJSON_IsNumber(v) ? v->valuedouble : 0, mm = cJSON_IsNumber(m) ? m->valuedouble : 0;
		const char *metric = str(ev, "metric");
		int ns = strstr(metric, "_ns") != NULL;
		char a[40], b[40], verdict[80];
		snprintf(a, sizeof a, ns ? "%.2f ms" : "%.3g", ns ? vv / 1e6 : vv);
		snprintf(b, sizeof b, ns ? "%.2f ms" : "%.3g", ns ? mm / 1e6 : mm);
		snprintf(verdict, sizeof verdict, "%s %s %s", sym_utf[r.L[0].sym], str(p, "class"), metric);
		printf("%-44s %-10s %-34s %-14s %-14s %.2f\n", r.name, epoch, verdict, a, b, mm > 0 ? vv / mm : 0);
		cJSON_Delete(rep);
	}
	return 0;
}

/* ---- rates with 95% Wilson score intervals ---- */
static void wilson(int k, int n, double *lo, double *hi)
{
	if (n <= 0) {
		*lo = *hi = NAN;
		return;
	}
	const double z = 1.959963984540054, z2 = z * z;
	double p = (double)k / n, den = 1 + z2 / n;
	double c = (p + z2 / (2.0 * n)) / den;
	double h = z * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / den;
	*lo = c - h < 0 ? 0 : c - h;
	*hi = c + h > 1 ? 1 : c + h;
}

/* "72/101  71.3% [61.8-79.2]" */
static const char *fmt_kn(char *buf, size_t sz, int k, int n)
{
	if (n <= 0) {
		snprintf(buf, sz, "%d/%d", k, n);
		return buf;
	}
	double lo, hi;
	char kn[32];
	wilson(k, n, &lo, &hi);
	snprintf(kn, sizeof kn, "%d/%d", k, n);
	snprintf(buf, sz, "%-7s %5.1f%% [%.1f-%.1f]", kn, 100.0 * k / n, 100 * lo, 100 * hi);
	return buf;
}

static void json_num(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

static void json_kn(cJSON *parent, const char *key, int k, int n)
{
	cJSON *o = cJSON_AddObjectToObject(parent, key);
	double lo, hi;
	wilson(k, n, &lo, &hi);
	cJSON_AddNumberToObject(o, "count", k);
	cJSON_AddNumberToObject(o, "runs", n);
	json_num(o, "rate", n > 0 ? (double)k / n : NAN);
	json_num(o, "ci95_low", lo);
	json_num(o, "ci95_high", hi);
}

static double ratio(int a, int b)
{
	return b > 0 ? (double)a / b : NAN;
}

static const char *pct(char *buf, size_t sz, double v)
{
	if (isnan(v))
		snprintf(buf, sz, "-");
	else
		snprintf(buf, sz, "%.1f%%", 100 * v);
	return buf;
}

/* strict aggregates of one localizer */
struct strict_agg {
	int nfail, nnf_ok, nnf_fail;
	int sv[NSV];
	int cls_runs[NCLS], cls_strict[NCLS];
	int tp[NCLS], fp[NCLS], tn[NCLS];
	int tp_all, fp_all, tn_all;
};

static void aggregate(const struct run *runs, int n, int li, struct strict_agg *a)
{
	memset(a, 0, sizeof *a);
	for (int k = 0; k < n; k++) {
		const struct run *r = &runs[k];
		const struct loc_score *s = &r->L[li];
		a->sv[s->sv]++;
		if (r->cls >= 0) {
			a->nfail++;
			a->cls_runs[r->cls]++;
			a->cls_strict[r->cls] += s->sv == SV_STRICT;
			a->tp[r->cls] += s->s_tp;
			a->tp_all += s->s_tp;
		} else if (r->ok) {
			a->nnf_ok++;
		} else {
			a->nnf_fail++;
		}
		for (int c = 0; c < NCLS; c++) {
			a->fp[c] += s->s_fp[c];
			a->tn[c] += s->s_tn[c];
		}
		a->fp_all += s->s_fp_all;
		a->tn_all += s->s_tn_all;
	}
}

static void summary_line(char *buf, size_t sz, const struct strict_agg *a, int npipe, int unscored)
{
	double lo, hi;
	wilson(a->sv[SV_STRICT], a->nfail, &lo, &hi);
	int l = snprintf(buf, sz, "%d/%d failure runs at machine level", a->sv[SV_STRICT], a->nfail);
	if (a->nfail > 0)
		l += snprintf(buf + l, sz - (size_t)l, " (%.1f%%, 95%% CI %.1f-%.1f)",
			      100.0 * a->sv[SV_STRICT] / a->nfail, 100 * lo, 100 * hi);
	l += snprintf(buf + l, sz - (size_t)l, ", %d/%d no-failure runs with a false alarm", a->sv[SV_ALARM],
		      a->nnf_ok);
	if (npipe)
		l += snprintf(buf + l, sz - (size_t)l, ", %d pipeline failure(s) (failure runs: counted as missed)",
			      npipe);
	if (unscored)
		snprintf(buf + l, sz - (size_t)l, ", %d run(s) not scored (no truth.json)", unscored);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--set-epoch"))
		return set_epoch(argv[2], argv[3], argv[4]);
	if (argc >= 2 && !strcmp(argv[1], "--ablation"))
		return ablation(argc - 2, argv + 2);
	const char *out = NULL, *expect = NULL;
	int i = 1;
	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--expect") && i + 1 < argc)
			expect = argv[++i];
		else {
			fprintf(stderr, "usage: pulse-eval-score [--out REPORT.json] [--expect FILE] RUN...\n"
					"       pulse-eval-score --set-epoch IN.json OUT.json NS\n");
			return 2;
		}
	}
	int nruns = argc - i;
	if (nruns <= 0) {
		fprintf(stderr, "pulse-eval-score: no runs given\n");
		return 2;
	}
	struct run *runs = calloc((size_t)nruns, sizeof *runs);
	const char **unscored = calloc((size_t)nruns, sizeof *unscored);
	if (!runs || !unscored) {
		fprintf(stderr, "pulse-eval-score: out of memory\n");
		return 2;
	}
	int n = 0, nunscored = 0;
	for (; i < argc; i++) {
		if (!load_run(&runs[n], argv[i]))
			n++;
		else
			unscored[nunscored++] = argv[i];
	}

	/* ---- Table 3 ---- */
	printf("\nTable 3. Anomaly localization per case (● machine level: the faulty host alone, ○ group level "
	       "or with other hosts,\n◐ computation misjudged as communication, ✗ missed or wrong); one symbol "
	       "per run, from its first diagnosis\n\n");
	printf("%-28s %-6s %-26s %-26s\n", "Case", "runs", "Pulse", "OP-level (SOTA)");
	int casemach[2] = { 0, 0 }, casecount = 0;
	for (size_t c = 0; c < NCASES + 1; c++) {
		const char *label = c < NCASES ? cases[c].label : "Other injected failures";
		char col[2][512];
		int cnt = 0, mach[2] = { 0, 0 };
		col[0][0] = col[1][0] = '\0';
		for (int k = 0; k < n; k++) {
			struct run *r = &runs[k];
			int mine;
			if (c < NCASES)
				mine = !strcmp(r->type, cases[c].type);
			else {
				mine = r->cls >= 0;
				for (size_t q = 0; q < NCASES; q++)
					mine &= strcmp(r->type, cases[q].type) != 0;
			}
			if (!mine)
				continue;
			cnt++;
			for (int li = 0; li < 2; li++) {
				if (strlen(col[li]) + 8 < sizeof col[li])
					strcat(col[li], sym_utf[r->L[li].sym]);
				mach[li] += r->L[li].sym == SYM_MACHINE;
			}
		}
		if (!cnt) {
			if (c < NCASES)
				printf("%-28s %-6s %-26s %-26s\n", label, "0", "(no scenario)", "(no scenario)");
			continue;
		}
		if (c < NCASES) {
			casecount++;
			for (int li = 0; li < 2; li++)
				casemach[li] += mach[li] * 2 > cnt; /* the case is machine-level when most runs are */
		}
		char a[600], b[600];
		snprintf(a, sizeof a, "%s %d/%d", col[0], mach[0], cnt);
		snprintf(b, sizeof b, "%s %d/%d", col[1], mach[1], cnt);
		printf("%-28s %-6d %s\n%-35s %s\n", label, cnt, a, "", b);
	}
	printf("\nCases localized at machine level (most runs ●): Pulse %d of %d, OP-level %d of %d "
	       "(paper: Pulse 10 of 12, SOTA 4 of 12)\n",
	       casemach[0], casecount, casemach[1], casecount);

	/* ---- per-class precision / recall / FPR, lenient ---- */
	cJSON *root = cJSON_CreateObject();
	cJSON *jcls = cJSON_AddObjectToObject(root, "classes");
	printf("\nPrecision, recall and false-positive rate per anomaly class, lenient (§8.1 definitions; nodes "
	       "are hosts;\nthe faulty host counts at any level; rows per injected class, runs without a "
	       "failure apart)\n\n");
	printf("%-26s %-5s | %-9s %-7s %-7s | %-9s %-7s %-7s\n", "class", "runs", "Pulse P", "R", "FPR",
	       "OP-lvl P", "R", "FPR");
	for (int c = 0; c < NCLS; c++) {
		int runsn = 0, tp[2] = { 0, 0 }, fp[2] = { 0, 0 }, tn[2] = { 0, 0 };
		for (int k = 0; k < n; k++) {
			if (runs[k].cls != c)
				continue;
			runsn++;
			for (int li = 0; li < 2; li++) {
				tp[li] += runs[k].L[li].tp;
				fp[li] += runs[k].L[li].fp;
				tn[li] += runs[k].L[li].tn;
			}
		}
		cJSON *jc = cJSON_AddObjectToObject(jcls, cls_key[c]);
		cJSON_AddNumberToObject(jc, "runs", runsn);
		double P[2], R[2], F[2];
		for (int li = 0; li < 2; li++) {
			P[li] = ratio(tp[li], tp[li] + fp[li]);
			R[li] = ratio(tp[li], runsn);
			F[li] = ratio(fp[li], fp[li] + tn[li]);
			cJSON *jl = cJSON_AddObjectToObject(jc, loc_json[li]);
			cJSON_AddNumberToObject(jl, "tp", tp[li]);
			cJSON_AddNumberToObject(jl, "fp", fp[li]);
			cJSON_AddNumberToObject(jl, "tn", tn[li]);
			json_num(jl, "precision", P[li]);
			json_num(jl, "recall", R[li]);
			json_num(jl, "fpr", F[li]);
		}
		printf("%-26s %-5d | %7.1f%% %6.1f%% %6.1f%% | %7.1f%% %6.1f%% %6.1f%%\n", cls_label[c], runsn,
		       100 * P[0], 100 * R[0], 100 * F[0], 100 * P[1], 100 * R[1], 100 * F[1]);
	}
	/* no-failure runs */
	int nf = 0, fa[2] = { 0, 0 };
	for (int k = 0; k < n; k++)
		if (runs[k].cls < 0) {
			nf++;
			for (int li = 0; li < 2; li++)
				fa[li] += runs[k].L[li].fp;
		}
	printf("\nRuns without a failure: %d; hosts falsely reported: Pulse %d, OP-level %d\n", nf, fa[0], fa[1]);
	cJSON *jnf = cJSON_AddObjectToObject(root, "no_failure");
	cJSON_AddNumberToObject(jnf, "runs", nf);
	cJSON_AddNumberToObject(jnf, "pulse_false_alarms", fa[0]);
	cJSON_AddNumberToObject(jnf, "op_level_false_alarms", fa[1]);

	/* ---- strict ---- */
	struct strict_agg A[2];
	for (int li = 0; li < 2; li++)
		aggregate(runs, n, li, &A[li]);
	int npipe = 0;
	for (int k = 0; k < n; k++)
		npipe += !runs[k].ok;
	cJSON *js = cJSON_AddObjectToObject(root, "strict");
	cJSON_AddStringToObject(js, "definition",
				"every diagnosis scored; a diagnosis naming a host other than the faulty one, "
				"a wrong class, or reported before the onset is a false positive; strict success: "
				"the first diagnosis is machine level naming the faulty host alone with the right "
				"class and no diagnosis of the run is a false positive; 95% Wilson intervals "
				"(tools/eval/score.c)");
	cJSON_AddNumberToObject(js, "failure_runs", A[0].nfail);
	cJSON_AddNumberToObject(js, "no_failure_runs", A[0].nnf_ok + A[0].nnf_fail);
	printf("\nStrict run-level verdicts: every diagnosis of a run is scored; a success names the faulty host "
	       "alone, at machine\nlevel, with the right class, first, and nothing else in the run names another "
	       "host or a wrong class or\ncomes before the onset (count/runs, rate, 95%% Wilson interval)\n\n");
	printf("%-44s %-27s %-27s\n", "", "Pulse", "OP-level");
	{
		char a[64], b[64];
		printf("%-44s %-27s %-27s\n", "failure runs, strict machine-level success",
		       fmt_kn(a, sizeof a, A[0].sv[SV_STRICT], A[0].nfail),
		       fmt_kn(b, sizeof b, A[1].sv[SV_STRICT], A[1].nfail));
		for (int c = 0; c < NCLS; c++) {
			char lbl[64];
			snprintf(lbl, sizeof lbl, "  %s", cls_label[c]);
			printf("%-44s %-27s %-27s\n", lbl, fmt_kn(a, sizeof a, A[0].cls_strict[c], A[0].cls_runs[c]),
			       fmt_kn(b, sizeof b, A[1].cls_strict[c], A[1].cls_runs[c]));
		}
		static const struct {
			int sv;
			const char *label;
		} rows[] = {
			{ SV_MACHINE_FP, "failure runs, first right, another one wrong" },
			{ SV_GROUP, "failure runs, group level with the host" },
			{ SV_WRONG, "failure runs, wrong host or class first" },
			{ SV_MISSED, "failure runs, missed (or pipeline failed)" },
		};
		for (size_t q = 0; q < sizeof rows / sizeof rows[0]; q++)
			printf("%-44s %-27s %-27s\n", rows[q].label,
			       fmt_kn(a, sizeof a, A[0].sv[rows[q].sv], A[0].nfail),
			       fmt_kn(b, sizeof b, A[1].sv[rows[q].sv], A[1].nfail));
		printf("%-44s %-27s %-27s\n", "no-failure runs with a false alarm",
		       fmt_kn(a, sizeof a, A[0].sv[SV_ALARM], A[0].nnf_ok),
		       fmt_kn(b, sizeof b, A[1].sv[SV_ALARM], A[1].nnf_ok));
		if (A[0].nnf_fail)
			printf("  (%d no-failure run(s) not counted: the pipeline failed)\n", A[0].nnf_fail);
	}

	printf("\nStrict precision, recall and FPR per class (one-vs-rest over run x host cells: TP the faulty "
	       "host named alone\nat machine level with its class; FP any other host, or the faulty host with "
	       "another class or before\nthe onset, named with that class, in any run, runs without a failure "
	       "included; counts TP/FP/TN)\n\n");
	printf("%-26s %-5s | %-8s %-7s %-7s %-13s | %-8s %-7s %-7s %-13s\n", "class", "runs", "Pulse P", "R", "FPR",
	       "TP/FP/TN", "OP-lvl P", "R", "FPR", "TP/FP/TN");
	cJSON *jsl[2];
	for (int li = 0; li < 2; li++)
		jsl[li] = cJSON_AddObjectToObject(js, loc_json[li]);
	for (int c = 0; c <= NCLS; c++) {
		char cells[2][160];
		int runsn = c < NCLS ? A[0].cls_runs[c] : A[0].nfail;
		for (int li = 0; li < 2; li++) {
			const struct strict_agg *a = &A[li];
			int tp = c < NCLS ? a->tp[c] : a->tp_all, fp = c < NCLS ? a->fp[c] : a->fp_all,
			    tn = c < NCLS ? a->tn[c] : a->tn_all;
			double P = ratio(tp, tp + fp), R = ratio(tp, runsn), F = ratio(fp, fp + tn);
			char p1[16], p2[16], p3[16], cnt[48];
			snprintf(cnt, sizeof cnt, "%d/%d/%d", tp, fp, tn);
			snprintf(cells[li], sizeof cells[li], "%-8s %-7s %-7s %-13s", pct(p1, sizeof p1, P),
				 pct(p2, sizeof p2, R), pct(p3, sizeof p3, F), cnt);
			cJSON *jc = cJSON_GetObjectItemCaseSensitive(jsl[li], "classes");
			if (!jc)
				jc = cJSON_AddObjectToObject(jsl[li], "classes");
			cJSON *o = cJSON_AddObjectToObject(jc, c < NCLS ? cls_key[c] : "overall");
			cJSON_AddNumberToObject(o, "runs", runsn);
			cJSON_AddNumberToObject(o, "tp", tp);
			cJSON_AddNumberToObject(o, "fp", fp);
			cJSON_AddNumberToObject(o, "tn", tn);
			json_num(o, "precision", P);
			json_num(o, "recall", R);
			json_num(o, "fpr", F);
		}
		printf("%-26s %-5d | %s | %s\n", c < NCLS ? cls_label[c] : "all classes (host level)", runsn,
		       cells[0], cells[1]);
	}

	/* run-level counts into the JSON */
	for (int li = 0; li < 2; li++) {
		const struct strict_agg *a = &A[li];
		cJSON *jr = cJSON_AddObjectToObject(jsl[li], "runs");
		json_kn(jr, "strict", a->sv[SV_STRICT], a->nfail);
		for (int c = 0; c < NCLS; c++)
			json_kn(jr, cls_key[c], a->cls_strict[c], a->cls_runs[c]);
		json_kn(jr, sv_key[SV_MACHINE_FP], a->sv[SV_MACHINE_FP], a->nfail);
		json_kn(jr, sv_key[SV_GROUP], a->sv[SV_GROUP], a->nfail);
		json_kn(jr, sv_key[SV_WRONG], a->sv[SV_WRONG], a->nfail);
		json_kn(jr, sv_key[SV_MISSED], a->sv[SV_MISSED], a->nfail);
		json_kn(jsl[li], "no_failure_with_false_alarm", a->sv[SV_ALARM], a->nnf_ok);
		cJSON_AddNumberToObject(jsl[li], "no_failure_pipeline_failed", a->nnf_fail);
	}

	/* per failure type */
	printf("\nStrict machine-level successes per failure type (count/runs, rate, 95%% Wilson interval)\n\n");
	printf("%-28s %-5s %-27s %-27s\n", "failure type", "runs", "Pulse", "OP-level");
	{
		const char **types = calloc((size_t)n + 1, sizeof *types);
		int nt = 0;
		for (int k = 0; k < n; k++) {
			if (runs[k].cls < 0)
				continue;
			int seen = 0;
			for (int q = 0; q < nt; q++)
				seen |= !strcmp(types[q], runs[k].type);
			if (!seen)
				types[nt++] = runs[k].type;
		}
		for (int x = 1; x < nt; x++) /* by name */
			for (int y = x; y > 0 && strcmp(types[y - 1], types[y]) > 0; y--) {
				const char *t = types[y];
				types[y] = types[y - 1];
				types[y - 1] = t;
			}
		cJSON *jt[2];
		for (int li = 0; li < 2; li++)
			jt[li] = cJSON_AddArrayToObject(jsl[li], "by_type");
		for (int q = 0; q < nt; q++) {
			int cnt = 0, ok[2] = { 0, 0 };
			for (int k = 0; k < n; k++) {
				if (runs[k].cls < 0 || strcmp(runs[k].type, types[q]))
					continue;
				cnt++;
				for (int li = 0; li < 2; li++)
					ok[li] += runs[k].L[li].sv == SV_STRICT;
			}
			char a[64], b[64];
			printf("%-28s %-5d %-27s %-27s\n", types[q], cnt, fmt_kn(a, sizeof a, ok[0], cnt),
			       fmt_kn(b, sizeof b, ok[1], cnt));
			for (int li = 0; li < 2; li++) {
				cJSON *o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "type", types[q]);
				json_kn(o, "strict", ok[li], cnt);
				cJSON_AddItemToArray(jt[li], o);
			}
		}
		free(types);
	}

	/* runs that are not a strict success for Pulse */
	int shown = 0;
	for (int k = 0; k < n; k++) {
		const struct loc_score *s = &runs[k].L[0];
		if (s->sv == SV_STRICT || s->sv == SV_CLEAN)
			continue;
		if (!shown++)
			printf("\nPulse runs that are not a strict success:\n");
		/* the directory's name when it is not the scenario's (seeds of one scenario) */
		const char *dn = runs[k].dir + strlen(runs[k].dir);
		while (dn > runs[k].dir && dn[-1] == '/')
			dn--;
		const char *db = dn;
		while (db > runs[k].dir && db[-1] != '/')
			db--;
		char label[256];
		if ((size_t)(dn - db) == strlen(runs[k].name) && !strncmp(db, runs[k].name, (size_t)(dn - db)))
			snprintf(label, sizeof label, "%s", runs[k].name);
		else
			snprintf(label, sizeof label, "%s (%.*s)", runs[k].name, (int)(dn - db), db);
		printf("  %-40s %-28s %s\n", label, sv_key[s->sv], s->why);
	}

	/* pipeline failures and runs not scored */
	cJSON *jpf = cJSON_AddArrayToObject(js, "pipeline_failures");
	if (npipe)
		printf("\nPipeline failures (no usable analyzer report; failure runs count as missed for both "
		       "localizers):\n");
	for (int k = 0; k < n; k++) {
		if (runs[k].ok)
			continue;
		printf("  %-40s %s (%s)\n", runs[k].name, runs[k].perr, runs[k].dir);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "scenario", runs[k].name);
		cJSON_AddStringToObject(o, "dir", runs[k].dir);
		cJSON_AddStringToObject(o, "reason", runs[k].perr);
		cJSON_AddItemToArray(jpf, o);
	}
	cJSON *jns = cJSON_AddArrayToObject(js, "not_scored");
	if (nunscored)
		printf("\nNot scored (no truth.json: the simulation failed):\n");
	for (int k = 0; k < nunscored; k++) {
		printf("  %s\n", unscored[k]);
		cJSON_AddItemToArray(jns, cJSON_CreateString(unscored[k]));
	}
	char summary[2][512];
	for (int li = 0; li < 2; li++) {
		summary_line(summary[li], sizeof summary[li], &A[li], npipe, nunscored);
		cJSON_AddStringToObject(jsl[li], "summary", summary[li]);
	}

	/* ---- latency ---- */
	printf("\nDiagnosis latency (failure onset in the faulty host's clock to the first correct report,\n"
	       "in data time: includes the agents' poll interval and the analyzer's settle time)\n\n");
	cJSON *jlat = cJSON_AddObjectToObject(root, "latency_s");
	for (int li = 0; li < 2; li++) {
		double sum = 0, mx = 0;
		int m = 0;
		for (int k = 0; k < n; k++)
			if (runs[k].L[li].latency_s >= 0) {
				sum += runs[k].L[li].latency_s;
				if (runs[k].L[li].latency_s > mx)
					mx = runs[k].L[li].latency_s;
				m++;
			}
		printf("  %-9s mean %.2f s, max %.2f s over %d correct diagnoses\n", loc_label[li],
		       m ? sum / m : 0, mx, m);
		cJSON *jl = cJSON_AddObjectToObject(jlat, loc_json[li]);
		cJSON_AddNumberToObject(jl, "mean", m ? sum / m : 0);
		cJSON_AddNumberToObject(jl, "max", mx);
		cJSON_AddNumberToObject(jl, "count", m);
	}
	if (npipe)
		printf("\n%d run(s) produced no analyzer report (pipeline failure; counted as missed)\n", npipe);

	/* ---- per run ---- */
	cJSON *jr = cJSON_AddArrayToObject(root, "runs");
	for (int k = 0; k < n; k++) {
		struct run *r = &runs[k];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "scenario", r->name);
		cJSON_AddStringToObject(o, "dir", r->dir);
		cJSON_AddStringToObject(o, "type", r->type);
		cJSON_AddStringToObject(o, "workload", r->workload);
		cJSON_AddNumberToObject(o, "severity", r->severity);
		cJSON_AddStringToObject(o, "truth_class", r->cls >= 0 ? cls_key[r->cls] : "none");
		cJSON_AddStringToObject(o, "truth_host", r->host);
		cJSON_AddNumberToObject(o, "truth_gpu", r->gpu);
		cJSON_AddBoolToObject(o, "hung", r->hung);
		cJSON_AddBoolToObject(o, "pipeline_ok", r->ok);
		if (!r->ok)
			cJSON_AddStringToObject(o, "pipeline_error", r->perr);
		for (int li = 0; li < 2; li++) {
			const struct loc_score *s = &r->L[li];
			cJSON *l = cJSON_AddObjectToObject(o, loc_json[li]);
			char sc[2] = { sym_ch[s->sym], 0 };
			cJSON_AddStringToObject(l, "symbol", sc);
			cJSON_AddStringToObject(l, "verdict", s->verdict);
			cJSON_AddNumberToObject(l, "tp", s->tp);
			cJSON_AddNumberToObject(l, "fp", s->fp);
			cJSON_AddBoolToObject(l, "gpu_right", s->gpu_right);
			if (s->latency_s >= 0)
				cJSON_AddNumberToObject(l, "latency_s", s->latency_s);
			cJSON_AddStringToObject(l, "strict", sv_key[s->sv]);
			cJSON_AddStringToObject(l, "strict_why", s->why);
			cJSON_AddNumberToObject(l, "diagnoses", s->ndiag);
			cJSON_AddNumberToObject(l, "false_positive_diagnoses", s->nfp_diag);
			cJSON_AddNumberToObject(l, "before_onset_diagnoses", s->npre);
			cJSON_AddNumberToObject(l, "strict_tp", s->s_tp);
			cJSON_AddNumberToObject(l, "strict_fp", s->s_fp_all);
			cJSON_AddNumberToObject(l, "strict_tn", s->s_tn_all);
		}
		cJSON_AddItemToArray(jr, o);
	}
	if (out) {
		char *text = cJSON_Print(root);
		FILE *f = fopen(out, "w");
		if (!text || !f || fputs(text, f) < 0 || fclose(f))
			fprintf(stderr, "pulse-eval-score: %s: %s\n", out, strerror(errno));
		else
			printf("\nPer-run details: %s\n", out);
		free(text);
	}
	cJSON_Delete(root);

	int rc = 0;
	if (expect) {
		FILE *f = fopen(expect, "r");
		if (!f) {
			fprintf(stderr, "pulse-eval-score: %s: %s\n", expect, strerror(errno));
			rc = 2;
		} else {
			char line[512];
			printf("\nQuick check (expected Pulse symbol per scenario, from its first diagnosis; "
			       "the strict verdict is shown, not checked):\n");
			while (fgets(line, sizeof line, f)) {
				char name[256], sym[8];
				if (line[0] == '#' || sscanf(line, "%255s %7s", name, sym) != 2)
					continue;
				int want = sym[0] == 'N' ? 99 : sym_from_ch(sym[0]);
				struct run *r = NULL;
				for (int k = 0; k < n; k++)
					if (!strcmp(runs[k].name, name))
						r = &runs[k];
				if (!r || want < 0) {
					printf("  %-40s expected %s: NOT RUN\n", name, sym);
					rc = 1;
					continue;
				}
				int got = r->L[0].sym;
				if (want == 99) { /* no failure: nothing may be reported */
					int ok = r->ok && r->L[0].ndiag == 0;
					printf("  %-40s expected no report, got %s: %s\n", name, r->L[0].verdict,
					       ok ? "ok" : "FALSE ALARM");
					if (!ok)
						rc = 1;
					continue;
				}
				/* order of goodness: machine < group < half < miss */
				int ok = got <= want;
				printf("  %-40s expected %s got %s: %s (%s; strict: %s)\n", name, sym_utf[want],
				       sym_utf[got], ok ? "ok" : "WORSE", r->L[0].verdict, sv_key[r->L[0].sv]);
				if (!ok)
					rc = 1;
			}
			fclose(f);
		}
	}
	printf("\n");
	for (int li = 0; li < 2; li++)
		printf("strict, %s: %s\n", loc_label[li], summary[li]);
	free(runs);
	free(unscored);
	return rc;
}
