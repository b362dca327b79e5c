/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two-phase migration of a workload to a peer agent: freeze, dump, stream
 * the image to the peer's POST /v1/restore, and only on its 2xx commit
 * the original; on any failure thaw it, so that exactly one copy runs.
 */
#ifndef AGENT_MIGRATE_H
#define AGENT_MIGRATE_H

#include <jansson.h>

#include "forward.h"
#include "http_reply.h"
#include "problem.h"
#include "validate.h"
#include "workload.h"

/* The caller holds the workload's operation (workload_begin_op). */
int migrate_workload(struct workload *w, const struct migrate_request *req,
		     json_t **result, struct api_error *err);

/* "/v1/restore?program=P&arg=A1&arg=A2..." for @w. */
int restore_path_for(const struct workload *w, char *buf, size_t len);

/* Shared by both engines (migrate_criu.c has the "criu" one). */
int migrate_criu(struct workload *w, const struct migrate_request *req,
		 json_t **result, struct api_error *err);
/* The id the peer gave its held copy, or NULL. */
const char *migrate_target_id(json_t *remote);
void migrate_transfer_failure(const struct migrate_request *req,
			      const struct http_result *res, struct api_error *err);
void migrate_peer_problem(const struct http_result *res, struct api_error *err);

#endif
