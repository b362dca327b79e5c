// SPDX-License-Identifier: GPL-2.0
/*
 * The core-dump bit of a wait status: set for a signal whose default
 * action dumps core (SIGQUIT, SIGSEGV, SIGABRT, ...) when RLIMIT_CORE
 * allows a core, clear when it does not and for signals that only
 * terminate. Also for a core signal that was pending and is requeued with
 * rt_sigqueueinfo(), as a restore does: delivery after the move must end
 * the process the way it would have ended before. Needs CONFIG_COREDUMP
 * and CONFIG_ELF_CORE; the core file goes where core_pattern says.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
/* Tests what any kernel does: runs without the interface too. */
#define SFD_ANY_KERNEL
#include "sfd_common.h"

enum how { BY_KILL, BY_REQUEUE };

/* 1 if core_pattern writes a plain "core" file into the cwd. */
static int core_in_cwd(void)
{
	char pat[256] = "";
	int fd = open("/proc/sys/kernel/core_pattern", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, pat, sizeof(pat) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	pat[strcspn(pat, "\n")] = '\0';
	return !strcmp(pat, "core");
}

/* Requeues @sig with the siginfo a pending SIGQUIT would have been dumped with. */
static void requeue_and_unblock(int sig)
{
	siginfo_t si;

	block_signal(sig, SIG_BLOCK);
	si_init(&si, sig, SI_QUEUE);
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = 0x5c;
	if (sys_rt_sigqueueinfo(getpid(), sig, &si))
		_exit(90);
	block_signal(sig, SIG_UNBLOCK);
	_exit(91);
}

/* The wait status of a child that dies of @sig with RLIMIT_CORE @core. */
static int die_of(int sig, rlim_t core, enum how how, const char *dir)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit rl = { core, core };

		if (setrlimit(RLIMIT_CORE, &rl) || chdir(dir))
			_exit(92);
		signal(sig, SIG_DFL);
		if (how == BY_REQUEUE)
			requeue_and_unblock(sig);
		block_signal(sig, SIG_UNBLOCK);
		kill(getpid(), sig);
		_exit(93);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

FIXTURE(coredump)
{
	char dir[64];
};

FIXTURE_SETUP(coredump)
{
	strcpy(self->dir, "/tmp/sfd_coredump.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(coredump)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/core", self->dir);
	unlink(path);
	rmdir(self->dir);
}

static void expect_dump(struct __test_metadata *_metadata,
			struct _test_data_coredump *self, int sig, enum how how)
{
	char path[96];
	struct stat st;
	int status;

	status = die_of(sig, 64 << 20, how, self->dir);
	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("%s: status %#x", strsignal(sig), status);
	EXPECT_EQ(sig, WTERMSIG(status));
	EXPECT_TRUE(WCOREDUMP(status))
		TH_LOG("%s: no core-dump bit (status %#x): CONFIG_COREDUMP?",
		       strsignal(sig), status);
	if (!core_in_cwd())
		return;
	snprintf(path, sizeof(path), "%s/core", self->dir);
	EXPECT_EQ(0, stat(path, &st)) TH_LOG("%s: no core file", strsignal(sig));
	EXPECT_LT(0, st.st_size);
	unlink(path);
}

TEST_F(coredump, core_signals_set_the_bit)
{
	static const int sigs[] = { SIGQUIT, SIGSEGV, SIGABRT, SIGILL, SIGBUS,
				    SIGFPE, SIGTRAP, SIGSYS, SIGXCPU };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		expect_dump(_metadata, self, sigs[i], BY_KILL);
}

TEST_F(coredump, requeued_pending_core_signal_sets_the_bit)
{
	expect_dump(_metadata, self, SIGQUIT, BY_REQUEUE);
	expect_dump(_metadata, self, SIGSEGV, BY_REQUEUE);
}

TEST_F(coredump, no_bit_without_rlimit_core)
{
	int status = die_of(SIGQUIT, 0, BY_KILL, self->dir);

	ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
	EXPECT_EQ(SIGQUIT, WTERMSIG(status));
	EXPECT_FALSE(WCOREDUMP(status));
}

TEST_F(coredump, no_bit_for_terminating_signals)
{
	static const int sigs[] = { SIGTERM, SIGKILL, SIGUSR1, SIGHUP };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sigs); i++) {
		int status = die_of(sigs[i], 64 << 20, BY_KILL, self->dir);

		ASSERT_TRUE(WIFSIGNALED(status)) TH_LOG("status %#x", status);
		EXPECT_EQ(sigs[i], WTERMSIG(status));
		EXPECT_FALSE(WCOREDUMP(status)) TH_LOG("%s", strsignal(sigs[i]));
	}
}

TEST_HARNESS_MAIN
