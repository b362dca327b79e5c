// SPDX-License-Identifier: GPL-2.0
/*
 * A timer signal put back with write() is its timer's own entry again.
 *
 * A POSIX timer has one preallocated queue entry: while it is queued, an
 * expiry raises its si_overrun instead of queueing a second signal. A
 * written SI_TIMER record that names a timer of the writer's process, for
 * the same signal, value and queue, becomes that entry when it is free, so
 * the process sees one delivery with overrun k + j (k carried by the record,
 * j expiries since) where an ordinary entry would give two deliveries. In
 * every other case the record is queued as an ordinary entry.
 *
 * The exact cases use one-shot timers re-armed while the entry is queued
 * (each expiry adds exactly one); the periodic case checks the count the
 * dequeue's rearm adds against bounds from the clock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define TSIG	(SIGRTMIN + 4)
#define TVAL	0x7e57
#define MAXREC	8

static int open_raw(int queue_flag)
{
	const int sigs[] = { TSIG, 0 };

	return sfd_open_sigs(SFD_RAW | SFD_NONBLOCK | queue_flag, sigs);
}

/* One expiry of a one-shot timer, and time for it to be handled. */
static int fire_once(timer_t t)
{
	if (sfd_timer_arm(t, 1000000, 0))
		return -1;
	sleep_ms(30);
	return 0;
}

/* The record the timer itself queues, as a raw peek shows it. */
static void timer_record(siginfo_t *si, timer_t t, int value, int overrun)
{
	si_init(si, TSIG, SI_TIMER);
	si->si_timerid = (int)(intptr_t)t;
	si->si_overrun = overrun;
	si->si_value.sival_int = value;
}

static ssize_t pending_records(long long base, siginfo_t *buf)
{
	return peek_and_close(open_raw(0), base, buf, MAXREC);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

FIXTURE(tr)
{
	int group;	/* SFD_RAW | SFD_GROUP */
	int priv;	/* SFD_RAW | SFD_PRIVATE */
	timer_t timer;
	siginfo_t rec, got[MAXREC];
};

FIXTURE_SETUP(tr)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	self->group = open_raw(SFD_GROUP);
	ASSERT_LE(0, self->group);
	self->priv = open_raw(SFD_PRIVATE);
	ASSERT_LE(0, self->priv);
	self->timer = (timer_t)-1;
}

FIXTURE_TEARDOWN(tr)
{
	if (self->timer != (timer_t)-1)
		timer_delete(self->timer);
	flush_all_signals();
}

/* Writes the record to @fd and checks that it is the one pending record. */
static void write_alone(struct __test_metadata *_metadata, int fd,
			long long base, const siginfo_t *rec)
{
	siginfo_t got[MAXREC];

	ASSERT_EQ(SI_MAX_SIZE, write(fd, rec, SI_MAX_SIZE));
	ASSERT_EQ(1, pending_records(base, got));
	EXPECT_EQ(0, siginfo_cmp("written vs peeked", rec, &got[0]));
}

/* Two expiries while the restored entry is queued: one record, k + 2. */
TEST_F(tr, expiries_raise_the_restored_overrun)
{
	siginfo_t got;

	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 7);
	write_alone(_metadata, self->group, SHARED, &self->rec);

	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(1, pending_records(SHARED, self->got))
		TH_LOG("the timer queued a second signal beside the restored one");
	EXPECT_EQ(9, self->got[0].si_overrun);

	ASSERT_EQ(SI_MAX_SIZE, read(self->group, &got, SI_MAX_SIZE));
	EXPECT_EQ(SI_TIMER, got.si_code);
	EXPECT_EQ(9, got.si_overrun);
	EXPECT_EQ(TVAL, got.si_value.sival_int);
	EXPECT_EQ(0, si_sys_private(&got));
	EXPECT_EQ(0, pending_records(SHARED, self->got));
}

/* Dequeued before any expiry: exactly the record, and nothing rearmed. */
TEST_F(tr, no_expiry_delivers_the_record_as_written)
{
	siginfo_t got;

	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 3);
	write_alone(_metadata, self->group, SHARED, &self->rec);
	ASSERT_EQ(SI_MAX_SIZE, read(self->group, &got, SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("written vs delivered", &self->rec, &got));
	/* The entry is free again: the timer's next expiry queues it anew */
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(1, pending_records(SHARED, self->got));
	EXPECT_EQ(0, self->got[0].si_overrun);
}

/*
 * A periodic timer moved with overrun k, re-armed after the write as a
 * restorer does: the delivery counts every expiry since, k + j, with j
 * between the bounds the clock allows, and comes once.
 */
TEST_F(tr, periodic_timer_delivers_k_plus_j_once)
{
	const long iv = 20000000;
	long long armed_lo, armed_hi, read_lo, read_hi;
	long j_lo, j_hi;
	siginfo_t got;

	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 5);
	write_alone(_metadata, self->group, SHARED, &self->rec);

	armed_lo = now_ns();
	ASSERT_EQ(0, sfd_timer_arm(self->timer, iv, iv));
	armed_hi = now_ns();
	sleep_ms(110);
	ASSERT_EQ(1, pending_records(SHARED, self->got))
		TH_LOG("the timer queued a second signal beside the restored one");
	read_lo = now_ns();
	ASSERT_EQ(SI_MAX_SIZE, read(self->group, &got, SI_MAX_SIZE));
	read_hi = now_ns();
	timer_delete(self->timer);
	self->timer = (timer_t)-1;

	/* Expiries at armed + iv * m, m >= 1, up to the dequeue */
	j_lo = (read_lo - armed_hi) / iv;
	j_hi = (read_hi - armed_lo) / iv;
	EXPECT_LE(5 + j_lo, got.si_overrun);
	EXPECT_GE(5 + j_hi, got.si_overrun);
	EXPECT_LE(1, j_lo) TH_LOG("the test slept less than one interval");
	EXPECT_EQ(0, si_sys_private(&got));
}

/* Its entry already queued: the record becomes an ordinary second one. */
TEST_F(tr, entry_already_queued_gives_an_ordinary_entry)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(1, pending_records(SHARED, self->got));
	timer_record(&self->rec, self->timer, TVAL, 4);
	ASSERT_EQ(SI_MAX_SIZE, write(self->group, &self->rec, SI_MAX_SIZE));
	ASSERT_EQ(2, pending_records(SHARED, self->got));
	EXPECT_EQ(0, self->got[0].si_overrun);
	EXPECT_EQ(0, siginfo_cmp("ordinary entry", &self->rec, &self->got[1]));
	/* Another expiry raises the timer's own entry, not the written one */
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(2, pending_records(SHARED, self->got));
	EXPECT_EQ(1, self->got[0].si_overrun);
	EXPECT_EQ(4, self->got[1].si_overrun);
}

/*
 * A record the timer would not queue itself stays an ordinary entry: the
 * timer's next expiry queues its own entry (on its own queue) beside it.
 */
static void check_not_taken(struct __test_metadata *_metadata,
			    struct _test_data_tr *self, int fd, long long base)
{
	ASSERT_EQ(SI_MAX_SIZE, write(fd, &self->rec, SI_MAX_SIZE));
	ASSERT_EQ(1, pending_records(base, self->got));
	EXPECT_EQ(0, siginfo_cmp("ordinary entry", &self->rec, &self->got[0]));
	ASSERT_EQ(0, fire_once(self->timer));
}

TEST_F(tr, other_value_is_not_the_timers)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL + 1, 2);
	check_not_taken(_metadata, self, self->group, SHARED);
	ASSERT_EQ(2, pending_records(SHARED, self->got));
	EXPECT_EQ(2, self->got[0].si_overrun);
	EXPECT_EQ(TVAL, self->got[1].si_value.sival_int);
	EXPECT_EQ(0, self->got[1].si_overrun);
}

TEST_F(tr, unknown_timer_id_is_an_ordinary_entry)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 2);
	self->rec.si_timerid += 1000;
	check_not_taken(_metadata, self, self->group, SHARED);
	EXPECT_EQ(2, pending_records(SHARED, self->got));
}

/* A thread-directed timer's record belongs on its thread's queue only. */
TEST_F(tr, thread_timer_record_on_the_group_queue_is_ordinary)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_THREAD_ID, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 2);
	check_not_taken(_metadata, self, self->group, SHARED);
	EXPECT_EQ(1, pending_records(SHARED, self->got));
	EXPECT_EQ(1, pending_records(PRIV, self->got));
}

TEST_F(tr, thread_timer_record_on_its_thread_queue_is_taken)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_THREAD_ID, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 2);
	write_alone(_metadata, self->priv, PRIV, &self->rec);
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(1, pending_records(PRIV, self->got));
	EXPECT_EQ(3, self->got[0].si_overrun);
	EXPECT_EQ(0, pending_records(SHARED, self->got));
}

/* A process-wide timer's record written to a thread's queue: ordinary. */
TEST_F(tr, group_timer_record_on_a_thread_queue_is_ordinary)
{
	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	timer_record(&self->rec, self->timer, TVAL, 2);
	check_not_taken(_metadata, self, self->priv, PRIV);
	EXPECT_EQ(1, pending_records(PRIV, self->got));
	EXPECT_EQ(1, pending_records(SHARED, self->got));
}

struct other_thread {
	timer_t timer;
	int ret;
};

/* Another thread's timer: its record written by this thread is ordinary. */
static void *create_own_timer(void *arg)
{
	struct other_thread *o = arg;

	o->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_THREAD_ID, TSIG, TVAL);
	o->ret = o->timer == (timer_t)-1 ? -1 : 0;
	return NULL;
}

TEST_F(tr, another_threads_timer_is_not_taken)
{
	struct other_thread o = { .ret = -1 };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, create_own_timer, &o));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, o.ret);
	self->timer = o.timer;	/* the thread is gone: the timer never fires */
	timer_record(&self->rec, self->timer, TVAL, 2);
	ASSERT_EQ(SI_MAX_SIZE, write(self->priv, &self->rec, SI_MAX_SIZE));
	ASSERT_EQ(1, pending_records(PRIV, self->got));
	EXPECT_EQ(0, siginfo_cmp("ordinary entry", &self->rec, &self->got[0]));
}

/* Burns CPU time until the process has used @ms more of it. */
static void burn_cpu_ms(long ms)
{
	struct timespec ts;
	long long until;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	until = ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
	do
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	while (ts.tv_sec * 1000000000LL + ts.tv_nsec < until);
}

/*
 * A POSIX CPU-time timer has its preallocated entry too: a written record
 * becomes it, and the timer's next expiry raises its overrun. Its peek is
 * reported as queued (only hrtimer clocks count missed periods there).
 */
TEST_F(tr, cpu_timer_record_is_taken_too)
{
	struct itimerspec its = { .it_value = { 0, 5000000 } };
	struct sigevent sev;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = TSIG;
	sev.sigev_value.sival_int = TVAL;
	ASSERT_EQ(0, timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &t));
	self->timer = t;
	timer_record(&self->rec, t, TVAL, 4);
	write_alone(_metadata, self->group, SHARED, &self->rec);
	ASSERT_EQ(0, timer_settime(t, 0, &its, NULL));
	burn_cpu_ms(30);
	sleep_ms(10);
	ASSERT_EQ(1, pending_records(SHARED, self->got))
		TH_LOG("the CPU timer queued a second signal beside the restored one");
	EXPECT_EQ(5, self->got[0].si_overrun);
}

/* Records before and after a timer record keep their places. */
TEST_F(tr, order_is_kept_around_a_timer_record)
{
	siginfo_t recs[3];
	int i;

	self->timer = sfd_timer(CLOCK_MONOTONIC, SIGEV_SIGNAL, TSIG, TVAL);
	ASSERT_NE((timer_t)-1, self->timer);
	si_init(&recs[0], TSIG, SI_QUEUE);
	recs[0].si_pid = getpid();
	recs[0].si_value.sival_int = 1;
	timer_record(&recs[1], self->timer, TVAL, 6);
	recs[2] = recs[0];
	recs[2].si_value.sival_int = 2;
	ASSERT_EQ(3 * SI_MAX_SIZE, write(self->group, recs, sizeof(recs)));
	ASSERT_EQ(3, pending_records(SHARED, self->got));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, siginfo_cmp("in order", &recs[i], &self->got[i]));
	ASSERT_EQ(0, fire_once(self->timer));
	ASSERT_EQ(3, pending_records(SHARED, self->got))
		TH_LOG("the timer queued a second signal beside the restored one");
	EXPECT_EQ(7, self->got[1].si_overrun);
}

TEST_HARNESS_MAIN
