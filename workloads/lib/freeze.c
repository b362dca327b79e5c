// SPDX-License-Identifier: GPL-2.0
/*
 * Freezing: every registered thread is sent SIGMIG_FREEZE_SIGNAL with
 * tgkill() and parks inside its handler, which runs with every signal
 * blocked, so arrivals stay pending. The mask the thread really had is the
 * handler's ucontext uc_sigmask. A parked thread serves commands (peek its
 * own queue, thaw) through the core's mailbox: everything it runs here is
 * async-signal-safe.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include "core.h"
#include "freeze.h"
#include "peek.h"
#include "util.h"

#define THAW_ROUND_MS	50

static struct {
	_Atomic uint32_t nparked;	/* futex word */
	_Atomic int freezing;		/* a freeze signal now means: park */
} fz;

/* What a parked thread does for a command, inside the freeze handler. */
static int run_parked(struct rt_thread *t, uint32_t cmd)
{
	if (cmd == CMD_PEEK)
		return sigmig_peek_queue(PEEK_OWN_QUEUE, &t->peek, t->err, sizeof(t->err));
	return cmd == CMD_THAW ? 0 : -EINVAL;
}

static void count_parked(struct rt_thread *t, int parked)
{
	atomic_store(&t->parked, parked);
	if (parked)
		atomic_fetch_add(&fz.nparked, 1);
	else
		atomic_fetch_sub(&fz.nparked, 1);
	sigmig_futex_wake(&fz.nparked);
}

static void freeze_handler(int sig, siginfo_t *si, void *ucv)
{
	struct rt_thread *t = sigmig_self();
	ucontext_t *uc = ucv;
	int saved_errno = errno;

	(void)sig;
	(void)si;
	/* a late freeze signal after a failed freeze must not park anyone */
	if (!t || !atomic_load(&t->registered) || !atomic_load(&fz.freezing))
		return;
	t->blocked = sigmig_sigset_to_u64(&uc->uc_sigmask);
	count_parked(t, 1);
	sigmig_serve(t, run_parked, CMD_BIT(CMD_THAW));
	count_parked(t, 0);
	errno = saved_errno;
}

/*
 * fork() takes every malloc arena lock and the stdio list lock before it
 * clones and drops them after: a thread parked in between would keep them
 * while the control thread allocates to dump. The freeze signal therefore
 * waits, blocked, until fork() has let go of them. Application atfork
 * handlers registered later run before this prepare handler and are not
 * covered; libc's own locks are.
 */
static __thread sigset_t fork_saved_mask;

static void freeze_signal_mask(int how, sigset_t *old)
{
	sigset_t freeze;

	sigemptyset(&freeze);
	sigaddset(&freeze, SIGMIG_FREEZE_SIGNAL);
	pthread_sigmask(how, &freeze, old);
}

static void fork_prepare(void)
{
	freeze_signal_mask(SIG_BLOCK, &fork_saved_mask);
}

static void fork_done(void)
{
	pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}

static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

int sigmig_freeze_install(void)
{
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = freeze_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGMIG_FREEZE_SIGNAL, &sa, NULL))
		return -errno;
	return pthread_once(&atfork_once, register_fork_handlers) ? -EAGAIN : 0;
}

void sigmig_freeze_signal_unblock(void)
{
	freeze_signal_mask(SIG_UNBLOCK, NULL);
}

/* Wait until nparked == @want, at most @timeout_ms. */
static int wait_parked(uint32_t want, int timeout_ms)
{
	uint64_t deadline = sigmig_deadline(timeout_ms);
	uint32_t v;
	int left;

	while ((v = atomic_load(&fz.nparked)) != want) {
		left = sigmig_ms_left(deadline);
		if (!left)
			return -ETIMEDOUT;
		sigmig_futex_wait(&fz.nparked, v, left);
	}
	return 0;
}

static void describe_unparked(char *err, size_t errlen)
{
	size_t off;
	unsigned int i;

	off = (size_t)snprintf(err, errlen, "threads did not park within %d ms:",
			       FREEZE_TIMEOUT_MS);
	for (i = 0; i < sigmig_nthreads() && off < errlen; i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (atomic_load(&t->registered) && !atomic_load(&t->parked))
			off += (size_t)snprintf(err + off, errlen - off, " %u(tid %d)",
						i, t->tid);
	}
}

/*
 * Rounds, not one pass: a thread that saw "freezing" just before it was
 * cleared parks after the pass went by it, and must be let go as well.
 */
int sigmig_thaw(void)
{
	uint64_t deadline = sigmig_deadline(FREEZE_TIMEOUT_MS);
	unsigned int i;
	int left;

	atomic_store(&fz.freezing, 0);
	for (;;) {
		for (i = 0; i < sigmig_nthreads(); i++) {
			struct rt_thread *t = sigmig_thread(i);

			if (atomic_load(&t->registered) && atomic_load(&t->parked))
				sigmig_post(t, CMD_THAW, FREEZE_TIMEOUT_MS);
		}
		left = sigmig_ms_left(deadline);
		if (!wait_parked(0, left < THAW_ROUND_MS ? left : THAW_ROUND_MS))
			return 0;
		if (!sigmig_ms_left(deadline))
			return -ETIMEDOUT;
	}
}

/* tgkill() every registered thread; one that has exited is forgotten. */
static int signal_threads(char *err, size_t errlen)
{
	pid_t pid = getpid();
	unsigned int i;
	int ret;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (!atomic_load(&t->registered))
			continue;
		if (syscall(SYS_tgkill, pid, t->tid, SIGMIG_FREEZE_SIGNAL) == 0)
			continue;
		if (errno == ESRCH) {
			/* the thread has exited: it has no queue left to dump */
			atomic_store(&t->registered, 0);
			continue;
		}
		ret = -errno;
		snprintf(err, errlen, "tgkill(thread %u, tid %d): %s", i, t->tid,
			 strerror(-ret));
		return ret;
	}
	return 0;
}

int sigmig_freeze(uint64_t *ns, char *err, size_t errlen)
{
	uint64_t start = sigmig_now_ns();
	int ret;

	atomic_store(&fz.freezing, 1);
	ret = signal_threads(err, errlen);
	if (!ret) {
		ret = wait_parked(sigmig_count_registered(), FREEZE_TIMEOUT_MS);
		if (ret)
			describe_unparked(err, errlen);
	}
	if (ret) {
		sigmig_thaw();
		return ret;
	}
	*ns = sigmig_now_ns() - start;
	return 0;
}
