/* The cluster simulator's fluid fabric alone (sim/cluster/engine.c), with
 * no NCCL model and no ranks: flows get the smallest fair share of the
 * sender's TX, the receiver's RX and their path; each flow's progress turns
 * into the sender NIC's coalesced TX events; a finished flow is reported
 * through sm->on_flow_end with the owner and item it was started with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/cluster/internal.h"

#define CAP 50.0 /* bytes per ns: 400 Gb/s */

struct end {
	void *owner;
	int item;
	double t_start, t_end;
};
static struct end ends[16];
static int nends;

static void on_end(struct sim *sm, void *owner, int item, double t_start)
{
	assert_true(nends < 16);
	ends[nends++] = (struct end){ owner, item, t_start, sm->now };
}

static struct sc_scenario scen;

static struct sim *fabric(int nnics)
{
	memset(&scen, 0, sizeof scen);
	scen.mtu = 4096;
	scen.event_max_bytes = 65536;
	scen.event_max_ns = 1000;
	struct sim *sm = xcalloc(1, sizeof *sm);
	sm->s = &scen;
	sm->on_flow_end = on_end;
	sm->nics = xcalloc((size_t)nnics, sizeof *sm->nics);
	for (int i = 0; i < nnics; i++) {
		sm->nics[i].cap = CAP;
		sm->nics[i].txf = sm->nics[i].rxf = 1;
	}
	nends = 0;
	return sm;
}

/* runs the fabric's events up to t_max */
static void run(struct sim *sm, double t_max)
{
	struct ev e;
	while (sm->q.n && sm->q.v[0].t <= t_max && heap_pop(&sm->q, &e)) {
		sm->now = e.t;
		assert_int_equal(e.kind, EV_FLOW_DONE);
		struct flow *f = e.p;
		if (f->ver == e.ver)
			net_flow_done(sm, f);
	}
}

static uint64_t tx_bytes(const struct sim *sm, int nic, uint32_t qpn, int *nlast)
{
	uint64_t b = 0;
	*nlast = 0;
	const struct nic *n = &sm->nics[nic];
	double t = 0;
	for (size_t i = 0; i < n->nev; i++) {
		if (n->ev[i].qpn != qpn)
			continue;
		assert_true(n->ev[i].t >= t); /* a QP's events in time order (the NIC's
					       * are sorted when written out) */
		t = n->ev[i].t;
		b += n->ev[i].bytes & 0x7fffffffu;
		*nlast += !!(n->ev[i].bytes & 0x80000000u);
	}
	return b;
}

static void fabric_free(struct sim *sm)
{
	for (struct flow *f = sm->flow_free, *nx; f; f = nx) {
		nx = f->free_next;
		free(f);
	}
	for (int i = 0; i < 4; i++)
		free(sm->nics[i].ev);
	free(sm->nics);
	free(sm->paths);
	free(sm->q.v);
	free(sm);
}

static void assert_near(double a, double b)
{
	assert_true(a > b - 1e-6 * b - 1e-6 && a < b + 1e-6 * b + 1e-6);
}

/* One flow alone: line rate, the owner and item back at its end, every
 * byte in TX events of at most event_max_bytes, the last one flagged. */
static void test_one_flow(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	int owner;
	net_start_flow(sm, &owner, 7, 1000000, 0, 1, 0x100, 0);
	run(sm, 1e12);
	assert_int_equal(nends, 1);
	assert_ptr_equal(ends[0].owner, &owner);
	assert_int_equal(ends[0].item, 7);
	assert_near(ends[0].t_start, 0);
	assert_near(ends[0].t_end, 1000000 / CAP);
	int nlast;
	assert_int_equal(tx_bytes(sm, 0, 0x100, &nlast), 1000000);
	assert_int_equal(nlast, 1);
	for (size_t i = 0; i < sm->nics[0].nev; i++)
		assert_true((sm->nics[0].ev[i].bytes & 0x7fffffffu) <= 65536);
	assert_int_equal(sm->nics[1].nev, 0); /* the receiver sends nothing */
	assert_int_equal(sm->nics[0].ntx + sm->nics[1].nrx, 0);
	fabric_free(sm);
}

/* Two flows out of one NIC share its TX: each at half the rate; when the
 * short one ends, the other gets the whole line. */
static void test_tx_share(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	int a, b;
	net_start_flow(sm, &a, 0, 1000000, 0, 1, 1, 0);
	net_start_flow(sm, &b, 0, 500000, 0, 2, 2, 0);
	run(sm, 1e12);
	assert_int_equal(nends, 2);
	assert_ptr_equal(ends[0].owner, &b);
	assert_near(ends[0].t_end, 500000 / (CAP / 2));
	assert_ptr_equal(ends[1].owner, &a);
	/* a: 500000 bytes at CAP/2, then 500000 at CAP */
	assert_near(ends[1].t_end, 500000 / (CAP / 2) + 500000 / CAP);
	int nl;
	assert_int_equal(tx_bytes(sm, 0, 1, &nl), 1000000);
	assert_int_equal(tx_bytes(sm, 0, 2, &nl), 500000);
	fabric_free(sm);
}

/* Incast: three senders into one receiver share its RX; a NIC at a third
 * of its rate (a failure) is the bottleneck of its own flow only. */
static void test_rx_share_and_slow_nic(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	int o[3];
	for (int i = 0; i < 3; i++)
		net_start_flow(sm, &o[i], i, 300000, i, 3, (uint32_t)(10 + i), 0);
	run(sm, 1e12);
	assert_int_equal(nends, 3);
	for (int i = 0; i < 3; i++)
		assert_near(ends[i].t_end, 300000 / (CAP / 3));
	fabric_free(sm);

	sm = fabric(4);
	sm->nics[0].txf = 1.0 / 3;
	net_start_flow(sm, &o[0], 0, 100000, 0, 1, 1, 0);
	net_start_flow(sm, &o[1], 1, 100000, 1, 2, 2, 0);
	run(sm, 1e12);
	assert_int_equal(nends, 2);
	assert_ptr_equal(ends[0].owner, &o[1]);
	assert_near(ends[0].t_end, 100000 / CAP);
	assert_near(ends[1].t_end, 100000 / (CAP / 3));
	fabric_free(sm);
}

/* A path with its own capacity and a congestion-control factor bounds the
 * flows on it, and only those. */
static void test_path(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	sm->paths = xcalloc(1, sizeof *sm->paths);
	sm->npaths = 1;
	sm->paths[0] = (struct path){ .src = 0, .dst = 1, .cap = CAP / 2, .factor = 0.5 };
	int a, b;
	net_start_flow(sm, &a, 0, 100000, 0, 1, 1, 0); /* on the path: CAP/2 * 0.5 */
	net_start_flow(sm, &b, 0, 100000, 2, 3, 2, 0); /* elsewhere: line rate */
	run(sm, 1e12);
	assert_int_equal(nends, 2);
	assert_ptr_equal(ends[0].owner, &b);
	assert_near(ends[0].t_end, 100000 / CAP);
	assert_ptr_equal(ends[1].owner, &a);
	assert_near(ends[1].t_end, 100000 / (CAP / 4));
	assert_int_equal(sm->paths[0].n, 0);
	fabric_free(sm);
}

/* A flow that starts while another runs takes its share from then on:
 * start times are the fabric's clock, and a finished flow's slot is reused. */
static void test_late_start_and_reuse(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	int a, b;
	net_start_flow(sm, &a, 1, 1000000, 0, 1, 1, 0);
	run(sm, 10000); /* nothing ends before 20000 ns */
	assert_int_equal(nends, 0);
	sm->now = 10000;
	net_start_flow(sm, &b, 2, 250000, 0, 2, 2, 0);
	run(sm, 1e12);
	assert_int_equal(nends, 2);
	/* a: 500000 by 10000 ns; then both at CAP/2: b ends after 10000 ns more */
	assert_ptr_equal(ends[0].owner, &b);
	assert_near(ends[0].t_start, 10000);
	assert_near(ends[0].t_end, 20000);
	assert_near(ends[1].t_end, 20000 + 250000 / CAP);
	struct flow *free1 = sm->flow_free;
	assert_non_null(free1);
	sm->now = ends[1].t_end;
	net_start_flow(sm, &a, 3, 4096, 1, 0, 3, 0);
	assert_ptr_not_equal(sm->flow_free, free1); /* taken from the free list */
	run(sm, 1e12);
	assert_int_equal(nends, 3);
	assert_int_equal(ends[2].item, 3);
	fabric_free(sm);
}

/* A paced flow (NCCL's LL protocols, proto.c) runs at its own cap even on
 * an idle link, and leaves the rest of the link to the others' share. */
static void test_paced_flow(void **st)
{
	(void)st;
	struct sim *sm = fabric(4);
	int a;
	net_start_flow(sm, &a, 0, 1000000, 0, 1, 1, CAP / 4);
	run(sm, 1e12);
	assert_int_equal(nends, 1);
	assert_near(ends[0].t_end, 4 * 1000000 / CAP);
	int nlast;
	assert_int_equal(tx_bytes(sm, 0, 1, &nlast), 1000000);
	fabric_free(sm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_flow),
		cmocka_unit_test(test_paced_flow),
		cmocka_unit_test(test_tx_share),
		cmocka_unit_test(test_rx_share_and_slow_nic),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_late_start_and_reuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
