// SPDX-License-Identifier: GPL-2.0
/*
 * Dump -> flush -> self-requeue -> dump is byte-identical.
 *
 * This is what a checkpointer does with a task's pending signals: read a
 * queue with pread() on a SFD_RAW signalfd, empty it, and queue every
 * record again with rt_sigqueueinfo() (process-wide queue) or
 * rt_tgsigqueueinfo() from the owning thread (per-thread queue), or with
 * one write() of all the records to an SFD_RAW signalfd of that queue
 * (the *_write variants; skipped where the kernel has no write()). The second
 * dump must equal the first byte for byte, for every siginfo layout the
 * kernel produces, in both queues, and the records finally dequeued must be
 * the dumped ones.
 *
 * Each layout is generated the natural way; when that lands in the other
 * queue (a kill() is process-wide, a tgkill() per-thread) the records are
 * moved into the queue under test first, with the same dump/flush/requeue.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV		SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED		SFD_SHARED_QUEUE_OFFSET
#define MAXREC		64

#define SIG_QUEUE_RT	(SIGRTMIN)
#define SIG_TIMER	(SIGRTMIN + 2)
#define SIG_MESGQ	(SIGRTMIN + 3)
#define SIG_POLL	(SIGRTMIN + 4)
#define SIG_SENTINEL	(SIGRTMIN + 5)

struct rt_ctx {
	int private_queue;	/* queue under test */
	pid_t child;
	timer_t timer;
	int have_timer;
	int pipefd[2];
	mqd_t mq;
};

typedef int (*gen_fn)(struct rt_ctx *c);

static long long queue_base(int private_queue)
{
	return private_queue ? PRIV : SHARED;
}

/* A SFD_RAW fd on every signal, for peeking either queue. */
static int open_all(int flags)
{
	sigset_t mask;

	sigfillset(&mask);
	return sys_signalfd4(-1, &mask, KERNEL_SIGSET_SIZE,
			     SFD_RAW | SFD_NONBLOCK | flags);
}

static ssize_t dump_queue(int private_queue, void *buf)
{
	int fd = open_all(0);
	ssize_t n;

	if (fd < 0)
		return -1;
	memset(buf, 0xa5, MAXREC * SI_MAX_SIZE);
	n = peek_all(fd, queue_base(private_queue), buf, MAXREC, 7);
	close(fd);
	return n;
}

/* Dequeues every record of one queue only (SFD_PRIVATE or SFD_GROUP). */
static ssize_t flush_queue(int private_queue, void *buf)
{
	int fd = open_all(private_queue ? SFD_PRIVATE : SFD_GROUP);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = dequeue_all(fd, buf, MAXREC);
	close(fd);
	return n;
}

/* Set by the *_write variants: requeue with write() instead. */
static int requeue_by_write;

static int requeue_write(int private_queue, const void *buf, ssize_t n)
{
	int fd = open_all(private_queue ? SFD_PRIVATE : SFD_GROUP);
	ssize_t w;

	if (fd < 0)
		return -1;
	w = write(fd, buf, n * SI_MAX_SIZE);
	close(fd);
	if (w != n * SI_MAX_SIZE) {
		printf("# write() of %zd records: %zd (%s)\n", n, w,
		       w < 0 ? strerror(errno) : "short");
		return -1;
	}
	return 0;
}

static int requeue(int private_queue, const void *buf, ssize_t n)
{
	ssize_t i;

	if (requeue_by_write)
		return requeue_write(private_queue, buf, n);
	for (i = 0; i < n; i++) {
		const siginfo_t *si = (const siginfo_t *)((const char *)buf +
							  i * SI_MAX_SIZE);
		int ret;

		if (private_queue)
			ret = sys_rt_tgsigqueueinfo(getpid(), sys_gettid(),
						    si->si_signo, si);
		else
			ret = sys_rt_sigqueueinfo(getpid(), si->si_signo, si);
		if (ret) {
			printf("# requeuing sig %d code %d: %s\n", si->si_signo,
			       si->si_code, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Moves whatever sits in the other queue into the queue under test. */
static int settle_into_target(struct rt_ctx *c)
{
	unsigned char buf[MAXREC * SI_MAX_SIZE], flushed[MAXREC * SI_MAX_SIZE];
	ssize_t n = dump_queue(!c->private_queue, buf);

	if (n < 0)
		return -1;
	if (flush_queue(!c->private_queue, flushed) != n)
		return -1;
	return requeue(c->private_queue, buf, n);
}

/* ---- generators: each leaves its signal pending in its natural queue ---- */

static int gen_si_user(struct rt_ctx *c)
{
	(void)c;
	return kill(getpid(), SIGUSR1);
}

static int gen_si_queue(struct rt_ctx *c)
{
	int i;

	/* Several instances: multiplicity and order survive too. */
	for (i = 1; i <= 3; i++)
		if (c->private_queue ? q_private(SIG_QUEUE_RT, i) :
				       q_shared(SIG_QUEUE_RT, i))
			return -1;
	return 0;
}

static int gen_si_tkill(struct rt_ctx *c)
{
	(void)c;
	return sys_tgkill(getpid(), sys_gettid(), SIGUSR2);
}

/* A periodic timer left to overrun, directed at the queue under test. */
static int gen_si_timer(struct rt_ctx *c)
{
	struct itimerspec its = { { 0, 1000000 }, { 0, 1000000 } };
	struct timespec settle = { 0, 20000000 };
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = c->private_queue ? SIGEV_THREAD_ID : SIGEV_SIGNAL;
	sev.sigev_signo = SIG_TIMER;
	sev.sigev_value.sival_int = 0x7173;
	sev.sigev_notify_thread_id = sys_gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &c->timer))
		return -1;
	c->have_timer = 1;
	if (timer_settime(c->timer, 0, &its, NULL))
		return -1;
	if (!wait_pending(SIG_TIMER, 5000))
		return -1;
	nanosleep(&settle, NULL);
	return 0;
}

static int spawn_child(struct rt_ctx *c, int exit_now)
{
	c->child = fork();
	if (c->child < 0)
		return -1;
	if (c->child == 0) {
		if (exit_now)
			_exit(42);
		for (;;)
			pause();
	}
	return 0;
}

static int gen_cld_exited(struct rt_ctx *c)
{
	return spawn_child(c, 1);
}

static int gen_cld_killed(struct rt_ctx *c)
{
	if (spawn_child(c, 0))
		return -1;
	return kill(c->child, SIGKILL);
}

static int gen_cld_stopped(struct rt_ctx *c)
{
	if (spawn_child(c, 0))
		return -1;
	return kill(c->child, SIGSTOP);
}

static int gen_si_mesgq(struct rt_ctx *c)
{
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 64 };
	struct sigevent sev;
	char name[64];

	snprintf(name, sizeof(name), "/sfd_roundtrip.%d", getpid());
	c->mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_NONBLOCK, 0600,
			&attr);
	if (c->mq == (mqd_t)-1)
		return -1;
	mq_unlink(name);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIG_MESGQ;
	sev.sigev_value.sival_int = 0x3e59;
	if (mq_notify(c->mq, &sev))
		return -1;
	return mq_send(c->mq, "m", 1, 0);
}

/* F_SETSIG: POLL_IN with si_band and si_fd, to the process or the thread. */
static int gen_poll_in(struct rt_ctx *c)
{
	struct f_owner_ex owner = { F_OWNER_PID, getpid() };

	if (c->private_queue) {
		owner.type = F_OWNER_TID;
		owner.pid = sys_gettid();
	}
	if (pipe(c->pipefd) ||
	    fcntl(c->pipefd[0], F_SETOWN_EX, &owner) ||
	    fcntl(c->pipefd[0], F_SETSIG, SIG_POLL) ||
	    fcntl(c->pipefd[0], F_SETFL, O_ASYNC | O_NONBLOCK))
		return -1;
	return write(c->pipefd[1], "x", 1) == 1 ? 0 : -1;
}

/* A fault layout cannot stay pending for real: inject it, as a restore does. */
static int gen_fault(struct rt_ctx *c)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_MAPERR);
	si.si_addr = (void *)(uintptr_t)0x5e6f0000;
	if (c->private_queue)
		return sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), SIGSEGV, &si);
	return sys_rt_sigqueueinfo(getpid(), SIGSEGV, &si);
}

static void ctx_init(struct rt_ctx *c, int private_queue)
{
	memset(c, 0, sizeof(*c));
	c->private_queue = private_queue;
	c->pipefd[0] = -1;
	c->pipefd[1] = -1;
	c->mq = (mqd_t)-1;
}

/* The timer stops before the queue is dumped. */
static void ctx_stop_sources(struct rt_ctx *c)
{
	if (c->have_timer)
		timer_delete(c->timer);
	c->have_timer = 0;
}

static void ctx_cleanup(struct rt_ctx *c)
{
	ctx_stop_sources(c);
	if (c->child > 0) {
		kill(c->child, SIGKILL);
		waitpid(c->child, NULL, 0);
	}
	if (c->pipefd[0] >= 0)
		close(c->pipefd[0]);
	if (c->pipefd[1] >= 0)
		close(c->pipefd[1]);
	if (c->mq != (mqd_t)-1)
		mq_close(c->mq);
}

struct expect {
	int sig;
	int code;
};

/* Checks that @exp (terminated by sig 0) appear, in order, in the dump. */
static int dump_has(const unsigned char *buf, ssize_t n,
		    const struct expect *exp)
{
	ssize_t i = 0;

	for (; exp->sig; exp++) {
		for (; i < n; i++) {
			const siginfo_t *si = (const siginfo_t *)(buf + i * SI_MAX_SIZE);

			if (si->si_signo == exp->sig && si->si_code == exp->code)
				break;
		}
		if (i == n) {
			printf("# no sig %d code %d in the dump\n", exp->sig, exp->code);
			return -1;
		}
		if (si_sys_private((const siginfo_t *)(buf + i * SI_MAX_SIZE))) {
			printf("# sig %d: si_sys_private leaked\n", exp->sig);
			return -1;
		}
		i++;
	}
	return 0;
}

FIXTURE(rt)
{
	struct rt_ctx c;
	unsigned char dump1[MAXREC * SI_MAX_SIZE];
	unsigned char flushed[MAXREC * SI_MAX_SIZE];
	unsigned char dump2[MAXREC * SI_MAX_SIZE];
	unsigned char other[MAXREC * SI_MAX_SIZE];
	unsigned char final[MAXREC * SI_MAX_SIZE];
	ssize_t n;	/* records in dump1 */
};

FIXTURE_VARIANT(rt)
{
	int private_queue;
	int by_write;
};

FIXTURE_VARIANT_ADD(rt, shared)
{
	.private_queue = 0,
};

FIXTURE_VARIANT_ADD(rt, private)
{
	.private_queue = 1,
};

FIXTURE_VARIANT_ADD(rt, shared_write)
{
	.private_queue = 0,
	.by_write = 1,
};

FIXTURE_VARIANT_ADD(rt, private_write)
{
	.private_queue = 1,
	.by_write = 1,
};

FIXTURE_SETUP(rt)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (variant->by_write && !sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	requeue_by_write = variant->by_write;
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ctx_init(&self->c, variant->private_queue);
	ASSERT_EQ(0, dump_queue(0, self->dump1));
	ASSERT_EQ(0, dump_queue(1, self->dump1));
}

FIXTURE_TEARDOWN(rt)
{
	ctx_cleanup(&self->c);
}

/*
 * Generates with every @gens (NULL-terminated), moves the result into the
 * queue under test, then: dump, flush, requeue, dump again, compare, and
 * finally dequeue and compare with the dump. A sentinel in the other queue
 * must come through untouched.
 */
static void roundtrip(struct __test_metadata *_metadata,
		      struct _test_data_rt *self, const gen_fn *gens,
		      const struct expect *exp)
{
	int target = self->c.private_queue;
	ssize_t n, m;

	for (; *gens; gens++)
		ASSERT_EQ(0, (*gens)(&self->c)) TH_LOG("generate: %s", strerror(errno));
	ASSERT_TRUE(wait_pending(exp[0].sig, 5000));
	ASSERT_EQ(0, settle_into_target(&self->c));
	ASSERT_EQ(0, dump_queue(!target, self->other));
	/* Sentinel: the other queue must not be read nor refilled. */
	ASSERT_EQ(0, target ? q_shared(SIG_SENTINEL, 0x5e) : q_private(SIG_SENTINEL, 0x5e));

	/*
	 * A peek of a live periodic timer's entry counts its expiries until
	 * the peek; a dequeue after the timer is gone counts none. Stop it
	 * first so that both see the same record.
	 */
	ctx_stop_sources(&self->c);
	n = dump_queue(target, self->dump1);
	ASSERT_LT(0, n);
	self->n = n;
	ASSERT_EQ(0, dump_has(self->dump1, n, exp));

	m = flush_queue(target, self->flushed);
	ASSERT_EQ(n, m);
	EXPECT_EQ(0, match_dequeue_to_peek(self->dump1, n, self->flushed, m));
	ASSERT_EQ(0, dump_queue(target, self->dump2));

	ASSERT_EQ(0, requeue(target, self->dump1, n));
	m = dump_queue(target, self->dump2);
	ASSERT_EQ(n, m);
	EXPECT_EQ(0, memcmp(self->dump1, self->dump2, n * SI_MAX_SIZE)) {
		ssize_t i;

		for (i = 0; i < n; i++)
			siginfo_cmp("dump before vs after requeue",
				    self->dump1 + i * SI_MAX_SIZE,
				    self->dump2 + i * SI_MAX_SIZE);
	}

	/* Delivery gives back exactly the dumped bytes. */
	m = flush_queue(target, self->final);
	ASSERT_EQ(n, m);
	EXPECT_EQ(0, match_dequeue_to_peek(self->dump1, n, self->final, m));

	ASSERT_EQ(1, dump_queue(!target, self->other));
	EXPECT_EQ(SIG_SENTINEL, ((siginfo_t *)self->other)->si_signo);
	EXPECT_EQ(0x5e, ((siginfo_t *)self->other)->si_value.sival_int);
}

TEST_F(rt, si_user)
{
	const gen_fn gens[] = { gen_si_user, NULL };
	const struct expect exp[] = { { SIGUSR1, SI_USER }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, si_queue_three)
{
	const gen_fn gens[] = { gen_si_queue, NULL };
	const struct expect exp[] = {
		{ SIG_QUEUE_RT, SI_QUEUE }, { SIG_QUEUE_RT, SI_QUEUE },
		{ SIG_QUEUE_RT, SI_QUEUE }, { 0, 0 },
	};
	int i;

	roundtrip(_metadata, self, gens, exp);
	ASSERT_EQ(3, self->n);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(i + 1, ((siginfo_t *)self->dump1)[i].si_value.sival_int);
}

TEST_F(rt, si_tkill)
{
	const gen_fn gens[] = { gen_si_tkill, NULL };
	const struct expect exp[] = { { SIGUSR2, SI_TKILL }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, si_timer)
{
	const gen_fn gens[] = { gen_si_timer, NULL };
	const struct expect exp[] = { { SIG_TIMER, SI_TIMER }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, cld_exited)
{
	const gen_fn gens[] = { gen_cld_exited, NULL };
	const struct expect exp[] = { { SIGCHLD, CLD_EXITED }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, cld_killed)
{
	const gen_fn gens[] = { gen_cld_killed, NULL };
	const struct expect exp[] = { { SIGCHLD, CLD_KILLED }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, cld_stopped)
{
	const gen_fn gens[] = { gen_cld_stopped, NULL };
	const struct expect exp[] = { { SIGCHLD, CLD_STOPPED }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, si_mesgq)
{
	const gen_fn gens[] = { gen_si_mesgq, NULL };
	const struct expect exp[] = { { SIG_MESGQ, SI_MESGQ }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, poll_in)
{
	const gen_fn gens[] = { gen_poll_in, NULL };
	const struct expect exp[] = { { SIG_POLL, POLL_IN }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

TEST_F(rt, fault_segv_maperr)
{
	const gen_fn gens[] = { gen_fault, NULL };
	const struct expect exp[] = { { SIGSEGV, SEGV_MAPERR }, { 0, 0 } };

	roundtrip(_metadata, self, gens, exp);
}

/* Every layout pending at once (one SIGCHLD: a legacy signal queues once). */
TEST_F(rt, all_layouts_together)
{
	const gen_fn gens[] = {
		gen_si_user, gen_si_queue, gen_si_tkill, gen_si_timer,
		gen_si_mesgq, gen_poll_in, gen_fault, gen_cld_exited, NULL,
	};
	/* SIGCHLD is the one that arrives asynchronously: wait for it. */
	const struct expect exp[] = { { SIGCHLD, CLD_EXITED }, { 0, 0 } };
	const struct expect all[] = {
		{ SIGUSR1, SI_USER }, { SIGUSR2, SI_TKILL },
		{ SIGSEGV, SEGV_MAPERR }, { SIGCHLD, CLD_EXITED },
		{ SIG_MESGQ, SI_MESGQ }, { SIG_POLL, POLL_IN },
		{ SIG_TIMER, SI_TIMER }, { SIG_QUEUE_RT, SI_QUEUE },
	};
	struct expect each[] = { { 0, 0 }, { 0, 0 } };
	unsigned int i;

	roundtrip(_metadata, self, gens, exp);
	EXPECT_EQ(10, self->n);
	for (i = 0; i < ARRAY_SIZE(all); i++) {
		each[0] = all[i];
		EXPECT_EQ(0, dump_has(self->dump1, self->n, each));
	}
}

/*
 * A non-leader thread restores its own per-thread queue: every layout,
 * including the process-wide ones moved into it, with positive si_codes,
 * queued by rt_tgsigqueueinfo() to its own tid. Runs in the thread with
 * plain return codes (the harness asserts only on the main thread).
 */
struct thread_rt {
	struct rt_ctx c;
	unsigned char dump1[MAXREC * SI_MAX_SIZE];
	unsigned char flushed[MAXREC * SI_MAX_SIZE];
	unsigned char dump2[MAXREC * SI_MAX_SIZE];
	ssize_t n;
	int failed_step;
	int err;
};

static void *thread_roundtrip_main(void *arg)
{
	const gen_fn gens[] = {
		gen_si_user, gen_si_queue, gen_si_tkill, gen_si_timer,
		gen_si_mesgq, gen_poll_in, gen_fault, gen_cld_exited, NULL,
	};
	struct thread_rt *t = arg;
	struct rt_ctx *c = &t->c;
	const gen_fn *g;
	ssize_t m;

	t->failed_step = 1;
	for (g = gens; *g; g++)
		if ((*g)(c))
			goto fail;
	t->failed_step = 2;
	if (!wait_pending(SIGCHLD, 5000) || settle_into_target(&t->c))
		goto fail;
	t->failed_step = 3;
	ctx_stop_sources(&t->c);	/* as in roundtrip(): see there */
	t->n = dump_queue(1, t->dump1);
	if (t->n <= 0 || dump_queue(0, t->dump2) != 0)
		goto fail;
	t->failed_step = 4;
	m = flush_queue(1, t->flushed);
	if (m != t->n || match_dequeue_to_peek(t->dump1, t->n, t->flushed, m))
		goto fail;
	t->failed_step = 5;
	if (requeue(1, t->dump1, t->n))
		goto fail;
	t->failed_step = 6;
	if (dump_queue(1, t->dump2) != t->n ||
	    memcmp(t->dump1, t->dump2, t->n * SI_MAX_SIZE))
		goto fail;
	t->failed_step = 7;
	m = flush_queue(1, t->flushed);
	if (m != t->n || match_dequeue_to_peek(t->dump1, t->n, t->flushed, m))
		goto fail;
	t->failed_step = 0;
	return NULL;
fail:
	t->err = errno;
	return NULL;
}

static void nonleader_roundtrip(struct __test_metadata *_metadata)
{
	static struct thread_rt t;
	unsigned char empty[MAXREC * SI_MAX_SIZE];
	pthread_t thread;

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ctx_init(&t.c, 1);
	ASSERT_EQ(0, pthread_create(&thread, NULL, thread_roundtrip_main, &t));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ctx_cleanup(&t.c);
	EXPECT_EQ(0, t.failed_step) TH_LOG("errno %d (%s)", t.err, strerror(t.err));
	/* SI_USER, 3 x SI_QUEUE, SI_TKILL, SI_TIMER, SI_MESGQ, POLL_IN, fault, SIGCHLD */
	EXPECT_EQ(10, t.n);
	/* Nothing leaked into the leader's queue or was left in the shared one. */
	EXPECT_EQ(0, dump_queue(1, empty));
	EXPECT_EQ(0, dump_queue(0, empty));
}

TEST(nonleader_thread_restores_its_own_queue)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	nonleader_roundtrip(_metadata);
}

/* The same with one write() to an SFD_PRIVATE fd from the thread. */
TEST(nonleader_thread_restores_its_own_queue_by_write)
{
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (!sfd_probe_write())
		SKIP(return, "signalfd has no write() on this kernel");
	requeue_by_write = 1;
	nonleader_roundtrip(_metadata);
}

TEST_HARNESS_MAIN
