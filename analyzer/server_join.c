/* pulse-analyzer's TCP service: the cross-host QP join. Each host's latest
 * MAP is decoded (wire/hook_map.c) into join input; after the maps settle
 * the join (include/pulse/qp_join.h) runs over all of them, and every
 * connected host whose part of the result changed gets a JOIN frame. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/analyzer_wire.h"
#include "pulse/clock_ns.h"
#include "pulse/hook_map.h"
#include "pulse/qp_join.h"
#include "analyzer.h"
#include "server_int.h"

/* A hook_map line (wire/hook_map.c) into h's join input. */
int srv_parse_map(struct host_ent *h, const char *line, size_t len, char *err, size_t errlen)
{
	struct pulse_hook_map m;
	if (pulse_hook_map_from_json(line, len, &m, err, errlen))
		return -1;
	struct pulse_join_qp *qps = calloc((size_t)m.nqps + 1, sizeof *qps);
	struct pulse_join_comm *comms = calloc((size_t)m.ncomms + 1, sizeof *comms);
	if (!qps || !comms) {
		snprintf(err, errlen, "hook_map: out of memory");
		free(qps);
		free(comms);
		pulse_hook_map_free(&m);
		return -1;
	}
	uint32_t iq = 0, ic = 0;
	for (uint32_t i = 0; i < m.nqps; i++) {
		const struct pulse_hook_map_qp *e = &m.qps[i];
		struct pulse_join_qp *q = &qps[iq++];
		snprintf(q->host, sizeof q->host, "%s", h->name);
		snprintf(q->dev, sizeof q->dev, "%s", e->dev);
		q->qpn = e->qpn;
		q->pid = e->pid;
		q->comm_id = e->has_comm ? e->comm_id : 0;
		q->rank = e->rank >= -1 && e->rank < 1 << 24 ? e->rank : -1;
		q->gpu = e->gpu.cuda_dev;
		q->destroyed = e->state == PULSE_HOOK_MAP_QP_DESTROYED;
		if (e->remote_qpn_known) {
			q->connected = 1;
			q->dest_qpn = e->remote_qpn;
		}
		if (e->gid_valid) {
			memcpy(q->remote_gid, e->remote_gid, sizeof q->remote_gid);
			q->gid_valid = 1;
		}
		q->first_ns = 0;
		q->last_ns = q->destroyed && m.t_ns > 0 ? m.t_ns : UINT64_MAX;
	}
	for (uint32_t i = 0; i < m.ncomms; i++) {
		const struct pulse_hook_map_comm *e = &m.comms[i];
		if (e->destroyed)
			continue; /* gone: not a member any more */
		struct pulse_join_comm *c = &comms[ic++];
		c->comm_id = e->comm_id;
		c->pid = e->pid;
		c->rank = e->rank >= -1 && e->rank < 1 << 24 ? e->rank : -1;
		c->nranks = e->nranks >= -1 && e->nranks < 1 << 24 ? e->nranks : -1;
		snprintf(c->host, sizeof c->host, "%s", h->name);
		c->gpu = e->gpu.cuda_dev;
		c->time_ns = e->t_ns;
	}
	pulse_hook_map_free(&m);
	free(h->qps);
	free(h->comms);
	h->qps = qps;
	h->nqps = iq;
	h->comms = comms;
	h->ncomms = ic;
	h->have_map = 1;
	return 0;
}

void srv_run_join(struct an_srv *s)
{
	uint64_t nq = 0, nc = 0;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		nq += s->hosts[i].nqps;
		nc += s->hosts[i].ncomms;
	}
	struct pulse_join_qp *qps = calloc(nq + 1, sizeof *qps);
	uint32_t *owner = calloc(nq + 1, sizeof *owner);
	struct pulse_join_result *res = calloc(nq + 1, sizeof *res);
	struct pulse_join_comm *comms = calloc(nc + 1, sizeof *comms);
	struct pulse_join_comm *mem = calloc(nc + 1, sizeof *mem);
	struct pulse_aw_join_qp *jq = calloc(nq + 1, sizeof *jq);
	struct pulse_aw_join_member *jm = calloc(nc + 1, sizeof *jm);
	if (!qps || !owner || !res || !comms || !mem || !jq || !jm) {
		srv_log(s, "error", "join: out of memory for %" PRIu64 " QPs; not joined", nq);
		goto out;
	}
	uint32_t k = 0, kc = 0;
	for (uint32_t i = 0; i < s->nhosts; i++) {
		for (uint32_t j = 0; j < s->hosts[i].nqps; j++) {
			owner[k] = i;
			qps[k++] = s->hosts[i].qps[j];
		}
		for (uint32_t j = 0; j < s->hosts[i].ncomms; j++)
			comms[kc++] = s->hosts[i].comms[j];
	}
	struct pulse_join_stats js;
	memset(&js, 0, sizeof js);
	if (pulse_qp_join(qps, k, NULL, 0, comms, kc, res, &js)) {
		srv_log(s, "error", "join: out of memory; not joined");
		goto out;
	}
	uint32_t conflicts = 0;
	uint32_t nm = pulse_join_members(comms, kc, mem, &conflicts);
	s->st.join_runs++;
	s->st.join_qps = js.qps;
	s->st.join_paired = js.paired;
	s->st.join_no_partner = js.no_partner;
	s->st.join_ambiguous = js.ambiguous;
	s->st.join_not_connected = js.not_connected;
	for (uint32_t hi = 0; hi < s->nhosts; hi++) {
		struct host_ent *h = &s->hosts[hi];
		if (!h->conn || h->conn->state != C_READY || !h->have_map)
			continue; /* a host without a map has no QPs to join yet */
		uint32_t a = 0, b = 0;
		for (uint32_t i = 0; i < k; i++) {
			if (owner[i] != hi || res[i].status != PULSE_JOIN_PAIRED || res[i].peer < 0 ||
			    (uint32_t)res[i].peer >= k)
				continue;
			const struct pulse_join_qp *q = &qps[i], *r = &qps[res[i].peer];
			struct pulse_aw_join_qp *o = &jq[a++];
			memset(o, 0, sizeof *o);
			snprintf(o->dev, sizeof o->dev, "%s", q->dev);
			o->qpn = q->qpn;
			o->pid = q->pid;
			o->comm_id = q->comm_id;
			o->rank = q->rank;
			snprintf(o->remote_host, sizeof o->remote_host, "%s", r->host);
			o->remote_gpu = res[i].remote_gpu;
			o->remote_rank = res[i].remote_rank;
			o->remote_qpn = r->qpn;
		}
		/* members of every communicator this host takes part in */
		for (uint32_t i = 0; i < nm; i++) {
			int mine = 0;
			for (uint32_t j = 0; j < h->ncomms && !mine; j++)
				mine = h->comms[j].comm_id == mem[i].comm_id;
			if (!mine || mem[i].rank < 0 || mem[i].nranks <= mem[i].rank)
				continue;
			struct pulse_aw_join_member *o = &jm[b++];
			memset(o, 0, sizeof *o);
			o->comm_id = mem[i].comm_id;
			o->rank = mem[i].rank;
			o->nranks = mem[i].nranks;
			snprintf(o->host, sizeof o->host, "%s", mem[i].host);
			o->gpu = mem[i].gpu;
			o->pid = mem[i].pid;
		}
		struct pulse_aw_join j = {.nqps = a, .nmembers = b, .qps = jq, .members = jm};
		snprintf(j.host, sizeof j.host, "%s", h->name);
		char *canon = pulse_aw_join_to_json(&j);
		if (!canon)
			continue;
		if (h->last_join && !strcmp(h->last_join, canon)) {
			free(canon);
			continue;
		}
		j.version = ++s->join_gen;
		j.t_ns = pulse_real_ns();
		char *txt = pulse_aw_join_to_json(&j);
		if (!txt) {
			free(canon);
			continue;
		}
		size_t tl = strlen(txt);
		if (tl > s->cfg.max_payload) {
			s->st.join_oversize++;
			srv_log(s, "warn", "join for %s: %zu bytes over the payload bound; not sent", h->name, tl);
			free(canon);
		} else if (srv_conn_send(s, h->conn, PULSE_AW_JOIN, txt, tl) == 0) {
			s->st.joins_sent++;
			an_host_join_sent(s->state, h->name);
			free(h->last_join);
			h->last_join = canon;
			srv_log(s, "info", "join for %s: %u QPs paired, %u members (generation %" PRIu64 ")",
			     h->name, a, b, j.version);
		} else {
			free(canon);
		}
		free(txt);
	}
out:
	free(qps);
	free(owner);
	free(res);
	free(comms);
	free(mem);
	free(jq);
	free(jm);
}
