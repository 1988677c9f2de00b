/* run_trace --serve: one emulated NIC behind the mailbox protocol on a Unix
 * socket, fed from a capture in (scaled) real time. See sim/README.md. */
#ifndef PULSE_SIM_SERVE_H
#define PULSE_SIM_SERVE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "pulse/transport_unix.h"

#include "sim.h"

struct sim_serve_opts {
	const char *socket_path;
	const char *capture;
	double speed;           /* capture seconds per wall second */
	int loop;               /* restart the capture at its end */
	uint64_t exit_after_ns; /* wall time to serve; 0: until SIGINT/SIGTERM */
};

/* Serves until a signal or --exit-after. Returns a sim_exit code. */
int sim_serve(struct sim_trace *t, const struct sim_serve_opts *o, char *err, size_t errlen);

/* ---- the serving loop, shared with pulse-cluster-serve ----
 * Any number of simulated NICs, each behind the mailbox protocol on its own
 * Unix socket (pulse_unix_server), each fed by its own source of TX events
 * paced in wall time. What feeds a NIC is a table of functions. */
struct sim_nic_src_ops {
	/* Feeds the firmware every event due by wall time wall_ns (CLOCK_MONOTONIC;
	 * a bounded batch per call is fine). Returns the wall time of the next
	 * event not yet due (UINT64_MAX: none known). */
	uint64_t (*feed)(void *ctx, uint64_t wall_ns);
	/* Answers one mailbox request at wall_ns (the source knows the NIC's
	 * clock then and what to do before a POLL). 0, or -1 to drop the client. */
	int (*answer)(void *ctx, uint64_t wall_ns, const uint8_t *req, uint32_t req_len, uint8_t *resp,
		      uint32_t resp_cap, uint32_t *resp_len);
};

struct sim_served_nic {
	struct pulse_unix_server srv;
	const struct sim_nic_src_ops *ops;
	void *ctx;
	int open;
};

/* Opens n->srv on path (PULSE_MB_MAX_MESSAGE responses). 0, or -1 with err. */
int sim_served_nic_open(struct sim_served_nic *n, const char *path, const struct sim_nic_src_ops *ops,
			void *ctx, char *err, size_t errlen);
void sim_served_nic_close(struct sim_served_nic *n);

/* SIGINT/SIGTERM set the returned flag (a server's stop); SIGPIPE is
 * ignored (a client that hangs up is the socket's business). */
volatile sig_atomic_t *sim_serve_signals(void);

/* Serves the NICs until *stop, exit_after_ns of wall time (0: no bound), or
 * done(ctx) returns nonzero (done may be NULL; it is called every turn, at
 * most every 50 ms, with the wall time). Returns 0, or -1 with err on a
 * listening-socket error. */
int sim_serve_nics(struct sim_served_nic *nics, unsigned n, volatile sig_atomic_t *stop,
		   uint64_t exit_after_ns, int (*done)(void *ctx, uint64_t wall_ns), void *done_ctx,
		   char *err, size_t errlen);

#endif
