/* Helpers for the sim/ tests: a tiny pcap writer and a RoCEv2 frame builder
 * (independent of pulse-tracegen), temp directories, running a replay. */
#ifndef PULSE_SIM_TEST_UTIL_H
#define PULSE_SIM_TEST_UTIL_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../sim/sim.h"

#define SHARED_TRACES "../shared/traces/rdma_ib_tutorial"

struct tpcap {
	FILE *f;
};

static inline int tpcap_open(struct tpcap *p, const char *path, uint32_t magic, uint32_t snaplen,
			     uint32_t linktype)
{
	p->f = fopen(path, "wb");
	if (!p->f)
		return -1;
	uint16_t v[2] = {2, 4};
	uint32_t z = 0;
	fwrite(&magic, 4, 1, p->f);
	fwrite(v, 2, 2, p->f);
	fwrite(&z, 4, 1, p->f);
	fwrite(&z, 4, 1, p->f);
	fwrite(&snaplen, 4, 1, p->f);
	fwrite(&linktype, 4, 1, p->f);
	return 0;
}

/* ts in ns (nanosecond magic) */
static inline void tpcap_rec(struct tpcap *p, uint64_t ts, const uint8_t *b, uint32_t caplen,
			     uint32_t len)
{
	uint32_t h[4] = {(uint32_t)(ts / 1000000000u), (uint32_t)(ts % 1000000000u), caplen, len};
	fwrite(h, 4, 4, p->f);
	fwrite(b, caplen, 1, p->f);
}

static inline void tpcap_close(struct tpcap *p)
{
	fclose(p->f);
}

/* Frame builder: Ethernet / IPv4 10.0.0.s -> 10.0.0.d / UDP dport / BTH / ext / payload / ICRC. */
struct tframe {
	uint8_t b[9200];
	uint32_t n;
};

static inline void tf_put(struct tframe *f, const void *src, uint32_t n)
{
	memcpy(f->b + f->n, src, n);
	f->n += n;
}
static inline void tf_be16(struct tframe *f, uint32_t v)
{
	uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	tf_put(f, x, 2);
}
static inline void tf_be24(struct tframe *f, uint32_t v)
{
	uint8_t x[3] = {(uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	tf_put(f, x, 3);
}
static inline void tf_be32(struct tframe *f, uint32_t v)
{
	tf_be16(f, v >> 16);
	tf_be16(f, v & 0xFFFF);
}

/* A RoCEv2 packet. ext_bytes of zeros follow the BTH (e.g. 16 for a RETH). */
static inline void tf_roce(struct tframe *f, uint32_t s, uint32_t d, uint32_t dport, uint8_t op,
			   uint32_t dqpn, uint32_t psn, uint32_t ext_bytes, uint32_t payload,
			   uint16_t frag, uint32_t ihl_words)
{
	static const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
	f->n = 0;
	tf_put(f, macs, 12);
	tf_be16(f, 0x0800);
	uint32_t iplen = ihl_words * 4 + 8 + 12 + ext_bytes + payload + 4;
	uint8_t ip[20] = {(uint8_t)(0x40 | ihl_words), 0, (uint8_t)(iplen >> 8), (uint8_t)iplen, 0, 1,
			  (uint8_t)(frag >> 8), (uint8_t)frag, 64, 17, 0, 0, 10, 0, 0, (uint8_t)s,
			  10, 0, 0, (uint8_t)d};
	tf_put(f, ip, 20);
	for (uint32_t i = 5; i < ihl_words; i++)
		tf_be32(f, 0x01010101);
	uint32_t ulen = 8 + 12 + ext_bytes + payload + 4;
	tf_be16(f, 49152);
	tf_be16(f, dport);
	tf_be16(f, ulen);
	tf_be16(f, 0);
	f->b[f->n++] = op;
	f->b[f->n++] = 0;
	tf_be16(f, 0xFFFF);
	f->b[f->n++] = 0;
	tf_be24(f, dqpn);
	f->b[f->n++] = 0x80;
	tf_be24(f, psn);
	memset(f->b + f->n, 0, ext_bytes + payload + 4);
	f->n += ext_bytes + payload + 4;
}

static inline char *tmpdir_make(void)
{
	char *d = strdup("/tmp/pulse-sim-test-XXXXXX");
	if (!d || !mkdtemp(d)) {
		free(d);
		return NULL;
	}
	return d;
}

static inline void tmpdir_remove(char *d)
{
	if (!d)
		return;
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", d);
	free(d);
}

/* Scan + replay, like run_trace without output. Returns the replay status. */
struct treplay {
	struct sim_trace t;
	struct sim_emu e;
	int scan_rc, replay_rc;
	char err[1200];
};

static inline int treplay_run(struct treplay *r, const char *path, const struct sim_cfg *cfg)
{
	memset(r, 0, sizeof *r);
	sim_trace_init(&r->t, cfg);
	r->scan_rc = sim_trace_scan(&r->t, path, r->err, sizeof r->err);
	if (r->scan_rc == SIM_EXIT_BAD_FILE || r->scan_rc == SIM_EXIT_RUNTIME)
		return r->scan_rc;
	if (sim_emu_init(&r->e, &r->t, r->t.first_ns, r->err, sizeof r->err))
		return SIM_EXIT_RUNTIME;
	r->replay_rc = sim_replay(&r->e, path, r->err, sizeof r->err);
	return r->replay_rc;
}

static inline void treplay_free(struct treplay *r)
{
	sim_emu_free(&r->e);
	sim_trace_free(&r->t);
}

/* The flow src -> dst with this dest QPN, or NULL. */
static inline const struct sim_flow *tflow(const struct sim_trace *t, const char *src,
					   const char *dst, uint32_t dqpn)
{
	uint8_t a[16], b[16];
	if (pulse_roce_addr_parse(src, a) || pulse_roce_addr_parse(dst, b))
		return NULL;
	uint32_t s = sim_trace_find_host(t, a), d = sim_trace_find_host(t, b);
	for (uint32_t i = 0; i < t->nflows; i++)
		if (t->flows[i].src == s && t->flows[i].dst == d && t->flows[i].dqpn == dqpn)
			return &t->flows[i];
	return NULL;
}

static inline int have_file(const char *p)
{
	return access(p, R_OK) == 0;
}

#endif
