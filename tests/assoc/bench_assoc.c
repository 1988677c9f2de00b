/* bench_assoc: CPU time of the association plus metrics for one poll of
 * 8 GPUs x 2000 flows at 32 µs epochs (issue #7 target: <= 20 ms).
 *
 * Each GPU has its own NIC (index g) and a rank in 5 communicators of 51
 * ranks each: 5 x 50 remote peers x 8 channels = 2000 QPs on the NIC.
 * Every 1 s poll window holds 4 all-to-all groups per communicator (a send
 * to each of its 50 peers over 8 channels, the groups 224 ms apart), so
 * each QP is active in K epochs of the window; the records of the finished groups are built and
 * emitted at the flush (what the agent does each poll). The windows are
 * built before the clock starts; the time is CLOCK_PROCESS_CPUTIME_ID around
 * assoc_window x 8 + assoc_flush, per poll, over POLLS polls after a warm-up.
 *
 * Baseline ("dense"): the same Algorithm 1 per peer over a dense per-peer
 * epoch array of the window (31,250 entries), channels added into it, as a
 * straightforward implementation would do; no calls, no records.
 *
 * Usage: bench_assoc [K ...]   (default: 16 128) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assoc.h"

#define GPUS 8
#define COMMS 5
#define PEERS 50 /* per communicator */
#define CH 8
#define EP 32000u
#define WIN 31250u /* 1 s */
#define GROUPS 4
#define POLLS 10
#define WARM 2
#define OFF 1700000000000000000ll

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint32_t qpn_of(int comm, int peer, int ch)
{
	return 0x100u + (uint32_t)((comm * PEERS + peer) * CH + ch);
}

static uint64_t comm_id(int g, int c)
{
	return 0xA000u + (uint64_t)g * 16 + (uint64_t)c;
}

/* window w of GPU g: each QP active in K epochs, split over the groups */
static void build(struct pulse_window *win, uint32_t seq, uint32_t k)
{
	memset(win, 0, sizeof *win);
	win->window_seq = seq;
	win->complete = 1;
	win->epoch_ns = EP;
	win->nic_start_ns = (uint64_t)seq * WIN * EP;
	win->nic_end_ns = win->nic_start_ns + (uint64_t)WIN * EP;
	win->flow_count = COMMS * PEERS * CH;
	win->flows = calloc(win->flow_count, sizeof *win->flows);
	uint32_t per_group = k / GROUPS;
	for (int p = 0; p < COMMS * PEERS; p++)
		for (int c = 0; c < CH; c++) {
			struct pulse_qp_series *s = &win->flows[p * CH + c];
			s->qpn = qpn_of(0, p, c);
			s->count = per_group * GROUPS;
			s->cap = s->count;
			s->epoch = malloc(s->count * sizeof *s->epoch);
			s->bytes = malloc(s->count * sizeof *s->bytes);
			uint32_t n = 0;
			for (uint32_t gi = 0; gi < GROUPS; gi++) {
				/* group gi runs from epoch 1000 + gi * 7000 */
				uint32_t e0 = 1000 + gi * 7000 + (uint32_t)(p % 7);
				for (uint32_t i = 0; i < per_group; i++) {
					s->epoch[n] = e0 + i;
					s->bytes[n] = 4096;
					s->total_bytes += 4096;
					n++;
				}
			}
		}
}

static void free_win(struct pulse_window *w)
{
	for (uint32_t i = 0; i < w->flow_count; i++) {
		free(w->flows[i].epoch);
		free(w->flows[i].bytes);
	}
	free(w->flows);
}

struct sink {
	uint64_t records, complete, bytes;
};
static void emit(void *ctx, const struct pulse_op_record *r)
{
	struct sink *s = ctx;
	s->records++;
	s->complete += r->status == PULSE_OP_COMPLETE;
	s->bytes += r->actual_bytes;
}

static void calls(struct assoc *a, int g, int cm, uint32_t poll, uint32_t k, uint64_t *seq, uint64_t *gid)
{
	uint32_t per_group = k / GROUPS;
	for (uint32_t gi = 0; gi < GROUPS; gi++) {
		uint64_t t = (uint64_t)((int64_t)(((uint64_t)poll * WIN + 1000 + gi * 7000) * EP) + OFF) - 10000;
		struct pulse_hook_record r;
		memset(&r, 0, sizeof r);
		r.kind = PULSE_HOOK_GROUP_START;
		r.pid = 1000u + (uint32_t)g;
		r.time_ns = t;
		r.u.group.group_id = ++*gid;
		r.u.group.depth = 1;
		assoc_call(a, &r);
		for (int p = 0; p < PEERS; p++) {
			memset(&r, 0, sizeof r);
			r.kind = PULSE_HOOK_OP;
			r.pid = 1000u + (uint32_t)g;
			r.time_ns = t;
			r.u.op.comm_id = comm_id(g, cm);
			r.u.op.seq = (*seq)++;
			r.u.op.type = 7; /* send */
			r.u.op.datatype = 0;
			r.u.op.count = (uint64_t)per_group * CH * 4096; /* bytes (int8) */
			r.u.op.root_peer = p + 1;
			r.u.op.group_id = *gid;
			assoc_call(a, &r);
		}
		memset(&r, 0, sizeof r);
		r.kind = PULSE_HOOK_GROUP_END;
		r.pid = 1000u + (uint32_t)g;
		r.time_ns = t;
		r.u.group.group_id = *gid;
		r.u.group.depth = 1;
		assoc_call(a, &r);
	}
}

/* the dense baseline: per peer, a dense epoch array, Algorithm 1 over it */
static uint64_t dense(const struct pulse_window *w, uint64_t *arr, uint64_t size)
{
	uint64_t segs = 0;
	for (int p = 0; p < COMMS * PEERS; p++) {
		memset(arr, 0, WIN * sizeof *arr);
		for (int c = 0; c < CH; c++) {
			const struct pulse_qp_series *s = &w->flows[p * CH + c];
			for (uint32_t i = 0; i < s->count; i++)
				arr[s->epoch[i]] += s->bytes[i];
		}
		uint64_t last = 0, tmp = 0;
		for (uint32_t e = 0; e < WIN; e++) {
			if (!arr[e])
				continue;
			uint64_t t = (uint64_t)e * EP;
			if (t - last >= 2000000 && tmp >= size) {
				segs++;
				tmp = 0;
			}
			last = t;
			tmp += arr[e];
		}
	}
	return segs;
}

static void run(uint32_t k)
{
	struct assoc_cfg cfg = { .host = "bench", .epoch_ns = EP };
	struct assoc *a = assoc_new(&cfg);
	if (!a) {
		fprintf(stderr, "bench_assoc: assoc_new failed\n");
		exit(1);
	}
	for (int g = 0; g < GPUS; g++)
		for (int cm = 0; cm < COMMS; cm++) {
			for (int r = 0; r <= PEERS; r++) {
				char h[16];
				snprintf(h, sizeof h, "h%d", r);
				struct assoc_member m = { .comm_id = comm_id(g, cm), .rank = r, .nranks = PEERS + 1,
							  .host = r ? h : "bench", .gpu = g,
							  .pid = r ? 0 : 1000u + (uint32_t)g, .local = r == 0 };
				assoc_member(a, &m);
			}
			for (int p = 0; p < PEERS; p++)
				for (int c = 0; c < CH; c++) {
					struct assoc_qp q = { .nic = (uint16_t)g, .qpn = qpn_of(cm, p, c),
							      .pid = 1000u + (uint32_t)g, .comm_id = comm_id(g, cm),
							      .rank = 0, .remote_rank = p + 1, .remote_host = "peer",
							      .remote_gpu = g };
					assoc_qp(a, &q);
				}
		}
	uint64_t seq[GPUS][COMMS] = { { 0 } }, gid = 0;
	double sum = 0, max = 0, wsum = 0;
	struct sink sink = { 0 };
	uint64_t epochs = 0;
	for (uint32_t poll = 0; poll < WARM + POLLS; poll++) {
		struct pulse_window w[GPUS];
		for (int g = 0; g < GPUS; g++) {
			build(&w[g], poll, k);
			for (int cm = 0; cm < COMMS; cm++)
				calls(a, g, cm, poll, k, &seq[g][cm], &gid);
			for (uint32_t f = 0; f < w[g].flow_count; f++)
				epochs += poll >= WARM ? w[g].flows[f].count : 0;
		}
		double t0 = cpu_ms();
		for (int g = 0; g < GPUS; g++)
			assoc_window(a, (uint16_t)g, &w[g], OFF, 0);
		double tw = cpu_ms() - t0;
		assoc_flush(a, (uint64_t)((int64_t)((uint64_t)(poll + 1) * WIN * EP) + OFF), emit, &sink);
		double dt = cpu_ms() - t0;
		if (poll >= WARM) {
			sum += dt;
			wsum += tw;
			if (dt > max)
				max = dt;
		}
		for (int g = 0; g < GPUS; g++)
			free_win(&w[g]);
	}
	struct assoc_stats st;
	assoc_get_stats(a, &st);
	/* the dense baseline on the same windows */
	uint64_t *arr = malloc(WIN * sizeof *arr);
	double dsum = 0;
	uint64_t segs = 0;
	for (uint32_t poll = 0; poll < POLLS; poll++) {
		struct pulse_window w[GPUS];
		for (int g = 0; g < GPUS; g++)
			build(&w[g], poll, k);
		double t0 = cpu_ms();
		for (int g = 0; g < GPUS; g++)
			segs += dense(&w[g], arr, (uint64_t)(k / GROUPS) * CH * 4096);
		dsum += cpu_ms() - t0;
		for (int g = 0; g < GPUS; g++)
			free_win(&w[g]);
	}
	free(arr);
	printf("| %u | %d x %d | %llu | %.2f (windows %.2f, flush %.2f) | %.2f | %llu (%llu complete) | %.2f |\n",
	       k, GPUS, COMMS * PEERS * CH, (unsigned long long)(epochs / POLLS), sum / POLLS, wsum / POLLS,
	       (sum - wsum) / POLLS, max, (unsigned long long)sink.records,
	       (unsigned long long)sink.complete, dsum / POLLS);
	if (st.unknown_qp_bytes || sink.complete == 0)
		fprintf(stderr, "bench_assoc: unexpected: %llu unknown-QP bytes, %llu complete records\n",
			(unsigned long long)st.unknown_qp_bytes, (unsigned long long)sink.complete);
	(void)segs;
	assoc_free(a);
}

int main(int argc, char **argv)
{
	printf("| active epochs per QP per window (K) | GPUs x QPs | non-zero epochs per poll | Pulse association CPU ms per poll (mean) | max | records emitted | dense baseline CPU ms per poll |\n");
	printf("|---|---|---|---|---|---|---|\n");
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			run((uint32_t)strtoul(argv[i], NULL, 10));
	} else {
		run(16);
		run(128);
	}
	return 0;
}
