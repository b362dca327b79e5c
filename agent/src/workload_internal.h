/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the workload module, shared by its files:
 *   workload_table.c    the table, references, ids, the reaper
 *   workload_spawn.c    starting and stopping a program
 *   workload_restore.c  starting one that restores an image
 *   workload_ops.c      one state-changing operation at a time
 *   workload_control.c  the control verbs (freeze, thaw, commit, snapshot)
 *   workload_json.c     what the API shows of a workload
 *   workload_record.c   its record in the state directory; adoption
 * The table lock protects the table and every field of a workload that
 * changes after it is published (exited, wait_status, frozen, held,
 * restored, committed, migrated_to, restore_info, refs); the rest is
 * written before it is published and never again. Control-socket round
 * trips and waits happen without the lock.
 */
#ifndef AGENT_WORKLOAD_INTERNAL_H
#define AGENT_WORKLOAD_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>
#include <jansson.h>

#include "workload.h"

#define STATE_PATH_MAX		256
#define POLL_INTERVAL_MS	20

struct workload {
	unsigned int refs;
	bool in_table;
	char id[16];
	char program[PROGRAM_NAME_MAX + 1];
	struct workload_args args;
	bool control;
	bool criu;		/* engine "criu": pid 1 of its own PID namespace */
	pid_t pid;
	unsigned long long start_time;	/* /proc/PID/stat's: tells a reused pid */
	bool adopted;		/* from the record of an earlier agent: not our child */
	int pidfd;		/* adopted: readable once it has exited */
	bool exited;
	bool exit_known;	/* wait_status is real: not for an adopted one */
	int wait_status;
	int64_t exited_ns;	/* CLOCK_REALTIME when the reaper saw the exit */
	bool frozen;		/* as last set through the agent */
	bool busy;		/* workload_ops.c's, under its own lock */
	bool restored;
	bool hold;		/* restore with --restore-hold */
	bool held;		/* restored, frozen until THAW or COMMIT */
	bool committed;
	int64_t commit_read_ns;	/* COMMIT's read of the queues, for the exit window */
	bool commit_sealed;	/* ... after SFD_IOC_SEAL: later sends failed (ESRCH) */
	char requeue_source[65];	/* the forwarding source whose batches it took */
	unsigned long requeue_batch;	/* the last of them */
	char migrated_to[TARGET_HOST_MAX + 32];
	struct timespec started;
	json_t *restore_info;
	char sock[STATE_PATH_MAX];
	char ledger[STATE_PATH_MAX];
	char log[STATE_PATH_MAX];
	char image[STATE_PATH_MAX];
};

/* workload_table.c */
void wl_lock(void);
void wl_unlock(void);
const struct agent_config *wl_config(void);
struct workload *wl_new(const char *program, const struct workload_args *args,
			bool control, struct api_error *err);
/*
 * Gives @w an id, its state paths and a slot, and runs @spawn(@w, @arg)
 * before publishing it, all under the table lock: the reaper cannot see
 * the child exit before the workload can be found by its pid.
 */
int wl_publish(struct workload *w,
	       int (*spawn)(struct workload *w, void *arg, struct api_error *err),
	       void *arg, struct api_error *err);
void wl_remove(struct workload *w);
/* Puts an adopted @w (id set) in the table with its state paths. */
int wl_insert(struct workload *w);
/* @known: @status is from waitpid(). */
void wl_mark_exited(struct workload *w, int status, bool known);
/* A referenced workload of slot @i (workload_put), or NULL. */
struct workload *wl_get_slot(unsigned int i);
bool wl_is_exited(struct workload *w);
/* --max-output as @pid's RLIMIT_FSIZE; 0 or an errno. */
int wl_limit_output(pid_t pid);
/* A workload of this agent, not exited, has this pid (as the agent sees it). */
bool wl_pid_is_workload(pid_t pid);
bool wl_is_held(struct workload *w);
/* Up to @ms for the reaper to see @w exit. */
bool wl_wait_exit(struct workload *w, unsigned int ms);
void wl_kill_group(struct workload *w, int sig);
void wl_stop_reaper(void);

/* workload_record.c */
/* @w's record in the state directory, as it is now (written whole). */
void wl_record_save(struct workload *w);
void wl_record_drop(const struct workload *w);
void wl_record_start_time(struct workload *w);
/* At start: every recorded workload still running into the table. */
void wl_adopt_recorded(void);
/*
 * Watches @w (not the agent's child: the copy CRIU restored, an adopted
 * one) through its pidfd, opened here; @w->pid and start time are set.
 */
int wl_watch_pid(struct workload *w);

/* workload_restore.c */
/* @len bytes to a new file @path (mode 0600); an API error on failure. */
int wl_write_file(const char *path, const uint8_t *data, size_t len,
		  struct api_error *err);

/* workload_spawn.c */
/* The last line of the file @path: a program's or a tool's reason. */
void wl_last_line(const char *path, char *buf, size_t len);
int wl_program_path(const char *program, char *path, size_t len,
		    struct api_error *err);
struct wl_spawn_args {
	const char *path;	/* the program */
	const char *image_tmp;	/* restore: moved to the workload's image first */
};

/* The spawn of wl_publish(): @args is a struct wl_spawn_args. */
int wl_spawn(struct workload *w, void *args, struct api_error *err);
/* The exit of @w as an API error, with the last line it logged. */
int wl_exit_error(struct workload *w, unsigned int status, const char *code,
		  const char *what, struct api_error *err);

/* workload_control.c */
const char *wl_reply_state(const struct ctl_reply *reply);
/* The reply without its "ok" member, as an operation's result. */
json_t *wl_reply_result(const struct ctl_reply *reply);

#endif
