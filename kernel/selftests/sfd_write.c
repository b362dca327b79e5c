// SPDX-License-Identifier: GPL-2.0
/*
 * write() of raw records to an SFD_RAW signalfd: the rules.
 *
 * A write queues each 128-byte record on the writer's own queue that the
 * fd reads (SFD_PRIVATE: the calling thread's, SFD_GROUP: the process's),
 * in order, as a self-sent rt_tgsigqueueinfo() would; it stops at the first
 * record that cannot be queued and returns the size of those before it.
 * Every layout's byte-for-byte round trip is in sfd_roundtrip (its *_write
 * variants); this file checks the errors, the partial counts and who the
 * records go to.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define NREC	1000

/* The syscall itself: glibc's annotations reject deliberately bad buffers. */
static long raw_write(int fd, const void *buf, size_t count)
{
	return syscall(SYS_write, fd, buf, count);
}

/* A SI_QUEUE record of @sig from this process carrying @val. */
static void rt_record(siginfo_t *si, int sig, int val)
{
	si_init(si, sig, SI_QUEUE);
	si->si_pid = getpid();
	si->si_uid = getuid();
	si->si_value.sival_int = val;
}

/* Records pending in one queue of the caller (at most @max kept in @buf). */
static ssize_t queued(long long base, siginfo_t *buf, size_t max)
{
	int fd = sfd_open_all(SFD_RAW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = peek_all(fd, base, buf, max, 16);
	close(fd);
	return n;
}

FIXTURE(wr)
{
	int priv;	/* SFD_RAW | SFD_PRIVATE */
	int group;	/* SFD_RAW | SFD_GROUP */
	siginfo_t rec[NREC];
	siginfo_t got[NREC];
};

FIXTURE_SETUP(wr)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	self->priv = sfd_open_all(SFD_RAW | SFD_PRIVATE);
	ASSERT_LE(0, self->priv);
	self->group = sfd_open_all(SFD_RAW | SFD_GROUP);
	ASSERT_LE(0, self->group);
}

FIXTURE_TEARDOWN(wr)
{
	flush_all_signals();
}

TEST_F(wr, zero_length_is_the_probe)
{
	EXPECT_EQ(0, write(self->priv, NULL, 0));
	EXPECT_EQ(0, write(self->group, NULL, 0));
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
}

/* Order across the batches the kernel queues under one siglock hold. */
TEST_F(wr, thousand_records_in_order_each_queue)
{
	int i;

	for (i = 0; i < NREC; i++)
		rt_record(&self->rec[i], SIGRTMIN + i % 5, i);
	ASSERT_EQ(0, raise_sigpending(4 * NREC));
	EXPECT_EQ(NREC * SI_MAX_SIZE, write(self->priv, self->rec, sizeof(self->rec)));
	EXPECT_EQ(NREC, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, memcmp(self->rec, self->got, sizeof(self->rec)));
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
	flush_all_signals();

	EXPECT_EQ(NREC * SI_MAX_SIZE, write(self->group, self->rec, sizeof(self->rec)));
	EXPECT_EQ(NREC, queued(SHARED, self->got, NREC));
	EXPECT_EQ(0, memcmp(self->rec, self->got, sizeof(self->rec)));
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
}

TEST_F(wr, needs_raw_and_exactly_one_queue)
{
	const int bad[] = { 0, SFD_RAW, SFD_PRIVATE, SFD_GROUP };
	unsigned int i;
	int fd;

	rt_record(&self->rec[0], SIGRTMIN, 1);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		fd = sfd_open_all(bad[i]);
		ASSERT_LE(0, fd);
		EXPECT_ERRNO(EINVAL, write(fd, self->rec, SI_MAX_SIZE),
			     "flags 0%o", bad[i]);
		EXPECT_ERRNO(EINVAL, write(fd, NULL, 0), "flags 0%o", bad[i]);
		close(fd);
	}
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
}

TEST_F(wr, length_not_a_multiple_of_a_record)
{
	const size_t bad[] = { 1, 127, 129, 2 * SI_MAX_SIZE - 1, 3 * SI_MAX_SIZE + 64 };
	unsigned int i;

	for (i = 0; i < 4; i++)
		rt_record(&self->rec[i], SIGRTMIN, i);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_ERRNO(EINVAL, write(self->priv, self->rec, bad[i]),
			     "%zu bytes", bad[i]);
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
}

TEST_F(wr, pwrite_has_no_position)
{
	rt_record(&self->rec[0], SIGRTMIN, 1);
	EXPECT_ERRNO(ESPIPE, pwrite(self->priv, self->rec, SI_MAX_SIZE, PRIV));
	EXPECT_ERRNO(ESPIPE, pwrite(self->group, self->rec, SI_MAX_SIZE, SHARED));
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
}

/* The fd's mask bounds what is written as it bounds what is read. */
TEST_F(wr, only_signals_the_fd_reads)
{
	const int bad[] = { 0, SIGKILL, SIGSTOP, SIGUSR2, _NSIG + 1, -1 };
	int one[] = { SIGUSR1, 0 };
	unsigned int i;
	int fd;

	fd = sfd_open_sigs(SFD_RAW | SFD_PRIVATE | SFD_NONBLOCK, one);
	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		rt_record(&self->rec[0], bad[i], 7);
		EXPECT_ERRNO(EINVAL, write(fd, self->rec, SI_MAX_SIZE),
			     "signal %d", bad[i]);
	}
	/* SIGKILL and SIGSTOP even on an fd opened on every signal */
	rt_record(&self->rec[0], SIGKILL, 7);
	EXPECT_ERRNO(EINVAL, write(self->priv, self->rec, SI_MAX_SIZE));
	rt_record(&self->rec[0], SIGSTOP, 7);
	EXPECT_ERRNO(EINVAL, write(self->group, self->rec, SI_MAX_SIZE));

	rt_record(&self->rec[0], SIGUSR1, 7);
	EXPECT_EQ(SI_MAX_SIZE, write(fd, self->rec, SI_MAX_SIZE));
	EXPECT_EQ(1, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, siginfo_cmp("SIGUSR1", &self->rec[0], &self->got[0]));
	close(fd);
}

/* A bad record ends the write: the ones before it stay, none after. */
TEST_F(wr, bad_record_in_the_middle_stops_there)
{
	int i;

	for (i = 0; i < 40; i++)
		rt_record(&self->rec[i], SIGRTMIN, i);
	self->rec[21].si_signo = SIGKILL;
	EXPECT_EQ(21 * SI_MAX_SIZE, write(self->priv, self->rec, 40 * SI_MAX_SIZE));
	ASSERT_EQ(21, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, memcmp(self->rec, self->got, 21 * SI_MAX_SIZE));
	/* Starting at the bad record fails with its error, queuing nothing */
	EXPECT_ERRNO(EINVAL, write(self->priv, &self->rec[21], 19 * SI_MAX_SIZE));
	EXPECT_EQ(21, queued(PRIV, self->got, NREC));
}

TEST_F(wr, faulting_buffer)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map;

	EXPECT_ERRNO(EFAULT, raw_write(self->priv, NULL, SI_MAX_SIZE));
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, munmap(map + page, page));
	/* The last record fits before the hole, the one after it does not */
	rt_record((siginfo_t *)(map + page - SI_MAX_SIZE), SIGRTMIN, 5);
	EXPECT_EQ(SI_MAX_SIZE, raw_write(self->priv, map + page - SI_MAX_SIZE,
					 2 * SI_MAX_SIZE));
	EXPECT_EQ(1, queued(PRIV, self->got, NREC));
	EXPECT_EQ(5, self->got[0].si_value.sival_int);
	munmap(map, page);
}

/*
 * An unknown layout must have zero padding: the kernel cannot tell what
 * non-zero bytes there would mean (as for rt_sigqueueinfo()). A compat
 * writer's records are converted field by field, as compat
 * rt_sigqueueinfo() converts them: the padding is dropped, not refused.
 */
TEST_F(wr, unknown_layout_with_padding)
{
	rt_record(&self->rec[0], SIGUSR1, 1);
	self->rec[0].si_code = 0x7000;
	EXPECT_EQ(SI_MAX_SIZE, write(self->priv, self->rec, SI_MAX_SIZE));
	flush_all_signals();
	((unsigned char *)&self->rec[0])[SI_MAX_SIZE - 1] = 1;
	if (sizeof(long) == 4) {	/* a compat writer */
		EXPECT_EQ(SI_MAX_SIZE,
			  write(self->priv, self->rec, SI_MAX_SIZE));
		ASSERT_EQ(1, queued(PRIV, self->got, NREC));
		EXPECT_EQ(0,
			  ((unsigned char *)&self->got[0])[SI_MAX_SIZE - 1]);
	} else {
		EXPECT_ERRNO(E2BIG, write(self->priv, self->rec, SI_MAX_SIZE));
		EXPECT_EQ(0, queued(PRIV, self->got, NREC));
	}
}

/* The posix-timers cookie is the kernel's: a written one is dropped. */
TEST_F(wr, timer_record_cookie_is_cleared)
{
	siginfo_t *si = &self->rec[0];
	int cookie = 0x1234;

	si_init(si, SIGRTMIN, SI_TIMER);
	si->si_value.sival_int = 9;
	memcpy((char *)si + SI_SYS_PRIVATE_OFF, &cookie, sizeof(cookie));
	EXPECT_EQ(SI_MAX_SIZE, write(self->group, si, SI_MAX_SIZE));
	ASSERT_EQ(1, queued(SHARED, self->got, NREC));
	EXPECT_EQ(0, si_sys_private(&self->got[0]));
	EXPECT_EQ(9, self->got[0].si_value.sival_int);
	EXPECT_EQ(SI_TIMER, self->got[0].si_code);
}

/*
 * A standard signal already pending in the queue is not queued twice, as
 * for any sent one: the write succeeds, the pending record stays the one
 * that was there.
 */
TEST_F(wr, standard_signal_already_pending_is_not_queued_twice)
{
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
	ASSERT_EQ(1, queued(SHARED, self->got, NREC));
	si_init(&self->rec[0], SIGUSR1, SI_QUEUE);
	self->rec[0].si_pid = getpid();
	self->rec[0].si_value.sival_int = 77;
	EXPECT_EQ(SI_MAX_SIZE, write(self->group, self->rec, SI_MAX_SIZE));
	ASSERT_EQ(1, queued(SHARED, self->got, NREC));
	EXPECT_EQ(SI_USER, self->got[0].si_code);
	EXPECT_EQ(0, self->got[0].si_value.sival_int);
	/* On the other queue it is not pending: there it is queued */
	EXPECT_EQ(SI_MAX_SIZE, write(self->priv, self->rec, SI_MAX_SIZE));
	ASSERT_EQ(1, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, memcmp(&self->rec[0], &self->got[0], SI_MAX_SIZE));
}

/* A positive si_code is the kernel's, and allowed to oneself. */
TEST_F(wr, kernel_si_codes_to_oneself)
{
	si_init(&self->rec[0], SIGSEGV, SEGV_MAPERR);
	self->rec[0].si_addr = (void *)(uintptr_t)0x5e6f0000;
	si_init(&self->rec[1], SIGCHLD, CLD_EXITED);
	self->rec[1].si_pid = 1;
	self->rec[1].si_status = 42;
	si_init(&self->rec[2], SIGRTMIN, SI_KERNEL);
	EXPECT_EQ(3 * SI_MAX_SIZE, write(self->priv, self->rec, 3 * SI_MAX_SIZE));
	ASSERT_EQ(3, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, memcmp(self->rec, self->got, 3 * SI_MAX_SIZE));
}

/*
 * RLIMIT_SIGPENDING: a real-time record over the limit fails with EAGAIN;
 * the ones before it are queued and counted.
 */
TEST_F(wr, rlimit_sigpending_partial_count)
{
	struct rlimit rl = { 16, 16 };
	ssize_t ret, n;
	int i;

	for (i = 0; i < 64; i++)
		rt_record(&self->rec[i], SIGRTMIN + 1, i);
	ASSERT_EQ(0, setrlimit(RLIMIT_SIGPENDING, &rl));
	ret = write(self->priv, self->rec, 64 * SI_MAX_SIZE);
	/* other processes of this user count too: at most 16 got in */
	if (ret < 0) {
		EXPECT_EQ(EAGAIN, errno);
		ret = 0;
	}
	EXPECT_EQ(0, ret % SI_MAX_SIZE);
	EXPECT_GE(16 * SI_MAX_SIZE, ret);
	n = ret / SI_MAX_SIZE;
	EXPECT_EQ(n, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, memcmp(self->rec, self->got, n * SI_MAX_SIZE));
	EXPECT_ERRNO(EAGAIN, write(self->priv, &self->rec[n], SI_MAX_SIZE));
	EXPECT_EQ(n, queued(PRIV, self->got, NREC));
}

/* The records go to the writer, whoever created or shares the fd. */
TEST_F(wr, a_child_writes_to_its_own_queue)
{
	int status;
	pid_t pid;

	rt_record(&self->rec[0], SIGRTMIN, 77);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		siginfo_t got;
		int ok;

		ok = write(self->group, self->rec, SI_MAX_SIZE) == SI_MAX_SIZE &&
		     queued(SHARED, &got, 1) == 1 &&
		     got.si_value.sival_int == 77;
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the child's exit is the one signal the parent may have */
	flush_signal(SIGCHLD);
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
}

static void *write_from_thread(void *arg)
{
	int fd = *(int *)arg;
	siginfo_t si, got;

	rt_record(&si, SIGRTMIN, 88);
	if (write(fd, &si, sizeof(si)) != sizeof(si))
		return (void *)1L;
	if (queued(PRIV, &got, 1) != 1 || got.si_value.sival_int != 88)
		return (void *)2L;
	flush_all_signals();
	return NULL;
}

TEST_F(wr, a_thread_writes_to_its_own_private_queue)
{
	pthread_t thread;
	void *ret;

	ASSERT_EQ(0, pthread_create(&thread, NULL, write_from_thread, &self->priv));
	ASSERT_EQ(0, pthread_join(thread, &ret));
	EXPECT_EQ(NULL, ret);
	EXPECT_EQ(0, queued(PRIV, self->got, NREC));
	EXPECT_EQ(0, queued(SHARED, self->got, NREC));
}

/* A written record is delivered like a sent one, handler and all. */
TEST_F(wr, delivered_to_a_handler_unchanged)
{
	rt_record(&self->rec[0], SIGRTMIN + 2, 0x51);
	ASSERT_EQ(0, capture_install(SIGRTMIN + 2));
	EXPECT_EQ(SI_MAX_SIZE, write(self->group, self->rec, SI_MAX_SIZE));
	block_signal(SIGRTMIN + 2, SIG_UNBLOCK);
	block_signal(SIGRTMIN + 2, SIG_BLOCK);
	ASSERT_EQ(1, SIG_LOAD(ncaptured));
	EXPECT_EQ(0, siginfo_cmp("delivered", &self->rec[0], &captured[0]));
	capture_reset(SIGRTMIN + 2);
}

TEST_HARNESS_MAIN
