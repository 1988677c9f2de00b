/* run_trace --serve: one emulated NIC behind the mailbox protocol on a Unix
 * socket, fed from a capture in (scaled) real time. See sim/README.md. */
#ifndef PULSE_SIM_SERVE_H
#define PULSE_SIM_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "sim.h"

struct sim_serve_opts {
	const char *socket_path;
	const char *capture;
	double speed;           /* capture seconds per wall second */
	int loop;               /* restart the capture at its end */
	uint64_t exit_after_ns; /* wall time to serve; 0: until SIGINT/SIGTERM */
};

/* Serves until a signal, --exit-after, or (without --loop) 10 s of idle
 * after the capture ended and its last events were fed. Returns a sim_exit code. */
int sim_serve(struct sim_trace *t, const struct sim_serve_opts *o, char *err, size_t errlen);

#endif
