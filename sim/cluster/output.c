/* The run directory (include/pulse/cluster_run.h): cluster.json, per NIC
 * <dev>.evs (TX events merged with the agent's polls), per process
 * hook-<pid>.rec, truth.json and truth-ops.jsonl. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "pulse/cluster_run.h"
#include "pulse/event_stream.h"
#include "pulse/host_event.h"

static int mkdir_p(const char *path)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

static uint32_t nic_clock(const struct nic *n, double t)
{
	double v = n->clk_off + t * n->clk_rate;
	return (uint32_t)(uint64_t)llround(v);
}

static int txrec_cmp(const void *a, const void *b)
{
	const struct txrec *x = a, *y = b;
	if (x->t < y->t)
		return -1;
	if (x->t > y->t)
		return 1;
	return x->qpn < y->qpn ? -1 : x->qpn > y->qpn;
}

/* True time of host h's k-th poll (its timer runs on its own clock). */
static double poll_time(const struct sim *sm, int h, int nic_index, uint64_t k)
{
	const struct host *H = &sm->hosts[h];
	return H->poll_phase + (double)k * sm->s->poll_ns / (1 + H->drift_ppm * 1e-6) +
	       nic_index * 15e3;
}

static int write_evs(struct sim *sm, const char *dir, int i, double end, struct sc_stats *st)
{
	struct nic *n = &sm->nics[i];
	char path[4200];
	snprintf(path, sizeof path, "%s/hosts/%s/%s.evs", dir, sm->hosts[n->host].name, n->dev);
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	uint8_t hdr[PULSE_EVS_HEADER_SIZE];
	pulse_evs_encode_header(hdr, n->dev);
	fwrite(hdr, 1, sizeof hdr, f);
	if (n->nev)
		qsort(n->ev, n->nev, sizeof *n->ev, txrec_cmp);
	size_t e = 0;
	uint64_t k = 0;
	for (;;) {
		double tp = poll_time(sm, n->host, n->gpu / sm->s->gpus_per_nic, k);
		while (e < n->nev && n->ev[e].t < tp) {
			struct pulse_evs_record r;
			memset(&r, 0, sizeof r);
			r.kind = PULSE_EVS_TX;
			r.ev.qpn = n->ev[e].qpn;
			r.thread = (uint8_t)(n->ev[e].qpn % 16);
			r.ev.ts_ns = nic_clock(n, n->ev[e].t);
			uint32_t b = n->ev[e].bytes & 0x7fffffffu;
			uint32_t u = (b + 16) / 32;
			r.ev.sent_32b = (uint16_t)(u > 0xffff ? 0xffff : u);
			r.ev.sent_pkts = (uint16_t)((b + (uint32_t)sm->s->mtu - 1) / (uint32_t)sm->s->mtu);
			if (!r.ev.sent_pkts)
				r.ev.sent_pkts = 1;
			uint8_t out[PULSE_EVS_RECORD_SIZE];
			pulse_evs_encode_record(out, &r);
			fwrite(out, 1, sizeof out, f);
			e++;
			st->tx_events++;
		}
		/* the agent polls: host time when sent, NIC time when handled */
		struct pulse_evs_record r;
		memset(&r, 0, sizeof r);
		r.kind = PULSE_EVS_POLL;
		r.host_ns = host_clock(sm, n->host, tp);
		r.ev.ts_ns = nic_clock(n, tp + 3000);
		uint8_t out[PULSE_EVS_RECORD_SIZE];
		pulse_evs_encode_record(out, &r);
		fwrite(out, 1, sizeof out, f);
		st->polls++;
		k++;
		if (e >= n->nev && tp > end)
			break;
	}
	if (fclose(f)) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

static int write_rec_file(struct sim *sm, const char *dir, const struct rankst *rk, uint32_t pid,
			  const struct pulse_hook_record *rec, size_t n, struct sc_stats *st)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/hosts/%s/hook-%u.rec", dir, sm->hosts[rk->host].name, pid);
	FILE *f = fopen(path, "wb");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	uint8_t hdr[PULSE_HKR_HEADER_SIZE];
	pulse_hkr_encode_header(hdr, pid);
	fwrite(hdr, 1, sizeof hdr, f);
	fwrite(rec, sizeof *rec, n, f);
	st->hook_records += n;
	if (fclose(f)) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

/* One file per process: a rank restarted (events.restart_after) had two. */
static int write_rec(struct sim *sm, const char *dir, const struct rankst *rk, struct sc_stats *st)
{
	if (rk->pid_old &&
	    write_rec_file(sm, dir, rk, rk->pid_old, rk->rec, rk->nrec_old, st))
		return -1;
	return write_rec_file(sm, dir, rk, rk->pid, rk->rec + rk->nrec_old, rk->nrec - rk->nrec_old,
			      st);
}

static const char *op_name(int t)
{
	static const char *const n[] = { "?", "allreduce", "allgather", "reducescatter",
					 "broadcast", "reduce", "alltoall", "send", "recv" };
	return t >= 1 && t <= 8 ? n[t] : "?";
}

static void write_part(struct sim *sm, FILE *f, const struct part *pt)
{
	const struct opinst *op = pt->op;
	const struct comm *c = op->cm;
	const struct rankst *rk = pt->rk;
	const char *algo = op->kind == OPK_P2P ? "p2p" : op->kind == OPK_TREE ? "tree" : "ring";
	fprintf(f,
		"{\"host\":\"%s\",\"gpu\":%d,\"pid\":%u,\"rank_global\":%d,\"comm_id\":\"0x%016" PRIx64
		"\",\"comm\":\"%s\",\"rank\":%d,\"nranks\":%d,\"seq\":%" PRIu64
		",\"op\":\"%s\",\"algo\":\"%s\",\"count_bytes\":%" PRIu64 ",\"call_ns\":\"%" PRIu64
		"\"",
		sm->hosts[rk->host].name, rk->gpu, rk->pid, rk->g, c->id, c->label, pt->comm_rank, c->n,
		pt->hook_seq, op_name(pt->type), algo, pt->count, host_clock(sm, rk->host, pt->call_t));
	/* only where the scenario chose protocols: older truth stays as it was */
	if (sm->s->protocol != PROTO_SIMPLE)
		fprintf(f, ",\"proto\":\"%s\"", proto_name(op->proto));
	if (sm->s->gpus_per_nic > 1)
		fprintf(f, ",\"nic\":\"%s\"", sm->nics[nic_of(sm, rk->g)].dev);
	if (pt->bytes_sent)
		fprintf(f, ",\"start_ns\":\"%" PRIu64 "\",\"end_ns\":\"%" PRIu64 "\"",
			host_clock(sm, rk->host, pt->first_t), host_clock(sm, rk->host, pt->last_t));
	else
		fprintf(f, ",\"start_ns\":\"0\",\"end_ns\":\"0\"");
	fprintf(f, ",\"done_ns\":\"%" PRIu64 "\",\"completed\":%s,\"bytes\":%" PRIu64 ",\"peers\":[",
		pt->done ? host_clock(sm, rk->host, pt->end_t) : 0, pt->done ? "true" : "false",
		pt->bytes_sent);
	/* bytes per destination, over all channels */
	int first = 1;
	for (int to = 0; to < op->n; to++) {
		uint64_t b = 0;
		int any = 0;
		for (int ci = 0; ci < op->nconn; ci++) {
			const struct conn *cn = &op->conns[ci];
			if (cn->from != pt->idx || cn->to != to)
				continue;
			any = 1;
			const struct qpc *q = &sm->qpcs[cn->qpc];
			if (!q->inter)
				continue;
			for (int it = 0; it < cn->n_started; it++)
				b += cn->bytes[it];
			if (cn->tx_busy && cn->n_started > 0)
				b -= cn->bytes[cn->n_started - 1]; /* still on the wire, counted below */
		}
		if (!any)
			continue;
		const struct part *peer = &op->parts[to];
		int g = c->ranks[peer->comm_rank];
		fprintf(f, "%s{\"rank\":%d,\"rank_global\":%d,\"host\":\"%s\",\"gpu\":%d,\"bytes\":%" PRIu64 "}",
			first ? "" : ",", peer->comm_rank, g, sm->hosts[sm->ranks[g].host].name,
			sm->ranks[g].gpu, b);
		first = 0;
	}
	fprintf(f, "],\"group_id\":%" PRIu64 "}\n", pt->group_id);
}

static int write_truth_ops(struct sim *sm, const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/truth-ops.jsonl", dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	/* per rank, in call order: walk every rank's parts by scanning instances */
	for (int ci = 0; ci < sm->ncomms; ci++) {
		struct comm *c = &sm->comms[ci];
		for (size_t k = 0; k < c->ncoll; k++) {
			struct opinst *op = c->coll[k];
			if (!op)
				continue;
			for (int i = 0; i < op->n; i++)
				if (op->parts[i].called)
					write_part(sm, f, &op->parts[i]);
		}
		for (int p = 0; p < c->n * c->n; p++)
			for (uint32_t k = 0; k < c->p2p_cap[p]; k++) {
				struct opinst *op = c->p2p_inst[p][k];
				if (!op)
					continue;
				for (int i = 0; i < 2; i++)
					if (op->parts[i].called)
						write_part(sm, f, &op->parts[i]);
			}
	}
	if (fclose(f)) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

static const char *workload_name(int w)
{
	return w == WL_GPT ? "gpt" : w == WL_MOE ? "moe" : w == WL_SIMAI ? "simai" : "standalone";
}

static int write_cluster(struct sim *sm, const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/cluster.json", dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	const struct sc_scenario *s = sm->s;
	/* the scenario's name would tell the failure ("gpt-nic_down"): the
	 * run directory says "<workload>-<seed>" instead, the same for a
	 * failure run and its baseline; truth.json has the name */
	char run_id[64];
	snprintf(run_id, sizeof run_id, "%s-%" PRIu64, workload_name(s->workload), s->seed);
	fprintf(f,
		"{\"format\":\"%s\",\"version\":%d,\"scenario\":\"%s\",\"seed\":%" PRIu64
		",\"workload\":\"%s\",\"epoch_ns\":%.0f,\"poll_ns\":%.0f,\"iterations\":%d,\n \"hosts\":[",
		PULSE_CLUSTER_FORMAT, PULSE_CLUSTER_VERSION, run_id, s->seed,
		workload_name(s->workload), s->epoch_ns, s->poll_ns, s->iterations);
	for (int h = 0; h < sm->nhosts; h++) {
		fprintf(f, "%s\n  {\"name\":\"%s\",\"gpus\":%d,\"processes\":[", h ? "," : "",
			sm->hosts[h].name, sm->ngpus);
		for (int g = 0; g < sm->ngpus; g++) {
			const struct rankst *rk = &sm->ranks[h * sm->ngpus + g];
			if (rk->pid_old) /* before a restart */
				fprintf(f, "%s{\"pid\":%u,\"gpu\":%d}", g ? "," : "", rk->pid_old, g);
			fprintf(f, "%s{\"pid\":%u,\"gpu\":%d}", g || rk->pid_old ? "," : "", rk->pid, g);
		}
		fprintf(f, "],\"nics\":[");
		/* a shared NIC is listed once, with the first of its GPUs: the
		 * hook's QP records tell which process each QP belongs to */
		for (int g = 0; g < sm->ngpus; g += s->gpus_per_nic) {
			const struct nic *n = &sm->nics[h * sm->ngpus + g];
			fprintf(f, "%s{\"dev\":\"%s\",\"gpu\":%d,\"gid\":\"%s\",\"gbps\":%g}", g ? "," : "",
				n->dev, g, n->gidstr, s->nic_gbps);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	if (fclose(f)) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

static const char *const bev_name[] = { [BEV_CHECKPOINT] = "checkpoint",
					[BEV_EVAL_BEGIN] = "evaluation",
					[BEV_EVAL_END] = "evaluation",
					[BEV_HICCUP] = "data_loader_hiccup",
					[BEV_RESTART] = "restart" };

/* truth.json "events": what benign events happened, in true time. Job-wide
 * ones (checkpoint, evaluation, restart) once, from the first rank's start to
 * the last rank's end; hiccups per rank; the sequence-length scale wherever it
 * changes. Absent when the scenario has no events (older files unchanged). */
static void write_truth_events(struct sim *sm, FILE *f)
{
	const struct sc_scenario *s = sm->s;
	const struct sc_events *e = &s->ev;
	if (!e->ckpt_every && !e->eval_every && e->hiccup_prob <= 0 && !e->seqlen_warmup &&
	    !e->seqlen_change_at && !e->restart_after && s->jitter_dist == JD_NORMAL)
		return;
	fprintf(f, ",\n \"jitter_dist\":\"%s\",\n \"events\":[",
		s->jitter_dist == JD_LOGNORMAL ? "lognormal" : s->jitter_dist == JD_PARETO ? "pareto" : "normal");
	int first = 1;
	double prev = 1;
	for (int i = 0; i < s->iterations; i++) {
		double x = seqlen_scale(s, i);
		if (x != prev || (i == 0 && x != 1))
			fprintf(f, "%s\n  {\"type\":\"seqlen\",\"iteration\":%d,\"scale\":%.4f}",
				first ? "" : ",", i, x);
		if (x != prev || (i == 0 && x != 1))
			first = 0;
		prev = x;
	}
	/* job-wide: one entry per (kind, iteration) */
	for (size_t k = 0; k < sm->nbevs; k++) {
		const struct bev_rec *b = &sm->bevs[k];
		if (b->kind == BEV_HICCUP) {
			fprintf(f,
				"%s\n  {\"type\":\"%s\",\"iteration\":%d,\"rank_global\":%d,\"host\":\"%s\","
				"\"gpu\":%d,\"start_ns\":%.0f,\"end_ns\":%.0f}",
				first ? "" : ",", bev_name[b->kind], b->iter, b->rank,
				sm->hosts[sm->ranks[b->rank].host].name, sm->ranks[b->rank].gpu, b->t0, b->t1);
			first = 0;
			continue;
		}
		if (b->kind == BEV_EVAL_END)
			continue;
		int seen = 0;
		for (size_t j = 0; j < k && !seen; j++)
			seen = sm->bevs[j].kind == b->kind && sm->bevs[j].iter == b->iter;
		if (seen)
			continue;
		double t0 = b->t0, t1 = b->t1;
		int ranks = 0;
		int end_kind = b->kind == BEV_EVAL_BEGIN ? BEV_EVAL_END : b->kind;
		for (size_t j = k; j < sm->nbevs; j++) {
			const struct bev_rec *c = &sm->bevs[j];
			if (c->iter != b->iter)
				continue;
			if (c->kind == b->kind) {
				ranks++;
				if (c->t0 < t0)
					t0 = c->t0;
			}
			if (c->kind == end_kind && c->t1 > t1)
				t1 = c->t1;
		}
		fprintf(f,
			"%s\n  {\"type\":\"%s\",\"after_iteration\":%d,\"ranks\":%d,\"start_ns\":%.0f,"
			"\"end_ns\":%.0f",
			first ? "" : ",", bev_name[b->kind], b->iter, ranks, t0, t1);
		if (b->kind == BEV_RESTART) { /* which process became which */
			fprintf(f, ",\"clean\":%s,\"processes\":[", s->ev.restart_clean ? "true" : "false");
			for (int r = 0; r < sm->nranks; r++)
				fprintf(f, "%s{\"rank_global\":%d,\"old_pid\":%u,\"new_pid\":%u}", r ? "," : "",
					r, sm->ranks[r].pid_old, sm->ranks[r].pid);
			fprintf(f, "]");
		}
		fprintf(f, "}");
		first = 0;
	}
	fprintf(f, "]");
}

/* One fault: where, what, and when it acted. start_ns is the onset
 * (activation for a fail-slow, the moment it stops for a fail-stop); a
 * fault that cleared (end_iteration, on/off) has end_ns, the last moment
 * it acted, and its episodes; times are true time, *_host_ns the same on
 * the faulty host's clock. */
static void write_truth_failure(struct sim *sm, FILE *f, int i)
{
	const struct sc_scenario *s = sm->s;
	const struct sc_failure *fl = &s->failures[i];
	const struct fail_rt *rt = &sm->frt[i];
	const struct sc_fail_info *fi = &sc_fail_table[fl->type];
	int g = fl->host * s->gpus + fl->gpu;
	fprintf(f,
		"{\"type\":\"%s\",\"class\":\"%s\",\"mode\":\"%s\",\"host\":\"%s\","
		"\"gpu\":%d,\"rank_global\":%d,\"severity\":%g,\"start_iteration\":%d,"
		"\"activated\":%s,\"start_ns\":%.0f,\"start_host_ns\":\"%" PRIu64 "\"",
		fi->name, fi->klass, fi->mode, sm->hosts[fl->host].name, fl->gpu, g, fl->severity,
		fl->start_iteration, rt->started ? "true" : "false", rt->started ? rt->start : 0.0,
		rt->started ? host_clock(sm, fl->host, rt->start) : 0);
	if (fl->micro_batch >= 0)
		fprintf(f, ",\"micro_batch\":%d", fl->micro_batch);
	if (fl->end_iteration || fl->on_iterations) {
		/* the last episode's end; 0: still on when the run ended */
		double end = rt->nep ? rt->ep[rt->nep - 1][1] : 0;
		fprintf(f,
			",\"end_iteration\":%d,\"on_iterations\":%d,\"off_iterations\":%d,"
			"\"end_ns\":%.0f,\"end_host_ns\":\"%" PRIu64 "\",\"episodes\":[",
			fl->end_iteration, fl->on_iterations, fl->off_iterations, end,
			end > 0 ? host_clock(sm, fl->host, end) : 0);
		for (int k = 0; k < rt->nep; k++)
			fprintf(f,
				"%s{\"start_ns\":%.0f,\"end_ns\":%.0f,\"start_host_ns\":\"%" PRIu64
				"\",\"end_host_ns\":\"%" PRIu64 "\"}",
				k ? "," : "", rt->ep[k][0], rt->ep[k][1], host_clock(sm, fl->host, rt->ep[k][0]),
				rt->ep[k][1] > 0 ? host_clock(sm, fl->host, rt->ep[k][1]) : 0);
		fprintf(f, "]");
	}
	fprintf(f, "}");
}

static int write_truth(struct sim *sm, const char *dir, const struct sc_stats *st)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/truth.json", dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(sm->err, sizeof sm->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	const struct sc_scenario *s = sm->s;
	char run_id[64];
	snprintf(run_id, sizeof run_id, "%s-%" PRIu64, workload_name(s->workload), s->seed);
	fprintf(f, "{\"format\":\"%s\",\"version\":1,\"scenario\":\"%s\",\"run_id\":\"%s\",\"workload\":\"%s\",\"seed\":%" PRIu64 ",\n",
		PULSE_TRUTH_FORMAT, s->name, run_id, workload_name(s->workload), s->seed);
	/* "failure": the first fault, as always; "failures": every fault */
	if (!sm->nfail)
		fprintf(f, " \"failure\":null,\n");
	else {
		fprintf(f, " \"failure\":");
		write_truth_failure(sm, f, 0);
		fprintf(f, ",\n");
	}
	fprintf(f, " \"failures\":[");
	for (int i = 0; i < sm->nfail; i++) {
		fprintf(f, "%s", i ? ",\n  " : "");
		write_truth_failure(sm, f, i);
	}
	fprintf(f, "],\n");
	fprintf(f, " \"hung\":%s,\"sim_end_ns\":%.0f,\n \"hosts\":[", st->hung ? "true" : "false",
		st->sim_ns);
	for (int h = 0; h < sm->nhosts; h++)
		fprintf(f, "%s{\"name\":\"%s\",\"clock_offset_ns\":%.0f,\"clock_drift_ppm\":%.3f}",
			h ? "," : "", sm->hosts[h].name, sm->hosts[h].off, sm->hosts[h].drift_ppm);
	fprintf(f, "],\n \"iterations\":[");
	int first = 1;
	for (int i = 0; i < s->iterations; i++) {
		if (sm->iter_start[i] >= SC_INF)
			continue;
		int complete = sm->iter_nend[i] == sm->nranks;
		fprintf(f, "%s{\"index\":%d,\"start_ns\":%.0f,\"end_ns\":%.0f,\"complete\":%s}",
			first ? "" : ",", i, sm->iter_start[i], complete ? sm->iter_end[i] : 0.0,
			complete ? "true" : "false");
		first = 0;
	}
	fprintf(f, "]");
	write_truth_events(sm, f);
	fprintf(f, "}\n");
	if (fclose(f)) {
		snprintf(sm->err, sizeof sm->err, "%s: write failed", path);
		return -1;
	}
	return 0;
}

/* What each host's rtnetlink said of its NICs' links: a NIC that went down
 * lost its carrier, so its netdev went down with it (a real port gives
 * RTM_NEWLINK without IFF_RUNNING, operstate down, which the agent's link
 * watcher turns into this line: host-agent/link_watch.c, probe.c). The
 * simulator names NIC mlx5_K's netdev ethK. */
static int write_links(struct sim *sm, const char *dir)
{
	for (int h = 0; h < sm->nhosts; h++) { /* appended to below: none left from an earlier run */
		char path[4200];
		snprintf(path, sizeof path, "%s/hosts/%s/links.jsonl", dir, sm->hosts[h].name);
		if (unlink(path) && errno != ENOENT) {
			snprintf(sm->err, sizeof sm->err, "%s: cannot remove: %s", path, strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < sm->nranks; i++) {
		const struct nic *n = &sm->nics[i];
		if (!n->down)
			continue;
		struct pulse_link_event e;
		memset(&e, 0, sizeof e);
		e.t_ns = host_clock(sm, n->host, n->down_t);
		snprintf(e.host, sizeof e.host, "%s", sm->hosts[n->host].name);
		const char *k = strrchr(n->dev, '_');
		snprintf(e.netdev, sizeof e.netdev, "eth%s", k ? k + 1 : n->dev);
		snprintf(e.dev, sizeof e.dev, "%s", n->dev);
		snprintf(e.event, sizeof e.event, "change");
		snprintf(e.state, sizeof e.state, "down");
		e.ifindex = 2 + i;
		e.admin_up = 1;
		e.running = 0;
		e.operstate = 2; /* IF_OPER_DOWN */
		e.carrier = 0;
		char *line = pulse_link_event_to_json(&e);
		char path[4200];
		snprintf(path, sizeof path, "%s/hosts/%s/links.jsonl", dir, e.host);
		if (!line) {
			snprintf(sm->err, sizeof sm->err, "%s: out of memory", path);
			return -1;
		}
		FILE *f = fopen(path, "a");
		int bad = !f || fprintf(f, "%s\n", line) < 0;
		if (f && fclose(f))
			bad = 1;
		free(line);
		if (bad) {
			snprintf(sm->err, sizeof sm->err, "%s: cannot write: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int out_write_all(struct sim *sm, const char *dir, int pcap, struct sc_stats *st)
{
	if (mkdir_p(dir)) {
		snprintf(sm->err, sizeof sm->err, "%s: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	for (int h = 0; h < sm->nhosts; h++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/hosts/%s", dir, sm->hosts[h].name);
		if (mkdir_p(path)) {
			snprintf(sm->err, sizeof sm->err, "%s: cannot create: %s", path, strerror(errno));
			return -1;
		}
	}
	/* A hung job stays hung: keep polling long enough for the agent's
	 * hang bound (5 s) and the analyzer's (10 s) to pass, as they would
	 * on a live cluster. */
	double end = st->sim_ns + (st->hung ? sm->s->hang_tail_ns : sm->s->tail_ns);
	if (write_cluster(sm, dir))
		return -1;
	for (int i = 0; i < sm->nranks; i++) {
		if (!nic_used(sm, i))
			continue;
		if (write_evs(sm, dir, i, end, st))
			return -1;
		if (pcap) {
			char path[4200];
			snprintf(path, sizeof path, "%s/hosts/%s/%s.pcap", dir,
				 sm->hosts[sm->nics[i].host].name, sm->nics[i].dev);
			if (pcap_write_nic(sm, path, i, &st->pcap_packets))
				return -1;
		}
	}
	for (int i = 0; i < sm->nranks; i++)
		if (write_rec(sm, dir, &sm->ranks[i], st))
			return -1;
	if (write_links(sm, dir) || write_truth(sm, dir, st) || write_truth_ops(sm, dir))
		return -1;
	return 0;
}
