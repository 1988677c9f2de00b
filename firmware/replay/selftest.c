/* The NIC agent self-test (see selftest.h). Expected values are computed here
 * from the event sequence itself, with plain 64-bit arithmetic and division,
 * independently of how the core stores or encodes anything. */
#include "selftest.h"

#include <stdio.h>
#include <string.h>

#include "pulse/le.h"
#include "pulse/mailbox_proto.h"
#include "pulse/nic_agent.h"

#define NF 20u            /* flows in the main window */
#define NT 4u             /* event threads */
#define EPOCH 32000u      /* ns */
#define MAXE 256u         /* epochs tracked per flow */
#define PAGE_BYTES 256u   /* small pages: the upload spans many */
#define CLIP_UNITS 130u

struct st {
	struct pulse_fw *fw;
	uint32_t platform;
	uint16_t seq;
	uint32_t now; /* NIC clock for mailbox calls */
	uint8_t req[512];
	uint8_t resp[4096];
	uint32_t rlen;
	struct pulse_mb_header rh; /* decoded response header */
	int checks, failed;
	/* the test's own books */
	uint32_t qpn[NF];
	uint64_t want[NF][MAXE];
	uint64_t got[NF][MAXE];
	uint32_t last_epoch[NF];
	uint64_t events, units, pkts;
	uint32_t lcg;
};

static struct st g_st;

/* --- checks ------------------------------------------------------------- */

static int check(struct st *s, int ok, const char *name)
{
	s->checks++;
	if (ok) {
		printf("PASS  %s\n", name);
	} else {
		s->failed++;
		printf("FAIL  %s\n", name);
	}
	return ok;
}

static int check_eq(struct st *s, const char *name, uint64_t got, uint64_t want)
{
	s->checks++;
	if (got == want) {
		printf("PASS  %s (%llu)\n", name, (unsigned long long)got);
		return 1;
	}
	s->failed++;
	printf("FAIL  %s: got %llu, want %llu\n", name, (unsigned long long)got,
	       (unsigned long long)want);
	return 0;
}

/* --- mailbox ------------------------------------------------------------ */

static enum pulse_mb_status send_raw(struct st *s, const uint8_t *req, uint32_t len)
{
	enum pulse_mb_status st =
		pulse_fw_mailbox(s->fw, req, len, s->resp, sizeof s->resp, &s->rlen, s->now);
	memset(&s->rh, 0, sizeof s->rh);
	if (pulse_mb_decode_header(s->resp, s->rlen, &s->rh) != PULSE_MB_OK) {
		check(s, 0, "response header decodes");
		return st;
	}
	if (s->rh.status != st) {
		check(s, 0, "response header status matches the return value");
	}
	return st;
}

static enum pulse_mb_status mb(struct st *s, uint8_t type, const uint8_t *body, uint32_t blen)
{
	uint16_t seq = s->seq++;
	uint32_t len = pulse_mb_build_request(s->req, sizeof s->req, type, seq, body, blen);
	enum pulse_mb_status st = send_raw(s, s->req, len);
	if (s->rh.type != (type | PULSE_MB_RESPONSE) || s->rh.seq != seq)
		check(s, 0, "response echoes type and seq");
	return st;
}

static uint64_t stats_buf[PULSE_STAT_COUNT];

static int get_stats(struct st *s)
{
	if (mb(s, PULSE_MB_STATS, NULL, 0) != PULSE_MB_OK) {
		check(s, 0, "STATS answers OK");
		return -1;
	}
	const uint8_t *b = s->resp + PULSE_MB_HEADER_SIZE;
	uint32_t n = pulse_get_u16(b);
	if (n < PULSE_STAT_COUNT ||
	    s->rlen < PULSE_MB_HEADER_SIZE + PULSE_MB_STATS_HEADER_SIZE + 8u * n) {
		check(s, 0, "STATS carries every counter");
		return -1;
	}
	for (uint32_t k = 0; k < PULSE_STAT_COUNT; k++)
		stats_buf[k] = pulse_get_u64(b + PULSE_MB_STATS_HEADER_SIZE + 8u * k);
	return 0;
}

static enum pulse_mb_status configure(struct st *s, uint32_t epoch, uint32_t flow_limit,
				      uint32_t pool_limit)
{
	struct pulse_mb_config c = {.epoch_ns = epoch,
				    .window_ns = PULSE_WINDOW_NS_DEFAULT,
				    .page_bytes = PAGE_BYTES,
				    .clip_units_per_pkt = CLIP_UNITS,
				    .flow_limit = flow_limit,
				    .pool_limit = pool_limit};
	uint8_t b[PULSE_MB_CONFIG_SIZE];
	pulse_mb_encode_config(b, &c);
	return mb(s, PULSE_MB_CONFIGURE, b, sizeof b);
}

static enum pulse_mb_status mb_poll(struct st *s, uint64_t host_ns, uint16_t flags,
				 struct pulse_mb_poll_resp *r)
{
	struct pulse_mb_poll_req q = {.host_ns = host_ns, .flags = flags};
	uint8_t b[PULSE_MB_POLL_REQ_SIZE];
	pulse_mb_encode_poll_req(b, &q);
	enum pulse_mb_status st = mb(s, PULSE_MB_POLL, b, sizeof b);
	memset(r, 0, sizeof *r);
	if (st == PULSE_MB_OK && s->rlen >= PULSE_MB_HEADER_SIZE + PULSE_MB_POLL_RESP_SIZE)
		pulse_mb_decode_poll_resp(s->resp + PULSE_MB_HEADER_SIZE, r);
	return st;
}

static enum pulse_mb_status read_page(struct st *s, uint32_t window, uint32_t page)
{
	struct pulse_mb_page_req q = {.window_seq = window, .page_seq = (uint16_t)page};
	uint8_t b[PULSE_MB_PAGE_REQ_SIZE];
	pulse_mb_encode_page_req(b, &q);
	return mb(s, PULSE_MB_READ_PAGE, b, sizeof b);
}

/* --- events ------------------------------------------------------------- */

static uint32_t rnd(struct st *s)
{
	s->lcg = s->lcg * 1664525u + 1013904223u;
	return s->lcg >> 8;
}

static void tx(struct st *s, uint32_t thread, uint32_t qpn, uint64_t t, uint16_t units,
	       uint16_t pkts)
{
	struct pulse_tx_event ev = {.qpn = qpn, .sent_32b = units, .sent_pkts = pkts,
				    .ts_ns = (uint32_t)t};
	pulse_fw_on_tx(s->fw, thread, &ev);
}

/* A good event of flow i at test time t (>= window start w0): books it in the
 * epoch the specification says, the flow's latest epoch if it is reordered. */
static void tx_flow(struct st *s, uint32_t i, uint64_t t, uint64_t w0, uint16_t units,
		    uint16_t pkts, uint64_t counted_units)
{
	uint32_t e = t < w0 ? 0 : (uint32_t)((t - w0) / EPOCH); /* late: epoch 0 */
	if (e < s->last_epoch[i])
		e = s->last_epoch[i];
	s->last_epoch[i] = e;
	tx(s, i % NT, s->qpn[i], t, units, pkts);
	s->want[i][e] += counted_units;
	s->events++;
	s->units += counted_units;
	s->pkts += pkts;
}

static int flow_of(struct st *s, uint32_t qpn)
{
	for (uint32_t i = 0; i < NF; i++)
		if (s->qpn[i] == qpn)
			return (int)i;
	return -1;
}

/* --- upload decoding ---------------------------------------------------- */

struct drain {
	uint32_t pages, records, chunks, body_bytes;
	uint64_t units;
	int bad_page, bad_flow, bad_epoch, bad_last;
};

/* Decodes the page in s->resp into s->got (or only counts when qpn is not one
 * of the test's flows and count_only is set). */
static void decode_page(struct st *s, const struct pulse_mb_poll_resp *pr, uint32_t page,
			struct drain *d, int count_only)
{
	struct pulse_mb_page_info info;
	struct pulse_mb_page_iter it;
	uint32_t blen = s->rlen - PULSE_MB_HEADER_SIZE;
	if (pulse_mb_page_open(s->resp + PULSE_MB_HEADER_SIZE, blen, &info, &it) != PULSE_MB_OK) {
		d->bad_page++;
		return;
	}
	d->body_bytes += blen;
	if (info.window_seq != pr->window_seq || info.page_seq != page ||
	    info.page_count != pr->page_count)
		d->bad_page++;
	int last = (info.flags & PULSE_MB_PAGEF_LAST) != 0;
	if (last != (page + 1u == pr->page_count))
		d->bad_last++;
	struct pulse_mb_chunk c;
	while (pulse_mb_page_next(&it, &c)) {
		d->chunks++;
		int i = flow_of(s, c.qpn);
		if (i < 0 && !count_only)
			d->bad_flow++;
		struct pulse_mb_rec_iter ri;
		uint32_t e, u;
		pulse_mb_rec_begin(&ri, &c);
		while (pulse_mb_rec_next(&ri, &e, &u)) {
			d->records++;
			d->units += u;
			if (i < 0 || count_only)
				continue;
			if (e >= MAXE)
				d->bad_epoch++;
			else
				s->got[i][e] += u;
		}
	}
	d->pages++;
}

static void drain(struct st *s, const struct pulse_mb_poll_resp *pr, uint32_t from,
		  struct drain *d, int count_only)
{
	for (uint32_t p = from; p < pr->page_count; p++) {
		if (read_page(s, pr->window_seq, p) != PULSE_MB_OK) {
			d->bad_page++;
			return;
		}
		decode_page(s, pr, p, d, count_only);
	}
}

static void compare_books(struct st *s, const char *name)
{
	uint32_t wrong = 0, first_i = 0, first_e = 0;
	for (uint32_t i = 0; i < NF; i++)
		for (uint32_t e = 0; e < MAXE; e++)
			if (s->got[i][e] != s->want[i][e]) {
				if (!wrong) {
					first_i = i;
					first_e = e;
				}
				wrong++;
			}
	s->checks++;
	if (!wrong) {
		printf("PASS  %s\n", name);
	} else {
		s->failed++;
		printf("FAIL  %s: %u (flow, epoch) cells differ; first: flow %u epoch %u got %llu "
		       "want %llu\n",
		       name, wrong, first_i, first_e, (unsigned long long)s->got[first_i][first_e],
		       (unsigned long long)s->want[first_i][first_e]);
	}
}

static void clear_books(struct st *s)
{
	memset(s->want, 0, sizeof s->want);
	memset(s->got, 0, sizeof s->got);
	memset(s->last_epoch, 0, sizeof s->last_epoch);
}

/* --- the test ------------------------------------------------------------ */

static void test_hello(struct st *s)
{
	enum pulse_mb_status st = mb(s, PULSE_MB_HELLO, NULL, 0);
	if (!check(s, st == PULSE_MB_OK && s->rlen == PULSE_MB_HEADER_SIZE + PULSE_MB_HELLO_SIZE,
		   "HELLO answers with a 48-byte body"))
		return;
	struct pulse_mb_hello h;
	pulse_mb_decode_hello(s->resp + PULSE_MB_HEADER_SIZE, &h);
	check(s, h.proto_min <= PULSE_MB_VERSION && h.proto_max >= PULSE_MB_VERSION,
	      "HELLO protocol range includes this version");
	check_eq(s, "HELLO platform", h.platform, s->platform);
	check_eq(s, "HELLO records per block", h.records_per_block, PULSE_FW_RECORDS_PER_BLOCK);
	check_eq(s, "HELLO max threads", h.max_threads, NT);
	check_eq(s, "HELLO default epoch", h.epoch_ns, PULSE_EPOCH_NS_DEFAULT);
}

static void test_main_window(struct st *s, uint64_t t0)
{
	/* CONFIGURE opens the window at t0, 3 ms before the 32-bit clock wraps. */
	s->now = (uint32_t)t0;
	check_eq(s, "CONFIGURE (32 us epochs, 256-byte pages)",
		 configure(s, EPOCH, 0, 0), PULSE_MB_OK);
	clear_books(s);
	s->events = s->units = s->pkts = 0;

	/* a late event: 0.5 ms before the window opened, booked in epoch 0 */
	tx_flow(s, 3, t0 - 500000u, t0, 100, 1, 100);
	/* bursts: 400 steps of 10 us across the wrap, two flows in three active */
	for (uint32_t k = 0; k < 400; k++)
		for (uint32_t i = 0; i < NF; i++) {
			if ((k + i) % 3 == 0)
				continue;
			uint16_t u = (uint16_t)(64 + rnd(s) % 128);
			tx_flow(s, i, t0 + k * 10000ull + i * 100ull, t0, u,
				(uint16_t)(1 + u / 128), u);
		}
	/* reordered: flow 4 stamps epoch 2 after reaching its last epoch */
	tx_flow(s, 4, t0 + 2 * EPOCH + 5, t0, 77, 1, 77);
	/* clipped counters: bytes from packets, never below 0xFFFF units */
	tx_flow(s, 1, t0 + 4100000, t0, 0xFFFF, 600, 600ull * CLIP_UNITS);
	tx_flow(s, 2, t0 + 4100000, t0, 0xFFFF, 10, 0xFFFF);
	/* one epoch over the 24-bit record limit: split into two records */
	for (uint32_t k = 0; k < 220; k++)
		tx_flow(s, 6, t0 + 4200000 + k, t0, 0xFFFF, 600, 600ull * CLIP_UNITS);
	uint32_t clipped = 222;
	/* bad input: counted, never booked */
	tx(s, 0, s->qpn[0], t0 + 4300000, 0, 0);              /* zero bytes */
	tx(s, 1, PULSE_QPN_RESERVED_LOW, t0 + 4300000, 128, 1);
	tx(s, 1, PULSE_QPN_RESERVED_HIGH, t0 + 4300000, 128, 1);
	tx(s, 1, 0x1000005u, t0 + 4300000, 128, 1);           /* wider than 24 bits */
	tx(s, 5 % NT, s->qpn[5], t0 + 3000000000ull, 128, 1); /* 3 s ahead */
	tx(s, 5 % NT, s->qpn[5], t0 - 1500000000ull, 128, 1); /* 1.5 s behind */
	tx(s, NT, s->qpn[7], t0 + 4300000, 128, 1);           /* no such thread */

	/* POLL at t0 + 5 ms (the clock has wrapped) */
	uint64_t tp = t0 + 5000000;
	s->now = (uint32_t)tp;
	struct pulse_mb_poll_resp pr;
	if (!check_eq(s, "POLL 1", mb_poll(s, 1000000000000000000ull, 0, &pr), PULSE_MB_OK))
		return;
	check_eq(s, "POLL 1 window_seq", pr.window_seq, 1);
	check(s, (pr.flags & PULSE_MB_POLLF_RESTARTED) != 0, "POLL 1 flagged RESTARTED");
	check_eq(s, "POLL 1 host_ns echo", pr.host_ns, 1000000000000000000ull);
	check_eq(s, "POLL 1 window start (low 32 bits)", (uint32_t)pr.window_start_ns,
		 (uint32_t)t0);
	check_eq(s, "POLL 1 window length across the wrap", pr.nic_ns - pr.window_start_ns,
		 tp - t0);
	check_eq(s, "POLL 1 epoch_ns", pr.epoch_ns, EPOCH);
	check_eq(s, "POLL 1 flows", pr.flows, NF);
	check(s, pr.page_count > 1, "POLL 1 upload spans several pages");

	/* Double buffering: events while the host drains go to window 2. */
	for (uint32_t i = 0; i < 5; i++) {
		tx(s, i % NT, s->qpn[i], tp + 1000u * (i + 1), 256, 2);
		s->events++;
		s->units += 256;
		s->pkts += 2;
	}

	struct drain d;
	memset(&d, 0, sizeof d);
	static uint8_t first[4096];
	uint32_t first_len = 0;
	if (check_eq(s, "READ_PAGE 0", read_page(s, pr.window_seq, 0), PULSE_MB_OK)) {
		memcpy(first, s->resp, s->rlen);
		first_len = s->rlen;
		decode_page(s, &pr, 0, &d, 0);
	}
	struct pulse_mb_poll_resp busy;
	check_eq(s, "POLL during an unfinished upload is BUSY", mb_poll(s, 1, 0, &busy),
		 PULSE_MB_E_BUSY);
	/* the host lost page 0's answer: the same page again, byte for byte
	 * except the request seq echoed in the header */
	if (check_eq(s, "READ_PAGE 0 again", read_page(s, pr.window_seq, 0), PULSE_MB_OK))
		check(s, s->rlen == first_len &&
			     !memcmp(s->resp + PULSE_MB_HEADER_SIZE, first + PULSE_MB_HEADER_SIZE,
				     first_len - PULSE_MB_HEADER_SIZE),
		      "repeated page is identical");
	check_eq(s, "READ_PAGE past the upload is E_RANGE",
		 read_page(s, pr.window_seq, pr.page_count + 5u), PULSE_MB_E_RANGE);
	check_eq(s, "READ_PAGE skipping ahead is E_RANGE", read_page(s, pr.window_seq, 2),
		 PULSE_MB_E_RANGE);
	check_eq(s, "READ_PAGE of another window is E_WINDOW", read_page(s, pr.window_seq + 7, 1),
		 PULSE_MB_E_WINDOW);
	drain(s, &pr, 1, &d, 0);
	check_eq(s, "upload 1 pages read", d.pages, pr.page_count);
	check_eq(s, "upload 1 page headers consistent", (uint64_t)d.bad_page + d.bad_last, 0);
	check_eq(s, "upload 1 chunks name only the test's flows", d.bad_flow, 0);
	check_eq(s, "upload 1 epochs inside the window", d.bad_epoch, 0);
	check_eq(s, "upload 1 records", d.records, pr.records);
	check_eq(s, "upload 1 bytes", d.body_bytes, pr.upload_bytes);
	/* window 1 holds everything but the 5 double-buffer events */
	check_eq(s, "upload 1 units", d.units, s->units - 5 * 256);
	compare_books(s, "upload 1 per-flow per-epoch units match the event sequence");

	if (get_stats(s) == 0) {
		check_eq(s, "STATS events", stats_buf[PULSE_STAT_EVENTS], s->events);
		check_eq(s, "STATS units", stats_buf[PULSE_STAT_UNITS], s->units);
		check_eq(s, "STATS packets", stats_buf[PULSE_STAT_PKTS], s->pkts);
		check_eq(s, "STATS flows created", stats_buf[PULSE_STAT_FLOWS_CREATED], NF);
		check_eq(s, "STATS flows active", stats_buf[PULSE_STAT_FLOWS_ACTIVE], NF);
		check_eq(s, "STATS bad QPN drops", stats_buf[PULSE_STAT_DROP_BAD_QPN], 3);
		check_eq(s, "STATS zero-byte events", stats_buf[PULSE_STAT_ZERO_EVENTS], 1);
		check_eq(s, "STATS clipped events", stats_buf[PULSE_STAT_CLIPPED_EVENTS], clipped);
		check_eq(s, "STATS timestamp-range drops", stats_buf[PULSE_STAT_DROP_TS_RANGE], 2);
		check_eq(s, "STATS late events", stats_buf[PULSE_STAT_LATE_EVENTS], 1);
		check_eq(s, "STATS reordered events", stats_buf[PULSE_STAT_REORDERED_EVENTS], 1);
		check_eq(s, "STATS bad-thread drops", stats_buf[PULSE_STAT_DROP_BAD_THREAD], 1);
		check_eq(s, "STATS slot drops", stats_buf[PULSE_STAT_DROP_NO_SLOT], 0);
		check_eq(s, "STATS pool drops", stats_buf[PULSE_STAT_DROP_NO_POOL], 0);
		check_eq(s, "STATS polls", stats_buf[PULSE_STAT_POLLS], 1);
		check_eq(s, "STATS busy polls", stats_buf[PULSE_STAT_POLLS_BUSY], 1);
		check_eq(s, "STATS pages served", stats_buf[PULSE_STAT_PAGES_SERVED], pr.page_count);
		check_eq(s, "STATS page repeats", stats_buf[PULSE_STAT_PAGE_REPEATS], 1);
	}

	/* Window 2: only the five double-buffered events; the other flows age. */
	clear_books(s);
	for (uint32_t i = 0; i < 5; i++)
		s->want[i][0] = 256;
	uint64_t tp2 = tp + 2000000;
	s->now = (uint32_t)tp2;
	if (!check_eq(s, "POLL 2", mb_poll(s, 1000000000002000000ull, 0, &pr), PULSE_MB_OK))
		return;
	check_eq(s, "POLL 2 window_seq", pr.window_seq, 2);
	check(s, (pr.flags & PULSE_MB_POLLF_RESTARTED) == 0, "POLL 2 not flagged RESTARTED");
	check_eq(s, "POLL 2 window start", (uint32_t)pr.window_start_ns, (uint32_t)tp);
	check_eq(s, "POLL 2 flows", pr.flows, 5);
	check_eq(s, "POLL 2 flows aged (silent since POLL 1)", pr.flows_aged, NF - 5);
	memset(&d, 0, sizeof d);
	drain(s, &pr, 0, &d, 0);
	check_eq(s, "upload 2 pages", (uint64_t)d.pages + d.bad_page + d.bad_last, pr.page_count);
	compare_books(s, "upload 2 holds the events sent while upload 1 drained");
	if (get_stats(s) == 0)
		check_eq(s, "STATS flows active after aging", stats_buf[PULSE_STAT_FLOWS_ACTIVE], 5);

	/* Silence: every flow ages, and its memory goes back to the pool. */
	for (uint32_t k = 0; k < 3; k++) {
		s->now += 1000000;
		if (mb_poll(s, 0, 0, &pr) != PULSE_MB_OK) {
			check(s, 0, "idle POLL");
			return;
		}
		memset(&d, 0, sizeof d);
		drain(s, &pr, 0, &d, 1);
		if (k == 0)
			check_eq(s, "idle POLL ages the last flows", pr.flows_aged, 5);
	}
	if (get_stats(s) == 0) {
		check_eq(s, "STATS flows active when idle", stats_buf[PULSE_STAT_FLOWS_ACTIVE], 0);
		check_eq(s, "STATS pool blocks in use when idle", stats_buf[PULSE_STAT_POOL_USED], 0);
		check_eq(s, "STATS flows aged", stats_buf[PULSE_STAT_FLOWS_AGED], NF);
	}
}

static void test_exhaustion(struct st *s)
{
	/* 8 flow slots and 2 pool blocks (62 records) */
	check_eq(s, "CONFIGURE flow_limit 8, pool_limit 2", configure(s, EPOCH, 8, 2), PULSE_MB_OK);
	uint64_t w0 = s->now;
	uint64_t units = 0, events = 0;
	for (uint32_t i = 0; i < 12; i++) {
		tx(s, i % NT, 0x500000u + i, w0 + 1000 + i, 100, 1);
		if (i < 8) {
			units += 100;
			events++;
		}
	}
	for (uint32_t e = 0; e < 100; e++) {
		tx(s, 0, 0x500000u, w0 + 2000 + (uint64_t)e * EPOCH, 10, 1);
		units += 10;
		events++;
	}
	s->now = (uint32_t)(w0 + 4000000);
	struct pulse_mb_poll_resp pr;
	if (!check_eq(s, "POLL after exhaustion", mb_poll(s, 0, 0, &pr), PULSE_MB_OK))
		return;
	struct drain d;
	memset(&d, 0, sizeof d);
	drain(s, &pr, 0, &d, 1);
	check_eq(s, "exhaustion upload pages", (uint64_t)d.pages + d.bad_page + d.bad_last,
		 pr.page_count);
	check(s, d.records <= 2 * PULSE_FW_RECORDS_PER_BLOCK, "records fit the 2-block pool");
	if (get_stats(s) == 0) {
		check_eq(s, "STATS slot drops (12 flows, 8 slots)",
			 stats_buf[PULSE_STAT_DROP_NO_SLOT], 4);
		check_eq(s, "STATS events with slot drops", stats_buf[PULSE_STAT_EVENTS], events);
		check(s, stats_buf[PULSE_STAT_DROP_NO_POOL] > 0, "STATS pool drops counted");
		check(s, stats_buf[PULSE_STAT_POOL_PEAK] <= 2, "STATS pool peak within the limit");
		check_eq(s, "uploaded + dropped units == accepted units",
			 d.units + stats_buf[PULSE_STAT_DROP_NO_POOL_UNITS],
			 stats_buf[PULSE_STAT_UNITS]);
		check_eq(s, "STATS units with slot drops", stats_buf[PULSE_STAT_UNITS], units);
	}
}

static void test_bad_requests(struct st *s)
{
	check_eq(s, "RESET", mb(s, PULSE_MB_RESET, NULL, 0), PULSE_MB_OK);
	if (get_stats(s) == 0) {
		check_eq(s, "after RESET no flows", stats_buf[PULSE_STAT_FLOWS_ACTIVE], 0);
		check_eq(s, "after RESET no pool blocks used", stats_buf[PULSE_STAT_POOL_USED], 0);
	}
	check_eq(s, "READ_PAGE with no upload is E_NO_UPLOAD", read_page(s, 1, 0),
		 PULSE_MB_E_NO_UPLOAD);

	uint32_t len = pulse_mb_build_request(s->req, sizeof s->req, PULSE_MB_HELLO, 9, NULL, 0);
	s->req[0] ^= 0xFF;
	check_eq(s, "bad magic is E_MAGIC", send_raw(s, s->req, len), PULSE_MB_E_MAGIC);

	len = pulse_mb_build_request(s->req, sizeof s->req, PULSE_MB_HELLO, 10, NULL, 0);
	s->req[2] = PULSE_MB_VERSION + 7;
	check_eq(s, "wrong version is E_VERSION", send_raw(s, s->req, len), PULSE_MB_E_VERSION);

	len = pulse_mb_build_request(s->req, sizeof s->req, PULSE_MB_HELLO, 11, NULL, 0);
	check_eq(s, "short header is E_TRUNCATED", send_raw(s, s->req, 7), PULSE_MB_E_TRUNCATED);
	pulse_put_u16(s->req + 4, 40); /* claims more than was received */
	check_eq(s, "length beyond the message is E_TRUNCATED", send_raw(s, s->req, len),
		 PULSE_MB_E_TRUNCATED);

	uint8_t body[4] = {1, 2, 3, 4};
	check_eq(s, "POLL with a short body is E_TRUNCATED", mb(s, PULSE_MB_POLL, body, 4),
		 PULSE_MB_E_TRUNCATED);
	check_eq(s, "unknown type is E_TYPE", mb(s, 0x33, NULL, 0), PULSE_MB_E_TYPE);
	check_eq(s, "CONFIGURE epoch 1 us is E_RANGE", configure(s, 1000, 0, 0), PULSE_MB_E_RANGE);
	check_eq(s, "CONFIGURE epoch 2 ms is E_RANGE", configure(s, 2000000, 0, 0),
		 PULSE_MB_E_RANGE);
	if (get_stats(s) == 0)
		check(s, stats_buf[PULSE_STAT_BAD_REQUESTS] >= 8, "STATS bad requests counted");
	check_eq(s, "HELLO still answers", mb(s, PULSE_MB_HELLO, NULL, 0), PULSE_MB_OK);
}

int pulse_selftest_run(void *mem, size_t size, uint32_t platform)
{
	struct st *s = &g_st;
	memset(s, 0, sizeof *s);
	s->platform = platform;
	s->lcg = 12345;
	s->qpn[0] = 1;                   /* lowest valid QPN */
	s->qpn[1] = PULSE_QPN_RESERVED_HIGH - 1u; /* highest valid QPN */
	for (uint32_t i = 2; i < NF; i++)
		s->qpn[i] = 0x1000u + i * 7919u;

	struct pulse_fw_limits lim = {.max_flows = 64,
				      .pool_blocks = 2048,
				      .max_threads = NT,
				      .platform = platform,
				      .instance_id = 0x5E1F7E57u,
				      .spin_relax = NULL};
	uint64_t t0 = 0xFFFFFFFFull + 1 - 3000000; /* 3 ms before the 32-bit wrap */
	size_t need = pulse_fw_memory_size(&lim);
	printf("selftest: NIC agent core %u.%u.%u, %s, %lu bytes of firmware memory\n",
	       (unsigned)(PULSE_FW_VERSION >> 16), (unsigned)(PULSE_FW_VERSION >> 8 & 0xFF),
	       (unsigned)(PULSE_FW_VERSION & 0xFF),
	       platform == PULSE_PLATFORM_RV64_EMU ? "rv64imac on qemu"
	       : platform == PULSE_PLATFORM_X86_SIM ? "x86 host build"
						    : "other platform",
	       (unsigned long)need);
	if (!check(s, need != 0 && need <= size, "firmware memory fits the platform region"))
		goto out;
	s->fw = pulse_fw_init(mem, size, &lim, (uint32_t)t0);
	if (!check(s, s->fw != NULL, "pulse_fw_init"))
		goto out;
	s->now = (uint32_t)t0;
	test_hello(s);
	test_main_window(s, t0);
	test_exhaustion(s);
	test_bad_requests(s);
out:
	if (s->failed)
		printf("selftest: FAIL (%d of %d checks failed)\n", s->failed, s->checks);
	else
		printf("selftest: PASS (%d checks)\n", s->checks);
	return s->failed;
}
