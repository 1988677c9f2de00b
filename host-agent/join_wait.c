/* pulse-host-agent: windows wait for the analyzer's JOIN.
 *
 * Live, the remote end of a QP to another host comes with the analyzer's
 * JOIN (its join of every host's mapping), a poll or two after the QP was
 * made. A window carrying traffic on such a QP before then would reach the
 * association with no peer for it: its bytes counted unknown, and the
 * operators they belonged to left without traffic, so that the next
 * operators' bytes are taken for theirs (a job whose first iterations start
 * within a poll of its communicators lost them all).
 *
 * So a window with bytes on a QP of a communicator whose remote end is not
 * known yet waits here, copied, with every window after it in arrival
 * order (the association takes each NIC's windows in time order), until
 * the JOIN has named the remote ends or the wait has run out since the QP
 * was made (the analyzer may not know the other end either: a peer host
 * without an agent): PULSE_AW_JOIN_WAIT_POLLS polls, and JOIN_WAIT_WALL_NS of
 * wall time at least (agent_join_wait_ns), since the JOIN's delay is the
 * analyzer's work, in wall time whatever the host clock's rate. The
 * association's horizon does not move meanwhile, so its operators wait too
 * instead of being closed. Only with --analyzer (a JOIN can come) and a
 * live join (a replay has every host's mapping from the start). */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "assoc.h"
#include "pulse/analyzer_wire.h"

/* windows held at most, all NICs together: a bound on memory whatever the
 * poll rate (the oldest goes to the association first) */
#define JOIN_WAIT_MAX_WINDOWS 64

/* The least wait, in wall time. The analyzer joins once every host's map is
 * in and quiet; on a loaded machine, at 4x a simulated host's clock, the
 * complete JOIN came 1.6 s of wall after the QPs' MAP, past the 5 polls
 * (1.25 s of wall there): the held windows went on without their remote
 * ends and the host's first operators lost their traffic. At 1x with 1 s
 * polls the polls bound it as before. */
#define JOIN_WAIT_WALL_NS 5000000000ull

struct held_window {
	struct held_window *next;
	uint16_t nic;
	int64_t offset_ns;
	unsigned gap;
	struct pulse_window w; /* flows, then their u64 and u32 arrays, follow */
};

static int cmp_wait(const void *x, const void *y)
{
	const struct join_wait_qp *a = x, *b = y;
	if (a->nic != b->nic)
		return a->nic < b->nic ? -1 : 1;
	return a->qpn < b->qpn ? -1 : a->qpn > b->qpn;
}

void join_wait_reset(struct join_wait *jw)
{
	jw->nqps = 0;
	jw->until = 0;
}

uint64_t agent_join_wait_ns(uint64_t poll_ns, double clock_rate)
{
	uint64_t polls = PULSE_AW_JOIN_WAIT_POLLS * (poll_ns ? poll_ns : 1000000000ull);
	double wall = (double)JOIN_WAIT_WALL_NS * (clock_rate > 0 ? clock_rate : 1);
	return wall > (double)polls ? (uint64_t)wall : polls;
}

int join_wait_add(struct join_wait *jw, uint16_t nic, uint32_t qpn, uint64_t made_ns, uint64_t wait_ns)
{
	if (agent_grow((void **)&jw->qps, &jw->capqps, jw->nqps, sizeof *jw->qps))
		return -1;
	uint64_t until = made_ns + wait_ns;
	jw->qps[jw->nqps++] = (struct join_wait_qp){.nic = nic, .qpn = qpn, .until = until};
	if (until > jw->until)
		jw->until = until;
	return 0;
}

void join_wait_sort(struct join_wait *jw)
{
	if (jw->nqps > 1)
		qsort(jw->qps, jw->nqps, sizeof *jw->qps, cmp_wait);
}

/* whether the window has bytes on a QP that still waits for its remote end
 * (now_ns UINT64_MAX: on a QP whose remote end is not known, wait over or
 * not) */
static int window_waits(const struct join_wait *jw, uint16_t nic, const struct pulse_window *w, uint64_t now_ns)
{
	if (!jw->nqps || (now_ns != UINT64_MAX && now_ns >= jw->until))
		return 0;
	for (uint32_t f = 0; f < w->flow_count; f++) {
		if (!w->flows[f].total_bytes)
			continue;
		struct join_wait_qp key = {.nic = nic, .qpn = w->flows[f].qpn};
		const struct join_wait_qp *q = bsearch(&key, jw->qps, jw->nqps, sizeof *jw->qps, cmp_wait);
		if (q && (now_ns == UINT64_MAX || now_ns < q->until))
			return 1;
	}
	return 0;
}

static struct held_window *clone_window(uint16_t nic, const struct pulse_window *w, int64_t offset_ns, unsigned gap)
{
	size_t epochs = 0;
	for (uint32_t i = 0; i < w->flow_count; i++)
		epochs += w->flows[i].count;
	size_t need = sizeof(struct held_window) + w->flow_count * sizeof(struct pulse_qp_series) +
		      epochs * (sizeof(uint64_t) + sizeof(uint32_t));
	struct held_window *h = malloc(need);
	if (!h)
		return NULL;
	h->next = NULL;
	h->nic = nic;
	h->offset_ns = offset_ns;
	h->gap = gap;
	h->w = *w;
	struct pulse_qp_series *fl = (struct pulse_qp_series *)(h + 1);
	uint64_t *b = (uint64_t *)(fl + w->flow_count); /* u64 arrays first: alignment */
	uint32_t *e = (uint32_t *)(b + epochs);
	for (uint32_t i = 0; i < w->flow_count; i++) {
		const struct pulse_qp_series *s = &w->flows[i];
		fl[i] = *s;
		fl[i].cap = s->count;
		fl[i].bytes = b;
		fl[i].epoch = e;
		if (s->count) {
			memcpy(b, s->bytes, s->count * sizeof *b);
			memcpy(e, s->epoch, s->count * sizeof *e);
		}
		b += s->count;
		e += s->count;
	}
	h->w.flows = fl;
	h->w.flow_cap = w->flow_count;
	return h;
}

static void release_front(struct join_wait *jw, struct assoc *as)
{
	struct held_window *h = jw->head;
	jw->head = h->next;
	if (!jw->head)
		jw->tail = NULL;
	jw->nheld--;
	assoc_window(as, h->nic, &h->w, h->offset_ns, h->gap);
	free(h);
}

int join_wait_window(struct join_wait *jw, struct assoc *as, uint16_t nic, const struct pulse_window *w,
		     int64_t offset_ns, unsigned gap, uint64_t now_ns)
{
	if (!jw->head && !window_waits(jw, nic, w, now_ns)) {
		assoc_window(as, nic, w, offset_ns, gap);
		return 0;
	}
	struct held_window *h = clone_window(nic, w, offset_ns, gap);
	if (!h) {
		/* no memory to hold it: the association takes it now, its
		 * unknown QPs' bytes counted as unknown (as without a wait) */
		jw->not_held++;
		join_wait_release(jw, as, now_ns, 1);
		assoc_window(as, nic, w, offset_ns, gap);
		return -1;
	}
	if (jw->tail)
		jw->tail->next = h;
	else
		jw->head = h;
	jw->tail = h;
	jw->nheld++;
	jw->held++;
	while (jw->nheld > JOIN_WAIT_MAX_WINDOWS) {
		jw->released_cap++;
		release_front(jw, as);
	}
	return 1;
}

int join_wait_pending(const struct join_wait *jw, uint64_t now_ns)
{
	return jw->head || (jw->nqps && now_ns < jw->until);
}

uint32_t join_wait_release(struct join_wait *jw, struct assoc *as, uint64_t now_ns, int all)
{
	uint32_t n = 0;
	while (jw->head && (all || !window_waits(jw, jw->head->nic, &jw->head->w, now_ns))) {
		if (window_waits(jw, jw->head->nic, &jw->head->w, UINT64_MAX))
			jw->released_unknown++; /* the wait ran out (or the agent stops) */
		release_front(jw, as);
		n++;
	}
	return n;
}

void join_wait_free(struct join_wait *jw)
{
	while (jw->head) {
		struct held_window *h = jw->head;
		jw->head = h->next;
		free(h);
	}
	free(jw->qps);
	memset(jw, 0, sizeof *jw);
}
