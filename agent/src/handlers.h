/* SPDX-License-Identifier: GPL-2.0 */
/* Endpoint handlers (handlers.c), referenced by the route table (routes.c). */
#ifndef AGENT_HANDLERS_H
#define AGENT_HANDLERS_H

#include "router.h"

void handle_health(struct request *req, struct reply *out);
void handle_capabilities(struct request *req, struct reply *out);
void handle_list(struct request *req, struct reply *out);
void handle_start(struct request *req, struct reply *out);
void handle_get(struct request *req, struct reply *out);
void handle_delete(struct request *req, struct reply *out);
void handle_signals(struct request *req, struct reply *out);
void handle_freeze(struct request *req, struct reply *out);
void handle_thaw(struct request *req, struct reply *out);
void handle_checkpoint(struct request *req, struct reply *out);
void handle_migrate(struct request *req, struct reply *out);
void handle_ledger(struct request *req, struct reply *out);
void handle_log(struct request *req, struct reply *out);
void handle_restore(struct request *req, struct reply *out);
/* /v1/restore's on_body: a runtime image starts to restore as it arrives. */
void restore_upload_part(struct request *req);
void handle_requeue(struct request *req, struct reply *out);
void handle_replay(struct request *req, struct reply *out);
void handle_metrics(struct request *req, struct reply *out);
/* Fault injection for the fault suite; 404 unless SIGMIG_AGENT_FAULTS=1. */
void handle_debug_fault(struct request *req, struct reply *out);

#endif
