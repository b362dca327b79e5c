// SPDX-License-Identifier: GPL-2.0
/*
 * Starting a program that restores an image: the program starts with
 * --restore on a FIFO in the state directory (and --restore-hold), reads
 * the image through it, and the agent polls its runtime until it reports
 * the restore verified and running or held, or the program exits with the
 * reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/*
 * The downtime of a migration waits on this poll: it starts at
 * RESTORE_POLL_MS and doubles up to POLL_INTERVAL_MS, so that a small
 * restore is seen soon and a long one is not slowed by STATUS requests.
 */
#define RESTORE_POLL_MS	2

static int wait_restored(struct workload *w, struct api_error *err)
{
	unsigned int interval = RESTORE_POLL_MS;
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
		clock_sleep_ms(interval);
		if (interval < POLL_INTERVAL_MS)
			interval *= 2;
	}
	return ret;
}

/*
 * The image reaches the program through a FIFO, so that it starts (and
 * reads) while the image is still arriving. The agent opens the FIFO for
 * writing only once the program has opened it for reading (until then
 * the bytes wait in the request's body): bytes written into a FIFO that
 * every process closes before the program opens it would be lost, and
 * the program would wait for a writer for ever. A program that exits
 * makes the write fail (EPIPE) instead of blocking.
 */
struct restore_stream {
	struct workload *w;
	int fd;			/* the FIFO's write end; -1 until opened */
	size_t fed;		/* bytes of the image written */
	int64_t last_progress;	/* clock_mono_ms() */
	bool finishing;		/* the image is whole: no batch to wait for */
	bool broken;		/* the program stopped taking bytes */
	bool stalled;		/* ... while still running */
};

#define FEED_STALL_MS	10000
#define FIFO_BYTES	(1 << 20)
/*
 * Bytes passed on at once: each write wakes the program, and under
 * emulation a wakeup per network chunk cost more than the overlap won.
 */
#define FEED_BATCH	(1 << 20)

struct restore_stream *workload_restore_begin(const char *program,
					      const struct workload_args *args,
					      bool hold, struct api_error *err)
{
	char path[PATH_MAX], image_path[STATE_PATH_MAX];
	struct wl_spawn_args spawn;
	struct restore_stream *s;

	if (wl_program_path(program, path, sizeof(path), err))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		api_error_set(err, 500, "internal", "out of memory");
		return NULL;
	}
	s->fd = -1;
	s->w = wl_new(program, args, true, err);
	if (!s->w)
		goto fail;
	s->w->hold = hold;
	/* The id is only known after insertion: name the FIFO by a temp. */
	snprintf(image_path, sizeof(image_path), "%s/restore-%d-%lx.image",
		 wl_config()->state_dir, getpid(), (unsigned long)pthread_self());
	if (mkfifo(image_path, 0600)) {
		api_error_set(err, 500, "internal",
			      "the image FIFO in the state directory: %s",
			      strerror(errno));
		goto fail;
	}
	spawn.path = path;
	spawn.image_tmp = image_path;
	if (wl_publish(s->w, wl_spawn, &spawn, err)) {
		unlink(image_path);
		unlink(s->w->image);
		goto fail;
	}
	s->last_progress = clock_mono_ms();
	return s;
fail:
	if (s->w)
		workload_put(s->w);
	free(s);
	return NULL;
}

/* The program's exit or the stall bound ends the wait: @s is broken. */
static bool given_up(struct restore_stream *s)
{
	if (wl_is_exited(s->w)) {
		s->broken = true;
	} else if (clock_mono_ms() - s->last_progress >= FEED_STALL_MS) {
		s->broken = true;
		s->stalled = true;
	}
	return s->broken;
}

/* 1: the write end is open; 0: the program has not opened the FIFO yet. */
static int open_writer(struct restore_stream *s)
{
	if (s->fd >= 0)
		return 1;
	s->fd = open(s->w->image, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (s->fd >= 0) {
		fcntl(s->fd, F_SETPIPE_SZ, FIFO_BYTES);	/* best effort */
		s->last_progress = clock_mono_ms();
		return 1;
	}
	if (errno != ENXIO)
		s->broken = true;
	return 0;
}

/* The pipe is full: room, the program's exit or the stall bound. */
static void wait_room(struct restore_stream *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLOUT };

	if (!given_up(s))
		poll(&p, 1, 50);
}

int workload_restore_feed(struct restore_stream *s, const uint8_t *image,
			  size_t len)
{
	ssize_t n;

	if (s->broken || !open_writer(s))
		return s->broken ? -1 : 0;
	if (len - s->fed < FEED_BATCH && !s->finishing)
		return 0;
	while (s->fed < len && !s->broken) {
		n = write(s->fd, image + s->fed, len - s->fed);
		if (n > 0) {
			s->fed += (size_t)n;
			s->last_progress = clock_mono_ms();
		} else if (n < 0 && errno == EAGAIN) {
			wait_room(s);
		} else if (!(n < 0 && errno == EINTR)) {
			s->broken = true;	/* EPIPE: the program is gone */
		}
	}
	return s->broken ? -1 : 0;
}

static void stream_free(struct restore_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	unlink(s->w->image);
	free(s);
}

void workload_restore_cancel(struct restore_stream *s)
{
	if (!s)
		return;
	wl_kill_group(s->w, SIGKILL);
	wl_wait_exit(s->w, 2000);
	wl_remove(s->w);
	workload_put(s->w);
	stream_free(s);
}

/* The whole image into the FIFO, once the program has opened it. */
static void feed_all(struct restore_stream *s, const uint8_t *image, size_t len)
{
	s->finishing = true;
	while (!s->broken && !open_writer(s) && !given_up(s))
		clock_sleep_ms(RESTORE_POLL_MS);
	workload_restore_feed(s, image, len);
	if (s->fd >= 0)
		close(s->fd);	/* the program reads the end of the image */
	s->fd = -1;
}

int workload_restore_finish(struct restore_stream *s, const uint8_t *image,
			    size_t len, struct workload **out,
			    struct api_error *err)
{
	struct workload *w = s->w;
	int ret;

	feed_all(s, image, len);
	if (s->stalled) {
		wl_kill_group(w, SIGKILL);
		wl_wait_exit(w, 2000);
		ret = api_error_set(err, 504, "restore_timeout",
				    "%s: took no byte of its image for %d ms",
				    w->id, FEED_STALL_MS);
	} else {
		ret = wait_restored(w, err);
	}
	if (ret) {
		wl_remove(w);
		workload_put(w);
	} else {
		*out = w;
	}
	stream_free(s);
	return ret;
}

int workload_restore(const uint8_t *image, size_t len, const char *program,
		     const struct workload_args *args, bool hold,
		     struct workload **out, struct api_error *err)
{
	struct restore_stream *s;

	s = workload_restore_begin(program, args, hold, err);
	if (!s)
		return -1;
	return workload_restore_finish(s, image, len, out, err);
}
