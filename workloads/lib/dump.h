/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Dumping a parked process into an image (on the core's mailbox): every
 * thread peeks its own queue, the caller peeks the shared one, and the
 * dispositions and POSIX timers that give the signals meaning are added.
 */
#ifndef SIGMIG_DUMP_H
#define SIGMIG_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include <sigmig/image.h>

#include "peek.h"

/* The queues and state of a parked process, ready to be encoded. */
struct sigmig_dump {
	struct sigmig_image img;	/* its queues point into the peeks */
	struct rawbuf shared;
	struct sigmig_siginfo **owned;	/* per queue: its unqueued records */
	uint64_t nsignals;
	uint64_t size;			/* of the encoded image */
};

/*
 * Every registered thread must be parked (frozen, or held) from here to
 * sigmig_dump_release(). Takes every queue and the state that gives the
 * signals meaning; sigmig_image_encode_to(&d->img, ...) then writes the
 * image, d->size bytes, without copying the queues first. 0, or -errno
 * with the reason in @err and nothing to release.
 */
int sigmig_dump_take(struct sigmig_dump *d, char *err, size_t errlen);
/*
 * With @keep the queues taken are kept for sigmig_dump_delta() (a DUMP
 * that went out whole; a PEEK, which only looks, does not replace them).
 */
void sigmig_dump_release(struct sigmig_dump *d, int keep);

/*
 * A DUMP keeps the queues it took until the next FREEZE or THAW
 * (sigmig_dump_forget()): COMMIT reads what arrived since.
 */
void sigmig_dump_forget(void);

struct delta_counts {
	uint64_t carried;	/* entries that arrived since the DUMP */
	uint64_t removed;	/* dumped entries the kernel removed since */
	uint64_t timers;	/* timer expiries since, left to the target's timers */
	uint64_t read_ns;	/* CLOCK_REALTIME as the first queue was read */
	int sealed;		/* the last read: senders get ESRCH from then on */
};

/*
 * Every registered thread parked since the DUMP: an image of the entries
 * each queue gained since (its tail), without dequeuing. With @advance the
 * queues as read now become what the next delta is computed against (a
 * forwarder's reads: each one carries only what arrived since the last).
 * -ENODATA when no DUMP was taken in this freeze.
 */
int sigmig_dump_delta(int advance, uint8_t **img, size_t *len,
		      struct delta_counts *n, char *err, size_t errlen);

#endif /* SIGMIG_DUMP_H */
