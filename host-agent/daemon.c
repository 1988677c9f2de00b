/* pulse-host-agent: daemon plumbing. Signal flags, one lock file per NIC
 * (flock, so a second agent cannot poll the same NIC and a crashed agent's
 * lock goes away with it), and the local command socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"

volatile sig_atomic_t agent_sig_term, agent_sig_hup, agent_sig_usr1;

static void on_signal(int sig)
{
	if (sig == SIGTERM || sig == SIGINT)
		agent_sig_term = 1;
	else if (sig == SIGHUP)
		agent_sig_hup = 1;
	else if (sig == SIGUSR1)
		agent_sig_usr1 = 1;
}

int agent_signals_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: a signal ends the scheduler's sleep at once */
	int rc = 0;
	rc |= sigaction(SIGTERM, &sa, NULL);
	rc |= sigaction(SIGINT, &sa, NULL);
	rc |= sigaction(SIGHUP, &sa, NULL);
	rc |= sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return rc ? -1 : 0;
}

int agent_lock_nic(const char *lock_dir, const char *nic_name, char *err, size_t errlen)
{
	if (mkdir(lock_dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "lock directory %s: %s (choose another with --lock-dir)", lock_dir,
			 strerror(errno));
		return -1;
	}
	char file[AGENT_NAME_MAX + 8];
	size_t k = 0;
	for (const char *p = nic_name; *p && k + 6 < sizeof file; p++)
		file[k++] = (*p == '/' || *p == ':') ? '_' : *p;
	snprintf(file + k, sizeof file - k, ".lock");
	char path[4400];
	snprintf(path, sizeof path, "%s/%s", lock_dir, file);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "lock file %s: %s (choose another directory with --lock-dir)", path,
			 strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
		if (n > 0) {
			pid[n] = 0;
			pid[strcspn(pid, "\n")] = 0;
		}
		snprintf(err, errlen,
			 "%s is already polled by another pulse-host-agent (pid %s holds %s); two agents "
			 "must not poll one NIC",
			 nic_name, pid[0] ? pid : "?", path);
		close(fd);
		return -1;
	}
	char pid[32];
	int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)len, 0) != len)
		LOGW("lock file %s: cannot write the pid", path);
	return fd;
}

/* ---- command socket: one line per connection, one line of answer ----
 *   dump DIR   write the retained window to DIR (epochs.csv, epochs.json)
 *   stats      one line of counters */
static int ctl_fd = -1;
static int ctl_stop_pipe[2] = {-1, -1};
static pthread_t ctl_thread;
static int ctl_running;
static char ctl_path[108];

static void ctl_answer(struct agent *a, int fd)
{
	char line[4200];
	size_t got = 0;
	uint64_t deadline = agent_mono_ns() + 2000000000ull;
	while (got < sizeof line - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = agent_mono_ns();
		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			break;
		ssize_t n = read(fd, line + got, sizeof line - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = 0;
	line[strcspn(line, "\r\n")] = 0;
	char reply[600];
	if (!strncmp(line, "dump ", 5) && line[5]) {
		char err[300];
		pthread_mutex_lock(&a->lock);
		long n = agent_dump(a, line + 5, err, sizeof err);
		if (n < 0)
			a->dump_failures++;
		else
			a->dumps++;
		pthread_mutex_unlock(&a->lock);
		if (n < 0) {
			LOGE("control: %s", err);
			snprintf(reply, sizeof reply, "error %s\n", err);
		} else {
			LOGI("control: dumped %ld windows to %s", n, line + 5);
			snprintf(reply, sizeof reply, "ok %ld windows\n", n);
		}
	} else if (!strcmp(line, "stats")) {
		pthread_mutex_lock(&a->lock);
		snprintf(reply, sizeof reply,
			 "ok cycles %llu overruns %llu retained_windows %u retained_bytes %llu "
			 "dropped_cap %llu\n",
			 (unsigned long long)a->cycles, (unsigned long long)a->overruns, a->ret.count,
			 (unsigned long long)a->ret.mem, (unsigned long long)a->ret.dropped_cap);
		pthread_mutex_unlock(&a->lock);
	} else {
		LOGW("control: unknown command '%.80s'", line);
		snprintf(reply, sizeof reply, "error unknown command (use: dump DIR | stats)\n");
	}
	if (write(fd, reply, strlen(reply)) < 0)
		LOGW("control: cannot answer: %s", strerror(errno));
}

static void *ctl_main(void *arg)
{
	struct agent *a = arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = ctl_fd, .events = POLLIN},
				      {.fd = ctl_stop_pipe[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			LOGE("control: poll: %s", strerror(errno));
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		if (p[0].revents & POLLIN) {
			int fd = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			ctl_answer(a, fd);
			close(fd);
		}
	}
}

int control_start(struct agent *a, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(err, errlen, "--control %s: path too long for a Unix socket", path);
		return -1;
	}
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "--control %s: exists and is not a socket", path);
			return -1;
		}
		unlink(path);
	}
	strcpy(sa.sun_path, path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0 || bind(ctl_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(ctl_fd, 8) != 0 || pipe2(ctl_stop_pipe, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "--control %s: %s", path, strerror(errno));
		if (ctl_fd >= 0)
			close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	chmod(path, 0600);
	snprintf(ctl_path, sizeof ctl_path, "%s", path);
	if (pthread_create(&ctl_thread, NULL, ctl_main, a) != 0) {
		snprintf(err, errlen, "--control: cannot start its thread");
		return -1;
	}
	ctl_running = 1;
	return 0;
}

void control_stop(void)
{
	if (!ctl_running)
		return;
	if (write(ctl_stop_pipe[1], "x", 1) < 0)
		LOGW("control: cannot stop its thread cleanly");
	pthread_join(ctl_thread, NULL);
	close(ctl_fd);
	close(ctl_stop_pipe[0]);
	close(ctl_stop_pipe[1]);
	unlink(ctl_path);
	ctl_running = 0;
}
