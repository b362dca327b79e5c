/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RFC 9457 problem details. Every error the agent returns is one of these,
 * with a stable machine-readable "code" next to the human "detail".
 */
#ifndef AGENT_PROBLEM_H
#define AGENT_PROBLEM_H

#include <jansson.h>

#define PROBLEM_CONTENT_TYPE "application/problem+json"

/* Short, stable title of an HTTP status ("Not Found"). */
const char *http_status_title(unsigned int status);

/*
 * {"type":"urn:sigmig:problem:<code>","title":...,"status":...,
 *  "detail":...,"code":...,"instance":...}; @instance may be NULL.
 * Returns NULL on allocation failure.
 */
json_t *problem_new(unsigned int status, const char *code, const char *detail,
		    const char *instance);

/*
 * An error on its way to becoming a problem response: filled deep in the
 * workload and migration code, rendered once by the HTTP layer.
 */
struct api_error {
	unsigned int status;
	const char *code;		/* static string */
	char detail[512];
	char cause[64];			/* runtime or peer error code, or "" */
};

int api_error_set(struct api_error *err, unsigned int status,
		  const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* problem_new() plus "cause" when set. */
json_t *problem_from_error(const struct api_error *err, const char *instance);

#endif
