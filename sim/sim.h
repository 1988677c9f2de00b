/* sim/: replay of RoCEv2 captures through the NIC agent firmware core.
 * Internal interfaces shared by the run_trace program, its serve mode and
 * the tests. See sim/README.md for what the program does and why. */
#ifndef PULSE_SIM_H
#define PULSE_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pulse/nic_agent.h"
#include "pulse/nic_client.h"
#include "pulse/roce.h"
#include "util.h"

#define SIM_NONE 0xFFFFFFFFu

/* Exit codes of run_trace (documented in sim/README.md and --help). */
enum sim_exit {
	SIM_EXIT_OK = 0,
	SIM_EXIT_RUNTIME = 1,   /* firmware/mailbox/transport or output failure */
	SIM_EXIT_USAGE = 2,     /* bad command line */
	SIM_EXIT_BAD_FILE = 3,  /* cannot open, wrong magic, unsupported link type, zero snaplen */
	SIM_EXIT_TRUNCATED = 4, /* the capture ends inside a record: results cover what was read */
	SIM_EXIT_STRICT = 5,    /* --strict: malformed packets or timestamps going backwards */
};

/* ---- capture input (sim/pcap_in.c) ---- */
struct sim_pcap {
	void *p; /* pcap_t */
	void *iobuf; /* the FILE's buffer */
	enum pulse_roce_link link;
	int dlt;
	uint32_t snaplen;
	int file_nsec;    /* the file itself has nanosecond timestamps */
	int pcapng;
	uint64_t records; /* records returned so far */
	char path[512];
	char err[1200];   /* the last error, one line */
};

/* Opens a capture. Returns SIM_EXIT_OK or SIM_EXIT_BAD_FILE with in->err set. */
int sim_pcap_open(struct sim_pcap *in, const char *path);
/* Next record: 1 with the frame, 0 at the clean end of the file, -1 when the
 * file is truncated or corrupt (in->err says where). ts_ns is UNIX time in ns. */
int sim_pcap_next(struct sim_pcap *in, const uint8_t **data, uint32_t *caplen,
		  uint32_t *wirelen, uint64_t *ts_ns);
void sim_pcap_close(struct sim_pcap *in);
const char *sim_link_name(int dlt);

/* ---- a hash index of u32 ids (sim/trace.c) ---- */
struct sim_index {
	uint32_t *slot; /* SIM_NONE = empty */
	uint32_t mask;
	uint32_t count;
};

/* ---- configuration ---- */
enum sim_bytes_mode {
	SIM_BYTES_WIRE = 0,    /* Ethernet frame as sent (no FCS/preamble/IFG) */
	SIM_BYTES_PAYLOAD = 1, /* IB payload only */
};

struct sim_cfg {
	uint32_t epoch_ns;
	uint64_t poll_ns;
	uint32_t event_bytes;
	uint64_t burst_gap_ns; /* 0: no idle flush */
	enum sim_bytes_mode bytes_mode;
	int nic_filter;        /* only the NIC in nic_addr */
	uint8_t nic_addr[16];
	uint32_t fw_flows;      /* firmware flow slots per NIC */
	uint32_t fw_pool_blocks;
	uint32_t fw_threads;
	uint32_t nic_clock_start; /* 32-bit NIC clock at the first packet */
	uint32_t max_flows;     /* flow table limit of the simulator itself */
	uint32_t max_nics;      /* NICs emulated (each holds a 32 MiB QPN table) */
	uint32_t psn_cache_bits;
	uint64_t log_budget;    /* bytes for pass 1's packet log (pass 2 reads it instead
				 * of the file); 0: always read the file twice */
};
void sim_cfg_default(struct sim_cfg *c);

/* One counted packet, as pass 1 saw it (16 bytes). */
struct sim_pkt_rec {
	uint64_t ts;
	uint32_t flow;
	uint32_t bytes;
};

/* ---- what the first pass learns (sim/trace.c) ---- */
enum sim_qpn_method {
	SIM_QPN_NONE = 0,
	SIM_QPN_ACK,       /* an ACK/read response/atomic ACK matched a request PSN */
	SIM_QPN_DETH,      /* UD: the source QPN is on the wire */
	SIM_QPN_SOLE_PAIR, /* the only unpaired flows each way between two hosts */
	SIM_QPN_SYNTHETIC, /* unknown: a made-up local id, marked as such */
};
const char *sim_qpn_method_name(enum sim_qpn_method m);

struct sim_host {
	uint8_t addr[16];
	uint32_t nic;  /* index in trace->nics, SIM_NONE if it never sends counted bytes */
};

struct sim_flow {
	uint32_t src, dst; /* host indexes */
	uint32_t dqpn;
	uint32_t sqpn;     /* UD: DETH source QPN (part of the key), else SIM_NONE */
	uint8_t transports; /* bit per enum pulse_roce_transport seen */
	uint8_t method;     /* enum sim_qpn_method */
	uint32_t op_mask[8]; /* opcodes seen */
	uint64_t pkts;       /* all RoCE packets */
	uint64_t tx_pkts;    /* packets the NIC counts (not ACK/NAK/CNP) */
	uint64_t tx_bytes;   /* counted bytes (per sim_cfg.bytes_mode) */
	uint64_t wire_bytes; /* all packets, wire bytes */
	uint64_t payload_bytes;
	uint64_t ctl_pkts;   /* ACK/NAK/CNP */
	uint64_t first_ns, last_ns; /* counted packets (0/0 when none) */
	uint32_t peer;        /* the reverse flow of the same connection */
	uint32_t local_qpn;   /* the sending QP on src (SIM_NONE until resolved) */
	uint32_t qp;          /* index in trace->qps */
	/* pairing evidence: majority vote over matched ACK PSNs */
	uint32_t vote_cand, vote_cnt, votes;
	uint8_t settled; /* its responder's vote is decided: its PSNs are not cached any more */
};

/* A responder flow whose vote leads by this much stops voting (and its
 * requester stops filling the PSN cache): pairing costs nothing per packet
 * once a connection is known. */
#define SIM_VOTES_SETTLED 32u

/* A sending QP on a NIC: what the firmware counts. */
struct sim_qp {
	uint32_t nic;
	uint32_t qpn;
	uint8_t synthetic;
	uint32_t first_flow; /* one of its flows (UD QPs can have several) */
	uint32_t nflows;
	uint64_t tx_pkts, tx_bytes, first_ns, last_ns;
	/* replay state (sim/nic_emu.c) */
	uint64_t pend_bytes; /* since the previous event; includes the sub-32-byte carry */
	uint32_t pend_pkts;
	uint64_t pend_last_ns;
	uint8_t dirty;
	uint64_t events, clipped_events;
	/* what the firmware reported back */
	uint64_t meas_bytes;
	uint64_t peak_epoch_bytes;
	uint64_t peak_epoch_ns; /* capture time of the peak epoch */
	uint64_t active_epochs;
	uint64_t first_epoch_ns, last_epoch_ns;
};

struct sim_nic {
	uint32_t host;
	uint64_t tx_bytes, tx_pkts;
	uint32_t nqps;
	int emulated; /* within max_nics and the --nic filter */
};

struct sim_counts {
	uint64_t read;      /* records read from the file */
	uint64_t status[PULSE_ROCE_STATUS_COUNT];
	uint64_t roce, not_roce, skipped, malformed;
	uint64_t ts_backwards;
	uint64_t ts_backwards_max_ns;
	uint64_t ts_jumps;        /* forward steps longer than SIM_JUMP_POLLS polls */
	uint64_t ts_jump_max_ns;
	uint64_t ts_jump_first_rec; /* the record (from 1) of the first one */
	uint64_t flows_untracked;  /* packets of flows beyond max_flows */
	uint64_t other_nic_pkts;   /* --nic: packets of other NICs (pass 2) */
	uint64_t ctl_pkts;         /* ACK/NAK/CNP: not TX-counted */
	uint64_t zero_pkts;        /* counted kinds with 0 counted bytes (payload mode) */
};

struct sim_trace {
	struct sim_cfg cfg;
	char path[512];
	int dlt;
	int file_nsec;
	int pcapng;
	uint32_t snaplen;
	uint64_t first_ns, last_ns; /* first and last record (clamped monotonic) */
	int truncated;              /* pass 1 stopped at a truncated/corrupt record */
	char trunc_msg[1200];
	struct sim_counts cnt;

	struct sim_host *hosts;
	uint32_t nhosts, hosts_cap;
	struct sim_index host_ix;
	struct sim_flow *flows;
	uint32_t nflows, flows_cap;
	struct sim_index flow_ix;
	struct sim_qp *qps;
	uint32_t nqps, qps_cap;
	struct sim_index qp_ix;
	struct sim_nic *nics;
	uint32_t nnics;

	/* PSN cache for pairing: direct-mapped (src, dst, psn) -> flow */
	uint32_t *psn_key;  /* 3 words per entry */
	uint32_t *psn_flow;
	uint32_t psn_mask;
	uint64_t pair_conflicts;
	uint32_t method_count[SIM_QPN_SYNTHETIC + 1];

	/* pass 1's log of counted packets, while it fits cfg.log_budget */
	struct sim_pkt_rec *log;
	uint64_t nlog, logcap;
	int log_overflow;

	/* last-hit cache for the flow lookup */
	uint8_t last_src[16], last_dst[16];
	uint32_t last_dqpn, last_sqpn, last_flow;
	uint8_t pair_saddr[16], pair_daddr[16];
	uint32_t pair_src, pair_dst;
};

/* Per-packet classification shared by both passes. */
static inline int sim_is_ctl(const struct pulse_roce_pkt *k)
{
	return k->kind == PULSE_ROCE_K_ACK || k->kind == PULSE_ROCE_K_CNP;
}
static inline uint32_t sim_counted_bytes(const struct sim_cfg *c, const struct pulse_roce_pkt *k)
{
	return c->bytes_mode == SIM_BYTES_PAYLOAD ? k->payload_len : k->wire_len;
}

void sim_trace_init(struct sim_trace *t, const struct sim_cfg *cfg);
void sim_trace_free(struct sim_trace *t);
/* Pass 1: reads the whole capture, builds hosts/flows, pairs connections,
 * assigns local QPNs and sending QPs. Returns a sim_exit code; on
 * SIM_EXIT_BAD_FILE nothing was read, on SIM_EXIT_TRUNCATED the trace covers
 * the records before the damage. err gets one line. */
int sim_trace_scan(struct sim_trace *t, const char *path, char *err, size_t errlen);
/* Per-packet part of pass 1 (exposed for tests). ts_ns must be monotonic. */
void sim_trace_add(struct sim_trace *t, enum pulse_roce_status st, const struct pulse_roce_pkt *k,
		   uint64_t ts_ns);
/* After the packets: pairing, QPN recovery, QP table. */
void sim_trace_resolve(struct sim_trace *t);
/* Flow of a decoded packet, or SIM_NONE (not tracked). */
uint32_t sim_trace_find_flow(struct sim_trace *t, const struct pulse_roce_pkt *k);
/* Sending QP (nic, qpn), or SIM_NONE. */
uint32_t sim_trace_find_qp(const struct sim_trace *t, uint32_t nic, uint32_t qpn);
/* Host index of an address, or SIM_NONE. */
uint32_t sim_trace_find_host(const struct sim_trace *t, const uint8_t addr[16]);

/* ---- NIC emulation: aggregation, firmware, mailbox polls (sim/nic_emu.c) ---- */
/* A forward step between two records longer than this many poll periods
 * is a jump: its empty windows are skipped, not polled one by one. */
#define SIM_JUMP_POLLS 64ull

struct sim_emu;
struct sim_emu_nic {
	struct sim_emu *emu;
	uint32_t nic; /* index in trace->nics */
	struct pulse_fw *fw;
	void *mem;
	size_t mem_size;
	struct pulse_nic_client client;
	uint64_t nic_now_ns;   /* capture time of "now" on this NIC */
	uint64_t win_start_ns; /* capture time the open window began */
	uint32_t *dirty;       /* QPs with unreported bytes */
	uint32_t ndirty, dirty_cap;
	uint64_t polls, windows_incomplete, pages_missing, mailbox_exchanges, upload_bytes;
	uint64_t poll_errors;
	uint64_t events, event_units, event_pkts;
	uint64_t fw_stats[PULSE_STAT_COUNT];
	uint32_t fw_stat_count;
	uint64_t clock_mismatches; /* window bounds not where the polls were */
	uint64_t unknown_qpns;     /* QPNs in uploads that no QP of this NIC has */
	struct pulse_window win;
	char last_error[200];
};

/* Called for every window the client decodes (for CSV/JSON writers). */
typedef int (*sim_window_cb)(void *ctx, struct sim_trace *t, struct sim_emu_nic *n,
			     const struct pulse_window *w, uint64_t win_start_cap_ns);

struct sim_emu {
	struct sim_trace *t;
	struct sim_emu_nic *nics; /* one per emulated NIC */
	uint32_t nnics;
	uint32_t *nic_map; /* trace nic index -> emu index or SIM_NONE */
	uint64_t t0;       /* capture time that maps to cfg.nic_clock_start */
	uint64_t next_poll_ns;
	/* Forward jumps in the capture's time (a corrupted timestamp, a
	 * capture paused for days) are not replayed as the empty windows they
	 * span: the replay runs SIM_JUMP_POLLS polls at most per jump, and
	 * everything after it runs shift_ns earlier on the NIC's clock. Times
	 * reported in capture time add shift_ns back. */
	uint64_t shift_ns;
	uint64_t windows_skipped;
	sim_window_cb on_window;
	void *on_window_ctx;
	uint64_t host_now_ns;
};

/* The 32-bit NIC clock at capture time ts. */
static inline uint32_t sim_nic_clock(const struct sim_emu *e, uint64_t ts)
{
	return (uint32_t)(e->t->cfg.nic_clock_start + (ts - e->t0));
}

/* Sets up one firmware instance per emulated NIC, opened at capture time t0,
 * and a mailbox client on each (HELLO + CONFIGURE). Returns 0 or -1 (err). */
int sim_emu_init(struct sim_emu *e, struct sim_trace *t, uint64_t t0, char *err, size_t errlen);
void sim_emu_free(struct sim_emu *e);
/* One counted packet of QP q at capture time ts (monotonic per QP). */
void sim_emu_packet(struct sim_emu *e, uint32_t q, uint32_t bytes, uint64_t ts);
/* Emits every pending remainder of a NIC (ts = each QP's last packet). */
void sim_emu_flush(struct sim_emu *e, struct sim_emu_nic *n);
/* Polls a NIC at capture time ts through the mailbox client; decodes the
 * window into the QPs' measurements and calls on_window. Returns 0 or -1. */
int sim_emu_poll(struct sim_emu *e, struct sim_emu_nic *n, uint64_t ts);
/* Reads the firmware counters through the mailbox (STATS). */
int sim_emu_stats(struct sim_emu *e, struct sim_emu_nic *n);
/* The in-process mailbox transport: straight into pulse_fw_mailbox. */
int sim_emu_exchange(void *ctx, const uint8_t *req, uint32_t req_len, uint8_t *resp,
		     uint32_t resp_cap, uint32_t *resp_len, uint32_t timeout_ms);

/* Pass 2 in batch mode: replays the capture through the emulated NICs,
 * polling every cfg.poll_ns of capture time. Returns a sim_exit code. */
int sim_replay(struct sim_emu *e, const char *path, char *err, size_t errlen);

/* ---- output (sim/report.c) ---- */
/* --out DIR. epochs.json is streamed: each window is written as it comes
 * to a scratch file, chained per NIC (each piece holds the offset of its
 * NIC's next one), and the document is assembled NIC by NIC at the end, so
 * memory does not grow with the number of windows. */
struct sim_out {
	FILE *epochs_csv;
	int part_fd;         /* the scratch file (unlinked), -1 none */
	uint64_t part_end;   /* its size */
	uint64_t *part_head; /* per emu NIC: first piece, UINT64_MAX none */
	uint64_t *part_last; /* per emu NIC: last piece */
	uint32_t nnics;
	int part_error;      /* a write failed (errno) */
	char dir[512];
};
int sim_out_open(struct sim_out *o, const char *dir, struct sim_emu *e, char *err, size_t errlen);
int sim_out_window(void *ctx, struct sim_trace *t, struct sim_emu_nic *n,
		   const struct pulse_window *w, uint64_t win_start_cap_ns);
int sim_out_close(struct sim_out *o, struct sim_emu *e, char *err, size_t errlen);
void sim_print_summary(FILE *f, struct sim_trace *t, struct sim_emu *e, uint32_t top);
/* The summary as a JSON document (caller frees with cJSON_Delete). */
void *sim_summary_json(struct sim_trace *t, struct sim_emu *e);
void sim_fmt_qpn(char *buf, size_t n, uint32_t qpn, int synthetic);

/* durations and sizes on the command line: sim/util.h */

#endif
