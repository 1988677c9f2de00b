/* pulse-cluster-serve: a sim/run_cluster run directory served live, as the
 * hosts of a real cluster would present it to their agents: every NIC
 * behind the mailbox protocol on its own Unix socket, every training
 * process a live child process writing its interception records into a
 * real ring (/dev/shm/pulse-hook.<pid>), all in wall time scaled by
 * --speed. See sim/README.md, "pulse-cluster-serve". What the three files
 * share:
 *   cluster_serve.c  options, the run directory, the clocks, the loop;
 *   serve_evs.c      one NIC fed from its .evs stream (a sim_nic_src_ops);
 *   serve_ranks.c    one child process per training process (its ring). */
#ifndef PULSE_SIM_CLUSTER_SERVE_H
#define PULSE_SIM_CLUSTER_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "serve.h"

/* The run's clocks. The simulation ran on a true time t (ns from 0); host
 * h's CLOCK_REALTIME was base + off_h + t (1 + drift_h). Served, t runs
 * from the wall instant w0 at `speed` x wall time, and every host time is
 * moved by `shift` so that the run happens now: host h reads
 * real_w0 + off_h + t (1 + drift_h). */
struct cs_clock {
	uint64_t w0;        /* CLOCK_MONOTONIC at t = 0 */
	uint64_t real_w0;   /* CLOCK_REALTIME at t = 0 */
	double speed;
	uint64_t base;      /* the run's clock base (recorded domain) */
	int64_t shift;      /* recorded host time -> served host time */
};

struct cs_host {
	char name[64];
	double off_ns, drift_ppm;
};

/* t (ns, >= 0) at wall time wall_ns */
double cs_true_t(const struct cs_clock *c, uint64_t wall_ns);
/* host h's recorded-domain clock at true time t */
uint64_t cs_host_at(const struct cs_clock *c, const struct cs_host *h, double t);
/* the wall time (CLOCK_MONOTONIC) at which host h's recorded clock reads hns */
uint64_t cs_wall_of(const struct cs_clock *c, const struct cs_host *h, uint64_t hns);

/* ---- serve_evs.c ---- */
struct evs_nic;
/* Maps path and sets up its firmware core. NULL with err. */
struct evs_nic *evs_nic_open(const char *path, const struct cs_clock *clk, const struct cs_host *h,
			     char *err, size_t errlen);
void evs_nic_free(struct evs_nic *n);
extern const struct sim_nic_src_ops evs_nic_ops;
/* the recorded host time of its first POLL (0: none) */
uint64_t evs_nic_first_poll(const struct evs_nic *n);
/* the recorded host time of its last record */
uint64_t evs_nic_last_key(const struct evs_nic *n);
/* (re)starts its firmware at t = 0: after the clock is fixed */
int evs_nic_start(struct evs_nic *n, char *err, size_t errlen);
void evs_nic_counts(const struct evs_nic *n, uint64_t *events, uint64_t *requests);

/* ---- serve_ranks.c ---- */
struct cs_rank {
	pid_t pid;          /* the live child (0: none) */
	uint32_t rec_pid;   /* the pid in the run directory */
	int host;
	char rec_path[4096];
	uint64_t last_ns;   /* recorded host time of its last record */
	int status;         /* wait status once it ended */
	int ended;
	int clock_fd;       /* the parent's end of the pipe that gives it the clock */
};
/* Reads the record file's last time. 0, or -1 with err. */
int cs_rank_scan(struct cs_rank *r, char *err, size_t errlen);
/* Forks the child: it creates its ring with the hook's own writer
 * (pulse_hook_ring_create) and says so; then it waits for the run's clock
 * (cs_rank_go) and writes each record at its time. Forked before the
 * parent maps the streams and the firmware, so that a fork stays cheap.
 * Returns 0 once the ring exists, -1 with err. */
int cs_rank_start(struct cs_rank *r, const struct cs_host *h, uint32_t ring_records, char *err,
		  size_t errlen);
/* Gives the child the clock: it starts writing. 0, or -1 (it is gone). */
int cs_rank_go(struct cs_rank *r, const struct cs_clock *clk);
/* Reaps ended children (WNOHANG). Returns how many ended now. */
int cs_ranks_reap(struct cs_rank *r, int n);
/* SIGTERM to every child still alive, then waits for them. */
void cs_ranks_stop(struct cs_rank *r, int n);

#endif
