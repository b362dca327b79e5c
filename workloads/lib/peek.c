// SPDX-License-Identifier: GPL-2.0
/*
 * Peeking a queue: signalfd(SFD_RAW) on every signal but the freeze signal,
 * then pread() at the queue's offset plus the records already read, in
 * batches, until the kernel returns 0. Nothing is dequeued.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sigmig/image.h>
#include <sigmig/runtime.h>
#include <sigmig/sfd.h>
#include "peek.h"

#define PEEK_BATCH	8192	/* records per pread(): 1 MiB */

static int rawbuf_reserve(struct rawbuf *b, size_t records)
{
	size_t bytes = records * SI_MAX_SIZE;
	void *p;

	if (records <= b->cap)
		return 0;
	if (b->data)
		p = mremap(b->data, b->cap * SI_MAX_SIZE, bytes, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	b->data = p;
	b->cap = records;
	return 0;
}

void sigmig_rawbuf_free(struct rawbuf *b)
{
	if (b->data)
		munmap(b->data, b->cap * SI_MAX_SIZE);
	memset(b, 0, sizeof(*b));
}

static const char *queue_name(enum peek_queue which)
{
	return which == PEEK_SHARED_QUEUE ? "shared" : "private";
}

static int open_raw_signalfd(char *err, size_t errlen)
{
	uint64_t mask = ~0ull & ~(1ull << (SIGMIG_FREEZE_SIGNAL - 1));
	int fd, ret;

	fd = (int)syscall(SYS_signalfd4, -1, &mask, (size_t)KERNEL_SIGSET_SIZE,
			  SFD_RAW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0)
		return fd;
	ret = -errno;
	snprintf(err, errlen, "signalfd(SFD_RAW): %s (kernel without the sigmig signalfd patches?)",
		 strerror(-ret));
	return ret;
}

int sigmig_seal_queues(void)
{
	char err[160];
	int fd = open_raw_signalfd(err, sizeof(err)), ret = 0;

	if (fd < 0)
		return fd;
	if (ioctl(fd, SFD_IOC_SEAL, 0))
		ret = -errno;
	close(fd);
	return ret;
}

/* One batch after the @out->count records already read: records read, or -errno. */
static ssize_t peek_batch(int fd, enum peek_queue which, struct rawbuf *out,
			  char *err, size_t errlen)
{
	long long base = which == PEEK_SHARED_QUEUE ? SFD_SHARED_QUEUE_OFFSET :
						      SFD_PER_THREAD_QUEUE_OFFSET;
	ssize_t n;

	if (rawbuf_reserve(out, out->count + PEEK_BATCH)) {
		snprintf(err, errlen, "out of memory peeking %zu signals", out->count);
		return -ENOMEM;
	}
	do
		n = pread(fd, out->data + out->count * SI_MAX_SIZE,
			  PEEK_BATCH * SI_MAX_SIZE, base + (long long)out->count);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		n = -errno;
		snprintf(err, errlen, "pread(signalfd, %s queue, offset %zu): %s",
			 queue_name(which), out->count, strerror((int)-n));
		return n;
	}
	if (n % SI_MAX_SIZE) {
		snprintf(err, errlen, "pread(signalfd) returned %zd bytes, not a multiple of %d",
			 n, SI_MAX_SIZE);
		return -EIO;
	}
	return n / SI_MAX_SIZE;
}

int sigmig_peek_queue(enum peek_queue which, struct rawbuf *out, char *err,
		      size_t errlen)
{
	ssize_t n;
	int fd;

	out->count = 0;
	fd = open_raw_signalfd(err, errlen);
	if (fd < 0)
		return fd;
	while ((n = peek_batch(fd, which, out, err, errlen)) > 0) {
		out->count += (size_t)n;
		if (out->count > SIGMIG_MAX_SIGNALS) {
			snprintf(err, errlen, "%s queue holds more than %u signals, the image limit",
				 queue_name(which), SIGMIG_MAX_SIGNALS);
			n = -E2BIG;
			break;
		}
	}
	close(fd);
	return (int)n;
}
