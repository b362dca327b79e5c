// SPDX-License-Identifier: GPL-2.0
/*
 * timer-restore: a pending SI_TIMER survives a checkpoint/restore with a
 * valid si_timerid and its overrun.
 *
 * Original (no --restore): leaves timer ids 0 and 2 free (created, then
 * deleted), creates a one-shot timer T (id 3) on TSIG and a periodic timer
 * P (id 4) on PSIG, both signals blocked. T fires three times while its
 * signal is pending, so the queued entry carries si_overrun = 2. P's signal
 * is pending for several periods, which the dump must carry as its overrun
 * k. Writes "T P" to --state and waits to be checkpointed.
 * Restored (--restore IMAGE): reads the ids from --state and checks (TAP on
 * stdout) the timer ids alive (1, 3, 4) and the fillers gone (0, 2); that
 * P's moved record is its timer's own entry again: after j more periods on
 * this side one PSIG record is pending, not two, and it is delivered once
 * with overrun k + j; then T's si_timerid, sival and overrun, and P firing
 * again.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include <sigmig/sfd.h>

#include "one_thread_prog.h"

#define TSIG	(SIGRTMIN + 5)
#define PSIG	(SIGRTMIN + 6)
#define TVAL	0xfeedull
#define PVAL	0xbeefull
#define PERIOD_MS	20

static volatile int got_t, got_p, t_id = -1, t_overrun = -1, p_id = -1;
static volatile int p_overrun = -1;
static volatile unsigned long long t_val;
static int n, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d - timer-restore: %s\n", cond ? "" : "not ", ++n, what);
	failed |= !cond;
	fflush(stdout);
}

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == TSIG && !got_t) {
		t_id = si->si_timerid;
		t_overrun = si->si_overrun;
		t_val = (unsigned long long)(uintptr_t)si->si_value.sival_ptr;
		got_t = 1;
	} else if (sig == PSIG) {
		p_id = si->si_timerid;
		if (!got_p)
			p_overrun = si->si_overrun;
		got_p++;
	}
}

static int mk_timer(int signo, unsigned long long val)
{
	struct sigevent sev;
	int id;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)val;
	if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id))
		return -1;
	return id;
}

static void arm(int id, long value_ms, long interval_ms)
{
	struct itimerspec its = { { interval_ms / 1000, (interval_ms % 1000) * 1000000 },
				  { value_ms / 1000, (value_ms % 1000) * 1000000 } };

	syscall(SYS_timer_settime, id, 0, &its, NULL);
}

static int psig_pending(void)
{
	sigset_t set;

	sigpending(&set);
	return sigismember(&set, PSIG);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* PSIG records pending in the process-wide queue, the first in @first. */
static int psig_records(siginfo_t *first)
{
	siginfo_t recs[4];
	sigset_t mask;
	ssize_t n;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, PSIG);
	fd = syscall(SYS_signalfd4, -1, &mask, KERNEL_SIGSET_SIZE,
		     SFD_RAW | SFD_GROUP | SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, recs, sizeof(recs), SFD_SHARED_QUEUE_OFFSET);
	close(fd);
	if (n > 0)
		*first = recs[0];
	return n < 0 ? -1 : (int)(n / SI_MAX_SIZE);
}

static int original(const char *state)
{
	int a, b, c, t, p, i;
	FILE *f;

	a = mk_timer(PSIG, 1);
	b = mk_timer(PSIG, 2);
	c = mk_timer(PSIG, 3);
	syscall(SYS_timer_delete, a);
	syscall(SYS_timer_delete, c);
	(void)b;
	t = mk_timer(TSIG, TVAL);
	p = mk_timer(PSIG, PVAL);
	for (i = 0; i < 3; i++) {	/* re-arming while pending bumps si_overrun */
		arm(t, 1, 0);
		usleep(30000);
	}
	arm(p, PERIOD_MS, PERIOD_MS);
	while (!psig_pending())
		usleep(1000);
	usleep(5 * PERIOD_MS * 1000);	/* P misses periods while pending */
	f = fopen(state, "w");
	if (!f)
		return 2;
	fprintf(f, "%d %d\n", t, p);
	fclose(f);
	for (;;)
		pause();
}

static int timer_exists(int id)
{
	struct itimerspec its;

	return syscall(SYS_timer_gettime, id, &its) == 0;
}

/*
 * P's record came with the periods it missed on the source (k >= 4: it was
 * pending for five). Its timer runs here from its dumped remaining time; j
 * periods on, one PSIG record is pending with overrun k + j, not a second
 * record, and the delivery says k + j (bounds from the clock: P was armed
 * after main() started, and fires every PERIOD_MS from then).
 */
static long long started_ms;

static void check_moved_periodic(int p)
{
	long long waited_from, unblocked_at, delivered_by;
	siginfo_t first, later;
	char msg[200];
	long j_lo, j_hi;
	int n, k;
	sigset_t set;

	waited_from = now_ms();
	n = psig_records(&first);
	k = first.si_overrun;
	snprintf(msg, sizeof(msg), "P's moved record pending alone, si_timerid %d (want %d), overrun k = %d (want >= 4)",
		 n > 0 ? first.si_timerid : -1, p, n > 0 ? k : -1);
	ok(n == 1 && first.si_timerid == p && k >= 4, msg);
	usleep(6 * PERIOD_MS * 1000);
	n = psig_records(&later);
	snprintf(msg, sizeof(msg), "after 6 periods: %d PSIG record(s) pending (want 1: the timer's own entry), overrun %d",
		 n, n > 0 ? later.si_overrun : -1);
	ok(n == 1 && later.si_overrun > k, msg);

	sigemptyset(&set);
	sigaddset(&set, PSIG);
	unblocked_at = now_ms();
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	delivered_by = now_ms();
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	j_lo = (unblocked_at - waited_from) / PERIOD_MS - 1;
	j_hi = (delivered_by - started_ms) / PERIOD_MS + 1;
	snprintf(msg, sizeof(msg), "P delivered %d time(s) at once with overrun %d = k %d + j, j in [%ld, %ld]",
		 got_p, p_overrun, k, j_lo, j_hi);
	ok(got_p == 1 && p_overrun >= k + j_lo && p_overrun <= k + j_hi, msg);
}

static int restored(const char *state)
{
	int t = -1, p = -1, i;
	sigset_t set;
	char msg[160];
	FILE *f = fopen(state, "r");

	if (!f || fscanf(f, "%d %d", &t, &p) != 2)
		return 2;
	fclose(f);
	ok(timer_exists(t) && timer_exists(p) && timer_exists(1), "timer ids 1, T and P exist after restore");
	ok(!timer_exists(0) && !timer_exists(2), "filler ids 0 and 2 were deleted");
	check_moved_periodic(p);
	sigemptyset(&set);
	sigaddset(&set, TSIG);
	sigaddset(&set, PSIG);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (i = 0; i < 300 && (!got_t || got_p < 2); i++)
		usleep(10000);
	snprintf(msg, sizeof(msg), "pending SI_TIMER delivered: si_timerid %d (want %d), sival 0x%llx, si_overrun %d (want 2)",
		 t_id, t, t_val, t_overrun);
	ok(got_t && t_id == t && t_val == TVAL && t_overrun == 2, msg);
	snprintf(msg, sizeof(msg), "periodic timer P fires after restore: %d deliveries, si_timerid %d (want %d)",
		 got_p, p_id, p);
	ok(got_p >= 2 && p_id == p, msg);
	printf("1..%d\n", n);
	return failed;
}

int main(int argc, char **argv)
{
	struct one_thread_prog p = { .name = "timer-restore" };
	sigset_t set;
	int ret;

	started_ms = now_ms();
	ret = one_thread_args(argc, argv, &p);
	if (ret || !p.state)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, TSIG);
	sigaddset(&set, PSIG);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigmig_install_handler(TSIG, "on_timer", on_timer, SA_RESTART, NULL);
	sigmig_install_handler(PSIG, "on_timer", on_timer, SA_RESTART, NULL);
	ret = one_thread_start(&p);
	if (ret)
		return ret;
	return p.restore ? restored(p.state) : original(p.state);
}
