/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The codecs and file helpers below the API report a failure as a
 * sentence in the caller's buffer and -1; the caller picks the problem
 * code. One formatter for all of them.
 */
#ifndef SIGMIG_AGENT_WHY_H
#define SIGMIG_AGENT_WHY_H

#include <stdarg.h>
#include <stdio.h>

static inline int why_fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int why_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

#endif /* SIGMIG_AGENT_WHY_H */
