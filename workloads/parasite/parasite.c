// SPDX-License-Identifier: GPL-2.0
/*
 * The compel parasite of sigmig-peek-parasite. It runs inside the frozen
 * target with every signal blocked, in the thread whose queue it reads:
 * as the daemon in the leader (compel_rpc_call_sync), by trap in any other
 * thread (compel_run_in_thread). Either way it opens an SFD_RAW signalfd on
 * every signal and, on the calling thread's private queue and, when asked,
 * the process-wide queue: copies them into the shared args area through
 * pread() peeks, which dequeue nothing (PEEK); peeks, then dequeues them
 * (DRAIN); or writes records back onto them, in front of what they hold,
 * and peeks them again for the caller to verify (REQUEUE). One command per
 * thread and infection: a second daemon command in the leader breaks the
 * next thread's trap (compel 3.17), so a round trip is two infections.
 */
#include <errno.h>
#include <sys/signalfd.h>

#include <compel/plugins/std.h>
#include <compel/infect-rpc.h>
#include <compel/ksigset.h>

#include <sigmig/sfd.h>

#include "peek-args.h"

/* Append the queue at @base to a->rec, from a->rec[*nr] on. */
static int peek_queue(int fd, struct peek_args *a, long long base,
		      uint32_t *nr)
{
	uint32_t used = a->nr_private + a->nr_shared;
	long got;

	for (;;) {
		if (used >= a->max_records) {
			unsigned char probe[PEEK_RECORD_SIZE];

			got = sys_pread(fd, (char *)probe, sizeof(probe),
					base + *nr);
			if (got > 0)
				a->truncated = 1;
			return got < 0 ? (int)got : 0;
		}
		got = sys_pread(fd, (char *)a->rec + (unsigned long)used * PEEK_RECORD_SIZE,
				(size_t)(a->max_records - used) * PEEK_RECORD_SIZE,
				base + *nr);
		if (got < 0)
			return (int)got;
		if (got == 0)
			return 0;
		if (got % PEEK_RECORD_SIZE)
			return -EIO;
		*nr += got / PEEK_RECORD_SIZE;
		used += got / PEEK_RECORD_SIZE;
	}
}

static int peek(struct peek_args *a);

static int open_queues(int flags)
{
	k_rtsigset_t all;

	ksigfillset(&all);
	return (int)sys_signalfd(-1, &all, KERNEL_SIGSET_SIZE,
				 SFD_RAW | flags | SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Dequeue the queue @fd reads into rec[] from rec[*used] on. */
static int drain_queue(int fd, struct peek_args *a, uint32_t *used, uint32_t *nr)
{
	long got;

	for (;;) {
		if (*used >= a->max_records) {
			a->truncated = 1;
			return 0;
		}
		got = sys_read(fd, (char *)a->rec + (unsigned long)*used * PEEK_RECORD_SIZE,
			       (size_t)(a->max_records - *used) * PEEK_RECORD_SIZE);
		if (got == -EAGAIN)
			return 0;
		if (got < 0)
			return (int)got;
		if (got == 0 || got % PEEK_RECORD_SIZE)
			return -EIO;
		*nr += got / PEEK_RECORD_SIZE;
		*used += got / PEEK_RECORD_SIZE;
	}
}

static int record_signo(const unsigned char *rec)
{
	return ((const siginfo_t *)rec)->si_signo;
}

/* Dequeue up to @nr records of @signo alone, from the head of its entries. */
static int dequeue_signal_records(int flags, int *fds, int signo,
				  struct peek_args *a, uint32_t nr,
				  uint32_t *used, uint32_t *dequeued)
{
	unsigned long want = (unsigned long)nr * PEEK_RECORD_SIZE;
	k_rtsigset_t one;
	long got;

	if (signo <= 0 || signo > PEEK_NR_SIGNALS)
		return -EIO;
	if (fds[signo] < 0) {
		ksigemptyset(&one);
		ksigaddset(&one, signo);
		fds[signo] = (int)sys_signalfd(-1, &one, KERNEL_SIGSET_SIZE,
					       SFD_RAW | flags | SFD_NONBLOCK | SFD_CLOEXEC);
		if (fds[signo] < 0)
			return fds[signo];
	}
	got = sys_read(fds[signo], (char *)a->rec + (unsigned long)*used * PEEK_RECORD_SIZE,
		       want);
	if (got == -EAGAIN)
		return 0;
	if (got < 0)
		return (int)got;
	if (got % PEEK_RECORD_SIZE)
		return -EIO;
	*used += got / PEEK_RECORD_SIZE;
	*dequeued += got / PEEK_RECORD_SIZE;
	return 0;
}

/*
 * Dequeue the @np records peeked at @peeked in their queue order, each
 * run of one signal through a signalfd on that signal alone: every read
 * takes entries at the head of the queue. A read on every signal dequeues
 * the lowest-numbered one first, and collect_signal() walks the queue from
 * its head to find it: quadratic on a long queue of interleaved signals
 * (100k of them took 6 s under TCG). What is left afterwards arrived after
 * the peek: it follows, from the read on every signal.
 */
static int drain_one(int flags, struct peek_args *a, const unsigned char *peeked,
		     uint32_t np, uint32_t *used, uint32_t *nr)
{
	int fds[PEEK_NR_SIGNALS + 1], fd, err = 0, i;
	uint32_t at = 0, run;

	for (i = 0; i <= PEEK_NR_SIGNALS; i++)
		fds[i] = -1;
	while (at < np && !err) {
		int signo = record_signo(peeked + (unsigned long)at * PEEK_RECORD_SIZE);

		for (run = 1; at + run < np; run++)
			if (record_signo(peeked + (unsigned long)(at + run) *
					 PEEK_RECORD_SIZE) != signo)
				break;
		if (*used + run > a->max_records) {
			a->truncated = 1;
			break;
		}
		err = dequeue_signal_records(flags, fds, signo, a, run, used, nr);
		at += run;
	}
	for (i = 0; i <= PEEK_NR_SIGNALS; i++)
		if (fds[i] >= 0)
			sys_close(fds[i]);
	if (err || a->truncated)
		return err;
	fd = open_queues(flags);
	if (fd < 0)
		return fd;
	err = drain_queue(fd, a, used, nr);
	sys_close(fd);
	return err;
}

/* SFD_IOC_SEAL: signals from others fail with ESRCH from now on. */
static int seal_process(void)
{
	int fd = open_queues(0), err;

	if (fd < 0)
		return fd;
	err = (int)sys_ioctl(fd, SFD_IOC_SEAL, 0);
	sys_close(fd);
	return err;
}

/*
 * The peek first, for the queue order; then the dequeue, so that nothing
 * is left for a later reader. What arrived in between is among the
 * drained records: the caller compares them with the peeked ones.
 */
static int drain(struct peek_args *a)
{
	uint32_t used;
	int err;

	if (a->seal && a->want_shared)
		a->seal_err = seal_process();
	peek(a);
	a->nr_drained_private = 0;
	a->nr_drained_shared = 0;
	if (a->err || a->truncated)
		return 0;
	used = a->nr_private + a->nr_shared;
	err = drain_one(SFD_PRIVATE, a, a->rec, a->nr_private, &used,
			&a->nr_drained_private);
	if (!err && a->want_shared && !a->truncated)
		err = drain_one(SFD_GROUP, a, a->rec + (unsigned long)a->nr_private *
				PEEK_RECORD_SIZE, a->nr_shared, &used,
				&a->nr_drained_shared);
	a->err = err;
	return 0;
}

static int write_all(int flags, const unsigned char *rec, uint32_t nr)
{
	unsigned long left = (unsigned long)nr * PEEK_RECORD_SIZE;
	int fd, err = 0;
	long n;

	if (!nr)
		return 0;
	fd = open_queues(flags);
	if (fd < 0)
		return fd;
	while (left && !err) {
		n = sys_write(fd, (const char *)rec, left);
		if (n <= 0)
			err = n < 0 ? (int)n : -EIO;
		else {
			rec += n;
			left -= (unsigned long)n;
		}
	}
	sys_close(fd);
	return err;
}

/*
 * A kernel without the batched write(): one syscall per record. Positive
 * si_codes are allowed because the parasite is the thread itself (the
 * process-wide ones: the leader, whose tid is the pid).
 */
static int sigqueue_all(int shared, unsigned char *rec, uint32_t nr)
{
	long pid = sys_getpid(), tid = sys_gettid(), ret;
	uint32_t i;

	for (i = 0; i < nr; i++) {
		siginfo_t *info = (siginfo_t *)(rec + (unsigned long)i * PEEK_RECORD_SIZE);

		if (shared)
			ret = sys_rt_sigqueueinfo((pid_t)pid, info->si_signo, info);
		else
			ret = sys_rt_tgsigqueueinfo((pid_t)pid, (pid_t)tid, info->si_signo, info);
		if (ret < 0)
			return (int)ret;
	}
	return 0;
}

static int requeue_queue(struct peek_args *a, int shared, unsigned char *rec,
			 uint32_t nr)
{
	if (a->by_sigqueueinfo)
		return sigqueue_all(shared, rec, nr);
	return write_all(shared ? SFD_GROUP : SFD_PRIVATE, rec, nr);
}

/* The records a queue holds, peeked and not kept. */
static int count_queue(int fd, long long base, uint32_t *count)
{
	unsigned char rec[PEEK_RECORD_SIZE * 4];
	long n;

	*count = 0;
	for (;;) {
		n = sys_pread(fd, (char *)rec, sizeof(rec), base + *count);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return 0;
		*count += (uint32_t)(n / PEEK_RECORD_SIZE);
	}
}

/*
 * Put @nr records back onto one queue in front of what it holds now: what
 * is queued already came later (CRIU's restorer queues what reached the
 * stopped process after our drain, before we run; the original gets new
 * signals while stopped). Take those out, peeked for their order and
 * dequeued, write ours, then theirs. @scratch has room for them.
 */
static int requeue_in_front(struct peek_args *a, int shared, unsigned char *rec,
			    uint32_t nr, unsigned char *scratch, uint32_t *late,
			    uint32_t *late_timers)
{
	int flags = shared ? SFD_GROUP : SFD_PRIVATE, fd, err;
	long long base = shared ? SFD_SHARED_QUEUE_OFFSET : SFD_PER_THREAD_QUEUE_OFFSET;
	uint32_t peeked = 0, dequeued = 0, at, room = a->max_records;
	unsigned char *drained;

	fd = open_queues(flags);
	if (fd < 0)
		return fd;
	if (a->behind) {	/* what is queued came first: count it, append */
		err = count_queue(fd, base, late);
		sys_close(fd);
		return err ? err : requeue_queue(a, shared, rec, nr);
	}
	at = (uint32_t)((scratch - a->rec) / PEEK_RECORD_SIZE);
	a->max_records = at + (room - at) / 2;
	err = peek_queue(fd, a, base, &peeked);
	sys_close(fd);
	at = a->max_records;
	drained = a->rec + (unsigned long)at * PEEK_RECORD_SIZE;
	a->max_records = room;
	/* queue order: the peeked ones, then any that arrived after the peek */
	if (!err && !a->truncated)
		err = drain_one(flags, a, scratch, peeked, &at, &dequeued);
	*late = dequeued;
	*late_timers = peek_timer_records(drained, dequeued);
	if (err || a->truncated)
		return err ? err : -E2BIG;
	err = requeue_queue(a, shared, rec, nr);
	if (!err && dequeued)
		err = requeue_queue(a, shared, drained, dequeued);
	return err;
}

/*
 * Back onto the queues they came from, in order: the thread is the writer.
 * Then each queue is peeked behind the records, for the caller to verify.
 */
static int requeue(struct peek_args *a)
{
	uint32_t nr = a->nr_private + a->nr_shared, room = a->max_records;
	unsigned char *scratch = a->rec + (unsigned long)nr * PEEK_RECORD_SIZE;
	uint32_t after = 0;
	int fd, err;

	a->tid = (int32_t)sys_gettid();
	err = requeue_in_front(a, 0, a->rec, a->nr_private, scratch,
			       &a->nr_late_private, &a->nr_late_timers_private);
	if (!err && a->want_shared)
		err = requeue_in_front(a, 1, a->rec + (unsigned long)a->nr_private *
				       PEEK_RECORD_SIZE, a->nr_shared, scratch,
				       &a->nr_late_shared, &a->nr_late_timers_shared);
	if (err) {
		a->err = err;
		return 0;
	}
	fd = open_queues(SFD_PRIVATE);
	if (fd < 0) {
		a->err = fd;
		return 0;
	}
	/* peek_queue() appends behind nr_private + nr_shared */
	a->max_records = room;
	err = peek_queue(fd, a, SFD_PER_THREAD_QUEUE_OFFSET, &after);
	a->nr_after_private = after;
	if (!err && a->want_shared) {
		a->nr_private += after;
		after = 0;
		err = peek_queue(fd, a, SFD_SHARED_QUEUE_OFFSET, &after);
		a->nr_private -= a->nr_after_private;
		a->nr_after_shared = after;
	}
	sys_close(fd);
	a->err = err;
	return 0;
}

static int run(int cmd, void *args)
{
	switch (cmd) {
	case PEEK_CMD:
		return peek(args);
	case DRAIN_CMD:
		return drain(args);
	case REQUEUE_CMD:
		return requeue(args);
	default:
		return -EINVAL;
	}
}

static int peek(struct peek_args *a)
{
	k_rtsigset_t all;
	int fd, err;

	a->tid = (int32_t)sys_gettid();
	a->nr_private = 0;
	a->nr_shared = 0;
	a->truncated = 0;
	ksigfillset(&all);
	fd = (int)sys_signalfd(-1, &all, KERNEL_SIGSET_SIZE,
			       SFD_RAW | SFD_PRIVATE | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		a->err = fd;
		return 0;
	}
	err = peek_queue(fd, a, SFD_PER_THREAD_QUEUE_OFFSET, &a->nr_private);
	if (!err && a->want_shared)
		err = peek_queue(fd, a, SFD_SHARED_QUEUE_OFFSET, &a->nr_shared);
	sys_close(fd);
	a->err = err;
	return 0;
}

int parasite_trap_cmd(int cmd, void *args)
{
	return run(cmd, args);
}

int parasite_daemon_cmd(int cmd, void *args)
{
	return run(cmd, args);
}

void parasite_cleanup(void)
{
}
