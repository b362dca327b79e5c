// SPDX-License-Identifier: GPL-2.0
/*
 * The compel parasite of sigmig-peek-parasite. It runs inside the frozen
 * target with every signal blocked, in the thread whose queue it reads:
 * as the daemon in the leader (compel_rpc_call_sync), by trap in any other
 * thread (compel_run_in_thread). Either way it opens an SFD_RAW signalfd on
 * every signal, copies the calling thread's private queue and, when asked,
 * the process-wide queue into the shared args area through pread() peeks,
 * which dequeue nothing, and closes the descriptor again.
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
	if (cmd != PEEK_CMD)
		return -EINVAL;
	return peek(args);
}

int parasite_daemon_cmd(int cmd, void *args)
{
	if (cmd != PEEK_CMD)
		return -EINVAL;
	return peek(args);
}

void parasite_cleanup(void)
{
}
