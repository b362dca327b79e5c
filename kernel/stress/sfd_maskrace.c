// SPDX-License-Identifier: GPL-2.0
/*
 * sfd_maskrace: a signalfd4() mask change racing with a multi-batch pread()
 * must not leave a resume hint (the resume-hint patch) that shifts later preads.
 *
 * Queue Y0 X0 Y1 X1 ... Y99 X99 on the process-wide queue; one thread flips
 * the fd's mask between {X, Y} and {X} while another preads 100 records;
 * then, with the mask fixed at {X}, pread() at X-index k must return Xk for
 * k = 99..0 and nothing at 100.  Repeats for a bounded time (default 20 s,
 * -t or SFD_MASKRACE_SECONDS).  TAP on stdout.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "stress_common.h"

#define NPAIRS	100

static int fd, sig_x, sig_y;
static atomic_int flipping;	/* 1 flip, 0 pause, -1 stop */
static atomic_uint idle_passes;	/* times the flipper saw a pause */
static sigset_t mask_xy, mask_x;

static void *flipper(void *arg)
{
	int flip = 0;

	(void)arg;
	while (atomic_load(&flipping) >= 0) {
		if (!atomic_load(&flipping)) {
			atomic_fetch_add(&idle_passes, 1);
			continue;
		}
		sys_signalfd4(fd, flip ? &mask_x : &mask_xy, KERNEL_SIGSET_SIZE, SFD_RAW);
		flip = !flip;
	}
	return NULL;
}

/* Pauses the flipper and waits until no signalfd4() of it is in flight. */
static void pause_flipper(void)
{
	unsigned int seen;

	atomic_store(&flipping, 0);
	seen = atomic_load(&idle_passes);
	while (atomic_load(&idle_passes) == seen)
		sched_yield();
}

static int queue_value(int sig, int value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_value.sival_int = value;
	return sys_rt_sigqueueinfo(getpid(), sig, &si);
}

/* Returns 0, or 1 after printing the first pread that is out of place. */
static int check_indexes(int iteration)
{
	uint8_t rec[SI_MAX_SIZE];
	const siginfo_t *si = (const siginfo_t *)rec;
	int k;

	for (k = NPAIRS; k >= 0; k--) {
		ssize_t n = pread(fd, rec, sizeof(rec), SFD_SHARED_QUEUE_OFFSET + k);
		int good = k == NPAIRS ? n == 0 :
			   n == SI_MAX_SIZE && si->si_signo == sig_x &&
			   si->si_value.sival_int == k;

		if (!good) {
			tap_diag("iteration %d: pread at X-index %d returned %zd bytes (signal %d, value %d)",
				 iteration, k, n, n > 0 ? si->si_signo : 0,
				 n > 0 ? si->si_value.sival_int : -1);
			return 1;
		}
	}
	return 0;
}

static int one_round(int iteration)
{
	uint8_t drain[64 * SI_MAX_SIZE];
	uint8_t *buf;
	int k, bad;

	/* A fresh buffer: its page faults widen the window between batches. */
	buf = mmap(NULL, NPAIRS * SI_MAX_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -1;
	for (k = 0; k < NPAIRS; k++)
		if (queue_value(sig_y, k) || queue_value(sig_x, k))
			return -1;
	sys_signalfd4(fd, &mask_xy, KERNEL_SIGSET_SIZE, SFD_RAW);
	atomic_store(&flipping, 1);
	if (pread(fd, buf, NPAIRS * SI_MAX_SIZE, SFD_SHARED_QUEUE_OFFSET) < 0)
		return -1;
	pause_flipper();
	sys_signalfd4(fd, &mask_x, KERNEL_SIGSET_SIZE, SFD_RAW);
	bad = check_indexes(iteration);
	sys_signalfd4(fd, &mask_xy, KERNEL_SIGSET_SIZE, SFD_RAW);
	while (read(fd, drain, sizeof(drain)) > 0)
		;
	munmap(buf, NPAIRS * SI_MAX_SIZE);
	return bad;
}

int main(int argc, char **argv)
{
	const char *env = getenv("SFD_MASKRACE_SECONDS");
	double secs = env ? atof(env) : 20, end;
	int iteration, bad = 0, opt;
	pthread_t th;
	sigset_t all;

	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't')
			return 2;
		secs = atof(optarg);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tap_skip_all_if_missing("sfd_maskrace"))
		return 0;
	sig_y = SIGRTMIN + 1;
	sig_x = SIGRTMIN + 2;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	sigemptyset(&mask_x);
	sigaddset(&mask_x, sig_x);
	mask_xy = mask_x;
	sigaddset(&mask_xy, sig_y);
	fd = sys_signalfd4(-1, &mask_xy, KERNEL_SIGSET_SIZE, SFD_RAW | SFD_NONBLOCK);
	if (fd < 0 || pthread_create(&th, NULL, flipper, NULL)) {
		printf("Bail out! setup: %s\n", strerror(errno));
		return 1;
	}
	tap_plan(1);
	end = now_s() + (secs > 0 ? secs : 20);
	for (iteration = 0; now_s() < end && !bad; iteration++)
		bad = one_round(iteration);
	atomic_store(&flipping, -1);
	pthread_join(th, NULL);
	tap_result(!bad, "%d rounds of preads racing signalfd4() mask changes leave every index in place%s",
		   iteration, bad < 0 ? " (setup failed)" : "");
	return tap_failed ? 1 : 0;
}
