// SPDX-License-Identifier: GPL-2.0
/*
 * Endpoint handlers and the route table. Each handler validates what it
 * was given, does one thing, and fills exactly one reply.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sigmig/image.h>

#include "caps.h"
#include "clock.h"
#include "fault.h"
#include "handlers.h"
#include "image_json.h"
#include "log.h"
#include "metrics.h"
#include "forward.h"
#include "migrate.h"
#include "server.h"
#include "validate.h"
#include "workload.h"
#include "workload_criu.h"

#define SIGNALS_LIMIT_DEFAULT	1000
/* Per queue: each listed record costs ~3 KB of JSON while the reply is built. */
#define SIGNALS_LIMIT_MAX	100000
#define FILE_REPLY_MAX		(256u << 20)

static bool require_interface(struct request *req, struct reply *out)
{
	if (caps_interface_ok(&agent.caps))
		return true;
	reply_error(out, req, 503, "kernel_unsupported",
		    "the running kernel (%s) lacks the signalfd pending-signal "
		    "interface: %s", agent.caps.release,
		    caps_missing(&agent.caps)[0] ? caps_missing(&agent.caps) :
		    "unknown");
	return false;
}

static struct workload *find_or_404(struct request *req, struct reply *out)
{
	struct workload *w = workload_find(req->param);

	if (!w)
		reply_error(out, req, 404, "unknown_workload",
			    "no workload '%s'", req->param);
	return w;
}

void handle_health(struct request *req, struct reply *out)
{
	unsigned int running, exited;

	(void)req;
	workloads_count(&running, &exited);
	reply_json(out, 200, json_pack("{s:s, s:s, s:I, s:i}", "status", "ok",
				       "version", AGENT_VERSION, "uptime_s",
				       (json_int_t)(time(NULL) - agent.started),
				       "workloads", (int)(running + exited)));
}

static json_t *programs_json(void)
{
	json_t *list = json_array();
	char path[512];
	struct dirent *de;
	struct stat st;
	DIR *d;

	d = opendir(agent.cfg->bin_dir);
	if (!d)
		return list;
	while ((de = readdir(d))) {
		if (!program_allowed(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", agent.cfg->bin_dir, de->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && !access(path, X_OK))
			json_array_append_new(list, json_string(de->d_name));
	}
	closedir(d);
	return list;
}

void handle_capabilities(struct request *req, struct reply *out)
{
	json_t *caps = caps_to_json(&agent.caps);

	(void)req;
	json_object_set_new(caps, "programs", programs_json());
	json_object_set_new(caps, "limits", json_pack("{s:I, s:I, s:i}",
		"max_body", (json_int_t)agent.cfg->max_body,
		"max_image", (json_int_t)agent.cfg->max_image,
		"max_workloads", (int)agent.cfg->max_workloads));
	json_object_set_new(caps, "auth", json_string(agent.cfg->token ?
						      "bearer" : "none"));
	reply_json(out, 200, caps);
}

void handle_list(struct request *req, struct reply *out)
{
	(void)req;
	reply_json(out, 200, json_pack("{s:o}", "workloads", workloads_list_json()));
}

static void reply_created(struct reply *out, struct workload *w)
{
	reply_json(out, 201, workload_to_json(w, true));
	reply_header(out, "Location", "/v1/workloads/%s", workload_id(w));
}

void handle_start(struct request *req, struct reply *out)
{
	struct start_request sr;
	struct api_error err;
	struct verror verr;
	struct workload *w;

	if (parse_start_request(req->body, req->body_len, &sr, &verr)) {
		reply_error(out, req, 400, verr.code, "%s", verr.detail);
		return;
	}
	if (workload_start(&sr, &w, &err) == 0) {
		reply_created(out, w);
		workload_put(w);
	} else {
		reply_problem(out, &err, req);
	}
	start_request_free(&sr);
}

void handle_get(struct request *req, struct reply *out)
{
	struct workload *w = find_or_404(req, out);

	if (!w)
		return;
	reply_json(out, 200, workload_to_json(w, true));
	workload_put(w);
}

void handle_delete(struct request *req, struct reply *out)
{
	struct workload *w = find_or_404(req, out);
	struct api_error err;
	json_t *final;

	if (!w)
		return;
	if (workload_begin_op(w, 0, &err)) {
		reply_problem(out, &err, req);
	} else {
		workload_stop(w, &final, &err);
		workload_end_op(w);
		reply_json(out, 200, final);
	}
	workload_put(w);
}

typedef int (*state_op)(struct workload *w, json_t **result,
			struct api_error *err);

/*
 * @op under the workload's operation; its result alone (@bare) or as
 * {result, workload}.
 */
static void run_op(struct request *req, struct reply *out, state_op op, bool bare)
{
	struct workload *w = find_or_404(req, out);
	struct api_error err;
	json_t *result = NULL;

	if (!w)
		return;
	if (workload_begin_op(w, 0, &err)) {
		reply_problem(out, &err, req);
		workload_put(w);
		return;
	}
	if (op(w, &result, &err))
		reply_problem(out, &err, req);
	else if (bare)
		reply_json(out, 200, result);
	else
		reply_json(out, 200, json_pack("{s:o, s:o}", "result",
			result ? result : json_object(), "workload",
			workload_to_json(w, true)));
	workload_end_op(w);
	workload_put(w);
}

static void run_state_op(struct request *req, struct reply *out, state_op op)
{
	run_op(req, out, op, false);
}

void handle_freeze(struct request *req, struct reply *out)
{
	run_state_op(req, out, workload_freeze);
}

void handle_thaw(struct request *req, struct reply *out)
{
	run_state_op(req, out, workload_thaw);
}

/* A snapshot: frozen if needed, dumped, thawed again; never dequeues. */
static struct workload *peek_image(struct request *req, struct reply *out,
				   const char *verb, struct ctl_reply *peek)
{
	struct workload *w;
	struct api_error err;
	int ret;

	w = find_or_404(req, out);
	if (!w)
		return NULL;
	if (!require_interface(req, out)) {
		workload_put(w);
		return NULL;
	}
	/* Readers queue behind each other rather than fail. */
	if (workload_begin_op(w, OP_WAIT_READ_MS, &err)) {
		reply_problem(out, &err, req);
		workload_put(w);
		return NULL;
	}
	ret = workload_snapshot(w, verb, peek, &err);
	workload_end_op(w);
	if (ret) {
		reply_problem(out, &err, req);
		workload_put(w);
		return NULL;
	}
	return w;
}

static int parse_limit(struct request *req, unsigned int *limit)
{
	const char *text = request_query(req, "limit");
	uint64_t v;

	*limit = SIGNALS_LIMIT_DEFAULT;
	if (!text)
		return 0;
	if (parse_size(text, &v) || v > SIGNALS_LIMIT_MAX || strpbrk(text, "KkMmGg"))
		return -1;
	*limit = (unsigned int)v;
	return 0;
}

void handle_signals(struct request *req, struct reply *out)
{
	struct sigmig_image img;
	struct ctl_reply peek;
	unsigned int limit;
	struct workload *w;
	char why[256];
	json_t *doc;

	if (parse_limit(req, &limit)) {
		reply_error(out, req, 400, "invalid_parameter",
			    "limit: an integer 0-%d", SIGNALS_LIMIT_MAX);
		return;
	}
	w = peek_image(req, out, "PEEK", &peek);
	if (!w)
		return;
	if (sigmig_image_decode(peek.payload, peek.payload_len, &img, why,
				sizeof(why))) {
		reply_error(out, req, 502, "bad_image",
			    "%s: the runtime's image does not decode: %s",
			    workload_id(w), why);
	} else {
		doc = image_to_json(&img, limit);
		json_object_set_new(doc, "workload", json_string(workload_id(w)));
		json_object_set(doc, "dump_ns", json_object_get(peek.json, "dump_ns"));
		reply_json(out, 200, doc);
		sigmig_image_free(&img);
	}
	ctl_reply_free(&peek);
	workload_put(w);
}

void handle_checkpoint(struct request *req, struct reply *out)
{
	struct ctl_reply peek;
	struct workload *w;
	json_int_t signals;

	w = peek_image(req, out, "DUMP", &peek);
	if (!w)
		return;
	signals = json_integer_value(json_object_get(peek.json, "signals"));
	metrics_signals_dumped((uint64_t)signals);
	reply_header(out, "X-Sigmig-Signals", "%lld", (long long)signals);
	reply_header(out, "X-Sigmig-Dump-Ns", "%lld", (long long)
		     json_integer_value(json_object_get(peek.json, "dump_ns")));
	reply_header(out, "X-Sigmig-Program", "%s", workload_program(w));
	reply_header(out, "Content-Disposition",
		     "attachment; filename=\"%s.sigmig\"", workload_id(w));
	reply_bytes(out, 200, "application/octet-stream", peek.payload,
		    peek.payload_len);
	peek.payload = NULL;
	ctl_reply_free(&peek);
	workload_put(w);
}

void handle_migrate(struct request *req, struct reply *out)
{
	struct migrate_request mr;
	struct api_error err;
	struct verror verr;
	struct workload *w;
	json_t *result;

	if (parse_migrate_request(req->body, req->body_len, &mr, &verr)) {
		reply_error(out, req, 400, verr.code, "%s", verr.detail);
		return;
	}
	w = find_or_404(req, out);
	if (!w)
		return;
	if (!workload_has_runtime(w) && !workload_is_criu(w)) {
		reply_error(out, req, 409, "no_runtime",
			    "%s has no sigmig runtime to migrate (start it with "
			    "\"engine\": \"criu\" to move it with CRIU)", workload_id(w));
	} else if (!require_interface(req, out)) {
		/* the reply is filled */
	} else if (workload_begin_op(w, 0, &err)) {
		reply_problem(out, &err, req);
	} else {
		if (migrate_workload(w, &mr, &result, &err))
			reply_problem(out, &err, req);
		else
			reply_json(out, 200, result);
		workload_end_op(w);
	}
	workload_put(w);
}

/* A regular file, opened for streaming; its length is fixed here. */
static int open_reply_file(const char *path, int *fd, uint64_t *len)
{
	struct stat st;

	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (fstat(*fd, &st) || !S_ISREG(st.st_mode)) {
		close(*fd);
		return -EINVAL;
	}
	if (st.st_size > FILE_REPLY_MAX) {
		close(*fd);
		return -EFBIG;
	}
	*len = (uint64_t)st.st_size;
	return 0;
}

static void send_workload_file(struct request *req, struct reply *out,
			       const char *which, const char *type)
{
	struct workload *w = find_or_404(req, out);
	const char *path;
	uint64_t len = 0;
	int err, fd;

	if (!w)
		return;
	path = workload_file(w, which);
	if (!path)
		reply_error(out, req, 404, "no_file", "%s has no %s",
			    workload_id(w), which);
	else if ((err = open_reply_file(path, &fd, &len)))
		reply_error(out, req, 404, "no_file", "%s: its %s: %s",
			    workload_id(w), which, strerror(-err));
	else
		reply_file(out, 200, type, fd, len);
	workload_put(w);
}

void handle_ledger(struct request *req, struct reply *out)
{
	send_workload_file(req, out, "ledger", "application/octet-stream");
}

void handle_log(struct request *req, struct reply *out)
{
	send_workload_file(req, out, "log", "text/plain; charset=utf-8");
}

static int collect_restore_query(void *cls, const char *key, const char *value)
{
	return restore_query_add(cls, key, value);
}

/* The image names the program it came from; the query may override it. */
static int restore_program(struct restore_query *q, const char *image_program,
			   size_t len)
{
	char name[PROGRAM_NAME_MAX + 2];

	if (q->program[0])
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)len, image_program);
	if (!program_name_valid(name))
		return -1;
	strcpy(q->program, name);
	return 0;
}

static void count_requeued(struct workload *w)
{
	json_t *doc = workload_to_json(w, false);
	json_t *n = json_object_get(json_object_get(doc, "restore"), "requeued");

	metrics_signals_requeued((uint64_t)json_integer_value(n));
	json_decref(doc);
}

void handle_debug_fault(struct request *req, struct reply *out)
{
	json_t *doc;
	const char *point;

	if (!fault_injection_enabled()) {
		reply_error(out, req, 404, "not_found",
			    "fault injection is off (SIGMIG_AGENT_FAULTS=1 enables it)");
		return;
	}
	doc = json_loadb(req->body, req->body_len, 0, NULL);
	point = json_string_value(json_object_get(doc, "point"));
	if (fault_arm(point))
		reply_json(out, 200, json_pack("{s:s}", "armed", point));
	else
		reply_error(out, req, 400, "invalid_field", "point: %s", fault_names());
	json_decref(doc);
}

/*
 * A runtime image is restored while it arrives: once its header is in
 * and passes, the program starts and reads the rest through a FIFO, so
 * that its start and its read overlap the transfer. The handler still
 * decodes the whole image (CRC-32C and every record) before it answers,
 * and ends the program if the image does not pass; the program itself
 * decodes it whole before it requeues anything.
 */
struct restore_upload {
	struct restore_stream *stream;	/* NULL: restored when complete */
	double started;			/* clock_mono_s() */
};

static void restore_upload_end(void *p)
{
	struct restore_upload *u = p;

	workload_restore_cancel(u->stream);
	free(u);
}

/* The restore as soon as the head passes; else the handler does it all. */
static struct restore_stream *start_early(struct request *req)
{
	struct restore_query q = { .failed = false };
	struct restore_stream *stream = NULL;
	const uint8_t *head = (const uint8_t *)req->body;
	struct api_error err;
	char why[256];
	uint64_t total;

	if (!request_declared_length(req, &total))
		return NULL;	/* chunked: the length is known at the end */
	request_query_each(req, collect_restore_query, &q);
	if (!q.failed && !q.criu &&
	    !sigmig_image_check_head(head, req->body_len, total, why, sizeof(why)) &&
	    !restore_program(&q, sigmig_image_head_program(head),
			     SIGMIG_IMAGE_PROGRAM_LEN)) {
		stream = workload_restore_begin(q.program, &q.args, q.hold, &err);
		if (!stream)
			log_warn("restore: not started early: %s", err.detail);
	}
	restore_query_free(&q);
	return stream;
}

void restore_upload_part(struct request *req)
{
	struct restore_upload *u = req->upload;

	if (!u) {
		if (req->body_len < SIGMIG_IMAGE_HEAD_SIZE)
			return;
		u = calloc(1, sizeof(*u));
		if (!u)
			return;
		u->stream = start_early(req);
		u->started = clock_mono_s();
		req->upload = u;
		req->upload_end = restore_upload_end;
	}
	if (u->stream)	/* a failure shows in the handler's finish */
		workload_restore_feed(u->stream, (const uint8_t *)req->body,
				      req->body_len);
}

/* The restore started early, taken over by the handler; or NULL. */
static struct restore_stream *take_stream(struct request *req, double *started)
{
	struct restore_upload *u = req->upload;
	struct restore_stream *stream = u ? u->stream : NULL;

	*started = stream ? u->started : 0;
	free(u);
	req->upload = NULL;
	req->upload_end = NULL;
	return stream;
}

static void do_restore(struct request *req, struct reply *out,
		       struct restore_query *q)
{
	double started, complete = clock_mono_s();
	struct restore_stream *stream = take_stream(req, &started);
	struct api_error err;
	struct workload *w;
	int ret;

	if (q->criu)	/* the bundle is checked there, before a byte is written */
		ret = workload_restore_criu((uint8_t *)req->body, req->body_len,
					    q->program, &q->args, q->hold, &w, &err);
	else if (stream)
		ret = workload_restore_finish(stream, (uint8_t *)req->body,
					      req->body_len, &w, &err);
	else
		ret = workload_restore((uint8_t *)req->body, req->body_len, q->program,
				       &q->args, q->hold, &w, &err);
	if (ret) {
		metrics_restore(strcmp(err.code, "bad_image") ? "failed" : "rejected");
		reply_problem(out, &err, req);
		return;
	}
	/* where a migration's restore phase goes, on this side */
	log_info("restore %s: %s %.1f ms, image complete %.1f ms, restored %.1f ms "
		 "after the request began", workload_id(w), stream ?
		 "started while the image arrived," : "started once it was whole,",
		 ((stream ? started : complete) - req->start) * 1e3,
		 (complete - req->start) * 1e3, (clock_mono_s() - req->start) * 1e3);
	fault_hit(FAULT_RESTORE_BEFORE_REPLY, "a restore succeeded, not answered");
	metrics_restore("restored");
	count_requeued(w);
	reply_created(out, w);
	workload_put(w);
}

/* A refusal: a restore started early ends with it. */
static void refuse_restore(struct request *req)
{
	double started;

	workload_restore_cancel(take_stream(req, &started));
}

void handle_restore(struct request *req, struct reply *out)
{
	struct restore_query q = { .failed = false };
	char why[256];

	if (!require_interface(req, out))
		goto refuse;
	request_query_each(req, collect_restore_query, &q);
	if (q.failed) {
		reply_error(out, req, 400, q.err.code, "%s", q.err.detail);
		goto refuse;
	}
	if (!req->body_len) {
		reply_error(out, req, 400, "empty_body",
			    "send the checkpoint image as the request body");
		goto refuse;
	}
	if (q.criu) {
		do_restore(req, out, &q);
		goto out;
	}
	/* checked, not decoded: the program decodes it, this side only judges */
	if (sigmig_image_check((uint8_t *)req->body, req->body_len, why,
			       sizeof(why))) {
		metrics_restore("rejected");
		reply_error(out, req, 400, "bad_image", "%s", why);
		goto refuse;
	}
	if (restore_program(&q, sigmig_image_head_program((uint8_t *)req->body),
			    SIGMIG_IMAGE_PROGRAM_LEN)) {
		reply_error(out, req, 400, "invalid_parameter",
			    "the image names no valid program: pass ?program=");
		goto refuse;
	}
	do_restore(req, out, &q);
	goto out;
refuse:
	refuse_restore(req);
out:
	restore_query_free(&q);
}

static int collect_requeue_query(void *cls, const char *key, const char *value)
{
	return requeue_query_add(cls, key, value);
}

/* Signals for a copy (a commit delta, a forwarded batch): checked whole first. */
void handle_requeue(struct request *req, struct reply *out)
{
	struct workload *w = find_or_404(req, out);
	struct requeue_query q = { .failed = false };
	struct sigmig_image img;
	struct api_error err;
	json_t *result = NULL;
	char why[256];

	if (!w)
		return;
	request_query_each(req, collect_requeue_query, &q);
	if (requeue_query_check(&q)) {
		reply_error(out, req, 400, q.err.code, "%s", q.err.detail);
		goto out;
	}
	if (!req->body_len) {
		reply_error(out, req, 400, "empty_body",
			    "send the commit delta (an image) as the request body");
		goto out;
	}
	/* engine criu: a bundle, which workload_requeue() checks whole */
	if (!workload_is_criu(w)) {
		if (sigmig_image_decode((uint8_t *)req->body, req->body_len, &img, why,
					sizeof(why))) {
			reply_error(out, req, 400, "bad_image", "%s", why);
			goto out;
		}
		sigmig_image_free(&img);
	}
	if (workload_begin_op(w, 0, &err)) {
		reply_problem(out, &err, req);
		goto out;
	}
	if (workload_requeue(w, (uint8_t *)req->body, req->body_len, q.source,
			     q.batch, &result, &err)) {
		reply_problem(out, &err, req);
	} else {
		if (q.source[0] && !json_is_true(json_object_get(result, "duplicate")))
			fault_hit(q.batch == 1 ? FAULT_DELTA_BEFORE_REPLY : FAULT_BATCH_BEFORE_REPLY,
				  "a forwarded batch taken, not answered");
		reply_json(out, 200, json_pack("{s:o, s:o}", "result", result,
					       "workload", workload_to_json(w, true)));
	}
	workload_end_op(w);
out:
	workload_put(w);
}

/* On the source: a migration's spool into its target, then its thaw. */
void handle_replay(struct request *req, struct reply *out)
{
	run_op(req, out, forward_replay, true);
}

void handle_metrics(struct request *req, struct reply *out)
{
	size_t len;
	char *text = metrics_render(&len);

	if (!text) {
		reply_error(out, req, 500, "internal", "out of memory");
		return;
	}
	reply_bytes(out, 200, "text/plain; version=0.0.4; charset=utf-8",
		    (uint8_t *)text, len);
}
