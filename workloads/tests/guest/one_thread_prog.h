/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the single-threaded, runtime-linked guest test programs share
 * (timer-restore, unqueued-restore): the options --ctl SOCK, --restore
 * IMAGE, --state FILE (and --ledger, accepted and unused, as the agent
 * passes it), a COMMIT that exits 0, and starting the runtime with main as
 * thread 0, in which a restore runs and ends inside the registration.
 */
#ifndef SIGMIG_ONE_THREAD_PROG_H
#define SIGMIG_ONE_THREAD_PROG_H

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sigmig/runtime.h>

struct one_thread_prog {
	const char *name;
	const char *ctl, *restore, *state;
};

static void one_thread_commit_exit(void)
{
	_exit(0);
}

/* 0, or 2 (bad usage): @p->ctl is required, @p->state unless restoring. */
static inline int one_thread_args(int argc, char **argv, struct one_thread_prog *p)
{
	static const struct option lo[] = {
		{ "ctl", 1, 0, 'c' }, { "restore", 1, 0, 'r' }, { "state", 1, 0, 's' },
		{ "ledger", 1, 0, 'l' }, { 0, 0, 0, 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'c')
			p->ctl = optarg;
		else if (c == 'r')
			p->restore = optarg;
		else if (c == 's')
			p->state = optarg;
		else if (c != 'l')
			return 2;
	}
	return p->ctl && (p->state || p->restore) ? 0 : 2;
}

/*
 * Start the runtime and register main as thread 0 (the restore, if any,
 * is done when this returns 0). Else the exit status: 2, or 3 for a
 * restore that failed.
 */
static inline int one_thread_start(const struct one_thread_prog *p)
{
	struct sigmig_runtime_opts ro = {
		.program = p->name, .nthreads = 1, .ctl_path = p->ctl,
		.restore_image = p->restore, .commit_exit = one_thread_commit_exit };
	char err[256];
	int ret;

	if (sigmig_runtime_start(&ro, err, sizeof(err))) {
		fprintf(stderr, "%s: runtime: %s\n", p->name, err);
		return p->restore ? 3 : 2;
	}
	ret = sigmig_thread_register(0);
	if (ret && sigmig_runtime_wait_ready(err, sizeof(err))) {
		fprintf(stderr, "sigmig restore: %s\n", err);
		return 3;
	}
	if (ret) {
		fprintf(stderr, "%s: register: %s\n", p->name, strerror(-ret));
		return 2;
	}
	return 0;
}

#endif
