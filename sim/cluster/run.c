/* The simulation driver: set-up (hosts, clocks, NICs, ranks), each rank's
 * program (compute, operator calls, groups), failure activation, the main
 * event loop. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "internal.h"

void prog_add(struct rankst *rk, struct instr in)
{
	if (rk->nprog == rk->capprog) {
		rk->capprog = rk->capprog ? rk->capprog * 2 : 256;
		rk->prog = xrealloc(rk->prog, rk->capprog * sizeof *rk->prog);
	}
	rk->prog[rk->nprog++] = in;
}

static void rank_record(struct sim *sm, struct rankst *rk, struct pulse_hook_record *r,
			uint8_t kind, double t, uint32_t tid)
{
	r->kind = kind;
	r->source = PULSE_HOOK_SRC_HOOK;
	r->version = PULSE_HOOK_RECORD_VERSION;
	r->pid = rk->pid;
	r->tid = tid;
	r->time_ns = host_clock(sm, rk->host, t);
	if (rk->nrec == rk->caprec) {
		rk->caprec = rk->caprec ? rk->caprec * 2 : 256;
		rk->rec = xrealloc(rk->rec, rk->caprec * sizeof *rk->rec);
	}
	rk->rec[rk->nrec++] = *r;
}

/* ---------- failures ---------- */
/* Each failure acts on its rank and that rank's NIC while it is active
 * (sc_fail_active: from start_iteration, until end_iteration, on/off); it
 * is switched on and off when its rank starts an iteration. */
static const struct sc_failure *fail_of(const struct sim *sm, int i)
{
	return &sm->s->failures[i];
}

int rank_fail(const struct sim *sm, const struct rankst *rk, int type)
{
	for (int i = 0; i < sm->nfail; i++)
		if ((rk->fail_on & (1u << i)) && fail_of(sm, i)->type == type)
			return i;
	return -1;
}

int rank_fail_any(const struct sim *sm, int rank, int type)
{
	for (int i = 0; i < sm->nfail; i++)
		if (sm->frt[i].rank == rank && fail_of(sm, i)->type == type)
			return i;
	return -1;
}

void fail_stopped(struct sim *sm, int i, double t)
{
	if (i < 0)
		return;
	sm->frt[i].start = t;
	sm->frt[i].ep[0][0] = t;
}

static void refresh_paths(struct sim *sm, int i)
{
	for (int k = 0; k < sm->npaths; k++)
		if (sm->paths[k].fail == i + 1) {
			net_refresh_nic(sm, sm->paths[k].src);
			net_refresh_nic(sm, sm->paths[k].dst);
		}
}

static void fail_activate(struct sim *sm, struct rankst *rk, int i)
{
	const struct sc_failure *f = fail_of(sm, i);
	struct fail_rt *rt = &sm->frt[i];
	int ni = nic_of(sm, rt->rank);
	struct nic *nic = &sm->nics[ni];
	if (!rt->started)
		rt->start = sm->now;
	rt->started = 1;
	rt->on = 1;
	if (rt->nep < SC_FAIL_EPISODES) {
		rt->ep[rt->nep][0] = sm->now;
		rt->ep[rt->nep++][1] = 0;
	}
	rk->fail_on |= 1u << i;
	switch (f->type) {
	case F_NET_CONGESTION:
	case F_VED_BACKGROUND:
		/* background traffic leaves `severity` of the paths out of (or,
		 * ingress, into) the faulty NIC */
		for (int k = 0; k < sm->npaths; k++)
			if (sm->paths[k].fail == i + 1)
				sm->paths[k].factor = f->severity;
		refresh_paths(sm, i);
		break;
	case F_PCIE_DOWNGRADE:
		/* the link at `severity` of its bandwidth: the NIC's DMA reads
		 * (TX) get that share; its posted writes (RX) suffer less */
		nic->txf = f->severity;
		nic->rxf = f->severity * 1.6 < 1 ? f->severity * 1.6 : 1;
		net_refresh_nic(sm, ni);
		break;
	case F_PCIE_CONTENTION:
		/* loopback traffic takes `severity` of the PCIe bandwidth */
		nic->txf = 1 - f->severity;
		nic->rxf = (1 - f->severity) * 1.6 < 1 ? (1 - f->severity) * 1.6 : 1;
		net_refresh_nic(sm, ni);
		break;
	case F_VED_INCAST:
		/* incast of background flows into this NIC: its RX link is shared */
		nic->rxf = f->severity;
		net_refresh_nic(sm, ni);
		break;
	case F_MEM_MISALIGN:
	case F_HOLMES_PERSISTENT:
	case F_VT_SLOW_TRANSMISSION:
		/* the sender's reads are slow: TX only */
		nic->txf = f->severity;
		net_refresh_nic(sm, ni);
		break;
	case F_CROSS_NUMA:
	case F_HOLMES_FLUCTUATION:
	case F_HOLMES_SPIKE:
		nic->fluct_lo = f->severity;
		nic->fluct_fail = i;
		heap_push(&sm->q, sm->now, EV_NIC_RATE, NULL, (uint32_t)ni, nic->rate_ver);
		break;
	case F_NIC_DOWN:
		nic->arm_down = 1;
		break;
	case F_GPU_THROTTLING:
		rk->compute_f = pow(700.0 / f->severity, 0.6);
		break;
	case F_CPU_CONTENTION:
		/* stress on (severity x) all cores: the proxy thread and the
		 * training loop get a fraction of a core */
		rk->px_on = 1e6;
		rk->px_off = 1e6 * f->severity * f->severity;
		rk->px_a = rk->px_b = sm->now;
		rk->cpu_f = 1 + 3 * f->severity;
		break;
	case F_CPU_THROTTLING:
		/* powersave governor: everything on the CPU ~2.5x slower */
		rk->proxy_f = 2.5;
		rk->px_on = 2e6;
		rk->px_off = 0.5e6;
		rk->px_a = rk->px_b = sm->now;
		rk->cpu_f = 4.5;
		break;
	case F_CUDA_EXEC_ERROR:
		/* the allocation fails at the start of the iteration: the process
		 * raises and never calls again; its queued kernels never run */
		rk->stopped = 1;
		rk->gpu_dead = 1;
		break;
	default:
		break;
	}
}

/* A fail-slow clears (transient, intermittent): the rank and NIC are
 * healthy again from now on. */
static void fail_deactivate(struct sim *sm, struct rankst *rk, int i)
{
	const struct sc_failure *f = fail_of(sm, i);
	struct fail_rt *rt = &sm->frt[i];
	int ni = nic_of(sm, rt->rank);
	struct nic *nic = &sm->nics[ni];
	rt->on = 0;
	if (rt->nep > 0 && rt->ep[rt->nep - 1][1] == 0)
		rt->ep[rt->nep - 1][1] = sm->now;
	rk->fail_on &= ~(1u << i);
	switch (f->type) {
	case F_NET_CONGESTION:
	case F_VED_BACKGROUND:
		for (int k = 0; k < sm->npaths; k++)
			if (sm->paths[k].fail == i + 1)
				sm->paths[k].factor = 1;
		refresh_paths(sm, i);
		break;
	case F_CROSS_NUMA:
	case F_HOLMES_FLUCTUATION:
	case F_HOLMES_SPIKE:
		nic->rate_ver++; /* its pending rate change is void */
		/* fall through */
	case F_PCIE_DOWNGRADE:
	case F_PCIE_CONTENTION:
	case F_VED_INCAST:
	case F_MEM_MISALIGN:
	case F_HOLMES_PERSISTENT:
	case F_VT_SLOW_TRANSMISSION:
		nic->txf = nic->rxf = 1;
		net_refresh_nic(sm, ni);
		break;
	case F_GPU_THROTTLING:
		rk->compute_f = 1;
		break;
	case F_CPU_CONTENTION:
	case F_CPU_THROTTLING:
		rk->px_on = rk->px_off = 0;
		rk->proxy_f = 1;
		rk->cpu_f = 1;
		break;
	default: /* the others act through fail_on (or never clear) */
		break;
	}
}

static void fail_maybe_activate(struct sim *sm, struct rankst *rk, int iter)
{
	for (int i = 0; i < sm->nfail; i++) {
		if (sm->frt[i].rank != rk->g)
			continue;
		int want = sc_fail_active(fail_of(sm, i), iter);
		if (want && !sm->frt[i].on)
			fail_activate(sm, rk, i);
		else if (!want && sm->frt[i].on)
			fail_deactivate(sm, rk, i);
	}
}

/* ---------- rank programs ---------- */
/* A rank is a CPU thread issuing calls and a GPU stream executing them in
 * order. The CPU runs ahead of the GPU: a compute phase costs it only
 * cpu_frac of the phase (kernel launches), an operator call call_ns; it
 * blocks when gpu_queue items are waiting on the stream, and at the end of
 * an iteration (the loss/optimizer step synchronises with the GPU). An
 * operator call posts the rank's receive buffers (its proxy can accept
 * `slots` slices); its kernel starts when the stream reaches it and only
 * then sends, and drains received slices. */
static void cpu_step(struct sim *sm, struct rankst *rk);

static void gq_push(struct rankst *rk, struct gitem it)
{
	if (rk->gq_n == rk->gq_cap) {
		size_t nc = rk->gq_cap ? rk->gq_cap * 2 : 8;
		struct gitem *nq = xcalloc(nc, sizeof *nq);
		for (size_t i = 0; i < rk->gq_n; i++)
			nq[i] = rk->gq[(rk->gq_head + i) % rk->gq_cap];
		free(rk->gq);
		rk->gq = nq;
		rk->gq_cap = nc;
		rk->gq_head = 0;
	}
	rk->gq[(rk->gq_head + rk->gq_n++) % rk->gq_cap] = it;
}

static double launch_latency(struct sim *sm, const struct rankst *rk)
{
	(void)rk;
	return sm->s->launch_ns * sc_rng_range(&sm->rng, 0.8, 1.2);
}

static void cpu_wake(struct sim *sm, struct rankst *rk)
{
	if (rk->stopped)
		return;
	if ((rk->waiting == 3 && rk->gq_n < (size_t)sm->s->gpu_queue) ||
	    (rk->waiting == 4 && rk->gq_n == 0 && !rk->gpu_busy)) {
		rk->waiting = 0;
		if (rk->t_cpu < sm->now)
			rk->t_cpu = sm->now;
		cpu_step(sm, rk);
	}
}

static void gpu_kick(struct sim *sm, struct rankst *rk)
{
	if (rk->gpu_busy || rk->gq_n == 0 || rk->gpu_dead)
		return;
	struct gitem it = rk->gq[rk->gq_head];
	rk->gq_head = (rk->gq_head + 1) % rk->gq_cap;
	rk->gq_n--;
	rk->gpu_busy = 1;
	if (it.nparts == 0) {
		double d = it.dur;
		int fi = rank_fail(sm, rk, F_GPU_EXEC_ERROR);
		if (fi >= 0 && (it.phase == PH_FWD || it.phase == PH_BWD || it.phase == PH_EXPERT)) {
			/* invalid address access: the kernel faults; the process dies
			 * at its next CUDA call (no more records) */
			rk->gpu_dead = 1;
			rk->stopped = 1;
			fail_stopped(sm, fi, sm->now + d * sc_rng_range(&sm->rng, 0.1, 0.9));
			return;
		}
		heap_push(&sm->q, sm->now + d, EV_GPU_DONE, rk, 0, 0);
	} else {
		rk->gpu_pending = it.nparts;
		double tl = sm->now + launch_latency(sm, rk);
		for (int i = 0; i < it.nparts; i++)
			heap_push(&sm->q, tl, EV_LAUNCH, it.parts[i], 0, 0);
		free(it.parts);
	}
	cpu_wake(sm, rk);
}

static void gpu_done(struct sim *sm, struct rankst *rk)
{
	rk->gpu_busy = 0;
	gpu_kick(sm, rk);
	cpu_wake(sm, rk);
}

static void rank_part_done(struct sim *sm, struct part *pt)
{
	struct rankst *rk = pt->rk;
	if (--rk->gpu_pending == 0)
		gpu_done(sm, rk);
}

static void rank_finish(struct sim *sm, struct rankst *rk)
{
	rk->done_t = sm->now;
	sm->nactive_ranks--;
	rk->pc = rk->nprog + 1;
}

static double cpu_cost(struct sim *sm, const struct rankst *rk, double base)
{
	return base * rk->cpu_f;
	(void)sm;
}

static void bev_log(struct sim *sm, int kind, int iter, int rank, double t0, double t1)
{
	if (sm->nbevs == sm->capbevs) {
		sm->capbevs = sm->capbevs ? sm->capbevs * 2 : 64;
		sm->bevs = xrealloc(sm->bevs, sm->capbevs * sizeof *sm->bevs);
	}
	sm->bevs[sm->nbevs++] = (struct bev_rec){ kind, iter, rank, t0, t1 };
}

/* A job restart (events.restart_after): every process exits once its GPU
 * is idle (clean: it destroys its communicators; else it is killed and
 * writes nothing), and when the last one is gone, the scheduler starts new
 * processes restart_ns later: new pids, new communicators (new ids, QPs
 * with new numbers, generation 1, created with the workload), resuming
 * from the iteration after the restart. No process runs in between. */
static void restart_exit(struct sim *sm, struct rankst *rk, double dur)
{
	if (sm->s->ev.restart_clean)
		comms_destroy_rank(sm, rk, 0, rk->t_cpu);
	rk->exit_t = rk->t_cpu;
	rk->pc++;
	rk->waiting = 5; /* released by the last process to exit */
	if (++sm->restart_n < sm->nranks)
		return;
	double base = 0;
	for (int r = 0; r < sm->nranks; r++)
		if (sm->ranks[r].exit_t > base)
			base = sm->ranks[r].exit_t;
	base += dur;
	for (int r = 0; r < sm->nranks; r++) {
		struct rankst *q = &sm->ranks[r];
		uint32_t pid;
		int dup;
		do { /* a pid no process of the host has had */
			pid = 2000 + (uint32_t)(sc_rng_next(&sm->erng) % 200000);
			dup = 0;
			for (int k = 0; k < sm->nranks; k++) {
				const struct rankst *o = &sm->ranks[k];
				if (o->host == q->host && (o->pid == pid || o->pid + 3 == pid ||
							   o->pid == pid + 3 || (k < r && o->pid_old == pid)))
					dup = 1;
			}
		} while (dup);
		q->pid_old = q->pid;
		q->nrec_old = q->nrec;
		q->pid = q->tid = pid;
		q->group_ctr = 0; /* a new process numbers its groups from 1 */
	}
	comms_init(sm, 1, base);
	sm->pause_until = base;
	for (int r = 0; r < sm->nranks; r++) {
		struct rankst *q = &sm->ranks[r];
		bev_log(sm, BEV_RESTART, q->iter, q->g, q->exit_t, q->t_cpu);
		q->waiting = 1;
		heap_push(&sm->q, q->t_cpu, EV_RESUME, q, 0, 0);
	}
}

static void cpu_step(struct sim *sm, struct rankst *rk)
{
	const struct sc_scenario *s = sm->s;
	while (!rk->stopped && !rk->waiting && rk->pc < rk->nprog) {
		const struct instr *in = &rk->prog[rk->pc];
		if (rk->t_cpu < sm->now)
			rk->t_cpu = sm->now;
		if (rk->t_cpu > sm->now) {
			rk->waiting = 1;
			heap_push(&sm->q, rk->t_cpu, EV_RESUME, rk, 0, 0);
			return;
		}
		switch (in->kind) {
		case I_ITER:
			rk->iter = in->a;
			if (sm->now < sm->iter_start[in->a])
				sm->iter_start[in->a] = sm->now;
			fail_maybe_activate(sm, rk, in->a);
			rk->pc++;
			break;
		case I_ITER_END:
			/* the step synchronises with the GPU */
			if (rk->gq_n > 0 || rk->gpu_busy) {
				rk->waiting = 4;
				return;
			}
			if (sm->now > sm->iter_end[in->a])
				sm->iter_end[in->a] = sm->now;
			sm->iter_nend[in->a]++;
			rk->t_cpu += cpu_cost(sm, rk, 20e3);
			rk->pc++;
			break;
		case I_COMPUTE: {
			if (rk->gq_n >= (size_t)s->gpu_queue) {
				rk->waiting = 3;
				return;
			}
			double d = sim_jitter(sm, in->dur) * rk->compute_f;
			int vf = in->phase == PH_FWD   ? rank_fail(sm, rk, F_VT_SLOW_FORWARD)
				 : in->phase == PH_BWD ? rank_fail(sm, rk, F_VT_SLOW_BACKWARD)
						       : -1;
			if (vf >= 0 && (fail_of(sm, vf)->micro_batch < 0 || in->a == fail_of(sm, vf)->micro_batch + 1))
				d *= fail_of(sm, vf)->severity;
			struct gitem it = { d, NULL, 0, in->phase };
			gq_push(rk, it);
			rk->t_cpu += cpu_cost(sm, rk, in->dur * s->cpu_frac);
			rk->pc++;
			gpu_kick(sm, rk);
			break;
		}
		case I_GSTART: {
			struct pulse_hook_record r;
			memset(&r, 0, sizeof r);
			rk->group_id = ++rk->group_ctr;
			rk->in_group = 1;
			r.u.group.group_id = rk->group_id;
			r.u.group.depth = 1;
			rank_record(sm, rk, &r, PULSE_HOOK_GROUP_START, rk->t_cpu, rk->tid);
			rk->t_cpu += cpu_cost(sm, rk, 300);
			rk->pc++;
			break;
		}
		case I_OP: {
			uint64_t seq = rk->hook_seq[in->comm]++;
			struct part *pt = op_call(sm, rk, in, seq, rk->in_group ? rk->group_id : 0);
			struct pulse_hook_record r;
			memset(&r, 0, sizeof r);
			r.u.op.comm_id = sm->comms[in->comm].id;
			r.u.op.seq = seq;
			unsigned dsz = in->dtype == 7 ? 4 : 2; /* float32 or bfloat16 */
			r.u.op.count = in->bytes / dsz;
			r.u.op.stream = 0x7f3a40000000ull + (uint64_t)rk->gpu * 0x1000;
			r.u.op.group_id = rk->in_group ? rk->group_id : 0;
			r.u.op.root_peer = in->peer;
			r.u.op.type = in->type;
			r.u.op.datatype = in->dtype;
			r.u.op.redop = (in->type == PULSE_HOOK_OP_ALLREDUCE ||
					in->type == PULSE_HOOK_OP_REDUCESCATTER ||
					in->type == PULSE_HOOK_OP_REDUCE)
					       ? 0
					       : 0xff;
			rank_record(sm, rk, &r, PULSE_HOOK_OP, rk->t_cpu, rk->tid);
			rk->t_cpu += cpu_cost(sm, rk, s->call_ns);
			rk->pc++;
			if (rk->in_group) {
				if (rk->ngrp == rk->capgrp) {
					rk->capgrp = rk->capgrp ? rk->capgrp * 2 : 16;
					rk->grp = xrealloc(rk->grp, (size_t)rk->capgrp * sizeof *rk->grp);
				}
				rk->grp[rk->ngrp++] = pt;
			} else {
				op_posted(sm, pt);
				struct part **one = xcalloc(1, sizeof *one);
				one[0] = pt;
				struct gitem it = { 0, one, 1, PH_OTHER };
				gq_push(rk, it);
				gpu_kick(sm, rk);
			}
			break;
		}
		case I_GEND: {
			struct pulse_hook_record r;
			memset(&r, 0, sizeof r);
			r.u.group.group_id = rk->group_id;
			r.u.group.depth = 1;
			rank_record(sm, rk, &r, PULSE_HOOK_GROUP_END, rk->t_cpu, rk->tid);
			rk->t_cpu += cpu_cost(sm, rk, 300);
			rk->in_group = 0;
			rk->pc++;
			if (rk->ngrp > 0) {
				struct part **ps = xcalloc((size_t)rk->ngrp, sizeof *ps);
				memcpy(ps, rk->grp, (size_t)rk->ngrp * sizeof *ps);
				for (int i = 0; i < rk->ngrp; i++)
					op_posted(sm, ps[i]);
				struct gitem it = { 0, ps, rk->ngrp, PH_OTHER };
				rk->ngrp = 0;
				gq_push(rk, it);
				gpu_kick(sm, rk);
			}
			break;
		}
		case I_EVENT: {
			/* a checkpoint or the end of an evaluation waits for the GPU
			 * (the state is copied off it; the loss is read back), and so
			 * does a process that exits */
			if ((in->a == BEV_CHECKPOINT || in->a == BEV_EVAL_END || in->a == BEV_RESTART) &&
			    (rk->gq_n > 0 || rk->gpu_busy)) {
				rk->waiting = 4;
				return;
			}
			if (in->a == BEV_RESTART) {
				restart_exit(sm, rk, in->dur);
				return;
			}
			bev_log(sm, in->a, in->comm, rk->g, rk->t_cpu, rk->t_cpu + in->dur);
			rk->t_cpu += in->dur;
			if (rk->t_cpu > sm->pause_until)
				sm->pause_until = rk->t_cpu;
			rk->pc++;
			break;
		}
		case I_HALT:
			rk->stopped = 1;
			fail_stopped(sm, rank_fail_any(sm, rk->g, F_CCLD_NOT_ENTERED), sm->now);
			rk->pc++;
			return;
		default:
			rk->pc++;
			break;
		}
	}
	if (!rk->stopped && !rk->waiting && rk->pc == rk->nprog)
		rank_finish(sm, rk);
}

/* ---------- set-up ---------- */
static void setup(struct sim *sm, const struct sc_scenario *s)
{
	memset(sm, 0, sizeof *sm);
	sm->s = s;
	/* one direction: the fabric reports to nccl.c, nccl.c to the ranks */
	sm->on_flow_end = conn_flow_end;
	sm->sink.record = rank_record;
	sm->sink.part_done = rank_part_done;
	sc_rng_seed(&sm->rng, s->seed);
	sc_rng_seed(&sm->erng, s->seed ^ 0x5be0cd19137e2179ull);
	sm->nhosts = s->hosts;
	sm->ngpus = s->gpus;
	sm->nranks = s->hosts * s->gpus;
	sm->bw_nvlink = s->nvlink_gbps / 8.0;
	sm->hosts = xcalloc((size_t)s->hosts, sizeof *sm->hosts);
	for (int h = 0; h < s->hosts; h++) {
		struct host *H = &sm->hosts[h];
		snprintf(H->name, sizeof H->name, "host%d", h);
		H->off = sc_rng_range(&sm->rng, -s->clock_offset_ns, s->clock_offset_ns);
		H->drift_ppm = sc_rng_range(&sm->rng, -s->clock_drift_ppm, s->clock_drift_ppm);
		H->poll_phase = sc_rng_range(&sm->rng, 0, 100e3);
	}
	sm->nics = xcalloc((size_t)sm->nranks, sizeof *sm->nics);
	sm->ranks = xcalloc((size_t)sm->nranks, sizeof *sm->ranks);
	for (int h = 0; h < s->hosts; h++) {
		uint32_t used[SC_MAX_GPUS];
		for (int g = 0; g < s->gpus; g++) {
			int i = h * s->gpus + g;
			struct nic *n = &sm->nics[i];
			n->host = h;
			n->gpu = g;
			/* a shared NIC is named after its place on the host, like the
			 * devices of a host with fewer NICs than GPUs */
			int d = g / s->gpus_per_nic;
			snprintf(n->dev, sizeof n->dev, "mlx5_%d", d);
			memset(n->gid, 0, 16);
			n->gid[10] = n->gid[11] = 0xff;
			n->gid[12] = 10;
			n->gid[13] = (uint8_t)h;
			n->gid[14] = (uint8_t)d;
			n->gid[15] = (uint8_t)(1 + (h >> 8));
			snprintf(n->gidstr, sizeof n->gidstr, "::ffff:10.%d.%d.%d", h & 255, d,
				 1 + (h >> 8));
			n->cap = s->nic_gbps / 8.0;
			n->txf = n->rxf = 1;
			n->clk_off = (double)(sc_rng_next(&sm->rng) % 4000000000ull);
			n->clk_rate = 1 + sc_rng_range(&sm->rng, -s->nic_drift_ppm, s->nic_drift_ppm) * 1e-6;
			n->next_qpn = 0x100 + (uint32_t)(sc_rng_next(&sm->rng) % 0x400000);
			struct rankst *rk = &sm->ranks[i];
			rk->g = i;
			rk->host = h;
			rk->gpu = g;
			uint32_t pid;
			for (;;) {
				pid = 2000 + (uint32_t)(sc_rng_next(&sm->rng) % 200000);
				int dup = 0;
				for (int k = 0; k < g; k++)
					if (used[k] == pid || used[k] + 3 == pid || used[k] == pid + 3)
						dup = 1;
				if (!dup)
					break;
			}
			used[g] = pid;
			rk->pid = pid;
			rk->tid = pid;
			rk->compute_f = 1;
			rk->proxy_f = 1;
			rk->cpu_f = 1;
		}
	}
	/* background paths (scenario) and the congestion failure's paths */
	int maxp = s->npaths + sm->nranks * (s->nfailures ? s->nfailures : 1);
	sm->paths = xcalloc((size_t)maxp, sizeof *sm->paths);
	for (int i = 0; i < s->npaths; i++) {
		struct path *p = &sm->paths[sm->npaths++];
		p->src = nic_of(sm, s->paths[i].src_host * s->gpus + s->paths[i].src_gpu);
		p->dst = nic_of(sm, s->paths[i].dst_host * s->gpus + s->paths[i].dst_gpu);
		p->cap = sm->nics[p->src].cap * s->paths[i].frac;
		p->factor = 1;
	}
	sm->nfail = s->nfailures;
	for (int i = 0; i < s->nfailures; i++) {
		const struct sc_failure *f = &s->failures[i];
		sm->frt[i].rank = f->host * s->gpus + f->gpu;
		if (f->type != F_NET_CONGESTION && f->type != F_VED_BACKGROUND)
			continue;
		int src = nic_of(sm, sm->frt[i].rank);
		for (int d = 0; d < sm->nranks; d++) {
			if (sm->nics[d].host == sm->nics[src].host || !nic_used(sm, d))
				continue;
			struct path *p = &sm->paths[sm->npaths++];
			p->src = f->ingress ? d : src;
			p->dst = f->ingress ? src : d;
			p->cap = sm->nics[src].cap;
			p->factor = 1;
			p->fail = i + 1;
		}
	}
	sm->iter_start = xcalloc((size_t)s->iterations, sizeof *sm->iter_start);
	sm->iter_end = xcalloc((size_t)s->iterations, sizeof *sm->iter_end);
	sm->iter_nend = xcalloc((size_t)s->iterations, sizeof *sm->iter_nend);
	for (int i = 0; i < s->iterations; i++)
		sm->iter_start[i] = SC_INF;
}

static void op_free(struct opinst *op)
{
	if (!op)
		return;
	for (int c = 0; c < op->nconn; c++) {
		free(op->conns[c].bytes);
		free(op->conns[c].deps);
		if (op->conns[c].owns_next)
			free(op->conns[c].next);
	}
	free(op->conns);
	free(op->parts);
	free(op->chain);
	free(op->tup);
	free(op->tdn);
	free(op);
}

static void sim_free(struct sim *sm)
{
	for (int i = 0; i < sm->nranks; i++) {
		struct rankst *rk = &sm->ranks[i];
		for (size_t k = 0; k < rk->gq_n; k++)
			free(rk->gq[(rk->gq_head + k) % rk->gq_cap].parts);
		free(rk->gq);
		free(rk->prog);
		free(rk->grp);
		free(rk->hook_seq);
		free(rk->coll_idx);
		free(rk->rec);
		struct nic *n = &sm->nics[i];
		free(n->ev);
		for (struct flow *f = n->txl, *nx; f; f = nx) {
			nx = f->tx_next;
			free(f);
		}
	}
	for (struct flow *f = sm->flow_free, *nx; f; f = nx) {
		nx = f->free_next;
		free(f);
	}
	for (int c = 0; c < sm->ncomms; c++) {
		struct comm *cm = &sm->comms[c];
		for (size_t k = 0; k < cm->ncoll; k++)
			op_free(cm->coll[k]);
		for (int p = 0; p < cm->n * cm->n; p++) {
			for (uint32_t k = 0; k < cm->p2p_cap[p]; k++)
				op_free(cm->p2p_inst[p][k]);
			free(cm->p2p_inst[p]);
		}
		free(cm->coll);
		free(cm->p2p_inst);
		free(cm->p2p_ns);
		free(cm->p2p_nr);
		free(cm->p2p_cap);
		free(cm->ranks);
		free(cm->ring_qpc);
		free(cm->p2p_qpc);
		free(cm->tree_up);
		free(cm->tree_dn);
	}
	free(sm->comms);
	free(sm->qpcs);
	free(sm->q.v);
	free(sm->hosts);
	free(sm->nics);
	free(sm->paths);
	free(sm->ranks);
	free(sm->iter_start);
	free(sm->iter_end);
	free(sm->iter_nend);
	free(sm->bevs);
	free(sm);
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return -1;
	return ru.ru_maxrss;
}

int sc_run(const struct sc_scenario *s, const char *outdir, int pcap, struct sc_stats *st,
	   char *err, size_t errlen)
{
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	struct sim *sm = xcalloc(1, sizeof *sm);
	setup(sm, s);
	if (workload_build(sm)) {
		snprintf(err, errlen, "%s", sm->err);
		sim_free(sm);
		return -1;
	}
	for (int r = 0; r < sm->nranks; r++) {
		struct rankst *rk = &sm->ranks[r];
		rk->hook_seq = xcalloc((size_t)sm->ncomms, sizeof *rk->hook_seq);
		rk->coll_idx = xcalloc((size_t)sm->ncomms, sizeof *rk->coll_idx);
	}
	comms_init(sm, 0, s->start_ns * 0.5);
	sm->nactive_ranks = sm->nranks;
	for (int r = 0; r < sm->nranks; r++) {
		struct rankst *rk = &sm->ranks[r];
		double t = rk->t_cpu > s->start_ns ? rk->t_cpu : s->start_ns;
		rk->t_cpu = t + sc_rng_range(&sm->rng, 0, 50e3);
		heap_push(&sm->q, rk->t_cpu, EV_RESUME, rk, 0, 0);
		rk->waiting = 1;
	}
	struct ev e;
	uint64_t nev = 0;
	double limit = 3600e9;
	while (heap_pop(&sm->q, &e)) {
		if (e.t > limit)
			break;
		sm->now = e.t;
		nev++;
		switch (e.kind) {
		case EV_RESUME: {
			struct rankst *rk = e.p;
			if (rk->waiting == 1)
				rk->waiting = 0;
			cpu_step(sm, rk);
			break;
		}
		case EV_GPU_DONE:
			gpu_done(sm, e.p);
			break;
		case EV_FLOW_DONE: {
			struct flow *f = e.p;
			if (f->ver == e.ver)
				net_flow_done(sm, f);
			break;
		}
		case EV_PROXY_DONE:
			conn_proxy_done(sm, e.p);
			break;
		case EV_ARRIVE:
			conn_arrive(sm, e.p, (int)e.a);
			break;
		case EV_INTRA_END:
			conn_flow_end(sm, e.p, (int)e.a, sm->now);
			break;
		case EV_LAUNCH:
			op_launch(sm, e.p);
			break;
		case EV_OP_DONE:
			op_intra_done(sm, e.p);
			break;
		case EV_NIC_RATE: {
			struct nic *n = &sm->nics[e.a];
			if (e.ver != n->rate_ver) /* its failure cleared since */
				break;
			/* the rate keeps changing through a benign pause (checkpoint,
			 * restart), not after the job ended or hung */
			if (n->down || sm->nactive_ranks == 0 ||
			    (sm->now > sm->last_activity + 50e6 && sm->now > sm->pause_until + 50e6))
				break;
			const struct sc_failure *f = fail_of(sm, n->fluct_fail);
			double next;
			if (f->type == F_HOLMES_SPIKE) {
				/* healthy most of the time, a short deep dip now and then */
				if (n->txf < 1) {
					n->txf = 1;
					next = f->period_ns * sc_rng_range(&sm->rng, 0.5, 1.5);
				} else {
					n->txf = n->fluct_lo;
					next = f->duration_ns;
				}
			} else if (f->type == F_HOLMES_FLUCTUATION) {
				/* periodic: half a period low, half a period healthy */
				n->txf = n->txf < 1 ? 1 : n->fluct_lo;
				next = f->period_ns / 2;
			} else {
				/* cross-NUMA: a rate that wanders between fluct_lo and 1 */
				double v = sc_rng_range(&sm->rng, n->fluct_lo, 1.0);
				n->txf = v;
				n->rxf = v * 1.6 < 1 ? v * 1.6 : 1;
				next = sc_rng_range(&sm->rng, 20e3, 200e3);
			}
			net_refresh_nic(sm, (int)e.a);
			heap_push(&sm->q, sm->now + next, EV_NIC_RATE, NULL, e.a, n->rate_ver);
			break;
		}
		case EV_NIC_DOWN: {
			struct nic *n = &sm->nics[e.a];
			/* it stops sending; what others send to it leaves their NICs
			 * (RC sends, then waits for ACKs that never come) and is lost */
			n->down = 1;
			n->down_t = sm->now;
			n->txf = 0;
			/* the NIC of every GPU that shares it (the failure names one of them) */
			for (int g = (int)e.a; g < sm->nranks && nic_of(sm, g) == (int)e.a; g++)
				fail_stopped(sm, rank_fail_any(sm, g, F_NIC_DOWN), sm->now);
			net_refresh_nic(sm, (int)e.a);
			break;
		}
		default:
			break;
		}
	}
	double end = sm->last_activity;
	for (int r = 0; r < sm->nranks; r++)
		if (sm->ranks[r].done_t > end)
			end = sm->ranks[r].done_t;
	st->hung = sm->nactive_ranks > 0;
	st->sim_ns = end;
	st->sim_events = nev;
	st->flows = sm->stat_flows;
	sm->now = end;
	int rc = out_write_all(sm, outdir, pcap, st);
	if (rc)
		snprintf(err, errlen, "%s", sm->err);
	sim_free(sm);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	st->wall_s = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9;
	st->peak_rss_kb = peak_rss_kb();
	return rc;
}
