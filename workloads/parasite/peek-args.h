/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The compel args area shared by sigmig-peek-parasite and the parasite it
 * runs inside the target: one command, run in one thread at a time, on the
 * thread's private queue and, when asked, the process-wide one.
 * Included by the freestanding parasite too: fixed-size types only.
 */
#ifndef SIGMIG_PEEK_ARGS_H
#define SIGMIG_PEEK_ARGS_H

#include <stdint.h>

/* compel's PARASITE_USER_CMDS, the first command number left to users */
#define PEEK_CMD		64	/* peek: copy the queues, dequeue nothing */
#define DRAIN_CMD		65	/* peek, then dequeue the queues whole */
#define REQUEUE_CMD		66	/* write rec[] back, in front; peek to verify */

#define PEEK_RECORD_SIZE	128	/* one SFD_RAW record, a siginfo_t */
#define PEEK_NR_SIGNALS		64	/* signal numbers 1..64 on x86_64 */

struct peek_args {
	/* in */
	uint32_t max_records;	/* capacity of rec[] */
	uint32_t want_shared;	/* also peek the process-wide queue */
	/* out */
	int32_t tid;		/* the thread that ran the command */
	int32_t err;		/* 0, or -errno of the first failed call */
	uint32_t nr_private;	/* rec[0 .. nr_private - 1] (in, for REQUEUE) */
	uint32_t nr_shared;	/* rec[nr_private ..] (in, for REQUEUE) */
	uint32_t truncated;	/* a queue had more records than max_records */
	/* DRAIN: dequeued, in delivery order, behind the peeked records */
	uint32_t nr_drained_private;
	uint32_t nr_drained_shared;
	/* REQUEUE: one rt_(tg)sigqueueinfo() per record, not write() */
	uint32_t by_sigqueueinfo;
	/* REQUEUE: behind what the queues hold (they hold earlier records) */
	uint32_t behind;
	/* REQUEUE: records found queued before ours (in front: put back behind them) */
	uint32_t nr_late_private;
	uint32_t nr_late_shared;
	/* REQUEUE in front: SI_TIMER records among the late ones */
	uint32_t nr_late_timers_private;
	uint32_t nr_late_timers_shared;
	/*
	 * DRAIN, in the thread that reads the process-wide queue: SFD_IOC_SEAL
	 * first, so that what this drain misses is refused to its senders
	 * (ESRCH), not lost with the process; seal_err is 0 or -errno.
	 */
	uint32_t seal;
	int32_t seal_err;
	/* REQUEUE: each queue peeked afterwards, behind the records written */
	uint32_t nr_after_private;
	uint32_t nr_after_shared;
	unsigned char rec[];	/* PEEK_RECORD_SIZE bytes each */
};

/*
 * SI_TIMER records (a timer's own, not a sender's) among @nr at @recs:
 * si_code, at byte 8, is -2 (little-endian; no library call, for the
 * freestanding parasite).
 */
static inline uint32_t peek_timer_records(const unsigned char *recs, uint32_t nr)
{
	const unsigned char *c;
	uint32_t i, n = 0;

	for (i = 0; i < nr; i++) {
		c = recs + (unsigned long)i * PEEK_RECORD_SIZE + 8;
		n += c[0] == 0xfe && c[1] == 0xff && c[2] == 0xff && c[3] == 0xff;
	}
	return n;
}

#endif /* SIGMIG_PEEK_ARGS_H */
