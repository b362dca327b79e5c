// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * The runtime serves one request at a time: while it dumps, concurrent
 * clients fill its listen backlog and a non-blocking connect() fails
 * with EAGAIN. That is "busy", not "gone": retry until the deadline.
 */
static int connect_unix(const char *path, int64_t deadline)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			return fd;
		err = -errno;
		close(fd);
		if (err != -EAGAIN || now_ms() >= deadline)
			return err == -EAGAIN ? -ETIMEDOUT : err;
		poll(NULL, 0, 5);
	}
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t n;
	int err;

	while (len) {
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			err = wait_fd(fd, POLLOUT, deadline);
			if (err)
				return err;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads what is available (at least one byte) before @deadline. */
static int recv_some(int fd, uint8_t *buf, size_t len, int64_t deadline,
		     size_t *got)
{
	ssize_t n;
	int err;

	for (;;) {
		n = recv(fd, buf, len, 0);
		if (n > 0) {
			*got = (size_t)n;
			return 0;
		}
		if (n == 0)
			return -EPIPE;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

/*
 * The line and the first payload bytes may arrive together: whatever
 * follows the newline is handed back in @extra.
 */
static int read_line(int fd, int64_t deadline, char **line, uint8_t **extra,
		     size_t *extra_len)
{
	size_t cap = 4096, len = 0, got;
	uint8_t *buf = malloc(cap), *nl;
	int err;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			uint8_t *bigger;

			if (cap >= CTL_REPLY_MAX) {
				free(buf);
				return -EPROTO;
			}
			bigger = realloc(buf, cap * 2);
			if (!bigger) {
				free(buf);
				return -ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		err = recv_some(fd, buf + len, cap - len, deadline, &got);
		if (err) {
			free(buf);
			return err == -EPIPE ? -EPROTO : err;
		}
		nl = memchr(buf + len, '\n', got);
		len += got;
		if (nl)
			break;
	}
	*nl = '\0';
	*extra_len = len - (size_t)(nl + 1 - buf);
	*extra = buf;
	*line = (char *)buf;
	return (int)(nl + 1 - buf);
}

static int read_payload(int fd, int64_t deadline, const uint8_t *head,
			size_t head_len, struct ctl_reply *reply)
{
	json_t *size = json_object_get(reply->json, "image_size");
	json_int_t n;
	size_t have, got;
	int err;

	if (!size)
		return head_len ? -EPROTO : 0;
	n = json_integer_value(size);
	if (!json_is_integer(size) || n < 0 || (uint64_t)n > CTL_IMAGE_MAX ||
	    head_len > (size_t)n)
		return -EPROTO;
	reply->payload = malloc(n ? (size_t)n : 1);
	if (!reply->payload)
		return -ENOMEM;
	reply->payload_len = (size_t)n;
	memcpy(reply->payload, head, head_len);
	for (have = head_len; have < (size_t)n; have += got) {
		err = recv_some(fd, reply->payload + have, (size_t)n - have,
				deadline, &got);
		if (err)
			return err == -EPIPE ? -EPROTO : err;
	}
	return 0;
}

static int exchange(int fd, const char *verb, int64_t deadline,
		    struct ctl_reply *reply)
{
	char request[32];
	uint8_t *buf = NULL;
	char *line = NULL;
	size_t extra_len = 0;
	json_t *json;
	int off, err;

	if (strlen(verb) > sizeof(request) - 2)
		return -EINVAL;
	strcpy(request, verb);
	strcat(request, "\n");
	err = send_all(fd, request, strlen(request), deadline);
	if (err)
		return err;
	off = read_line(fd, deadline, &line, &buf, &extra_len);
	if (off < 0)
		return off;
	json = json_loads(line, 0, NULL);
	if (!json_is_object(json)) {
		json_decref(json);
		free(buf);
		return -EPROTO;
	}
	reply->json = json;
	err = read_payload(fd, deadline, buf + off, extra_len, reply);
	free(buf);
	return err;
}

int ctl_request(const char *sock_path, const char *verb, int timeout_ms,
		struct ctl_reply *reply)
{
	int64_t deadline = now_ms() + timeout_ms;
	int fd, err;

	memset(reply, 0, sizeof(*reply));
	fd = connect_unix(sock_path, deadline);
	if (fd < 0)
		return fd;
	err = exchange(fd, verb, deadline, reply);
	close(fd);
	if (err)
		ctl_reply_free(reply);
	return err;
}

void ctl_reply_free(struct ctl_reply *reply)
{
	json_decref(reply->json);
	free(reply->payload);
	memset(reply, 0, sizeof(*reply));
}

int ctl_reply_ok(const struct ctl_reply *reply)
{
	return json_is_true(json_object_get(reply->json, "ok"));
}

const char *ctl_reply_error(const struct ctl_reply *reply)
{
	const char *s = json_string_value(json_object_get(reply->json, "error"));

	return s ? s : "runtime_error";
}

const char *ctl_reply_message(const struct ctl_reply *reply)
{
	const char *s = json_string_value(json_object_get(reply->json, "message"));

	return s ? s : "";
}
