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
 * The signals of @pending that none of @q's records is for (SIGKILL and
 * SIGSTOP aside): pending without a queue entry.
 */
uint64_t sigmig_unqueued_set(const struct sigmig_queue *q, uint64_t pending);

/*
 * Appends to @q a record for every signal of @set: the siginfo the kernel
 * delivers for a signal pending without a queue entry. The new array is
 * returned in *@owned (the caller frees it, and the old one if it owned
 * that; NULL when nothing was added) and the number added in *@added.
 * 0, or -ENOMEM.
 */
int sigmig_append_unqueued(struct sigmig_queue *q, uint64_t set,
			   struct sigmig_siginfo **owned, uint32_t *added);

#endif
