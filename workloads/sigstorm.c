// SPDX-License-Identifier: GPL-2.0
/*
 * sigstorm: a signal-heavy demo workload for sigmig. Several threads, each
 * with its own blocked set that changes over time, catch almost every
 * signal and log each siginfo (all 128 bytes) to an append-only ledger.
 * Besides what senders send (kill, sigqueue, tgkill, rt_tgsigqueueinfo) it
 * generates its own: POSIX timers with overruns, exiting children, mq_notify
 * and SIGIO on a pipe. The runtime checkpoints and restores it on request.
 *
 * Ledger lines (each written with one write(2), O_APPEND, so nothing is
 * buffered and a COMMIT or a kill loses nothing):
 *   H <pid> <restored 0|1> <realtime_ns> <e_machine>   process start (62 x86_64, 3 i386:
 *                                                    the siginfo layout of the D lines)
 *   T <timer_id> <signo> <sival hex> <notify> <thread>   a timer it created
 *   D <thread_index> <tid> <realtime_ns> <256 hex digits>   a delivered siginfo
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/runtime.h>
#include <sigmig/ledger.h>
#include <sigmig/sfd.h>

#define MAX_THREADS	64
#ifdef __i386__
#define LEDGER_ARCH	3	/* EM_386: compat siginfo layout */
#else
#define LEDGER_ARCH	62	/* EM_X86_64 */
#endif
#define MQ_SIGNAL	(SIGRTMIN + 20)
#define TIMER_SIGNAL	(SIGRTMIN + 21)
#define TTIMER_SIGNAL	(SIGRTMIN + 22)

static struct {
	unsigned int threads;
	const char *ctl, *ledger, *restore;
	long sigpending;
	int timers;
	int timer_us;
	int mask_ms;
	int local;
	int duration;
	int restore_hold;
	int fork_storm;
	enum sigmig_requeue requeue;
} opt = { .threads = 4, .sigpending = 262144, .timers = 2, .timer_us = 3000,
	  .mask_ms = 20, .local = 1 };

static int ledger_fd = -1;
static __thread int self_index = -1;
static __thread pid_t self_tid;
static int pipe_fds[2] = { -1, -1 };
static mqd_t mq = (mqd_t)-1;
static char mq_name[64];
static volatile int stop;

/* Async-signal-safe: format one ledger line and append it with one write. */
static void ledger_handler(int sig, siginfo_t *si, void *uc)
{
	char line[SIGMIG_LEDGER_LINE_MAX];
	int saved = errno;
	size_t n;

	(void)sig;
	(void)uc;
	n = sigmig_ledger_delivery(line, self_index,
				   self_tid ? self_tid : (pid_t)syscall(SYS_gettid),
				   si, SI_MAX_SIZE);
	if (write(ledger_fd, line, n) < 0)
		_exit(4);
	errno = saved;
}

static void ledger_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void ledger_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (sigmig_fd_vprintf(ledger_fd, fmt, ap))
		perror("ledger");
	va_end(ap);
}

static int caught(int sig)
{
	if (sig == SIGKILL || sig == SIGSTOP || sig == SIGTERM || sig == SIGINT ||
	    sig == SIGQUIT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
	    sig == SIGILL || sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS ||
	    sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU || sig == SIGCONT)
		return 0;
	if (sig > 31 && sig < SIGRTMIN)
		return 0;	/* libc-internal */
	return sig != SIGMIG_FREEZE_SIGNAL;
}

static int install_handlers(void)
{
	int sig, ret;

	for (sig = 1; sig < SIGMIG_FREEZE_SIGNAL; sig++) {
		if (!caught(sig))
			continue;
		ret = sigmig_install_handler(sig, "ledger", ledger_handler, SA_RESTART, NULL);
		if (ret) {
			fprintf(stderr, "sigstorm: installing the handler for %d: %s\n",
				sig, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A new blocked set: a random half of the caught signals, never the freeze signal. */
static void rotate_mask(uint64_t *rng)
{
	uint64_t bits = xorshift(rng);
	sigset_t set;
	int sig;

	sigemptyset(&set);
	for (sig = 1; sig < SIGMIG_FREEZE_SIGNAL; sig++)
		if (caught(sig) && (bits >> (sig - 1) & 1))
			sigaddset(&set, sig);
	pthread_sigmask(SIG_SETMASK, &set, NULL);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void mq_arm(void)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = MQ_SIGNAL };

	sev.sigev_value.sival_int = 0x6d71;
	mq_notify(mq, &sev);
}

/* Thread 0 also produces the workload's own signals. */
static void local_sources(unsigned int tick)
{
	char c = 'x', buf[64];
	pid_t child;

	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (tick % 5 == 0) {
		child = fork();
		if (child == 0)
			_exit((int)(tick & 0x7f));
	}
	if (tick % 3 == 0 && write(pipe_fds[1], &c, 1) < 0)
		perror("pipe");
	while (read(pipe_fds[0], buf, sizeof(buf)) > 0)
		;
	if (mq != (mqd_t)-1 && tick % 4 == 0) {
		while (mq_receive(mq, buf, sizeof(buf), NULL) >= 0)
			;
		mq_arm();
		mq_send(mq, "m", 1, 0);
	}
}

static int setup_local_sources(void)
{
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 64 };

	if (pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	fcntl(pipe_fds[0], F_SETOWN, getpid());
	fcntl(pipe_fds[0], F_SETSIG, 0);
	fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK | O_ASYNC);
	snprintf(mq_name, sizeof(mq_name), "/sigstorm-%d", getpid());
	mq = mq_open(mq_name, O_RDWR | O_CREAT | O_EXCL | O_NONBLOCK, 0600, &attr);
	if (mq == (mqd_t)-1)
		fprintf(stderr, "sigstorm: mq_open: %s (mq_notify disabled)\n", strerror(errno));
	else
		mq_unlink(mq_name);
	return 0;
}

static int create_timer(int notify, int signo, pid_t tid, uint64_t value, int us)
{
	struct sigevent sev;
	struct itimerspec its = { { 0, us * 1000L }, { 0, us * 1000L } };
	int id;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = notify;
	sev.sigev_signo = signo;
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)value;
	sev._sigev_un._tid = tid;
	if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id)) {
		perror("sigstorm: timer_create");
		return -1;
	}
	syscall(SYS_timer_settime, id, 0, &its, NULL);
	ledger_printf("T %d %d %llx %d %d\n", id, signo, (unsigned long long)(uintptr_t)value,
		      notify, notify == SIGEV_THREAD_ID ? self_index : -1);
	return id;
}

/*
 * Every thread forks and allocates on every tick: a freeze then often
 * lands while a thread is inside fork() or malloc(), holding libc's locks.
 */
static void fork_and_allocate(unsigned int tick)
{
	pid_t child = fork();
	void *p;

	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	p = malloc(256 + (tick % 64) * 1024);
	if (p)
		memset(p, (int)tick, 256);
	free(p);
}

static void *worker(void *arg)
{
	unsigned int index = (unsigned int)(uintptr_t)arg, tick = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)index << 32) ^ (uint64_t)getpid();
	char name[16], err[256];
	int ret;

	self_index = (int)index;
	self_tid = (pid_t)syscall(SYS_gettid);
	snprintf(name, sizeof(name), "storm-%u", index);
	pthread_setname_np(pthread_self(), name);
	ret = sigmig_thread_register(index);
	if (ret == -ECANCELED)
		return NULL;	/* the restore failed: main reports it and exits */
	if (ret) {
		fprintf(stderr, "sigstorm: thread %u: register: %s\n", index, strerror(-ret));
		exit(3);
	}
	if (sigmig_runtime_wait_ready(err, sizeof(err)))
		return NULL;
	if (!opt.restore && index == 1 && opt.timers > 0)
		create_timer(SIGEV_THREAD_ID, TTIMER_SIGNAL, self_tid, 0x7454, opt.timer_us * 3);
	while (!stop) {
		sleep_ms(opt.mask_ms);
		rotate_mask(&rng);
		if (index == 0 && opt.local)
			local_sources(tick);
		if (opt.fork_storm)
			fork_and_allocate(tick);
		tick++;
	}
	return NULL;
}

/* COMMIT: the ledger is complete, and no thread may run again. */
static void commit_exit(void)
{
	fsync(ledger_fd);
	_exit(0);
}

/* One line, exit status 3: what a refused or failed restore looks like. */
static int restore_failed(const char *why)
{
	fprintf(stderr, "sigmig restore: %s\n", why);
	return 3;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sigstorm --ctl PATH --ledger PATH [--threads N] [--restore IMAGE]\n"
		"                [--sigpending N] [--timers N] [--timer-us US] [--mask-ms MS]\n"
		"                [--no-local] [--duration SEC] [--restore-hold] [--fork-storm]\n"
		"                [--requeue-with auto|write|sigqueueinfo]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "threads", 1, 0, 't' }, { "ctl", 1, 0, 'c' }, { "ledger", 1, 0, 'l' },
		{ "restore", 1, 0, 'r' }, { "sigpending", 1, 0, 'p' },
		{ "timers", 1, 0, 'T' }, { "timer-us", 1, 0, 'u' }, { "mask-ms", 1, 0, 'm' },
		{ "no-local", 0, 0, 'n' }, { "duration", 1, 0, 'd' }, { "help", 0, 0, 'h' },
		{ "restore-hold", 0, 0, 'H' }, { "fork-storm", 0, 0, 'F' },
		{ "requeue-with", 1, 0, 'Q' },
		{ 0, 0, 0, 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': opt.threads = (unsigned int)atoi(optarg); break;
		case 'c': opt.ctl = optarg; break;
		case 'l': opt.ledger = optarg; break;
		case 'r': opt.restore = optarg; break;
		case 'p': opt.sigpending = atol(optarg); break;
		case 'T': opt.timers = atoi(optarg); break;
		case 'u': opt.timer_us = atoi(optarg); break;
		case 'm': opt.mask_ms = atoi(optarg); break;
		case 'n': opt.local = 0; break;
		case 'd': opt.duration = atoi(optarg); break;
		case 'H': opt.restore_hold = 1; break;
		case 'F': opt.fork_storm = 1; break;
		case 'Q':
			if (sigmig_requeue_parse(optarg, &opt.requeue))
				usage();
			break;
		default: usage();
		}
	}
	if (!opt.ctl || !opt.ledger || opt.threads < 1 || opt.threads > MAX_THREADS ||
	    opt.timer_us < 1 || opt.timer_us > 999999 || opt.mask_ms < 1)
		usage();
}

/* Queue room for the load; a restore raises it itself as the image needs. */
static void raise_sigpending(void)
{
	struct rlimit rl = { (rlim_t)opt.sigpending, (rlim_t)opt.sigpending };

	if (opt.restore || opt.sigpending <= 0)
		return;
	if (setrlimit(RLIMIT_SIGPENDING, &rl))
		fprintf(stderr, "sigstorm: RLIMIT_SIGPENDING %ld: %s\n", opt.sigpending,
			strerror(errno));
}

int main(int argc, char **argv)
{
	struct sigmig_runtime_opts ro = { 0 };
	pthread_t th[MAX_THREADS];
	struct timespec ts;
	char err[256];
	sigset_t all;
	unsigned int i;
	int ret, t;

	parse(argc, argv);
	ledger_fd = open(opt.ledger, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (ledger_fd < 0) {
		fprintf(stderr, "sigstorm: %s: %s\n", opt.ledger, strerror(errno));
		return 2;
	}
	raise_sigpending();
	/* main only supervises: it never takes a signal */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (install_handlers())
		return 2;
	ro.ctl_path = opt.ctl;
	ro.program = "sigstorm";
	ro.restore_image = opt.restore;
	ro.restore_hold = opt.restore_hold;
	ro.requeue = opt.requeue;
	ro.nthreads = opt.threads;
	ro.commit_exit = commit_exit;
	ret = sigmig_runtime_start(&ro, err, sizeof(err));
	if (ret && opt.restore)
		return restore_failed(err);
	if (ret) {
		fprintf(stderr, "sigstorm: runtime: %s\n", err);
		return 2;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ledger_printf("H %d %d %lld %d\n", getpid(), opt.restore ? 1 : 0,
		      (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec, LEDGER_ARCH);
	if (opt.local && setup_local_sources())
		perror("sigstorm: local sources");
	if (!opt.restore)
		for (t = 0; t < opt.timers; t++)
			create_timer(SIGEV_SIGNAL, TIMER_SIGNAL, 0, 0x7000 + (uint64_t)t,
				     opt.timer_us * (t + 1));
	for (i = 0; i < opt.threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i)) {
			perror("sigstorm: pthread_create");
			return 2;
		}
	if (opt.restore && sigmig_runtime_wait_ready(err, sizeof(err))) {
		/* every thread is blocked and parked, or has returned: none ran */
		sigmig_runtime_stop();
		return restore_failed(err);
	}
	if (opt.duration > 0) {
		sleep_ms(opt.duration * 1000);
		stop = 1;
	}
	for (i = 0; i < opt.threads; i++)
		pthread_join(th[i], NULL);
	sigmig_runtime_stop();
	return 0;
}
