// SPDX-License-Identifier: GPL-2.0
/*
 * A signalfd's mode flags (SFD_RAW, SFD_PRIVATE, SFD_GROUP) are not in
 * F_GETFL: /proc/PID/fdinfo/FD shows them as "sfd-flags:" next to
 * "sigmask:", so that a checkpointer can create the same fd again. Each
 * mode is read back, survives a mask change, and an fd made from what
 * fdinfo says shows the same lines.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "../kselftest_harness.h"
#include "sfd_common.h"

static const int modes[] = {
	0, SFD_RAW, SFD_GROUP, SFD_PRIVATE,
	SFD_RAW | SFD_GROUP, SFD_RAW | SFD_PRIVATE,
};

/* Copies the value after "@key" in fdinfo of @fd into @val; 0 if found. */
static int fdinfo_field(int fd, const char *key, char *val, size_t len)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen))
			continue;
		snprintf(val, len, "%s", line + klen + strspn(line + klen, "\t "));
		val[strcspn(val, "\n")] = '\0';
		found = 0;
	}
	fclose(f);
	return found;
}

/* The mode fdinfo reports for @fd, or -1 when it has no sfd-flags line. */
static int fdinfo_mode(int fd)
{
	char val[64], *end;
	long mode;

	if (fdinfo_field(fd, "sfd-flags:", val, sizeof(val)))
		return -1;
	errno = 0;
	mode = strtol(val, &end, 8);
	if (errno || end == val || *end || val[0] != '0')
		return -2;
	return (int)mode;
}

static int open_mask(int flags, int sig)
{
	sigset_t m;

	sigemptyset(&m);
	sigaddset(&m, sig);
	return sys_signalfd4(-1, &m, KERNEL_SIGSET_SIZE, flags);
}

TEST(mode_shown_for_every_mode)
{
	unsigned int i;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		int fd = open_mask(modes[i] | SFD_NONBLOCK | SFD_CLOEXEC, SIGRTMIN);

		ASSERT_LE(0, fd) TH_LOG("mode %#o: %s", modes[i], strerror(errno));
		/* SFD_NONBLOCK and SFD_CLOEXEC live in flags: as ever */
		EXPECT_EQ(modes[i], fdinfo_mode(fd)) TH_LOG("created with %#o", modes[i]);
		EXPECT_EQ(0, fcntl(fd, F_GETFL) & (O_DIRECT | O_DIRECTORY | O_EXCL));
		close(fd);
	}
}

TEST(mode_kept_across_a_mask_change)
{
	char before[64], after[64];
	sigset_t m;
	int fd;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	fd = open_mask(SFD_RAW | SFD_PRIVATE, SIGRTMIN);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fdinfo_field(fd, "sigmask:", before, sizeof(before)));
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	ASSERT_EQ(fd, sys_signalfd4(fd, &m, KERNEL_SIGSET_SIZE, SFD_RAW | SFD_PRIVATE));
	ASSERT_EQ(0, fdinfo_field(fd, "sigmask:", after, sizeof(after)));
	EXPECT_STRNE(before, after);
	EXPECT_EQ(SFD_RAW | SFD_PRIVATE, fdinfo_mode(fd));
	close(fd);
}

/* What a restorer does: make the fd again from its fdinfo alone. */
TEST(fd_recreated_from_fdinfo_shows_the_same)
{
	char mask[64], mask2[64];
	unsigned long long bits;
	int fd, fd2, mode, sig;
	sigset_t m;

	ASSERT_TRUE(sfd_interface_present()) TH_LOG(SFD_MISSING_MSG);
	fd = open_mask(SFD_RAW | SFD_GROUP, SIGRTMIN + 3);
	ASSERT_LE(0, fd);
	mode = fdinfo_mode(fd);
	ASSERT_LE(0, mode);
	ASSERT_EQ(0, fdinfo_field(fd, "sigmask:", mask, sizeof(mask)));
	bits = strtoull(mask, NULL, 16);
	sigemptyset(&m);
	for (sig = 1; sig <= 64; sig++)
		if (bits & (1ULL << (sig - 1)))
			sigaddset(&m, sig);
	fd2 = sys_signalfd4(-1, &m, KERNEL_SIGSET_SIZE, mode);
	ASSERT_LE(0, fd2) TH_LOG("signalfd4(mode %#o): %s", mode, strerror(errno));
	ASSERT_EQ(0, fdinfo_field(fd2, "sigmask:", mask2, sizeof(mask2)));
	EXPECT_STREQ(mask, mask2);
	EXPECT_EQ(SFD_RAW | SFD_GROUP, fdinfo_mode(fd2));
	close(fd2);
	close(fd);
}

TEST_HARNESS_MAIN
