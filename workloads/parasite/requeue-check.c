// SPDX-License-Identifier: GPL-2.0
/*
 * In front: the queue holds the records written, byte for byte and in
 * order, then the late ones put back behind them. Behind: the late ones
 * (earlier records), then the written ones. A standard signal pending
 * twice merges into one, as a second send of it would have. Senders do
 * not stop for the parasite and a held copy's timers run, so records
 * arrive while it works and may stand before or among the written ones
 * ("arrived"): nothing is lost or queued twice, but those few went ahead
 * of older ones.
 */
#include <signal.h>
#include <string.h>

#include "requeue-check.h"

_Static_assert(sizeof(siginfo_t) == PEEK_RECORD_SIZE, "a record is a siginfo_t");

int record_signo(const unsigned char *rec)
{
	int signo;

	memcpy(&signo, rec, sizeof(signo));	/* si_signo leads every layout */
	return signo >= 1 && signo <= PEEK_NR_SIGNALS ? signo : 0;
}

static bool standard(const unsigned char *rec)
{
	int signo = record_signo(rec);

	return signo > 0 && signo < SIGRTMIN;
}

/* A standard signal of @rec's number among @nr records at @recs. */
static bool has_standard(const unsigned char *recs, uint32_t nr, const unsigned char *rec)
{
	uint32_t i;

	for (i = 0; i < nr; i++)
		if (standard(RECORD(recs, i)) && record_signo(RECORD(recs, i)) == record_signo(rec))
			return true;
	return false;
}

/* The first of @nr records at @recs from @from on equal to @rec, or -1. */
static long find_record(const unsigned char *recs, uint32_t nr, uint32_t from,
			const unsigned char *rec)
{
	uint32_t i;

	for (i = from; i < nr; i++)
		if (sigmig_same_entry(rec, RECORD(recs, i)))
			return i;
	return -1;
}

/*
 * A written standard signal that needs no place of its own: its number
 * was written before it (a drain is not atomic: one that came again after
 * its dequeue was saved twice), was pending when it was written behind,
 * or came again while the parasite worked and was queued first, so that
 * the written one merged into it.
 */
static bool merges(const struct requeue_queue *q, uint32_t i, uint32_t from)
{
	const unsigned char *rec = RECORD(q->want, i);

	if (!standard(rec))
		return false;
	if (has_standard(q->want, i, rec) || (q->behind && has_standard(q->after, q->late, rec)))
		return true;
	return find_record(q->after, q->nr_after, from, rec) < 0 &&
	       has_standard(RECORD(q->after, from), q->nr_after - from, rec);
}

/*
 * Where the written records stand in the queue, from @from on, in order:
 * the position after the last of them, or -1.
 */
static long find_block(const struct requeue_queue *q, uint32_t from,
		       struct requeue_verdict *v)
{
	uint32_t i, k = from;
	long at;

	for (i = 0; i < q->nr; i++) {
		if (merges(q, i, from)) {
			v->merged++;
			continue;
		}
		at = find_record(q->after, q->nr_after, k, RECORD(q->want, i));
		if (at < 0)
			return -1;
		v->arrived += (uint32_t)at - k;
		k = (uint32_t)at + 1;
	}
	return k;
}

int requeue_check(const struct requeue_queue *q, struct requeue_verdict *v)
{
	uint32_t from = q->behind ? q->late : 0, i;
	long end = -1;

	memset(v, 0, sizeof(*v));
	if (q->nr_after >= from)
		end = find_block(q, from, v);
	if (end < 0) {
		v->why = "does not hold the records written";
		return -1;
	}
	v->end = (uint32_t)end;
	if (q->behind)
		return 0;
	for (i = (uint32_t)end; i < q->nr_after; i++)
		if (standard(RECORD(q->after, i)) && has_standard(q->want, q->nr, RECORD(q->after, i))) {
			v->why = "holds a late standard signal of a number written, not merged";
			return -1;
		}
	/* in front: the late ones of a written number, and repeats */
	v->merged = q->nr + q->late + v->arrived > q->nr_after ?
		    q->nr + q->late + v->arrived - q->nr_after : 0;
	return 0;
}
