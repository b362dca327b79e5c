// SPDX-License-Identifier: GPL-2.0
/*
 * Starting a program from the program directory, in its own process
 * group with an empty mask and default dispositions, and stopping it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "workload_internal.h"

#define STOP_GRACE_MS		3000

extern char **environ;

int wl_program_path(const char *program, char *path, size_t len,
		    struct api_error *err)
{
	struct stat st;

	if (!program_name_valid(program))
		return api_error_set(err, 400, "invalid_field",
				     "program: not a valid program name");
	if (!program_allowed(program))
		return api_error_set(err, 403, "program_not_allowed",
				     "program: '%s' is not a workload program "
				     "(sigstorm, sigstorm32, sigsend)", program);
	snprintf(path, len, "%s/%s", wl_config()->bin_dir, program);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
		return api_error_set(err, 404, "unknown_program",
				     "no executable '%s' in the program directory",
				     program);
	return 0;
}

static int build_argv(struct workload *w, const char *path, bool restore,
		      char **argv)
{
	unsigned int n = 0, i;

	argv[n++] = (char *)path;
	if (restore) {
		argv[n++] = "--restore";
		argv[n++] = w->image;
		if (w->hold)
			argv[n++] = "--restore-hold";
	}
	if (w->criu) {
		argv[n++] = "--ledger";
		argv[n++] = w->ledger;
	}
	if (w->control) {
		argv[n++] = "--ctl";
		argv[n++] = w->sock;
		argv[n++] = "--ledger";
		argv[n++] = w->ledger;
	}
	for (i = 0; i < w->args.argc; i++)
		argv[n++] = w->args.argv[i];
	argv[n] = NULL;
	return (int)n;
}

/*
 * --max-output as the workload's RLIMIT_FSIZE: a write past it is cut
 * short, the next one fails (EFBIG) and raises SIGXFSZ, which ends a
 * program that does not handle it. Its log and ledger, the disk of the
 * state directory, stay bounded whatever it prints.
 */
static struct rlimit output_limit(void)
{
	uint64_t max = wl_config()->max_output;
	struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };

	if (max)
		r.rlim_cur = r.rlim_max = (rlim_t)max;
	return r;
}

int wl_limit_output(pid_t pid)
{
	struct rlimit r = output_limit();

	return prlimit(pid, RLIMIT_FSIZE, &r, NULL) ? errno : 0;
}

/*
 * The agent blocks its shutdown signals in every thread: the child starts
 * with an empty mask and default dispositions, in its own process group so
 * that a terminal's ^C aimed at the agent does not reach it.
 */
static int spawn_child(struct workload *w, char **argv, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int err;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, w->log,
					 O_WRONLY | O_CREAT | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	err = posix_spawn(pid, argv[0], &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return err;
	/*
	 * posix_spawn() sets no rlimit: as it starts, fail closed. ESRCH: it
	 * has ended and the reaper thread has reaped it already (its exit is
	 * recorded once we drop the table lock): there is nothing to bound.
	 */
	err = wl_limit_output(*pid);
	if (err == ESRCH)
		return 0;
	if (err)
		kill(*pid, SIGKILL);	/* the reaper thread reaps it */
	return err;
}

/*
 * Engine "criu": pid 1 of a PID namespace of its own, so that CRIU can
 * restore it on any host whatever pids are in use there. posix_spawn()
 * cannot create one: a raw clone() that only execs, with the same set-up
 * as spawn_child() made of async-signal-safe calls.
 */
static int spawn_in_pid_namespace(struct workload *w, char **argv, pid_t *pid)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct rlimit fsize = output_limit();
	sigset_t none;
	long child;
	int fd, sig;

	sigemptyset(&none);
	child = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
	if (child < 0)
		return errno;
	if (child > 0) {
		*pid = (pid_t)child;
		return 0;
	}
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* CRIU dumps a session only from inside the namespace: lead one */
	setsid();
	if (setrlimit(RLIMIT_FSIZE, &fsize))
		_exit(127);
	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	fd = open(w->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		_exit(127);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	execve(argv[0], argv, environ);
	_exit(127);
}

int wl_spawn(struct workload *w, void *args, struct api_error *err)
{
	const struct wl_spawn_args *a = args;
	char *argv[WORKLOAD_ARGS_MAX + 10];
	int ret;

	unlink(w->sock);
	if (a->image_tmp && rename(a->image_tmp, w->image))
		return api_error_set(err, 500, "internal", "%s: its image file: %s",
				     w->id, strerror(errno));
	build_argv(w, a->path, a->image_tmp != NULL, argv);
	ret = w->criu ? spawn_in_pid_namespace(w, argv, &w->pid) :
			spawn_child(w, argv, &w->pid);
	if (ret)
		return api_error_set(err, 500, "spawn_failed", "%s: %s",
				     w->program, strerror(ret));
	clock_gettime(CLOCK_REALTIME, &w->started);
	wl_record_start_time(w);
	log_info("workload %s: started %s (pid %d)%s", w->id, w->program,
		 w->pid, a->image_tmp ? " to restore an image" : "");
	return 0;
}

/* The last line of the file @path: a program's or a tool's reason. */
void wl_last_line(const char *path, char *buf, size_t len)
{
	char tail[1024];
	ssize_t n = 0;
	char *line;
	off_t size;
	int fd;

	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0)
		n = pread(fd, tail, sizeof(tail) - 1,
			  size > (off_t)sizeof(tail) - 1 ? size - (off_t)sizeof(tail) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	tail[n] = '\0';
	while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
		tail[--n] = '\0';
	line = strrchr(tail, '\n');
	line = line ? line + 1 : tail;
	n = (ssize_t)strnlen(line, len - 1);
	memcpy(buf, line, (size_t)n);
	buf[n] = '\0';
}

static void describe_exit(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* Called with the workload's exit recorded. */
int wl_exit_error(struct workload *w, unsigned int status, const char *code,
		  const char *what, struct api_error *err)
{
	char how[64], line[256];
	int wait_status;

	wl_lock();
	wait_status = w->wait_status;
	wl_unlock();
	describe_exit(wait_status, how, sizeof(how));
	wl_last_line(w->log, line, sizeof(line));
	return api_error_set(err, status, code, "%s: %s %s%s%s", w->id, what,
			     how, line[0] ? ": " : "", line);
}

/* Until the control socket answers: the program is up and registered. */
static int wait_runtime_ready(struct workload *w, struct api_error *err)
{
	int64_t deadline = clock_mono_ms() + START_TIMEOUT_MS;
	struct ctl_reply reply;

	for (;;) {
		if (wl_is_exited(w))
			return wl_exit_error(w, 422, "start_failed", w->program, err);
		if (ctl_request(w->sock, "STATUS", 1000, &reply) == 0) {
			ctl_reply_free(&reply);
			return 0;
		}
		if (clock_mono_ms() >= deadline) {
			wl_kill_group(w, SIGKILL);
			return api_error_set(err, 504, "start_timeout",
					     "%s: no answer on its control socket after %d ms",
					     w->id, START_TIMEOUT_MS);
		}
		clock_sleep_ms(POLL_INTERVAL_MS);
	}
}

/*
 * sigsend runs as root and would signal any process, the guest's init
 * among them: it may aim only at this agent's live workloads. (A pid
 * freed and reused while it sends is not covered.)
 */
static int sigsend_targets_allowed(const struct start_request *req,
				   struct api_error *err)
{
	long pids[WORKLOAD_ARGS_MAX];
	struct verror verr;
	int n, i;

	if (strcmp(req->program, "sigsend"))
		return 0;
	n = sigsend_targets(&req->args, pids, WORKLOAD_ARGS_MAX, &verr);
	if (n < 0)
		return api_error_set(err, 400, verr.code, "%s", verr.detail);
	for (i = 0; i < n; i++)
		if (!wl_pid_is_workload((pid_t)pids[i]))
			return api_error_set(err, 403, "target_not_allowed",
					     "sigsend may signal this agent's running "
					     "workloads only: pid %ld is not one", pids[i]);
	return 0;
}

int workload_start(const struct start_request *req, struct workload **out,
		   struct api_error *err)
{
	struct wl_spawn_args spawn = { 0 };
	char path[PATH_MAX];
	struct workload *w;

	if (wl_program_path(req->program, path, sizeof(path), err) ||
	    sigsend_targets_allowed(req, err))
		return -1;
	w = wl_new(req->program, &req->args, req->control, err);
	if (!w)
		return -1;
	w->criu = req->criu;
	spawn.path = path;
	if (wl_publish(w, wl_spawn, &spawn, err))
		goto fail;
	if (w->control && wait_runtime_ready(w, err)) {
		wl_remove(w);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	workload_put(w);
	return -1;
}

/*
 * A frozen runtime blocks SIGTERM: let it go first. A held restore must
 * deliver nothing (its source may be running): COMMIT ends it without
 * resuming, SIGKILL below if not.
 */
static void end_process(struct workload *w)
{
	struct ctl_reply reply;

	if (w->control && ctl_request(w->sock, wl_is_held(w) ? "COMMIT" : "THAW",
				      2000, &reply) == 0)
		ctl_reply_free(&reply);
	wl_kill_group(w, SIGCONT);
	/* pid 1 of its namespace: SIGTERM without a handler is ignored */
	wl_kill_group(w, w->criu ? SIGKILL : SIGTERM);
	if (!wl_wait_exit(w, STOP_GRACE_MS)) {
		wl_kill_group(w, SIGKILL);
		wl_wait_exit(w, STOP_GRACE_MS);
	}
}

int workload_stop(struct workload *w, json_t **final, struct api_error *err)
{
	(void)err;
	if (!wl_is_exited(w))
		end_process(w);
	wl_remove(w);
	unlink(w->sock);
	unlink(w->image);
	*final = workload_to_json(w, false);
	log_info("workload %s: stopped and removed", w->id);
	return 0;
}
