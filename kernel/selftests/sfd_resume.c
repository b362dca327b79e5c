// SPDX-License-Identifier: GPL-2.0
/*
 * A pread() that continues a batched read of a queue resumes where the
 * previous walk stopped (the queue remembers the entry and its index), so
 * reading a long queue in batches is O(n). That shortcut must never change
 * what pread() returns: every window of every queue must be exactly the
 * queue's content at that index, also after the remembered entry or the
 * entries before it left the queue, after more were appended, with another
 * mask, and below the remembered index.
 *
 * The expected content comes from a model of the queue kept here, not from
 * the kernel: every queued signal carries a unique value and every removal
 * is mirrored, so a wrong resume shows up as a wrong value at an index.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/userfaultfd.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV		SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED		SFD_SHARED_QUEUE_OFFSET
#define NQ		3000	/* entries queued per test */
#define MAXQ		4096

struct entry {
	int sig;
	int val;	/* si_value of SI_QUEUE entries, 0 for the fault */
};

#define FAULT_ADDR	((void *)0x5e6f000)

/* What the queue under test holds, in order. */
struct model {
	struct entry e[MAXQ];
	int n;
};

static siginfo_t got[MAXQ];
static struct model m;
static sig_atomic_t segv_seen;

static int model_queue(int private_queue, int sig, int val)
{
	int ret = private_queue ? q_private(sig, val) : q_shared(sig, val);

	if (!ret && m.n < MAXQ)
		m.e[m.n++] = (struct entry){ sig, val };
	return ret;
}

static void model_remove_if(int sig, int val, int by_sig)
{
	int i, j = 0;

	for (i = 0; i < m.n; i++) {
		if (m.e[i].sig == sig && (by_sig || m.e[i].val == val))
			continue;
		m.e[j++] = m.e[i];
	}
	m.n = j;
}

/* The entries a fd with @sigs selects, in queue order. */
static int model_view(const int *sigs, struct entry *out)
{
	int i, k, n = 0;

	for (i = 0; i < m.n; i++)
		for (k = 0; sigs[k]; k++)
			if (m.e[i].sig == sigs[k])
				out[n++] = m.e[i];
	return n;
}

static int records_match(const siginfo_t *rec, const struct entry *exp, int n,
			 long long first_index)
{
	int i;

	for (i = 0; i < n; i++) {
		if (rec[i].si_signo != exp[i].sig)
			goto bad;
		if (exp[i].sig == SIGSEGV) {
			if (rec[i].si_code == SEGV_MAPERR && rec[i].si_addr == FAULT_ADDR)
				continue;
		} else if (rec[i].si_code == SI_QUEUE &&
			   rec[i].si_value.sival_int == exp[i].val) {
			continue;
		}
bad:
		printf("# index %lld: got sig %d val %d, expected sig %d val %d\n",
		       first_index + i, rec[i].si_signo, rec[i].si_value.sival_int,
		       exp[i].sig, exp[i].val);
		return -1;
	}
	return 0;
}

/* One pread of @count records at @off must be exactly the model's window. */
static int check_window(int fd, const int *sigs, long long base,
			long long off, int count)
{
	static struct entry view[MAXQ];
	int n = model_view(sigs, view);
	int want = off >= n ? 0 : (n - off < count ? n - (int)off : count);
	ssize_t r;

	r = pread(fd, got, (size_t)count * SI_MAX_SIZE, base + off);
	if (r != (ssize_t)want * SI_MAX_SIZE) {
		printf("# pread at %lld, %d records: %zd bytes, expected %d records\n",
		       off, count, r, want);
		return -1;
	}
	return records_match(got, view + off, want, off);
}

/* Reads the whole queue in @batch-record preads, each checked. */
static int check_batched(int fd, const int *sigs, long long base, int batch,
			 long long stop)
{
	static struct entry view[MAXQ];
	int n = model_view(sigs, view);
	long long off;

	if (stop < 0 || stop > n)
		stop = n;
	for (off = 0; off < stop; off += batch) {
		int count = stop - off < batch ? (int)(stop - off) : batch;

		if (check_window(fd, sigs, base, off, count)) {
			printf("# batch %d at offset %lld\n", batch, off);
			return -1;
		}
	}
	return 0;
}

static int open_sigs(const int *sigs, int flags)
{
	return sfd_open_sigs(SFD_RAW | SFD_NONBLOCK | flags, sigs);
}

/* A new mask on an existing SFD_RAW fd. */
static int set_sigs(int fd, const int *sigs)
{
	sigset_t mask;

	sigemptyset(&mask);
	for (; *sigs; sigs++)
		sigaddset(&mask, *sigs);
	return sys_signalfd4(fd, &mask, KERNEL_SIGSET_SIZE, SFD_RAW);
}

FIXTURE(resume)
{
	int both[3];	/* SIGRTMIN, SIGRTMIN + 1 */
	int fd;		/* peeks both */
	long long base;
};

FIXTURE_VARIANT(resume)
{
	int private_queue;
};

FIXTURE_VARIANT_ADD(resume, shared)
{
	.private_queue = 0,
};

FIXTURE_VARIANT_ADD(resume, private)
{
	.private_queue = 1,
};

FIXTURE_SETUP(resume)
{
	int i;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_EQ(0, raise_sigpending(2 * MAXQ));
	self->both[0] = SIGRTMIN;
	self->both[1] = SIGRTMIN + 1;
	self->both[2] = 0;
	self->fd = open_sigs(self->both, 0);
	ASSERT_LE(0, self->fd);
	self->base = variant->private_queue ? PRIV : SHARED;
	m.n = 0;
	for (i = 0; i < NQ; i++)
		ASSERT_EQ(0, model_queue(variant->private_queue, SIGRTMIN + (i % 2), i))
			TH_LOG("queueing #%d: %s", i, strerror(errno));
}

FIXTURE_TEARDOWN(resume)
{
	close(self->fd);
}

TEST_F(resume, every_batch_size_reads_the_same_queue)
{
	static const int batches[] = { 1, 7, 63, 64, 65, 100, 1000, MAXQ };
	unsigned int b;

	for (b = 0; b < ARRAY_SIZE(batches); b++)
		ASSERT_EQ(0, check_batched(self->fd, self->both, self->base,
					   batches[b], -1))
			TH_LOG("batch %d", batches[b]);
	/* Twice the same window: the second resumes on the first's hint. */
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1234, 10));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1234, 10));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1244, 10));
}

/* read() dequeues SIGRTMIN entries from before the remembered index. */
TEST_F(resume, dequeue_before_the_hint)
{
	int rd = open_sigs(self->both, variant->private_queue ? SFD_PRIVATE : SFD_GROUP);
	siginfo_t deq[10];
	int i;

	ASSERT_LE(0, rd);
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, 1000));
	ASSERT_EQ(10 * SI_MAX_SIZE, read(rd, deq, sizeof(deq)));
	for (i = 0; i < 10; i++) {
		/* Lowest signal first, FIFO within it. */
		EXPECT_EQ(SIGRTMIN, deq[i].si_signo);
		EXPECT_EQ(2 * i, deq[i].si_value.sival_int);
		model_remove_if(deq[i].si_signo, deq[i].si_value.sival_int, 0);
	}
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1000, 100));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 990, 5));
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, -1));
	close(rd);
}

/* The remembered entry itself is dequeued. */
TEST_F(resume, dequeue_of_the_hinted_entry)
{
	int rd = open_sigs(self->both, variant->private_queue ? SFD_PRIVATE : SFD_GROUP);
	int i;

	ASSERT_LE(0, rd);
	/* Stop right before a SIGRTMIN entry, then dequeue up to and past it. */
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 50, 200));
	for (i = 0; i <= 101; i++) {
		ASSERT_EQ(SI_MAX_SIZE, read(rd, got, SI_MAX_SIZE));
		model_remove_if(got[0].si_signo, got[0].si_value.sival_int, 0);
	}
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 200, 50));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 100, 150));
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 64, -1));
	close(rd);
}

/* sigaction(SIG_IGN) flushes one signal's entries all along the queue. */
TEST_F(resume, ignored_signal_flushed_around_the_hint)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL };

	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, 1000));
	ASSERT_EQ(0, sigaction(SIGRTMIN + 1, &ign, NULL));
	ASSERT_EQ(0, sigaction(SIGRTMIN + 1, &dfl, NULL));
	model_remove_if(SIGRTMIN + 1, 0, 1);
	ASSERT_EQ(NQ / 2, m.n);
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1000, 100));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 400, 100));
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, -1));
}

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code == SEGV_MAPERR && si->si_addr == FAULT_ADDR)
		SIG_STORE(segv_seen, SIG_LOAD(segv_seen) + 1);
}

/*
 * A synchronous signal is taken out of the middle of the per-thread queue
 * by dequeue_synchronous_signal(), of the shared one by collect_signal().
 */
TEST_F(resume, synchronous_signal_taken_from_the_middle)
{
	const int sigs[] = { SIGRTMIN, SIGRTMIN + 1, SIGSEGV, 0 };
	struct sigaction sa = { .sa_sigaction = segv_handler, .sa_flags = SA_SIGINFO };
	int fd = open_sigs(sigs, 0), i;
	siginfo_t si;

	ASSERT_LE(0, fd);
	si_init(&si, SIGSEGV, SEGV_MAPERR);
	si.si_addr = FAULT_ADDR;
	ASSERT_EQ(0, variant->private_queue ?
		     sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), SIGSEGV, &si) :
		     sys_rt_sigqueueinfo(getpid(), SIGSEGV, &si));
	m.e[m.n++] = (struct entry){ SIGSEGV, 0 };
	for (i = NQ; i < NQ + 500; i++)
		ASSERT_EQ(0, model_queue(variant->private_queue, SIGRTMIN + (i % 2), i));
	ASSERT_EQ(0, check_batched(fd, sigs, self->base, 100, NQ - 100));
	/* The walk passes the fault and stops past it. */
	ASSERT_EQ(0, check_window(fd, sigs, self->base, NQ - 100, 200));
	ASSERT_EQ(SIGSEGV, got[100].si_signo);

	SIG_STORE(segv_seen, 0);
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	block_signal(SIGSEGV, SIG_UNBLOCK);
	block_signal(SIGSEGV, SIG_BLOCK);
	ASSERT_EQ(1, SIG_LOAD(segv_seen));
	model_remove_if(SIGSEGV, 0, 1);

	ASSERT_EQ(0, check_window(fd, sigs, self->base, NQ - 50, 100));
	ASSERT_EQ(0, check_window(fd, sigs, self->base, NQ + 100, 100));
	ASSERT_EQ(0, check_batched(fd, sigs, self->base, 100, -1));
	close(fd);
}

/* A walk with another mask counts other entries: no shortcut applies. */
TEST_F(resume, another_mask_other_indices)
{
	const int rtmin[] = { SIGRTMIN, 0 };
	int fd = open_sigs(rtmin, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, check_batched(fd, rtmin, self->base, 100, 500));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 500, 10));
	ASSERT_EQ(0, check_window(fd, rtmin, self->base, 500, 10));
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, 800));
	ASSERT_EQ(0, check_window(fd, rtmin, self->base, 600, 100));
	ASSERT_EQ(0, check_window(fd, rtmin, self->base, 1400, 200));
	/* The mask of an existing fd changes: its indices change too. */
	ASSERT_EQ(0, check_batched(fd, rtmin, self->base, 100, 1000));
	ASSERT_EQ(fd, set_sigs(fd, self->both));
	ASSERT_EQ(0, check_window(fd, self->both, self->base, 1000, 100));
	close(fd);
}

/* New entries go to the tail; offsets below the hint start from the head. */
TEST_F(resume, appends_and_offsets_below_the_hint)
{
	int i;

	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 100, 1000));
	for (i = NQ; i < NQ + 100; i++)
		ASSERT_EQ(0, model_queue(variant->private_queue, SIGRTMIN + (i % 2), i));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 1000, 100));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 500, 100));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, 0, 1));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, NQ + 50, 100));
	ASSERT_EQ(0, check_window(self->fd, self->both, self->base, NQ + 100, 1));
	ASSERT_EQ(0, check_batched(self->fd, self->both, self->base, 333, -1));
}

/*
 * The hint is left when a pread() ends, after its records were copied to
 * user space with the siglock dropped. An entry that leaves the queue in
 * that gap, before the entry the walk stopped at, moves that entry one
 * index down: the hint must not be left with the index counted before.
 *
 * F0..F63, V, F64.. in the shared queue; a pread of 64 records stops at V
 * (index 64) and blocks copying them out to a userfaultfd page; F0 is
 * dequeued meanwhile, so V is at 63 and F64 at 64 when the copy ends.
 */
struct blocked_pread {
	int fd;
	void *buf;
	ssize_t ret;
};

static void *blocked_pread_thread(void *arg)
{
	struct blocked_pread *bp = arg;

	bp->ret = pread(bp->fd, bp->buf, 64 * SI_MAX_SIZE, SHARED);
	return NULL;
}

TEST(hint_not_left_after_a_dequeue_during_the_copy_out)
{
	const int both[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	const int rtmin[] = { SIGRTMIN, 0 };
	long psz = sysconf(_SC_PAGESIZE);
	size_t len = 2 * (size_t)psz;	/* 64 records: 8 KiB */
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };
	struct uffdio_copy copy = { 0 };
	struct blocked_pread bp;
	struct uffd_msg msg;
	struct pollfd pfd;
	pthread_t thr;
	siginfo_t *rec = (siginfo_t *)got;
	void *src;
	int uffd, rd, i;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_EQ(0, raise_sigpending(1024));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, q_shared(SIGRTMIN, i));
	ASSERT_EQ(0, q_shared(SIGRTMIN + 1, 1000));
	for (i = 64; i < 100; i++)
		ASSERT_EQ(0, q_shared(SIGRTMIN, i));

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, uffd) TH_LOG("userfaultfd: %s (CONFIG_USERFAULTFD?)",
				  strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	bp.buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, bp.buf);
	src = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	memset(src, 0, len);
	reg.range.start = (uintptr_t)bp.buf;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

	bp.fd = open_sigs(both, 0);
	ASSERT_LE(0, bp.fd);
	rd = open_sigs(rtmin, SFD_GROUP);
	ASSERT_LE(0, rd);
	ASSERT_EQ(0, pthread_create(&thr, NULL, blocked_pread_thread, &bp));

	/* The reader has walked F0..F63, pinned V and faults copying out. */
	pfd.fd = uffd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000)) TH_LOG("the copy-out never faulted");
	ASSERT_EQ((ssize_t)sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	/* Another thread dequeues F0, before the pinned V. */
	ASSERT_EQ(SI_MAX_SIZE, read(rd, rec, SI_MAX_SIZE));
	ASSERT_EQ(SIGRTMIN, rec->si_signo);
	ASSERT_EQ(0, rec->si_value.sival_int);

	copy.dst = (uintptr_t)bp.buf;
	copy.src = (uintptr_t)src;
	copy.len = len;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	ASSERT_EQ(0, pthread_join(thr, NULL));
	ASSERT_EQ(64 * SI_MAX_SIZE, bp.ret);
	for (i = 0; i < 64; i++) {
		siginfo_t *r = (siginfo_t *)bp.buf + i;

		ASSERT_EQ(SIGRTMIN, r->si_signo);
		ASSERT_EQ(i, r->si_value.sival_int);
	}

	/* Index 64 is now F64; V moved to 63. */
	ASSERT_EQ(SI_MAX_SIZE, pread(bp.fd, rec, SI_MAX_SIZE, SHARED + 64));
	EXPECT_EQ(SIGRTMIN, rec->si_signo);
	EXPECT_EQ(64, rec->si_value.sival_int)
		TH_LOG("pread at 64 returned sig %d val %d: a stale hint",
		       rec->si_signo, rec->si_value.sival_int);
	ASSERT_EQ(SI_MAX_SIZE, pread(bp.fd, rec, SI_MAX_SIZE, SHARED + 63));
	EXPECT_EQ(SIGRTMIN + 1, rec->si_signo);
	EXPECT_EQ(1000, rec->si_value.sival_int);

	close(rd);
	close(bp.fd);
	munmap(src, len);
	munmap(bp.buf, len);
	close(uffd);
	flush_all_signals();
}

TEST_HARNESS_MAIN
