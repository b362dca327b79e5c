// SPDX-License-Identifier: GPL-2.0
/*
 * The interface serves checkpoint/restore and exists only with
 * CONFIG_CHECKPOINT_RESTORE. Without it the kernel answers as one without
 * the series: signalfd4() refuses the modes with EINVAL, pread() fails with
 * ESPIPE, write() with EINVAL, read() dequeues. PTRACE_PEEKSIGINFO, whose
 * walk the series shares and whose resume hint it leaves out then, still
 * reads a long queue in order, in one call and in batches.
 *
 * Whether the kernel has checkpoint/restore is asked of the kernel, as
 * CRIU does: prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE) exists only with it.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
/* Runs without the interface too: its absence is what it checks there. */
#define SFD_ANY_KERNEL
#include "sfd_common.h"

#define PRIV		SFD_PER_THREAD_QUEUE_OFFSET
#define NQUEUED		300	/* several of the kernel's 64-entry batches */
#define PTRACE_BATCH	32

static int kernel_has_checkpoint_restore(void)
{
	unsigned int size = 0;

	return prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE, &size, 0, 0) == 0;
}

/* 1 if signalfd4() takes SFD_RAW, 0 if it refuses it with EINVAL. */
static int raw_mode_accepted(void)
{
	int fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, (const int[]){ SIGRTMIN, 0 });

	if (fd < 0)
		return errno == EINVAL ? 0 : -1;
	close(fd);
	return 1;
}

TEST(modes_follow_checkpoint_restore)
{
	static const int modes[] = {
		SFD_RAW, SFD_PRIVATE, SFD_GROUP,
		SFD_RAW | SFD_PRIVATE, SFD_RAW | SFD_GROUP,
	};
	int cr = kernel_has_checkpoint_restore();
	unsigned int i;
	int fd;

	TH_LOG("CONFIG_CHECKPOINT_RESTORE: %s", cr ? "y" : "n");
	if (cr && raw_mode_accepted() == 0)
		SKIP(return, "kernel without the series");
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		fd = sfd_open_sigs(modes[i] | SFD_NONBLOCK,
				   (const int[]){ SIGRTMIN, 0 });
		if (cr) {
			EXPECT_LE(0, fd)
				TH_LOG("mode %#x: %s", modes[i], strerror(errno));
		} else {
			EXPECT_EQ(-1, fd) TH_LOG("mode %#x accepted", modes[i]);
			EXPECT_EQ(EINVAL, errno);
		}
		if (fd >= 0)
			close(fd);
	}
}

/* One SIGRTMIN carrying @val in the calling thread's queue, blocked. */
static int queue_one(int val)
{
	block_signal(SIGRTMIN, SIG_BLOCK);
	flush_signal(SIGRTMIN);
	return q_private(SIGRTMIN, val);
}

TEST(pread_and_write_follow_checkpoint_restore)
{
	int cr = kernel_has_checkpoint_restore();
	struct signalfd_siginfo ssi;
	unsigned char rec[SI_MAX_SIZE];
	ssize_t n;
	int fd;

	if (cr && raw_mode_accepted() == 0)
		SKIP(return, "kernel without the series");
	fd = sfd_open_sigs(SFD_NONBLOCK, (const int[]){ SIGRTMIN, 0 });
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, queue_one(7));

	n = pread(fd, &ssi, sizeof(ssi), PRIV);
	if (cr) {
		EXPECT_EQ((ssize_t)sizeof(ssi), n)
			TH_LOG("pread: %s", strerror(errno));
	} else {
		EXPECT_EQ(-1, n);
		EXPECT_EQ(ESPIPE, errno);
	}
	EXPECT_TRUE(is_pending(SIGRTMIN)) TH_LOG("pread() dequeued");

	memset(rec, 0, sizeof(rec));
	EXPECT_EQ(-1, write(fd, rec, sizeof(rec)));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ((ssize_t)sizeof(ssi), read(fd, &ssi, sizeof(ssi)));
	EXPECT_EQ(7, ssi.ssi_int);
	EXPECT_FALSE(is_pending(SIGRTMIN));
	close(fd);
}

/* The tracee: NQUEUED numbered SIGRTMIN in its process-wide queue, stopped. */
static void run_tracee(void)
{
	int i;

	block_signal(SIGRTMIN, SIG_BLOCK);
	if (raise_sigpending(NQUEUED + 64))
		_exit(2);
	for (i = 0; i < NQUEUED; i++)
		if (q_shared(SIGRTMIN, i))
			_exit(3);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
		_exit(4);
	raise(SIGSTOP);
	_exit(0);
}

/* PTRACE_PEEKSIGINFO of @nr records at @off of @pid's process-wide queue. */
static long peek_shared(pid_t pid, unsigned long off, int nr, siginfo_t *si)
{
	struct __ptrace_peeksiginfo_args arg = {
		.off = off, .flags = PTRACE_PEEKSIGINFO_SHARED, .nr = nr,
	};

	return ptrace(PTRACE_PEEKSIGINFO, pid, &arg, si);
}

static int numbered_from(const siginfo_t *si, long n, int first)
{
	long i;

	for (i = 0; i < n; i++)
		if (si[i].si_signo != SIGRTMIN ||
		    si[i].si_value.sival_int != first + i)
			return (int)i;
	return -1;
}

TEST(ptrace_peeksiginfo_reads_a_long_queue_in_order)
{
	static siginfo_t si[NQUEUED + 8];
	int status, off, first_bad;
	long n;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		run_tracee();
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSTOPPED(status)) TH_LOG("tracee status %#x", status);

	n = peek_shared(pid, 0, NQUEUED + 8, si);
	EXPECT_EQ(NQUEUED, n);
	first_bad = numbered_from(si, n > 0 ? n : 0, 0);
	EXPECT_EQ(-1, first_bad) TH_LOG("one call: record %d out of order",
					first_bad);

	for (off = 0; off < NQUEUED; off += PTRACE_BATCH) {
		n = peek_shared(pid, off, PTRACE_BATCH, si);
		ASSERT_EQ(off + PTRACE_BATCH <= NQUEUED ?
			  PTRACE_BATCH : NQUEUED - off, n);
		first_bad = numbered_from(si, n, off);
		ASSERT_EQ(-1, first_bad) TH_LOG("batch at %d: record %d",
						off, first_bad);
	}
	EXPECT_EQ(0, peek_shared(pid, NQUEUED, PTRACE_BATCH, si));

	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
}

TEST_HARNESS_MAIN
