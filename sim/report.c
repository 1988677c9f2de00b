/* run_trace output: the human summary, the JSON summary, and the per-QP
 * epoch series in CSV and JSON (--out). Formats: sim/README.md. */
#define _GNU_SOURCE
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

/* ---- small formatting helpers ---- */
static const char *fmt_bytes(char *b, size_t n, uint64_t v)
{
	if (v < 10000)
		snprintf(b, n, "%" PRIu64 " B", v);
	else if (v < 10000000)
		snprintf(b, n, "%.2f kB", v / 1e3);
	else if (v < 10000000000ull)
		snprintf(b, n, "%.2f MB", v / 1e6);
	else
		snprintf(b, n, "%.2f GB", v / 1e9);
	return b;
}

static const char *fmt_dur(char *b, size_t n, uint64_t ns)
{
	if (ns < 10000)
		snprintf(b, n, "%" PRIu64 " ns", ns);
	else if (ns < 10000000)
		snprintf(b, n, "%.2f us", ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(b, n, "%.3f ms", ns / 1e6);
	else
		snprintf(b, n, "%.3f s", ns / 1e9);
	return b;
}

void sim_fmt_qpn(char *buf, size_t n, uint32_t qpn, int synthetic)
{
	if (qpn == SIM_NONE)
		snprintf(buf, n, "?");
	else
		snprintf(buf, n, "%s%u", synthetic ? "~" : "", qpn);
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

/* Opcode names of a flow, comma-separated, at most cap bytes. */
static void opcodes_str(const struct sim_flow *f, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (unsigned t = 0; t < 8; t++)
		for (unsigned b = 0; b < 32; b++) {
			if (!(f->op_mask[t] & (1u << b)))
				continue;
			uint8_t op = (uint8_t)(t << 5 | b);
			int w = snprintf(buf + o, cap - o, "%s%s_%s", o ? "," : "",
					 pulse_roce_transport_name(op >> 5), pulse_roce_opcode_name(op));
			if (w < 0 || (size_t)w >= cap - o) {
				buf[o] = 0;
				return;
			}
			o += (size_t)w;
		}
}

static const char *transport_str(uint8_t mask)
{
	static const char *const one[8] = {"RC", "UC", "RD", "UD", "CNP", "XRC", "VENDOR", "VENDOR"};
	if (!mask)
		return "-";
	if (mask & (mask - 1))
		return "mixed";
	return one[__builtin_ctz(mask)];
}

static void addr_of(const struct sim_trace *t, uint32_t host, char *buf)
{
	pulse_roce_addr_str(t->hosts[host].addr, buf);
}

/* ---- the human summary ---- */
static int cmp_qp_nic_bytes(const void *x, const void *y, void *ctx)
{
	const struct sim_qp *q = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (q[a].nic != q[b].nic)
		return q[a].nic < q[b].nic ? -1 : 1;
	if (q[a].tx_bytes != q[b].tx_bytes)
		return q[a].tx_bytes > q[b].tx_bytes ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int cmp_nic_addr(const void *x, const void *y, void *ctx)
{
	const struct sim_trace *t = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = memcmp(t->hosts[t->nics[a].host].addr, t->hosts[t->nics[b].host].addr, 16);
	return c ? c : (a < b ? -1 : a > b);
}

static void print_reasons(FILE *f, const struct sim_trace *t, enum pulse_roce_group g)
{
	for (int s = 1; s < PULSE_ROCE_STATUS_COUNT; s++)
		if (pulse_roce_status_group((enum pulse_roce_status)s) == g && t->cnt.status[s])
			fprintf(f, "      %10" PRIu64 "  %-24s %s\n", t->cnt.status[s],
				pulse_roce_status_name((enum pulse_roce_status)s),
				pulse_roce_status_text((enum pulse_roce_status)s));
}

static const char *fw_stat_label(enum pulse_stat s)
{
	return pulse_stat_name(s);
}

void sim_print_summary(FILE *f, struct sim_trace *t, struct sim_emu *e, uint32_t top)
{
	char b1[64], b2[64], b3[64], a1[46], a2[46];
	const struct sim_cfg *c = &t->cfg;
	uint64_t span = t->last_ns - t->first_ns;
	fprintf(f, "run_trace: %s\n", t->path);
	time_t sec = (time_t)(t->first_ns / 1000000000u);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&sec, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(f, "  capture   %s, link %s, %s timestamps, snaplen %u; ",
		t->pcapng ? "pcapng" : "pcap", sim_link_name(t->dlt),
		t->file_nsec == 1 ? "ns" : t->file_nsec == 0 ? "us" : "per-interface", t->snaplen);
	if (t->cnt.read)
		fprintf(f, "%s starting %s\n", fmt_dur(b1, sizeof b1, span), when);
	else
		fprintf(f, "no packets\n");
	if (t->truncated)
		fprintf(f, "  WARNING   %s: results cover the records before it\n", t->trunc_msg);
	fprintf(f, "  packets   %" PRIu64 " read: %" PRIu64 " RoCEv2, %" PRIu64 " not RoCE, %" PRIu64
		   " skipped, %" PRIu64 " malformed\n",
		t->cnt.read, t->cnt.roce, t->cnt.not_roce, t->cnt.skipped, t->cnt.malformed);
	if (t->cnt.not_roce) {
		fprintf(f, "    not RoCE:\n");
		print_reasons(f, t, PULSE_ROCE_GROUP_NOT_ROCE);
	}
	if (t->cnt.skipped) {
		fprintf(f, "    skipped (not decodable as RoCE):\n");
		print_reasons(f, t, PULSE_ROCE_GROUP_SKIPPED);
	}
	if (t->cnt.malformed) {
		fprintf(f, "    malformed (dropped):\n");
		print_reasons(f, t, PULSE_ROCE_GROUP_MALFORMED);
	}
	fprintf(f, "    RoCEv2: %" PRIu64 " ACK/NAK/CNP (not TX-counted)", t->cnt.ctl_pkts);
	if (t->cnt.zero_pkts)
		fprintf(f, ", %" PRIu64 " with no payload (payload mode)", t->cnt.zero_pkts);
	if (t->cnt.flows_untracked)
		fprintf(f, ", %" PRIu64 " of flows beyond --max-flows %u (not replayed)",
			t->cnt.flows_untracked, c->max_flows);
	if (t->cnt.other_nic_pkts)
		fprintf(f, ", %" PRIu64 " sent by NICs not emulated", t->cnt.other_nic_pkts);
	fprintf(f, "\n");
	if (t->cnt.ts_backwards)
		fprintf(f, "  WARNING   timestamps went backwards %" PRIu64
			   " times (at most %s): those packets were replayed at the previous "
			   "timestamp\n",
			t->cnt.ts_backwards, fmt_dur(b1, sizeof b1, t->cnt.ts_backwards_max_ns));
	if (t->cnt.ts_jumps)
		fprintf(f, "  WARNING   timestamps jumped forward %" PRIu64 " times (at most %s, first at "
			   "record %" PRIu64 "): the %" PRIu64 " empty windows in between were skipped, "
			   "not polled\n",
			t->cnt.ts_jumps, fmt_dur(b1, sizeof b1, t->cnt.ts_jump_max_ns),
			t->cnt.ts_jump_first_rec, e ? e->windows_skipped : 0);
	fprintf(f, "  replay    epoch %s, poll every %s, a TX event per %u B sent (%s bytes), "
		   "burst gap %s\n",
		fmt_dur(b1, sizeof b1, c->epoch_ns), fmt_dur(b2, sizeof b2, c->poll_ns),
		c->event_bytes, c->bytes_mode == SIM_BYTES_WIRE ? "wire" : "payload",
		c->burst_gap_ns ? fmt_dur(b3, sizeof b3, c->burst_gap_ns) : "off");
	fprintf(f, "  flows     %u (src, dst, dest QPN); local QPN from: %u ACK PSN match, %u DETH, "
		   "%u sole pair, %u SYNTHETIC, %u none needed (no TX bytes)",
		t->nflows, t->method_count[SIM_QPN_ACK], t->method_count[SIM_QPN_DETH],
		t->method_count[SIM_QPN_SOLE_PAIR], t->method_count[SIM_QPN_SYNTHETIC],
		t->method_count[SIM_QPN_NONE]);
	if (t->pair_conflicts)
		fprintf(f, "; %" PRIu64 " conflicting pairings ignored", t->pair_conflicts);
	fprintf(f, "\n");
	if (t->method_count[SIM_QPN_SYNTHETIC])
		fprintf(f, "  NOTE      local QPNs marked ~N are SYNTHETIC: the capture holds no "
			   "response that names the sender's QP (one-way capture, UC, or no ACKs); "
			   "they are ids made up for the replay, not real QPNs\n");

	if (!t->nnics)
		fprintf(f, "\nNo NIC in the capture sends RoCEv2 data (requests, data or responses): "
			   "nothing to replay.\n");
	uint32_t *order = malloc(sizeof *order * (t->nqps ? t->nqps : 1));
	if (!order)
		return;
	for (uint32_t i = 0; i < t->nqps; i++)
		order[i] = i;
	qsort_r(order, t->nqps, sizeof *order, cmp_qp_nic_bytes, t->qps);
	uint32_t *nord = malloc(sizeof *nord * (t->nnics ? t->nnics : 1));
	if (!nord) {
		free(order);
		return;
	}
	for (uint32_t k = 0; k < t->nnics; k++)
		nord[k] = k;
	qsort_r(nord, t->nnics, sizeof *nord, cmp_nic_addr, t);
	for (uint32_t nk = 0; nk < t->nnics; nk++) {
		uint32_t ni = nord[nk];
		struct sim_nic *nic = &t->nics[ni];
		uint32_t i = 0;
		while (i < t->nqps && t->qps[order[i]].nic != ni)
			i++;
		struct sim_emu_nic *en = e && e->nic_map && e->nic_map[ni] != SIM_NONE
						 ? &e->nics[e->nic_map[ni]] : NULL;
		addr_of(t, nic->host, a1);
		fprintf(f, "\nNIC %s: %u sending QPs, %s in %" PRIu64 " packets", a1, nic->nqps,
			fmt_bytes(b1, sizeof b1, nic->tx_bytes), nic->tx_pkts);
		if (!en) {
			fprintf(f, " (not emulated: %s)\n",
				c->nic_filter ? "--nic selects another NIC" : "beyond --max-nics");
		} else {
			uint64_t *s = en->fw_stats;
			fprintf(f, "\n  firmware  %" PRIu64 " TX events (%" PRIu64 " clipped), %" PRIu64
				   " windows polled (%" PRIu64 " incomplete), %" PRIu64
				   " mailbox exchanges\n",
				en->events, s[PULSE_STAT_CLIPPED_EVENTS], en->polls,
				en->windows_incomplete, en->mailbox_exchanges);
			uint64_t drops = 0;
			static const enum pulse_stat dk[] = {
				PULSE_STAT_DROP_BAD_QPN, PULSE_STAT_DROP_NO_SLOT, PULSE_STAT_DROP_NO_POOL,
				PULSE_STAT_DROP_TS_RANGE, PULSE_STAT_LATE_EVENTS,
				PULSE_STAT_REORDERED_EVENTS, PULSE_STAT_ZERO_EVENTS,
				PULSE_STAT_DROP_BAD_THREAD, PULSE_STAT_DROP_PAUSED};
			for (unsigned k = 0; k < sizeof dk / sizeof dk[0]; k++)
				drops += s[dk[k]];
			if (drops) {
				fprintf(f, "  firmware ");
				for (unsigned k = 0; k < sizeof dk / sizeof dk[0]; k++)
					if (s[dk[k]])
						fprintf(f, " %s=%" PRIu64, fw_stat_label(dk[k]), s[dk[k]]);
				fprintf(f, "\n");
			}
			fprintf(f, "  firmware  flows created %" PRIu64 ", aged %" PRIu64
				   ", pool peak %" PRIu64 " of %" PRIu64 " blocks\n",
				s[PULSE_STAT_FLOWS_CREATED], s[PULSE_STAT_FLOWS_AGED],
				s[PULSE_STAT_POOL_PEAK], s[PULSE_STAT_POOL_BLOCKS]);
			if (en->clock_mismatches || en->unknown_qpns || en->poll_errors)
				fprintf(f, "  ERROR     %" PRIu64 " windows with unexpected bounds, %" PRIu64
					   " unknown QPNs, %" PRIu64 " failed polls\n",
					en->clock_mismatches, en->unknown_qpns, en->poll_errors);
		}
		fprintf(f, "  %-10s %-16s %-10s %-5s %9s %11s %11s %11s %9s %9s  %s\n", "local QPN",
			"-> dst", "remote QPN", "tr", "packets", "bytes", "measured", "active",
			"mean Gb/s", "peak Gb/s", "opcodes (QPN from)");
		uint32_t shown = 0;
		for (; i < t->nqps && t->qps[order[i]].nic == ni; i++) {
			struct sim_qp *q = &t->qps[order[i]];
			if (top && shown >= top)
				continue;
			shown++;
			const struct sim_flow *fl = &t->flows[q->first_flow];
			char lq[16], rq[16], ops[512], dst[64], meas[32];
			sim_fmt_qpn(lq, sizeof lq, q->qpn, q->synthetic);
			if (q->nflows > 1) {
				snprintf(dst, sizeof dst, "(%u flows)", q->nflows);
				snprintf(rq, sizeof rq, "*");
			} else {
				addr_of(t, fl->dst, a2);
				snprintf(dst, sizeof dst, "%s", a2);
				snprintf(rq, sizeof rq, "%u", fl->dqpn);
			}
			opcodes_str(fl, ops, sizeof ops);
			/* active time: the epochs in which the firmware saw the QP send;
			 * without firmware data, the capture's first-to-last span */
			uint64_t act = q->last_ns - q->first_ns, abytes = q->tx_bytes;
			if (en && q->active_epochs) {
				act = q->active_epochs * c->epoch_ns;
				abytes = q->meas_bytes;
			}
			if (en)
				fmt_bytes(meas, sizeof meas, q->meas_bytes);
			else
				snprintf(meas, sizeof meas, "-");
			char mean[16], peak[16];
			if (act)
				snprintf(mean, sizeof mean, "%.4g", gbps(abytes, act));
			else
				snprintf(mean, sizeof mean, "-");
			if (en && q->peak_epoch_bytes)
				snprintf(peak, sizeof peak, "%.4g", gbps(q->peak_epoch_bytes, c->epoch_ns));
			else
				snprintf(peak, sizeof peak, "-");
			fprintf(f, "  %-10s %-16s %-10s %-5s %9" PRIu64 " %11s %11s %11s %9s %9s  %s (%s)\n",
				lq, dst, rq, transport_str(fl->transports), q->tx_pkts,
				fmt_bytes(b1, sizeof b1, q->tx_bytes), meas,
				fmt_dur(b2, sizeof b2, act), mean, peak, ops,
				sim_qpn_method_name((enum sim_qpn_method)fl->method));
		}
		if (top && shown < nic->nqps)
			fprintf(f, "  ... %u more QPs (--top 0 shows all; --out DIR writes them all)\n",
				nic->nqps - shown);
	}
	free(order);
	free(nord);
	/* Flows that sent nothing counted: ACK-only responders, UC/UD receivers... */
	uint32_t quiet = 0;
	for (uint32_t k = 0; k < t->nflows; k++)
		quiet += t->flows[k].tx_pkts == 0;
	if (quiet) {
		fprintf(f, "\n%u flows carried only ACK/NAK/CNP packets (nothing for the NIC to count):\n",
			quiet);
		uint32_t shown = 0;
		for (uint32_t k = 0; k < t->nflows && (!top || shown < top); k++) {
			const struct sim_flow *fl = &t->flows[k];
			if (fl->tx_pkts)
				continue;
			shown++;
			char lq[16], ops[256];
			addr_of(t, fl->src, a1);
			addr_of(t, fl->dst, a2);
			sim_fmt_qpn(lq, sizeof lq, fl->local_qpn, 0);
			opcodes_str(fl, ops, sizeof ops);
			fprintf(f, "  %s -> %s  local QPN %s, remote QPN %u, %" PRIu64 " packets  %s (%s)\n",
				a1, a2, lq, fl->dqpn, fl->pkts, ops,
				sim_qpn_method_name((enum sim_qpn_method)fl->method));
		}
		if (top && shown < quiet)
			fprintf(f, "  ... %u more\n", quiet - shown);
	}
}

/* ---- JSON ---- */
static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	/* Raw, so that 64-bit values (ns timestamps) are written exactly. */
	char b[24];
	snprintf(b, sizeof b, "%" PRIu64, v);
	cJSON_AddRawToObject(o, k, b);
}

static cJSON *flow_json(const struct sim_trace *t, uint32_t k)
{
	const struct sim_flow *fl = &t->flows[k];
	char a[46], ops[2048];
	cJSON *o = cJSON_CreateObject();
	addr_of(t, fl->src, a);
	cJSON_AddStringToObject(o, "src", a);
	addr_of(t, fl->dst, a);
	cJSON_AddStringToObject(o, "dst", a);
	cJSON_AddStringToObject(o, "transport", transport_str(fl->transports));
	add_u64(o, "remote_qpn", fl->dqpn);
	if (fl->local_qpn == SIM_NONE)
		cJSON_AddNullToObject(o, "local_qpn");
	else
		add_u64(o, "local_qpn", fl->local_qpn);
	cJSON_AddBoolToObject(o, "local_qpn_synthetic", fl->method == SIM_QPN_SYNTHETIC);
	cJSON_AddStringToObject(o, "local_qpn_from", sim_qpn_method_name((enum sim_qpn_method)fl->method));
	if (fl->peer == SIM_NONE)
		cJSON_AddNullToObject(o, "peer_flow");
	else
		add_u64(o, "peer_flow", fl->peer);
	add_u64(o, "packets", fl->pkts);
	add_u64(o, "tx_packets", fl->tx_pkts);
	add_u64(o, "tx_bytes", fl->tx_bytes);
	add_u64(o, "wire_bytes", fl->wire_bytes);
	add_u64(o, "payload_bytes", fl->payload_bytes);
	add_u64(o, "control_packets", fl->ctl_pkts);
	add_u64(o, "first_ns", fl->first_ns);
	add_u64(o, "last_ns", fl->last_ns);
	opcodes_str(fl, ops, sizeof ops);
	cJSON *arr = cJSON_AddArrayToObject(o, "opcodes");
	for (char *save = NULL, *tok = strtok_r(ops, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		cJSON_AddItemToArray(arr, cJSON_CreateString(tok));
	if (fl->qp == SIM_NONE)
		cJSON_AddNullToObject(o, "qp");
	else
		add_u64(o, "qp", fl->qp);
	return o;
}

void *sim_summary_json(struct sim_trace *t, struct sim_emu *e)
{
	const struct sim_cfg *c = &t->cfg;
	char a[46];
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "pulse.run_trace.summary.v1");
	cJSON *cap = cJSON_AddObjectToObject(root, "capture");
	cJSON_AddStringToObject(cap, "path", t->path);
	cJSON_AddStringToObject(cap, "format", t->pcapng ? "pcapng" : "pcap");
	cJSON_AddStringToObject(cap, "link", sim_link_name(t->dlt));
	add_u64(cap, "snaplen", t->snaplen);
	add_u64(cap, "first_ns", t->first_ns);
	add_u64(cap, "last_ns", t->last_ns);
	cJSON_AddBoolToObject(cap, "truncated", t->truncated);
	if (t->truncated)
		cJSON_AddStringToObject(cap, "error", t->trunc_msg);

	cJSON *pk = cJSON_AddObjectToObject(root, "packets");
	add_u64(pk, "read", t->cnt.read);
	add_u64(pk, "roce", t->cnt.roce);
	add_u64(pk, "not_roce", t->cnt.not_roce);
	add_u64(pk, "skipped", t->cnt.skipped);
	add_u64(pk, "malformed", t->cnt.malformed);
	add_u64(pk, "control", t->cnt.ctl_pkts);
	add_u64(pk, "zero_counted_bytes", t->cnt.zero_pkts);
	add_u64(pk, "untracked_flow", t->cnt.flows_untracked);
	add_u64(pk, "other_nic", t->cnt.other_nic_pkts);
	add_u64(pk, "ts_backwards", t->cnt.ts_backwards);
	add_u64(pk, "ts_backwards_max_ns", t->cnt.ts_backwards_max_ns);
	add_u64(pk, "ts_jumps", t->cnt.ts_jumps);
	add_u64(pk, "ts_jump_max_ns", t->cnt.ts_jump_max_ns);
	add_u64(pk, "windows_skipped", e ? e->windows_skipped : 0);
	cJSON *why = cJSON_AddObjectToObject(pk, "by_reason");
	for (int s = 0; s < PULSE_ROCE_STATUS_COUNT; s++)
		add_u64(why, pulse_roce_status_name((enum pulse_roce_status)s), t->cnt.status[s]);

	cJSON *cf = cJSON_AddObjectToObject(root, "config");
	add_u64(cf, "epoch_ns", c->epoch_ns);
	add_u64(cf, "poll_ns", c->poll_ns);
	add_u64(cf, "event_bytes", c->event_bytes);
	add_u64(cf, "burst_gap_ns", c->burst_gap_ns);
	cJSON_AddStringToObject(cf, "bytes", c->bytes_mode == SIM_BYTES_WIRE ? "wire" : "payload");
	add_u64(cf, "fw_flows", c->fw_flows);
	add_u64(cf, "fw_pool_blocks", c->fw_pool_blocks);
	add_u64(cf, "nic_clock_start", c->nic_clock_start);

	cJSON *qr = cJSON_AddObjectToObject(root, "qpn_recovery");
	for (int m = 0; m <= SIM_QPN_SYNTHETIC; m++)
		add_u64(qr, sim_qpn_method_name((enum sim_qpn_method)m), t->method_count[m]);
	add_u64(qr, "conflicts", t->pair_conflicts);

	cJSON *flows = cJSON_AddArrayToObject(root, "flows");
	for (uint32_t k = 0; k < t->nflows; k++)
		cJSON_AddItemToArray(flows, flow_json(t, k));

	cJSON *nics = cJSON_AddArrayToObject(root, "nics");
	cJSON **qflows = calloc(t->nqps ? t->nqps : 1, sizeof *qflows);
	for (uint32_t ni = 0; ni < t->nnics; ni++) {
		struct sim_nic *nic = &t->nics[ni];
		struct sim_emu_nic *en = e && e->nic_map && e->nic_map[ni] != SIM_NONE
						 ? &e->nics[e->nic_map[ni]] : NULL;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToArray(nics, o);
		addr_of(t, nic->host, a);
		cJSON_AddStringToObject(o, "addr", a);
		cJSON_AddBoolToObject(o, "emulated", en != NULL);
		add_u64(o, "tx_bytes", nic->tx_bytes);
		add_u64(o, "tx_packets", nic->tx_pkts);
		if (en) {
			cJSON *fw = cJSON_AddObjectToObject(o, "firmware");
			add_u64(fw, "events_sent", en->events);
			add_u64(fw, "polls", en->polls);
			add_u64(fw, "windows_incomplete", en->windows_incomplete);
			add_u64(fw, "pages_missing", en->pages_missing);
			add_u64(fw, "mailbox_exchanges", en->mailbox_exchanges);
			add_u64(fw, "upload_bytes", en->upload_bytes);
			add_u64(fw, "clock_mismatches", en->clock_mismatches);
			add_u64(fw, "unknown_qpns", en->unknown_qpns);
			add_u64(fw, "poll_errors", en->poll_errors);
			cJSON *st = cJSON_AddObjectToObject(fw, "stats");
			for (uint32_t s = 0; s < en->fw_stat_count; s++)
				add_u64(st, pulse_stat_name((enum pulse_stat)s), en->fw_stats[s]);
		}
		cJSON *qa = cJSON_AddArrayToObject(o, "qps");
		for (uint32_t qi = 0; qi < t->nqps; qi++) {
			struct sim_qp *q = &t->qps[qi];
			if (q->nic != ni)
				continue;
			cJSON *qo = cJSON_CreateObject();
			cJSON_AddItemToArray(qa, qo);
			add_u64(qo, "qpn", q->qpn);
			cJSON_AddBoolToObject(qo, "synthetic", q->synthetic);
			cJSON *fl = cJSON_AddArrayToObject(qo, "flows");
			if (qflows)
				qflows[qi] = fl;
			add_u64(qo, "tx_packets", q->tx_pkts);
			add_u64(qo, "tx_bytes", q->tx_bytes);
			add_u64(qo, "first_ns", q->first_ns);
			add_u64(qo, "last_ns", q->last_ns);
			uint64_t span = q->last_ns - q->first_ns;
			add_u64(qo, "span_ns", span);
			if (span)
				cJSON_AddNumberToObject(qo, "span_mean_gbps", gbps(q->tx_bytes, span));
			else
				cJSON_AddNullToObject(qo, "span_mean_gbps");
			if (en) {
				uint64_t act = q->active_epochs * c->epoch_ns;
				add_u64(qo, "active_ns", act);
				if (act)
					cJSON_AddNumberToObject(qo, "mean_gbps", gbps(q->meas_bytes, act));
				else
					cJSON_AddNullToObject(qo, "mean_gbps");
				add_u64(qo, "events", q->events);
				add_u64(qo, "clipped_events", q->clipped_events);
				add_u64(qo, "measured_bytes", q->meas_bytes);
				add_u64(qo, "active_epochs", q->active_epochs);
				add_u64(qo, "peak_epoch_bytes", q->peak_epoch_bytes);
				add_u64(qo, "peak_epoch_ns", q->peak_epoch_ns);
				cJSON_AddNumberToObject(qo, "peak_gbps", gbps(q->peak_epoch_bytes, c->epoch_ns));
			}
		}
	}
	if (qflows)
		for (uint32_t k = 0; k < t->nflows; k++)
			if (t->flows[k].qp != SIM_NONE && qflows[t->flows[k].qp])
				cJSON_AddItemToArray(qflows[t->flows[k].qp], cJSON_CreateNumber(k));
	free(qflows);
	return root;
}

/* ---- --out DIR ---- */
#define PART_NONE UINT64_MAX

int sim_out_open(struct sim_out *o, const char *dir, struct sim_emu *e, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	o->part_fd = -1;
	snprintf(o->dir, sizeof o->dir, "%s", dir);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "--out %s: cannot create: %s", dir, strerror(errno));
		return -1;
	}
	char p[600];
	snprintf(p, sizeof p, "%s/epochs.csv", dir);
	o->epochs_csv = fopen(p, "w");
	if (!o->epochs_csv) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		return -1;
	}
	fprintf(o->epochs_csv, "nic,qpn,synthetic,window_seq,epoch,epoch_ns,t_ns,nic_ns,bytes\n");
	snprintf(p, sizeof p, "%s/.epochs.json.part", dir);
	o->part_fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (o->part_fd < 0) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		return -1;
	}
	unlink(p); /* scratch: gone with the process */
	o->nnics = e->nnics;
	o->part_head = malloc(sizeof(uint64_t) * (e->nnics ? e->nnics : 1));
	o->part_last = malloc(sizeof(uint64_t) * (e->nnics ? e->nnics : 1));
	if (!o->part_head || !o->part_last) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < e->nnics; i++)
		o->part_head[i] = o->part_last[i] = PART_NONE;
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	const char *p = buf;
	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* A piece: u64 offset of this NIC's next piece, u32 length, the text. */
static void part_append(struct sim_out *o, uint32_t nic, const char *txt)
{
	if (o->part_fd < 0 || o->part_error)
		return;
	uint32_t len = (uint32_t)strlen(txt);
	uint64_t at = o->part_end, none = PART_NONE;
	char hdr[12];
	memcpy(hdr, &none, 8);
	memcpy(hdr + 8, &len, 4);
	if (pwrite_all(o->part_fd, hdr, sizeof hdr, at) || pwrite_all(o->part_fd, txt, len, at + 12) ||
	    (o->part_last[nic] != PART_NONE && pwrite_all(o->part_fd, &at, 8, o->part_last[nic]))) {
		o->part_error = errno ? errno : EIO;
		return;
	}
	if (o->part_head[nic] == PART_NONE)
		o->part_head[nic] = at;
	o->part_last[nic] = at;
	o->part_end = at + 12 + len;
}

int sim_out_window(void *ctx, struct sim_trace *t, struct sim_emu_nic *n,
		   const struct pulse_window *w, uint64_t win_start_cap_ns)
{
	struct sim_out *o = ctx;
	char a[46];
	addr_of(t, t->nics[n->nic].host, a);
	cJSON *wo = cJSON_CreateObject();
	if (!wo)
		return -1;
	add_u64(wo, "window_seq", w->window_seq);
	add_u64(wo, "nic_start_ns", w->nic_start_ns);
	add_u64(wo, "nic_end_ns", w->nic_end_ns);
	add_u64(wo, "host_send_ns", w->host_send_ns);
	add_u64(wo, "host_recv_ns", w->host_recv_ns);
	add_u64(wo, "t_start_ns", win_start_cap_ns);
	add_u64(wo, "epoch_ns", w->epoch_ns);
	cJSON_AddBoolToObject(wo, "complete", w->complete);
	add_u64(wo, "pages_missing", w->pages_missing);
	add_u64(wo, "flows_aged", w->flows_aged);
	add_u64(wo, "poll_flags", w->poll_flags);
	cJSON *fa = cJSON_AddArrayToObject(wo, "flows");
	for (uint32_t i = 0; i < w->flow_count; i++) {
		const struct pulse_qp_series *s = &w->flows[i];
		uint32_t qi = sim_trace_find_qp(t, n->nic, s->qpn);
		int syn = qi != SIM_NONE && t->qps[qi].synthetic;
		cJSON *fo = cJSON_CreateObject();
		cJSON_AddItemToArray(fa, fo);
		add_u64(fo, "qpn", s->qpn);
		cJSON_AddBoolToObject(fo, "synthetic", syn);
		add_u64(fo, "total_bytes", s->total_bytes);
		cJSON *ea = cJSON_AddArrayToObject(fo, "epochs");
		cJSON *ba = cJSON_AddArrayToObject(fo, "bytes");
		for (uint32_t k = 0; k < s->count; k++) {
			cJSON_AddItemToArray(ea, cJSON_CreateNumber(s->epoch[k]));
			cJSON_AddItemToArray(ba, cJSON_CreateNumber((double)s->bytes[k]));
			uint64_t off = (uint64_t)s->epoch[k] * w->epoch_ns;
			fprintf(o->epochs_csv, "%s,%u,%d,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
				a, s->qpn, syn, w->window_seq, s->epoch[k], w->epoch_ns,
				win_start_cap_ns + off, w->nic_start_ns + off, s->bytes[k]);
		}
	}
	char *txt = cJSON_PrintUnformatted(wo);
	cJSON_Delete(wo);
	if (!txt)
		return -1;
	part_append(o, (uint32_t)(n - n->emu->nics), txt);
	free(txt);
	return ferror(o->epochs_csv) || o->part_error ? -1 : 0;
}

static int write_json(const char *path, cJSON *j, char *err, size_t errlen)
{
	char *txt = cJSON_Print(j);
	FILE *f = fopen(path, "w");
	int bad = !txt || !f || fputs(txt, f) < 0 || fputc('\n', f) < 0;
	if (f && fclose(f) != 0)
		bad = 1;
	free(txt);
	if (bad)
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
	return bad ? -1 : 0;
}

/* A JSON string, escaped by cJSON. */
static void put_json_str(FILE *f, const char *s)
{
	cJSON *x = cJSON_CreateString(s);
	char *txt = x ? cJSON_PrintUnformatted(x) : NULL;
	fputs(txt ? txt : "null", f);
	free(txt);
	cJSON_Delete(x);
}

/* epochs.json from the pieces, NIC by NIC, in window order. */
static int assemble_epochs_json(struct sim_out *o, struct sim_emu *e, char *err, size_t errlen)
{
	char p[600], tmp[620];
	snprintf(p, sizeof p, "%s/epochs.json", o->dir);
	snprintf(tmp, sizeof tmp, "%s/.epochs.json.tmp", o->dir);
	if (o->part_error) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(o->part_error));
		return -1;
	}
	FILE *f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		return -1;
	}
	fputs("{\"schema\":\"pulse.epochs.v1\",\"source\":\"run_trace\",\"capture\":", f);
	put_json_str(f, e->t->path);
	fprintf(f, ",\"epoch_ns\":%" PRIu32 ",\"nics\":[", e->t->cfg.epoch_ns);
	char *buf = NULL;
	size_t cap = 0;
	int bad = 0;
	for (uint32_t i = 0; i < e->nnics && !bad; i++) {
		char a[46];
		addr_of(e->t, e->t->nics[e->nics[i].nic].host, a);
		fputs(i ? ",{\"nic\":" : "{\"nic\":", f);
		put_json_str(f, a);
		fputs(",\"platform\":\"x86-sim\",\"windows\":[", f);
		int first = 1;
		for (uint64_t at = o->part_head[i]; at != PART_NONE && !bad;) {
			char hdr[12];
			uint64_t next;
			uint32_t len;
			if (pread(o->part_fd, hdr, 12, (off_t)at) != 12) {
				bad = 1;
				break;
			}
			memcpy(&next, hdr, 8);
			memcpy(&len, hdr + 8, 4);
			if (len + 1 > cap) {
				char *nb = realloc(buf, len + 1);
				if (!nb) {
					bad = 1;
					break;
				}
				buf = nb;
				cap = len + 1;
			}
			if (pread(o->part_fd, buf, len, (off_t)(at + 12)) != (ssize_t)len) {
				bad = 1;
				break;
			}
			if (!first)
				fputc(',', f);
			first = 0;
			fwrite(buf, 1, len, f);
			at = next;
		}
		fputs("]}", f);
	}
	free(buf);
	fputs("]}\n", f);
	if (ferror(f))
		bad = 1;
	if (fclose(f) != 0)
		bad = 1;
	if (!bad && rename(tmp, p) != 0)
		bad = 1;
	if (bad) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int sim_out_close(struct sim_out *o, struct sim_emu *e, char *err, size_t errlen)
{
	int rc = 0;
	char p[600];
	if (o->epochs_csv && fclose(o->epochs_csv) != 0) {
		snprintf(err, errlen, "%s/epochs.csv: %s", o->dir, strerror(errno));
		rc = -1;
	}
	o->epochs_csv = NULL;
	if (o->part_fd >= 0) {
		if (assemble_epochs_json(o, e, err, errlen))
			rc = -1;
		close(o->part_fd);
		o->part_fd = -1;
	}
	free(o->part_head);
	free(o->part_last);
	o->part_head = o->part_last = NULL;
	/* flows.csv and summary.json */
	struct sim_trace *t = e->t;
	snprintf(p, sizeof p, "%s/flows.csv", o->dir);
	FILE *f = fopen(p, "w");
	if (!f) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		return -1;
	}
	/* the JSON flow fields in their order, then the QP's measured bytes */
	fprintf(f, "src,dst,transport,remote_qpn,local_qpn,local_qpn_synthetic,local_qpn_from,"
		   "peer_flow,packets,tx_packets,tx_bytes,wire_bytes,payload_bytes,control_packets,"
		   "first_ns,last_ns,opcodes,qp,measured_bytes,peak_epoch_bytes\n");
	for (uint32_t k = 0; k < t->nflows; k++) {
		const struct sim_flow *fl = &t->flows[k];
		char s[46], d[46], lq[16], ops[2048];
		addr_of(t, fl->src, s);
		addr_of(t, fl->dst, d);
		if (fl->local_qpn == SIM_NONE)
			lq[0] = 0;
		else
			snprintf(lq, sizeof lq, "%u", fl->local_qpn);
		opcodes_str(fl, ops, sizeof ops);
		for (char *c = ops; *c; c++)
			if (*c == ',')
				*c = ';';
		const struct sim_qp *q = fl->qp == SIM_NONE ? NULL : &t->qps[fl->qp];
		char pf[16] = "", qs[16] = "";
		if (fl->peer != SIM_NONE)
			snprintf(pf, sizeof pf, "%u", fl->peer);
		if (fl->qp != SIM_NONE)
			snprintf(qs, sizeof qs, "%u", fl->qp);
		fprintf(f, "%s,%s,%s,%u,%s,%d,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s,%" PRIu64 ",%" PRIu64 "\n",
			s, d, transport_str(fl->transports), fl->dqpn, lq,
			fl->method == SIM_QPN_SYNTHETIC,
			sim_qpn_method_name((enum sim_qpn_method)fl->method), pf, fl->pkts, fl->tx_pkts,
			fl->tx_bytes, fl->wire_bytes, fl->payload_bytes, fl->ctl_pkts, fl->first_ns,
			fl->last_ns, ops, qs, q ? q->meas_bytes : 0, q ? q->peak_epoch_bytes : 0);
	}
	if (fclose(f) != 0) {
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		rc = -1;
	}
	cJSON *sum = sim_summary_json(t, e);
	snprintf(p, sizeof p, "%s/summary.json", o->dir);
	if (write_json(p, sum, err, errlen))
		rc = -1;
	cJSON_Delete(sum);
	return rc;
}
