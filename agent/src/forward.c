// SPDX-License-Identifier: GPL-2.0
/*
 * Forwarding what reaches the original after the cutover (forward.h).
 * Batches are immutable once numbered: a retry sends the same bytes with
 * the same number, so the target can tell a retry whose first answer was
 * lost from a new batch and takes each once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigmig/image.h>

#include "clock.h"
#include "forward.h"
#include "fault.h"
#include "httpc.h"
#include "json_file.h"
#include "log.h"
#include "metrics.h"

#define FORWARD_POLL_MS		100	/* how often the forwarder is drained */
#define FORWARD_ATTEMPT_MS	2000	/* one post during the lease */
#define FORWARD_RETRY_MS	200
#define FORWARD_FINAL_MS	10000	/* after the lease, for what is left */
#define KEPT_MAX		32	/* forwarders kept for a replay */
#define SPOOL_FILE_MAX		(64u << 20)

struct batch {
	unsigned long n;	/* 1: the commit delta */
	uint8_t *image;
	size_t len;
	uint64_t signals;
	char path[512];		/* its spool file, written before the first post */
};

struct spool_file {
	unsigned long n;
	char path[512];
	uint64_t signals;
};

struct forwarder {
	struct workload *w;	/* during the migration only */
	char wid[16];
	struct target_url target;
	char target_text[TARGET_HOST_MAX + 32];
	char token[TOKEN_LEN_MAX + 1];
	unsigned int timeout_ms;
	char target_id[16];
	char source[65];
	unsigned long made;
	struct batch *out;	/* made, not acknowledged, in order */
	size_t nout;
	bool refused;
	bool thaw_after_replay;
	uint64_t drains, batches, forwarded, merged, spooled;
	unsigned int lease_ms;
	int64_t lease_end_ns;	/* CLOCK_REALTIME; 0 until the lease starts */
	bool resume_target;	/* the migration's: thaw the copy after the delta */
	struct spool_file *spool;
	size_t nspool;
	struct httpc_conn conn;	/* to the target: one handshake for every batch */
};

static struct {
	pthread_mutex_t lock;
	struct forwarder *kept[KEPT_MAX];
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct forwarder *forwarder_new(struct workload *w, const struct migrate_request *req,
				const char *target_id, struct httpc_conn *conn)
{
	struct forwarder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (conn)
		httpc_conn_move(&f->conn, conn);
	f->w = w;
	snprintf(f->wid, sizeof(f->wid), "%s", workload_id(w));
	f->target = req->target;
	snprintf(f->target_text, sizeof(f->target_text), "%s", req->target_text);
	snprintf(f->token, sizeof(f->token), "%s", req->token);
	f->timeout_ms = req->timeout_ms;
	snprintf(f->target_id, sizeof(f->target_id), "%s", target_id);
	/* the original's pid: one migration of this workload, on this host */
	snprintf(f->source, sizeof(f->source), "%s.%d", f->wid, (int)workload_pid(w));
	f->lease_ms = req->forward_ms;
	f->resume_target = req->resume_target;
	return f;
}

/* ---- the lease's record, for an agent that restarts during it ---- */

static void lease_record_path(const char *wid, char *path, size_t len)
{
	snprintf(path, len, "%s/%s.forward", workloads_state_dir(), wid);
}

/*
 * What a restarted agent needs to go on forwarding: the target (and the
 * token for it: the state directory is root's, the file 0600), the
 * numbering, the lease. The batches not acknowledged are the write-ahead
 * files themselves.
 */
static void save_lease(const struct forwarder *f)
{
	char path[512];
	json_t *o;

	o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:i, s:I, s:b}",
		      "target", f->target_text, "token", f->token,
		      "timeout_ms", (int)f->timeout_ms, "target_id", f->target_id,
		      "source", f->source, "made", (json_int_t)f->made,
		      "lease_ms", (int)f->lease_ms,
		      "lease_end_ns", (json_int_t)f->lease_end_ns,
		      "resume_target", f->resume_target);
	lease_record_path(f->wid, path, sizeof(path));
	if (!o || json_file_replace(path, o))
		log_warn("forward %s: cannot record its lease in %s", f->wid, path);
	json_decref(o);
}

static void drop_lease(const struct forwarder *f)
{
	char path[512];

	lease_record_path(f->wid, path, sizeof(path));
	unlink(path);
}

static void forwarder_free(struct forwarder *f)
{
	size_t i;

	if (!f)
		return;
	httpc_conn_close(&f->conn);
	for (i = 0; i < f->nout; i++)
		free(f->out[i].image);
	free(f->out);
	free(f->spool);
	free(f);
}

/* The target's counts of one acknowledged batch. */
static void count_ack(struct forwarder *f, const struct batch *b,
		      const struct http_result *res)
{
	json_t *doc = res->body ? json_loads(res->body, 0, NULL) : NULL;
	json_t *result = json_object_get(doc, "result");
	uint64_t merged = (uint64_t)json_integer_value(json_object_get(result, "merged"));

	f->merged += merged;
	if (b->n > 1) {
		f->batches++;
		f->forwarded += b->signals;
		metrics_signals_forwarded(b->signals);
	}
	json_decref(doc);
}

/*
 * 409 workload_busy: the copy is serving another request, such as a post
 * of this very batch that a cut link delivered late. Not a refusal: the
 * same batch again is either taken or answered as a duplicate.
 */
static bool target_busy(const struct http_result *res)
{
	json_t *doc;
	bool busy;

	if (res->status != 409 || !res->body)
		return false;
	doc = json_loads(res->body, 0, NULL);
	busy = !strcmp(json_string_value(json_object_get(doc, "code")) ?: "",
		       "workload_busy");
	json_decref(doc);
	return busy;
}

/* 0 acknowledged, 1 no answer, 2 busy (both: retry), -1 refused. */
static int post_batch(struct forwarder *f, const struct batch *b,
		      unsigned int timeout_ms, char *why, size_t len)
{
	struct http_result res;
	char path[160];
	int ret;

	snprintf(path, sizeof(path), "/v1/workloads/%s/requeue?source=%s&batch=%lu",
		 f->target_id, f->source, b->n);
	if (httpc_conn_post(&f->conn, &f->target, path, f->token,
			    "application/octet-stream", b->image, b->len, timeout_ms,
			    MIGRATE_STALL_MS, &res)) {
		snprintf(why, len, "%s: %s", res.failed_phase, strerror(res.error));
		http_result_free(&res);
		return 1;
	}
	ret = res.status >= 200 && res.status <= 299 ? 0 : target_busy(&res) ? 2 : -1;
	if (ret)
		snprintf(why, len, "answered %u: %.200s", res.status,
			 res.body ? res.body : "");
	else
		count_ack(f, b, &res);
	http_result_free(&res);
	return ret;
}

/* Acknowledged: its spool file goes. */
static void pop_batch(struct forwarder *f)
{
	if (f->out[0].path[0])
		unlink(f->out[0].path);
	free(f->out[0].image);
	memmove(f->out, f->out + 1, (f->nout - 1) * sizeof(*f->out));
	f->nout--;
}

static unsigned int min_ms(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

static int flush(struct forwarder *f, unsigned int budget_ms)
{
	double deadline = clock_mono_s() + budget_ms / 1e3;
	char why[320];
	int ret;

	while (f->nout && !f->refused) {
		ret = post_batch(f, &f->out[0], min_ms(f->timeout_ms, FORWARD_ATTEMPT_MS),
				 why, sizeof(why));
		if (!ret) {
			pop_batch(f);
			continue;
		}
		log_warn("forward %s: batch %lu into %s on %s: %s", f->wid,
			 f->out[0].n, f->target_id, f->target_text, why);
		if (ret < 0) {
			f->refused = true;
			break;
		}
		if (clock_mono_s() + FORWARD_RETRY_MS / 1e3 >= deadline)
			break;
		clock_sleep_ms(FORWARD_RETRY_MS);
	}
	return f->refused ? -1 : f->nout ? 1 : 0;
}

/*
 * On disk before it is posted: should this agent die with batches not
 * acknowledged, they are in its state directory (docs/design.md).
 */
static void write_ahead(struct forwarder *f, struct batch *b)
{
	struct api_error err;
	char what[48];

	snprintf(what, sizeof(what), "forward-%lu", b->n);
	if (workload_spool(f->w, what, b->image, b->len, b->path, sizeof(b->path), &err)) {
		log_warn("forward %s: batch %lu not written ahead: %s", f->wid, b->n,
			 err.detail);
		b->path[0] = '\0';
	}
}

int forwarder_put(struct forwarder *f, struct ctl_reply *image, uint64_t signals,
		  unsigned int budget_ms)
{
	struct batch *out = realloc(f->out, (f->nout + 1) * sizeof(*out));

	if (!out) {
		log_error("forward %s: out of memory: %llu signals dropped", f->wid,
			  (unsigned long long)signals);
		return -1;
	}
	f->out = out;
	out[f->nout] = (struct batch){
		.n = ++f->made, .image = image->payload, .len = image->payload_len,
		.signals = signals,
	};
	image->payload = NULL;
	write_ahead(f, &out[f->nout++]);
	save_lease(f);
	if (f->made == 1)
		fault_hit(FAULT_DELTA_BEFORE_POST, "the commit delta written ahead, not posted");
	return flush(f, budget_ms);
}

static int drain_once(struct forwarder *f)
{
	struct ctl_reply drained;
	struct api_error err;
	uint64_t n = 0;
	char tag[96];

	/* what the read becomes if non-empty: batch made + 1 of this source */
	snprintf(tag, sizeof(tag), "%s:%lu", f->source, f->made + 1);
	if (workload_drain(f->w, tag, &drained, &n, &err)) {
		log_error("forward %s: DRAIN: %s", f->wid, err.detail);
		return -1;
	}
	f->drains++;
	if (n && drained.payload) {
		fault_hit(FAULT_DRAIN_BEFORE_SPOOL, "a forwarder's drain read, not yet written");
		forwarder_put(f, &drained, n, 0);
	}
	ctl_reply_free(&drained);
	return 0;
}

void forwarder_lease(struct forwarder *f, unsigned int lease_ms, json_t *commit,
		     bool *acked)
{
	double end = clock_mono_s() + lease_ms / 1e3, left;
	struct ctl_reply last;
	json_t *ended;
	uint64_t n;

	f->lease_end_ns = clock_realtime_ns() + (int64_t)lease_ms * 1000000;
	save_lease(f);
	while ((left = end - clock_mono_s()) > 0) {
		clock_sleep_ms(min_ms((unsigned int)(left * 1e3) + 1, FORWARD_POLL_MS));
		if (drain_once(f))
			break;
	}
	*acked = workload_commit(f->w, &ended, &last);
	if (!*acked)
		json_object_set_new(commit, "method", json_string("killed"));
	n = (uint64_t)json_integer_value(json_object_get(ended, "carried"));
	json_decref(ended);
	if (*acked && last.payload && n)
		forwarder_put(f, &last, n, min_ms(f->timeout_ms, FORWARD_FINAL_MS));
	else
		flush(f, min_ms(f->timeout_ms, FORWARD_FINAL_MS));
	ctl_reply_free(&last);
	forwarder_spool_rest(f);
}

void forwarder_spool_rest(struct forwarder *f)
{
	struct spool_file *sp;

	while (f->nout) {
		if (!f->out[0].path[0])
			write_ahead(f, &f->out[0]);
		sp = realloc(f->spool, (f->nspool + 1) * sizeof(*sp));
		if (!sp)
			break;
		f->spool = sp;
		sp = &f->spool[f->nspool];
		sp->n = f->out[0].n;
		sp->signals = f->out[0].signals;
		snprintf(sp->path, sizeof(sp->path), "%s", f->out[0].path);
		if (!sp->path[0]) {
			log_error("forward %s: batch %lu (%llu signals) lost: it could not "
				  "be written to the state directory", f->wid, sp->n,
				  (unsigned long long)sp->signals);
		} else {
			f->nspool++;
			f->spooled += sp->signals;
			metrics_signals_spooled(sp->signals);
		}
		f->out[0].path[0] = '\0';	/* kept: not the acknowledged kind */
		pop_batch(f);
	}
}

bool forwarder_spooled(const struct forwarder *f)
{
	return f->nspool > 0;
}

const char *forwarder_first_spool(const struct forwarder *f)
{
	return f->nspool ? f->spool[0].path : "";
}

void forwarder_thaw_after_replay(struct forwarder *f)
{
	f->thaw_after_replay = true;
}

static json_t *spool_json(const struct forwarder *f)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; i < f->nspool; i++)
		json_array_append_new(list, json_pack("{s:I, s:s, s:I}", "batch",
				      (json_int_t)f->spool[i].n, "file", f->spool[i].path,
				      "signals", (json_int_t)f->spool[i].signals));
	return list;
}

json_t *forwarder_json(const struct forwarder *f)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "source", f->source,
			 "drains", (json_int_t)f->drains,
			 "batches", (json_int_t)f->batches,
			 "forwarded", (json_int_t)f->forwarded,
			 "merged", (json_int_t)f->merged,
			 "spooled", (json_int_t)f->spooled, "spool", spool_json(f));
}

void forwarder_done(struct forwarder *f)
{
	struct forwarder *old = NULL;
	size_t i, slot = KEPT_MAX;

	if (!f)
		return;
	f->w = NULL;
	drop_lease(f);
	if (!f->nspool) {
		forwarder_free(f);
		return;
	}
	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < KEPT_MAX; i++) {
		if (reg.kept[i] && !strcmp(reg.kept[i]->wid, f->wid))
			slot = i;
		else if (!reg.kept[i] && slot == KEPT_MAX)
			slot = i;
	}
	if (slot == KEPT_MAX) {
		/* full: the oldest goes; its files stay, named in its reply */
		slot = 0;
	}
	old = reg.kept[slot];
	reg.kept[slot] = f;
	pthread_mutex_unlock(&reg.lock);
	forwarder_free(old);
}

json_t *forward_thaw_target(struct httpc_conn *conn, const struct target_url *target,
			    const char *target_text, const char *token,
			    unsigned int timeout_ms, const char *id, char *problem,
			    size_t len)
{
	struct httpc_conn once = { 0 };
	struct http_result res;
	json_t *doc = NULL, *workload = NULL;
	char path[64], why[256];

	snprintf(path, sizeof(path), "/v1/workloads/%s/thaw", id);
	if (httpc_conn_request(conn ? conn : &once, "POST", target, path, token,
			       "application/json", NULL, 0, timeout_ms,
			       MIGRATE_STALL_MS, &res)) {
		snprintf(why, sizeof(why), "failed (%s: %s)", res.failed_phase,
			 strerror(res.error));
	} else {
		doc = res.body ? json_loads(res.body, 0, NULL) : NULL;
		if (res.status >= 200 && res.status <= 299)
			workload = json_incref(json_object_get(doc, "workload"));
		snprintf(why, sizeof(why), "answered %u: %.200s", res.status,
			 res.body ? res.body : "");
		json_decref(doc);
		http_result_free(&res);
	}
	if (!workload)
		snprintf(problem, len, "committed, but thawing %s on %s %s: it "
			 "stays frozen there; POST /v1/workloads/%s/thaw on the "
			 "target to resume it", id, target_text, why, id);
	httpc_conn_close(&once);
	return workload;
}

json_t *forwarder_thaw(struct forwarder *f, char *problem, size_t len)
{
	return forward_thaw_target(&f->conn, &f->target, f->target_text,
				   f->token, f->timeout_ms, f->target_id,
				   problem, len);
}

/* ---- replay ---- */

static int read_spool(const char *path, struct batch *b)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0 || (uint64_t)st.st_size > SPOOL_FILE_MAX) {
		close(fd);
		return -EINVAL;
	}
	b->len = (size_t)st.st_size;
	b->image = malloc(b->len);
	while (b->image && got < b->len) {
		n = read(fd, b->image + got, b->len - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (b->image && got == b->len)
		return 0;
	free(b->image);
	b->image = NULL;
	return -EIO;
}

static struct forwarder *take_kept(const char *wid)
{
	struct forwarder *f = NULL;
	size_t i;

	pthread_mutex_lock(&reg.lock);
	for (i = 0; i < KEPT_MAX && !f; i++) {
		if (reg.kept[i] && !strcmp(reg.kept[i]->wid, wid)) {
			f = reg.kept[i];
			reg.kept[i] = NULL;
		}
	}
	pthread_mutex_unlock(&reg.lock);
	return f;
}

/* The spool's first file into the target: 0, or -1 with @err. */
static int replay_one(struct forwarder *f, struct api_error *err)
{
	struct spool_file *sp = &f->spool[0];
	struct batch b = { .n = sp->n, .signals = sp->signals };
	double deadline = clock_mono_s() + f->timeout_ms / 1e3;
	char why[320];
	int ret = read_spool(sp->path, &b);

	if (ret)
		return api_error_set(err, 500, "spool_unreadable", "%s: %s", sp->path,
				     strerror(-ret));
	while ((ret = post_batch(f, &b, f->timeout_ms, why, sizeof(why))) == 2 &&
	       clock_mono_s() + FORWARD_RETRY_MS / 1e3 < deadline)
		clock_sleep_ms(FORWARD_RETRY_MS);
	free(b.image);
	if (ret)
		return api_error_set(err, 502, ret == 1 ? "target_unreachable" :
				     "target_rejected", "batch %lu (%s) into %s on %s: %s",
				     sp->n, sp->path, f->target_id, f->target_text, why);
	unlink(sp->path);
	f->spooled -= sp->signals;
	memmove(f->spool, f->spool + 1, (f->nspool - 1) * sizeof(*f->spool));
	f->nspool--;
	return 0;
}

int forward_replay(struct workload *w, json_t **result, struct api_error *err)
{
	struct forwarder *f = take_kept(workload_id(w));
	uint64_t before;
	json_t *resumed = NULL;
	char problem[512] = "";
	int ret = 0;

	if (!f)
		return api_error_set(err, 409, "nothing_to_replay",
				     "%s has no spool of a migration on this agent",
				     workload_id(w));
	f->w = w;
	before = f->forwarded;
	while (f->nspool && !(ret = replay_one(f, err)))
		;
	if (!ret && f->thaw_after_replay) {
		resumed = forwarder_thaw(f, problem, sizeof(problem));
		if (!resumed)
			ret = api_error_set(err, 502, "target_thaw_failed", "%s", problem);
		else
			f->thaw_after_replay = false;
	}
	if (!ret)
		*result = json_pack("{s:s, s:I, s:o, s:o}", "target", f->target_text,
				    "forwarded", (json_int_t)(f->forwarded - before),
				    "forward", forwarder_json(f),
				    "target_workload", resumed ? resumed : json_null());
	forwarder_done(f);
	return ret;
}

/* ---- a restarted agent takes over a lease ---- */

static uint64_t image_signals(const struct batch *b)
{
	struct sigmig_image img;
	uint64_t n = 0;
	char why[128];
	uint32_t i;

	if (sigmig_image_decode(b->image, b->len, &img, why, sizeof(why)))
		return 0;
	for (i = 0; i < img.nthreads; i++)
		n += img.threads[i].pending.count;
	n += img.shared.count;
	sigmig_image_free(&img);
	return n;
}

static int by_batch(const void *a, const void *b)
{
	const struct batch *x = a, *y = b;

	return x->n < y->n ? -1 : x->n > y->n;
}

/* The write-ahead files of @f still on disk: not acknowledged, in order. */
static void load_unacked(struct forwarder *f)
{
	char prefix[32], path[512];
	struct dirent *de;
	struct batch b, *out;
	unsigned long n;
	DIR *d;
	int len;

	len = snprintf(prefix, sizeof(prefix), "%s-forward-", f->wid);
	d = opendir(workloads_state_dir());
	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;

		if (strncmp(de->d_name, prefix, (size_t)len))
			continue;
		n = strtoul(de->d_name + len, &end, 10);
		if (!n || strcmp(end, ".image"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", workloads_state_dir(), de->d_name);
		memset(&b, 0, sizeof(b));
		if (read_spool(path, &b))
			continue;
		out = realloc(f->out, (f->nout + 1) * sizeof(*out));
		if (!out) {
			free(b.image);
			break;
		}
		f->out = out;
		b.n = n;
		b.signals = image_signals(&b);
		snprintf(b.path, sizeof(b.path), "%s", path);
		f->out[f->nout++] = b;
		if (n > f->made)
			f->made = n;
	}
	closedir(d);
	qsort(f->out, f->nout, sizeof(*f->out), by_batch);
}

static struct forwarder *forwarder_from_record(json_t *o, struct workload *w)
{
	struct forwarder *f = calloc(1, sizeof(*f));
	struct verror verr;
	const char *target = json_string_value(json_object_get(o, "target"));
	const char *token = json_string_value(json_object_get(o, "token"));
	const char *target_id = json_string_value(json_object_get(o, "target_id"));
	const char *source = json_string_value(json_object_get(o, "source"));

	if (!f || !target || !token || !target_id || !source ||
	    !workload_id_valid(target_id) || strlen(source) >= sizeof(f->source) ||
	    strlen(token) >= sizeof(f->token) ||
	    strlen(target) >= sizeof(f->target_text) ||
	    parse_target_url(target, &f->target, &verr)) {
		free(f);
		return NULL;
	}
	f->w = w;
	snprintf(f->wid, sizeof(f->wid), "%s", workload_id(w));
	snprintf(f->target_text, sizeof(f->target_text), "%s", target);
	snprintf(f->token, sizeof(f->token), "%s", token);
	snprintf(f->target_id, sizeof(f->target_id), "%s", target_id);
	snprintf(f->source, sizeof(f->source), "%s", source);
	f->timeout_ms = (unsigned int)json_integer_value(json_object_get(o, "timeout_ms"));
	f->made = (unsigned long)json_integer_value(json_object_get(o, "made"));
	f->lease_ms = (unsigned int)json_integer_value(json_object_get(o, "lease_ms"));
	f->lease_end_ns = json_integer_value(json_object_get(o, "lease_end_ns"));
	f->resume_target = json_is_true(json_object_get(o, "resume_target"));
	return f;
}

/* What is left of the lease: all of it if it had not started. */
static unsigned int lease_left_ms(const struct forwarder *f)
{
	int64_t left;

	if (!f->lease_end_ns)
		return f->lease_ms;
	left = (f->lease_end_ns - clock_realtime_ns()) / 1000000;
	return left > 0 ? (unsigned int)left : 0;
}

/*
 * The lease had not started: the agent died before the copy had the
 * commit delta, or before it thawed the copy. Do what the migration
 * would have: the delta in (for timeout_ms), then the thaw; a delta that
 * does not go in is spooled and the thaw waits for its replay.
 */
static void finish_cutover(struct forwarder *f)
{
	char problem[512];
	json_t *running;

	if (flush(f, f->timeout_ms)) {
		log_error("forward %s: the commit delta did not reach %s on %s: it is "
			  "spooled, the copy stays held until its replay", f->wid,
			  f->target_id, f->target_text);
		forwarder_spool_rest(f);
		forwarder_thaw_after_replay(f);
		return;
	}
	if (!f->resume_target)
		return;
	running = forwarder_thaw(f, problem, sizeof(problem));
	if (running)
		log_info("forward %s: the copy %s on %s thawed", f->wid, f->target_id,
			 f->target_text);
	else
		log_error("forward %s: %s", f->wid, problem);
	json_decref(running);
}

static void *resumed_lease(void *arg)
{
	struct forwarder *f = arg;
	struct workload *w = f->w;
	json_t *commit = json_object(), *window;
	bool acked;

	if (!f->lease_end_ns)
		finish_cutover(f);
	else
		flush(f, min_ms(f->timeout_ms, FORWARD_ATTEMPT_MS));
	forwarder_lease(f, lease_left_ms(f), commit, &acked);
	workload_commit_settle(w, f->target_text, commit);
	window = json_object_get(commit, "exit_window");
	log_info("forward %s: the resumed lease is over: %llu signals forwarded in "
		 "%llu batches, %llu spooled%s%s; exit window %lld:%lld%s", f->wid,
		 (unsigned long long)f->forwarded, (unsigned long long)f->batches,
		 (unsigned long long)f->spooled, f->nspool ? ", first spool file " : "",
		 forwarder_first_spool(f),
		 (long long)json_integer_value(json_object_get(window, "from_ns")),
		 (long long)json_integer_value(json_object_get(window, "to_ns")),
		 json_is_true(json_object_get(window, "sealed")) ? " sealed" : "");
	json_decref(commit);
	workload_end_op(w);
	forwarder_done(f);
	workload_put(w);
	return NULL;
}

/* @wid's lease, from its record: 0 resumed, -1 not (the record goes). */
static int resume_one(const char *wid, const char *path)
{
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	struct workload *w = workload_find(wid);
	struct forwarder *f = NULL;
	struct api_error err;
	pthread_t thread;

	if (!o || !w || !workload_is_forwarding(w)) {
		log_info("forward %s: its lease record is left from an ended lease: removed", wid);
		goto fail;
	}
	f = forwarder_from_record(o, w);
	if (!f) {
		log_warn("forward %s: %s is not a lease record: removed", wid, path);
		goto fail;
	}
	if (workload_begin_op(w, 0, &err))
		goto fail;
	load_unacked(f);
	log_info("forward %s: its forwarder is still parked: the lease goes on for %u ms "
		 "into %s on %s, %zu batches not acknowledged, the next is %lu", wid,
		 lease_left_ms(f), f->target_id, f->target_text, f->nout, f->made + 1);
	if (pthread_create(&thread, NULL, resumed_lease, f)) {
		workload_end_op(w);
		goto fail;
	}
	pthread_detach(thread);
	json_decref(o);
	return 0;
fail:
	if (f)
		forwarder_free(f);
	unlink(path);
	json_decref(o);
	workload_put(w);
	return -1;
}

void forward_resume_adopted(void)
{
	char wid[16], path[512];
	struct dirent *de;
	size_t len;
	DIR *d;

	d = opendir(workloads_state_dir());
	if (!d)
		return;
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (len <= 8 || len - 8 >= sizeof(wid) ||
		    strcmp(de->d_name + len - 8, ".forward"))
			continue;
		memcpy(wid, de->d_name, len - 8);
		wid[len - 8] = '\0';
		snprintf(path, sizeof(path), "%s/%s", workloads_state_dir(), de->d_name);
		resume_one(wid, path);
	}
	closedir(d);
}
