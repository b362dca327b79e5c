// SPDX-License-Identifier: GPL-2.0
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "httpc.h"

static char *ca_path;	/* NULL: libcurl's default CA store */
static char *client_cert, *client_key;	/* PEM, or NULL: none presented */

int httpc_init(const char *ca_file)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -1;
	if (ca_file) {
		ca_path = strdup(ca_file);
		if (!ca_path)
			return -1;
	}
	return 0;
}

int httpc_set_client_cert(const char *cert_pem, const char *key_pem)
{
	client_cert = strdup(cert_pem);
	client_key = strdup(key_pem);
	return client_cert && client_key ? 0 : -1;
}

void httpc_cleanup(void)
{
	free(ca_path);
	ca_path = NULL;
	free(client_cert);
	if (client_key)
		explicit_bzero(client_key, strlen(client_key));
	free(client_key);
	client_cert = client_key = NULL;
	curl_global_cleanup();
}

/* A request's body: @len bytes at @data, or from @reader as it goes out. */
struct httpc_body {
	const uint8_t *data;
	size_t len;
	httpc_reader reader;
	void *arg;
};

/* One request's state, shared by libcurl's callbacks. */
struct transfer {
	CURL *curl;
	struct http_result *res;
	struct http_head head;
	size_t cap;			/* of res->body */
	size_t upload_len;
	httpc_reader reader;		/* the body, read as it goes out */
	void *reader_arg;
	size_t read_len;		/* of it so far */
	unsigned int stall_ms;
	double t0;
	double started;			/* the request began to go out */
	double sent_at;			/* its whole body was out */
	double last_sent;		/* a body byte last went out */
	curl_off_t last_ul;
	int error;			/* a callback's reason to stop */
	int sends;			/* times the request went out */
	const char *phase;
	long oserr;			/* errno of libcurl's failed call */
	char *unread;			/* what was left on the socket at its close */
	size_t unread_len, unread_cap;
};

#define UNREAD_MAX	(64 << 10)

static size_t stop(struct transfer *x, const char *phase, int err)
{
	x->phase = phase;
	x->error = err;
	return 0;
}

static size_t on_header(char *ptr, size_t size, size_t n, void *arg)
{
	struct transfer *x = arg;

	if (http_head_line(&x->head, ptr, size * n))
		return stop(x, "receive", EPROTO);
	return size * n;
}

static size_t on_body(char *ptr, size_t size, size_t n, void *arg)
{
	struct transfer *x = arg;
	struct http_result *res = x->res;
	int err;

	err = buf_append(&res->body, &res->body_len, &x->cap, ptr, size * n,
			 HTTPC_RESPONSE_MAX);
	return err ? stop(x, "receive", -err) : size * n;
}

/*
 * A body read as it goes out: a source that fails or ends early stops
 * the request (phase "source"), and the peer sees a body cut short.
 */
static size_t on_read(char *ptr, size_t size, size_t n, void *arg)
{
	struct transfer *x = arg;
	ssize_t got = x->reader(x->reader_arg, (uint8_t *)ptr, size * n);

	if (got < 0) {
		stop(x, "source", (int)-got);
		return CURL_READFUNC_ABORT;
	}
	if (!got && x->read_len < x->upload_len) {
		stop(x, "source", EPROTO);
		return CURL_READFUNC_ABORT;
	}
	x->read_len += (size_t)got;
	return (size_t)got;
}

/*
 * The stall bound holds while the body goes out (connected, not all of
 * it sent): the peer then has no reason to stop reading. Waiting for its
 * answer afterwards (a restore) is bounded by the deadline alone.
 */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct transfer *x = arg;
	double now = clock_mono_s();
	curl_off_t pretransfer = 0;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	if (x->sent_at)
		return 0;
	if (!x->started) {
		curl_easy_getinfo(x->curl, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
		if (pretransfer <= 0)
			return 0;
		x->started = now;
		x->last_sent = now;
	}
	if ((size_t)ulnow >= x->upload_len) {
		x->sent_at = now;
		return 0;
	}
	if (ulnow > x->last_ul) {
		x->last_ul = ulnow;
		x->last_sent = now;
	} else if (x->stall_ms && (now - x->last_sent) * 1000 >= x->stall_ms) {
		stop(x, "send", ETIMEDOUT);
		return 1;
	}
	return 0;
}

/*
 * libcurl sends a request again, on a new connection, when the kept one
 * it went out on died before any byte of the answer: the peer may have
 * taken it all the same (a restore, a thaw), and a request must reach it
 * at most once. The second send is refused: the request fails, and the
 * caller, which knows whether a retry is safe, decides.
 */
static int on_send(void *arg, char *ip, char *local_ip, int port, int local_port)
{
	struct transfer *x = arg;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	if (++x->sends == 1)
		return CURL_PREREQFUNC_OK;
	stop(x, "send", ECONNRESET);
	return CURL_PREREQFUNC_ABORT;
}

/*
 * A peer that refuses from the headers (401, 413, 503) answers and closes
 * while the body is still going out; its close with our bytes unread
 * resets the connection, libcurl's send fails and it never reads the
 * answer. The answer is still queued on the socket: keep it, as it says
 * more than the reset (over TLS it is ciphertext and stays unused).
 */
static int on_close(void *arg, curl_socket_t fd)
{
	struct httpc_conn *c = arg;
	struct transfer *x = c->current;	/* NULL: closed between requests */
	char chunk[4096];
	ssize_t n;

	while (x && !x->head.started &&
	       (n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0 &&
	       !buf_append(&x->unread, &x->unread_len, &x->unread_cap, chunk,
			   (size_t)n, UNREAD_MAX))
		;
	return close(fd);
}

/* The early answer on_close kept, if it is a whole reply: into res. */
static bool take_early_answer(struct transfer *x, bool tls)
{
	char *buf = x->unread;

	x->unread = NULL;
	if (!buf || tls) {
		free(buf);
		return false;
	}
	return httpc_parse_response(buf, x->unread_len, x->res) == 0;
}

static bool is_tls_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return true;
	default:
		return false;
	}
}

/* Which phase failed and the errno that says how, from libcurl's code. */
static void classify_failure(struct transfer *x, CURLcode rc)
{
	struct http_result *res = x->res;
	long oserr = x->oserr;

	res->failed_phase = x->sent_at ? "receive" : "send";
	res->error = EIO;
	if (x->error) {
		res->failed_phase = x->phase;
		res->error = x->error;
	} else if (rc == CURLE_COULDNT_RESOLVE_HOST) {
		res->failed_phase = "resolve";
		res->error = EHOSTUNREACH;
	} else if (rc == CURLE_COULDNT_CONNECT) {
		res->failed_phase = "connect";
		res->error = oserr ? (int)oserr : ECONNREFUSED;
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		if (!x->started)
			res->failed_phase = "connect";
		res->error = ETIMEDOUT;
	} else if (is_tls_error(rc)) {
		res->failed_phase = "tls";
		res->error = EPROTO;
	} else if (rc == CURLE_SEND_ERROR) {
		res->error = oserr ? (int)oserr : EPIPE;
	} else if (rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING) {
		res->failed_phase = "receive";
		res->error = oserr ? (int)oserr : ECONNRESET;
	} else if (rc == CURLE_PARTIAL_FILE || rc == CURLE_WEIRD_SERVER_REPLY ||
		   rc == CURLE_UNSUPPORTED_PROTOCOL) {
		res->failed_phase = "receive";
		res->error = EPROTO;
	} else if (rc == CURLE_OUT_OF_MEMORY) {
		res->error = ENOMEM;
	}
	if (x->sends > 1)
		snprintf(res->detail, sizeof(res->detail), "the kept connection "
			 "died before an answer; not sent again (the peer may have it)");
	else if (!res->detail[0])
		snprintf(res->detail, sizeof(res->detail), "%s",
			 curl_easy_strerror(rc));
	http_result_free(res);
	res->status = 0;
	res->body_len = 0;
}

/* Where the time went: connect (TCP and TLS), send, wait; they add up. */
static void record_phases(struct transfer *x)
{
	struct http_result *res = x->res;
	double total = clock_mono_s() - x->t0;
	curl_off_t tcp = 0, tls = 0;

	if (x->curl) {
		curl_easy_getinfo(x->curl, CURLINFO_CONNECT_TIME_T, &tcp);
		curl_easy_getinfo(x->curl, CURLINFO_APPCONNECT_TIME_T, &tls);
	}
	res->connect_s = (double)(tls > tcp ? tls : tcp) / 1e6;
	if (res->connect_s > total)
		res->connect_s = total;
	res->send_s = (x->sent_at ? x->sent_at : x->t0 + total) - x->t0 -
		      res->connect_s;
	if (res->send_s < 0)
		res->send_s = 0;
	res->wait_s = total - res->connect_s - res->send_s;
}

static struct curl_slist *request_headers(const char *token,
					  const char *content_type)
{
	struct curl_slist *h = NULL, *next;
	char line[512];
	const char *const fixed[] = { line, "Expect:", NULL };
	int i;

	snprintf(line, sizeof(line), "Content-Type: %s", content_type);
	for (i = 0; fixed[i]; i++) {
		next = curl_slist_append(h, fixed[i]);
		if (!next)
			goto fail;
		h = next;
	}
	if (token && *token) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
		next = curl_slist_append(h, line);
		explicit_bzero(line, sizeof(line));
		if (!next)
			goto fail;
		h = next;
	}
	return h;
fail:
	curl_slist_free_all(h);
	return NULL;
}

/* The client certificate and key, from memory (libcurl copies them). */
static CURLcode set_client_cert(CURL *curl, CURLcode rc)
{
	struct curl_blob cert = { client_cert, strlen(client_cert), CURL_BLOB_COPY };
	struct curl_blob key = { client_key, strlen(client_key), CURL_BLOB_COPY };

	if (rc == CURLE_OK)
		rc = curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
	return rc;
}

static int set_options(struct transfer *x, struct httpc_conn *conn, bool keep,
		       const char *method, const char *url,
		       struct curl_slist *headers, const uint8_t *body,
		       size_t len, unsigned int timeout_ms)
{
	CURL *c = x->curl;
	CURLcode rc = CURLE_OK;

#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val); } while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_PROXY, "");		/* never the environment's proxy */
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_FORBID_REUSE, keep ? 0L : 1L);
	SET(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	SET(CURLOPT_USERAGENT, "sigmig-agent");
	SET(CURLOPT_HTTPHEADER, headers);
	if (!strcmp(method, "GET")) {
		SET(CURLOPT_HTTPGET, 1L);
	} else if (x->reader) {
		SET(CURLOPT_POST, 1L);
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		SET(CURLOPT_READFUNCTION, on_read);
		SET(CURLOPT_READDATA, x);
	} else {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		SET(CURLOPT_POSTFIELDS, body ? (const char *)body : "");
	}
	if (strcmp(method, "POST") && strcmp(method, "GET"))
		SET(CURLOPT_CUSTOMREQUEST, method);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_XFERINFOFUNCTION, on_progress);
	SET(CURLOPT_XFERINFODATA, x);
	SET(CURLOPT_NOPROGRESS, 0L);
	SET(CURLOPT_PREREQFUNCTION, on_send);
	SET(CURLOPT_PREREQDATA, x);
	SET(CURLOPT_CLOSESOCKETFUNCTION, on_close);
	/* The connection outlives the request: it knows the handle, not x. */
	SET(CURLOPT_CLOSESOCKETDATA, conn);
	SET(CURLOPT_ERRORBUFFER, x->res->detail);
	if (ca_path)
		SET(CURLOPT_CAINFO, ca_path);
	if (client_cert)
		rc = set_client_cert(x->curl, rc);
#undef SET
	return rc == CURLE_OK ? 0 : -1;
}

/*
 * The agents close a connection idle for --idle-timeout (1 s at the
 * least). A request that goes out on a kept connection as the peer closes
 * it fails unanswered, and is not sent again (on_send): the request may
 * have reached the peer. A connection idle for longer than this is closed
 * and made anew instead of raced; the pre-freeze connection then saves
 * its handshake only when the dump is short, which is when it counts.
 */
#define REUSE_IDLE_MAX_S	0.5

/*
 * One request on @c's handle (made at first use); @keep leaves its
 * connection open for the next request on @c, else it is closed here.
 */
static int request_on(struct httpc_conn *c, bool keep, const char *method,
		      const struct target_url *target, const char *path_query,
		      const char *token, const char *content_type,
		      const struct httpc_body *body, unsigned int timeout_ms,
		      unsigned int stall_ms, struct http_result *res)
{
	struct transfer x = { .res = res, .upload_len = body->len,
			      .reader = body->reader, .reader_arg = body->arg,
			      .stall_ms = stall_ms };
	struct curl_slist *headers;
	char url[TARGET_HOST_MAX + 8192];
	CURLcode rc = CURLE_OUT_OF_MEMORY;

	memset(res, 0, sizeof(*res));
	http_head_init(&x.head);
	x.t0 = clock_mono_s();
	snprintf(url, sizeof(url), "%s://%s:%u%s", target->tls ? "https" : "http",
		 target->host, target->port, path_query);
	headers = request_headers(token, content_type);
	if (c->curl && x.t0 - c->idle_since > REUSE_IDLE_MAX_S)
		httpc_conn_close(c);
	if (c->curl)
		curl_easy_reset(c->curl);	/* keeps the open connection */
	else
		c->curl = curl_easy_init();
	x.curl = c->curl;
	c->current = &x;
	if (headers && x.curl &&
	    !set_options(&x, c, keep, method, url, headers, body->data,
			 body->len, timeout_ms))
		rc = curl_easy_perform(x.curl);
	if (rc == CURLE_OK && (!x.head.complete ||
	    (x.head.content_length >= 0 &&
	     (size_t)x.head.content_length != res->body_len)))
		stop(&x, "receive", EPROTO);	/* a reply cut short */
	record_phases(&x);
	if (x.curl)
		curl_easy_getinfo(x.curl, CURLINFO_OS_ERRNO, &x.oserr);
	if (!keep)
		httpc_conn_close(c);	/* closes the socket: on_close runs */
	c->current = NULL;
	c->idle_since = clock_mono_s();
	curl_slist_free_all(headers);
	if (rc == CURLE_SEND_ERROR && !x.error && !x.head.started &&
	    take_early_answer(&x, target->tls)) {
		res->detail[0] = '\0';
		return 0;
	}
	free(x.unread);
	if (rc != CURLE_OK || x.error) {
		classify_failure(&x, rc);
		return -1;
	}
	res->status = x.head.status;
	snprintf(res->content_type, sizeof(res->content_type), "%s",
		 x.head.content_type);
	return 0;
}

int httpc_post(const struct target_url *target, const char *path_query,
	       const char *token, const char *content_type,
	       const uint8_t *body, size_t len, unsigned int timeout_ms,
	       unsigned int stall_ms, struct http_result *res)
{
	return httpc_request("POST", target, path_query, token, content_type,
			     body, len, timeout_ms, stall_ms, res);
}

int httpc_request(const char *method, const struct target_url *target,
		  const char *path_query, const char *token,
		  const char *content_type, const uint8_t *body, size_t len,
		  unsigned int timeout_ms, unsigned int stall_ms,
		  struct http_result *res)
{
	struct httpc_conn once = { 0 };
	struct httpc_body b = { .data = body, .len = len };

	return request_on(&once, false, method, target, path_query, token,
			  content_type, &b, timeout_ms, stall_ms, res);
}

int httpc_conn_post(struct httpc_conn *c, const struct target_url *target,
		    const char *path_query, const char *token,
		    const char *content_type, const uint8_t *body, size_t len,
		    unsigned int timeout_ms, unsigned int stall_ms,
		    struct http_result *res)
{
	return httpc_conn_request(c, "POST", target, path_query, token,
				  content_type, body, len, timeout_ms, stall_ms,
				  res);
}

int httpc_conn_request(struct httpc_conn *c, const char *method,
		       const struct target_url *target, const char *path_query,
		       const char *token, const char *content_type,
		       const uint8_t *body, size_t len, unsigned int timeout_ms,
		       unsigned int stall_ms, struct http_result *res)
{
	struct httpc_body b = { .data = body, .len = len };

	return request_on(c, true, method, target, path_query, token,
			  content_type, &b, timeout_ms, stall_ms, res);
}

int httpc_conn_post_from(struct httpc_conn *c, const struct target_url *target,
			 const char *path_query, const char *token,
			 const char *content_type, size_t len,
			 httpc_reader reader, void *arg, unsigned int timeout_ms,
			 unsigned int stall_ms, struct http_result *res)
{
	struct httpc_body b = { .len = len, .reader = reader, .arg = arg };

	return request_on(c, true, "POST", target, path_query, token,
			  content_type, &b, timeout_ms, stall_ms, res);
}

void httpc_conn_move(struct httpc_conn *to, struct httpc_conn *from)
{
	httpc_conn_close(to);
	*to = *from;
	memset(from, 0, sizeof(*from));
	/* on_close finds the connection by its address, which changed */
	if (to->curl)
		curl_easy_setopt(to->curl, CURLOPT_CLOSESOCKETDATA, to);
}

void httpc_conn_close(struct httpc_conn *c)
{
	curl_easy_cleanup(c->curl);
	c->curl = NULL;
}
