/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The runtime's core, the layer freeze, dump and restore are built on:
 *  - the process state and every transition between states (one table);
 *  - the thread table: who registered, with which tid;
 *  - the mailbox: a command posted to one thread, run by that thread and
 *    acknowledged, with futex words only (a parked thread serves it from
 *    inside a signal handler);
 *  - the control lock, which serialises control verbs with registration.
 * It calls only util.c.
 */
#ifndef SIGMIG_CORE_H
#define SIGMIG_CORE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include "peek.h"

struct sigmig_thread;

enum rt_state {
	RT_RUNNING,	/* the application runs */
	RT_FROZEN,	/* every registered thread parked by FREEZE */
	RT_HELD,	/* restored and verified, parked until THAW or COMMIT */
	RT_RESTORING,	/* started with an image that is not verified yet */
	RT_FAILED,	/* the restore failed: nothing resumed */
	RT_COMMITTED,	/* COMMIT answered: the application never runs again */
	RT_FORWARDING,	/* FORWARD answered: parked for good, read for what arrives */
};

/* Commands a thread runs for the control thread or the restorer. */
enum rt_cmd {
	CMD_NONE = 0,
	CMD_PEEK,	/* peek the thread's own queue into its buffer */
	CMD_THAW,	/* leave the freeze handler */
	CMD_REQUEUE,	/* restore: requeue the image's private queue */
	CMD_GO,		/* restore: take the image's mask and run */
	CMD_RELEASE,	/* restore: a held restorer thread may go on */
	CMD_ABORT,	/* restore: failed, return -ECANCELED, never run */
	CMD_REQUEUE_DELTA,	/* held: requeue a commit delta's private queue */
	CMD_REQUEUE_SHARED,	/* held, the main thread: a delta's shared queue */
	CMD_CALL,	/* parked: run the thread's call() on itself */
};

#define CMD_BIT(cmd)	(1u << (cmd))

struct rt_thread {
	_Atomic int registered;
	pid_t tid;
	_Atomic uint32_t cmd;		/* futex word: the posted command */
	_Atomic uint32_t acked;		/* futex word: bumped as one finishes */
	_Atomic int parked;		/* in the freeze handler */
	uint64_t blocked;		/* the mask it runs with, as dumped */
	int result;			/* 0 or -errno of the last command */
	char err[160];			/* why, when result is not 0 */
	struct rawbuf peek;		/* its private queue, as last peeked */
	struct rawbuf dumped;		/* its private queue, as the last DUMP took it */
	uint64_t pending_set;		/* its pending signals, read just before the peek */
	uint64_t peek_unqueued;		/* signals pending on it without an entry, as last read */
	uint64_t dumped_unqueued;	/* ... as the last DUMP (or delta read) carried them */
	const struct sigmig_thread *image;	/* restore: its part of the image */
	const struct sigmig_thread *delta;	/* held: its part of a commit delta */
	int (*call)(struct rt_thread *t);	/* CMD_CALL: what it runs */
};

/* Once, before any thread registers. -EALREADY, -ENOMEM. */
int sigmig_core_init(unsigned int nthreads, const char *program,
		     enum rt_state initial);
const char *sigmig_program(void);
unsigned int sigmig_nthreads(void);
struct rt_thread *sigmig_thread(unsigned int index);
/* The calling thread's slot, NULL if it did not register. Signal-safe. */
struct rt_thread *sigmig_self(void);

/* The calling thread takes slot @index: 0, -EINVAL, -EBUSY. */
int sigmig_core_register(unsigned int index, struct rt_thread **out);
unsigned int sigmig_count_registered(void);
/* Until all nthreads registered: 0, or -ETIMEDOUT with how many did. */
int sigmig_wait_all_registered(int timeout_ms, unsigned int *registered);

enum rt_state sigmig_state(void);
const char *sigmig_state_name(enum rt_state state);
/*
 * The one way the state changes: @from -> @to if the state is @from now.
 * -EINVAL for a transition the state machine does not have, -EBUSY when
 * the state is not @from.
 */
int sigmig_transition(enum rt_state from, enum rt_state to);

void sigmig_control_lock(void);
void sigmig_control_unlock(void);

/*
 * Hand @cmd to @t and wait until it has run it: its result, or
 * -ETIMEDOUT if @t did not take it within @timeout_ms (the command is
 * withdrawn). A command @t has taken is always waited for: it may write
 * into buffers the caller frees next.
 */
int sigmig_post(struct rt_thread *t, uint32_t cmd, int timeout_ms);
/*
 * Hand @cmd to @t and do not wait: for a command whose result nobody
 * needs, to a thread that may already have stopped serving.
 */
void sigmig_post_nowait(struct rt_thread *t, uint32_t cmd);
/*
 * On thread @t: run each command posted to it with @run, whose result
 * sigmig_post() returns, until one in @until (CMD_BIT()s) has run; returns
 * that one. Async-signal-safe.
 */
uint32_t sigmig_serve(struct rt_thread *t,
		      int (*run)(struct rt_thread *t, uint32_t cmd),
		      uint32_t until);

#endif /* SIGMIG_CORE_H */
