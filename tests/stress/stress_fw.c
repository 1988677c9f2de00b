/* Multi-threaded stress of the NIC agent core, built plain and with TSan.
 *
 * 8 event threads, each owning a disjoint set of QPNs (the DPA contract: one
 * QP's events are never handled concurrently), send events stamped from one
 * shared atomic clock, while the main thread acts as the mailbox: it polls,
 * drains every page and asks for STATS, over and over. At the end every unit
 * sent is accounted for: the sum over all uploads plus the counted drops
 * equals the sum sent, per QP.
 *
 * The clock: a thread publishes a lower bound of the stamp it is about to
 * use before taking it (pending[t]), and the mailbox never polls at a time
 * later than a stamp still in flight, so no event can be late through
 * scheduling alone; LATE/REORDERED/TS_RANGE must stay 0. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../unit/fw_test_util.h"
#include "pulse/le.h"

#if defined(__SANITIZE_THREAD__)
#define EVENTS_PER_THREAD 100000u
#else
#define EVENTS_PER_THREAD 1000000u
#endif
#define NTHREADS 8u
#define QPNS_PER_THREAD 64u
#define NO_PENDING UINT64_MAX

struct stress {
	struct ft_fw *f;
	_Atomic uint64_t clock; /* NIC time, ns, 64-bit; the firmware sees the low 32 bits */
	_Atomic uint64_t pending[NTHREADS];
	_Atomic uint32_t running;
	_Atomic uint32_t rounds;     /* mailbox rounds done */
	_Atomic uint32_t mailbox_on; /* a mailbox thread is polling */
	uint32_t step_ns;
	uint32_t churn; /* threads move to other QPNs over time */
	uint32_t clip_heavy; /* a third of the events clipped */
	struct {
		uint64_t units[QPNS_PER_THREAD];
		uint64_t events, zero, bad_qpn, clipped;
		pthread_t tid;
		uint32_t idx;
		struct stress *s;
	} thr[NTHREADS];
	uint64_t got[NTHREADS][QPNS_PER_THREAD];
	uint64_t polls, pages, timeouts, stats_reqs;
};

static void relax(void) { sched_yield(); }

static uint32_t qpn_of(uint32_t t, uint32_t k) { return ((t + 1u) << 16) | (k + 1u); }

struct targ {
	struct stress *s;
	uint32_t t;
};

/* Odd threads hand their events over in bursts (pulse_fw_on_tx_burst), even
 * threads one at a time. */
static void *event_thread_main(void *arg)
{
	struct targ *a = arg;
	struct stress *s = a->s;
	uint32_t t = a->t;
	uint64_t rng = 0x9E3779B97F4A7C15ull * (t + 1u);
	struct pulse_tx_event evs[32];
	uint32_t ks[32], units[32];
	unsigned kinds[32];
	uint32_t i = 0;
	while (i < EVENTS_PER_THREAD) {
		uint32_t n = (t & 1) ? 1 + (uint32_t)(ft_rand(&rng) % 32) : 1;
		if (n > EVENTS_PER_THREAD - i)
			n = EVENTS_PER_THREAD - i;
		/* a lower bound of our stamps, visible before we take them */
		atomic_store(&s->pending[t], atomic_load(&s->clock));
		for (uint32_t j = 0; j < n; j++, i++) {
			uint32_t k;
			if (s->churn)
				/* a sliding subset: flows stop, age out and come back */
				k = (i / (s->churn > 1 ? 97u : 5000u) * 7u +
				     (uint32_t)(ft_rand(&rng) % 8u)) %
				    QPNS_PER_THREAD;
			else
				k = (uint32_t)(ft_rand(&rng) % QPNS_PER_THREAD);
			uint64_t r = ft_rand(&rng);
			struct pulse_tx_event *ev = &evs[j];
			ev->qpn = qpn_of(t, k);
			ev->sent_pkts = (uint16_t)(1 + (r >> 20) % 64);
			unsigned kind = (unsigned)(r % 1000);
			if (kind == 0) {
				ev->sent_32b = 0; /* zero-byte event */
				units[j] = 0;
			} else if (kind == 1) {
				ev->qpn = (r & 2) ? 0 : 0x1000000u | ev->qpn; /* bad QPN */
				ev->sent_32b = 100;
				units[j] = 0;
			} else if (kind < 12 || (s->clip_heavy && kind < 333)) {
				kind = 2;
				ev->sent_32b = PULSE_SENT_UNITS_CLIPPED; /* clipped */
				ev->sent_pkts = (uint16_t)(600 + (r >> 40) % 1000);
				units[j] = (uint32_t)ev->sent_pkts * PULSE_CLIP_UNITS_PER_PKT_DEFAULT;
			} else {
				ev->sent_32b = (uint16_t)(1 + (r >> 8) % 0xFFFE);
				units[j] = ev->sent_32b;
			}
			ev->ts_ns = (uint32_t)atomic_fetch_add(&s->clock, s->step_ns);
			ks[j] = k;
			kinds[j] = kind;
		}
		if (n == 1)
			pulse_fw_on_tx(s->f->fw, t, &evs[0]);
		else
			pulse_fw_on_tx_burst(s->f->fw, t, evs, n);
		atomic_store(&s->pending[t], NO_PENDING);
		/* let the mailbox thread in now and then (2 cores, 9 threads):
		 * wait until it has done another round */
		if ((i & 0x3FFF) < n) {
			uint32_t r0 = atomic_load(&s->rounds);
			for (int y = 0; y < 1000 && atomic_load(&s->rounds) == r0 &&
					atomic_load(&s->mailbox_on);
			     y++)
				sched_yield();
		}
		for (uint32_t j = 0; j < n; j++) {
			if (kinds[j] == 0)
				s->thr[t].zero++;
			else if (kinds[j] == 1)
				s->thr[t].bad_qpn++;
			else {
				s->thr[t].units[ks[j]] += units[j];
				s->thr[t].events++;
				if (kinds[j] < 12)
					s->thr[t].clipped++;
			}
		}
	}
	atomic_fetch_sub(&s->running, 1);
	return NULL;
}

/* The NIC time the mailbox may poll at: not past any stamp in flight. */
static uint32_t mailbox_now(struct stress *s)
{
	uint64_t now = atomic_load(&s->clock);
	for (uint32_t t = 0; t < NTHREADS; t++) {
		uint64_t p = atomic_load(&s->pending[t]);
		if (p < now)
			now = p;
	}
	return (uint32_t)now;
}

static void add_upload(struct stress *s, const struct ft_upload *u)
{
	for (size_t i = 0; i < u->map.n; i++) {
		uint32_t q = u->map.v[i].qpn;
		uint32_t t = (q >> 16) - 1u, k = (q & 0xFFFFu) - 1u;
		assert_true(t < NTHREADS && k < QPNS_PER_THREAD);
		s->got[t][k] += u->map.v[i].units;
	}
}

/* One POLL and all its pages; retries a POLL that timed out quiescing. */
static void mailbox_round(struct stress *s)
{
	struct ft_upload u;
	memset(&u, 0, sizeof(u));
	ft_map_init(&u.map);
	for (;;) {
		uint32_t now = mailbox_now(s);
		enum pulse_mb_status st = ft_poll(s->f, now, 0, s->polls, &u.poll);
		if (st == PULSE_MB_OK)
			break;
		assert_int_equal(st, PULSE_MB_E_TIMEOUT);
		s->timeouts++;
	}
	s->polls++;
	atomic_fetch_add(&s->rounds, 1);
	ft_read_upload(s->f, mailbox_now(s), &u);
	s->pages += u.pages_read;
	add_upload(s, &u);
	ft_upload_free(&u);
}

static void run_stress(struct stress *s, uint32_t max_flows, uint32_t pool_blocks)
{
	struct pulse_fw_limits lim = ft_limits(max_flows, pool_blocks, NTHREADS);
	lim.spin_relax = relax;
	const uint64_t start = (1ull << 32) - 3000000u; /* the clock wraps 3 ms in */
	s->f = ft_fw_new(&lim, (uint32_t)start);
	struct pulse_mb_config c = {.epoch_ns = 8000,
				    .window_ns = 1000000000u,
				    .page_bytes = 4096,
				    .clip_units_per_pkt = 0,
				    .flow_limit = 0,
				    .pool_limit = 0};
	assert_int_equal(ft_configure(s->f, (uint32_t)start, &c, NULL), PULSE_MB_OK);
	atomic_store(&s->clock, start);
	for (uint32_t t = 0; t < NTHREADS; t++)
		atomic_store(&s->pending[t], NO_PENDING);
	atomic_store(&s->running, NTHREADS);
	atomic_store(&s->mailbox_on, 1);
	static struct targ args[NTHREADS];
	for (uint32_t t = 0; t < NTHREADS; t++) {
		args[t].s = s;
		args[t].t = t;
		assert_int_equal(pthread_create(&s->thr[t].tid, NULL, event_thread_main, &args[t]), 0);
	}
	uint32_t round = 0;
	while (atomic_load(&s->running) > 0) {
		mailbox_round(s);
		if (++round % 8 == 0) {
			/* STATS while events run: well-formed, all counters */
			assert_int_equal(ft_req(s->f, PULSE_MB_STATS, NULL, 0, FT_RESP_CAP,
						mailbox_now(s)),
					 PULSE_MB_OK);
			assert_int_equal(pulse_get_u16(ft_resp_body(s->f)), PULSE_STAT_COUNT);
			s->stats_reqs++;
		}
		sched_yield();
	}
	atomic_store(&s->mailbox_on, 0);
	for (uint32_t t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_join(s->thr[t].tid, NULL), 0);
	/* the rest: the open window, then one more to be sure */
	mailbox_round(s);
	mailbox_round(s);

	uint64_t st[PULSE_STAT_COUNT];
	ft_stats(s->f, mailbox_now(s), st);
	uint64_t sent = 0, got = 0, events = 0, zero = 0, bad = 0, clipped = 0;
	uint64_t per_qp_bad = 0;
	for (uint32_t t = 0; t < NTHREADS; t++) {
		events += s->thr[t].events;
		zero += s->thr[t].zero;
		bad += s->thr[t].bad_qpn;
		clipped += s->thr[t].clipped;
		for (uint32_t k = 0; k < QPNS_PER_THREAD; k++) {
			sent += s->thr[t].units[k];
			got += s->got[t][k];
			if (s->got[t][k] > s->thr[t].units[k])
				per_qp_bad++; /* more than sent: misattributed */
			if (st[PULSE_STAT_DROP_NO_POOL_UNITS] == 0 &&
			    s->got[t][k] != s->thr[t].units[k])
				per_qp_bad++;
		}
	}
	print_message("stress: %u threads x %u events, %llu polls, %llu pages, %llu STATS, "
		      "%llu quiesce timeouts, NIC time %.3f ms\n",
		      NTHREADS, EVENTS_PER_THREAD, (unsigned long long)s->polls,
		      (unsigned long long)s->pages, (unsigned long long)s->stats_reqs,
		      (unsigned long long)s->timeouts,
		      (double)(atomic_load(&s->clock) - start) / 1e6);
	print_message("stress: sent %llu units, uploaded %llu, dropped (no pool) %llu in %llu "
		      "records; pool peak %llu of %llu\n",
		      (unsigned long long)sent, (unsigned long long)got,
		      (unsigned long long)st[PULSE_STAT_DROP_NO_POOL_UNITS],
		      (unsigned long long)st[PULSE_STAT_DROP_NO_POOL],
		      (unsigned long long)st[PULSE_STAT_POOL_PEAK],
		      (unsigned long long)st[PULSE_STAT_POOL_BLOCKS]);
	if (per_qp_bad)
		ft_dump_stats(s->f);
	assert_int_equal(per_qp_bad, 0);
	assert_int_equal(got + st[PULSE_STAT_DROP_NO_POOL_UNITS], sent);
	assert_int_equal(st[PULSE_STAT_UNITS], sent);
	assert_int_equal(st[PULSE_STAT_EVENTS], events);
	assert_int_equal(st[PULSE_STAT_ZERO_EVENTS], zero);
	assert_int_equal(st[PULSE_STAT_DROP_BAD_QPN], bad);
	assert_int_equal(st[PULSE_STAT_CLIPPED_EVENTS], clipped);
	assert_int_equal(st[PULSE_STAT_DROP_NO_SLOT], 0);
	assert_int_equal(st[PULSE_STAT_DROP_TS_RANGE], 0);
	assert_int_equal(st[PULSE_STAT_LATE_EVENTS], 0);
	assert_int_equal(st[PULSE_STAT_REORDERED_EVENTS], 0);
	assert_int_equal(st[PULSE_STAT_DROP_PAUSED], 0);
	assert_int_equal(st[PULSE_STAT_DROP_BAD_THREAD], 0);
	assert_true(st[PULSE_STAT_POOL_PEAK] <= st[PULSE_STAT_POOL_BLOCKS]);
	/* idle: everything ages out and the pool empties */
	for (int i = 0; i < 3; i++)
		mailbox_round(s);
	ft_stats(s->f, mailbox_now(s), st);
	assert_int_equal(st[PULSE_STAT_FLOWS_ACTIVE], 0);
	assert_int_equal(st[PULSE_STAT_POOL_USED], 0);
	ft_fw_free(s->f);
}

static void test_stress_accounting(void **state)
{
	(void)state;
	struct stress *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->step_ns = 2;
	run_stress(s, 4096, 40000);
	free(s);
}

/* Flows come and go (aging while events run), and the pool is far too
 * small: records are lost, but every lost unit is counted. */
static void test_stress_churn_small_pool(void **state)
{
	(void)state;
	struct stress *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->step_ns = 20;
	s->churn = 1;
	run_stress(s, 4096, 48);
	free(s);
}

/* Fast churn: the set of QPNs a thread sends on slides every ~100 events,
 * so flows are created and aged all the time, many of them while a poll
 * collects the closing window (a flow published during collect must not be
 * retired: its table entry may land after the unpublish). Tiny pool. */
static void test_stress_churn_fast(void **state)
{
	(void)state;
	struct stress *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->step_ns = 20;
	s->churn = 2;
	run_stress(s, 4096, 48);
	free(s);
}

/* RESET and CONFIGURE while events run: the gate shuts, threads drain, state
 * is rebuilt. No accounting across resets (they discard data by design), but
 * no race, no crash, and nothing leaks afterwards. */
static void test_stress_reset_under_load(void **state)
{
	(void)state;
	struct stress *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->step_ns = 5;
	s->clip_heavy = 1;
	struct pulse_fw_limits lim = ft_limits(4096, 4096, NTHREADS);
	lim.spin_relax = relax;
	const uint64_t start = 1000;
	s->f = ft_fw_new(&lim, (uint32_t)start);
	atomic_store(&s->mailbox_on, 1);
	atomic_store(&s->clock, start);
	for (uint32_t t = 0; t < NTHREADS; t++)
		atomic_store(&s->pending[t], NO_PENDING);
	atomic_store(&s->running, NTHREADS);
	static struct targ args[NTHREADS];
	for (uint32_t t = 0; t < NTHREADS; t++) {
		args[t].s = s;
		args[t].t = t;
		assert_int_equal(pthread_create(&s->thr[t].tid, NULL, event_thread_main, &args[t]), 0);
	}
	uint32_t round = 0, resets = 0, configs = 0;
	while (atomic_load(&s->running) > 0) {
		uint32_t now = mailbox_now(s);
		enum pulse_mb_status st;
		if (round % 3 == 0) {
			st = ft_reset(s->f, now);
			resets += st == PULSE_MB_OK;
		} else if (round % 3 == 1) {
			struct pulse_mb_config c = {round % 2 ? 8000 : 32000, 1000000000u, 1024,
						    0, 0, 0};
			st = ft_configure(s->f, now, &c, NULL);
			configs += st == PULSE_MB_OK;
		} else {
			struct pulse_mb_poll_resp p;
			st = ft_poll(s->f, now, PULSE_MB_POLL_FORCE, 0, &p);
			if (st == PULSE_MB_OK && p.page_count)
				assert_int_equal(ft_read_page(s->f, now, p.window_seq, 0, FT_RESP_CAP),
						 PULSE_MB_OK);
		}
		assert_true(st == PULSE_MB_OK || st == PULSE_MB_E_TIMEOUT);
		round++;
		atomic_fetch_add(&s->rounds, 1);
		sched_yield();
	}
	atomic_store(&s->mailbox_on, 0);
	for (uint32_t t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_join(s->thr[t].tid, NULL), 0);
	print_message("reset under load: %u resets, %u configures, %u rounds\n", resets, configs,
		      round);
	assert_true(resets > 0 && configs > 0);
	/* a reset that timed out must still complete now that threads are gone */
	assert_int_equal(ft_reset(s->f, mailbox_now(s)), PULSE_MB_OK);
	uint64_t st[PULSE_STAT_COUNT];
	ft_stats(s->f, mailbox_now(s), st);
	assert_int_equal(st[PULSE_STAT_FLOWS_ACTIVE], 0);
	assert_int_equal(st[PULSE_STAT_POOL_USED], 0);
	/* and the core works normally afterwards */
	uint32_t now = mailbox_now(s);
	struct pulse_tx_event ev = {.qpn = 77, .sent_32b = 5, .sent_pkts = 1, .ts_ns = now + 1};
	pulse_fw_on_tx(s->f->fw, 3, &ev);
	struct ft_upload u;
	ft_poll_upload(s->f, now + 100000, 0, &u);
	assert_int_equal(u.map.n, 1);
	assert_int_equal(ft_map_qpn_total(&u.map, 77), 5);
	ft_upload_free(&u);
	ft_fw_free(s->f);
	free(s);
}

/* A platform bug: several OS threads call with the same thread number at
 * once. The window handshake lets one of them in and drops the others'
 * events as bad-thread (counted); nothing is corrupted and nothing is counted
 * twice. (TSan: no data race either.) */
#define CLASH_THREADS 4u
#define CLASH_EVENTS 50000u
struct clash {
	struct ft_fw *f;
	_Atomic uint32_t clock;
	uint32_t t;
};

static void *clash_main(void *arg)
{
	struct clash *c = arg;
	uint32_t me = c->t;
	struct clash *all = c - me;
	for (uint32_t i = 0; i < CLASH_EVENTS; i++) {
		struct pulse_tx_event ev = {.qpn = qpn_of(me, i % 16u),
					    .sent_32b = 1,
					    .sent_pkts = 1,
					    .ts_ns = atomic_fetch_add(&all->clock, 3u)};
		pulse_fw_on_tx(all->f->fw, 0, &ev); /* everyone is "thread 0" */
	}
	return NULL;
}

static void test_stress_thread_clash(void **state)
{
	(void)state;
	struct clash c[CLASH_THREADS];
	pthread_t tid[CLASH_THREADS];
	const uint32_t S = 1000;
	struct pulse_fw_limits lim = ft_limits(1024, 1024, 2);
	struct ft_fw *f = ft_fw_new(&lim, S);
	for (uint32_t t = 0; t < CLASH_THREADS; t++) {
		c[t].f = f;
		c[t].t = t;
	}
	atomic_store(&c[0].clock, S + 10);
	for (uint32_t t = 0; t < CLASH_THREADS; t++)
		assert_int_equal(pthread_create(&tid[t], NULL, clash_main, &c[t]), 0);
	for (uint32_t t = 0; t < CLASH_THREADS; t++)
		assert_int_equal(pthread_join(tid[t], NULL), 0);
	uint64_t sent = (uint64_t)CLASH_THREADS * CLASH_EVENTS;
	struct ft_upload u;
	ft_poll_upload(f, atomic_load(&c[0].clock) + 1000, 0, &u);
	uint64_t bad = ft_stat(f, PULSE_STAT_DROP_BAD_THREAD);
	print_message("thread clash: %llu of %llu events dropped as bad-thread\n",
		      (unsigned long long)bad, (unsigned long long)sent);
	assert_int_equal(ft_map_total(&u.map) + bad, sent);
	assert_int_equal(ft_stat(f, PULSE_STAT_EVENTS) + bad, sent);
	assert_int_equal(ft_stat(f, PULSE_STAT_UNITS) + bad, sent);
	assert_int_equal(ft_stat(f, PULSE_STAT_FLOWS_CREATED), ft_map_qpn_count(&u.map));
	assert_int_equal(ft_stat(f, PULSE_STAT_QUIESCE_TIMEOUTS), 0);
	ft_upload_free(&u);
	/* and thread 0 works normally afterwards */
	uint32_t now = atomic_load(&c[0].clock) + 2000;
	ft_ev_thr(f, 0, 77, 5, 1, now + 1);
	ft_poll_upload(f, now + 100000, 0, &u);
	assert_int_equal(ft_map_qpn_total(&u.map, 77), 5);
	ft_upload_free(&u);
	ft_fw_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress_accounting),
		cmocka_unit_test(test_stress_churn_small_pool),
		cmocka_unit_test(test_stress_churn_fast),
		cmocka_unit_test(test_stress_reset_under_load),
		cmocka_unit_test(test_stress_thread_clash),
	};
	return cmocka_run_group_tests_name("fw stress", tests, NULL, NULL);
}
