/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A query string split into decoded key=value pairs as libmicrohttpd hands
 * them to the agent (MHD_GET_ARGUMENT_KIND): '&' between pairs, the first
 * '=' between key and value ("" when absent), '+' is a space, %XX a byte.
 * For the fuzzers and tests: the agent only ever sees the decoded pairs.
 */
#ifndef AGENT_TESTS_FUZZ_QUERY_H
#define AGENT_TESTS_FUZZ_QUERY_H

#include <stdlib.h>
#include <string.h>

typedef int (*fuzz_query_visitor)(void *cls, const char *key, const char *value);

static inline int fuzz_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* In place; a decoded %00 ends the C string, as it does for MHD's callers. */
static inline void fuzz_unescape(char *s)
{
	char *out = s;
	int hi, lo;

	for (; *s; s++) {
		if (*s == '+') {
			*out++ = ' ';
		} else if (*s == '%' && (hi = fuzz_hex(s[1])) >= 0 &&
			   (lo = fuzz_hex(s[2])) >= 0) {
			*out++ = (char)(hi << 4 | lo);
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Calls @fn for each pair of @query (not modified) until it returns non-zero. */
static inline int fuzz_query_each(const char *query, fuzz_query_visitor fn,
				  void *cls)
{
	char *copy = strdup(query), *pair, *save = NULL, *eq;
	const char *value;
	int ret = 0;

	if (!copy)
		return -1;
	for (pair = strtok_r(copy, "&", &save); pair && !ret;
	     pair = strtok_r(NULL, "&", &save)) {
		eq = strchr(pair, '=');
		value = "";
		if (eq) {
			*eq = '\0';
			value = eq + 1;
			fuzz_unescape(eq + 1);
		}
		fuzz_unescape(pair);
		ret = fn(cls, pair, value);
	}
	free(copy);
	return ret;
}

#endif
