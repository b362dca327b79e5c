/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ledger a workload program keeps of its deliveries, which sigledger
 * reads: "H PID RESTORED NS ARCH", "T ..." per timer, and one
 * "D INDEX TID NS HEX" line per delivery, HEX the whole siginfo. Header
 * only: sigplain, which stands for a program that does not link the
 * runtime, writes the same lines as sigstorm.
 */
#ifndef SIGMIG_LEDGER_H
#define SIGMIG_LEDGER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Room for a "D" line of a 128-byte siginfo. */
#define SIGMIG_LEDGER_LINE_MAX	400

static inline char *sigmig_put_dec(char *p, long long v)
{
	unsigned long long u = v < 0 ? -(unsigned long long)v : (unsigned long long)v;
	char tmp[24];
	int n = 0;

	if (v < 0)
		*p++ = '-';
	do
		tmp[n++] = (char)('0' + u % 10);
	while (u /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/*
 * The "D" line of one delivery of the @size-byte siginfo @si to thread
 * @index (@tid), stamped now (CLOCK_REALTIME), into @line: its length.
 * Async-signal-safe, for a handler that writes it with one write().
 */
static inline size_t sigmig_ledger_delivery(char *line, int index, long long tid,
					    const void *si, size_t size)
{
	static const char hexd[] = "0123456789abcdef";
	const unsigned char *b = si;
	struct timespec ts;
	char *p = line;
	size_t i;

	clock_gettime(CLOCK_REALTIME, &ts);
	*p++ = 'D';
	*p++ = ' ';
	p = sigmig_put_dec(p, index);
	*p++ = ' ';
	p = sigmig_put_dec(p, tid);
	*p++ = ' ';
	p = sigmig_put_dec(p, (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	*p++ = ' ';
	for (i = 0; i < size; i++) {
		*p++ = hexd[b[i] >> 4];
		*p++ = hexd[b[i] & 15];
	}
	*p++ = '\n';
	return (size_t)(p - line);
}

/* A formatted line to @fd with one write(): 0, or -1 when short. */
static inline int sigmig_fd_vprintf(int fd, const char *fmt, va_list ap)
{
	char line[256];
	int n = vsnprintf(line, sizeof(line), fmt, ap);

	if (n < 0 || n >= (int)sizeof(line))
		return -1;
	return write(fd, line, (size_t)n) == n ? 0 : -1;
}

#endif /* SIGMIG_LEDGER_H */
