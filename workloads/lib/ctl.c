// SPDX-License-Identifier: GPL-2.0
/*
 * Control socket: the runtime's server (one request per connection, a line
 * "VERB\n", one JSON line back, image bytes after it for DUMP and PEEK) and
 * the client used by the agent and the tests. See docs/control-protocol.md.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <sigmig/ctl.h>
#include <sigmig/runtime.h>
#include "internal.h"

#define REQUEST_TIMEOUT_MS 5000

/* ---- shared helpers ---- */

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- server ---- */

static void mkdir_parents(const char *path)
{
	char dir[108], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
}

int sigmig_ctl_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd, ret;

	ret = fill_addr(&sa, path);
	if (ret)
		return ret;
	mkdir_parents(path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	sigmig_rt.listen_fd = fd;
	return 0;
}

static void json_escape(char *out, size_t outlen, const char *in)
{
	size_t o = 0;

	for (; *in && o + 7 < outlen; in++) {
		unsigned char c = (unsigned char)*in;

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, outlen - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(out + o, outlen - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

static void reply_error(int fd, const char *code, const char *message)
{
	char esc[512], line[700];

	json_escape(esc, sizeof(esc), message);
	snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%s\",\"message\":\"%s\"}\n",
		 code, esc);
	write_all(fd, line, strlen(line));
}

static void reply_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void reply_line(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	write_all(fd, line, strlen(line));
}

static const char *state_name(enum rt_state s)
{
	static const char *const names[] = {
		[ST_RUNNING] = "running", [ST_FROZEN] = "frozen",
		[ST_RESTORING] = "restoring", [ST_FAILED] = "failed",
	};
	return names[s];
}

static void do_status(int fd)
{
	size_t cap = 512 + (size_t)sigmig_rt.nthreads * 40, o;
	char *line = malloc(cap), esc[512];
	unsigned int i, first = 1;

	if (!line)
		return reply_error(fd, "internal", "out of memory");
	json_escape(esc, sizeof(esc), sigmig_rt.program);
	o = (size_t)snprintf(line, cap, "{\"ok\":true,\"state\":\"%s\",\"pid\":%d,\"program\":\"%s\",\"restored\":%s,\"threads\":[",
			     state_name(sigmig_rt.state), getpid(), esc,
			     sigmig_rt.restored ? "true" : "false");
	for (i = 0; i < sigmig_rt.nthreads; i++) {
		if (!sigmig_rt.threads[i].registered)
			continue;
		o += (size_t)snprintf(line + o, cap - o, "%s{\"index\":%u,\"tid\":%d}",
				      first ? "" : ",", i, sigmig_rt.threads[i].tid);
		first = 0;
	}
	if (sigmig_rt.restored)
		o += (size_t)snprintf(line + o, cap - o,
				      "],\"restore\":{\"requeued\":%llu,\"verified\":true,\"restore_ns\":%llu}",
				      (unsigned long long)sigmig_rt.requeued,
				      (unsigned long long)sigmig_rt.restore_ns);
	else
		o += (size_t)snprintf(line + o, cap - o, "],\"restore\":null");
	if (sigmig_rt.state == ST_FAILED) {
		json_escape(esc, sizeof(esc), sigmig_rt.restore_err);
		o += (size_t)snprintf(line + o, cap - o,
				      ",\"error\":\"restore_failed\",\"message\":\"%s\"", esc);
	}
	snprintf(line + o, cap - o, "}\n");
	write_all(fd, line, strlen(line));
	free(line);
}

static int freeze_locked(int fd, uint64_t *ns)
{
	char err[300];
	int ret;

	ret = sigmig_freeze(ns, err, sizeof(err));
	if (ret) {
		reply_error(fd, "freeze_timeout", err);
		return ret;
	}
	sigmig_rt.state = ST_FROZEN;
	return 0;
}

static void do_dump(int fd, int peek)
{
	uint64_t start, freeze_ns = 0, nsignals = 0, dump_ns;
	uint8_t *img = NULL;
	size_t len = 0;
	char err[300];
	int was_running = sigmig_rt.state == ST_RUNNING;

	if (!(sigmig_rt.state == ST_FROZEN || (peek && was_running)))
		return reply_error(fd, "wrong_state", peek ?
				   "PEEK needs a running or frozen process" :
				   "DUMP needs a frozen process: send FREEZE first");
	if (was_running && freeze_locked(fd, &freeze_ns))
		return;
	start = sigmig_now_ns();
	if (sigmig_dump(&img, &len, &nsignals, err, sizeof(err))) {
		reply_error(fd, "dump_failed", err);
	} else {
		dump_ns = sigmig_now_ns() - start;
		reply_line(fd, "{\"ok\":true,\"image_size\":%zu,\"signals\":%llu,\"dump_ns\":%llu}",
			   len, (unsigned long long)nsignals, (unsigned long long)dump_ns);
		write_all(fd, img, len);
	}
	free(img);
	if (was_running) {
		sigmig_thaw();
		sigmig_rt.state = ST_RUNNING;
	}
}

static void do_commit(int fd)
{
	if (sigmig_rt.state != ST_FROZEN)
		return reply_error(fd, "wrong_state", "COMMIT needs a frozen process");
	if (sigmig_rt.on_commit)
		sigmig_rt.on_commit();
	reply_line(fd, "{\"ok\":true}");
	shutdown(fd, SHUT_WR);
	unlink(sigmig_rt.ctl_path);
	/* the parked threads never run again: nothing more is delivered */
	_exit(0);
}

/* Held after a restore: the restorer resumes the threads (CMD_GO). */
static void do_release(int fd)
{
	if (sigmig_restore_release())
		return reply_error(fd, "resume_failed", "resuming the restored threads failed");
	sigmig_rt.held = 0;
	sigmig_rt.state = ST_RUNNING;
	reply_line(fd, "{\"ok\":true}");
}

static void dispatch(int fd, const char *verb)
{
	uint64_t ns = 0;

	pthread_mutex_lock(&sigmig_rt.lock);
	if (!strcmp(verb, "STATUS")) {
		do_status(fd);
	} else if (sigmig_rt.state == ST_RESTORING || sigmig_rt.state == ST_FAILED) {
		reply_error(fd, "wrong_state", "the process is restoring or failed to restore");
	} else if (!strcmp(verb, "FREEZE")) {
		if (sigmig_rt.state != ST_RUNNING)
			reply_error(fd, "wrong_state", "FREEZE needs a running process");
		else if (!freeze_locked(fd, &ns))
			reply_line(fd, "{\"ok\":true,\"freeze_ns\":%llu}", (unsigned long long)ns);
	} else if (!strcmp(verb, "THAW")) {
		if (sigmig_rt.state != ST_FROZEN) {
			reply_error(fd, "wrong_state", "THAW needs a frozen process");
		} else if (sigmig_rt.held) {
			do_release(fd);
		} else {
			sigmig_thaw();
			sigmig_rt.state = ST_RUNNING;
			reply_line(fd, "{\"ok\":true}");
		}
	} else if (!strcmp(verb, "DUMP") && sigmig_rt.held) {
		/* its threads do not run the image's masks yet: not a source */
		reply_error(fd, "wrong_state",
			    "held after a restore: THAW or COMMIT it first");
	} else if (!strcmp(verb, "DUMP") || !strcmp(verb, "PEEK")) {
		do_dump(fd, verb[0] == 'P');
	} else if (!strcmp(verb, "COMMIT")) {
		do_commit(fd);
	} else {
		reply_error(fd, "unknown_verb", "verbs: STATUS FREEZE THAW DUMP PEEK COMMIT");
	}
	pthread_mutex_unlock(&sigmig_rt.lock);
}

static int read_request(int fd, char *verb, size_t len)
{
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		if (wait_fd(fd, POLLIN, REQUEST_TIMEOUT_MS))
			return -ETIMEDOUT;
		n = read(fd, verb + got, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		if (verb[got] == '\n') {
			verb[got] = '\0';
			if (got && verb[got - 1] == '\r')
				verb[got - 1] = '\0';
			return 0;
		}
		got++;
	}
	return -E2BIG;
}

void *sigmig_ctl_main(void *arg)
{
	char verb[64];
	int fd;

	(void)arg;
	while (!atomic_load(&sigmig_rt.stopping)) {
		if (wait_fd(sigmig_rt.listen_fd, POLLIN, 200))
			continue;
		fd = accept4(sigmig_rt.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!read_request(fd, verb, sizeof(verb)))
			dispatch(fd, verb);
		else
			reply_error(fd, "bad_request", "expected one line: VERB\\n");
		close(fd);
	}
	return NULL;
}

/* ---- client ---- */

static int deadline_left(uint64_t deadline)
{
	uint64_t now = sigmig_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now) / 1000000ull) + 1;
}

static int read_some(int fd, uint8_t *buf, size_t len, uint64_t deadline)
{
	ssize_t n;
	int ret;

	ret = wait_fd(fd, POLLIN, deadline_left(deadline));
	if (ret)
		return ret;
	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? (int)n : -EPIPE;
}

static int read_reply(int fd, char **json, uint8_t **payload, size_t *plen,
		      uint64_t deadline)
{
	size_t cap = 4096, got = 0, line_len, size = 0;
	uint8_t *buf = malloc(cap), *nl, *tmp, *img;
	const char *field;
	int n;

	if (!buf)
		return -ENOMEM;
	while (!(nl = memchr(buf, '\n', got))) {
		if (got == cap) {
			tmp = realloc(buf, cap *= 2);
			if (!tmp)
				return free(buf), -ENOMEM;
			buf = tmp;
		}
		n = read_some(fd, buf + got, cap - got, deadline);
		if (n < 0)
			return free(buf), n;
		got += (size_t)n;
	}
	line_len = (size_t)(nl - buf);
	*nl = '\0';
	field = strstr((char *)buf, "\"image_size\":");
	if (field)
		size = strtoull(field + 13, NULL, 10);
	img = malloc(size ? size : 1);
	if (!img)
		return free(buf), -ENOMEM;
	got -= line_len + 1;
	if (got > size)
		got = size;
	memcpy(img, nl + 1, got);
	while (got < size) {
		n = read_some(fd, img + got, size - got, deadline);
		if (n < 0)
			return free(buf), free(img), n;
		got += (size_t)n;
	}
	*json = (char *)buf;
	if (payload) {
		*payload = img;
		*plen = size;
	} else {
		free(img);
	}
	return 0;
}

int sigmig_ctl_request(const char *sock_path, const char *verb,
		       char **json_reply, uint8_t **payload,
		       size_t *payload_len, int timeout_ms)
{
	uint64_t deadline = sigmig_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct sockaddr_un sa;
	char line[64];
	int fd, ret;

	if (payload)
		*payload = NULL;
	if (payload_len)
		*payload_len = 0;
	*json_reply = NULL;
	ret = fill_addr(&sa, sock_path);
	if (ret)
		return ret;
	if (strlen(verb) + 2 > sizeof(line) || strchr(verb, '\n'))
		return -EINVAL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	snprintf(line, sizeof(line), "%s\n", verb);
	ret = write_all(fd, line, strlen(line));
	if (!ret)
		ret = read_reply(fd, json_reply, payload, payload_len, deadline);
	close(fd);
	return ret;
}
