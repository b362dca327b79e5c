/* SPDX-License-Identifier: GPL-2.0 */
/* Minimal TAP 13 output for host tests. */
#ifndef SIGMIG_TAP_H
#define SIGMIG_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline void tap_plan_start(void)
{
	printf("TAP version 13\n");
	fflush(stdout);	/* not again in each forked child's buffer */
}

static inline int ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
