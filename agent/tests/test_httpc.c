// SPDX-License-Identifier: GPL-2.0
/* Host unit tests (TAP) of httpc's parsing of a peer's reply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "tap.h"

/* Parses @reply as httpc would; returns 0 or the errno, fills @res. */
static int parse(const char *reply, struct http_result *res)
{
	size_t len = strlen(reply);
	char *buf = malloc(len + 1);

	memset(res, 0, sizeof(*res));
	if (!buf)
		abort();
	memcpy(buf, reply, len + 1);
	return httpc_parse_response(buf, len, res);
}

static void test_valid_replies(void)
{
	struct http_result res;

	ok(parse("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
		 "Content-Length: 13\r\n\r\n{\"id\":\"w3\"}\r\n", &res) == 0 &&
	   res.status == 201 && res.body_len == 13 &&
	   !strcmp(res.content_type, "application/json"),
	   "a 201 with its body and type");
	http_result_free(&res);
	ok(parse("HTTP/1.0 204\r\n\r\n", &res) == 0 && res.status == 204 &&
	   res.body_len == 0, "a status line without a reason phrase");
	http_result_free(&res);
	ok(parse("HTTP/1.1 200 OK\r\ncontent-length:  2 \r\n\r\nhi", &res) == 0 &&
	   res.body_len == 2, "Content-Length in any case, blanks around it");
	http_result_free(&res);
	ok(parse("HTTP/1.1 200 OK\r\n\r\nuntil the close", &res) == 0 &&
	   res.body_len == 15, "no Content-Length: the body runs to the close");
	http_result_free(&res);
	ok(parse("", &res) == ECONNRESET, "nothing at all: the peer reset");
	ok(parse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", &res) ==
	   EPROTO && res.status == 0 && !res.body, "a body cut short");
}

/* Found by fuzz_peer_reply: the status was whatever sscanf("%u") read. */
static void test_bad_status_lines(void)
{
	static const char *const bad[] = {
		"HTTP/1.1 20/1.1 200 OK\r\n\r\n",	/* read as 20 */
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 4294967496 OK\r\n\r\n",	/* wrapped to 200 */
		"HTTP/1.1 -4294967096 OK\r\n\r\n",	/* likewise */
		"HTTP/1.1  200 OK\r\n\r\n",
		"HTTP/1.1 +200 OK\r\n\r\n",
		"HTTP/1.1 200OK\r\n\r\n",
		"HTTP/1.1 099 OK\r\n\r\n",
		"HTTP/1.x 200 OK\r\n\r\n",
		"\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/2 200\r\n\r\n",
	};
	struct http_result res;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ok(parse(bad[i], &res) == EPROTO && !res.body,
		   "malformed status line %u refused (status read: %u)", i,
		   res.status);
		http_result_free(&res);
	}
}

/* Found by fuzz_peer_reply: strtol() took any prefix, and -1 meant none. */
static void test_bad_content_lengths(void)
{
	static const char *const bad[] = {
		"Content-Length: -1\r\n\r\nabc",
		"Content-Length: 3x\r\n\r\nabc",
		"Content-Length: x\r\n\r\n",
		"Content-Length: +3\r\n\r\nabc",
		"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
		"Content-Length: 99999999999999999999999\r\n\r\nabc",
		"Content-Length:\r\n\r\n",
	};
	struct http_result res;
	char reply[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(reply, sizeof(reply), "HTTP/1.1 200 OK\r\n%s", bad[i]);
		ok(parse(reply, &res) == EPROTO && !res.body,
		   "malformed Content-Length %u refused", i);
		http_result_free(&res);
	}
	ok(parse("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n"
		 "\r\nabc", &res) == 0 && res.body_len == 3,
	   "the same Content-Length twice is one length");
	http_result_free(&res);
	ok(parse("HTTP/1.1 200 OK\r\nContent-Length: 0000000000000003\r\n"
		 "Content-Length: 3\r\n\r\nabc", &res) == 0 &&
	   res.body_len == 3,
	   "lengths are compared as numbers: 0000000000000003 is 3");
	http_result_free(&res);
}

int main(void)
{
	test_valid_replies();
	test_bad_status_lines();
	test_bad_content_lengths();
	return tap_done();
}
