// SPDX-License-Identifier: GPL-2.0
/*
 * sfd_requeue_bench: how long does it take to put N pending real-time
 * signals back on a process's queue, the last step of a restore?
 *
 *   w) write() of the N raw records to an SFD_RAW | SFD_GROUP signalfd
 *      (one call; the kernel queues 16 per siglock hold)
 *   s) rt_sigqueueinfo() to itself, one syscall per record (what a
 *      restorer does without write(), and what CRIU's restorer does)
 *
 * Both queue the very same records on an empty queue, in the same boot,
 * alternately; each run is verified (a peek of the whole queue must return
 * the N records byte for byte in order) and then drained. Only the requeue
 * is timed. Output: a human table, machine lines ("BENCH ...", "RATIO ...")
 * and TAP lines for the verifications. Skips on a kernel without write().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "bench_tap.h"
#include <sigmig/sfd_probe.h>

#define RUNS		3
#define PEEK_BATCH	4096

enum method { M_WRITE, M_SIGQUEUEINFO, M_NR };

static const char *const method_name[M_NR] = {
	"w:write", "s:rt_sigqueueinfo",
};

static const long sizes[] = { 1000, 10000, 100000, 1000000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* N SI_QUEUE records of SIGRTMIN with the values 0..N-1, from this process. */
static siginfo_t *make_records(long n)
{
	siginfo_t *rec = calloc((size_t)n, sizeof(*rec));
	long i;

	if (!rec)
		return NULL;
	for (i = 0; i < n; i++) {
		rec[i].si_signo = SIGRTMIN;
		rec[i].si_code = SI_QUEUE;
		rec[i].si_pid = getpid();
		rec[i].si_uid = getuid();
		rec[i].si_value.sival_int = (int)i;
	}
	return rec;
}

static int requeue_write(int fd, const siginfo_t *rec, long n)
{
	long done = 0;
	ssize_t w;

	while (done < n) {
		w = write(fd, rec + done, (size_t)(n - done) * sizeof(*rec));
		if (w <= 0) {
			fprintf(stderr, "write at record %ld: %s\n", done,
				w < 0 ? strerror(errno) : "0");
			return -1;
		}
		done += w / (ssize_t)sizeof(*rec);
	}
	return 0;
}

static int requeue_sigqueueinfo(const siginfo_t *rec, long n)
{
	pid_t pid = getpid();
	long i;

	for (i = 0; i < n; i++) {
		if (syscall(SYS_rt_sigqueueinfo, pid, rec[i].si_signo, &rec[i])) {
			fprintf(stderr, "rt_sigqueueinfo #%ld: %s\n", i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The whole process-wide queue equals @rec, byte for byte, in order. */
static int queue_is(int fd, const siginfo_t *rec, long n, siginfo_t *buf)
{
	long got = 0;
	ssize_t r;

	for (;;) {
		r = pread(fd, buf, PEEK_BATCH * sizeof(*buf), SFD_SHARED_QUEUE_OFFSET + got);
		if (r <= 0)
			break;
		if (got + r / (long)sizeof(*buf) > n ||
		    memcmp(buf, rec + got, (size_t)r))
			return 0;
		got += r / (long)sizeof(*buf);
	}
	return r == 0 && got == n;
}

static void drain(int fd, siginfo_t *buf)
{
	while (read(fd, buf, PEEK_BATCH * sizeof(*buf)) > 0)
		;
}

/* One timed requeue with @m, verified and drained; seconds or < 0. */
static double run_once(enum method m, int fd, const siginfo_t *rec, long n,
		       siginfo_t *buf, int *verified)
{
	double t0 = now(), t;
	int ret;

	ret = m == M_WRITE ? requeue_write(fd, rec, n) : requeue_sigqueueinfo(rec, n);
	t = now() - t0;
	*verified &= !ret && queue_is(fd, rec, n, buf);
	drain(fd, buf);
	return ret ? -1 : t;
}

static int raise_limit(long n)
{
	struct rlimit rl = { (rlim_t)n + 1024, (rlim_t)n + 1024 };

	return setrlimit(RLIMIT_SIGPENDING, &rl);
}

static void bench_n(long n, int fd, siginfo_t *buf, double best[M_NR])
{
	int verified[M_NR] = { 1, 1 }, run, m;
	siginfo_t *rec = make_records(n);
	double t;

	for (m = 0; m < M_NR; m++)
		best[m] = -1;
	if (!rec || raise_limit(n)) {
		tap(0, "N=%ld: %s", n, rec ? "setrlimit(RLIMIT_SIGPENDING) failed" :
		    "out of memory");
		free(rec);
		return;
	}
	/* alternately, so that a noisy moment costs both methods alike */
	for (run = 0; run < RUNS; run++) {
		for (m = 0; m < M_NR; m++) {
			t = run_once((enum method)m, fd, rec, n, buf, &verified[m]);
			if (t >= 0 && (best[m] < 0 || t < best[m]))
				best[m] = t;
		}
	}
	for (m = 0; m < M_NR; m++) {
		printf("# %-20s %9ld %12.6f %12.1f %s\n", method_name[m], n, best[m],
		       best[m] * 1e9 / n, verified[m] ? "yes" : "NO");
		printf("BENCH method=%c n=%ld seconds=%.6f verified=%d\n",
		       "ws"[m], n, best[m], verified[m]);
		tap(verified[m] && best[m] >= 0,
		    "%s N=%ld queued the %ld records byte for byte in order (%d runs)",
		    method_name[m], n, n, RUNS);
	}
	free(rec);
}

int main(void)
{
	double best[NSIZES][M_NR];
	siginfo_t *buf;
	sigset_t all;
	unsigned int i;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (!sfd_probe_write()) {
		printf("1..0 # SKIP signalfd has no write() on this kernel\n");
		return 0;
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	memset(&all, 0xff, sizeof(all));
	fd = sfd_signalfd(-1, &all, SFD_RAW | SFD_GROUP | SFD_NONBLOCK | SFD_CLOEXEC);
	buf = malloc(PEEK_BATCH * sizeof(*buf));
	if (fd < 0 || !buf) {
		printf("not ok 1 - signalfd4(SFD_RAW | SFD_GROUP): %s\n1..1\n", strerror(errno));
		return 1;
	}
	printf("# sfd_requeue_bench: put N pending RT signals back, same boot, best of %d\n",
	       RUNS);
	printf("# %-20s %9s %12s %12s %s\n", "method", "N", "seconds", "ns/entry",
	       "verified");
	for (i = 0; i < NSIZES; i++)
		bench_n(sizes[i], fd, buf, best[i]);
	for (i = 0; i < NSIZES; i++) {
		if (best[i][M_WRITE] > 0 && best[i][M_SIGQUEUEINFO] > 0)
			printf("RATIO name=s_over_w n=%ld value=%.2f\n", sizes[i],
			       best[i][M_SIGQUEUEINFO] / best[i][M_WRITE]);
	}
	if (best[2][M_WRITE] > 0 && best[1][M_WRITE] > 0)
		printf("RATIO name=w100k_over_w10k n=100000 value=%.2f\n",
		       best[2][M_WRITE] / best[1][M_WRITE]);
	if (best[3][M_WRITE] > 0 && best[2][M_WRITE] > 0)
		printf("RATIO name=w1M_over_w100k n=1000000 value=%.2f\n",
		       best[3][M_WRITE] / best[2][M_WRITE]);
	printf("1..%d\n", tap_no);
	close(fd);
	free(buf);
	return tap_failed;
}
