/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The route table: URL patterns with one optional {id} segment, the
 * methods each accepts, whether a body is expected, and the handler.
 * Matching is pure so that it is unit-tested and fuzzed.
 */
#ifndef AGENT_ROUTER_H
#define AGENT_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#define ROUTE_PARAM_MAX	32

enum http_method {
	M_GET = 1 << 0,
	M_POST = 1 << 1,
	M_DELETE = 1 << 2,
	M_HEAD = 1 << 3,
	M_PUT = 1 << 4,
	M_PATCH = 1 << 5,
	M_OPTIONS = 1 << 6,
	M_OTHER = 1 << 7,
};

enum body_kind {
	BODY_NONE,	/* a body is read and ignored, within the JSON cap */
	BODY_JSON,
	BODY_IMAGE,
};

struct request;
struct reply;
typedef void (*route_handler)(struct request *req, struct reply *out);

/* Beyond POST and DELETE: a read that tells about a workload or costs. */
enum route_auth {
	AUTH_BY_METHOD,
	AUTH_ALWAYS,
};

/* A part of the body arrived (req->body holds all of it so far). */
typedef void (*route_body_hook)(struct request *req);

struct route_method {
	enum http_method method;
	route_handler handler;
	enum body_kind body;
	enum route_auth auth;
	route_body_hook on_body;	/* NULL: the handler sees it whole */
};

struct route {
	const char *pattern;		/* also the metrics label */
	struct route_method methods[3];
};

enum http_method http_method_parse(const char *name);

/*
 * Finds the route of @path. Returns NULL when none matches; otherwise the
 * route, with the {id} segment (if any) copied into @param.
 */
const struct route *route_match(const char *path, char *param,
				size_t param_len);

/* The entry for @method (HEAD uses GET's), or NULL: 405. */
const struct route_method *route_method(const struct route *route,
					enum http_method method);

/* "GET, HEAD, POST" for the Allow header. */
void route_allow(const struct route *route, char *buf, size_t len);

/* POST and DELETE change state and need the bearer token. */
bool method_is_mutating(enum http_method method);

#endif
