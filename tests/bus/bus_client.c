#define _GNU_SOURCE
/* Test client of the bus library (bus/, include/pulse/bus.h) for
 * tests/bus/bus_nats.sh, against a real nats-server -js:
 *
 *   bus_client pub URL JOB HOST POLLS PER_POLL [PAUSE_AT PAUSE_S]
 *       POLLS polls of PER_POLL records (8 ranks of one communicator) and
 *       the host's MAP; with PAUSE_AT, sleeps PAUSE_S seconds after that
 *       poll (the script stops the server meanwhile), then goes on and
 *       waits up to 20 s for its queue to drain. Prints its counters.
 *   bus_client resend URL JOB HOST SEQ   poll SEQ again (its ids: duplicates)
 *   bus_client garbage URL JOB HOST      malformed messages on the records subject
 *   bus_client consume URL JOB RECORDS SECS   consumes until RECORDS records
 *       arrived, and the MAP of each host they came from, or SECS passed;
 *       prints what it got, per host, in order checks
 *   bus_client diag URL JOB KEY [DAYS_AGO [ID]]  a diagnosis twice under its key
 *                                   (kept once), and once more under ID
 *   bus_client diagbad URL JOB ID        a diagnosis without key, job or time
 *   bus_client job URL JOB HOST T0_NS FROM TO   a small known job for the sink's
 *       evidence (tests/sink/sink_pg.sh): iterations FROM..TO-1, one poll
 *       each, 1 s apart from T0_NS, of communicator 0xc0 (4 ranks: hostA
 *       has 0 and 1, hostB 2 and 3; rank r takes 100 + 10 r ms, but rank 2
 *       of iteration 5 takes 400 ms) and 0xd0 (2 ranks, one per host, 50 ms)
 *   bus_client diagat URL JOB KEY COMM ONSET_NS REPORT_NS   a diagnosis of
 *       communicator COMM at those times, under its key
 *   bus_client diagwait URL JOB KEY   prints "open", sleeps 2 s (the
 *       script stops the server), then a diagnosis under KEY: refused, it
 *       waits in the queue ("first try: queued") and is published by
 *       pulse_bus_flush, tried every 0.2 s for up to 20 s
 *   bus_client dropconsumers URL JOB [state]   deletes every consumer of the
 *       job's record and MAP streams, or of the MAP stream only (as a server
 *       that dies takes the ephemeral consumers it hosted with it); prints
 *       how many
 * PULSE_BUS in the environment sets the streams' limits (bus.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "pulse/bus.h"
#include "pulse/bus_msg.h"

static struct pulse_op_record r;

static void record(const char *host, uint64_t poll, uint32_t i, uint32_t per)
{
	memset(&r, 0, sizeof r);
	snprintf(r.host, sizeof r.host, "%s", host);
	r.comm_id = 0xaa00 + (unsigned char)host[strlen(host) - 1]; /* a communicator per host */
	r.nranks = 8;
	r.rank = (int32_t)(i % 8);
	r.gpu = r.rank;
	r.pid = 100 + (uint32_t)r.rank;
	r.seq = (poll * per + i) / 8;
	r.op = 1;
	r.status = 1;
	r.call_ns = 1700000000000000000ull + r.seq * 1000000ull;
	r.start_ns = r.call_ns + 1000;
	r.end_ns = r.call_ns + 500000;
	r.npeers = 1;
	r.peers[0].rank = (r.rank + 1) % 8;
	r.peers[0].gpu = r.peers[0].rank;
	snprintf(r.peers[0].host, sizeof r.peers[0].host, "%s", host);
}

static void lg(void *ctx, const char *level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "bus_client %s: %s\n", level, msg);
}

static void print_stats(struct pulse_bus *b)
{
	struct pulse_bus_stats s;
	pulse_bus_get_stats(b, &s);
	printf("published=%llu duplicate=%llu records_published=%llu failures=%llu queued=%u "
	       "queue_dropped=%llu msgs_in=%llu msgs_bad=%llu records_in=%llu records_bad=%llu maps_in=%llu "
	       "diags=%llu bytes_raw=%llu bytes_sent=%llu\n",
	       (unsigned long long)s.msgs_published, (unsigned long long)s.msgs_duplicate,
	       (unsigned long long)s.records_published, (unsigned long long)s.publish_failures, s.queued,
	       (unsigned long long)s.queue_dropped, (unsigned long long)s.msgs_in,
	       (unsigned long long)s.msgs_bad, (unsigned long long)s.records_in,
	       (unsigned long long)s.records_bad, (unsigned long long)s.maps_in,
	       (unsigned long long)s.diags_published, (unsigned long long)s.bytes_raw,
	       (unsigned long long)s.bytes_sent);
}

struct seen {
	uint64_t records, maps, out_of_order, last_seq[16];
	char hosts[16][64];
	int nhosts, has_map[16], has_rec[16];
	/* the records read before each poll_end line, comma-separated: where
	 * the stream puts the lines that close a poll */
	char poll_end_after[8192];
	size_t poll_end_len;
};

static int host_slot(struct seen *s, const char *host)
{
	int h = 0;
	while (h < s->nhosts && strcmp(s->hosts[h], host))
		h++;
	if (h == s->nhosts && h < 16)
		snprintf(s->hosts[s->nhosts++], 64, "%s", host);
	return h;
}

/* hosts with records whose MAP has not come */
static int without_map(const struct seen *s)
{
	int n = 0;
	for (int h = 0; h < s->nhosts; h++)
		n += s->has_rec[h] && !s->has_map[h];
	return n;
}

static int on_record(void *ctx, const char *host, const struct pulse_op_record *rec)
{
	struct seen *s = ctx;
	int h = host_slot(s, host);
	if (h < 16) {
		if (rec->seq < s->last_seq[h])
			s->out_of_order++;
		s->last_seq[h] = rec->seq;
		s->has_rec[h] = 1;
	}
	if (strcmp(rec->host, host))
		return -1; /* as the analyzer: a record of another host on this host's subject */
	s->records++;
	return 0;
}

static int on_line(void *ctx, const char *host, const char *line, size_t len)
{
	struct seen *s = ctx;
	if (len < 2 || line[0] != '{')
		return -1;
	s->maps++;
	static const char poll_end[] = "\"type\":\"poll_end\"";
	if (memmem(line, len, poll_end, sizeof poll_end - 1) && s->poll_end_len + 24 < sizeof s->poll_end_after) {
		int n = snprintf(s->poll_end_after + s->poll_end_len, sizeof s->poll_end_after - s->poll_end_len,
				 "%s%llu", s->poll_end_len ? "," : "", (unsigned long long)s->records);
		if (n > 0)
			s->poll_end_len += (size_t)n;
	}
	int h = host_slot(s, host);
	if (h < 16 && memmem(line, len, "hook_map", 8))
		s->has_map[h] = 1;
	return 0;
}

/* the job's streams' consumers, deleted through the JetStream API: what a
 * dead server does to the ephemeral consumers it hosted */
static int drop_consumers(const char *url, const char *job, int state_only)
{
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	int n = 0;
	if (natsConnection_ConnectTo(&nc, url) != NATS_OK || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) {
		fprintf(stderr, "bus_client: cannot reach %s\n", url);
		natsConnection_Destroy(nc);
		return -1;
	}
	const char *kinds[2] = {"", "_STATE"};
	for (int k = state_only; k < 2; k++) {
		char stream[160];
		snprintf(stream, sizeof stream, "PULSE_%s%s", job, kinds[k]);
		jsConsumerNamesList *l = NULL;
		if (js_ConsumerNames(&l, js, stream, NULL, NULL) != NATS_OK || !l)
			continue;
		for (int i = 0; i < l->Count; i++)
			n += js_DeleteConsumer(js, stream, l->List[i], NULL, NULL) == NATS_OK;
		jsConsumerNamesList_Destroy(l);
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	printf("dropped %d consumers\n", n);
	return n;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "state"))) && !strcmp(argv[1], "dropconsumers"))
		return drop_consumers(argv[2], argv[3], argc == 5) > 0 ? 0 : 1;
	if (argc < 4) {
		fprintf(stderr, "usage: see tests/bus/bus_client.c\n");
		return 2;
	}
	const char *mode = argv[1];
	char err[256];
	struct pulse_bus_cfg c = {.url = argv[2], .job = argv[3], .log = lg, .durable = "test"};

	struct pulse_bus *b = pulse_bus_open(&c, err, sizeof err);
	if (!b) {
		fprintf(stderr, "bus_client: %s\n", err);
		return 2;
	}
	int rc = 0;
	if (!strcmp(mode, "pub") && argc >= 7) {
		const char *host = argv[4];
		uint32_t polls = (uint32_t)atoi(argv[5]), per = (uint32_t)atoi(argv[6]);
		int pause_at = argc >= 9 ? atoi(argv[7]) : -1, pause_s = argc >= 9 ? atoi(argv[8]) : 0;
		char map[128];
		snprintf(map, sizeof map, "{\"type\":\"hook_map\",\"t_ns\":1,\"version\":1,\"comms\":[],\"qps\":[]}");
		pulse_bus_put_map(b, host, map, strlen(map));
		for (uint32_t p = 0; p < polls; p++) {
			for (uint32_t i = 0; i < per; i++) {
				record(host, p, i, per);
				pulse_bus_put_op(b, &r);
			}
			pulse_bus_end_poll(b, host, p);
			if (pause_at >= 0 && (int)p > pause_at)
				usleep(300000); /* the polls during the outage */
			if ((int)p == pause_at) {
				printf("paused\n");
				fflush(stdout);
				sleep((unsigned)pause_s);
			}
		}
		struct pulse_bus_stats s;
		for (int i = 0; i < 200; i++) { /* the queue drains at the next publish */
			pulse_bus_get_stats(b, &s);
			if (!s.queued)
				break;
			pulse_bus_end_poll(b, host, polls); /* empty poll: publishes nothing new */
			usleep(100000);
		}
	} else if (!strcmp(mode, "resend") && argc == 6) {
		uint64_t seq = strtoull(argv[5], NULL, 10);
		for (uint32_t i = 0; i < 64; i++) {
			record(argv[4], seq, i, 64);
			pulse_bus_put_op(b, &r);
		}
		pulse_bus_end_poll(b, argv[4], seq);
	} else if (!strcmp(mode, "garbage") && argc == 5) {
		natsConnection *nc;
		if (natsConnection_ConnectTo(&nc, argv[2]) != NATS_OK)
			return 2;
		char tok[PULSE_BUS_TOKEN_LEN], subj[512];
		pulse_bus_token(argv[3], tok, sizeof tok);
		snprintf(subj, sizeof subj, "pulse.%s.ops.%s", tok, argv[4]);
		const char *bad[] = {"not a pulse message", "PBUS\x01\x01\x00\x00 truncated"};
		for (int i = 0; i < 2; i++) {
			natsMsg *m;
			natsMsg_Create(&m, subj, NULL, bad[i], (int)strlen(bad[i]));
			natsMsgHeader_Set(m, "Pulse-Host", argv[4]);
			natsConnection_PublishMsg(nc, m);
			natsMsg_Destroy(m);
		}
		natsConnection_Flush(nc);
		natsConnection_Destroy(nc);
	} else if (!strcmp(mode, "consume") && argc == 6) {
		uint64_t want = strtoull(argv[4], NULL, 10);
		time_t end = time(NULL) + atoi(argv[5]);
		struct seen s = {0};
		struct pulse_bus_sink k = {.record = on_record, .line = on_line, .ctx = &s};
		while ((s.records < want || without_map(&s)) && time(NULL) < end)
			pulse_bus_consume(b, &k, 256, 200);
		/* a little more: nothing beyond what was asked for may come */
		for (int i = 0; i < 3; i++)
			pulse_bus_consume(b, &k, 256, 100);
		/* maps: from the state stream; lines: the other lines, in the stream */
		struct pulse_bus_stats bs;
		pulse_bus_get_stats(b, &bs);
		printf("records=%llu maps=%llu lines=%llu hosts=%d without_map=%d maps_reread=%llu out_of_order=%llu\n",
		       (unsigned long long)s.records, (unsigned long long)bs.maps_in, (unsigned long long)bs.lines_in,
		       s.nhosts, without_map(&s), (unsigned long long)bs.maps_reread,
		       (unsigned long long)s.out_of_order);
		printf("poll_end_after=%s\n", s.poll_end_len ? s.poll_end_after : "none");
		rc = s.records >= want ? 0 : 1;
	} else if (!strcmp(mode, "diag") && argc >= 5) {
		/* a diagnosis as pulse-analyzer --bus publishes it (report.c's
		 * form, with job, key, lease_revision), DAYS_AGO days old,
		 * published twice under its key; ID: once more under another id */
		int days_ago = argc >= 6 ? atoi(argv[5]) : 0;
		uint64_t report = (uint64_t)(time(NULL) - days_ago * 86400L) * 1000000000ull;
		char j[1024];
		snprintf(j, sizeof j,
			 "{\"localizer\":\"pulse\",\"class\":\"comm_slow\",\"class_name\":\"communication fail-slow\","
			 "\"level\":\"machine\",\"suspects\":[{\"host\":\"host2\",\"gpu\":1,\"rank\":2}],"
			 "\"evidence\":{\"comm_id\":\"0x00000000000000aa\",\"seq\":17},\"score\":0.8,"
			 "\"episode\":{\"first_seen_ns\":\"%llu\",\"last_seen_ns\":\"%llu\",\"times_seen\":3},"
			 "\"onset_ns\":\"%llu\",\"report_ns\":\"%llu\",\"job\":\"%s\",\"key\":\"%s\","
			 "\"lease_revision\":7,\"analyzer\":\"a1\"}",
			 (unsigned long long)report - 2000000000ull, (unsigned long long)report,
			 (unsigned long long)report - 3000000000ull, (unsigned long long)report, argv[3], argv[4]);
		pulse_bus_put_diag(b, argv[4], j, strlen(j));
		pulse_bus_put_diag(b, argv[4], j, strlen(j));
		if (argc >= 7)
			pulse_bus_put_diag(b, argv[6], j, strlen(j));
	} else if (!strcmp(mode, "diagwait") && argc == 5) {
		char j[256];
		snprintf(j, sizeof j, "{\"localizer\":\"pulse\",\"class\":\"comm_slow\",\"job\":\"%s\",\"key\":\"%s\"}",
			 argv[3], argv[4]);
		printf("open\n");
		fflush(stdout);
		sleep(2);
		int left = pulse_bus_put_diag(b, argv[4], j, strlen(j));
		printf("first try: %s\n", left ? "queued" : "published");
		fflush(stdout);
		for (int i = 0; left && i < 100; i++) {
			struct timespec ts = {0, 200000000};
			nanosleep(&ts, NULL);
			left = pulse_bus_flush(b);
		}
		rc = left ? 1 : 0;
	} else if (!strcmp(mode, "job") && argc == 8) {
		const char *host = argv[4];
		uint64_t t0 = strtoull(argv[5], NULL, 10);
		uint64_t from = strtoull(argv[6], NULL, 10), to = strtoull(argv[7], NULL, 10);
		int b_side = host[strlen(host) - 1] == 'B';
		for (uint64_t seq = from; seq < to; seq++) {
			for (int k = 0; k < 3; k++) {
				memset(&r, 0, sizeof r);
				snprintf(r.host, sizeof r.host, "%s", host);
				int c = k < 2; /* two ranks of 0xc0, one of 0xd0 */
				r.comm_id = c ? 0xc0 : 0xd0;
				r.nranks = c ? 4 : 2;
				r.rank = c ? 2 * b_side + k : b_side;
				r.gpu = k;
				r.pid = 100 + (uint32_t)k;
				r.seq = seq;
				r.op = 1;
				r.status = 1;
				r.call_ns = t0 + seq * 1000000000ull;
				r.start_ns = r.call_ns + 1000000;
				r.duration_ns = c ? (seq == 5 && r.rank == 2 ? 400 : 100 + 10 * (uint64_t)r.rank) * 1000000ull
						  : 50000000ull;
				r.end_ns = r.start_ns + r.duration_ns;
				r.expected_bytes = r.actual_bytes = 1u << 20;
				r.active_ns = r.rank_active_ns = r.duration_ns;
				r.npeers = 1;
				r.peers[0].rank = (r.rank + 1) % r.nranks;
				r.peers[0].gpu = 0;
				snprintf(r.peers[0].host, sizeof r.peers[0].host, "%s", host);
				pulse_bus_put_op(b, &r);
			}
			pulse_bus_end_poll(b, host, t0 + seq * 1000000000ull);
		}
	} else if (!strcmp(mode, "diagat") && argc == 8) {
		char j[1024];
		snprintf(j, sizeof j,
			 "{\"localizer\":\"pulse\",\"class\":\"comm_slow\",\"level\":\"machine\","
			 "\"suspects\":[{\"host\":\"hostB\",\"gpu\":0,\"rank\":2}],"
			 "\"evidence\":{\"comm_id\":\"%s\",\"seq\":5},\"score\":0.9,"
			 "\"onset_ns\":\"%s\",\"report_ns\":\"%s\",\"job\":\"%s\",\"key\":\"%s\"}",
			 argv[5], argv[6], argv[7], argv[3], argv[4]);
		pulse_bus_put_diag(b, argv[4], j, strlen(j));
	} else if (!strcmp(mode, "diagbad") && argc == 5) {
		const char *j = "{\"class\":\"comm_slow\"}"; /* no key, job, report time */
		pulse_bus_put_diag(b, argv[4], j, strlen(j));
	} else {
		fprintf(stderr, "bus_client: bad arguments\n");
		rc = 2;
	}
	print_stats(b);
	pulse_bus_close(b);
	return rc;
}
