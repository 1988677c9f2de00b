/* pulse-host-agent: command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static const char usage[] =
"usage: pulse-host-agent (--sim [DEV=]SOCKET | --device IBDEV)... [options]\n"
"       pulse-host-agent --replay DIR [--host H] [--out FILE] [options]\n"
"\n"
"Polls the Pulse NIC agent of each NIC every poll period, keeps the last\n"
"seconds of per-QP microsecond epochs in memory, and exports summaries and\n"
"its own health.\n"
"\n"
"NICs (repeatable, up to 16 in all):\n"
"  --sim [DEV=]SOCKET  a simulated NIC served by `sim/run_trace --serve SOCKET FILE`;\n"
"                      DEV (e.g. mlx5_0) names the device whose QPs it carries,\n"
"                      so that intercepted QPs are tied to its windows\n"
"  --device IBDEV      a BlueField-3 through DOCA PCC (e.g. mlx5_0); needs a build\n"
"                      with the DOCA SDK (see docs/hardware.md)\n"
"  --device auto       every DOCA device with PCC (the default when the build has the\n"
"                      DOCA SDK and no NIC is named)\n"
"This host's RDMA devices (sysfs, libibverbs, netlink):\n"
"  --list-devices      print the RDMA devices found (ports, state, GIDs and their type,\n"
"                      netdevs, PCI, NUMA, PCIe link width and speed) and the findings\n"
"                      (PCIe link below capability), then exit\n"
"  --sysfs-root DIR    read sysfs from DIR instead of /sys (tests; libibverbs is then\n"
"                      not asked)\n"
"  --netdev IF         also report link up/down of IF (repeatable); the RDMA devices'\n"
"                      netdevs are always watched. With only --netdev and no NIC, the\n"
"                      agent runs to watch links and the kernel's QPs\n"
"  --no-netlink        neither link events nor the kernel's RDMA netlink QP list\n"
"Replay (no NIC; faster than real time):\n"
"  --replay DIR        run the hosts of a sim/run_cluster directory through the same\n"
"                      code as live operation: each DIR/hosts/H/<dev>.evs feeds an\n"
"                      in-process firmware core polled through the mailbox at every\n"
"                      POLL record (host times from the record), the hook-<pid>.rec\n"
"                      files stand for the interception rings, and the QP join uses\n"
"                      every host's records; --epoch and --poll default to the run's\n"
"                      With --bus: every host in a process of its own (as the\n"
"                      agents of a real cluster), publishing to the job's streams\n"
"  --speed X           replay at X times real time (host time of the run against\n"
"                      wall time; default: as fast as it goes)\n"
"  --host H            replay only host H (default: every host, one after another);\n"
"                      --out may contain {host} for one file per host\n"
"  --series-query FROM_NS:TO_NS  with --host: at the end of the replay, answer this\n"
"                      request for the retained per-QP epoch series (host times) as\n"
"                      the live agent answers the analyzer's SERIES_REQ\n"
"  --series-out FILE   where that answer goes (one SERIES payload, analyzer/PROTOCOL.md)\n"
"Identity and the analyzer:\n"
"  --host-name NAME    this host's name in \"op\" records and to the analyzer\n"
"                      (default: gethostname; in replay: the replayed host's name)\n"
"  --analyzer HOST:PORT  also send every line to pulse-analyzer --listen (reconnects\n"
"                      with backoff, bounded queue; the analyzer's QP join of all\n"
"                      hosts comes back and names the remote ends of local QPs)\n"
"  --bus nats://HOST:PORT[,...]  also publish each poll's operator records (binary,\n"
"                      zstd) and the host's QP map to the job's NATS JetStream\n"
"                      streams (pulse-analyzer --bus consumes them); queued while\n"
"                      the servers are unreachable (64 MiB, drops counted)\n"
"  --job ID            job id given to the analyzer and the bus (default \"default\")\n"
"  --sim-clock FILE    this host's clock is a simulated one (pulse-cluster-serve writes\n"
"                      FILE): host times come from it and the poll period is in its\n"
"                      time, so a cluster replayed at N x real time is polled N x\n"
"                      as often in wall time\n"
"  --sim-links FILE    with --sim-clock: this simulated host's link events (the\n"
"                      \"link\" lines pulse-cluster-serve writes, on that clock), given\n"
"                      out when the clock reaches them, as the link watcher gives a\n"
"                      real host's: a simulated NIC has no netdev to watch\n"
"  --hang DUR          an operator not complete this long after its call (or first\n"
"                      byte) is reported hung (default 5s); a replay can only report\n"
"                      hangs its recording covers, so short runs need a short bound\n"
"Polling:\n"
"  --poll DUR          poll period, 1ms..2s (default 1s; e.g. 200ms, 500ms, 2s)\n"
"  --epoch DUR         epoch length configured on the NIC, 8us..1024us (default 32us)\n"
"  --page-bytes N      upload page size asked for, 256..65535 (default 4096)\n"
"  --timeout DUR       limit for every mailbox exchange (default: a quarter of the\n"
"                      poll period, at most 1s)\n"
"Output:\n"
"  --out FILE          JSON lines (default: stdout; '-': stdout): one \"window\" per poll\n"
"                      per NIC, interception records, and one \"op\" per measured\n"
"                      communication operator (include/pulse/op_record.h)\n"
"  --log FILE          log file (default: stderr), one line per event\n"
"  --metrics-listen ADDR:PORT  OpenMetrics endpoint, e.g. 127.0.0.1:9464 (GET /metrics)\n"
"Retention:\n"
"  --retain DUR        keep the last DUR of epochs (default 30s)\n"
"  --retain-mem SIZE   hard memory cap of the retention ring (default 256M); the\n"
"                      oldest windows are dropped first, and counted\n"
"  --dump-path DIR     where SIGUSR1 dumps the ring (epochs.csv, epochs.json)\n"
"  --control SOCKET    local command socket; commands: \"dump DIR\", \"stats\"\n"
"Daemon:\n"
"  --lock-dir DIR      lock files, one per NIC (default /run/pulse-host-agent)\n"
"  --exit-after DUR    stop after DUR (tests, benchmarks)\n"
"  --max-polls N       stop after N poll periods\n"
"  --no-windows        write no JSON lines (benchmarks)\n"
"  --hook-dir DIR      look for interception rings (libpulse-hook.so,\n"
"                      pulse-hook.<pid>) in DIR instead of /dev/shm: entries there\n"
"                      name the pids whose /dev/shm rings are drained (tests)\n"
"  --no-hooks          do not drain interception rings\n"
"  -h, --help\n"
"\n"
"Signals: SIGTERM/SIGINT stop cleanly (outputs flushed), SIGHUP reopens --log and\n"
"--out, SIGUSR1 dumps the retained window to --dump-path.\n"
"\n"
"Without hardware, run against the simulator:\n"
"  sim/run_trace --serve /tmp/nic0.sock --loop tests/traces/ring.pcap &\n"
"  pulse-host-agent --sim /tmp/nic0.sock --poll 1s\n";

int agent_parse_duration(const char *s, uint64_t unit, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0))
		return -1;
	double mul;
	if (!*end)
		mul = (double)unit;
	else if (!strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s"))
		mul = 1e9;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mul = 60e9;
	else
		return -1;
	double ns = v * mul;
	if (ns > 1e18)
		return -1;
	*out = (uint64_t)(ns + 0.5);
	return 0;
}

int agent_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0))
		return -1;
	double mul = 1;
	if (*end == 'K' || *end == 'k')
		mul = 1024.0, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024.0 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024.0 * 1024 * 1024, end++;
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v * mul > 1e15)
		return -1;
	*out = (uint64_t)(v * mul);
	return 0;
}

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "pulse-host-agent: %s %s: %s\n", opt, val, why);
	return 2;
}

enum {
	O_SIM = 256, O_DEVICE, O_POLL, O_EPOCH, O_PAGE, O_TIMEOUT, O_OUT, O_LOG, O_METRICS,
	O_RETAIN, O_RETAIN_MEM, O_DUMP, O_CONTROL, O_LOCKDIR, O_EXIT_AFTER, O_MAX_POLLS, O_NOWIN,
	O_HOOK_DIR, O_NO_HOOKS, O_REPLAY, O_HOST, O_HOST_NAME, O_ANALYZER, O_JOB, O_BUS, O_SPEED, O_HANG, O_SIM_CLOCK, O_SIM_LINKS,
	O_LIST_DEVICES, O_SYSFS_ROOT, O_NETDEV, O_NO_NETLINK, O_SERIES_QUERY, O_SERIES_OUT
};

int agent_parse_options(struct agent_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{"sim", required_argument, 0, O_SIM},
		{"device", required_argument, 0, O_DEVICE},
		{"poll", required_argument, 0, O_POLL},
		{"epoch", required_argument, 0, O_EPOCH},
		{"page-bytes", required_argument, 0, O_PAGE},
		{"timeout", required_argument, 0, O_TIMEOUT},
		{"out", required_argument, 0, O_OUT},
		{"log", required_argument, 0, O_LOG},
		{"metrics-listen", required_argument, 0, O_METRICS},
		{"retain", required_argument, 0, O_RETAIN},
		{"retain-mem", required_argument, 0, O_RETAIN_MEM},
		{"dump-path", required_argument, 0, O_DUMP},
		{"control", required_argument, 0, O_CONTROL},
		{"lock-dir", required_argument, 0, O_LOCKDIR},
		{"exit-after", required_argument, 0, O_EXIT_AFTER},
		{"max-polls", required_argument, 0, O_MAX_POLLS},
		{"no-windows", no_argument, 0, O_NOWIN},
		{"hook-dir", required_argument, 0, O_HOOK_DIR},
		{"no-hooks", no_argument, 0, O_NO_HOOKS},
		{"replay", required_argument, 0, O_REPLAY},
		{"host", required_argument, 0, O_HOST},
		{"series-query", required_argument, 0, O_SERIES_QUERY},
		{"series-out", required_argument, 0, O_SERIES_OUT},
		{"host-name", required_argument, 0, O_HOST_NAME},
		{"analyzer", required_argument, 0, O_ANALYZER},
		{"job", required_argument, 0, O_JOB},
		{"bus", required_argument, 0, O_BUS},
		{"speed", required_argument, 0, O_SPEED},
		{"hang", required_argument, 0, O_HANG},
		{"sim-clock", required_argument, 0, O_SIM_CLOCK},
		{"sim-links", required_argument, 0, O_SIM_LINKS},
		{"list-devices", no_argument, 0, O_LIST_DEVICES},
		{"sysfs-root", required_argument, 0, O_SYSFS_ROOT},
		{"netdev", required_argument, 0, O_NETDEV},
		{"no-netlink", no_argument, 0, O_NO_NETLINK},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	memset(o, 0, sizeof *o);
	o->poll_ns = 1000000000ull;
	o->epoch_ns = PULSE_EPOCH_NS_DEFAULT;
	o->page_bytes = 4096;
	o->retain_ns = 30000000000ull;
	o->retain_mem = 256ull << 20;
	o->lock_dir = "/run/pulse-host-agent";
	uint64_t v;
	int timeout_set = 0;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_LIST_DEVICES: o->list_devices = 1; break;
		case O_SYSFS_ROOT:
			if (!*optarg)
				return bad("--sysfs-root", "''", "empty path");
			o->sysfs_root = optarg;
			break;
		case O_NETDEV:
			if (!*optarg || strlen(optarg) >= 16 || strchr(optarg, '/'))
				return bad("--netdev", optarg, "must be a netdev name of 1..15 characters");
			if (o->nnetdevs == AGENT_MAX_NICS)
				return bad("--netdev", optarg, "too many (at most 16)");
			o->netdevs[o->nnetdevs++] = optarg;
			break;
		case O_NO_NETLINK: o->no_netlink = 1; break;
		case O_DEVICE:
			if (!strcmp(optarg, "auto")) {
				o->device_auto = 1;
				break;
			}
			/* fall through */
		case O_SIM:
			if (o->nnics == AGENT_MAX_NICS)
				return bad(c == O_SIM ? "--sim" : "--device", optarg,
					   "too many NICs (at most 16)");
			if (!*optarg)
				return bad(c == O_SIM ? "--sim" : "--device", "''", "empty name");
			o->kind[o->nnics] = c == O_SIM ? NIC_SIM : NIC_DOCA;
			o->target[o->nnics] = optarg;
			o->dev[o->nnics] = c == O_DEVICE ? optarg : NULL;
			if (c == O_SIM) {
				/* DEV=SOCKET: a device name has no '/' and is short */
				char *eq = strchr(optarg, '=');
				if (eq && eq > optarg && (size_t)(eq - optarg) < 21 &&
				    !memchr(optarg, '/', (size_t)(eq - optarg))) {
					if (!eq[1])
						return bad("--sim", optarg, "no socket after DEV=");
					static char devs[AGENT_MAX_NICS][24];
					snprintf(devs[o->nnics], sizeof devs[0], "%.*s", (int)(eq - optarg),
						 optarg);
					o->dev[o->nnics] = devs[o->nnics];
					o->target[o->nnics] = eq + 1;
				}
			}
			o->nnics++;
			break;
		case O_POLL:
			if (agent_parse_duration(optarg, 1000000, &v) || v < 1000000 || v > 2000000000)
				return bad("--poll", optarg, "must be a duration from 1ms to 2s (e.g. 500ms, 1s)");
			o->poll_ns = v;
			o->poll_set = 1;
			break;
		case O_EPOCH:
			if (agent_parse_duration(optarg, 1000, &v) || v < PULSE_EPOCH_NS_MIN ||
			    v > PULSE_EPOCH_NS_MAX)
				return bad("--epoch", optarg, "must be from 8us to 1024us");
			o->epoch_ns = (uint32_t)v;
			o->epoch_set = 1;
			break;
		case O_PAGE:
			v = strtoull(optarg, NULL, 10);
			if (v < PULSE_PAGE_BYTES_MIN || v > 65535)
				return bad("--page-bytes", optarg, "must be 256..65535");
			o->page_bytes = (uint32_t)v;
			break;
		case O_TIMEOUT:
			if (agent_parse_duration(optarg, 1000000, &v) || v < 1000000 || v > 60000000000ull)
				return bad("--timeout", optarg, "must be a duration from 1ms to 60s");
			o->timeout_ms = (uint32_t)(v / 1000000);
			timeout_set = 1;
			break;
		case O_OUT: o->out_path = optarg; break;
		case O_LOG: o->log_path = optarg; break;
		case O_METRICS: o->metrics_listen = optarg; break;
		case O_RETAIN:
			if (agent_parse_duration(optarg, 1000000000, &v) || v == 0 ||
			    v > 86400000000000ull)
				return bad("--retain", optarg, "must be a duration from 1ns to 1 day (e.g. 30s)");
			o->retain_ns = v;
			break;
		case O_RETAIN_MEM:
			if (agent_parse_size(optarg, &v) || v < 4096)
				return bad("--retain-mem", optarg, "must be a size of at least 4K (e.g. 256M)");
			o->retain_mem = v;
			break;
		case O_DUMP: o->dump_path = optarg; break;
		case O_CONTROL: o->control_path = optarg; break;
		case O_LOCKDIR: o->lock_dir = optarg; break;
		case O_EXIT_AFTER:
			if (agent_parse_duration(optarg, 1000000000, &v) || v == 0)
				return bad("--exit-after", optarg, "must be a positive duration");
			o->exit_after_ns = v;
			break;
		case O_MAX_POLLS:
			v = strtoull(optarg, NULL, 10);
			if (v == 0)
				return bad("--max-polls", optarg, "must be a positive number");
			o->max_polls = v;
			break;
		case O_NOWIN: o->quiet_windows = 1; break;
		case O_HOOK_DIR:
			if (!*optarg)
				return bad("--hook-dir", "''", "empty path");
			o->hook_dir = optarg;
			break;
		case O_NO_HOOKS: o->no_hooks = 1; break;
		case O_REPLAY:
			if (!*optarg)
				return bad("--replay", "''", "empty path");
			o->replay_dir = optarg;
			break;
		case O_SERIES_QUERY: {
			unsigned long long f, t;
			char tail;
			if (sscanf(optarg, "%llu:%llu%c", &f, &t, &tail) != 2 || f >= t)
				return bad("--series-query", optarg,
					   "must be FROM_NS:TO_NS, host times in ns with FROM < TO");
			o->series_from_ns = f;
			o->series_to_ns = t;
			break;
		}
		case O_SERIES_OUT:
			if (!*optarg)
				return bad("--series-out", "''", "empty path");
			o->series_out = optarg;
			break;
		case O_HOST:
			if (!*optarg || strchr(optarg, '/'))
				return bad("--host", optarg, "must be a host name of the run (no '/')");
			o->replay_host = optarg;
			break;
		case O_HOST_NAME:
			if (!*optarg || strlen(optarg) >= 64)
				return bad("--host-name", optarg, "must be 1..63 characters");
			o->host_name = optarg;
			break;
		case O_ANALYZER:
			if (!*optarg || !strrchr(optarg, ':'))
				return bad("--analyzer", optarg, "must be HOST:PORT (e.g. 10.0.0.5:7070)");
			o->analyzer = optarg;
			break;
		case O_SIM_CLOCK:
			if (!*optarg)
				return bad("--sim-clock", "''", "empty path");
			o->sim_clock = optarg;
			break;
		case O_SIM_LINKS:
			if (!*optarg)
				return bad("--sim-links", "''", "empty path");
			o->sim_links = optarg;
			break;
		case O_HANG:
			if (agent_parse_duration(optarg, 1000000000, &v) || v < 1000000 ||
			    v > 3600000000000ull)
				return bad("--hang", optarg, "must be a duration from 1ms to 1h (e.g. 5s)");
			o->hang_ns = v;
			break;
		case O_BUS:
			if (strncmp(optarg, "nats://", 7) || !optarg[7])
				return bad("--bus", optarg, "must be nats://HOST:PORT[,nats://HOST:PORT...]");
			o->bus = optarg;
			break;
		case O_SPEED: {
			char *end;
			double x = strtod(optarg, &end);
			if (end == optarg || *end || !(x >= 0.01 && x <= 100000))
				return bad("--speed", optarg, "must be a factor from 0.01 to 100000 (e.g. 5)");
			o->replay_speed = x;
			break;
		}
		case O_JOB:
			if (!*optarg || strlen(optarg) >= 64)
				return bad("--job", optarg, "must be 1..63 characters");
			o->job = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fprintf(stderr, "pulse-host-agent: unknown option or missing value: %s\n"
					"Try 'pulse-host-agent --help'.\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pulse-host-agent: unexpected argument '%s'\nTry 'pulse-host-agent --help'.\n",
			argv[optind]);
		return 2;
	}
	if ((o->series_out != NULL) != (o->series_to_ns != 0) ||
	    (o->series_out && (!o->replay_dir || !o->replay_host))) {
		fprintf(stderr, "pulse-host-agent: --series-query and --series-out go together, with "
				"--replay DIR --host H (live, the analyzer asks over --analyzer)\n");
		return 2;
	}
	if (o->replay_host && !o->replay_dir) {
		fprintf(stderr, "pulse-host-agent: --host selects a host of --replay DIR; give --replay too "
				"(for this host's own name use --host-name)\n");
		return 2;
	}
	if (o->replay_speed > 0 && !o->replay_dir) {
		fprintf(stderr, "pulse-host-agent: --speed paces a replay; give --replay too (live "
				"operation runs at the host's own pace)\n");
		return 2;
	}
	if (o->replay_dir && o->analyzer) {
		fprintf(stderr, "pulse-host-agent: --analyzer is for live operation; a replay writes "
				"--out (pulse-analyzer --replay DIR reads the run itself)\n");
		return 2;
	}
	if (o->device_auto && o->nnics) {
		fprintf(stderr, "pulse-host-agent: --device auto takes every DOCA device; it cannot be "
				"combined with --sim or a named --device\n");
		return 2;
	}
	if (o->replay_dir && o->nnics) {
		fprintf(stderr, "pulse-host-agent: --replay reads the NICs' recorded events; it cannot be "
				"combined with --sim or --device\n");
		return 2;
	}
	o->clock_rate = 1;
	if (o->sim_links && !o->sim_clock) {
		fprintf(stderr, "pulse-host-agent: --sim-links is for a simulated host: it needs --sim-clock, "
				"whose clock its times are on\n");
		return 2;
	}
	if (o->sim_clock) {
		char err[400];
		if (o->replay_dir) {
			fprintf(stderr, "pulse-host-agent: --sim-clock is for live operation against a "
					"simulated cluster; a replay has its recorded clocks\n");
			return 2;
		}
		if (agent_clock_load_sim(o->sim_clock, &o->clock_rate, err, sizeof err)) {
			fprintf(stderr, "pulse-host-agent: %s\n", err);
			return 2;
		}
	}
	if (!timeout_set) {
		/* a quarter of the period in wall time */
		uint64_t t = (uint64_t)((double)o->poll_ns / o->clock_rate) / 4 / 1000000;
		o->timeout_ms = (uint32_t)(t < 20 ? 20 : t > 1000 ? 1000 : t);
	}
	return 0;
}
