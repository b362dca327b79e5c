// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: a peer agent's reply, whole (everything up to the
 * peer's close), through httpc_parse_response(), whose head checks are the
 * ones the client applies to each line libcurl hands over, and
 * then what migrate.c makes of the body: the held copy's id from a 2xx,
 * the problem's code and detail otherwise.
 *
 * Beyond no crash and no leak: a reply that parses has a three-digit
 * status read from a well-formed status line, a NUL-terminated body of
 * the length the peer declared, and a Content-Type that fits.
 */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_reply.h"
#include "problem.h"
#include "validate.h"

/* "HTTP/1.<digit> <3 digits>" then the end of the line or a space. */
static unsigned int status_of(const char *line)
{
	const char *p = line;

	if (strncmp(p, "HTTP/1.", 7) || !isdigit((unsigned char)p[7]) ||
	    p[8] != ' ')
		return 0;
	p += 9;
	if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]) ||
	    !isdigit((unsigned char)p[2]) || (p[3] && p[3] != ' '))
		return 0;
	return (unsigned int)((p[0] - '0') * 100 + (p[1] - '0') * 10 + p[2] - '0');
}

/*
 * The value of one Content-Length line: -2 one that is not 1*DIGIT
 * (optional blanks around it), so that no body length can be right.
 * Values are compared as numbers ("002" and "2" agree); more than 15
 * significant digits is a length no reply here can have, LLONG_MAX.
 */
static long long length_value(const char *v)
{
	size_t digits;
	long long n;
	char *end;

	v += strspn(v, " \t");
	if (!isdigit((unsigned char)*v))
		return -2;
	v += strspn(v, "0");
	digits = strspn(v, "0123456789");
	end = (char *)v + digits;
	end += strspn(end, " \t");
	if (*end)
		return -2;
	if (digits > 15)
		return LLONG_MAX;
	n = digits ? strtoll(v, NULL, 10) : 0;
	return n;
}

struct model {
	unsigned int status;	/* of the final head */
	long long clen;		/* -1 none, -2 none can be right */
};

/*
 * What the reply says, read independently of http_reply.c: lines end at
 * LF (CRs before it dropped), a head ends at an empty line, a 1xx head is
 * followed by the final one; two Content-Lengths must agree.
 */
static struct model model_of(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *nl;
	struct model m = { 0, -1 };
	bool first = true;
	char line[8192];
	long long n;
	size_t len;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		len = (size_t)(nl - p);
		while (len && p[len - 1] == '\r')
			len--;
		if (len >= sizeof(line))
			len = sizeof(line) - 1;	/* long lines fail to parse anyway */
		memcpy(line, p, len);
		line[len] = '\0';
		p = nl + 1;
		if (first) {
			m.status = status_of(line);
			m.clen = -1;
			first = false;
		} else if (!len) {
			if (m.status >= 200)
				break;
			first = true;
		} else if (!strncasecmp(line, "Content-Length:", 15)) {
			n = length_value(line + 15);
			m.clen = m.clen == -1 || m.clen == n ? n : -2;
		}
	}
	return m;
}

/* What migrate.c does with a reply that parsed. */
static void interpret(const struct http_result *res)
{
	struct api_error err;
	const char *id, *code, *detail;
	json_t *doc, *p;
	char *text;

	doc = res->body ? json_loads(res->body, 0, NULL) : NULL;
	id = json_string_value(json_object_get(doc, "id"));
	if (id && workload_id_valid(id) && strlen(id) > 10)
		abort();
	code = json_string_value(json_object_get(doc, "code"));
	detail = json_string_value(json_object_get(doc, "detail"));
	api_error_set(&err, 502, "target_rejected", "the target answered %u: %s",
		      res->status, detail ? detail : "(no problem document)");
	snprintf(err.cause, sizeof(err.cause), "%s", code ? code : "");
	p = problem_from_error(&err, "/v1/workloads/w1/migrate");
	text = p ? json_dumps(p, JSON_COMPACT) : NULL;
	if (!text)
		abort();
	free(text);
	json_decref(p);
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_result res;
	char *buf = malloc(size + 1);
	struct model m;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	m = model_of(data, size);
	memset(&res, 0, sizeof(res));
	if (httpc_parse_response(buf, size, &res)) {
		/* buf is freed; a reply cut short must not look answered */
		if (res.body)
			abort();
		return 0;
	}
	if (!res.body || res.body_len > size || res.body[res.body_len] ||
	    !memchr(res.content_type, '\0', sizeof(res.content_type)))
		abort();
	if (memcmp(res.body, data + size - res.body_len, res.body_len))
		abort();	/* the body is the reply's tail */
	if (res.status != m.status || m.status < 200)
		abort();	/* a status the status line does not say */
	if (m.clen == -2 || (m.clen >= 0 && (size_t)m.clen != res.body_len))
		abort();	/* a body the declared length does not describe */
	interpret(&res);
	http_result_free(&res);
	return 0;
}
