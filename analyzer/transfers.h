/* pulse-analyzer: the window's transfers, one per (record, peer), and what
 * their own history says about them. Shared by the communication rules
 * (loc_comm_slow.c): the per-transfer rate, the common end of transfers
 * slowed against themselves, and which end of a slow transfer its other
 * transfers blame (the NIC measures only what is sent, so a slow sender
 * and a slow receiver stretch the transfer between them alike). */
#ifndef PULSE_ANALYZER_TRANSFERS_H
#define PULSE_ANALYZER_TRANSFERS_H

#include <stdint.h>

#include "an_internal.h"

/* One transfer: the bytes one record sent to one peer. */
struct an_edge {
	int from, to;   /* nodes */
	double rate;    /* Gb/s while active (observed: volume over the operator's duration) */
	const struct an_rec *rec;
	const struct an_comm *c;
};

/* The window's transfers of at least 1 MiB over min_epochs epochs (their
 * rate is measured; fewer epochs are too coarse). observed: the OP-level
 * variant, point-to-point records only, rate = volume over the operator's
 * duration. Returns a malloc'd array of *np (NULL when none). */
struct an_edge *an_edges_collect(const struct an_state *s, const struct an_window *w, int observed, int min_epochs,
				 uint32_t *np);

/* A directed pair (from, to) of nodes judged against its own rate. */
struct an_pair_judge {
	int from, to;
	int slowed; /* by AN_ACTIVE_OUTLIER */
	double before, after;
};

/* Sorts e by pair, then start. Judges each pair: the median rate of its
 * transfers that start from `after` on against the median of those that
 * start before `before` (before `after` when fewer than three do); three
 * before and two after at least, or the pair is left out. Fills pj (n
 * entries at most; b and a are scratch of n each), returns the count. */
uint32_t an_pairs_judge(uint64_t before, uint64_t after, struct an_edge *e, uint32_t n, struct an_pair_judge *pj,
			double *b, double *a);

/* Which end of the slow transfers sender -> recv their other transfers
 * blame, each pair against its own rate before `from`: recv, sender, or
 * -1 (no other transfer, or both sides alike); counts in *es. */
struct an_edge_sides {
	int in_slowed, in_judged;   /* into the receiver, from others */
	int out_slowed, out_judged; /* from the sender, to others */
};

int an_edge_side(const struct an_state *s, const struct an_window *w, int sender, int recv, uint64_t from,
		 struct an_edge_sides *es);

#endif
