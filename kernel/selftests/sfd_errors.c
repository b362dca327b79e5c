// SPDX-License-Identifier: GPL-2.0
/*
 * Every bad argument of the extended signalfd interface, and the fact that
 * pread() works only through FMODE_PREAD: the file position never moves and
 * read() keeps dequeuing after peeks and seeks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET

/* Every valid mode: SFD_PRIVATE and SFD_GROUP exclude each other. */
static const int mode_flags[] = {
	0, SFD_RAW, SFD_GROUP, SFD_PRIVATE,
	SFD_RAW | SFD_GROUP, SFD_RAW | SFD_PRIVATE,
};

/* The syscall itself: glibc's annotations reject deliberately bad buffers. */
static long raw_pread(int fd, void *buf, size_t count, long long off)
{
	return syscall(SYS_pread64, fd, buf, count, off);
}

static void rtmin_mask(sigset_t *m)
{
	sigemptyset(m);
	sigaddset(m, SIGRTMIN);
	sigaddset(m, SIGUSR1);
}

static int open_rtmin(int flags)
{
	sigset_t m;

	rtmin_mask(&m);
	return sys_signalfd4(-1, &m, KERNEL_SIGSET_SIZE, flags);
}

FIXTURE(errors)
{
	int fd;
	unsigned char buf[8 * SI_MAX_SIZE];
};

FIXTURE_SETUP(errors)
{
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	self->fd = open_rtmin(SFD_RAW | SFD_NONBLOCK);
	ASSERT_LE(0, self->fd) TH_LOG(SFD_MISSING_MSG);
}

FIXTURE_TEARDOWN(errors)
{
	close(self->fd);
}

static long shared_pending(int fd)
{
	unsigned char buf[16 * SI_MAX_SIZE];
	ssize_t r = sfd_peek(fd, buf, 16, SHARED);

	return r < 0 ? r : r / SI_MAX_SIZE;
}

TEST_F(errors, valid_flag_combinations_accepted)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(mode_flags); i++) {
		int fd = open_rtmin(mode_flags[i] | SFD_CLOEXEC | SFD_NONBLOCK);

		EXPECT_LE(0, fd) TH_LOG("flags %#x: %s", mode_flags[i], strerror(errno));
		close(fd);
	}
}

TEST_F(errors, unknown_flags_einval)
{
	static const int bad[] = {
		1 /* O_WRONLY */, 2 /* O_RDWR */, O_CREAT, O_NOCTTY, O_TRUNC,
		O_APPEND, O_DSYNC, O_SYNC, O_NOATIME, O_PATH, 0100000 /* O_LARGEFILE */,
		O_NOFOLLOW, 1 << 30, (int)(1u << 31), -1,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_ERRNO(EINVAL, open_rtmin(bad[i]), "flags %#x", bad[i]);
		EXPECT_ERRNO(EINVAL, open_rtmin(bad[i] | SFD_RAW),
			     "flags SFD_RAW|%#x", bad[i]);
		EXPECT_ERRNO(EINVAL,
			     sys_signalfd4(self->fd, NULL, 0, bad[i] | SFD_RAW),
			     "existing fd, flags SFD_RAW|%#x", bad[i]);
	}
}

/*
 * Neither flag already means both queues; the pair is refused so that it
 * stays free, on a new fd and on an existing one alike.
 */
TEST_F(errors, private_and_group_together_einval)
{
	const int both = SFD_PRIVATE | SFD_GROUP;
	unsigned int i;
	sigset_t m;

	rtmin_mask(&m);
	EXPECT_ERRNO(EINVAL, open_rtmin(both));
	EXPECT_ERRNO(EINVAL, open_rtmin(both | SFD_RAW));
	EXPECT_ERRNO(EINVAL, open_rtmin(both | SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC));
	for (i = 0; i < ARRAY_SIZE(mode_flags); i++) {
		int fd = open_rtmin(mode_flags[i]);

		ASSERT_LE(0, fd);
		EXPECT_ERRNO(EINVAL, sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE,
						   both | (mode_flags[i] & SFD_RAW)),
			     "existing fd created with %#x", mode_flags[i]);
		close(fd);
	}
}

TEST_F(errors, mode_is_fixed_at_creation)
{
	unsigned int i, j;
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	for (i = 0; i < ARRAY_SIZE(mode_flags); i++) {
		int fd = open_rtmin(mode_flags[i]);

		ASSERT_LE(0, fd);
		for (j = 0; j < ARRAY_SIZE(mode_flags); j++) {
			if (i == j)
				continue;
			EXPECT_ERRNO(EINVAL,
				     sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE,
						   mode_flags[j]),
				     "created %#x, changed to %#x",
				     mode_flags[i], mode_flags[j]);
		}
		/* Same mode: the mask may change; CLOEXEC/NONBLOCK ignored as ever. */
		EXPECT_EQ(fd, sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE, mode_flags[i]));
		EXPECT_EQ(fd, sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE,
					    mode_flags[i] | SFD_NONBLOCK | SFD_CLOEXEC));
		close(fd);
	}
}

/*
 * signalfd4() on an existing fd changes its mask only: SFD_NONBLOCK and
 * SFD_CLOEXEC are ignored there (as before the series; F_SETFL and
 * F_SETFD change those), and signalfd(), which has no flags, can update
 * only an fd without a mode.
 */
TEST_F(errors, update_ignores_nonblock_and_cloexec)
{
	unsigned int i;
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	for (i = 0; i < ARRAY_SIZE(mode_flags); i++) {
		int fd = open_rtmin(mode_flags[i]);

		ASSERT_LE(0, fd);
		EXPECT_EQ(fd, sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE,
					    mode_flags[i] | SFD_NONBLOCK | SFD_CLOEXEC));
		EXPECT_EQ(0, fcntl(fd, F_GETFL) & O_NONBLOCK) TH_LOG("mode %#x", mode_flags[i]);
		EXPECT_EQ(0, fcntl(fd, F_GETFD) & FD_CLOEXEC) TH_LOG("mode %#x", mode_flags[i]);
		if (mode_flags[i])
			EXPECT_ERRNO(EINVAL, syscall(SYS_signalfd, fd, &m, KERNEL_SIGSET_SIZE),
				     "signalfd() on an fd with mode %#x", mode_flags[i]);
		else
			EXPECT_EQ(fd, syscall(SYS_signalfd, fd, &m, KERNEL_SIGSET_SIZE));
		close(fd);
	}
}

TEST_F(errors, mask_change_keeps_mode_and_applies)
{
	sigset_t m;

	ASSERT_EQ(0, kill(getpid(), SIGUSR2));
	EXPECT_EQ(0, shared_pending(self->fd));
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	ASSERT_EQ(self->fd, sys_signalfd4(self->fd, &m, KERNEL_SIGSET_SIZE, SFD_RAW));
	ASSERT_EQ(SI_MAX_SIZE, read(self->fd, self->buf, 8 * SI_MAX_SIZE));
	/* Still raw: the record is a siginfo_t with si_code intact. */
	EXPECT_EQ(SIGUSR2, ((siginfo_t *)self->buf)->si_signo);
	EXPECT_EQ(SI_USER, ((siginfo_t *)self->buf)->si_code);
	EXPECT_EQ(getpid(), ((siginfo_t *)self->buf)->si_pid);
}

TEST_F(errors, bad_sizemask_einval)
{
	static const size_t sizes[] = { 0, 1, 4, 7, 9, 16, 128 };
	unsigned int i;
	sigset_t m;

	rtmin_mask(&m);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		EXPECT_ERRNO(EINVAL, sys_signalfd4(-1, &m, sizes[i], SFD_RAW),
			     "sizemask %zu", sizes[i]);
		EXPECT_ERRNO(EINVAL,
			     sys_signalfd4(self->fd, &m, sizes[i], SFD_RAW),
			     "existing fd, sizemask %zu", sizes[i]);
	}
}

TEST_F(errors, count_below_one_record_einval)
{
	static const size_t counts[] = { 0, 1, 64, SI_MAX_SIZE - 1 };
	unsigned int i;

	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	for (i = 0; i < ARRAY_SIZE(counts); i++) {
		EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, counts[i], SHARED),
			     "pread count %zu", counts[i]);
		EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, counts[i], PRIV),
			     "pread count %zu", counts[i]);
		EXPECT_ERRNO(EINVAL, read(self->fd, self->buf, counts[i]),
			     "read count %zu", counts[i]);
	}
	EXPECT_EQ(1, shared_pending(self->fd));
	/* A count that is not a multiple of 128 is rounded down. */
	EXPECT_EQ(SI_MAX_SIZE, pread(self->fd, self->buf, 2 * SI_MAX_SIZE - 1, SHARED));
}

TEST_F(errors, negative_offset_einval)
{
	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, SI_MAX_SIZE, -1));
	EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, SI_MAX_SIZE, -SHARED));
	EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, SI_MAX_SIZE, LLONG_MIN));
	EXPECT_EQ(1, shared_pending(self->fd));
}

TEST_F(errors, offset_plus_count_overflow_einval)
{
	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, 2 * SI_MAX_SIZE,
				   LLONG_MAX - SI_MAX_SIZE));
	EXPECT_ERRNO(EINVAL, pread(self->fd, self->buf, SI_MAX_SIZE, LLONG_MAX));
	/* Just below the limit is a valid (empty) position. */
	EXPECT_EQ(0, pread(self->fd, self->buf, SI_MAX_SIZE,
			   LLONG_MAX - SI_MAX_SIZE));
	EXPECT_EQ(1, shared_pending(self->fd));
}

TEST_F(errors, bad_buffers_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map;
	sigset_t m;

	rtmin_mask(&m);
	EXPECT_ERRNO(EFAULT, sys_signalfd4(-1, NULL, KERNEL_SIGSET_SIZE, SFD_RAW));
	EXPECT_ERRNO(EFAULT, sys_signalfd4(-1, (sigset_t *)1, KERNEL_SIGSET_SIZE,
					   SFD_RAW));
	EXPECT_ERRNO(EFAULT, sys_signalfd4(self->fd, NULL, KERNEL_SIGSET_SIZE,
					   SFD_RAW));

	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	EXPECT_ERRNO(EFAULT, raw_pread(self->fd, NULL, SI_MAX_SIZE, SHARED));
	EXPECT_ERRNO(EFAULT, raw_pread(self->fd, (void *)-4096L, SI_MAX_SIZE, SHARED));
	/* A failed peek consumed nothing. */
	EXPECT_EQ(2, shared_pending(self->fd));

	/* Room for one record before an inaccessible page: a short peek. */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	EXPECT_EQ(SI_MAX_SIZE,
		  pread(self->fd, map + page - SI_MAX_SIZE, 2 * SI_MAX_SIZE,
			SHARED));
	EXPECT_EQ(1, ((siginfo_t *)(map + page - SI_MAX_SIZE))->si_value.sival_int);
	EXPECT_ERRNO(EFAULT, pread(self->fd, map + page, SI_MAX_SIZE, SHARED));
	EXPECT_EQ(2, shared_pending(self->fd));
	munmap(map, 2 * page);
}

TEST_F(errors, not_a_signalfd)
{
	int p[2];
	sigset_t m;

	rtmin_mask(&m);
	ASSERT_EQ(0, pipe(p));
	EXPECT_ERRNO(EINVAL, sys_signalfd4(p[0], &m, KERNEL_SIGSET_SIZE, 0));
	EXPECT_ERRNO(EINVAL, sys_signalfd4(p[0], &m, KERNEL_SIGSET_SIZE, SFD_RAW));
	EXPECT_ERRNO(EBADF, sys_signalfd4(100000, &m, KERNEL_SIGSET_SIZE, SFD_RAW));
	/* Offsets on a pipe are refused by the VFS as before. */
	EXPECT_ERRNO(ESPIPE, pread(p[0], self->buf, SI_MAX_SIZE, SHARED));
	close(p[0]);
	close(p[1]);
}

/*
 * pread() works because the fd has FMODE_PREAD, not because the file has
 * a meaningful position: it never moves, and read() still dequeues.
 */
TEST_F(errors, position_never_moves_read_still_dequeues)
{
	siginfo_t *si = (siginfo_t *)self->buf;

	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 3));
	ASSERT_EQ(3 * SI_MAX_SIZE, pread(self->fd, self->buf, 8 * SI_MAX_SIZE, SHARED + 0));
	EXPECT_EQ(0, lseek(self->fd, 0, SEEK_CUR));
	ASSERT_EQ(SI_MAX_SIZE, pread(self->fd, self->buf, SI_MAX_SIZE, SHARED + 2));
	EXPECT_EQ(0, lseek(self->fd, 0, SEEK_CUR));

	ASSERT_EQ(SI_MAX_SIZE, read(self->fd, self->buf, SI_MAX_SIZE));
	EXPECT_EQ(1, si->si_value.sival_int);
	EXPECT_EQ(2, shared_pending(self->fd));

	/* A seek attempt changes nothing either. */
	lseek(self->fd, SHARED, SEEK_SET);
	EXPECT_EQ(0, lseek(self->fd, 0, SEEK_CUR));
	ASSERT_EQ(SI_MAX_SIZE, read(self->fd, self->buf, SI_MAX_SIZE));
	EXPECT_EQ(2, si->si_value.sival_int);
	EXPECT_EQ(1, shared_pending(self->fd));

	/* pread at offset 0 is an ordinary dequeuing read. */
	ASSERT_EQ(SI_MAX_SIZE, pread(self->fd, self->buf, SI_MAX_SIZE, 0));
	EXPECT_EQ(3, si->si_value.sival_int);
	EXPECT_EQ(0, shared_pending(self->fd));
	EXPECT_ERRNO(EAGAIN, read(self->fd, self->buf, SI_MAX_SIZE));
}

TEST_F(errors, peek_on_empty_blocking_fd_returns_zero)
{
	int fd = open_rtmin(SFD_RAW);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, pread(fd, self->buf, SI_MAX_SIZE, SHARED));
	EXPECT_EQ(0, pread(fd, self->buf, SI_MAX_SIZE, PRIV));
	close(fd);
}

static long raw_read(int fd, void *buf, size_t count)
{
	return syscall(SYS_read, fd, buf, count);
}

/* The SIGRTMIN values pending process-wide, in queue order, as a number. */
static long shared_values(int fd)
{
	siginfo_t rec[8];
	ssize_t r = sfd_peek(fd, rec, 8, SHARED);
	long v = 0;
	int i;

	if (r < 0)
		return -1;
	for (i = 0; i < r / SI_MAX_SIZE; i++)
		v = v * 10 + rec[i].si_value.sival_int;
	return v;
}

/*
 * A read() that cannot copy a record out must leave it queued: a signal
 * is either delivered to user space or still pending, never dropped. The
 * same for the classic format, which shares the dequeue path.
 */
static void read_efault_keeps_signals(struct __test_metadata *_metadata,
				      int fd, int peek_fd)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map;

	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 3));
	EXPECT_ERRNO(EFAULT, raw_read(fd, NULL, SI_MAX_SIZE));
	EXPECT_EQ(123, shared_values(peek_fd)) TH_LOG("a failed read() lost a signal");
	EXPECT_ERRNO(EFAULT, raw_read(fd, (void *)-4096L, 2 * SI_MAX_SIZE));
	EXPECT_EQ(123, shared_values(peek_fd)) TH_LOG("a failed read() lost a signal");

	/* Room for one record: a short read, and the second stays queued. */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, mprotect(map + page, page, PROT_NONE));
	EXPECT_EQ(SI_MAX_SIZE, read(fd, map + page - SI_MAX_SIZE, 3 * SI_MAX_SIZE));
	EXPECT_EQ(23, shared_values(peek_fd)) TH_LOG("a short read() lost a signal");
	munmap(map, 2 * page);
}

TEST_F(errors, read_efault_nothing_lost_raw)
{
	read_efault_keeps_signals(_metadata, self->fd, self->fd);
}

TEST_F(errors, read_efault_nothing_lost_classic)
{
	int classic = open_rtmin(SFD_NONBLOCK);

	ASSERT_LE(0, classic);
	read_efault_keeps_signals(_metadata, classic, self->fd);
	close(classic);
}

/*
 * O_DIRECT is SFD_RAW's bit: F_SETFL must not switch the record format.
 * The mode is not in f_flags, so F_GETFL never shows it; F_SETFL refuses
 * O_DIRECT (no direct I/O on an anonymous inode), ignores O_DIRECTORY and
 * O_EXCL, and clearing O_DIRECT from a raw fd changes nothing.
 */
TEST_F(errors, fcntl_cannot_toggle_mode)
{
	const struct signalfd_siginfo *ssi = (const void *)self->buf;
	const siginfo_t *si = (const void *)self->buf;
	int classic = open_rtmin(SFD_NONBLOCK);
	int fl, raw_fl;

	ASSERT_LE(0, classic);
	fl = fcntl(classic, F_GETFL);
	ASSERT_LE(0, fl);
	raw_fl = fcntl(self->fd, F_GETFL);
	ASSERT_LE(0, raw_fl);
	EXPECT_EQ(0, raw_fl & (O_DIRECT | O_DIRECTORY | O_EXCL))
		TH_LOG("F_GETFL of an SFD_RAW fd: %#o", raw_fl);
	EXPECT_ERRNO(EINVAL, fcntl(classic, F_SETFL, fl | O_DIRECT));
	EXPECT_EQ(0, fcntl(classic, F_SETFL, fl | O_DIRECTORY | O_EXCL));
	EXPECT_EQ(fl, fcntl(classic, F_GETFL));
	EXPECT_EQ(0, fcntl(self->fd, F_SETFL, raw_fl & ~O_DIRECT));
	EXPECT_EQ(raw_fl, fcntl(self->fd, F_GETFL));

	ASSERT_EQ(0, q_shared(SIGRTMIN, 0x77));
	ASSERT_EQ(SI_MAX_SIZE, pread(classic, self->buf, SI_MAX_SIZE, SHARED));
	EXPECT_EQ((uint32_t)getpid(), ssi->ssi_pid);
	EXPECT_EQ(0x77, ssi->ssi_int);
	ASSERT_EQ(SI_MAX_SIZE, pread(self->fd, self->buf, SI_MAX_SIZE, SHARED));
	EXPECT_EQ(getpid(), si->si_pid);
	EXPECT_EQ(0x77, si->si_value.sival_int);
	ASSERT_EQ(SI_MAX_SIZE, read(classic, self->buf, SI_MAX_SIZE));
	EXPECT_EQ((uint32_t)getpid(), ssi->ssi_pid);
	EXPECT_EQ(0x77, ssi->ssi_int);
	close(classic);
}

/*
 * write() needs SFD_RAW and a queue flag (sfd_write has the rest);
 * pwrite() has no FMODE_PWRITE.
 */
TEST_F(errors, write_refused)
{
	memset(self->buf, 0, SI_MAX_SIZE);
	EXPECT_ERRNO(EINVAL, write(self->fd, self->buf, SI_MAX_SIZE));
	EXPECT_ERRNO(ESPIPE, pwrite(self->fd, self->buf, SI_MAX_SIZE, SHARED));
}

/*
 * A signalfd inherited across fork() reads the queues of whoever reads it:
 * the child peeks its own (empty, then its own) queue, never the parent's.
 */
TEST_F(errors, inherited_fd_reads_the_readers_queues)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, q_shared(SIGRTMIN, 7));
	ASSERT_EQ(0, q_private(SIGRTMIN, 8));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		siginfo_t r[4];
		int bad = 0;

		/* Pending signals are not inherited. */
		bad |= sfd_peek(self->fd, r, 4, SHARED) != 0;
		bad |= sfd_peek(self->fd, r, 4, PRIV) != 0;
		bad |= q_shared(SIGRTMIN, 9) != 0;
		bad |= sfd_peek(self->fd, r, 4, SHARED) != SI_MAX_SIZE;
		bad |= r[0].si_value.sival_int != 9 || r[0].si_pid != getpid();
		bad |= read(self->fd, r, sizeof(r)) != SI_MAX_SIZE;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(7, shared_values(self->fd));
	ASSERT_EQ(SI_MAX_SIZE, sfd_peek(self->fd, self->buf, 4, PRIV));
	EXPECT_EQ(8, ((siginfo_t *)self->buf)->si_value.sival_int);
}

TEST_HARNESS_MAIN
