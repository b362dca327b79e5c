// SPDX-License-Identifier: GPL-2.0
/*
 * pread() on a signalfd peeks at pending signals without dequeuing them:
 * offset SFD_PER_THREAD_QUEUE_OFFSET + n (calling thread's queue) or
 * SFD_SHARED_QUEUE_OFFSET + n (process-wide queue) returns the n-th pending
 * signal selected by the fd's mask and the following ones.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED	SFD_SHARED_QUEUE_OFFSET

FIXTURE(peek)
{
	int raw;	/* SFD_RAW fd on every signal used below */
	int classic;	/* same mask, classic signalfd_siginfo records */
	unsigned char *buf;
	unsigned char *buf2;
	size_t cap;	/* records per buffer */
};

static void fill_mask(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGUSR2);
	sigaddset(mask, SIGSEGV);
	sigaddset(mask, SIGRTMIN);
	sigaddset(mask, SIGRTMIN + 1);
	sigaddset(mask, SIGRTMIN + 2);
	sigaddset(mask, SIGRTMIN + 3);
}

FIXTURE_SETUP(peek)
{
	sigset_t mask;

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	fill_mask(&mask);
	self->raw = sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE,
				  SFD_RAW | SFD_NONBLOCK);
	ASSERT_LE(0, self->raw) TH_LOG(SFD_MISSING_MSG);
	self->classic = sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE, SFD_NONBLOCK);
	ASSERT_LE(0, self->classic);
	self->cap = 8192;
	self->buf = malloc(self->cap * SI_MAX_SIZE);
	self->buf2 = malloc(self->cap * SI_MAX_SIZE);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->buf2);
	ASSERT_EQ(0, raise_sigpending(20000));
}

FIXTURE_TEARDOWN(peek)
{
	close(self->raw);
	close(self->classic);
	free(self->buf);
	free(self->buf2);
}

/* Shared: SIGUSR1 (kill), SIGRTMIN x2, SIGSEGV (fault). Private: SIGUSR2
 * (tgkill), SIGRTMIN+1.
 */
static int queue_mixed(void)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_ACCERR);
	si.si_addr = (void *)(uintptr_t)0xfeed000;
	if (kill(getpid(), SIGUSR1) || q_shared(SIGRTMIN, 1) ||
	    q_shared(SIGRTMIN, 2) ||
	    sys_rt_sigqueueinfo(getpid(), SIGSEGV, &si))
		return -1;
	if (sys_tgkill(getpid(), sys_gettid(), SIGUSR2) || q_private(SIGRTMIN + 1, 3))
		return -1;
	return 0;
}

TEST_F(peek, non_destructive_and_matches_dequeue)
{
	ssize_t ns, np, again, nd;
	unsigned char *p = self->buf, *d = self->buf2;

	ASSERT_EQ(0, queue_mixed());
	ns = sfd_peek(self->raw, p, 16, SHARED);
	ASSERT_EQ(4 * SI_MAX_SIZE, ns);
	np = sfd_peek(self->raw, p + 4 * SI_MAX_SIZE, 16, PRIV);
	ASSERT_EQ(2 * SI_MAX_SIZE, np);
	/* Peeking again sees the same bytes: nothing was consumed. */
	again = sfd_peek(self->raw, d, 16, SHARED);
	ASSERT_EQ(ns, again);
	ASSERT_EQ(0, memcmp(p, d, ns));
	again = sfd_peek(self->raw, d, 16, PRIV);
	ASSERT_EQ(np, again);
	ASSERT_EQ(0, memcmp(p + 4 * SI_MAX_SIZE, d, np));
	ASSERT_TRUE(is_pending(SIGUSR1));
	ASSERT_TRUE(is_pending(SIGUSR2));
	ASSERT_TRUE(is_pending(SIGSEGV));
	ASSERT_TRUE(is_pending(SIGRTMIN));
	ASSERT_TRUE(is_pending(SIGRTMIN + 1));

	/* Neither SFD_PRIVATE nor SFD_GROUP: private entries come first. */
	nd = dequeue_all(self->raw, d, 16);
	ASSERT_EQ(6, nd);
	EXPECT_EQ(0, match_dequeue_to_peek(p + 4 * SI_MAX_SIZE, 2, d, 2));
	EXPECT_EQ(0, match_dequeue_to_peek(p, 4, d + 2 * SI_MAX_SIZE, 4));
	EXPECT_EQ(0, sfd_peek(self->raw, p, 16, SHARED));
	EXPECT_EQ(0, sfd_peek(self->raw, p, 16, PRIV));
}

static void queue_many(struct __test_metadata *_metadata, int n, int priv)
{
	int i;

	for (i = 0; i < n; i++) {
		int sig = SIGRTMIN + (i % 3);

		ASSERT_EQ(0, priv ? q_private(sig, i) : q_shared(sig, i))
			TH_LOG("queueing #%d: %s", i, strerror(errno));
	}
}

static void check_order(struct __test_metadata *_metadata,
			const unsigned char *buf, int n, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++) {
		const siginfo_t *si = (const siginfo_t *)(buf + (size_t)i * SI_MAX_SIZE);

		ASSERT_EQ(SIGRTMIN + (i % 3), si->si_signo) TH_LOG("record %d", i);
		ASSERT_EQ(SI_QUEUE, si->si_code) TH_LOG("record %d", i);
		ASSERT_EQ(i, si->si_value.sival_int) TH_LOG("record %d", i);
		ASSERT_EQ(pid, si->si_pid);
	}
}

/* More entries than any batch: order and multiplicity of RT signals. */
static void run_many(struct __test_metadata *_metadata, struct _test_data_peek *self,
		     int n, int priv)
{
	static const size_t batches[] = { 1, 7, 32, 4096, 8192 };
	long long base = priv ? PRIV : SHARED;
	unsigned int b;
	ssize_t got;

	queue_many(_metadata, n, priv);
	for (b = 0; b < ARRAY_SIZE(batches); b++) {
		memset(self->buf, 0xa5, (size_t)n * SI_MAX_SIZE);
		got = peek_all(self->raw, base, self->buf, self->cap, batches[b]);
		ASSERT_EQ(n, got) TH_LOG("batch %zu", batches[b]);
		check_order(_metadata, self->buf, n, getpid());
	}
	/* Peeking from the middle returns the tail. */
	got = sfd_peek(self->raw, self->buf2, 100, base + n - 10);
	ASSERT_EQ(10 * SI_MAX_SIZE, got);
	ASSERT_EQ(0, memcmp(self->buf2, self->buf + (size_t)(n - 10) * SI_MAX_SIZE,
			    10 * SI_MAX_SIZE));

	got = dequeue_all(self->raw, self->buf2, self->cap);
	ASSERT_EQ(n, got);
	ASSERT_EQ(0, match_dequeue_to_peek(self->buf, n, self->buf2, n));
	ASSERT_EQ(0, sfd_peek(self->raw, self->buf, 16, base));
}

TEST_F_TIMEOUT(peek, rt_order_multiplicity_5000_shared, 300)
{
	run_many(_metadata, self, 5000, 0);
}

TEST_F_TIMEOUT(peek, rt_order_multiplicity_5000_private, 300)
{
	run_many(_metadata, self, 5000, 1);
}

TEST_F(peek, zero_past_the_end_never_blocks)
{
	int blocking;
	sigset_t mask;

	fill_mask(&mask);
	blocking = sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE, SFD_RAW);
	ASSERT_LE(0, blocking);
	/* Empty queues: 0 at once, even on a blocking fd. */
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, SHARED));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, PRIV));

	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 3));
	EXPECT_EQ(SI_MAX_SIZE, sfd_peek(blocking, self->buf, 4, SHARED + 2));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, SHARED + 3));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, SHARED + 1000));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, SHARED + (1LL << 61)));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, PRIV));
	EXPECT_EQ(0, sfd_peek(blocking, self->buf, 4, PRIV + (1LL << 61)));
	close(blocking);
}

TEST_F(peek, offsets_select_the_queue)
{
	unsigned char *all = self->buf, *one = self->buf2;
	const siginfo_t *si = (const siginfo_t *)all;

	ASSERT_EQ(0, queue_mixed());
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(self->raw, all, 16, PRIV));
	EXPECT_EQ(SIGUSR2, si[0].si_signo);
	EXPECT_EQ(SI_TKILL, si[0].si_code);
	EXPECT_EQ(SIGRTMIN + 1, si[1].si_signo);
	EXPECT_EQ(3, si[1].si_value.sival_int);
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->raw, one, 16, PRIV + 1));
	EXPECT_EQ(0, memcmp(one, all + SI_MAX_SIZE, SI_MAX_SIZE));

	ASSERT_EQ(4 * SI_MAX_SIZE, sfd_peek(self->raw, all, 16, SHARED));
	EXPECT_EQ(SIGUSR1, si[0].si_signo);
	EXPECT_EQ(SI_USER, si[0].si_code);
	EXPECT_EQ(SIGRTMIN, si[1].si_signo);
	EXPECT_EQ(1, si[1].si_value.sival_int);
	EXPECT_EQ(SIGRTMIN, si[2].si_signo);
	EXPECT_EQ(2, si[2].si_value.sival_int);
	EXPECT_EQ(SIGSEGV, si[3].si_signo);
	EXPECT_EQ(SEGV_ACCERR, si[3].si_code);
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(self->raw, one, 16, SHARED + 2));
	EXPECT_EQ(0, memcmp(one, all + 2 * SI_MAX_SIZE, 2 * SI_MAX_SIZE));
}

TEST_F(peek, mask_honoured_in_counting)
{
	const siginfo_t *si = (const siginfo_t *)self->buf;
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGRTMIN);
	fd = sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE, SFD_RAW | SFD_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	ASSERT_EQ(0, q_shared(SIGRTMIN + 1, 9));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(0, q_shared(SIGRTMIN + 1, 10));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 7));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 8));

	ASSERT_EQ(3 * SI_MAX_SIZE, sfd_peek(fd, self->buf, 16, SHARED));
	EXPECT_EQ(SIGUSR1, si[0].si_signo);
	EXPECT_EQ(7, si[1].si_value.sival_int);
	EXPECT_EQ(8, si[2].si_value.sival_int);
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(fd, self->buf, 16, SHARED + 1));
	EXPECT_EQ(7, si[0].si_value.sival_int);
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(fd, self->buf, 16, SHARED + 2));
	EXPECT_EQ(8, si[0].si_value.sival_int);
	EXPECT_EQ(0, sfd_peek(fd, self->buf, 16, SHARED + 3));

	/* A new mask on the existing fd changes what is counted. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGRTMIN + 1);
	ASSERT_EQ(fd, sys_signalfd4(fd, &mask, KERNEL_SIGSET_SIZE, SFD_RAW));
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(fd, self->buf, 16, SHARED));
	EXPECT_EQ(9, si[0].si_value.sival_int);
	EXPECT_EQ(10, si[1].si_value.sival_int);
	close(fd);
}

TEST_F(peek, unused_bytes_zeroed_raw)
{
	unsigned char *b = self->buf;
	siginfo_t exp[3];
	size_t i;

	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 0x1234));
	ASSERT_EQ(0, sys_tgkill(getpid(), sys_gettid(), SIGUSR2));

	si_init(&exp[0], SIGUSR1, SI_USER);
	exp[0].si_pid = getpid();
	exp[0].si_uid = getuid();
	si_init(&exp[1], SIGRTMIN, SI_QUEUE);
	exp[1].si_pid = getpid();
	exp[1].si_uid = getuid();
	exp[1].si_value.sival_int = 0x1234;
	si_init(&exp[2], SIGUSR2, SI_TKILL);
	exp[2].si_pid = getpid();
	exp[2].si_uid = getuid();

	memset(b, 0xa5, 8 * SI_MAX_SIZE);
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(self->raw, b, 8, SHARED));
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->raw, b + 2 * SI_MAX_SIZE, 6, PRIV));
	/* The kernel fills whole records and nothing past what it returns. */
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, siginfo_cmp("zeroed record", &exp[i],
					 b + i * SI_MAX_SIZE));
	for (i = 3 * SI_MAX_SIZE; i < 8 * SI_MAX_SIZE; i++)
		ASSERT_EQ(0xa5, b[i]) TH_LOG("byte %zu written past the end", i);
}

TEST_F(peek, unused_bytes_zeroed_classic)
{
	struct signalfd_siginfo exp, *got = (struct signalfd_siginfo *)self->buf;

	ASSERT_EQ(0, q_shared(SIGRTMIN, 0x4321));
	memset(&exp, 0, sizeof(exp));
	exp.ssi_signo = SIGRTMIN;
	exp.ssi_code = SI_QUEUE;
	exp.ssi_pid = getpid();
	exp.ssi_uid = getuid();
	exp.ssi_int = 0x4321;
	exp.ssi_ptr = 0x4321;
	memset(self->buf, 0xa5, 4 * SI_MAX_SIZE);
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->classic, got, 4, SHARED));
	EXPECT_EQ(0, siginfo_cmp("classic record", &exp, got));
}

/* Without SFD_RAW the peek returns classic records equal to a later read. */
TEST_F(peek, classic_format_matches_dequeue)
{
	unsigned char *p = self->buf, *d = self->buf2;
	const struct signalfd_siginfo *ssi = (const void *)p;
	ssize_t n;

	ASSERT_EQ(0, queue_mixed());
	n = sfd_peek(self->classic, p, 16, SHARED);
	ASSERT_EQ(4 * SI_MAX_SIZE, n);
	ASSERT_EQ(2 * SI_MAX_SIZE, sfd_peek(self->classic, p + n, 16, PRIV));
	EXPECT_EQ((uint32_t)SIGUSR1, ssi[0].ssi_signo);
	EXPECT_EQ(SI_USER, ssi[0].ssi_code);
	EXPECT_EQ((uint32_t)getpid(), ssi[0].ssi_pid);
	EXPECT_EQ(1, ssi[1].ssi_int);
	EXPECT_EQ(0xfeed000ULL, (unsigned long long)ssi[3].ssi_addr);
	EXPECT_EQ((uint32_t)SIGUSR2, ssi[4].ssi_signo);
	EXPECT_EQ(SI_TKILL, ssi[4].ssi_code);
	/* Same queue seen by the raw fd is still intact. */
	EXPECT_EQ(4 * SI_MAX_SIZE, sfd_peek(self->raw, d, 16, SHARED));

	ASSERT_EQ(6, dequeue_all(self->classic, d, 16));
	EXPECT_EQ(0, match_dequeue_to_peek(p + n, 2, d, 2));
	EXPECT_EQ(0, match_dequeue_to_peek(p, 4, d + 2 * SI_MAX_SIZE, 4));
}

/* Offset 0 keeps the dequeuing read. */
TEST_F(peek, offset_zero_dequeues)
{
	ASSERT_EQ(0, q_shared(SIGRTMIN, 5));
	ASSERT_EQ(SI_MAX_SIZE, pread(self->raw, self->buf, SI_MAX_SIZE, 0));
	EXPECT_EQ(5, ((siginfo_t *)self->buf)->si_value.sival_int);
	EXPECT_FALSE(is_pending(SIGRTMIN));
}

/*
 * SI_TIMER: a periodic timer whose signal is pending is not running; the
 * dequeue rearms it and counts the expiries missed since. A peek reports
 * that count as of the peek (a copy requeued elsewhere must carry it): at
 * least one per interval slept, never fewer on a later peek, and never
 * more than the dequeue after it. si_sys_private (kernel state) is zero;
 * nothing else differs.
 */
static void run_timer_peek(struct __test_metadata *_metadata,
			   struct _test_data_peek *self, int thread_directed)
{
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	struct timespec settle = { 0, 50000000 };
	siginfo_t peeked, again, got;
	long long base = thread_directed ? PRIV : SHARED;
	struct sigevent sev;
	timer_t timer;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = thread_directed ? SIGEV_THREAD_ID : SIGEV_SIGNAL;
	sev.sigev_signo = SIGRTMIN + 2;
	sev.sigev_value.sival_int = 0x71;
	sev.sigev_notify_thread_id = sys_gettid();
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
	ASSERT_EQ(0, timer_settime(timer, 0, &its, NULL));
	ASSERT_TRUE(wait_pending(SIGRTMIN + 2, 5000));
	nanosleep(&settle, NULL);

	memset(&peeked, 0xa5, sizeof(peeked));
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->raw, &peeked, 1, base));
	EXPECT_EQ(SI_TIMER, peeked.si_code);
	EXPECT_EQ(0x71, peeked.si_value.sival_int);
	EXPECT_EQ(0, si_sys_private(&peeked));
	/* 50 ms of 1 ms intervals: the expiries since the signal queued */
	EXPECT_LE(periods_in_ms(50), peeked.si_overrun);
	nanosleep(&settle, NULL);
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->raw, &again, 1, base));
	EXPECT_LE(peeked.si_overrun + periods_in_ms(50), again.si_overrun);

	ASSERT_EQ(SI_MAX_SIZE, read(self->raw, &got, SI_MAX_SIZE));
	timer_delete(timer);
	EXPECT_LE(again.si_overrun, got.si_overrun);
	EXPECT_EQ(0, si_sys_private(&got));
	got.si_overrun = peeked.si_overrun;
	EXPECT_EQ(0, siginfo_cmp("peek vs dequeue (overrun aside)", &peeked, &got));
}

TEST_F(peek, si_timer_shared)
{
	run_timer_peek(_metadata, self, 0);
}

TEST_F(peek, si_timer_thread_directed)
{
	run_timer_peek(_metadata, self, 1);
}

TEST_HARNESS_MAIN
