/* SPDX-License-Identifier: GPL-2.0 */
/*
 * When two raw records (128-byte siginfo_t) are the same queue entry: a
 * peek reports a pending timer's overrun as it grows (a timer that expires
 * again while its entry is queued raises si_overrun), and the kernel
 * changes nothing else in a queued entry. Shared by the runtime and the
 * parasite's checks, which link nothing else of each other.
 */
#ifndef SIGMIG_ENTRY_H
#define SIGMIG_ENTRY_H

#include <signal.h>
#include <stdint.h>
#include <string.h>

static inline int sigmig_same_entry(const uint8_t *a, const uint8_t *b)
{
	siginfo_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	if (x.si_code == SI_TIMER && y.si_code == SI_TIMER)
		x.si_overrun = y.si_overrun = 0;
	return !memcmp(&x, &y, sizeof(x));
}

#endif /* SIGMIG_ENTRY_H */
