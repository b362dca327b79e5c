// SPDX-License-Identifier: GPL-2.0
/*
 * write() of an SFD_RAW record of a standard (non-real-time) signal that
 * is already pending in the queue the fd writes to.
 *
 * signalfd_write() queues each record with send_signal_locked(), as a
 * self-sent rt_tgsigqueueinfo() would. __send_signal_locked() drops a
 * standard signal whose bit is already set in the target queue
 * (legacy_queue(), TRACE_SIGNAL_ALREADY_PENDING) and returns 0: so the
 * record is neither refused nor merged. The write() counts it as written
 * (the full size is returned, the records after it are queued) and the
 * queue is left byte for byte as it was; the pending record stays the one
 * that was there first. Only the bit of the queue written to matters: the
 * same signal pending in the other queue does not stop it.
 *
 * At RLIMIT_SIGPENDING a standard signal with a negative si_code is still
 * made pending, without its record (TRACE_SIGNAL_LOSE_INFO): a peek then
 * shows nothing for it, and a written record for it is dropped all the
 * same because its bit is set.
 */
#define _GNU_SOURCE

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define MAXREC	16

static void rt_record(siginfo_t *si, int sig, int val)
{
	si_init(si, sig, SI_QUEUE);
	si->si_pid = getpid();
	si->si_uid = getuid();
	si->si_value.sival_int = val;
}

/* Everything pending in one queue of the caller, in order. */
static ssize_t snapshot(long long base, siginfo_t *buf)
{
	return peek_and_close(sfd_open_all(SFD_RAW), base, buf, MAXREC);
}

FIXTURE(sp)
{
	int wr;			/* SFD_RAW | the variant's queue */
	int other;		/* SFD_RAW | the other queue */
	long long base, other_base;
	siginfo_t before[MAXREC], after[MAXREC], rec[4];
};

FIXTURE_VARIANT(sp)
{
	int group;
};

FIXTURE_VARIANT_ADD(sp, group_queue)
{
	.group = 1,
};

FIXTURE_VARIANT_ADD(sp, private_queue)
{
	.group = 0,
};

/* Makes @sig pending, with the kernel's own record, in the variant's queue */
static int make_pending(const struct _fixture_variant_sp *variant, int sig)
{
	return variant->group ? kill(getpid(), sig) :
				sys_tgkill(getpid(), sys_gettid(), sig);
}

static int q_variant(const struct _fixture_variant_sp *variant, int sig, int val)
{
	return variant->group ? q_shared(sig, val) : q_private(sig, val);
}

FIXTURE_SETUP(sp)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	self->wr = sfd_open_all(SFD_RAW | (variant->group ? SFD_GROUP : SFD_PRIVATE));
	ASSERT_LE(0, self->wr);
	self->other = sfd_open_all(SFD_RAW | (variant->group ? SFD_PRIVATE : SFD_GROUP));
	ASSERT_LE(0, self->other);
	self->base = variant->group ? SHARED : PRIV;
	self->other_base = variant->group ? PRIV : SHARED;
}

FIXTURE_TEARDOWN(sp)
{
	flush_all_signals();
	close(self->wr);
	close(self->other);
}

/*
 * SIGUSR1 pending between two real-time entries: a written SIGUSR1 record
 * alone, then in the middle of a batch. Each write returns its full size,
 * the SIGUSR1 record is dropped, the queue is otherwise unchanged.
 */
TEST_F(sp, already_pending_record_is_dropped_queue_unchanged)
{
	siginfo_t deq;
	ssize_t n;
	int i;

	ASSERT_EQ(0, q_variant(variant, SIGRTMIN, 1));
	ASSERT_EQ(0, make_pending(variant, SIGUSR1));
	ASSERT_EQ(0, q_variant(variant, SIGRTMIN, 2));
	n = snapshot(self->base, self->before);
	ASSERT_EQ(3, n);
	ASSERT_EQ(SIGUSR1, self->before[1].si_signo);
	ASSERT_EQ(variant->group ? SI_USER : SI_TKILL, self->before[1].si_code);

	/* A record as different as it can be from the pending one */
	rt_record(&self->rec[0], SIGUSR1, 0x5151);
	EXPECT_EQ(SI_MAX_SIZE, write(self->wr, self->rec, SI_MAX_SIZE))
		TH_LOG("write: %s", strerror(errno));
	ASSERT_EQ(3, snapshot(self->base, self->after));
	EXPECT_EQ(0, memcmp(self->before, self->after, 3 * SI_MAX_SIZE));
	EXPECT_EQ(0, snapshot(self->other_base, self->after));

	/* In a batch: the records around it are queued, it is not */
	rt_record(&self->rec[0], SIGRTMIN, 3);
	rt_record(&self->rec[1], SIGUSR1, 0x5252);
	rt_record(&self->rec[2], SIGRTMIN, 4);
	EXPECT_EQ(3 * SI_MAX_SIZE, write(self->wr, self->rec, 3 * SI_MAX_SIZE));
	ASSERT_EQ(5, snapshot(self->base, self->after));
	EXPECT_EQ(0, memcmp(self->before, self->after, 3 * SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("record before", &self->rec[0], &self->after[3]));
	EXPECT_EQ(0, siginfo_cmp("record after", &self->rec[2], &self->after[4]));

	/* One SIGUSR1 is delivered, the one that was pending first */
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(SI_MAX_SIZE, read(self->wr, &deq, SI_MAX_SIZE));
		if (deq.si_signo == SIGUSR1)
			EXPECT_EQ(0, siginfo_cmp("delivered", &self->before[1], &deq));
	}
	EXPECT_ERRNO(EAGAIN, read(self->wr, &deq, SI_MAX_SIZE));
	EXPECT_FALSE(is_pending(SIGUSR1));
}

/* Pending with the same record: dropped just the same, nothing doubled. */
TEST_F(sp, identical_record_is_dropped_too)
{
	ASSERT_EQ(0, make_pending(variant, SIGUSR2));
	ASSERT_EQ(1, snapshot(self->base, self->before));
	EXPECT_EQ(SI_MAX_SIZE, write(self->wr, self->before, SI_MAX_SIZE));
	ASSERT_EQ(1, snapshot(self->base, self->after));
	EXPECT_EQ(0, memcmp(self->before, self->after, SI_MAX_SIZE));
}

/* Two records of one standard signal in one write: the second is dropped. */
TEST_F(sp, second_of_two_in_one_write_is_dropped)
{
	rt_record(&self->rec[0], SIGUSR1, 1);
	rt_record(&self->rec[1], SIGUSR1, 2);
	rt_record(&self->rec[2], SIGRTMIN, 3);
	EXPECT_EQ(3 * SI_MAX_SIZE, write(self->wr, self->rec, 3 * SI_MAX_SIZE));
	ASSERT_EQ(2, snapshot(self->base, self->after));
	EXPECT_EQ(0, siginfo_cmp("first", &self->rec[0], &self->after[0]));
	EXPECT_EQ(0, siginfo_cmp("real-time", &self->rec[2], &self->after[1]));
}

/* Only the queue written to counts: pending in the other one, it queues. */
TEST_F(sp, pending_only_in_the_other_queue_is_queued)
{
	ASSERT_EQ(0, variant->group ? sys_tgkill(getpid(), sys_gettid(), SIGUSR1) :
				      kill(getpid(), SIGUSR1));
	ASSERT_EQ(1, snapshot(self->other_base, self->before));
	rt_record(&self->rec[0], SIGUSR1, 9);
	EXPECT_EQ(SI_MAX_SIZE, write(self->wr, self->rec, SI_MAX_SIZE));
	ASSERT_EQ(1, snapshot(self->base, self->after));
	EXPECT_EQ(0, siginfo_cmp("queued", &self->rec[0], &self->after[0]));
	ASSERT_EQ(1, snapshot(self->other_base, self->after));
	EXPECT_EQ(0, memcmp(self->before, self->after, SI_MAX_SIZE));
}

/*
 * At RLIMIT_SIGPENDING a standard signal is made pending without its
 * record: no peek shows it, and a written record for it is dropped since
 * its bit is set. The dequeue gives the kernel's blank SI_USER record.
 */
TEST_F(sp, pending_without_a_record_at_the_limit)
{
	struct rlimit saved, rl;
	siginfo_t deq, blank;
	long base;

	ASSERT_EQ(0, getrlimit(RLIMIT_SIGPENDING, &saved));
	base = sigq_count();
	ASSERT_LE(0, base);
	rl = saved;
	rl.rlim_cur = (rlim_t)base;	/* no room left */
	ASSERT_EQ(0, setrlimit(RLIMIT_SIGPENDING, &rl));

	/* SI_QUEUE: not a kernel si_code, so not over the limit's override */
	EXPECT_EQ(0, q_variant(variant, SIGUSR1, 7)) TH_LOG("%s", strerror(errno));
	EXPECT_TRUE(is_pending(SIGUSR1));
	EXPECT_EQ(0, snapshot(self->base, self->after))
		TH_LOG("the signal has a record after all: the limit was not hit");
	EXPECT_EQ(base, sigq_count());

	/* Room again, and a record for it written: dropped, the bit is set */
	ASSERT_EQ(0, setrlimit(RLIMIT_SIGPENDING, &saved));
	rt_record(&self->rec[0], SIGUSR1, 8);
	EXPECT_EQ(SI_MAX_SIZE, write(self->wr, self->rec, SI_MAX_SIZE));
	EXPECT_EQ(0, snapshot(self->base, self->after));
	EXPECT_EQ(base, sigq_count());

	memset(&blank, 0, sizeof(blank));
	blank.si_signo = SIGUSR1;
	blank.si_code = SI_USER;
	ASSERT_EQ(SI_MAX_SIZE, read(self->wr, &deq, SI_MAX_SIZE));
	EXPECT_EQ(0, siginfo_cmp("blank record", &blank, &deq));
	EXPECT_FALSE(is_pending(SIGUSR1));
	setrlimit(RLIMIT_SIGPENDING, &saved);
}

TEST_HARNESS_MAIN
