/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small HTTP/1.1 client, enough to stream an image to a peer agent:
 * one POST per connection with Content-Length, bounded by a deadline and
 * by a stall timeout while sending.
 */
#ifndef AGENT_HTTPC_H
#define AGENT_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include "validate.h"

#define HTTPC_RESPONSE_MAX	(4 << 20)

struct http_result {
	unsigned int status;		/* 0 when no response was parsed */
	char *body;			/* malloc()ed, NUL-terminated */
	size_t body_len;
	char content_type[64];
	const char *failed_phase;	/* "resolve", "connect", "send", "receive" */
	int error;			/* errno of the failure, 0 on success */
	double connect_s, send_s, wait_s;	/* phase durations */
};

int httpc_post(const struct target_url *target, const char *path_query,
	       const char *token, const char *content_type,
	       const uint8_t *body, size_t len, unsigned int timeout_ms,
	       unsigned int stall_ms, struct http_result *res);
/* The same with another method (POST .../thaw with an empty body, DELETE). */
int httpc_request(const char *method, const struct target_url *target,
		  const char *path_query, const char *token,
		  const char *content_type, const uint8_t *body, size_t len,
		  unsigned int timeout_ms, unsigned int stall_ms,
		  struct http_result *res);
void http_result_free(struct http_result *res);

/*
 * Parses a whole response (status line, headers, body) that a peer sent
 * before closing: @buf is malloc()ed, @len bytes followed by a NUL. On
 * success @buf becomes res->body (the body moved to its start); on
 * failure it is freed and an errno value is returned. Pure, for tests.
 */
int httpc_parse_response(char *buf, size_t len, struct http_result *res);

/* Appends "key=value" to a query string, percent-encoding the value. */
int url_append_query(char *buf, size_t len, const char *key, const char *value);

#endif
