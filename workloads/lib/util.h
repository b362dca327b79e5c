/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bottom layer of libsigmig: the clock, futex waits, signal-set words and
 * whole-file reads. Calls nothing else in the library.
 */
#ifndef SIGMIG_UTIL_H
#define SIGMIG_UTIL_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_MSEC	1000000ull
#define NSEC_PER_SEC	1000000000ull

/* CLOCK_MONOTONIC in ns: every timeout and duration of the library. */
uint64_t sigmig_now_ns(void);
/* CLOCK_REALTIME in ns: for stamps compared with other processes' logs. */
uint64_t sigmig_realtime_ns(void);
/* The monotonic time @timeout_ms from now. */
uint64_t sigmig_deadline(int timeout_ms);
/* What is left of @deadline in ms, rounded up; 0 once it has passed. */
int sigmig_ms_left(uint64_t deadline);

/* Bit (sig - 1) for signals 1..64, the kernel's sigset word. */
uint64_t sigmig_sigset_to_u64(const sigset_t *set);
void sigmig_u64_to_sigset(uint64_t bits, sigset_t *set);

/*
 * Raw futex, async-signal-safe unlike condition variables: a parked thread
 * waits with it inside a signal handler. Returns when *@word may no longer
 * be @val, after @timeout_ms (< 0: no limit) or spuriously: callers loop.
 */
void sigmig_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms);
void sigmig_futex_wake(_Atomic uint32_t *word);

/*
 * The whole of @path, NUL-terminated, in a malloc()ed buffer, read to EOF
 * with read(2) (no stdio; /proc files report size 0). 0 or -errno.
 */
int sigmig_read_file(const char *path, uint8_t **out, size_t *len);

#endif /* SIGMIG_UTIL_H */
