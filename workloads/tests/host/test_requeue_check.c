// SPDX-License-Identifier: GPL-2.0
/*
 * requeue-check.c on made-up queues: what the parasite's check of a
 * requeue accepts (the records there once, in order, around arrivals and
 * merges of standard signals) and what it refuses (a record missing, out
 * of order or queued twice).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "requeue-check.h"
#include "tap.h"

#define MAX_RECS	16

struct queue {
	unsigned char rec[MAX_RECS * PEEK_RECORD_SIZE];
	uint32_t nr;
};

/* Append a record of @signo, told apart by @serial (its si_value). */
static void add(struct queue *q, int32_t signo, int32_t serial)
{
	unsigned char *r = RECORD(q->rec, q->nr++);
	int32_t code = SI_QUEUE;

	memset(r, 0, PEEK_RECORD_SIZE);
	memcpy(r, &signo, sizeof(signo));
	memcpy(r + 8, &code, sizeof(code));
	memcpy(r + 24, &serial, sizeof(serial));
}

/* A timer's own entry: SI_TIMER, its timer id and overrun. */
static void add_timer(struct queue *q, int32_t signo, int32_t timerid, int32_t overrun)
{
	unsigned char *r = RECORD(q->rec, q->nr++);
	int32_t code = SI_TIMER;

	memset(r, 0, PEEK_RECORD_SIZE);
	memcpy(r, &signo, sizeof(signo));
	memcpy(r + 8, &code, sizeof(code));
	memcpy(r + 16, &timerid, sizeof(timerid));
	memcpy(r + 20, &overrun, sizeof(overrun));
}

/* A queue of (signo, serial) pairs, ended by a 0 signo. */
static void fill(struct queue *q, const int32_t *pairs)
{
	q->nr = 0;
	for (; pairs[0]; pairs += 2)
		add(q, pairs[0], pairs[1]);
}

static int check(const int32_t *want, const int32_t *after, uint32_t late, bool behind,
		 struct requeue_verdict *v)
{
	static struct queue w, a;
	struct requeue_queue q;

	fill(&w, want);
	fill(&a, after);
	q = (struct requeue_queue){ .want = w.rec, .nr = w.nr, .after = a.rec,
				    .nr_after = a.nr, .late = late, .behind = behind };
	return requeue_check(&q, v);
}

#define RT1	(SIGRTMIN + 1)
#define RT2	(SIGRTMIN + 2)

static void test_in_front(void)
{
	const int32_t want[] = { RT1, 1, SIGUSR1, 2, RT2, 3, 0 };
	const int32_t exact[] = { RT1, 1, SIGUSR1, 2, RT2, 3, RT1, 9, 0 };
	const int32_t arrivals[] = { RT2, 7, RT1, 1, SIGUSR1, 2, RT1, 8, RT2, 3, RT1, 9, 0 };
	const int32_t missing[] = { RT1, 1, SIGUSR1, 2, RT1, 9, 0 };
	const int32_t reordered[] = { RT2, 3, RT1, 1, SIGUSR1, 2, RT1, 9, 0 };
	const int32_t late_unmerged[] = { RT1, 1, SIGUSR1, 2, RT2, 3, SIGUSR1, 9, 0 };
	struct requeue_verdict v;

	ok(!check(want, exact, 1, false, &v) && !v.arrived && !v.merged,
	   "in front: the records written, then the late one");
	ok(!check(want, arrivals, 1, false, &v) && v.arrived == 2 && !v.merged,
	   "in front: two arrivals before and among them are counted, not refused");
	ok(check(want, missing, 1, false, &v) && v.why, "in front: a record missing is refused");
	ok(check(want, reordered, 1, false, &v), "in front: records out of order are refused");
	ok(check(want, late_unmerged, 1, false, &v),
	   "in front: a late standard signal of a written number queued again is refused");
}

/*
 * A standard signal that arrives again between the parasite's dequeue of
 * the late ones and its write is queued first; the written one of its
 * number merges into it, as a second send would. Nothing is lost: the
 * check used to refuse it, and the agent then reported signals lost that
 * were all there.
 */
static void test_arrival_merges_written(void)
{
	const int32_t want[] = { RT1, 1, SIGUSR1, 2, RT2, 3, 0 };
	const int32_t after[] = { SIGUSR1, 7, RT1, 1, RT2, 3, 0 };
	const int32_t none[] = { RT1, 1, RT2, 3, 0 };
	const int32_t other[] = { SIGUSR2, 7, RT1, 1, RT2, 3, 0 };
	struct requeue_verdict v;

	ok(!check(want, after, 0, false, &v),
	   "in front: a written standard signal merged into an arrival of its number");
	ok(check(want, none, 0, false, &v),
	   "in front: a written standard signal gone, with none of its number pending, is refused");
	ok(check(want, other, 0, false, &v),
	   "in front: a standard signal of another number does not stand in for it");
	ok(!check(want, after, 0, true, &v) && v.merged == 1,
	   "behind: the same merge is accepted and counted");
}

static void test_behind(void)
{
	const int32_t want[] = { RT1, 5, SIGUSR1, 6, 0 };
	const int32_t exact[] = { RT2, 1, SIGUSR1, 2, RT1, 5, 0 };
	const int32_t in_front[] = { RT1, 5, RT2, 1, SIGUSR1, 2, 0 };
	const int32_t twice[] = { RT2, 1, SIGUSR1, 2, RT1, 5, 0 };
	const int32_t twice_want[] = { RT1, 5, RT1, 5, 0 };
	struct requeue_verdict v;

	ok(!check(want, exact, 2, true, &v) && v.merged == 1,
	   "behind: a written standard signal pending among the late ones merges");
	ok(check(want, in_front, 2, true, &v), "behind: records written in front are refused");
	ok(check(twice_want, twice, 2, true, &v),
	   "behind: two equal records written, one queued, is refused");
}

/*
 * A written timer record becomes the timer's own entry; a held copy's
 * timer that expires again before the check raises that entry's
 * si_overrun. It is the same entry: the check used to refuse the queue,
 * and the restore with it.
 */
static void test_timer_overrun_grows(void)
{
	static struct queue w, a;
	struct requeue_verdict v;
	struct requeue_queue q;

	w.nr = a.nr = 0;
	add(&w, RT1, 1);
	add_timer(&w, RT2, 7, 0);
	add(&a, RT1, 1);
	add_timer(&a, RT2, 7, 3);
	q = (struct requeue_queue){ .want = w.rec, .nr = w.nr, .after = a.rec,
				    .nr_after = a.nr };
	ok(!requeue_check(&q, &v), "a timer's entry whose overrun grew since it was written is found");
	a.nr = 1;
	add_timer(&a, RT2, 8, 0);
	q.nr_after = a.nr;
	ok(requeue_check(&q, &v), "another timer's entry does not stand in for it");
}

int main(void)
{
	tap_plan_start();
	test_in_front();
	test_arrival_merges_written();
	test_behind();
	test_timer_overrun_grows();
	return tap_done();
}
