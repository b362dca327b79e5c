/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the two engines' moves: migrate.c (the runtime's) and
 * migrate_criu.c (CRIU and the parasite).
 */
#ifndef AGENT_MIGRATE_INTERNAL_H
#define AGENT_MIGRATE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "http_reply.h"
#include "httpc.h"
#include "problem.h"
#include "validate.h"

/*
 * Consecutive phases: each ends where the next begins, so that they add
 * up to the downtime exactly. transfer is the part of the image POST until
 * its last byte was handed to TCP, restore the rest of it, until B's answer.
 */
struct timings {
	double start, freeze, dump, transfer, restore, commit, resume, downtime;
	double mark;	/* the end of the last phase taken */
};

/* The time since the end of the previous phase, which ends the next one. */
double migrate_phase_end(struct timings *t);
json_t *migrate_timings_json(const struct timings *t);
/*
 * POSTs @len bytes of @body to @path on the target, on @conn, and sets t->transfer
 * and t->restore: 0 on a 2xx, else -1 with @err saying why (the caller
 * undoes its side).
 */
int migrate_post(const struct migrate_request *req, struct httpc_conn *conn,
		 const char *path, const uint8_t *body, size_t len,
		 struct http_result *res, struct timings *t, struct api_error *err);
/* Opens @conn to the target before the freeze (best effort). */
void migrate_connect(const struct migrate_request *req, struct httpc_conn *conn);
/* The id the peer gave its held copy, or NULL. */
const char *migrate_target_id(json_t *remote);

#endif
