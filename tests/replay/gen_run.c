/* The replay tests' run directory (gen_run.h). */
#define _GNU_SOURCE
#include "gen_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pulse/cluster_run.h"
#include "pulse/event_stream.h"

struct ev {
	uint64_t ts; /* extended NIC time */
	uint32_t qpn;
	uint16_t units;
	uint8_t thread;
};

static int cmp_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void set_qp(struct gen_run *g, int h, int n, uint32_t qpn, int rh, int rn, uint32_t dest)
{
	struct gen_nic *nic = &g->nic[h][n];
	struct gen_qp *q = &nic->qp[nic->nqps++];
	memset(q, 0, sizeof *q);
	q->qpn = qpn;
	q->dest_qpn = dest;
	q->remote_host = rh;
	q->remote_nic = rn;
}

static int write_evs(const char *path, struct gen_run *g, int h, int n)
{
	struct gen_nic *nic = &g->nic[h][n];
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	uint8_t hdr[PULSE_EVS_HEADER_SIZE], rec[PULSE_EVS_RECORD_SIZE];
	pulse_evs_encode_header(hdr, nic->dev);
	fwrite(hdr, 1, sizeof hdr, f);
	struct ev evs[GEN_MAX_QPS_PER_NIC * 40];
	for (int k = 0; k < GEN_POLLS; k++) {
		uint64_t ws = (uint64_t)GEN_NIC_T0 + (uint64_t)k * GEN_POLL_NS;
		int ne = 0;
		for (int qi = 0; qi < nic->nqps; qi++) {
			struct gen_qp *q = &nic->qp[qi];
			struct gen_qp_win *w = &q->win[k];
			w->first_epoch = UINT32_MAX;
			for (uint32_t j = 0; j < 40; j++) {
				uint32_t epoch = (j * 71u + (uint32_t)k * 13u + q->qpn * 7u) % 3000u + 10u;
				uint16_t units = (uint16_t)(50u + (j * 3u + (uint32_t)k) % 200u);
				evs[ne].ts = ws + (uint64_t)epoch * GEN_EPOCH_NS + 1000u + (uint64_t)qi * 100u;
				evs[ne].qpn = q->qpn;
				evs[ne].units = units;
				evs[ne].thread = (uint8_t)qi;
				ne++;
				w->bytes += (uint64_t)units * 32u;
				w->active_epochs++;
				if (epoch < w->first_epoch)
					w->first_epoch = epoch;
				if (epoch > w->last_epoch)
					w->last_epoch = epoch;
			}
		}
		qsort(evs, (size_t)ne, sizeof evs[0], cmp_ev);
		for (int i = 0; i < ne; i++) {
			struct pulse_evs_record r = {.kind = PULSE_EVS_TX, .thread = evs[i].thread};
			r.ev.qpn = evs[i].qpn;
			r.ev.sent_32b = evs[i].units;
			r.ev.sent_pkts = (uint16_t)((evs[i].units * 32u + 4095u) / 4096u);
			r.ev.ts_ns = (uint32_t)evs[i].ts;
			pulse_evs_encode_record(rec, &r);
			fwrite(rec, 1, sizeof rec, f);
		}
		nic->events += (uint64_t)ne;
		uint64_t pe = ws + GEN_POLL_NS;
		struct pulse_evs_record p = {.kind = PULSE_EVS_POLL};
		p.ev.ts_ns = (uint32_t)pe;
		p.host_ns = (uint64_t)((int64_t)pe + g->host_off[h]);
		pulse_evs_encode_record(rec, &p);
		fwrite(rec, 1, sizeof rec, f);
		nic->win_host_start[k] = (uint64_t)((int64_t)ws + g->host_off[h]);
		nic->win_host_end[k] = p.host_ns;
	}
	return fclose(f);
}

static void rec_base(struct pulse_hook_record *r, uint8_t kind, uint32_t pid, uint64_t t)
{
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->source = PULSE_HOOK_SRC_HOOK;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->pid = pid;
	r->tid = pid;
	r->time_ns = t;
}

static void set_gpu(struct pulse_hook_gpu *g, int n)
{
	g->cuda_dev = n;
	g->source = PULSE_HOOK_GPU_VISIBLE_DEVS;
	snprintf(g->visible, sizeof g->visible, "%d", n);
}

static int write_rec(const char *path, struct gen_run *g, int h, int n)
{
	struct gen_nic *nic = &g->nic[h][n];
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	uint8_t hdr[PULSE_HKR_HEADER_SIZE];
	pulse_hkr_encode_header(hdr, nic->pid);
	fwrite(hdr, 1, sizeof hdr, f);
	struct pulse_hook_record r;
	uint64_t t0 = nic->win_host_start[0] + 1000000u;
	for (int qi = 0; qi < nic->nqps; qi++) {
		const struct gen_qp *q = &nic->qp[qi];
		rec_base(&r, PULSE_HOOK_QP_CREATE, nic->pid, t0 + 1000000u);
		memcpy(r.u.qp.dev, nic->dev, strlen(nic->dev));
		r.u.qp.qpn = q->qpn;
		set_gpu(&r.u.qp.gpu, n);
		fwrite(&r, sizeof r, 1, f);
		rec_base(&r, PULSE_HOOK_QP_RTR, nic->pid, t0 + 2000000u);
		memcpy(r.u.qp.dev, nic->dev, strlen(nic->dev));
		r.u.qp.qpn = q->qpn;
		r.u.qp.dest_qpn = q->dest_qpn;
		r.u.qp.port = 1;
		r.u.qp.is_global = 1;
		memcpy(r.u.qp.remote_gid, g->nic[q->remote_host][q->remote_nic].gid, 16);
		set_gpu(&r.u.qp.gpu, n);
		fwrite(&r, sizeof r, 1, f);
	}
	/* the init record comes when the call returns, with the call's start time */
	rec_base(&r, PULSE_HOOK_COMM_INIT, nic->pid, t0);
	r.u.comm.comm_id = g->comm_id;
	r.u.comm.rank = h * GEN_NICS + n;
	r.u.comm.nranks = GEN_HOSTS * GEN_NICS;
	r.u.comm.how = PULSE_HOOK_HOW_INIT_RANK;
	set_gpu(&r.u.comm.gpu, n);
	fwrite(&r, sizeof r, 1, f);
	for (int k = 0; k <= GEN_POLLS; k++) {
		uint64_t t = k < GEN_POLLS ? nic->win_host_start[k] + 20000000u
					   : nic->win_host_end[GEN_POLLS - 1] + 50000000u;
		rec_base(&r, PULSE_HOOK_OP, nic->pid, t);
		r.u.op.comm_id = g->comm_id;
		r.u.op.seq = (uint64_t)k;
		r.u.op.count = 1u << 20;
		r.u.op.stream = 0x7000;
		r.u.op.root_peer = -1;
		r.u.op.type = PULSE_HOOK_OP_ALLREDUCE;
		r.u.op.datatype = 7;
		r.u.op.redop = 0;
		fwrite(&r, sizeof r, 1, f);
	}
	g->ops_per_process = GEN_POLLS;
	g->ops_after_last = 1;
	return fclose(f);
}

static int mkdir_p(const char *p)
{
	return mkdir(p, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

int gen_run_write(const char *dir, struct gen_run *g)
{
	memset(g, 0, sizeof *g);
	snprintf(g->hosts[0], sizeof g->hosts[0], "hostA");
	snprintf(g->hosts[1], sizeof g->hosts[1], "hostB");
	g->host_off[0] = 1700000000000000000ll - (int64_t)GEN_NIC_T0;
	g->host_off[1] = g->host_off[0] + 3000000; /* hostB's clock is 3 ms ahead */
	g->comm_id = 0xC0FFEE0000000001ull;
	for (int h = 0; h < GEN_HOSTS; h++)
		for (int n = 0; n < GEN_NICS; n++) {
			struct gen_nic *nic = &g->nic[h][n];
			snprintf(nic->dev, sizeof nic->dev, "mlx5_%d", n);
			nic->gid[0] = 0xfe;
			nic->gid[1] = 0x80;
			nic->gid[14] = (uint8_t)(0xa0 + h);
			nic->gid[15] = (uint8_t)n;
			nic->pid = (uint32_t)(1000 * (h + 1) + n);
		}
	/* 4 pairs; QPN 0x100 is used on both hosts */
	set_qp(g, 0, 0, 0x100, 1, 0, 0x200);
	set_qp(g, 0, 0, 0x102, 1, 1, 0x202);
	set_qp(g, 0, 1, 0x101, 1, 1, 0x201);
	set_qp(g, 0, 1, 0x300, 1, 0, 0x100);
	set_qp(g, 1, 0, 0x200, 0, 0, 0x100);
	set_qp(g, 1, 0, 0x100, 0, 1, 0x300);
	set_qp(g, 1, 1, 0x201, 0, 1, 0x101);
	set_qp(g, 1, 1, 0x202, 0, 0, 0x102);

	char p[4096];
	if (mkdir_p(dir))
		return -1;
	snprintf(p, sizeof p, "%s/hosts", dir);
	if (mkdir_p(p))
		return -1;
	for (int h = 0; h < GEN_HOSTS; h++) {
		snprintf(p, sizeof p, "%s/hosts/%s", dir, g->hosts[h]);
		if (mkdir_p(p))
			return -1;
		for (int n = 0; n < GEN_NICS; n++) {
			snprintf(p, sizeof p, "%s/hosts/%s/%s.evs", dir, g->hosts[h], g->nic[h][n].dev);
			if (write_evs(p, g, h, n))
				return -1;
			snprintf(p, sizeof p, "%s/hosts/%s/hook-%u.rec", dir, g->hosts[h], g->nic[h][n].pid);
			if (write_rec(p, g, h, n))
				return -1;
		}
	}
	snprintf(p, sizeof p, "%s/cluster.json", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"format\":\"pulse-cluster-run\",\"version\":1,\"scenario\":\"replay-test\",\"seed\":1,"
		   "\"workload\":\"standalone\",\"epoch_ns\":%u,\"poll_ns\":%llu,\"hosts\":[",
		GEN_EPOCH_NS, (unsigned long long)GEN_POLL_NS);
	for (int h = 0; h < GEN_HOSTS; h++) {
		fprintf(f, "%s{\"name\":\"%s\",\"gpus\":%d,\"nics\":[", h ? "," : "", g->hosts[h], GEN_NICS);
		for (int n = 0; n < GEN_NICS; n++) {
			const uint8_t *gid = g->nic[h][n].gid;
			fprintf(f, "%s{\"dev\":\"%s\",\"gpu\":%d,\"gid\":\"", n ? "," : "", g->nic[h][n].dev, n);
			for (int b = 0; b < 16; b += 2)
				fprintf(f, "%s%02x%02x", b ? ":" : "", gid[b], gid[b + 1]);
			fprintf(f, "\",\"gbps\":400}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	return fclose(f);
}
