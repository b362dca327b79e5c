// SPDX-License-Identifier: GPL-2.0
/*
 * POSIX CPU-time timers (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID)
 * whose real-time signal is blocked.
 *
 * Their signal is the timer's preallocated SI_TIMER entry, as for the
 * hrtimer clocks, but they expire from the CPU-time accounting, and a
 * periodic one is rearmed (and counts its missed periods) only when its
 * signal is dequeued. A peek of the pending entry:
 *
 *  - shows it with si_code SI_TIMER, si_timerid the timer's id, the
 *    sigevent's value, and no posix-timers cookie (si_sys_private 0);
 *  - leaves it queued: peeking twice reads it twice and nothing else, the
 *    timer does not queue a second signal;
 *  - reports si_overrun as queued: posixtimer_peek_overrun() counts the
 *    missed periods of hrtimer clocks only, so for a CPU timer it is the
 *    count of expiries while the entry was queued (exact for a one-shot
 *    timer re-armed while pending);
 *  - is what the dequeue returns byte for byte, except si_overrun, which
 *    the dequeue's rearm of a periodic timer can only raise.
 *
 * write() (patch 13): posixtimer_restore_sigqueue() does not look at the
 * clock, so a written record of a CPU timer becomes that timer's own entry
 * as well, and its expiries raise the restored overrun instead of queueing
 * a second signal; for a periodic timer the dequeue rearms it as usual.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <time.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define TSIG	(SIGRTMIN + 5)
#define TVAL	0x0c9d
#define MAXREC	8
/* CPU time a test may burn waiting for an expiry */
#define BURN_LIMIT_MS	3000

static int open_raw(int queue_flag)
{
	const int sigs[] = { TSIG, 0 };

	return sfd_open_sigs(SFD_RAW | SFD_NONBLOCK | queue_flag, sigs);
}

static ssize_t pending_records(long long base, siginfo_t *buf)
{
	return peek_and_close(open_raw(0), base, buf, MAXREC);
}

static long long clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Burns CPU time of @clk (this thread's or the process's) for @ms. */
static void burn_ms(clockid_t clk, long ms)
{
	long long until = clock_ns(clk) + ms * 1000000LL;

	while (clock_ns(clk) < until)
		;
}

/* Burns CPU until @sig is pending; 0 if it came. */
static int burn_until_pending(clockid_t clk, int sig)
{
	long long until = clock_ns(clk) + BURN_LIMIT_MS * 1000000LL;

	while (!is_pending(sig))
		if (clock_ns(clk) > until)
			return -1;
	return 0;
}

/* Burns CPU until the one-shot timer @t has expired (disarmed) */
static int burn_until_disarmed(clockid_t clk, timer_t t)
{
	long long until = clock_ns(clk) + BURN_LIMIT_MS * 1000000LL;
	struct itimerspec cur;

	for (;;) {
		if (timer_gettime(t, &cur))
			return -1;
		if (!cur.it_value.tv_sec && !cur.it_value.tv_nsec)
			return 0;
		if (clock_ns(clk) > until)
			return -1;
	}
}

/* The record the timer queues, as a raw read shows it. */
static void timer_record(siginfo_t *si, timer_t t, int overrun)
{
	si_init(si, TSIG, SI_TIMER);
	si->si_timerid = (int)(intptr_t)t;
	si->si_overrun = overrun;
	si->si_value.sival_int = TVAL;
}

/* Byte for byte, except si_overrun (checked by the caller). */
static int same_but_overrun(const siginfo_t *a, const siginfo_t *b)
{
	siginfo_t x = *a, y = *b;

	x.si_overrun = 0;
	y.si_overrun = 0;
	return siginfo_cmp("all but si_overrun", &x, &y);
}

FIXTURE(ct)
{
	timer_t timer;
	siginfo_t exp, got[MAXREC], again[MAXREC], deq;
};

FIXTURE_VARIANT(ct)
{
	clockid_t clock;
	int notify;		/* SIGEV_SIGNAL or SIGEV_THREAD_ID */
};

FIXTURE_VARIANT_ADD(ct, process_clock_to_process)
{
	.clock = CLOCK_PROCESS_CPUTIME_ID,
	.notify = SIGEV_SIGNAL,
};

FIXTURE_VARIANT_ADD(ct, thread_clock_to_process)
{
	.clock = CLOCK_THREAD_CPUTIME_ID,
	.notify = SIGEV_SIGNAL,
};

FIXTURE_VARIANT_ADD(ct, thread_clock_to_thread)
{
	.clock = CLOCK_THREAD_CPUTIME_ID,
	.notify = SIGEV_THREAD_ID,
};

FIXTURE_VARIANT_ADD(ct, process_clock_to_thread)
{
	.clock = CLOCK_PROCESS_CPUTIME_ID,
	.notify = SIGEV_THREAD_ID,
};

FIXTURE_SETUP(ct)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	self->timer = sfd_timer(variant->clock, variant->notify, TSIG, TVAL);
	if (self->timer == (timer_t)-1 && (errno == EINVAL || errno == ENOTSUP))
		SKIP(return, "no POSIX CPU-time timers: %s", strerror(errno));
	ASSERT_NE((timer_t)-1, self->timer) TH_LOG("%s", strerror(errno));
	timer_record(&self->exp, self->timer, 0);
}

FIXTURE_TEARDOWN(ct)
{
	if (self->timer != (timer_t)-1)
		timer_delete(self->timer);
	flush_all_signals();
}

/* The queue the variant's signal goes to, and the fd flag to dequeue it */
static long long queue_of(const struct _fixture_variant_ct *variant)
{
	return variant->notify == SIGEV_THREAD_ID ? PRIV : SHARED;
}

static long long other_queue_of(const struct _fixture_variant_ct *variant)
{
	return variant->notify == SIGEV_THREAD_ID ? SHARED : PRIV;
}

static int dequeue_flag(const struct _fixture_variant_ct *variant)
{
	return variant->notify == SIGEV_THREAD_ID ? SFD_PRIVATE : SFD_GROUP;
}

/*
 * Periodic: the pending record as peeked, peeked again after more periods
 * (not recounted for a CPU clock, and still alone), then dequeued with the
 * periods missed meanwhile added by the rearm.
 */
TEST_F(ct, periodic_peek_is_non_destructive_dequeue_only_adds_overrun)
{
	const long iv_ms = 2;
	int fd;

	ASSERT_EQ(0, sfd_timer_arm(self->timer, iv_ms * 1000000, iv_ms * 1000000));
	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG))
		TH_LOG("the CPU timer never expired");

	ASSERT_EQ(1, pending_records(queue_of(variant), self->got));
	EXPECT_EQ(0, siginfo_cmp("first peek", &self->exp, &self->got[0]));
	EXPECT_EQ(0, pending_records(other_queue_of(variant), self->again));

	/* Ten more periods: the timer waits for the dequeue to rearm it */
	burn_ms(variant->clock, 10 * iv_ms);
	ASSERT_EQ(1, pending_records(queue_of(variant), self->again))
		TH_LOG("the timer queued a second signal beside its pending one");
	EXPECT_EQ(0, siginfo_cmp("second peek", &self->got[0], &self->again[0]));
	EXPECT_TRUE(is_pending(TSIG));

	fd = open_raw(dequeue_flag(variant));
	ASSERT_LE(0, fd);
	ASSERT_EQ(SI_MAX_SIZE, read(fd, &self->deq, SI_MAX_SIZE));
	EXPECT_EQ(0, same_but_overrun(&self->got[0], &self->deq));
	EXPECT_EQ(0, si_sys_private(&self->deq));
	/* The rearm counts the >= 10 periods missed since the expiry */
	EXPECT_LE(self->again[0].si_overrun + 5, self->deq.si_overrun)
		TH_LOG("peeked overrun %d, dequeued %d", self->again[0].si_overrun,
		       self->deq.si_overrun);

	/* Rearmed by that dequeue: it expires and queues again */
	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG))
		TH_LOG("the timer was not rearmed by the dequeue");
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got));
	EXPECT_EQ(0, same_but_overrun(&self->exp, &self->got[0]));
	close(fd);
}

/*
 * One-shot, re-armed twice while its entry is pending: each expiry adds
 * exactly one to the queued overrun, which the peek shows exactly, and the
 * dequeue (no rearm for a one-shot timer) returns exactly the peeked bytes.
 */
TEST_F(ct, oneshot_expiries_while_pending_peeked_exactly)
{
	int fd, i;

	ASSERT_EQ(0, sfd_timer_arm(self->timer, 1000000, 0));
	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG));
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got));
	EXPECT_EQ(0, siginfo_cmp("first expiry", &self->exp, &self->got[0]));

	for (i = 1; i <= 2; i++) {
		ASSERT_EQ(0, sfd_timer_arm(self->timer, 1000000, 0));
		ASSERT_EQ(0, burn_until_disarmed(variant->clock, self->timer));
		ASSERT_EQ(1, pending_records(queue_of(variant), self->got))
			TH_LOG("expiry %d queued a second signal", i + 1);
		self->exp.si_overrun = i;
		EXPECT_EQ(0, siginfo_cmp("peek", &self->exp, &self->got[0]));
	}
	/* The peek changed nothing */
	ASSERT_EQ(1, pending_records(queue_of(variant), self->again));
	EXPECT_EQ(0, memcmp(self->got, self->again, SI_MAX_SIZE));

	fd = open_raw(dequeue_flag(variant));
	ASSERT_LE(0, fd);
	ASSERT_EQ(SI_MAX_SIZE, read(fd, &self->deq, SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("peek vs dequeue", &self->got[0], &self->deq));
	EXPECT_ERRNO(EAGAIN, read(fd, &self->deq, SI_MAX_SIZE));
	close(fd);
}

/*
 * A dequeued record of the CPU timer written back becomes the timer's own
 * entry again: the next expiry raises its overrun, no second signal.
 */
TEST_F(ct, written_record_becomes_the_timers_entry)
{
	int fd;

	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	fd = open_raw(SFD_RAW | dequeue_flag(variant));
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sfd_timer_arm(self->timer, 1000000, 0));
	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG));
	ASSERT_EQ(SI_MAX_SIZE, read(fd, &self->deq, SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("dequeued", &self->exp, &self->deq));

	/* As a restorer writes it, with the overrun it carried elsewhere */
	self->deq.si_overrun = 6;
	ASSERT_EQ(SI_MAX_SIZE, write(fd, &self->deq, SI_MAX_SIZE));
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got));
	EXPECT_EQ(0, siginfo_cmp("written vs peeked", &self->deq, &self->got[0]));

	ASSERT_EQ(0, sfd_timer_arm(self->timer, 1000000, 0));
	ASSERT_EQ(0, burn_until_disarmed(variant->clock, self->timer));
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got))
		TH_LOG("the CPU timer queued a second signal beside the restored one");
	EXPECT_EQ(7, self->got[0].si_overrun);
	EXPECT_EQ(0, pending_records(other_queue_of(variant), self->again));

	ASSERT_EQ(SI_MAX_SIZE, read(fd, &self->again[0], SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("delivered", &self->got[0], &self->again[0]));
	EXPECT_EQ(0, pending_records(queue_of(variant), self->got));
	close(fd);
}

/*
 * Periodic: the dequeued record written back while the timer runs; the
 * next expiry raises it, the dequeue rearms the timer and adds the missed
 * periods, and the timer keeps running afterwards.
 */
TEST_F(ct, written_record_of_a_periodic_timer_keeps_it_running)
{
	/*
	 * Long enough that no expiry comes between the read and the write;
	 * one may still come before the peek on a loaded guest, where a tick
	 * charges a whole period to whoever runs, and raise the overrun.
	 */
	const long iv_ms = 100;
	siginfo_t rec;
	int fd;

	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	fd = open_raw(SFD_RAW | dequeue_flag(variant));
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, sfd_timer_arm(self->timer, 2000000, iv_ms * 1000000));
	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG));
	ASSERT_EQ(SI_MAX_SIZE, read(fd, &rec, SI_MAX_SIZE));
	rec.si_overrun = 3;
	ASSERT_EQ(SI_MAX_SIZE, write(fd, &rec, SI_MAX_SIZE));
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got));
	EXPECT_EQ(0, same_but_overrun(&rec, &self->got[0]));
	EXPECT_LE(rec.si_overrun, self->got[0].si_overrun);

	burn_ms(variant->clock, 2 * iv_ms);
	ASSERT_EQ(1, pending_records(queue_of(variant), self->got))
		TH_LOG("the CPU timer queued a second signal beside the restored one");
	EXPECT_LE(4, self->got[0].si_overrun)
		TH_LOG("no expiry raised the restored entry");
	ASSERT_EQ(SI_MAX_SIZE, read(fd, &self->deq, SI_MAX_SIZE));
	EXPECT_EQ(0, same_but_overrun(&rec, &self->deq));
	EXPECT_LE(self->got[0].si_overrun, self->deq.si_overrun);
	EXPECT_EQ(0, si_sys_private(&self->deq));

	ASSERT_EQ(0, burn_until_pending(variant->clock, TSIG))
		TH_LOG("the timer stopped after its restored entry was dequeued");
	close(fd);
}

TEST_HARNESS_MAIN
