// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the query of POST /v1/restore. The input is the raw
 * query string, split and decoded as libmicrohttpd does, then fed to
 * restore_query_add() pair by pair as the handler does. A refusal must
 * render as a valid problem document; an accepted query must hold a valid
 * program name and arguments, and must survive the trip a migration gives
 * it: encoded by url_append_query() (as restore_path_for() does on the
 * source), decoded again on the target, to the same values.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_query.h"
#include "http_reply.h"
#include "problem.h"
#include "validate.h"

static int collect(void *cls, const char *key, const char *value)
{
	return restore_query_add(cls, key, value);
}

static void check_refusal(const struct restore_query *q)
{
	json_t *p;
	char *text;

	if (!q->err.code || !memchr(q->err.detail, '\0', sizeof(q->err.detail)))
		abort();
	p = problem_new(400, q->err.code, q->err.detail, "/v1/restore");
	text = p ? json_dumps(p, JSON_COMPACT) : NULL;
	if (!text)
		abort();	/* a client's bytes made the problem invalid JSON */
	free(text);
	json_decref(p);
}

static void check_accepted(const struct restore_query *q)
{
	unsigned int i;

	if (q->program[0] && !program_name_valid(q->program))
		abort();
	if (q->args.argc > WORKLOAD_ARGS_MAX)
		abort();
	for (i = 0; i < q->args.argc; i++)
		if (strlen(q->args.argv[i]) > WORKLOAD_ARG_LEN_MAX)
			abort();
}

/* The source's encoding of the query, then the target's decoding of it. */
static void check_round_trip(const struct restore_query *q)
{
	struct restore_query back = { .failed = false };
	static char path[8192];
	unsigned int i;

	snprintf(path, sizeof(path), "/v1/restore?hold=1");
	if (q->program[0] && url_append_query(path, sizeof(path), "program",
					      q->program))
		return;		/* too long: the source refuses to send it */
	for (i = 0; i < q->args.argc; i++)
		if (url_append_query(path, sizeof(path), "arg", q->args.argv[i]))
			return;
	fuzz_query_each(strchr(path, '?') + 1, collect, &back);
	if (back.failed || !back.hold || strcmp(back.program, q->program) ||
	    back.args.argc != q->args.argc)
		abort();
	for (i = 0; i < q->args.argc; i++)
		if (strcmp(back.args.argv[i], q->args.argv[i]))
			abort();
	restore_query_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct restore_query q = { .failed = false };
	char *query = malloc(size + 1);

	if (!query)
		return 0;
	memcpy(query, data, size);
	query[size] = '\0';
	fuzz_query_each(query, collect, &q);
	if (q.failed) {
		check_refusal(&q);
	} else {
		check_accepted(&q);
		check_round_trip(&q);
	}
	restore_query_free(&q);
	free(query);
	return 0;
}
