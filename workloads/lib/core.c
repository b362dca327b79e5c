// SPDX-License-Identifier: GPL-2.0
/*
 * Runtime core: process state, thread table, mailbox, control lock.
 *
 * The mailbox of a thread is two futex words. The poster stores a command
 * in cmd; the thread takes it with an exchange (so a poster that gives up
 * can withdraw a command not taken yet with a compare-exchange), runs it,
 * stores its result and bumps acked. The atomics order the plain fields
 * (result, err, peek, blocked) between the two threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core.h"
#include "util.h"

static struct {
	pthread_mutex_t control_lock;
	_Atomic int state;		/* enum rt_state */
	char program[64];
	unsigned int nthreads;
	struct rt_thread *threads;
	_Atomic uint32_t nregistered;	/* futex word */
} core = {
	.control_lock = PTHREAD_MUTEX_INITIALIZER,
};

static __thread struct rt_thread *self;

#define STATE_BIT(s)	(1u << (s))

/* The state machine: which states each state may move to. */
static const unsigned int next_states[] = {
	[RT_RUNNING]	= STATE_BIT(RT_FROZEN),
	[RT_FROZEN]	= STATE_BIT(RT_RUNNING) | STATE_BIT(RT_COMMITTED) |
			  STATE_BIT(RT_FORWARDING),
	[RT_HELD]	= STATE_BIT(RT_RUNNING) | STATE_BIT(RT_FAILED) |
			  STATE_BIT(RT_COMMITTED),
	[RT_RESTORING]	= STATE_BIT(RT_RUNNING) | STATE_BIT(RT_HELD) |
			  STATE_BIT(RT_FAILED),
	[RT_FAILED]	= 0,
	[RT_COMMITTED]	= 0,
	[RT_FORWARDING]	= STATE_BIT(RT_COMMITTED),
};

int sigmig_core_init(unsigned int nthreads, const char *program,
		     enum rt_state initial)
{
	if (core.threads)
		return -EALREADY;
	core.threads = calloc(nthreads, sizeof(*core.threads));
	if (!core.threads)
		return -ENOMEM;
	core.nthreads = nthreads;
	snprintf(core.program, sizeof(core.program), "%s", program ? program : "");
	atomic_store(&core.state, initial);
	return 0;
}

const char *sigmig_program(void)
{
	return core.program;
}

unsigned int sigmig_nthreads(void)
{
	return core.nthreads;
}

struct rt_thread *sigmig_thread(unsigned int index)
{
	return &core.threads[index];
}

struct rt_thread *sigmig_self(void)
{
	return self;
}

int sigmig_core_register(unsigned int index, struct rt_thread **out)
{
	struct rt_thread *t;

	if (index >= core.nthreads)
		return -EINVAL;
	t = &core.threads[index];
	sigmig_control_lock();
	if (atomic_load(&t->registered)) {
		sigmig_control_unlock();
		return -EBUSY;
	}
	t->tid = (pid_t)syscall(SYS_gettid);
	self = t;
	atomic_store(&t->registered, 1);
	sigmig_control_unlock();
	atomic_fetch_add(&core.nregistered, 1);
	sigmig_futex_wake(&core.nregistered);
	*out = t;
	return 0;
}

unsigned int sigmig_count_registered(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < core.nthreads; i++)
		n += atomic_load(&core.threads[i].registered) != 0;
	return n;
}

int sigmig_wait_all_registered(int timeout_ms, unsigned int *registered)
{
	uint64_t deadline = sigmig_deadline(timeout_ms);
	uint32_t n;
	int left;

	while ((n = atomic_load(&core.nregistered)) < core.nthreads) {
		left = sigmig_ms_left(deadline);
		if (!left) {
			*registered = n;
			return -ETIMEDOUT;
		}
		sigmig_futex_wait(&core.nregistered, n, left);
	}
	*registered = n;
	return 0;
}

enum rt_state sigmig_state(void)
{
	return atomic_load(&core.state);
}

const char *sigmig_state_name(enum rt_state state)
{
	static const char *const names[] = {
		/* a held copy is frozen to its clients; "restored" tells them apart */
		[RT_RUNNING] = "running", [RT_FROZEN] = "frozen", [RT_HELD] = "frozen",
		[RT_RESTORING] = "restoring", [RT_FAILED] = "failed",
		[RT_COMMITTED] = "committed", [RT_FORWARDING] = "forwarding",
	};

	return names[state];
}

int sigmig_transition(enum rt_state from, enum rt_state to)
{
	int expected = from;

	if (!(next_states[from] & STATE_BIT(to)))
		return -EINVAL;
	return atomic_compare_exchange_strong(&core.state, &expected, to) ? 0 : -EBUSY;
}

void sigmig_control_lock(void)
{
	pthread_mutex_lock(&core.control_lock);
}

void sigmig_control_unlock(void)
{
	pthread_mutex_unlock(&core.control_lock);
}

/* Withdraw @cmd if @t has not taken it: 1 if withdrawn. */
static int withdraw(struct rt_thread *t, uint32_t cmd)
{
	uint32_t expected = cmd;

	return atomic_compare_exchange_strong(&t->cmd, &expected, CMD_NONE);
}

int sigmig_post(struct rt_thread *t, uint32_t cmd, int timeout_ms)
{
	uint32_t before = atomic_load(&t->acked);
	uint64_t deadline = sigmig_deadline(timeout_ms);
	int left;

	t->result = 0;
	t->err[0] = '\0';
	atomic_store(&t->cmd, cmd);
	sigmig_futex_wake(&t->cmd);
	while (atomic_load(&t->acked) == before) {
		left = sigmig_ms_left(deadline);
		if (!left && withdraw(t, cmd))
			return -ETIMEDOUT;
		/* taken: it runs to its end, however long that is */
		sigmig_futex_wait(&t->acked, before, left ? left : -1);
	}
	return t->result;
}

void sigmig_post_nowait(struct rt_thread *t, uint32_t cmd)
{
	atomic_store(&t->cmd, cmd);
	sigmig_futex_wake(&t->cmd);
}

uint32_t sigmig_serve(struct rt_thread *t,
		      int (*run)(struct rt_thread *t, uint32_t cmd),
		      uint32_t until)
{
	uint32_t cmd;

	for (;;) {
		cmd = atomic_exchange(&t->cmd, CMD_NONE);
		if (cmd == CMD_NONE) {
			sigmig_futex_wait(&t->cmd, CMD_NONE, -1);
			continue;
		}
		t->result = run(t, cmd);
		atomic_fetch_add(&t->acked, 1);
		sigmig_futex_wake(&t->acked);
		if (until & CMD_BIT(cmd))
			return cmd;
	}
}
