// SPDX-License-Identifier: GPL-2.0
/*
 * A periodic posix timer queues its signal with a requeue cookie in
 * si_sys_private. When the timer is deleted while the signal is pending the
 * entry stays queued but nothing is rearmed when it is dequeued: the cookie
 * must still not reach user space, whichever way the signal is taken (a
 * SA_SIGINFO handler, sigwaitinfo(), a SFD_RAW signalfd read), and the
 * record delivered must be byte-identical to what a peek returned for it.
 */
#define _GNU_SOURCE

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define TSIG	(SIGRTMIN + 2)

enum taker { BY_HANDLER, BY_SIGWAITINFO, BY_SIGNALFD };

/* Queues a periodic timer's signal, deletes the timer, peeks the record. */
static void pending_from_deleted_timer(struct __test_metadata *_metadata,
				       siginfo_t *peeked)
{
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	const int sigs[] = { TSIG, 0 };
	struct sigevent sev;
	timer_t timer;
	int fd;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = TSIG;
	sev.sigev_value.sival_int = 0x71;
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &timer));
	ASSERT_EQ(0, timer_settime(timer, 0, &its, NULL));
	ASSERT_TRUE(wait_pending(TSIG, 5000));
	sleep_ms(20);	/* a few more expiries: the cookie is nonzero */
	ASSERT_EQ(0, timer_delete(timer));
	ASSERT_TRUE(is_pending(TSIG));

	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	ASSERT_LE(0, fd) TH_LOG(SFD_MISSING_MSG);
	memset(peeked, 0xa5, sizeof(*peeked));
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(fd, peeked, 1, SFD_SHARED_QUEUE_OFFSET));
	close(fd);
	ASSERT_EQ(SI_TIMER, peeked->si_code);
	ASSERT_EQ(0x71, peeked->si_value.sival_int);
	ASSERT_EQ(0, si_sys_private(peeked));
}

static void take_and_check(struct __test_metadata *_metadata, enum taker how)
{
	const int sigs[] = { TSIG, 0 };
	siginfo_t peeked, got;
	sigset_t set;
	int fd;

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	pending_from_deleted_timer(_metadata, &peeked);

	memset(&got, 0xa5, sizeof(got));
	switch (how) {
	case BY_HANDLER:
		ASSERT_EQ(0, capture_install(TSIG));
		block_signal(TSIG, SIG_UNBLOCK);
		block_signal(TSIG, SIG_BLOCK);
		ASSERT_EQ(1, SIG_LOAD(ncaptured));
		memcpy(&got, &captured[0], sizeof(got));
		ASSERT_EQ(0, capture_reset(TSIG));
		break;
	case BY_SIGWAITINFO:
		sigemptyset(&set);
		sigaddset(&set, TSIG);
		ASSERT_EQ(TSIG, sigwaitinfo(&set, &got));
		break;
	case BY_SIGNALFD:
		fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
		ASSERT_LE(0, fd);
		ASSERT_EQ(SI_MAX_SIZE, read(fd, &got, SI_MAX_SIZE));
		close(fd);
		break;
	}
	EXPECT_FALSE(is_pending(TSIG));
	EXPECT_EQ(SI_TIMER, got.si_code);
	EXPECT_EQ(0, si_sys_private(&got))
		TH_LOG("the timer's requeue cookie %#x reached user space",
		       si_sys_private(&got));
	EXPECT_EQ(0, siginfo_cmp("peek vs delivery", &peeked, &got));
}

TEST(handler_sees_no_cookie)
{
	take_and_check(_metadata, BY_HANDLER);
}

TEST(sigwaitinfo_sees_no_cookie)
{
	take_and_check(_metadata, BY_SIGWAITINFO);
}

TEST(signalfd_raw_read_sees_no_cookie)
{
	take_and_check(_metadata, BY_SIGNALFD);
}

TEST_HARNESS_MAIN
