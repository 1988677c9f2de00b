/* pulse-host-agent: the host's mapping, built from the interception records
 * (include/pulse/hook_record.h) that hook_drain.c drains:
 *   local QP (device, QPN) -> port, pid, GPU, communicator id and rank,
 *                             remote GID and remote QPN (from the RTR);
 *   communicator (pid, comm id) -> rank, nranks, GPU, parent, how.
 * A QP is tied to a communicator when it was created in that process while
 * the communicator's init call ran: the init record comes after the call
 * returns, with the call's start time, so the QPs of the same pid whose
 * time is at or after that start, and that no earlier init claimed, are its
 * QPs (NCCL connects its QPs during init). QPs NCCL connects lazily, after
 * init, stay without a communicator (comm_id null, rank -1).
 * Profiler annotations (PULSE_HOOK_F_ANNOTATION) add NCCL's commHash and
 * nNodes to the hook's communicator and never make a second one.
 * Profiler net records (PULSE_HOOK_NET_QP: the QPN NCCL posted an
 * operator's work requests on) tie the QP of that process and QPN to the
 * record's communicator and rank: this wins over the init-time heuristic
 * (it is what NCCL did, not a guess) and covers QPs connected after init.
 * A QPN the hook never saw (no hook, or the plugin alone) becomes a QP of
 * state "net" with an unknown device (the record has NCCL's device index,
 * not a name); a later QP_CREATE of that pid and QPN adopts it. A QPN that
 * several live QPs of the process share (two devices) is left untied.
 * Net records never make a communicator, an operator or a QP creation, and
 * their counters (bytes, work requests) are not kept here: the mapping
 * changes, and a line is written, only when a tie changes.
 *
 * The mapping is written as one "hook_map" JSON line when it changed, by
 * the codec the analyzer reads it with (include/pulse/hook_map.h,
 * wire/hook_map.c); "comm_from" says how a QP was tied: "init" (the
 * init-time heuristic), "net" (a profiler net record) or null (untied). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "pulse/hook_map.h"

/* map_qp.state beyond agent.h's 1 created, 2 RTR, 3 destroyed: */
#define QP_NET PULSE_HOOK_MAP_QP_NET /* known only from a profiler net record */
/* map_qp.have_comm: 0 untied, 1 by the init-time heuristic, 2 by a net record */
#define QP_COMM_NET 2

void qp_map_init(struct qp_map *m)
{
	memset(m, 0, sizeof *m);
}

void qp_map_free(struct qp_map *m)
{
	free(m->qps);
	free(m->comms);
	memset(m, 0, sizeof *m);
}

static int grow(void **p, uint32_t *cap, uint32_t n, size_t elem, uint32_t max)
{
	if (n < *cap)
		return 0;
	if (*cap >= max)
		return -1;
	uint32_t nc = *cap ? *cap * 2 : 64;
	if (nc > max)
		nc = max;
	void *q = realloc(*p, (size_t)nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

/* A zeroed communicator entry for (pid, comm id), or NULL (counted) when
 * the table is at its cap. */
static struct map_comm *new_comm(struct qp_map *m, uint32_t pid, uint64_t comm_id)
{
	if (grow((void **)&m->comms, &m->capcomms, m->ncomms, sizeof *m->comms, QP_MAP_MAX_COMMS)) {
		m->full_drops++;
		return NULL;
	}
	struct map_comm *c = &m->comms[m->ncomms++];
	memset(c, 0, sizeof *c);
	c->pid = pid;
	c->comm_id = comm_id;
	return c;
}

/* Keyed by process too: a QPN is unique on a device only among live QPs. */
static struct map_qp *find_qp(struct qp_map *m, uint32_t pid, const char *dev, uint32_t qpn)
{
	for (uint32_t i = 0; i < m->nqps; i++)
		if (m->qps[i].qpn == qpn && m->qps[i].pid == pid && !strcmp(m->qps[i].dev, dev))
			return &m->qps[i];
	return NULL;
}

static struct map_comm *find_comm(struct qp_map *m, uint32_t pid, uint64_t id)
{
	for (uint32_t i = 0; i < m->ncomms; i++)
		if (m->comms[i].pid == pid && m->comms[i].comm_id == id)
			return &m->comms[i];
	return NULL;
}

static void apply_comm_init(struct qp_map *m, const struct pulse_hook_record *r)
{
	const struct pulse_hook_comm_body *b = &r->u.comm;
	struct map_comm *c = find_comm(m, r->pid, b->comm_id);
	if (r->flags & PULSE_HOOK_F_ANNOTATION) {
		/* The profiler's view of a communicator the hook records. NCCL
		 * calls the plugin inside the init call, the hook writes its
		 * record when the call returns: the annotation usually comes
		 * first. It then holds the place (same pid and comm id, so never
		 * a second communicator) until the hook's record fills it in. */
		if (!c && b->comm_id) {
			c = new_comm(m, r->pid, b->comm_id);
			if (!c)
				return;
			c->rank = b->rank;
			c->nranks = b->nranks;
			c->how = PULSE_HOOK_HOW_PROFILER;
			c->source = PULSE_HOOK_SRC_PROFILER;
			c->time_ns = r->time_ns;
			c->gpu.cuda_dev = -1;
			m->dirty = 1;
		}
		if (c && (c->nccl_hash != b->nccl_hash || c->nnodes != b->nnodes)) {
			c->nccl_hash = b->nccl_hash;
			c->nnodes = b->nnodes;
			if (c->rank < 0 && b->rank >= 0)
				c->rank = b->rank;
			if (c->nranks < 0 && b->nranks >= 0)
				c->nranks = b->nranks;
			m->dirty = 1;
		}
		return;
	}
	if (b->result != 0) {
		/* the init failed: no communicator, nor the place its annotation held */
		if (c && c->source == PULSE_HOOK_SRC_PROFILER && c->how == PULSE_HOOK_HOW_PROFILER &&
		    r->source == PULSE_HOOK_SRC_HOOK) {
			*c = m->comms[--m->ncomms];
			m->dirty = 1;
		}
		return;
	}
	int held = c && c->source == PULSE_HOOK_SRC_PROFILER && r->source == PULSE_HOOK_SRC_HOOK;
	if (!c) {
		c = new_comm(m, r->pid, b->comm_id);
		if (!c)
			return;
	}
	c->parent_id = b->parent_id;
	c->handle = b->handle;
	c->nccl_hash = b->nccl_hash ? b->nccl_hash : c->nccl_hash;
	/* a split's rank is unknown to the hook (-1): keep the plugin's */
	if (!held || b->rank >= 0)
		c->rank = b->rank;
	if (!held || b->nranks >= 0)
		c->nranks = b->nranks;
	if (!held || b->nnodes)
		c->nnodes = b->nnodes;
	c->how = b->how;
	c->source = r->source;
	c->destroyed = 0;
	c->time_ns = r->time_ns;
	c->gpu = b->gpu;
	m->dirty = 1;
	/* Its QPs: connected in this process during this init call (any thread:
	 * NCCL's proxy thread may do it). Concurrent inits in one process are
	 * ambiguous: the first to return claims the QPs. */
	for (uint32_t i = 0; i < m->nqps; i++) {
		struct map_qp *q = &m->qps[i];
		if (!q->have_comm && q->pid == r->pid && q->time_ns >= r->time_ns) {
			q->have_comm = 1;
			q->comm_id = b->comm_id;
			q->rank = b->rank;
		}
	}
}

static void apply_comm_destroy(struct qp_map *m, const struct pulse_hook_record *r)
{
	if (r->flags & PULSE_HOOK_F_ANNOTATION)
		return;
	struct map_comm *c = find_comm(m, r->pid, r->u.comm.comm_id);
	if (c && !c->destroyed) {
		c->destroyed = 1;
		if (c->rank < 0 && r->u.comm.rank >= 0) /* a split learns it later */
			c->rank = r->u.comm.rank;
		if (c->nranks < 0 && r->u.comm.nranks >= 0)
			c->nranks = r->u.comm.nranks;
		m->dirty = 1;
	}
}

static void apply_qp(struct qp_map *m, const struct pulse_hook_record *r)
{
	const struct pulse_hook_qp_body *b = &r->u.qp;
	char dev[sizeof b->dev + 1];
	memcpy(dev, b->dev, sizeof b->dev);
	dev[sizeof b->dev] = '\0';
	struct map_qp *q = find_qp(m, r->pid, dev, b->qpn);
	if (!q && r->kind != PULSE_HOOK_QP_DESTROY && b->result == 0) {
		/* a QP first seen in a profiler net record: now its device is known */
		q = find_qp(m, r->pid, "", b->qpn);
		if (q && q->state == QP_NET) {
			memcpy(q->dev, dev, sizeof q->dev);
			q->state = 1;
			m->dirty = 1;
		} else {
			q = NULL;
		}
	}
	if (r->kind == PULSE_HOOK_QP_DESTROY) {
		/* kept, marked, until its process exits: the analyzer still has to
		 * attribute the traffic it carried in the windows before */
		if (q && b->result == 0 && q->state != 3) {
			q->state = 3;
			m->dirty = 1;
		}
		return;
	}
	if (b->result != 0)
		return; /* the call failed: nothing changed on the NIC */
	if (!q || (q->state == 3 && r->kind == PULSE_HOOK_QP_CREATE)) {
		if (!q) {
			if (grow((void **)&m->qps, &m->capqps, m->nqps, sizeof *m->qps, QP_MAP_MAX_QPS)) {
				m->full_drops++;
				return;
			}
			q = &m->qps[m->nqps++];
		}
		/* new, or a QPN reused after a destroy */
		memset(q, 0, sizeof *q);
		memcpy(q->dev, dev, sizeof q->dev);
		q->qpn = b->qpn;
		q->pid = r->pid;
		q->tid = r->tid;
		q->rank = -1;
		q->time_ns = r->time_ns;
		q->state = 1;
	}
	q->gpu = b->gpu;
	if (r->kind == PULSE_HOOK_QP_RTR) {
		q->state = 2;
		q->port = b->port;
		q->dest_qpn = b->dest_qpn;
		q->gid_valid = b->is_global;
		memcpy(q->remote_gid, b->remote_gid, sizeof q->remote_gid);
		if (!q->have_comm) {
			q->tid = r->tid;
			q->time_ns = r->time_ns;
		}
	}
	m->dirty = 1;
}

static void apply_net(struct qp_map *m, const struct pulse_hook_record *r)
{
	const struct pulse_hook_net_qp_body *b = &r->u.net;
	struct map_qp *q = NULL;
	int live = 0;
	for (uint32_t i = 0; i < m->nqps; i++) {
		struct map_qp *x = &m->qps[i];
		if (x->pid != r->pid || x->qpn != b->qpn || x->state == 3)
			continue;
		q = x;
		live++;
	}
	if (live > 1)
		return; /* the same QPN on two devices of this process: which one is unknown */
	if (!q) {
		if (grow((void **)&m->qps, &m->capqps, m->nqps, sizeof *m->qps, QP_MAP_MAX_QPS)) {
			m->full_drops++;
			return;
		}
		q = &m->qps[m->nqps++];
		memset(q, 0, sizeof *q);
		q->qpn = b->qpn;
		q->pid = r->pid;
		q->tid = r->tid;
		q->rank = -1;
		q->time_ns = r->time_ns;
		q->state = QP_NET;
		q->gpu.cuda_dev = -1;
		m->dirty = 1;
	}
	/* PXN: the task is another process's; the communicator is the same,
	 * the rank is not this QP's owner's. */
	int32_t rank = (b->net_flags & PULSE_HOOK_NET_F_NO_PARENT) ? q->rank : b->rank;
	if (q->have_comm != QP_COMM_NET || q->comm_id != b->comm_id || q->rank != rank) {
		q->have_comm = QP_COMM_NET;
		q->comm_id = b->comm_id;
		q->rank = rank;
		m->dirty = 1;
	}
}

void qp_map_apply(struct qp_map *m, const struct pulse_hook_record *r)
{
	switch (r->kind) {
	case PULSE_HOOK_COMM_INIT: apply_comm_init(m, r); break;
	case PULSE_HOOK_COMM_DESTROY: apply_comm_destroy(m, r); break;
	case PULSE_HOOK_QP_CREATE:
	case PULSE_HOOK_QP_RTR:
	case PULSE_HOOK_QP_DESTROY: apply_qp(m, r); break;
	case PULSE_HOOK_NET_QP: apply_net(m, r); break;
	default: break;
	}
}

void qp_map_drop_pid(struct qp_map *m, uint32_t pid)
{
	for (uint32_t i = 0; i < m->nqps;)
		if (m->qps[i].pid == pid) {
			m->qps[i] = m->qps[--m->nqps];
			m->dirty = 1;
		} else {
			i++;
		}
	for (uint32_t i = 0; i < m->ncomms;)
		if (m->comms[i].pid == pid) {
			m->comms[i] = m->comms[--m->ncomms];
			m->dirty = 1;
		} else {
			i++;
		}
}

const char *qp_map_op_name(uint8_t type)
{
	switch (type) {
	case PULSE_HOOK_OP_ALLREDUCE: return "allreduce";
	case PULSE_HOOK_OP_ALLGATHER: return "allgather";
	case PULSE_HOOK_OP_REDUCESCATTER: return "reducescatter";
	case PULSE_HOOK_OP_BROADCAST: return "broadcast";
	case PULSE_HOOK_OP_REDUCE: return "reduce";
	case PULSE_HOOK_OP_ALLTOALL: return "alltoall";
	case PULSE_HOOK_OP_SEND: return "send";
	case PULSE_HOOK_OP_RECV: return "recv";
	case PULSE_HOOK_OP_GATHER: return "gather";
	case PULSE_HOOK_OP_SCATTER: return "scatter";
	case PULSE_HOOK_OP_PUT_SIGNAL: return "put_signal";
	case PULSE_HOOK_OP_SIGNAL: return "signal";
	case PULSE_HOOK_OP_WAIT_SIGNAL: return "wait_signal";
	default: return "other";
	}
}

/* The line itself is written by the one codec (wire/hook_map.c). */
void qp_map_emit(struct qp_map *m)
{
	if (!m->dirty)
		return;
	struct pulse_hook_map w = { 0 };
	w.comms = calloc((size_t)m->ncomms + 1, sizeof *w.comms);
	w.qps = calloc((size_t)m->nqps + 1, sizeof *w.qps);
	FILE *f = w.comms && w.qps ? jsonl_begin() : NULL;
	if (!f && !m->on_line) {
		free(w.comms);
		free(w.qps);
		return;
	}
	m->dirty = 0;
	m->version++;
	w.t_ns = agent_realtime_ns();
	w.version = m->version;
	w.ncomms = m->ncomms;
	w.nqps = m->nqps;
	for (uint32_t i = 0; i < m->ncomms; i++) {
		const struct map_comm *c = &m->comms[i];
		struct pulse_hook_map_comm *o = &w.comms[i];
		o->pid = c->pid;
		o->comm_id = c->comm_id;
		o->parent_id = c->parent_id;
		o->rank = c->rank;
		o->nranks = c->nranks;
		o->how = c->how;
		o->source = c->source;
		o->destroyed = c->destroyed;
		o->nccl_hash = c->nccl_hash;
		o->nnodes = c->nnodes;
		o->t_ns = c->time_ns;
		o->gpu = c->gpu;
	}
	for (uint32_t i = 0; i < m->nqps; i++) {
		const struct map_qp *q = &m->qps[i];
		struct pulse_hook_map_qp *o = &w.qps[i];
		_Static_assert(sizeof o->dev == sizeof q->dev, "device name length");
		memcpy(o->dev, q->dev, sizeof o->dev);
		o->port = q->port;
		o->qpn = q->qpn;
		o->state = q->state;
		o->pid = q->pid;
		o->tid = q->tid;
		o->has_comm = q->have_comm != 0;
		o->comm_from = q->have_comm == QP_COMM_NET ? PULSE_HOOK_MAP_FROM_NET
			       : q->have_comm		   ? PULSE_HOOK_MAP_FROM_INIT
							   : PULSE_HOOK_MAP_UNTIED;
		o->comm_id = q->comm_id;
		o->rank = q->rank;
		o->remote_qpn_known = q->dest_qpn || q->gid_valid;
		o->remote_qpn = q->dest_qpn;
		o->gid_valid = q->gid_valid;
		memcpy(o->remote_gid, q->remote_gid, sizeof o->remote_gid);
		o->gpu = q->gpu;
	}
	/* one text for --out and for on_line (the bus) */
	char *line = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&line, &len);
	if (ms) {
		pulse_hook_map_write(ms, &w);
		fclose(ms);
	}
	if (f) {
		if (line)
			fwrite(line, 1, len, f);
		else
			pulse_hook_map_write(f, &w);
		jsonl_end();
	}
	if (line && m->on_line)
		m->on_line(m->on_line_ctx, line, len);
	free(line);
	free(w.comms);
	free(w.qps);
}
