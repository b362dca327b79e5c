// SPDX-License-Identifier: GPL-2.0
/*
 * sigsend: load generator for sigstorm. Every send is logged, before the
 * syscall, as one line (one write(2), O_APPEND):
 *   S <seq> <kind> <signo> <pid> <thread_index|-1> <tid|0> <value hex|-> <sender_pid> <uid> <realtime_ns> <id>
 *   F <seq> <kind> <signo> <errno> <id>   the syscall failed: not sent
 *   P <seq> / R <pid> / E <seq>            paused, resumed, ended
 * Payload-carrying sends (sigqueue, rt_tgsigqueueinfo) carry
 * 0x5347<<48 | id<<32 | seq as sival_ptr: the sender id (--id) tells senders
 * apart where pids do not (two hosts hand out the same pids). Thread-directed
 * sends target sigstorm's threads, found by their names (storm-<index>) in
 * /proc/<pid>/task.
 * SIGUSR1 pauses, SIGUSR2 resumes (re-reading --pid-file and the threads),
 * SIGTERM ends after the current send.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sigmig/ledger.h>

#define PAYLOAD_TAG	0x5347000000000000ull
#define ID_SHIFT	32
#define ID_MAX		0xffffu
#define SEQ_MAX		0xffffffffu
#define MAX_TARGETS	64
#define MAX_SIGS	64

enum kind { K_KILL, K_SIGQUEUE, K_TGKILL, K_TGSQ, K_NKINDS };
static const char *const kind_names[] = { "kill", "sigqueue", "tgkill", "tgsigqueue" };

static struct {
	pid_t pid;
	const char *pid_file, *log;
	unsigned long count;
	long rate;
	long seconds;		/* --seconds: stop sending after this long */
	long linger_ms;		/* --linger-ms: stop this long after the first ESRCH */
	int kinds[K_NKINDS];
	int rt[MAX_SIGS], nrt, std[MAX_SIGS], nstd;
	uint64_t seed;
	int paused;
	int std_percent;
	long id;
} opt = { .kinds = { 1, 1, 1, 1 }, .seed = 1, .std_percent = 15, .id = -1 };

static struct { pid_t tid; int index; } targets[MAX_TARGETS];
static int ntargets, log_fd = -1;
static volatile sig_atomic_t pause_req, resume_req, end_req;
static long long first_esrch_ns;	/* mono_ns() of the first send that got ESRCH */

static void on_pause(int s) { (void)s; pause_req = 1; }
static void on_resume(int s) { (void)s; resume_req = 1; }
static void on_end(int s) { (void)s; end_req = 1; }

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logf_(const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sigmig_fd_vprintf(log_fd, fmt, ap);
	va_end(ap);
	if (ret) {
		perror("sigsend: log");
		exit(1);
	}
}

/* Monotonic: how long a --seconds run has sent, whatever the wall clock does. */
static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void read_pid_file(void)
{
	FILE *f;
	int pid;

	if (!opt.pid_file)
		return;
	f = fopen(opt.pid_file, "r");
	if (f && fscanf(f, "%d", &pid) == 1)
		opt.pid = pid;
	if (f)
		fclose(f);
}

static void find_targets(void)
{
	char path[300], comm[32];
	struct dirent *de;
	DIR *d;
	FILE *f;

	ntargets = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", opt.pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && ntargets < MAX_TARGETS) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", opt.pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "storm-", 6)) {
			targets[ntargets].tid = atoi(de->d_name);
			targets[ntargets++].index = atoi(comm + 6);
		}
		fclose(f);
	}
	closedir(d);
}

static uint64_t rnd(void)
{
	opt.seed ^= opt.seed << 13;
	opt.seed ^= opt.seed >> 7;
	opt.seed ^= opt.seed << 17;
	return opt.seed;
}

static int pick_kind(void)
{
	int k;

	do
		k = (int)(rnd() % K_NKINDS);
	while (!opt.kinds[k] || ((k == K_TGKILL || k == K_TGSQ) && !ntargets));
	return k;
}

/* Payload kinds mostly carry RT signals; kill/tgkill carry standard ones. */
static int pick_signo(int kind)
{
	int use_std = kind == K_KILL || kind == K_TGKILL ||
		      (int)(rnd() % 100) < opt.std_percent;

	if (use_std && opt.nstd)
		return opt.std[rnd() % (uint64_t)opt.nstd];
	if (!opt.nrt)
		return opt.std[rnd() % (uint64_t)opt.nstd];
	return opt.rt[rnd() % (uint64_t)opt.nrt];
}

static int do_send(int kind, int signo, pid_t tid, uint64_t value)
{
	union sigval sv = { .sival_ptr = (void *)(uintptr_t)value };
	siginfo_t si;

	switch (kind) {
	case K_KILL:
		return kill(opt.pid, signo);
	case K_SIGQUEUE:
		return sigqueue(opt.pid, signo, sv);
	case K_TGKILL:
		return (int)syscall(SYS_tgkill, opt.pid, tid, signo);
	default:
		memset(&si, 0, sizeof(si));
		si.si_signo = signo;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value = sv;
		return (int)syscall(SYS_rt_tgsigqueueinfo, opt.pid, tid, signo, &si);
	}
}

static void send_one(unsigned long seq)
{
	int kind = pick_kind(), signo = pick_signo(kind), idx = -1;
	int payload = kind == K_SIGQUEUE || kind == K_TGSQ;
	uint64_t value = PAYLOAD_TAG | (uint64_t)opt.id << ID_SHIFT | seq;
	pid_t tid = 0;
	char vbuf[24] = "-";

	if (kind == K_TGKILL || kind == K_TGSQ) {
		int t = (int)(rnd() % (uint64_t)ntargets);

		tid = targets[t].tid;
		idx = targets[t].index;
	}
	if (payload)
		snprintf(vbuf, sizeof(vbuf), "%llx", (unsigned long long)value);
	logf_("S %lu %s %d %d %d %d %s %d %d %lld %ld\n", seq, kind_names[kind], signo,
	      opt.pid, idx, tid, vbuf, getpid(), getuid(), now_ns(), opt.id);
	while (do_send(kind, signo, tid, value)) {
		if (errno == EAGAIN && !end_req) {
			/* queue full (RLIMIT_SIGPENDING): the line above stays true once it goes */
			usleep(1000);
			continue;
		}
		logf_("F %lu %s %d %d %ld\n", seq, kind_names[kind], signo, errno, opt.id);
		if (errno == ESRCH && !first_esrch_ns)
			first_esrch_ns = mono_ns();
		return;
	}
}

static void wait_resume(unsigned long seq)
{
	sigset_t none;

	logf_("P %lu\n", seq);
	sigemptyset(&none);
	while (!resume_req && !end_req)
		sigsuspend(&none);
	resume_req = 0;
	pause_req = 0;
	read_pid_file();
	find_targets();
	logf_("R %d\n", opt.pid);
}

static int parse_list(const char *s, int *out)
{
	int n = 0;
	char *end;

	while (*s && n < MAX_SIGS) {
		out[n++] = (int)strtol(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
		if (end == s && *s)
			break;
	}
	return n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sigsend (--pid PID | --pid-file FILE) --log PATH [--count N] [--rate PER_SEC]\n"
		"               [--seconds S] [--linger-ms MS]\n"
		"               [--kinds kill,sigqueue,tgkill,tgsigqueue] [--rt 34,35,..] [--std 1,10,..]\n"
		"               [--std-percent P] [--seed N] [--paused] [--id N]\n"
		"  --id N: 0-65535, carried in every payload and logged (default: the pid's\n"
		"  low 16 bits); senders whose logs are compared together need distinct ids.\n"
		"  --linger-ms MS: end MS after the first send that failed with ESRCH (the\n"
		"  target is gone); 0 (default): keep sending.\n"
		"  SIGUSR1 pauses, SIGUSR2 resumes (re-reads --pid-file), SIGTERM ends.\n");
	exit(2);
}

static void parse_kinds(const char *s)
{
	char buf[128], *tok, *save;
	int k;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(opt.kinds, 0, sizeof(opt.kinds));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < K_NKINDS; k++)
			if (!strcmp(tok, kind_names[k]))
				opt.kinds[k] = 1;
	}
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pid", 1, 0, 'p' }, { "pid-file", 1, 0, 'f' }, { "log", 1, 0, 'l' },
		{ "count", 1, 0, 'c' }, { "rate", 1, 0, 'r' }, { "kinds", 1, 0, 'k' },
		{ "rt", 1, 0, 'R' }, { "std", 1, 0, 'S' }, { "seed", 1, 0, 's' },
		{ "paused", 0, 0, 'P' }, { "std-percent", 1, 0, 'y' }, { "id", 1, 0, 'i' },
		{ "seconds", 1, 0, 'T' }, { "linger-ms", 1, 0, 'L' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 } };
	char *end;
	int c;

	opt.nrt = parse_list("34,35,36,37,40,45,50,60", opt.rt);
	opt.nstd = parse_list("1,10,12,23,28", opt.std);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p': opt.pid = atoi(optarg); break;
		case 'f': opt.pid_file = optarg; break;
		case 'l': opt.log = optarg; break;
		case 'c': opt.count = strtoul(optarg, NULL, 10); break;
		case 'r': opt.rate = atol(optarg); break;
		case 'T': opt.seconds = atol(optarg); break;
		case 'L': opt.linger_ms = atol(optarg); break;
		case 'k': parse_kinds(optarg); break;
		case 'R': opt.nrt = parse_list(optarg, opt.rt); break;
		case 'S': opt.nstd = parse_list(optarg, opt.std); break;
		case 's': opt.seed = strtoull(optarg, NULL, 0) | 1; break;
		case 'P': opt.paused = 1; break;
		case 'y': opt.std_percent = atoi(optarg); break;
		case 'i':
			opt.id = strtol(optarg, &end, 10);
			if (*end || end == optarg || opt.id < 0 || opt.id > (long)ID_MAX)
				usage();
			break;
		default: usage();
		}
	}
	if (optind < argc)
		usage();
	if (opt.id < 0)
		opt.id = getpid() & ID_MAX;
	read_pid_file();
	if (opt.pid <= 0 || !opt.log || (!opt.nrt && !opt.nstd))
		usage();
	if (!opt.kinds[0] && !opt.kinds[1] && !opt.kinds[2] && !opt.kinds[3])
		usage();
}

/* The target is gone and --linger-ms has passed since the first ESRCH. */
static int lingered_enough(void)
{
	return opt.linger_ms > 0 && first_esrch_ns &&
	       mono_ns() - first_esrch_ns >= opt.linger_ms * 1000000ll;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_flags = 0 };
	struct timespec gap;
	unsigned long seq = 0;
	long long until;

	parse(argc, argv);
	log_fd = open(opt.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		perror(opt.log);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_pause;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_resume;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_end;
	sigaction(SIGTERM, &sa, NULL);
	find_targets();
	if (!ntargets)
		opt.kinds[K_TGKILL] = opt.kinds[K_TGSQ] = 0;
	if (!opt.kinds[K_KILL] && !opt.kinds[K_SIGQUEUE] && !ntargets) {
		fprintf(stderr, "sigsend: no storm-<n> threads in pid %d\n", opt.pid);
		return 2;
	}
	gap.tv_sec = opt.rate > 0 ? (opt.rate == 1 ? 1 : 0) : 0;
	gap.tv_nsec = opt.rate > 1 ? 1000000000L / opt.rate : 0;
	if (opt.paused)
		wait_resume(seq);
	until = opt.seconds > 0 ? mono_ns() + opt.seconds * 1000000000ll : 0;
	/* The payload holds 32 bits of sequence number. */
	while (!end_req && (!opt.count || seq < opt.count) && seq < SEQ_MAX &&
	       (!until || mono_ns() < until) && !lingered_enough()) {
		if (pause_req)
			wait_resume(seq);
		if (end_req)
			break;
		send_one(++seq);
		if (opt.rate > 0)
			nanosleep(&gap, NULL);
	}
	logf_("E %lu\n", seq);
	return 0;
}
