/* pulse-host-agent: what feeds the flow-operator association, in live
 * operation and in replay alike: the host's QP join store, the mapping and
 * the analyzer's JOIN into assoc_member/assoc_qp, windows into
 * assoc_window, and each cycle's flush into "op" JSON lines. The poll
 * scheduler (loop.c) calls agent_cycle_begin/agent_cycle_end around the
 * NIC polls. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "analyzer_link.h"
#include "assoc.h"
#include "pulse/bus.h"
#include "pulse/op_record.h"

/* ---- the association's inputs (live and replay alike) ----
 *
 *   every accepted window  -> assoc_window (NIC time -> host time through the
 *                             NIC's clock sync)
 *   every hook record      -> assoc_call (hook_drain.c, hooks_apply)
 *   mapping changes        -> assoc_member (local communicators, and remote
 *                             members from the join) and assoc_qp (every
 *                             local QP on a polled NIC, with its remote end)
 *   end of every cycle     -> assoc_flush -> one "op" JSON line per record
 *                             (wire/op_record.c).
 * A cycle drains the interception first and hands the mapping over, then
 * polls the NICs, so a window's QPs and calls are known when it arrives. */

int agent_grow(void **p, uint32_t *cap, uint32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, (size_t)nc * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

int agent_join_add_qp(struct agent_join *j, const struct pulse_join_qp *q)
{
	if (agent_grow((void **)&j->qps, &j->capqps, j->nqps, sizeof *j->qps))
		return -1;
	j->qps[j->nqps++] = *q;
	j->ran = 0;
	return 0;
}

int agent_join_add_comm(struct agent_join *j, const struct pulse_join_comm *c)
{
	uint32_t cap = j->capcomms;
	if (agent_grow((void **)&j->comms, &j->capcomms, j->ncomms, sizeof *j->comms))
		return -1;
	if (cap != j->capcomms) {
		uint8_t *g = realloc(j->given, j->capcomms);
		if (!g)
			return -1;
		memset(g + cap, 0, j->capcomms - cap);
		j->given = g;
	}
	j->given[j->ncomms] = 0;
	j->comms[j->ncomms++] = *c;
	j->ran = 0;
	return 0;
}

int agent_join_add_gid(struct agent_join *j, const struct pulse_join_gid *g)
{
	if (agent_grow((void **)&j->gids, &j->capgids, j->ngids, sizeof *j->gids))
		return -1;
	j->gids[j->ngids++] = *g;
	j->ran = 0;
	return 0;
}

void agent_join_drop_host(struct agent_join *j, const char *host)
{
	uint32_t w = 0;
	for (uint32_t i = 0; i < j->nqps; i++)
		if (strncmp(j->qps[i].host, host, PULSE_JOIN_HOST_LEN))
			j->qps[w++] = j->qps[i];
	j->nqps = w;
	w = 0;
	for (uint32_t i = 0; i < j->ncomms; i++)
		if (strncmp(j->comms[i].host, host, PULSE_JOIN_HOST_LEN)) {
			j->given[w] = j->given[i];
			j->comms[w++] = j->comms[i];
		}
	j->ncomms = w;
	j->ran = 0;
}

int agent_join_run(struct agent_join *j)
{
	free(j->res);
	j->res = malloc(sizeof *j->res * (j->nqps ? j->nqps : 1));
	j->ran = 0;
	if (!j->res)
		return -1;
	if (pulse_qp_join(j->qps, j->nqps, j->gids, j->ngids, j->comms, j->ncomms, j->res, &j->st))
		return -1;
	j->ran = 1;
	return 0;
}

void agent_join_free(struct agent_join *j)
{
	free(j->qps);
	free(j->comms);
	free(j->gids);
	free(j->res);
	free(j->given);
	free(j->remote);
	memset(j, 0, sizeof *j);
}

void agent_join_qp_from_map(const struct map_qp *q, const char *host, struct pulse_join_qp *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->host, sizeof out->host, "%s", host);
	snprintf(out->dev, sizeof out->dev, "%s", q->dev);
	out->connected = q->state == 2 || (q->state == 3 && (q->dest_qpn || q->gid_valid));
	out->gid_valid = q->gid_valid;
	out->destroyed = q->state == 3;
	memcpy(out->remote_gid, q->remote_gid, 16);
	out->qpn = q->qpn;
	out->dest_qpn = q->dest_qpn;
	out->pid = q->pid;
	out->gpu = q->gpu.cuda_dev;
	out->comm_id = q->have_comm ? q->comm_id : 0;
	out->rank = q->rank;
	out->first_ns = q->time_ns;
	out->last_ns = UINT64_MAX;
}

void agent_join_comm_from_map(const struct map_comm *c, const char *host, struct pulse_join_comm *out)
{
	memset(out, 0, sizeof *out);
	out->comm_id = c->comm_id;
	out->rank = c->rank;
	out->nranks = c->nranks;
	snprintf(out->host, sizeof out->host, "%s", host);
	out->gpu = c->gpu.cuda_dev;
	out->pid = c->pid;
	out->time_ns = c->time_ns;
}

/* Live with an analyzer: the JOIN brings the remote ends of this host's QPs
 * (join_wait.c). */
static int join_expected(const struct agent *a)
{
	return a->alink && a->join && !a->join->fixed;
}

void agent_window_done(struct agent *a, struct agent_nic *n, const struct pulse_window *w,
		       unsigned gap)
{
	if (!a->assoc)
		return;
	uint16_t nic = (uint16_t)(n - a->nics);
	if (join_expected(a))
		join_wait_window(&a->jwait, a->assoc, nic, w, n->cs.offset_ns, gap, agent_realtime_ns());
	else
		assoc_window(a->assoc, nic, w, n->cs.offset_ns, gap);
}

/* The join entry of a local mapping entry: same host, process, device and
 * QPN, the latest incarnation created at or before it. */
static int32_t join_find(const struct agent *a, const struct map_qp *q)
{
	const struct agent_join *j = a->join;
	int32_t best = -1;
	for (uint32_t i = 0; i < j->nqps; i++) {
		const struct pulse_join_qp *e = &j->qps[i];
		if (e->qpn != q->qpn || e->pid != q->pid || strcmp(e->dev, q->dev) ||
		    strncmp(e->host, a->host_name, PULSE_JOIN_HOST_LEN) || e->first_ns > q->time_ns)
			continue;
		if (best < 0 || e->first_ns >= j->qps[best].first_ns)
			best = (int32_t)i;
	}
	return best;
}

/* The analyzer's word on a local QP, if any. */
static const struct pulse_aw_join_qp *remote_find(const struct agent_join *j, const struct map_qp *q)
{
	for (uint32_t i = 0; j && i < j->nremote; i++) {
		const struct pulse_aw_join_qp *r = &j->remote[i];
		if (r->qpn == q->qpn && r->pid == q->pid && !strcmp(r->dev, q->dev) && r->remote_host[0])
			return r;
	}
	return NULL;
}

int agent_qp_remote(const struct agent *a, const char *dev, uint32_t qpn, char *host, size_t hostlen,
		    int32_t *gpu)
{
	const struct qp_map *m = a->hooks ? &a->hooks->map : NULL;
	const struct agent_join *j = a->join;
	const struct map_qp *best = NULL;
	/* a QPN can be reused: the latest mapping entry of it speaks for now */
	for (uint32_t i = 0; m && i < m->nqps; i++) {
		const struct map_qp *q = &m->qps[i];
		if (q->qpn == qpn && !strcmp(q->dev, dev) && (!best || q->time_ns >= best->time_ns))
			best = q;
	}
	*gpu = -1;
	host[0] = '\0';
	if (!best)
		return -1;
	const struct pulse_aw_join_qp *rq = remote_find(j, best);
	if (rq) {
		snprintf(host, hostlen, "%s", rq->remote_host);
		*gpu = rq->remote_gpu;
		return 0;
	}
	int32_t e = j && j->ran ? join_find(a, best) : -1;
	if (e >= 0 && j->res[e].status == PULSE_JOIN_PAIRED) {
		snprintf(host, hostlen, "%.*s", (int)PULSE_JOIN_HOST_LEN, j->qps[j->res[e].peer].host);
		*gpu = j->res[e].remote_gpu;
		return 0;
	}
	return -1;
}

void agent_on_join(void *ctx, const struct pulse_aw_join *jn)
{
	struct agent *a = ctx;
	struct agent_join *j = a->join;
	if (!j || j->fixed)
		return;
	struct pulse_aw_join_qp *r = NULL;
	if (jn->nqps) {
		r = malloc(sizeof *r * jn->nqps);
		if (!r) {
			LOGE("analyzer JOIN: out of memory; remote ends unchanged");
			return;
		}
		memcpy(r, jn->qps, sizeof *r * jn->nqps);
		for (uint32_t i = 0; i < jn->nqps; i++) {
			r[i].dev[sizeof r[i].dev - 1] = '\0';
			r[i].remote_host[sizeof r[i].remote_host - 1] = '\0';
		}
	}
	free(j->remote);
	j->remote = r;
	j->nremote = jn->nqps;
	if (!a->assoc)
		return;
	for (uint32_t i = 0; i < jn->nmembers; i++) {
		const struct pulse_aw_join_member *m = &jn->members[i];
		char host[sizeof m->host + 1];
		memcpy(host, m->host, sizeof m->host);
		host[sizeof m->host] = '\0';
		struct assoc_member am = {.comm_id = m->comm_id, .rank = m->rank, .nranks = m->nranks,
					  .host = host, .gpu = m->gpu, .pid = m->pid,
					  .local = !strcmp(host, a->host_name)};
		assoc_member(a->assoc, &am);
	}
	/* the QPs again, now with their remote ends */
	a->map_version_seen = UINT64_MAX;
}

/* Mapping (and join) into the association, when either changed. */
static void feed_mapping(struct agent *a, uint64_t now_ns)
{
	struct agent_join *j = a->join;
	struct qp_map *m = a->hooks ? &a->hooks->map : NULL;
	int changed = m && m->version != a->map_version_seen;
	if (changed && j && !j->fixed) {
		/* live: this host's part of the join from the mapping as it is now */
		agent_join_drop_host(j, a->host_name);
		struct pulse_join_qp q;
		struct pulse_join_comm c;
		for (uint32_t i = 0; i < m->nqps; i++) {
			agent_join_qp_from_map(&m->qps[i], a->host_name, &q);
			if (agent_join_add_qp(j, &q))
				break;
		}
		for (uint32_t i = 0; i < m->ncomms; i++) {
			agent_join_comm_from_map(&m->comms[i], a->host_name, &c);
			if (agent_join_add_comm(j, &c))
				break;
		}
	}
	if (j && !j->ran) {
		if (agent_join_run(j))
			LOGE("QP join: out of memory; remote ends unknown this cycle");
		changed = 1;
	}
	/* remote communicator members (in replay: once their init happened) */
	if (j)
		for (uint32_t i = 0; i < j->ncomms; i++) {
			const struct pulse_join_comm *c = &j->comms[i];
			if (j->given[i] || c->time_ns > now_ns ||
			    !strncmp(c->host, a->host_name, PULSE_JOIN_HOST_LEN))
				continue;
			j->given[i] = 1;
			struct assoc_member am = {.comm_id = c->comm_id, .rank = c->rank,
						  .nranks = c->nranks, .host = c->host,
						  .gpu = c->gpu, .pid = c->pid, .local = 0};
			assoc_member(a->assoc, &am);
		}
	if (!changed || !m)
		return;
	a->map_version_seen = m->version;
	int waits = join_expected(a);
	if (waits)
		join_wait_reset(&a->jwait);
	for (uint32_t i = 0; i < m->ncomms; i++) {
		const struct map_comm *c = &m->comms[i];
		struct assoc_member am = {.comm_id = c->comm_id, .rank = c->rank, .nranks = c->nranks,
					  .host = a->host_name, .gpu = c->gpu.cuda_dev, .pid = c->pid,
					  .local = 1};
		assoc_member(a->assoc, &am);
	}
	for (uint32_t i = 0; i < m->nqps; i++) {
		const struct map_qp *q = &m->qps[i];
		int nic = -1;
		for (int k = 0; k < a->nnics; k++)
			if (a->nics[k].dev[0] && !strcmp(a->nics[k].dev, q->dev))
				nic = k;
		if (nic < 0)
			continue; /* a device this agent does not poll */
		struct assoc_qp aq = {.nic = (uint16_t)nic, .qpn = q->qpn, .pid = q->pid,
				      .comm_id = q->have_comm ? q->comm_id : 0, .rank = q->rank,
				      .remote_rank = -1, .remote_host = NULL, .remote_gpu = -1};
		const struct pulse_aw_join_qp *rq = remote_find(j, q);
		int32_t e = !rq && j && j->ran ? join_find(a, q) : -1;
		if (rq) {
			aq.remote_rank = rq->remote_rank;
			aq.remote_gpu = rq->remote_gpu;
			aq.remote_host = rq->remote_host;
		} else if (e >= 0 && j->res[e].status == PULSE_JOIN_PAIRED) {
			const struct pulse_join_result *r = &j->res[e];
			aq.remote_rank = r->remote_rank;
			aq.remote_gpu = r->remote_gpu;
			aq.remote_host = j->qps[r->peer].host;
		}
		assoc_qp(a->assoc, &aq);
		if (waits && aq.comm_id && aq.remote_rank < 0 &&
		    join_wait_add(&a->jwait, aq.nic, aq.qpn, q->time_ns,
				  agent_join_wait_ns(a->opt.poll_ns, a->opt.clock_rate)))
			LOGE("QP %u: out of memory; its traffic does not wait for the analyzer's JOIN", q->qpn);
	}
	if (waits) {
		join_wait_sort(&a->jwait);
		if (a->jwait.nqps && now_ns < a->jwait.until)
			LOGI("%u QPs of communicators have no remote end yet: their traffic and operators wait "
			     "for the analyzer's JOIN, %.1f s at most", a->jwait.nqps,
			     (double)(a->jwait.until - now_ns) / 1e9);
	}
}

static void emit_op(void *ctx, const struct pulse_op_record *r)
{
	struct agent *a = ctx;
	char *line = pulse_op_record_to_json(r);
	if (!line) {
		LOGE("op record: cannot encode (out of memory); dropped");
		return;
	}
	FILE *f = jsonl_begin();
	if (f) {
		fputs(line, f);
		fputc('\n', f);
		jsonl_end();
	}
	free(line);
	/* the analyzer gets the record itself, binary where it can take it
	 * (the tee leaves this line to the file: records_direct) */
	if (a->alink)
		alink_op(a->alink, r);
	if (a->bus)
		pulse_bus_put_op(a->bus, r);
	a->op_records++;
}

void agent_cycle_begin(struct agent *a, uint64_t now_ns)
{
	if (!a->assoc)
		return;
	feed_mapping(a, now_ns);
	/* operators wait for the remote ends as their windows do */
	assoc_peers_pending(a->assoc, join_expected(a) && a->jwait.nqps && now_ns < a->jwait.until);
	/* the JOIN came in at the end of the last cycle: the windows that
	 * waited for it first, before this cycle's */
	join_wait_release(&a->jwait, a->assoc, now_ns, 0);
}

void agent_cycle_end(struct agent *a, uint64_t now_ns)
{
	if (a->assoc) {
		assoc_flush(a->assoc, now_ns, emit_op, a);
		uint64_t settled = assoc_settled(a->assoc);
		if (settled)
			jsonl_poll_end(settled);
		/* the analyzer counts a stalled call of this host from the end
		 * of the wait (analyzer/trigger.c), however long the JOIN took */
		if (join_expected(a) && join_wait_pending(&a->jwait, now_ns))
			jsonl_join_wait(a->jwait.nheld, a->jwait.nqps);
	}
	/* the poll's records as one bus message per part; the poll's host
	 * time is its sequence: unique across restarts of this agent, so a
	 * resend is a duplicate and a new run's poll never is */
	if (a->bus) {
		pulse_bus_end_poll(a->bus, a->host_name, now_ns);
		a->bus_seq = now_ns;
	}
}
