// SPDX-License-Identifier: GPL-2.0
/*
 * The target of the parasite test, a plain program (no sigmig runtime):
 * every catchable signal blocked in all its threads, it queues to itself
 * N real-time signals process-wide and N to each thread (distinct values),
 * plus a few standard signals to the process and to each thread (none at
 * all with --count 0), writes
 * "ready PID" to DIR/state and waits for DIR/go. Then each thread reads
 * its own queue twice: peeked through pread() on an SFD_RAW signalfd
 * (DIR/self-private.TID.bin, the leader also DIR/self-shared.bin), then
 * dequeued through read() (DIR/drain-private.TID.bin, drain-shared.bin),
 * and the leader writes "done" with the counts it expected and found and
 * each thread's MXCSR, which must be the one it set (FPU state kept).
 *
 * --timers K: K one-shot POSIX timers (SIGEV_SIGNAL, TIMER_SIGNAL) have
 * fired before "ready", so their SI_TIMER records are pending too. At go
 * the leader fires each again before reading: a timer whose record is
 * its own preallocated entry raises that entry's overrun, one that lost it
 * (a record requeued as an ordinary signal) queues a second record. The
 * count of SI_TIMER records must stay K: "timers K records R".
 *
 *   peek-target --dir DIR [--count N] [--threads T] [--timers K]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

#include <sigmig/sfd.h>

#define MAX_THREADS	16
#define MAX_TIMERS	8
#define TIMER_SIGNAL	(SIGRTMIN + 6)
#define RECORDS_MAX	65536

/* standard signals queued, process-wide and to each thread */
static const int shared_std[] = { SIGUSR1, SIGHUP, SIGWINCH };
static const int private_std[] = { SIGUSR2, SIGPIPE };
#define NR(a)	((int)(sizeof(a) / sizeof((a)[0])))

static const char *dir;
static int count = 32, nthreads = 3, ntimers;
static timer_t timers[MAX_TIMERS];
static pid_t pid;
static _Atomic int tids[MAX_THREADS], turn, finished;
static int found[MAX_THREADS][2];	/* peeked, drained (private) */
static unsigned int mxcsr[MAX_THREADS];	/* each thread's, once DIR/go exists */

/*
 * Every thread runs with this MXCSR (round toward zero, flush to zero; the
 * default is 0x1f80) and reports the one it has at the end: a parasite, or
 * the one who put it in, that does not give a thread back its FPU state
 * shows here.
 */
#define MXCSR_MARK	0xff80u
static int found_shared[2];

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int save(const char *name, int tid, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;
	int ret;

	if (tid)
		snprintf(path, sizeof(path), "%s/%s.%d.bin", dir, name, tid);
	else
		snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fwrite(buf, 1, len, f) == len ? 0 : -1;
	return fclose(f) ? -1 : ret;
}

/* signalfd4() without glibc's wrapper, which would check the flags. */
static int raw_signalfd(const sigset_t *mask, int flags)
{
	return (int)syscall(SYS_signalfd4, -1, mask, (size_t)KERNEL_SIGSET_SIZE,
			    SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC | flags);
}

/*
 * Peek the queue at @base (SFD_PER_THREAD_QUEUE_OFFSET or
 * SFD_SHARED_QUEUE_OFFSET) into @buf, then dequeue it with read() through
 * @drain_fd into @buf2; returns the two counts in @n.
 */
static int read_queue(int fd, int drain_fd, long long base, unsigned char *buf,
		      unsigned char *buf2, int n[2])
{
	size_t cap = (size_t)RECORDS_MAX * SI_MAX_SIZE;
	ssize_t got;

	n[0] = n[1] = 0;
	for (;;) {
		got = pread(fd, buf + (size_t)n[0] * SI_MAX_SIZE,
			    cap - (size_t)n[0] * SI_MAX_SIZE, base + n[0]);
		if (got <= 0)
			break;
		n[0] += got / SI_MAX_SIZE;
	}
	if (got < 0)
		return -1;
	for (;;) {
		got = read(drain_fd, buf2 + (size_t)n[1] * SI_MAX_SIZE,
			   cap - (size_t)n[1] * SI_MAX_SIZE);
		if (got <= 0)
			break;
		n[1] += got / SI_MAX_SIZE;
	}
	return got < 0 && errno != EAGAIN ? -1 : 0;
}

/* Thread @i's part once DIR/go exists: its queue, the leader's shared one. */
static int read_own_queues(int i)
{
	static unsigned char *bufs[MAX_THREADS][2];
	int tid = tids[i], n[2], fd, pfd, gfd, ret = 0;
	sigset_t all;

	sigfillset(&all);
	bufs[i][0] = malloc((size_t)RECORDS_MAX * SI_MAX_SIZE);
	bufs[i][1] = malloc((size_t)RECORDS_MAX * SI_MAX_SIZE);
	fd = raw_signalfd(&all, 0);
	pfd = raw_signalfd(&all, SFD_PRIVATE);
	gfd = raw_signalfd(&all, SFD_GROUP);
	if (!bufs[i][0] || !bufs[i][1] || fd < 0 || pfd < 0 || gfd < 0)
		return -1;
	if (read_queue(fd, pfd, SFD_PER_THREAD_QUEUE_OFFSET, bufs[i][0], bufs[i][1], n) ||
	    save("self-private", tid, bufs[i][0], (size_t)n[0] * SI_MAX_SIZE) ||
	    save("drain-private", tid, bufs[i][1], (size_t)n[1] * SI_MAX_SIZE))
		ret = -1;
	found[i][0] = n[0];
	found[i][1] = n[1];
	if (!ret && i == 0) {
		if (read_queue(fd, gfd, SFD_SHARED_QUEUE_OFFSET, bufs[i][0], bufs[i][1], n) ||
		    save("self-shared", 0, bufs[i][0], (size_t)n[0] * SI_MAX_SIZE) ||
		    save("drain-shared", 0, bufs[i][1], (size_t)n[1] * SI_MAX_SIZE))
			ret = -1;
		found_shared[0] = n[0];
		found_shared[1] = n[1];
	}
	close(fd);
	close(pfd);
	close(gfd);
	return ret;
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;

	_mm_setcsr(MXCSR_MARK);
	tids[i] = (int)syscall(SYS_gettid);
	while (turn != i)	/* the leader lets the workers read in turn */
		sleep_ms(10);
	if (read_own_queues(i))
		found[i][0] = found[i][1] = -1;
	mxcsr[i] = _mm_getcsr();
	finished = i;
	return NULL;
}

/* The SI_TIMER records pending process-wide, by a peek on TIMER_SIGNAL. */
static int timer_records(void)
{
	unsigned char buf[MAX_TIMERS * 4 * SI_MAX_SIZE];
	int fd, n = 0, i;
	sigset_t one;
	ssize_t got;

	sigemptyset(&one);
	sigaddset(&one, TIMER_SIGNAL);
	fd = raw_signalfd(&one, SFD_GROUP);
	if (fd < 0)
		return -1;
	got = pread(fd, buf, sizeof(buf), SFD_SHARED_QUEUE_OFFSET);
	close(fd);
	if (got < 0)
		return -1;
	for (i = 0; i < got / SI_MAX_SIZE; i++)
		if (((siginfo_t *)(buf + (size_t)i * SI_MAX_SIZE))->si_code == SI_TIMER)
			n++;
	return n;
}

/* Fire every timer once (now) and wait, 2 s at most, for @want records. */
static int fire_timers(int want)
{
	struct itimerspec now = { .it_value = { 0, 1 } };
	int i;

	for (i = 0; i < ntimers; i++)
		if (timer_settime(timers[i], 0, &now, NULL))
			return -1;
	for (i = 0; i < 200 && timer_records() < want; i++)
		sleep_ms(10);
	return 0;
}

static int create_timers(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL };
	int i;

	ev.sigev_signo = TIMER_SIGNAL;
	for (i = 0; i < ntimers; i++) {
		ev.sigev_value.sival_int = 1000 + i;
		if (timer_create(CLOCK_MONOTONIC, &ev, &timers[i]))
			return -1;
	}
	if (fire_timers(ntimers))
		return -1;
	return timer_records() == ntimers ? 0 : -1;
}

static int tgsigqueue(int tid, int sig, int value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	return (int)syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &si);
}

/* Returns the number of records each thread's private queue should hold. */
static int queue_records(void)
{
	int i, t;

	if (!count)	/* a process with nothing pending, the baseline */
		return 0;

	for (i = 0; i < count; i++) {
		/* two signal numbers, so that the queues interleave them */
		if (sigqueue(pid, SIGRTMIN + 1 + i % 2, (union sigval){ .sival_int = i }))
			return -1;
		for (t = 0; t < nthreads; t++)
			if (tgsigqueue(tids[t], SIGRTMIN + 3 + i % 2, (t << 16) | i))
				return -1;
	}
	for (i = 0; i < NR(shared_std); i++)
		if (kill(pid, shared_std[i]))
			return -1;
	for (t = 0; t < nthreads; t++)
		for (i = 0; i < NR(private_std); i++)
			if (syscall(SYS_tgkill, pid, tids[t], private_std[i]))
				return -1;
	return create_timers();
}

static int parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", 1, 0, 'd' }, { "count", 1, 0, 'n' },
		{ "threads", 1, 0, 't' }, { "timers", 1, 0, 'k' }, { 0, 0, 0, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'd')
			dir = optarg;
		else if (c == 'n')
			count = atoi(optarg);
		else if (c == 't')
			nthreads = atoi(optarg);
		else if (c == 'k')
			ntimers = atoi(optarg);
		else
			return -1;
	}
	return dir && count >= 0 && nthreads > 0 && nthreads <= MAX_THREADS &&
	       ntimers >= 0 && ntimers <= MAX_TIMERS && (count || !ntimers) &&
	       count + NR(shared_std) + ntimers < RECORDS_MAX ? 0 : -1;	/* per queue */
}

int main(int argc, char **argv)
{
	int want_private = 0, want_shared = 0, i, bad = 0, timer_count = 0;
	char path[4096];
	pthread_t th;
	sigset_t all;
	FILE *state;

	if (parse(argc, argv)) {
		fprintf(stderr, "usage: peek-target --dir DIR [--count N] [--threads T] "
			"[--timers K]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	state = fopen(path, "w");
	if (!state)
		return 2;
	setvbuf(state, NULL, _IOLBF, 0);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	_mm_setcsr(MXCSR_MARK);
	pid = getpid();
	tids[0] = pid;
	for (i = 1; i < nthreads; i++) {
		if (pthread_create(&th, NULL, worker, (void *)(long)i))
			return 2;
		pthread_detach(th);
		while (!tids[i])
			sleep_ms(1);
	}
	if (queue_records()) {
		fprintf(state, "queueing failed: %s\n", strerror(errno));
		return 1;
	}
	want_private = count ? count + NR(private_std) : 0;
	want_shared = count ? count + NR(shared_std) + ntimers : 0;
	fprintf(state, "ready %d private %d shared %d threads %d\n", pid,
		want_private, want_shared, nthreads);

	snprintf(path, sizeof(path), "%s/go", dir);
	while (access(path, F_OK))
		sleep_ms(10);
	if (ntimers) {
		/* a second record, if any, shows within the wait */
		if (fire_timers(2 * ntimers))
			bad = 1;
		timer_count = timer_records();
		if (timer_count != ntimers)
			bad = 1;
	}
	if (read_own_queues(0))
		found[0][0] = found[0][1] = -1;
	mxcsr[0] = _mm_getcsr();
	for (i = 1; i < nthreads; i++) {
		turn = i;
		while (finished != i)
			sleep_ms(1);
	}
	for (i = 0; i < nthreads; i++) {
		if (found[i][0] != want_private || found[i][1] != want_private ||
		    mxcsr[i] != MXCSR_MARK)
			bad = 1;
		fprintf(state, "private %d peeked %d drained %d want %d mxcsr %#x\n",
			tids[i], found[i][0], found[i][1], want_private, mxcsr[i]);
	}
	if (found_shared[0] != want_shared || found_shared[1] != want_shared)
		bad = 1;
	fprintf(state, "shared peeked %d drained %d want %d\n", found_shared[0],
		found_shared[1], want_shared);
	fprintf(state, "timers %d records %d\n", ntimers, timer_count);
	fprintf(state, "done %s\n", bad ? "bad" : "ok");
	return bad;
}
