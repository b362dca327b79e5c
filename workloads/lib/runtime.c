// SPDX-License-Identifier: GPL-2.0
/*
 * The public API (<sigmig/runtime.h>), the top layer with the control
 * server: it puts the core, freeze, restore and the server together and
 * is called by nothing else in the library.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sigmig/image.h>
#include <sigmig/runtime.h>
#include "core.h"
#include "freeze.h"
#include "handlers.h"
#include "restore.h"
#include "server.h"

int sigmig_register_handler(const char *name,
			    void (*fn)(int, siginfo_t *, void *))
{
	return sigmig_handlers_add(name, fn);
}

int sigmig_install_handler(int sig, const char *name,
			   void (*fn)(int, siginfo_t *, void *), int flags,
			   const sigset_t *mask)
{
	struct sigaction sa;
	int ret;

	if (sig == SIGMIG_FREEZE_SIGNAL)
		return -EINVAL;
	ret = sigmig_handlers_add(name, fn);
	if (ret)
		return ret;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	if (mask)
		sa.sa_mask = *mask;
	else
		sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGMIG_FREEZE_SIGNAL);
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}

static int check_opts(const struct sigmig_runtime_opts *opts, char *err,
		      size_t errlen)
{
	if (!opts || !opts->ctl_path || !opts->ctl_path[0]) {
		snprintf(err, errlen, "no control socket path");
		return -EINVAL;
	}
	if (!opts->nthreads || opts->nthreads > SIGMIG_MAX_THREADS) {
		snprintf(err, errlen, "%u application threads: 1 to %u are supported",
			 opts->nthreads, SIGMIG_MAX_THREADS);
		return -EINVAL;
	}
	return 0;
}

/* Nothing may be delivered until the queues are back and verified. */
static int prepare_restore(const struct sigmig_runtime_opts *opts, char *err,
			   size_t errlen)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	return sigmig_restore_prepare(opts->restore_image, opts->restore_hold,
				      opts->requeue, err, errlen);
}

static int start_error(int ret, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, strerror(-ret));
	return ret;
}

int sigmig_runtime_start(const struct sigmig_runtime_opts *opts, char *err,
			 size_t errlen)
{
	int ret;

	ret = check_opts(opts, err, errlen);
	if (ret)
		return ret;
	ret = sigmig_core_init(opts->nthreads, opts->program,
			       opts->restore_image ? RT_RESTORING : RT_RUNNING);
	if (ret)
		return start_error(ret, "runtime state", err, errlen);
	ret = sigmig_freeze_install();
	if (ret)
		return start_error(ret, "installing the freeze signal handler", err, errlen);
	if (opts->restore_image) {
		ret = prepare_restore(opts, err, errlen);
		if (ret)
			return ret;
	}
	ret = sigmig_server_start(opts->ctl_path, opts->commit_exit);
	if (ret)
		return start_error(ret, opts->ctl_path, err, errlen);
	return 0;
}

int sigmig_thread_register(unsigned int index)
{
	struct rt_thread *t;
	int ret;

	ret = sigmig_core_register(index, &t);
	if (ret)
		return ret;
	if (sigmig_restore_active())
		return sigmig_restore_join(t);
	sigmig_freeze_signal_unblock();
	return 0;
}

int sigmig_runtime_wait_ready(char *err, size_t errlen)
{
	return sigmig_restore_wait(err, errlen);
}

void sigmig_runtime_stop(void)
{
	sigmig_server_stop();
}
