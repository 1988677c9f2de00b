/* pulse-eval-score: scores pulse-analyzer reports against the simulator's
 * ground truth (make eval, tools/eval/run-eval.sh).
 *
 *   pulse-eval-score [--out REPORT.json] [--expect FILE] RUN...
 *       RUN is a directory with truth.json (sim/run_cluster) and
 *       analyzer.json (pulse-analyzer --json); a RUN without analyzer.json
 *       counts as a pipeline failure. Prints the paper's Table 3 for Pulse
 *       and the OP-level baseline, precision / recall / false-positive rate
 *       per anomaly class (pulse.txt §8.1) and the diagnosis latency.
 *       --expect FILE: lines "SCENARIO SYMBOL" (SYMBOL one of M G H X, for
 *       machine, group, half (computation judged communication), missed;
 *       N for a run without a failure: nothing may be reported);
 *       exits 1 if a run's Pulse symbol is worse than expected (make test).
 *   pulse-eval-score --set-epoch IN.json OUT.json NS
 *       copies a scenario with its epoch length set (the ablation).
 *
 * Definitions (§8.1). A node is a host. For one run and one localizer, the
 * reported nodes are the suspects of its machine-level diagnoses and the
 * members of its group-level ones. True positive: the faulty host is
 * reported with the right class (computation/communication x
 * fail-slow/fail-stop). False positives: every other reported host, plus
 * the faulty host when reported only with a wrong class. True negatives:
 * the normal hosts not reported. Per class (of the injected failure):
 * precision = TP/(TP+FP), recall = TP/runs, FPR = FP/(FP+TN). Runs without
 * a failure: every reported host is a false alarm (listed apart).
 * Table 3 symbol of a run: the localizer's first diagnosis: ● machine level
 * naming the faulty host (at most two hosts named) with the right class;
 * ○ group level containing it with the right class; ◐ a computation
 * failure reported as communication; ✗ anything else or nothing. */
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
	for (;;) {
		if (n + 4096 > cap) {
			cap *= 2;
			b = realloc(b, cap);
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

static int cls_of_key(const char *k)
{
	for (int i = 0; i < NCLS; i++)
		if (!strcmp(k, cls_key[i]))
			return i;
	return -1;
}

enum { SYM_MACHINE, SYM_GROUP, SYM_HALF, SYM_MISS };
static const char *sym_utf[] = { "●", "○", "◐", "✗" };
static const char sym_ch[] = { 'M', 'G', 'H', 'X' };

struct loc_score {
	int sym;
	int tp, fp, tn;
	double latency_s; /* first correct diagnosis, -1 none */
	int gpu_right;    /* machine level with the faulty GPU among the suspects */
	char verdict[256];
};

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
	int ok;           /* analyzer.json present */
	struct loc_score L[2];
};

static const char *loc_key[2] = { "pulse", "op-level" };
static const char *loc_label[2] = { "Pulse", "OP-level" };

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

static int distinct_hosts(const cJSON *arr, char names[][64], int max)
{
	int n = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
	{
		const char *h = str(x, "host");
		int seen = 0;
		for (int i = 0; i < n; i++)
			seen |= !strcmp(names[i], h);
		if (!seen && n < max)
			copy64(names[n++], h);
	}
	return n;
}

static void score_loc(struct run *r, const cJSON *rep, int li, uint64_t onset)
{
	struct loc_score *s = &r->L[li];
	memset(s, 0, sizeof *s);
	s->sym = SYM_MISS;
	s->latency_s = -1;
	snprintf(s->verdict, sizeof s->verdict, "nothing reported");
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(rep, "diagnoses");
	static char reported[4096][64];
	int nrep = 0, right_class_on_host = 0, wrong_class_on_host = 0, first = 1;
	const cJSON *d;
	cJSON_ArrayForEach(d, all)
	{
		if (strcmp(str(d, "localizer"), loc_key[li]))
			continue;
		int cls = cls_of_key(str(d, "class"));
		int machine = !strcmp(str(d, "level"), "machine");
		const cJSON *set = cJSON_GetObjectItemCaseSensitive(d, machine ? "suspects" : "members");
		char names[256][64];
		int nn = distinct_hosts(set, names, 256);
		for (int i = 0; i < nn; i++) {
			int seen = 0;
			for (int k = 0; k < nrep; k++)
				seen |= !strcmp(reported[k], names[i]);
			if (!seen && nrep < 4096)
				copy64(reported[nrep++], names[i]);
		}
		int gpu_hit = 0;
		int has = r->cls >= 0 && in_list(set, r->host, machine ? &gpu_hit : NULL, r->gpu);
		if (has && cls == r->cls) {
			if (!right_class_on_host) {
				const cJSON *rn = cJSON_GetObjectItemCaseSensitive(d, "report_ns");
				uint64_t rep_ns = cJSON_IsString(rn) ? strtoull(rn->valuestring, NULL, 10) : 0;
				if (onset && rep_ns >= onset)
					s->latency_s = (double)(rep_ns - onset) / 1e9;
			}
			right_class_on_host = 1;
		} else if (has) {
			wrong_class_on_host = 1;
		}
		if (first) {
			first = 0;
			snprintf(s->verdict, sizeof s->verdict, "%s, %s level: %s%s%s", str(d, "class"), str(d, "level"),
				 nn ? names[0] : "?", nn > 1 ? " +" : "", nn > 1 ? "more" : "");
			if (r->cls < 0)
				s->sym = SYM_MISS;
			else if (has && cls == r->cls && machine && nn <= 2) {
				s->sym = SYM_MACHINE;
				s->gpu_right = gpu_hit;
			} else if (has && cls == r->cls)
				s->sym = SYM_GROUP;
			else if ((r->cls == C_COMP_SLOW || r->cls == C_COMP_STOP) &&
				 (cls == C_COMM_SLOW || cls == C_COMM_STOP) && has)
				s->sym = SYM_HALF;
		}
	}
	if (r->cls < 0) {
		s->fp = nrep;
		s->tn = r->nhosts - nrep;
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
	snprintf(r->workload, sizeof r->workload, "%s", str(t, "workload"));
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "failure");
	uint64_t onset = 0;
	r->cls = -1;
	if (cJSON_IsObject(f)) {
		snprintf(r->type, sizeof r->type, "%s", str(f, "type"));
		snprintf(r->host, sizeof r->host, "%s", str(f, "host"));
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(f, "gpu");
		r->gpu = cJSON_IsNumber(g) ? (int)g->valuedouble : -1;
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(f, "severity");
		r->severity = cJSON_IsNumber(sv) ? sv->valuedouble : 0;
		int comp = !strcmp(str(f, "class"), "computation");
		int stop = !strcmp(str(f, "mode"), "fail-stop");
		r->cls = comp ? (stop ? C_COMP_STOP : C_COMP_SLOW) : (stop ? C_COMM_STOP : C_COMM_SLOW);
		onset = strtoull(str(f, "start_host_ns"), NULL, 10);
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(f, "activated");
		if (cJSON_IsFalse(act))
			fprintf(stderr, "pulse-eval-score: %s: the failure never activated in the simulation\n",
				r->name);
	} else {
		snprintf(r->type, sizeof r->type, "none");
	}
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(t, "hosts");
	r->nhosts = cJSON_IsArray(hosts) ? cJSON_GetArraySize(hosts) : 0;
	cJSON_Delete(t);
	snprintf(path, sizeof path, "%s/analyzer.json", dir);
	cJSON *rep = load(path);
	r->ok = rep != NULL;
	for (int li = 0; li < 2; li++) {
		if (rep)
			score_loc(r, rep, li, onset);
		else {
			memset(&r->L[li], 0, sizeof r->L[li]);
			r->L[li].sym = SYM_MISS;
			r->L[li].latency_s = -1;
			snprintf(r->L[li].verdict, sizeof r->L[li].verdict, "pipeline failed (no analyzer.json)");
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
	int n = 0;
	for (; i < argc; i++)
		if (!load_run(&runs[n], argv[i]))
			n++;

	/* ---- Table 3 ---- */
	printf("\nTable 3. Anomaly localization per case (● machine level, ○ group level, "
	       "◐ computation misjudged as communication, ✗ missed or wrong); one symbol per run\n\n");
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

	/* ---- per-class precision / recall / FPR ---- */
	cJSON *root = cJSON_CreateObject();
	cJSON *jcls = cJSON_AddObjectToObject(root, "classes");
	printf("\nPrecision, recall and false-positive rate per anomaly class (§8.1 definitions; nodes are hosts)\n\n");
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
			P[li] = tp[li] + fp[li] ? (double)tp[li] / (tp[li] + fp[li]) : NAN;
			R[li] = runsn ? (double)tp[li] / runsn : NAN;
			F[li] = fp[li] + tn[li] ? (double)fp[li] / (fp[li] + tn[li]) : NAN;
			cJSON *jl = cJSON_AddObjectToObject(jc, li ? "op_level" : "pulse");
			cJSON_AddNumberToObject(jl, "tp", tp[li]);
			cJSON_AddNumberToObject(jl, "fp", fp[li]);
			cJSON_AddNumberToObject(jl, "tn", tn[li]);
			if (isnan(P[li]))
				cJSON_AddNullToObject(jl, "precision");
			else
				cJSON_AddNumberToObject(jl, "precision", P[li]);
			if (isnan(R[li]))
				cJSON_AddNullToObject(jl, "recall");
			else
				cJSON_AddNumberToObject(jl, "recall", R[li]);
			if (isnan(F[li]))
				cJSON_AddNullToObject(jl, "fpr");
			else
				cJSON_AddNumberToObject(jl, "fpr", F[li]);
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
		cJSON *jl = cJSON_AddObjectToObject(jlat, li ? "op_level" : "pulse");
		cJSON_AddNumberToObject(jl, "mean", m ? sum / m : 0);
		cJSON_AddNumberToObject(jl, "max", mx);
		cJSON_AddNumberToObject(jl, "count", m);
	}
	int failed = 0;
	for (int k = 0; k < n; k++)
		failed += !runs[k].ok;
	if (failed)
		printf("\n%d run(s) produced no analyzer report (pipeline failure; counted as missed)\n", failed);

	/* ---- per run ---- */
	cJSON *jr = cJSON_AddArrayToObject(root, "runs");
	for (int k = 0; k < n; k++) {
		struct run *r = &runs[k];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "scenario", r->name);
		cJSON_AddStringToObject(o, "type", r->type);
		cJSON_AddStringToObject(o, "workload", r->workload);
		cJSON_AddNumberToObject(o, "severity", r->severity);
		cJSON_AddStringToObject(o, "truth_class", r->cls >= 0 ? cls_key[r->cls] : "none");
		cJSON_AddStringToObject(o, "truth_host", r->host);
		cJSON_AddNumberToObject(o, "truth_gpu", r->gpu);
		cJSON_AddBoolToObject(o, "pipeline_ok", r->ok);
		for (int li = 0; li < 2; li++) {
			cJSON *l = cJSON_AddObjectToObject(o, li ? "op_level" : "pulse");
			char sc[2] = { sym_ch[r->L[li].sym], 0 };
			cJSON_AddStringToObject(l, "symbol", sc);
			cJSON_AddStringToObject(l, "verdict", r->L[li].verdict);
			cJSON_AddNumberToObject(l, "tp", r->L[li].tp);
			cJSON_AddNumberToObject(l, "fp", r->L[li].fp);
			cJSON_AddBoolToObject(l, "gpu_right", r->L[li].gpu_right);
			if (r->L[li].latency_s >= 0)
				cJSON_AddNumberToObject(l, "latency_s", r->L[li].latency_s);
		}
		cJSON_AddItemToArray(jr, o);
	}
	if (out) {
		char *text = cJSON_Print(root);
		FILE *f = fopen(out, "w");
		if (!f || fputs(text, f) < 0 || fclose(f))
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
			printf("\nQuick check (expected Pulse symbol per scenario):\n");
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
					int ok = r->ok && r->L[0].fp == 0;
					printf("  %-40s expected no report, got %s: %s\n", name, r->L[0].verdict,
					       ok ? "ok" : "FALSE ALARM");
					if (!ok)
						rc = 1;
					continue;
				}
				/* order of goodness: machine < group < half < miss */
				int ok = got <= want;
				printf("  %-40s expected %s got %s: %s (%s)\n", name, sym_utf[want], sym_utf[got],
				       ok ? "ok" : "WORSE", r->L[0].verdict);
				if (!ok)
					rc = 1;
			}
			fclose(f);
		}
	}
	free(runs);
	return rc;
}
