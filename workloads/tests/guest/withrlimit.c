// SPDX-License-Identifier: GPL-2.0
/*
 * withrlimit SIGPENDING_LIMIT COMMAND [ARGS...]: run COMMAND with
 * RLIMIT_SIGPENDING soft = hard = LIMIT and without CAP_SYS_RESOURCE (also
 * dropped from the bounding set, so that root keeps it off across exec):
 * COMMAND cannot raise the limit, as an unprivileged workload could not.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	struct rlimit rl;

	if (argc < 3) {
		fprintf(stderr, "usage: withrlimit SIGPENDING_LIMIT COMMAND [ARGS...]\n");
		return 2;
	}
	rl.rlim_cur = rl.rlim_max = strtoul(argv[1], NULL, 10);
	if (setrlimit(RLIMIT_SIGPENDING, &rl)) {
		perror("withrlimit: setrlimit");
		return 2;
	}
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0) && errno != EINVAL)
		perror("withrlimit: PR_CAPBSET_DROP");
	if (!syscall(SYS_capget, &hdr, data)) {
		data[0].effective &= ~(1u << CAP_SYS_RESOURCE);
		data[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
		data[0].inheritable &= ~(1u << CAP_SYS_RESOURCE);
		if (syscall(SYS_capset, &hdr, data))
			perror("withrlimit: capset");
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "withrlimit: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
