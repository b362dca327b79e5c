// SPDX-License-Identifier: GPL-2.0
/*
 * Control-protocol client (<sigmig/ctl.h>), used by the agent and the
 * tools. Everything is non-blocking and measured against one deadline:
 * the connect (a busy runtime's full backlog is retried, not waited on),
 * the request, the line and the image. The line is bounded by
 * SIGMIG_CTL_LINE_MAX, the image by SIGMIG_CTL_IMAGE_MAX; the only member
 * the client itself reads, "image_size", is found by a scan of the line's
 * top-level members (the agent parses the whole line with jansson).
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <sigmig/ctl.h>
#include "util.h"

#define VERB_MAX		300
#define LINE_CHUNK		4096
#define BUSY_RETRY_MS		5

/* ---- a minimal scan of one JSON object's top-level members ---- */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Just after the string that starts at @p (a '"'), or NULL if unterminated. */
static const char *skip_string(const char *p)
{
	for (p++; *p; p++) {
		if (*p == '\\' && !*++p)
			return NULL;
		if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* The ',' or '}' that ends the value starting at @p, or NULL. */
static const char *skip_value(const char *p)
{
	int depth = 0;

	while (*p) {
		if (*p == '"') {
			p = skip_string(p);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			if (!depth)
				return p;
			depth--;
		} else if (*p == ',' && !depth) {
			return p;
		}
		p++;
	}
	return NULL;
}

/* The value of the top-level member @key of the object in @json, or NULL. */
static const char *member(const char *json, const char *key)
{
	size_t klen = strlen(key);
	const char *p = skip_ws(json), *name, *end;

	if (*p++ != '{')
		return NULL;
	for (;;) {
		p = skip_ws(p);
		if (*p != '"')
			return NULL;
		name = p + 1;
		end = skip_string(p);
		if (!end)
			return NULL;
		p = skip_ws(end);
		if (*p++ != ':')
			return NULL;
		p = skip_ws(p);
		if ((size_t)(end - 1 - name) == klen && !memcmp(name, key, klen))
			return p;
		p = skip_value(p);
		if (!p || *p != ',')
			return NULL;
		p++;
	}
}

static int ends_value(char c)
{
	return c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* "image_size": 0 and *@size when present and valid, 1 when absent. */
static int image_size(const char *line, uint64_t *size)
{
	const char *v = member(line, "image_size");
	char *end;

	if (!v)
		return 1;
	if (!isdigit((unsigned char)*v))
		return -EPROTO;
	errno = 0;
	*size = strtoull(v, &end, 10);
	if (errno || !ends_value(*end) || *size > SIGMIG_CTL_IMAGE_MAX)
		return -EPROTO;
	return 0;
}

int sigmig_ctl_reply_ok(const struct sigmig_ctl_reply *reply)
{
	const char *v = reply->line ? member(reply->line, "ok") : NULL;

	return v && !strncmp(v, "true", 4) && ends_value(v[4]);
}

/* ---- transport ---- */

static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int left, n;

	for (;;) {
		left = sigmig_ms_left(deadline);
		if (!left)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, left);
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
static int connect_unix(const char *path, uint64_t deadline)
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
		if (err != -EAGAIN)
			return err;
		if (!sigmig_ms_left(deadline))
			return -ETIMEDOUT;
		poll(NULL, 0, BUSY_RETRY_MS);
	}
}

static int send_all(int fd, const char *buf, size_t len, uint64_t deadline)
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

/* What is there (at least one byte) before @deadline; -EPROTO at EOF. */
static int recv_some(int fd, uint8_t *buf, size_t len, uint64_t deadline,
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
			return -EPROTO;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(fd, POLLIN, deadline);
		if (err)
			return err;
	}
}

/* ---- one exchange ---- */

struct inbuf {
	uint8_t *data;
	size_t len, cap;
};

static int inbuf_grow(struct inbuf *in)
{
	uint8_t *bigger;

	if (in->cap >= SIGMIG_CTL_LINE_MAX)
		return -EPROTO;
	bigger = realloc(in->data, in->cap ? in->cap * 2 : LINE_CHUNK);
	if (!bigger)
		return -ENOMEM;
	in->data = bigger;
	in->cap = in->cap ? in->cap * 2 : LINE_CHUNK;
	return 0;
}

/*
 * Up to and including the newline; the first image bytes may come with it
 * and stay in @in after the line. Returns the line's length.
 */
static ssize_t read_line(int fd, uint64_t deadline, struct inbuf *in)
{
	uint8_t *nl = NULL;
	size_t got;
	int err;

	while (!nl) {
		err = in->len == in->cap ? inbuf_grow(in) : 0;
		if (err)
			return err;
		err = recv_some(fd, in->data + in->len, in->cap - in->len, deadline, &got);
		if (err)
			return err;
		nl = memchr(in->data + in->len, '\n', got);
		in->len += got;
	}
	*nl = '\0';
	return nl - in->data;
}

/* The image's bytes that came with the line become the stream's first. */
static int stream_start(struct sigmig_ctl_stream *s, const uint8_t *head,
			size_t head_len, uint64_t size)
{
	if (head_len > size)
		return -EPROTO;
	s->size = size;
	s->head = malloc(head_len ? head_len : 1);
	if (!s->head)
		return -ENOMEM;
	memcpy(s->head, head, head_len);
	s->head_len = head_len;
	return 0;
}

static int exchange(struct sigmig_ctl_stream *s, const char *verb,
		    struct sigmig_ctl_reply *reply)
{
	struct inbuf in = { 0 };
	char request[VERB_MAX + 2];
	uint64_t size = 0;
	ssize_t line_len;
	size_t extra;
	int ret;

	snprintf(request, sizeof(request), "%s\n", verb);
	ret = send_all(s->fd, request, strlen(request), s->deadline);
	if (ret)
		return ret;
	line_len = read_line(s->fd, s->deadline, &in);
	if (line_len < 0) {
		free(in.data);
		return (int)line_len;
	}
	reply->line = (char *)in.data;
	extra = in.len - (size_t)line_len - 1;
	ret = image_size(reply->line, &size);
	if (ret == 1)	/* no image: nothing may follow the line */
		return extra ? -EPROTO : 0;
	if (ret)
		return ret;
	return stream_start(s, in.data + line_len + 1, extra, size);
}

int sigmig_ctl_open(const char *sock_path, const char *verb, int timeout_ms,
		    struct sigmig_ctl_reply *reply, struct sigmig_ctl_stream *s)
{
	int ret;

	memset(reply, 0, sizeof(*reply));
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (!verb[0] || strlen(verb) > VERB_MAX || strpbrk(verb, "\r\n"))
		return -EINVAL;
	s->deadline = sigmig_deadline(timeout_ms);
	s->fd = connect_unix(sock_path, s->deadline);
	if (s->fd < 0) {
		ret = s->fd;
		s->fd = -1;
		return ret;
	}
	ret = exchange(s, verb, reply);
	if (ret) {
		sigmig_ctl_close(s);
		sigmig_ctl_reply_free(reply);
	}
	return ret;
}

ssize_t sigmig_ctl_read(struct sigmig_ctl_stream *s, uint8_t *buf, size_t len,
			int stall_ms)
{
	uint64_t left = s->size - s->done, deadline = s->deadline, stall;
	size_t n = len < left ? len : (size_t)left;
	int err;

	if (!n)
		return 0;
	if (s->head_off < s->head_len) {
		if (n > s->head_len - s->head_off)
			n = s->head_len - s->head_off;
		memcpy(buf, s->head + s->head_off, n);
		s->head_off += n;
	} else {
		stall = stall_ms > 0 ? sigmig_deadline(stall_ms) : deadline;
		err = recv_some(s->fd, buf, n, stall < deadline ? stall : deadline, &n);
		if (err)
			return err;
	}
	s->done += n;
	return (ssize_t)n;
}

void sigmig_ctl_close(struct sigmig_ctl_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->head);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

static int read_image(struct sigmig_ctl_stream *s, struct sigmig_ctl_reply *reply)
{
	ssize_t got;

	reply->image = malloc(s->size ? s->size : 1);
	if (!reply->image)
		return -ENOMEM;
	reply->image_len = s->size;
	while (s->done < s->size) {
		got = sigmig_ctl_read(s, reply->image + s->done, s->size - s->done, 0);
		if (got < 0)
			return (int)got;
	}
	return 0;
}

int sigmig_ctl_request(const char *sock_path, const char *verb, int timeout_ms,
		       struct sigmig_ctl_reply *reply)
{
	struct sigmig_ctl_stream s;
	int ret;

	ret = sigmig_ctl_open(sock_path, verb, timeout_ms, reply, &s);
	if (ret)
		return ret;
	ret = s.head ? read_image(&s, reply) : 0;
	sigmig_ctl_close(&s);
	if (ret)
		sigmig_ctl_reply_free(reply);
	return ret;
}

void sigmig_ctl_reply_free(struct sigmig_ctl_reply *reply)
{
	free(reply->line);
	free(reply->image);
	memset(reply, 0, sizeof(*reply));
}
