// SPDX-License-Identifier: GPL-2.0
/*
 * A plain program, without the sigmig runtime, for the CRIU tests: it
 * queues real-time signals to itself with distinct values (process-wide
 * ones, and ones directed at its second thread), all blocked, writes
 * "ready <pid>" to its state file and waits. SIGUSR1 makes it drain both
 * queues and check every record: signal, si_code, sender pid, value, order.
 * What a checkpointer must carry over, observed from inside the process.
 *
 *   criu-pending --state FILE [--count N]
 * The state file then gets "shared N ok|bad ..." and "private N ok|bad ...".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHARED_SIGNAL	(SIGRTMIN + 1)
#define PRIVATE_SIGNAL	(SIGRTMIN + 2)

static volatile sig_atomic_t drain_requested;
static _Atomic int worker_tid, worker_may_drain, worker_done;
static pid_t original_pid;
static int count = 1000;
static FILE *state;

static void on_usr1(int sig)
{
	(void)sig;
	drain_requested = 1;
}

static void block_queued_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SHARED_SIGNAL);
	sigaddset(&set, PRIVATE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Take @sig records off the caller's queues; "<what> N ok" or where it broke. */
static int drain(int sig, const char *what)
{
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	sigset_t set;
	int n = 0;

	sigemptyset(&set);
	sigaddset(&set, sig);
	while (sigtimedwait(&set, &si, &zero) == sig) {
		if (si.si_code != SI_QUEUE || si.si_pid != original_pid ||
		    si.si_value.sival_int != n) {
			fprintf(state, "%s %d bad: record %d has code %d pid %d value %d\n",
				what, count, n, si.si_code, si.si_pid, si.si_value.sival_int);
			return -1;
		}
		n++;
	}
	fprintf(state, "%s %d %s: %d record(s)\n", what, count, n == count ? "ok" : "bad", n);
	return n == count ? 0 : -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	worker_tid = (int)syscall(SYS_gettid);
	while (!worker_may_drain)
		sleep_ms(10);
	worker_done = drain(PRIVATE_SIGNAL, "private") ? -1 : 1;
	return NULL;
}

static int queue_records(void)
{
	siginfo_t si;
	int i;

	for (i = 0; i < count; i++) {
		if (sigqueue(original_pid, SHARED_SIGNAL, (union sigval){ .sival_int = i }))
			return -errno;
		memset(&si, 0, sizeof(si));
		si.si_signo = PRIVATE_SIGNAL;
		si.si_code = SI_QUEUE;
		si.si_pid = original_pid;
		si.si_uid = getuid();
		si.si_value.sival_int = i;
		if (syscall(SYS_rt_tgsigqueueinfo, original_pid, worker_tid, PRIVATE_SIGNAL, &si))
			return -errno;
	}
	return 0;
}

static int parse(int argc, char **argv, const char **path)
{
	static const struct option opts[] = {
		{ "state", 1, 0, 's' }, { "count", 1, 0, 'n' }, { 0, 0, 0, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 's')
			*path = optarg;
		else if (c == 'n')
			count = atoi(optarg);
		else
			return -1;
	}
	return *path && count > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	pthread_t th;
	int ret;

	if (parse(argc, argv, &path)) {
		fprintf(stderr, "usage: criu-pending --state FILE [--count N]\n");
		return 2;
	}
	state = fopen(path, "w");
	if (!state)
		return 2;
	setvbuf(state, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	block_queued_signals();
	original_pid = getpid();
	pthread_create(&th, NULL, worker, NULL);
	while (!worker_tid)
		sleep_ms(1);
	ret = queue_records();
	if (ret) {
		fprintf(state, "queueing failed: %s\n", strerror(-ret));
		return 1;
	}
	fprintf(state, "ready %d\n", original_pid);
	while (!drain_requested)
		pause();
	ret = drain(SHARED_SIGNAL, "shared");
	worker_may_drain = 1;
	pthread_join(th, NULL);
	fprintf(state, "done\n");
	return ret || worker_done != 1;
}
