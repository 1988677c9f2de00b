/* The cross-host QP join (wire/qp_join.c): pairing by QPN symmetry, GIDs
 * given or learned, communicators and lifetimes; the cases that break a
 * naive join: the same QPN pair on two host pairs, a QP whose partner's
 * records are missing, a destroyed QP whose QPN was reused, QPs that never
 * connected; remote ranks from communicator records; membership. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/qp_join.h"

#define ALIVE UINT64_MAX

static void gid_of(uint8_t gid[16], int host, int dev)
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[14] = (uint8_t)host;
	gid[15] = (uint8_t)dev;
}

/* A connected QP on host<h>/mlx5_<d> whose remote end is on host<rh>/mlx5_<rd>. */
static struct pulse_join_qp qp(int h, int d, uint32_t qpn, uint32_t dest, int rh, int rd,
			       uint64_t comm, int32_t rank, uint64_t first, uint64_t last)
{
	struct pulse_join_qp q;
	memset(&q, 0, sizeof q);
	snprintf(q.host, sizeof q.host, "host%d", h);
	snprintf(q.dev, sizeof q.dev, "mlx5_%d", d);
	q.connected = 1;
	q.gid_valid = 1;
	gid_of(q.remote_gid, rh, rd);
	q.qpn = qpn;
	q.dest_qpn = dest;
	q.pid = (uint32_t)(100 * h + d);
	q.gpu = d;
	q.comm_id = comm;
	q.rank = rank;
	q.first_ns = first;
	q.last_ns = last;
	return q;
}

static struct pulse_join_gid gid(int h, int d)
{
	struct pulse_join_gid g;
	memset(&g, 0, sizeof g);
	snprintf(g.host, sizeof g.host, "host%d", h);
	snprintf(g.dev, sizeof g.dev, "mlx5_%d", d);
	gid_of(g.gid, h, d);
	return g;
}

static void expect_pair(const struct pulse_join_result *r, int a, int b)
{
	assert_int_equal(r[a].status, PULSE_JOIN_PAIRED);
	assert_int_equal(r[a].peer, b);
	assert_int_equal(r[b].status, PULSE_JOIN_PAIRED);
	assert_int_equal(r[b].peer, a);
}

static void test_basic_pair(void **state)
{
	(void)state;
	struct pulse_join_qp q[2] = {
		qp(0, 0, 0x100, 0x200, 1, 1, 7, 0, 10, ALIVE),
		qp(1, 1, 0x200, 0x100, 0, 0, 7, 3, 12, ALIVE),
	};
	struct pulse_join_result r[2];
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, 2, NULL, 0, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 1);
	assert_int_equal(r[0].remote_rank, 3);
	assert_int_equal(r[0].remote_gpu, 1);
	assert_int_equal(r[0].remote_pid, 101);
	assert_int_equal(r[1].remote_rank, 0);
	assert_int_equal(st.paired, 2);
	/* learned both devices' GIDs from the unique pair */
	assert_int_equal(st.gids_learned, 2);
	assert_int_equal(st.devices, 2);
	assert_string_equal(pulse_join_status_name(r[0].status), "paired");
}

/* The same QPN pair (5 <-> 7) between host0-host1 and host2-host3. */
static void same_qpn_setup(struct pulse_join_qp q[4], uint64_t c01, uint64_t c23)
{
	q[0] = qp(0, 0, 5, 7, 1, 0, c01, 0, 0, ALIVE);
	q[1] = qp(2, 0, 5, 7, 3, 0, c23, 0, 0, ALIVE);
	q[2] = qp(1, 0, 7, 5, 0, 0, c01, 1, 0, ALIVE);
	q[3] = qp(3, 0, 7, 5, 2, 0, c23, 1, 0, ALIVE);
}

static void test_same_qpn_on_two_hosts(void **state)
{
	(void)state;
	struct pulse_join_qp q[4];
	struct pulse_join_result r[4];
	struct pulse_join_stats st;

	/* symmetry alone cannot tell: ambiguous, never guessed */
	same_qpn_setup(q, 0, 0);
	assert_int_equal(pulse_qp_join(q, 4, NULL, 0, NULL, 0, r, &st), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].status, PULSE_JOIN_AMBIGUOUS);
		assert_int_equal(r[i].candidates, 2);
		assert_int_equal(r[i].peer, -1);
	}
	assert_int_equal(st.ambiguous, 4);
	assert_int_equal(st.paired, 0);

	/* the devices' GIDs (cluster.json) settle it */
	struct pulse_join_gid g[4] = {gid(0, 0), gid(1, 0), gid(2, 0), gid(3, 0)};
	assert_int_equal(pulse_qp_join(q, 4, g, 4, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 2);
	expect_pair(r, 1, 3);
	assert_int_equal(st.gids_given, 4);

	/* one known GID is enough when the other pairs teach the rest */
	assert_int_equal(pulse_qp_join(q, 4, g, 1, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 2);
	expect_pair(r, 1, 3);

	/* so are different communicators on the two host pairs */
	same_qpn_setup(q, 0xA, 0xB);
	assert_int_equal(pulse_qp_join(q, 4, NULL, 0, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 2);
	expect_pair(r, 1, 3);
}

static void test_learned_gids_resolve_ambiguity(void **state)
{
	(void)state;
	/* host0/mlx5_0 <-> host1/mlx5_0 once more with unique QPNs (1 <-> 2),
	 * and host2 <-> host3 with unique QPNs (3 <-> 4): the four devices'
	 * GIDs are learned, then the shared 5 <-> 7 pairs are told apart */
	struct pulse_join_qp q[8];
	same_qpn_setup(q, 0, 0);
	q[4] = qp(0, 0, 1, 2, 1, 0, 0, 0, 0, ALIVE);
	q[5] = qp(1, 0, 2, 1, 0, 0, 0, 0, 0, ALIVE);
	q[6] = qp(2, 0, 3, 4, 3, 0, 0, 0, 0, ALIVE);
	q[7] = qp(3, 0, 4, 3, 2, 0, 0, 0, 0, ALIVE);
	struct pulse_join_result r[8];
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, 8, NULL, 0, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 2);
	expect_pair(r, 1, 3);
	expect_pair(r, 4, 5);
	expect_pair(r, 6, 7);
	assert_int_equal(st.gids_learned, 4);
	assert_int_equal(st.paired, 8);
}

static void test_no_partner_and_not_connected(void **state)
{
	(void)state;
	struct pulse_join_qp q[4] = {
		qp(0, 0, 0x10, 0x20, 1, 0, 0, 0, 0, ALIVE), /* host1's records are missing */
		qp(0, 1, 0x11, 0x21, 2, 0, 0, 0, 0, ALIVE),
		qp(2, 0, 0x21, 0x11, 0, 1, 0, 0, 0, ALIVE),
		qp(0, 1, 0x12, 0, 0, 0, 0, 0, 0, ALIVE), /* created, never connected */
	};
	q[3].connected = 0;
	q[3].gid_valid = 0;
	/* a QP whose dest names a QP that exists but points elsewhere */
	struct pulse_join_result r[4];
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, 4, NULL, 0, NULL, 0, r, &st), 0);
	assert_int_equal(r[0].status, PULSE_JOIN_NO_PARTNER);
	assert_int_equal(r[0].peer, -1);
	assert_int_equal(r[0].remote_rank, -1);
	expect_pair(r, 1, 2);
	assert_int_equal(r[3].status, PULSE_JOIN_NOT_CONNECTED);
	assert_int_equal(st.no_partner, 1);
	assert_int_equal(st.not_connected, 1);
	assert_int_equal(st.paired, 2);
}

static void test_destroyed_and_reused(void **state)
{
	(void)state;
	const uint64_t s = 1000000000ull;
	struct pulse_join_qp q[6] = {
		/* first incarnations, destroyed at 10 s */
		qp(0, 0, 9, 11, 1, 0, 0, 0, 1 * s, 10 * s),
		qp(1, 0, 11, 9, 0, 0, 0, 0, 1 * s, 10 * s),
		/* the same QPNs again from 20 s, between the same devices */
		qp(0, 0, 9, 11, 1, 0, 0, 0, 20 * s, ALIVE),
		qp(1, 0, 11, 9, 0, 0, 0, 0, 20 * s, ALIVE),
		/* QPN 12 on host0 reused to another peer */
		qp(0, 1, 12, 30, 2, 0, 0, 0, 1 * s, 5 * s),
		qp(2, 0, 30, 12, 0, 1, 0, 0, 1 * s, 5 * s),
	};
	for (int i = 0; i < 6; i++)
		q[i].destroyed = q[i].last_ns != ALIVE;
	struct pulse_join_result r[6];
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, 6, NULL, 0, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 1);
	expect_pair(r, 2, 3);
	expect_pair(r, 4, 5);
	/* host clocks a few ms apart do not break the lifetime test */
	q[3].first_ns = 20 * s + 3000000;
	q[1].last_ns = 10 * s - 2000000;
	assert_int_equal(pulse_qp_join(q, 6, NULL, 0, NULL, 0, r, &st), 0);
	expect_pair(r, 0, 1);
	expect_pair(r, 2, 3);
	/* overlapping lifetimes cannot be told apart: ambiguous */
	q[0].last_ns = ALIVE;
	q[1].last_ns = ALIVE;
	assert_int_equal(pulse_qp_join(q, 6, NULL, 0, NULL, 0, r, &st), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(r[i].status, PULSE_JOIN_AMBIGUOUS);
	expect_pair(r, 4, 5);
}

static void test_conflicting_gid_excludes(void **state)
{
	(void)state;
	/* host0's RTR names host1's GID, but the candidate on host1 says it
	 * talks to host5: its remote GID does not match host0's device */
	struct pulse_join_qp q[2] = {
		qp(0, 0, 40, 41, 1, 0, 0, 0, 0, ALIVE),
		qp(1, 0, 41, 40, 5, 0, 0, 0, 0, ALIVE),
	};
	struct pulse_join_gid g[2] = {gid(0, 0), gid(1, 0)};
	struct pulse_join_result r[2];
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, 2, g, 2, NULL, 0, r, &st), 0);
	assert_int_equal(r[0].status, PULSE_JOIN_NO_PARTNER);
	assert_int_equal(r[1].status, PULSE_JOIN_NO_PARTNER);
	/* a given GID twice with different values: counted, the first kept */
	struct pulse_join_gid g3[3] = {gid(0, 0), gid(1, 0), gid(1, 0)};
	g3[2].gid[15] = 9;
	q[1] = qp(1, 0, 41, 40, 0, 0, 0, 0, 0, ALIVE);
	assert_int_equal(pulse_qp_join(q, 2, g3, 3, NULL, 0, r, &st), 0);
	assert_int_equal(st.gid_conflicts, 1);
	expect_pair(r, 0, 1);
	/* different communicators on the two ends never pair */
	q[0].comm_id = 1;
	q[1].comm_id = 2;
	assert_int_equal(pulse_qp_join(q, 2, g, 2, NULL, 0, r, &st), 0);
	assert_int_equal(r[0].status, PULSE_JOIN_NO_PARTNER);
}

static void test_rank_from_communicator(void **state)
{
	(void)state;
	struct pulse_join_qp q[2] = {
		qp(0, 0, 0x100, 0x200, 1, 1, 0xC0, 0, 0, ALIVE),
		qp(1, 1, 0x200, 0x100, 0, 0, 0xC0, -1, 0, ALIVE),
	};
	q[1].gpu = -1;
	struct pulse_join_comm c[3];
	memset(c, 0, sizeof c);
	c[0].comm_id = 0xC0;
	c[0].rank = 6;
	c[0].nranks = 8;
	snprintf(c[0].host, sizeof c[0].host, "host1");
	c[0].pid = 101;
	c[0].gpu = 5;
	c[1] = c[0];
	c[1].pid = 999; /* another process on host1 in the same communicator */
	c[1].rank = 7;
	c[2] = c[0];
	snprintf(c[2].host, sizeof c[2].host, "host0");
	c[2].pid = 0;
	c[2].rank = 0;
	struct pulse_join_result r[2];
	assert_int_equal(pulse_qp_join(q, 2, NULL, 0, c, 3, r, NULL), 0);
	expect_pair(r, 0, 1);
	assert_int_equal(r[0].remote_rank, 6);
	assert_int_equal(r[0].remote_gpu, 5);
	assert_int_equal(r[1].remote_rank, 0);
}

static void test_members(void **state)
{
	(void)state;
	struct pulse_join_comm in[6], out[6];
	memset(in, 0, sizeof in);
	for (int i = 0; i < 6; i++) {
		in[i].comm_id = i < 4 ? 0xB : 0xA;
		in[i].rank = i % 4;
		in[i].nranks = 4;
		snprintf(in[i].host, sizeof in[i].host, "host%d", i);
		in[i].pid = (uint32_t)i;
		in[i].time_ns = (uint64_t)i;
	}
	in[5].rank = 0;  /* rank 0 of 0xA claimed twice: in[4] (t 4) and in[5] (t 5) */
	in[3].rank = -1; /* unknown rank: left out */
	uint32_t conflicts = 0;
	uint32_t n = pulse_join_members(in, 6, out, &conflicts);
	assert_int_equal(n, 4);
	assert_int_equal(conflicts, 1);
	assert_int_equal(out[0].comm_id, 0xA);
	assert_int_equal(out[0].rank, 0);
	assert_int_equal(out[0].pid, 5); /* the latest init */
	assert_int_equal(out[1].comm_id, 0xB);
	assert_int_equal(out[1].rank, 0);
	assert_int_equal(out[3].rank, 2);
}

static void test_parse_gid_and_empty(void **state)
{
	(void)state;
	uint8_t g[16];
	assert_int_equal(pulse_join_parse_gid("fe80:0000:0000:0000:0000:0000:0000:a001", g), 0);
	assert_int_equal(g[0], 0xfe);
	assert_int_equal(g[15], 0x01);
	assert_int_equal(g[14], 0xa0);
	assert_int_equal(pulse_join_parse_gid("::ffff:10.0.0.1", g), 0);
	assert_int_equal(g[15], 1);
	assert_int_equal(pulse_join_parse_gid("not a gid", g), -1);
	assert_int_equal(pulse_join_parse_gid(NULL, g), -1);
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(NULL, 0, NULL, 0, NULL, 0, NULL, &st), 0);
	assert_int_equal(st.qps, 0);
}

/* Many QPs: each host pair has its own QPNs except a shared block; all pair
 * with the GIDs given; quick enough for a cluster. */
static void test_many(void **state)
{
	(void)state;
	enum { HOSTS = 64, PER = 64 };
	static struct pulse_join_qp q[HOSTS * PER];
	static struct pulse_join_result r[HOSTS * PER];
	static struct pulse_join_gid g[HOSTS];
	uint32_t n = 0;
	for (int h = 0; h < HOSTS; h++) {
		g[h] = gid(h, 0);
		int peer = h ^ 1; /* host pairs (0,1), (2,3), ... */
		for (int k = 0; k < PER; k++) {
			/* QPNs 1000+k on the even host, 2000+k on the odd one: the same
			 * numbers on every host pair */
			uint32_t mine = (h & 1) ? 2000u + (uint32_t)k : 1000u + (uint32_t)k;
			uint32_t theirs = (h & 1) ? 1000u + (uint32_t)k : 2000u + (uint32_t)k;
			q[n++] = qp(h, 0, mine, theirs, peer, 0, 0, -1, 0, ALIVE);
		}
	}
	struct pulse_join_stats st;
	assert_int_equal(pulse_qp_join(q, n, g, HOSTS, NULL, 0, r, &st), 0);
	assert_int_equal(st.paired, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct pulse_join_qp *p = &q[r[i].peer];
		assert_int_equal(p->qpn, q[i].dest_qpn);
		assert_string_not_equal(p->host, q[i].host);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_pair),
		cmocka_unit_test(test_same_qpn_on_two_hosts),
		cmocka_unit_test(test_learned_gids_resolve_ambiguity),
		cmocka_unit_test(test_no_partner_and_not_connected),
		cmocka_unit_test(test_destroyed_and_reused),
		cmocka_unit_test(test_conflicting_gid_excludes),
		cmocka_unit_test(test_rank_from_communicator),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_parse_gid_and_empty),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
