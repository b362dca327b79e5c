/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's one HTTP client (libcurl), for requests to a peer agent:
 * http:// or https:// (verified against the CA file the agent was given),
 * HTTP/1.1, bounded by a deadline and by a stall timeout while the body
 * goes out. The reply's head passes http_reply.h's checks.
 */
#ifndef AGENT_HTTPC_H
#define AGENT_HTTPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http_reply.h"
#include "validate.h"

/*
 * Once, before any thread starts: @ca_file (NULL: the system's CAs) is
 * what https:// peers are verified against. Returns 0 or -1.
 */
int httpc_init(const char *ca_file);
/*
 * Then, optionally: the PEM certificate (chain) and key presented to
 * https:// peers that ask for one (mutual TLS). Copied. Returns 0 or -1.
 */
int httpc_set_client_cert(const char *cert_pem, const char *key_pem);
void httpc_cleanup(void);

int httpc_post(const struct target_url *target, const char *path_query,
	       const char *token, const char *content_type,
	       const uint8_t *body, size_t len, unsigned int timeout_ms,
	       unsigned int stall_ms, struct http_result *res);
/* The same with another method (POST .../thaw with an empty body, DELETE). */
int httpc_request(const char *method, const struct target_url *target,
		  const char *path_query, const char *token,
		  const char *content_type, const uint8_t *body, size_t len,
		  unsigned int timeout_ms, unsigned int stall_ms,
		  struct http_result *res);

/*
 * A connection to one peer kept open across requests, for a series of
 * them (the forwarder's batches): one TCP connect and TLS handshake, not
 * one per request. Zero-initialised; one request at a time;
 * httpc_conn_close() closes it. A connection the peer closed meanwhile, or
 * one idle for longer than half a second, is replaced at the next request.
 */
struct transfer;
struct httpc_conn {
	void *curl;			/* the libcurl handle, made at first use */
	struct transfer *current;	/* the request running on it */
	double idle_since;		/* when its last request ended */
};

int httpc_conn_post(struct httpc_conn *c, const struct target_url *target,
		    const char *path_query, const char *token,
		    const char *content_type, const uint8_t *body, size_t len,
		    unsigned int timeout_ms, unsigned int stall_ms,
		    struct http_result *res);
/* The same with another method: GET (no body), POST .../thaw, DELETE. */
int httpc_conn_request(struct httpc_conn *c, const char *method,
		       const struct target_url *target, const char *path_query,
		       const char *token, const char *content_type,
		       const uint8_t *body, size_t len, unsigned int timeout_ms,
		       unsigned int stall_ms, struct http_result *res);
/*
 * A POST whose @len-byte body is read from @reader as it goes out, for a
 * body still being made (an image encoded as it is sent): @reader fills
 * up to @cap bytes at @buf and returns how many, or -errno. A reader that
 * fails, or ends before @len, fails the request with failed_phase
 * "source" and that errno (EPROTO for an early end); the peer then sees
 * the body cut short.
 */
typedef ssize_t (*httpc_reader)(void *arg, uint8_t *buf, size_t cap);
int httpc_conn_post_from(struct httpc_conn *c, const struct target_url *target,
			 const char *path_query, const char *token,
			 const char *content_type, size_t len,
			 httpc_reader reader, void *arg, unsigned int timeout_ms,
			 unsigned int stall_ms, struct http_result *res);
/* @from's open connection becomes @to's (whose own is closed); @from is empty. */
void httpc_conn_move(struct httpc_conn *to, struct httpc_conn *from);
void httpc_conn_close(struct httpc_conn *c);

#endif
