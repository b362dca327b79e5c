// SPDX-License-Identifier: GPL-2.0
/* What the API shows of a workload: the agent's record, and the runtime's when live. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "workload_internal.h"

static const char *agent_state(const struct workload *w)
{
	if (w->committed)
		return "migrated";
	if (w->exited)
		return "exited";
	return w->frozen ? "frozen" : "running";
}

static json_t *args_json(const struct workload_args *args)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; i < args->argc; i++)
		json_array_append_new(a, json_string(args->argv[i]));
	return a;
}

static json_t *exit_json(const struct workload *w)
{
	if (!w->exited)
		return json_null();
	if (!w->exit_known)
		return json_pack("{s:n, s:n}", "code", "signal");
	if (WIFSIGNALED(w->wait_status))
		return json_pack("{s:n, s:i}", "code", "signal",
				 WTERMSIG(w->wait_status));
	return json_pack("{s:i, s:n}", "code", WEXITSTATUS(w->wait_status),
			 "signal");
}

static json_int_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (json_int_t)st.st_size;
}

/*
 * Its files against --max-output (its RLIMIT_FSIZE): one at the limit had
 * a write cut short or refused, so it does not hold everything the
 * program meant to write there.
 */
static json_t *output_json(const struct workload *w)
{
	json_int_t max = (json_int_t)wl_config()->max_output;
	bool has_ledger = w->control || w->criu;
	json_int_t log = file_size(w->log);
	json_int_t ledger = has_ledger ? file_size(w->ledger) : 0;

	return json_pack("{s:I, s:I, s:o, s:b}", "max_bytes", max, "log_bytes", log,
			 "ledger_bytes", has_ledger ? json_integer(ledger) : json_null(),
			 "limit_reached", max && (log >= max || ledger >= max));
}

/* Called with the table lock held. */
static json_t *snapshot_json(struct workload *w)
{
	char started[40];
	struct tm tm;
	json_t *o;

	gmtime_r(&w->started.tv_sec, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:s, s:s, s:o, s:b, s:i, s:s, s:b, s:s, s:o}",
		      "id", w->id, "program", w->program,
		      "args", args_json(&w->args), "control", w->control,
		      "pid", (int)w->pid, "state", agent_state(w),
		      "restored", w->restored, "started_at", started,
		      "exit", exit_json(w));
	if (!o)
		return NULL;
	if (w->control) {
		json_object_set_new(o, "ctl_socket", json_string(w->sock));
		json_object_set_new(o, "ledger", json_string(w->ledger));
	}
	json_object_set_new(o, "log", json_string(w->log));
	json_object_set_new(o, "output", output_json(w));
	if (w->restore_info)
		json_object_set(o, "restore", w->restore_info);
	if (w->held)
		json_object_set_new(o, "held", json_true());
	if (w->adopted)
		json_object_set_new(o, "adopted", json_true());
	json_object_set_new(o, "engine", json_string(w->criu ? "criu" : "runtime"));
	if (w->criu)
		json_object_set_new(o, "ledger", json_string(w->ledger));
	if (w->committed)
		json_object_set_new(o, "migrated_to", json_string(w->migrated_to));
	return o;
}

json_t *workload_to_json(struct workload *w, bool live)
{
	struct ctl_reply reply;
	const char *state;
	json_t *o;

	wl_lock();
	o = snapshot_json(w);
	live = live && w->control && !w->exited && !w->committed;
	wl_unlock();
	if (!o || !live)
		return o;
	if (ctl_request(w->sock, "STATUS", 2000, &reply)) {
		json_object_set_new(o, "runtime", json_null());
		return o;
	}
	state = wl_reply_state(&reply);
	if (state)
		json_object_set_new(o, "state", json_string(state));
	json_object_set_new(o, "runtime", wl_reply_result(&reply));
	ctl_reply_free(&reply);
	return o;
}

json_t *workloads_list_json(void)
{
	json_t *list = json_array();
	struct workload *w;
	unsigned int i;

	for (i = 0; i < wl_config()->max_workloads; i++) {
		w = wl_get_slot(i);
		if (!w)
			continue;
		wl_lock();
		json_array_append_new(list, snapshot_json(w));
		wl_unlock();
		workload_put(w);
	}
	return list;
}
