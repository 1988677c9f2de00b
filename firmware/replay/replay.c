/* The firmware replay driver (see replay.h). stdio only: this file is built
 * unchanged for glibc/x86 and for picolibc/rv64 with semihosting. */
#include "replay.h"

#include <stdio.h>
#include <string.h>

#include "pulse/event_stream.h"
#include "pulse/le.h"
#include "pulse/mailbox_proto.h"

#define IO_BUF 65536u

/* --- buffered input -------------------------------------------------- */

struct reader {
	FILE *f;
	uint8_t buf[IO_BUF];
	uint32_t pos, len;
	uint64_t offset; /* file offset of buf[pos] */
	int eof, err;
};

/* Copies n bytes; returns how many were available (< n only at end or error). */
static uint32_t rd_get(struct reader *r, uint8_t *dst, uint32_t n)
{
	uint32_t got = 0;
	while (got < n) {
		if (r->pos == r->len) {
			if (r->eof || r->err)
				break;
			size_t k = fread(r->buf, 1, sizeof r->buf, r->f);
			if (k < sizeof r->buf) {
				if (ferror(r->f))
					r->err = 1;
				else
					r->eof = 1;
			}
			r->pos = 0;
			r->len = (uint32_t)k;
			if (k == 0)
				break;
		}
		uint32_t take = r->len - r->pos;
		if (take > n - got)
			take = n - got;
		memcpy(dst + got, r->buf + r->pos, take);
		r->pos += take;
		got += take;
		r->offset += take;
	}
	return got;
}

/* --- buffered output ------------------------------------------------- */

struct writer {
	FILE *f;
	uint8_t buf[IO_BUF];
	uint32_t len;
	uint64_t total;
	int err;
};

static void wr_flush(struct writer *w)
{
	if (w->len && !w->err && fwrite(w->buf, 1, w->len, w->f) != w->len)
		w->err = 1;
	w->len = 0;
}

static void wr_put(struct writer *w, const uint8_t *p, uint32_t n)
{
	while (n) {
		if (w->len == sizeof w->buf)
			wr_flush(w);
		uint32_t take = (uint32_t)sizeof w->buf - w->len;
		if (take > n)
			take = n;
		memcpy(w->buf + w->len, p, take);
		w->len += take;
		w->total += take;
		p += take;
		n -= take;
	}
}

/* --- options --------------------------------------------------------- */

void pulse_replay_usage(const char *prog)
{
	printf("Usage: %s IN.evs OUT.bin [options]\n"
	       "Replays an event-stream file through the NIC agent core and writes every\n"
	       "mailbox response (u32 LE length + message; CONFIGURE's is left out).\n"
	       "  --epoch-ns N     epoch length, %u..%u (default %u)\n"
	       "  --window-ns N    poll window, %u..%u (default %u)\n"
	       "  --page-bytes N   upload page size, %u..%u (default %u)\n"
	       "  --clip-units N   32-byte units per packet for clipped events (default %u)\n"
	       "  --flow-limit N   CONFIGURE flow limit (default 0: all slots)\n"
	       "  --pool-limit N   CONFIGURE pool limit in blocks (default 0: all)\n"
	       "  --max-flows N    flow slots at init, 1..%u (default %u)\n"
	       "  --pool-blocks N  epoch-pool blocks at init (default %u)\n"
	       "  --threads N      event threads, 1..%u (default %u)\n"
	       "  --instance N     instance id reported in HELLO (default 1)\n"
	       "  --verbose        one line per poll\n"
	       "  --stats          print the counters of the last STATS response\n",
	       prog, PULSE_EPOCH_NS_MIN, PULSE_EPOCH_NS_MAX, PULSE_EPOCH_NS_DEFAULT,
	       PULSE_WINDOW_NS_MIN, PULSE_WINDOW_NS_MAX, PULSE_WINDOW_NS_DEFAULT,
	       PULSE_PAGE_BYTES_MIN, PULSE_REPLAY_RESP_CAP, PULSE_PAGE_BYTES_DEFAULT,
	       PULSE_CLIP_UNITS_PER_PKT_DEFAULT, PULSE_FW_MAX_FLOWS,
	       PULSE_REPLAY_DEFAULT_MAX_FLOWS, PULSE_REPLAY_DEFAULT_POOL_BLOCKS,
	       PULSE_FW_MAX_THREADS, PULSE_REPLAY_DEFAULT_THREADS);
}

/* Decimal or 0x hex, no sign, fits in 32 bits. */
int pulse_replay_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v = 0;
	unsigned base = 10;
	if (!s || !*s)
		return -1;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return -1;
	}
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		v = v * base + d;
		if (v > 0xFFFFFFFFu)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int pulse_replay_parse(int argc, char **argv, uint32_t platform, struct pulse_replay_opts *o)
{
	memset(o, 0, sizeof *o);
	o->lim.max_flows = PULSE_REPLAY_DEFAULT_MAX_FLOWS;
	o->lim.pool_blocks = PULSE_REPLAY_DEFAULT_POOL_BLOCKS;
	o->lim.max_threads = PULSE_REPLAY_DEFAULT_THREADS;
	o->lim.platform = platform;
	o->lim.instance_id = 1;
	o->lim.spin_relax = NULL;
	o->cfg.epoch_ns = PULSE_EPOCH_NS_DEFAULT;
	o->cfg.window_ns = PULSE_WINDOW_NS_DEFAULT;
	o->cfg.page_bytes = PULSE_PAGE_BYTES_DEFAULT;
	o->cfg.clip_units_per_pkt = PULSE_CLIP_UNITS_PER_PKT_DEFAULT;
	o->cfg.flow_limit = 0;
	o->cfg.pool_limit = 0;

	int pos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == 0) {
			if (pos == 0)
				o->in = a;
			else if (pos == 1)
				o->out = a;
			else {
				fprintf(stderr, "replay: unexpected argument '%s'\n", a);
				return -1;
			}
			pos++;
			continue;
		}
		if (!strcmp(a, "--verbose")) {
			o->verbose = 1;
			continue;
		}
		if (!strcmp(a, "--stats")) {
			o->print_stats = 1;
			continue;
		}
		struct {
			const char *name;
			uint32_t min, max;
			uint32_t *u32;
			uint16_t *u16;
		} nums[] = {
			{"--epoch-ns", PULSE_EPOCH_NS_MIN, PULSE_EPOCH_NS_MAX, &o->cfg.epoch_ns, NULL},
			{"--window-ns", PULSE_WINDOW_NS_MIN, PULSE_WINDOW_NS_MAX, &o->cfg.window_ns,
			 NULL},
			{"--page-bytes", PULSE_PAGE_BYTES_MIN, PULSE_REPLAY_RESP_CAP, NULL,
			 &o->cfg.page_bytes},
			{"--clip-units", 0, 0xFFFF, NULL, &o->cfg.clip_units_per_pkt},
			{"--flow-limit", 0, PULSE_FW_MAX_FLOWS, &o->cfg.flow_limit, NULL},
			{"--pool-limit", 0, 0xFFFFFFFFu, &o->cfg.pool_limit, NULL},
			{"--max-flows", 1, PULSE_FW_MAX_FLOWS, &o->lim.max_flows, NULL},
			{"--pool-blocks", 1, 0xFFFFFFFFu, &o->lim.pool_blocks, NULL},
			{"--threads", 1, PULSE_FW_MAX_THREADS, &o->lim.max_threads, NULL},
		};
		int found = 0;
		for (unsigned k = 0; k < sizeof nums / sizeof nums[0]; k++) {
			if (strcmp(a, nums[k].name))
				continue;
			found = 1;
			uint32_t v;
			if (i + 1 >= argc) {
				fprintf(stderr, "replay: %s needs a value\n", a);
				return -1;
			}
			if (pulse_replay_parse_u32(argv[++i], &v) || v < nums[k].min ||
			    v > nums[k].max) {
				fprintf(stderr, "replay: %s: '%s' is not a number in %u..%u\n", a,
					argv[i], (unsigned)nums[k].min, (unsigned)nums[k].max);
				return -1;
			}
			if (nums[k].u32)
				*nums[k].u32 = v;
			else
				*nums[k].u16 = (uint16_t)v;
		}
		if (found)
			continue;
		if (!strcmp(a, "--instance")) {
			uint32_t v;
			if (i + 1 >= argc || pulse_replay_parse_u32(argv[++i], &v)) {
				fprintf(stderr, "replay: --instance needs a number\n");
				return -1;
			}
			o->lim.instance_id = v;
			continue;
		}
		fprintf(stderr, "replay: unknown option '%s'\n", a);
		return -1;
	}
	if (pos != 2) {
		fprintf(stderr, "replay: need an input and an output file\n");
		return -1;
	}
	return 0;
}

/* --- the replay ------------------------------------------------------ */

struct replay {
	const struct pulse_replay_opts *o;
	struct pulse_fw *fw;
	struct writer *w;
	uint16_t seq;
	uint8_t req[256];
	uint8_t resp[PULSE_REPLAY_RESP_CAP];
	/* tallies, printed at the end */
	uint64_t tx, polls, pages, responses, errors;
	uint8_t stats[PULSE_MB_STATS_HEADER_SIZE + 8u * PULSE_STAT_COUNT];
	uint32_t stats_len;
};

/* Sends one request and writes its response to the output. Returns the
 * response status (from the header the firmware wrote). */
static enum pulse_mb_status exchange(struct replay *r, uint8_t type, const uint8_t *body,
				     uint32_t body_len, uint32_t now, uint32_t *resp_len,
				     int write_out)
{
	uint32_t len = pulse_mb_build_request(r->req, sizeof r->req, type, r->seq++, body, body_len);
	uint32_t rlen = 0;
	enum pulse_mb_status st =
		pulse_fw_mailbox(r->fw, r->req, len, r->resp, sizeof r->resp, &rlen, now);
	if (rlen > sizeof r->resp)
		rlen = 0; /* cannot happen; never write past the buffer */
	if (write_out) {
		uint8_t lenbuf[4];
		pulse_put_u32(lenbuf, rlen);
		wr_put(r->w, lenbuf, 4);
		wr_put(r->w, r->resp, rlen);
		r->responses++;
	}
	if (st != PULSE_MB_OK)
		r->errors++;
	*resp_len = rlen;
	return st;
}

/* What the host agent does at each poll: POLL, drain the pages, STATS. */
static void poll_cycle(struct replay *r, uint64_t host_ns, uint32_t now)
{
	uint8_t body[PULSE_MB_POLL_REQ_SIZE];
	struct pulse_mb_poll_req pr = {.host_ns = host_ns, .flags = 0};
	uint32_t rlen;
	pulse_mb_encode_poll_req(body, &pr);
	r->polls++;
	enum pulse_mb_status st = exchange(r, PULSE_MB_POLL, body, sizeof body, now, &rlen, 1);
	struct pulse_mb_poll_resp resp;
	memset(&resp, 0, sizeof resp);
	if (st == PULSE_MB_OK && rlen >= PULSE_MB_HEADER_SIZE + PULSE_MB_POLL_RESP_SIZE) {
		pulse_mb_decode_poll_resp(r->resp + PULSE_MB_HEADER_SIZE, &resp);
		/* page_count bounds the loop even if LAST never shows */
		for (uint32_t p = 0; p < resp.page_count; p++) {
			uint8_t pb[PULSE_MB_PAGE_REQ_SIZE];
			struct pulse_mb_page_req q = {.window_seq = resp.window_seq,
						      .page_seq = (uint16_t)p};
			pulse_mb_encode_page_req(pb, &q);
			st = exchange(r, PULSE_MB_READ_PAGE, pb, sizeof pb, now, &rlen, 1);
			if (st != PULSE_MB_OK) {
				printf("replay: window %u page %u: %s\n", (unsigned)resp.window_seq,
				       (unsigned)p, pulse_mb_status_name(st));
				break;
			}
			r->pages++;
			struct pulse_mb_page_info info;
			struct pulse_mb_page_iter it;
			if (pulse_mb_page_open(r->resp + PULSE_MB_HEADER_SIZE,
					       rlen - PULSE_MB_HEADER_SIZE, &info,
					       &it) != PULSE_MB_OK) {
				printf("replay: window %u page %u: malformed page\n",
				       (unsigned)resp.window_seq, (unsigned)p);
				r->errors++;
				break;
			}
			if (info.flags & PULSE_MB_PAGEF_LAST)
				break;
		}
	} else if (st != PULSE_MB_OK) {
		printf("replay: poll %u refused: %s\n", (unsigned)r->polls, pulse_mb_status_name(st));
	}
	if (exchange(r, PULSE_MB_STATS, NULL, 0, now, &rlen, 1) == PULSE_MB_OK) {
		uint32_t n = rlen - PULSE_MB_HEADER_SIZE;
		if (n > sizeof r->stats)
			n = sizeof r->stats;
		memcpy(r->stats, r->resp + PULSE_MB_HEADER_SIZE, n);
		r->stats_len = n;
	}
	if (r->o->verbose)
		printf("replay: poll %u at nic %u: window %u, %u flows, %u records, %u pages, %u "
		       "upload bytes, %u aged\n",
		       (unsigned)r->polls, (unsigned)now, (unsigned)resp.window_seq,
		       (unsigned)resp.flows, (unsigned)resp.records, (unsigned)resp.page_count,
		       (unsigned)resp.upload_bytes, (unsigned)resp.flows_aged);
}

/* Static: the response buffer is 64 KiB and the rv64 stack is small. */
static struct replay g_replay;
static struct reader g_reader;
static struct writer g_writer;

int pulse_replay_run(const struct pulse_replay_opts *o, void *mem, size_t mem_size)
{
	struct replay *r = &g_replay;
	struct reader *rd = &g_reader;
	struct writer *w = &g_writer;
	int rc = 0;
	memset(r, 0, sizeof *r);
	memset(rd, 0, sizeof *rd);
	memset(w, 0, sizeof *w);
	r->o = o;
	r->w = w;

	size_t need = pulse_fw_memory_size(&o->lim);
	if (need == 0) {
		fprintf(stderr, "replay: invalid limits (max_flows %u, pool_blocks %u, threads %u)\n",
			(unsigned)o->lim.max_flows, (unsigned)o->lim.pool_blocks,
			(unsigned)o->lim.max_threads);
		return 2;
	}
	if (need > mem_size) {
		fprintf(stderr,
			"replay: the limits need %lu bytes of firmware memory; this platform has "
			"%lu. Lower --pool-blocks or --max-flows.\n",
			(unsigned long)need, (unsigned long)mem_size);
		return 2;
	}

	rd->f = fopen(o->in, "rb");
	if (!rd->f) {
		fprintf(stderr, "replay: cannot open %s\n", o->in);
		return 1;
	}
	uint8_t hdr[PULSE_EVS_HEADER_SIZE];
	uint16_t hsize = 0, rsize = 0;
	if (rd_get(rd, hdr, sizeof hdr) != sizeof hdr ||
	    pulse_evs_check_header(hdr, sizeof hdr, &hsize, &rsize) != 0) {
		fprintf(stderr, "replay: %s is not a Pulse event stream (version %u)\n", o->in,
			PULSE_EVS_VERSION);
		fclose(rd->f);
		return 1;
	}
	static uint8_t rec[0x10000];
	for (uint32_t skip = hsize - PULSE_EVS_HEADER_SIZE; skip;) {
		uint32_t k = skip > sizeof rec ? (uint32_t)sizeof rec : skip;
		if (rd_get(rd, rec, k) != k) {
			fprintf(stderr, "replay: %s: header truncated\n", o->in);
			fclose(rd->f);
			return 1;
		}
		skip -= k;
	}

	/* The first record's time starts the clock. */
	uint32_t got = rd_get(rd, rec, rsize);
	uint32_t now = 0;
	struct pulse_evs_record ev;
	int have = 0;
	if (got == rsize) {
		have = 1;
		if (pulse_evs_decode_record(rec, &ev) == 0)
			now = ev.ev.ts_ns;
	}

	w->f = fopen(o->out, "wb");
	if (!w->f) {
		fprintf(stderr, "replay: cannot create %s\n", o->out);
		fclose(rd->f);
		return 2;
	}

	r->fw = pulse_fw_init(mem, mem_size, &o->lim, now);
	if (!r->fw) {
		fprintf(stderr, "replay: pulse_fw_init refused the memory or limits\n");
		fclose(rd->f);
		fclose(w->f);
		return 2;
	}
	uint8_t cb[PULSE_MB_CONFIG_SIZE];
	pulse_mb_encode_config(cb, &o->cfg);
	uint32_t rlen;
	enum pulse_mb_status st = exchange(r, PULSE_MB_CONFIGURE, cb, sizeof cb, now, &rlen, 0);
	if (st != PULSE_MB_OK) {
		fprintf(stderr, "replay: CONFIGURE refused: %s\n", pulse_mb_status_name(st));
		fclose(rd->f);
		fclose(w->f);
		return 2;
	}

	uint64_t unknown = 0, last_host = 0;
	uint32_t last_poll_ts = now;
	while (have) {
		if (pulse_evs_decode_record(rec, &ev) != 0) {
			unknown++;
		} else if (ev.kind == PULSE_EVS_TX) {
			now = ev.ev.ts_ns;
			pulse_fw_on_tx(r->fw, ev.thread % o->lim.max_threads, &ev.ev);
			r->tx++;
		} else {
			now = ev.ev.ts_ns;
			poll_cycle(r, ev.host_ns, now);
			last_host = ev.host_ns;
			last_poll_ts = now;
		}
		got = rd_get(rd, rec, rsize);
		have = got == rsize;
	}
	if (rd->err) {
		fprintf(stderr, "replay: read error in %s\n", o->in);
		rc = 1;
	} else if (got != 0) {
		fprintf(stderr, "replay: %s is truncated: %u stray bytes at offset %lu\n", o->in,
			(unsigned)got, (unsigned long)(rd->offset - got));
		rc = 1;
	}
	/* the final poll: the host clock moved as far as the NIC's since the last one */
	poll_cycle(r, last_host + (uint32_t)(now - last_poll_ts), now);

	wr_flush(w);
	if (fclose(w->f) != 0)
		w->err = 1;
	fclose(rd->f);
	if (w->err) {
		fprintf(stderr, "replay: writing %s failed\n", o->out);
		return 2;
	}
	if (unknown)
		printf("replay: %lu records of unknown kind skipped\n", (unsigned long)unknown);
	if (o->print_stats && r->stats_len >= PULSE_MB_STATS_HEADER_SIZE) {
		uint32_t n = pulse_get_u16(r->stats);
		for (uint32_t k = 0; k < n && PULSE_MB_STATS_HEADER_SIZE + 8u * (k + 1) <= r->stats_len;
		     k++)
			printf("replay: stat %s %lu\n", pulse_stat_name((enum pulse_stat)k),
			       (unsigned long)pulse_get_u64(r->stats + PULSE_MB_STATS_HEADER_SIZE + 8u * k));
	}
	printf("replay: %lu TX events, %lu polls, %lu pages, %lu responses (%lu bytes), %lu "
	       "error responses\n",
	       (unsigned long)r->tx, (unsigned long)r->polls, (unsigned long)r->pages,
	       (unsigned long)r->responses, (unsigned long)w->total, (unsigned long)r->errors);
	return rc;
}
