// SPDX-License-Identifier: GPL-2.0
/*
 * sigplain: a plain program, not linked with the sigmig runtime, that
 * sigmig moves with CRIU (engine "criu"). It knows nothing of migration:
 * THREADS threads wait for signals with every catchable one unblocked,
 * a periodic POSIX timer per --timer-us signals the process, and every
 * delivery is appended to the ledger in sigstorm's format (a "D" line
 * with the thread's index and the whole siginfo), so that sigledger
 * judges a move of it as it judges one of sigstorm.
 *
 *   sigplain --ledger PATH [--threads N] [--timer-us US] [--gate]
 *
 * --gate: every thread keeps every signal blocked until the process is
 * sent the gate signal (SIGRTMAX), as a program that takes no signal
 * before it is ready does; until then whatever is sent stays pending, in
 * the threads' queues and the process's. The gate's own delivery is a
 * ledger line like any other.
 *
 * The ledger is opened once, O_APPEND, and written with one write() per
 * line from the handler: whoever holds the file after a move (the target
 * agent hands CRIU its own ledger for this descriptor) gets whole lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sigmig/ledger.h>

#define MAX_THREADS	16
#define TIMER_SIGNAL	(SIGRTMIN + 6)
#define TIMER_VALUE	0x7469636bull	/* "tick" */
#define LEDGER_ARCH	62		/* x86_64's siginfo layout */
#define GATE_SIGNAL	SIGRTMAX

static int ledger_fd = -1;
static __thread int self_index;
static bool gated;
static bool gate_open;
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_opened = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t named;

/* Async-signal-safe: one ledger line, one write(). */
static void log_delivery(const siginfo_t *si)
{
	char line[SIGMIG_LEDGER_LINE_MAX];
	size_t n;

	n = sigmig_ledger_delivery(line, self_index, (long long)syscall(SYS_gettid),
				   si, sizeof(*si));
	if (write(ledger_fd, line, n) < 0)
		_exit(4);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)sig;
	(void)uc;
	log_delivery(si);
	errno = saved;
}

static void ledger_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void ledger_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (sigmig_fd_vprintf(ledger_fd, fmt, ap))
		perror("sigplain: ledger");
	va_end(ap);
}

/*
 * Every signal a sender may send, as sigstorm catches them: all but the
 * ones that end, stop or continue it and the synchronous faults.
 */
static bool caught(int sig)
{
	return sig != SIGKILL && sig != SIGSTOP && sig != SIGTERM && sig != SIGINT &&
	       sig != SIGQUIT && sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE &&
	       sig != SIGILL && sig != SIGABRT && sig != SIGTRAP && sig != SIGSYS &&
	       sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU && sig != SIGCONT &&
	       (sig < 32 || sig >= SIGRTMIN);
}

static int install_handlers(void)
{
	struct sigaction sa;
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	for (sig = 1; sig <= SIGRTMAX; sig++)
		if (caught(sig) && sigaction(sig, &sa, NULL))
			return -1;
	return 0;
}

/*
 * Named as sigstorm's threads are: sigsend finds the threads it sends to
 * by that name, and logs the index, which the ledger's lines carry too.
 * Each thread names itself (PR_SET_NAME): pthread_setname_np() on another
 * thread goes through /proc/self/task/TID, which names the wrong task or
 * none in a PID namespace whose /proc is the parent's.
 */
static void name_self(long index)
{
	char name[16];

	snprintf(name, sizeof(name), "storm-%u", (unsigned int)index & 0xff);
	prctl(PR_SET_NAME, name);
}

static void unblock_all(void)
{
	sigset_t none;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
}

/* Until the gate opens, every signal stays blocked in this thread. */
static void wait_for_gate(void)
{
	pthread_mutex_lock(&gate_lock);
	while (!gate_open)
		pthread_cond_wait(&gate_opened, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
}

/* The main thread takes the gate signal itself, then lets every thread go. */
static int take_gate(void)
{
	sigset_t gate;
	siginfo_t si;

	sigemptyset(&gate);
	sigaddset(&gate, GATE_SIGNAL);
	while (sigwaitinfo(&gate, &si) < 0)
		if (errno != EINTR)
			return -1;
	log_delivery(&si);
	pthread_mutex_lock(&gate_lock);
	gate_open = true;
	pthread_cond_broadcast(&gate_opened);
	pthread_mutex_unlock(&gate_lock);
	return 0;
}

/* Signals are taken here, by their handlers, once the gate is open. */
static void take_signals(void)
{
	if (gated)
		wait_for_gate();
	unblock_all();
	for (;;)
		pause();
}

static void *waiter(void *arg)
{
	self_index = (int)(intptr_t)arg;
	name_self(self_index);
	pthread_barrier_wait(&named);
	take_signals();
	return NULL;
}

static int start_timer(long us)
{
	struct itimerspec its = { { us / 1000000, us % 1000000 * 1000 },
				  { us / 1000000, us % 1000000 * 1000 } };
	struct sigevent sev;
	timer_t id;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = TIMER_SIGNAL;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)TIMER_VALUE;
	if (timer_create(CLOCK_MONOTONIC, &sev, &id) || timer_settime(id, 0, &its, NULL)) {
		perror("sigplain: timer");
		return -1;
	}
	ledger_printf("T %d %d %llx %d %d\n", (int)(intptr_t)id, TIMER_SIGNAL,
		      TIMER_VALUE, SIGEV_SIGNAL, -1);
	return 0;
}

static void usage(void)
{
	fputs("usage: sigplain --ledger PATH [--threads N] [--timer-us US] [--gate]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ledger", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "timer-us", required_argument, NULL, 'u' },
		{ "gate", no_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 }
	};
	const char *ledger = NULL;
	long threads = 3, timer_us = 0;
	struct timespec ts;
	pthread_t th;
	sigset_t all;
	int c;
	long i;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'l')
			ledger = optarg;
		else if (c == 't')
			threads = strtol(optarg, NULL, 10);
		else if (c == 'u')
			timer_us = strtol(optarg, NULL, 10);
		else if (c == 'g')
			gated = true;
		else
			usage();
	}
	if (!ledger || optind != argc || threads < 1 || threads > MAX_THREADS ||
	    timer_us < 0 || timer_us > 60000000)
		usage();
	ledger_fd = open(ledger, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (ledger_fd < 0) {
		perror(ledger);
		return 2;
	}
	if (install_handlers()) {
		perror("sigplain: sigaction");
		return 2;
	}
	/* The threads start with every signal blocked, and unblock them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	ledger_printf("H %d %d %lld %d\n", getpid(), 0,
		      (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec, LEDGER_ARCH);
	name_self(0);
	pthread_barrier_init(&named, NULL, (unsigned int)threads);
	for (i = 1; i < threads; i++)
		if (pthread_create(&th, NULL, waiter, (void *)(intptr_t)i)) {
			fputs("sigplain: cannot start its threads\n", stderr);
			return 2;
		}
	pthread_barrier_wait(&named);	/* every thread has its name */
	if (timer_us && start_timer(timer_us))
		return 2;
	printf("sigplain: pid %d, %ld threads, timer %ld us%s\n", getpid(), threads, timer_us,
	       gated ? ", every signal held until the gate (SIGRTMAX)" : "");
	fflush(stdout);
	if (gated && take_gate()) {
		perror("sigplain: sigwaitinfo");
		return 2;
	}
	take_signals();
	return 0;
}
