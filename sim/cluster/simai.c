/* The SimAI workload: every rank's program from a SimAI/AICB file
 * (simai.h; sim/README.md, "SimAI workloads").
 *
 * Ranks are laid out as Megatron-LM does (TP fastest, then DP, then PP:
 * global rank g = t + TP x (d + DP x s)); expert parallelism splits the DP
 * dimension as Megatron's expert groups do (EP adjacent: an EP group is EP
 * consecutive DP indices, its DP_EP group the DP indices equal modulo EP).
 *
 * An iteration follows SimAI's HYBRID_TRANSFORMER_FWD_IN_BCKWD loop: the
 * forward phase of every layer line in file order (compute, then its
 * communication), then the lines in reverse with their input-gradient and
 * weight-gradient phases, then the update times. AICB unrolls the gradient
 * accumulation steps, one "embedding_layer" line starting each micro-batch;
 * with PP > 1 a stage receives the micro-batch's activations (pp_comm bytes)
 * from the previous stage before it and sends them on after it, and the
 * gradients go the other way in the backward pass (batched send/recv as
 * Megatron's p2p_communication does). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "simai.h"

#define BF16 9

struct job {
	const struct sc_scenario *s;
	const struct simai_workload *w;
	int tp, dp, pp, ep, de;
	int *gid[SG_COUNT]; /* per global rank: the communicator of that group, -1 none */
	int *ppc;
	uint8_t *seg_start, *seg_end; /* per layer line: a micro-batch starts / ends here */
};

static void emit(struct rankst *rk, uint8_t kind, uint8_t type, int comm, uint64_t bytes, int peer,
		 double dur, uint8_t phase)
{
	/* back-to-back compute phases are one GPU item: AICB writes 1 ns for
	 * every phase it did not profile, thousands a step */
	if (kind == I_COMPUTE && rk->nprog && rk->prog[rk->nprog - 1].kind == I_COMPUTE &&
	    rk->prog[rk->nprog - 1].phase == phase) {
		rk->prog[rk->nprog - 1].dur += dur;
		return;
	}
	struct instr in;
	memset(&in, 0, sizeof in);
	in.kind = kind;
	in.type = type;
	in.comm = comm;
	in.bytes = bytes;
	in.peer = peer;
	in.dur = dur;
	in.phase = phase;
	in.dtype = BF16;
	prog_add(rk, in);
}

static void compute(const struct job *j, struct rankst *rk, uint64_t file_ns, uint8_t phase)
{
	double ns = (double)file_ns;
	if (file_ns <= 1 && j->s->simai_compute_ns > 0)
		ns = j->s->simai_compute_ns;
	ns *= j->s->simai_compute_scale;
	if (ns >= 1)
		emit(rk, I_COMPUTE, 0, 0, 0, -1, ns, phase);
}

/* bytes as bf16 elements: even, at least one element */
static uint64_t elems(double b)
{
	uint64_t x = (uint64_t)llround(b);
	x &= ~1ull;
	return x ? x : 2;
}

/* position and size of global rank g in its group of type grp */
static void group_pos(const struct job *j, int g, int grp, int *me, int *n)
{
	int t = g % j->tp, d = (g / j->tp) % j->dp;
	(void)t;
	switch (grp) {
	case SG_TP: *me = g % j->tp; *n = j->tp; break;
	case SG_DP: *me = d; *n = j->dp; break;
	case SG_EP: *me = d % j->ep; *n = j->ep; break;
	case SG_DP_EP:
		*me = j->ep > 1 ? d / j->ep : d;
		*n = j->ep > 1 ? j->de : j->dp;
		break;
	default: *me = 0; *n = 1;
	}
}

static void comm_op(const struct job *j, struct rankst *rk, const struct simai_comm *c)
{
	if (c->op == SA_NONE || c->bytes == 0)
		return;
	int cm = j->gid[c->group][rk->g], me, n;
	if (cm < 0)
		return;
	group_pos(j, rk->g, c->group, &me, &n);
	if (n < 2)
		return;
	double b = (double)c->bytes * j->s->simai_size_scale;
	switch (c->op) {
	case SA_ALLREDUCE: emit(rk, I_OP, PULSE_HOOK_OP_ALLREDUCE, cm, elems(b), -1, 0, 0); break;
	/* the file's size is the whole buffer; NCCL's count is one rank's part */
	case SA_ALLGATHER: emit(rk, I_OP, PULSE_HOOK_OP_ALLGATHER, cm, elems(b / n), -1, 0, 0); break;
	case SA_REDUCESCATTER:
		emit(rk, I_OP, PULSE_HOOK_OP_REDUCESCATTER, cm, elems(b / n), -1, 0, 0);
		break;
	case SA_ALLTOALL: {
		/* a group of send/recv, one n-th of the buffer to each peer */
		uint64_t per = elems(b / n);
		emit(rk, I_GSTART, 0, 0, 0, -1, 0, 0);
		for (int k = 1; k < n; k++) {
			emit(rk, I_OP, PULSE_HOOK_OP_SEND, cm, per, (me + k) % n, 0, 0);
			emit(rk, I_OP, PULSE_HOOK_OP_RECV, cm, per, (me - k + n) % n, 0, 0);
		}
		emit(rk, I_GEND, 0, 0, 0, -1, 0, 0);
		break;
	}
	}
}

static void pp_xfer(const struct job *j, struct rankst *rk, int send, int peer_stage)
{
	emit(rk, I_GSTART, 0, 0, 0, -1, 0, 0);
	emit(rk, I_OP, send ? PULSE_HOOK_OP_SEND : PULSE_HOOK_OP_RECV, j->ppc[rk->g],
	     elems((double)j->w->pp_comm * j->s->simai_size_scale), peer_stage, 0, 0);
	emit(rk, I_GEND, 0, 0, 0, -1, 0, 0);
}

static void make_comms(struct sim *sm, struct job *j)
{
	int TP = j->tp, DP = j->dp, PP = j->pp, EP = j->ep, N = sm->nranks;
	const struct simai_workload *w = j->w;
	int p2p[SG_COUNT] = { 0 };
	for (int i = 0; i < w->nlayers; i++)
		for (int ph = 0; ph < SP_COUNT; ph++)
			if (w->layers[i].comm[ph].op == SA_ALLTOALL)
				p2p[w->layers[i].comm[ph].group] = 1;
	if (EP == 1)
		p2p[SG_DP] |= p2p[SG_DP_EP];
	for (int g = 0; g < SG_COUNT; g++) {
		j->gid[g] = xcalloc((size_t)N, sizeof *j->gid[g]);
		for (int r = 0; r < N; r++)
			j->gid[g][r] = -1;
	}
	j->ppc = xcalloc((size_t)N, sizeof *j->ppc);
	int *m = xcalloc((size_t)N, sizeof *m);
#define RANK(t, d, s) ((t) + TP * ((d) + DP * (s)))
	if (TP > 1)
		for (int s = 0; s < PP; s++)
			for (int d = 0; d < DP; d++) {
				for (int t = 0; t < TP; t++)
					m[t] = RANK(t, d, s);
				int c = comm_create(sm, m, TP, p2p[SG_TP], "tp");
				for (int t = 0; t < TP; t++)
					j->gid[SG_TP][m[t]] = c;
			}
	if (DP > 1)
		for (int s = 0; s < PP; s++)
			for (int t = 0; t < TP; t++) {
				for (int d = 0; d < DP; d++)
					m[d] = RANK(t, d, s);
				int c = comm_create(sm, m, DP, p2p[SG_DP], "dp");
				for (int d = 0; d < DP; d++)
					j->gid[SG_DP][m[d]] = c;
			}
	if (EP > 1)
		for (int s = 0; s < PP; s++)
			for (int t = 0; t < TP; t++)
				for (int k = 0; k < j->de; k++) {
					for (int e = 0; e < EP; e++)
						m[e] = RANK(t, k * EP + e, s);
					int c = comm_create(sm, m, EP, p2p[SG_EP], "ep");
					for (int e = 0; e < EP; e++)
						j->gid[SG_EP][m[e]] = c;
				}
	if (EP > 1 && j->de > 1)
		for (int s = 0; s < PP; s++)
			for (int t = 0; t < TP; t++)
				for (int e = 0; e < EP; e++) {
					for (int k = 0; k < j->de; k++)
						m[k] = RANK(t, k * EP + e, s);
					/* expert data parallelism: DP among the replicas of one expert */
					int c = comm_create(sm, m, j->de, p2p[SG_DP_EP], "dp");
					for (int k = 0; k < j->de; k++)
						j->gid[SG_DP_EP][m[k]] = c;
				}
	if (EP == 1)
		memcpy(j->gid[SG_DP_EP], j->gid[SG_DP], (size_t)N * sizeof *j->gid[SG_DP]);
	for (int r = 0; r < N; r++)
		j->ppc[r] = -1;
	if (PP > 1)
		for (int d = 0; d < DP; d++)
			for (int t = 0; t < TP; t++) {
				for (int s = 0; s < PP; s++)
					m[s] = RANK(t, d, s);
				int c = comm_create(sm, m, PP, 1, "pp");
				for (int s = 0; s < PP; s++)
					j->ppc[m[s]] = c;
			}
#undef RANK
	free(m);
}

/* Micro-batches: each "embedding_layer" line starts one; the last one is
 * as long as the one before it (the lines after it, the loss and the
 * optimizer's all-reduces, belong to no micro-batch). No such line: the
 * whole file is one. */
static void find_microbatches(struct job *j)
{
	const struct simai_workload *w = j->w;
	int n = w->nlayers, prev = -1, last = -1, len = 0;
	j->seg_start = xcalloc((size_t)n, 1);
	j->seg_end = xcalloc((size_t)n, 1);
	for (int i = 0; i < n; i++)
		if (!strcmp(w->layers[i].name, "embedding_layer")) {
			j->seg_start[i] = 1;
			if (prev >= 0) {
				j->seg_end[i - 1] = 1;
				len = i - prev;
			}
			prev = i;
			last = i;
		}
	if (last < 0) {
		j->seg_start[0] = 1;
		j->seg_end[n - 1] = 1;
		return;
	}
	int e = len > 0 && last + len - 1 < n ? last + len - 1 : n - 1;
	j->seg_end[e] = 1;
}

int simai_build(struct sim *sm)
{
	const struct sc_scenario *s = sm->s;
	struct simai_workload w;
	char err[400];
	if (simai_load(s->simai_file, &w, err, sizeof err)) {
		snprintf(sm->err, sizeof sm->err, "simai.file: %s", err);
		return -1;
	}
	if (simai_check_gpus(&w, sm->nranks, err, sizeof err)) {
		snprintf(sm->err, sizeof sm->err, "%s", err);
		simai_free(&w);
		return -1;
	}
	struct job j;
	memset(&j, 0, sizeof j);
	j.s = s;
	j.w = &w;
	j.tp = w.tp;
	j.pp = w.pp;
	j.ep = w.ep;
	j.dp = sm->nranks / (w.tp * w.pp);
	j.de = j.dp / w.ep;
	make_comms(sm, &j);
	find_microbatches(&j);
	uint64_t update = 0;
	for (int i = 0; i < w.nlayers; i++)
		update += w.layers[i].update_ns;
	for (int r = 0; r < sm->nranks; r++) {
		struct rankst *rk = &sm->ranks[r];
		int st = r / (j.tp * j.dp);
		int prev = j.pp > 1 && st > 0, next = j.pp > 1 && st < j.pp - 1;
		for (int it = 0; it < s->iterations; it++) {
			emit(rk, I_ITER, 0, 0, 0, -1, 0, 0);
			rk->prog[rk->nprog - 1].a = it;
			for (int i = 0; i < w.nlayers; i++) {
				const struct simai_layer *y = &w.layers[i];
				if (prev && j.seg_start[i])
					pp_xfer(&j, rk, 0, st - 1);
				compute(&j, rk, y->compute_ns[SP_FWD], PH_FWD);
				comm_op(&j, rk, &y->comm[SP_FWD]);
				if (next && j.seg_end[i])
					pp_xfer(&j, rk, 1, st + 1);
			}
			for (int i = w.nlayers - 1; i >= 0; i--) {
				const struct simai_layer *y = &w.layers[i];
				if (next && j.seg_end[i])
					pp_xfer(&j, rk, 0, st + 1);
				compute(&j, rk, y->compute_ns[SP_IG], PH_BWD);
				comm_op(&j, rk, &y->comm[SP_IG]);
				compute(&j, rk, y->compute_ns[SP_WG], PH_BWD);
				comm_op(&j, rk, &y->comm[SP_WG]);
				if (prev && j.seg_start[i])
					pp_xfer(&j, rk, 1, st - 1);
			}
			compute(&j, rk, update, PH_OPT);
			emit(rk, I_ITER_END, 0, 0, 0, -1, 0, 0);
			rk->prog[rk->nprog - 1].a = it;
		}
	}
	for (int g = 0; g < SG_COUNT; g++)
		free(j.gid[g]);
	free(j.ppc);
	free(j.seg_start);
	free(j.seg_end);
	simai_free(&w);
	return 0;
}
