/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verification of a requeue: does a queue, peeked after the parasite
 * wrote records onto it, hold them exactly once and in order? Pure: no
 * I/O, so that the host's unit tests run it on made-up queues.
 */
#ifndef SIGMIG_REQUEUE_CHECK_H
#define SIGMIG_REQUEUE_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <sigmig/entry.h>

#include "peek-args.h"

#define RECORD(base, i)	((base) + (size_t)(i) * PEEK_RECORD_SIZE)

struct requeue_queue {
	const unsigned char *want;	/* the records written */
	uint32_t nr;
	const unsigned char *after;	/* the queue, peeked afterwards */
	uint32_t nr_after;
	uint32_t late;		/* records the parasite found queued first */
	bool behind;		/* written behind the late ones, not in front */
};

struct requeue_verdict {
	uint32_t merged;	/* standard signals pending twice, queued once */
	uint32_t arrived;	/* records that came while the parasite worked */
	uint32_t end;		/* in front: where the written ones end in after */
	const char *why;	/* NULL when the queue is right */
};

int record_signo(const unsigned char *rec);

int requeue_check(const struct requeue_queue *q, struct requeue_verdict *v);

#endif /* SIGMIG_REQUEUE_CHECK_H */
