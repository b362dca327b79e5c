// SPDX-License-Identifier: GPL-2.0
/*
 * RLIMIT_SIGPENDING while the uncharge of a dequeued entry is deferred.
 *
 * A pread() walk pins the entry it will resume at while it copies the
 * records it has out to user space with the siglock dropped. An entry that
 * leaves its queue while pinned is not freed: __sigqueue_free() marks it
 * SIGQUEUE_STALE and returns before the RLIMIT_SIGPENDING uncharge, and the
 * last walker to let go of it (sigqueue_unpin(), from sigqueue_peek() or
 * sigqueue_peek_end()) frees it and returns the charge. So, by design:
 *
 *  - while the walker still holds the pin, the removed entry is no longer
 *    pending (no peek, no sigpending() shows it) but it is still charged:
 *    SigQ counts it and, at the limit, a new real-time sigqueue() fails
 *    with EAGAIN;
 *  - as soon as the walker's pread() returns, the charge is back: SigQ
 *    drops by one and exactly one more signal can be queued;
 *  - nothing stays charged once the queue is flushed, also when the
 *    process holding the pin is killed.
 *
 * The pin is held deterministically by blocking the walker's copy-out on a
 * userfaultfd page (as sfd_resume's hint test does). The limit is set to
 * the user's current count (SigQ, which is per user) plus what the test
 * queues, so that "full" is exact.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define SHARED		SFD_SHARED_QUEUE_OFFSET
#define NFILL		80	/* entries queued, the limit above the baseline */
#define VPOS		64	/* the entry a 64-record walk pins */
#define VVAL		1000	/* its value; the others carry their index */
#define EXTRA		(SIGRTMIN + 2)

static int val_at(int i)
{
	return i == VPOS ? VVAL : i;
}

static int sig_at(int i)
{
	return i == VPOS ? SIGRTMIN + 1 : SIGRTMIN;
}

/* F0..F63, V, F65..F79 in the process-wide queue. */
static int fill(void)
{
	int i;

	for (i = 0; i < NFILL; i++)
		if (q_shared(sig_at(i), val_at(i)))
			return -1;
	return 0;
}

/* A pread() of the shared queue blocked copying out, holding its pin. */
struct pinner {
	int uffd;
	int fd;
	void *buf;
	void *src;
	size_t len;
	size_t want;	/* records asked for */
	ssize_t ret;
	int err;
	pthread_t thr;
	int started;
};

static void *pinner_thread(void *arg)
{
	struct pinner *p = arg;

	p->ret = pread(p->fd, p->buf, p->want * SI_MAX_SIZE, SHARED);
	p->err = errno;
	return NULL;
}

/* 1 if the kernel gives this process a userfaultfd. */
static int uffd_available(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * Starts the walker and returns once its copy-out faulted: it has walked
 * F0..F63 and pins V. Returns NULL on success, else what failed.
 */
static const char *pinner_start(struct pinner *p, size_t want)
{
	const int both[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	long psz = sysconf(_SC_PAGESIZE);
	struct uffd_msg msg;
	struct pollfd pfd;

	memset(p, 0, sizeof(*p));
	p->want = want;
	p->len = (want * SI_MAX_SIZE + (size_t)psz - 1) / (size_t)psz * (size_t)psz;
	p->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (p->uffd < 0)
		return "userfaultfd";
	if (ioctl(p->uffd, UFFDIO_API, &api))
		return "UFFDIO_API";
	p->buf = mmap(NULL, p->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->src = mmap(NULL, p->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->buf == MAP_FAILED || p->src == MAP_FAILED)
		return "mmap";
	memset(p->src, 0, p->len);
	reg.range.start = (uintptr_t)p->buf;
	reg.range.len = p->len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(p->uffd, UFFDIO_REGISTER, &reg))
		return "UFFDIO_REGISTER";
	p->fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, both);
	if (p->fd < 0)
		return "signalfd4";
	if (pthread_create(&p->thr, NULL, pinner_thread, p))
		return "pthread_create";
	p->started = 1;
	pfd.fd = p->uffd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1)
		return "the walker's copy-out never faulted";
	if (read(p->uffd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT)
		return "no page-fault event";
	return NULL;
}

/* Lets the walker's copy-out complete and waits for its pread() to end. */
static int pinner_finish(struct pinner *p)
{
	struct uffdio_copy copy = { 0 };

	copy.dst = (uintptr_t)p->buf;
	copy.src = (uintptr_t)p->src;
	copy.len = p->len;
	if (ioctl(p->uffd, UFFDIO_COPY, &copy))
		return -1;
	p->started = 0;
	return pthread_join(p->thr, NULL) ? -1 : 0;
}

static void pinner_cleanup(struct pinner *p)
{
	if (p->started)
		pinner_finish(p);
	if (p->fd > 0)
		close(p->fd);
	if (p->uffd > 0)
		close(p->uffd);
	if (p->buf && p->buf != MAP_FAILED)
		munmap(p->buf, p->len);
	if (p->src && p->src != MAP_FAILED)
		munmap(p->src, p->len);
}

enum removal {
	BY_SIGNALFD_READ,	/* collect_signal() */
	BY_SIGTIMEDWAIT,	/* collect_signal(), another syscall */
	BY_SIG_IGN,		/* flush_sigqueue_mask() */
};

/* Takes V off the queue; returns 0 if it went as expected. */
static int remove_v(enum removal how)
{
	const int rtmin1[] = { SIGRTMIN + 1, 0 };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	sigset_t set;
	int fd, ok;

	switch (how) {
	case BY_SIGNALFD_READ:
		fd = sfd_open_sigs(SFD_RAW | SFD_GROUP | SFD_NONBLOCK, rtmin1);
		if (fd < 0)
			return -1;
		ok = read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si);
		close(fd);
		break;
	case BY_SIGTIMEDWAIT:
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN + 1);
		ok = sigtimedwait(&set, &si, &zero) == SIGRTMIN + 1;
		break;
	case BY_SIG_IGN:
		return sigaction(SIGRTMIN + 1, &ign, NULL) ||
		       sigaction(SIGRTMIN + 1, &dfl, NULL) ? -1 : 0;
	default:
		return -1;
	}
	if (!ok || si.si_signo != SIGRTMIN + 1 || si.si_value.sival_int != VVAL)
		return -1;
	return 0;
}

/* The queue is F0..F79 without V, in order (another walk, its own pins). */
static int queue_is_fill_without_v(siginfo_t *buf)
{
	const int both[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	int fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, both);
	ssize_t n;
	int i, j = 0;

	if (fd < 0)
		return -1;
	n = peek_all(fd, SHARED, buf, NFILL + 8, 16);
	close(fd);
	if (n != NFILL - 1) {
		printf("# peeked %zd records, expected %d\n", n, NFILL - 1);
		return -1;
	}
	for (i = 0; i < NFILL; i++) {
		if (i == VPOS)
			continue;
		if (buf[j].si_signo != sig_at(i) ||
		    buf[j].si_value.sival_int != val_at(i)) {
			printf("# index %d: sig %d val %d, expected sig %d val %d\n",
			       j, buf[j].si_signo, buf[j].si_value.sival_int,
			       sig_at(i), val_at(i));
			return -1;
		}
		j++;
	}
	return 0;
}

FIXTURE(rl)
{
	long base;		/* the user's SigQ before the test queued */
	struct rlimit saved;
	int limit_set;
	siginfo_t got[NFILL + 8];
};

FIXTURE_VARIANT(rl)
{
	enum removal how;
	/*
	 * 64: unpinned by sigqueue_peek_end(), 100: by the next
	 * sigqueue_peek() that finds its place lost
	 */
	size_t want;
};

FIXTURE_VARIANT_ADD(rl, signalfd_read_unpin_at_end)
{
	.how = BY_SIGNALFD_READ,
	.want = 64,
};

FIXTURE_VARIANT_ADD(rl, signalfd_read_unpin_by_lost_walk)
{
	.how = BY_SIGNALFD_READ,
	.want = 100,
};

FIXTURE_VARIANT_ADD(rl, sigtimedwait_unpin_at_end)
{
	.how = BY_SIGTIMEDWAIT,
	.want = 64,
};

FIXTURE_VARIANT_ADD(rl, sig_ign_flush_unpin_at_end)
{
	.how = BY_SIG_IGN,
	.want = 64,
};

FIXTURE_VARIANT_ADD(rl, sig_ign_flush_unpin_by_lost_walk)
{
	.how = BY_SIG_IGN,
	.want = 100,
};

FIXTURE_SETUP(rl)
{
	struct rlimit rl;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (!uffd_available())
		SKIP(return, "no userfaultfd: cannot hold a pin deterministically");
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_EQ(0, getrlimit(RLIMIT_SIGPENDING, &self->saved));
	self->base = sigq_count();
	ASSERT_LE(0, self->base) TH_LOG("no SigQ in /proc/self/status");
	rl = self->saved;
	rl.rlim_cur = (rlim_t)(self->base + NFILL);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rl.rlim_cur)
		SKIP(return, "RLIMIT_SIGPENDING hard limit %lu below %ld",
		     (unsigned long)rl.rlim_max, self->base + NFILL);
	ASSERT_EQ(0, setrlimit(RLIMIT_SIGPENDING, &rl));
	self->limit_set = 1;
	ASSERT_EQ(0, fill()) TH_LOG("queueing: %s", strerror(errno));
	ASSERT_EQ(self->base + NFILL, sigq_count());
	/* Full: a real-time sigqueue() over the limit is refused */
	EXPECT_ERRNO(EAGAIN, q_shared(EXTRA, 1), "at the limit");
}

FIXTURE_TEARDOWN(rl)
{
	flush_all_signals();
	if (self->limit_set)
		setrlimit(RLIMIT_SIGPENDING, &self->saved);
}

TEST_F(rl, deferred_uncharge_holds_the_limit_until_the_pin_goes)
{
	struct pinner p;
	const char *why;
	int i;

	why = pinner_start(&p, variant->want);
	if (why)
		pinner_cleanup(&p);
	ASSERT_EQ(NULL, why) TH_LOG("%s: %s", why, strerror(errno));

	/* V leaves the queue while the walker pins it */
	ASSERT_EQ(0, remove_v(variant->how));
	EXPECT_FALSE(is_pending(SIGRTMIN + 1));
	EXPECT_EQ(0, queue_is_fill_without_v(self->got));

	/* Deferred: still charged, so the process is still at its limit */
	EXPECT_EQ(self->base + NFILL, sigq_count())
		TH_LOG("the pinned entry's charge was not deferred");
	EXPECT_ERRNO(EAGAIN, q_shared(EXTRA, 2),
		     "the deferred entry does not count against the limit");
	EXPECT_FALSE(is_pending(EXTRA));

	/* The walker lets go: the last pin frees V and returns its charge */
	ASSERT_EQ(0, pinner_finish(&p));
	EXPECT_EQ(64 * SI_MAX_SIZE, p.ret)
		TH_LOG("pread() returned %zd (%s)", p.ret, strerror(p.err));
	for (i = 0; i < 64 && p.ret == 64 * SI_MAX_SIZE; i++) {
		const siginfo_t *r = (const siginfo_t *)p.buf + i;

		EXPECT_EQ(SIGRTMIN, r->si_signo);
		EXPECT_EQ(i, r->si_value.sival_int);
	}
	EXPECT_EQ(self->base + NFILL - 1, sigq_count())
		TH_LOG("the charge of the dequeued pinned entry never came back");

	/* Exactly one more fits */
	EXPECT_EQ(0, q_shared(EXTRA, 3)) TH_LOG("%s", strerror(errno));
	EXPECT_ERRNO(EAGAIN, q_shared(EXTRA, 4), "over the limit again");
	EXPECT_EQ(self->base + NFILL, sigq_count());

	pinner_cleanup(&p);
	flush_all_signals();
	EXPECT_EQ(self->base, sigq_count()) TH_LOG("charges left after a flush");
}

/*
 * The process holding the pin on a removed entry is killed: every charge
 * of it comes back, the deferred one included.
 */
TEST_F(rl, killed_while_holding_the_pin_returns_every_charge)
{
	int ready[2], status;
	long in_child = -1;
	pid_t pid;

	/* The child queues its own copy of the fill under the same user */
	flush_all_signals();
	ASSERT_EQ(self->base, sigq_count());
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pinner p;
		long n;

		close(ready[0]);
		if (fill() || pinner_start(&p, variant->want) ||
		    remove_v(variant->how))
			_exit(1);
		n = sigq_count();
		if (write(ready[1], &n, sizeof(n)) != sizeof(n))
			_exit(2);
		for (;;)
			pause();
	}
	close(ready[1]);
	ASSERT_EQ((ssize_t)sizeof(in_child), read(ready[0], &in_child,
						  sizeof(in_child)))
		TH_LOG("the child could not set up its pin");
	close(ready[0]);
	/* V no longer pending in the child, yet charged */
	EXPECT_EQ(self->base + NFILL, in_child);
	EXPECT_EQ(self->base + NFILL, sigq_count());

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	flush_signal(SIGCHLD);
	EXPECT_EQ(self->base, sigq_count())
		TH_LOG("charges of the killed process never came back");
}

TEST_HARNESS_MAIN
