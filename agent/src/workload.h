/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Workload processes: started from the program directory, tracked by id,
 * reaped by a dedicated thread, driven through their control socket
 * (workload_*.c; workload_internal.h says which file does what).
 */
#ifndef AGENT_WORKLOAD_H
#define AGENT_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "config.h"
#include "ctl.h"
#include "problem.h"
#include "validate.h"

#define CTL_TIMEOUT_MS		10000
#define START_TIMEOUT_MS	10000

struct workload;

int workloads_init(const struct agent_config *cfg);
/* Thaws every frozen workload (they keep running) and stops the reaper. */
void workloads_shutdown(void);

/* New workload, reference held by *out (workload_put). */
int workload_start(const struct start_request *req, struct workload **out,
		   struct api_error *err);

/*
 * Starts @program --restore and passes it @image through a FIFO in the
 * state directory; returns once the runtime reports "running" (0) or
 * failed (-1, @err has the runtime's reason). With @hold (--restore-hold) it returns once the
 * restore is verified and held "frozen": THAW resumes it, DELETE ends it
 * with COMMIT (never resumed, nothing delivered).
 */
int workload_restore(const uint8_t *image, size_t len, const char *program,
		     const struct workload_args *args, bool hold,
		     struct workload **out, struct api_error *err);

/*
 * The same in steps, for an image that is still arriving: begin starts
 * @program reading its image from a FIFO (NULL with @err set when it
 * cannot); feed is given the image so far (@len bytes, growing from call
 * to call) and passes on what it has not yet, once the program reads
 * (-1 once the program takes no more: it exited, or read nothing for
 * 10 s; finish says which); finish is given the whole image, passes on
 * the rest and waits as workload_restore() does. cancel instead ends the
 * program and forgets it. finish and cancel free the stream.
 */
struct restore_stream;
struct restore_stream *workload_restore_begin(const char *program,
					      const struct workload_args *args,
					      bool hold, struct api_error *err);
int workload_restore_feed(struct restore_stream *s, const uint8_t *image,
			  size_t len);
int workload_restore_finish(struct restore_stream *s, const uint8_t *image,
			    size_t len, struct workload **out,
			    struct api_error *err);
void workload_restore_cancel(struct restore_stream *s);

/* Referenced lookup; NULL when unknown. */
struct workload *workload_find(const char *id);
void workload_put(struct workload *w);
const char *workload_id(const struct workload *w);
bool workload_has_runtime(const struct workload *w);
pid_t workload_pid(const struct workload *w);
const char *workload_program(const struct workload *w);
const struct workload_args *workload_args(const struct workload *w);

/* @live: ask the runtime for its current state and threads. */
json_t *workload_to_json(struct workload *w, bool live);
json_t *workloads_list_json(void);
/* Counts by state for the metrics page. */
void workloads_count(unsigned int *running, unsigned int *exited);

/*
 * One state-changing operation at a time per workload: a thaw must not
 * slip into a migration. Waits up to @wait_ms (0: not at all) for the
 * current one, then fails with 409 "workload_busy".
 */
#define OP_WAIT_READ_MS		30000
int workload_begin_op(struct workload *w, unsigned int wait_ms,
		      struct api_error *err);
void workload_end_op(struct workload *w);

/* Stops (SIGTERM, then SIGKILL) and forgets the workload. */
int workload_stop(struct workload *w, json_t **final, struct api_error *err);

/* Control verbs; @reply is filled on success (ctl_reply_free). */
int workload_ctl(struct workload *w, const char *verb, int timeout_ms,
		 struct ctl_reply *reply, struct api_error *err);
/*
 * The same with the reply's image left in @stream (ctl_open()), for the
 * caller to read as the runtime writes it; closed here on failure.
 */
int workload_ctl_stream(struct workload *w, const char *verb, int timeout_ms,
			struct ctl_reply *reply, struct sigmig_ctl_stream *stream,
			struct api_error *err);

int workload_freeze(struct workload *w, json_t **result, struct api_error *err);
int workload_thaw(struct workload *w, json_t **result, struct api_error *err);
/* The image without dequeuing, leaving @w running or frozen as it was. */
int workload_snapshot(struct workload *w, const char *verb,
		      struct ctl_reply *dump, struct api_error *err);
/*
 * After a confirmed migration: COMMIT. @result: method and the delta's
 * counts (carried, removed, timers); @delta gets the image of what the
 * queues gained since the DUMP when the runtime sent one (payload NULL
 * otherwise; ctl_reply_free). Returns true when the runtime acknowledged:
 * the original then ends without running anything more, and the copy may
 * resume before workload_commit_settle(). False: settle first.
 */
bool workload_commit(struct workload *w, json_t **result, struct ctl_reply *delta);
/*
 * The same, but FORWARD: the original stays, parked, as a forwarder;
 * workload_drain() reads what arrived in its queues since the last read
 * (DRAIN: @signals of them in @drained's image) and
 * workload_commit() the last of it as it ends the forwarder. False: the
 * runtime did not become a forwarder (COMMIT it).
 */
bool workload_forward(struct workload *w, json_t **result, struct ctl_reply *delta);
/*
 * @tag names the batch the read will become: a DRAIN under the tag of a
 * non-empty read that was never stored gets the same records again.
 */
int workload_drain(struct workload *w, const char *tag, struct ctl_reply *drained,
		   uint64_t *signals, struct api_error *err);
/*
 * The original's end: its exit waited for (SIGKILL if it does not come),
 * the exit window recorded into @result (exit_window), the workload marked
 * migrated to @target.
 */
void workload_commit_settle(struct workload *w, const char *target, json_t *result);
/*
 * Signals that reached the original after its DUMP (@delta, an image)
 * into the copy: held, behind the restored signals; running or frozen,
 * behind what is pending (REQUEUE). With @source, batch @batch of that
 * forwarding source: taken once, in order (409 batch_out_of_order).
 */
int workload_requeue(struct workload *w, const uint8_t *delta, size_t len,
		     const char *source, unsigned long batch,
		     json_t **result, struct api_error *err);
/* @data kept in the state directory as <id>-<what>.image, named in @path. */
int workload_spool(struct workload *w, const char *what, const uint8_t *data,
		   size_t len, char *path, size_t pathlen, struct api_error *err);

/* The agent's --state-dir. */
const char *workloads_state_dir(void);
/* Its runtime says it is a forwarder (FORWARD, lease not over). */
bool workload_is_forwarding(struct workload *w);

/* Path of a state file of @w ("ledger" or "log"); NULL if it has none. */
const char *workload_file(const struct workload *w, const char *which);

#endif
