// SPDX-License-Identifier: GPL-2.0
/*
 * resume-together: after a restore, every thread resumes at once; none
 * waits until another has consumed its restored signals.
 *
 * Original (no --restore): two application threads with SIG unblocked and
 * a handler; main, not an application thread, waits for --go to appear
 * (the test creates it once the process is frozen), then queues PER_THREAD
 * signals to each thread, which stay pending in their parked threads, and
 * writes "queued" to --state.
 * Restored (--restore IMAGE): the first handler of thread 0 waits (at most
 * WAIT_S) until thread 1 has run one of its own handlers. Resumed together,
 * thread 1 runs at once; resumed one after another, thread 1 would only be
 * let go once thread 0 had handled its whole queue. TAP on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/runtime.h>

#define SIG		(SIGRTMIN + 4)
#define PER_THREAD	5
#define WAIT_S		10

static _Thread_local int my_index = -1;
static atomic_int handled[2], thread1_ran, waited_ms = -1;
static pthread_t threads[2];
static int restoring;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	double start;

	(void)sig;
	(void)si;
	(void)uc;
	if (my_index == 1)
		atomic_store(&thread1_ran, 1);
	if (my_index == 0 && atomic_load(&handled[0]) == 0) {
		start = now_s();
		while (!atomic_load(&thread1_ran) && now_s() - start < WAIT_S)
			usleep(1000);
		atomic_store(&waited_ms, (int)((now_s() - start) * 1000));
	}
	if (my_index == 0 || my_index == 1)
		atomic_fetch_add(&handled[my_index], 1);
}

static void *worker(void *arg)
{
	sigset_t set;

	my_index = (int)(uintptr_t)arg;
	/* the original's workers take SIG; a restored one gets the image's mask */
	if (!restoring) {
		sigemptyset(&set);
		sigaddset(&set, SIG);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	if (sigmig_thread_register((unsigned int)my_index))
		return NULL;
	for (;;)
		pause();
}

static int wait_file(const char *path, int seconds)
{
	struct stat st;
	int i;

	for (i = 0; i < seconds * 100; i++) {
		if (!stat(path, &st))
			return 0;
		usleep(10000);
	}
	return -1;
}

static int original(const char *go, const char *state)
{
	union sigval v;
	FILE *f;
	int t, i;

	if (wait_file(go, 60))
		return 2;
	for (t = 0; t < 2; t++) {
		for (i = 0; i < PER_THREAD; i++) {
			v.sival_int = t * 100 + i;
			if (pthread_sigqueue(threads[t], SIG, v))
				return 2;
		}
	}
	f = fopen(state, "w");
	if (!f)
		return 2;
	fprintf(f, "queued\n");
	fclose(f);
	for (;;)
		pause();
}

static int restored(void)
{
	double start = now_s();
	int n = 0, both;

	while ((handled[0] < PER_THREAD || handled[1] < PER_THREAD) &&
	       now_s() - start < 3 * WAIT_S)
		usleep(1000);
	both = handled[0] == PER_THREAD && handled[1] == PER_THREAD;
	printf("%sok %d - resume-together: every restored signal handled (thread 0: %d, thread 1: %d of %d)\n",
	       both ? "" : "not ", ++n, handled[0], handled[1], PER_THREAD);
	printf("%sok %d - resume-together: thread 1 ran while thread 0 was in its first handler (waited %d ms, limit %d s)\n",
	       thread1_ran && waited_ms >= 0 && waited_ms < WAIT_S * 1000 ? "" : "not ", ++n,
	       waited_ms, WAIT_S);
	printf("1..%d\n", n);
	return !(both && waited_ms >= 0 && waited_ms < WAIT_S * 1000);
}

static void commit_exit(void)
{
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ctl", 1, 0, 'c' }, { "restore", 1, 0, 'r' }, { "state", 1, 0, 's' },
		{ "go", 1, 0, 'g' }, { 0, 0, 0, 0 } };
	struct sigmig_runtime_opts ro = { .program = "resume-together", .nthreads = 2,
					  .commit_exit = commit_exit };
	const char *state = NULL, *go = NULL;
	char err[256];
	sigset_t set;
	int c, t;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'c')
			ro.ctl_path = optarg;
		else if (c == 'r')
			ro.restore_image = optarg;
		else if (c == 's')
			state = optarg;
		else if (c == 'g')
			go = optarg;
		else
			return 2;
	}
	if (!ro.ctl_path || (!ro.restore_image && (!state || !go)))
		return 2;
	/* main only supervises: it never takes SIG; the workers inherit this */
	sigemptyset(&set);
	sigaddset(&set, SIG);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigmig_install_handler(SIG, "on_sig", on_sig, SA_RESTART, NULL);
	if (sigmig_runtime_start(&ro, err, sizeof(err))) {
		fprintf(stderr, "resume-together: runtime: %s\n", err);
		return ro.restore_image ? 3 : 2;
	}
	restoring = ro.restore_image != NULL;
	for (t = 0; t < 2; t++)
		pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t);
	if (sigmig_runtime_wait_ready(err, sizeof(err))) {
		fprintf(stderr, "sigmig restore: %s\n", err);
		return 3;
	}
	return ro.restore_image ? restored() : original(go, state);
}
