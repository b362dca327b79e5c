/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sigmig runtime: links into a process and checkpoints / restores its
 * pending signals from the inside, on request over a UNIX control socket.
 * The control protocol is documented in docs/control-protocol.md.
 */
#ifndef SIGMIG_RUNTIME_H
#define SIGMIG_RUNTIME_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sigmig/image.h>

/* Reserved by the runtime to park threads; applications must not use it. */
#define SIGMIG_FREEZE_SIGNAL	(SIGRTMAX)

enum sigmig_requeue {
	SIGMIG_REQUEUE_AUTO = 0,
	SIGMIG_REQUEUE_WRITE,
	SIGMIG_REQUEUE_SIGQUEUEINFO,
};

/* "auto", "write", "sigqueueinfo" -> 0 and *@out; -1 for anything else */
int sigmig_requeue_parse(const char *name, enum sigmig_requeue *out);

struct sigmig_runtime_opts {
	const char *ctl_path;		/* UNIX socket to listen on */
	const char *program;		/* recorded in the image */
	const char *restore_image;	/* path: restore before resuming, or NULL */
	unsigned int nthreads;		/* application threads that will register */
	/*
	 * COMMIT: called on the control thread once the reply is sent, with
	 * every application thread parked for good. It must end the process
	 * without letting them run: flush what must survive, then _exit(0)
	 * (not exit(): atexit handlers could need a lock a parked thread
	 * holds). NULL: COMMIT is refused ("not_supported"). The library
	 * itself never exits.
	 */
	void (*commit_exit)(void);
	/*
	 * With restore_image: after the restore is verified, do not resume but
	 * stay "frozen" (restored, every thread parked) until THAW resumes
	 * or COMMIT ends the process (additive field, 0 keeps the old way).
	 */
	int restore_hold;
	/*
	 * How a restore queues the image's records (additive, 0 = AUTO):
	 * AUTO writes each queue to a signalfd in one write() where the
	 * kernel can (its capabilities say so), else one rt_(tg)sigqueueinfo()
	 * per record; SIGQUEUEINFO always takes the latter; WRITE refuses to
	 * restore on a kernel without write().
	 */
	enum sigmig_requeue requeue;
};

/*
 * Before any thread is created: starts the control thread. With
 * restore_image, first reads and checks the image and raises
 * RLIMIT_SIGPENDING (nothing changes if that fails) and blocks every
 * signal in the calling thread, which its threads inherit. 0, or -errno
 * with a one-line reason in @err (the program ends the process: a
 * restore that fails must not run).
 */
int sigmig_runtime_start(const struct sigmig_runtime_opts *opts, char *err,
			 size_t errlen);

/* Name a handler so that dispositions survive the move (same binary). */
int sigmig_register_handler(const char *name,
			    void (*fn)(int, siginfo_t *, void *));

/*
 * Register @fn under @name and install it for @sig with SA_SIGINFO | @flags
 * and @mask plus SIGMIG_FREEZE_SIGNAL: a freeze then never interrupts the
 * handler, so the mask a thread is parked with is its real mask.
 */
int sigmig_install_handler(int sig, const char *name,
			   void (*fn)(int, siginfo_t *, void *), int flags,
			   const sigset_t *mask);

/*
 * Every application thread calls this once, with its stable index, before
 * doing work. When restoring, it returns only after the thread's queue has
 * been requeued and verified and the whole process is ready to resume.
 * If the restore fails, the main thread gets the error (the reason from
 * sigmig_runtime_wait_ready()) and every other thread -ECANCELED, with
 * every signal still blocked: none of them may run application code.
 */
int sigmig_thread_register(unsigned int index);

/*
 * Wait for the restore (if any) to finish: 0 on success, -errno and a
 * one-line reason in @err otherwise (then the program ends the process,
 * by convention with exit status 3). The restore itself runs on the main
 * thread (the kernel accepts a requeue of e.g. SI_USER to the process
 * only from the thread whose tid is the pid): if main does not register
 * as an application thread, it must call this after starting the threads.
 */
int sigmig_runtime_wait_ready(char *err, size_t errlen);

void sigmig_runtime_stop(void);

#endif /* SIGMIG_RUNTIME_H */
