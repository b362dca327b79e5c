// SPDX-License-Identifier: GPL-2.0
/*
 * Engine "criu": a program that does not link the runtime is moved by
 * CRIU, its pending signals by the compel parasite, both driven through
 * sigmig-criu (workloads/parasite/sigmig-criu.sh) in the program
 * directory. The tool says "VERB key=value ..." on stdout when it
 * succeeded and its reason on stderr (kept in the move's directory) when
 * not: the reaper thread reaps every child, so its exit status is not
 * ours to read.
 *
 * The process keeps its log and ledger open across the move: they are
 * CRIU externals on the source (file[MNT:INODE]) and the target hands
 * CRIU its own files for them, so the copy goes on writing where the
 * target agent reads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bundle.h"
#include "clock.h"
#include "held_set.h"
#include "log.h"
#include "workload_criu.h"
#include "workload_internal.h"

#define TOOL_TIMEOUT_MS		600000
#define TOOL_LINE_MAX		1024
#define RECORD_BYTES		128
#define SI_CODE_OFFSET		8
#define CODE_SI_TIMER		(-2)
#define EXTERNAL_KEY_MAX	64

extern char **environ;

static const char *const dump_dirs[] = { "criu", "signals", "meta", NULL };
static const char *const delta_dirs[] = { "signals", NULL };

static int spawn_tool(char **argv, int out_fd, const char *errlog,
		      const int *fds, int nfds, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	int ret, i;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_addopen(&fa, 2, errlog, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	for (i = 0; i < nfds; i++)
		posix_spawn_file_actions_adddup2(&fa, fds[i], 3 + i);
	ret = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return ret;
}

/* Reads the tool's stdout to its end (all of it gone), bounded. */
static int read_answer(int fd, char *line, size_t len)
{
	int64_t deadline = clock_mono_ms() + TOOL_TIMEOUT_MS;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t used = 0;
	char chunk[256];
	ssize_t n;

	for (;;) {
		int64_t left = deadline - clock_mono_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (used < len - 1) {
			size_t take = (size_t)n < len - 1 - used ? (size_t)n : len - 1 - used;

			memcpy(line + used, chunk, take);
			used += take;
		}
	}
	line[used] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return 0;
}

/*
 * sigmig-criu @args (args[0] the verb), stderr into @dir/@verb.tool.err,
 * @fds as its descriptors 3, 4, ...: its answer line into @line. -1 with
 * @err (@code, @status) and the tool's last words when it failed.
 */
static int run_tool(const char *const *args, const char *dir, const int *fds,
		    int nfds, char *line, size_t len, unsigned int status,
		    const char *code, struct api_error *err)
{
	char tool[PATH_MAX], errlog[PATH_MAX], why[256];
	char *argv[24];
	int pipefd[2], ret, i;
	size_t vlen = strlen(args[0]);
	pid_t pid;

	snprintf(tool, sizeof(tool), "%s/sigmig-criu", wl_config()->bin_dir);
	snprintf(errlog, sizeof(errlog), "%s/%s.tool.err", dir, args[0]);
	argv[0] = tool;
	for (i = 0; args[i] && i < 22; i++)
		argv[i + 1] = (char *)args[i];
	argv[i + 1] = NULL;
	if (pipe2(pipefd, O_CLOEXEC))
		return api_error_set(err, 500, "internal", "pipe: %s", strerror(errno));
	ret = spawn_tool(argv, pipefd[1], errlog, fds, nfds, &pid);
	close(pipefd[1]);
	if (ret) {
		close(pipefd[0]);
		return api_error_set(err, 500, "internal", "%s: %s", tool, strerror(ret));
	}
	ret = read_answer(pipefd[0], line, len);
	close(pipefd[0]);
	if (ret == -ETIMEDOUT)
		return api_error_set(err, 504, code, "sigmig-criu %s: no answer in %d s",
				     args[0], TOOL_TIMEOUT_MS / 1000);
	if (!ret && strncmp(line, args[0], vlen) == 0 && line[vlen] == ' ')
		return 0;
	wl_last_line(errlog, why, sizeof(why));
	return api_error_set(err, status, code, "sigmig-criu %s: %s", args[0],
			     why[0] ? why : "failed without a reason");
}

/* "KEY=N" in @line; 0 when absent. */
static unsigned long long answer_value(const char *line, const char *key)
{
	size_t klen = strlen(key);
	const char *p = line;

	while ((p = strstr(p, key))) {
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			return strtoull(p + klen + 1, NULL, 10);
		p += klen;
	}
	return 0;
}

static int remove_tree(const char *path)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			remove_tree(sub);
		}
	closedir(d);
	return rmdir(path);
}

static int make_dir(const char *path, struct api_error *err)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return api_error_set(err, 500, "internal", "%s: %s", path, strerror(errno));
	return 0;
}

/* ---- the source ---- */

/*
 * CRIU's name for the file @pid has open as @path: "file[MNT:INODE]"
 * (hex), the key of --external on dump and --inherit-fd on restore.
 */
static int external_key(pid_t pid, const char *path, char *key, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX], line[128];
	unsigned int mnt_id = 0;
	struct dirent *de;
	struct stat st;
	int found = -1;
	ssize_t n;
	FILE *f;
	DIR *d;

	snprintf(link, sizeof(link), "/proc/%d/fd", pid);
	d = opendir(link);
	if (!d)
		return -1;
	while (found && (de = readdir(d))) {
		snprintf(link, sizeof(link), "/proc/%d/fd/%s", pid, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, path) || stat(link, &st))
			continue;
		snprintf(link, sizeof(link), "/proc/%d/fdinfo/%s", pid, de->d_name);
		f = fopen(link, "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "mnt_id: %u", &mnt_id) == 1)
				found = 0;
		if (f)
			fclose(f);
	}
	closedir(d);
	if (!found)
		snprintf(key, len, "file[%x:%llx]", mnt_id, (unsigned long long)st.st_ino);
	return found;
}

static int write_externals(const char *dir, const char *log_key,
			   const char *ledger_key, struct api_error *err)
{
	char path[PATH_MAX];
	json_t *o;
	int ret;

	snprintf(path, sizeof(path), "%s/meta", dir);
	if (make_dir(path, err))
		return -1;
	snprintf(path, sizeof(path), "%s/meta/externals.json", dir);
	o = json_pack("{s:s, s:s}", "log", log_key, "ledger", ledger_key);
	ret = o ? json_dump_file(o, path, JSON_COMPACT) : -1;
	json_decref(o);
	if (ret)
		return api_error_set(err, 500, "internal", "%s: cannot write", path);
	return 0;
}

int criu_dump(struct workload *w, struct criu_move *m, struct api_error *err)
{
	char log_key[EXTERNAL_KEY_MAX], ledger_key[EXTERNAL_KEY_MAX];
	char pid[16], line[TOOL_LINE_MAX], why[256];
	const char *args[12];

	memset(m, 0, sizeof(*m));
	err->code = NULL;
	snprintf(m->dir, sizeof(m->dir), "%s/%s.move", wl_config()->state_dir, w->id);
	remove_tree(m->dir);
	if (make_dir(m->dir, err))
		return -1;
	if (external_key(w->pid, w->log, log_key, sizeof(log_key)) ||
	    external_key(w->pid, w->ledger, ledger_key, sizeof(ledger_key)))
		return api_error_set(err, 409, "wrong_state",
				     "%s: its log or ledger is not open in pid %d",
				     w->id, w->pid);
	snprintf(pid, sizeof(pid), "%d", w->pid);
	args[0] = "dump";
	args[1] = "--leave-frozen";
	args[2] = "--external";
	args[3] = log_key;
	args[4] = "--external";
	args[5] = ledger_key;
	args[6] = pid;
	args[7] = m->dir;
	args[8] = NULL;
	if (run_tool(args, m->dir, NULL, 0, line, sizeof(line), 500, "dump_failed", err))
		return -1;	/* the tool put back what it drained: it runs on */
	m->records = answer_value(line, "records");
	m->drain_us = answer_value(line, "drain_us");
	m->criu_us = answer_value(line, "criu_us");
	if (write_externals(m->dir, log_key, ledger_key, err) ||
	    bundle_pack(m->dir, dump_dirs, &m->bundle, &m->bundle_len, why, sizeof(why))) {
		if (!err->code)
			api_error_set(err, 500, "internal", "the bundle: %s", why);
		criu_abort(w, m, why, sizeof(why));
		return -1;
	}
	return 0;
}

int criu_abort(struct workload *w, struct criu_move *m, char *why, size_t len)
{
	char pid[16], line[TOOL_LINE_MAX];
	const char *args[] = { "abort", pid, m->dir, NULL };
	struct api_error err;

	snprintf(pid, sizeof(pid), "%d", w->pid);
	if (run_tool(args, m->dir, NULL, 0, line, sizeof(line), 500, "abort_failed", &err)) {
		log_error("%s: %s; the drained records stay in %s/signals", w->id,
			  err.detail, m->dir);
		snprintf(why, len, "%s", err.detail);
		return -1;
	}
	log_info("%s: move aborted, its records put back, it runs on", w->id);
	return 0;
}

/*
 * One queue of the delta, without its timer records: they stay with the
 * timer, which CRIU moved. What the copy already holds (CRIU saw it pending
 * and queued it there) the target leaves out, by content. Returns the
 * records kept, or -1.
 */
static long filter_queue(const char *in, const char *out, unsigned long *timers)
{
	unsigned char rec[RECORD_BYTES];
	FILE *fi, *fo = NULL;
	long kept = 0;
	int code;

	fi = fopen(in, "re");
	if (!fi)
		return -1;
	while (fread(rec, sizeof(rec), 1, fi) == 1) {
		memcpy(&code, rec + SI_CODE_OFFSET, sizeof(code));
		if (code == CODE_SI_TIMER) {
			(*timers)++;
			continue;
		}
		if (!fo)
			fo = fopen(out, "we");
		if (!fo || fwrite(rec, sizeof(rec), 1, fo) != 1) {
			kept = -1;
			break;
		}
		kept++;
	}
	fclose(fi);
	if (fo && fclose(fo))
		kept = -1;
	return kept;
}

static long filter_delta(const char *dir, unsigned long *timers)
{
	char in[PATH_MAX], out[PATH_MAX];
	struct dirent *de;
	long total = 0, kept;
	DIR *d;

	snprintf(in, sizeof(in), "%s/delta/signals", dir);
	d = opendir(in);
	if (!d)
		return 0;
	while (total >= 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(in, sizeof(in), "%s/delta/signals/%s", dir, de->d_name);
		snprintf(out, sizeof(out), "%s/carry/signals/%s", dir, de->d_name);
		kept = filter_queue(in, out, timers);
		total = kept < 0 ? -1 : total + kept;
	}
	closedir(d);
	return total;
}

int criu_delta(struct workload *w, struct criu_move *m, struct api_error *err)
{
	char pid[16], line[TOOL_LINE_MAX], sub[PATH_MAX], why[256];
	const char *args[] = { "delta", pid, sub, NULL };
	long kept;

	snprintf(pid, sizeof(pid), "%d", w->pid);
	snprintf(sub, sizeof(sub), "%s/delta", m->dir);
	remove_tree(sub);
	if (make_dir(sub, err))
		return -1;
	/*
	 * From the drain's first read to the exit: the tool seals the
	 * original first, so that a send then fails with ESRCH; without the
	 * seal it succeeds and nothing reads it (the kernel drops what
	 * reaches a dying process).
	 */
	wl_lock();
	w->commit_read_ns = clock_realtime_ns();
	wl_unlock();
	if (run_tool(args, m->dir, NULL, 0, line, sizeof(line), 500, "delta_failed", err))
		return -1;	/* the original is killed either way */
	m->delta_drained = answer_value(line, "records");
	wl_lock();
	w->commit_sealed = answer_value(line, "sealed") == 1;
	wl_unlock();
	snprintf(sub, sizeof(sub), "%s/carry", m->dir);
	remove_tree(sub);
	if (make_dir(sub, err))
		return -1;
	snprintf(sub, sizeof(sub), "%s/carry/signals", m->dir);
	if (make_dir(sub, err))
		return -1;
	kept = filter_delta(m->dir, &m->timers);
	if (kept < 0)
		return api_error_set(err, 500, "delta_failed", "%s: cannot write %s/carry",
				     w->id, m->dir);
	m->carried = (unsigned long)kept;
	if (!kept)
		return 0;
	snprintf(sub, sizeof(sub), "%s/carry", m->dir);
	if (bundle_pack(sub, delta_dirs, &m->delta, &m->delta_len, why, sizeof(why)))
		return api_error_set(err, 500, "internal", "the delta bundle: %s", why);
	return 0;
}

void criu_move_free(struct criu_move *m)
{
	free(m->bundle);
	free(m->delta);
	m->bundle = m->delta = NULL;
}

/* ---- the target ---- */

static bool external_key_valid(const char *key)
{
	unsigned int mnt;
	unsigned long long ino;
	char end;

	return key && strlen(key) < EXTERNAL_KEY_MAX &&
	       sscanf(key, "file[%x:%llx%c", &mnt, &ino, &end) == 3 && end == ']' &&
	       key[strlen(key) - 1] == ']' && !strchr(key, ' ');
}

static int read_externals(const char *dir, char *log_key, char *ledger_key,
			  struct api_error *err)
{
	char path[PATH_MAX];
	const char *l, *g;
	json_t *o;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/meta/externals.json", dir);
	o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	l = json_string_value(json_object_get(o, "log"));
	g = json_string_value(json_object_get(o, "ledger"));
	if (!external_key_valid(l) || !external_key_valid(g))
		ret = api_error_set(err, 400, "bad_image",
				    "the bundle's meta/externals.json does not name "
				    "the log and the ledger as file[MNT:INODE]");
	else {
		snprintf(log_key, EXTERNAL_KEY_MAX, "%s", l);
		snprintf(ledger_key, EXTERNAL_KEY_MAX, "%s", g);
	}
	json_decref(o);
	return ret;
}

/*
 * "requeued private|shared TID N late L merged M timers T verified" lines:
 * per queue, the records the parasite requeued (N, into @moved) and those
 * CRIU queued that came from the source's queue (L - T, into @late): its
 * timer records are left out, since a timer CRIU re-armed may fire while
 * the copy is held and queue one the source never had.
 */
static void count_one(json_t *counts, const char *label, int tid, unsigned int n)
{
	char key[16];

	if (!strcmp(label, "shared")) {
		json_object_set_new(counts, "shared", json_integer(n));
		return;
	}
	snprintf(key, sizeof(key), "%d", tid);
	json_object_set_new(json_object_get(counts, "private"), key, json_integer(n));
}

static void queue_counts(const char *dir, json_t *moved, json_t *late)
{
	char path[PATH_MAX], line[256], label[16];
	unsigned int n, l, m, t;
	int tid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/requeue.out", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "requeued %15s %d %u late %u merged %u timers %u", label,
			   &tid, &n, &l, &m, &t) != 6 || t > l)
			continue;
		count_one(moved, label, tid, n);
		count_one(late, label, tid, l - t);
	}
	if (f)
		fclose(f);
}

static json_t *empty_counts(void)
{
	return json_pack("{s:I, s:{}}", "shared", (json_int_t)0, "private");
}

struct publish_criu {
	const char *dir;	/* the restore's directory, renamed to the workload's */
	pid_t pid;
	char final_dir[STATE_PATH_MAX];
};

static int publish_restored(struct workload *w, void *arg, struct api_error *err)
{
	struct publish_criu *p = arg;
	char from[PATH_MAX];

	snprintf(from, sizeof(from), "%s/ledger", p->dir);
	if (rename(from, w->ledger))
		return api_error_set(err, 500, "internal", "%s: %s", w->ledger, strerror(errno));
	snprintf(from, sizeof(from), "%s/log", p->dir);
	if (rename(from, w->log))
		return api_error_set(err, 500, "internal", "%s: %s", w->log, strerror(errno));
	snprintf(p->final_dir, sizeof(p->final_dir), "%s/%s.move", wl_config()->state_dir, w->id);
	remove_tree(p->final_dir);
	if (rename(p->dir, p->final_dir))
		snprintf(p->final_dir, sizeof(p->final_dir), "%s", p->dir);
	w->pid = p->pid;
	/* CRIU gave it the source's limits: this host's own applies */
	if (wl_limit_output(w->pid))
		log_warn("workload %s: cannot set its output limit: %s", w->id,
			 strerror(errno));
	clock_gettime(CLOCK_REALTIME, &w->started);
	wl_record_start_time(w);
	return 0;
}

/* The ledger the copy goes on writing, headed as a restored one's. */
static int open_outputs(const char *dir, int *log_fd, int *ledger_fd,
			struct api_error *err)
{
	char path[PATH_MAX], head[96];
	struct timespec ts;
	int n;

	snprintf(path, sizeof(path), "%s/log", dir);
	*log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	snprintf(path, sizeof(path), "%s/ledger", dir);
	*ledger_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (*log_fd < 0 || *ledger_fd < 0)
		return api_error_set(err, 500, "internal", "%s: %s", path, strerror(errno));
	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(head, sizeof(head), "H 0 1 %lld 62\n",
		     (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	if (write(*ledger_fd, head, (size_t)n) != n)
		return api_error_set(err, 500, "internal", "%s: %s", path, strerror(errno));
	return 0;
}

static int restore_in(const char *dir, struct publish_criu *p, json_t **info,
		      struct api_error *err)
{
	char log_key[EXTERNAL_KEY_MAX], ledger_key[EXTERNAL_KEY_MAX];
	char log_fd_spec[96], ledger_fd_spec[96], line[TOOL_LINE_MAX], sub[PATH_MAX];
	json_t *moved, *late;
	const char *args[] = { "restore", "--hold", "--inherit-fd", log_fd_spec,
			       "--inherit-fd", ledger_fd_spec, dir, NULL };
	int fds[2] = { -1, -1 }, ret = -1;

	snprintf(sub, sizeof(sub), "%s/signals", dir);
	if (read_externals(dir, log_key, ledger_key, err) || make_dir(sub, err) ||
	    open_outputs(dir, &fds[0], &fds[1], err))
		goto out;
	snprintf(log_fd_spec, sizeof(log_fd_spec), "fd[3]:%s", log_key);
	snprintf(ledger_fd_spec, sizeof(ledger_fd_spec), "fd[4]:%s", ledger_key);
	if (run_tool(args, dir, fds, 2, line, sizeof(line), 422, "restore_failed", err))
		goto out;
	p->pid = (pid_t)answer_value(line, "pid");
	moved = empty_counts();
	late = empty_counts();
	queue_counts(dir, moved, late);
	*info = json_pack("{s:s, s:I, s:o, s:o, s:f, s:f}", "engine", "criu",
			  "signals", (json_int_t)answer_value(line, "records"),
			  "queues", moved, "late", late,
			  "criu_ms", answer_value(line, "criu_us") / 1e3,
			  "requeue_ms", answer_value(line, "requeue_us") / 1e3);
	ret = p->pid > 1 ? 0 : api_error_set(err, 500, "internal",
					     "sigmig-criu restore named no pid");
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return ret;
}

int workload_restore_criu(const uint8_t *bundle, size_t len, const char *program,
			  const struct workload_args *args, bool hold,
			  struct workload **out, struct api_error *err)
{
	char dir[STATE_PATH_MAX], why[256];
	struct publish_criu p = { .dir = dir };
	json_t *info = NULL;
	struct workload *w;

	if (!hold || strcmp(program, "sigplain"))
		return api_error_set(err, 400, "invalid_parameter",
				     "engine=criu restores held (hold=1) and program=sigplain");
	snprintf(dir, sizeof(dir), "%s/criu-in.XXXXXX", wl_config()->state_dir);
	if (!mkdtemp(dir))
		return api_error_set(err, 500, "internal", "%s: %s", dir, strerror(errno));
	if (bundle_unpack(bundle, len, dir, why, sizeof(why))) {
		api_error_set(err, 400, "bad_image", "%s", why);
		goto fail;
	}
	if (restore_in(dir, &p, &info, err))
		goto fail;
	w = wl_new(program, args, false, err);
	if (!w)
		goto kill;
	w->criu = w->restored = w->hold = w->held = w->frozen = true;
	w->restore_info = info;
	info = NULL;
	if (wl_publish(w, publish_restored, &p, err)) {
		workload_put(w);
		goto kill;
	}
	if (wl_watch_pid(w))
		log_warn("workload %s (pid %d): no pidfd, its exit goes unseen", w->id, w->pid);
	wl_record_save(w);
	log_info("workload %s: pid %d restored by CRIU, held (%s)", w->id, w->pid, p.final_dir);
	*out = w;
	return 0;
kill:
	kill(p.pid, SIGKILL);
fail:
	json_decref(info);
	remove_tree(dir);
	return -1;
}

static int unpack_delta(struct workload *w, const uint8_t *bundle, size_t len,
			char *dir, size_t dirlen, struct api_error *err)
{
	char why[256];

	snprintf(dir, dirlen, "%s/%s.delta.XXXXXX", wl_config()->state_dir, w->id);
	if (!mkdtemp(dir))
		return api_error_set(err, 500, "internal", "%s: %s", dir, strerror(errno));
	if (bundle_unpack(bundle, len, dir, why, sizeof(why))) {
		remove_tree(dir);
		return api_error_set(err, 400, "bad_image", "%s", why);
	}
	return 0;
}

/* The "merged M" of every "requeued ..." line of @dir/requeue.out, summed. */
static unsigned long long merged_in(const char *dir)
{
	char path[PATH_MAX], line[256], label[16];
	unsigned int n, l, m;
	unsigned long long sum = 0;
	int tid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/requeue.out", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "requeued %15s %d %u late %u merged %u", label, &tid, &n, &l,
			   &m) == 5)
			sum += m;
	if (f)
		fclose(f);
	return sum;
}

/* The delta's records for one queue, less those the copy holds in it. */
static long leave_out_held_in(const char *held_dir, const char *dir, const char *queue,
			      struct api_error *err)
{
	char path[PATH_MAX], why[256];
	struct held_set held;
	long n;

	if (held_set_load(&held, held_dir, queue, why, sizeof(why)))
		return api_error_set(err, 500, "internal", "%s", why);
	snprintf(path, sizeof(path), "%s/signals/%s", dir, queue);
	n = held_set_filter(&held, path, why, sizeof(why));
	held_set_free(&held);
	return n < 0 ? api_error_set(err, 500, "internal", "%s", why) : n;
}

/*
 * The delta's records that the copy holds already (CRIU queued them:
 * the restore's parasite saved them in the move's late/) leave it, by
 * content, queue by queue; the rest goes behind them. Returns how many
 * left, or -1.
 */
static long leave_out_held(struct workload *w, const char *dir, struct api_error *err)
{
	char held_dir[STATE_PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	long total = 0, n;
	DIR *d;

	snprintf(held_dir, sizeof(held_dir), "%s/%s.move/late", wl_config()->state_dir, w->id);
	snprintf(path, sizeof(path), "%s/signals", dir);
	d = opendir(path);
	while (d && total >= 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.' || !strstr(de->d_name, ".bin"))
			continue;
		n = leave_out_held_in(held_dir, dir, de->d_name, err);
		total = n < 0 ? -1 : total + n;
	}
	if (d)
		closedir(d);
	return total;
}

int criu_requeue_held(struct workload *w, const uint8_t *bundle, size_t len,
		      const char *source, json_t **result, struct api_error *err)
{
	char dir[STATE_PATH_MAX], pid[16], line[TOOL_LINE_MAX];
	const char *args[] = { "requeue-held", pid, dir, NULL };
	long held;
	int ret;

	if (source && source[0])
		return api_error_set(err, 400, "invalid_parameter",
				     "engine criu: a copy takes one commit delta, no batches");
	if (!wl_is_held(w))
		return api_error_set(err, 409, "wrong_state",
				     "%s: signals go into a held copy only", w->id);
	if (unpack_delta(w, bundle, len, dir, sizeof(dir), err))
		return -1;
	held = leave_out_held(w, dir, err);
	if (held < 0) {
		remove_tree(dir);
		return -1;
	}
	snprintf(pid, sizeof(pid), "%d", w->pid);
	ret = run_tool(args, dir, NULL, 0, line, sizeof(line), 422, "requeue_failed", err);
	if (!ret)
		*result = json_pack("{s:I, s:I, s:b, s:I}",
				    "requeued", (json_int_t)answer_value(line, "records"),
				    "merged", (json_int_t)merged_in(dir), "duplicate", 0,
				    "already_held", (json_int_t)held);
	remove_tree(dir);
	return ret;
}

int criu_release(struct workload *w, json_t **result, struct api_error *err)
{
	char dir[STATE_PATH_MAX], pid[16], line[TOOL_LINE_MAX];
	const char *args[] = { "release", pid, dir, NULL };

	if (!wl_is_held(w))
		return api_error_set(err, 409, "wrong_state",
				     "%s: engine criu: only a held copy is thawed", w->id);
	snprintf(dir, sizeof(dir), "%s/%s.move", wl_config()->state_dir, w->id);
	snprintf(pid, sizeof(pid), "%d", w->pid);
	if (run_tool(args, dir, NULL, 0, line, sizeof(line), 500, "thaw_failed", err))
		return -1;
	wl_lock();
	w->held = w->frozen = false;
	wl_unlock();
	wl_record_save(w);
	*result = json_pack("{s:s}", "method", "cgroup");
	return 0;
}

bool workload_is_criu(const struct workload *w)
{
	return w->criu;
}
