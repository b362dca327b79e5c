// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "httpc.h"

static int fail(struct http_result *res, const char *phase, int err)
{
	res->failed_phase = phase;
	res->error = err;
	return -1;
}

/* Waits for @events until the earlier of the deadline and a stall limit. */
static int wait_io(int fd, short events, double deadline, unsigned int stall_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	double left = deadline - clock_mono_s();
	int ms, n;

	for (;;) {
		if (left <= 0)
			return ETIMEDOUT;
		ms = (int)(left * 1000) + 1;
		if (stall_ms && (unsigned int)ms > stall_ms)
			ms = (int)stall_ms;
		n = poll(&pfd, 1, ms);
		if (n > 0)
			return 0;
		if (n == 0)
			return ETIMEDOUT;
		if (errno != EINTR)
			return errno;
		left = deadline - clock_mono_s();
	}
}

static int connect_target(const struct target_url *t, double deadline,
			  struct http_result *res)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	socklen_t elen = sizeof(int);
	char port[8];
	int fd, err = 0;

	snprintf(port, sizeof(port), "%u", t->port);
	if (getaddrinfo(t->host, port, &hints, &ai))
		return fail(res, "resolve", EHOSTUNREACH);
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return fail(res, "connect", errno);
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		err = errno;
	freeaddrinfo(ai);
	if (!err)
		err = wait_io(fd, POLLOUT, deadline, 0);
	if (!err && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen))
		err = errno;
	if (err) {
		close(fd);
		return fail(res, "connect", err);
	}
	return fd;
}

static int send_all(int fd, const void *buf, size_t len, double deadline,
		    unsigned int stall_ms)
{
	const uint8_t *p = buf;
	ssize_t n;
	int err;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno;
		err = wait_io(fd, POLLOUT, deadline, stall_ms);
		if (err)
			return err;
	}
	return 0;
}

/* "HTTP/1.<digit> <3 digits>", then a reason phrase or nothing. */
static int parse_status_line(const char *line, unsigned int *status)
{
	const char *code = line + 9;

	if (strncmp(line, "HTTP/1.", 7) || !isdigit((unsigned char)line[7]) ||
	    line[8] != ' ' || !isdigit((unsigned char)code[0]) ||
	    !isdigit((unsigned char)code[1]) ||
	    !isdigit((unsigned char)code[2]) || (code[3] && code[3] != ' '))
		return -1;
	*status = (unsigned int)((code[0] - '0') * 100 + (code[1] - '0') * 10 +
				 (code[2] - '0'));
	return *status < 100 ? -1 : 0;
}

/* 1*DIGIT with blanks after it; a second one must say the same. */
static int parse_content_length(const char *text, long *clen)
{
	char *end;
	long n;

	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno)
		return -1;
	end += strspn(end, " \t");
	if (*end || (*clen >= 0 && *clen != n))
		return -1;
	*clen = n;
	return 0;
}

static int parse_head(char *head, struct http_result *res, long *clen)
{
	char *line, *save = NULL, *colon;

	*clen = -1;
	line = strtok_r(head, "\r\n", &save);
	if (line != head || parse_status_line(line, &res->status))
		return -1;
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon++ = '\0';
		colon += strspn(colon, " \t");
		if (strcasecmp(line, "Content-Length") == 0) {
			if (parse_content_length(colon, clen))
				return -1;
		} else if (strcasecmp(line, "Content-Type") == 0) {
			snprintf(res->content_type, sizeof(res->content_type),
				 "%s", colon);
		}
	}
	return 0;
}

int httpc_parse_response(char *buf, size_t len, struct http_result *res)
{
	char *end;
	long clen;

	end = strstr(buf, "\r\n\r\n");
	if (!end) {
		free(buf);
		return len ? EPROTO : ECONNRESET;
	}
	*end = '\0';
	if (parse_head(buf, res, &clen)) {
		free(buf);
		res->status = 0;
		return EPROTO;
	}
	end += 4;
	res->body_len = len - (size_t)(end - buf);
	if (clen >= 0 && (size_t)clen != res->body_len) {
		free(buf);
		res->status = 0;
		return EPROTO;	/* cut in the middle of the reply */
	}
	memmove(buf, end, res->body_len + 1);
	res->body = buf;
	return 0;
}

/* Reads the whole response (Connection: close) and parses it. */
static int receive_response(int fd, double deadline, struct http_result *res)
{
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	ssize_t n;
	int err;

	if (!buf)
		return ENOMEM;
	for (;;) {
		if (len + 1 >= cap) {
			char *bigger;

			if (cap >= HTTPC_RESPONSE_MAX) {
				free(buf);
				return EMSGSIZE;
			}
			bigger = realloc(buf, cap * 2);
			if (!bigger) {
				free(buf);
				return ENOMEM;
			}
			buf = bigger;
			cap *= 2;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN && errno != EINTR) {
			free(buf);
			return errno;
		}
		err = wait_io(fd, POLLIN, deadline, 0);
		if (err) {
			free(buf);
			return err;
		}
	}
	buf[len] = '\0';
	return httpc_parse_response(buf, len, res);
}

static int send_request(int fd, const char *method, const struct target_url *t,
			const char *path_query, const char *token,
			const char *content_type, const uint8_t *body,
			size_t len, double deadline, unsigned int stall_ms)
{
	char head[4096 + 512];
	int n, err;

	n = snprintf(head, sizeof(head),
		     "%s %s HTTP/1.1\r\nHost: %s:%u\r\n"
		     "User-Agent: sigmig-agent\r\nConnection: close\r\n"
		     "Content-Type: %s\r\nContent-Length: %zu\r\n"
		     "%s%s%s\r\n",
		     method, path_query, t->host, t->port, content_type, len,
		     token && *token ? "Authorization: Bearer " : "",
		     token && *token ? token : "",
		     token && *token ? "\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return E2BIG;
	err = send_all(fd, head, (size_t)n, deadline, stall_ms);
	if (!err)
		err = send_all(fd, body, len, deadline, stall_ms);
	return err;
}

int httpc_post(const struct target_url *target, const char *path_query,
	       const char *token, const char *content_type,
	       const uint8_t *body, size_t len, unsigned int timeout_ms,
	       unsigned int stall_ms, struct http_result *res)
{
	return httpc_request("POST", target, path_query, token, content_type,
			     body, len, timeout_ms, stall_ms, res);
}

int httpc_request(const char *method, const struct target_url *target,
		  const char *path_query, const char *token,
		  const char *content_type, const uint8_t *body, size_t len,
		  unsigned int timeout_ms, unsigned int stall_ms,
		  struct http_result *res)
{
	double t0 = clock_mono_s(), deadline = t0 + timeout_ms / 1000.0, t1, t2;
	int fd, err;

	memset(res, 0, sizeof(*res));
	fd = connect_target(target, deadline, res);
	if (fd < 0)
		return -1;
	t1 = clock_mono_s();
	res->connect_s = t1 - t0;
	err = send_request(fd, method, target, path_query, token, content_type, body,
			   len, deadline, stall_ms);
	t2 = clock_mono_s();
	res->send_s = t2 - t1;
	if (err && err != ETIMEDOUT) {
		/*
		 * A server that refuses from the headers (401, 413) answers
		 * and closes while the body is still going out: its answer
		 * says more than the broken pipe.
		 */
		if (receive_response(fd, clock_mono_s() + 2, res) == 0 && res->status) {
			res->wait_s = 0;
			close(fd);
			return 0;
		}
		http_result_free(res);
	}
	if (err) {
		close(fd);
		return fail(res, "send", err);
	}
	err = receive_response(fd, deadline, res);
	res->wait_s = clock_mono_s() - t2;
	close(fd);
	if (err)
		return fail(res, "receive", err);
	return 0;
}

void http_result_free(struct http_result *res)
{
	free(res->body);
	res->body = NULL;
}

int url_append_query(char *buf, size_t len, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t used = strlen(buf);
	const unsigned char *p;
	int n;

	n = snprintf(buf + used, len - used, "%s%s=", strchr(buf, '?') ? "&" : "?",
		     key);
	if (n < 0 || (size_t)n >= len - used)
		return -1;
	used += (size_t)n;
	for (p = (const unsigned char *)value; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~", *p);

		if (used + 4 >= len)
			return -1;
		if (plain) {
			buf[used++] = (char)*p;
		} else {
			buf[used++] = '%';
			buf[used++] = hex[*p >> 4];
			buf[used++] = hex[*p & 15];
		}
	}
	buf[used] = '\0';
	return 0;
}
