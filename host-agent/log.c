/* pulse-host-agent: the log, one line per event, and the clocks. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

static FILE *log_f;
static const char *log_path;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static _Atomic uint64_t virtual_now; /* replay: the recorded host time; 0: real clock */
/* --sim-clock: a simulated host's clock running at sim_rate from (sim_mono0,
 * sim_real0); set once at start-up, before any thread reads it. */
static int sim_clock;
static uint64_t sim_real0, sim_mono0, sim_phase;
static double sim_rate;

int agent_clock_load_sim(const char *path, double *rate, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "--sim-clock %s: %s", path, strerror(errno));
		return -1;
	}
	unsigned long long r0, m0, ph = 0;
	double rt;
	int v, n = fscanf(f, "pulse-sim-clock %d %llu %llu %lf %llu", &v, &r0, &m0, &rt, &ph);
	fclose(f);
	if (n < 4 || v != 1 || !(rt > 0 && rt <= 1000) || !r0 || !m0) {
		snprintf(err, errlen, "--sim-clock %s: not a clock file of version 1 "
			 "(\"pulse-sim-clock 1 REAL0 MONO0 RATE [PHASE]\", RATE in (0, 1000])", path);
		return -1;
	}
	sim_phase = n == 5 ? ph : 0;
	sim_real0 = r0;
	sim_mono0 = m0;
	sim_rate = rt;
	sim_clock = 1;
	*rate = rt;
	return 0;
}

void agent_clock_set_virtual(uint64_t ns)
{
	virtual_now = ns;
}

static uint64_t real_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t agent_clock_sim_align(uint64_t period_ns)
{
	if (!sim_clock || !sim_phase || !period_ns)
		return 0;
	uint64_t now = agent_realtime_ns();
	uint64_t k = now > sim_phase ? (now - sim_phase + period_ns - 1) / period_ns : 0;
	uint64_t at = sim_phase + k * period_ns; /* host time of the next aligned poll */
	return sim_mono0 + (uint64_t)((double)(int64_t)(at - sim_real0) / sim_rate);
}

uint64_t agent_realtime_ns(void)
{
	uint64_t v = virtual_now;
	if (v)
		return v;
	if (sim_clock) {
		double d = ((double)agent_mono_ns() - (double)sim_mono0) * sim_rate;
		return (uint64_t)((int64_t)sim_real0 + (int64_t)d);
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t agent_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int agent_log_open(const char *path)
{
	log_path = path;
	if (!path) {
		log_f = stderr;
		return 0;
	}
	log_f = fopen(path, "a");
	if (!log_f) {
		fprintf(stderr, "pulse-host-agent: --log %s: %s\n", path, strerror(errno));
		log_f = stderr;
		return -1;
	}
	setvbuf(log_f, NULL, _IOLBF, 0);
	return 0;
}

int agent_log_reopen(void)
{
	if (!log_path)
		return 0;
	pthread_mutex_lock(&log_lock);
	FILE *f = fopen(log_path, "a");
	int rc = 0;
	if (f) {
		setvbuf(f, NULL, _IOLBF, 0);
		if (log_f && log_f != stderr)
			fclose(log_f);
		log_f = f;
	} else {
		rc = -1;
	}
	pthread_mutex_unlock(&log_lock);
	if (rc)
		LOGE("cannot reopen log %s: %s; still writing to the old file", log_path,
		     strerror(errno));
	return rc;
}

void agent_log(const char *level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	uint64_t now = real_realtime_ns();
	time_t s = (time_t)(now / 1000000000u);
	struct tm tm;
	gmtime_r(&s, &tm);
	char ts[32];
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	FILE *f = log_f ? log_f : stderr;
	fprintf(f, "%s.%03uZ pulse-host-agent[%d] %s: %s\n", ts,
		(unsigned)(now / 1000000u % 1000u), (int)getpid(), level, msg);
	fflush(f);
	pthread_mutex_unlock(&log_lock);
}
