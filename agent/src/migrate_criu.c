// SPDX-License-Identifier: GPL-2.0
/*
 * A move with engine "criu", two-phase as the runtime's: the original is
 * drained and dumped, and stays frozen, drained, until the target has
 * restored the copy, requeued every record and verified it (held, never
 * resumed). On any failure before that answer the drained records go
 * back into the original, in front, and it runs on. After it, what
 * reached the original's queues since CRIU's dump (the commit delta, less
 * what CRIU itself carried) goes into the held copy behind the moved
 * records, the original is killed, and the copy is thawed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "forward.h"
#include "httpc.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "migrate_internal.h"
#include "workload_criu.h"

static int criu_restore_path(struct workload *w, char *buf, size_t len)
{
	return restore_path_for(w, buf, len) ||
	       url_append_query(buf, len, "engine", "criu") ? -1 : 0;
}

static int abort_move(struct workload *w, struct criu_move *m, struct api_error *err)
{
	size_t used = strlen(err->detail);
	char why[256];

	metrics_migration("aborted");
	if (criu_abort(w, m, why, sizeof(why)))
		snprintf(err->detail + used, sizeof(err->detail) - used,
			 "; putting the drained signals back failed too (%s): they are "
			 "in %s/signals", why, m->dir);
	else
		snprintf(err->detail + used, sizeof(err->detail) - used,
			 "; the original got its signals back and keeps running here");
	return -1;
}

static int send_dump(struct workload *w, const struct migrate_request *req,
		     struct httpc_conn *conn, struct criu_move *m,
		     struct http_result *res, struct timings *t,
		     struct api_error *err)
{
	char path[8192];

	if (criu_restore_path(w, path, sizeof(path))) {
		api_error_set(err, 500, "internal", "workload arguments too long");
		return abort_move(w, m, err);
	}
	if (migrate_post(req, conn, path, m->bundle, m->bundle_len, res, t, err))
		return abort_move(w, m, err);
	return 0;
}

/*
 * The target's answer to the delta: of the records carried, the copy held
 * already_held (CRIU had queued them), so carried counts the others.
 */
static void held_by_copy(struct criu_move *m, const char *body)
{
	json_t *o = json_loads(body ? body : "", 0, NULL);
	json_int_t held;

	held = json_integer_value(json_object_get(json_object_get(o, "result"), "already_held"));
	if (held > 0 && (unsigned long)held <= m->carried) {
		m->already_held = (unsigned long)held;
		m->carried -= (unsigned long)held;
	}
	json_decref(o);
}

/* The delta into the held copy; a problem's detail on failure. */
static int carry_delta(const struct migrate_request *req, struct httpc_conn *conn,
		       struct criu_move *m, const char *id, char *problem,
		       size_t len)
{
	struct http_result res = { 0 };
	char path[128];
	int ret = 0;

	snprintf(path, sizeof(path), "/v1/workloads/%s/requeue", id);
	if (httpc_conn_post(conn, &req->target, path, req->token,
			    "application/octet-stream", m->delta, m->delta_len,
			    req->timeout_ms, MIGRATE_STALL_MS, &res) ||
	    res.status < 200 || res.status > 299) {
		snprintf(problem, len, "committed, but the %lu signals that reached the "
			 "original after its dump could not be requeued into %s on %s "
			 "(%s): they are in %s/carry; %s stays held", m->carried, id,
			 req->target_text, res.status && res.body ? res.body : res.detail, m->dir, id);
		ret = -1;
	} else {
		held_by_copy(m, res.body);
	}
	http_result_free(&res);
	return ret;
}

static json_t *result_json(struct workload *w, const struct migrate_request *req,
			   const struct criu_move *m, json_t *remote, json_t *commit,
			   const struct timings *t)
{
	json_t *timings = migrate_timings_json(t);

	json_object_set_new(timings, "drain_ms", json_real(m->drain_us / 1e3));
	json_object_set_new(timings, "criu_dump_ms", json_real(m->criu_us / 1e3));
	return json_pack("{s:s, s:s, s:s, s:s, s:O, s:I, s:I, s:I, s:I, s:O, s:o}",
			 "result", "committed", "engine", "criu",
			 "workload", workload_id(w), "target", req->target_text,
			 "target_workload", remote ? remote : json_null(),
			 "signals", (json_int_t)m->records,
			 "image_bytes", (json_int_t)m->bundle_len,
			 "delta_drained", (json_int_t)m->delta_drained,
			 "carried_at_commit", (json_int_t)m->carried,
			 "commit", commit, "timings", timings);
}

/*
 * After the target's answer: the original ends, the copy gets the delta.
 * Returns the commit's account (method, counts, exit window).
 */
static json_t *commit_original(struct workload *w, const struct migrate_request *req,
			       struct httpc_conn *conn, struct criu_move *m,
			       const char *id, char *problem, size_t len)
{
	struct api_error err;
	json_t *settled;

	if (criu_delta(w, m, &err))
		snprintf(problem, len, "committed, but the original's last signals "
			 "could not be read: %s; %s stays held", err.detail, id);
	else if (m->delta)
		carry_delta(req, conn, m, id, problem, len);
	settled = json_pack("{s:s, s:I, s:i, s:I, s:I}", "method", "killed",
			    "carried", (json_int_t)m->carried, "removed", 0,
			    "timers", (json_int_t)m->timers,
			    "already_held", (json_int_t)m->already_held);
	workload_commit_settle(w, req->target_text, settled);
	return settled;
}

int migrate_criu(struct workload *w, const struct migrate_request *req,
		 json_t **result, struct api_error *err)
{
	struct timings t = { 0 };
	struct httpc_conn conn = { 0 };
	struct http_result res = { 0 };
	json_t *remote = NULL, *running = NULL, *commit;
	char problem[1024] = "";
	struct criu_move m;
	const char *id;

	migrate_connect(req, &conn);
	t.start = clock_mono_s();
	t.mark = t.start;
	log_info("migrate %s to %s: engine criu, dumping", workload_id(w), req->target_text);
	if (criu_dump(w, &m, err)) {
		httpc_conn_close(&conn);
		return -1;
	}
	t.dump = migrate_phase_end(&t);
	metrics_signals_dumped(m.records);
	if (send_dump(w, req, &conn, &m, &res, &t, err))
		goto out;
	remote = json_loads(res.body ? res.body : "", 0, NULL);
	id = migrate_target_id(remote);
	if (!id) {
		api_error_set(err, 502, "target_rejected",
			      "the target answered %u without a workload id", res.status);
		abort_move(w, &m, err);
		goto out;
	}
	commit = commit_original(w, req, &conn, &m, id, problem, sizeof(problem));
	t.commit = migrate_phase_end(&t);
	if (req->resume_target && !problem[0])
		running = forward_thaw_target(&conn, &req->target, req->target_text,
					      req->token, req->timeout_ms, id,
					      problem, sizeof(problem));
	t.resume = migrate_phase_end(&t);
	t.downtime = t.mark - t.start;
	*result = result_json(w, req, &m, running ? running : remote, commit, &t);
	json_decref(commit);
	json_object_set_new(*result, "target_resumed", json_boolean(running));
	if (problem[0])
		json_object_set_new(*result, "problem", json_pack("{s:s, s:s, s:s}",
				    "code", "commit_delta_failed", "target_state", "frozen",
				    "detail", problem));
	if (m.carried)
		metrics_signals_carried(m.carried);
	metrics_migration("committed");
	log_info("migrate %s committed to %s (criu), downtime %.1f ms", workload_id(w),
		 req->target_text, t.downtime * 1e3);
	json_decref(running);
	json_decref(remote);
	http_result_free(&res);
	httpc_conn_close(&conn);
	criu_move_free(&m);
	return 0;
out:
	json_decref(remote);
	http_result_free(&res);
	httpc_conn_close(&conn);
	criu_move_free(&m);
	return -1;
}
