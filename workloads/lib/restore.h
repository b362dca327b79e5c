/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Restoring a process from an image (on the core's mailbox). The restore
 * is led by the main thread and run by each registered thread for its own
 * queue; its outcome is returned to the callers, never acted upon here.
 */
#ifndef SIGMIG_RESTORE_H
#define SIGMIG_RESTORE_H

#include <stddef.h>
#include <stdint.h>
#include <sigmig/runtime.h>

struct rt_thread;

struct restore_status {
	int verified;		/* every queue requeued and compared */
	uint64_t requeued;
	uint64_t restore_ns;
	const char *requeue;	/* "write" or "sigqueueinfo": how it was done */
	const char *error;	/* why it failed, or NULL */
	uint64_t carried;	/* commit-delta entries requeued while held */
};

/*
 * From the main thread, before any application thread exists: decode and
 * check the image, raise RLIMIT_SIGPENDING. Nothing changes on failure.
 */
int sigmig_restore_prepare(const char *path, int hold, enum sigmig_requeue requeue,
			   char *err, size_t errlen);
/* This process was started to restore an image. */
int sigmig_restore_active(void);
/*
 * A registered thread joins the restore: the main thread leads it, the
 * others run its commands. 0 once the thread may run; the leader gets the
 * failure (-errno), the others -ECANCELED.
 */
int sigmig_restore_join(struct rt_thread *t);
/* Lead the restore if on the main thread, then wait for its outcome. */
int sigmig_restore_wait(char *err, size_t errlen);
/* Control thread, state held: resume the restored threads. */
int sigmig_restore_release(void);
void sigmig_restore_status(struct restore_status *st);
/*
 * Control thread, state held: requeue the commit delta in the image file
 * @path (the entries the source's queues gained after its DUMP) behind the
 * restored ones, each from the thread it belongs to, and find every one
 * pending afterwards (a standard signal that merged into one pending:
 * @merged). -errno and @err when refused or not verified.
 */
int sigmig_restore_requeue_delta(const char *path, uint64_t *requeued,
				 uint64_t *merged, char *err, size_t errlen);

/*
 * Control thread, every registered thread parked (frozen): requeue the
 * signals in the image file @path (forwarded from the original after the
 * move) each from the thread it belongs to, behind what is pending, and
 * find each one pending afterwards; a standard signal that merged into
 * one already pending counts in @merged, not in @requeued.
 */
int sigmig_requeue_parked(const char *path, uint64_t *requeued, uint64_t *merged,
			  char *err, size_t errlen);

#endif /* SIGMIG_RESTORE_H */
