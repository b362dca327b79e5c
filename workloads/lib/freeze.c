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
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include "core.h"
#include "freeze.h"
#include "peek.h"
#include "util.h"

#define THAW_ROUND_MS	50
#define FREEZE_RESEND_MS	1000

static struct {
	_Atomic uint32_t nparked;	/* futex word */
	_Atomic uint32_t freezing;	/* futex word: a freeze signal now means park */
	_Atomic uint32_t in_fork;	/* futex word: threads inside fork()'s lock window */
} fz;

/* What a parked thread does for a command, inside the freeze handler. */
static int run_parked(struct rt_thread *t, uint32_t cmd)
{
	switch (cmd) {
	case CMD_PEEK:
		return sigmig_peek_queue(PEEK_OWN_QUEUE, &t->peek, t->err, sizeof(t->err));
	case CMD_CALL:
		return t->call ? t->call(t) : -EINVAL;
	case CMD_THAW:
		return 0;
	default:
		return -EINVAL;
	}
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
 * clones and drops them after. Two rules keep a freeze and a fork() from
 * deadlocking over them:
 *
 * - No thread parks inside that window: a parked thread would keep the locks
 *   while the control thread allocates to dump. The freeze signal is blocked
 *   from our prepare handler to our parent handler.
 * - No freeze signal is sent while a thread is inside it: the thread may be
 *   waiting there for an arena lock that a thread parked inside malloc()
 *   holds, with the freeze signal blocked, and the freeze would wait for it
 *   forever. A freeze first raises "freezing", which keeps new forks out at
 *   the prepare handler (a safe point: no libc lock is held yet, and the
 *   freeze signal parks the thread there), then waits for the window to drain.
 *
 * Application atfork handlers registered later run outside the window (their
 * prepare handlers before ours, their parent handlers after); libc's locks
 * and those of handlers registered before the runtime started are covered.
 */
static __thread sigset_t fork_saved_mask;

static void freeze_signal_mask(int how, sigset_t *old)
{
	sigset_t freeze;

	sigemptyset(&freeze);
	sigaddset(&freeze, SIGMIG_FREEZE_SIGNAL);
	pthread_sigmask(how, &freeze, old);
}

static void leave_fork_window(void)
{
	if (atomic_fetch_sub(&fz.in_fork, 1) == 1)
		sigmig_futex_wake(&fz.in_fork);
}

/*
 * Entering the window and raising "freezing" are both sequentially
 * consistent, and each side checks the other after its own store: either
 * the freeze sees this thread inside, or this thread sees the freeze.
 */
static void fork_prepare(void)
{
	uint32_t freezing;

	for (;;) {
		atomic_fetch_add(&fz.in_fork, 1);
		freezing = atomic_load(&fz.freezing);
		if (!freezing)
			break;
		leave_fork_window();
		sigmig_futex_wait(&fz.freezing, freezing, -1);
	}
	freeze_signal_mask(SIG_BLOCK, &fork_saved_mask);
}

/* The locks are free again: leave first, so that a freeze can go on. */
static void fork_parent(void)
{
	leave_fork_window();
	pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}

/* The child is a process of its own with one thread, outside any freeze. */
static void fork_child(void)
{
	atomic_store(&fz.in_fork, 0);
	atomic_store(&fz.freezing, 0);
	atomic_store(&fz.nparked, 0);
	pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}

static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
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

/* Wait until *@word == @want, until @deadline. */
static int wait_word(_Atomic uint32_t *word, uint32_t want, uint64_t deadline)
{
	uint32_t v;
	int left;

	while ((v = atomic_load(word)) != want) {
		left = sigmig_ms_left(deadline);
		if (!left)
			return -ETIMEDOUT;
		sigmig_futex_wait(word, v, left);
	}
	return 0;
}

static int wait_parked(uint32_t want, int timeout_ms)
{
	return wait_word(&fz.nparked, want, sigmig_deadline(timeout_ms));
}

/* A /proc file of a thread of ours into @buf (no malloc: threads are parked). */
static ssize_t read_task_file(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/*
 * " State:S SigPnd:... SigBlk:... wchan:..." of a thread that did not park:
 * a blocked, pending freeze signal or where it sleeps tells why.
 */
static size_t describe_task(pid_t tid, char *out, size_t len)
{
	static const char *const keys[] = { "State:", "SigPnd:", "SigBlk:" };
	char buf[2048], *p;
	size_t off = 0;
	unsigned int k;

	if (read_task_file(tid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]) && off < len; k++) {
		p = strstr(buf, keys[k]);
		if (!p)
			continue;
		p += strlen(keys[k]);
		p += strspn(p, " \t");
		off += (size_t)snprintf(out + off, len - off, " %s%.*s", keys[k],
					(int)strcspn(p, " \n("), p);
	}
	if (off < len && read_task_file(tid, "wchan", buf, sizeof(buf)) > 0)
		off += (size_t)snprintf(out + off, len - off, " wchan:%s", buf);
	return off < len ? off : len;
}

static void describe_unparked(char *err, size_t errlen)
{
	size_t off;
	unsigned int i;

	off = (size_t)snprintf(err, errlen, "threads did not park within %d ms:",
			       FREEZE_TIMEOUT_MS);
	for (i = 0; i < sigmig_nthreads() && off < errlen; i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (!atomic_load(&t->registered) || atomic_load(&t->parked))
			continue;
		off += (size_t)snprintf(err + off, errlen - off, " %u(tid %d", i, t->tid);
		if (off < errlen)
			off += describe_task(t->tid, err + off, errlen - off);
		if (off < errlen)
			off += (size_t)snprintf(err + off, errlen - off, ")");
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
	sigmig_futex_wake(&fz.freezing);
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

/*
 * At RLIMIT_SIGPENDING a real-time tgkill() fails with EAGAIN: a process
 * that has as many signals pending as it may could not be frozen, which is
 * exactly when its queues are worth moving. The soft limit is lifted by
 * what the freeze signals need, as far as the hard limit allows, until
 * every thread has parked (the handler takes the signal, so the count is
 * back where it was), then put back.
 */
static struct {
	int set;
	struct rlimit saved;
} lift;

static int lift_sigpending(unsigned int need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_SIGPENDING, &rl))
		return -errno;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= rl.rlim_max)
		return -EAGAIN;
	if (!lift.set)
		lift.saved = rl;
	rl.rlim_cur = rl.rlim_max - rl.rlim_cur > need ? rl.rlim_cur + need : rl.rlim_max;
	if (setrlimit(RLIMIT_SIGPENDING, &rl))
		return -errno;
	lift.set = 1;
	return 0;
}

static void drop_lift(void)
{
	if (lift.set)
		setrlimit(RLIMIT_SIGPENDING, &lift.saved);
	lift.set = 0;
}

static int freeze_signal(pid_t pid, pid_t tid, unsigned int threads_left)
{
	if (syscall(SYS_tgkill, pid, tid, SIGMIG_FREEZE_SIGNAL) == 0)
		return 0;
	if (errno != EAGAIN || lift_sigpending(threads_left))
		return -errno;
	return syscall(SYS_tgkill, pid, tid, SIGMIG_FREEZE_SIGNAL) ? -errno : 0;
}

/* Whether the kernel still holds a freeze signal for thread @tid (its queue or the process's). */
static int freeze_signal_pending(pid_t tid)
{
	static const char *const keys[] = { "\nSigPnd:", "\nShdPnd:" };
	char buf[2048], *p;
	unsigned int k;

	if (read_task_file(tid, "status", buf, sizeof(buf)) <= 0)
		return 0;
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		p = strstr(buf, keys[k]);
		if (p && strtoull(p + strlen(keys[k]), NULL, 16) &
			 (1ull << (SIGMIG_FREEZE_SIGNAL - 1)))
			return 1;
	}
	return 0;
}

/*
 * tgkill() every registered thread (@unparked_only: those not parked yet);
 * one that has exited is forgotten.
 */
static int signal_threads(int unparked_only, char *err, size_t errlen)
{
	pid_t pid = getpid();
	unsigned int i;
	int ret;

	for (i = 0; i < sigmig_nthreads(); i++) {
		struct rt_thread *t = sigmig_thread(i);

		if (!atomic_load(&t->registered))
			continue;
		if (unparked_only && (atomic_load(&t->parked) || freeze_signal_pending(t->tid)))
			continue;
		ret = freeze_signal(pid, t->tid, sigmig_nthreads() - i);
		if (!ret)
			continue;
		if (ret == -ESRCH) {
			/* the thread has exited: it has no queue left to dump */
			atomic_store(&t->registered, 0);
			continue;
		}
		snprintf(err, errlen, "tgkill(thread %u, tid %d): %s%s", i, t->tid,
			 strerror(-ret), ret == -EAGAIN ?
			 " (RLIMIT_SIGPENDING reached, and its hard limit leaves no room"
			 " for the freeze signal)" : "");
		return ret;
	}
	return 0;
}

/*
 * A thread that has not parked after a round is sent the freeze signal
 * again. ThreadSanitizer defers signals to its own safe points, and one
 * that arrives as fork()'s parent handler unblocks it is now and then
 * never handed on (about one run in eight of test_runtime's fork case).
 * A second freeze signal is harmless: peek leaves it out of the queues,
 * and the handler ignores it once the freeze is over.
 */
static int wait_all_parked(uint64_t deadline, char *err, size_t errlen)
{
	uint64_t round;
	int ret;

	for (;;) {
		round = sigmig_deadline(FREEZE_RESEND_MS);
		ret = wait_word(&fz.nparked, sigmig_count_registered(),
				round < deadline ? round : deadline);
		if (ret != -ETIMEDOUT || !sigmig_ms_left(deadline))
			return ret;
		ret = signal_threads(1, err, errlen);
		if (ret)
			return ret;
	}
}

int sigmig_freeze(uint64_t *ns, char *err, size_t errlen)
{
	uint64_t start = sigmig_now_ns(), deadline = sigmig_deadline(FREEZE_TIMEOUT_MS);
	int ret;

	atomic_store(&fz.freezing, 1);
	ret = wait_word(&fz.in_fork, 0, deadline);
	if (ret)
		snprintf(err, errlen, "%u thread(s) still inside fork() after %d ms",
			 atomic_load(&fz.in_fork), FREEZE_TIMEOUT_MS);
	if (!ret)
		ret = signal_threads(0, err, errlen);
	if (!ret) {
		ret = wait_all_parked(deadline, err, errlen);
		if (ret == -ETIMEDOUT)
			describe_unparked(err, errlen);
	}
	drop_lift();
	if (ret) {
		sigmig_thaw();
		return ret;
	}
	*ns = sigmig_now_ns() - start;
	return 0;
}
