/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HTTP layer on libmicrohttpd: one thread per connection, routing,
 * body collection under a cap, bearer authentication, replies and problem
 * documents, per-request metrics and access logs.
 */
#ifndef AGENT_SERVER_H
#define AGENT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <jansson.h>

#include "caps.h"
#include "config.h"
#include "problem.h"
#include "router.h"

#define REPLY_HEADERS_MAX 6

struct request {
	struct MHD_Connection *conn;
	const struct route *route;
	const struct route_method *rm;
	enum http_method method;
	char method_name[16];
	char path[256];
	char param[ROUTE_PARAM_MAX];
	char *body;
	size_t body_len, body_cap;
	uint64_t body_limit;
	bool too_large;
	bool answered;		/* a response was queued before the body */
	unsigned int status;
	double start;		/* clock_mono_s() when it arrived */
	void *upload;		/* the route's work on the body as it arrives */
	void (*upload_end)(void *upload);	/* if the handler did not take it */
};

struct reply_header {
	const char *name;
	char value[128];
};

struct reply {
	unsigned int status;
	json_t *json;			/* stolen */
	uint8_t *bytes;			/* malloc()ed, stolen; or NULL */
	size_t len;
	int file_fd;			/* stolen when has_file */
	bool has_file;
	uint64_t file_len;
	const char *content_type;
	struct reply_header headers[REPLY_HEADERS_MAX];
	unsigned int nheaders;
};

struct agent_context {
	const struct agent_config *cfg;
	struct kernel_caps caps;
	time_t started;
};

extern struct agent_context agent;

int server_start(void);
void server_stop(void);

/* Reply builders used by the handlers. */
void reply_json(struct reply *out, unsigned int status, json_t *json);
void reply_problem(struct reply *out, const struct api_error *err,
		   const struct request *req);
void reply_error(struct reply *out, const struct request *req,
		 unsigned int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void reply_bytes(struct reply *out, unsigned int status, const char *type,
		 uint8_t *bytes, size_t len);
void reply_file(struct reply *out, unsigned int status, const char *type,
		int fd, uint64_t len);
void reply_header(struct reply *out, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Query string access. */
const char *request_query(const struct request *req, const char *key);
typedef int (*query_visitor)(void *cls, const char *key, const char *value);
void request_query_each(const struct request *req, query_visitor fn, void *cls);
/* The Content-Length the client announced: false when none (or not a size). */
bool request_declared_length(const struct request *req, uint64_t *n);

#endif
