// SPDX-License-Identifier: GPL-2.0
/*
 * Starting a program that restores an image: the image goes to the state
 * directory, the program starts with --restore (and --restore-hold), and
 * the agent polls its runtime until it reports the restore verified and
 * running or held, or the program exits with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "workload_internal.h"

int wl_write_file(const char *path, const uint8_t *image, size_t len,
		  struct api_error *err)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return api_error_set(err, 500, "internal",
				     "the image file in the state directory: %s",
				     strerror(errno));
	while (len) {
		n = write(fd, image, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			api_error_set(err, 500, "internal",
				      "the image file in the state directory: %s",
				      strerror(errno));
			close(fd);
			unlink(path);
			return -1;
		}
		image += n;
		len -= (size_t)n;
	}
	close(fd);
	return 0;
}

/* Failed restores do not resume anything; make sure the process is gone. */
static void reap_failed_restore(struct workload *w)
{
	if (!wl_wait_exit(w, 2000)) {
		wl_kill_group(w, SIGKILL);
		wl_wait_exit(w, 2000);
	}
}

static int restore_failed(struct workload *w, const struct ctl_reply *reply,
			  struct api_error *err)
{
	api_error_set(err, 422, "restore_failed", "%s: restore failed: %s",
		      w->id, ctl_reply_message(reply));
	snprintf(err->cause, sizeof(err->cause), "%s",
		 json_string_value(json_object_get(reply->json, "error")) ?: "");
	reap_failed_restore(w);
	return -1;
}

/* One STATUS poll: 1 keep waiting, 0 running, -1 failed. */
static int poll_restore(struct workload *w, struct api_error *err)
{
	struct ctl_reply reply;
	const char *state;
	int ret = 1;

	if (wl_is_exited(w))
		return wl_exit_error(w, 422, "restore_failed", "restore failed:",
				  err);
	if (ctl_request(w->sock, "STATUS", 1000, &reply))
		return 1;
	state = wl_reply_state(&reply);
	if (state && w->hold && strcmp(state, "frozen") == 0 &&
	    json_is_true(json_object_get(reply.json, "restored"))) {
		/* Held: parked, nothing delivered until THAW or COMMIT. */
		wl_lock();
		w->restored = true;
		w->held = true;
		w->frozen = true;
		w->restore_info = json_incref(json_object_get(reply.json,
							      "restore"));
		wl_unlock();
		wl_record_save(w);
		ret = 0;
	} else if (state && strcmp(state, "running") == 0) {
		wl_lock();
		w->restored = true;
		w->restore_info = json_incref(json_object_get(reply.json,
							      "restore"));
		wl_unlock();
		wl_record_save(w);
		ret = 0;
	} else if (state && strcmp(state, "failed") == 0) {
		ret = restore_failed(w, &reply, err);
	}
	ctl_reply_free(&reply);
	return ret;
}

static int wait_restored(struct workload *w, struct api_error *err)
{
	int64_t deadline = clock_mono_ms() + wl_config()->restore_timeout_ms;
	int ret;

	while ((ret = poll_restore(w, err)) == 1) {
		if (clock_mono_ms() >= deadline) {
			wl_kill_group(w, SIGKILL);
			wl_wait_exit(w, 2000);
			return api_error_set(err, 504, "restore_timeout",
					     "%s: not running after %u ms",
					     w->id, wl_config()->restore_timeout_ms);
		}
		clock_sleep_ms(POLL_INTERVAL_MS);
	}
	return ret;
}

int workload_restore(const uint8_t *image, size_t len, const char *program,
		     const struct workload_args *args, bool hold,
		     struct workload **out, struct api_error *err)
{
	char path[PATH_MAX], image_path[STATE_PATH_MAX];
	struct wl_spawn_args spawn;
	struct workload *w;
	int ret;

	if (wl_program_path(program, path, sizeof(path), err))
		return -1;
	w = wl_new(program, args, true, err);
	if (!w)
		return -1;
	w->hold = hold;
	/* The id is only known after insertion: name the image by a temp. */
	snprintf(image_path, sizeof(image_path), "%s/restore-%d-%lx.image",
		 wl_config()->state_dir, getpid(), (unsigned long)pthread_self());
	if (wl_write_file(image_path, image, len, err))
		goto fail;
	spawn.path = path;
	spawn.image_tmp = image_path;
	ret = wl_publish(w, wl_spawn, &spawn, err);
	if (ret) {
		unlink(image_path);
		unlink(w->image);
		goto fail;
	}
	ret = wait_restored(w, err);
	unlink(w->image);
	if (ret) {
		wl_remove(w);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	workload_put(w);
	return -1;
}

