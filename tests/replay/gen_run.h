/* A tiny sim/run_cluster-style run directory for the replay tests, written
 * with the format helpers of include/pulse/event_stream.h and
 * include/pulse/cluster_run.h, so the tests do not depend on the simulator.
 *
 *   2 hosts (hostA, hostB) x 2 NICs (mlx5_0 = GPU 0, mlx5_1 = GPU 1), one
 *   training process per GPU, one communicator of 4 ranks; 5 QP pairs, one
 *   QPN used on both hosts; GEN_POLLS windows of GEN_POLL_NS with traffic on
 *   every QP in every window; the NIC clock wraps (32 bits) mid-run; each
 *   host's clock has its own offset. The generator keeps what every window
 *   must contain (bytes and active epochs per QP), computed from the events
 *   it writes, not through the firmware. */
#ifndef PULSE_TEST_GEN_RUN_H
#define PULSE_TEST_GEN_RUN_H

#include <stdint.h>

#define GEN_HOSTS 2
#define GEN_NICS 2
#define GEN_POLLS 10
#define GEN_POLL_NS 500000000ull
#define GEN_EPOCH_NS 32000u
#define GEN_MAX_QPS_PER_NIC 3
#define GEN_NIC_T0 4000000000u /* NIC clock at the first window's start: wraps at run time */

struct gen_qp_win {
	uint64_t bytes;
	uint32_t active_epochs;
	uint32_t first_epoch, last_epoch;
};

struct gen_qp {
	uint32_t qpn, dest_qpn;
	int remote_host, remote_nic; /* index */
	struct gen_qp_win win[GEN_POLLS];
};

struct gen_nic {
	char dev[16];
	uint8_t gid[16];
	uint32_t pid;
	int nqps;
	struct gen_qp qp[GEN_MAX_QPS_PER_NIC];
	uint64_t win_host_start[GEN_POLLS]; /* host time of each window's bounds */
	uint64_t win_host_end[GEN_POLLS];
	uint64_t events;
};

struct gen_run {
	char hosts[GEN_HOSTS][16];
	int64_t host_off[GEN_HOSTS]; /* host ns = extended NIC ns + off */
	struct gen_nic nic[GEN_HOSTS][GEN_NICS];
	uint64_t comm_id;
	uint64_t ops_per_process;   /* OP records per process before the last poll */
	uint64_t ops_after_last;    /* per process, after it */
};

/* Writes the directory (created) and fills g. Returns 0 or -1. */
int gen_run_write(const char *dir, struct gen_run *g);

#endif
