/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A peer's reply as the agent accepts it: the checks its head must pass,
 * line by line as libcurl hands the lines over, and a URL query builder.
 * Pure code (no sockets, no libcurl), shared by the client, its tests and
 * the fuzzer.
 */
#ifndef AGENT_HTTP_REPLY_H
#define AGENT_HTTP_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#define HTTPC_RESPONSE_MAX	(4 << 20)

struct http_result {
	unsigned int status;		/* 0 when no response was parsed */
	char *body;			/* malloc()ed, NUL-terminated */
	size_t body_len;
	char content_type[64];
	const char *failed_phase;	/* "resolve", "connect", "tls", "send", "receive" */
	int error;			/* errno of the failure, 0 on success */
	char detail[256];		/* the client library's words for it */
	double connect_s, send_s, wait_s;	/* phase durations */
};

/* The head of a reply, fed one line at a time. */
struct http_head {
	unsigned int status;		/* of the final (non-1xx) head */
	long content_length;		/* -1: none declared */
	char content_type[64];
	bool started;			/* a status line was taken */
	bool complete;			/* the blank line after a final status */
};

void http_head_init(struct http_head *h);
/*
 * Takes one line of the head (its CRLF or LF included or not). The first
 * must be "HTTP/1.<digit> <3 digits>" then a reason or nothing; a
 * Content-Length must be 1*DIGIT with blanks around it, a second one must
 * say the same number. A 1xx head is passed over. Returns 0 or EPROTO.
 */
int http_head_line(struct http_head *h, const char *line, size_t len);

/*
 * Parses a whole response (status line, headers, body) that a peer sent
 * before closing: @buf is malloc()ed, @len bytes followed by a NUL. On
 * success @buf becomes res->body (the body moved to its start); on
 * failure it is freed and an errno value is returned.
 */
int httpc_parse_response(char *buf, size_t len, struct http_result *res);
void http_result_free(struct http_result *res);

/* Appends "key=value" to a query string, percent-encoding the value. */
int url_append_query(char *buf, size_t len, const char *key, const char *value);

#endif
