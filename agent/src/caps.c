// SPDX-License-Identifier: GPL-2.0
/*
 * Asks the running kernel, not its version number: a thread blocks a
 * signal, sends it to itself, peeks it through pread() on an SFD_RAW
 * signalfd, checks the peek did not dequeue it, then reads it away.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sigmig/sfd.h>

#include "caps.h"
#include "config.h"

#define PROBE_SIGNAL	(SIGRTMIN + 7)
#define KERNEL_SIGSET_SIZE 8

static int sfd_create(const sigset_t *mask, int flags)
{
	return (int)syscall(SYS_signalfd4, -1, mask, KERNEL_SIGSET_SIZE, flags);
}

static void probe_flags(struct kernel_caps *caps, const sigset_t *mask)
{
	int fd;

	fd = sfd_create(mask, SFD_RAW | SFD_CLOEXEC);
	caps->sfd_raw = fd >= 0;
	if (fd >= 0)
		close(fd);
	else
		snprintf(caps->detail, sizeof(caps->detail),
			 "signalfd4(SFD_RAW): %s", strerror(errno));
	fd = sfd_create(mask, SFD_PRIVATE | SFD_CLOEXEC);
	caps->sfd_queues = fd >= 0;
	if (fd >= 0)
		close(fd);
}

/* The thread's private queue holds exactly one PROBE_SIGNAL: peek it twice. */
static bool peek_twice(int fd)
{
	unsigned char rec[128];
	int i, signo;

	for (i = 0; i < 2; i++) {
		if (pread(fd, rec, sizeof(rec), SFD_PER_THREAD_QUEUE_OFFSET) !=
		    (ssize_t)sizeof(rec))
			return false;
		memcpy(&signo, rec, sizeof(signo));
		if (signo != PROBE_SIGNAL)
			return false;
	}
	return pread(fd, rec, sizeof(rec), SFD_PER_THREAD_QUEUE_OFFSET + 1) == 0;
}

static void *probe_pread(void *arg)
{
	struct kernel_caps *caps = arg;
	unsigned char rec[128];
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, PROBE_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	fd = sfd_create(&mask, SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), PROBE_SIGNAL);
	caps->queue_pread = peek_twice(fd);
	if (!caps->queue_pread && !caps->detail[0])
		snprintf(caps->detail, sizeof(caps->detail),
			 "pread() on a signalfd: %s", strerror(errno));
	/* Consume the probe signal so that it never reaches anyone. */
	while (read(fd, rec, sizeof(rec)) > 0)
		;
	close(fd);
	return NULL;
}

void caps_probe(struct kernel_caps *caps)
{
	struct utsname uts;
	pthread_t thread;
	sigset_t mask;

	memset(caps, 0, sizeof(*caps));
	if (uname(&uts) == 0) {
		snprintf(caps->release, sizeof(caps->release), "%s", uts.release);
		snprintf(caps->machine, sizeof(caps->machine), "%s", uts.machine);
	}
	sigemptyset(&mask);
	sigaddset(&mask, PROBE_SIGNAL);
	probe_flags(caps, &mask);
	if (caps->sfd_raw && pthread_create(&thread, NULL, probe_pread, caps) == 0)
		pthread_join(thread, NULL);
}

bool caps_interface_ok(const struct kernel_caps *caps)
{
	return caps->sfd_raw && caps->queue_pread;
}

json_t *caps_to_json(const struct kernel_caps *caps)
{
	json_t *o;

	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:b, s:b, s:b}, s:b}",
		      "agent_version", AGENT_VERSION,
		      "api_version", AGENT_API_VERSION,
		      "kernel", "release", caps->release,
		      "machine", caps->machine,
		      "signalfd", "sfd_raw", caps->sfd_raw,
		      "sfd_private_group", caps->sfd_queues,
		      "queue_pread", caps->queue_pread,
		      "migration", caps_interface_ok(caps));
	if (o && caps->detail[0])
		json_object_set_new(json_object_get(o, "signalfd"), "missing",
				    json_string(caps->detail));
	return o;
}
