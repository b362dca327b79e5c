// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target over everything the agent parses from a client: the
 * first byte picks the parser, the rest is its input. Outputs are
 * serialized so that invalid JSON values would be caught as well.
 *
 * A first byte with bit 3 set takes a whole request instead,
 *	METHOD SP PATH [? QUERY] LF *(NAME: VALUE LF) LF BODY
 * through the decisions server.c makes from the request line and headers
 * (route, 405 and its Allow, bearer token, declared size, media type) and
 * on to the body or query parser of the route, as the handler would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_query.h"

#include "problem.h"
#include "router.h"
#include "siginfo_json.h"
#include "validate.h"

static void dump_and_free(json_t *o)
{
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	free(text);
	json_decref(o);
}

static void fuzz_bodies(int which, const char *s, size_t n)
{
	struct migrate_request mr;
	struct start_request sr;
	struct verror err;

	if (which == 0) {
		if (parse_start_request(s, n, &sr, &err) == 0)
			start_request_free(&sr);
		else
			dump_and_free(problem_new(400, err.code, err.detail, NULL));
	} else if (parse_migrate_request(s, n, &mr, &err)) {
		dump_and_free(problem_new(400, err.code, err.detail, NULL));
	}
}

static void fuzz_strings(const char *s)
{
	char param[ROUTE_PARAM_MAX], allow[64], addr[64];
	const struct route *r;
	struct target_url url;
	struct verror err;
	uint16_t port;
	uint64_t size;

	r = route_match(s, param, sizeof(param));
	if (r) {
		route_method(r, M_GET);
		route_allow(r, allow, sizeof(allow));
	}
	workload_id_valid(param);
	program_name_valid(s);
	parse_target_url(s, &url, &err);
	parse_listen(s, addr, sizeof(addr), &port);
	parse_size(s, &size);
	bearer_token_matches(s, "s3cret");
	dump_and_free(problem_new(404, "not_found", s, s));
}

struct fuzz_request {
	char *method, *path, *query, *body;
	const char *auth, *clen, *ctype;
	size_t body_len;
};

/* Splits @s (modified) as the header comment says; false if it is not one. */
static bool split_request(char *s, size_t n, struct fuzz_request *r)
{
	char *line, *end, *colon;

	memset(r, 0, sizeof(*r));
	end = memchr(s, '\n', n);
	if (!end)
		return false;
	*end = '\0';
	r->method = s;
	r->path = strchr(s, ' ');
	if (!r->path)
		return false;
	*r->path++ = '\0';
	r->query = strchr(r->path, '?');
	if (r->query)
		*r->query++ = '\0';
	for (line = end + 1; (size_t)(line - s) < n; line = end + 1) {
		end = memchr(line, '\n', n - (size_t)(line - s));
		if (!end || end == line) {
			r->body = end ? end + 1 : s + n;
			break;
		}
		*end = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon++ = '\0';
		colon += strspn(colon, " \t");
		if (!strcasecmp(line, "Authorization"))
			r->auth = colon;
		else if (!strcasecmp(line, "Content-Length"))
			r->clen = colon;
		else if (!strcasecmp(line, "Content-Type"))
			r->ctype = colon;
	}
	if (!r->body)
		r->body = s + n;
	r->body_len = n - (size_t)(r->body - s);
	return true;
}

static int restore_pair(void *cls, const char *key, const char *value)
{
	return restore_query_add(cls, key, value);
}

static void refuse(unsigned int status, const char *code, const char *detail,
		   const char *path)
{
	json_t *p = problem_new(status, code, detail, path);

	if (!p)
		abort();
	dump_and_free(p);
}

static void route_body(const struct route *route, const struct route_method *rm,
		       struct fuzz_request *r)
{
	struct restore_query q = { .failed = false };

	if (rm->body == BODY_JSON) {
		if (!strcmp(route->pattern, "/v1/workloads"))
			fuzz_bodies(0, r->body, r->body_len);
		else if (strstr(route->pattern, "/migrate"))
			fuzz_bodies(1, r->body, r->body_len);
	} else if (!strcmp(route->pattern, "/v1/restore")) {
		if (r->query)
			fuzz_query_each(r->query, restore_pair, &q);
		if (q.failed)
			refuse(400, q.err.code, q.err.detail, r->path);
		else if (q.program[0] && !program_name_valid(q.program))
			abort();
		restore_query_free(&q);
	}
}

/* on_headers() and dispatch() of server.c, minus libmicrohttpd. */
static void fuzz_request_layer(char *s, size_t n)
{
	char param[ROUTE_PARAM_MAX], allow[64], detail[96];
	const struct route_method *rm;
	const struct route *route;
	enum http_method method;
	struct fuzz_request r;
	uint64_t declared;

	if (!split_request(s, n, &r))
		return;
	method = http_method_parse(r.method);
	route = route_match(r.path, param, sizeof(param));
	if (!route) {
		refuse(404, "not_found", "no such endpoint", r.path);
		return;
	}
	if (strchr(route->pattern, '{') && !param[0])
		abort();	/* an {id} route matched without an id */
	rm = route_method(route, method);
	if (!rm) {
		route_allow(route, allow, sizeof(allow));
		if (!allow[0] || strlen(allow) >= sizeof(allow))
			abort();
		snprintf(detail, sizeof(detail), "%s allows %s", route->pattern,
			 allow);
		refuse(405, "method_not_allowed", detail, r.path);
		return;
	}
	if ((method_is_mutating(method) || rm->auth == AUTH_ALWAYS) &&
	    !bearer_token_matches(r.auth, "s3cret"))
		return;		/* 401 */
	if (r.clen && parse_size(r.clen, &declared) == 0 && declared > 1 << 20)
		return;		/* 413 */
	if (rm->body == BODY_JSON && !json_media_type_ok(r.ctype, false))
		return;		/* 415 before the body */
	if (rm->body == BODY_JSON && !json_media_type_ok(r.ctype, r.body_len))
		return;		/* 415 after it */
	if (param[0])
		workload_id_valid(param);
	route_body(route, rm, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t raw[SI_MAX_SIZE] = { 0 };
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (data[0] & 8) {
		fuzz_request_layer(s, size - 1);
		free(s);
		return 0;
	}
	switch (data[0] % 4) {
	case 0:
	case 1:
		fuzz_bodies(data[0] % 4, s, size - 1);
		break;
	case 2:
		fuzz_strings(s);
		break;
	default:
		memcpy(raw, data + 1, size - 1 < sizeof(raw) ? size - 1 : sizeof(raw));
		dump_and_free(siginfo_to_json(raw, data[0] & 4 ? SIGINFO_ABI_32 :
					      SIGINFO_ABI_64));
	}
	free(s);
	return 0;
}
