// SPDX-License-Identifier: GPL-2.0
/* Request validation, routing and problem documents. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "router.h"
#include "tap.h"
#include "validate.h"

#define S(x) x, strlen(x)

static void test_ids_and_names(void)
{
	ok(workload_id_valid("w1") && workload_id_valid("w123456789"), "valid ids");
	ok(!workload_id_valid("w0") && !workload_id_valid("w01") &&
	   !workload_id_valid("w") && !workload_id_valid("x1") &&
	   !workload_id_valid("w1234567890") && !workload_id_valid("w1a") &&
	   !workload_id_valid(""), "invalid ids refused");
	ok(workload_id_number("w42") == 42, "id number");
	ok(program_name_valid("sigstorm") && program_name_valid("a.b-c_d"), "valid program names");
	ok(program_allowed("sigstorm") && program_allowed("sigstorm32") &&
	   program_allowed("sigsend"), "the workload programs are allowed");
	ok(!program_allowed("withrlimit") && !program_allowed("sigmig-agent") &&
	   !program_allowed("sigledger") && !program_allowed("sigstorm ") &&
	   !program_allowed("sh"), "nothing else is");
	ok(!program_name_valid("../bin/sh") && !program_name_valid("/bin/sh") &&
	   !program_name_valid(".hidden") && !program_name_valid("") &&
	   !program_name_valid("a b"), "paths and odd names refused");
}

static const char *start_code(const char *body)
{
	static struct verror err;
	struct start_request req;

	if (parse_start_request(body, strlen(body), &req, &err) == 0) {
		start_request_free(&req);
		return "ok";
	}
	return err.code;
}

static void test_start_request(void)
{
	struct start_request req;
	struct verror err;

	ok(parse_start_request(S("{\"program\":\"sigstorm\",\"args\":[\"--threads\",\"4\"]}"),
			       &req, &err) == 0 && req.control && req.args.argc == 2 &&
	   !strcmp(req.args.argv[1], "4") && !strcmp(req.program, "sigstorm"),
	   "start: valid body parsed");
	start_request_free(&req);
	ok(parse_start_request(S("{\"program\":\"sigsend\",\"control\":false}"), &req, &err) == 0 &&
	   !req.control && req.args.argc == 0, "start: control false, no args");
	start_request_free(&req);
	ok(!strcmp(start_code(""), "malformed_json"), "start: empty body");
	ok(!strcmp(start_code("{\"program\":"), "malformed_json"), "start: truncated JSON");
	ok(!strcmp(start_code("[1,2]"), "malformed_json"), "start: not an object");
	ok(!strcmp(start_code("{\"program\":\"a\",\"program\":\"b\"}"), "malformed_json"),
	   "start: duplicate member");
	ok(!strcmp(start_code("{}"), "missing_field"), "start: program required");
	ok(!strcmp(start_code("{\"program\":\"x\",\"argz\":[]}"), "unknown_field"),
	   "start: unknown member refused");
	ok(!strcmp(start_code("{\"program\":7}"), "invalid_field"), "start: program type");
	ok(!strcmp(start_code("{\"program\":\"../sh\"}"), "invalid_field"), "start: program path");
	ok(strcmp(start_code("{\"program\":\"a\\u0000b\"}"), "ok") != 0,
	   "start: program with NUL");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":\"-v\"}"), "invalid_field"),
	   "start: args must be an array");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[1]}"), "invalid_field"),
	   "start: args must be strings");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--ctl\",\"/tmp/s\"]}"), "invalid_field"),
	   "start: --ctl is the agent's");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--restore=/x\"]}"), "invalid_field"),
	   "start: --restore= is the agent's");
	ok(!strcmp(start_code("{\"program\":\"x\",\"control\":\"yes\"}"), "invalid_field"),
	   "start: control must be boolean");
	/* getopt_long takes any unambiguous abbreviation, and the last wins. */
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--ledg=/any/file\"]}"), "invalid_field"),
	   "start: --ledg= abbreviates the agent's --ledger");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--ct\",\"/any/file\"]}"), "invalid_field"),
	   "start: --ct abbreviates the agent's --ctl");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--r=/x\"]}"), "invalid_field"),
	   "start: --r= abbreviates the agent's --restore");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--restore-h\"]}"), "invalid_field"),
	   "start: --restore-h abbreviates the agent's --restore-hold");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--\",\"--ctl\"]}"), "invalid_field"),
	   "start: --ctl after -- is refused too (programs differ in how they read --)");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--threads\",\"4\",\"--rt-only\"]}"), "ok"),
	   "start: options that abbreviate nothing of the agent's pass");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--log\",\"/etc/x\"]}"), "invalid_field") &&
	   !strcmp(start_code("{\"program\":\"x\",\"args\":[\"--lo=/etc/x\"]}"), "invalid_field") &&
	   !strcmp(start_code("{\"program\":\"x\",\"args\":[\"--pid-f\",\"/etc/x\"]}"), "invalid_field"),
	   "start: sigsend's --log and --pid-file cannot name a file");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--log\",\"/proc/self/fd/1\",\"--pid\",\"7\"]}"), "ok") &&
	   !strcmp(start_code("{\"program\":\"x\",\"args\":[\"--lo=/dev/stdout\"]}"), "ok"),
	   "start: --log to stdout and --pid pass");
	ok(!strcmp(start_code("{\"program\":\"x\",\"args\":[\"--ctlx\"]}"), "ok"),
	   "start: --ctlx is not an abbreviation of --ctl");
}

static void test_many_args(void)
{
	char body[8192] = "{\"program\":\"x\",\"args\":[";
	unsigned int i;

	for (i = 0; i <= WORKLOAD_ARGS_MAX; i++)
		strcat(body, i ? ",\"a\"" : "\"a\"");
	strcat(body, "]}");
	ok(!strcmp(start_code(body), "invalid_field"), "start: too many args refused");
}

/* sigsend_targets() over @n arguments: the count, the pids in @pids. */
static int targets_of(const char *const *argv, unsigned int n, long *pids)
{
	struct workload_args args = { 0 };
	struct verror err;
	unsigned int i;

	for (i = 0; i < n; i++)
		args.argv[args.argc++] = (char *)argv[i];
	return sigsend_targets(&args, pids, 4, &err);
}

static void test_sigsend_targets(void)
{
	static const char *const two_forms[] = { "--pid", "42", "--count", "1", "--pid=7" };
	static const char *const none[] = { "--pid-file", "x", "--paused", "--count", "1" };
	static const char *const bad[][2] = {
		{ "--pid=4x", "" }, { "--pid", "0x10" }, { "--pid=", "" }, { "--pid", "0" },
		{ "--pid", "99999999999" }, { "--pid", "-1" }, { "--pid", "--count" },
	};
	static const char *const last[] = { "--count", "1", "--pid" };
	static const char *const many[] = { "--pid=1", "--pid=2", "--pid=3", "--pid=4", "--pid=5" };
	long pids[4];
	unsigned int i;

	ok(targets_of(two_forms, 5, pids) == 2 && pids[0] == 42 && pids[1] == 7,
	   "sigsend targets: --pid N and --pid=N, every occurrence");
	ok(targets_of(none, 5, pids) == 0, "sigsend targets: --pid-file and others are not --pid");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(targets_of(bad[i], bad[i][1][0] ? 2 : 1, pids) == -1,
		   "sigsend targets: '%s %s' is not a pid", bad[i][0], bad[i][1]);
	ok(targets_of(last, 3, pids) == -1, "sigsend targets: --pid without a value refused");
	ok(targets_of(many, 5, pids) == -1, "sigsend targets: more --pid than room refused");
}

static const char *migrate_code(const char *body, struct migrate_request *req)
{
	static struct verror err;

	if (parse_migrate_request(body, strlen(body), req, &err) == 0)
		return "ok";
	return err.code;
}

static void test_migrate_request(void)
{
	struct migrate_request req;

	ok(!strcmp(migrate_code("{\"target\":\"http://10.99.0.2:8080\",\"token\":\"t0k\"}", &req), "ok") &&
	   !strcmp(req.target.host, "10.99.0.2") && req.target.port == 8080 &&
	   !strcmp(req.token, "t0k") && req.timeout_ms == MIGRATE_TIMEOUT_MS_DEFAULT &&
	   req.resume_target,
	   "migrate: valid body parsed, the target resumes by default");
	ok(!strcmp(migrate_code("{\"target\":\"http://guest-b/\"}", &req), "ok") &&
	   req.target.port == 80 && !strcmp(req.target.host, "guest-b"),
	   "migrate: default port, trailing slash");
	ok(!strcmp(migrate_code("{\"target\":\"https://b:1\"}", &req), "ok") &&
	   req.target.tls && req.target.port == 1 && !strcmp(req.target.host, "b"),
	   "migrate: an https target is TLS");
	ok(!strcmp(migrate_code("{\"target\":\"https://b\"}", &req), "ok") &&
	   req.target.tls && req.target.port == 443,
	   "migrate: https's default port is 443");
	ok(!strcmp(migrate_code("{\"target\":\"http://b:1\"}", &req), "ok") &&
	   !req.target.tls, "migrate: an http target is not");
	ok(!strcmp(migrate_code("{\"target\":\"ftp://b:1\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"HTTPS://b:1\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"https:/b:1\"}", &req), "invalid_field"),
	   "migrate: other schemes and spellings refused");
	ok(!strcmp(migrate_code("{\"target\":\"http://b:1/v1/restore\"}", &req), "invalid_field"),
	   "migrate: path refused");
	ok(!strcmp(migrate_code("{\"target\":\"http://b:0\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b:65536\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b:\"}", &req), "invalid_field"),
	   "migrate: bad ports refused");
	ok(!strcmp(migrate_code("{\"target\":\"http://a b:1\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://:1\"}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://u@h:1\"}", &req), "invalid_field"),
	   "migrate: bad hosts refused");
	ok(!strcmp(migrate_code("{}", &req), "missing_field"), "migrate: target required");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"token\":\"a b\"}", &req), "invalid_field"),
	   "migrate: token with a space refused");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"timeout_ms\":5}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b\",\"timeout_ms\":\"9\"}", &req), "invalid_field"),
	   "migrate: timeout range and type");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"timeout_ms\":2000}", &req), "ok") &&
	   req.timeout_ms == 2000, "migrate: timeout accepted");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"resume_target\":false}", &req), "ok") &&
	   !req.resume_target, "migrate: resume_target false keeps the copy held");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"resume_target\":0}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b\",\"resume_target\":\"no\"}", &req),
		   "invalid_field"),
	   "migrate: resume_target must be a boolean");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"x\":1}", &req), "unknown_field"),
	   "migrate: unknown member refused");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\"}", &req), "ok") &&
	   req.forward_ms == FORWARD_MS_DEFAULT, "migrate: the original forwards by default");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"forward_ms\":0}", &req), "ok") &&
	   req.forward_ms == 0, "migrate: forward_ms 0, no forwarding");
	ok(!strcmp(migrate_code("{\"target\":\"http://b\",\"forward_ms\":-1}", &req), "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b\",\"forward_ms\":600001}", &req),
		   "invalid_field") &&
	   !strcmp(migrate_code("{\"target\":\"http://b\",\"forward_ms\":1.5}", &req),
		   "invalid_field"),
	   "migrate: forward_ms range and type");
}

/* "ok" or the error code of the query @pairs (key, value, ..., NULL). */
static const char *requeue_code(struct requeue_query *q, const char *const *pairs)
{
	memset(q, 0, sizeof(*q));
	for (; pairs[0]; pairs += 2)
		if (requeue_query_add(q, pairs[0], pairs[1]))
			return q->err.code;
	return requeue_query_check(q) ? q->err.code : "ok";
}

static void test_requeue_query(void)
{
	static const char *const good[] = { "source", "w3.120", "batch", "7", NULL };
	static const char *const none[] = { NULL };
	static const char *const alone[] = { "batch", "2", NULL };
	static const char *const zero[] = { "source", "s", "batch", "0", NULL };
	static const char *const big[] = { "source", "s", "batch", "2147483648", NULL };
	static const char *const sign[] = { "source", "s", "batch", "+3", NULL };
	static const char *const junk[] = { "source", "s", "batch", "3x", NULL };
	static const char *const slash[] = { "source", "../x", "batch", "1", NULL };
	static const char *const other[] = { "hold", "1", NULL };
	struct requeue_query q;

	ok(!strcmp(requeue_code(&q, good), "ok") && !strcmp(q.source, "w3.120") && q.batch == 7,
	   "requeue query: source and batch parsed");
	ok(!strcmp(requeue_code(&q, none), "ok") && !q.source[0] && !q.batch,
	   "requeue query: none, an unnamed requeue");
	ok(!strcmp(requeue_code(&q, alone), "invalid_parameter"),
	   "requeue query: batch without source refused");
	ok(!strcmp(requeue_code(&q, zero), "invalid_parameter") &&
	   !strcmp(requeue_code(&q, big), "invalid_parameter") &&
	   !strcmp(requeue_code(&q, sign), "invalid_parameter") &&
	   !strcmp(requeue_code(&q, junk), "invalid_parameter"),
	   "requeue query: batch 0, too big, signed or with junk refused");
	ok(!strcmp(requeue_code(&q, slash), "invalid_parameter"),
	   "requeue query: a source with a slash refused");
	ok(!strcmp(requeue_code(&q, other), "unknown_parameter"),
	   "requeue query: unknown parameter refused");
}

static void test_bearer(void)
{
	ok(bearer_token_matches("Bearer s3cret", "s3cret"), "bearer: exact token");
	ok(bearer_token_matches("bearer s3cret", "s3cret"), "bearer: scheme is case-insensitive");
	ok(!bearer_token_matches("Bearer s3cre", "s3cret"), "bearer: prefix refused");
	ok(!bearer_token_matches("Bearer s3cretX", "s3cret"), "bearer: longer refused");
	ok(!bearer_token_matches("Basic s3cret", "s3cret"), "bearer: other scheme refused");
	ok(!bearer_token_matches(NULL, "s3cret"), "bearer: missing header refused");
	ok(!bearer_token_matches("Bearer ", ""), "bearer: empty token never matches");
}

static void test_sizes_and_listen(void)
{
	uint64_t v;
	char addr[64];
	uint16_t port;

	ok(parse_size("64K", &v) == 0 && v == 65536, "size: 64K");
	ok(parse_size("3M", &v) == 0 && v == 3 << 20, "size: 3M");
	ok(parse_size("12", &v) == 0 && v == 12, "size: plain");
	ok(parse_size("-1", &v) && parse_size("1X", &v) && parse_size("", &v) &&
	   parse_size("99999999999999999999", &v), "size: garbage refused");
	ok(parse_listen("127.0.0.1:9000", addr, sizeof(addr), &port) == 0 &&
	   !strcmp(addr, "127.0.0.1") && port == 9000, "listen: addr:port");
	ok(parse_listen(":8080", addr, sizeof(addr), &port) == 0 &&
	   !strcmp(addr, "0.0.0.0") && port == 8080, "listen: :port");
	ok(parse_listen("8081", addr, sizeof(addr), &port) == 0 && port == 8081,
	   "listen: bare port");
	ok(parse_listen("host:1", addr, sizeof(addr), &port) &&
	   parse_listen("1.2.3.4:0", addr, sizeof(addr), &port) &&
	   parse_listen("1.2.3.4:x", addr, sizeof(addr), &port),
	   "listen: bad values refused");
}

static void test_routes(void)
{
	char param[ROUTE_PARAM_MAX], allow[64];
	const struct route *r;

	r = route_match("/v1/workloads/w3/signals", param, sizeof(param));
	ok(r && !strcmp(r->pattern, "/v1/workloads/{id}/signals") && !strcmp(param, "w3"),
	   "route: {id} captured");
	r = route_match("/v1/workloads", param, sizeof(param));
	ok(r && !strcmp(r->pattern, "/v1/workloads") && !param[0], "route: collection");
	ok(!route_match("/v1/workloads/", param, sizeof(param)), "route: trailing slash is 404");
	ok(!route_match("/v1/workloads//freeze", param, sizeof(param)), "route: empty id is 404");
	ok(!route_match("/v2/health", param, sizeof(param)) &&
	   !route_match("", param, sizeof(param)) &&
	   !route_match("v1/health", param, sizeof(param)), "route: unknown paths");
	ok(!route_match("/v1/workloads/w1/freeze/x", param, sizeof(param)), "route: extra segment");
	ok(!route_match("/v1/workloads/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", param,
			sizeof(param)), "route: overlong id refused");
	r = route_match("/v1/workloads/w1", param, sizeof(param));
	ok(route_method(r, M_GET) && route_method(r, M_HEAD) && route_method(r, M_DELETE) &&
	   !route_method(r, M_POST) && !route_method(r, M_PUT), "route: methods of {id}");
	route_allow(r, allow, sizeof(allow));
	ok(!strcmp(allow, "GET, HEAD, DELETE"), "route: Allow header (%s)", allow);
	r = route_match("/v1/restore", param, sizeof(param));
	ok(r && route_method(r, M_POST)->body == BODY_IMAGE, "route: restore takes an image");
	ok(method_is_mutating(M_POST) && method_is_mutating(M_DELETE) &&
	   !method_is_mutating(M_GET) && !method_is_mutating(M_HEAD), "mutating methods");
	ok(http_method_parse("BREW") == M_OTHER && http_method_parse("GET") == M_GET,
	   "method parsing");
}

static void test_problem(void)
{
	struct api_error err;
	json_t *p;

	p = problem_new(404, "unknown_workload", "no workload 'w9'", "/v1/workloads/w9");
	ok(p && json_integer_value(json_object_get(p, "status")) == 404 &&
	   !strcmp(json_string_value(json_object_get(p, "code")), "unknown_workload") &&
	   !strcmp(json_string_value(json_object_get(p, "type")),
		   "urn:sigmig:problem:unknown_workload") &&
	   !strcmp(json_string_value(json_object_get(p, "title")), "Not Found") &&
	   !strcmp(json_string_value(json_object_get(p, "instance")), "/v1/workloads/w9"),
	   "problem: RFC 9457 members and code");
	json_decref(p);
	p = problem_new(502, "runtime_error", "bad \xff\x01 bytes", NULL);
	ok(p && !strcmp(json_string_value(json_object_get(p, "detail")), "bad ?? bytes") &&
	   !json_object_get(p, "instance"), "problem: detail made printable");
	json_decref(p);
	api_error_set(&err, 409, "wrong_state", "w%d frozen", 1);
	strcpy(err.cause, "wrong_state");
	p = problem_from_error(&err, "/x");
	ok(p && !strcmp(json_string_value(json_object_get(p, "cause")), "wrong_state") &&
	   !strcmp(json_string_value(json_object_get(p, "detail")), "w1 frozen"),
	   "problem: from an api_error with a cause");
	json_decref(p);
}

int main(void)
{
	test_ids_and_names();
	test_start_request();
	test_many_args();
	test_sigsend_targets();
	test_migrate_request();
	test_requeue_query();
	test_bearer();
	test_sizes_and_listen();
	test_routes();
	test_problem();
	return tap_done();
}
