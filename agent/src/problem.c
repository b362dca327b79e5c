// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "problem.h"

struct status_title {
	unsigned int status;
	const char *title;
};

static const struct status_title titles[] = {
	{ 400, "Bad Request" },
	{ 401, "Unauthorized" },
	{ 403, "Forbidden" },
	{ 404, "Not Found" },
	{ 405, "Method Not Allowed" },
	{ 409, "Conflict" },
	{ 413, "Content Too Large" },
	{ 414, "URI Too Long" },
	{ 415, "Unsupported Media Type" },
	{ 422, "Unprocessable Content" },
	{ 431, "Request Header Fields Too Large" },
	{ 500, "Internal Server Error" },
	{ 502, "Bad Gateway" },
	{ 503, "Service Unavailable" },
	{ 504, "Gateway Timeout" },
};

const char *http_status_title(unsigned int status)
{
	unsigned int i;

	for (i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
		if (titles[i].status == status)
			return titles[i].title;
	return "Error";
}

/* Runtime messages and paths may hold any bytes: keep the JSON valid. */
static void printable_copy(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < len; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[i] = '\0';
}

json_t *problem_new(unsigned int status, const char *code, const char *detail,
		    const char *instance)
{
	char type[96], text[1024], where[512];
	json_t *p;

	printable_copy(text, sizeof(text),
		       detail ? detail : http_status_title(status));

	snprintf(type, sizeof(type), "urn:sigmig:problem:%s", code);
	p = json_pack("{s:s, s:s, s:i, s:s, s:s}",
		      "type", type,
		      "title", http_status_title(status),
		      "status", (int)status,
		      "detail", text,
		      "code", code);
	if (p && instance) {
		printable_copy(where, sizeof(where), instance);
		json_object_set_new(p, "instance", json_string(where));
	}
	return p;
}

int api_error_set(struct api_error *err, unsigned int status,
		  const char *code, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	err->code = code;
	err->cause[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
	va_end(ap);
	return -1;
}

json_t *problem_from_error(const struct api_error *err, const char *instance)
{
	char cause[sizeof(err->cause)];
	json_t *p;

	p = problem_new(err->status, err->code, err->detail, instance);
	if (p && err->cause[0]) {
		printable_copy(cause, sizeof(cause), err->cause);
		json_object_set_new(p, "cause", json_string(cause));
	}
	return p;
}
