/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the signalfd selftests: raw syscalls, a SA_SIGINFO
 * capture handler, queue flushing and siginfo comparison.
 *
 * Everything here is plain userspace code that talks to the real kernel;
 * the tests compare what the new signalfd interface returns with what the
 * kernel independently delivers to a handler or to PTRACE_PEEKSIGINFO.
 */
#ifndef SFD_COMMON_H
#define SFD_COMMON_H

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>

/*
 * <linux/signalfd.h> builds its flags on the O_* constants of
 * <linux/fcntl.h>, whose struct flock clashes with glibc's <fcntl.h>:
 * glibc's O_* are the same values, so take those.
 */
#define _LINUX_FCNTL_H
#include <linux/signalfd.h>

/*
 * One siginfo_t, thus one SFD_RAW record (<asm-generic/siginfo.h>, which
 * cannot be included beside glibc's <signal.h>).
 */
#ifndef SI_MAX_SIZE
#define SI_MAX_SIZE	128
#endif

/*
 * signalfd4()'s sizemask: the kernel's sigset_t, _NSIG (64) bits on every
 * architecture the tests run on, i386 compat included. glibc's sigset_t
 * is 1024 bits; the kernel reads only the first 8 bytes of it.
 */
#define KERNEL_SIGSET_SIZE	8

#include "sfd_probe.h"

/*
 * A program whose tests need the interface skips as a whole on a kernel
 * without it (SFD_RAW is its first flag, which no other kernel takes); one
 * that tests what any kernel does defines SFD_ANY_KERNEL before including
 * this file. A kernel that has the interface runs every test, and a broken
 * one fails them.
 */
#ifndef SFD_ANY_KERNEL
static void __attribute__((constructor)) sfd_require_interface(void)
{
	if (sfd_interface_present())
		return;
	ksft_print_header();
	ksft_exit_skip("kernel without the signalfd pending-signal interface (SFD_RAW)\n");
}
#endif

/* Older glibc headers do not name the SIGEV_THREAD_ID target. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static_assert(sizeof(siginfo_t) == SI_MAX_SIZE, "siginfo_t is 128 bytes");
static_assert(sizeof(struct signalfd_siginfo) == SI_MAX_SIZE,
	      "signalfd_siginfo is 128 bytes");

/* The timer layout's kernel-internal word follows si_value. */
#define SI_SYS_PRIVATE_OFF	(offsetof(siginfo_t, si_value) + sizeof(union sigval))

static inline int si_sys_private(const siginfo_t *si)
{
	int v;

	memcpy(&v, (const char *)si + SI_SYS_PRIVATE_OFF, sizeof(v));
	return v;
}

static inline pid_t sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline int sys_signalfd4(int fd, const sigset_t *mask, size_t size,
				int flags)
{
	return (int)syscall(SYS_signalfd4, fd, mask, size, flags);
}

/* Opens a signalfd on @sigs (terminated by 0) with @flags. */
static inline int sfd_open_sigs(int flags, const int *sigs)
{
	sigset_t mask;

	sigemptyset(&mask);
	for (; *sigs; sigs++)
		sigaddset(&mask, *sigs);
	return sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE, flags);
}

/* A non-blocking signalfd on every signal, with @flags (SFD_RAW, a queue). */
static inline int sfd_open_all(int flags)
{
	sigset_t mask;

	sigfillset(&mask);
	return sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE,
			     SFD_NONBLOCK | SFD_CLOEXEC | flags);
}

static inline int sys_rt_sigqueueinfo(pid_t tgid, int sig, const siginfo_t *si)
{
	return (int)syscall(SYS_rt_sigqueueinfo, tgid, sig, si);
}

static inline int sys_rt_tgsigqueueinfo(pid_t tgid, pid_t tid, int sig,
					const siginfo_t *si)
{
	return (int)syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, si);
}

static inline int sys_tgkill(pid_t tgid, pid_t tid, int sig)
{
	return (int)syscall(SYS_tgkill, tgid, tid, sig);
}

/* Builds a zeroed siginfo with the common header filled in. */
static inline void si_init(siginfo_t *si, int sig, int code)
{
	memset(si, 0, sizeof(*si));
	si->si_signo = sig;
	si->si_code = code;
}

/* Blocks or unblocks everything the tests use; SIGALRM stays for timeouts. */
static inline void block_test_signals(int how)
{
	sigset_t set;

	sigfillset(&set);
	sigdelset(&set, SIGALRM);
	sigdelset(&set, SIGABRT);
	sigprocmask(how, &set, NULL);
}

static inline void block_signal(int sig, int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(how, &set, NULL);
}

static inline int is_pending(int sig)
{
	sigset_t set;

	if (sigpending(&set))
		return 0;
	return sigismember(&set, sig);
}

/*
 * Sleeps without time structures: a 32-bit glibc uses the time32 syscalls
 * for nanosleep(), which a kernel without COMPAT_32BIT_TIME lacks.
 */
/*
 * Periods of a 1 ms periodic CLOCK_MONOTONIC timer that @ms must at least
 * contain, less 2: the kernel forwards a timer by at least its clock's
 * resolution, which is a tick (4 ms at HZ=250) when high-resolution timers
 * are not active on this boot.
 */
static inline long periods_in_ms(long ms)
{
	struct timespec res;
	long period_ns = 1000000;

	if (!clock_getres(CLOCK_MONOTONIC, &res) && res.tv_sec == 0 &&
	    res.tv_nsec > period_ns)
		period_ns = res.tv_nsec;
	return ms * 1000000 / period_ns - 2;
}

static inline void sleep_ms(int ms)
{
	poll(NULL, 0, ms);
}

/* Waits (bounded) until @sig is pending for the calling thread or process. */
static inline int wait_pending(int sig, int timeout_ms)
{
	int i;

	for (i = 0; i < timeout_ms; i++) {
		if (is_pending(sig))
			return 1;
		sleep_ms(1);
	}
	return is_pending(sig);
}

/* Discards every pending instance of @sig (both queues) without handlers. */
static inline void flush_signal(int sig)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	while (sigtimedwait(&set, NULL, &zero) == sig)
		;
}

static inline void flush_all_signals(void)
{
	int sig;

	for (sig = 1; sig <= SIGRTMAX; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGALRM ||
		    (sig > 31 && sig < SIGRTMIN))
			continue;
		flush_signal(sig);
	}
}

/* SA_SIGINFO capture: stores the first @capture_max deliveries. */
#define CAPTURE_MAX 16
static siginfo_t captured[CAPTURE_MAX];
static sig_atomic_t ncaptured;

/*
 * What a handler stores, read and written as atomics: the compiler may
 * otherwise keep a value across the syscall that runs the handler.
 */
#define SIG_LOAD(x)	__atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define SIG_STORE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

static inline void capture_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sig_atomic_t n = SIG_LOAD(ncaptured);

	if (n < CAPTURE_MAX)
		memcpy(&captured[n], si, sizeof(*si));
	SIG_STORE(ncaptured, n + 1);
}

static inline int capture_install(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = capture_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	SIG_STORE(ncaptured, 0);
	memset(captured, 0, sizeof(captured));
	return sigaction(sig, &sa, NULL);
}

static inline int capture_reset(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	return sigaction(sig, &sa, NULL);
}

/* Prints both records (hex) and the differing offsets as TAP comments. */
static inline void siginfo_dump_diff(const char *what, const void *exp,
				     const void *got, size_t len)
{
	const unsigned char *a = exp, *b = got;
	size_t i;

	printf("# %s: records differ\n", what);
	for (i = 0; i < len; i += 16) {
		size_t j;

		if (!memcmp(a + i, b + i, 16))
			continue;
		printf("#  off %3zu expected:", i);
		for (j = 0; j < 16; j++)
			printf(" %02x", a[i + j]);
		printf("\n#  off %3zu      got:", i);
		for (j = 0; j < 16; j++)
			printf(" %02x", b[i + j]);
		printf("\n");
	}
	fflush(stdout);
}

/* Returns 0 when both 128-byte records are identical, else dumps and 1. */
static inline int siginfo_cmp(const char *what, const void *exp, const void *got)
{
	if (!memcmp(exp, got, SI_MAX_SIZE))
		return 0;
	siginfo_dump_diff(what, exp, got, SI_MAX_SIZE);
	return 1;
}

/* Reads exactly one record, non-blocking fd expected. */
static inline ssize_t sfd_read_one(int fd, void *rec)
{
	return read(fd, rec, SI_MAX_SIZE);
}

static inline ssize_t sfd_peek(int fd, void *buf, size_t nrec, long long off)
{
	return pread(fd, buf, nrec * SI_MAX_SIZE, (off_t)off);
}

/* Raises RLIMIT_SIGPENDING so that @n signals can be queued. */
/* The calling user's pending-signal count, SigQ in /proc/self/status; -1 if unknown. */
static inline long sigq_count(void)
{
	char line[256];
	long n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigQ: %ld/", &n) == 1)
			break;
	fclose(f);
	return n;
}

static inline int raise_sigpending(rlim_t n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_SIGPENDING, &rl))
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= n)
		return 0;
	rl.rlim_cur = n;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < n)
		rl.rlim_max = n;
	return setrlimit(RLIMIT_SIGPENDING, &rl);
}

/* Queues an SI_QUEUE signal carrying @val to the process-wide queue. */
static inline int q_shared(int sig, int val)
{
	union sigval v;

	memset(&v, 0, sizeof(v));
	v.sival_int = val;
	return sigqueue(getpid(), sig, v);
}

/* Queues an SI_QUEUE signal carrying @val to the calling thread's queue. */
static inline int q_private(int sig, int val)
{
	siginfo_t si;

	si_init(&si, sig, SI_QUEUE);
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = val;
	return sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), sig, &si);
}

static inline int rec_signo(const void *rec)
{
	int signo;

	memcpy(&signo, rec, sizeof(signo));	/* first word in both formats */
	return signo;
}

/*
 * Dequeue order differs from list order (synchronous signals first, then
 * lowest number), but within one signal number it is FIFO. Checks that
 * @deq is exactly @peek re-ordered that way: same multiset, per-signal
 * order preserved, every record byte-identical. Returns 0 on success.
 */
static inline int match_dequeue_to_peek(const void *peek, size_t np,
					const void *deq, size_t nd)
{
	const unsigned char *p = peek, *d = deq;
	size_t next[_NSIG];
	size_t i;
	int sig;

	if (np != nd) {
		printf("# peeked %zu records, dequeued %zu\n", np, nd);
		return 1;
	}
	for (sig = 0; sig < _NSIG; sig++)
		next[sig] = 0;
	for (i = 0; i < nd; i++) {
		const unsigned char *rec = d + i * SI_MAX_SIZE;
		size_t j;

		sig = rec_signo(rec);
		if (sig <= 0 || sig >= _NSIG)
			return 1;
		for (j = next[sig]; j < np; j++)
			if (rec_signo(p + j * SI_MAX_SIZE) == sig)
				break;
		if (j == np) {
			printf("# dequeued record %zu (sig %d) was not peeked\n", i, sig);
			return 1;
		}
		if (siginfo_cmp("peek vs dequeue", p + j * SI_MAX_SIZE, rec))
			return 1;
		next[sig] = j + 1;
	}
	return 0;
}

/* Peeks a whole queue starting at @base, @batch records per call. */
static inline ssize_t peek_all(int fd, long long base, void *buf, size_t max,
			       size_t batch)
{
	size_t got = 0;

	for (;;) {
		size_t want = batch < max - got ? batch : max - got;
		ssize_t r;

		if (!want)
			return (ssize_t)got;
		r = sfd_peek(fd, (char *)buf + got * SI_MAX_SIZE, want,
			     base + (long long)got);
		if (r < 0)
			return r;
		if (r % SI_MAX_SIZE)
			return -1;
		if (!r)
			return (ssize_t)got;
		got += (size_t)r / SI_MAX_SIZE;
	}
}

/* Dequeues everything readable from @fd (non-blocking) into @buf. */
/* peek_all() of the queue at @base through @fd, which it closes (-1: no fd). */
static inline ssize_t peek_and_close(int fd, long long base, void *buf, size_t max)
{
	ssize_t n;

	if (fd < 0)
		return -1;
	n = peek_all(fd, base, buf, max, max);
	close(fd);
	return n;
}

/*
 * A POSIX timer on @clk sending @sig with @value to the process
 * (SIGEV_SIGNAL) or to the calling thread (SIGEV_THREAD_ID);
 * (timer_t)-1 on failure.
 */
static inline timer_t sfd_timer(clockid_t clk, int notify, int sig, int value)
{
	struct sigevent sev;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = notify;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_int = value;
	sev.sigev_notify_thread_id = sys_gettid();
	if (timer_create(clk, &sev, &t))
		return (timer_t)-1;
	return t;
}

/* Arm @t: the first expiry in @first_ns, then every @interval_ns (0: once). */
static inline int sfd_timer_arm(timer_t t, long first_ns, long interval_ns)
{
	struct itimerspec its = {
		.it_value = { first_ns / 1000000000, first_ns % 1000000000 },
		.it_interval = { interval_ns / 1000000000,
				 interval_ns % 1000000000 },
	};

	return timer_settime(t, 0, &its, NULL);
}

static inline ssize_t dequeue_all(int fd, void *buf, size_t max)
{
	size_t got = 0;

	while (got < max) {
		size_t want = max - got < 64 ? max - got : 64;
		ssize_t r = read(fd, (char *)buf + got * SI_MAX_SIZE,
				 want * SI_MAX_SIZE);

		if (r < 0)
			return errno == EAGAIN ? (ssize_t)got : -1;
		if (!r)
			break;
		got += (size_t)r / SI_MAX_SIZE;
	}
	return (ssize_t)got;
}

/* For the harness's tests (kselftest_harness.h comes first) */
/* EXPECT_ERRNO(errno, call[, printf-style context]) */
#define EXPECT_ERRNO(err, call, ...) do {				\
		long __ret;						\
		int __err;						\
		errno = 0;						\
		__ret = (long)(call);					\
		__err = errno;						\
		EXPECT_EQ(-1, __ret) TH_LOG("" __VA_ARGS__);		\
		EXPECT_EQ(err, __err) TH_LOG("" __VA_ARGS__);		\
	} while (0)

#define SFD_MISSING_MSG \
	"signalfd4(SFD_RAW) failed: kernel lacks the sigmig signalfd interface"

#endif /* SFD_COMMON_H */
