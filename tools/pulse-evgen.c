/* pulse-evgen: deterministic generator of Pulse event-stream files
 * (include/pulse/event_stream.h).
 *
 * It models what a NIC's aggregation layer sees under LLM training traffic:
 * N RC flows (QPs) whose traffic comes in bursts, as collectives do (all flows
 * of one communicator start a step together, send for a while, then go
 * quiet), one TX event per `--event-bytes` sent, some events coalesced over
 * several packets, the NIC's 32-bit nanosecond clock wrapping every ~4.29 s,
 * and a POLL record every `--poll-ms` of NIC time. With `--bad` it also mixes
 * in input the firmware must survive: reserved and oversized QPNs, timestamps
 * going backwards or jumping by seconds, zero-byte events and events whose
 * 16-bit byte counter clipped. `--churn` adds short-lived flows so that a
 * small flow-slot limit runs out.
 *
 * Output is a pure function of the options (seeded xorshift PRNG, integer
 * arithmetic only), so the same command always writes the same bytes. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/event_stream.h"

struct opts {
	const char *out;
	uint64_t seed;
	uint32_t flows;
	uint64_t duration_ms;
	uint64_t start_ns;
	uint64_t poll_ms;
	uint64_t flow_mbps;
	uint64_t period_us;
	uint32_t duty_pct;
	uint32_t groups;
	uint32_t event_bytes;
	uint32_t mtu;
	uint32_t coalesce_pct;
	uint32_t threads;
	int bad;
	uint32_t bad_permille;
	uint32_t churn;
	uint64_t max_events;
	uint64_t host_ns_start;
	const char *nic;
	int quiet;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pulse-evgen -o FILE [options]\n"
		"Writes a deterministic Pulse event-stream file (include/pulse/event_stream.h):\n"
		"bursty per-QP TX events like LLM collectives, plus periodic POLL records.\n"
		"\n"
		"  -o, --out FILE         output file (required; '-' for stdout)\n"
		"      --seed N           PRNG seed (default 1)\n"
		"      --flows N          long-lived flows (QPs) (default 64)\n"
		"      --duration-ms N    NIC time covered (default 5000: > 4.29 s, so the\n"
		"                         32-bit timestamp wraps at least once)\n"
		"      --start-ns N       NIC clock at the first event, 64-bit; written mod 2^32\n"
		"                         (default 0)\n"
		"      --poll-ms N        a POLL record every N ms of NIC time (default 100;\n"
		"                         0: none)\n"
		"      --flow-mbps N      a flow's rate while it is in a burst (default 1000)\n"
		"      --period-us N      collective step period (default 20000)\n"
		"      --duty-pct N       share of each step a flow is sending, 1..100 (default 10)\n"
		"      --groups N         communicators: flows of a group burst together (default 4)\n"
		"      --event-bytes N    bytes per TX event (default 4096)\n"
		"      --mtu N            bytes per packet (default 4096)\n"
		"      --coalesce-pct N   share of events that cover 2..16 events' worth (default 10)\n"
		"      --threads N        DPA threads named in records, 1..256 (default 16)\n"
		"      --bad              mix in bad input: QPN 0, 0xFFFFFF and > 24 bits,\n"
		"                         timestamps going backwards or jumping by seconds,\n"
		"                         zero-byte events, clipped (0xFFFF) byte counters\n"
		"      --bad-permille N   bad records per 1000 events with --bad (default 20)\n"
		"      --churn N          N short-lived extra flows per poll interval (default 0)\n"
		"      --max-events N     stop with an error past N TX events (default 50000000)\n"
		"      --host-ns N        host CLOCK_REALTIME at NIC time 0 (default\n"
		"                         1700000000000000000)\n"
		"      --nic NAME         NIC name in the header (default evgen)\n"
		"  -q, --quiet            no summary on stderr\n"
		"  -h, --help             this text\n");
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (!s || !*s) {
		fprintf(stderr, "pulse-evgen: %s needs a value\n", name);
		return -1;
	}
	if (*s == '-') {
		fprintf(stderr, "pulse-evgen: %s: '%s' is negative\n", name, s);
		return -1;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end) {
		fprintf(stderr, "pulse-evgen: %s: '%s' is not a number\n", name, s);
		return -1;
	}
	if (v < min || v > max) {
		fprintf(stderr, "pulse-evgen: %s: %llu is out of range %" PRIu64 "..%" PRIu64 "\n",
			name, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_u32(const char *name, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (parse_u64(name, s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* xorshift64* */
static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}
/* uniform in [0, n), n > 0; the modulo bias is irrelevant here */
static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

struct flow {
	uint32_t qpn;
	uint8_t thread;
	uint32_t group;
	uint64_t next_ns;   /* time of the flow's next event */
	uint64_t burst_end; /* end of the current burst */
	uint64_t step;      /* collective step the burst belongs to */
	uint32_t left;      /* churn flows: events still to send (0: long-lived) */
	int done;
};

struct gen {
	struct opts o;
	FILE *f;
	struct flow *flows;
	uint32_t nflows, cap;
	uint32_t *heap; /* flow indices, min-heap on next_ns */
	uint32_t heap_n;
	uint64_t *group_phase;
	uint64_t event_gap_ns; /* one event's worth of bytes at flow_mbps */
	uint32_t event_units, event_pkts;
	/* QPNs in use, so flows get distinct ones */
	uint8_t *qpn_used; /* bitmap, 2^24 bits */
	uint64_t tx, polls, bad, coalesced, wrote_bytes;
	int write_error;
};

static int heap_less(struct gen *g, uint32_t a, uint32_t b)
{
	const struct flow *fa = &g->flows[a], *fb = &g->flows[b];
	if (fa->next_ns != fb->next_ns)
		return fa->next_ns < fb->next_ns;
	return a < b; /* deterministic tie break */
}

static void heap_push(struct gen *g, uint32_t idx)
{
	uint32_t i = g->heap_n++;
	g->heap[i] = idx;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!heap_less(g, g->heap[i], g->heap[p]))
			break;
		uint32_t t = g->heap[i];
		g->heap[i] = g->heap[p];
		g->heap[p] = t;
		i = p;
	}
}

static uint32_t heap_pop(struct gen *g)
{
	uint32_t top = g->heap[0];
	g->heap[0] = g->heap[--g->heap_n];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < g->heap_n && heap_less(g, g->heap[l], g->heap[m]))
			m = l;
		if (r < g->heap_n && heap_less(g, g->heap[r], g->heap[m]))
			m = r;
		if (m == i)
			break;
		uint32_t t = g->heap[i];
		g->heap[i] = g->heap[m];
		g->heap[m] = t;
		i = m;
	}
	return top;
}

static uint32_t fresh_qpn(struct gen *g)
{
	for (;;) {
		/* valid sending QPNs: 1 .. 0xFFFFFE */
		uint32_t q = 1 + (uint32_t)rnd_below(PULSE_QPN_RESERVED_HIGH - 1);
		if (!(g->qpn_used[q >> 3] & (1u << (q & 7)))) {
			g->qpn_used[q >> 3] |= (uint8_t)(1u << (q & 7));
			return q;
		}
	}
}

static void put_record(struct gen *g, const struct pulse_evs_record *r)
{
	uint8_t buf[PULSE_EVS_RECORD_SIZE];
	pulse_evs_encode_record(buf, r);
	if (fwrite(buf, 1, sizeof buf, g->f) != sizeof buf)
		g->write_error = 1;
	g->wrote_bytes += sizeof buf;
}

static void put_tx(struct gen *g, uint8_t thread, uint32_t qpn, uint64_t t, uint32_t units,
		   uint32_t pkts)
{
	struct pulse_evs_record r;
	memset(&r, 0, sizeof r);
	r.kind = PULSE_EVS_TX;
	r.thread = thread;
	r.ev.qpn = qpn;
	r.ev.ts_ns = (uint32_t)t;
	r.ev.sent_32b = units > PULSE_SENT_UNITS_CLIPPED ? (uint16_t)PULSE_SENT_UNITS_CLIPPED
							 : (uint16_t)units;
	r.ev.sent_pkts = pkts > 0xFFFF ? 0xFFFF : (uint16_t)pkts;
	put_record(g, &r);
	g->tx++;
}

static void put_poll(struct gen *g, uint64_t t)
{
	struct pulse_evs_record r;
	memset(&r, 0, sizeof r);
	r.kind = PULSE_EVS_POLL;
	r.ev.ts_ns = (uint32_t)t;
	/* the host clock runs 40 ppm fast against the NIC's, plus a little
	 * jitter, so clock sync has something to measure */
	uint64_t since = t - g->o.start_ns;
	r.host_ns = g->o.host_ns_start + t + since / 25000 + rnd_below(2000);
	put_record(g, &r);
	g->polls++;
}

/* Start of the burst of `step` for a flow of `group`, with per-burst jitter
 * (up to 5% of the period) so that the flows of a group are close, not equal. */
static void schedule_burst(struct gen *g, struct flow *fl, uint64_t step)
{
	uint64_t period = g->o.period_us * 1000;
	uint64_t on = period * g->o.duty_pct / 100;
	uint64_t jitter = period / 20;
	uint64_t start = g->o.start_ns + step * period + g->group_phase[fl->group] +
			 (jitter ? rnd_below(jitter) : 0);
	/* burst length varies +-20% */
	uint64_t len = on * 8 / 10 + (on > 2 ? rnd_below(on * 4 / 10 + 1) : 0);
	if (len == 0)
		len = 1;
	fl->step = step;
	fl->next_ns = start;
	fl->burst_end = start + len;
}

static int add_flow(struct gen *g, uint64_t now, uint32_t left)
{
	if (g->nflows == g->cap) {
		uint32_t cap = g->cap ? g->cap * 2 : 64;
		struct flow *nf = realloc(g->flows, (size_t)cap * sizeof *nf);
		if (nf)
			g->flows = nf;
		uint32_t *nh = nf ? realloc(g->heap, (size_t)cap * sizeof *nh) : NULL;
		if (nh)
			g->heap = nh;
		if (!nf || !nh) {
			fprintf(stderr, "pulse-evgen: out of memory for %u flows\n", cap);
			return -1;
		}
		g->cap = cap;
	}
	uint32_t idx = g->nflows++;
	struct flow *fl = &g->flows[idx];
	memset(fl, 0, sizeof *fl);
	fl->qpn = fresh_qpn(g);
	fl->thread = (uint8_t)(rnd_below(g->o.threads));
	fl->group = (uint32_t)rnd_below(g->o.groups);
	fl->left = left;
	if (left) {
		/* a short-lived flow: a few events from now */
		fl->next_ns = now + rnd_below(g->o.poll_ms ? g->o.poll_ms * 1000000 : 1000000);
		fl->burst_end = UINT64_MAX;
	} else {
		schedule_burst(g, fl, 0);
	}
	heap_push(g, idx);
	return 0;
}

/* One bad record at NIC time t. */
static void put_bad(struct gen *g, uint64_t t, const struct flow *near)
{
	uint32_t kind = (uint32_t)rnd_below(8);
	uint8_t th = near ? near->thread : 0;
	uint32_t q = near ? near->qpn : 1;
	g->bad++;
	switch (kind) {
	case 0: /* SMI QPN */
		put_tx(g, th, PULSE_QPN_RESERVED_LOW, t, g->event_units, g->event_pkts);
		break;
	case 1: /* multicast QPN */
		put_tx(g, th, PULSE_QPN_RESERVED_HIGH, t, g->event_units, g->event_pkts);
		break;
	case 2: /* above 24 bits */
		put_tx(g, th, q | (1u + (uint32_t)rnd_below(255)) << 24, t, g->event_units,
		       g->event_pkts);
		break;
	case 3: /* backwards by up to 200 us */
		put_tx(g, th, q, t - 1 - rnd_below(200000), g->event_units, g->event_pkts);
		break;
	case 4: /* a jump of 1..3 s forward */
		put_tx(g, th, q, t + 1000000000ull + rnd_below(2000000000ull), g->event_units,
		       g->event_pkts);
		break;
	case 5: /* a jump of 1..3 s backward */
		put_tx(g, th, q, t - 1000000000ull - rnd_below(2000000000ull), g->event_units,
		       g->event_pkts);
		break;
	case 6: /* zero bytes */
		put_tx(g, th, q, t, 0, 0);
		break;
	default: { /* clipped byte counter: more than 2 MiB coalesced */
		uint32_t pkts = 520 + (uint32_t)rnd_below(2000);
		put_tx(g, th, q, t, PULSE_SENT_UNITS_CLIPPED, pkts);
		break;
	}
	}
}

static int generate(struct gen *g)
{
	const struct opts *o = &g->o;
	uint64_t end = o->start_ns + o->duration_ms * 1000000;
	uint64_t poll_ns = o->poll_ms * 1000000;
	uint64_t next_poll = poll_ns ? o->start_ns + poll_ns : UINT64_MAX;
	uint64_t period = o->period_us * 1000;

	g->group_phase = calloc(o->groups, sizeof *g->group_phase);
	if (!g->group_phase)
		return -1;
	for (uint32_t i = 0; i < o->groups; i++)
		g->group_phase[i] = rnd_below(period);
	for (uint32_t i = 0; i < o->flows; i++)
		if (add_flow(g, o->start_ns, 0))
			return -1;

	uint64_t now = o->start_ns;
	for (;;) {
		uint64_t t = g->heap_n ? g->flows[g->heap[0]].next_ns : UINT64_MAX;
		if (next_poll <= t && next_poll <= end) {
			now = next_poll;
			put_poll(g, now);
			next_poll += poll_ns;
			for (uint32_t i = 0; i < o->churn; i++)
				if (add_flow(g, now, 1 + (uint32_t)rnd_below(4)))
					return -1;
			continue;
		}
		if (t > end)
			break;
		now = t;
		uint32_t idx = heap_pop(g);
		struct flow *fl = &g->flows[idx];

		/* one event, sometimes coalesced over several events' worth */
		uint32_t mult = 1;
		if (o->coalesce_pct && rnd_below(100) < o->coalesce_pct) {
			mult = 2 + (uint32_t)rnd_below(15);
			g->coalesced++;
		}
		put_tx(g, fl->thread, fl->qpn, now, g->event_units * mult, g->event_pkts * mult);
		if (o->bad && rnd_below(1000) < o->bad_permille)
			put_bad(g, now, fl);
		if (g->tx > o->max_events) {
			fprintf(stderr,
				"pulse-evgen: more than %" PRIu64 " TX events; lower --flows, "
				"--flow-mbps, --duty-pct or --duration-ms, or raise --max-events\n",
				o->max_events);
			return -1;
		}

		/* next event: the flow's gap, +-10% */
		uint64_t gap = g->event_gap_ns * mult;
		gap = gap * 9 / 10 + rnd_below(gap / 5 + 1);
		if (gap == 0)
			gap = 1;
		if (fl->left) {
			if (--fl->left == 0)
				continue; /* a churn flow that has finished */
			fl->next_ns = now + gap;
		} else if (now + gap < fl->burst_end) {
			fl->next_ns = now + gap;
		} else {
			uint64_t step = fl->step + 1;
			/* skip steps that would start in the past */
			while (o->start_ns + step * period + g->group_phase[fl->group] <= now)
				step++;
			schedule_burst(g, fl, step);
		}
		heap_push(g, idx);
	}
	if (g->write_error)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct gen g;
	memset(&g, 0, sizeof g);
	struct opts *o = &g.o;
	o->seed = 1;
	o->flows = 64;
	o->duration_ms = 5000;
	o->poll_ms = 100;
	o->flow_mbps = 1000;
	o->period_us = 20000;
	o->duty_pct = 10;
	o->groups = 4;
	o->event_bytes = 4096;
	o->mtu = 4096;
	o->coalesce_pct = 10;
	o->threads = 16;
	o->bad_permille = 20;
	o->max_events = 50000000;
	o->host_ns_start = 1700000000000000000ull;
	o->nic = "evgen";

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int used = 1, rc = 0;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
			if (!v) {
				fprintf(stderr, "pulse-evgen: %s needs a file name\n", a);
				return 2;
			}
			o->out = v;
		} else if (!strcmp(a, "--seed")) {
			rc = parse_u64(a, v, 0, UINT64_MAX, &o->seed);
		} else if (!strcmp(a, "--flows")) {
			rc = parse_u32(a, v, 0, 1000000, &o->flows);
		} else if (!strcmp(a, "--duration-ms")) {
			rc = parse_u64(a, v, 1, 3600000, &o->duration_ms);
		} else if (!strcmp(a, "--start-ns")) {
			rc = parse_u64(a, v, 0, UINT64_MAX / 2, &o->start_ns);
		} else if (!strcmp(a, "--poll-ms")) {
			rc = parse_u64(a, v, 0, 3600000, &o->poll_ms);
		} else if (!strcmp(a, "--flow-mbps")) {
			rc = parse_u64(a, v, 1, 1000000, &o->flow_mbps);
		} else if (!strcmp(a, "--period-us")) {
			rc = parse_u64(a, v, 1, 60000000, &o->period_us);
		} else if (!strcmp(a, "--duty-pct")) {
			rc = parse_u32(a, v, 1, 100, &o->duty_pct);
		} else if (!strcmp(a, "--groups")) {
			rc = parse_u32(a, v, 1, 65536, &o->groups);
		} else if (!strcmp(a, "--event-bytes")) {
			rc = parse_u32(a, v, 32, 1u << 20, &o->event_bytes);
		} else if (!strcmp(a, "--mtu")) {
			rc = parse_u32(a, v, 256, 9216, &o->mtu);
		} else if (!strcmp(a, "--coalesce-pct")) {
			rc = parse_u32(a, v, 0, 100, &o->coalesce_pct);
		} else if (!strcmp(a, "--threads")) {
			rc = parse_u32(a, v, 1, 256, &o->threads);
		} else if (!strcmp(a, "--bad")) {
			o->bad = 1;
			used = 0;
		} else if (!strcmp(a, "--bad-permille")) {
			rc = parse_u32(a, v, 0, 1000, &o->bad_permille);
		} else if (!strcmp(a, "--churn")) {
			rc = parse_u32(a, v, 0, 1000000, &o->churn);
		} else if (!strcmp(a, "--max-events")) {
			rc = parse_u64(a, v, 1, UINT64_MAX / 2, &o->max_events);
		} else if (!strcmp(a, "--host-ns")) {
			rc = parse_u64(a, v, 0, UINT64_MAX / 2, &o->host_ns_start);
		} else if (!strcmp(a, "--nic")) {
			if (!v) {
				fprintf(stderr, "pulse-evgen: --nic needs a name\n");
				return 2;
			}
			o->nic = v;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
			used = 0;
		} else {
			fprintf(stderr, "pulse-evgen: unknown option '%s' (see --help)\n", a);
			return 2;
		}
		if (rc)
			return 2;
		i += used;
	}
	if (!o->out) {
		fprintf(stderr, "pulse-evgen: no output file; use -o FILE (see --help)\n");
		return 2;
	}
	if (o->flows == 0 && o->churn == 0) {
		fprintf(stderr, "pulse-evgen: --flows 0 and no --churn: nothing to generate\n");
		return 2;
	}
	if ((uint64_t)o->flows + o->churn * (o->poll_ms ? o->duration_ms / o->poll_ms + 1 : 0) >
	    PULSE_QPN_RESERVED_HIGH - 2) {
		fprintf(stderr, "pulse-evgen: more flows than there are 24-bit QPNs\n");
		return 2;
	}

	rng_state = o->seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
	if (rng_state == 0)
		rng_state = 1;
	g.event_units = (o->event_bytes + PULSE_UNIT_BYTES - 1) / PULSE_UNIT_BYTES;
	g.event_pkts = (o->event_bytes + o->mtu - 1) / o->mtu;
	g.event_gap_ns = (uint64_t)o->event_bytes * 8 * 1000 / o->flow_mbps;
	g.qpn_used = calloc(PULSE_QPN_COUNT / 8, 1);
	if (!g.qpn_used) {
		fprintf(stderr, "pulse-evgen: out of memory\n");
		return 1;
	}

	if (!strcmp(o->out, "-")) {
		g.f = stdout;
	} else {
		g.f = fopen(o->out, "wb");
		if (!g.f) {
			fprintf(stderr, "pulse-evgen: cannot create %s: %s\n", o->out, strerror(errno));
			return 1;
		}
	}
	uint8_t hdr[PULSE_EVS_HEADER_SIZE];
	pulse_evs_encode_header(hdr, o->nic);
	if (fwrite(hdr, 1, sizeof hdr, g.f) != sizeof hdr)
		g.write_error = 1;
	g.wrote_bytes = sizeof hdr;

	int rc = generate(&g);
	if (g.f != stdout) {
		if (fclose(g.f))
			g.write_error = 1;
	} else if (fflush(g.f)) {
		g.write_error = 1;
	}
	if (g.write_error) {
		fprintf(stderr, "pulse-evgen: writing %s failed: %s\n", o->out, strerror(errno));
		rc = -1;
	}
	if (rc == 0 && !o->quiet)
		fprintf(stderr,
			"pulse-evgen: %s: %" PRIu64 " TX events (%" PRIu64 " coalesced, %" PRIu64
			" bad), %" PRIu64 " polls, %u flows, %" PRIu64 " bytes\n",
			o->out, g.tx, g.coalesced, g.bad, g.polls, g.nflows, g.wrote_bytes);
	free(g.flows);
	free(g.heap);
	free(g.group_phase);
	free(g.qpn_used);
	if (rc && g.f != stdout && strcmp(o->out, "-"))
		remove(o->out);
	return rc ? 1 : 0;
}
