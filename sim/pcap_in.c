/* Capture input through libpcap: pcap (µs or ns) and pcapng, read with
 * nanosecond precision. The file header is checked here first so that bad
 * files get a precise message (libpcap quietly "fixes" a zero snaplen). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim.h"

#define SIM_PCAP_IOBUF (1u << 20)

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif

const char *sim_link_name(int dlt)
{
	const char *n = pcap_datalink_val_to_name(dlt);
	return n ? n : "unknown";
}

static int dlt_to_link(int dlt, enum pulse_roce_link *link)
{
	switch (dlt) {
	case DLT_EN10MB:
		*link = PULSE_ROCE_LINK_ETHERNET;
		return 0;
	case DLT_LINUX_SLL:
		*link = PULSE_ROCE_LINK_SLL;
		return 0;
	case DLT_LINUX_SLL2:
		*link = PULSE_ROCE_LINK_SLL2;
		return 0;
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		*link = PULSE_ROCE_LINK_RAW;
		return 0;
	default:
		return -1;
	}
}

static uint32_t get32(const uint8_t *p, int swap)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
	return swap ? __builtin_bswap32(v) : v;
}

int sim_pcap_open(struct sim_pcap *in, const char *path)
{
	memset(in, 0, sizeof *in);
	snprintf(in->path, sizeof in->path, "%s", path);
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(in->err, sizeof in->err, "%s: cannot open: %s", path, strerror(errno));
		return SIM_EXIT_BAD_FILE;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(in->err, sizeof in->err, "%s: is a directory, not a capture file", path);
		return SIM_EXIT_BAD_FILE;
	}
	uint8_t h[24];
	size_t n = fread(h, 1, sizeof h, f);
	int rerr = ferror(f) ? errno : 0;
	fclose(f);
	if (n < 4 && rerr) {
		snprintf(in->err, sizeof in->err, "%s: cannot read: %s", path, strerror(rerr));
		return SIM_EXIT_BAD_FILE;
	}
	if (n < 4) {
		snprintf(in->err, sizeof in->err,
			 "%s: not a capture: %zu bytes, too short for a file header", path, n);
		return SIM_EXIT_BAD_FILE;
	}
	uint32_t magic = get32(h, 0);
	int swap = 0;
	switch (magic) {
	case 0xA1B2C3D4u: case 0xA1B23C4Du: case 0xA1B2CD34u:
		break;
	case 0xD4C3B2A1u: case 0x4D3CB2A1u: case 0x34CDB2A1u:
		swap = 1;
		break;
	case 0x0A0D0D0Au:
		in->pcapng = 1;
		break;
	default:
		snprintf(in->err, sizeof in->err,
			 "%s: wrong magic 0x%08x: not a pcap or pcapng capture", path, magic);
		return SIM_EXIT_BAD_FILE;
	}
	if (!in->pcapng) {
		if (n < 24) {
			snprintf(in->err, sizeof in->err,
				 "%s: truncated pcap file header (%zu of 24 bytes)", path, n);
			return SIM_EXIT_BAD_FILE;
		}
		uint32_t m = swap ? __builtin_bswap32(magic) : magic;
		in->file_nsec = m == 0xA1B23C4Du;
		if (get32(h + 16, swap) == 0) {
			snprintf(in->err, sizeof in->err,
				 "%s: the file header says snaplen 0: no packet can have been captured "
				 "(a corrupt or hand-edited header)", path);
			return SIM_EXIT_BAD_FILE;
		}
	}
	char eb[PCAP_ERRBUF_SIZE];
	eb[0] = 0;
	/* Our own FILE with a 1 MiB buffer: libpcap freads each record header
	 * and body separately, and with stdio's default 4 KiB buffer the read
	 * system calls alone cost more than decoding. libpcap owns (and closes)
	 * the FILE from here on. */
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(in->err, sizeof in->err, "%s: cannot open: %s", path, strerror(errno));
		return SIM_EXIT_BAD_FILE;
	}
	/* glibc ignores the size unless it is given the buffer itself */
	in->iobuf = malloc(SIM_PCAP_IOBUF);
	if (in->iobuf)
		setvbuf(fp, in->iobuf, _IOFBF, SIM_PCAP_IOBUF);
	pcap_t *p = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!p) {
		fclose(fp);
		free(in->iobuf);
		in->iobuf = NULL;
		snprintf(in->err, sizeof in->err, "%s: libpcap cannot read it: %s", path, eb);
		return SIM_EXIT_BAD_FILE;
	}
	in->p = p;
	in->dlt = pcap_datalink(p);
	in->snaplen = (uint32_t)pcap_snapshot(p);
	if (in->pcapng)
		in->file_nsec = -1; /* per interface; libpcap converts */
	if (dlt_to_link(in->dlt, &in->link) != 0) {
		snprintf(in->err, sizeof in->err,
			 "%s: link type %d (%s) is not supported; supported: EN10MB (Ethernet, "
			 "802.1Q), LINUX_SLL, LINUX_SLL2, RAW/IPV4/IPV6", path, in->dlt,
			 sim_link_name(in->dlt));
		pcap_close(p);
		in->p = NULL;
		free(in->iobuf);
		in->iobuf = NULL;
		return SIM_EXIT_BAD_FILE;
	}
	return SIM_EXIT_OK;
}

int sim_pcap_next(struct sim_pcap *in, const uint8_t **data, uint32_t *caplen,
		  uint32_t *wirelen, uint64_t *ts_ns)
{
	struct pcap_pkthdr *h;
	const u_char *d;
	int rc = pcap_next_ex((pcap_t *)in->p, &h, &d);
	if (rc == 1) {
		in->records++;
		*data = d;
		*caplen = h->caplen;
		*wirelen = h->len;
		int64_t s = (int64_t)h->ts.tv_sec;
		*ts_ns = s < 0 ? 0 : (uint64_t)s * 1000000000u + (uint64_t)h->ts.tv_usec;
		return 1;
	}
	if (rc == PCAP_ERROR_BREAK) /* -2: no more packets */
		return 0;
	snprintf(in->err, sizeof in->err, "%s: truncated or corrupt after record %llu: %s",
		 in->path, (unsigned long long)in->records, pcap_geterr((pcap_t *)in->p));
	return -1;
}

void sim_pcap_close(struct sim_pcap *in)
{
	if (in->p)
		pcap_close((pcap_t *)in->p); /* closes the FILE, which used iobuf */
	in->p = NULL;
	free(in->iobuf);
	in->iobuf = NULL;
}
