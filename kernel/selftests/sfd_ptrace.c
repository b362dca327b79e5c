// SPDX-License-Identifier: GPL-2.0
/*
 * pread() on a signalfd and PTRACE_PEEKSIGINFO read the same queues: a
 * tracee peeks its own per-thread and process-wide queues through a
 * SFD_RAW signalfd, then a tracer reads them with PTRACE_PEEKSIGINFO in
 * batches of 32 (as CRIU does). Both must return the same records, byte for
 * byte, including SI_TIMER records of periodic timers, whose kernel-internal
 * si_sys_private neither interface may expose. Neither reader consumes
 * anything. A second, non-leader thread of the tracee does the same with
 * its own per-thread queue, read by the tracer through its tid.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV		SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED		SFD_SHARED_QUEUE_OFFSET
#define MAXREC		512
#define NSHARED_RT	100	/* more than a few ptrace batches */
#define NPRIV_RT	70
#define PTRACE_BATCH	32

#define SIG_SHARED_RT	(SIGRTMIN)
#define SIG_PRIV_RT	(SIGRTMIN + 1)
#define SIG_TIMER_SH	(SIGRTMIN + 2)
#define SIG_TIMER_TH	(SIGRTMIN + 3)
#define SIG_TIMER_T2	(SIGRTMIN + 4)
#define NTHREAD_RT	40

/* What the tracee saw with pread, shared with the tracer. */
struct peeked {
	ssize_t n[2];				/* [0] per-thread, [1] shared */
	unsigned char rec[2][MAXREC * SI_MAX_SIZE];
};

struct tracee_shm {
	struct peeked before;	/* before the tracer looked */
	struct peeked after;	/* after it detached */
	struct peeked thread_before;	/* the same, seen by the second thread */
	struct peeked thread_after;
	pid_t thread_tid;
	int timer_id[3];	/* kernel ids: shared, leader's, thread's timer */
	int thread_state;	/* 1 filled and peeked, -1 failed */
	char error[128];
};

/*
 * A periodic timer, so that its entry carries a rearm cookie that must not
 * leak; its interval is long enough that no expiry is missed while the
 * test runs, so that both peeks report the same overrun, 0.
 */
static int start_timer(int sig, int thread_directed, timer_t *t)
{
	struct itimerspec its = { { 600, 0 }, { 0, 1000000 } };
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = thread_directed ? SIGEV_THREAD_ID : SIGEV_SIGNAL;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_int = sig;
	sev.sigev_notify_thread_id = sys_gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, t))
		return -1;
	if (timer_settime(*t, 0, &its, NULL))
		return -1;
	return wait_pending(sig, 5000) ? 0 : -1;
}

static int fill_queues(struct tracee_shm *shm)
{
	timer_t tsh, tth;
	siginfo_t si;
	int i;

	if (start_timer(SIG_TIMER_SH, 0, &tsh) ||
	    start_timer(SIG_TIMER_TH, 1, &tth))
		return -1;
	/* glibc's timer_t of a signal-notifying timer is the kernel's id */
	shm->timer_id[0] = (int)(intptr_t)tsh;
	shm->timer_id[1] = (int)(intptr_t)tth;
	if (kill(getpid(), SIGUSR1) || sys_tgkill(getpid(), sys_gettid(), SIGUSR2))
		return -1;
	si_init(&si, SIGSEGV, SEGV_ACCERR);
	si.si_addr = (void *)(uintptr_t)0xabc000;
	if (sys_rt_sigqueueinfo(getpid(), SIGSEGV, &si))
		return -1;
	si_init(&si, SIGBUS, BUS_ADRERR);
	si.si_addr = (void *)(uintptr_t)0xdef000;
	if (sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), SIGBUS, &si))
		return -1;
	for (i = 0; i < NSHARED_RT; i++)
		if (q_shared(SIG_SHARED_RT, i))
			return -1;
	for (i = 0; i < NPRIV_RT; i++)
		if (q_private(SIG_PRIV_RT, i))
			return -1;
	return 0;
}

static int peek_both(struct peeked *p)
{
	sigset_t all;
	int fd, q;

	sigfillset(&all);
	fd = sys_signalfd4(-1, &all, KERNEL_SIGSET_SIZE, SFD_RAW | SFD_NONBLOCK);
	if (fd < 0)
		return -1;
	for (q = 0; q < 2; q++) {
		memset(p->rec[q], 0xa5, sizeof(p->rec[q]));
		p->n[q] = peek_all(fd, q ? SHARED : PRIV, p->rec[q], MAXREC, 4096);
	}
	close(fd);
	return p->n[0] < 0 || p->n[1] < 0 ? -1 : 0;
}

struct second_thread {
	struct tracee_shm *shm;
	int go_fd;
};

/* A non-leader thread fills and peeks its own queue, then waits like main. */
static void *second_thread_main(void *arg)
{
	struct second_thread *st = arg;
	struct tracee_shm *shm = st->shm;
	timer_t t;
	siginfo_t si;
	char c;
	int i, ok = 1;

	shm->thread_tid = sys_gettid();
	ok &= !start_timer(SIG_TIMER_T2, 1, &t);
	shm->timer_id[2] = (int)(intptr_t)t;
	ok &= !sys_tgkill(getpid(), sys_gettid(), SIGUSR1);
	si_init(&si, SIGILL, ILL_ILLOPN);
	si.si_addr = (void *)(uintptr_t)0x111000;
	ok &= !sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), SIGILL, &si);
	for (i = 0; ok && i < NTHREAD_RT; i++)
		ok &= !q_private(SIG_PRIV_RT, 1000 + i);
	ok &= !peek_both(&shm->thread_before);
	__atomic_store_n(&shm->thread_state, ok ? 1 : -1, __ATOMIC_RELEASE);
	if (!ok)
		return NULL;
	while (read(st->go_fd, &c, 1) < 0 && errno == EINTR)
		;
	peek_both(&shm->thread_after);
	return NULL;
}

static void tracee(struct tracee_shm *shm, int ready_fd, int go_fd)
{
	struct second_thread st = { shm, go_fd };
	pthread_t thread;
	int state;
	char c = 'r';

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	if (raise_sigpending(4096) || fill_queues(shm)) {
		snprintf(shm->error, sizeof(shm->error), "fill: %s", strerror(errno));
		_exit(1);
	}
	if (peek_both(&shm->before)) {
		snprintf(shm->error, sizeof(shm->error), "peek: %s", strerror(errno));
		_exit(1);
	}
	if (pthread_create(&thread, NULL, second_thread_main, &st))
		_exit(1);
	while (!(state = __atomic_load_n(&shm->thread_state, __ATOMIC_ACQUIRE)))
		sleep_ms(1);
	if (state < 0) {
		snprintf(shm->error, sizeof(shm->error), "second thread failed");
		_exit(1);
	}
	if (write(ready_fd, &c, 1) != 1)
		_exit(1);
	/* The tracer interrupts us here and reads the queues. */
	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;
	pthread_join(thread, NULL);
	_exit(peek_both(&shm->after) ? 1 : 0);
}

/* Reads a whole queue of @pid with PTRACE_PEEKSIGINFO, @nr at a time. */
static ssize_t ptrace_peek_all(pid_t pid, int shared, unsigned char *buf,
			       size_t max, unsigned int nr)
{
	struct __ptrace_peeksiginfo_args args = {
		.flags = shared ? PTRACE_PEEKSIGINFO_SHARED : 0,
		.nr = nr,
	};
	size_t got = 0;
	long r;

	memset(buf, 0x5a, max * SI_MAX_SIZE);
	while (got + nr <= max) {
		args.off = got;
		r = ptrace(PTRACE_PEEKSIGINFO, pid, &args, buf + got * SI_MAX_SIZE);
		if (r < 0)
			return -1;
		if (!r)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

FIXTURE(ptrace)
{
	struct tracee_shm *shm;
	pid_t pid;
	int go[2];
	int attached;
	int thread_attached;
	unsigned char buf[MAXREC * SI_MAX_SIZE];
};

FIXTURE_SETUP(ptrace)
{
	struct pollfd pfd = { .events = POLLIN };
	int ready[2], status;
	pid_t tid;
	char c;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	self->shm = mmap(NULL, sizeof(*self->shm), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->shm);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(self->go));
	self->pid = fork();
	ASSERT_LE(0, self->pid);
	if (self->pid == 0) {
		close(ready[0]);
		close(self->go[1]);
		tracee(self->shm, ready[1], self->go[0]);
	}
	close(ready[1]);
	close(self->go[0]);
	pfd.fd = ready[0];
	ASSERT_EQ(1, poll(&pfd, 1, 30000)) TH_LOG("tracee never got ready");
	ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("tracee: %s", self->shm->error);
	close(ready[0]);

	ASSERT_EQ(0, ptrace(PTRACE_SEIZE, self->pid, 0, 0));
	self->attached = 1;
	ASSERT_EQ(0, ptrace(PTRACE_INTERRUPT, self->pid, 0, 0));
	ASSERT_EQ(self->pid, waitpid(self->pid, &status, __WALL));
	ASSERT_TRUE(WIFSTOPPED(status));

	tid = self->shm->thread_tid;
	ASSERT_EQ(0, ptrace(PTRACE_SEIZE, tid, 0, 0));
	self->thread_attached = 1;
	ASSERT_EQ(0, ptrace(PTRACE_INTERRUPT, tid, 0, 0));
	ASSERT_EQ(tid, waitpid(tid, &status, __WALL));
	ASSERT_TRUE(WIFSTOPPED(status));
}

FIXTURE_TEARDOWN(ptrace)
{
	if (self->thread_attached)
		ptrace(PTRACE_DETACH, self->shm->thread_tid, 0, 0);
	if (self->attached)
		ptrace(PTRACE_DETACH, self->pid, 0, 0);
	close(self->go[1]);
	kill(self->pid, SIGKILL);
	waitpid(self->pid, NULL, __WALL);
	munmap(self->shm, sizeof(*self->shm));
}

static int records_equal(const unsigned char *exp, const unsigned char *got,
			 ssize_t n, const char *what)
{
	ssize_t i;
	int bad = 0;

	for (i = 0; i < n; i++) {
		if (!siginfo_cmp(what, exp + i * SI_MAX_SIZE, got + i * SI_MAX_SIZE))
			continue;
		printf("#  ^ record %zd\n", i);
		if (++bad > 4)
			break;
	}
	return bad;
}

static const siginfo_t *find_code(const unsigned char *buf, ssize_t n,
				  int sig, int code)
{
	ssize_t i;

	for (i = 0; i < n; i++) {
		const siginfo_t *si = (const siginfo_t *)(buf + i * SI_MAX_SIZE);

		if (si->si_signo == sig && si->si_code == code)
			return si;
	}
	return NULL;
}

static void compare_queue_of(struct __test_metadata *_metadata,
			     struct _test_data_ptrace *self, pid_t tid,
			     const struct peeked *p, int shared,
			     ssize_t expect_n, int timer_sig)
{
	const siginfo_t *timer;
	ssize_t n;

	ASSERT_EQ(expect_n, p->n[shared]);
	n = ptrace_peek_all(tid, shared, self->buf, MAXREC, PTRACE_BATCH);
	ASSERT_EQ(p->n[shared], n) TH_LOG("PTRACE_PEEKSIGINFO: %s", strerror(errno));
	EXPECT_EQ(0, records_equal(p->rec[shared], self->buf, n, "pread vs ptrace"));

	timer = find_code(self->buf, n, timer_sig, SI_TIMER);
	ASSERT_NE(NULL, timer);
	EXPECT_EQ(timer_sig, timer->si_value.sival_int);
	EXPECT_EQ(0, si_sys_private(timer)) TH_LOG("PTRACE_PEEKSIGINFO leaks si_sys_private");
	timer = find_code(p->rec[shared], n, timer_sig, SI_TIMER);
	ASSERT_NE(NULL, timer);
	EXPECT_EQ(0, si_sys_private(timer));
}

static void compare_queue(struct __test_metadata *_metadata,
			  struct _test_data_ptrace *self, int shared,
			  ssize_t expect_n, int timer_sig)
{
	compare_queue_of(_metadata, self, self->pid, &self->shm->before, shared,
			 expect_n, timer_sig);
}

/*
 * What a queue must hold, built from what the tracee sent rather than read
 * back through either interface, so that a fault both readers share (a
 * leaked si_sys_private, a wrong overrun) cannot pass for agreement: the
 * timer's record as it queued it (overrun 0, no cookie), one legacy
 * signal, one fault and @nrt SI_QUEUE records with values @base + i.
 */
static ssize_t expected_queue(unsigned char *buf, pid_t pid, int timer_sig,
			      int timer_id, int sig, int code, int fault_sig,
			      int fault_code, uintptr_t addr, int rt_sig,
			      int nrt, int base)
{
	siginfo_t *si = (siginfo_t *)buf;
	int i;

	si_init(si, timer_sig, SI_TIMER);
	si->si_timerid = timer_id;
	si->si_overrun = 0;
	si->si_value.sival_int = timer_sig;
	si_init(++si, sig, code);
	si->si_pid = pid;
	si->si_uid = getuid();
	si_init(++si, fault_sig, fault_code);
	si->si_addr = (void *)addr;
	for (i = 0; i < nrt; i++) {
		si_init(++si, rt_sig, SI_QUEUE);
		si->si_pid = pid;
		si->si_uid = getuid();
		si->si_value.sival_int = base + i;
	}
	return 3 + nrt;
}

static void expect_queue(struct __test_metadata *_metadata,
			 struct _test_data_ptrace *self, pid_t tid, int shared,
			 const unsigned char *exp, ssize_t nexp,
			 const struct peeked *p)
{
	ssize_t n;

	ASSERT_EQ(nexp, p->n[shared]);
	EXPECT_EQ(0, records_equal(exp, p->rec[shared], nexp, "expected vs pread"));
	n = ptrace_peek_all(tid, shared, self->buf, MAXREC, PTRACE_BATCH);
	ASSERT_EQ(nexp, n) TH_LOG("PTRACE_PEEKSIGINFO: %s", strerror(errno));
	EXPECT_EQ(0, records_equal(exp, self->buf, n, "expected vs ptrace"));
}

TEST_F(ptrace, queues_hold_what_was_sent)
{
	static unsigned char exp[MAXREC * SI_MAX_SIZE];
	const struct tracee_shm *shm = self->shm;
	ssize_t n;

	n = expected_queue(exp, self->pid, SIG_TIMER_TH, shm->timer_id[1],
			   SIGUSR2, SI_TKILL, SIGBUS, BUS_ADRERR, 0xdef000,
			   SIG_PRIV_RT, NPRIV_RT, 0);
	expect_queue(_metadata, self, self->pid, 0, exp, n, &shm->before);
	n = expected_queue(exp, self->pid, SIG_TIMER_SH, shm->timer_id[0],
			   SIGUSR1, SI_USER, SIGSEGV, SEGV_ACCERR, 0xabc000,
			   SIG_SHARED_RT, NSHARED_RT, 0);
	expect_queue(_metadata, self, self->pid, 1, exp, n, &shm->before);
	n = expected_queue(exp, self->pid, SIG_TIMER_T2, shm->timer_id[2],
			   SIGUSR1, SI_TKILL, SIGILL, ILL_ILLOPN, 0x111000,
			   SIG_PRIV_RT, NTHREAD_RT, 1000);
	expect_queue(_metadata, self, shm->thread_tid, 0, exp, n,
		     &shm->thread_before);
}

/* Timer, tgkill, SIGBUS fault and the RT signals. */
TEST_F(ptrace, per_thread_queue_identical)
{
	compare_queue(_metadata, self, 0, 3 + NPRIV_RT, SIG_TIMER_TH);
}

/* Timer, kill, SIGSEGV fault and the RT signals. */
TEST_F(ptrace, shared_queue_identical)
{
	compare_queue(_metadata, self, 1, 3 + NSHARED_RT, SIG_TIMER_SH);
}

/* A non-leader thread's own queue, read by tid; timer, tgkill, SIGILL, RT. */
TEST_F(ptrace, second_thread_queue_identical)
{
	const struct peeked *p = &self->shm->thread_before;

	compare_queue_of(_metadata, self, self->shm->thread_tid, p, 0,
			 3 + NTHREAD_RT, SIG_TIMER_T2);
	/* Its records are its own, not the leader's. */
	EXPECT_NE(NULL, find_code(p->rec[0], p->n[0], SIGILL, ILL_ILLOPN));
	EXPECT_EQ(NULL, find_code(p->rec[0], p->n[0], SIGBUS, BUS_ADRERR));
}

/* The process-wide queue is the same whichever thread reads it. */
TEST_F(ptrace, shared_queue_same_from_every_thread)
{
	const struct tracee_shm *shm = self->shm;
	ssize_t n;

	ASSERT_EQ(shm->before.n[1], shm->thread_before.n[1]);
	EXPECT_EQ(0, records_equal(shm->before.rec[1], shm->thread_before.rec[1],
				   shm->before.n[1], "leader vs thread pread"));
	n = ptrace_peek_all(shm->thread_tid, 1, self->buf, MAXREC, PTRACE_BATCH);
	ASSERT_EQ(shm->before.n[1], n);
	EXPECT_EQ(0, records_equal(shm->before.rec[1], self->buf, n,
				   "leader pread vs thread ptrace"));
}

/* Both count from the head of the queue: any window matches. */
TEST_F(ptrace, windows_at_offsets_identical)
{
	static const struct { unsigned int off, nr; } win[] = {
		{ 0, 1 }, { 1, 7 }, { 31, 2 }, { 37, 10 }, { 64, 32 }, { 100, 32 },
	};
	const struct peeked *p = &self->shm->before;
	struct __ptrace_peeksiginfo_args args;
	unsigned int i;
	int shared;

	for (shared = 0; shared < 2; shared++) {
		for (i = 0; i < ARRAY_SIZE(win); i++) {
			long want = p->n[shared] - (long)win[i].off;
			long r;

			if (want > (long)win[i].nr)
				want = win[i].nr;
			if (want < 0)
				want = 0;
			args.off = win[i].off;
			args.nr = win[i].nr;
			args.flags = shared ? PTRACE_PEEKSIGINFO_SHARED : 0;
			r = ptrace(PTRACE_PEEKSIGINFO, self->pid, &args, self->buf);
			ASSERT_EQ(want, r) TH_LOG("queue %d off %u", shared, win[i].off);
			EXPECT_EQ(0, records_equal(p->rec[shared] + win[i].off * SI_MAX_SIZE,
						   self->buf, r, "pread vs ptrace window"));
		}
	}
}

/* Neither reader consumed anything: the tracee sees the same queues. */
TEST_F(ptrace, nothing_consumed)
{
	const struct tracee_shm *shm = self->shm;
	int status, q;

	ASSERT_LT(0, ptrace_peek_all(self->pid, 1, self->buf, MAXREC, PTRACE_BATCH));
	ASSERT_LT(0, ptrace_peek_all(shm->thread_tid, 0, self->buf, MAXREC, PTRACE_BATCH));
	ASSERT_EQ(0, ptrace(PTRACE_DETACH, shm->thread_tid, 0, 0));
	self->thread_attached = 0;
	ASSERT_EQ(0, ptrace(PTRACE_DETACH, self->pid, 0, 0));
	self->attached = 0;
	ASSERT_EQ(2, write(self->go[1], "gg", 2));
	ASSERT_EQ(self->pid, waitpid(self->pid, &status, __WALL));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(shm->before.n[q], shm->after.n[q]);
		EXPECT_EQ(0, records_equal(shm->before.rec[q], shm->after.rec[q],
					   shm->before.n[q], "pread before vs after"));
		ASSERT_EQ(shm->thread_before.n[q], shm->thread_after.n[q]);
		EXPECT_EQ(0, records_equal(shm->thread_before.rec[q],
					   shm->thread_after.rec[q],
					   shm->thread_before.n[q],
					   "thread pread before vs after"));
	}
}

TEST_HARNESS_MAIN
