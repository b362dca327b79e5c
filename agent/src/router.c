// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include <stdio.h>

#include "router.h"

/* routes.c */
extern const struct route agent_routes[];

static const struct {
	const char *name;
	enum http_method method;
} method_names[] = {
	{ "GET", M_GET }, { "POST", M_POST }, { "DELETE", M_DELETE },
	{ "HEAD", M_HEAD }, { "PUT", M_PUT }, { "PATCH", M_PATCH },
	{ "OPTIONS", M_OPTIONS },
};

enum http_method http_method_parse(const char *name)
{
	unsigned int i;

	for (i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++)
		if (strcmp(name, method_names[i].name) == 0)
			return method_names[i].method;
	return M_OTHER;
}

bool method_is_mutating(enum http_method method)
{
	return method == M_POST || method == M_DELETE || method == M_PUT ||
	       method == M_PATCH;
}

/* Compares one pattern segment; "{id}" captures a non-empty segment. */
static bool segment_matches(const char *pat, size_t plen, const char *seg,
			    size_t slen, char *param, size_t param_len)
{
	if (plen == 4 && memcmp(pat, "{id}", 4) == 0) {
		if (slen == 0 || slen >= param_len)
			return false;
		memcpy(param, seg, slen);
		param[slen] = '\0';
		return true;
	}
	return plen == slen && memcmp(pat, seg, slen) == 0;
}

static bool pattern_matches(const char *pattern, const char *path, char *param,
			    size_t param_len)
{
	size_t plen, slen;

	for (;;) {
		if (*pattern != '/' || *path != '/')
			return false;
		pattern++;
		path++;
		plen = strcspn(pattern, "/");
		slen = strcspn(path, "/");
		if (!segment_matches(pattern, plen, path, slen, param, param_len))
			return false;
		pattern += plen;
		path += slen;
		if (!*pattern || !*path)
			return !*pattern && !*path;
	}
}

const struct route *route_match(const char *path, char *param,
				size_t param_len)
{
	const struct route *r;

	param[0] = '\0';
	for (r = agent_routes; r->pattern; r++)
		if (pattern_matches(r->pattern, path, param, param_len))
			return r;
	param[0] = '\0';
	return NULL;
}

const struct route_method *route_method(const struct route *route,
					enum http_method method)
{
	unsigned int i;

	if (method == M_HEAD)
		method = M_GET;
	for (i = 0; i < 3 && route->methods[i].handler; i++)
		if (route->methods[i].method == method)
			return &route->methods[i];
	return NULL;
}

void route_allow(const struct route *route, char *buf, size_t len)
{
	unsigned int i, j;
	size_t used = 0;

	buf[0] = '\0';
	for (i = 0; i < 3 && route->methods[i].handler; i++) {
		for (j = 0; j < sizeof(method_names) / sizeof(method_names[0]); j++) {
			if (method_names[j].method != route->methods[i].method)
				continue;
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
						 "%s%s", used ? ", " : "",
						 method_names[j].name);
			if (route->methods[i].method == M_GET)
				used += (size_t)snprintf(buf + used,
							 used < len ? len - used : 0,
							 ", HEAD");
		}
	}
}
