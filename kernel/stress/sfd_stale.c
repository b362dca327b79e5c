// SPDX-License-Identifier: GPL-2.0
/*
 * sfd_stale: drives every SIGQUEUE_STALE path of sigqueue_peek() (patch 5)
 * deterministically.
 *
 * A pread() of 100 records copies its first batch of 64 to user space with
 * the entry it will resume at (index 64) pinned.  The user buffer's second
 * page is registered with userfaultfd, so the copy blocks right there, with
 * the pin held, until this program resolves the fault.  Meanwhile the test
 * takes the pinned entry away in every way the kernel can:
 *	- dequeued by a read(), flushed by sigaction(SIG_IGN),
 *	- a posix timer's preallocated entry dequeued (STALE but PREALLOC),
 *	  then its timer deleted (sigqueue_free() of a pinned entry), or
 *	  deleted while still queued, or re-queued by its periodic timer
 *	  while still pinned and stale,
 *	- pinned by two readers at once,
 *	- in the reader's own per-thread queue,
 *	- the reader killed while it holds the pin.
 * After each, the pread must return exactly the records of its first
 * batch (a short read, never a shifted one) or all of them when the entry
 * stayed, and the queue must hold exactly what is left.  On the debug
 * kernel KASAN checks that the deferred frees free once and in time.
 *
 * Needs CONFIG_USERFAULTFD (the debug kernel has it); without it every
 * test is skipped.  TAP on stdout.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>

#include "stress_common.h"

#define PAGE		4096
#define NPAGES		5
#define NREC		100
#define BATCH		64	/* SIGQUEUE_PEEK_BATCH */
#define FAULT_WAIT_MS	20000

static int S_VICT, S_FILL;
static pid_t self_pid;

struct reader {
	pthread_t th;
	int fd;
	off_t off;
	uint8_t *buf;
	ssize_t n;
	int err;
	pid_t tid;
	volatile int go;
};

struct blocked {
	int uffd;
	uint8_t *mem[2];
	struct reader rd[2];
	int nreaders;
};

static int sfd(int flags, int s1, int s2)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, s1);
	if (s2)
		sigaddset(&m, s2);
	return sys_signalfd4(-1, &m, KERNEL_SIGSET_SIZE, flags | SFD_RAW | SFD_NONBLOCK);
}

static int queue_rec(int sig, uint32_t seq, pid_t tid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = self_pid;
	si.si_value.sival_int = (int)seq;
	if (tid)
		return sys_rt_tgsigqueueinfo(self_pid, tid, sig, &si);
	return sys_rt_sigqueueinfo(self_pid, sig, &si);
}

static int is_pending(int sig)
{
	sigset_t p;

	sigpending(&p);
	return sigismember(&p, sig);
}

static int wait_pending(int sig, int want)
{
	double end = now_s() + 10;

	while (now_s() < end) {
		if (is_pending(sig) == want)
			return 0;
		usleep(500);
	}
	return -1;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	r->tid = sys_gettid();
	while (!r->go)
		usleep(200);
	r->n = pread(r->fd, r->buf, NREC * SI_MAX_SIZE, r->off);
	r->err = r->n < 0 ? errno : 0;
	return NULL;
}

static int uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A buffer whose first page is present and the rest fault to @uffd. */
static uint8_t *trap_buffer(int uffd)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	uint8_t *mem = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	memset(mem, 0xa5, PAGE);
	reg.range.start = (uintptr_t)mem + PAGE;
	reg.range.len = (NPAGES - 1) * PAGE;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		munmap(mem, NPAGES * PAGE);
		return NULL;
	}
	return mem;
}

static int wait_faults(int uffd, int n)
{
	struct uffd_msg msg;
	struct pollfd p = { .fd = uffd, .events = POLLIN };

	while (n > 0) {
		if (poll(&p, 1, FAULT_WAIT_MS) != 1)
			return -1;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event == UFFD_EVENT_PAGEFAULT)
			n--;
	}
	return 0;
}

static int resolve(int uffd, uint8_t *mem)
{
	static uint8_t zero[(NPAGES - 1) * PAGE] __attribute__((aligned(PAGE)));
	struct uffdio_copy c = {
		.dst = (uintptr_t)mem + PAGE,
		.src = (uintptr_t)zero,
		.len = (NPAGES - 1) * PAGE,
	};

	return ioctl(uffd, UFFDIO_COPY, &c);
}

/* Starts @nreaders preads of the shared queue, waits until all block. */
static int block_readers(struct blocked *b, int nreaders)
{
	int i;

	b->nreaders = nreaders;
	b->uffd = uffd_open();
	if (b->uffd < 0)
		return -1;
	for (i = 0; i < nreaders; i++) {
		struct reader *r = &b->rd[i];

		b->mem[i] = trap_buffer(b->uffd);
		if (!b->mem[i])
			return -1;
		r->buf = b->mem[i];
		r->off = SFD_SHARED_QUEUE_OFFSET;
		r->fd = sfd(0, S_FILL, S_VICT);
		r->go = 1;
		if (pthread_create(&r->th, NULL, reader_main, r))
			return -1;
	}
	return wait_faults(b->uffd, nreaders);
}

static void release_readers(struct blocked *b, int from)
{
	int i;

	for (i = from; i < b->nreaders; i++) {
		resolve(b->uffd, b->mem[i]);
		pthread_join(b->rd[i].th, NULL);
	}
}

static void free_blocked(struct blocked *b)
{
	int i;

	for (i = 0; i < b->nreaders; i++) {
		close(b->rd[i].fd);
		munmap(b->mem[i], NPAGES * PAGE);
	}
	close(b->uffd);
}

/*
 * Checks one reader's records: fills 0..63, then (all == 1) the victim at
 * 64 and fills 64..98.  Returns NULL or what is wrong.
 */
static const char *check_read(const struct reader *r, int all, int victim_code)
{
	int i, want = all ? NREC : BATCH, fill = 0;

	if (r->n < 0)
		return strerror(r->err);
	if (r->n != want * SI_MAX_SIZE)
		return all ? "not every record (the pinned entry stayed)" :
			     "not exactly the first batch (short read expected)";
	for (i = 0; i < want; i++) {
		const siginfo_t *si = (const siginfo_t *)(r->buf + i * SI_MAX_SIZE);

		if (i == BATCH && all) {
			if (si->si_signo != S_VICT || si->si_code != victim_code)
				return "record 64 is not the pinned entry";
			continue;
		}
		if (si->si_signo != S_FILL || si->si_value.sival_int != fill++)
			return "a record out of place (shifted read?)";
	}
	return NULL;
}

/* Reads the whole queue and checks fills 0..98 and the victim's place. */
static const char *check_queue(int per_thread, int victim_at)
{
	static uint8_t buf[(NREC + 8) * SI_MAX_SIZE];
	off_t off = per_thread ? SFD_PER_THREAD_QUEUE_OFFSET : SFD_SHARED_QUEUE_OFFSET;
	int fd = sfd(0, S_FILL, S_VICT), i, fill = 0, want;
	ssize_t n = pread(fd, buf, sizeof(buf), off);

	close(fd);
	want = NREC - 1 + (victim_at >= 0);
	if (n != want * SI_MAX_SIZE)
		return "the queue does not hold what is left";
	for (i = 0; i < want; i++) {
		const siginfo_t *si = (const siginfo_t *)(buf + i * SI_MAX_SIZE);

		if (i == victim_at) {
			if (si->si_signo != S_VICT)
				return "the victim is not where it belongs";
			continue;
		}
		if (si->si_signo != S_FILL || si->si_value.sival_int != fill++)
			return "the fills are not intact";
	}
	return NULL;
}

static void drain(int per_thread)
{
	uint8_t buf[64 * SI_MAX_SIZE];
	int fd = sfd(per_thread ? SFD_PRIVATE : SFD_GROUP, S_FILL, S_VICT);

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* Fills a queue: 64 fills, the victim (record or timer), 35 fills. */
static int fill_queue(pid_t tid, int timer_kind, timer_t *timer)
{
	struct itimerspec its = { .it_value = { 0, 1000000 } };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL };
	int i;

	for (i = 0; i < BATCH; i++)
		if (queue_rec(S_FILL, (uint32_t)i, tid))
			return -1;
	if (timer_kind) {
		sev.sigev_signo = S_VICT;
		if (timer_create(CLOCK_MONOTONIC, &sev, timer))
			return -1;
		if (timer_kind == 2)
			its.it_interval.tv_nsec = 2000000;
		if (timer_settime(*timer, 0, &its, NULL) || wait_pending(S_VICT, 1))
			return -1;
	} else if (queue_rec(S_VICT, 9999, tid)) {
		return -1;
	}
	for (i = BATCH; i < NREC - 1; i++)
		if (queue_rec(S_FILL, (uint32_t)i, tid))
			return -1;
	return 0;
}

static int take_victim(void)
{
	uint8_t buf[SI_MAX_SIZE];
	int fd = sfd(SFD_GROUP, S_VICT, 0);
	ssize_t n = read(fd, buf, sizeof(buf));

	close(fd);
	return n == SI_MAX_SIZE ? 0 : -1;
}

static void ignore_victim(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, dfl = { .sa_handler = SIG_DFL };

	sigaction(S_VICT, &ign, NULL);
	sigaction(S_VICT, &dfl, NULL);
}

enum action {
	A_DEQUEUE, A_IGNORE, A_TIMER_DEQUEUE, A_TIMER_DEQUEUE_DELETE,
	A_TIMER_DELETE, A_TIMER_REQUEUE,
};

struct scenario {
	const char *name;
	enum action action;
	int timer;		/* 0 record, 1 one-shot, 2 periodic */
	int readers;
	int all;		/* the read gets every record */
	int victim_at;		/* where the victim is afterwards, -1 gone */
};

static const struct scenario scenarios[] = {
	{ "pinned entry dequeued by read()", A_DEQUEUE, 0, 1, 0, -1 },
	{ "pinned entry flushed by SIG_IGN", A_IGNORE, 0, 1, 0, -1 },
	{ "pinned timer entry dequeued (STALE|PREALLOC), timer deleted after",
	  A_TIMER_DEQUEUE, 1, 1, 0, -1 },
	{ "pinned timer entry dequeued and its timer deleted while pinned",
	  A_TIMER_DEQUEUE_DELETE, 1, 1, 0, -1 },
	{ "timer deleted while its queued entry is pinned", A_TIMER_DELETE, 1, 1, 1, 64 },
	{ "pinned timer entry dequeued and requeued by its periodic timer",
	  A_TIMER_REQUEUE, 2, 1, 0, NREC - 1 },
	{ "entry pinned by two readers, then dequeued", A_DEQUEUE, 0, 2, 0, -1 },
	{ "timer entry pinned by two readers, dequeued, timer deleted",
	  A_TIMER_DEQUEUE_DELETE, 1, 2, 0, -1 },
};

static int do_action(enum action a, timer_t timer, int *deleted)
{
	switch (a) {
	case A_DEQUEUE:
	case A_TIMER_DEQUEUE:
		return take_victim();
	case A_IGNORE:
		ignore_victim();
		return is_pending(S_VICT) ? -1 : 0;
	case A_TIMER_DEQUEUE_DELETE:
		if (take_victim())
			return -1;
		*deleted = 1;
		return timer_delete(timer);
	case A_TIMER_DELETE:
		*deleted = 1;
		return timer_delete(timer);
	case A_TIMER_REQUEUE:
		if (take_victim())
			return -1;
		/* Back at the tail, still pinned and marked stale. */
		if (wait_pending(S_VICT, 1))
			return -1;
		*deleted = 1;
		return timer_delete(timer);
	}
	return -1;
}

static void run_scenario(const struct scenario *s)
{
	const char *why = NULL;
	struct blocked b = { 0 };
	timer_t timer = 0;
	int deleted = 0, i;

	if (fill_queue(0, s->timer, &timer)) {
		tap_result(0, "%s: could not fill the queue: %s", s->name, strerror(errno));
		drain(0);
		return;
	}
	if (block_readers(&b, s->readers)) {
		why = "the pread never blocked in its copy to user space";
	} else if (do_action(s->action, timer, &deleted)) {
		why = "could not take the pinned entry away";
	}
	/* The first reader goes on while the second still holds its pin. */
	release_readers(&b, 0);
	for (i = 0; !why && i < s->readers; i++)
		why = check_read(&b.rd[i], s->all, SI_TIMER);
	if (!why && s->timer && !s->all && s->victim_at < 0 && !deleted) {
		timer_delete(timer);
		deleted = 1;
	}
	if (!why)
		why = check_queue(0, s->victim_at);
	if (s->timer && !deleted)
		timer_delete(timer);
	drain(0);
	free_blocked(&b);
	tap_result(!why, "%s%s%s", s->name, why ? ": " : "", why ? why : "");
}

/* The reader's own queue: only SIG_IGN can take an entry from outside. */
static void run_per_thread(void)
{
	struct blocked b = { .nreaders = 1 };
	struct reader *r = &b.rd[0];
	const char *why = NULL;
	timer_t unused;

	r->fd = sfd(0, S_FILL, S_VICT);
	r->off = SFD_PER_THREAD_QUEUE_OFFSET;
	b.uffd = uffd_open();
	b.mem[0] = b.uffd >= 0 ? trap_buffer(b.uffd) : NULL;
	r->buf = b.mem[0];
	if (!r->buf || pthread_create(&r->th, NULL, reader_main, r)) {
		tap_result(0, "per-thread queue: setup failed");
		return;
	}
	while (!__atomic_load_n(&r->tid, __ATOMIC_ACQUIRE))
		usleep(200);
	if (fill_queue(r->tid, 0, &unused))
		why = "could not fill the reader's queue";
	r->go = 1;
	if (!why && wait_faults(b.uffd, 1))
		why = "the pread never blocked";
	if (!why)
		ignore_victim();
	release_readers(&b, 0);
	if (!why)
		why = check_read(r, 0, SI_QUEUE);
	free_blocked(&b);
	tap_result(!why, "pinned entry of the reader's own queue flushed by SIG_IGN%s%s",
		   why ? ": " : "", why ? why : "");
}

/*
 * A walk leaves a resume hint (entry, index, mask) where it stopped ("signal:
 * let a queue peek resume where the previous one stopped"). The walk takes
 * one copy of the fd's mask when it starts; were it to read the mask
 * again between batches, a signalfd4() mask change there would make it
 * count part of the queue under one mask and part under the other, and
 * leave a hint with the new mask and an index counted under the old one.
 * Queue Y0 X0 Y1 X1 ... Y99 X99, fd mask {X, Y}, a pread of 100 records
 * blocked after its first batch; mask changed to {X}; then a pread at
 * X-index 100 (one past the last X) must return nothing.
 */
static void run_mask_change(void)
{
	struct blocked b = { .nreaders = 1 };
	struct reader *r = &b.rd[0];
	uint8_t rec[SI_MAX_SIZE];
	const siginfo_t *si = (const siginfo_t *)rec;
	const char *why = NULL;
	ssize_t n = -1;
	sigset_t only_x;
	int i;

	for (i = 0; i < NREC && !why; i++)
		if (queue_rec(S_VICT, (uint32_t)i, 0) || queue_rec(S_FILL, (uint32_t)i, 0))
			why = "could not fill the queue";
	r->fd = sfd(0, S_FILL, S_VICT);
	r->off = SFD_SHARED_QUEUE_OFFSET;
	r->go = 1;
	b.uffd = uffd_open();
	b.mem[0] = b.uffd >= 0 ? trap_buffer(b.uffd) : NULL;
	r->buf = b.mem[0];
	if (why || !r->buf || pthread_create(&r->th, NULL, reader_main, r)) {
		tap_result(0, "mask change during a walk: setup failed");
		drain(0);
		return;
	}
	if (wait_faults(b.uffd, 1))
		why = "the pread never blocked";
	sigemptyset(&only_x);
	sigaddset(&only_x, S_FILL);
	if (!why && sys_signalfd4(r->fd, &only_x, KERNEL_SIGSET_SIZE, SFD_RAW) != r->fd)
		why = "signalfd4 mask change failed";
	release_readers(&b, 0);
	if (!why) {
		n = pread(r->fd, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET + NREC);
		if (n != 0)
			why = "a pread one past the last selected entry returned a record";
	}
	if (!why) {
		n = pread(r->fd, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET + NREC - 1);
		if (n != SI_MAX_SIZE || si->si_signo != S_FILL ||
		    si->si_value.sival_int != NREC - 1)
			why = "the last selected entry is not at its index";
	}
	if (why && n == SI_MAX_SIZE)
		tap_diag("mask change: got signal %d value %d", si->si_signo,
			 si->si_value.sival_int);
	drain(0);
	free_blocked(&b);
	tap_result(!why, "a mask change during a walk leaves no wrong resume hint%s%s",
		   why ? ": " : "", why ? why : "");
}

/* The user's queued-signal count, SigQ in /proc/self/status; -1 if unknown. */
static long sigq_now(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (n < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "SigQ:\t%ld/", &n) != 1)
			n = -1;
	fclose(f);
	return n;
}

/*
 * Every signal is blocked here, so a child's death leaves a SIGCHLD queued
 * (and counted in SigQ): take it before counting.
 */
static void take_sigchld(void)
{
	const struct timespec zero = { 0, 0 };
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
}

/* SigQ once it is back at @base, bounded by about 2 s; the last value seen. */
static long sigq_settle(long base)
{
	long n;
	int i;

	take_sigchld();
	n = sigq_now();
	for (i = 0; i < 100 && n != base; i++) {
		usleep(20000);
		take_sigchld();
		n = sigq_now();
	}
	return n;
}

/*
 * The reader is killed while it holds the pin (and the entry it pins was
 * dequeued): the exit path must unpin and free it exactly once, which
 * shows as the user's SigQ back at its count from before the child (a
 * leak leaves it higher, a double free lower).
 */
static void run_killed(void)
{
	int p[2], status = 0;
	long base, after = -1;
	pid_t child;
	char c = 0;

	take_sigchld();
	base = sigq_now();
	if (base < 0 || pipe(p)) {
		tap_result(0, "killed reader: pipe or SigQ");
		return;
	}
	child = fork();
	if (child == 0) {
		struct blocked b = { 0 };
		timer_t t;

		self_pid = getpid();
		if (fill_queue(0, 1, &t) || block_readers(&b, 1) ||
		    take_victim())
			_exit(1);
		c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(2);
	}
	close(p[1]);
	if (read(p[0], &c, 1) == 1 && c == 1)
		kill(child, SIGKILL);
	else
		kill(child, SIGKILL), c = 0;
	waitpid(child, &status, 0);
	close(p[0]);
	tap_result(c == 1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "reader killed while it pins a dequeued timer entry (status %#x)", status);
	if (c == 1)
		after = sigq_settle(base);
	tap_result(c == 1 && after == base,
		   "killed reader: SigQ back at its baseline (%ld, now %ld)", base, after);
}

int main(void)
{
	const int n = (int)(sizeof(scenarios) / sizeof(scenarios[0]));
	sigset_t all;
	int uffd, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tap_skip_all_if_missing("sfd_stale"))
		return 0;
	uffd = uffd_open();
	if (uffd < 0) {
		printf("TAP version 13\n1..0 # SKIP sfd_stale: no userfaultfd (%s); "
		       "the debug kernel has CONFIG_USERFAULTFD\n", strerror(errno));
		return 0;
	}
	close(uffd);
	self_pid = getpid();
	S_VICT = SIGRTMIN + 1;
	S_FILL = SIGRTMIN + 2;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	tap_plan(n + 4);
	for (i = 0; i < n; i++)
		run_scenario(&scenarios[i]);
	run_per_thread();
	run_mask_change();
	run_killed();
	return tap_failed ? 1 : 0;
}
