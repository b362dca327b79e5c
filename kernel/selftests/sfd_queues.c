// SPDX-License-Identifier: GPL-2.0
/*
 * SFD_PRIVATE reads only the calling thread's queue, SFD_GROUP only the
 * process-wide one, neither reads both (private first); both together are
 * refused (sfd_errors). poll() and blocking reads honour the same choice.
 * Checked with several threads, each with its own pending signals.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define NWORKERS 3

/* A thread that runs jobs on request, so a test can act "as" that thread. */
typedef long (*job_fn)(void *arg);

struct job {
	job_fn fn;
	void *arg;
};

struct worker {
	pthread_t thread;
	pid_t tid;
	int cmd[2];
	int res[2];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job j;
	long r;

	w->tid = sys_gettid();
	r = 0;
	if (write(w->res[1], &r, sizeof(r)) != sizeof(r))
		return NULL;
	while (read(w->cmd[0], &j, sizeof(j)) == sizeof(j)) {
		r = j.fn(j.arg);
		if (write(w->res[1], &r, sizeof(r)) != sizeof(r))
			break;
	}
	return NULL;
}

static int job_start(struct worker *w, job_fn fn, void *arg)
{
	struct job j = { fn, arg };

	return write(w->cmd[1], &j, sizeof(j)) == sizeof(j) ? 0 : -1;
}

/* Returns 0 and the job's result, or -1 if it did not finish in time. */
static int job_wait(struct worker *w, int timeout_ms, long *result)
{
	struct pollfd pfd = { .fd = w->res[0], .events = POLLIN };

	if (poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	return read(w->res[0], result, sizeof(*result)) == sizeof(*result) ? 0 : -1;
}

static long run_on(struct worker *w, job_fn fn, void *arg)
{
	long r = -1000;

	if (job_start(w, fn, arg) || job_wait(w, 30000, &r))
		return -1000;
	return r;
}

static int worker_start(struct worker *w)
{
	long r;

	if (pipe(w->cmd) || pipe(w->res))
		return -1;
	if (pthread_create(&w->thread, NULL, worker_main, w))
		return -1;
	return job_wait(w, 10000, &r);
}

static void worker_stop(struct worker *w)
{
	close(w->cmd[1]);
	pthread_join(w->thread, NULL);
	close(w->cmd[0]);
	close(w->res[0]);
	close(w->res[1]);
}

static int open_fd(int flags)
{
	int sigs[] = { SIGUSR1, SIGUSR2, 0, 0, 0 };

	sigs[2] = SIGRTMIN;
	sigs[3] = SIGRTMIN + 1;
	return sfd_open_sigs(flags | SFD_RAW, sigs);
}

/* Opens a fd with the given flags and dequeues everything it can. */
struct read_job {
	int flags;
	siginfo_t rec[64];
	long n;
};

static long job_read_all(void *arg)
{
	struct read_job *rj = arg;
	int fd = open_fd(rj->flags | SFD_NONBLOCK);

	if (fd < 0)
		return -1;
	rj->n = dequeue_all(fd, rj->rec, 64);
	close(fd);
	return rj->n;
}

/* Blocking read of one record on a fd opened with the given flags. */
static long job_blocking_read(void *arg)
{
	struct read_job *rj = arg;
	int fd = open_fd(rj->flags);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = read(fd, rj->rec, SI_MAX_SIZE);
	close(fd);
	rj->n = r / SI_MAX_SIZE;
	return r;
}

struct poll_job {
	int flags;
	int revents;
};

static long job_poll(void *arg)
{
	struct poll_job *pj = arg;
	struct pollfd pfd = { .events = POLLIN };
	int r;

	pfd.fd = open_fd(pj->flags | SFD_NONBLOCK);
	if (pfd.fd < 0)
		return -1;
	r = poll(&pfd, 1, 0);
	close(pfd.fd);
	pj->revents = r > 0 ? pfd.revents : 0;
	return r;
}

static long job_count_private(void *arg)
{
	siginfo_t rec[64];
	int fd = open_fd(SFD_NONBLOCK);
	ssize_t r;

	(void)arg;
	if (fd < 0)
		return -1;
	r = sfd_peek(fd, rec, 64, SFD_PER_THREAD_QUEUE_OFFSET);
	close(fd);
	return r < 0 ? r : r / SI_MAX_SIZE;
}

FIXTURE(queues)
{
	struct worker w[NWORKERS];
};

FIXTURE_SETUP(queues)
{
	int i;

	block_test_signals(SIG_BLOCK);
	flush_all_signals();
	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	for (i = 0; i < NWORKERS; i++)
		ASSERT_EQ(0, worker_start(&self->w[i]));
}

FIXTURE_TEARDOWN(queues)
{
	int i;

	for (i = 0; i < NWORKERS; i++)
		worker_stop(&self->w[i]);
}

static int to_thread(pid_t tid, int sig, int val)
{
	siginfo_t si;

	si_init(&si, sig, SI_QUEUE);
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = val;
	return sys_rt_tgsigqueueinfo(getpid(), tid, sig, &si);
}

/* Worker i gets RTMIN values 100i, 100i+1; the process gets 900, SIGUSR1. */
static void queue_per_thread(struct __test_metadata *_metadata,
			     struct _test_data_queues *self)
{
	int i;

	for (i = 0; i < NWORKERS; i++) {
		ASSERT_EQ(0, to_thread(self->w[i].tid, SIGRTMIN, 100 * i));
		ASSERT_EQ(0, to_thread(self->w[i].tid, SIGRTMIN, 100 * i + 1));
	}
	ASSERT_EQ(0, q_shared(SIGRTMIN, 900));
	ASSERT_EQ(0, kill(getpid(), SIGUSR1));
}

static long shared_count(void)
{
	siginfo_t rec[64];
	int fd = open_fd(SFD_NONBLOCK);
	ssize_t r;

	if (fd < 0)
		return -1;
	r = sfd_peek(fd, rec, 64, SFD_SHARED_QUEUE_OFFSET);
	close(fd);
	return r < 0 ? r : r / SI_MAX_SIZE;
}

TEST_F(queues, private_reads_only_the_callers_queue)
{
	struct read_job rj;
	int i;

	queue_per_thread(_metadata, self);
	for (i = 0; i < NWORKERS; i++) {
		memset(&rj, 0, sizeof(rj));
		rj.flags = SFD_PRIVATE;
		ASSERT_EQ(2, run_on(&self->w[i], job_read_all, &rj)) TH_LOG("worker %d", i);
		EXPECT_EQ(100 * i, rj.rec[0].si_value.sival_int);
		EXPECT_EQ(100 * i + 1, rj.rec[1].si_value.sival_int);
		EXPECT_EQ(SI_QUEUE, rj.rec[0].si_code);
		/* Nothing of the process-wide queue was touched. */
		EXPECT_EQ(2, shared_count());
	}
	/* The main thread's own private queue is empty: SFD_PRIVATE gets 0. */
	memset(&rj, 0, sizeof(rj));
	rj.flags = SFD_PRIVATE;
	EXPECT_EQ(0, job_read_all(&rj));
	EXPECT_EQ(2, shared_count());
}

TEST_F(queues, group_reads_only_the_process_queue)
{
	struct read_job rj;
	int i;

	queue_per_thread(_metadata, self);
	memset(&rj, 0, sizeof(rj));
	rj.flags = SFD_GROUP;
	ASSERT_EQ(2, run_on(&self->w[1], job_read_all, &rj));
	EXPECT_EQ(SIGUSR1, rj.rec[0].si_signo);
	EXPECT_EQ(SI_USER, rj.rec[0].si_code);
	EXPECT_EQ(SIGRTMIN, rj.rec[1].si_signo);
	EXPECT_EQ(900, rj.rec[1].si_value.sival_int);
	EXPECT_EQ(0, shared_count());
	for (i = 0; i < NWORKERS; i++)
		EXPECT_EQ(2, run_on(&self->w[i], job_count_private, NULL))
			TH_LOG("worker %d lost private signals", i);
}

static void both_queues_private_first(struct __test_metadata *_metadata,
				      struct _test_data_queues *self, int flags)
{
	struct read_job rj;

	/* A lower-numbered shared signal still comes after the private one. */
	ASSERT_EQ(0, to_thread(self->w[0].tid, SIGRTMIN + 1, 1));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	memset(&rj, 0, sizeof(rj));
	rj.flags = flags;
	ASSERT_EQ(2, run_on(&self->w[0], job_read_all, &rj));
	EXPECT_EQ(SIGRTMIN + 1, rj.rec[0].si_signo);
	EXPECT_EQ(1, rj.rec[0].si_value.sival_int);
	EXPECT_EQ(SIGRTMIN, rj.rec[1].si_signo);
	EXPECT_EQ(2, rj.rec[1].si_value.sival_int);
}

TEST_F(queues, neither_flag_reads_both_private_first)
{
	both_queues_private_first(_metadata, self, 0);
}

static int poll_as(struct worker *w, int flags)
{
	struct poll_job pj = { flags, 0 };

	if (w ? run_on(w, job_poll, &pj) < 0 : job_poll(&pj) < 0)
		return -1;
	return pj.revents & POLLIN;
}

TEST_F(queues, poll_honours_the_queue_choice)
{
	struct worker *w0 = &self->w[0], *w1 = &self->w[1];
	/* Neither flag: both queues. */
	const int both = 0;

	/* Only the process-wide queue has a signal. */
	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	EXPECT_EQ(0, poll_as(w0, SFD_PRIVATE));
	EXPECT_EQ(POLLIN, poll_as(w0, SFD_GROUP));
	EXPECT_EQ(POLLIN, poll_as(w0, both));
	flush_signal(SIGRTMIN);

	/* Only worker 0's queue has a signal. */
	ASSERT_EQ(0, to_thread(w0->tid, SIGRTMIN + 1, 2));
	EXPECT_EQ(POLLIN, poll_as(w0, SFD_PRIVATE));
	EXPECT_EQ(0, poll_as(w1, SFD_PRIVATE));
	EXPECT_EQ(0, poll_as(w0, SFD_GROUP));
	EXPECT_EQ(0, poll_as(w1, both));
	EXPECT_EQ(POLLIN, poll_as(w0, both));
	EXPECT_EQ(0, poll_as(NULL, SFD_PRIVATE));
}

TEST_F(queues, blocking_private_read_ignores_shared_arrivals)
{
	struct worker *w2 = &self->w[2];
	struct read_job rj;
	long r;

	memset(&rj, 0, sizeof(rj));
	rj.flags = SFD_PRIVATE;
	ASSERT_EQ(0, job_start(w2, job_blocking_read, &rj));
	usleep(100000);
	ASSERT_EQ(0, q_shared(SIGRTMIN, 1));
	ASSERT_EQ(0, to_thread(self->w[0].tid, SIGRTMIN, 2));
	/* Neither the process queue nor another thread's queue wakes it. */
	EXPECT_EQ(-1, job_wait(w2, 300, &r));
	ASSERT_EQ(0, to_thread(w2->tid, SIGRTMIN, 3));
	ASSERT_EQ(0, job_wait(w2, 10000, &r));
	EXPECT_EQ(SI_MAX_SIZE, r);
	EXPECT_EQ(3, rj.rec[0].si_value.sival_int);
	EXPECT_EQ(1, shared_count());
}

TEST_F(queues, blocking_group_read_ignores_private_arrivals)
{
	struct worker *w2 = &self->w[2];
	struct read_job rj;
	long r;

	memset(&rj, 0, sizeof(rj));
	rj.flags = SFD_GROUP;
	ASSERT_EQ(0, job_start(w2, job_blocking_read, &rj));
	usleep(100000);
	ASSERT_EQ(0, to_thread(w2->tid, SIGRTMIN, 1));
	EXPECT_EQ(-1, job_wait(w2, 300, &r));
	ASSERT_EQ(0, q_shared(SIGRTMIN, 2));
	ASSERT_EQ(0, job_wait(w2, 10000, &r));
	EXPECT_EQ(SI_MAX_SIZE, r);
	EXPECT_EQ(2, rj.rec[0].si_value.sival_int);
	EXPECT_EQ(1, run_on(w2, job_count_private, NULL));
}

TEST_HARNESS_MAIN
