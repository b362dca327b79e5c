// SPDX-License-Identifier: GPL-2.0
/*
 * The control verbs of a workload: a round trip to its runtime, or job
 * control for a program started without one, and the agent's view of the
 * outcome (frozen, held, committed).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fault.h"
#include "log.h"
#include "workload_criu.h"
#include "workload_internal.h"

#define COMMIT_EXIT_MS		5000

static int require_alive(struct workload *w, struct api_error *err)
{
	char migrated_to[sizeof(w->migrated_to)];
	bool exited, committed;

	wl_lock();
	exited = w->exited;
	committed = w->committed;
	memcpy(migrated_to, w->migrated_to, sizeof(migrated_to));
	wl_unlock();
	if (committed)
		return api_error_set(err, 409, "wrong_state",
				     "%s was migrated to %s", w->id, migrated_to);
	if (exited)
		return api_error_set(err, 409, "wrong_state", "%s is not running",
				     w->id);
	return 0;
}

/* With @stream, the image is left on the socket for the caller to read. */
static int ctl_call(struct workload *w, const char *verb, int timeout_ms,
		    struct ctl_reply *reply, struct sigmig_ctl_stream *stream,
		    struct api_error *err)
{
	/* Clients see the verb's name only: its arguments are state paths. */
	int name = (int)strcspn(verb, " ");
	int ret;

	if (!w->control)
		return api_error_set(err, 409, "no_runtime",
				     "%s was started with \"control\": false", w->id);
	if (require_alive(w, err))
		return -1;
	ret = stream ? ctl_open(w->sock, verb, timeout_ms, reply, stream) :
		       ctl_request(w->sock, verb, timeout_ms, reply);
	if (ret)
		log_warn("%s: %s on %s: %s", w->id, verb, w->sock, strerror(-ret));
	if (ret == -ETIMEDOUT)
		return api_error_set(err, 504, "runtime_timeout",
				     "%s: no %.*s reply within %d ms", w->id, name,
				     verb, timeout_ms);
	if (ret)
		return api_error_set(err, 502, "runtime_unreachable",
				     "%s: %.*s on its control socket: %s", w->id,
				     name, verb, strerror(-ret));
	if (ctl_reply_ok(reply))
		return 0;
	api_error_set(err, strcmp(ctl_reply_error(reply), "wrong_state") ? 502 : 409,
		      strcmp(ctl_reply_error(reply), "wrong_state") ?
		      "runtime_error" : "wrong_state",
		      "%s: %.*s: %s", w->id, name, verb, ctl_reply_message(reply));
	snprintf(err->cause, sizeof(err->cause), "%s", ctl_reply_error(reply));
	ctl_reply_free(reply);
	if (stream)
		sigmig_ctl_close(stream);
	return -1;
}

int workload_ctl(struct workload *w, const char *verb, int timeout_ms,
		 struct ctl_reply *reply, struct api_error *err)
{
	return ctl_call(w, verb, timeout_ms, reply, NULL, err);
}

int workload_ctl_stream(struct workload *w, const char *verb, int timeout_ms,
			struct ctl_reply *reply, struct sigmig_ctl_stream *stream,
			struct api_error *err)
{
	return ctl_call(w, verb, timeout_ms, reply, stream, err);
}

const char *wl_reply_state(const struct ctl_reply *reply)
{
	return json_string_value(json_object_get(reply->json, "state"));
}

json_t *wl_reply_result(const struct ctl_reply *reply)
{
	json_t *res = json_deep_copy(reply->json);

	json_object_del(res, "ok");
	json_object_del(res, "image_size");
	return res;
}

static int set_frozen(struct workload *w, bool frozen)
{
	wl_lock();
	w->frozen = frozen;
	if (!frozen)
		w->held = false;
	wl_unlock();
	wl_record_save(w);
	return 0;
}

/* Without a runtime, freezing is job control: SIGSTOP/SIGCONT. */
static int plain_freeze(struct workload *w, bool freeze, json_t **result,
			struct api_error *err)
{
	bool frozen;

	if (require_alive(w, err))
		return -1;
	wl_lock();
	frozen = w->frozen;
	wl_unlock();
	if (frozen == freeze)
		return api_error_set(err, 409, "wrong_state", "%s is %s", w->id,
				     frozen ? "already frozen" : "not frozen");
	wl_kill_group(w, freeze ? SIGSTOP : SIGCONT);
	*result = json_pack("{s:s}", "method", freeze ? "SIGSTOP" : "SIGCONT");
	return set_frozen(w, freeze);
}

static int set_workload_frozen(struct workload *w, bool freeze, json_t **result,
			       struct api_error *err)
{
	struct ctl_reply reply;

	if (w->criu && !freeze)
		return criu_release(w, result, err);
	if (w->criu)	/* SIGSTOP would flush stop signals from its queues */
		return api_error_set(err, 409, "wrong_state",
				     "%s: engine criu: frozen only by a move", w->id);
	if (!w->control)
		return plain_freeze(w, freeze, result, err);
	if (workload_ctl(w, freeze ? "FREEZE" : "THAW", CTL_TIMEOUT_MS, &reply, err))
		return -1;
	*result = wl_reply_result(&reply);
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

/* The COMMIT reply's delta (its image), and its counts into @result. */
static void take_delta(struct ctl_reply *reply, struct ctl_reply *delta,
		       json_t *result)
{
	static const char *const counts[] = { "carried", "removed", "timers" };
	unsigned int i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		json_t *n = json_object_get(reply->json, counts[i]);

		if (json_is_integer(n))
			json_object_set(result, counts[i], n);
	}
	if (!reply->payload) {
		ctl_reply_free(reply);
		return;
	}
	*delta = *reply;
	memset(reply, 0, sizeof(*reply));
}

/*
 * From the delta read to the exit reaped, in CLOCK_REALTIME (the clock
 * senders stamp their logs with). Sealed (SFD_IOC_SEAL before that read),
 * a send to the pid then fails with ESRCH; on a kernel without the seal
 * it still succeeds, and nothing reads it.
 */
static void record_exit_window(struct workload *w, json_t *result)
{
	json_int_t from, to;
	bool sealed;

	wl_lock();
	from = w->commit_read_ns;
	sealed = w->commit_sealed;
	to = w->exited ? w->exited_ns : 0;
	wl_unlock();
	if (from <= 0 || to < from)
		return;
	json_object_set_new(result, "exit_window", json_pack("{s:I, s:I, s:f, s:b}",
			    "from_ns", from, "to_ns", to, "ms", (to - from) / 1e6,
			    "sealed", sealed));
}

static bool end_with(struct workload *w, const char *verb, json_t **result,
		     struct ctl_reply *delta)
{
	struct api_error err;
	struct ctl_reply reply;

	memset(delta, 0, sizeof(*delta));
	*result = json_pack("{s:s, s:i, s:i, s:i}", "method", "commit",
			    "carried", 0, "removed", 0, "timers", 0);
	if (workload_ctl(w, verb, CTL_TIMEOUT_MS, &reply, &err)) {
		json_object_set_new(*result, "method", json_string("killed"));
		return false;
	}
	wl_lock();
	w->commit_read_ns = json_integer_value(json_object_get(reply.json,
							       "read_realtime_ns"));
	w->commit_sealed = json_is_true(json_object_get(reply.json, "sealed"));
	wl_unlock();
	take_delta(&reply, delta, *result);
	return true;
}

bool workload_commit(struct workload *w, json_t **result, struct ctl_reply *delta)
{
	return end_with(w, "COMMIT", result, delta);
}

bool workload_forward(struct workload *w, json_t **result, struct ctl_reply *delta)
{
	if (!end_with(w, "FORWARD", result, delta))
		return false;
	json_object_set_new(*result, "method", json_string("forward"));
	return true;
}

int workload_drain(struct workload *w, const char *tag, struct ctl_reply *drained,
		   uint64_t *signals, struct api_error *err)
{
	char verb[128];

	snprintf(verb, sizeof(verb), "DRAIN %s", tag);
	if (workload_ctl(w, verb, CTL_TIMEOUT_MS, drained, err))
		return -1;
	*signals = (uint64_t)json_integer_value(json_object_get(drained->json, "carried"));
	return 0;
}

void workload_commit_settle(struct workload *w, const char *target, json_t *result)
{
	if (!wl_wait_exit(w, COMMIT_EXIT_MS)) {
		/* Frozen with everything blocked: SIGKILL delivers nothing. */
		log_warn("%s: still alive after COMMIT, sending SIGKILL", w->id);
		wl_kill_group(w, SIGKILL);
		wl_wait_exit(w, COMMIT_EXIT_MS);
		json_object_set_new(result, "method", json_string("killed"));
	}
	record_exit_window(w, result);
	wl_lock();
	w->committed = true;
	w->frozen = false;
	snprintf(w->migrated_to, sizeof(w->migrated_to), "%s", target);
	wl_unlock();
	wl_record_save(w);
}

bool workload_is_forwarding(struct workload *w)
{
	struct ctl_reply reply;
	const char *state;
	bool yes;

	if (!w->control || wl_is_exited(w) || ctl_request(w->sock, "STATUS", 2000, &reply))
		return false;
	state = wl_reply_state(&reply);
	yes = state && !strcmp(state, "forwarding");
	ctl_reply_free(&reply);
	return yes;
}

int workload_spool(struct workload *w, const char *what, const uint8_t *data,
		   size_t len, char *path, size_t pathlen, struct api_error *err)
{
	snprintf(path, pathlen, "%s/%s-%s.image", wl_config()->state_dir, w->id, what);
	return wl_write_file(path, data, len, err);
}

/*
 * A batch of a forwarding source is taken once and in order: a retry of
 * one already taken (its answer was lost) is acknowledged without a
 * second requeue, a gap refused. 1: already taken, 0: take it, -1: @err.
 */
static int check_batch(struct workload *w, const char *source, unsigned long batch,
		       struct api_error *err)
{
	bool same;
	unsigned long last;

	if (!source || !source[0])
		return 0;
	wl_lock();
	same = strcmp(w->requeue_source, source) == 0;
	last = same ? w->requeue_batch : 0;
	wl_unlock();
	if (batch <= last)
		return 1;
	if (batch != last + 1)
		return api_error_set(err, 409, "batch_out_of_order",
				     "%s: batch %lu of %s, expected %lu: an earlier "
				     "batch is missing", w->id, batch, source, last + 1);
	return 0;
}

static void took_batch(struct workload *w, const char *source, unsigned long batch)
{
	if (!source || !source[0])
		return;
	wl_lock();
	snprintf(w->requeue_source, sizeof(w->requeue_source), "%s", source);
	w->requeue_batch = batch;
	wl_unlock();
	/* before the answer: a restarted agent must not take it again */
	wl_record_save(w);
}

int workload_requeue(struct workload *w, const uint8_t *delta, size_t len,
		     const char *source, unsigned long batch,
		     json_t **result, struct api_error *err)
{
	char verb[STATE_PATH_MAX + 100], path[STATE_PATH_MAX];
	struct ctl_reply reply;
	int ret;

	if (w->criu)
		return criu_requeue_held(w, delta, len, source, result, err);
	ret = check_batch(w, source, batch, err);
	if (ret < 0)
		return -1;
	if (ret) {
		*result = json_pack("{s:i, s:i, s:b}", "requeued", 0, "merged", 0,
				    "duplicate", 1);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s-delta.image", wl_config()->state_dir, w->id);
	if (wl_write_file(path, delta, len, err))
		return -1;
	/* the runtime keeps the tag: a restarted agent asks it (workload_record.c) */
	if (source && source[0])
		snprintf(verb, sizeof(verb), "REQUEUE %s %s:%lu", path, source, batch);
	else
		snprintf(verb, sizeof(verb), "REQUEUE %s", path);
	ret = workload_ctl(w, verb, CTL_TIMEOUT_MS * 6, &reply, err);
	unlink(path);
	if (ret) {
		if (!strcmp(err->cause, "requeue_failed")) {
			err->status = 422;
			err->code = "requeue_failed";
		}
		return -1;
	}
	if (source && source[0])
		fault_hit(FAULT_BATCH_BEFORE_RECORD, "a forwarded batch requeued, not recorded");
	took_batch(w, source, batch);
	*result = json_pack("{s:I, s:I, s:b}", "requeued",
			    json_integer_value(json_object_get(reply.json, "requeued")),
			    "merged",
			    json_integer_value(json_object_get(reply.json, "merged")),
			    "duplicate", 0);
	ctl_reply_free(&reply);
	return 0;
}

/* Leave nothing half-frozen behind: ask every runtime, thaw the frozen. */
void workloads_shutdown(void)
{
	struct api_error err;
	struct workload *w;
	json_t *result;
	unsigned int i;

	for (i = 0; i < wl_config()->max_workloads; i++) {
		w = wl_get_slot(i);
		if (!w)
			continue;
		result = NULL;
		if (wl_is_held(w))
			log_warn("shutdown: %s stays held (frozen): its source may "
				 "still run; thaw or delete it", w->id);
		else if (workload_thaw(w, &result, &err) == 0)
			log_info("shutdown: thawed %s", w->id);
		else if (strcmp(err.code, "wrong_state") != 0)
			log_warn("shutdown: %s: %s", w->id, err.detail);
		json_decref(result);
		workload_put(w);
	}
	wl_stop_reaper();
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
