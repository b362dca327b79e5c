// SPDX-License-Identifier: GPL-2.0
/*
 * SFD_RAW returns siginfo exactly as a SA_SIGINFO handler receives it.
 *
 * For every siginfo layout the kernel produces, the same signal is
 * generated twice the same way: once delivered to a SA_SIGINFO handler,
 * once read from a SFD_RAW signalfd into a pattern-filled buffer. The two
 * 128-byte records must be identical. Fields that legitimately differ
 * between two generations (a child's pid and CPU times, a timer's overrun)
 * are checked against independent expectations and then equalised.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mqueue.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

struct gen_ctx {
	int sig;
	pid_t child;
	timer_t timer;
	int pipefd[2];
	mqd_t mq;
	siginfo_t selfsend;	/* record injected with rt_sigqueueinfo */
};

typedef int (*gen_fn)(struct gen_ctx *ctx);

struct layout_case {
	gen_fn generate;	/* leaves one instance of ctx->sig pending */
	gen_fn finish;		/* undoes side effects after it was consumed */
};

static int finish_nothing(struct gen_ctx *ctx)
{
	(void)ctx;
	return 0;
}

/* Delivers one generated instance to a SA_SIGINFO handler. */
static int via_handler(const struct layout_case *lc, struct gen_ctx *ctx,
		       siginfo_t *out)
{
	int ret = -1;

	if (capture_install(ctx->sig))
		return -1;
	if (lc->generate(ctx))
		goto out;
	if (!wait_pending(ctx->sig, 5000))
		goto out;
	block_signal(ctx->sig, SIG_UNBLOCK);
	block_signal(ctx->sig, SIG_BLOCK);
	if (SIG_LOAD(ncaptured) < 1)
		goto out;
	memcpy(out, &captured[0], sizeof(*out));
	ret = 0;
out:
	lc->finish(ctx);
	flush_signal(ctx->sig);
	capture_reset(ctx->sig);
	return ret;
}

/* Reads one generated instance from a SFD_RAW signalfd. */
static int via_sfd_raw(const struct layout_case *lc, struct gen_ctx *ctx,
		       siginfo_t *out)
{
	int sigs[] = { ctx->sig, 0 };
	int fd, ret = -1;

	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	if (fd < 0) {
		printf("# %s\n", SFD_MISSING_MSG);
		return -1;
	}
	if (lc->generate(ctx))
		goto out;
	if (!wait_pending(ctx->sig, 5000))
		goto out;
	memset(out, 0xa5, sizeof(*out));
	if (read(fd, out, SI_MAX_SIZE) != SI_MAX_SIZE) {
		printf("# read: %s\n", strerror(errno));
		goto out;
	}
	ret = 0;
out:
	lc->finish(ctx);
	flush_signal(ctx->sig);
	close(fd);
	return ret;
}

static void run_case(struct __test_metadata *_metadata,
		     const struct layout_case *lc, struct gen_ctx *ctx,
		     siginfo_t *handler_si, siginfo_t *raw_si)
{
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_EQ(0, via_handler(lc, ctx, handler_si));
	ASSERT_EQ(0, via_sfd_raw(lc, ctx, raw_si));
	ASSERT_EQ(ctx->sig, raw_si->si_signo);
	ASSERT_EQ(handler_si->si_code, raw_si->si_code);
}

static void expect_identical(struct __test_metadata *_metadata,
			     const siginfo_t *handler_si,
			     const siginfo_t *raw_si)
{
	ASSERT_EQ(0, siginfo_cmp("handler vs SFD_RAW", handler_si, raw_si));
}

/* ---- SI_USER, SI_QUEUE, SI_TKILL ---- */

static int gen_kill(struct gen_ctx *ctx)
{
	return kill(getpid(), ctx->sig);
}

static int gen_sigqueue(struct gen_ctx *ctx)
{
	union sigval v = { .sival_ptr = (void *)(uintptr_t)0x5157a11e };

	return sigqueue(getpid(), ctx->sig, v);
}

static int gen_tgkill(struct gen_ctx *ctx)
{
	return sys_tgkill(getpid(), sys_gettid(), ctx->sig);
}

TEST(si_user_kill)
{
	struct layout_case lc = { gen_kill, finish_nothing };
	struct gen_ctx ctx = { .sig = SIGUSR1 };
	siginfo_t h, r;

	run_case(_metadata, &lc, &ctx, &h, &r);
	ASSERT_EQ(SI_USER, r.si_code);
	ASSERT_EQ(getpid(), r.si_pid);
	ASSERT_EQ(getuid(), r.si_uid);
	expect_identical(_metadata, &h, &r);
}

TEST(si_queue_sigqueue)
{
	struct layout_case lc = { gen_sigqueue, finish_nothing };
	struct gen_ctx ctx = { .sig = SIGRTMIN };
	siginfo_t h, r;

	run_case(_metadata, &lc, &ctx, &h, &r);
	ASSERT_EQ(SI_QUEUE, r.si_code);
	ASSERT_EQ((uintptr_t)0x5157a11e, (uintptr_t)r.si_value.sival_ptr);
	expect_identical(_metadata, &h, &r);
}

TEST(si_tkill_tgkill)
{
	struct layout_case lc = { gen_tgkill, finish_nothing };
	struct gen_ctx ctx = { .sig = SIGUSR2 };
	siginfo_t h, r;

	run_case(_metadata, &lc, &ctx, &h, &r);
	ASSERT_EQ(SI_TKILL, r.si_code);
	ASSERT_EQ(getpid(), r.si_pid);
	expect_identical(_metadata, &h, &r);
}

/* ---- SI_TIMER: a periodic timer left pending long enough to overrun ---- */

static int gen_timer(struct gen_ctx *ctx)
{
	struct itimerspec its = {
		.it_interval = { 0, 1000000 },
		.it_value = { 0, 1000000 },
	};
	if (timer_settime(ctx->timer, 0, &its, NULL))
		return -1;
	if (!wait_pending(ctx->sig, 5000))
		return -1;
	/* Expiries while the signal is queued become the overrun. */
	sleep_ms(50);
	return 0;
}

static int finish_timer(struct gen_ctx *ctx)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };

	return timer_settime(ctx->timer, 0, &off, NULL);
}

TEST(si_timer_overrun)
{
	struct layout_case lc = { gen_timer, finish_timer };
	struct gen_ctx ctx = { .sig = SIGRTMIN + 2 };
	struct sigevent sev;
	siginfo_t h, r;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = ctx.sig;
	sev.sigev_value.sival_int = 0x7e57;
	ASSERT_EQ(0, timer_create(CLOCK_MONOTONIC, &sev, &ctx.timer));

	run_case(_metadata, &lc, &ctx, &h, &r);
	timer_delete(ctx.timer);
	ASSERT_EQ(SI_TIMER, r.si_code);
	ASSERT_EQ(0x7e57, r.si_value.sival_int);
	/* Delivery computes the overrun at dequeue time: both must see it. */
	ASSERT_GT(h.si_overrun, 0);
	ASSERT_GT(r.si_overrun, 0);
	ASSERT_EQ(0, si_sys_private(&h));
	ASSERT_EQ(0, si_sys_private(&r));
	h.si_overrun = r.si_overrun;
	expect_identical(_metadata, &h, &r);
}

/* ---- SIGCHLD: CLD_EXITED, CLD_KILLED, CLD_STOPPED ---- */

static int gen_child_exit(struct gen_ctx *ctx)
{
	ctx->child = fork();
	if (ctx->child < 0)
		return -1;
	if (ctx->child == 0)
		_exit(42);
	return 0;
}

static int spawn_pausing_child(struct gen_ctx *ctx)
{
	ctx->child = fork();
	if (ctx->child < 0)
		return -1;
	if (ctx->child == 0) {
		for (;;)
			pause();
	}
	return 0;
}

static int gen_child_killed(struct gen_ctx *ctx)
{
	if (spawn_pausing_child(ctx))
		return -1;
	return kill(ctx->child, SIGKILL);
}

static int gen_child_stopped(struct gen_ctx *ctx)
{
	if (spawn_pausing_child(ctx))
		return -1;
	return kill(ctx->child, SIGSTOP);
}

static int finish_child(struct gen_ctx *ctx)
{
	if (ctx->child <= 0)
		return 0;
	kill(ctx->child, SIGKILL);
	waitpid(ctx->child, NULL, 0);
	return 0;
}

/*
 * Two different children report their own pid and CPU times; check them and
 * equalise so that every other byte must match.
 */
static void run_sigchld(struct __test_metadata *_metadata, gen_fn gen,
			int code, int status)
{
	struct layout_case lc = { gen, finish_child };
	struct gen_ctx ctx = { .sig = SIGCHLD };
	pid_t first;
	siginfo_t h, r;

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_EQ(0, via_handler(&lc, &ctx, &h));
	first = ctx.child;
	ASSERT_EQ(0, via_sfd_raw(&lc, &ctx, &r));
	ASSERT_EQ(SIGCHLD, r.si_signo);
	ASSERT_EQ(code, h.si_code);
	ASSERT_EQ(code, r.si_code);
	ASSERT_EQ(status, h.si_status);
	ASSERT_EQ(status, r.si_status);
	ASSERT_EQ(first, h.si_pid);
	ASSERT_EQ(ctx.child, r.si_pid);
	ASSERT_LE(0, (long)r.si_utime);
	ASSERT_LE(0, (long)r.si_stime);
	ASSERT_GT(1000, (long)(r.si_utime + r.si_stime));
	h.si_pid = r.si_pid;
	h.si_utime = r.si_utime;
	h.si_stime = r.si_stime;
	expect_identical(_metadata, &h, &r);
}

TEST(sigchld_cld_exited)
{
	run_sigchld(_metadata, gen_child_exit, CLD_EXITED, 42);
}

TEST(sigchld_cld_killed)
{
	run_sigchld(_metadata, gen_child_killed, CLD_KILLED, SIGKILL);
}

TEST(sigchld_cld_stopped)
{
	run_sigchld(_metadata, gen_child_stopped, CLD_STOPPED, SIGSTOP);
}

/* ---- SI_MESGQ: mq_notify on an empty queue, then a message arrives ---- */

static int gen_mq(struct gen_ctx *ctx)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = ctx->sig;
	sev.sigev_value.sival_int = 0x3e59;
	if (mq_notify(ctx->mq, &sev))
		return -1;
	return mq_send(ctx->mq, "m", 1, 0);
}

static int finish_mq(struct gen_ctx *ctx)
{
	char buf[64];

	while (mq_receive(ctx->mq, buf, sizeof(buf), NULL) >= 0)
		;
	return 0;
}

TEST(si_mesgq_mq_notify)
{
	struct layout_case lc = { gen_mq, finish_mq };
	struct gen_ctx ctx = { .sig = SIGRTMIN + 3 };
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 64 };
	char name[64];
	siginfo_t h, r;

	snprintf(name, sizeof(name), "/sfd_raw_layouts.%d", getpid());
	ctx.mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_NONBLOCK, 0600,
			 &attr);
	ASSERT_NE((mqd_t)-1, ctx.mq) TH_LOG("mq_open: %s", strerror(errno));
	mq_unlink(name);

	run_case(_metadata, &lc, &ctx, &h, &r);
	mq_close(ctx.mq);
	ASSERT_EQ(SI_MESGQ, r.si_code);
	ASSERT_EQ(0x3e59, r.si_value.sival_int);
	ASSERT_EQ(getpid(), r.si_pid);
	expect_identical(_metadata, &h, &r);
}

/* ---- SIGIO with F_SETSIG: POLL_IN carries si_band and si_fd ---- */

static int gen_pipe_write(struct gen_ctx *ctx)
{
	return write(ctx->pipefd[1], "x", 1) == 1 ? 0 : -1;
}

static int finish_pipe(struct gen_ctx *ctx)
{
	char buf[16];

	while (read(ctx->pipefd[0], buf, sizeof(buf)) > 0)
		;
	return 0;
}

TEST(sigio_poll_in_setsig)
{
	struct layout_case lc = { gen_pipe_write, finish_pipe };
	struct gen_ctx ctx = { .sig = SIGRTMIN + 4 };
	siginfo_t h, r;

	ASSERT_EQ(0, pipe(ctx.pipefd));
	ASSERT_EQ(0, fcntl(ctx.pipefd[0], F_SETOWN, getpid()));
	ASSERT_EQ(0, fcntl(ctx.pipefd[0], F_SETSIG, ctx.sig));
	ASSERT_EQ(0, fcntl(ctx.pipefd[0], F_SETFL, O_ASYNC | O_NONBLOCK));

	run_case(_metadata, &lc, &ctx, &h, &r);
	ASSERT_EQ(POLL_IN, r.si_code);
	ASSERT_EQ(ctx.pipefd[0], r.si_fd);
	ASSERT_EQ(POLLIN | POLLRDNORM, r.si_band);
	close(ctx.pipefd[0]);
	close(ctx.pipefd[1]);
	expect_identical(_metadata, &h, &r);
}

/* ---- Fault-class layouts, injected by sending oneself the siginfo ---- */

static int gen_selfsend(struct gen_ctx *ctx)
{
	return sys_rt_sigqueueinfo(getpid(), ctx->sig, &ctx->selfsend);
}

static void run_selfsend(struct __test_metadata *_metadata,
			 const siginfo_t *inject)
{
	struct layout_case lc = { gen_selfsend, finish_nothing };
	struct gen_ctx ctx = { .sig = inject->si_signo };
	siginfo_t h, r;

	ctx.selfsend = *inject;
	run_case(_metadata, &lc, &ctx, &h, &r);
	/* What was queued is what both consumers must see. */
	ASSERT_EQ(0, siginfo_cmp("injected vs handler", inject, &h));
	expect_identical(_metadata, &h, &r);
}

TEST(fault_segv_maperr_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_MAPERR);
	si.si_addr = (void *)(uintptr_t)0x12345678;
	run_selfsend(_metadata, &si);
}

TEST(fault_bus_mceerr_addr_lsb_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGBUS, BUS_MCEERR_AR);
	si.si_addr = (void *)(uintptr_t)0x7f001000;
	si.si_addr_lsb = 12;
	run_selfsend(_metadata, &si);
}

TEST(fault_segv_bnderr_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_BNDERR);
	si.si_addr = (void *)(uintptr_t)0x1000;
	si.si_lower = (void *)(uintptr_t)0x2000;
	si.si_upper = (void *)(uintptr_t)0x3000;
	run_selfsend(_metadata, &si);
}

TEST(fault_segv_pkuerr_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_PKUERR);
	si.si_addr = (void *)(uintptr_t)0x4000;
	si.si_pkey = 5;
	run_selfsend(_metadata, &si);
}

TEST(fault_fpe_intdiv_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGFPE, FPE_INTDIV);
	si.si_addr = (void *)(uintptr_t)0x401000;
	run_selfsend(_metadata, &si);
}

TEST(sigsys_seccomp_selfsend)
{
	siginfo_t si;

	si_init(&si, SIGSYS, 1 /* SYS_SECCOMP */);
	si.si_call_addr = (void *)(uintptr_t)0x401234;
	si.si_syscall = 39;
	si.si_arch = 0xc000003e;
	run_selfsend(_metadata, &si);
}

TEST_HARNESS_MAIN
