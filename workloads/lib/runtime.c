// SPDX-License-Identifier: GPL-2.0
/*
 * Runtime core: global state, handler registry, start/stop and thread
 * registration. Freezing, dumping, restoring and the control socket live in
 * their own files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include "internal.h"

struct runtime sigmig_rt = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.listen_fd = -1,
};

uint64_t sigmig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sigmig_sigset_to_u64(const sigset_t *set)
{
	uint64_t bits = 0;
	int sig;

	for (sig = 1; sig <= SIGMIG_NSIG; sig++)
		if (sigismember(set, sig) == 1)
			bits |= 1ull << (sig - 1);
	return bits;
}

void sigmig_u64_to_sigset(uint64_t bits, sigset_t *set)
{
	int sig;

	sigemptyset(set);
	for (sig = 1; sig <= SIGMIG_NSIG; sig++)
		if (bits & (1ull << (sig - 1)))
			sigaddset(set, sig);
}

/* Raw futex: async-signal-safe, unlike condition variables. */
void sigmig_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000,
	};

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val,
		timeout_ms < 0 ? NULL : &ts, NULL, 0);
}

void sigmig_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

int sigmig_read_file(const char *path, uint8_t **out, size_t *len)
{
	struct stat st;
	size_t got = 0, cap = 4096;
	uint8_t *buf, *grown;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	/* room for the whole file, its NUL and the read that sees EOF */
	if (fstat(fd, &st) == 0 && st.st_size > 0)
		cap = (size_t)st.st_size + 2;
	buf = malloc(cap);
	while (buf) {
		if (got + 1 >= cap) {
			grown = realloc(buf, cap *= 2);
			if (!grown) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		n = read(fd, buf + got, cap - got - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : 0;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (ret) {
		free(buf);
		return ret;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

void sigmig_serve(struct rt_thread *t, int (*run)(struct rt_thread *t, uint32_t cmd),
		  uint32_t last)
{
	uint32_t cmd;

	for (;;) {
		cmd = atomic_load(&t->cmd);
		if (cmd == CMD_NONE) {
			sigmig_futex_wait(&t->cmd, CMD_NONE, -1);
			continue;
		}
		atomic_store(&t->cmd, CMD_NONE);
		t->result = run(t, cmd);
		atomic_fetch_add(&t->acked, 1);
		sigmig_futex_wake(&t->acked);
		if (cmd == last)
			return;
	}
}

/*
 * Hand @cmd to thread @t and wait until it acknowledges it.
 * Returns the thread's result, or -ETIMEDOUT.
 */
int sigmig_post(struct rt_thread *t, uint32_t cmd, int timeout_ms)
{
	uint32_t before = atomic_load(&t->acked);
	uint64_t deadline = sigmig_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t now;

	t->result = 0;
	t->err[0] = '\0';
	atomic_store(&t->cmd, cmd);
	sigmig_futex_wake(&t->cmd);
	while (atomic_load(&t->acked) == before) {
		now = sigmig_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		sigmig_futex_wait(&t->acked, before,
				  (int)((deadline - now) / 1000000ull) + 1);
	}
	return t->result;
}

const char *sigmig_handler_name(void (*fn)(int, siginfo_t *, void *))
{
	int i;

	for (i = 0; i < sigmig_rt.nhandlers; i++)
		if (sigmig_rt.handlers[i].fn == fn)
			return sigmig_rt.handlers[i].name;
	return NULL;
}

void (*sigmig_handler_fn(const char *name))(int, siginfo_t *, void *)
{
	int i;

	for (i = 0; i < sigmig_rt.nhandlers; i++)
		if (!strcmp(sigmig_rt.handlers[i].name, name))
			return sigmig_rt.handlers[i].fn;
	return NULL;
}

int sigmig_register_handler(const char *name,
			    void (*fn)(int, siginfo_t *, void *))
{
	const char *known;
	int ret = 0;

	if (!name || !fn || !name[0] || strlen(name) >= SIGMIG_HANDLER_NAME_MAX)
		return -EINVAL;
	pthread_mutex_lock(&sigmig_rt.lock);
	known = sigmig_handler_name(fn);
	if (known) {
		ret = strcmp(known, name) ? -EEXIST : 0;
	} else if (sigmig_handler_fn(name)) {
		ret = -EEXIST;
	} else if (sigmig_rt.nhandlers == RT_MAX_HANDLERS) {
		ret = -ENOSPC;
	} else {
		strcpy(sigmig_rt.handlers[sigmig_rt.nhandlers].name, name);
		sigmig_rt.handlers[sigmig_rt.nhandlers++].fn = fn;
	}
	pthread_mutex_unlock(&sigmig_rt.lock);
	return ret;
}

int sigmig_install_handler(int sig, const char *name,
			   void (*fn)(int, siginfo_t *, void *), int flags,
			   const sigset_t *mask)
{
	struct sigaction sa;
	int ret;

	if (sig == SIGMIG_FREEZE_SIGNAL)
		return -EINVAL;
	ret = sigmig_register_handler(name, fn);
	if (ret)
		return ret;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	if (mask)
		sa.sa_mask = *mask;
	else
		sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGMIG_FREEZE_SIGNAL);
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}

static int start_ctl_thread(void)
{
	sigset_t all, old;
	int ret;

	/* the control thread must never take a signal: it starts blocked */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&sigmig_rt.ctl_thread, NULL, sigmig_ctl_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	sigmig_rt.ctl_started = 1;
	return 0;
}

static int fail_restore(const char *what)
{
	fprintf(stderr, "sigmig restore: %s\n", what);
	fflush(stderr);
	_exit(3);
}

int sigmig_runtime_start(const struct sigmig_runtime_opts *opts)
{
	sigset_t all;
	int ret;

	if (!opts || !opts->ctl_path || !opts->nthreads ||
	    opts->nthreads > SIGMIG_MAX_THREADS ||
	    strlen(opts->ctl_path) >= sizeof(sigmig_rt.ctl_path))
		return -EINVAL;
	snprintf(sigmig_rt.ctl_path, sizeof(sigmig_rt.ctl_path), "%s", opts->ctl_path);
	snprintf(sigmig_rt.program, sizeof(sigmig_rt.program), "%s",
		 opts->program ? opts->program : "");
	sigmig_rt.nthreads = opts->nthreads;
	sigmig_rt.on_commit = opts->on_commit;
	sigmig_rt.restore_hold = opts->restore_image && opts->restore_hold;
	sigmig_rt.threads = calloc(opts->nthreads, sizeof(*sigmig_rt.threads));
	if (!sigmig_rt.threads)
		return -ENOMEM;
	ret = sigmig_install_freeze_handler();
	if (ret)
		return ret;
	if (opts->restore_image) {
		/* nothing may be delivered until the queues are back and verified */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
		sigmig_rt.restoring = 1;
		sigmig_rt.state = ST_RESTORING;
		if (sigmig_restore_prepare(opts->restore_image))
			fail_restore(sigmig_rt.restore_err);
	}
	ret = sigmig_ctl_listen(sigmig_rt.ctl_path);
	if (ret)
		return ret;
	ret = start_ctl_thread();
	if (ret)
		return ret;
	if (sigmig_rt.restoring && sigmig_restore_start())
		fail_restore(sigmig_rt.restore_err);
	return 0;
}

int sigmig_thread_register(unsigned int index)
{
	struct rt_thread *t;
	sigset_t freeze;

	if (index >= sigmig_rt.nthreads)
		return -EINVAL;
	t = &sigmig_rt.threads[index];
	pthread_mutex_lock(&sigmig_rt.lock);
	if (t->registered) {
		pthread_mutex_unlock(&sigmig_rt.lock);
		return -EBUSY;
	}
	t->tid = (pid_t)syscall(SYS_gettid);
	t->registered = 1;
	sigmig_self = t;
	pthread_mutex_unlock(&sigmig_rt.lock);
	atomic_fetch_add(&sigmig_rt.nregistered, 1);
	sigmig_futex_wake(&sigmig_rt.nregistered);
	if (sigmig_rt.restoring)
		return sigmig_restore_thread(t);
	sigemptyset(&freeze);
	sigaddset(&freeze, SIGMIG_FREEZE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &freeze, NULL);
	return 0;
}

int sigmig_runtime_wait_ready(char *err, size_t errlen)
{
	uint32_t v;

	if (!sigmig_rt.restoring)
		return 0;
	sigmig_restore_claim_leader();
	while (!(v = atomic_load(&sigmig_rt.restore_done)))
		sigmig_futex_wait(&sigmig_rt.restore_done, 0, -1);
	if (v == 1)
		return 0;
	if (err && errlen)
		snprintf(err, errlen, "%s", sigmig_rt.restore_err);
	return sigmig_rt.restore_result ? sigmig_rt.restore_result : -EIO;
}

void sigmig_runtime_stop(void)
{
	if (!sigmig_rt.ctl_started)
		return;
	atomic_store(&sigmig_rt.stopping, 1);
	pthread_join(sigmig_rt.ctl_thread, NULL);
	sigmig_rt.ctl_started = 0;
	if (sigmig_rt.listen_fd >= 0)
		close(sigmig_rt.listen_fd);
	sigmig_rt.listen_fd = -1;
	unlink(sigmig_rt.ctl_path);
}
