/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * What kernel/patches/series adds to include/uapi/linux/signalfd.h, for
 * userspace built against headers that predate the series (glibc's
 * <sys/signalfd.h>, linux-libc-dev). Nothing else belongs here: every
 * definition is the series' own text, and check-uapi-mirror.sh (run by
 * make -C kernel/stress check) fails when the two differ in either
 * direction. The definitions are token for token the uapi ones, so a
 * patched <linux/signalfd.h> included beside this file is no conflict.
 */
#ifndef SIGMIG_UAPI_SIGNALFD_H
#define SIGMIG_UAPI_SIGNALFD_H

#include <fcntl.h>
#include <sys/ioctl.h>

/* read() returns siginfo_t records, as a SA_SIGINFO handler sees them */
#define SFD_RAW O_DIRECT
/* read() dequeues only from the process-wide queue */
#define SFD_GROUP O_DIRECTORY
/* read() dequeues only from the calling thread's queue */
#define SFD_PRIVATE O_EXCL

/*
 * pread() at one of these offsets plus n returns the n-th pending signal
 * of that queue and the ones after it, without dequeuing them.
 *
 * A 32-bit off_t (32-bit userspace built without _FILE_OFFSET_BITS=64)
 * would cut the shared offset down to a per-thread one, or to 0, which
 * dequeues: there SFD_SHARED_QUEUE_OFFSET does not compile.
 */
#define SFD_PER_THREAD_QUEUE_OFFSET	1
#if defined(__KERNEL__) || __SIZEOF_LONG__ > 4
#define SFD_SHARED_QUEUE_OFFSET		(1LL << 62)
#else
#define SFD_SHARED_QUEUE_OFFSET \
	((1LL << 62) + 0 * (long long)sizeof(char[sizeof(off_t) == 8 ? 1 : -1]))
#endif

/*
 * ioctl(SFD_IOC_SEAL) on an SFD_RAW signalfd: from now on the caller's
 * thread group refuses signals from others, SIGKILL aside, with ESRCH as
 * if it had exited. For a process that exits after a last read of its
 * queues. Irrevocable.
 */
#define SFD_IOC_SEAL	_IO('J', 0)

#endif /* SIGMIG_UAPI_SIGNALFD_H */
