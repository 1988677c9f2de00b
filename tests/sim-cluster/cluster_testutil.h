/* Helpers of the cluster simulator's tests (cluster_testutil.c). */
#ifndef PULSE_TEST_CLUSTER_TESTUTIL_H
#define PULSE_TEST_CLUSTER_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/cluster/cluster.h"

struct tx {
	uint64_t t; /* unwrapped NIC ns */
	uint32_t qpn;
	uint32_t bytes;
};

/* one NIC's .evs: its TX events in order, polls counted */
struct stream {
	struct tx *ev;
	size_t n;
	size_t polls;
	uint64_t bytes;
	/* the polls: the host's clock and the NIC's (unwrapped) when each was
	 * handled, so that host times map to NIC times (nic_of_host) */
	uint64_t *poll_host, *poll_nic;
};

/* the whole file, NUL-terminated; NULL if it cannot be opened */
char *read_file(const char *path, size_t *len);
/* DIR/NAME, read whole (asserted) */
char *read_run_file(const char *dir, const char *name, size_t *len);
/* DIR/NAME parsed as JSON (asserted); cJSON_Delete it (cJSON.h) */
struct cJSON *read_run_json(const char *dir, const char *name);
/* DIR/hosts/host<host>/mlx5_<gpu>.evs, checked record by record */
void load_evs(const char *dir, int host, int gpu, struct stream *s);
void free_stream(struct stream *s);
/* the NIC time at host time h, interpolated between the polls around it */
uint64_t nic_of_host(const struct stream *s, uint64_t h);
void rm_rf(const char *dir);
/* runs a scenario given as JSON text into a fresh directory (free with done) */
char *run_json(const char *json, struct sc_stats *st_out);
void done(char *dir);
/* the scenario must be refused with an error containing needle */
void bad(const char *json, const char *needle);

#endif
