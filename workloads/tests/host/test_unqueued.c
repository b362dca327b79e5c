// SPDX-License-Identifier: GPL-2.0
/*
 * unqueued.c on the host kernel: a queue's pending set as /proc shows it,
 * and the records added for signals pending without an entry.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../../lib/unqueued.h"
#include "tap.h"

static int signo_of(const struct sigmig_siginfo *e)
{
	int32_t signo;

	memcpy(&signo, e->bytes, sizeof(signo));
	return signo;
}

static void record_of(struct sigmig_siginfo *e, int32_t signo, int32_t code)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->bytes, &signo, sizeof(signo));
	memcpy(e->bytes + 8, &code, sizeof(code));
}

static void test_pending_set(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	uint64_t own = 0, shared = 0;
	int own_ret, shared_ret;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGRTMIN + 3);
	sigprocmask(SIG_BLOCK, &set, NULL);
	syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
	kill(getpid(), SIGRTMIN + 3);
	own_ret = sigmig_pending_set(tid, 0, &own);
	shared_ret = sigmig_pending_set(tid, 1, &shared);
	ok(!own_ret && own == 1ULL << (SIGUSR1 - 1),
	   "SigPnd of this thread: SIGUSR1 alone (%#llx)", (unsigned long long)own);
	ok(!shared_ret && shared == 1ULL << (SIGRTMIN + 3 - 1),
	   "ShdPnd: SIGRTMIN+3 alone (%#llx)", (unsigned long long)shared);
	ok(sigmig_pending_set(-1, 0, &own) < 0, "a tid that does not exist is an error");
	while (sigtimedwait(&set, NULL, &(struct timespec){ 0, 0 }) > 0)
		;
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void test_add_unqueued(void)
{
	struct sigmig_siginfo recs[2], *owned;
	struct sigmig_queue q = { .count = 2, .entries = recs };
	uint64_t pending;
	uint32_t added;
	int32_t code;
	int ret;

	record_of(&recs[0], SIGRTMIN + 1, -1);
	record_of(&recs[1], SIGUSR2, 0);
	pending = 1ULL << (SIGRTMIN + 1 - 1) | 1ULL << (SIGUSR2 - 1);
	ok(sigmig_append_unqueued(&q, sigmig_unqueued_set(&q, pending), &owned, &added) == 0 && !added &&
	   !owned && q.entries == recs && q.count == 2,
	   "every pending signal has a record: nothing added");

	pending |= 1ULL << (SIGRTMIN + 7 - 1) | 1ULL << (SIGUSR1 - 1) |
		   1ULL << (SIGKILL - 1) | 1ULL << (SIGSTOP - 1);
	ret = sigmig_append_unqueued(&q, sigmig_unqueued_set(&q, pending), &owned, &added);
	ok(!ret && added == 2 && q.count == 4 && q.entries == owned,
	   "two signals without a record (SIGKILL, SIGSTOP aside): %u added", added);
	ok(!memcmp(q.entries, recs, sizeof(recs)), "the queue's records come first, unchanged");
	memcpy(&code, q.entries[2].bytes + 8, sizeof(code));
	ok(signo_of(&q.entries[2]) == SIGUSR1 && signo_of(&q.entries[3]) == SIGRTMIN + 7 &&
	   code == SI_USER, "then SIGUSR1 and SIGRTMIN+7, lowest first, SI_USER");
	ok(!memcmp(q.entries[3].bytes + 4, (char[124]){ 0 }, 124),
	   "everything but si_signo is zero, as collect_signal() makes it");
	free(owned);
}

int main(void)
{
	tap_plan_start();
	test_pending_set();
	test_add_unqueued();
	return tap_done();
}
