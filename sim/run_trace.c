/* run_trace: replays a RoCEv2 capture through the Pulse NIC agent firmware
 * core, one emulated NIC per sending address, polled through the mailbox
 * protocol exactly as the host agent polls a real NIC. See sim/README.md. */
#define _GNU_SOURCE
#include <cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "serve.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: run_trace [options] FILE\n"
"       run_trace --serve SOCKET [--speed X] [--loop] [options] FILE\n"
"\n"
"Replays a RoCEv2 capture (pcap or pcapng; Ethernet with or without 802.1Q,\n"
"Linux cooked, raw IP; IPv4 or IPv6) through the Pulse NIC agent firmware core.\n"
"Every sending NIC (source IP/GID) gets its own firmware instance; each QP's\n"
"transmitted bytes become TX events (one per --event-bytes, coalesced like the\n"
"NIC); the firmware is polled through the mailbox protocol every --poll of\n"
"capture time. Prints the flows found, their QPNs, volumes and rates.\n"
"\n"
"options:\n"
"  --epoch DUR        epoch length, 8us..1024us (default 32us; bare number: us)\n"
"  --poll DUR         poll period of capture time, 1ms..2s (default 1s; bare: ms)\n"
"  --event-bytes N    bytes per TX event and QP, 32..16777216 (default 4096)\n"
"  --burst-gap DUR    a QP idle this long ends its burst: its pending bytes go out\n"
"                     as an event stamped at its last packet (default 10us; 0: off)\n"
"  --bytes wire|payload  what the NIC counts: Ethernet frames without FCS (default)\n"
"                     or the IB payload only\n"
"  --nic ADDR         emulate only the NIC with this source IPv4/IPv6 address\n"
"  --out DIR          write flows.csv, epochs.csv, epochs.json, summary.json\n"
"  --json             print the summary as JSON instead of text\n"
"  --top N            QPs listed per NIC in the text summary (default 50; 0: all)\n"
"  --fw-flows N       firmware flow slots per NIC, 1..65535 (default 4096)\n"
"  --fw-pool-blocks N firmware epoch-pool blocks per NIC (default 65536 = 8 MiB)\n"
"  --nic-clock NS     32-bit NIC clock at the first packet (default 0); the clock\n"
"                     wraps every 4.29 s like the NIC's\n"
"  --max-flows N      flows the replay tracks (default 4194304)\n"
"  --max-nics N       NICs emulated, busiest first; each needs ~40 MiB (default 64)\n"
"  --replay-mem N     bytes pass 1 may keep (16 per packet) so that pass 2 need not\n"
"                     read the file again (default 1073741824; 0: read it again)\n"
"  --strict           exit 5 if packets were malformed or timestamps went back\n"
"serve mode (the simulated NIC for a separate host agent):\n"
"  --serve SOCKET     serve the firmware of one NIC (--nic, default: the busiest)\n"
"                     over a Unix socket with the mailbox protocol\n"
"  --speed X          replay X times faster than real time (default 1)\n"
"  --loop             start the capture again when it ends\n"
"  --exit-after DUR   stop serving after this much wall time (default: never)\n"
"  -h, --help         this text\n"
"\n"
"exit status: 0 ok; 1 runtime failure; 2 bad usage; 3 unreadable, wrong magic,\n"
"unsupported link type or zero snaplen; 4 file truncated (results cover what was\n"
"read); 5 --strict and malformed packets or timestamps going backwards.\n");
}

enum {
	O_EPOCH = 256, O_POLL, O_EVENT_BYTES, O_BURST_GAP, O_BYTES, O_NIC, O_OUT, O_JSON, O_TOP,
	O_FW_FLOWS, O_FW_POOL, O_NIC_CLOCK, O_MAX_FLOWS, O_MAX_NICS, O_STRICT, O_SERVE, O_SPEED,
	O_LOOP, O_EXIT_AFTER, O_REPLAY_MEM,
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "run_trace: %s %s: %s (see --help)\n", opt, val ? val : "", why);
	return SIM_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"epoch", required_argument, 0, O_EPOCH},
		{"poll", required_argument, 0, O_POLL},
		{"event-bytes", required_argument, 0, O_EVENT_BYTES},
		{"burst-gap", required_argument, 0, O_BURST_GAP},
		{"bytes", required_argument, 0, O_BYTES},
		{"nic", required_argument, 0, O_NIC},
		{"out", required_argument, 0, O_OUT},
		{"json", no_argument, 0, O_JSON},
		{"top", required_argument, 0, O_TOP},
		{"fw-flows", required_argument, 0, O_FW_FLOWS},
		{"fw-pool-blocks", required_argument, 0, O_FW_POOL},
		{"nic-clock", required_argument, 0, O_NIC_CLOCK},
		{"max-flows", required_argument, 0, O_MAX_FLOWS},
		{"max-nics", required_argument, 0, O_MAX_NICS},
		{"strict", no_argument, 0, O_STRICT},
		{"serve", required_argument, 0, O_SERVE},
		{"speed", required_argument, 0, O_SPEED},
		{"loop", no_argument, 0, O_LOOP},
		{"exit-after", required_argument, 0, O_EXIT_AFTER},
		{"replay-mem", required_argument, 0, O_REPLAY_MEM},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	struct sim_cfg cfg;
	sim_cfg_default(&cfg);
	const char *out_dir = NULL, *serve_path = NULL;
	int json = 0, strict = 0, loop = 0;
	uint64_t top = 50, v, exit_after_ns = 0;
	double speed = 1.0;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *o = argv[optind - 1];
		switch (c) {
		case O_EPOCH:
			if (sim_parse_duration(optarg, 1000, &v) || v < PULSE_EPOCH_NS_MIN ||
			    v > PULSE_EPOCH_NS_MAX)
				return bad("--epoch", optarg, "must be a duration from 8us to 1024us");
			cfg.epoch_ns = (uint32_t)v;
			break;
		case O_POLL:
			if (sim_parse_duration(optarg, 1000000, &v) || v < PULSE_WINDOW_NS_MIN ||
			    v > PULSE_WINDOW_NS_MAX)
				return bad("--poll", optarg, "must be a duration from 1ms to 2s");
			cfg.poll_ns = v;
			break;
		case O_EVENT_BYTES:
			if (sim_parse_u64(optarg, &v) || v < 32 || v > (16u << 20))
				return bad("--event-bytes", optarg, "must be 32..16777216");
			cfg.event_bytes = (uint32_t)v;
			break;
		case O_BURST_GAP:
			if (sim_parse_duration(optarg, 1000, &v) || v > 1000000000ull)
				return bad("--burst-gap", optarg, "must be a duration up to 1s");
			cfg.burst_gap_ns = v;
			break;
		case O_BYTES:
			if (!strcmp(optarg, "wire"))
				cfg.bytes_mode = SIM_BYTES_WIRE;
			else if (!strcmp(optarg, "payload"))
				cfg.bytes_mode = SIM_BYTES_PAYLOAD;
			else
				return bad("--bytes", optarg, "must be wire or payload");
			break;
		case O_NIC:
			if (pulse_roce_addr_parse(optarg, cfg.nic_addr))
				return bad("--nic", optarg, "not an IPv4 or IPv6 address");
			cfg.nic_filter = 1;
			break;
		case O_OUT:
			out_dir = optarg;
			break;
		case O_JSON:
			json = 1;
			break;
		case O_TOP:
			if (sim_parse_u64(optarg, &top) || top > 0xFFFFFFFFull)
				return bad("--top", optarg, "must be a number");
			break;
		case O_FW_FLOWS:
			if (sim_parse_u64(optarg, &v) || v < 1 || v > PULSE_FW_MAX_FLOWS)
				return bad("--fw-flows", optarg, "must be 1..65535");
			cfg.fw_flows = (uint32_t)v;
			break;
		case O_FW_POOL:
			if (sim_parse_u64(optarg, &v) || v < 1 || v > (64u << 20))
				return bad("--fw-pool-blocks", optarg, "must be 1..67108864");
			cfg.fw_pool_blocks = (uint32_t)v;
			break;
		case O_NIC_CLOCK:
			if (sim_parse_u64(optarg, &v) || v > 0xFFFFFFFFull)
				return bad("--nic-clock", optarg, "must be a 32-bit number of ns");
			cfg.nic_clock_start = (uint32_t)v;
			break;
		case O_MAX_FLOWS:
			if (sim_parse_u64(optarg, &v) || v < 1 || v > (64u << 20))
				return bad("--max-flows", optarg, "must be 1..67108864");
			cfg.max_flows = (uint32_t)v;
			break;
		case O_MAX_NICS:
			if (sim_parse_u64(optarg, &v) || v < 1 || v > 4096)
				return bad("--max-nics", optarg, "must be 1..4096");
			cfg.max_nics = (uint32_t)v;
			break;
		case O_STRICT:
			strict = 1;
			break;
		case O_SERVE:
			serve_path = optarg;
			break;
		case O_SPEED: {
			char *end;
			speed = strtod(optarg, &end);
			if (*end || !(speed > 0) || speed > 1e9)
				return bad("--speed", optarg, "must be a positive factor");
			break;
		}
		case O_LOOP:
			loop = 1;
			break;
		case O_REPLAY_MEM:
			if (sim_parse_u64(optarg, &v))
				return bad("--replay-mem", optarg, "must be a number of bytes");
			cfg.log_budget = v;
			break;
		case O_EXIT_AFTER:
			if (sim_parse_duration(optarg, 1000000000ull, &exit_after_ns) || !exit_after_ns)
				return bad("--exit-after", optarg, "must be a positive duration");
			break;
		case 'h':
			usage(stdout);
			return SIM_EXIT_OK;
		default:
			return bad(argv[optind - 1], NULL, optopt ? "missing value" : "unknown option");
		}
		(void)o;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "run_trace: %s\n", optind >= argc ? "no capture file given"
								 : "more than one capture file given");
		usage(stderr);
		return SIM_EXIT_USAGE;
	}
	if (cfg.poll_ns < cfg.epoch_ns)
		return bad("--poll", NULL, "must be at least one epoch");
	const char *path = argv[optind];

	char err[600] = "";
	struct sim_trace t;
	sim_trace_init(&t, &cfg);
	int rc = sim_trace_scan(&t, path, err, sizeof err);
	if (rc == SIM_EXIT_BAD_FILE || rc == SIM_EXIT_RUNTIME) {
		fprintf(stderr, "run_trace: error: %s\n", err);
		sim_trace_free(&t);
		return rc;
	}
	int scan_rc = rc;
	if (scan_rc == SIM_EXIT_TRUNCATED)
		fprintf(stderr, "run_trace: warning: %s; replaying the %llu records before it\n", err,
			(unsigned long long)t.cnt.read);
	if (cfg.nic_filter) {
		uint32_t h = sim_trace_find_host(&t, cfg.nic_addr);
		if (h == SIM_NONE || t.hosts[h].nic == SIM_NONE) {
			char a[46];
			fprintf(stderr, "run_trace: --nic %s: no such sending NIC in %s; sending NICs:",
				pulse_roce_addr_str(cfg.nic_addr, a), path);
			for (uint32_t i = 0; i < t.nnics; i++)
				fprintf(stderr, " %s", pulse_roce_addr_str(t.hosts[t.nics[i].host].addr, a));
			fprintf(stderr, "%s\n", t.nnics ? "" : " none");
			sim_trace_free(&t);
			return SIM_EXIT_USAGE;
		}
	}

	if (serve_path) {
		struct sim_serve_opts so = {
			.socket_path = serve_path,
			.capture = path,
			.speed = speed,
			.loop = loop,
			.exit_after_ns = exit_after_ns,
		};
		rc = sim_serve(&t, &so, err, sizeof err);
		if (rc)
			fprintf(stderr, "run_trace: serve: %s\n", err);
		sim_trace_free(&t);
		return rc;
	}

	struct sim_emu e;
	if (sim_emu_init(&e, &t, t.first_ns, err, sizeof err)) {
		fprintf(stderr, "run_trace: error: %s\n", err);
		sim_emu_free(&e);
		sim_trace_free(&t);
		return SIM_EXIT_RUNTIME;
	}
	struct sim_out out;
	int have_out = 0;
	if (out_dir) {
		if (sim_out_open(&out, out_dir, &e, err, sizeof err)) {
			fprintf(stderr, "run_trace: error: %s\n", err);
			sim_emu_free(&e);
			sim_trace_free(&t);
			return SIM_EXIT_RUNTIME;
		}
		have_out = 1;
		e.on_window = sim_out_window;
		e.on_window_ctx = &out;
	}
	rc = sim_replay(&e, path, err, sizeof err);
	if (t.cnt.ts_jumps)
		fprintf(stderr, "run_trace: warning: timestamps jump forward %llu times, by up to %.3f s "
				"(first at record %llu): %llu empty windows skipped\n",
			(unsigned long long)t.cnt.ts_jumps, (double)t.cnt.ts_jump_max_ns / 1e9,
			(unsigned long long)t.cnt.ts_jump_first_rec, (unsigned long long)e.windows_skipped);
	int final = SIM_EXIT_OK;
	if (rc == SIM_EXIT_RUNTIME || rc == SIM_EXIT_BAD_FILE) {
		fprintf(stderr, "run_trace: error: %s\n", err);
		final = rc;
	}
	if (json) {
		cJSON *j = sim_summary_json(&t, &e);
		char *txt = cJSON_Print(j);
		if (txt)
			puts(txt);
		free(txt);
		cJSON_Delete(j);
	} else {
		sim_print_summary(stdout, &t, &e, (uint32_t)top);
	}
	if (have_out && sim_out_close(&out, &e, err, sizeof err)) {
		fprintf(stderr, "run_trace: error: %s\n", err);
		if (!final)
			final = SIM_EXIT_RUNTIME;
	}
	for (uint32_t i = 0; i < e.nnics; i++) {
		struct sim_emu_nic *n = &e.nics[i];
		if ((n->clock_mismatches || n->unknown_qpns || n->poll_errors) && !final) {
			fprintf(stderr, "run_trace: error: the firmware's windows or QPNs disagree with "
					"the replay (see the summary)\n");
			final = SIM_EXIT_RUNTIME;
		}
	}
	if (!final && scan_rc == SIM_EXIT_TRUNCATED)
		final = SIM_EXIT_TRUNCATED;
	if (!final && strict && t.cnt.ts_jumps) {
		fprintf(stderr, "run_trace: --strict: timestamps jump forward (corrupt capture?)\n");
		final = SIM_EXIT_TRUNCATED;
	}
	if (!final && strict && (t.cnt.malformed || t.cnt.ts_backwards)) {
		fprintf(stderr, "run_trace: --strict: %llu malformed packets, timestamps went back %llu "
				"times\n", (unsigned long long)t.cnt.malformed,
			(unsigned long long)t.cnt.ts_backwards);
		final = SIM_EXIT_STRICT;
	}
	fflush(stdout);
	sim_emu_free(&e);
	sim_trace_free(&t);
	return final;
}
