// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl(SFD_IOC_SEAL) on an SFD_RAW signalfd: the caller's thread group
 * refuses signals from other processes, SIGKILL aside, with ESRCH, as an
 * exited one would; what was queued before the seal stays for a last
 * read. Without it a signal sent between a process's last read of its
 * queues and its exit is accepted and then dropped.
 *
 * The seal cannot be undone, so every test seals a forked child; the
 * parent is the sender and checks each send's result.
 */
#define _GNU_SOURCE

#include <sys/ioctl.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define SIG_A		(SIGRTMIN + 1)
#define SIG_B		(SIGRTMIN + 2)
#define RACE_SENDS	200000

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

struct sealed_child {
	pid_t pid;
	int to_child;		/* the parent writes a byte: go on */
	int from_child;		/* the child writes its answers */
};

static void child_wait(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(90);
}

static void child_say(int fd, long v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		_exit(91);
}

static long parent_hear(int fd)
{
	long v = -1;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return v;
}

static void parent_go(int fd)
{
	char c = 0;

	if (write(fd, &c, 1) != 1)
		ksft_exit_fail_msg("pipe to the child: %s\n", strerror(errno));
}

/* Seals the calling process: 0, or the errno of the ioctl. */
static int seal_self(void)
{
	int fd = sfd_open_all(SFD_RAW);
	int ret = 0;

	if (fd < 0)
		return errno;
	if (ioctl(fd, SFD_IOC_SEAL, 0))
		ret = errno;
	close(fd);
	return ret;
}

/* Dequeues every record of the caller's two queues: how many there were. */
static long drain_all(void)
{
	unsigned char rec[SI_MAX_SIZE * 64];
	long total = 0;
	int fd = sfd_open_all(SFD_RAW);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, rec, sizeof(rec))) > 0)
		total += n / SI_MAX_SIZE;
	close(fd);
	return n < 0 && errno != EAGAIN ? -1 : total;
}

/*
 * Forks a child that blocks every test signal, says 0, waits for the
 * parent's go, runs @body (which answers through the pipe) and exits.
 */
static void start_child(struct sealed_child *c, void (*body)(struct sealed_child *))
{
	int down[2], up[2];

	if (pipe(down) || pipe(up))
		ksft_exit_fail_msg("pipe: %s\n", strerror(errno));
	c->pid = fork();
	if (c->pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (c->pid == 0) {
		close(down[1]);
		close(up[0]);
		c->to_child = down[0];
		c->from_child = up[1];
		block_test_signals(SIG_BLOCK);
		child_say(c->from_child, 0);
		body(c);
		_exit(0);
	}
	close(down[0]);
	close(up[1]);
	c->to_child = down[1];
	c->from_child = up[0];
	parent_hear(c->from_child);
}

static int reap(struct sealed_child *c)
{
	int status = 0;

	close(c->to_child);
	close(c->from_child);
	if (waitpid(c->pid, &status, 0) != c->pid)
		return -1;
	return status;
}

static int send_rt(pid_t pid, int sig, int value)
{
	union sigval v = { .sival_int = value };

	return sigqueue(pid, sig, v) ? errno : 0;
}

/* Seals, says the ioctl's result, waits, says what its queues held. */
static void seal_then_drain(struct sealed_child *c)
{
	child_wait(c->to_child);
	child_say(c->from_child, seal_self());
	child_wait(c->to_child);
	child_say(c->from_child, drain_all());
}

TEST(others_get_esrch)
{
	struct sealed_child c;
	siginfo_t si;
	int pidfd;

	start_child(&c, seal_then_drain);
	parent_go(c.to_child);
	ASSERT_EQ(0, parent_hear(c.from_child)) TH_LOG("the seal failed");

	EXPECT_EQ(-1, kill(c.pid, SIGUSR1));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, kill(c.pid, 0)) TH_LOG("the null signal finds it");
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(ESRCH, send_rt(c.pid, SIG_A, 1));
	EXPECT_EQ(-1, sys_tgkill(c.pid, c.pid, SIG_A));
	EXPECT_EQ(ESRCH, errno);
	si_init(&si, SIG_B, SI_QUEUE);
	si.si_pid = getpid();
	si.si_uid = getuid();
	EXPECT_EQ(-1, sys_rt_sigqueueinfo(c.pid, SIG_B, &si));
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(-1, sys_rt_tgsigqueueinfo(c.pid, c.pid, SIG_B, &si));
	EXPECT_EQ(ESRCH, errno);
	pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	if (pidfd >= 0) {
		EXPECT_EQ(-1, syscall(SYS_pidfd_send_signal, pidfd, SIG_A, NULL, 0));
		EXPECT_EQ(ESRCH, errno);
		close(pidfd);
	}

	parent_go(c.to_child);
	EXPECT_EQ(0, parent_hear(c.from_child)) TH_LOG("a refused signal was queued");
	EXPECT_EQ(0, reap(&c));
}

TEST(queued_before_stays_for_the_last_read)
{
	struct sealed_child c;

	start_child(&c, seal_then_drain);
	ASSERT_EQ(0, send_rt(c.pid, SIG_A, 1));
	ASSERT_EQ(0, send_rt(c.pid, SIG_B, 2));
	ASSERT_EQ(0, sys_tgkill(c.pid, c.pid, SIG_A));
	parent_go(c.to_child);
	ASSERT_EQ(0, parent_hear(c.from_child));
	EXPECT_EQ(ESRCH, send_rt(c.pid, SIG_A, 3));
	parent_go(c.to_child);
	EXPECT_EQ(3, parent_hear(c.from_child));
	EXPECT_EQ(0, reap(&c));
}

/* Sealed, it still signals itself and requeues with write(). */
static void seal_then_self(struct sealed_child *c)
{
	unsigned char rec[SI_MAX_SIZE];
	siginfo_t si;
	int fd;

	child_wait(c->to_child);
	child_say(c->from_child, seal_self());
	si_init(&si, SIG_B, SI_QUEUE);
	si.si_pid = getpid();
	si.si_uid = getuid();
	memcpy(rec, &si, sizeof(rec));
	fd = sfd_open_all(SFD_RAW | SFD_GROUP);
	child_say(c->from_child, send_rt(getpid(), SIG_A, 1) ? -1 :
		  raise(SIGUSR1) ? -2 :
		  fd < 0 || write(fd, rec, sizeof(rec)) != sizeof(rec) ? -3 :
		  drain_all());
	child_wait(c->to_child);
}

TEST(own_signals_and_sigkill_still_queue)
{
	struct sealed_child c;
	int status;

	start_child(&c, seal_then_self);
	parent_go(c.to_child);
	ASSERT_EQ(0, parent_hear(c.from_child));
	EXPECT_EQ(3, parent_hear(c.from_child))
		TH_LOG("sigqueue() to itself, raise() and write() of a record");
	EXPECT_EQ(0, kill(c.pid, SIGKILL));
	status = reap(&c);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* The ioctl's refusals, each answered as a seal that did not happen. */
static void bad_seals(struct sealed_child *c)
{
	int plain = sfd_open_all(0);
	int raw = sfd_open_all(SFD_RAW);

	child_wait(c->to_child);
	child_say(c->from_child, ioctl(plain, SFD_IOC_SEAL, 0) ? errno : 0);
	child_say(c->from_child, ioctl(raw, SFD_IOC_SEAL, 1) ? errno : 0);
	child_say(c->from_child, ioctl(raw, _IO('J', 1), 0) ? errno : 0);
	child_wait(c->to_child);
}

TEST(refusals_leave_it_unsealed)
{
	struct sealed_child c;

	start_child(&c, bad_seals);
	parent_go(c.to_child);
	EXPECT_EQ(EINVAL, parent_hear(c.from_child)) TH_LOG("a signalfd without SFD_RAW");
	EXPECT_EQ(EINVAL, parent_hear(c.from_child)) TH_LOG("a non-zero argument");
	EXPECT_EQ(ENOTTY, parent_hear(c.from_child)) TH_LOG("another command");
	EXPECT_EQ(0, send_rt(c.pid, SIG_A, 1));
	EXPECT_EQ(0, kill(c.pid, 0));
	parent_go(c.to_child);
	EXPECT_EQ(0, reap(&c));
}

/* Seals from a second thread, forks a child of its own, reports both. */
static void *sealer_thread(void *arg)
{
	(void)arg;
	return (void *)(long)seal_self();
}

static void seal_from_thread(struct sealed_child *c)
{
	pthread_t t;
	void *ret;
	pid_t kid;

	child_wait(c->to_child);
	if (pthread_create(&t, NULL, sealer_thread, NULL) || pthread_join(t, &ret))
		_exit(92);
	kid = fork();
	if (kid == 0) {
		pause();
		_exit(0);
	}
	child_say(c->from_child, (long)ret);
	child_say(c->from_child, kid);
	child_wait(c->to_child);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
}

TEST(thread_group_wide_not_inherited)
{
	struct sealed_child c;
	pid_t kid;

	start_child(&c, seal_from_thread);
	parent_go(c.to_child);
	ASSERT_EQ(0, parent_hear(c.from_child));
	kid = (pid_t)parent_hear(c.from_child);
	ASSERT_GT(kid, 0);
	EXPECT_EQ(-1, sys_tgkill(c.pid, c.pid, SIG_A)) TH_LOG("the leader is sealed too");
	EXPECT_EQ(ESRCH, errno);
	EXPECT_EQ(0, kill(kid, 0)) TH_LOG("a child keeps its own signal state");
	parent_go(c.to_child);
	EXPECT_EQ(0, reap(&c));
}

/* Waits for the go, seals at once, then reads everything queued. */
static void seal_under_fire(struct sealed_child *c)
{
	child_wait(c->to_child);
	sleep_ms(2);
	if (seal_self())
		_exit(93);
	child_say(c->from_child, drain_all());
	child_wait(c->to_child);
}

/*
 * A sender that does not stop: every send that returned 0 is in the last
 * read, every one after the seal fails. The seal and the queueing meet
 * under siglock: a check outside it alone would let a send pass it, then
 * queue behind the last read, and be lost although it returned 0.
 */
TEST(no_accepted_send_is_lost)
{
	long accepted = 0, refused = 0, busy = 0, i;
	struct sealed_child c;
	int err;

	start_child(&c, seal_under_fire);
	parent_go(c.to_child);
	for (i = 0; i < RACE_SENDS; i++) {
		err = send_rt(c.pid, i & 1 ? SIG_A : SIG_B, (int)i);
		if (!err) {
			accepted++;
		} else if (err == EAGAIN) {
			busy++;		/* RLIMIT_SIGPENDING: not queued, said so */
		} else {
			ASSERT_EQ(ESRCH, err);
			refused++;
			break;
		}
	}
	ASSERT_EQ(1, refused) TH_LOG("%ld sends, none refused", i);
	EXPECT_EQ(accepted, parent_hear(c.from_child))
		TH_LOG("%ld accepted (%ld EAGAIN)", accepted, busy);
	EXPECT_EQ(ESRCH, send_rt(c.pid, SIG_A, -1));
	parent_go(c.to_child);
	EXPECT_EQ(0, reap(&c));
}

TEST_HARNESS_MAIN
