/* pulse-cluster-serve: one NIC of a run, fed from its event stream
 * (include/pulse/event_stream.h) into its own firmware core, and served by
 * sim_serve_nics (sim/serve.c) like run_trace --serve serves a capture.
 *
 * The stream is in NIC-time order; its POLL records tie the NIC clock to
 * the host's (host_ns when the recorded agent polled, ts_ns when the NIC
 * handled it). Every record gets a due time on the host's recorded clock:
 * a POLL its host_ns, a TX event the last POLL's host_ns plus the NIC time
 * since that POLL. It is fed when the host's clock (cs_clock) has passed
 * it, and a mailbox request is answered with the NIC clock extrapolated the
 * same way, so an event is always in the window of the poll that follows
 * it. The recorded POLLs themselves are not replayed: the live agent polls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster_serve.h"
#include "pulse/clock_ns.h"
#include "pulse/event_stream.h"
#include "pulse/nic_agent.h"

#define EVS_THREADS 16u
#define EVS_BATCH 4096u /* per NIC and loop turn: the sockets are looked at between */

struct evs_nic {
	char path[4096];
	const uint8_t *map;
	size_t size, off, first;     /* bytes; the next record; the first record */
	uint16_t rsz;
	const struct cs_clock *clk;
	const struct cs_host *h;
	struct pulse_fw *fw;
	void *mem;
	size_t mem_size;
	struct pulse_fw_limits lim;
	int have_poll;
	uint64_t poll_host;          /* the last POLL passed */
	uint32_t poll_nic;
	int have_next;
	struct pulse_evs_record next;
	uint64_t next_key;
	uint64_t first_poll_host, last_key;
	uint32_t first_poll_nic;
	uint64_t events, requests, bad;
};

static void read_next(struct evs_nic *n)
{
	n->have_next = 0;
	while (n->off + n->rsz <= n->size) {
		struct pulse_evs_record r;
		int ok = pulse_evs_decode_record(n->map + n->off, &r) == 0;
		n->off += n->rsz;
		if (!ok) {
			n->bad++;
			continue;
		}
		n->next = r;
		if (r.kind == PULSE_EVS_POLL)
			n->next_key = r.host_ns;
		else if (n->have_poll)
			/* signed: an event stamped just before the POLL it follows is due at once */
			n->next_key = n->poll_host + (uint64_t)(int64_t)(int32_t)(r.ev.ts_ns - n->poll_nic);
		else
			n->next_key = 0; /* before any poll: at once */
		n->have_next = 1;
		return;
	}
}

void evs_nic_free(struct evs_nic *n)
{
	if (!n)
		return;
	if (n->map)
		munmap((void *)n->map, n->size);
	free(n->mem);
	free(n);
}

struct evs_nic *evs_nic_open(const char *path, const struct cs_clock *clk, const struct cs_host *h,
			     char *err, size_t errlen)
{
	struct evs_nic *n = calloc(1, sizeof *n);
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(n->path, sizeof n->path, "%s", path);
	n->clk = clk;
	n->h = h;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(n);
		return NULL;
	}
	n->size = (size_t)st.st_size;
	n->map = n->size ? mmap(NULL, n->size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	uint16_t hs, rs;
	if (n->map == MAP_FAILED) {
		n->map = NULL;
		snprintf(err, errlen, "%s: empty or unreadable", path);
		goto fail;
	}
	if (pulse_evs_check_header(n->map, (uint32_t)(n->size < 64 ? n->size : 64), &hs, &rs)) {
		snprintf(err, errlen, "%s: not an event stream this program knows (PULSEEVS v%u)", path,
			 PULSE_EVS_VERSION);
		goto fail;
	}
	n->rsz = rs;
	n->first = hs;
	if ((n->size - hs) % rs)
		fprintf(stderr, "pulse-cluster-serve: %s: truncated after its last whole record; the "
				"rest is ignored\n", path);
	/* one pass: the first POLL, the last due time, and the firmware's sizes
	 * (QPs, the most events between two polls) */
	uint32_t qps[1024];
	uint32_t nq = 0;
	uint64_t in_win = 0, max_win = 0;
	n->off = hs;
	for (read_next(n); n->have_next; read_next(n)) {
		if (n->next.kind == PULSE_EVS_POLL) {
			if (!n->have_poll) {
				n->first_poll_host = n->next.host_ns;
				n->first_poll_nic = n->next.ev.ts_ns;
			}
			n->have_poll = 1;
			n->poll_host = n->next.host_ns;
			n->poll_nic = n->next.ev.ts_ns;
			if (in_win > max_win)
				max_win = in_win;
			in_win = 0;
		} else {
			in_win++;
			uint32_t i = 0;
			while (i < nq && qps[i] != n->next.ev.qpn)
				i++;
			if (i == nq && nq < 1024)
				qps[nq++] = n->next.ev.qpn;
		}
		n->last_key = n->next_key;
	}
	if (in_win > max_win)
		max_win = in_win;
	if (!n->have_poll) {
		snprintf(err, errlen, "%s: no POLL record: nothing ties this NIC's clock to its host's", path);
		goto fail;
	}
	uint64_t flows = nq + nq / 4 + 64, blocks = 2 * (max_win / PULSE_FW_RECORDS_PER_BLOCK + 2 * flows) + 1024;
	if (blocks > (1u << 24))
		blocks = 1u << 24;
	n->lim = (struct pulse_fw_limits){.max_flows = (uint32_t)flows, .pool_blocks = (uint32_t)blocks,
					  .max_threads = EVS_THREADS, .platform = PULSE_PLATFORM_X86_SIM,
					  .instance_id = 0xC5E7000000000000ull ^ n->first_poll_host,
					  .spin_relax = NULL};
	n->mem_size = pulse_fw_memory_size(&n->lim);
	n->mem = n->mem_size ? aligned_alloc(64, (n->mem_size + 63) & ~(size_t)63) : NULL;
	if (!n->mem) {
		snprintf(err, errlen, "%s: cannot allocate %zu bytes of firmware memory", path, n->mem_size);
		goto fail;
	}
	return n;
fail:
	evs_nic_free(n);
	return NULL;
}

uint64_t evs_nic_first_poll(const struct evs_nic *n)
{
	return n->first_poll_host;
}

uint64_t evs_nic_last_key(const struct evs_nic *n)
{
	return n->last_key;
}

void evs_nic_counts(const struct evs_nic *n, uint64_t *events, uint64_t *requests)
{
	*events = n->events;
	*requests = n->requests;
}

/* the NIC clock when the host's recorded clock reads hns */
static uint32_t nic_clock(const struct evs_nic *n, uint64_t hns)
{
	return n->poll_nic + (uint32_t)(hns - n->poll_host);
}

int evs_nic_start(struct evs_nic *n, char *err, size_t errlen)
{
	/* the NIC clock at t = 0, from the first POLL */
	uint32_t now = n->first_poll_nic + (uint32_t)(cs_host_at(n->clk, n->h, 0) - n->first_poll_host);
	n->fw = pulse_fw_init(n->mem, n->mem_size, &n->lim, now);
	if (!n->fw) {
		snprintf(err, errlen, "%s: pulse_fw_init failed", n->path);
		return -1;
	}
	n->have_poll = 0;
	n->off = n->first;
	read_next(n);
	return 0;
}

static void apply(struct evs_nic *n)
{
	if (n->next.kind == PULSE_EVS_POLL) {
		n->have_poll = 1;
		n->poll_host = n->next.host_ns;
		n->poll_nic = n->next.ev.ts_ns;
	} else {
		pulse_fw_on_tx(n->fw, n->next.thread % EVS_THREADS, &n->next.ev);
		n->events++;
	}
	read_next(n);
}

static uint64_t evs_feed(void *ctx, uint64_t wall_ns)
{
	struct evs_nic *n = ctx;
	uint64_t now = cs_host_at(n->clk, n->h, cs_true_t(n->clk, wall_ns));
	for (unsigned k = 0; k < EVS_BATCH && n->have_next && n->next_key <= now; k++)
		apply(n);
	if (!n->have_next)
		return UINT64_MAX;
	return n->next_key <= now ? wall_ns : cs_wall_of(n->clk, n->h, n->next_key);
}

static int evs_answer(void *ctx, uint64_t wall_ns, const uint8_t *req, uint32_t req_len, uint8_t *resp,
		      uint32_t resp_cap, uint32_t *resp_len)
{
	struct evs_nic *n = ctx;
	uint64_t now = cs_host_at(n->clk, n->h, cs_true_t(n->clk, wall_ns));
	/* everything due, however much: a window must hold what was sent in it */
	while (n->have_next && n->next_key <= now)
		apply(n);
	uint32_t nic = n->have_poll ? nic_clock(n, now)
				   : n->first_poll_nic + (uint32_t)(now - n->first_poll_host);
	n->requests++;
	pulse_fw_mailbox(n->fw, req, req_len, resp, resp_cap, resp_len, nic);
	return *resp_len ? 0 : -1;
}

const struct sim_nic_src_ops evs_nic_ops = {.feed = evs_feed, .answer = evs_answer};
