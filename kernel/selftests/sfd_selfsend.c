// SPDX-License-Identifier: GPL-2.0
/*
 * A task may queue itself any siginfo (positive si_code included) with
 * rt_sigqueueinfo()/rt_tgsigqueueinfo(): that is how pending signals are
 * restored. Upstream allows it since 3.9, so no patch is needed; these
 * tests prove it and prove that impersonating the kernel or kill()/tgkill()
 * towards any *other* process or thread still fails with EPERM.
 *
 * Meaningful on an unpatched kernel too (make check-host).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
/* Tests what any kernel does: runs without the interface too. */
#define SFD_ANY_KERNEL
#include "sfd_common.h"

#define SI_KERNEL_CODE	0x80

/* si_code values a restorer must be able to requeue; >= 0 or SI_TKILL are the
 * ones the kernel reserves for itself.
 */
static const int reserved_codes[] = { SI_USER, 1, 2, SI_KERNEL_CODE, SI_TKILL };

static void make_info(siginfo_t *si, int sig, int code)
{
	si_init(si, sig, code);
	si->si_pid = 4242;
	si->si_uid = 4343;
	si->si_value.sival_int = 0x5e1f;
	/* An unusual but legal tail keeps the comparison honest. */
	((unsigned char *)si)[40] = 0x77;
}

/* Queues @si to self with @send and checks the handler gets exactly it. */
static int selfsend_delivers(int sig, const siginfo_t *si, int use_tg)
{
	int ret;

	block_signal(sig, SIG_BLOCK);
	if (capture_install(sig))
		return -1;
	if (use_tg)
		ret = sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), sig, si);
	else
		ret = sys_rt_sigqueueinfo(getpid(), sig, si);
	if (ret) {
		printf("# queue si_code=%d: %s\n", si->si_code, strerror(errno));
		capture_reset(sig);
		return -1;
	}
	block_signal(sig, SIG_UNBLOCK);
	block_signal(sig, SIG_BLOCK);
	capture_reset(sig);
	if (SIG_LOAD(ncaptured) != 1) {
		printf("# si_code=%d: %d deliveries\n", si->si_code, (int)SIG_LOAD(ncaptured));
		return -1;
	}
	return siginfo_cmp("queued vs delivered", si, &captured[0]);
}

TEST(rt_sigqueueinfo_self_any_code)
{
	unsigned int i;
	siginfo_t si;

	for (i = 0; i < ARRAY_SIZE(reserved_codes); i++) {
		make_info(&si, SIGUSR1, reserved_codes[i]);
		EXPECT_EQ(0, selfsend_delivers(SIGUSR1, &si, 0))
			TH_LOG("si_code %d", reserved_codes[i]);
	}
	make_info(&si, SIGRTMIN, SI_QUEUE);
	EXPECT_EQ(0, selfsend_delivers(SIGRTMIN, &si, 0));
}

TEST(rt_tgsigqueueinfo_self_any_code)
{
	unsigned int i;
	siginfo_t si;

	for (i = 0; i < ARRAY_SIZE(reserved_codes); i++) {
		make_info(&si, SIGRTMIN + 1, reserved_codes[i]);
		EXPECT_EQ(0, selfsend_delivers(SIGRTMIN + 1, &si, 1))
			TH_LOG("si_code %d", reserved_codes[i]);
	}
}

TEST(fault_layout_selfsend_delivered_intact)
{
	siginfo_t si;

	si_init(&si, SIGSEGV, SEGV_MAPERR);
	si.si_addr = (void *)(uintptr_t)0xdead0000;
	ASSERT_EQ(0, selfsend_delivers(SIGSEGV, &si, 0));
	si_init(&si, SIGBUS, BUS_ADRALN);
	si.si_addr = (void *)(uintptr_t)0xbeef0001;
	ASSERT_EQ(0, selfsend_delivers(SIGBUS, &si, 1));
}

/* ---- other processes ---- */

static pid_t spawn_blocked_child(void)
{
	pid_t pid;

	block_test_signals(SIG_BLOCK);
	pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST(other_process_reserved_codes_eperm)
{
	pid_t child = spawn_blocked_child();
	unsigned int i;
	siginfo_t si;

	ASSERT_LT(0, child);
	for (i = 0; i < ARRAY_SIZE(reserved_codes); i++) {
		make_info(&si, SIGUSR1, reserved_codes[i]);
		errno = 0;
		EXPECT_EQ(-1, sys_rt_sigqueueinfo(child, SIGUSR1, &si))
			TH_LOG("rt_sigqueueinfo si_code %d", reserved_codes[i]);
		EXPECT_EQ(EPERM, errno);
		errno = 0;
		EXPECT_EQ(-1, sys_rt_tgsigqueueinfo(child, child, SIGUSR1, &si))
			TH_LOG("rt_tgsigqueueinfo si_code %d", reserved_codes[i]);
		EXPECT_EQ(EPERM, errno);
	}
	/* The path itself works: a negative, non-SI_TKILL code is allowed. */
	make_info(&si, SIGUSR1, SI_QUEUE);
	EXPECT_EQ(0, sys_rt_sigqueueinfo(child, SIGUSR1, &si));
	reap(child);
}

/* ---- other threads of the same process ---- */

struct peer {
	pthread_t thread;
	pid_t tid;
	int pipefd[2];		/* closing [1] releases the peer */
	int result;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	char c;

	p->tid = sys_gettid();
	__atomic_store_n(&p->result, 1, __ATOMIC_RELEASE);
	while (read(p->pipefd[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int peer_start(struct peer *p)
{
	if (pipe(p->pipefd))
		return -1;
	p->result = 0;
	if (pthread_create(&p->thread, NULL, peer_main, p))
		return -1;
	while (!__atomic_load_n(&p->result, __ATOMIC_ACQUIRE))
		usleep(1000);
	return 0;
}

static void peer_stop(struct peer *p)
{
	close(p->pipefd[1]);
	pthread_join(p->thread, NULL);
	close(p->pipefd[0]);
}

TEST(other_thread_reserved_codes_eperm)
{
	struct peer p;
	unsigned int i;
	siginfo_t si;

	block_test_signals(SIG_BLOCK);
	ASSERT_EQ(0, peer_start(&p));
	for (i = 0; i < ARRAY_SIZE(reserved_codes); i++) {
		make_info(&si, SIGUSR2, reserved_codes[i]);
		errno = 0;
		EXPECT_EQ(-1, sys_rt_tgsigqueueinfo(getpid(), p.tid, SIGUSR2, &si))
			TH_LOG("si_code %d", reserved_codes[i]);
		EXPECT_EQ(EPERM, errno);
	}
	make_info(&si, SIGUSR2, SI_QUEUE);
	EXPECT_EQ(0, sys_rt_tgsigqueueinfo(getpid(), p.tid, SIGUSR2, &si));
	peer_stop(&p);
	flush_signal(SIGUSR2);
}

/* A non-leader thread restoring its own private queue is "self". */
struct thread_send {
	int sig;
	int code;
	int use_tg;
	int ret;
	int err;
};

static void *thread_send_main(void *arg)
{
	struct thread_send *ts = arg;
	siginfo_t si;

	make_info(&si, ts->sig, ts->code);
	errno = 0;
	if (ts->use_tg)
		ts->ret = sys_rt_tgsigqueueinfo(getpid(), sys_gettid(), ts->sig, &si);
	else
		ts->ret = sys_rt_sigqueueinfo(getpid(), ts->sig, &si);
	ts->err = errno;
	if (!ts->ret && ts->use_tg && !is_pending(ts->sig))
		ts->ret = -2;	/* must be pending for this very thread */
	flush_signal(ts->sig);
	return NULL;
}

static struct thread_send run_in_thread(int sig, int code, int use_tg)
{
	struct thread_send ts = { sig, code, use_tg, -3, 0 };
	pthread_t t;

	if (!pthread_create(&t, NULL, thread_send_main, &ts))
		pthread_join(t, NULL);
	return ts;
}

TEST(nonleader_thread_tgsigqueueinfo_self_any_code)
{
	unsigned int i;

	block_test_signals(SIG_BLOCK);
	for (i = 0; i < ARRAY_SIZE(reserved_codes); i++) {
		struct thread_send ts = run_in_thread(SIGUSR1, reserved_codes[i], 1);

		EXPECT_EQ(0, ts.ret) TH_LOG("si_code %d errno %d",
					    reserved_codes[i], ts.err);
	}
}

/*
 * The kernel compares the target pid with the caller's *thread* id, so a
 * positive si_code can be queued to the process-wide queue only from the
 * thread-group leader. Restorers must do the shared queue from the leader.
 */
TEST(nonleader_thread_sigqueueinfo_tgid_reserved_eperm)
{
	struct thread_send ts;

	block_test_signals(SIG_BLOCK);
	ts = run_in_thread(SIGUSR1, SI_USER, 0);
	EXPECT_EQ(-1, ts.ret);
	EXPECT_EQ(EPERM, ts.err);
	ts = run_in_thread(SIGUSR1, SI_QUEUE, 0);
	EXPECT_EQ(0, ts.ret) TH_LOG("errno %d", ts.err);
}

TEST_HARNESS_MAIN
