/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a pending queue without dequeuing it: the only place that talks
 * to the kernel interface (signalfd SFD_RAW + pread at a queue offset).
 * Async-signal-safe: a parked thread peeks its own queue inside the freeze
 * handler, so buffers are mmap()ed, never malloc()ed.
 */
#ifndef SIGMIG_PEEK_H
#define SIGMIG_PEEK_H

#include <stddef.h>
#include <stdint.h>

/* A growable array of raw siginfo records. */
struct rawbuf {
	uint8_t *data;
	size_t count;	/* records */
	size_t cap;	/* records */
};

enum peek_queue {
	PEEK_OWN_QUEUE,		/* the calling thread's private queue */
	PEEK_SHARED_QUEUE,	/* the process-wide queue */
};

/* The whole queue into @out (count reset first); 0 or -errno and @err. */
int sigmig_peek_queue(enum peek_queue which, struct rawbuf *out, char *err,
		      size_t errlen);
void sigmig_rawbuf_free(struct rawbuf *b);

/*
 * SFD_IOC_SEAL: from now on signals from other processes fail with ESRCH,
 * so that the next read of the queues, the last before the process ends,
 * misses nothing. 0, -ENOTTY on a kernel without it, or -errno.
 */
int sigmig_seal_queues(void);

#include <sigmig/entry.h>	/* sigmig_same_entry(): equal as a queue entry */

#endif /* SIGMIG_PEEK_H */
