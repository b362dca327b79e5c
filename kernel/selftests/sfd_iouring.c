// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring hands IORING_OP_READ's offset to ->read() for any file that is
 * not a stream, without checking FMODE_PREAD. A signalfd read through
 * io_uring must dequeue whatever the offset, as it did before pread() could
 * peek: issued inline on a non-blocking fd, and in an io-wq worker
 * (IOSQE_ASYNC), whose own per-thread queue is not the submitter's.
 * Raw syscalls, no liburing: the ring setup below is all it needs.
 */
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define SHARED	SFD_SHARED_QUEUE_OFFSET
#define PRIV	SFD_PER_THREAD_QUEUE_OFFSET

struct ring {
	int fd;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

static int ring_map(struct ring *r, const struct io_uring_params *p)
{
	r->sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned int);
	r->cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	if (p->features & IORING_FEAT_SINGLE_MMAP && r->cq_len > r->sq_len)
		r->sq_len = r->cq_len;
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 r->fd, IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED)
		return -1;
	r->cq_map = r->sq_map;
	if (!(p->features & IORING_FEAT_SINGLE_MMAP)) {
		r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, r->fd, IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED)
			return -1;
	}
	r->sqes_len = p->sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned int *)((char *)r->sq_map + p->sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_map + p->sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_map + p->sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_map + p->cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_map + p->cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_map + p->cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + p->cq_off.cqes);
	return 0;
}

/*
 * The errno of a system call this kernel does not have, which a kernel
 * without io_uring returns for io_uring_setup().
 */
static int no_such_syscall_errno(void)
{
	errno = 0;
	syscall(-1);
	return errno;
}

/* 0, or -1 with errno (no_such_syscall_errno(): a kernel without io_uring). */
static int ring_setup(struct ring *r)
{
	struct io_uring_params p;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	r->fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	return ring_map(r, &p);
}

static void ring_free(struct ring *r)
{
	if (r->sqes && r->sqes != MAP_FAILED)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map && r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map && r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_len);
	if (r->fd > 0)
		close(r->fd);
}

/* One IORING_OP_READ of @len bytes at @off; its result (res), or -errno. */
static int ring_read(struct ring *r, int fd, void *buf, unsigned int len,
		     long long off, unsigned int sqe_flags)
{
	unsigned int tail = *r->sq_tail, head;
	struct io_uring_sqe *sqe = &r->sqes[tail & *r->sq_mask];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ;
	sqe->flags = sqe_flags;
	sqe->fd = fd;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	sqe->off = (unsigned long long)off;
	r->sq_array[tail & *r->sq_mask] = tail & *r->sq_mask;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0)
		return -errno;
	head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return -EIO;
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

FIXTURE(iouring)
{
	struct ring ring;
	int fd;
	int no_uring;
	siginfo_t rec[4];
};

FIXTURE_SETUP(iouring)
{
	const int sigs[] = { SIGRTMIN, 0 };

	self->fd = -1;
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (ring_setup(&self->ring)) {
		int err = errno;

		/* The harness runs the test after a SKIP in setup: it skips. */
		self->no_uring = err == no_such_syscall_errno();
		errno = err;
		ASSERT_TRUE(self->no_uring) TH_LOG("io_uring setup: %s", strerror(errno));
		return;
	}
	self->fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	ASSERT_LE(0, self->fd);
	/* Three in the process-wide queue, one in the submitter's own. */
	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 3));
	ASSERT_EQ(0, q_private(SIGRTMIN, 10));
}

FIXTURE_TEARDOWN(iouring)
{
	ring_free(&self->ring);
	if (self->fd >= 0)
		close(self->fd);
	flush_all_signals();
}

/* The values left in a queue, as a peek sees them: 1 2 3 -> 123. */
static long queued_values(int fd, long long base)
{
	siginfo_t r[8];
	ssize_t n = sfd_peek(fd, r, 8, base);
	long v = 0;
	ssize_t i;

	if (n < 0)
		return -1;
	for (i = 0; i < n / SI_MAX_SIZE; i++)
		v = v * 10 + r[i].si_value.sival_int;
	return v;
}

static void read_dequeues(struct __test_metadata *_metadata,
			  struct _test_data_iouring *self, long long off,
			  unsigned int sqe_flags, int expect_val,
			  long expect_shared, long expect_private)
{
	int res;

	if (self->no_uring)
		SKIP(return, "kernel without io_uring (CONFIG_IO_URING)");
	res = ring_read(&self->ring, self->fd, self->rec, SI_MAX_SIZE, off,
			sqe_flags);
	ASSERT_EQ(SI_MAX_SIZE, res) TH_LOG("io_uring read at %#llx: %d", off, res);
	EXPECT_EQ(SIGRTMIN, self->rec[0].si_signo);
	EXPECT_EQ(expect_val, self->rec[0].si_value.sival_int);
	EXPECT_EQ(expect_shared, queued_values(self->fd, SHARED))
		TH_LOG("the io_uring read did not dequeue");
	EXPECT_EQ(expect_private, queued_values(self->fd, PRIV));
}

/* Inline on the submitter: its own queue first, as read() would. */
TEST_F(iouring, offset_minus_one_dequeues)
{
	read_dequeues(_metadata, self, -1, 0, 10, 123, 0);
}

TEST_F(iouring, shared_offset_dequeues)
{
	read_dequeues(_metadata, self, SHARED + 1, 0, 10, 123, 0);
}

TEST_F(iouring, per_thread_offset_dequeues)
{
	read_dequeues(_metadata, self, PRIV + 2, 0, 10, 123, 0);
}

/*
 * In an io-wq worker: the worker's own queue is empty, so a dequeue takes
 * the process-wide head and leaves the submitter's signal alone.
 */
TEST_F(iouring, async_shared_offset_dequeues_in_the_worker)
{
	read_dequeues(_metadata, self, SHARED, IOSQE_ASYNC, 1, 23, 10);
}

TEST_F(iouring, async_per_thread_offset_dequeues_in_the_worker)
{
	read_dequeues(_metadata, self, PRIV, IOSQE_ASYNC, 1, 23, 10);
}

/* pread() still peeks: the fix is io_uring's position, not FMODE_PREAD. */
TEST_F(iouring, pread_still_peeks)
{
	if (self->no_uring)
		SKIP(return, "kernel without io_uring (CONFIG_IO_URING)");
	EXPECT_EQ(123, queued_values(self->fd, SHARED));
	EXPECT_EQ(123, queued_values(self->fd, SHARED));
	EXPECT_EQ(10, queued_values(self->fd, PRIV));
}

TEST_HARNESS_MAIN
