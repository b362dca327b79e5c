// SPDX-License-Identifier: GPL-2.0
/*
 * execve() while another thread of the process has left a resume hint in,
 * or holds a pin on, the process-wide queue.
 *
 * A pread() walk pins the entry it will resume at while it copies out with
 * the siglock dropped (sigqueue_peek()), and leaves the place it stopped at
 * as a hint in struct sigpending when it ends (sigqueue_peek_end()). An
 * execve() by another thread kills the walker in de_thread(): a walker
 * blocked in its copy-out must still let go of its pin, and neither the
 * hint nor the pin may cost the new image anything. Pending signals survive
 * execve(), so after it:
 *
 *  - the process-wide queue holds exactly the records it held (the one
 *    taken off while pinned excepted), in order, byte for byte what was
 *    sent; the exec'ing thread's own queue keeps its records; the killed
 *    thread's own queue is gone;
 *  - SigQ in /proc/self/status is the baseline plus exactly those records,
 *    and the baseline again once they are all dequeued: nothing leaked,
 *    not the killed thread's queue, not a pinned entry dequeued meanwhile;
 *  - a peek from offset 0 and one at the old hint's index both read the
 *    right records, and a dequeue returns what the peek showed.
 *
 * The test forks a process that sets this up and execs /proc/self/exe with
 * a marker argument; the new image checks and reports by its exit status.
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

#define PRIV		SFD_PER_THREAD_QUEUE_OFFSET
#define SHARED		SFD_SHARED_QUEUE_OFFSET
#define EXEC_MARK	"--sfd-exec-pin-check"

#define NSH		100	/* process-wide entries */
#define VPOS		64	/* where a 64-record walk stops (hint or pin) */
#define NEX		5	/* on the exec'ing thread's own queue */
#define NHO		7	/* on the killed thread's own queue */
#define MAXREC		256

/* Shared entry i: SIGRTMIN, except SIGRTMIN + 1 at VPOS; value 1000 + i */
static int sh_sig(int i)
{
	return i == VPOS ? SIGRTMIN + 1 : SIGRTMIN;
}

#define SH_VAL(i)	(1000 + (i))
#define EX_VAL(i)	(5000 + (i))
#define HO_VAL(i)	(6000 + (i))
#define PSIG		(SIGRTMIN + 2)

/* The SI_QUEUE record q_shared()/q_private() queue, as a raw read shows it */
static void expected_record(siginfo_t *si, int sig, int val)
{
	si_init(si, sig, SI_QUEUE);
	si->si_pid = getpid();
	si->si_uid = getuid();
	si->si_value.sival_int = val;
}

/* ---- after the exec: the new image checks the queues ---------------- */

static siginfo_t exp_sh[MAXREC], exp_pr[MAXREC], got_sh[MAXREC], got_pr[MAXREC];
static siginfo_t deq[MAXREC];

static int cmp_records(const char *what, const siginfo_t *exp,
		       const siginfo_t *got, int n, int first)
{
	int i;

	for (i = 0; i < n; i++) {
		char name[64];

		snprintf(name, sizeof(name), "%s index %d", what, first + i);
		if (siginfo_cmp(name, &exp[i], &got[i]))
			return -1;
	}
	return 0;
}

/* Returns the exit status: 0 when everything held, else the failed step. */
static int exec_check(long base, int v_removed)
{
	const int sigs[] = { SIGRTMIN, SIGRTMIN + 1, PSIG, 0 };
	const int both[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	int nsh = 0, i, fd, rd;
	ssize_t n;
	long q;

	for (i = 0; i < NSH; i++)
		if (!(v_removed && i == VPOS))
			expected_record(&exp_sh[nsh++], sh_sig(i), SH_VAL(i));
	for (i = 0; i < NEX; i++)
		expected_record(&exp_pr[i], PSIG, EX_VAL(i));

	q = sigq_count();
	if (q != base + nsh + NEX) {
		printf("# after exec: SigQ %ld, expected %ld (baseline %ld + %d + %d)\n",
		       q, base + nsh + NEX, base, nsh, NEX);
		return 1;
	}
	/*
	 * First a window at the old hint's index, with the mask of the fd
	 * that left it (the only walk a left hint can shortcut), then the
	 * whole queues from offset 0.
	 */
	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, both);
	if (fd < 0) {
		printf("# after exec: signalfd4: %s\n", strerror(errno));
		return 2;
	}
	n = sfd_peek(fd, got_sh, 10, SHARED + VPOS);
	if (n != 10 * SI_MAX_SIZE ||
	    cmp_records("window at the hint", &exp_sh[VPOS], got_sh, 10, VPOS)) {
		printf("# after exec: pread at %d returned %zd\n", VPOS, n);
		return 5;
	}
	close(fd);
	fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, sigs);
	if (fd < 0) {
		printf("# after exec: signalfd4: %s\n", strerror(errno));
		return 2;
	}
	n = peek_all(fd, SHARED, got_sh, MAXREC, 64);
	if (n != nsh) {
		printf("# after exec: %zd records in the shared queue, expected %d\n",
		       n, nsh);
		return 3;
	}
	if (cmp_records("shared", exp_sh, got_sh, nsh, 0))
		return 3;
	n = peek_all(fd, PRIV, got_pr, MAXREC, 64);
	if (n != NEX || cmp_records("private", exp_pr, got_pr, NEX, 0)) {
		printf("# after exec: %zd records in the private queue, expected %d\n",
		       n, NEX);
		return 4;
	}
	/* The head again, after walks that left hints of their own */
	n = sfd_peek(fd, got_sh, 1, SHARED);
	if (n != SI_MAX_SIZE || cmp_records("head", exp_sh, got_sh, 1, 0))
		return 6;
	close(fd);

	/* Dequeue everything: what the peek showed, and every charge back */
	rd = sfd_open_sigs(SFD_RAW | SFD_GROUP | SFD_NONBLOCK, sigs);
	n = rd < 0 ? -1 : dequeue_all(rd, deq, MAXREC);
	if (n < 0 || match_dequeue_to_peek(exp_sh, nsh, deq, (size_t)n))
		return 7;
	close(rd);
	rd = sfd_open_sigs(SFD_RAW | SFD_PRIVATE | SFD_NONBLOCK, sigs);
	n = rd < 0 ? -1 : dequeue_all(rd, deq, MAXREC);
	if (n < 0 || match_dequeue_to_peek(exp_pr, NEX, deq, (size_t)n))
		return 8;
	close(rd);
	q = sigq_count();
	if (q != base) {
		printf("# after exec and dequeue: SigQ %ld, baseline %ld: %ld leaked\n",
		       q, base, q - base);
		return 9;
	}
	return 0;
}

/* ---- before the exec ------------------------------------------------- */

struct plan {
	int holder_is_leader;	/* else a second thread holds, the leader execs */
	int pin;		/* the holder is blocked in its copy-out at exec */
	int remove_v;		/* the entry at the hint/pin is dequeued first */
};

struct scene {
	const struct plan *plan;
	long base;
	int peek_fd;
	int uffd;
	void *buf;
	int ready[2];
	pthread_t thr;
};

static void *copyout_buf;

/* Queues the holder's own records, then leaves the hint or holds the pin */
static void holder(struct scene *s)
{
	siginfo_t *buf = s->plan->pin ? s->buf : (siginfo_t *)copyout_buf;
	ssize_t n;
	int i;

	for (i = 0; i < NHO; i++)
		if (q_private(PSIG, HO_VAL(i)))
			_exit(90);
	n = pread(s->peek_fd, buf, 64 * SI_MAX_SIZE, SHARED);
	if (s->plan->pin)
		_exit(91);	/* only the exec ends that pread() */
	if (n != 64 * SI_MAX_SIZE)
		_exit(92);
	for (i = 0; i < 64; i++)
		if (buf[i].si_value.sival_int != SH_VAL(i))
			_exit(93);
	if (write(s->ready[1], "h", 1) != 1)
		_exit(94);
	for (;;)
		pause();	/* until de_thread() kills it */
}

static void execer(struct scene *s)
{
	const int rtmin1[] = { SIGRTMIN + 1, 0 };
	char base[32], removed[8];
	char *const argv[] = { "/proc/self/exe", EXEC_MARK, base, removed, NULL };
	struct pollfd pfd;
	siginfo_t si;
	char c;
	int i, fd;

	for (i = 0; i < NEX; i++)
		if (q_private(PSIG, EX_VAL(i)))
			_exit(95);
	if (s->plan->pin) {
		struct uffd_msg msg;

		pfd.fd = s->uffd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 ||
		    read(s->uffd, &msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			_exit(96);
	} else {
		pfd.fd = s->ready[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 || read(s->ready[0], &c, 1) != 1)
			_exit(96);
	}
	if (s->plan->remove_v) {
		fd = sfd_open_sigs(SFD_RAW | SFD_GROUP | SFD_NONBLOCK, rtmin1);
		if (fd < 0 || read(fd, &si, sizeof(si)) != sizeof(si) ||
		    si.si_value.sival_int != SH_VAL(VPOS))
			_exit(97);
		close(fd);
		/*
		 * Dequeued while pinned, V is still charged until the walker
		 * lets go; a hint pins nothing, V's charge is back already.
		 */
		if (sigq_count() != s->base + NSH + NEX + NHO -
				    (s->plan->pin ? 0 : 1))
			_exit(88);
	}
	snprintf(base, sizeof(base), "%ld", s->base);
	snprintf(removed, sizeof(removed), "%d", s->plan->remove_v);
	execv(argv[0], argv);
	_exit(98);
}

static void *holder_thread(void *arg)
{
	holder(arg);
	return NULL;
}

static void *execer_thread(void *arg)
{
	execer(arg);
	return NULL;
}

static void scenario(const struct plan *plan)
{
	const int both[] = { SIGRTMIN, SIGRTMIN + 1, 0 };
	static struct scene s;
	static siginfo_t hintbuf[64];
	int i;

	copyout_buf = hintbuf;
	s.plan = plan;
	block_test_signals(SIG_BLOCK);
	if (raise_sigpending(4 * NSH))
		_exit(80);
	s.base = sigq_count();
	if (s.base < 0)
		_exit(81);
	for (i = 0; i < NSH; i++)
		if (q_shared(sh_sig(i), SH_VAL(i)))
			_exit(82);
	s.peek_fd = sfd_open_sigs(SFD_RAW | SFD_NONBLOCK, both);
	if (s.peek_fd < 0 || pipe(s.ready))
		_exit(83);
	if (plan->pin) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg = { 0 };
		size_t len = 64 * SI_MAX_SIZE;

		s.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (s.uffd < 0 || ioctl(s.uffd, UFFDIO_API, &api))
			_exit(84);
		s.buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s.buf == MAP_FAILED)
			_exit(85);
		reg.range.start = (uintptr_t)s.buf;
		reg.range.len = len;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(s.uffd, UFFDIO_REGISTER, &reg))
			_exit(86);
	}
	if (plan->holder_is_leader) {
		if (pthread_create(&s.thr, NULL, execer_thread, &s))
			_exit(87);
		holder(&s);
	} else {
		if (pthread_create(&s.thr, NULL, holder_thread, &s))
			_exit(87);
		execer(&s);
	}
	_exit(89);
}

static const char *status_meaning(int code)
{
	switch (code) {
	case 1: return "SigQ after exec is not baseline + queued records";
	case 2: return "signalfd4 after exec failed";
	case 3: return "the process-wide queue changed across exec";
	case 4: return "the exec'ing thread's own queue changed across exec";
	case 5: return "a pread at the old hint's index is wrong";
	case 6: return "a pread from offset 0 is wrong";
	case 7: return "dequeue of the process-wide queue differs from its peek";
	case 8: return "dequeue of the private queue differs from its peek";
	case 9: return "charges leaked: SigQ above the baseline after dequeuing all";
	case 88: return "SigQ before the exec: V's uncharge deferred only under a pin";
	case 91: return "the pinned pread() returned instead of being killed";
	case 96: return "the holder never left its hint or pin";
	case 97: return "dequeuing the pinned entry failed";
	case 98: return "execv failed";
	default: return code >= 80 ? "setup before the exec failed" : "unknown";
	}
}

FIXTURE(ex)
{
	int unused;
};

FIXTURE_VARIANT(ex)
{
	struct plan plan;
};

FIXTURE_VARIANT_ADD(ex, thread_leaves_hint_leader_execs)
{
	.plan = { .holder_is_leader = 0, .pin = 0, .remove_v = 0 },
};

FIXTURE_VARIANT_ADD(ex, leader_leaves_hint_thread_execs)
{
	.plan = { .holder_is_leader = 1, .pin = 0, .remove_v = 0 },
};

FIXTURE_VARIANT_ADD(ex, hinted_entry_dequeued_leader_execs)
{
	.plan = { .holder_is_leader = 0, .pin = 0, .remove_v = 1 },
};

FIXTURE_VARIANT_ADD(ex, thread_holds_pin_leader_execs)
{
	.plan = { .holder_is_leader = 0, .pin = 1, .remove_v = 0 },
};

FIXTURE_VARIANT_ADD(ex, leader_holds_pin_thread_execs)
{
	.plan = { .holder_is_leader = 1, .pin = 1, .remove_v = 0 },
};

FIXTURE_VARIANT_ADD(ex, pinned_entry_dequeued_leader_execs)
{
	.plan = { .holder_is_leader = 0, .pin = 1, .remove_v = 1 },
};

FIXTURE_VARIANT_ADD(ex, pinned_entry_dequeued_thread_execs)
{
	.plan = { .holder_is_leader = 1, .pin = 1, .remove_v = 1 },
};

FIXTURE_SETUP(ex)
{
	int uffd;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	if (variant->plan.pin) {
		uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (uffd < 0)
			SKIP(return, "no userfaultfd: cannot hold a pin at exec");
		close(uffd);
	}
	block_test_signals(SIG_BLOCK);
	flush_all_signals();
}

FIXTURE_TEARDOWN(ex)
{
}

TEST_F(ex, queue_survives_exec_and_nothing_leaks)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		scenario(&variant->plan);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	flush_signal(SIGCHLD);
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("the exec'd process died of signal %d",
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("%s", status_meaning(WEXITSTATUS(status)));
}

/* TEST_HARNESS_MAIN, with the check the exec'd image runs instead */
static void __attribute__((constructor)) __constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc == 4 && !strcmp(argv[1], EXEC_MARK)) {
		rc = exec_check(atol(argv[2]), atoi(argv[3]));
		fflush(stdout);
		_exit(rc);
	}
	return test_harness_run(argc, argv);
}
