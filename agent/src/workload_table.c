// SPDX-License-Identifier: GPL-2.0
/*
 * The workload table. Workloads are reference counted so that a request
 * can keep using one that a concurrent DELETE has just removed.
 *
 * Children are reaped by one thread calling waitpid(-1): spawning and
 * publishing happen under the table lock, so an exit is never reaped
 * before its workload can be found. Workloads adopted from an earlier
 * agent's records are not children: workload_record.c watches them.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "workload_internal.h"

#define REAPER_IDLE_MS	200	/* no child: how long before waitpid() again */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t changed;		/* a child exited, or the reaper stops */
	const struct agent_config *cfg;
	struct workload **slots;
	unsigned long next_id;
	pthread_t reaper;
	bool stopping;
} table = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

void wl_lock(void)
{
	pthread_mutex_lock(&table.lock);
}

void wl_unlock(void)
{
	pthread_mutex_unlock(&table.lock);
}

const struct agent_config *wl_config(void)
{
	return table.cfg;
}

const char *workloads_state_dir(void)
{
	return table.cfg->state_dir;
}

/* ---- the reaper ---- */

/* Called with table.lock held. */
static struct workload *find_by_pid(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < table.cfg->max_workloads; i++)
		if (table.slots[i] && table.slots[i]->pid == pid &&
		    !table.slots[i]->adopted)
			return table.slots[i];
	return NULL;
}

/* Called with table.lock held. */
static void mark_exited(struct workload *w, int status, bool known)
{
	if (w->exited)
		return;
	w->exited = true;
	w->exit_known = known;
	w->wait_status = status;
	w->exited_ns = clock_realtime_ns();
	if (!known)
		log_info("workload %s (pid %d) ended (adopted: no exit status)",
			 w->id, w->pid);
	else
		log_info("workload %s (pid %d) %s %d", w->id, w->pid,
			 WIFSIGNALED(status) ? "killed by signal" : "exited with",
			 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

static void record_exit(pid_t pid, int status)
{
	struct workload *w;

	wl_lock();
	w = find_by_pid(pid);
	if (w && !w->adopted)
		mark_exited(w, status, true);
	pthread_cond_broadcast(&table.changed);
	wl_unlock();
}

void wl_mark_exited(struct workload *w, int status, bool known)
{
	wl_lock();
	mark_exited(w, status, known);
	pthread_cond_broadcast(&table.changed);
	wl_unlock();
}

static void wait_for_children(void)
{
	struct timespec until;

	clock_mono_after(&until, REAPER_IDLE_MS);
	wl_lock();
	if (!table.stopping)
		pthread_cond_timedwait(&table.changed, &table.lock, &until);
	wl_unlock();
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

void wl_stop_reaper(void)
{
	wl_lock();
	table.stopping = true;
	pthread_cond_broadcast(&table.changed);
	wl_unlock();
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
	err = clock_cond_init(&table.changed);
	if (!err)
		err = pthread_create(&table.reaper, NULL, reaper_main, NULL);
	if (err) {
		log_error("reaper thread: %s", strerror(err));
		return -1;
	}
	pthread_detach(table.reaper);
	wl_adopt_recorded();
	return 0;
}

/* ---- workloads and their references ---- */

static void free_workload(struct workload *w)
{
	workload_args_free(&w->args);
	json_decref(w->restore_info);
	free(w);
}

struct workload *wl_new(const char *program, const struct workload_args *args,
			bool control, struct api_error *err)
{
	struct workload *w;
	unsigned int i;

	w = calloc(1, sizeof(*w));
	if (!w)
		goto oom;
	snprintf(w->program, sizeof(w->program), "%s", program);
	w->control = control;
	w->refs = 1;
	for (i = 0; i < args->argc; i++) {
		w->args.argv[i] = strdup(args->argv[i]);
		if (!w->args.argv[i])
			goto oom;
		w->args.argc++;
	}
	return w;
oom:
	if (w)
		free_workload(w);
	api_error_set(err, 500, "internal", "out of memory");
	return NULL;
}

void workload_put(struct workload *w)
{
	bool last;

	if (!w)
		return;
	wl_lock();
	last = --w->refs == 0;
	wl_unlock();
	if (last)
		free_workload(w);
}

struct workload *workload_find(const char *id)
{
	struct workload *w = NULL;
	unsigned int i;

	if (!workload_id_valid(id))
		return NULL;
	wl_lock();
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (table.slots[i] && strcmp(table.slots[i]->id, id) == 0) {
			w = table.slots[i];
			w->refs++;
			break;
		}
	}
	wl_unlock();
	return w;
}

bool wl_pid_is_workload(pid_t pid)
{
	bool found = false;
	unsigned int i;

	wl_lock();
	for (i = 0; i < table.cfg->max_workloads && !found; i++)
		found = table.slots[i] && !table.slots[i]->exited &&
			table.slots[i]->pid == pid;
	wl_unlock();
	return found;
}

struct workload *wl_get_slot(unsigned int i)
{
	struct workload *w;

	wl_lock();
	w = i < table.cfg->max_workloads ? table.slots[i] : NULL;
	if (w)
		w->refs++;
	wl_unlock();
	return w;
}

static void set_state_paths(struct workload *w)
{
	const char *dir = table.cfg->state_dir;

	snprintf(w->sock, sizeof(w->sock), "%s/%s.sock", dir, w->id);
	snprintf(w->ledger, sizeof(w->ledger), "%s/%s.ledger", dir, w->id);
	snprintf(w->log, sizeof(w->log), "%s/%s.log", dir, w->id);
	snprintf(w->image, sizeof(w->image), "%s/%s.image", dir, w->id);
}

/* Called with table.lock held. */
static unsigned int free_slot(void)
{
	unsigned int i;

	for (i = 0; i < table.cfg->max_workloads; i++)
		if (!table.slots[i])
			return i;
	return UINT_MAX;
}

int wl_publish(struct workload *w,
	       int (*spawn)(struct workload *w, void *arg, struct api_error *err),
	       void *arg, struct api_error *err)
{
	unsigned int slot;
	int ret;

	wl_lock();
	slot = free_slot();
	if (slot == UINT_MAX) {
		wl_unlock();
		return api_error_set(err, 409, "too_many_workloads",
				     "the agent tracks at most %u workloads; "
				     "DELETE some first", table.cfg->max_workloads);
	}
	snprintf(w->id, sizeof(w->id), "w%lu", table.next_id++);
	set_state_paths(w);
	ret = spawn(w, arg, err);
	if (!ret) {
		w->in_table = true;
		w->refs++;
		table.slots[slot] = w;
	}
	wl_unlock();
	if (!ret)
		wl_record_save(w);
	return ret;
}

int wl_insert(struct workload *w)
{
	unsigned int slot;

	wl_lock();
	slot = free_slot();
	if (slot != UINT_MAX) {
		set_state_paths(w);
		w->in_table = true;
		w->refs++;
		table.slots[slot] = w;
		if (workload_id_number(w->id) >= table.next_id)
			table.next_id = workload_id_number(w->id) + 1;
	}
	wl_unlock();
	if (slot == UINT_MAX)
		log_error("workload %s: no free slot to adopt it (--max-workloads)", w->id);
	return slot == UINT_MAX ? -1 : 0;
}

void wl_remove(struct workload *w)
{
	unsigned int i;
	bool drop = false;

	wl_lock();
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (table.slots[i] == w) {
			table.slots[i] = NULL;
			w->in_table = false;
			drop = true;
		}
	}
	wl_unlock();
	if (!drop)
		return;
	wl_record_drop(w);
	workload_put(w);
}

void workloads_count(unsigned int *running, unsigned int *exited)
{
	unsigned int i;

	*running = *exited = 0;
	wl_lock();
	for (i = 0; i < table.cfg->max_workloads; i++) {
		if (!table.slots[i])
			continue;
		if (table.slots[i]->exited)
			(*exited)++;
		else
			(*running)++;
	}
	wl_unlock();
}

/* ---- what every other part asks of one ---- */

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
	if (strcmp(which, "ledger") == 0 && (w->control || w->criu))
		return w->ledger;
	return NULL;
}

bool wl_is_exited(struct workload *w)
{
	bool exited;

	wl_lock();
	exited = w->exited;
	wl_unlock();
	return exited;
}

bool wl_is_held(struct workload *w)
{
	bool held;

	wl_lock();
	held = w->held;
	wl_unlock();
	return held;
}

bool wl_wait_exit(struct workload *w, unsigned int ms)
{
	int64_t deadline = clock_mono_ms() + ms;

	while (!wl_is_exited(w)) {
		if (clock_mono_ms() >= deadline)
			return false;
		clock_sleep_ms(POLL_INTERVAL_MS);
	}
	return true;
}

/* Under the lock: once reaped, the pid may be someone else's. */
void wl_kill_group(struct workload *w, int sig)
{
	wl_lock();
	if (!w->exited && w->pid > 0)
		kill(-w->pid, sig);
	wl_unlock();
}
