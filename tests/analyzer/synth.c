/* Synthetic job for the analyzer tests (see synth.h). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "pulse/hook_record.h"
#include "synth.h"

#define MS 1000000.0

/* the most bytes rank r's transfers move in one 32 µs epoch: its line
 * rate's, or its cap's once failing */
static uint64_t syn_peak(const struct syn *s, int r, int failing)
{
	double line = s->rate_gbps * 1e9 / 8 * 32e-6;
	return (uint64_t)(line * (failing && s->peak_cap[r] > 0 ? s->peak_cap[r] : 1.0));
}

void syn_default(struct syn *s)
{
	memset(s, 0, sizeof *s);
	s->n = 4;
	s->iters = 16;
	s->fail_iter = 8;
	s->period_ms = 200;
	s->compute_ms = 120;
	s->bytes = 256ull << 20;
	s->rate_gbps = 400;
	s->jitter_ms = 1.0;
	s->skew_host = -1;
	s->comm_id = 0x1111222233334444ull;
}

/* sibling groups: group j's rank r is on host j*n+r, its communicator is comm_id+j */
static int g_sib, g_n;

static void host_name(char *out, size_t n, int r)
{
	snprintf(out, n, "host%d", g_sib * g_n + r);
}

/* file mode (syn_write_dir): lines go to DIR/agent/<host>.jsonl instead */
static FILE *syn_files[SYN_MAX_HOSTS];

int syn_binary;

static void feed(struct an_state *st, const struct pulse_op_record *r)
{
	if (syn_binary && !syn_files[g_sib * g_n + r->rank]) {
		/* the live wire's form: binary, decoded, an_ingest_op */
		static uint8_t b[PULSE_OP_BIN_MAX];
		static struct pulse_op_record d;
		char err[256];
		size_t n = pulse_op_record_to_bin(r, b, sizeof b);
		if (!n || pulse_op_record_from_bin(b, n, &d, err, sizeof err))
			abort();
		an_ingest_op(st, d.host, &d, err, sizeof err);
		return;
	}
	char *line = pulse_op_record_to_json(r);
	if (!line)
		abort();
	if (syn_files[g_sib * g_n + r->rank]) {
		fprintf(syn_files[g_sib * g_n + r->rank], "%s\n", line);
	} else {
		char err[256];
		an_ingest(st, r->host, line, strlen(line), err, sizeof err);
	}
	free(line);
}

static void feed_map(struct an_state *st, const struct syn *s)
{
	for (int r = 0; r < s->n; r++) {
		char h[16], line[512];
		host_name(h, sizeof h, r);
		snprintf(line, sizeof line,
			 "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[{\"pid\":%d,\"comm_id\":"
			 "\"0x%016" PRIx64 "\",\"parent_id\":null,\"rank\":%d,\"nranks\":%d,\"how\":\"init_rank\","
			 "\"gpu\":{\"cuda_dev\":0}}],\"qps\":[]}",
			 1000 + r, s->comm_id, r, s->n);
		char err[256];
		an_ingest(st, h, line, strlen(line), err, sizeof err);
	}
}

static double jit(const struct syn *s, int it, int r)
{
	/* deterministic, in [-1, 1] */
	unsigned x = (unsigned)(it * 7919 + r * 104729 + 17);
	x ^= x >> 7;
	x *= 2654435761u;
	return s->jitter_ms * (((double)(x % 2001) / 1000.0) - 1.0);
}

static void base_rec(const struct syn *s, struct pulse_op_record *o, int r, int it)
{
	memset(o, 0, sizeof *o);
	host_name(o->host, sizeof o->host, r);
	o->gpu = 0;
	o->pid = (uint32_t)(1000 + r);
	o->comm_id = s->comm_id + (uint64_t)g_sib;
	o->rank = r;
	o->nranks = s->n;
	o->seq = (uint64_t)it;
	o->datatype = 7;
	o->root_peer = -1;
	o->epoch_ns = 32000;
	if (s->custom) {
		o->op = PULSE_OP_GROUP;
		o->group_id = (uint64_t)it + 1;
		o->algo = PULSE_ALGO_P2P;
		o->algo_source = PULSE_ALGO_SRC_ARGS;
		o->parallelism = PULSE_PAR_EP;
		o->count = s->bytes / 2;
	} else {
		o->op = PULSE_HOOK_OP_ALLREDUCE;
		o->algo = PULSE_ALGO_RING;
		o->algo_source = PULSE_ALGO_SRC_INFERRED;
		o->parallelism = PULSE_PAR_DP;
		o->count = s->bytes / 2;
	}
}

static uint64_t skewed(const struct syn *s, int r, uint64_t t)
{
	if (r == s->skew_host && t)
		return (uint64_t)((double)t + s->skew_ms * MS);
	return t;
}

static void fix_times(const struct syn *s, struct pulse_op_record *o, int r)
{
	o->call_ns = skewed(s, r, o->call_ns);
	o->start_ns = skewed(s, r, o->start_ns);
	o->end_ns = skewed(s, r, o->end_ns);
	for (uint32_t i = 0; i < o->npeers; i++) {
		o->peers[i].start_ns = skewed(s, r, o->peers[i].start_ns);
		o->peers[i].end_ns = skewed(s, r, o->peers[i].end_ns);
	}
}

struct an_state *syn_run(const struct syn *s, const struct an_cfg *cfg)
{
	struct an_state *st = an_state_new(cfg);
	if (!st)
		return NULL;
	if (s->emit_map)
		feed_map(st, s);
	for (int h = 0; s->clock_err_ms > 0 && h < (s->ncomms > 0 ? s->ncomms : 1) * s->n; h++) {
		char name[16], line[512], err[256];
		snprintf(name, sizeof name, "host%d", h);
		snprintf(line, sizeof line,
			 "{\"type\":\"window\",\"nic\":\"mlx5_0\",\"t_ns\":1,\"window_seq\":1,\"host_start_ns\":%llu,"
			 "\"host_end_ns\":%llu,\"clock_err_ns\":%.0f,\"epoch_ns\":32000,\"complete\":true,"
			 "\"pages_missing\":0,\"gap\":[],\"qps\":[]}",
			 (unsigned long long)SYN_T0 - 1000000ull, (unsigned long long)SYN_T0, s->clock_err_ms * MS);
		an_ingest(st, name, line, strlen(line), err, sizeof err);
	}
	struct pulse_op_record *o = malloc(sizeof *o);
	uint64_t t = SYN_T0;
	double calls[SYN_MAX];
	for (int it = 0; it < s->iters; it++) {
	double maxlen = 0;
	int stop = 0;
	for (int j = 0; j < (s->ncomms > 0 ? s->ncomms : 1) && !stop; j++) {
		g_sib = j;
		g_n = s->n;
		int failing = it >= s->fail_iter && j == 0;
		double cpu_total = 0;
		double maxcall = 0;
		double act[SYN_MAX];
		for (int r = 0; r < s->n; r++) {
			double c = s->compute_ms + jit(s, it, r) + (failing ? s->extra_compute_ms[r] : 0);
			calls[r] = c;
			if (c > maxcall)
				maxcall = c;
			double rate = failing && s->slow_rate[r] > 0 ? s->slow_rate[r] : s->rate_gbps;
			act[r] = (double)s->bytes * 8 / rate; /* ns */
			if (failing)
				cpu_total += 4 * s->cpu_delay_ms[r] * MS;
		}
		double maxact = 0;
		for (int r = 0; r < s->n; r++)
			if (act[r] > maxact)
				maxact = act[r];
		if (failing && s->hang && j == 0) {
			/* the hung operator: the agent reports it after its bound */
			for (int r = 0; r < s->n; r++) {
				if (s->hang == SYN_HANG_COMP && r == s->hang_rank)
					continue; /* never called */
				base_rec(s, o, r, it);
				o->call_ns = t + (uint64_t)(calls[r] * MS);
				o->expected_bytes = s->bytes;
				double frac = s->hang == SYN_HANG_COMM ? (r == s->hang_rank ? 0.10 : 0.40) : 0.0;
				if (s->hang == SYN_HANG_COMP && !s->custom)
					frac = 0.02 * (r + 1);
				o->actual_bytes = (uint64_t)(frac * (double)s->bytes);
				o->status = o->actual_bytes ? PULSE_OP_HUNG : PULSE_OP_NOT_STARTED;
				o->start_ns = o->actual_bytes ? o->call_ns + 20000 : 0;
				o->active_ns = (uint64_t)(act[r] * frac);
				o->rank_active_ns = o->active_ns;
				int np = s->custom ? s->n - 1 : 1;
				o->npeers = (uint32_t)np;
				for (int k = 0; k < np; k++) {
					int pr = s->custom ? (k >= r ? k + 1 : k) : (r + 1) % s->n;
					struct pulse_op_peer *p = &o->peers[k];
					p->rank = pr;
					p->gpu = 0;
					host_name(p->host, sizeof p->host, pr);
					p->expected_bytes = s->bytes / (uint64_t)np;
					int involves = pr == s->hang_rank || r == s->hang_rank;
					int done = s->custom && !involves;
					p->actual_bytes = done ? p->expected_bytes : (uint64_t)(frac * (double)p->expected_bytes);
					p->complete = (uint8_t)done;
					p->start_ns = p->actual_bytes ? o->call_ns + 20000 : 0;
				}
				fix_times(s, o, r);
				feed(st, o);
			}
			/* the agents report at their next poll after the hang bound */
			uint64_t rep = t + 6000000000ull;
			an_tick(st, rep);
			an_tick(st, rep + 3000000000ull);
			stop = 1;
			break;
		}
		double ready = maxcall * MS;
		for (int r = 0; r < s->n; r++) {
			base_rec(s, o, r, it);
			double c = calls[r] * MS;
			o->call_ns = t + (uint64_t)c;
			o->expected_bytes = s->bytes;
			o->actual_bytes = s->bytes;
			o->status = PULSE_OP_COMPLETE;
			if (s->custom) {
				/* P2Ps progress independently; gaps come from late receivers */
				double st0 = c + 0.02 * MS + (failing ? s->cpu_delay_ms[r] * MS : 0);
				double end = st0 + act[r] + s->gap_ms[r] * MS + (failing ? cpu_total : 0);
				double rp_max = 0;
				for (int k = 0; failing && k < s->n; k++)
					if (k != r && s->recv_post_ms[k] * MS > rp_max)
						rp_max = s->recv_post_ms[k] * MS;
				end += rp_max;
				o->start_ns = t + (uint64_t)st0;
				o->end_ns = t + (uint64_t)end;
				o->active_ns = (uint64_t)act[r];
				o->rank_active_ns = o->active_ns;
				o->rank_rate_gbps = (double)s->bytes * 8 / act[r];
				int np = s->n - 1;
				o->npeers = (uint32_t)np;
				for (int k = 0; k < np; k++) {
					int pr = k >= r ? k + 1 : k;
					struct pulse_op_peer *p = &o->peers[k];
					p->rank = pr;
					p->gpu = 0;
					host_name(p->host, sizeof p->host, pr);
					p->expected_bytes = s->bytes / (uint64_t)np;
					p->actual_bytes = p->expected_bytes;
					p->start_ns = o->start_ns;
					p->end_ns = o->end_ns;
					p->active_ns = o->active_ns;
					p->peak_epoch_bytes = syn_peak(s, r, failing);
					p->complete = 1;
					int spiking = !s->xfer_slow_cycle || (it - s->fail_iter) % s->xfer_slow_cycle < 2;
					double xs = !failing || !spiking ? 0
						    : s->xfer_slow[r] > s->xfer_slow[pr] ? s->xfer_slow[r] : s->xfer_slow[pr];
					if (xs > 0 && xs < 1) {
						p->active_ns = (uint64_t)((double)o->active_ns / (1.0 - xs));
						p->end_ns = p->start_ns + p->active_ns;
						if (p->end_ns > o->end_ns)
							o->end_ns = p->end_ns;
					}
					if (failing && s->recv_post_ms[pr] > 0) {
						/* waits for the receiver's buffers, then sends at full rate */
						p->start_ns += (uint64_t)(s->recv_post_ms[pr] * MS);
					}
				}
			} else {
				int succ = (r + 1) % s->n, pred = (r + s->n - 1) % s->n;
				/* a slow proxy posts its first slice a little late, and adds a
				 * hiccup to every slice after: the extension is several times
				 * the first-byte delay */
				double cpu_first = failing ? 0.25 * (s->cpu_delay_ms[r] + s->cpu_delay_ms[succ]) * MS : 0;
				(void)pred;
				double first = calls[r] * MS + 0.01 * MS + cpu_first;
				double end = ready + maxact + cpu_total + 0.05 * MS + r * 1000;
				o->start_ns = t + (uint64_t)first;
				o->end_ns = t + (uint64_t)end;
				o->active_ns = (uint64_t)act[r];
				o->rank_active_ns = o->active_ns;
				o->rank_rate_gbps = (double)s->bytes * 8 / act[r];
				o->npeers = 1;
				struct pulse_op_peer *p = &o->peers[0];
				p->rank = succ;
				p->gpu = 0;
				host_name(p->host, sizeof p->host, succ);
				p->expected_bytes = s->bytes;
				p->actual_bytes = s->bytes;
				p->start_ns = o->start_ns;
				p->end_ns = o->end_ns;
				p->active_ns = o->active_ns;
				p->peak_epoch_bytes = syn_peak(s, r, failing);
				p->complete = 1;
			}
			o->duration_ns = o->end_ns - o->start_ns;
			fix_times(s, o, r);
			feed(st, o);
		}
		double span = ready + maxact + cpu_total + 1 * MS;
		double len = s->period_ms * MS;
		if (span + 20 * MS > len)
			len = span + 20 * MS;
		if (len > maxlen)
			maxlen = len;
	}
	g_sib = 0;
	if (stop)
		break;
	t += (uint64_t)maxlen;
	an_tick(st, t);
	}
	an_finish(st);
	free(o);
	return st;
}

int syn_write_dir(const struct syn *s, const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/agent", dir);
	mkdir(dir, 0755);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, sizeof path, "%s/cluster.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"format\":\"pulse-cluster-run\",\"version\":1,\"scenario\":\"synthetic\",\"hosts\":[");
	for (int r = 0; r < s->n; r++)
		fprintf(f, "%s{\"name\":\"host%d\",\"gpus\":1,\"nics\":[]}", r ? "," : "", r);
	fprintf(f, "]}\n");
	fclose(f);
	for (int r = 0; r < s->n; r++) {
		snprintf(path, sizeof path, "%s/agent/host%d.jsonl", dir, r);
		syn_files[r] = fopen(path, "w");
		if (!syn_files[r])
			return -1;
		/* a line the analyzer does not use, and a window line */
		fprintf(syn_files[r], "{\"type\":\"event\",\"nic\":\"mlx5_0\",\"t_ns\":1,\"event\":\"up\",\"detail\":\"\"}\n");
		fprintf(syn_files[r], "{\"type\":\"window\",\"nic\":\"mlx5_0\",\"t_ns\":1,\"window_seq\":1,"
			"\"host_start_ns\":%llu,\"host_end_ns\":%llu,\"clock_err_ns\":100,\"epoch_ns\":32000,"
			"\"complete\":true,\"pages_missing\":0,\"gap\":[],\"qps\":[{\"qpn\":%d,\"bytes\":1000,"
			"\"active_epochs\":3,\"peak_epoch_bytes\":400,\"peak_gbps\":100,\"mean_gbps\":83.3,"
			"\"start_ns\":%llu,\"end_ns\":%llu}]}\n",
			(unsigned long long)SYN_T0, (unsigned long long)SYN_T0 + 100000000ull, 100 + r,
			(unsigned long long)SYN_T0 + 1000, (unsigned long long)SYN_T0 + 97000);
	}
	struct an_state *st = syn_run(s, NULL);
	an_state_free(st);
	int bad = 0;
	for (int r = 0; r < s->n; r++) {
		bad |= fclose(syn_files[r]) != 0;
		syn_files[r] = NULL;
	}
	return bad ? -1 : 0;
}

const struct an_diagnosis *syn_first(const struct an_state *st, const char *localizer)
{
	uint32_t n;
	const struct an_diagnosis *d = an_diagnoses(st, &n);
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(d[i].localizer, localizer))
			return &d[i];
	return NULL;
}
