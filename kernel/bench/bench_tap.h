/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TAP lines and the clock the benches share: a verification or a
 * missed target is a "not ok" line, so that it fails the bench run.
 */
#ifndef SIGMIG_BENCH_TAP_H
#define SIGMIG_BENCH_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int tap_no, tap_failed;

static void tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++tap_no);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	tap_failed |= !ok;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif /* SIGMIG_BENCH_TAP_H */
