// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests (TAP) of the agent's HTTP client: the checks a peer's reply
 * must pass (whole replies, as the fuzzer sees them), then the client
 * itself (libcurl) against a real local server that answers the same
 * replies, stalls, keeps silent or refuses early.
 *   test_httpc [--tls URL CA WRONG_CA]   with --tls also: an HTTPS peer
 *   (a sigmig-agent serving URL) verified against CA and refused with
 *   WRONG_CA; tests/host-api.sh runs that part.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* ---- the client against a real server ---- */

enum serve_mode { SERVE_REPLY, SERVE_SILENT, SERVE_NO_READ, SERVE_EARLY, SERVE_TWICE,
		  SERVE_DROP_SECOND, SERVE_SECOND_FRESH };

struct server {
	int fd;
	uint16_t port;
	enum serve_mode mode;
	const char *reply;
	unsigned int hold_ms;		/* how long SILENT/NO_READ keep the socket */
	size_t body_seen;		/* request body bytes read */
	unsigned int requests;		/* requests read, over every connection */
	unsigned int accepts;		/* connections accepted */
	pthread_t thread;
};

/*
 * Reads the request head and as much of its body as Content-Length says:
 * false when no head came.
 */
static bool read_request(struct server *s, int c)
{
	char buf[65536], *end, *cl;
	size_t len = 0, want = 0;
	ssize_t n;

	buf[0] = '\0';	/* a peer that sends nothing leaves no head */
	while ((n = read(c, buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)n;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end || len == sizeof(buf) - 1)
			break;
	}
	end = strstr(buf, "\r\n\r\n");
	if (!end)
		return false;
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl && cl < end)
		want = strtoul(cl + 17, NULL, 10);
	s->body_seen = len - (size_t)(end + 4 - buf);
	if (s->mode == SERVE_EARLY)
		return true;
	while (s->body_seen < want && (n = read(c, buf, sizeof(buf))) > 0)
		s->body_seen += (size_t)n;
	return true;
}

/*
 * Answers the first request on a connection, reads the second and closes
 * without a word; then takes, for a second, the connection a client that
 * sends it again would make, and answers there.
 */
static void drop_second(struct server *s, int c)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	read_request(s, c);
	(void)!write(c, s->reply, strlen(s->reply));
	read_request(s, c);
	s->requests = 2;
	close(c);
	if (poll(&p, 1, 1000) != 1 || (c = accept(s->fd, NULL, NULL)) < 0)
		return;
	if (read_request(s, c)) {
		s->requests++;
		(void)!write(c, s->reply, strlen(s->reply));
	}
	close(c);
}

/*
 * Answers the first request, then waits two seconds for a second
 * connection and answers there; the first is never read again, as a
 * connection the server is closing for being idle.
 */
static void second_fresh(struct server *s, int c)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	int c2;

	if (read_request(s, c)) {
		s->requests++;
		(void)!write(c, s->reply, strlen(s->reply));
	}
	if (poll(&p, 1, 2000) == 1 && (c2 = accept(s->fd, NULL, NULL)) >= 0) {
		s->accepts++;
		if (read_request(s, c2)) {
			s->requests++;
			(void)!write(c2, s->reply, strlen(s->reply));
		}
		close(c2);
	}
	close(c);
}

static void *serve_one(void *arg)
{
	struct server *s = arg;
	int c = accept(s->fd, NULL, NULL);

	if (c < 0)
		return NULL;
	s->accepts = 1;
	if (s->mode == SERVE_SECOND_FRESH) {
		second_fresh(s, c);
		return NULL;
	}
	if (s->mode == SERVE_DROP_SECOND) {
		drop_second(s, c);
		return NULL;
	}
	if (s->mode == SERVE_TWICE) {	/* two requests on one connection */
		read_request(s, c);
		(void)!write(c, s->reply, strlen(s->reply));
	}
	if (s->mode != SERVE_NO_READ)
		read_request(s, c);
	if (s->mode == SERVE_REPLY || s->mode == SERVE_EARLY || s->mode == SERVE_TWICE)
		(void)!write(c, s->reply, strlen(s->reply));
	else
		usleep(s->hold_ms * 1000);
	close(c);
	return NULL;
}

static void serve(struct server *s, enum serve_mode mode, const char *reply)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int small = 4096;

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->reply = reply;
	s->hold_ms = 3000;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->fd < 0)
		abort();
	/* A small receive buffer: a server that does not read stalls soon. */
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) || listen(s->fd, 1) ||
	    getsockname(s->fd, (struct sockaddr *)&a, &alen))
		abort();
	s->port = ntohs(a.sin_port);
	if (pthread_create(&s->thread, NULL, serve_one, s))
		abort();
}

static void serve_end(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->fd);
}

/* POSTs @len bytes to a server answering @mode/@reply. */
static int post_to(enum serve_mode mode, const char *reply, size_t len,
		   unsigned int timeout_ms, unsigned int stall_ms,
		   struct http_result *res)
{
	struct target_url t = { .host = "127.0.0.1" };
	uint8_t *body = calloc(1, len + 1);
	struct server s;
	int ret;

	if (!body)
		abort();
	serve(&s, mode, reply);
	t.port = s.port;
	ret = httpc_post(&t, "/v1/restore?x=1", "sekrit", "application/octet-stream",
			 body, len, timeout_ms, stall_ms, res);
	serve_end(&s);
	free(body);
	return ret;
}

/* A body made as it goes out: @len bytes, then an end, or @fail_with. */
struct source {
	size_t len, given, calls;
	size_t stop_at;		/* stop here: with @fail_with, or by ending */
	int fail_with;
};

static ssize_t give(void *arg, uint8_t *buf, size_t cap)
{
	struct source *src = arg;
	size_t end = src->stop_at ? src->stop_at : src->len;
	size_t n = end - src->given;

	src->calls++;
	if (!n && src->stop_at && src->fail_with)
		return -src->fail_with;
	if (n > cap)
		n = cap;
	if (n > 1000)
		n = 1000;	/* a source slower than the socket */
	memset(buf, 'i', n);
	src->given += n;
	return (ssize_t)n;
}

static int post_from(struct source *src, struct server *s, struct http_result *res)
{
	struct target_url t = { .host = "127.0.0.1" };
	struct httpc_conn c = { 0 };
	int ret;

	serve(s, SERVE_REPLY, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
	t.port = s->port;
	ret = httpc_conn_post_from(&c, &t, "/v1/restore", "sekrit",
				   "application/octet-stream", src->len, give, src,
				   5000, 1000, res);
	httpc_conn_close(&c);
	serve_end(s);
	return ret;
}

static void test_streamed_body(void)
{
	struct source src = { .len = 300000 };
	struct http_result res;
	struct server s;
	int ret;

	ret = post_from(&src, &s, &res);
	ok(ret == 0 && res.status == 201 && s.body_seen == src.len && src.calls >= 300,
	   "a body read as it goes out arrives whole (%zu of %zu bytes, %zu reads)",
	   s.body_seen, src.len, src.calls);
	http_result_free(&res);
	src = (struct source){ .len = 300000, .stop_at = 120000, .fail_with = EIO };
	ret = post_from(&src, &s, &res);
	ok(ret == -1 && !strcmp(res.failed_phase, "source") && res.error == EIO &&
	   s.body_seen < src.len,
	   "a source that fails stops the request: phase %s, %s; the peer saw %zu of %zu",
	   res.failed_phase, strerror(res.error), s.body_seen, src.len);
	http_result_free(&res);
	src = (struct source){ .len = 300000, .stop_at = 120000 };
	ret = post_from(&src, &s, &res);
	ok(ret == -1 && !strcmp(res.failed_phase, "source") && res.error == EPROTO &&
	   s.body_seen < src.len,
	   "a source that ends early stops the request: phase %s, %s; the peer saw %zu",
	   res.failed_phase, strerror(res.error), s.body_seen);
	http_result_free(&res);
}

static void test_live_replies(void)
{
	struct http_result res;

	ok(post_to(SERVE_REPLY, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
		   "Content-Length: 11\r\n\r\n{\"id\":\"w3\"}", 300000, 5000, 0, &res) == 0 &&
	   res.status == 201 && res.body_len == 11 && !strcmp(res.body, "{\"id\":\"w3\"}") &&
	   !strcmp(res.content_type, "application/json"),
	   "a 201 with its body and type, after a 300000-byte body (status %u)",
	   res.status);
	ok(res.connect_s >= 0 && res.send_s >= 0 && res.wait_s >= 0,
	   "its phases are never negative (connect %.4f send %.4f wait %.4f)",
	   res.connect_s, res.send_s, res.wait_s);
	http_result_free(&res);
	ok(post_to(SERVE_REPLY, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
		   10, 5000, 0, &res) && !strcmp(res.failed_phase, "receive") &&
	   res.status == 0 && !res.body,
	   "a reply cut short is a failure, not an answer (%s)", res.detail);
	ok(post_to(SERVE_REPLY, "", 10, 5000, 0, &res) &&
	   !strcmp(res.failed_phase, "receive") && res.status == 0,
	   "a peer that closes without a word: receive failed (%s)", res.detail);
	ok(post_to(SERVE_REPLY, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		   10, 5000, 0, &res) == 0 && res.status == 204,
	   "an interim 100 is passed over: the final status counts (%u)", res.status);
	http_result_free(&res);
}

/* The same malformed heads that the pure tests refuse, over a socket. */
static void test_live_bad_heads(void)
{
	static const char *const bad[] = {
		"HTTP/1.1 20/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 4294967496 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc",
		"HTTP/2 200\r\n\r\n",
		"garbage\r\n\r\n",
	};
	struct http_result res;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(post_to(SERVE_REPLY, bad[i], 100, 5000, 0, &res) &&
		   res.status == 0 && !res.body,
		   "malformed head %u from a live peer: no status, no body (%s: %s)",
		   i, res.failed_phase, res.detail);
}

static void test_live_bounds(void)
{
	struct http_result res;
	char *huge;
	size_t n = HTTPC_RESPONSE_MAX + 16, head;

	ok(post_to(SERVE_NO_READ, NULL, 64 << 20, 10000, 1000, &res) &&
	   !strcmp(res.failed_phase, "send") && res.error == ETIMEDOUT &&
	   res.send_s < 5,
	   "a peer that stops reading: the send stalls out after ~1 s (%.2f s)",
	   res.send_s);
	ok(post_to(SERVE_SILENT, NULL, 10, 1500, 1000, &res) &&
	   !strcmp(res.failed_phase, "receive") && res.error == ETIMEDOUT,
	   "a peer that never answers: the deadline ends the wait (%s %s)",
	   res.failed_phase, strerror(res.error));
	ok(post_to(SERVE_EARLY, "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\n"
		   "Content-Length: 2\r\n\r\nno", 8 << 20, 10000, 2000, &res) == 0 &&
	   res.status == 401,
	   "a peer that refuses from the headers: its answer, not a broken pipe "
	   "(%u, %s)", res.status, res.failed_phase ? res.detail : "");
	http_result_free(&res);
	huge = malloc(n + 64);
	if (!huge)
		abort();
	head = (size_t)snprintf(huge, 64, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
	memset(huge + head, 'x', n);
	huge[head + n] = '\0';
	ok(post_to(SERVE_REPLY, huge, 10, 10000, 0, &res) &&
	   res.error == EMSGSIZE && !res.body,
	   "a reply over %d bytes is refused (%s)", HTTPC_RESPONSE_MAX,
	   strerror(res.error));
	free(huge);
	ok(post_to(SERVE_REPLY, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		   10, 5000, 0, &res) == 0 && res.status == 200 && res.body_len == 2,
	   "one more request works after all that (%u)", res.status);
	http_result_free(&res);
}

/* Two requests on one httpc_conn, the first @first_method, the second a POST. */
struct pair {
	struct server s;
	struct http_result r1, r2;
	int a, b;
	unsigned int status1;	/* of the first */
	size_t body_len;
};

static void two_on_one_conn(struct pair *p, enum serve_mode mode,
			    const char *first_method, const char *second_path,
			    unsigned int idle_ms)
{
	struct target_url t = { .host = "127.0.0.1" };
	struct httpc_conn conn = { 0 };
	uint8_t body[1000] = { 0 };
	bool get = !strcmp(first_method, "GET");

	p->body_len = sizeof(body);
	serve(&p->s, mode, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	t.port = p->s.port;
	p->a = httpc_conn_request(&conn, first_method, &t, get ? "/v1/health" : "/v1/x?batch=1",
				  get ? NULL : "tok", get ? "application/json" :
				  "application/octet-stream", get ? NULL : body,
				  get ? 0 : sizeof(body), 3000, 1000, &p->r1);
	usleep(idle_ms * 1000);
	p->b = httpc_conn_post(&conn, &t, second_path, "tok", "application/octet-stream",
			       body, sizeof(body), 3000, 1000, &p->r2);
	httpc_conn_close(&conn);
	serve_end(&p->s);
	ok(!conn.curl, "%s then POST: the connection is closed after", first_method);
	p->status1 = p->a ? 0 : p->r1.status;
	if (!p->a)
		http_result_free(&p->r1);
}

/*
 * Requests on one httpc_conn share a connection: the server accepts once
 * and answers two requests on it (a second connect would find no one).
 */
static void test_kept_connection(void)
{
	struct pair p;

	two_on_one_conn(&p, SERVE_TWICE, "POST", "/v1/x?batch=2", 0);
	ok(p.a == 0 && p.b == 0 && p.status1 == 200 && p.r2.status == 200 &&
	   p.s.body_seen == p.body_len,
	   "two posts on one kept connection, one accept: %u %u (%s)",
	   p.status1, p.r2.status, p.b ? p.r2.detail : "");
	if (!p.b)
		http_result_free(&p.r2);
}

/*
 * The image goes on the connection a GET opened before the freeze: if it
 * dies unanswered, libcurl would post the image again on a new one, and
 * the target would restore it twice.
 */
static void test_not_sent_twice(void)
{
	struct pair p;

	two_on_one_conn(&p, SERVE_DROP_SECOND, "GET", "/v1/restore", 0);
	ok(p.a == 0 && p.status1 == 200 && p.b != 0 && p.s.requests == 2 &&
	   !strcmp(p.r2.failed_phase, "send"),
	   "a post whose kept connection dies unanswered is not sent again "
	   "(%u requests seen, %s: %s)", p.s.requests, p.b ? p.r2.failed_phase : "ok",
	   p.r2.detail);
	if (!p.b)
		http_result_free(&p.r2);
}

/*
 * A connection left idle as long as the pre-freeze one during a slow dump
 * is not reused: the server may be closing it, and a request lost in that
 * close is not sent again. The second request goes on a new connection.
 */
static void test_idle_not_reused(void)
{
	struct pair p;

	two_on_one_conn(&p, SERVE_SECOND_FRESH, "GET", "/v1/restore", 700);
	ok(p.a == 0 && p.status1 == 200 && p.b == 0 && p.r2.status == 200 &&
	   p.s.accepts == 2 && p.s.requests == 2,
	   "after 700 ms idle the next request goes on a new connection "
	   "(%u accepted, %u requests, %s)", p.s.accepts, p.s.requests,
	   p.b ? p.r2.detail : "answered");
	if (!p.b)
		http_result_free(&p.r2);
}

static void test_unreachable(void)
{
	struct target_url t = { .host = "127.0.0.1", .port = 1 };
	struct http_result res;

	ok(httpc_request("DELETE", &t, "/v1/workloads/w1", NULL, "application/json",
			 NULL, 0, 3000, 1000, &res) && !strcmp(res.failed_phase, "connect") &&
	   res.error == ECONNREFUSED,
	   "nothing listening: connect failed, ECONNREFUSED (%s)", res.detail);
	snprintf(t.host, sizeof(t.host), "no-such-host.invalid");
	ok(httpc_request("GET", &t, "/", NULL, "application/json", NULL, 0, 3000,
			 1000, &res) && !strcmp(res.failed_phase, "resolve"),
	   "an unknown host: resolve failed (%s)", res.detail);
}

/* An HTTPS peer (a sigmig-agent): verified with its CA, refused without. */
static void test_tls(const char *url, const char *ca, const char *wrong_ca)
{
	struct target_url t;
	struct http_result res;
	struct verror verr;

	ok(parse_target_url(url, &t, &verr) == 0 && t.tls, "%s is an https target", url);
	httpc_cleanup();
	httpc_init(ca);
	ok(httpc_request("GET", &t, "/v1/health", NULL, "application/json", NULL, 0,
			 5000, 2000, &res) == 0 && res.status == 200,
	   "HTTPS to the peer, verified against its CA: %u %s", res.status,
	   res.failed_phase ? res.detail : "");
	http_result_free(&res);
	httpc_cleanup();
	httpc_init(wrong_ca);
	ok(httpc_request("GET", &t, "/v1/health", NULL, "application/json", NULL, 0,
			 5000, 2000, &res) && !strcmp(res.failed_phase, "tls") &&
	   res.status == 0,
	   "the same peer against another CA: refused in the TLS phase (%s)",
	   res.detail);
	t.tls = false;
	ok(httpc_request("GET", &t, "/v1/health", NULL, "application/json", NULL, 0,
			 5000, 2000, &res) && res.status == 0,
	   "plain HTTP to the TLS port: no status (%s: %s)", res.failed_phase,
	   res.detail);
}

/* The whole of a small file, or NULL. */
static char *slurp(const char *path)
{
	char *buf = calloc(1, 65536);
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f && buf)
		n = fread(buf, 1, 65535, f);
	if (f)
		fclose(f);
	if (!n) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * A peer that asks for client certificates (--tls-client-ca): refused
 * (403) until the client presents its certificate, answered after.
 */
static void test_mtls(const char *url, const char *ca, const char *cert_file,
		      const char *key_file)
{
	char *cert = slurp(cert_file), *key = slurp(key_file);
	struct target_url t;
	struct http_result res;
	struct verror verr;

	ok(parse_target_url(url, &t, &verr) == 0 && t.tls && cert && key,
	   "%s is an https target; the certificate and key are read", url);
	httpc_cleanup();
	httpc_init(ca);
	ok(httpc_request("GET", &t, "/v1/health", NULL, "application/json", NULL, 0,
			 5000, 2000, &res) == 0 && res.status == 403 && res.body &&
	   strstr(res.body, "\"client_certificate_required\""),
	   "no client certificate: 403 client_certificate_required (%u %s)",
	   res.status, res.failed_phase ? res.detail : "");
	http_result_free(&res);
	ok(httpc_set_client_cert(cert ? cert : "", key ? key : "") == 0,
	   "the client certificate is set");
	ok(httpc_request("GET", &t, "/v1/health", NULL, "application/json", NULL, 0,
			 5000, 2000, &res) == 0 && res.status == 200,
	   "with the agent's certificate as client certificate: %u %s", res.status,
	   res.failed_phase ? res.detail : "");
	http_result_free(&res);
	free(cert);
	free(key);
}

int main(int argc, char **argv)
{
	test_valid_replies();
	test_bad_status_lines();
	test_bad_content_lengths();
	if (httpc_init(NULL))
		abort();
	test_live_replies();
	test_live_bad_heads();
	test_live_bounds();
	test_kept_connection();
	test_not_sent_twice();
	test_idle_not_reused();
	test_streamed_body();
	test_unreachable();
	if (argc == 5 && !strcmp(argv[1], "--tls"))
		test_tls(argv[2], argv[3], argv[4]);
	if (argc == 6 && !strcmp(argv[1], "--mtls"))
		test_mtls(argv[2], argv[3], argv[4], argv[5]);
	httpc_cleanup();
	return tap_done();
}
