/* Parallelism identification (pulse.txt §5.2, Figure 5): a decision tree
 * over what this host sees of each communicator.
 *
 *   collectives dominate the communicator (DP and TP use collectives):
 *     an operator under AS_SMALL_BYTES (loss, metadata) is labelled None
 *     by itself; the communicator is
 *       DP  when it moves more data per operator and is called no more
 *           often than the process's other collective communicators
 *           (gradients, once per iteration or per bucket),
 *       TP  when it is called more often with less per operator
 *           (activations, every layer);
 *     with no other collective communicator in the process to compare
 *     with, a communicator whose members are all on this host is TP (TP
 *     stays inside a host), else DP.
 *   P2P dominates (PP and EP use P2P):
 *     EP  full mesh: one group sends to several peers, or a rank sends to
 *         more than two distinct peers over time; a native all-to-all too;
 *     PP  a sequential pattern: each rank sends to one neighbour (forward)
 *         and at most one more (backward), 1 -> .. -> N -> .. -> 1.
 */
#include <stdlib.h>
#include <string.h>

#include "assoc_int.h"

#define AS_SMALL_BYTES (64u * 1024u)

struct as_comm *as_comm_get(struct assoc *a, uint64_t comm_id, int create)
{
	for (uint32_t i = 0; i < a->ncomms; i++)
		if (a->comms[i].comm_id == comm_id)
			return &a->comms[i];
	if (!create)
		return NULL;
	if (a->ncomms == a->comms_cap) {
		uint32_t nc = a->comms_cap ? a->comms_cap * 2 : 16;
		struct as_comm *p = realloc(a->comms, (size_t)nc * sizeof *p);
		if (!p)
			return NULL;
		a->comms = p;
		a->comms_cap = nc;
	}
	struct as_comm *c = &a->comms[a->ncomms++];
	memset(c, 0, sizeof *c);
	c->comm_id = comm_id;
	return c;
}

static void note_send_peer(struct as_comm *c, int32_t peer)
{
	for (uint32_t i = 0; i < c->nsend_peer && i < 8; i++)
		if (c->send_peer[i] == peer)
			return;
	if (c->nsend_peer < 8)
		c->send_peer[c->nsend_peer] = peer;
	c->nsend_peer++;
}

void as_parallel_note_call(struct assoc *a, const struct as_rank *rs, const struct as_op *op)
{
	struct as_comm *c = as_comm_get(a, rs->comm_id, 1);
	if (!c)
		return;
	if (!c->pid)
		c->pid = rs->pid;
	if (rs->nranks > c->nranks)
		c->nranks = rs->nranks;
	if (!c->first_call)
		c->first_call = op->call_ns;
	c->last_call = op->call_ns;
	uint32_t ds = as_dtype_size(op->datatype);
	uint64_t n = op->count * (ds ? ds : 1);
	switch (op->type) {
	case PULSE_HOOK_OP_ALLREDUCE:
	case PULSE_HOOK_OP_ALLGATHER:
	case PULSE_HOOK_OP_REDUCESCATTER:
	case PULSE_HOOK_OP_BROADCAST:
	case PULSE_HOOK_OP_REDUCE:
		c->n_coll++;
		if (n >= AS_SMALL_BYTES) {
			c->n_coll_big++;
			c->coll_bytes += n;
		}
		break;
	case PULSE_HOOK_OP_ALLTOALL:
		c->n_alltoall++;
		break;
	case PULSE_HOOK_OP_SEND:
		c->n_send++;
		note_send_peer(c, op->root_peer);
		break;
	case PULSE_OP_GROUP:
		if (op->building) {
			/* a member call: counted when the group closes */
			break;
		}
		{
			c->n_groups++;
			uint32_t distinct = 0;
			for (uint32_t i = 0; i < op->ncalls; i++) {
				if (op->calls[i].type != PULSE_HOOK_OP_SEND)
					continue;
				int seen = 0;
				for (uint32_t j = 0; j < i; j++)
					if (op->calls[j].type == PULSE_HOOK_OP_SEND &&
					    op->calls[j].peer == op->calls[i].peer)
						seen = 1;
				if (!seen)
					distinct++;
				c->n_send++;
				note_send_peer(c, op->calls[i].peer);
			}
			if (distinct > c->max_group_peers)
				c->max_group_peers = distinct;
		}
		break;
	default:
		break;
	}
	if (c->nsend_peer > c->send_peers_max)
		c->send_peers_max = c->nsend_peer;
}

static int all_local(const struct assoc *a, uint64_t comm_id)
{
	int any = 0;
	for (uint32_t i = 0; i < a->nmembers; i++) {
		if (a->members[i].comm_id != comm_id)
			continue;
		any = 1;
		if (!a->members[i].local && strcmp(a->members[i].host, a->host) != 0)
			return 0;
	}
	if (!any) {
		/* no membership known: QPs to other hosts say it is not local */
		for (uint32_t i = 0; i < a->nranks_s; i++)
			if (a->ranks[i].comm_id == comm_id && a->ranks[i].nqps)
				return 0;
	}
	return 1;
}

uint8_t as_parallel_label(const struct assoc *a, const struct as_comm *c)
{
	uint64_t coll = c->n_coll;
	uint64_t p2p = c->n_send + c->n_groups;
	if (c->n_alltoall)
		return PULSE_PAR_EP;
	if (coll == 0 && p2p == 0)
		return PULSE_PAR_UNKNOWN;
	if (p2p > coll) {
		if (c->max_group_peers >= 2 || c->nsend_peer > 2)
			return PULSE_PAR_EP;
		return PULSE_PAR_PP;
	}
	if (c->n_coll_big == 0)
		return PULSE_PAR_NONE;
	/* DP or TP: compare with the other collective communicators of the
	 * same process */
	double mine = (double)c->coll_bytes / (double)c->n_coll_big;
	int other = 0, bigger_than_all = 1, fewer_than_all = 1;
	for (uint32_t i = 0; i < a->ncomms; i++) {
		const struct as_comm *o = &a->comms[i];
		if (o == c || o->pid != c->pid || o->n_coll_big == 0 || o->n_alltoall ||
		    o->n_send + o->n_groups > o->n_coll)
			continue;
		other = 1;
		double theirs = (double)o->coll_bytes / (double)o->n_coll_big;
		if (!(mine > theirs))
			bigger_than_all = 0;
		if (c->n_coll_big > o->n_coll_big)
			fewer_than_all = 0;
	}
	if (other) {
		if (bigger_than_all && fewer_than_all)
			return PULSE_PAR_DP;
		if (bigger_than_all || fewer_than_all) {
			/* the two signs disagree: locality decides */
			return all_local(a, c->comm_id) ? PULSE_PAR_TP : PULSE_PAR_DP;
		}
		return PULSE_PAR_TP;
	}
	return all_local(a, c->comm_id) ? PULSE_PAR_TP : PULSE_PAR_DP;
}

uint8_t as_parallel_for_op(const struct assoc *a, const struct as_op *op, uint64_t comm_id)
{
	switch (op->type) {
	case PULSE_HOOK_OP_ALLREDUCE:
	case PULSE_HOOK_OP_ALLGATHER:
	case PULSE_HOOK_OP_REDUCESCATTER:
	case PULSE_HOOK_OP_BROADCAST:
	case PULSE_HOOK_OP_REDUCE: {
		uint32_t ds = as_dtype_size(op->datatype);
		if (op->count * (ds ? ds : 1) < AS_SMALL_BYTES)
			return PULSE_PAR_NONE;
		break;
	}
	default:
		break;
	}
	for (uint32_t i = 0; i < a->ncomms; i++)
		if (a->comms[i].comm_id == comm_id)
			return as_parallel_label(a, &a->comms[i]);
	return PULSE_PAR_UNKNOWN;
}
