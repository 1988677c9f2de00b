/* pulse-cluster-serve RUNDIR --at DIR: a sim/run_cluster run, served live
 * (sim/cluster_serve.h). Options, the run directory, the clocks, the loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cluster_serve.h"
#include "pulse/clock_ns.h"
#include "pulse/hook_ring.h"
#include "pulse/host_event.h"
#include "util.h"

#define CS_MAX_HOSTS 256
#define CS_MAX_NICS 1024
#define CS_MAX_RANKS 1024

static const char usage[] =
"usage: pulse-cluster-serve RUNDIR --at DIR [options]\n"
"\n"
"Serves a sim/run_cluster run directory live, in (scaled) real time, as its hosts\n"
"would present it to pulse-host-agent: each NIC's firmware core behind the mailbox\n"
"protocol on its own Unix socket, fed from its .evs stream; each training process a\n"
"live child process writing its interception records into a real ring\n"
"(/dev/shm/pulse-hook.<pid>) with libpulse-hook.so's ring writer, at their times.\n"
"Host clocks are moved to now, keeping each host's offset and drift. This is the\n"
"simulator: no NIC, no GPU, no training process is real.\n"
"\n"
"  --at DIR           where the hosts are served (created): DIR/<host>/<dev>.sock,\n"
"                     DIR/<host>/hooks/ (the host's rings, for the agent's\n"
"                     --hook-dir), DIR/<host>/clock (the host's clock, for the\n"
"                     agent's --sim-clock), DIR/<host>/links.jsonl (the host's\n"
"                     recorded link events on that clock, for the agent's\n"
"                     --sim-links), DIR/<host>/agent.args (the agent's options\n"
"                     for that host), DIR/run.json, then DIR/ready\n"
"  --speed X          simulated seconds per wall second, 0.01..100 (default 1)\n"
"  --lead DUR         wall time between ready and the run's t = 0, for the agents\n"
"                     to start (default 2s)\n"
"  --tail DUR         wall time served after the run's last record (default 3s)\n"
"  --stay             serve until SIGINT/SIGTERM instead of stopping after --tail\n"
"  --ring-records N   slots of each ring, a power of two (default 16384, the hook's)\n"
"  -h, --help\n"
"\n"
"Exit status: 0 done; 1 runtime error; 2 usage; 3 unusable run directory.\n";

/* ---- clocks ---- */

double cs_true_t(const struct cs_clock *c, uint64_t wall_ns)
{
	return wall_ns <= c->w0 ? 0.0 : (double)(wall_ns - c->w0) * c->speed;
}

uint64_t cs_host_at(const struct cs_clock *c, const struct cs_host *h, double t)
{
	return c->base + (uint64_t)llround(h->off_ns + t * (1 + h->drift_ppm * 1e-6));
}

uint64_t cs_wall_of(const struct cs_clock *c, const struct cs_host *h, uint64_t hns)
{
	double t = ((double)(int64_t)(hns - c->base) - h->off_ns) / (1 + h->drift_ppm * 1e-6);
	if (t <= 0)
		return c->w0;
	return c->w0 + (uint64_t)(t / c->speed);
}

/* ---- the run directory ---- */

static cJSON *read_json(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 65536 > cap) {
			cap = cap ? 2 * cap : 1 << 20;
			if (cap > (64u << 20)) {
				snprintf(err, errlen, "%s: larger than 64 MiB", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = xrealloc(buf, cap);
		}
		size_t got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
		if (!got)
			break;
	}
	fclose(f);
	buf[len] = 0;
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	if (!j)
		snprintf(err, errlen, "%s: not valid JSON", path);
	return j;
}

struct cs_nic {
	int host;
	char dev[32];
	char sock[PATH_MAX];
	struct evs_nic *src;
};

struct cs {
	const char *run, *at;
	struct cs_clock clk;
	struct cs_host hosts[CS_MAX_HOSTS];
	int nhosts;
	struct cs_nic nics[CS_MAX_NICS];
	int nnics;
	struct cs_rank ranks[CS_MAX_RANKS];
	int nranks;
	uint64_t end_wall;
	int stay;
	int reported_end;
};

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int name_ok(const char *s, size_t max)
{
	return s && *s && strlen(s) < max && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int load_run(struct cs *c, char *err, size_t errlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/cluster.json", c->run);
	cJSON *j = read_json(path, err, errlen);
	if (!j)
		return -1;
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(j, "hosts");
	int rc = -1;
	if (!cJSON_IsArray(hosts) || cJSON_GetArraySize(hosts) < 1 || cJSON_GetArraySize(hosts) > CS_MAX_HOSTS) {
		snprintf(err, errlen, "%s: \"hosts\" must be an array of 1..%d hosts", path, CS_MAX_HOSTS);
		goto out;
	}
	const cJSON *h;
	cJSON_ArrayForEach(h, hosts) {
		const char *name = str_of(h, "name");
		if (!name_ok(name, sizeof c->hosts[0].name)) {
			snprintf(err, errlen, "%s: a host without a usable \"name\"", path);
			goto out;
		}
		int hi = c->nhosts++;
		snprintf(c->hosts[hi].name, sizeof c->hosts[hi].name, "%s", name);
		const cJSON *x;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(h, "nics")) {
			const char *dev = str_of(x, "dev");
			if (!name_ok(dev, sizeof c->nics[0].dev) || c->nnics == CS_MAX_NICS) {
				snprintf(err, errlen, "%s: host %s: a NIC without a usable \"dev\", or more than "
						 "%d NICs", path, name, CS_MAX_NICS);
				goto out;
			}
			struct cs_nic *n = &c->nics[c->nnics++];
			n->host = hi;
			snprintf(n->dev, sizeof n->dev, "%s", dev);
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(h, "processes")) {
			const cJSON *pid = cJSON_GetObjectItemCaseSensitive(x, "pid");
			if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || pid->valuedouble > INT_MAX ||
			    c->nranks == CS_MAX_RANKS) {
				snprintf(err, errlen, "%s: host %s: a process without a usable \"pid\", or more "
						 "than %d processes", path, name, CS_MAX_RANKS);
				goto out;
			}
			struct cs_rank *r = &c->ranks[c->nranks++];
			r->host = hi;
			snprintf(r->rec_path, sizeof r->rec_path, "%s/hosts/%s/hook-%d.rec", c->run, name,
				 (int)pid->valuedouble);
		}
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* The hosts' clock offsets and drifts are the simulator's own truth (the
 * served world needs them to run each host's clock); without truth.json
 * every host runs the true clock. */
static void load_clocks(struct cs *c)
{
	char path[PATH_MAX], err[300];
	snprintf(path, sizeof path, "%s/truth.json", c->run);
	cJSON *j = read_json(path, err, sizeof err);
	if (!j) {
		fprintf(stderr, "pulse-cluster-serve: %s; every host's clock runs without offset or drift\n",
			err);
		return;
	}
	const cJSON *h;
	cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(j, "hosts")) {
		const char *name = str_of(h, "name");
		const cJSON *off = cJSON_GetObjectItemCaseSensitive(h, "clock_offset_ns");
		const cJSON *drift = cJSON_GetObjectItemCaseSensitive(h, "clock_drift_ppm");
		for (int i = 0; name && i < c->nhosts; i++)
			if (!strcmp(c->hosts[i].name, name) && cJSON_IsNumber(off) && cJSON_IsNumber(drift) &&
			    fabs(off->valuedouble) < 1e12 && fabs(drift->valuedouble) < 1e4) {
				c->hosts[i].off_ns = off->valuedouble;
				c->hosts[i].drift_ppm = drift->valuedouble;
			}
	}
	cJSON_Delete(j);
}

static int write_text(const char *path, const char *text, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int mkdirs(const char *p)
{
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

/* DIR/<host>/links.jsonl: the run's link events of the host (what its
 * rtnetlink reported: RUN/hosts/<host>/links.jsonl, the simulator writes
 * one when a NIC goes down) on the live host clock, for the agent's
 * --sim-links: a simulated NIC has no netdev to watch. Always written
 * (empty without events); a line that is not a link event is an error. */
struct links_out {
	FILE *fo;
	const char *in, *out;
	int64_t shift;
	char *err;
	size_t errlen;
	int rc;
};

static int links_bad(void *ctx, unsigned lineno, const char *why)
{
	struct links_out *x = ctx;
	snprintf(x->err, x->errlen, "%s:%u: not a link event (%s)", x->in, lineno, why);
	x->rc = -1;
	return 1;
}

static int links_shifted(void *ctx, const struct pulse_link_event *ev, unsigned lineno)
{
	struct links_out *x = ctx;
	(void)lineno;
	struct pulse_link_event e = *ev;
	e.t_ns = (uint64_t)((int64_t)e.t_ns + x->shift);
	char *j = pulse_link_event_to_json(&e);
	if (!j || fprintf(x->fo, "%s\n", j) < 0) {
		snprintf(x->err, x->errlen, "%s: %s", x->out, j ? strerror(errno) : "out of memory");
		x->rc = -1;
	}
	free(j);
	return x->rc;
}

static int write_links(struct cs *c, int hi, const char *dir, char *err, size_t errlen)
{
	const struct cs_host *h = &c->hosts[hi];
	char in[PATH_MAX + 64], out[PATH_MAX + 64];
	snprintf(in, sizeof in, "%s/hosts/%s/links.jsonl", c->run, h->name);
	snprintf(out, sizeof out, "%s/links.jsonl", dir);
	FILE *fi = fopen(in, "r");
	if (!fi && errno != ENOENT) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		return -1;
	}
	FILE *fo = fopen(out, "w");
	if (!fo) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		if (fi)
			fclose(fi);
		return -1;
	}
	struct links_out x = { fo, in, out, c->clk.shift, err, errlen, 0 };
	if (fi && pulse_link_events_read(fi, links_shifted, links_bad, &x) && !x.rc) {
		snprintf(err, errlen, "%s: %s", in, strerror(errno));
		x.rc = -1;
	}
	if (fi)
		fclose(fi);
	if (fclose(fo) && !x.rc) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		x.rc = -1;
	}
	return x.rc;
}

/* DIR/<host>/{clock,agent.args,links.jsonl,hooks/}: what the host's agent is given */
static int write_host(struct cs *c, int hi, char *err, size_t errlen)
{
	const struct cs_host *h = &c->hosts[hi];
	char dir[PATH_MAX], p[PATH_MAX + 64], text[8192];
	snprintf(dir, sizeof dir, "%s/%s", c->at, h->name);
	snprintf(p, sizeof p, "%s/hooks", dir);
	if (mkdirs(dir) || mkdirs(p)) {
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		return -1;
	}
	/* the host's clock at t = 0 and its rate in wall time */
	/* ... and the phase of the recorded agent's polls (its first POLL on the
	 * host's first NIC), so that the live agent cuts the same windows */
	uint64_t phase = 0;
	for (int i = 0; i < c->nnics && !phase; i++)
		if (c->nics[i].host == hi)
			phase = (uint64_t)((int64_t)evs_nic_first_poll(c->nics[i].src) + c->clk.shift);
	snprintf(text, sizeof text, "pulse-sim-clock 1 %" PRIu64 " %" PRIu64 " %.12f %" PRIu64 "\n",
		 (uint64_t)((int64_t)c->clk.real_w0 + llround(h->off_ns)), c->clk.w0,
		 c->clk.speed * (1 + h->drift_ppm * 1e-6), phase);
	snprintf(p, sizeof p, "%s/clock", dir);
	if (write_text(p, text, err, errlen) || write_links(c, hi, dir, err, errlen))
		return -1;
	size_t o = (size_t)snprintf(text, sizeof text,
				    "--host-name %s --sim-clock %s/clock --sim-links %s/links.jsonl --hook-dir %s/hooks",
				    h->name, dir, dir, dir);
	for (int i = 0; i < c->nnics && o < sizeof text; i++)
		if (c->nics[i].host == hi)
			o += (size_t)snprintf(text + o, sizeof text - o, " --sim %s=%s", c->nics[i].dev,
					      c->nics[i].sock);
	if (o >= sizeof text - 2) {
		snprintf(err, errlen, "host %s: too many NICs for agent.args", h->name);
		return -1;
	}
	text[o++] = '\n';
	text[o] = 0;
	snprintf(p, sizeof p, "%s/agent.args", dir);
	return write_text(p, text, err, errlen);
}

static int done(void *ctx, uint64_t wall)
{
	struct cs *c = ctx;
	int k = cs_ranks_reap(c->ranks, c->nranks);
	for (int i = 0; k && i < c->nranks; i++)
		if (c->ranks[i].ended == 1) {
			c->ranks[i].ended = 2;
			fprintf(stderr, "pulse-cluster-serve: the process %d (rank file pid %u, %s) ended "
					"mid-run (status 0x%x); its ring is left to the agent\n",
				(int)c->ranks[i].pid, c->ranks[i].rec_pid, c->hosts[c->ranks[i].host].name,
				(unsigned)c->ranks[i].status);
		}
	if (!c->reported_end && wall >= c->end_wall) {
		c->reported_end = 1;
		fprintf(stderr, "pulse-cluster-serve: the run's last record has been served%s\n",
			c->stay ? "; serving on (--stay)" : "");
	}
	return !c->stay && wall >= c->end_wall;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"at", required_argument, 0, 'a'},   {"speed", required_argument, 0, 's'},
		{"lead", required_argument, 0, 'l'}, {"tail", required_argument, 0, 't'},
		{"stay", no_argument, 0, 'S'},       {"ring-records", required_argument, 0, 'r'},
		{"help", no_argument, 0, 'h'},       {0, 0, 0, 0},
	};
	static struct cs c;
	c.clk.speed = 1;
	uint64_t lead = 2000000000ull, tail = 3000000000ull, v;
	uint32_t ring_records = PULSE_HOOK_RING_DEFAULT_RECORDS;
	int o;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'a': c.at = optarg; break;
		case 's':
			c.clk.speed = strtod(optarg, &end);
			if (*end || end == optarg || !(c.clk.speed >= 0.01 && c.clk.speed <= 100)) {
				fprintf(stderr, "pulse-cluster-serve: --speed %s: expected 0.01..100\n", optarg);
				return 2;
			}
			break;
		case 'l':
		case 't':
			if (sim_parse_duration(optarg, 1000000000ull, &v) || v > 3600000000000ull) {
				fprintf(stderr, "pulse-cluster-serve: --%s %s: expected a duration up to 1h "
						"(e.g. 2s)\n", o == 'l' ? "lead" : "tail", optarg);
				return 2;
			}
			*(o == 'l' ? &lead : &tail) = v;
			break;
		case 'S': c.stay = 1; break;
		case 'r':
			if (sim_parse_u64(optarg, &v) || v < 2 || v > PULSE_HOOK_RING_MAX_RECORDS || (v & (v - 1))) {
				fprintf(stderr, "pulse-cluster-serve: --ring-records %s: expected a power of two, "
						"2..%u\n", optarg, PULSE_HOOK_RING_MAX_RECORDS);
				return 2;
			}
			ring_records = (uint32_t)v;
			break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind + 1 != argc || !c.at) {
		fprintf(stderr, "pulse-cluster-serve: give one RUNDIR and --at DIR\n\n%s", usage);
		return 2;
	}
	c.run = argv[optind];
	char err[4400];
	if (load_run(&c, err, sizeof err)) {
		fprintf(stderr, "pulse-cluster-serve: %s\n", err);
		return 3;
	}
	load_clocks(&c);
	if (mkdirs(c.at)) {
		fprintf(stderr, "pulse-cluster-serve: --at %s: %s\n", c.at, strerror(errno));
		return 1;
	}
	char ready[PATH_MAX];
	snprintf(ready, sizeof ready, "%s/ready", c.at);
	unlink(ready);
	for (int i = 0; i < c.nranks; i++)
		if (cs_rank_scan(&c.ranks[i], err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			return 3;
		}
	volatile sig_atomic_t *stop = sim_serve_signals();
	/* the training processes first, while this process is small */
	int rc = 0;
	for (int i = 0; i < c.nranks && !rc; i++) {
		struct cs_rank *r = &c.ranks[i];
		const struct cs_host *h = &c.hosts[r->host];
		char d[PATH_MAX - 64], link[PATH_MAX], target[64];
		snprintf(d, sizeof d, "%s/%s", c.at, h->name);
		snprintf(link, sizeof link, "%s/hooks", d);
		if (mkdirs(d) || mkdirs(link)) {
			fprintf(stderr, "pulse-cluster-serve: %s: %s\n", link, strerror(errno));
			rc = 1;
			break;
		}
		if (cs_rank_start(r, h, ring_records, err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 1;
			break;
		}
		snprintf(link, sizeof link, "%s/hooks/pulse-hook.%d", d, (int)r->pid);
		snprintf(target, sizeof target, "/dev/shm/pulse-hook.%d", (int)r->pid);
		if (symlink(target, link) && errno != EEXIST) {
			fprintf(stderr, "pulse-cluster-serve: %s: %s\n", link, strerror(errno));
			rc = 1;
		}
	}
	/* the NICs' streams: their first POLLs give the run's clock base */
	uint64_t base = UINT64_MAX;
	for (int i = 0; i < c.nnics && !rc; i++) {
		struct cs_nic *n = &c.nics[i];
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/hosts/%s/%s.evs", c.run, c.hosts[n->host].name, n->dev);
		n->src = evs_nic_open(p, &c.clk, &c.hosts[n->host], err, sizeof err);
		if (!n->src) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 3;
			break;
		}
		/* the first POLL is within 100 us of t = 0 */
		uint64_t b = evs_nic_first_poll(n->src) - (uint64_t)llround(c.hosts[n->host].off_ns);
		if (b < base)
			base = b;
	}
	if (!rc && !c.nnics) {
		fprintf(stderr, "pulse-cluster-serve: %s: no NIC to serve\n", c.run);
		rc = 3;
	}
	c.clk.base = base - 100000; /* at or before every host's t = 0 */
	static struct sim_served_nic served[CS_MAX_NICS];
	for (int i = 0; i < c.nnics && !rc; i++) {
		struct cs_nic *n = &c.nics[i];
		char d[PATH_MAX - 64];
		snprintf(d, sizeof d, "%s/%s", c.at, c.hosts[n->host].name);
		snprintf(n->sock, sizeof n->sock, "%s/%s.sock", d, n->dev);
		err[0] = 0;
		if (mkdirs(d) || sim_served_nic_open(&served[i], n->sock, &evs_nic_ops, n->src, err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s: %s\n", n->sock, err[0] ? err : strerror(errno));
			rc = 1;
		}
	}
	for (int i = 0; i < c.nnics && !rc; i++)
		if (evs_nic_start(c.nics[i].src, err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 1;
		}
	/* t = 0 is fixed once everything is set up, so that every host's clock
	 * file can be written before its agent starts */
	uint64_t mono = pulse_mono_ns(), real = pulse_real_ns();
	c.clk.w0 = mono + lead;
	c.clk.real_w0 = real + lead;
	c.clk.shift = (int64_t)(c.clk.real_w0 - c.clk.base);
	for (int i = 0; i < c.nhosts && !rc; i++)
		if (write_host(&c, i, err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 1;
		}
	uint64_t last = 0;
	for (int i = 0; i < c.nranks && !rc; i++) {
		struct cs_rank *r = &c.ranks[i];
		if (cs_rank_go(r, &c.clk)) {
			fprintf(stderr, "pulse-cluster-serve: the process for %s is gone\n", r->rec_path);
			rc = 1;
		}
		uint64_t w = cs_wall_of(&c.clk, &c.hosts[r->host], r->last_ns);
		if (w > last)
			last = w;
	}
	for (int i = 0; i < c.nnics && !rc; i++) {
		uint64_t w = cs_wall_of(&c.clk, &c.hosts[c.nics[i].host], evs_nic_last_key(c.nics[i].src));
		if (w > last)
			last = w;
	}
	c.end_wall = last + tail;
	if (!rc) {
		char text[1024], p[PATH_MAX + 16];
		snprintf(text, sizeof text,
			 "{\"format\":\"pulse-cluster-serve\",\"version\":1,\"run\":\"%s\",\"speed\":%g,"
			 "\"t0_realtime_ns\":%" PRIu64 ",\"shift_ns\":%" PRId64 ",\"hosts\":%d,\"nics\":%d,"
			 "\"processes\":%d,\"run_wall_s\":%.3f}\n",
			 c.run, c.clk.speed, c.clk.real_w0, c.clk.shift, c.nhosts, c.nnics, c.nranks,
			 (double)(last - c.clk.w0) / 1e9);
		snprintf(p, sizeof p, "%s/run.json", c.at);
		if (write_text(p, text, err, sizeof err) || write_text(ready, "ready\n", err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 1;
		}
	}
	if (!rc) {
		fprintf(stderr, "pulse-cluster-serve: simulator: %d hosts, %d NICs, %d training processes of %s "
				"served under %s at %gx real time; t = 0 in %.1f s, the run lasts %.1f s of "
				"wall time\n",
			c.nhosts, c.nnics, c.nranks, c.run, c.at, c.clk.speed, (double)lead / 1e9,
			(double)(last - c.clk.w0) / 1e9);
		if (sim_serve_nics(served, (unsigned)c.nnics, stop, 0, done, &c, err, sizeof err)) {
			fprintf(stderr, "pulse-cluster-serve: %s\n", err);
			rc = 1;
		}
	}
	cs_ranks_stop(c.ranks, c.nranks);
	uint64_t events = 0, requests = 0;
	for (int i = 0; i < c.nnics; i++) {
		uint64_t e, q;
		if (c.nics[i].src) {
			evs_nic_counts(c.nics[i].src, &e, &q);
			events += e;
			requests += q;
		}
		sim_served_nic_close(&served[i]);
		evs_nic_free(c.nics[i].src);
	}
	unlink(ready);
	fprintf(stderr, "pulse-cluster-serve: stopping: %" PRIu64 " TX events fed, %" PRIu64
			" mailbox requests answered\n", events, requests);
	return rc;
}
