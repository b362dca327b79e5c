// SPDX-License-Identifier: GPL-2.0
/*
 * Freezing: every registered thread is sent SIGMIG_FREEZE_SIGNAL with
 * tgkill() and parks inside its handler, which runs with every signal
 * blocked, so arrivals stay pending. The mask the thread really had is the
 * handler's ucontext uc_sigmask. A parked thread serves commands (peek its
 * own queue, thaw) through a futex: everything here is async-signal-safe.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include <sigmig/sfd.h>
#include "internal.h"

#define PEEK_BATCH	8192	/* records per pread(): 1 MiB */
#define FREEZE_TIMEOUT_MS 10000

__thread struct rt_thread *sigmig_self;

static int rawbuf_reserve(struct rawbuf *b, size_t records)
{
	size_t bytes = records * SI_MAX_SIZE;
	void *p;

	if (records <= b->cap)
		return 0;
	if (b->data)
		p = mremap(b->data, b->cap * SI_MAX_SIZE, bytes, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	b->data = p;
	b->cap = records;
	return 0;
}

void sigmig_rawbuf_free(struct rawbuf *b)
{
	if (b->data)
		munmap(b->data, b->cap * SI_MAX_SIZE);
	memset(b, 0, sizeof(*b));
}

/*
 * Peek the calling thread's private queue (or the process-wide one) with
 * signalfd(SFD_RAW) + pread() at the queue's offset: never dequeues.
 */
int sigmig_peek_queue(int shared, struct rawbuf *out, char *err, size_t errlen)
{
	uint64_t mask = ~0ull & ~(1ull << (SIGMIG_FREEZE_SIGNAL - 1));
	long long base = shared ? SFD_SHARED_QUEUE_OFFSET : SFD_PER_THREAD_QUEUE_OFFSET;
	ssize_t n;
	int fd, ret = 0;

	out->count = 0;
	fd = (int)syscall(SYS_signalfd4, -1, &mask, (size_t)KERNEL_SIGSET_SIZE,
			  SFD_RAW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "signalfd(SFD_RAW): %s (kernel without the sigmig signalfd patches?)",
			 strerror(-ret));
		return ret;
	}
	for (;;) {
		if (out->count + PEEK_BATCH > SIGMIG_MAX_SIGNALS + (size_t)PEEK_BATCH) {
			ret = -E2BIG;
			snprintf(err, errlen, "%s queue holds more than %u signals",
				 shared ? "shared" : "private", SIGMIG_MAX_SIGNALS);
			break;
		}
		ret = rawbuf_reserve(out, out->count + PEEK_BATCH);
		if (ret) {
			snprintf(err, errlen, "out of memory peeking %zu signals", out->count);
			break;
		}
		n = pread(fd, out->data + out->count * SI_MAX_SIZE,
			  PEEK_BATCH * SI_MAX_SIZE, base + (long long)out->count);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "pread(signalfd, %s queue, offset %zu): %s",
				 shared ? "shared" : "private", out->count, strerror(errno));
			break;
		}
		if (n % SI_MAX_SIZE) {
			ret = -EIO;
			snprintf(err, errlen, "pread(signalfd) returned %zd bytes, not a multiple of %d",
				 n, SI_MAX_SIZE);
			break;
		}
		if (n == 0)
			break;
		out->count += (size_t)n / SI_MAX_SIZE;
	}
	if (!ret && out->count > SIGMIG_MAX_SIGNALS) {
		ret = -E2BIG;
		snprintf(err, errlen, "queue holds %zu signals, the image limit is %u",
			 out->count, SIGMIG_MAX_SIGNALS);
	}
	close(fd);
	return ret;
}

/* What a parked thread does for a command, inside the freeze handler. */
static int run_parked(struct rt_thread *t, uint32_t cmd)
{
	if (cmd == CMD_PEEK)
		return sigmig_peek_queue(0, &t->peek, t->err, sizeof(t->err));
	return cmd == CMD_THAW ? 0 : -EINVAL;
}

static void freeze_handler(int sig, siginfo_t *si, void *ucv)
{
	struct rt_thread *t = sigmig_self;
	ucontext_t *uc = ucv;
	int saved_errno = errno;

	(void)sig;
	(void)si;
	/* a late freeze signal after a failed freeze must not park anyone */
	if (!t || !t->registered || !atomic_load(&sigmig_rt.freezing))
		return;
	t->blocked = sigmig_sigset_to_u64(&uc->uc_sigmask);
	atomic_store(&t->parked, 1);
	atomic_fetch_add(&sigmig_rt.nparked, 1);
	sigmig_futex_wake(&sigmig_rt.nparked);
	sigmig_serve(t, run_parked, CMD_THAW);
	atomic_store(&t->parked, 0);
	atomic_fetch_sub(&sigmig_rt.nparked, 1);
	sigmig_futex_wake(&sigmig_rt.nparked);
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

static void fork_prepare(void)
{
	sigset_t freeze;

	sigemptyset(&freeze);
	sigaddset(&freeze, SIGMIG_FREEZE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &freeze, &fork_saved_mask);
}

static void fork_done(void)
{
	pthread_sigmask(SIG_SETMASK, &fork_saved_mask, NULL);
}

static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

int sigmig_install_freeze_handler(void)
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

static unsigned int count_registered(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < sigmig_rt.nthreads; i++)
		n += sigmig_rt.threads[i].registered;
	return n;
}

/* Wait until nparked == @want, at most @timeout_ms. */
static int wait_parked(uint32_t want, int timeout_ms)
{
	uint64_t deadline = sigmig_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t now;
	uint32_t v;

	while ((v = atomic_load(&sigmig_rt.nparked)) != want) {
		now = sigmig_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		sigmig_futex_wait(&sigmig_rt.nparked, v,
				  (int)((deadline - now) / 1000000ull) + 1);
	}
	return 0;
}

static void describe_unparked(char *err, size_t errlen)
{
	size_t off;
	unsigned int i;

	off = (size_t)snprintf(err, errlen, "threads did not park within %d ms:",
			       FREEZE_TIMEOUT_MS);
	for (i = 0; i < sigmig_rt.nthreads && off < errlen; i++) {
		struct rt_thread *t = &sigmig_rt.threads[i];

		if (t->registered && !atomic_load(&t->parked))
			off += (size_t)snprintf(err + off, errlen - off, " %u(tid %d)",
						i, t->tid);
	}
}

int sigmig_thaw(void)
{
	unsigned int i;

	atomic_store(&sigmig_rt.freezing, 0);
	for (i = 0; i < sigmig_rt.nthreads; i++) {
		struct rt_thread *t = &sigmig_rt.threads[i];

		if (t->registered && atomic_load(&t->parked))
			sigmig_post(t, CMD_THAW, FREEZE_TIMEOUT_MS);
	}
	return wait_parked(0, FREEZE_TIMEOUT_MS);
}

int sigmig_freeze(uint64_t *ns, char *err, size_t errlen)
{
	uint64_t start = sigmig_now_ns();
	pid_t pid = getpid();
	unsigned int i;
	int ret;

	atomic_store(&sigmig_rt.freezing, 1);
	for (i = 0; i < sigmig_rt.nthreads; i++) {
		struct rt_thread *t = &sigmig_rt.threads[i];

		if (!t->registered)
			continue;
		atomic_store(&t->cmd, CMD_NONE);
		if (syscall(SYS_tgkill, pid, t->tid, SIGMIG_FREEZE_SIGNAL) == 0)
			continue;
		if (errno == ESRCH) {
			/* the thread has exited: it has no queue left to dump */
			t->registered = 0;
			continue;
		}
		ret = -errno;
		snprintf(err, errlen, "tgkill(thread %u, tid %d): %s", i, t->tid,
			 strerror(errno));
		sigmig_thaw();
		return ret;
	}
	ret = wait_parked(count_registered(), FREEZE_TIMEOUT_MS);
	if (ret) {
		describe_unparked(err, errlen);
		sigmig_thaw();
		return ret;
	}
	*ns = sigmig_now_ns() - start;
	return 0;
}
