// SPDX-License-Identifier: GPL-2.0
/*
 * Each workload's record in the state directory (<id>.record, JSON): a
 * restarted agent adopts the workloads that still run. Without it, a copy
 * whose agent died would take a forwarded batch it already had a second
 * time (the batch numbers were only in memory), and a held copy could be
 * neither thawed nor ended through the API.
 *
 * A pid names the recorded process only while its start time (field 22
 * of /proc/PID/stat) is the recorded one: pids are reused. An adopted
 * process is not the agent's child: its pidfd says when it exits, and
 * nobody can wait for its status.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "json_file.h"
#include "log.h"
#include "workload_internal.h"

#define RECORD_SUFFIX	".record"
#define RECORD_MAX	(64 * 1024)

static void record_path(const char *id, char *path, size_t len)
{
	snprintf(path, len, "%s/%s%s", wl_config()->state_dir, id, RECORD_SUFFIX);
}

/* Field 22 of /proc/PID/stat, in clock ticks since boot; 0 when gone. */
static unsigned long long proc_start_time(pid_t pid)
{
	unsigned long long start = 0;
	char path[64], buf[1024];
	const char *p;
	unsigned int field;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: after the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z')
		return 0;
	for (field = 2, p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	sscanf(p, "%llu", &start);
	return start;
}

/* Called with the table lock held. */
static json_t *record_json(const struct workload *w)
{
	json_t *args = json_array(), *o;
	unsigned int i;

	for (i = 0; i < w->args.argc; i++)
		json_array_append_new(args, json_string(w->args.argv[i]));
	o = json_pack("{s:s, s:i, s:I, s:s, s:o, s:b, s:b, s:s, s:b, s:b, s:b, s:b,"
		      " s:s, s:I, s:s, s:I, s:I}",
		      "id", w->id, "pid", (int)w->pid,
		      "start_time", (json_int_t)w->start_time,
		      "program", w->program, "args", args,
		      "control", w->control, "restored", w->restored,
		      "engine", w->criu ? "criu" : "runtime",
		      "hold", w->hold, "held", w->held, "frozen", w->frozen,
		      "committed", w->committed,
		      "requeue_source", w->requeue_source,
		      "requeue_batch", (json_int_t)w->requeue_batch,
		      "migrated_to", w->migrated_to,
		      "started_sec", (json_int_t)w->started.tv_sec,
		      "started_nsec", (json_int_t)w->started.tv_nsec);
	if (o && w->restore_info)
		json_object_set(o, "restore", w->restore_info);
	return o;
}

void wl_record_save(struct workload *w)
{
	char path[STATE_PATH_MAX + 16];
	json_t *o;

	wl_lock();
	o = w->in_table ? record_json(w) : NULL;
	wl_unlock();
	if (!o)
		return;
	record_path(w->id, path, sizeof(path));
	if (json_file_replace(path, o))
		log_warn("%s: cannot write its record %s: %s", w->id, path,
			 strerror(errno));
	json_decref(o);
}

void wl_record_drop(const struct workload *w)
{
	char path[STATE_PATH_MAX + 16];

	record_path(w->id, path, sizeof(path));
	unlink(path);
}

/* ---- adoption ---- */

static void *watch_adopted(void *arg)
{
	struct workload *w = arg;
	struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	wl_mark_exited(w, 0, false);
	close(w->pidfd);
	workload_put(w);
	return NULL;
}

/* A reference for the watcher, which drops it when @w has exited. */
static int start_watcher(struct workload *w)
{
	pthread_t watcher;

	wl_lock();
	w->refs++;
	wl_unlock();
	if (pthread_create(&watcher, NULL, watch_adopted, w)) {
		log_error("workload %s: no thread to watch it", w->id);
		workload_put(w);
		return -1;
	}
	pthread_detach(watcher);
	return 0;
}

int wl_watch_pid(struct workload *w)
{
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (w->pidfd < 0)
		return -1;
	if (start_watcher(w)) {
		close(w->pidfd);
		return -1;
	}
	return 0;
}

static bool copy_string(char *dst, size_t len, json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (!s || strlen(s) >= len)
		return false;
	memcpy(dst, s, strlen(s) + 1);
	return true;
}

static bool args_from_json(json_t *a, struct workload_args *args)
{
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > WORKLOAD_ARGS_MAX)
		return false;
	for (i = 0; i < json_array_size(a); i++)
		if (!json_is_string(json_array_get(a, i)))
			return false;
	for (i = 0; i < json_array_size(a); i++)
		args->argv[i] = (char *)json_string_value(json_array_get(a, i));
	args->argc = (unsigned int)i;
	return true;
}

static bool flag(json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

/* The recorded workload, not yet in the table; NULL if the record is bad. */
static struct workload *from_record(json_t *o)
{
	struct workload_args args = { 0 };
	char program[PROGRAM_NAME_MAX + 1];
	struct api_error err;
	struct workload *w;

	if (!copy_string(program, sizeof(program), o, "program") ||
	    !program_name_valid(program) ||
	    !args_from_json(json_object_get(o, "args"), &args))
		return NULL;
	w = wl_new(program, &args, flag(o, "control"), &err);
	if (!w)
		return NULL;
	if (!copy_string(w->id, sizeof(w->id), o, "id") || !workload_id_valid(w->id) ||
	    !copy_string(w->requeue_source, sizeof(w->requeue_source), o, "requeue_source") ||
	    !copy_string(w->migrated_to, sizeof(w->migrated_to), o, "migrated_to")) {
		workload_put(w);
		return NULL;
	}
	w->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
	w->start_time = (unsigned long long)json_integer_value(json_object_get(o, "start_time"));
	w->restored = flag(o, "restored");
	w->criu = !strcmp(json_string_value(json_object_get(o, "engine")) ?: "", "criu");
	w->hold = flag(o, "hold");
	w->held = flag(o, "held");
	w->frozen = flag(o, "frozen");
	w->committed = flag(o, "committed");
	w->requeue_batch = (unsigned long)json_integer_value(json_object_get(o, "requeue_batch"));
	w->started.tv_sec = (time_t)json_integer_value(json_object_get(o, "started_sec"));
	w->started.tv_nsec = (long)json_integer_value(json_object_get(o, "started_nsec"));
	w->restore_info = json_incref(json_object_get(o, "restore"));
	return w;
}

/* Its pidfd, once the pid is still the recorded process; -1 otherwise. */
static int open_recorded(const struct workload *w)
{
	int fd;

	if (w->pid <= 1 || !w->start_time || proc_start_time(w->pid) != w->start_time)
		return -1;
	fd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	/* the pid could have been reused between the check and the open */
	if (fd >= 0 && proc_start_time(w->pid) != w->start_time) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The record is written after the runtime has requeued a batch: an agent
 * killed in between left it one batch behind. The runtime keeps the tag
 * ("SOURCE:BATCH") of the last requeue it did, and that is the truth.
 */
static void catch_up_batches(struct workload *w)
{
	char source[sizeof(w->requeue_source)];
	struct ctl_reply reply;
	unsigned long batch;
	const char *tag, *colon;
	char *end;

	if (!w->control || ctl_request(w->sock, "STATUS", 2000, &reply))
		return;
	tag = json_string_value(json_object_get(reply.json, "requeue_tag"));
	colon = tag ? strrchr(tag, ':') : NULL;
	if (!colon || (size_t)(colon - tag) >= sizeof(source))
		goto out;
	memcpy(source, tag, (size_t)(colon - tag));
	source[colon - tag] = '\0';
	errno = 0;
	batch = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1)
		goto out;
	if (strcmp(source, w->requeue_source) == 0 && batch <= w->requeue_batch)
		goto out;
	log_warn("workload %s: its runtime took batch %lu of %s, its record said %lu of %s",
		 w->id, batch, source, w->requeue_batch,
		 w->requeue_source[0] ? w->requeue_source : "none");
	wl_lock();
	memcpy(w->requeue_source, source, sizeof(source));
	w->requeue_batch = batch;
	wl_unlock();
	wl_record_save(w);
out:
	ctl_reply_free(&reply);
}

static void adopt_one(const char *file)
{
	char path[STATE_PATH_MAX + 16];
	struct workload *w = NULL;
	json_t *o;

	snprintf(path, sizeof(path), "%s/%s", wl_config()->state_dir, file);
	o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	if (o)
		w = from_record(o);
	json_decref(o);
	if (!w) {
		log_warn("%s: not a workload record: removed", path);
		unlink(path);
		return;
	}
	w->pidfd = open_recorded(w);
	if (w->pidfd < 0) {
		log_info("workload %s (pid %d): gone, its record removed", w->id, w->pid);
		unlink(path);
		workload_put(w);
		return;
	}
	w->adopted = true;
	if (wl_insert(w)) {
		close(w->pidfd);
		workload_put(w);
		return;
	}
	start_watcher(w);
	log_info("workload %s (pid %d): adopted from its record%s", w->id, w->pid,
		 w->held ? ", held" : "");
	catch_up_batches(w);
	if (w->requeue_source[0])
		log_info("workload %s: batch %lu of %s taken last", w->id,
			 w->requeue_batch, w->requeue_source);
	workload_put(w);
}

static bool ends_with(const char *name, const char *suffix)
{
	size_t len = strlen(name), n = strlen(suffix);

	return len > n && strcmp(name + len - n, suffix) == 0;
}

void wl_adopt_recorded(void)
{
	char path[STATE_PATH_MAX + 16];
	struct dirent *de;
	DIR *d;

	d = opendir(wl_config()->state_dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (ends_with(de->d_name, RECORD_SUFFIX)) {
			adopt_one(de->d_name);
		} else if (ends_with(de->d_name, ".tmp")) {
			/* a record or lease record an agent was killed writing: the old one is whole */
			snprintf(path, sizeof(path), "%s/%s", wl_config()->state_dir, de->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

/* Called right after the spawn: the start time is the child's from fork on. */
void wl_record_start_time(struct workload *w)
{
	w->start_time = proc_start_time(w->pid);
}
