// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_reply.h"

void http_head_init(struct http_head *h)
{
	memset(h, 0, sizeof(*h));
	h->content_length = -1;
}

/* "HTTP/1.<digit> <3 digits>", then a reason phrase or nothing. */
static int parse_status_line(const char *line, unsigned int *status)
{
	const char *code = line + 9;

	if (strncmp(line, "HTTP/1.", 7) || !isdigit((unsigned char)line[7]) ||
	    line[8] != ' ' || !isdigit((unsigned char)code[0]) ||
	    !isdigit((unsigned char)code[1]) ||
	    !isdigit((unsigned char)code[2]) || (code[3] && code[3] != ' '))
		return -1;
	*status = (unsigned int)((code[0] - '0') * 100 + (code[1] - '0') * 10 +
				 (code[2] - '0'));
	return *status < 100 ? -1 : 0;
}

/* 1*DIGIT with blanks after it; a second one must say the same. */
static int parse_content_length(const char *text, long *clen)
{
	char *end;
	long n;

	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno)
		return -1;
	end += strspn(end, " \t");
	if (*end || (*clen >= 0 && *clen != n))
		return -1;
	*clen = n;
	return 0;
}

static int header_field(struct http_head *h, char *line)
{
	char *colon = strchr(line, ':');

	if (!colon)
		return 0;
	*colon++ = '\0';
	colon += strspn(colon, " \t");
	if (strcasecmp(line, "Content-Length") == 0)
		return parse_content_length(colon, &h->content_length) ? EPROTO : 0;
	if (strcasecmp(line, "Content-Type") == 0)
		snprintf(h->content_type, sizeof(h->content_type), "%s", colon);
	return 0;
}

int http_head_line(struct http_head *h, const char *line, size_t len)
{
	char text[8192];

	if (h->complete)
		return EPROTO;
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len >= sizeof(text) || memchr(line, '\0', len))
		return EPROTO;
	memcpy(text, line, len);
	text[len] = '\0';
	if (!h->started) {
		h->started = true;
		return parse_status_line(text, &h->status) ? EPROTO : 0;
	}
	if (len)
		return header_field(h, text);
	if (h->status < 200)
		http_head_init(h);	/* 1xx: the final head follows */
	else
		h->complete = true;
	return 0;
}

static void fail_parse(char *buf, struct http_result *res)
{
	free(buf);
	res->status = 0;
}

int httpc_parse_response(char *buf, size_t len, struct http_result *res)
{
	struct http_head head;
	char *line = buf, *nl;

	http_head_init(&head);
	while (!head.complete) {
		nl = memchr(line, '\n', len - (size_t)(line - buf));
		if (!nl) {
			fail_parse(buf, res);
			return len ? EPROTO : ECONNRESET;
		}
		if (http_head_line(&head, line, (size_t)(nl + 1 - line))) {
			fail_parse(buf, res);
			return EPROTO;
		}
		line = nl + 1;
	}
	res->status = head.status;
	snprintf(res->content_type, sizeof(res->content_type), "%s",
		 head.content_type);
	res->body_len = len - (size_t)(line - buf);
	if (head.content_length >= 0 &&
	    (size_t)head.content_length != res->body_len) {
		fail_parse(buf, res);
		return EPROTO;	/* cut in the middle of the reply */
	}
	memmove(buf, line, res->body_len + 1);
	res->body = buf;
	return 0;
}

void http_result_free(struct http_result *res)
{
	free(res->body);
	res->body = NULL;
}

int url_append_query(char *buf, size_t len, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t used = strlen(buf);
	const unsigned char *p;
	int n;

	n = snprintf(buf + used, len - used, "%s%s=", strchr(buf, '?') ? "&" : "?",
		     key);
	if (n < 0 || (size_t)n >= len - used)
		return -1;
	used += (size_t)n;
	for (p = (const unsigned char *)value; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || strchr("-._~", *p);

		if (used + 4 >= len)
			return -1;
		if (plain) {
			buf[used++] = (char)*p;
		} else {
			buf[used++] = '%';
			buf[used++] = hex[*p >> 4];
			buf[used++] = hex[*p & 15];
		}
	}
	buf[used] = '\0';
	return 0;
}
