// SPDX-License-Identifier: GPL-2.0
/*
 * The signalfd extensions seen from a 32-bit (compat) process, built with
 * gcc -m32 -D_FILE_OFFSET_BITS=64.
 *
 * The layout tests of sfd_raw_layouts.c are compiled in as they are: here
 * the SA_SIGINFO handler receives the 32-bit compat siginfo, so SFD_RAW
 * must return that layout too. The tests below check the compat byte
 * offsets independently and that pread() with 64-bit offsets works.
 */
#include "sfd_raw_layouts.c"

_Static_assert(sizeof(long) == 4, "sfd_compat32 must be built with -m32");
_Static_assert(sizeof(off_t) == 8, "sfd_compat32 needs _FILE_OFFSET_BITS=64");

static int compat_int_at(const void *rec, size_t off)
{
	int v;

	memcpy(&v, (const char *)rec + off, sizeof(v));
	return v;
}

/*
 * compat_siginfo: signo 0, errno 4, code 8, then the union at 12:
 * _rt { pid 12, uid 16, sigval 20 }, _timer { tid 12, overrun 16,
 * sigval 20, sys_private 24 }. The 64-bit layout has the union at 16.
 */
TEST(compat_offsets_of_si_queue)
{
	int sigs[] = { SIGRTMIN, 0 };
	unsigned char rec[2 * SI_MAX_SIZE];
	size_t i;
	int fd;

	block_test_signals(SIG_BLOCK);
	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	ASSERT_LE(0, fd) TH_LOG(SFD_MISSING_MSG);
	ASSERT_EQ(0, q_shared(SIGRTMIN, 0x600d));
	memset(rec, 0xa5, sizeof(rec));
	ASSERT_EQ(SI_MAX_SIZE, pread(fd, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET));
	EXPECT_EQ(SIGRTMIN, compat_int_at(rec, 0));
	EXPECT_EQ(SI_QUEUE, compat_int_at(rec, 8));
	EXPECT_EQ(getpid(), compat_int_at(rec, 12));
	EXPECT_EQ((int)getuid(), compat_int_at(rec, 16));
	EXPECT_EQ(0x600d, compat_int_at(rec, 20));
	for (i = 24; i < SI_MAX_SIZE; i++)
		ASSERT_EQ(0, rec[i]) TH_LOG("byte %zu not zeroed", i);
	for (i = SI_MAX_SIZE; i < sizeof(rec); i++)
		ASSERT_EQ(0xa5, rec[i]) TH_LOG("byte %zu written past the end", i);

	memset(rec, 0xa5, sizeof(rec));
	ASSERT_EQ(SI_MAX_SIZE, read(fd, rec, SI_MAX_SIZE));
	EXPECT_EQ(0x600d, compat_int_at(rec, 20));
	EXPECT_EQ(getpid(), compat_int_at(rec, 12));
	close(fd);
}

TEST(compat_timer_peek_hides_sys_private)
{
	struct itimerspec on = { { 0, 1000000 }, { 0, 1000000 } };
	int sigs[] = { SIGRTMIN + 2, 0 };
	unsigned char rec[SI_MAX_SIZE];
	struct sigevent sev;
	int fd, peeked;
	timer_t t;

	block_test_signals(SIG_BLOCK);
	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	ASSERT_LE(0, fd) TH_LOG(SFD_MISSING_MSG);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGRTMIN + 2;
	sev.sigev_value.sival_int = 0x7132;
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &t));
	ASSERT_EQ(0, timer_settime(t, 0, &on, NULL));
	ASSERT_TRUE(wait_pending(SIGRTMIN + 2, 5000));
	sleep_ms(30);
	ASSERT_EQ(SI_MAX_SIZE, pread(fd, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET));
	EXPECT_EQ(SI_TIMER, compat_int_at(rec, 8));
	peeked = compat_int_at(rec, 16);		/* overrun so far */
	EXPECT_LE(periods_in_ms(30), peeked);
	EXPECT_EQ(0x7132, compat_int_at(rec, 20));
	EXPECT_EQ(0, compat_int_at(rec, 24));		/* si_sys_private */
	ASSERT_EQ(SI_MAX_SIZE, read(fd, rec, sizeof(rec)));
	EXPECT_LE(peeked, compat_int_at(rec, 16));	/* delivered overrun */
	EXPECT_EQ(0, compat_int_at(rec, 24));
	timer_delete(t);
	close(fd);
}

static void compat_many(struct __test_metadata *_metadata, int priv)
{
	long long base = priv ? SFD_PER_THREAD_QUEUE_OFFSET : SFD_SHARED_QUEUE_OFFSET;
	static siginfo_t peek[600], deq[600];
	int sigs[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	ssize_t n;
	int fd, i;

	block_test_signals(SIG_BLOCK);
	ASSERT_EQ(0, raise_sigpending(5000));
	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	ASSERT_LE(0, fd) TH_LOG(SFD_MISSING_MSG);
	for (i = 0; i < 500; i++)
		ASSERT_EQ(0, priv ? q_private(SIGRTMIN + (i & 1), i) :
				    q_shared(SIGRTMIN + (i & 1), i));
	n = peek_all(fd, base, peek, 600, 32);
	ASSERT_EQ(500, n);
	for (i = 0; i < 500; i++) {
		ASSERT_EQ(SIGRTMIN + (i & 1), peek[i].si_signo);
		ASSERT_EQ(i, peek[i].si_value.sival_int);
	}
	ASSERT_EQ(500, dequeue_all(fd, deq, 600));
	ASSERT_EQ(0, match_dequeue_to_peek(peek, 500, deq, 500));
	close(fd);
}

TEST(compat_pread_shared_queue)
{
	compat_many(_metadata, 0);
}

TEST(compat_pread_private_queue)
{
	compat_many(_metadata, 1);
}

TEST(compat_classic_records_unchanged)
{
	int sigs[] = { SIGRTMIN, 0 };
	struct signalfd_siginfo ssi;
	int fd;

	block_test_signals(SIG_BLOCK);
	fd = sfd_open_sigs(SFD_NONBLOCK, sigs);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, q_shared(SIGRTMIN, 0x77));
	ASSERT_EQ(SI_MAX_SIZE, pread(fd, &ssi, sizeof(ssi), SFD_SHARED_QUEUE_OFFSET));
	EXPECT_EQ((uint32_t)SIGRTMIN, ssi.ssi_signo);
	EXPECT_EQ(SI_QUEUE, ssi.ssi_code);
	EXPECT_EQ((uint32_t)getpid(), ssi.ssi_pid);
	EXPECT_EQ(0x77, ssi.ssi_int);
	close(fd);
}
