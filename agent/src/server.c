// SPDX-License-Identifier: GPL-2.0
/*
 * Request life cycle in libmicrohttpd terms: the first call of the access
 * handler sees only the headers, and everything that can be refused
 * without the body (unknown route, wrong method, missing token, declared
 * length over the cap) is answered there, so that a client never uploads
 * a large body for nothing. Later calls collect the body; the last one
 * dispatches to the handler.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "caps.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "buf.h"
#include "server.h"
#include "validate.h"

struct agent_context agent;
static struct MHD_Daemon *daemon_handle;

static const char *const unmatched_route = "unmatched";

void reply_json(struct reply *out, unsigned int status, json_t *json)
{
	out->status = status;
	json_decref(out->json);
	out->json = json;
	out->content_type = "application/json";
}

void reply_problem(struct reply *out, const struct api_error *err,
		   const struct request *req)
{
	reply_json(out, err->status, problem_from_error(err, req->path));
	out->content_type = PROBLEM_CONTENT_TYPE;
}

void reply_error(struct reply *out, const struct request *req,
		 unsigned int status, const char *code, const char *fmt, ...)
{
	struct api_error err = { .status = status, .code = code };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err.detail, sizeof(err.detail), fmt, ap);
	va_end(ap);
	reply_problem(out, &err, req);
}

void reply_bytes(struct reply *out, unsigned int status, const char *type,
		 uint8_t *bytes, size_t len)
{
	out->status = status;
	free(out->bytes);
	out->bytes = bytes;
	out->len = len;
	out->content_type = type;
}

/*
 * The file is streamed by libmicrohttpd (sendfile where it can), so serving a
 * growing ledger or log costs no heap: reading it whole into a buffer grew the
 * malloc arenas of the connection threads with every request.
 */
void reply_file(struct reply *out, unsigned int status, const char *type,
		int fd, uint64_t len)
{
	if (out->has_file)
		close(out->file_fd);
	out->status = status;
	out->file_fd = fd;
	out->file_len = len;
	out->has_file = true;
	out->content_type = type;
}

void reply_header(struct reply *out, const char *name, const char *fmt, ...)
{
	struct reply_header *h;
	va_list ap;

	if (out->nheaders >= REPLY_HEADERS_MAX)
		return;
	h = &out->headers[out->nheaders++];
	h->name = name;
	va_start(ap, fmt);
	vsnprintf(h->value, sizeof(h->value), fmt, ap);
	va_end(ap);
}

const char *request_query(const struct request *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

struct visit {
	query_visitor fn;
	void *cls;
};

static enum MHD_Result visit_one(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *value)
{
	struct visit *v = cls;

	(void)kind;
	return v->fn(v->cls, key, value ? value : "") ? MHD_NO : MHD_YES;
}

void request_query_each(const struct request *req, query_visitor fn, void *cls)
{
	struct visit v = { fn, cls };

	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, visit_one, &v);
}

/* The JSON is serialized compactly, one document and a newline. */
static struct MHD_Response *json_response(json_t *json)
{
	char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
	size_t len;

	if (!text)
		text = strdup("{\"type\":\"urn:sigmig:problem:internal\","
			      "\"title\":\"Internal Server Error\",\"status\":500,"
			      "\"code\":\"internal\",\"detail\":\"out of memory\"}");
	if (!text)
		return NULL;
	len = strlen(text);
	text = realloc(text, len + 2);
	if (!text)
		return NULL;
	text[len] = '\n';
	text[len + 1] = '\0';
	return MHD_create_response_from_buffer(len + 1, text,
					       MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result send_reply(struct request *req, struct reply *out)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	unsigned int i;

	if (out->has_file) {
		/* MHD owns the descriptor from here, also on failure */
		resp = MHD_create_response_from_fd64(out->file_len, out->file_fd);
		if (!resp)
			close(out->file_fd);
		out->has_file = false;
	} else if (out->bytes) {
		resp = MHD_create_response_from_buffer(out->len, out->bytes,
						       MHD_RESPMEM_MUST_FREE);
		if (resp)
			out->bytes = NULL;
	} else {
		resp = json_response(out->json);
	}
	json_decref(out->json);
	out->json = NULL;
	free(out->bytes);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				out->content_type ? out->content_type :
				"application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (i = 0; i < out->nheaders; i++)
		MHD_add_response_header(resp, out->headers[i].name,
					out->headers[i].value);
	req->status = out->status;
	ret = MHD_queue_response(req->conn, out->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_error(struct request *req, unsigned int status,
				  const char *code, const char *detail,
				  const char *hname, const char *hvalue)
{
	struct reply out = { 0 };

	reply_error(&out, req, status, code, "%s", detail);
	if (hname)
		reply_header(&out, hname, "%s", hvalue);
	req->answered = true;
	return send_reply(req, &out);
}

static struct request *new_request(struct MHD_Connection *conn, const char *url,
				   const char *method)
{
	struct request *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->start = clock_mono_s();
	req->conn = conn;
	req->method = http_method_parse(method);
	snprintf(req->method_name, sizeof(req->method_name), "%s",
		 req->method == M_OTHER ? "OTHER" : method);
	snprintf(req->path, sizeof(req->path), "%s", url);
	req->route = route_match(url, req->param, sizeof(req->param));
	return req;
}

static bool authorized(struct request *req)
{
	const char *auth;

	if (!agent.cfg->token)
		return true;
	if (!method_is_mutating(req->method) && req->rm->auth != AUTH_ALWAYS)
		return true;
	auth = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_AUTHORIZATION);
	return bearer_token_matches(auth, agent.cfg->token);
}

bool request_declared_length(const struct request *req, uint64_t *n)
{
	const char *cl = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND,
						     MHD_HTTP_HEADER_CONTENT_LENGTH);

	return cl && parse_size(cl, n) == 0;
}

static bool declared_too_large(struct request *req)
{
	uint64_t n;

	return request_declared_length(req, &n) && n > req->body_limit;
}

static bool json_body_type_ok(struct request *req, bool have_body)
{
	return json_media_type_ok(MHD_lookup_connection_value(req->conn,
			MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE), have_body);
}

static enum MHD_Result refuse_media_type(struct request *req)
{
	return send_error(req, 415, "unsupported_media_type",
			  "send the body as Content-Type: application/json",
			  NULL, NULL);
}

/*
 * Mutual TLS (--tls-client-ca): libmicrohttpd asks for a client
 * certificate but leaves its verification to us. It must chain to one of
 * those CAs and be meant for clientAuth; 0 when it does, else why not.
 */
static int client_cert_refused(struct MHD_Connection *conn, char *why, size_t len)
{
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (void *)GNUTLS_KP_TLS_WWW_CLIENT };
	const union MHD_ConnectionInfo *ci;
	unsigned int status = 0, n = 0;
	gnutls_datum_t text;
	gnutls_session_t s;

	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	s = ci ? (gnutls_session_t)ci->tls_session : NULL;
	if (!s || gnutls_certificate_type_get(s) != GNUTLS_CRT_X509 ||
	    !gnutls_certificate_get_peers(s, &n) || !n) {
		snprintf(why, len, "this agent needs a client certificate (mutual TLS)");
		return -1;
	}
	if (gnutls_certificate_verify_peers(s, &purpose, 1, &status) < 0 || status) {
		if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509,
								 &text, 0) == 0) {
			snprintf(why, len, "client certificate refused: %s", text.data);
			gnutls_free(text.data);
		} else {
			snprintf(why, len, "client certificate refused");
		}
		return -1;
	}
	return 0;
}

/*
 * libmicrohttpd answers a request line or headers that overflow its
 * per-connection buffer itself, with an HTML page. The buffer is made
 * larger than these limits, so that the agent refuses what passes them
 * with a problem document; only a request over REQUEST_BUFFER gets the
 * library's page.
 */
#define REQUEST_BUFFER	(256 << 10)
#define TARGET_MAX	(8u << 10)	/* path and query, as decoded */
#define HEADERS_MAX	(16u << 10)	/* names and values */

static enum MHD_Result add_size(void *cls, enum MHD_ValueKind kind,
				const char *key, const char *value)
{
	size_t *n = cls;

	(void)kind;
	*n += strlen(key) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

static size_t values_size(struct MHD_Connection *conn, enum MHD_ValueKind kind)
{
	size_t n = 0;

	MHD_get_connection_values(conn, kind, add_size, &n);
	return n;
}

/* True when the request line or the headers passed their limit: @ret is the answer's. */
static bool refused_oversized(struct request *req, const char *url, enum MHD_Result *ret)
{
	char detail[96];

	if (strlen(url) + values_size(req->conn, MHD_GET_ARGUMENT_KIND) > TARGET_MAX) {
		snprintf(detail, sizeof(detail), "the path and query exceed %u bytes",
			 TARGET_MAX);
		*ret = send_error(req, 414, "uri_too_long", detail, NULL, NULL);
		return true;
	}
	if (values_size(req->conn, MHD_HEADER_KIND) > HEADERS_MAX) {
		snprintf(detail, sizeof(detail), "the headers exceed %u bytes", HEADERS_MAX);
		*ret = send_error(req, 431, "headers_too_large", detail, NULL, NULL);
		return true;
	}
	return false;
}

/* First call: everything decidable from the request line and headers. */
static enum MHD_Result on_headers(struct request *req, const char *url)
{
	char allow[64], detail[160];
	enum MHD_Result ret;

	if (agent.cfg->tls_client_ca &&
	    client_cert_refused(req->conn, detail, sizeof(detail)))
		return send_error(req, 403, "client_certificate_required", detail,
				  NULL, NULL);
	if (refused_oversized(req, url, &ret))
		return ret;
	if (!req->route)
		return send_error(req, 404, "not_found", "no such endpoint",
				  NULL, NULL);
	req->rm = route_method(req->route, req->method);
	if (!req->rm) {
		route_allow(req->route, allow, sizeof(allow));
		snprintf(detail, sizeof(detail), "%s allows %s", req->route->pattern,
			 allow);
		return send_error(req, 405, "method_not_allowed", detail,
				  MHD_HTTP_HEADER_ALLOW, allow);
	}
	if (!authorized(req))
		return send_error(req, 401, "unauthorized",
				  "this endpoint needs Authorization: Bearer <token>",
				  MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				  "Bearer realm=\"sigmig-agent\"");
	/* An image up to --max-image would be read only to be refused. */
	if (req->rm->body == BODY_IMAGE && !caps_interface_ok(&agent.caps))
		return send_error(req, 503, "kernel_unsupported",
				  "the running kernel lacks the signalfd "
				  "pending-signal interface: no restore",
				  NULL, NULL);
	req->body_limit = req->rm->body == BODY_IMAGE ? agent.cfg->max_image :
			  agent.cfg->max_body;
	if (declared_too_large(req)) {
		snprintf(detail, sizeof(detail), "the body exceeds the %llu-byte limit",
			 (unsigned long long)req->body_limit);
		return send_error(req, 413, "body_too_large", detail, NULL, NULL);
	}
	/* A wrong type is refused before the body; a missing one after it. */
	if (req->rm->body == BODY_JSON && !json_body_type_ok(req, false))
		return refuse_media_type(req);
	return MHD_YES;
}

static int append_body(struct request *req, const char *data, size_t len)
{
	int err;

	if (req->too_large)
		return 0;
	err = buf_append(&req->body, &req->body_len, &req->body_cap, data, len,
			 req->body_limit);
	if (err == -EMSGSIZE) {
		req->too_large = true;
		free(req->body);
		req->body = NULL;
		return 0;
	}
	return err ? -1 : 0;
}

static enum MHD_Result dispatch(struct request *req)
{
	struct reply out = { 0 };
	char detail[96];

	if (req->too_large) {
		snprintf(detail, sizeof(detail), "the body exceeds the %llu-byte limit",
			 (unsigned long long)req->body_limit);
		return send_error(req, 413, "body_too_large", detail, NULL, NULL);
	}
	if (req->rm->body == BODY_JSON && !json_body_type_ok(req, req->body_len))
		return refuse_media_type(req);
	req->rm->handler(req, &out);
	if (!out.status)
		reply_error(&out, req, 500, "internal", "handler gave no reply");
	return send_reply(req, &out);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct request *req = *con_cls;

	(void)cls;
	(void)version;
	if (!req) {
		req = new_request(conn, url, method);
		if (!req)
			return MHD_NO;
		*con_cls = req;
		return on_headers(req, url);
	}
	if (req->answered) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (append_body(req, upload_data, *upload_data_size))
			return MHD_NO;
		*upload_data_size = 0;
		if (req->rm->on_body && !req->too_large)
			req->rm->on_body(req);
		return MHD_YES;
	}
	return dispatch(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;
	double secs;

	(void)cls;
	(void)conn;
	if (!req)
		return;
	secs = clock_mono_s() - req->start;
	metrics_request(req->route ? req->route->pattern : unmatched_route,
			req->method_name, req->status, secs);
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		log_info("%s %s -> %u (connection ended early: %d) %.3fs",
			 req->method_name, req->path, req->status, (int)toe, secs);
	else
		log_msg(req->method == M_GET || req->method == M_HEAD ?
			LOG_LVL_DEBUG : LOG_LVL_INFO, "%s %s -> %u %.3fs",
			req->method_name, req->path, req->status, secs);
	if (req->upload_end)	/* the request ended before its handler ran */
		req->upload_end(req->upload);
	free(req->body);
	free(req);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_warn("libmicrohttpd: %s", line);
}

int server_start(void)
{
	const struct agent_config *cfg = agent.cfg;
	struct sockaddr_in addr = { .sin_family = AF_INET };

	addr.sin_port = htons(cfg->port);
	if (inet_pton(AF_INET, cfg->listen_addr, &addr.sin_addr) != 1) {
		log_error("bad listen address %s", cfg->listen_addr);
		return -1;
	}
	/*
	 * One thread per connection: idle or trickling clients could hold
	 * them all and lock out /v1/health and the orchestrator. A client
	 * address gets a share of them, and an idle connection is closed
	 * soon (a handler at work, e.g. a restore, is not idle).
	 */
	if (cfg->tls_cert && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		log_error("--tls-cert: this libmicrohttpd has no TLS support");
		return -1;
	}
	/* Without TLS (or mutual TLS) the options end the list early. */
	daemon_handle = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
		MHD_USE_ERROR_LOG | MHD_USE_ITC | (cfg->tls_cert ? MHD_USE_TLS : 0),
		cfg->port, NULL, NULL, on_request, NULL,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
		MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_client,
		MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQUEST_BUFFER,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		cfg->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
		cfg->tls_cert,
		MHD_OPTION_HTTPS_MEM_KEY, cfg->tls_key,
		cfg->tls_client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END,
		cfg->tls_client_ca,
		MHD_OPTION_END);
	if (!daemon_handle) {
		log_error("cannot listen on %s:%u", cfg->listen_addr, cfg->port);
		return -1;
	}
	log_info("listening on %s://%s:%u (API %s)",
		 cfg->tls_cert ? "https" : "http", cfg->listen_addr,
		 cfg->port, AGENT_API_VERSION);
	return 0;
}

void server_stop(void)
{
	if (!daemon_handle)
		return;
	MHD_quiesce_daemon(daemon_handle);
	MHD_stop_daemon(daemon_handle);
	daemon_handle = NULL;
}
