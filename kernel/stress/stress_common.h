/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the signalfd stress, fuzz and leak programs: TAP output, raw
 * syscalls, a deterministic per-thread PRNG, and a TAP skip for a kernel
 * without the pending-signal interface (<sigmig/sfd_probe.h> tells it
 * apart from a broken one).
 */
#ifndef SFD_STRESS_COMMON_H
#define SFD_STRESS_COMMON_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <sigmig/sfd_probe.h>

static inline pid_t sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline int sys_signalfd4(int fd, const sigset_t *mask, size_t size,
				int flags)
{
	return (int)syscall(SYS_signalfd4, fd, mask, size, flags);
}

static inline int sys_rt_sigqueueinfo(pid_t tgid, int sig, const siginfo_t *si)
{
	return (int)syscall(SYS_rt_sigqueueinfo, tgid, sig, si);
}

static inline int sys_rt_tgsigqueueinfo(pid_t tgid, pid_t tid, int sig,
					const siginfo_t *si)
{
	return (int)syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, si);
}

static inline int sys_tgkill(pid_t tgid, pid_t tid, int sig)
{
	return (int)syscall(SYS_tgkill, tgid, tid, sig);
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: cheap, per thread, reproducible from the printed seed. */
static inline uint64_t rnd_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint32_t rnd_below(uint64_t *state, uint32_t n)
{
	return n ? (uint32_t)(rnd_next(state) % n) : 0;
}

/* A 64-bit mix used as the checksum of a stress record. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static int tap_count;
static int tap_failed;

static inline void tap_plan(int n)
{
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
}

static inline void tap_result(int ok, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!ok)
		tap_failed++;
	printf("%sok %d - ", ok ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* TAP "skip everything" for a kernel without the interface. */
static inline int tap_skip_all_if_missing(const char *prog)
{
	if (sfd_interface_present())
		return 0;
	printf("TAP version 13\n1..0 # SKIP %s: this kernel lacks the signalfd "
	       "pending-signal interface (SFD_RAW/pread); run it in the sigmig "
	       "guest\n", prog);
	fflush(stdout);
	return 1;
}

#endif /* SFD_STRESS_COMMON_H */
