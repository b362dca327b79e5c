// SPDX-License-Identifier: GPL-2.0
/*
 * The original is frozen from FREEZE until COMMIT (success) or THAW
 * (failure): nothing is delivered on either side in between, and the
 * peer's 2xx is the single point at which the signals change owner.
 * The peer restores with ?hold=1: its copy stays frozen until we have
 * committed the original and thaw it, so a confirmation lost on the way
 * back leaves the original running here and a held (never resumed) copy
 * there, not two running copies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "httpc.h"
#include "log.h"
#include "forward.h"
#include "metrics.h"
#include "migrate.h"
#include "migrate_internal.h"
#include "workload_criu.h"

double migrate_phase_end(struct timings *t)
{
	double now = clock_mono_s(), d = now - t->mark;

	t->mark = now;
	return d;
}

int restore_path_for(const struct workload *w, char *buf, size_t len)
{
	const struct workload_args *args = workload_args(w);
	unsigned int i;

	snprintf(buf, len, "/v1/restore?hold=1");
	if (url_append_query(buf, len, "program", workload_program(w)))
		return -1;
	for (i = 0; i < args->argc; i++)
		if (url_append_query(buf, len, "arg", args->argv[i]))
			return -1;
	return 0;
}

json_t *migrate_timings_json(const struct timings *t)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
			 "freeze_ms", t->freeze * 1e3, "dump_ms", t->dump * 1e3,
			 "transfer_ms", t->transfer * 1e3,
			 "restore_ms", t->restore * 1e3,
			 "commit_ms", t->commit * 1e3,
			 "resume_ms", t->resume * 1e3,
			 "downtime_ms", t->downtime * 1e3);
}

/* Abort: the original resumes where it stopped, nothing was delivered. */
static int abort_migration(struct workload *w, struct api_error *err)
{
	struct api_error thaw_err;
	json_t *result = NULL;
	size_t used;

	metrics_migration("aborted");
	if (workload_thaw(w, &result, &thaw_err) == 0) {
		json_decref(result);
		log_warn("migrate %s aborted, original thawed: %s",
			 workload_id(w), err->detail);
		used = strlen(err->detail);
		snprintf(err->detail + used, sizeof(err->detail) - used,
			 "; the original was thawed and keeps running here");
		return -1;
	}
	log_error("migrate %s aborted and THAW failed: %s", workload_id(w),
		  thaw_err.detail);
	used = strlen(err->detail);
	snprintf(err->detail + used, sizeof(err->detail) - used,
		 "; THAW of the original failed too: %s", thaw_err.detail);
	return -1;
}

const char *migrate_target_id(json_t *remote)
{
	const char *id = json_string_value(json_object_get(remote, "id"));

	return id && workload_id_valid(id) ? id : NULL;
}

/*
 * What the original's queues gained after the DUMP goes into the held copy
 * before it resumes, behind the moved signals: batch 1 of the forwarder,
 * retried while the target does not answer, for timeout_ms. What cannot
 * be delivered is spooled here and the copy stays held: resumed without
 * it, those signals would come after later ones. POST .../replay on this
 * agent sends the spool and thaws the copy.
 */
static int carry_delta(struct forwarder *f, const struct migrate_request *req,
		       const char *src, const char *id, struct ctl_reply *delta,
		       uint64_t carried, char *problem, size_t len)
{
	if (!forwarder_put(f, delta, carried, req->timeout_ms))
		return 0;
	forwarder_spool_rest(f);
	if (!forwarder_spooled(f)) {
		snprintf(problem, len, "committed, but the signals that reached the "
			 "original after its dump could not be requeued into %s on "
			 "%s nor kept on the source (see the agent's log)", id,
			 req->target_text);
		return -1;
	}
	if (req->resume_target)
		forwarder_thaw_after_replay(f);
	snprintf(problem, len, "committed, but the signals that reached the "
		 "original after its dump could not be requeued into %s on %s: "
		 "kept in %s on the source; %s stays frozen there until POST "
		 "/v1/workloads/%s/replay on the source sends them (and thaws it)",
		 id, req->target_text, forwarder_first_spool(f), id, src);
	return -1;
}

static void peer_problem(const struct http_result *res, struct api_error *err)
{
	json_t *doc = res->body ? json_loads(res->body, 0, NULL) : NULL;
	const char *code = json_string_value(json_object_get(doc, "code"));
	const char *detail = json_string_value(json_object_get(doc, "detail"));

	api_error_set(err, 502, "target_rejected",
		      "the target answered %u: %s", res->status,
		      detail ? detail : "(no problem document)");
	snprintf(err->cause, sizeof(err->cause), "%s", code ? code : "");
	json_decref(doc);
}

static void transfer_failure(const struct migrate_request *req,
			     const struct http_result *res, struct api_error *err)
{
	if (res->error == ETIMEDOUT)
		api_error_set(err, 504, "target_timeout",
			      "%s: %s timed out (link stalled or restore too slow, "
			      "timeout %u ms)", req->target_text,
			      res->failed_phase, req->timeout_ms);
	else if (!strcmp(res->failed_phase, "resolve") ||
		 !strcmp(res->failed_phase, "connect") ||
		 !strcmp(res->failed_phase, "tls"))
		api_error_set(err, 502, "target_unreachable", "%s: %s: %s",
			      req->target_text, res->failed_phase, res->detail);
	else
		api_error_set(err, 502, "transfer_failed", "%s: %s: %s (%s)",
			      req->target_text, res->failed_phase,
			      strerror(res->error), res->detail);
	snprintf(err->cause, sizeof(err->cause), "%s", res->failed_phase);
}

/* A workload the operator froze beforehand is migrated as it is. */
static bool already_frozen(struct workload *w)
{
	struct api_error err;
	struct ctl_reply status;
	const char *state;
	bool frozen;

	if (workload_ctl(w, "STATUS", CTL_TIMEOUT_MS, &status, &err))
		return false;
	state = json_string_value(json_object_get(status.json, "state"));
	frozen = state && strcmp(state, "frozen") == 0;
	ctl_reply_free(&status);
	return frozen;
}

/*
 * The dump phase ends when the runtime has taken the queues and says how
 * long the image is: the image itself is read from @image as the runtime
 * encodes it, while it goes to the target. The stream's deadline covers
 * the transfer too, which is bounded by the migration's timeout.
 */
static int freeze_and_dump(struct workload *w, const struct migrate_request *req,
			   struct ctl_reply *dump, struct sigmig_ctl_stream *image,
			   struct timings *t, struct api_error *err)
{
	json_t *result = NULL;

	if (workload_freeze(w, &result, err)) {
		if (strcmp(err->code, "wrong_state") != 0 || !already_frozen(w))
			return -1;	/* nothing frozen, nothing to undo */
	}
	json_decref(result);
	t->freeze = migrate_phase_end(t);
	if (workload_ctl_stream(w, "DUMP", CTL_TIMEOUT_MS * 6 + (int)req->timeout_ms,
				dump, image, err))
		return abort_migration(w, err);
	if (!image->head) {
		sigmig_ctl_close(image);
		ctl_reply_free(dump);
		api_error_set(err, 502, "runtime_error", "%s: DUMP: no image in "
			      "the reply", workload_id(w));
		return abort_migration(w, err);
	}
	dump->payload_len = image->size;
	t->dump = migrate_phase_end(t);
	return 0;
}

/*
 * The TCP connect and the TLS handshake are made before the freeze, so
 * that the downtime does not pay them: a cheap GET on the connection the
 * image then goes on. Best effort, for PRECONNECT_MS at most: a target
 * that does not answer now is tried again by the POST, whose failure
 * says why and is handled as before (the original thawed).
 */
#define PRECONNECT_MS	2000u

void migrate_connect(const struct migrate_request *req, struct httpc_conn *conn)
{
	unsigned int bound = req->timeout_ms < PRECONNECT_MS ? req->timeout_ms :
			     PRECONNECT_MS;
	struct http_result res;

	if (httpc_conn_request(conn, "GET", &req->target, "/v1/health", NULL,
			       "application/json", NULL, 0, bound, bound, &res)) {
		log_warn("migrate: %s did not answer before the freeze (%s: %s)",
			 req->target_text, res.failed_phase, strerror(res.error));
		return;
	}
	http_result_free(&res);
}

/* The transfer's and the restore's times, and the target's verdict. */
static int migrate_answer(const struct http_result *res, struct timings *t,
			  struct api_error *err)
{
	t->transfer = res->connect_s + res->send_s;
	t->restore = migrate_phase_end(t) - t->transfer;
	if (t->restore < 0) {	/* clocks of one host: cannot be, but never negative */
		t->transfer += t->restore;
		t->restore = 0;
	}
	if (res->status < 200 || res->status > 299) {
		peer_problem(res, err);
		return -1;
	}
	return 0;
}

int migrate_post(const struct migrate_request *req, struct httpc_conn *conn,
		 const char *path, const uint8_t *body, size_t len,
		 struct http_result *res, struct timings *t, struct api_error *err)
{
	if (httpc_conn_post(conn, &req->target, path, req->token,
			    "application/octet-stream", body, len,
			    req->timeout_ms, MIGRATE_STALL_MS, res)) {
		transfer_failure(req, res, err);
		return -1;
	}
	return migrate_answer(res, t, err);
}

/* A runtime that stops writing is given up on as a link that stops taking. */
static ssize_t read_image(void *arg, uint8_t *buf, size_t cap)
{
	return sigmig_ctl_read(arg, buf, cap, MIGRATE_STALL_MS);
}

/* The runtime, not the target, failed while the image went out. */
static void source_failure(struct workload *w, const struct http_result *res,
			   struct api_error *err)
{
	if (res->error == ETIMEDOUT)
		api_error_set(err, 504, "runtime_timeout", "%s: the DUMP's image "
			      "stopped coming from its control socket", workload_id(w));
	else
		api_error_set(err, 502, "runtime_unreachable", "%s: the DUMP's "
			      "image on its control socket: %s", workload_id(w),
			      res->error == EPROTO ? "cut short" : strerror(res->error));
	snprintf(err->cause, sizeof(err->cause), "dump");
}

/*
 * The image goes from the runtime's socket to the target as the runtime
 * encodes it; the target checks it whole (CRC, every record) before it
 * requeues anything, so a cut anywhere loses nothing: the original is
 * thawed here.
 */
static int send_image(struct workload *w, const struct migrate_request *req,
		      struct httpc_conn *conn, struct sigmig_ctl_stream *image,
		      struct http_result *res, struct timings *t,
		      struct api_error *err)
{
	char path[8192];
	int ret;

	if (restore_path_for(w, path, sizeof(path))) {
		memset(res, 0, sizeof(*res));
		sigmig_ctl_close(image);
		api_error_set(err, 500, "internal", "workload arguments too long");
		return abort_migration(w, err);
	}
	ret = httpc_conn_post_from(conn, &req->target, path, req->token,
				   "application/octet-stream", image->size,
				   read_image, image, req->timeout_ms,
				   MIGRATE_STALL_MS, res);
	sigmig_ctl_close(image);
	if (!ret)
		return migrate_answer(res, t, err) ? abort_migration(w, err) : 0;
	if (!strcmp(res->failed_phase, "source"))
		source_failure(w, res, err);
	else
		transfer_failure(req, res, err);
	return abort_migration(w, err);
}

static json_t *success_json(struct workload *w, const struct migrate_request *req,
			    const struct ctl_reply *dump, json_t *remote,
			    json_t *commit, const struct timings *t)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:O, s:I, s:o, s:o}",
			 "result", "committed", "workload", workload_id(w),
			 "target", req->target_text,
			 "target_workload", remote ? remote : json_null(),
			 "signals", json_object_get(dump->json, "signals") ?:
			 json_null(), "image_bytes", (json_int_t)dump->payload_len,
			 "commit", commit, "timings", migrate_timings_json(t));
}

/* Held copies have not resumed yet: their downtime is not known here. */
static void record_phases(const struct timings *t, bool resumed)
{
	metrics_phase(PHASE_FREEZE, t->freeze);
	metrics_phase(PHASE_DUMP, t->dump);
	metrics_phase(PHASE_TRANSFER, t->transfer);
	metrics_phase(PHASE_RESTORE, t->restore);
	metrics_phase(PHASE_COMMIT, t->commit);
	if (!resumed)
		return;
	metrics_phase(PHASE_RESUME, t->resume);
	metrics_phase(PHASE_DOWNTIME, t->downtime);
}

/*
 * The original after B's answer: a forwarder when asked (FORWARD), else,
 * or when it cannot become one, committed (COMMIT) as it ends.
 */
static bool end_original(struct workload *w, const struct migrate_request *req,
			 json_t **commit, struct ctl_reply *delta, bool *forwarding)
{
	*forwarding = false;
	if (req->forward_ms && workload_forward(w, commit, delta)) {
		*forwarding = true;
		return true;
	}
	if (req->forward_ms) {
		log_warn("migrate %s: FORWARD failed, committing without forwarding",
			 workload_id(w));
		json_decref(*commit);
	}
	return workload_commit(w, commit, delta);
}

static void add_forward_json(json_t *result, const struct migrate_request *req,
			     const struct forwarder *f, bool forwarding, double lease_s)
{
	json_t *o = f ? forwarder_json(f) : json_object();

	json_object_set_new(o, "lease_ms", json_integer(forwarding ? req->forward_ms : 0));
	json_object_set_new(o, "ran_ms", json_real(lease_s * 1e3));
	json_object_set_new(result, "forward", o);
}

int migrate_workload(struct workload *w, const struct migrate_request *req,
		     json_t **result, struct api_error *err)
{
	struct timings t = { .start = clock_mono_s() };
	struct forwarder *fwd = NULL;
	struct httpc_conn conn = { 0 };
	struct sigmig_ctl_stream image;
	struct ctl_reply dump;
	struct http_result res;
	json_t *commit = NULL, *remote, *running = NULL;
	char problem[2048] = "";
	const char *id, *problem_code = "target_thaw_failed";
	struct ctl_reply delta;
	json_int_t carried;
	bool acked, forwarding, spooled = false;
	double lease_s = 0;

	if (workload_is_criu(w))
		return migrate_criu(w, req, result, err);
	migrate_connect(req, &conn);
	t.start = clock_mono_s();
	t.mark = t.start;
	log_info("migrate %s to %s: freezing", workload_id(w), req->target_text);
	if (freeze_and_dump(w, req, &dump, &image, &t, err)) {
		httpc_conn_close(&conn);
		return -1;
	}
	metrics_signals_dumped((uint64_t)json_integer_value(
		json_object_get(dump.json, "signals")));
	log_info("migrate %s: %zu-byte image, streaming", workload_id(w),
		 dump.payload_len);
	if (send_image(w, req, &conn, &image, &res, &t, err)) {
		httpc_conn_close(&conn);
		http_result_free(&res);
		ctl_reply_free(&dump);
		return -1;
	}
	remote = json_loads(res.body ? res.body : "", 0, NULL);
	id = migrate_target_id(remote);
	fwd = id ? forwarder_new(w, req, id, &conn) : NULL;
	if (!fwd) {
		httpc_conn_close(&conn);
		/* Cannot thaw what we cannot name: keep the original. */
		api_error_set(err, 502, "target_rejected", id ?
			      "out of memory for the commit" :
			      "the target answered %u without a workload id",
			      res.status);
		json_decref(remote);
		http_result_free(&res);
		ctl_reply_free(&dump);
		return abort_migration(w, err);
	}
	acked = end_original(w, req, &commit, &delta, &forwarding);
	if (!acked)	/* it may still run: gone before the copy resumes */
		workload_commit_settle(w, req->target_text, commit);
	carried = json_integer_value(json_object_get(commit, "carried"));
	if (delta.payload && carried > 0 &&
	    carry_delta(fwd, req, workload_id(w), id, &delta, (uint64_t)carried,
			problem, sizeof(problem))) {
		problem_code = "commit_delta_spooled";
		spooled = true;
	}
	ctl_reply_free(&delta);
	t.commit = migrate_phase_end(&t);
	/*
	 * Held on request, so that the caller can compare B's queues with
	 * the image before anything is delivered; it resumes on its thaw.
	 */
	if (req->resume_target && !problem[0])
		running = forwarder_thaw(fwd, problem, sizeof(problem));
	t.resume = migrate_phase_end(&t);
	t.downtime = t.mark - t.start;
	/* the copy runs: what reaches the original now goes after it */
	if (forwarding) {
		forwarder_lease(fwd, req->forward_ms, commit, &acked);
		lease_s = clock_mono_s() - t.mark;
	}
	/* COMMIT acknowledged: the original's exit is not part of the downtime */
	if (acked)
		workload_commit_settle(w, req->target_text, commit);
	if (running) {
		json_decref(remote);
		remote = running;
	} else if (problem[0]) {
		log_error("migrate %s: %s", workload_id(w), problem);
	}
	*result = success_json(w, req, &dump, remote, commit, &t);
	json_object_set_new(*result, "target_resumed", json_boolean(running));
	json_object_set_new(*result, "carried_at_commit", json_integer(carried));
	add_forward_json(*result, req, fwd, forwarding, lease_s);
	if (carried > 0)
		metrics_signals_carried((uint64_t)carried);
	if (problem[0])
		json_object_set_new(*result, "problem", json_pack(
			"{s:s, s:s, s:s}", "code", problem_code,
			"target_state", "frozen", "detail", problem));
	if (spooled)
		json_object_set_new(json_object_get(*result, "problem"), "spool",
				    json_string(forwarder_first_spool(fwd)));
	record_phases(&t, running != NULL);
	metrics_migration("committed");
	log_info("migrate %s committed to %s, downtime %.1f ms", workload_id(w),
		 req->target_text, t.downtime * 1e3);
	forwarder_done(fwd);
	http_result_free(&res);
	ctl_reply_free(&dump);
	return 0;
}
