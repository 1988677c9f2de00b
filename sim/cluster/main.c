/* pulse-run-cluster SCENARIO.json --out DIR [--pcap] [--quiet]
 * (sim/run_cluster wraps it; sim/README.md, "run_cluster"). */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "simai.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: run_cluster SCENARIO.json --out DIR [--pcap] [--seed N] [--quiet]\n"
		   "  --out DIR   write the run directory (include/pulse/cluster_run.h)\n"
		   "  --pcap      also write DIR/hosts/<host>/<dev>.pcap (RoCEv2 packets)\n"
		   "  --seed N    override the scenario's seed\n"
		   "  --check     only parse and check the scenario\n"
		   "  --check-simai FILE  only read and check a SimAI/AICB workload file and\n"
		   "              describe it (any size: the 9216-GPU file too)\n"
		   "  --quiet     no statistics on stdout\n"
		   "exit: 0 ok, 1 runtime error, 2 usage, 3 bad scenario\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "out", required_argument, 0, 'o' },
					      { "pcap", no_argument, 0, 'p' },
					      { "seed", required_argument, 0, 's' },
					      { "check", no_argument, 0, 'c' },
					      { "check-simai", required_argument, 0, 'S' },
					      { "quiet", no_argument, 0, 'q' },
					      { "help", no_argument, 0, 'h' },
					      { 0, 0, 0, 0 } };
	const char *out = NULL;
	int pcap = 0, quiet = 0, check = 0, have_seed = 0;
	uint64_t seed = 0;
	int c;
	while ((c = getopt_long(argc, argv, "o:ps:cS:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			pcap = 1;
			break;
		case 's': {
			char *end;
			seed = strtoull(optarg, &end, 0);
			if (!*optarg || *end) {
				fprintf(stderr, "run_cluster: --seed: not a number: %s\n", optarg);
				return 2;
			}
			have_seed = 1;
			break;
		}
		case 'c':
			check = 1;
			break;
		case 'S': {
			struct simai_workload w;
			char err[512];
			if (simai_load(optarg, &w, err, sizeof err)) {
				fprintf(stderr, "run_cluster: %s\n", err);
				return 3;
			}
			simai_describe(stdout, optarg, &w);
			simai_free(&w);
			return 0;
		}
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || (!out && !check)) {
		usage(stderr);
		return 2;
	}
	struct sc_scenario s;
	char err[512];
	if (sc_scenario_load(argv[optind], &s, err, sizeof err)) {
		fprintf(stderr, "run_cluster: %s\n", err);
		return 3;
	}
	if (have_seed)
		s.seed = seed;
	if (check) {
		if (!quiet)
			printf("%s: ok (%s, %d hosts x %d GPUs, %d iterations, failure %s)\n",
			       argv[optind], s.name, s.hosts, s.gpus, s.iterations,
			       sc_fail_table[s.failure.type].name);
		return 0;
	}
	struct sc_stats st;
	memset(&st, 0, sizeof st);
	if (sc_run(&s, out, pcap, &st, err, sizeof err)) {
		fprintf(stderr, "run_cluster: %s\n", err);
		return 1;
	}
	if (!quiet) {
		printf("scenario      %s (%d hosts x %d GPUs, %d iterations, failure %s)\n", s.name,
		       s.hosts, s.gpus, s.iterations, sc_fail_table[s.failure.type].name);
		printf("sim time      %.3f ms%s\n", st.sim_ns / 1e6, st.hung ? " (hung: some ranks never finished)" : "");
		printf("tx events     %" PRIu64 "\n", st.tx_events);
		printf("polls         %" PRIu64 "\n", st.polls);
		printf("hook records  %" PRIu64 "\n", st.hook_records);
		if (pcap)
			printf("pcap packets  %" PRIu64 "\n", st.pcap_packets);
		printf("slice flows   %" PRIu64 "\n", st.flows);
		printf("sim events    %" PRIu64 "\n", st.sim_events);
		printf("wall time     %.3f s\n", st.wall_s);
		printf("events/s      %.0f\n", st.wall_s > 0 ? (double)st.tx_events / st.wall_s : 0.0);
		printf("peak RSS      %ld KiB\n", st.peak_rss_kb);
		printf("output        %s\n", out);
	}
	return 0;
}
