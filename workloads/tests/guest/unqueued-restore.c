// SPDX-License-Identifier: GPL-2.0
/*
 * unqueued-restore: signals pending without a queue entry survive a
 * checkpoint/restore, with the siginfo the kernel would have delivered.
 *
 * Original (no --restore): lowers the soft RLIMIT_SIGPENDING to what this
 * user has queued plus NFILL (the hard limit stays, so that the runtime can
 * lift it for its freeze signals) and fills it with NFILL sigqueue()s of QSIG (one more
 * fails with EAGAIN: the limit is reached). Then RTSIG by kill() (a
 * real-time SI_USER signal: pending on the process-wide queue without an
 * entry) and STDSIG by tgkill() to itself (a standard SI_TKILL signal:
 * pending on its own queue without an entry). Checks that both are pending
 * and that a peek of their queues does not show them, writes "ready" (or
 * what went wrong) to --state, and waits to be checkpointed.
 * With --late (the last argument) it only fills the limit: the test sends
 * RTSIG and STDSIG after the DUMP (its thread is named storm-0 so that
 * sigsend can tgkill it), and they must travel in the commit delta.
 * Restored (--restore IMAGE): unblocks and checks the deliveries (TAP on
 * stdout): QSIG NFILL times with its values in order, RTSIG and STDSIG once
 * each with si_code SI_USER, si_pid 0 and si_uid 0, as on the source.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include <sigmig/sfd.h>

#include "one_thread_prog.h"

#define QSIG	(SIGRTMIN + 8)
#define RTSIG	(SIGRTMIN + 7)
#define STDSIG	SIGUSR1
#define NFILL	4

struct seen {
	int count, code, pid, uid;
	int values[NFILL];
};

static struct seen seen_q, seen_rt, seen_std;
static int n, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d - unqueued-restore: %s\n", cond ? "" : "not ", ++n, what);
	failed |= !cond;
	fflush(stdout);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	struct seen *s = sig == QSIG ? &seen_q : sig == RTSIG ? &seen_rt : &seen_std;

	(void)uc;
	if (s->count < NFILL)
		s->values[s->count] = si->si_value.sival_int;
	s->code = si->si_code;
	s->pid = si->si_pid;
	s->uid = (int)si->si_uid;
	s->count++;
}

/* This user's queued signals, the first number of SigQ in /proc. */
static long user_queued(void)
{
	char line[128];
	long queued = -1;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "SigQ: %ld/", &queued) == 1)
			break;
	if (f)
		fclose(f);
	return queued;
}

/* Does a peek of the queue at @base show a record of @sig? */
static int peek_shows(long long base, int sig)
{
	siginfo_t recs[16];
	sigset_t mask;
	ssize_t got;
	int fd, i;

	sigfillset(&mask);
	fd = syscall(SYS_signalfd4, -1, &mask, KERNEL_SIGSET_SIZE,
		     SFD_RAW | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -1;
	got = pread(fd, recs, sizeof(recs), base);
	close(fd);
	for (i = 0; i < got / SI_MAX_SIZE; i++)
		if (recs[i].si_signo == sig)
			return 1;
	return got < 0 ? -1 : 0;
}

/* Lower the soft RLIMIT_SIGPENDING to what is queued plus NFILL, fill it. */
static const char *fill_limit(void)
{
	union sigval v;
	struct rlimit rl;
	long queued = user_queued();
	int i;

	if (queued < 0)
		return "no SigQ in /proc/self/status";
	if (getrlimit(RLIMIT_SIGPENDING, &rl))
		return "getrlimit(RLIMIT_SIGPENDING) failed";
	rl.rlim_cur = (rlim_t)queued + NFILL;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= rl.rlim_cur)
		return "the hard RLIMIT_SIGPENDING leaves no room above the soft one";
	if (setrlimit(RLIMIT_SIGPENDING, &rl))
		return "setrlimit(RLIMIT_SIGPENDING) failed";
	for (i = 0; i < NFILL; i++) {
		v.sival_int = 100 + i;
		if (sigqueue(getpid(), QSIG, v))
			return "sigqueue under the limit failed";
	}
	v.sival_int = 999;
	if (sigqueue(getpid(), QSIG, v) == 0 || errno != EAGAIN)
		return "the limit was not reached (a sigqueue over it succeeded)";
	return NULL;
}

static const char *fill_and_send(void)
{
	const char *bad = fill_limit();
	sigset_t pending;

	if (bad)
		return bad;
	if (kill(getpid(), RTSIG) || syscall(SYS_tgkill, getpid(), gettid(), STDSIG))
		return "kill()/tgkill() over the limit failed";
	sigpending(&pending);
	if (!sigismember(&pending, RTSIG) || !sigismember(&pending, STDSIG))
		return "the signals sent over the limit are not pending";
	if (peek_shows(SFD_SHARED_QUEUE_OFFSET, RTSIG) != 0 ||
	    peek_shows(SFD_PER_THREAD_QUEUE_OFFSET, STDSIG) != 0)
		return "a peek shows a record of a signal sent over the limit";
	return NULL;
}

/*
 * RLIMIT_SIGPENDING counts every pending signal of the user: run as a user
 * of its own, so that no other process can free room under the limit (or
 * take it) while the test runs.
 */
#define OWN_UID	4242

static int original(const char *state, int late)
{
	FILE *f = fopen(state, "w");	/* before the state's owner is no longer us */
	const char *bad;

	if (!f)
		return 2;
	prctl(PR_SET_NAME, "storm-0");
	if (setresgid(OWN_UID, OWN_UID, OWN_UID) || setresuid(OWN_UID, OWN_UID, OWN_UID))
		bad = "cannot become a user of its own";
	else
		bad = late ? fill_limit() : fill_and_send();
	fprintf(f, "%s\n", bad ? bad : "ready");
	fclose(f);
	for (;;)
		pause();
}

static void check_unqueued(const char *name, const struct seen *s)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s delivered %d time(s), si_code %d si_pid %d si_uid %d (want once, SI_USER 0 0)",
		 name, s->count, s->code, s->pid, s->uid);
	ok(s->count == 1 && s->code == SI_USER && s->pid == 0 && s->uid == 0, msg);
}

static int restored(void)
{
	sigset_t set;
	char msg[200];
	int i, in_order = 1;

	sigemptyset(&set);
	sigaddset(&set, QSIG);
	sigaddset(&set, RTSIG);
	sigaddset(&set, STDSIG);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < NFILL && i < seen_q.count; i++)
		in_order &= seen_q.values[i] == 100 + i;
	snprintf(msg, sizeof(msg), "the queued QSIG delivered %d time(s) (want %d), values in order: %s",
		 seen_q.count, NFILL, in_order ? "yes" : "no");
	ok(seen_q.count == NFILL && in_order, msg);
	check_unqueued("RTSIG (kill() over the limit, process-wide)", &seen_rt);
	check_unqueued("STDSIG (tgkill() over the limit, own queue)", &seen_std);
	printf("1..%d\n", n);
	return failed;
}

int main(int argc, char **argv)
{
	struct one_thread_prog p = { .name = "unqueued-restore" };
	const int sigs[] = { QSIG, RTSIG, STDSIG };
	int late = argc > 1 && !strcmp(argv[argc - 1], "--late");
	sigset_t set;
	int i, ret;

	ret = one_thread_args(argc - late, argv, &p);
	if (ret)
		return ret;
	sigemptyset(&set);
	for (i = 0; i < 3; i++) {
		sigaddset(&set, sigs[i]);
		sigmig_install_handler(sigs[i], "on_signal", on_signal, SA_RESTART, NULL);
	}
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	ret = one_thread_start(&p);
	if (ret)
		return ret;
	return p.restore ? restored() : original(p.state, late);
}
