/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Validation of everything a client sends: path parameters, JSON bodies,
 * query strings and credentials. Pure functions (no I/O), so that they
 * are unit-tested and fuzzed on the host.
 */
#ifndef AGENT_VALIDATE_H
#define AGENT_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROGRAM_NAME_MAX	64
#define WORKLOAD_ARGS_MAX	64
#define WORKLOAD_ARG_LEN_MAX	1024
#define TARGET_HOST_MAX		255
#define TOKEN_LEN_MAX		256
#define MIGRATE_TIMEOUT_MS_DEFAULT	120000
#define MIGRATE_TIMEOUT_MS_MIN		100
#define MIGRATE_TIMEOUT_MS_MAX		3600000
#define FORWARD_MS_DEFAULT		2000
#define FORWARD_MS_MAX			600000

/* Why a request was refused: a stable code and a human sentence. */
struct verror {
	const char *code;	/* static string */
	char detail[256];
};

struct workload_args {
	unsigned int argc;
	char *argv[WORKLOAD_ARGS_MAX];	/* malloc()ed */
};

struct start_request {
	char program[PROGRAM_NAME_MAX + 1];
	struct workload_args args;
	bool control;		/* links the sigmig runtime: --ctl/--ledger */
	bool criu;		/* engine "criu": any program, moved by CRIU */
};

struct target_url {
	char host[TARGET_HOST_MAX + 1];
	uint16_t port;
	bool tls;		/* https:// */
};

struct migrate_request {
	struct target_url target;
	char target_text[TARGET_HOST_MAX + 32];	/* as given, for reports */
	char token[TOKEN_LEN_MAX + 1];		/* "" when none */
	unsigned int timeout_ms;
	bool resume_target;	/* false: leave the copy held (frozen) on B */
	unsigned int forward_ms;	/* the original forwards for this long; 0: exits */
};

/* "w" followed by 1-9 digits without a leading zero. */
bool workload_id_valid(const char *id);
/* Returns the number, or 0 when @id is not a valid workload id. */
unsigned long workload_id_number(const char *id);

/* [A-Za-z0-9][A-Za-z0-9._-]*, at most PROGRAM_NAME_MAX: a file name, never a path. */
bool program_name_valid(const char *name);

/* One of the workload programs the API may start (sigstorm, sigstorm32, sigsend, sigplain). */
bool program_allowed(const char *name);

/* Adds one argument; the agent owns --ctl, --ledger and --restore. */
int workload_args_add(struct workload_args *args, const char *arg, size_t len,
		      struct verror *err);
void workload_args_free(struct workload_args *args);

/*
 * The pids sigsend would be told to signal (every --pid, as getopt_long()
 * reads "--pid N" and "--pid=N"), at most @max of them. Returns their
 * number, or -1 with @err when a value is not a pid.
 */
int sigsend_targets(const struct workload_args *args, long *pids, int max,
		    struct verror *err);

/* The query of POST /v1/restore: ?program=&arg=...&hold=1|0, decoded. */
struct restore_query {
	char program[PROGRAM_NAME_MAX + 1];	/* "": the image's own */
	struct workload_args args;
	struct verror err;
	bool failed;
	bool hold;
	bool criu;		/* engine=criu: the body is a bundle (bundle.h) */
};

/*
 * Takes one decoded key=value pair, in order. Returns 0, or -1 with
 * q->failed set and q->err filled: the pairs after it are not looked at.
 */
int restore_query_add(struct restore_query *q, const char *key,
		      const char *value);
void restore_query_free(struct restore_query *q);

/*
 * The query of POST /v1/workloads/{id}/requeue: ?source=S&batch=N names a
 * batch of a forwarding source, so that a retried batch is taken once.
 */
#define REQUEUE_BATCH_MAX	2147483647UL
struct requeue_query {
	char source[65];	/* "": an unnamed requeue */
	unsigned long batch;
	struct verror err;
	bool failed;
};

int requeue_query_add(struct requeue_query *q, const char *key,
		      const char *value);
/* After the last pair: both or neither. 0, or -1 with q->err. */
int requeue_query_check(struct requeue_query *q);

/* Parse a POST /v1/workloads body. 0, or -1 with @err filled. */
int parse_start_request(const char *body, size_t len, struct start_request *req,
			struct verror *err);
void start_request_free(struct start_request *req);

/* "http://host[:port][/]" */
int parse_target_url(const char *url, struct target_url *out,
		     struct verror *err);

/* Parse a POST /v1/workloads/{id}/migrate body. */
int parse_migrate_request(const char *body, size_t len,
			  struct migrate_request *req, struct verror *err);

/*
 * Checks an Authorization header value against the configured token in
 * constant time. Returns true when it is "Bearer <token>".
 */
bool bearer_token_matches(const char *header, const char *token);

/*
 * A Content-Type (NULL: none) for a JSON body: exactly application/json,
 * parameters (charset) allowed. A form type or text/plain would let a web
 * page post a body cross-site without a preflight; a body without a type
 * is refused for the same reason.
 */
bool json_media_type_ok(const char *content_type, bool have_body);

/* Decimal unsigned with optional K/M/G suffix (powers of 1024). */
int parse_size(const char *text, uint64_t *out);

/* "IPV4:PORT", ":PORT" or "PORT" (any address); fills a dotted address. */
int parse_listen(const char *text, char *addr, size_t addrlen, uint16_t *port);

#endif
