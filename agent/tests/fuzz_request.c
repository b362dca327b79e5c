// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target over everything the agent parses from a client: the
 * first byte picks the parser, the rest is its input. Outputs are
 * serialized so that invalid JSON values would be caught as well.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "router.h"
#include "siginfo_json.h"
#include "validate.h"

static void dump_and_free(json_t *o)
{
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

	free(text);
	json_decref(o);
}

static void fuzz_bodies(int which, const char *s, size_t n)
{
	struct migrate_request mr;
	struct start_request sr;
	struct verror err;

	if (which == 0) {
		if (parse_start_request(s, n, &sr, &err) == 0)
			start_request_free(&sr);
		else
			dump_and_free(problem_new(400, err.code, err.detail, NULL));
	} else if (parse_migrate_request(s, n, &mr, &err)) {
		dump_and_free(problem_new(400, err.code, err.detail, NULL));
	}
}

static void fuzz_strings(const char *s)
{
	char param[ROUTE_PARAM_MAX], allow[64], addr[64];
	const struct route *r;
	struct target_url url;
	struct verror err;
	uint16_t port;
	uint64_t size;

	r = route_match(s, param, sizeof(param));
	if (r) {
		route_method(r, M_GET);
		route_allow(r, allow, sizeof(allow));
	}
	workload_id_valid(param);
	program_name_valid(s);
	parse_target_url(s, &url, &err);
	parse_listen(s, addr, sizeof(addr), &port);
	parse_size(s, &size);
	bearer_token_matches(s, "s3cret");
	dump_and_free(problem_new(404, "not_found", s, s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t raw[SI_MAX_SIZE] = { 0 };
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
	case 1:
		fuzz_bodies(data[0] % 4, s, size - 1);
		break;
	case 2:
		fuzz_strings(s);
		break;
	default:
		memcpy(raw, data + 1, size - 1 < sizeof(raw) ? size - 1 : sizeof(raw));
		dump_and_free(siginfo_to_json(raw, data[0] & 4 ? SIGINFO_ABI_32 :
					      SIGINFO_ABI_64));
	}
	free(s);
	return 0;
}
