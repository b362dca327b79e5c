/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace view of the signalfd extensions in kernel/patches/.
 * glibc's <sys/signalfd.h> predates them, so the values are repeated here;
 * they must match include/uapi/linux/signalfd.h of the patched kernel.
 */
#ifndef SIGMIG_SFD_H
#define SIGMIG_SFD_H

#include <fcntl.h>

#ifndef SFD_RAW
#define SFD_RAW		O_DIRECT	/* read() returns siginfo_t records */
#endif
#ifndef SFD_GROUP
#define SFD_GROUP	O_DIRECTORY	/* dequeue from the process-wide queue */
#endif
#ifndef SFD_PRIVATE
#define SFD_PRIVATE	O_EXCL		/* dequeue from the calling thread's queue */
#endif

/* pread() offsets: base + n peeks the n-th pending signal of that queue */
#ifndef SFD_PER_THREAD_QUEUE_OFFSET
#define SFD_PER_THREAD_QUEUE_OFFSET	1LL
#endif
#ifndef SFD_SHARED_QUEUE_OFFSET
#define SFD_SHARED_QUEUE_OFFSET		(1LL << 62)
#endif

#endif /* SIGMIG_SFD_H */
