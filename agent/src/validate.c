// SPDX-License-Identifier: GPL-2.0
/*
 * Request validation. Bodies are strict: unknown members, wrong types and
 * out-of-range values are refused with a code naming the field, so that a
 * typo in a client never silently means "use the default".
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "validate.h"

static int fail(struct verror *err, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct verror *err, const char *code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
	va_end(ap);
	return -1;
}

bool workload_id_valid(const char *id)
{
	return workload_id_number(id) != 0;
}

unsigned long workload_id_number(const char *id)
{
	unsigned long n = 0;
	size_t i;

	if (!id || id[0] != 'w' || id[1] < '1' || id[1] > '9')
		return 0;
	for (i = 1; id[i]; i++) {
		if (i > 9 || !isdigit((unsigned char)id[i]))
			return 0;
		n = n * 10 + (unsigned long)(id[i] - '0');
	}
	return n;
}

bool program_name_valid(const char *name)
{
	size_t i;

	if (!name || !isalnum((unsigned char)name[0]))
		return false;
	for (i = 0; name[i]; i++) {
		unsigned char c = name[i];

		if (i >= PROGRAM_NAME_MAX)
			return false;
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

/*
 * The agent runs as root and its program directory may hold more than the
 * workloads (test helpers, the agent itself, anything that execs its
 * arguments): only these names are ever started, whatever the directory
 * holds. sigledger reads any file it is given, so it is not a workload.
 * linkbench, the downtime benchmark's yardstick, only moves bytes over one
 * TCP connection; it is installed in the benchmark's images alone.
 */
bool program_allowed(const char *name)
{
	static const char *const allowed[] = { "sigstorm", "sigstorm32",
					       "sigsend", "linkbench", "sigplain" };
	unsigned int i;

	if (!program_name_valid(name))
		return false;
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (strcmp(name, allowed[i]) == 0)
			return true;
	return false;
}

/*
 * True for "--NAME" or "--NAME=VALUE" where NAME is the whole or a leading
 * part of an option the agent sets: getopt_long() accepts any unambiguous
 * abbreviation and the last occurrence wins, so "--ledg=/x" would override
 * the agent's --ledger.
 */
/*
 * "--NAME" or "--NAME=VALUE" where NAME is a leading part of @opt of at
 * least @min bytes: what getopt_long() takes for @opt. @value gets what
 * follows '=' (NULL without one).
 */
static bool spells_option(const char *arg, const char *opt, size_t min,
			  const char **value)
{
	const char *name, *eq;
	size_t n;

	if (strncmp(arg, "--", 2) != 0)
		return false;
	name = arg + 2;
	eq = strchr(name, '=');
	n = eq ? (size_t)(eq - name) : strlen(name);
	if (n == 0 || n < min || n > strlen(opt) || strncmp(name, opt, n) != 0)
		return false;
	if (value)
		*value = eq ? eq + 1 : NULL;
	return true;
}

static bool agent_owned_option(const char *arg)
{
	static const char *const owned[] = { "ctl", "ledger", "restore",
					     "restore-hold" };
	unsigned int i;

	for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		if (spells_option(arg, owned[i], 1, NULL))
			return true;
	return false;
}

/* sigsend's log may only go to its standard output, the agent's log file. */
static bool log_sink_allowed(const char *path)
{
	return strcmp(path, "/proc/self/fd/1") == 0 ||
	       strcmp(path, "/dev/stdout") == 0;
}

/*
 * sigsend runs as root and would append its --log to any path and read
 * any --pid-file: the log goes to stdout only, the pid file not at all.
 * "--pid" itself (a pid) is not "--pid-file", hence four bytes at least.
 */
static const char *file_option_refused(const struct workload_args *args,
				       const char *arg)
{
	const char *prev = args->argc ? args->argv[args->argc - 1] : "";
	const char *value;

	if (spells_option(arg, "pid-file", 4, NULL))
		return "--pid-file is not available through the API";
	if (spells_option(arg, "log", 1, &value) && value &&
	    !log_sink_allowed(value))
		return "--log may only be /proc/self/fd/1 or /dev/stdout";
	if (spells_option(prev, "log", 1, &value) && !value &&
	    !log_sink_allowed(arg))
		return "--log may only be /proc/self/fd/1 or /dev/stdout";
	return NULL;
}

/* A pid as sigsend must read it: decimal digits only, 1..INT_MAX. */
static long pid_value(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -1;
	}
	return v ? v : -1;
}

int sigsend_targets(const struct workload_args *args, long *pids, int max,
		    struct verror *err)
{
	const char *value;
	unsigned int i;
	int n = 0;
	long pid;

	for (i = 0; i < args->argc; i++) {
		/* exactly "pid": any shorter spelling is ambiguous for getopt */
		if (!spells_option(args->argv[i], "pid", 3, &value))
			continue;
		if (!value && i + 1 < args->argc)
			value = args->argv[++i];
		pid = value ? pid_value(value) : -1;
		if (pid < 0)
			return fail(err, "invalid_field",
				    "args: --pid takes a pid (decimal digits)");
		if (n == max)
			return fail(err, "invalid_field", "args: at most %d --pid", max);
		pids[n++] = pid;
	}
	return n;
}

int workload_args_add(struct workload_args *args, const char *arg, size_t len,
		      struct verror *err)
{
	const char *why;

	if (args->argc >= WORKLOAD_ARGS_MAX)
		return fail(err, "invalid_field", "args: at most %d arguments",
			    WORKLOAD_ARGS_MAX);
	if (len > WORKLOAD_ARG_LEN_MAX)
		return fail(err, "invalid_field",
			    "args[%u]: longer than %d bytes", args->argc,
			    WORKLOAD_ARG_LEN_MAX);
	if (memchr(arg, '\0', len))
		return fail(err, "invalid_field",
			    "args[%u]: contains a NUL byte", args->argc);
	if (agent_owned_option(arg))
		return fail(err, "invalid_field",
			    "args[%u]: %s is set by the agent", args->argc,
			    arg);
	why = file_option_refused(args, arg);
	if (why)
		return fail(err, "invalid_field", "args[%u]: %s", args->argc, why);
	args->argv[args->argc] = strndup(arg, len);
	if (!args->argv[args->argc])
		return fail(err, "internal", "out of memory");
	args->argc++;
	return 0;
}

void workload_args_free(struct workload_args *args)
{
	unsigned int i;

	for (i = 0; i < args->argc; i++)
		free(args->argv[i]);
	args->argc = 0;
}

int restore_query_add(struct restore_query *q, const char *key,
		      const char *value)
{
	if (strcmp(key, "arg") == 0) {
		if (workload_args_add(&q->args, value, strlen(value), &q->err))
			q->failed = true;
	} else if (strcmp(key, "hold") == 0) {
		if (strcmp(value, "1") && strcmp(value, "0")) {
			q->failed = true;
			fail(&q->err, "invalid_parameter", "hold: 1 or 0");
		} else {
			q->hold = value[0] == '1';
		}
	} else if (strcmp(key, "engine") == 0) {
		if (strcmp(value, "criu") && strcmp(value, "runtime")) {
			q->failed = true;
			fail(&q->err, "invalid_parameter", "engine: criu or runtime");
		} else {
			q->criu = value[0] == 'c';
		}
	} else if (strcmp(key, "program") == 0) {
		if (!program_name_valid(value)) {
			q->failed = true;
			fail(&q->err, "invalid_parameter",
			     "program: not a valid program name");
		} else {
			snprintf(q->program, sizeof(q->program), "%s", value);
		}
	} else {
		q->failed = true;
		fail(&q->err, "unknown_parameter",
		     "unknown query parameter \"%.64s\"", key);
	}
	return q->failed ? -1 : 0;
}

void restore_query_free(struct restore_query *q)
{
	workload_args_free(&q->args);
}

static bool source_valid(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n < sizeof(((struct requeue_query *)0)->source) &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._:-") == n;
}

static int requeue_fail(struct requeue_query *q, const char *code,
			const char *detail)
{
	q->failed = true;
	return fail(&q->err, code, "%s", detail);
}

int requeue_query_add(struct requeue_query *q, const char *key,
		      const char *value)
{
	char *end;

	if (q->failed)
		return -1;
	if (strcmp(key, "source") == 0) {
		if (!source_valid(value))
			return requeue_fail(q, "invalid_parameter",
					    "source: 1-64 of [A-Za-z0-9._:-]");
		strcpy(q->source, value);
		return 0;
	}
	if (strcmp(key, "batch") == 0) {
		errno = 0;
		q->batch = value[0] >= '1' && value[0] <= '9' ?
			   strtoul(value, &end, 10) : 0;
		if (!q->batch || errno || *end || q->batch > REQUEUE_BATCH_MAX)
			return requeue_fail(q, "invalid_parameter",
					    "batch: an integer 1-2147483647");
		return 0;
	}
	q->failed = true;
	return fail(&q->err, "unknown_parameter", "unknown query parameter \"%.64s\"",
		    key);
}

int requeue_query_check(struct requeue_query *q)
{
	if (q->failed)
		return -1;
	if (!q->source[0] != !q->batch)
		return requeue_fail(q, "invalid_parameter",
				    "source and batch go together, or neither");
	return 0;
}

static json_t *parse_object(const char *body, size_t len, struct verror *err)
{
	json_error_t jerr;
	json_t *root;

	if (len == 0) {
		fail(err, "malformed_json", "the request needs a JSON body");
		return NULL;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		fail(err, "malformed_json", "invalid JSON at line %d column %d: %s",
		     jerr.line, jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		fail(err, "malformed_json", "the body must be a JSON object");
		return NULL;
	}
	return root;
}

/* Every member must be one of @known (NULL-terminated). */
static int reject_unknown_members(json_t *obj, const char *const *known,
				  struct verror *err)
{
	const char *key;
	json_t *value;
	unsigned int i;

	json_object_foreach(obj, key, value) {
		for (i = 0; known[i]; i++)
			if (strcmp(key, known[i]) == 0)
				break;
		if (!known[i])
			return fail(err, "unknown_field",
				    "unknown member \"%.64s\"", key);
	}
	return 0;
}

static int parse_args_array(json_t *array, struct workload_args *args,
			    struct verror *err)
{
	json_t *item;
	size_t i;

	if (!json_is_array(array))
		return fail(err, "invalid_field",
			    "args: must be an array of strings");
	json_array_foreach(array, i, item) {
		if (!json_is_string(item))
			return fail(err, "invalid_field",
				    "args[%zu]: must be a string", i);
		if (workload_args_add(args, json_string_value(item),
				      json_string_length(item), err))
			return -1;
	}
	return 0;
}

static int parse_program(json_t *value, char *out, struct verror *err)
{
	const char *name;

	if (!value)
		return fail(err, "missing_field", "program: required");
	if (!json_is_string(value))
		return fail(err, "invalid_field", "program: must be a string");
	name = json_string_value(value);
	if (strlen(name) != json_string_length(value) ||
	    !program_name_valid(name))
		return fail(err, "invalid_field",
			    "program: must be a file name in the program directory "
			    "([A-Za-z0-9._-], at most %d characters)",
			    PROGRAM_NAME_MAX);
	strcpy(out, name);
	return 0;
}

/*
 * "runtime" (the default): a program linked with the sigmig runtime moves
 * itself. "criu": CRIU moves the process and a parasite its signals; the
 * program is sigplain (it takes --ledger) and has no control socket.
 */
static int parse_engine(json_t *value, struct start_request *req,
			struct verror *err)
{
	const char *engine = value ? json_string_value(value) : "runtime";

	if (!engine || (strcmp(engine, "runtime") && strcmp(engine, "criu")))
		return fail(err, "invalid_field", "engine: \"runtime\" or \"criu\"");
	req->criu = strcmp(engine, "criu") == 0;
	if (!req->criu)
		return 0;
	if (strcmp(req->program, "sigplain"))
		return fail(err, "invalid_field",
			    "engine \"criu\": the program is sigplain, not %s",
			    req->program);
	req->control = false;
	return 0;
}

int parse_start_request(const char *body, size_t len, struct start_request *req,
			struct verror *err)
{
	static const char *const known[] = { "program", "args", "control", "engine",
					     NULL };
	json_t *root, *value;
	int ret = -1;

	memset(req, 0, sizeof(*req));
	req->control = true;
	root = parse_object(body, len, err);
	if (!root)
		return -1;
	if (reject_unknown_members(root, known, err))
		goto out;
	if (parse_program(json_object_get(root, "program"), req->program, err))
		goto out;
	value = json_object_get(root, "args");
	if (value && parse_args_array(value, &req->args, err))
		goto out;
	value = json_object_get(root, "control");
	if (value && !json_is_boolean(value)) {
		fail(err, "invalid_field", "control: must be true or false");
		goto out;
	}
	if (value)
		req->control = json_is_true(value);
	if (parse_engine(json_object_get(root, "engine"), req, err))
		goto out;
	ret = 0;
out:
	if (ret)
		workload_args_free(&req->args);
	json_decref(root);
	return ret;
}

void start_request_free(struct start_request *req)
{
	workload_args_free(&req->args);
}

static bool host_char_valid(unsigned char c)
{
	return isalnum(c) || c == '.' || c == '-';
}

static int parse_port(const char *text, size_t len, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (len == 0 || len > 5)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)text[i]))
			return -1;
		v = v * 10 + (unsigned long)(text[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int parse_target_url(const char *url, struct target_url *out,
		     struct verror *err)
{
	const char *host, *end, *colon;
	size_t hostlen, i;

	if (strncmp(url, "https://", 8) == 0) {
		out->tls = true;
		host = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		out->tls = false;
		host = url + 7;
	} else {
		return fail(err, "invalid_field",
			    "target: must be an http:// or https://host[:port] URL");
	}
	end = host + strcspn(host, "/");
	if (*end && strcmp(end, "/") != 0)
		return fail(err, "invalid_field",
			    "target: must not have a path (the agent appends /v1/restore)");
	colon = memchr(host, ':', (size_t)(end - host));
	hostlen = (size_t)((colon ? colon : end) - host);
	if (hostlen == 0 || hostlen > TARGET_HOST_MAX)
		return fail(err, "invalid_field", "target: bad host name");
	for (i = 0; i < hostlen; i++)
		if (!host_char_valid((unsigned char)host[i]))
			return fail(err, "invalid_field",
				    "target: bad character in host name");
	memcpy(out->host, host, hostlen);
	out->host[hostlen] = '\0';
	out->port = out->tls ? 443 : 80;
	if (colon && parse_port(colon + 1, (size_t)(end - colon - 1), &out->port))
		return fail(err, "invalid_field",
			    "target: port must be 1-65535");
	return 0;
}

static int parse_token(json_t *value, char *out, struct verror *err)
{
	const char *tok;
	size_t i, len;

	if (!json_is_string(value))
		return fail(err, "invalid_field", "token: must be a string");
	tok = json_string_value(value);
	len = json_string_length(value);
	if (len > TOKEN_LEN_MAX)
		return fail(err, "invalid_field", "token: longer than %d bytes",
			    TOKEN_LEN_MAX);
	for (i = 0; i < len; i++)
		if (tok[i] <= 0x20 || tok[i] >= 0x7f)
			return fail(err, "invalid_field",
				    "token: printable ASCII without spaces only");
	memcpy(out, tok, len + 1);
	return 0;
}

static int parse_timeout(json_t *value, unsigned int *out, struct verror *err)
{
	json_int_t v;

	if (!json_is_integer(value))
		return fail(err, "invalid_field", "timeout_ms: must be an integer");
	v = json_integer_value(value);
	if (v < MIGRATE_TIMEOUT_MS_MIN || v > MIGRATE_TIMEOUT_MS_MAX)
		return fail(err, "invalid_field", "timeout_ms: must be %d-%d",
			    MIGRATE_TIMEOUT_MS_MIN, MIGRATE_TIMEOUT_MS_MAX);
	*out = (unsigned int)v;
	return 0;
}

static int parse_forward(json_t *value, unsigned int *out, struct verror *err)
{
	json_int_t v;

	if (!json_is_integer(value))
		return fail(err, "invalid_field", "forward_ms: must be an integer");
	v = json_integer_value(value);
	if (v < 0 || v > FORWARD_MS_MAX)
		return fail(err, "invalid_field", "forward_ms: must be 0-%d", FORWARD_MS_MAX);
	*out = (unsigned int)v;
	return 0;
}

int parse_migrate_request(const char *body, size_t len,
			  struct migrate_request *req, struct verror *err)
{
	static const char *const known[] = { "target", "token", "timeout_ms",
					     "resume_target", "forward_ms", NULL };
	json_t *root, *value;
	const char *url;
	int ret = -1;

	memset(req, 0, sizeof(*req));
	req->timeout_ms = MIGRATE_TIMEOUT_MS_DEFAULT;
	req->resume_target = true;
	req->forward_ms = FORWARD_MS_DEFAULT;
	root = parse_object(body, len, err);
	if (!root)
		return -1;
	if (reject_unknown_members(root, known, err))
		goto out;
	value = json_object_get(root, "target");
	if (!value) {
		fail(err, "missing_field", "target: required");
		goto out;
	}
	if (!json_is_string(value) ||
	    json_string_length(value) >= sizeof(req->target_text)) {
		fail(err, "invalid_field", "target: must be a URL string");
		goto out;
	}
	url = json_string_value(value);
	if (strlen(url) != json_string_length(value) ||
	    parse_target_url(url, &req->target, err))
		goto out;
	strcpy(req->target_text, url);
	value = json_object_get(root, "token");
	if (value && parse_token(value, req->token, err))
		goto out;
	value = json_object_get(root, "timeout_ms");
	if (value && parse_timeout(value, &req->timeout_ms, err))
		goto out;
	value = json_object_get(root, "resume_target");
	if (value && !json_is_boolean(value)) {
		fail(err, "invalid_field", "resume_target: must be true or false");
		goto out;
	}
	if (value)
		req->resume_target = json_is_true(value);
	value = json_object_get(root, "forward_ms");
	if (value && parse_forward(value, &req->forward_ms, err))
		goto out;
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/* Compares all of both strings whatever their contents. */
static bool constant_time_equal(const char *a, size_t alen, const char *b,
				size_t blen)
{
	unsigned char diff = alen != blen;
	size_t i;

	for (i = 0; i < alen; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)b[i % (blen ? blen : 1)];
	return diff == 0 && blen > 0;
}

bool bearer_token_matches(const char *header, const char *token)
{
	const char *p;

	if (!header || !token || strncasecmp(header, "Bearer ", 7) != 0)
		return false;
	p = header + 7;
	while (*p == ' ')
		p++;
	return constant_time_equal(p, strlen(p), token, strlen(token));
}

bool json_media_type_ok(const char *ct, bool have_body)
{
	size_t n = strlen("application/json");

	if (!ct)
		return !have_body;
	ct += strspn(ct, " \t");
	if (strncasecmp(ct, "application/json", n) != 0)
		return false;
	ct += n;
	ct += strspn(ct, " \t");
	return *ct == '\0' || *ct == ';';
}

int parse_size(const char *text, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!text || !isdigit((unsigned char)text[0]))
		return -1;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int parse_listen(const char *text, char *addr, size_t addrlen, uint16_t *port)
{
	const char *colon = strrchr(text, ':');
	struct in_addr in;
	size_t n;

	if (!colon) {
		snprintf(addr, addrlen, "0.0.0.0");
		return parse_port(text, strlen(text), port);
	}
	n = (size_t)(colon - text);
	if (n == 0)
		snprintf(addr, addrlen, "0.0.0.0");
	else if (n >= addrlen || n >= INET_ADDRSTRLEN)
		return -1;
	else
		snprintf(addr, addrlen, "%.*s", (int)n, text);
	if (inet_pton(AF_INET, addr, &in) != 1)
		return -1;
	return parse_port(colon + 1, strlen(colon + 1), port);
}
