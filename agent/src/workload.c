// SPDX-License-Identifier: GPL-2.0
/*
 * The workload table. A mutex protects the table and every field of every
 * workload; control-socket round trips and waits happen without it.
 * Workloads are reference counted so that a request can keep using one
 * that a concurrent DELETE has just removed from the table.
 *
 * Children are reaped by one thread calling waitpid(-1): spawning and
 * inserting happen under the table lock, so an exit is never reaped before
 * its workload can be found.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "workload.h"

#define STATE_PATH_MAX		256
#define STOP_GRACE_MS		3000
#define COMMIT_EXIT_MS		5000
#define POLL_INTERVAL_MS	20

extern char **environ;

struct workload {
	unsigned int refs;
	bool in_table;
	char id[16];
	char program[PROGRAM_NAME_MAX + 1];
	struct workload_args args;
	bool control;
	pid_t pid;
	bool exited;
	int wait_status;
	bool frozen;		/* as last set through the agent */
	bool busy;
	bool restored;
	bool hold;		/* restore with --restore-hold */
	bool held;		/* restored, frozen until THAW or COMMIT */
	bool committed;
	char migrated_to[TARGET_HOST_MAX + 32];
	struct timespec started;
	json_t *restore_info;
	char sock[STATE_PATH_MAX];
	char ledger[STATE_PATH_MAX];
	char log[STATE_PATH_MAX];
	char image[STATE_PATH_MAX];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	const struct agent_config *cfg;
	struct workload **slots;
	unsigned long next_id;
	pthread_t reaper;
	bool stopping;
} table = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Called with table.lock held. */
static struct workload *find_by_pid(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < table.cfg->max_workloads; i++)
		if (table.slots[i] && table.slots[i]->pid == pid)
			return table.slots[i];
	return NULL;
}

static void record_exit(pid_t pid, int status)
{
	struct workload *w;

	pthread_mutex_lock(&table.lock);
	w = find_by_pid(pid);
	if (w && !w->exited) {
		w->exited = true;
		w->wait_status = status;
		log_info("workload %s (pid %d) %s %d", w->id, pid,
			 WIFSIGNALED(status) ? "killed by signal" : "exited with",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	pthread_cond_broadcast(&table.changed);
	pthread_mutex_unlock(&table.lock);
}

static void wait_for_children(void)
{
	struct timespec until;

	pthread_mutex_lock(&table.lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 200 * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	if (!table.stopping)
		pthread_cond_timedwait(&table.changed, &table.lock, &until);
	pthread_mutex_unlock(&table.lock);
}

static void *reaper_main(void *arg)
{
	int status;
	pid_t pid;

	(void)arg;
	for (;;) {
		pid = waitpid(-1, &status, 0);
		if (pid > 0) {
			record_exit(pid, status);
			continue;
		}
		if (errno == EINTR)
			continue;
		wait_for_children();
	}
	return NULL;
}

/* Resume numbering after any state file an earlier agent left behind. */
static unsigned long first_free_id(const char *dir)
{
	unsigned long n, max = 0;
	struct dirent *de;
	char id[16];
	DIR *d;

	d = opendir(dir);
	if (!d)
		return 1;
	while ((de = readdir(d))) {
		size_t len = strcspn(de->d_name, ".");

		if (len >= sizeof(id))
			continue;
		memcpy(id, de->d_name, len);
		id[len] = '\0';
		n = workload_id_number(id);
		if (n > max)
			max = n;
	}
	closedir(d);
	return max + 1;
}

int workloads_init(const struct agent_config *cfg)
{
	struct sockaddr_un sun;
	pthread_condattr_t attr;
	int err;

	if (strlen(cfg->state_dir) + 24 > sizeof(sun.sun_path)) {
		log_error("--state-dir %s: too long for a socket path",
			  cfg->state_dir);
		return -1;
	}
	if (mkdir(cfg->state_dir, 0700) && errno != EEXIST) {
		log_error("--state-dir %s: %s", cfg->state_dir, strerror(errno));
		return -1;
	}
	table.cfg = cfg;
	table.slots = calloc(cfg->max_workloads, sizeof(*table.slots));
	if (!table.slots)
		return -1;
	table.next_id = first_free_id(cfg->state_dir);
	pthread_condattr_init(&attr);
	pthread_cond_init(&table.changed, &attr);
	pthread_condattr_destroy(&attr);
	err = pthread_create(&table.reaper, NULL, reaper_main, NULL);
	if (err) {
		log_error("reaper thread: %s", strerror(err));
		return -1;
	}
	pthread_detach(table.reaper);
	return 0;
}

static void free_workload(struct workload *w)
{
	workload_args_free(&w->args);
	json_decref(w->restore_info);
	free(w);
}

void workload_put(struct workload *w)
{
	bool last;

	if (!w)
		return;
	pthread_mutex_lock(&table.lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&table.lock);
	if (last)
		free_workload(w);
}

struct workload *workload_find(const char *id)
{
	struct workload *w = NULL;
	unsigned int i;

	if (!workload_id_valid(id))
		return NULL;
	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (table.slots[i] && strcmp(table.slots[i]->id, id) == 0) {
			w = table.slots[i];
			w->refs++;
			break;
		}
	}
	pthread_mutex_unlock(&table.lock);
	return w;
}

const char *workload_id(const struct workload *w)
{
	return w->id;
}

bool workload_has_runtime(const struct workload *w)
{
	return w->control;
}

pid_t workload_pid(const struct workload *w)
{
	return w->pid;
}

const char *workload_program(const struct workload *w)
{
	return w->program;
}

const struct workload_args *workload_args(const struct workload *w)
{
	return &w->args;
}

const char *workload_file(const struct workload *w, const char *which)
{
	if (strcmp(which, "log") == 0)
		return w->log;
	if (strcmp(which, "ledger") == 0 && w->control)
		return w->ledger;
	return NULL;
}

static bool is_exited(struct workload *w)
{
	bool exited;

	pthread_mutex_lock(&table.lock);
	exited = w->exited;
	pthread_mutex_unlock(&table.lock);
	return exited;
}

/* Waits up to @ms for the reaper to see @w exit. */
static bool wait_exit(struct workload *w, unsigned int ms)
{
	int64_t deadline = mono_ms() + ms;

	while (!is_exited(w)) {
		if (mono_ms() >= deadline)
			return false;
		sleep_ms(POLL_INTERVAL_MS);
	}
	return true;
}

static void set_state_paths(struct workload *w)
{
	const char *dir = table.cfg->state_dir;

	snprintf(w->sock, sizeof(w->sock), "%s/%s.sock", dir, w->id);
	snprintf(w->ledger, sizeof(w->ledger), "%s/%s.ledger", dir, w->id);
	snprintf(w->log, sizeof(w->log), "%s/%s.log", dir, w->id);
	snprintf(w->image, sizeof(w->image), "%s/%s.image", dir, w->id);
}

static struct workload *new_workload(const char *program,
				     const struct workload_args *args,
				     bool control, struct api_error *err)
{
	struct workload *w;
	unsigned int i;

	w = calloc(1, sizeof(*w));
	if (!w) {
		api_error_set(err, 500, "internal", "out of memory");
		return NULL;
	}
	snprintf(w->program, sizeof(w->program), "%s", program);
	w->control = control;
	for (i = 0; i < args->argc; i++) {
		w->args.argv[i] = strdup(args->argv[i]);
		if (!w->args.argv[i]) {
			free_workload(w);
			api_error_set(err, 500, "internal", "out of memory");
			return NULL;
		}
		w->args.argc++;
	}
	w->refs = 1;
	return w;
}

static int program_path(const char *program, char *path, size_t len,
			struct api_error *err)
{
	struct stat st;

	if (!program_name_valid(program))
		return api_error_set(err, 400, "invalid_field",
				     "program: not a valid program name");
	snprintf(path, len, "%s/%s", table.cfg->bin_dir, program);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
		return api_error_set(err, 404, "unknown_program",
				     "no executable '%s' in %s", program,
				     table.cfg->bin_dir);
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
	return err;
}

/* Gives @w an id and a slot, spawns it and publishes it, atomically. */
static int insert_and_spawn(struct workload *w, const char *path,
			    const char *image_tmp, struct api_error *err)
{
	bool restore = image_tmp != NULL;
	char *argv[WORKLOAD_ARGS_MAX + 10];
	unsigned int i, slot = UINT_MAX;
	int ret;

	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.cfg->max_workloads && slot == UINT_MAX; i++)
		if (!table.slots[i])
			slot = i;
	if (slot == UINT_MAX) {
		pthread_mutex_unlock(&table.lock);
		return api_error_set(err, 409, "too_many_workloads",
				     "the agent tracks at most %u workloads; "
				     "DELETE some first", table.cfg->max_workloads);
	}
	snprintf(w->id, sizeof(w->id), "w%lu", table.next_id++);
	set_state_paths(w);
	unlink(w->sock);
	if (restore && rename(image_tmp, w->image)) {
		pthread_mutex_unlock(&table.lock);
		return api_error_set(err, 500, "internal", "%s: %s", w->image,
				     strerror(errno));
	}
	build_argv(w, path, restore, argv);
	ret = spawn_child(w, argv, &w->pid);
	if (ret) {
		pthread_mutex_unlock(&table.lock);
		return api_error_set(err, 500, "spawn_failed", "%s: %s", path,
				     strerror(ret));
	}
	clock_gettime(CLOCK_REALTIME, &w->started);
	w->in_table = true;
	w->refs++;
	table.slots[slot] = w;
	pthread_mutex_unlock(&table.lock);
	log_info("workload %s: started %s (pid %d)%s", w->id, w->program,
		 w->pid, restore ? " to restore an image" : "");
	return 0;
}

static void remove_from_table(struct workload *w)
{
	unsigned int i;
	bool drop = false;

	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (table.slots[i] == w) {
			table.slots[i] = NULL;
			w->in_table = false;
			drop = true;
		}
	}
	pthread_mutex_unlock(&table.lock);
	if (drop)
		workload_put(w);
}

/* The last line the program wrote: its one-line reason on failure. */
static void last_log_line(const struct workload *w, char *buf, size_t len)
{
	char tail[1024];
	ssize_t n = 0;
	char *line;
	off_t size;
	int fd;

	buf[0] = '\0';
	fd = open(w->log, O_RDONLY | O_CLOEXEC);
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

static void kill_group(struct workload *w, int sig)
{
	pthread_mutex_lock(&table.lock);
	if (!w->exited && w->pid > 0)
		kill(-w->pid, sig);
	pthread_mutex_unlock(&table.lock);
}

static int exit_error(struct workload *w, unsigned int status,
		      const char *code, const char *what, struct api_error *err)
{
	char how[64], line[256];

	describe_exit(w->wait_status, how, sizeof(how));
	last_log_line(w, line, sizeof(line));
	return api_error_set(err, status, code, "%s: %s %s%s%s", w->id, what,
			     how, line[0] ? ": " : "", line);
}

static const char *reply_state(const struct ctl_reply *reply)
{
	return json_string_value(json_object_get(reply->json, "state"));
}

/* Until the control socket answers: the program is up and registered. */
static int wait_runtime_ready(struct workload *w, struct api_error *err)
{
	int64_t deadline = mono_ms() + START_TIMEOUT_MS;
	struct ctl_reply reply;

	for (;;) {
		if (is_exited(w))
			return exit_error(w, 422, "start_failed", w->program, err);
		if (ctl_request(w->sock, "STATUS", 1000, &reply) == 0) {
			ctl_reply_free(&reply);
			return 0;
		}
		if (mono_ms() >= deadline) {
			kill_group(w, SIGKILL);
			return api_error_set(err, 504, "start_timeout",
					     "%s: no answer on %s after %d ms",
					     w->id, w->sock, START_TIMEOUT_MS);
		}
		sleep_ms(POLL_INTERVAL_MS);
	}
}

int workload_start(const struct start_request *req, struct workload **out,
		   struct api_error *err)
{
	char path[PATH_MAX];
	struct workload *w;

	if (program_path(req->program, path, sizeof(path), err))
		return -1;
	w = new_workload(req->program, &req->args, req->control, err);
	if (!w)
		return -1;
	if (insert_and_spawn(w, path, NULL, err))
		goto fail;
	if (w->control && wait_runtime_ready(w, err)) {
		remove_from_table(w);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	workload_put(w);
	return -1;
}

static int write_image(const char *path, const uint8_t *image, size_t len,
		       struct api_error *err)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return api_error_set(err, 500, "internal", "%s: %s", path,
				     strerror(errno));
	while (len) {
		n = write(fd, image, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			api_error_set(err, 500, "internal", "%s: %s", path,
				      strerror(errno));
			close(fd);
			unlink(path);
			return -1;
		}
		image += n;
		len -= (size_t)n;
	}
	close(fd);
	return 0;
}

/* Failed restores do not resume anything; make sure the process is gone. */
static void reap_failed_restore(struct workload *w)
{
	if (!wait_exit(w, 2000)) {
		kill_group(w, SIGKILL);
		wait_exit(w, 2000);
	}
}

static int restore_failed(struct workload *w, const struct ctl_reply *reply,
			  struct api_error *err)
{
	api_error_set(err, 422, "restore_failed", "%s: restore failed: %s",
		      w->id, ctl_reply_message(reply));
	snprintf(err->cause, sizeof(err->cause), "%s",
		 json_string_value(json_object_get(reply->json, "error")) ?: "");
	reap_failed_restore(w);
	return -1;
}

/* One STATUS poll: 1 keep waiting, 0 running, -1 failed. */
static int poll_restore(struct workload *w, struct api_error *err)
{
	struct ctl_reply reply;
	const char *state;
	int ret = 1;

	if (is_exited(w))
		return exit_error(w, 422, "restore_failed", "restore failed:",
				  err);
	if (ctl_request(w->sock, "STATUS", 1000, &reply))
		return 1;
	state = reply_state(&reply);
	if (state && w->hold && strcmp(state, "frozen") == 0 &&
	    json_is_true(json_object_get(reply.json, "restored"))) {
		/* Held: parked, nothing delivered until THAW or COMMIT. */
		pthread_mutex_lock(&table.lock);
		w->restored = true;
		w->held = true;
		w->frozen = true;
		w->restore_info = json_incref(json_object_get(reply.json,
							      "restore"));
		pthread_mutex_unlock(&table.lock);
		ret = 0;
	} else if (state && strcmp(state, "running") == 0) {
		pthread_mutex_lock(&table.lock);
		w->restored = true;
		w->restore_info = json_incref(json_object_get(reply.json,
							      "restore"));
		pthread_mutex_unlock(&table.lock);
		ret = 0;
	} else if (state && strcmp(state, "failed") == 0) {
		ret = restore_failed(w, &reply, err);
	}
	ctl_reply_free(&reply);
	return ret;
}

static int wait_restored(struct workload *w, struct api_error *err)
{
	int64_t deadline = mono_ms() + table.cfg->restore_timeout_ms;
	int ret;

	while ((ret = poll_restore(w, err)) == 1) {
		if (mono_ms() >= deadline) {
			kill_group(w, SIGKILL);
			wait_exit(w, 2000);
			return api_error_set(err, 504, "restore_timeout",
					     "%s: not running after %u ms",
					     w->id, table.cfg->restore_timeout_ms);
		}
		sleep_ms(POLL_INTERVAL_MS);
	}
	return ret;
}

int workload_restore(const uint8_t *image, size_t len, const char *program,
		     const struct workload_args *args, bool hold,
		     struct workload **out, struct api_error *err)
{
	char path[PATH_MAX], image_path[STATE_PATH_MAX];
	struct workload *w;
	int ret;

	if (program_path(program, path, sizeof(path), err))
		return -1;
	w = new_workload(program, args, true, err);
	if (!w)
		return -1;
	w->hold = hold;
	/* The id is only known after insertion: name the image by a temp. */
	snprintf(image_path, sizeof(image_path), "%s/restore-%d-%lx.image",
		 table.cfg->state_dir, getpid(), (unsigned long)pthread_self());
	if (write_image(image_path, image, len, err))
		goto fail;
	ret = insert_and_spawn(w, path, image_path, err);
	if (ret) {
		unlink(image_path);
		unlink(w->image);
		goto fail;
	}
	ret = wait_restored(w, err);
	unlink(w->image);
	if (ret) {
		remove_from_table(w);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	workload_put(w);
	return -1;
}

static void deadline_after(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int workload_begin_op(struct workload *w, unsigned int wait_ms,
		      struct api_error *err)
{
	struct timespec until;
	bool taken;

	deadline_after(&until, wait_ms);
	pthread_mutex_lock(&table.lock);
	while (w->busy && wait_ms &&
	       pthread_cond_timedwait(&table.changed, &table.lock, &until) == 0)
		;
	taken = w->busy;
	w->busy = true;
	pthread_mutex_unlock(&table.lock);
	if (taken)
		return api_error_set(err, 409, "workload_busy",
				     "%s: another operation is in progress", w->id);
	return 0;
}

void workload_end_op(struct workload *w)
{
	pthread_mutex_lock(&table.lock);
	w->busy = false;
	pthread_cond_broadcast(&table.changed);
	pthread_mutex_unlock(&table.lock);
}

static int require_alive(struct workload *w, struct api_error *err)
{
	bool exited, committed;

	pthread_mutex_lock(&table.lock);
	exited = w->exited;
	committed = w->committed;
	pthread_mutex_unlock(&table.lock);
	if (committed)
		return api_error_set(err, 409, "wrong_state",
				     "%s was migrated to %s", w->id, w->migrated_to);
	if (exited)
		return api_error_set(err, 409, "wrong_state", "%s is not running",
				     w->id);
	return 0;
}

int workload_ctl(struct workload *w, const char *verb, int timeout_ms,
		 struct ctl_reply *reply, struct api_error *err)
{
	int ret;

	if (!w->control)
		return api_error_set(err, 409, "no_runtime",
				     "%s was started with \"control\": false", w->id);
	if (require_alive(w, err))
		return -1;
	ret = ctl_request(w->sock, verb, timeout_ms, reply);
	if (ret)
		log_warn("%s: %s on %s: %s", w->id, verb, w->sock, strerror(-ret));
	if (ret == -ETIMEDOUT)
		return api_error_set(err, 504, "runtime_timeout",
				     "%s: no %s reply within %d ms", w->id, verb,
				     timeout_ms);
	if (ret)
		return api_error_set(err, 502, "runtime_unreachable",
				     "%s: %s on %s: %s", w->id, verb, w->sock,
				     strerror(-ret));
	if (ctl_reply_ok(reply))
		return 0;
	api_error_set(err, strcmp(ctl_reply_error(reply), "wrong_state") ? 502 : 409,
		      strcmp(ctl_reply_error(reply), "wrong_state") ?
		      "runtime_error" : "wrong_state",
		      "%s: %s: %s", w->id, verb, ctl_reply_message(reply));
	snprintf(err->cause, sizeof(err->cause), "%s", ctl_reply_error(reply));
	ctl_reply_free(reply);
	return -1;
}

/* The reply without its "ok" member, as the operation's result. */
static json_t *reply_result(struct ctl_reply *reply)
{
	json_t *res = json_deep_copy(reply->json);

	json_object_del(res, "ok");
	json_object_del(res, "image_size");
	return res;
}

static int set_frozen(struct workload *w, bool frozen)
{
	pthread_mutex_lock(&table.lock);
	w->frozen = frozen;
	if (!frozen)
		w->held = false;
	pthread_mutex_unlock(&table.lock);
	return 0;
}

/* Without a runtime, freezing is job control: SIGSTOP/SIGCONT. */
static int plain_freeze(struct workload *w, bool freeze, json_t **result,
			struct api_error *err)
{
	bool frozen;

	if (require_alive(w, err))
		return -1;
	pthread_mutex_lock(&table.lock);
	frozen = w->frozen;
	pthread_mutex_unlock(&table.lock);
	if (frozen == freeze)
		return api_error_set(err, 409, "wrong_state", "%s is %s", w->id,
				     frozen ? "already frozen" : "not frozen");
	kill_group(w, freeze ? SIGSTOP : SIGCONT);
	*result = json_pack("{s:s}", "method", freeze ? "SIGSTOP" : "SIGCONT");
	return set_frozen(w, freeze);
}

static int set_workload_frozen(struct workload *w, bool freeze, json_t **result,
			       struct api_error *err)
{
	struct ctl_reply reply;

	if (!w->control)
		return plain_freeze(w, freeze, result, err);
	if (workload_ctl(w, freeze ? "FREEZE" : "THAW", CTL_TIMEOUT_MS, &reply, err))
		return -1;
	*result = reply_result(&reply);
	ctl_reply_free(&reply);
	return set_frozen(w, freeze);
}

int workload_freeze(struct workload *w, json_t **result, struct api_error *err)
{
	return set_workload_frozen(w, true, result, err);
}

int workload_thaw(struct workload *w, json_t **result, struct api_error *err)
{
	return set_workload_frozen(w, false, result, err);
}

int workload_commit(struct workload *w, const char *target, json_t **result)
{
	struct api_error err;
	struct ctl_reply reply;
	const char *how = "commit";

	if (workload_ctl(w, "COMMIT", CTL_TIMEOUT_MS, &reply, &err) == 0)
		ctl_reply_free(&reply);
	else
		how = "killed";
	if (!wait_exit(w, COMMIT_EXIT_MS)) {
		/* Frozen with everything blocked: SIGKILL delivers nothing. */
		log_warn("%s: still alive after COMMIT, sending SIGKILL", w->id);
		kill_group(w, SIGKILL);
		wait_exit(w, COMMIT_EXIT_MS);
		how = "killed";
	}
	pthread_mutex_lock(&table.lock);
	w->committed = true;
	w->frozen = false;
	snprintf(w->migrated_to, sizeof(w->migrated_to), "%s", target);
	pthread_mutex_unlock(&table.lock);
	*result = json_pack("{s:s}", "method", how);
	return 0;
}

static bool is_held(struct workload *w)
{
	bool held;

	pthread_mutex_lock(&table.lock);
	held = w->held;
	pthread_mutex_unlock(&table.lock);
	return held;
}

int workload_stop(struct workload *w, json_t **final, struct api_error *err)
{
	struct ctl_reply reply;

	(void)err;
	if (!is_exited(w)) {
		/*
		 * A frozen runtime blocks SIGTERM: let it go first. A held
		 * restore must deliver nothing (its source may be running):
		 * COMMIT ends it without resuming, SIGKILL below if not.
		 */
		if (w->control && ctl_request(w->sock, is_held(w) ? "COMMIT" : "THAW",
					      2000, &reply) == 0)
			ctl_reply_free(&reply);
		kill_group(w, SIGCONT);
		kill_group(w, SIGTERM);
		if (!wait_exit(w, STOP_GRACE_MS)) {
			kill_group(w, SIGKILL);
			wait_exit(w, STOP_GRACE_MS);
		}
	}
	remove_from_table(w);
	unlink(w->sock);
	unlink(w->image);
	*final = workload_to_json(w, false);
	log_info("workload %s: stopped and removed", w->id);
	return 0;
}

static const char *agent_state(const struct workload *w)
{
	if (w->committed)
		return "migrated";
	if (w->exited)
		return "exited";
	return w->frozen ? "frozen" : "running";
}

static json_t *args_json(const struct workload_args *args)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; i < args->argc; i++)
		json_array_append_new(a, json_string(args->argv[i]));
	return a;
}

static json_t *exit_json(const struct workload *w)
{
	if (!w->exited)
		return json_null();
	if (WIFSIGNALED(w->wait_status))
		return json_pack("{s:n, s:i}", "code", "signal",
				 WTERMSIG(w->wait_status));
	return json_pack("{s:i, s:n}", "code", WEXITSTATUS(w->wait_status),
			 "signal");
}

static json_t *snapshot_json(struct workload *w)
{
	char started[40];
	struct tm tm;
	json_t *o;

	gmtime_r(&w->started.tv_sec, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:s, s:s, s:o, s:b, s:i, s:s, s:b, s:s, s:o}",
		      "id", w->id, "program", w->program,
		      "args", args_json(&w->args), "control", w->control,
		      "pid", (int)w->pid, "state", agent_state(w),
		      "restored", w->restored, "started_at", started,
		      "exit", exit_json(w));
	if (!o)
		return NULL;
	if (w->control) {
		json_object_set_new(o, "ctl_socket", json_string(w->sock));
		json_object_set_new(o, "ledger", json_string(w->ledger));
	}
	json_object_set_new(o, "log", json_string(w->log));
	if (w->restore_info)
		json_object_set(o, "restore", w->restore_info);
	if (w->held)
		json_object_set_new(o, "held", json_true());
	if (w->committed)
		json_object_set_new(o, "migrated_to", json_string(w->migrated_to));
	return o;
}

json_t *workload_to_json(struct workload *w, bool live)
{
	struct ctl_reply reply;
	const char *state;
	json_t *o;

	pthread_mutex_lock(&table.lock);
	o = snapshot_json(w);
	live = live && w->control && !w->exited && !w->committed;
	pthread_mutex_unlock(&table.lock);
	if (!o || !live)
		return o;
	if (ctl_request(w->sock, "STATUS", 2000, &reply)) {
		json_object_set_new(o, "runtime", json_null());
		return o;
	}
	state = reply_state(&reply);
	if (state)
		json_object_set_new(o, "state", json_string(state));
	json_object_set_new(o, "runtime", reply_result(&reply));
	ctl_reply_free(&reply);
	return o;
}

json_t *workloads_list_json(void)
{
	json_t *list = json_array();
	unsigned int i;

	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.cfg->max_workloads; i++)
		if (table.slots[i])
			json_array_append_new(list, snapshot_json(table.slots[i]));
	pthread_mutex_unlock(&table.lock);
	return list;
}

void workloads_count(unsigned int *running, unsigned int *exited)
{
	unsigned int i;

	*running = *exited = 0;
	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (!table.slots[i])
			continue;
		if (table.slots[i]->exited)
			(*exited)++;
		else
			(*running)++;
	}
	pthread_mutex_unlock(&table.lock);
}

/* Leave nothing half-frozen behind: ask every runtime, thaw the frozen. */
void workloads_shutdown(void)
{
	struct api_error err;
	struct workload *w;
	json_t *result;
	unsigned int i;

	for (i = 0; i < table.cfg->max_workloads; i++) {
		pthread_mutex_lock(&table.lock);
		w = table.slots[i];
		if (w)
			w->refs++;
		pthread_mutex_unlock(&table.lock);
		if (!w)
			continue;
		result = NULL;
		if (is_held(w))
			log_warn("shutdown: %s stays held (frozen): its source may "
				 "still run; thaw or delete it", w->id);
		else if (workload_thaw(w, &result, &err) == 0)
			log_info("shutdown: thawed %s", w->id);
		else if (strcmp(err.code, "wrong_state") != 0)
			log_warn("shutdown: %s: %s", w->id, err.detail);
		json_decref(result);
		workload_put(w);
	}
	pthread_mutex_lock(&table.lock);
	table.stopping = true;
	pthread_cond_broadcast(&table.changed);
	pthread_mutex_unlock(&table.lock);
}

/*
 * The image of @w without dequeuing anything and without changing its
 * state: @verb when frozen; FREEZE, @verb, THAW when running. Done as
 * three verbs so that each step has its own timeout and a failed dump
 * always ends with the thaw. @verb is DUMP for a checkpoint, PEEK for a
 * look, which the runtime also answers for a copy held after a restore.
 */
int workload_snapshot(struct workload *w, const char *verb,
		      struct ctl_reply *dump, struct api_error *err)
{
	struct api_error thaw_err;
	json_t *result = NULL;
	bool froze = false;
	int ret;

	if (!w->control)
		return api_error_set(err, 409, "no_runtime",
				     "%s was started with \"control\": false", w->id);
	ret = workload_freeze(w, &result, err);
	json_decref(result);
	if (ret == 0)
		froze = true;
	else if (strcmp(err->code, "wrong_state") != 0)
		return -1;
	ret = workload_ctl(w, verb, CTL_TIMEOUT_MS * 6, dump, err);
	if (froze && workload_thaw(w, &result, &thaw_err)) {
		log_error("%s: THAW after a snapshot failed: %s", w->id,
			  thaw_err.detail);
	}
	json_decref(result);
	return ret;
}
