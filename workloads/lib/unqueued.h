/* SPDX-License-Identifier: GPL-2.0 */
#ifndef SIGMIG_UNQUEUED_H
#define SIGMIG_UNQUEUED_H

#include <stdint.h>
#include <sys/types.h>
#include <sigmig/image.h>

/*
 * The pending set of one queue as /proc shows it: the thread @tid's own
 * (SigPnd) or, with @shared, its process's (ShdPnd). Bit n - 1 is signal n.
 * 0, or -errno.
 */
int sigmig_pending_set(pid_t tid, int shared, uint64_t *set);

/*
 * Appends to @q a record for every signal of @pending that none of its
 * records is for (SIGKILL and SIGSTOP aside): the siginfo the kernel
 * delivers for a signal pending without a queue entry. The new array is
 * returned in *@owned (the caller frees it; NULL when nothing was added)
 * and the number added in *@added. 0, or -ENOMEM.
 */
int sigmig_add_unqueued(struct sigmig_queue *q, uint64_t pending,
			struct sigmig_siginfo **owned, uint32_t *added);

#endif
