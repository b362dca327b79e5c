/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one probe of the signalfd pending-signal interface, for every program
 * that must tell a kernel without it from a broken one (selftests and
 * stress programs skip, the agent reports "migration": false). It asks the
 * running kernel, not its version number: SFD_RAW and SFD_PRIVATE/SFD_GROUP
 * are tried, then a helper thread blocks a signal, sends it to itself,
 * peeks it twice through pread() on an SFD_RAW signalfd (a peek that
 * dequeued would not find it the second time) and takes it back.
 *
 * A helper thread, because its private queue is the only one the probe can
 * fill without touching the caller's: whatever it leaves there dies with it.
 *
 * The includer provides the interface's constants (SFD_*, SI_MAX_SIZE,
 * KERNEL_SIGSET_SIZE): the selftests from the tree's <linux/signalfd.h>,
 * everything else through kernel/include/sigmig/sfd_probe.h, which includes
 * this file. The series' selftests patch carries it as it is.
 */
#ifndef SFD_PROBE_H
#define SFD_PROBE_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

struct sfd_caps {
	int raw;		/* signalfd4() accepts SFD_RAW */
	int queues;		/* ... and SFD_PRIVATE and SFD_GROUP */
	int peek;		/* pread() returns a pending record, leaves it queued */
	int write;		/* write() of raw records requeues them (optional) */
	int seal;		/* ioctl(SFD_IOC_SEAL) exists (optional) */
	char missing[160];	/* the first thing that failed, "" if none did */
};

#define SFD_PROBE_SIGNAL	(SIGRTMIN + 7)

/* signalfd4() without glibc, which would reject flags it does not know. */
static inline int sfd_signalfd(int fd, const sigset_t *mask, int flags)
{
	return (int)syscall(SYS_signalfd4, fd, mask, (size_t)KERNEL_SIGSET_SIZE,
			    flags);
}

static inline void sfd_probe_missing(struct sfd_caps *caps, const char *what,
				     int err)
{
	if (!caps->missing[0])
		snprintf(caps->missing, sizeof(caps->missing), "%s: %s", what,
			 err ? strerror(err) : "unexpected result");
}

/* 1 if signalfd4() on SFD_PROBE_SIGNAL accepts @flags (the fd is closed). */
static inline int sfd_probe_flags(struct sfd_caps *caps, int flags,
				  const char *what)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SFD_PROBE_SIGNAL);
	fd = sfd_signalfd(-1, &mask, flags | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		sfd_probe_missing(caps, what, errno);
		return 0;
	}
	close(fd);
	return 1;
}

/* The calling thread's queue holds one SFD_PROBE_SIGNAL: peek it twice. */
static inline int sfd_probe_peek_twice(struct sfd_caps *caps, int fd)
{
	unsigned char rec[SI_MAX_SIZE];
	ssize_t n;
	int i, signo;

	for (i = 0; i < 2; i++) {
		n = pread(fd, rec, sizeof(rec), SFD_PER_THREAD_QUEUE_OFFSET);
		if (n != (ssize_t)sizeof(rec)) {
			sfd_probe_missing(caps, "pread() of a signalfd queue",
					  n < 0 ? errno : 0);
			return 0;
		}
		memcpy(&signo, rec, sizeof(signo));
		if (signo != SFD_PROBE_SIGNAL) {
			sfd_probe_missing(caps, "pread() returned another signal", 0);
			return 0;
		}
	}
	/* one record queued: the one after it is the end of the queue */
	n = pread(fd, rec, sizeof(rec), SFD_PER_THREAD_QUEUE_OFFSET + 1);
	if (n != 0)
		sfd_probe_missing(caps, "pread() past the end of a queue",
				  n < 0 ? errno : 0);
	return n == 0;
}

static inline void *sfd_probe_peek_thread(void *arg)
{
	struct sfd_caps *caps = arg;
	unsigned char rec[SI_MAX_SIZE];
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SFD_PROBE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	fd = sfd_signalfd(-1, &mask, SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		sfd_probe_missing(caps, "signalfd4(SFD_RAW)", errno);
		return NULL;
	}
	if (syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SFD_PROBE_SIGNAL)) {
		sfd_probe_missing(caps, "tgkill() to the probe thread", errno);
		close(fd);
		return NULL;
	}
	caps->peek = sfd_probe_peek_twice(caps, fd);
	/* tidy, not needed: the thread's queue is flushed when it exits */
	if (read(fd, rec, sizeof(rec)) < 0 && !caps->missing[0])
		sfd_probe_missing(caps, "read() of the probe signal", errno);
	close(fd);
	return NULL;
}

/*
 * write() of raw records came later than the read side: a kernel without
 * it is not missing the interface, so this does not set caps->missing.
 * A zero-length write() returns 0 only where signalfd has a write().
 */
static inline int sfd_probe_write(void)
{
	sigset_t mask;
	int fd, ok;

	sigemptyset(&mask);
	sigaddset(&mask, SFD_PROBE_SIGNAL);
	fd = sfd_signalfd(-1, &mask, SFD_RAW | SFD_PRIVATE | SFD_NONBLOCK |
			  SFD_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = write(fd, NULL, 0) == 0;
	close(fd);
	return ok;
}

/*
 * SFD_IOC_SEAL, asked without sealing anything: a kernel that has it
 * refuses a non-zero argument with EINVAL, one without it answers ENOTTY.
 * Optional, as write() is.
 */
static inline int sfd_probe_seal(void)
{
	sigset_t mask;
	int fd, ok;

	sigemptyset(&mask);
	sigaddset(&mask, SFD_PROBE_SIGNAL);
	fd = sfd_signalfd(-1, &mask, SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return 0;
	ok = ioctl(fd, SFD_IOC_SEAL, 1) < 0 && errno == EINVAL;
	close(fd);
	return ok;
}

/* Never fails: what is missing is false, and caps->missing says why. */
static inline void sfd_probe(struct sfd_caps *caps)
{
	pthread_t thread;
	int err;

	memset(caps, 0, sizeof(*caps));
	caps->raw = sfd_probe_flags(caps, SFD_RAW, "signalfd4(SFD_RAW)");
	caps->queues = sfd_probe_flags(caps, SFD_PRIVATE, "signalfd4(SFD_PRIVATE)") &&
		       sfd_probe_flags(caps, SFD_GROUP, "signalfd4(SFD_GROUP)");
	if (!caps->raw)
		return;
	caps->write = caps->queues && sfd_probe_write();
	caps->seal = sfd_probe_seal();
	err = pthread_create(&thread, NULL, sfd_probe_peek_thread, caps);
	if (err) {
		sfd_probe_missing(caps, "pthread_create() for the peek probe", err);
		return;
	}
	pthread_join(thread, NULL);
}

/*
 * The series is there (tests then run and fail if it is broken, rather
 * than skip): SFD_RAW is its first flag, which no unpatched kernel takes.
 */
static inline int sfd_interface_present(void)
{
	struct sfd_caps caps;

	sfd_probe(&caps);
	return caps.raw;
}

/*
 * What a checkpoint needs: records as siginfo_t and queues it can peek.
 * (SFD_PRIVATE/SFD_GROUP are for readers that dequeue; a dump does not.)
 */
static inline int sfd_interface_usable(const struct sfd_caps *caps)
{
	return caps->raw && caps->peek;
}

#endif /* SFD_PROBE_H */
