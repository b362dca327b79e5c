// SPDX-License-Identifier: GPL-2.0
/* Bottom layer: clock, futex, signal-set words, file reads. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/image.h>
#include "util.h"

uint64_t sigmig_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t sigmig_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t sigmig_deadline(int timeout_ms)
{
	return sigmig_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * NSEC_PER_MSEC;
}

int sigmig_ms_left(uint64_t deadline)
{
	uint64_t now = sigmig_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
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

void sigmig_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * (long)NSEC_PER_MSEC,
	};

	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val,
		timeout_ms < 0 ? NULL : &ts, NULL, 0);
}

void sigmig_futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Room for @cap bytes at least; frees *@buf when it cannot. */
static int grow(uint8_t **buf, size_t *cap, size_t want)
{
	uint8_t *bigger;

	if (want <= *cap)
		return 0;
	while (*cap < want)
		*cap *= 2;
	bigger = realloc(*buf, *cap);
	if (!bigger) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	*buf = bigger;
	return 0;
}

static int read_all(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	size_t got = 0, cap = 4096;
	uint8_t *buf;
	ssize_t n;

	/* room for the whole file, its NUL and the read that sees EOF */
	if (fstat(fd, &st) == 0 && st.st_size > 0)
		cap = (size_t)st.st_size + 2;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (grow(&buf, &cap, got + 2))
			return -ENOMEM;
		n = read(fd, buf + got, cap - got - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			free(buf);
			return (int)n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

int sigmig_read_file(const char *path, uint8_t **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = read_all(fd, out, len);
	close(fd);
	return ret;
}
