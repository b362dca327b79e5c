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
#include "problem.h"
#include "validate.h"
#include "workload.h"

/* The caller holds the workload's operation (workload_begin_op). */
int migrate_workload(struct workload *w, const struct migrate_request *req,
		     json_t **result, struct api_error *err);

/* "/v1/restore?program=P&arg=A1&arg=A2..." for @w. */
int restore_path_for(const struct workload *w, char *buf, size_t len);

/* Engine "criu" (migrate_criu.c): migrate_workload() of such a workload. */
int migrate_criu(struct workload *w, const struct migrate_request *req,
		 json_t **result, struct api_error *err);

#endif
