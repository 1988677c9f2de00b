/* pulse-host-agent: the poll scheduler.
 *
 * Poll k happens at start + k x period on CLOCK_MONOTONIC, slept to with
 * clock_nanosleep(TIMER_ABSTIME): the time a poll takes, or a late wake-up,
 * never shifts the later ones (no drift), and wall-clock steps (NTP) do not
 * move the schedule. A cycle that overruns its period skips the slots it
 * missed (counted as overruns) instead of polling back to back.
 *
 * Signals are blocked while the NICs are polled, so that none can interrupt
 * an exchange (a poll() cut short by EINTR would read as a failed NIC and a
 * gap), and unblocked for the sleep, which they end at once (no SA_RESTART).
 * They are handled between cycles: SIGTERM/SIGINT stop, SIGHUP reopens the
 * log and --out, SIGUSR1 dumps the retention ring to --dump-path. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "agent.h"
#include "analyzer_link.h"
#include "assoc.h"
#include "probe.h"
#include "replay_links.h"

static void handle_signals(struct agent *a)
{
	if (agent_sig_hup) {
		agent_sig_hup = 0;
		agent_log_reopen();
		jsonl_reopen();
		LOGI("SIGHUP: log and output files reopened");
	}
	if (agent_sig_usr1) {
		agent_sig_usr1 = 0;
		if (!a->opt.dump_path) {
			LOGW("SIGUSR1: no --dump-path given; nothing dumped");
			return;
		}
		char err[300];
		pthread_mutex_lock(&a->lock);
		long n = agent_dump(a, a->opt.dump_path, err, sizeof err);
		if (n < 0)
			a->dump_failures++;
		else
			a->dumps++;
		pthread_mutex_unlock(&a->lock);
		if (n < 0)
			LOGE("SIGUSR1: %s", err);
		else
			LOGI("SIGUSR1: dumped %ld windows to %s", n, a->opt.dump_path);
	}
}

/* Calls that reached the agent later than the association waited for them
 * (assoc_calls_known): the operators before them may have taken their
 * traffic. Said once when it starts, counted at the stop. */
static void warn_late_calls(struct agent *a)
{
	struct assoc_stats st = {0};
	assoc_get_stats(a->assoc, &st);
	if (st.late_calls && !a->late_calls_warned)
		LOGW("interception: %llu call(s) reached the agent more than %.1f ms (host clock) after "
		     "they were made, up to %.1f ms more: the operator before such a call may have "
		     "taken its traffic (a training process preempted that long on a busy host, or a "
		     "ring found after its first calls)",
		     (unsigned long long)st.late_calls, (double)assoc_call_lag_ns(a->assoc) / 1e6,
		     (double)st.late_call_max_ns / 1e6);
	a->late_calls_warned = st.late_calls > 0;
}

int agent_run(struct agent *a)
{
	/* in wall time: a simulated host clock (--sim-clock) may run faster */
	const uint64_t period = a->opt.clock_rate > 0 ? (uint64_t)((double)a->opt.poll_ns / a->opt.clock_rate)
							: a->opt.poll_ns;
	/* a simulated host polls in phase with its recorded run (--sim-clock) */
	uint64_t aligned = agent_clock_sim_align(a->opt.poll_ns);
	if (aligned > agent_mono_ns()) {
		struct timespec ts = {.tv_sec = (time_t)(aligned / 1000000000u),
				      .tv_nsec = (long)(aligned % 1000000000u)};
		while (!agent_sig_term && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	const uint64_t start = agent_mono_ns();
	uint64_t k = 0;
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGUSR1);
	while (!agent_sig_term) {
		pthread_sigmask(SIG_BLOCK, &sigs, NULL);
		/* the calls and QPs first, so the association knows them when the
		 * windows that carry their traffic arrive */
		/* a simulated host's link events up to its clock's now, as the
		 * link watcher gives a real host's as they come */
		if (a->sim_links)
			replay_links_emit(a->sim_links, agent_realtime_ns());
		if (a->hooks && !agent_sig_term) {
			uint64_t drained = agent_realtime_ns();
			hooks_poll(a, a->hooks);
			warn_late_calls(a);
			assoc_calls_known(a->assoc, drained);
		}
		if (!agent_sig_term)
			probe_cycle(a); /* GPU pairing, the kernel's QPs against the hook's */
		if (!agent_sig_term)
			agent_cycle_begin(a, agent_realtime_ns());
		for (int i = 0; i < a->nnics && !agent_sig_term; i++)
			nic_cycle(a, &a->nics[i]);
		if (!agent_sig_term)
			agent_cycle_end(a, agent_realtime_ns());
		if (a->alink) /* this cycle's lines out, the analyzer's JOIN in */
			alink_poll(a->alink, agent_mono_ns());
		pthread_sigmask(SIG_UNBLOCK, &sigs, NULL); /* pending ones are handled now */
		pthread_mutex_lock(&a->lock);
		a->cycles++;
		retention_expire(&a->ret, agent_realtime_ns());
		pthread_mutex_unlock(&a->lock);
		handle_signals(a);
		if (a->opt.max_polls && a->cycles > a->opt.max_polls)
			break;
		/* the next slot in the future */
		uint64_t now = agent_mono_ns();
		uint64_t next_k = k + 1;
		if (start + next_k * period <= now) {
			uint64_t late = (now - start) / period + 1;
			pthread_mutex_lock(&a->lock);
			a->overruns += late - next_k;
			pthread_mutex_unlock(&a->lock);
			LOGW("poll cycle overran: %llu period(s) skipped",
			     (unsigned long long)(late - next_k));
			next_k = late;
		}
		k = next_k;
		uint64_t when = start + k * period;
		if (a->opt.exit_after_ns && when - start > a->opt.exit_after_ns) {
			/* sleep out the remaining time, then stop */
			when = start + a->opt.exit_after_ns;
			struct timespec ts = {.tv_sec = (time_t)(when / 1000000000u),
					      .tv_nsec = (long)(when % 1000000000u)};
			while (!agent_sig_term &&
			       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				handle_signals(a);
			break;
		}
		handle_signals(a); /* any that arrived during the cycle */
		if (agent_sig_term)
			break;
		struct timespec ts = {.tv_sec = (time_t)(when / 1000000000u),
				      .tv_nsec = (long)(when % 1000000000u)};
		int rc;
		while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR) {
			if (agent_sig_term)
				break;
			handle_signals(a);
		}
	}
	handle_signals(a);
	return 0;
}
