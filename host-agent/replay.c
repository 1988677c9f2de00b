/* pulse-host-agent --replay DIR [--host H]: runs one host (or every host) of
 * a sim/run_cluster output directory (include/pulse/cluster_run.h) through
 * the same code as live operation. Only the sources differ:
 *
 *   NICs    each DIR/hosts/H/<dev>.evs (include/pulse/event_stream.h) feeds
 *           its own in-process firmware core (libpulse_fw.a), exactly as the
 *           NIC's event threads would, up to each POLL record. The agent's
 *           NIC (kind NIC_REPLAY) talks to that core through the ordinary
 *           mailbox client (pulse_nic_client) with an in-process exchange,
 *           and nic_cycle (nic.c) handles the window as it does live:
 *           handshake, POLL and page drain, gap detection, clock sync,
 *           retention, JSON lines, the association.
 *   clock   agent_realtime_ns() reads the POLL record's host_ns while that
 *           poll is replayed (agent_clock_set_virtual), so host times of the
 *           exchange, the clock sync, retention ages and line times are the
 *           recorded ones. The NIC clock of the exchange is the record's ts.
 *   hooks   every DIR/hosts/H/hook-<pid>.rec, merged in time order (each
 *           file's own order kept); after each poll cycle the records with
 *           time <= the poll's host time go through hooks_apply, the same
 *           function that handles drained ring records live.
 *   join    every host's .rec files are read first and joined
 *           (wire/qp_join.c) with the device GIDs of DIR/cluster.json, so
 *           each local QP gets its remote host, GPU and rank, as the
 *           analyzer's join gives it live.
 *
 * The NICs of one host are polled in cycles as the live scheduler does: a
 * cycle takes every NIC whose next POLL lies within half a poll period of
 * the earliest one. Hosts are replayed one after another, each with fresh
 * agent state; --out may contain "{host}" for one file per host.
 *
 * Bad input: a missing or malformed cluster.json, an unknown --host, or no
 * readable event stream for a host stop with a clear message (exit 2 or 1);
 * a stream or record file with a bad header is reported and skipped (exit 1
 * at the end); a truncated file is reported and its whole records used;
 * unknown record kinds are counted drops. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "agent.h"
#include "assoc.h"
#include "replay_links.h"
#include "pulse/cluster_run.h"
#include "pulse/event_stream.h"
#include "pulse/nic_agent.h"
#include "pulse/le.h"
#include "pulse/qp_series_wire.h"

#define REPLAY_THREADS 16u
#define REPLAY_BURST 512u
#define REPLAY_MAX_HOSTS 4096u

/* ---- the run directory ---- */

struct rhost {
	char name[PULSE_JOIN_HOST_LEN];
	int ndevs;
	char dev[AGENT_MAX_NICS][24];  /* from cluster.json */
	struct pulse_hook_record *recs; /* merged, time order */
	uint64_t nrecs;
};

struct run {
	const char *dir;
	uint32_t epoch_ns;
	uint64_t poll_ns;
	struct rhost *hosts;
	uint32_t nhosts;
	int errors;                /* bad files skipped: exit 1 at the end */
	uint64_t rec_truncated, rec_files;
};

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	while (buf) {
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (n < cap)
			break;
		char *nb = realloc(buf, cap * 2 + 1);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		snprintf(err, errlen, "%s: cannot read%s", path, bad ? "" : ": out of memory");
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int json_u64(const cJSON *o, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e18)
		return -1;
	*out = (uint64_t)v->valuedouble;
	return 0;
}

static int load_cluster(struct run *run, struct agent_join *join, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/cluster.json", run->dir);
	size_t len;
	char *text = read_file(path, &len, err, errlen);
	if (!text)
		return -1;
	cJSON *root = cJSON_ParseWithLength(text, len);
	free(text);
	int rc = -1;
	const cJSON *fmt = root ? cJSON_GetObjectItemCaseSensitive(root, "format") : NULL;
	const cJSON *hosts = root ? cJSON_GetObjectItemCaseSensitive(root, "hosts") : NULL;
	uint64_t epoch, poll, ver;
	if (!root) {
		snprintf(err, errlen, "cluster.json: not valid JSON");
		goto out;
	}
	if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, PULSE_CLUSTER_FORMAT) ||
	    json_u64(root, "version", &ver) || ver != PULSE_CLUSTER_VERSION) {
		snprintf(err, errlen, "cluster.json: not a %s file of version %u", PULSE_CLUSTER_FORMAT,
			 PULSE_CLUSTER_VERSION);
		goto out;
	}
	if (json_u64(root, "epoch_ns", &epoch) || epoch < PULSE_EPOCH_NS_MIN || epoch > PULSE_EPOCH_NS_MAX ||
	    json_u64(root, "poll_ns", &poll) || poll < PULSE_WINDOW_NS_MIN || poll > PULSE_WINDOW_NS_MAX) {
		snprintf(err, errlen, "cluster.json: epoch_ns must be %u..%u and poll_ns %u..%u",
			 PULSE_EPOCH_NS_MIN, PULSE_EPOCH_NS_MAX, PULSE_WINDOW_NS_MIN, PULSE_WINDOW_NS_MAX);
		goto out;
	}
	run->epoch_ns = (uint32_t)epoch;
	run->poll_ns = poll;
	int nh = cJSON_IsArray(hosts) ? cJSON_GetArraySize(hosts) : -1;
	if (nh <= 0 || (uint32_t)nh > REPLAY_MAX_HOSTS) {
		snprintf(err, errlen, "cluster.json: \"hosts\" must be an array of 1..%u hosts", REPLAY_MAX_HOSTS);
		goto out;
	}
	run->hosts = calloc((size_t)nh, sizeof *run->hosts);
	if (!run->hosts) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	const cJSON *h;
	cJSON_ArrayForEach(h, hosts)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(h, "name");
		const cJSON *nics = cJSON_GetObjectItemCaseSensitive(h, "nics");
		if (!cJSON_IsString(name) || !*name->valuestring ||
		    strlen(name->valuestring) >= PULSE_JOIN_HOST_LEN || strchr(name->valuestring, '/') ||
		    !strcmp(name->valuestring, ".") || !strcmp(name->valuestring, "..")) {
			snprintf(err, errlen, "cluster.json: host %u: \"name\" must be a file name of 1..%d characters",
				 run->nhosts, PULSE_JOIN_HOST_LEN - 1);
			goto out;
		}
		struct rhost *rh = &run->hosts[run->nhosts++];
		snprintf(rh->name, sizeof rh->name, "%s", name->valuestring);
		for (uint32_t k = 0; k + 1 < run->nhosts; k++)
			if (!strcmp(run->hosts[k].name, rh->name)) {
				snprintf(err, errlen, "cluster.json: host %s listed twice", rh->name);
				goto out;
			}
		const cJSON *nic;
		cJSON_ArrayForEach(nic, nics)
		{
			const cJSON *dev = cJSON_GetObjectItemCaseSensitive(nic, "dev");
			const cJSON *gid = cJSON_GetObjectItemCaseSensitive(nic, "gid");
			if (!cJSON_IsString(dev) || !*dev->valuestring || strlen(dev->valuestring) >= 21 ||
			    strchr(dev->valuestring, '/')) {
				snprintf(err, errlen, "cluster.json: host %s: a NIC without a valid \"dev\"", rh->name);
				goto out;
			}
			if (rh->ndevs == AGENT_MAX_NICS) {
				snprintf(err, errlen, "cluster.json: host %s: more than %d NICs (one agent polls at most %d)", rh->name, AGENT_MAX_NICS, AGENT_MAX_NICS);
				goto out;
			}
			snprintf(rh->dev[rh->ndevs++], sizeof rh->dev[0], "%s", dev->valuestring);
			struct pulse_join_gid g;
			memset(&g, 0, sizeof g);
			snprintf(g.host, sizeof g.host, "%s", rh->name);
			snprintf(g.dev, sizeof g.dev, "%s", dev->valuestring);
			if (cJSON_IsString(gid) && pulse_join_parse_gid(gid->valuestring, g.gid) == 0) {
				if (agent_join_add_gid(join, &g)) {
					snprintf(err, errlen, "out of memory");
					goto out;
				}
			} else if (gid && !cJSON_IsNull(gid)) {
				LOGW("%s: host %s NIC %s: \"gid\" is not an IPv6-form GID; it will be learned "
				     "from the peers' records instead", path, rh->name, dev->valuestring);
			}
		}
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* One hook-<pid>.rec file, whole records only. */
struct recfile {
	struct pulse_hook_record *r;
	uint64_t n, pos;
};

static int load_rec(struct run *run, const char *path, struct recfile *rf)
{
	char err[300];
	size_t len;
	memset(rf, 0, sizeof *rf);
	char *buf = read_file(path, &len, err, sizeof err);
	if (!buf) {
		LOGE("%s; its records are left out", err);
		run->errors++;
		return -1;
	}
	uint16_t hsize;
	uint32_t pid;
	if (pulse_hkr_check_header((const uint8_t *)buf, len > UINT32_MAX ? UINT32_MAX : (uint32_t)len,
				   &hsize, &pid) || hsize > len) {
		LOGE("%s: not a Pulse hook record file this agent reads (magic %s, version %u, record "
		     "size %zu, record version %u expected); left out",
		     path, PULSE_HKR_MAGIC, PULSE_HKR_VERSION, sizeof(struct pulse_hook_record),
		     PULSE_HOOK_RECORD_VERSION);
		free(buf);
		run->errors++;
		return -1;
	}
	size_t body = len - hsize;
	rf->n = body / sizeof(struct pulse_hook_record);
	if (body % sizeof(struct pulse_hook_record)) {
		LOGW("%s: truncated: ends %zu bytes into a record; using the %" PRIu64 " whole records "
		     "before it", path, body % sizeof(struct pulse_hook_record), rf->n);
		run->rec_truncated++;
	}
	rf->r = malloc(sizeof *rf->r * (rf->n ? rf->n : 1));
	if (!rf->r) {
		LOGE("%s: out of memory; left out", path);
		free(buf);
		run->errors++;
		return -1;
	}
	memcpy(rf->r, buf + hsize, sizeof *rf->r * rf->n);
	free(buf);
	run->rec_files++;
	(void)pid;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir matching prefix...suffix. */
static char **list_dir(const char *dir, const char *prefix, const char *suffix, uint32_t *n)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **v = NULL;
	uint32_t cap = 0;
	struct dirent *de;
	size_t pl = strlen(prefix), sl = strlen(suffix);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l <= pl + sl || strncmp(de->d_name, prefix, pl) || strcmp(de->d_name + l - sl, suffix))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(v, cap * sizeof *v);
			if (!nv)
				break;
			v = nv;
		}
		v[*n] = strdup(de->d_name);
		if (v[*n])
			(*n)++;
	}
	closedir(d);
	if (v)
		qsort(v, *n, sizeof *v, name_cmp);
	return v;
}

static void free_list(char **v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Every process's records of one host, merged by time; each file's own
 * order is kept (a k-way merge, not a sort). */
static int load_host_records(struct run *run, struct rhost *h)
{
	char dir[4300];
	snprintf(dir, sizeof dir, "%s/hosts/%s", run->dir, h->name);
	uint32_t nf;
	char **files = list_dir(dir, "hook-", ".rec", &nf);
	struct recfile *rf = calloc(nf ? nf : 1, sizeof *rf);
	if (!rf) {
		free_list(files, nf);
		return -1;
	}
	uint64_t total = 0;
	for (uint32_t i = 0; i < nf; i++) {
		char path[4600];
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (load_rec(run, path, &rf[i]) == 0)
			total += rf[i].n;
	}
	free_list(files, nf);
	h->recs = malloc(sizeof *h->recs * (total ? total : 1));
	if (!h->recs) {
		for (uint32_t i = 0; i < nf; i++)
			free(rf[i].r);
		free(rf);
		return -1;
	}
	h->nrecs = 0;
	for (;;) {
		int best = -1;
		for (uint32_t i = 0; i < nf; i++)
			if (rf[i].pos < rf[i].n &&
			    (best < 0 || rf[i].r[rf[i].pos].time_ns < rf[best].r[rf[best].pos].time_ns))
				best = (int)i;
		if (best < 0)
			break;
		h->recs[h->nrecs++] = rf[best].r[rf[best].pos++];
	}
	for (uint32_t i = 0; i < nf; i++)
		free(rf[i].r);
	free(rf);
	return 0;
}

/* The join input of one host: every incarnation of every QP (a QPN reused
 * after a destroy is a new QP), with its communicator as the mapping ties
 * it, and the host's communicator members. */
static int join_host(struct agent_join *j, const struct rhost *h)
{
	struct qp_map m;
	qp_map_init(&m);
	uint64_t *created = NULL, *destroyed = NULL;
	uint32_t cap = 0;
	int rc = -1;
	struct pulse_join_qp q;
	for (uint64_t k = 0; k < h->nrecs; k++) {
		const struct pulse_hook_record *r = &h->recs[k];
		if (r->version != PULSE_HOOK_RECORD_VERSION)
			continue;
		int is_qp = r->kind == PULSE_HOOK_QP_CREATE || r->kind == PULSE_HOOK_QP_RTR ||
			    r->kind == PULSE_HOOK_QP_DESTROY;
		int32_t idx = -1;
		if (is_qp) {
			char dev[sizeof r->u.qp.dev + 1];
			memcpy(dev, r->u.qp.dev, sizeof r->u.qp.dev);
			dev[sizeof r->u.qp.dev] = '\0';
			for (uint32_t i = 0; i < m.nqps; i++)
				if (m.qps[i].qpn == r->u.qp.qpn && m.qps[i].pid == r->pid &&
				    !strcmp(m.qps[i].dev, dev))
					idx = (int32_t)i;
			/* a QPN reused after a destroy: the old QP is final now */
			if (idx >= 0 && r->kind == PULSE_HOOK_QP_CREATE && r->u.qp.result == 0 &&
			    m.qps[idx].state == 3) {
				agent_join_qp_from_map(&m.qps[idx], h->name, &q);
				q.first_ns = created[idx];
				q.last_ns = destroyed[idx];
				if (agent_join_add_qp(j, &q))
					goto out;
			}
		}
		qp_map_apply(&m, r);
		if (m.capqps > cap) {
			uint64_t *c2 = realloc(created, m.capqps * sizeof *c2);
			if (c2)
				created = c2;
			uint64_t *d2 = realloc(destroyed, m.capqps * sizeof *d2);
			if (d2)
				destroyed = d2;
			if (!c2 || !d2)
				goto out;
			cap = m.capqps;
		}
		if (!is_qp || r->u.qp.result != 0)
			continue;
		if (idx < 0) { /* a new entry is the last one */
			if (!m.nqps || m.qps[m.nqps - 1].qpn != r->u.qp.qpn || m.qps[m.nqps - 1].pid != r->pid)
				continue; /* not kept (table full) */
			idx = (int32_t)m.nqps - 1;
			created[idx] = r->time_ns;
			destroyed[idx] = UINT64_MAX;
		} else if (r->kind == PULSE_HOOK_QP_CREATE) {
			created[idx] = r->time_ns;
			destroyed[idx] = UINT64_MAX;
		} else if (r->kind == PULSE_HOOK_QP_DESTROY && destroyed[idx] == UINT64_MAX) {
			destroyed[idx] = r->time_ns;
		}
	}
	for (uint32_t i = 0; i < m.nqps; i++) {
		agent_join_qp_from_map(&m.qps[i], h->name, &q);
		q.first_ns = created[i];
		q.last_ns = destroyed[i];
		if (agent_join_add_qp(j, &q))
			goto out;
	}
	for (uint32_t i = 0; i < m.ncomms; i++) {
		struct pulse_join_comm c;
		agent_join_comm_from_map(&m.comms[i], h->name, &c);
		if (agent_join_add_comm(j, &c))
			goto out;
	}
	rc = 0;
out:
	free(created);
	free(destroyed);
	qp_map_free(&m);
	return rc;
}

/* ---- one NIC: its event stream into its own firmware core ---- */

struct rnic {
	char path[4400];
	int fd;
	const uint8_t *map;
	size_t size, pos, end;  /* records from pos to end */
	uint16_t rec_size;
	void *mem;
	struct pulse_fw *fw;
	uint32_t nic_now;       /* NIC clock of the exchange being handled */
	uint32_t first_poll_ts; /* the first POLL record */
	uint64_t first_poll_host;
	int have_poll;
	uint32_t poll_ts;
	uint64_t poll_host;
	uint64_t polls, tx_events, bad_kind, unpolled_events;
	uint64_t tx_at_poll;    /* tx_events when the last POLL was reached */
	int truncated;
	struct pulse_tx_event burst[REPLAY_BURST];
	uint32_t nburst, burst_thread;
};

static int replay_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
			   uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms)
{
	(void)timeout_ms; /* a function call into the core: it cannot time out */
	struct rnic *r = ctx;
	pulse_fw_mailbox(r->fw, req, req_len, resp, resp_cap, resp_len, r->nic_now);
	return *resp_len ? 0 : -1;
}

static void burst_flush(struct rnic *r)
{
	if (r->nburst)
		pulse_fw_on_tx_burst(r->fw, r->burst_thread, r->burst, r->nburst);
	r->nburst = 0;
}

/* Feeds TX records up to the next POLL, which becomes pending. */
static void advance(struct rnic *r)
{
	r->have_poll = 0;
	struct pulse_evs_record rec;
	while (r->pos + r->rec_size <= r->end) {
		const uint8_t *p = r->map + r->pos;
		r->pos += r->rec_size;
		if (pulse_evs_decode_record(p, &rec)) {
			r->bad_kind++;
			continue;
		}
		if (rec.kind == PULSE_EVS_POLL) {
			burst_flush(r);
			r->tx_at_poll = r->tx_events;
			r->have_poll = 1;
			r->poll_ts = rec.ev.ts_ns;
			r->poll_host = rec.host_ns;
			return;
		}
		uint32_t th = rec.thread % REPLAY_THREADS;
		if (r->nburst && (th != r->burst_thread || r->nburst == REPLAY_BURST))
			burst_flush(r);
		r->burst_thread = th;
		r->burst[r->nburst++] = rec.ev;
		r->tx_events++;
	}
	burst_flush(r);
}

static void rnic_close(struct rnic *r)
{
	if (r->map)
		munmap((void *)r->map, r->size);
	if (r->fd >= 0)
		close(r->fd);
	r->map = NULL;
	r->mem = NULL;
	r->fd = -1;
}

/* Opens the stream and its core. The core starts at the NIC time the first
 * window opened: one poll period before the first POLL, or at the first
 * event when that is earlier (the window is then over-long, as it was). */
/* The cores' memory, one region per NIC slot, kept from host to host (a
 * core zeroes its 32 MiB QPN table at every init: on memory already mapped
 * that is a memset, on fresh memory 8192 page faults). 2 MiB aligned and
 * on transparent huge pages where the kernel allows. */
static struct {
	void *mem;
	size_t size;
} slots[AGENT_MAX_NICS];

static void *slot_mem(int slot, size_t want)
{
	if (slots[slot].size >= want)
		return slots[slot].mem;
	free(slots[slot].mem);
	slots[slot].mem = NULL;
	slots[slot].size = 0;
	size_t asize = (want + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	void *m;
	if (posix_memalign(&m, 2u << 20, asize))
		return NULL;
	madvise(m, asize, MADV_HUGEPAGE);
	slots[slot].mem = m;
	slots[slot].size = asize;
	return m;
}

static void slots_free(void)
{
	for (int i = 0; i < AGENT_MAX_NICS; i++) {
		free(slots[i].mem);
		slots[i].mem = NULL;
		slots[i].size = 0;
	}
}

static int rnic_open(struct run *run, struct rnic *r, int slot, const char *host, const char *dev)
{
	memset(r, 0, sizeof *r);
	r->fd = -1;
	snprintf(r->path, sizeof r->path, "%s/hosts/%s/%s.evs", run->dir, host, dev);
	r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (r->fd < 0 || fstat(r->fd, &st)) {
		LOGE("%s: cannot open: %s; this NIC is left out", r->path, strerror(errno));
		return -1;
	}
	r->size = (size_t)st.st_size;
	if (r->size) {
		void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
		if (m == MAP_FAILED) {
			LOGE("%s: cannot map: %s; this NIC is left out", r->path, strerror(errno));
			return -1;
		}
		r->map = m;
		madvise(m, r->size, MADV_SEQUENTIAL);
	}
	uint16_t hsize, rsize;
	if (pulse_evs_check_header(r->map, r->size > UINT32_MAX ? UINT32_MAX : (uint32_t)r->size, &hsize,
				   &rsize) || hsize > r->size) {
		LOGE("%s: not a Pulse event stream this agent reads (magic %s, version %u expected); this "
		     "NIC is left out", r->path, PULSE_EVS_MAGIC, PULSE_EVS_VERSION);
		return -1;
	}
	r->rec_size = rsize;
	r->pos = hsize;
	size_t body = r->size - hsize;
	r->end = hsize + body - body % rsize;
	if (body % rsize) {
		r->truncated = 1;
		LOGW("%s: truncated: ends %zu bytes into a record; replaying the whole records before it",
		     r->path, body % rsize);
	}
	/* The first POLL and the first event; and the core's size: the flows
	 * (distinct QPNs) and epoch-pool blocks the stream needs. A window's
	 * events make at most one epoch record each, and a flow needs a new
	 * block every PULSE_FW_RECORDS_PER_BLOCK records; two windows are in
	 * the pool at once (one filling, one uploading). So the core has room
	 * for everything, as a NIC sized for its traffic would. */
	int have_tx = 0, have_poll = 0;
	uint32_t tx0 = 0, poll0 = 0;
	uint64_t in_win = 0, max_win = 0, nflows = 0;
	uint8_t *seen = calloc(PULSE_QPN_COUNT / 8, 1);
	if (!seen) {
		LOGE("%s: out of memory", r->path);
		return -1;
	}
	struct pulse_evs_record rec;
	for (size_t p = r->pos; p + rsize <= r->end; p += rsize) {
		if (pulse_evs_decode_record(r->map + p, &rec))
			continue;
		if (rec.kind == PULSE_EVS_POLL) {
			if (!have_poll) {
				poll0 = rec.ev.ts_ns;
				r->first_poll_ts = rec.ev.ts_ns;
				r->first_poll_host = rec.host_ns;
			}
			have_poll = 1;
			if (in_win > max_win)
				max_win = in_win;
			in_win = 0;
			continue;
		}
		if (!have_tx) {
			have_tx = 1;
			tx0 = rec.ev.ts_ns;
		}
		in_win++;
		uint32_t q = rec.ev.qpn & PULSE_QPN_MASK;
		if (!(seen[q >> 3] & (1u << (q & 7)))) {
			seen[q >> 3] |= (uint8_t)(1u << (q & 7));
			nflows++;
		}
	}
	free(seen);
	if (in_win > max_win)
		max_win = in_win;
	if (!have_poll) {
		LOGW("%s: no POLL record: the agent never polled this NIC, so there is nothing to "
		     "replay", r->path);
		return 1;
	}
	uint32_t t0 = poll0 - (uint32_t)run->poll_ns;
	if (have_tx && (int32_t)(tx0 - t0) < 0)
		t0 = tx0;
	uint64_t flows = nflows + nflows / 4 + 64;
	if (flows > PULSE_FW_MAX_FLOWS)
		flows = PULSE_FW_MAX_FLOWS;
	uint64_t blocks = 2 * (max_win / PULSE_FW_RECORDS_PER_BLOCK + 2 * nflows) + 1024;
	if (blocks > (1u << 24))
		blocks = 1u << 24;
	struct pulse_fw_limits lim = {.max_flows = (uint32_t)flows, .pool_blocks = (uint32_t)blocks,
				      .max_threads = REPLAY_THREADS,
				      .platform = PULSE_PLATFORM_X86_SIM,
				      .instance_id = 0x5E9A000000000000ull ^ (uint64_t)t0,
				      .spin_relax = NULL};
	size_t msize = pulse_fw_memory_size(&lim);
	r->mem = msize ? slot_mem(slot, msize) : NULL;
	r->fw = r->mem ? pulse_fw_init(r->mem, msize, &lim, t0) : NULL;
	if (!r->fw) {
		LOGE("%s: cannot set up the firmware core (%zu bytes): out of memory", r->path, msize);
		return -1;
	}
	r->nic_now = t0;
	return 0;
}

/* ---- one host ---- */

static int open_out(const struct agent *a, const char *host)
{
	const char *o = a->opt.out_path;
	const char *at = o ? strstr(o, "{host}") : NULL;
	if (!at)
		return 0; /* one stream for every host, opened once */
	char path[4400];
	snprintf(path, sizeof path, "%.*s%s%s", (int)(at - o), o, host, at + 6);
	if (jsonl_close()) /* the previous host's file: logged */
		return -1;
	/* a fresh file per host (live --out appends; a replay is one run) */
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
	return jsonl_open(path);
}

struct host_result {
	uint64_t windows, gaps, polls, records, ops, ops_out, bad;
	uint64_t span_ns, wall_ns;
};

static void apply_records(struct agent *a, struct hooks *h, const struct rhost *rh, uint64_t *k,
			  uint64_t until, struct host_result *res)
{
	if (*k >= rh->nrecs || rh->recs[*k].time_ns > until)
		return;
	FILE *f = jsonl_begin();
	uint64_t bad = 0;
	while (*k < rh->nrecs && rh->recs[*k].time_ns <= until) {
		res->ops += (uint64_t)hooks_apply(a, h, f, &rh->recs[*k], &bad);
		res->records++;
		(*k)++;
	}
	if (f)
		jsonl_end();
	if (bad) {
		LOGW("host %s: %" PRIu64 " hook records of an unknown kind or version ignored", rh->name, bad);
		res->bad += bad;
		h->dropped += bad;
	}
	h->records = res->records;
	h->ops = res->ops;
}

/* --series-query: what the live agent would answer the analyzer's
 * SERIES_REQ at the end of the recording (series_query.c), as a file */
static int series_write(struct agent *a)
{
	struct pulse_qps_req q = {.from_ns = a->opt.series_from_ns, .to_ns = a->opt.series_to_ns};
	size_t len;
	uint8_t *p = agent_series_answer(a, &q, PULSE_AW_MAX_PAYLOAD, &len);
	if (!p) {
		LOGE("--series-query: out of memory");
		return -1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", a->opt.series_out);
	FILE *f = fopen(tmp, "wb");
	int bad = !f || fwrite(p, 1, len, f) != len;
	if (f && fclose(f))
		bad = 1;
	if (bad || rename(tmp, a->opt.series_out)) {
		LOGE("--series-out %s: %s", a->opt.series_out, strerror(errno));
		unlink(tmp);
		free(p);
		return -1;
	}
	LOGI("--series-query: %zu bytes of per-QP series (status %s, %u segments) in %s", len,
	     pulse_qps_status_name(p[4]), (unsigned)pulse_get_u32(p + 40), a->opt.series_out);
	free(p);
	return 0;
}

static int replay_host(struct agent *a, struct run *run, struct rhost *rh, struct host_result *res)
{
	memset(res, 0, sizeof *res);
	agent_clock_set_virtual(0);
	uint64_t wall0 = agent_mono_ns();
	static struct rnic nics[AGENT_MAX_NICS];
	int nn = 0, status = 0;
	for (int i = 0; i < rh->ndevs; i++) {
		int rc = rnic_open(run, &nics[nn], nn, rh->name, rh->dev[i]);
		if (rc != 0) {
			if (rc < 0) {
				run->errors++;
				status = 1;
			}
			rnic_close(&nics[nn]);
			continue;
		}
		struct agent_nic *n = &a->nics[nn];
		memset(n, 0, sizeof *n);
		n->lock_fd = -1;
		n->uc.fd = -1;
		n->kind = NIC_REPLAY;
		n->target = nics[nn].path;
		snprintf(n->name, sizeof n->name, "replay:%s/%s", rh->name, rh->dev[i]);
		snprintf(n->dev, sizeof n->dev, "%s", rh->dev[i]);
		pulse_window_init(&n->w);
		if (pulse_nic_client_init(&n->cl, replay_exchange, &nics[nn], PULSE_MB_MAX_MESSAGE,
					  a->opt.timeout_ms)) {
			LOGE("%s: out of memory", n->name);
			rnic_close(&nics[nn]);
			pulse_window_free(&n->w);
			status = 1;
			continue;
		}
		n->client_ok = 1;
		nn++;
	}
	a->nnics = nn;
	if (!nn) {
		LOGE("host %s: no event stream to replay in %s/hosts/%s (see the errors above)", rh->name,
		     run->dir, rh->name);
		return 1;
	}
	struct replay_links links;
	char links_path[4400];
	snprintf(links_path, sizeof links_path, "%s/hosts/%s/links.jsonl", run->dir, rh->name);
	if (replay_links_load(&links, links_path, rh->name))
		status = 1;
	if (links.bad)
		run->errors++;
	static struct hooks hooks;
	hooks_init_records(&hooks);
	if (a->bus) { /* the QP map also to the bus's state stream, as live */
		hooks.map.on_line = agent_bus_map_line;
		hooks.map.on_line_ctx = a;
	}
	a->hooks = &hooks;
	a->map_version_seen = 0;
	if (a->join && a->join->given)
		memset(a->join->given, 0, a->join->ncomms);
	struct assoc_cfg acfg = {.host = rh->name, .epoch_ns = a->opt.epoch_ns,
				 .hang_ns = a->opt.hang_ns};
	a->assoc = assoc_new(&acfg);
	if (!a->assoc)
		LOGE("host %s: the association could not start (out of memory); no \"op\" records",
		     rh->name);
	snprintf(a->host_name, sizeof a->host_name, "%s", rh->name);
	if (retention_init(&a->ret, a->opt.retain_ns, a->opt.retain_mem)) {
		LOGE("out of memory");
		status = 1;
		goto done;
	}

	/* handshake every NIC where its first window opens */
	uint64_t first_host = UINT64_MAX, last_host = 0;
	for (int i = 0; i < nn; i++) {
		struct rnic *r = &nics[i];
		/* host time of the window's opening, through the first poll's offset */
		uint64_t open_host = r->first_poll_host - (uint64_t)(uint32_t)(r->first_poll_ts - r->nic_now);
		agent_clock_set_virtual(open_host ? open_host : 1);
		nic_cycle(a, &a->nics[i]); /* not up yet: HELLO (and CONFIGURE if needed) */
		advance(r);                /* then the events up to the first POLL */
		if (r->have_poll && r->poll_host < first_host)
			first_host = r->poll_host;
	}
	uint64_t k = 0;
	for (;;) {
		uint64_t t = UINT64_MAX;
		for (int i = 0; i < nn; i++)
			if (nics[i].have_poll && nics[i].poll_host < t)
				t = nics[i].poll_host;
		if (t == UINT64_MAX)
			break;
		agent_replay_pace(a, t);
		/* the NICs of this cycle: every POLL within half a period */
		int in_cycle[AGENT_MAX_NICS];
		uint64_t cycle_end = t;
		for (int i = 0; i < nn; i++) {
			in_cycle[i] = nics[i].have_poll && nics[i].poll_host <= t + a->opt.poll_ns / 2;
			if (in_cycle[i] && nics[i].poll_host > cycle_end)
				cycle_end = nics[i].poll_host;
		}
		/* as live (loop.c, op_feed.c): the interception records up to the poll, the
		 * mapping into the association, the NICs, the association's output */
		agent_clock_set_virtual(t ? t : 1);
		replay_links_emit(&links, cycle_end); /* live, the link watcher writes them as they come */
		apply_records(a, &hooks, rh, &k, cycle_end, res);
		qp_map_emit(&hooks.map);
		agent_cycle_begin(a, t);
		for (int i = 0; i < nn; i++) {
			struct rnic *r = &nics[i];
			if (!in_cycle[i])
				continue;
			agent_clock_set_virtual(r->poll_host ? r->poll_host : 1);
			r->nic_now = r->poll_ts;
			nic_cycle(a, &a->nics[i]);
			r->polls++;
			advance(r);
		}
		agent_clock_set_virtual(cycle_end ? cycle_end : 1);
		agent_cycle_end(a, cycle_end);
		pthread_mutex_lock(&a->lock);
		a->cycles++;
		retention_expire(&a->ret, cycle_end);
		pthread_mutex_unlock(&a->lock);
		last_host = cycle_end;
		if (agent_sig_term) {
			LOGW("host %s: stopped on a signal at host time %" PRIu64, rh->name, cycle_end);
			status = 1;
			break;
		}
	}
	replay_links_emit(&links, UINT64_MAX);
	if (k < rh->nrecs) {
		uint64_t before = res->records;
		apply_records(a, &hooks, rh, &k, UINT64_MAX, res);
		LOGI("host %s: %" PRIu64 " hook records after the last poll applied (no window follows "
		     "them)", rh->name, res->records - before);
		qp_map_emit(&hooks.map);
		if (last_host) {
			agent_cycle_begin(a, last_host);
			agent_cycle_end(a, last_host);
		}
	}
	for (int i = 0; i < nn; i++) {
		struct rnic *r = &nics[i];
		/* whatever follows the last POLL was never polled */
		advance(r);
		r->unpolled_events = r->tx_events - r->tx_at_poll;
		if (r->unpolled_events)
			LOGI("%s: %" PRIu64 " events after the last POLL record were never polled (the "
			     "recording ends before the next poll)", a->nics[i].name, r->unpolled_events);
		if (r->bad_kind) {
			LOGW("%s: %" PRIu64 " records of an unknown kind dropped", r->path, r->bad_kind);
		}
		res->windows += a->nics[i].windows;
		res->gaps += a->nics[i].gaps_total;
		res->polls += r->polls;
	}
	res->ops_out = a->op_records;
	res->span_ns = first_host != UINT64_MAX && last_host > first_host
			       ? last_host - first_host + a->opt.poll_ns
			       : 0;
done:
	replay_links_free(&links);
	res->wall_ns = agent_mono_ns() - wall0;
	/* while the NICs and the mapping are still there: they name the QPs */
	if (a->opt.series_out && series_write(a) && !status)
		status = 1;
	for (int i = 0; i < nn; i++) {
		const struct agent_nic *n = &a->nics[i];
		const struct rnic *r = &nics[i];
		LOGI("%s: %" PRIu64 " events, %" PRIu64 " polls, %llu windows (%llu incomplete), %llu "
		     "gaps, %llu upload bytes%s",
		     n->name, r->tx_events, r->polls, (unsigned long long)n->windows,
		     (unsigned long long)n->windows_incomplete, (unsigned long long)n->gaps_total,
		     (unsigned long long)n->upload_bytes, r->truncated ? ", stream truncated" : "");
		nic_close(&a->nics[i]);
		rnic_close(&nics[i]);
	}
	a->nnics = 0;
	hooks_close(a, &hooks); /* the final mapping line, at the last poll's time */
	a->hooks = NULL;
	agent_clock_set_virtual(0);
	if (a->assoc) {
		struct assoc_stats as;
		assoc_get_stats(a->assoc, &as);
		LOGI("host %s: association: %" PRIu64 " calls, %" PRIu64 " windows, %" PRIu64
		     " records (%" PRIu64 " complete, %" PRIu64 " hung, %" PRIu64 " not started, %" PRIu64
		     " gap), %" PRIu64 " unmatched segments, %" PRIu64 " bytes on unknown QPs",
		     rh->name, as.calls, as.windows, as.records, as.complete, as.hung, as.not_started,
		     as.gaps, as.unmatched_segments, as.unknown_qp_bytes);
		assoc_free(a->assoc);
		a->assoc = NULL;
	}
	retention_free(&a->ret);
	memset(&a->ret, 0, sizeof a->ret);
	a->op_records = 0;
	return status;
}

int agent_replay(struct agent *a)
{
	struct run run = {.dir = a->opt.replay_dir};
	static struct agent_join join;
	memset(&join, 0, sizeof join);
	char err[600];
	int status = 0;
	struct stat st;
	if (stat(run.dir, &st) || !S_ISDIR(st.st_mode)) {
		LOGE("--replay %s: not a directory (%s)", run.dir, errno ? strerror(errno) : "a file");
		return 2;
	}
	if (load_cluster(&run, &join, err, sizeof err)) {
		LOGE("--replay %s: %s", run.dir, err);
		status = 2;
		goto out;
	}
	if (a->opt.epoch_set && a->opt.epoch_ns != run.epoch_ns)
		LOGW("--epoch %u ns differs from the run's %u ns: the NICs are configured with --epoch",
		     a->opt.epoch_ns, run.epoch_ns);
	else
		a->opt.epoch_ns = run.epoch_ns;
	if (a->opt.poll_set && a->opt.poll_ns != run.poll_ns)
		LOGW("--poll differs from the run's poll period (%" PRIu64 " ns): windows will be over-long "
		     "or cut short, as they would be live", run.poll_ns);
	else
		a->opt.poll_ns = run.poll_ns;
	struct rhost *only = NULL;
	if (a->opt.replay_host) {
		for (uint32_t i = 0; i < run.nhosts; i++)
			if (!strcmp(run.hosts[i].name, a->opt.replay_host))
				only = &run.hosts[i];
		if (!only) {
			char names[400] = "";
			size_t o = 0;
			for (uint32_t i = 0; i < run.nhosts && o < sizeof names - 70; i++)
				o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
						      run.hosts[i].name);
			LOGE("--host %s: no such host in %s/cluster.json (hosts: %s%s)", a->opt.replay_host,
			     run.dir, names, run.nhosts > 0 && o >= sizeof names - 70 ? ", ..." : "");
			status = 2;
			goto out;
		}
	}
	/* every host's records first: the join needs all of them */
	uint64_t nrec = 0;
	for (uint32_t i = 0; i < run.nhosts; i++) {
		if (load_host_records(&run, &run.hosts[i]) || join_host(&join, &run.hosts[i])) {
			LOGE("out of memory reading the hook records of host %s", run.hosts[i].name);
			status = 1;
			goto out;
		}
		nrec += run.hosts[i].nrecs;
	}
	/* --speed: every host's process paces on the same origin, the run's
	 * first interception record */
	a->pace_t0 = UINT64_MAX;
	for (uint32_t i = 0; i < run.nhosts; i++)
		if (run.hosts[i].nrecs && run.hosts[i].recs[0].time_ns < a->pace_t0)
			a->pace_t0 = run.hosts[i].recs[0].time_ns;
	join.fixed = 1;
	if (agent_join_run(&join)) {
		LOGE("QP join: out of memory");
		status = 1;
		goto out;
	}
	LOGI("replay %s: %u hosts, epoch %u ns, poll %.3f s; %" PRIu64 " hook records in %" PRIu64
	     " files (%" PRIu64 " truncated); QP join: %u QPs on %u devices (%u GIDs given, %u learned), "
	     "%u paired, %u without a partner, %u ambiguous, %u never connected",
	     run.dir, run.nhosts, a->opt.epoch_ns, (double)a->opt.poll_ns / 1e9, nrec, run.rec_files,
	     run.rec_truncated, join.st.qps, join.st.devices, join.st.gids_given, join.st.gids_learned,
	     join.st.paired, join.st.no_partner, join.st.ambiguous, join.st.not_connected);
	a->join = &join;
	uint64_t span = 0, wall = 0, windows = 0, ops = 0;
	for (uint32_t i = 0; i < run.nhosts; i++) {
		struct rhost *rh = &run.hosts[i];
		if (only && rh != only)
			continue;
		if (open_out(a, rh->name)) { /* logged by jsonl_close or jsonl_open */
			status = 1;
			break;
		}
		struct host_result res;
		int rc = replay_host(a, &run, rh, &res);
		if (rc)
			status = status ? status : rc;
		double ratio = res.wall_ns ? (double)res.span_ns / (double)res.wall_ns : 0;
		LOGI("host %s: replayed %.3f s of host time in %.3f s (%.1fx real time): %" PRIu64
		     " polls, %" PRIu64 " windows, %" PRIu64 " gaps, %" PRIu64 " hook records (%" PRIu64
		     " operators), %" PRIu64 " op records",
		     rh->name, (double)res.span_ns / 1e9, (double)res.wall_ns / 1e9, ratio, res.polls,
		     res.windows, res.gaps, res.records, res.ops, res.ops_out);
		span += res.span_ns;
		wall += res.wall_ns;
		windows += res.windows;
		ops += res.ops_out;
		if (agent_sig_term)
			break;
	}
	LOGI("replay done: %.3f s of host time (summed over hosts) in %.3f s: %.1fx real time; %" PRIu64
	     " windows, %" PRIu64 " op records%s",
	     (double)span / 1e9, (double)wall / 1e9, wall ? (double)span / (double)wall : 0.0, windows,
	     ops, run.errors ? "; some input files were bad (see above)" : "");
	if (run.errors && !status)
		status = 1;
out:
	slots_free();
	a->join = NULL;
	agent_join_free(&join);
	for (uint32_t i = 0; i < run.nhosts; i++)
		free(run.hosts[i].recs);
	free(run.hosts);
	return status;
}
